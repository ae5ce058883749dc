/**
 * The pieces of cancelling a Retell or Vapi call that need no app: how a stopped call's end maps (Retell's
 * `manual_stopped`, Vapi's `manually-canceled`, whether or not anyone answered, decided from the call's own
 * data), and where the Vapi API key may go with a control URL (`sameProviderDomain`, and `postTo` sending it
 * nowhere else).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createProviderHttpClient, sameProviderDomain } from '../../src/features/providers/provider-http.js';
import { retellCallState } from '../../src/features/providers/retell/retell.mapping.js';
import { vapiOutcome } from '../../src/features/providers/vapi/vapi.mapping.js';
import { carriesCredential } from '../support/fake-provider-server.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import { vapiKey, vapiSecret } from '../support/retell-vapi-fixtures.js';

const reference = new Date('2026-11-28T12:00:00.000Z');
const endMs = reference.getTime() - 5_000;

describe('Retell: a stopped call (manual_stopped)', () => {
  const stopped = { call_id: 'call_stopped1', disconnection_reason: 'manual_stopped', end_timestamp: endMs };

  it('not_connected (nobody answered) → failed / cancelled, at its end', () => {
    const state = retellCallState({ ...stopped, call_status: 'not_connected' }, reference);
    assert.equal(state.kind, 'ended');
    const outcome = state.kind === 'ended' ? state.outcome : undefined;
    assert.equal(outcome?.status, 'failed');
    if (outcome?.status !== 'failed') return;
    assert.equal(outcome.reason, 'cancelled');
    assert.equal(outcome.failedAt.getTime(), endMs);
    assert.match(String(outcome.message), /manual_stopped/);
  });

  it('ended with neither a start nor a length (stopped as it connected) → cancelled too', () => {
    const state = retellCallState({ ...stopped, call_status: 'ended', duration_ms: 0 }, reference);
    assert.equal(state.kind === 'ended' && state.outcome.status === 'failed' && state.outcome.reason, 'cancelled');
  });

  it('ended with a start and a duration, analysed → completed with them; before its analysis it waits for it', () => {
    const answered = {
      ...stopped,
      call_status: 'ended',
      start_timestamp: endMs - 42_000,
      duration_ms: 42_000,
      call_analysis: { call_summary: 'Stopped mid-call.', call_successful: true },
    };
    const state = retellCallState(answered, reference);
    assert.equal(state.kind, 'ended');
    const outcome = state.kind === 'ended' ? state.outcome : undefined;
    assert.equal(outcome?.status, 'completed');
    if (outcome?.status !== 'completed') return;
    assert.deepEqual(
      [outcome.durationSeconds, outcome.startedAt.getTime(), outcome.transcriptSummary],
      [42, endMs - 42_000, 'Stopped mid-call.'],
    );
    const { call_analysis: _analysis, ...unanalysed } = answered;
    assert.equal(retellCallState(unanalysed, reference).kind, 'awaiting_analysis');
  });

  it('still registered or ongoing (a stop asked, not done yet) → running', () => {
    for (const call_status of ['registered', 'ongoing']) {
      assert.equal(retellCallState({ call_id: 'call_stopped2', call_status }, reference).kind, 'running');
    }
  });
});

describe('Vapi: a cancelled call (manually-canceled)', () => {
  const endedAt = new Date(endMs).toISOString();

  it('without startedAt (nobody answered) → failed / cancelled, at its end', () => {
    const outcome = vapiOutcome({ endedReason: 'manually-canceled', endedAt }, reference);
    assert.equal(outcome.status, 'failed');
    if (outcome.status !== 'failed') return;
    assert.equal(outcome.reason, 'cancelled');
    assert.equal(outcome.failedAt.toISOString(), endedAt);
    assert.match(String(outcome.message), /manually-canceled/);
  });

  it('with startedAt (answered) → completed, its duration from its times, its summary', () => {
    const startedAt = new Date(endMs - 30_000).toISOString();
    const outcome = vapiOutcome({ endedReason: 'manually-canceled', startedAt, endedAt, analysis: { summary: 'Cut short.' } }, reference);
    assert.equal(outcome.status, 'completed');
    if (outcome.status !== 'completed') return;
    assert.deepEqual([outcome.durationSeconds, outcome.startedAt.toISOString(), outcome.transcriptSummary], [30, startedAt, 'Cut short.']);
  });

  it('other cancellations (call-deleted) are not taken for a stop: provider_error', () => {
    const outcome = vapiOutcome({ endedReason: 'call-deleted', endedAt }, reference);
    assert.equal(outcome.status === 'failed' && outcome.reason, 'provider_error');
  });
});

describe('sameProviderDomain: where a control URL may get the API key', () => {
  const vapiApi = 'https://api.vapi.ai';
  const cases: [string, string, boolean][] = [
    ['https://phone-call-websocket.aws-us-west-2-backend-production2.vapi.ai/abc/control', vapiApi, true],
    ['https://api.vapi.ai/call/abc', vapiApi, true],
    ['https://vapi.ai/x', vapiApi, true],
    ['https://evil.example.com/abc/control', vapiApi, false],
    ['https://vapi.ai.evil.example.com/abc/control', vapiApi, false],
    ['https://evilvapi.ai/abc/control', vapiApi, false],
    // Not over TLS while the API is: the key would travel in clear.
    ['http://phone-call-websocket.vapi.ai/abc/control', vapiApi, false],
    ['http://127.0.0.1:4010/control/abc', 'http://127.0.0.1:4010', true],
    ['http://127.0.0.1:5020/control/abc', 'http://127.0.0.1:4010', true],
    // An IP address has no domain: another address that shares its last labels is someone else.
    ['http://10.0.0.1/control/abc', 'http://127.0.0.1:4010', false],
    ['http://[::1]:4010/control/abc', 'http://[::1]:4010', true],
    ['not a url', vapiApi, false],
  ];
  for (const [url, base, expected] of cases) {
    it(`${url} with the API at ${base} → ${expected}`, () => assert.equal(sameProviderDomain(url, base), expected));
  }
});

describe('postTo: the key goes with a URL of the provider’s only', () => {
  let fake: FakeVapi;
  before(async () => {
    fake = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret });
  });
  after(async () => fake?.close());

  it('a control URL at the API’s host gets it; the same URL with the API elsewhere (api.vapi.ai) does not', async () => {
    const headers = { authorization: `Bearer ${vapiKey}` };
    const controlUrl = `${fake.url}/control/unknown-call`;
    for (const [baseUrl, credential] of [
      [fake.url, true],
      ['https://api.vapi.ai', false],
    ] as const) {
      const client = createProviderHttpClient({ baseUrl, headers, timeoutMs: 2_000 });
      const response = await client.postTo(controlUrl, { type: 'end-call' });
      assert.equal(response.kind, 'http_error', 'the fake knows no such call');
      const request = fake.requestsTo('control').at(-1)!;
      assert.deepEqual(request.body, { type: 'end-call' });
      assert.equal(carriesCredential(request), credential, baseUrl);
    }
  });
});
