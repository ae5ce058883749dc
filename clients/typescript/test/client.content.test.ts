/**
 * The TypeScript client reading what a call kept, against the real server on SQLite and PostgreSQL: the
 * transcript, and the recording handed out as a stream, after a try that never left is retried.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { recordOutcome } from '../../../src/features/calls/calls.service.js';
import { recordingFetch, type Fault } from '../../../test/support/client-faults.js';
import { forEachDialect } from '../../../test/support/dialects.js';
import { listenOnFreePort } from '../../../test/support/http-client.js';
import { startTestApp, type SeededAccount, type TestApp } from '../../../test/support/test-app.js';
import { Callgate, CallgateError } from '../src/index.js';

async function thrown(promise: Promise<unknown>): Promise<CallgateError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof CallgateError, `a CallgateError, not ${String(error)}`);
    return error;
  }
  assert.fail('expected the promise to reject');
}

await forEachDialect('TypeScript client: transcripts and recordings', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  const faulty = (account: SeededAccount, faults: Fault[]) => {
    const recorder = recordingFetch(faults);
    const callgate = new Callgate({ apiKey: account.token, baseUrl, initialRetryDelayMs: 20, maxRetryDelayMs: 100, fetch: recorder.fetch });
    return { ...recorder, callgate };
  };
  before(async () => {
    t = await startTestApp(dialect);
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  it('calls.getTranscript and getRecording: 409 before the end, then the turns and the audio, streamed; a lost answer is retried', async () => {
    const account = await t.newAccount({ agentId: 'agent_content' });
    const { callgate, attempts } = faulty(account, [undefined, undefined, undefined, undefined, undefined, 'refuse']);
    const { id: callId } = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550210' });
    const early = await thrown(callgate.calls.getTranscript(callId));
    assert.equal(early.status, 409);
    assert.equal(early.code, 'call_not_ended');
    assert.equal((await thrown(callgate.calls.getRecording(callId))).code, 'call_not_ended');

    const endedAt = new Date();
    await recordOutcome(t.services.db, t.services.clock, callId, {
      status: 'completed',
      startedAt: new Date(endedAt.getTime() - 20_000),
      endedAt,
      durationSeconds: 20,
      transcriptSummary: 'Agreed.',
      content: {
        analysis: { successful: true, data: { agreed: true } },
        turns: [
          { role: 'agent', text: 'Shall we?', offsetSeconds: 0.5 },
          { role: 'user', text: 'Yes.', offsetSeconds: 2 },
        ],
        recording: { kind: 'provider' },
      },
    });
    assert.deepEqual((await callgate.calls.retrieve(callId)).analysis, { successful: true, data: { agreed: true } });
    const transcript = await callgate.calls.getTranscript(callId);
    assert.deepEqual(transcript.turns, [
      { role: 'agent', text: 'Shall we?', offset_seconds: 0.5 },
      { role: 'user', text: 'Yes.', offset_seconds: 2 },
    ]);
    assert.equal(transcript.lastResponse.status, 200);

    // The sixth try (the recording's first) is refused before it is sent: it is asked again, then streamed.
    const recording = await callgate.calls.getRecording(callId);
    assert.equal(attempts.length, 7);
    assert.equal(recording.contentType, 'audio/wav');
    assert.equal(recording.lastResponse.attempts, 2);
    const chunks: Uint8Array[] = [];
    for await (const chunk of recording.body) chunks.push(chunk);
    const audio = Buffer.concat(chunks);
    assert.equal(audio.length, recording.contentLength);
    assert.equal(audio.subarray(0, 4).toString('ascii'), 'RIFF');
    const again = await callgate.calls.getRecording(callId);
    assert.deepEqual(Buffer.from(await again.arrayBuffer()), audio);
  });
});
