/**
 * The TypeScript client stopping calls, against the real server (the simulator) on SQLite and PostgreSQL:
 * calls.cancel answers the call with cancel_requested_at, is retried after a lost answer like a GET (the
 * same answer while the call is ending: a cancel asks nothing twice), and a call that ended is a
 * CallgateError call_already_ended (a retry that comes after the end too: read the call then);
 * batches.cancel with hang_up sends it, and without it sends no body as before.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { recordingFetch, type Fault } from '../../../test/support/client-faults.js';
import { forEachDialect } from '../../../test/support/dialects.js';
import { listenOnFreePort } from '../../../test/support/http-client.js';
import { startTestApp, type SeededAccount, type TestApp } from '../../../test/support/test-app.js';
import { until } from '../../../test/support/wait.js';
import { Callgate, CallgateError } from '../src/index.js';

await forEachDialect('TypeScript client: cancelling calls', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  const faulty = (account: SeededAccount, faults: Fault[] = []) => {
    const recorder = recordingFetch(faults);
    const callgate = new Callgate({ apiKey: account.token, baseUrl, initialRetryDelayMs: 20, maxRetryDelayMs: 100, fetch: recorder.fetch });
    return { ...recorder, callgate };
  };
  before(async () => {
    // Calls of a minute that ring for 2 s: a cancel right after the create finds the call ringing. The monitor
    // starts in the first test, once the retried cancel has been answered (it ends a cancelled call at once).
    t = await startTestApp(dialect, { env: { CALLGATE_SIMULATOR_DELAY_MS: '60000' } });
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  it('calls.cancel: cancel_requested_at, retried through a lost answer to the same answer, then call_already_ended', async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_ts_cancel' });
    const { callgate, attempts } = faulty(account, [undefined, 'drop']);
    const created = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550601' });
    const cancelled = await callgate.calls.cancel(created.id);
    assert.equal(attempts.length, 3, 'the cancel whose answer was lost was sent again');
    assert.equal(cancelled.lastResponse.status, 202);
    assert.equal(cancelled.id, created.id);
    assert.ok(cancelled.cancel_requested_at);
    t.services.jobs.start([t.services.callMonitor.name]);
    const ended = await until('the call to end', async () => {
      const call = await callgate.calls.retrieve(created.id);
      return call.status === 'initiated' ? undefined : call;
    });
    assert.equal(ended.failure_reason, 'cancelled');
    assert.equal(ended.cancel_requested_at, cancelled.cancel_requested_at);
    const error = await callgate.calls.cancel(created.id).then(
      () => assert.fail('an ended call cannot be cancelled'),
      (reason: unknown) => reason,
    );
    assert.ok(error instanceof CallgateError);
    assert.equal(error.status, 409);
    assert.equal(error.code, 'call_already_ended');
  });

  it('batches.cancel sends hang_up when asked, and no body otherwise', async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_ts_cancel_batch' });
    const { callgate } = faulty(account);
    const later = new Date(Date.now() + 20 * 86_400_000).toISOString();
    const first = await callgate.batches.create({ agent_id: account.agentId, recipients: [{ to: '+14155550602' }], scheduled_at: later });
    assert.equal((await callgate.batches.cancel(first.id, { hang_up: true })).status, 'cancelled');
    const second = await callgate.batches.create({ agent_id: account.agentId, recipients: [{ to: '+14155550603' }], scheduled_at: later });
    assert.equal((await callgate.batches.cancel(second.id)).status, 'cancelled');
  });
});
