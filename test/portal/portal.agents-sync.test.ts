/**
 * What a new account's people see without asking the operator: the account id on the overview, and on the
 * Agents page a "Sync from ElevenLabs" button (only when the server has ELEVENLABS_API_KEY) that runs the
 * same sync as `callgate agents sync` for their own account, behind the portal's CSRF check.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { listAgents } from '../../src/features/agents/agents.service.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-elevenlabs.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { apiKey, elevenLabsEnv, workspaceNumber } from '../support/elevenlabs-fixtures.js';
import { csrfOf, signedInClient, type PortalClient } from '../support/portal-client.js';

await forEachDialect('Portal: account id and agent sync', (dialect) => {
  let fake: FakeElevenLabs;
  let t: TestApp;
  let client: PortalClient;
  let plain: TestApp;
  let plainClient: PortalClient;

  before(async () => {
    fake = await startFakeElevenLabs({ apiKey });
    fake.agents = [
      { agent_id: 'agent_remote_support', name: 'Support' },
      { agent_id: 'not-an-agent-id', name: 'Odd' },
    ];
    fake.phoneNumbers = [
      workspaceNumber('twilio', 'phnum_main', '+14155550100', 'Main', { agent_id: 'agent_remote_support', name: 'Support' }),
    ];
    t = await startTestApp(dialect, { env: elevenLabsEnv(fake) });
    client = await signedInClient(t);
    plain = await startTestApp(dialect);
    plainClient = await signedInClient(plain);
  });
  after(async () => {
    await t?.close();
    await plain?.close();
    await fake?.close();
  });

  it('the overview shows the account id, ready to copy', async () => {
    const page = await client.get('/developers');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, new RegExp(`<dt>Account id</dt><dd><span class="copyable"><code id="account-id">${t.seed.accountId}</code>`));
  });

  it('the Agents page syncs the account with ElevenLabs, behind the CSRF check', async () => {
    const page = await client.get('/developers/agents');
    assert.match(
      page.body,
      /<form method="post" action="\/developers\/agents\/sync"[^>]*><input type="hidden" name="_csrf" value="[^"]+">/,
    );
    assert.match(page.body, />Sync from ElevenLabs</);

    const forged = await client.post('/developers/agents/sync', {}, { csrf: 'forged' });
    assert.equal(forged.statusCode, 403);
    assert.equal(fake.requestsTo('agents').length, 0, 'a forged form reaches nobody');

    const synced = await client.post('/developers/agents/sync', { _csrf: csrfOf(page.body) });
    assert.equal(synced.statusCode, 200, synced.body);
    assert.match(
      synced.body,
      /Synced with ElevenLabs: 1 added, 0 updated\. Skipped \(ids that do not look like agent_…\): not-an-agent-id\./,
    );
    assert.match(synced.body, /agent_remote_support/);
    const agents = await listAgents(t.services.db, t.seed.accountId);
    const remote = agents.find((agent) => agent.agent_id === 'agent_remote_support');
    assert.equal(remote?.provider, 'elevenlabs');
    assert.equal(remote?.phone_number_id, 'phnum_main');

    const again = await client.post('/developers/agents/sync', {});
    assert.match(again.body, /Synced with ElevenLabs: 0 added, 1 updated\./);
  });

  it('a failing ElevenLabs answer is a page that says what to do', async () => {
    fake.queue('agents', { status: 500, body: { detail: 'boom' } });
    const failed = await client.post('/developers/agents/sync', {});
    assert.equal(failed.statusCode, 502);
    assert.match(failed.body, /The sync with ElevenLabs failed: could not list agents/);
    assert.match(
      failed.body,
      /a failure on its side; try again in a few minutes\. Nothing was changed\. If it keeps failing, show this message to your callgate operator\./,
    );
  });

  it('without ELEVENLABS_API_KEY there is no button, and the form is refused saying why', async () => {
    const page = await plainClient.get('/developers/agents');
    assert.equal(page.statusCode, 200);
    assert.doesNotMatch(page.body, /Sync from ElevenLabs/);
    const refused = await plainClient.post('/developers/agents/sync', {});
    assert.equal(refused.statusCode, 409);
    assert.match(refused.body, /This server has no ELEVENLABS_API_KEY/);
  });
});
