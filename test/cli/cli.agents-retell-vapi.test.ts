/**
 * The CLI for Retell and Vapi agents on each database, against the fakes: `agents add --provider retell|vapi`
 * with the provider's own id, `agents sync --provider retell|vapi` (its agent_… id rule, numbers, a second
 * run updating), the key each needs, and `doctor` checking each provider with its smallest read.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { syncedAgentId } from '../../src/features/agents/agents-sync.service.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeRetell, type FakeRetell } from '../support/fake-retell.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import { cliEnv, runCli, runFailing, runJson } from '../support/cli-runner.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import {
  fillRetellPages,
  fillWorkspaces,
  retellAgentId,
  retellKey,
  retellNumber,
  retellPagedExpected,
  retellPathsServed,
  vapiAssistantId,
  vapiKey,
  vapiNumberId,
  vapiSecret,
} from '../support/retell-vapi-fixtures.js';

await forEachDialect('callgate CLI: Retell and Vapi agents, sync and doctor', (dialect) => {
  let database: TestDatabase;
  let retell: FakeRetell;
  let vapi: FakeVapi;
  let env: NodeJS.ProcessEnv;
  let accountId: string;

  before(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    retell = await startFakeRetell({ apiKey: retellKey });
    vapi = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret });
    fillWorkspaces(undefined, vapi);
    fillRetellPages(retell);
    vapi.assistants.push({ id: '0b6c8f2a-1111-4222-8333-944455566677', name: 'Vapi second', createdAt: '2026-04-01T00:00:00.000Z' });
    env = cliEnv({
      ...database.env,
      RETELL_API_KEY: retellKey,
      RETELL_BASE_URL: retell.url,
      VAPI_API_KEY: vapiKey,
      VAPI_WEBHOOK_SECRET: vapiSecret,
      VAPI_BASE_URL: vapi.url,
    });
    accountId = (await runJson(env, ['accounts', 'create', '--name', 'Providers'])).id;
  });
  after(async () => {
    await retell.close();
    await vapi.close();
    await database.drop();
  });

  it('agents add --provider retell|vapi keeps the provider id beside agent_…; wrong options are refused', async () => {
    const rt = await runJson(env, [
      'agents',
      'add',
      '--account',
      accountId,
      '--agent-id',
      'agent_support',
      '--name',
      'Support',
      '--provider',
      'retell',
      '--provider-agent-id',
      retellAgentId,
      '--from-number',
      retellNumber,
    ]);
    assert.deepEqual(
      [rt.agent_id, rt.provider, rt.provider_agent_id, rt.phone_number_id, rt.phone_number],
      ['agent_support', 'retell', retellAgentId, retellNumber, retellNumber],
    );
    const vp = await runJson(env, [
      'agents',
      'add',
      '--account',
      accountId,
      '--agent-id',
      'agent_sales',
      '--name',
      'Sales',
      '--provider',
      'vapi',
      '--provider-agent-id',
      vapiAssistantId,
      '--phone-number-id',
      vapiNumberId,
    ]);
    assert.deepEqual([vp.provider, vp.provider_agent_id, vp.phone_number_id], ['vapi', vapiAssistantId, vapiNumberId]);
    const base = ['agents', 'add', '--account', accountId, '--agent-id', 'agent_x', '--name', 'X'];
    await runFailing(env, [...base, '--provider', 'retell', '--from-number', retellNumber], 1, /need the Retell agent id/);
    await runFailing(
      env,
      [...base, '--provider', 'vapi', '--provider-agent-id', 'a', '--from-number', retellNumber],
      2,
      /--from-number is for --provider retell/,
    );
    await runFailing(env, [...base, '--provider', 'retell', '--provider-agent-id', 'a', '--from-number', '4155550100'], 2, /E\.164/);
    await runFailing(
      cliEnv({ ...database.env }),
      [...base, '--provider', 'vapi', '--provider-agent-id', vapiAssistantId],
      1,
      /no VAPI_API_KEY set/,
    );
  });

  it('agents sync --provider retell: every agent of a three-page workspace, a known one keeping its id, new ones agent_retell_…, each with its number; a second run updates', async () => {
    retell.resetRequests();
    const first = await runJson(env, ['agents', 'sync', '--account', accountId, '--provider', 'retell']);
    assert.deepEqual([first.added, first.updated, first.skipped.length], [4, 1, 0]);
    const synced = first.agents.map((agent: Record<string, string>) => [
      agent.agent_id,
      agent.provider_agent_id,
      agent.name,
      agent.phone_number_id,
    ]);
    assert.deepEqual(
      synced.sort((a: string[], b: string[]) => a[1]!.localeCompare(b[1]!)),
      [...retellPagedExpected]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([id, name, number]) => [id === retellAgentId ? 'agent_support' : syncedAgentId('retell', id), id, name, number]),
      'the agent added by hand keeps its agent_id; the chat agent is not brought',
    );
    assert.deepEqual(retellPathsServed(retell), ['POST /v2/list-agents', 'GET /v2/list-phone-numbers']);
    assert.deepEqual([retell.requestsTo('agents').length, retell.requestsTo('phoneNumbers').length], [3, 3], 'it read every page of both');
    assert.ok(retell.requestsTo('agents').every((request) => JSON.stringify(request.body).includes('"value":"voice"')));
    const again = await runCli(env, ['agents', 'sync', '--account', accountId, '--provider', 'retell']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`^Synced account ${accountId} with Retell: 0 added, 5 updated, 0 skipped\\.`));
  });

  it('agents sync --provider vapi: agent_vapi_<assistant id> with the assistant’s number; without the key it names VAPI_API_KEY', async () => {
    const result = await runJson(env, ['agents', 'sync', '--account', accountId, '--provider', 'vapi']);
    assert.deepEqual([result.added, result.updated], [1, 1]);
    const added = result.agents.find(
      (agent: Record<string, string>) => agent.agent_id === 'agent_vapi_0b6c8f2a-1111-4222-8333-944455566677',
    );
    assert.equal(added?.provider_agent_id, '0b6c8f2a-1111-4222-8333-944455566677');
    const sales = result.agents.find((agent: Record<string, string>) => agent.agent_id === 'agent_sales');
    assert.deepEqual([sales?.phone_number_id, sales?.phone_number], [vapiNumberId, '+14155550191']);
    await runFailing(
      cliEnv({ ...database.env }),
      ['agents', 'sync', '--account', accountId, '--provider', 'vapi'],
      1,
      /agents sync needs VAPI_API_KEY/,
    );
    await runFailing(env, ['agents', 'sync', '--account', accountId, '--provider', 'bland'], 2, /must be one of elevenlabs, retell, vapi/);
  });

  it("agents list shows each agent's provider agent id, '-' for the simulator's; --json has it as provider_agent_id", async () => {
    const listed = await runJson(env, ['agents', 'list', '--account', accountId]);
    const ids = Object.fromEntries(
      listed.data.map((agent: Record<string, string | null>) => [agent.agent_id, [agent.provider, agent.provider_agent_id]]),
    );
    assert.deepEqual(ids, {
      agent_test_simulator: ['simulator', null],
      agent_support: ['retell', retellAgentId],
      ...Object.fromEntries(
        retellPagedExpected.filter(([id]) => id !== retellAgentId).map(([id]) => [syncedAgentId('retell', id), ['retell', id]]),
      ),
      agent_sales: ['vapi', vapiAssistantId],
      'agent_vapi_0b6c8f2a-1111-4222-8333-944455566677': ['vapi', '0b6c8f2a-1111-4222-8333-944455566677'],
    });

    const text = await runCli(env, ['agents', 'list', '--account', accountId]);
    assert.equal(text.code, 0, text.stderr);
    const [header, ...rows] = text.stdout.trimEnd().split('\n');
    assert.match(header ?? '', /^AGENT ID +NAME +PROVIDER +PROVIDER AGENT +PHONE NUMBER ID +CREATED +PHONE NUMBER$/);
    const column = (header ?? '').indexOf('PROVIDER AGENT');
    const cellOf = (agentId: string) =>
      rows
        .find((row) => row.startsWith(`${agentId} `))
        ?.slice(column)
        .split(/ {2,}/)[0];
    assert.equal(cellOf('agent_support'), retellAgentId);
    assert.equal(cellOf('agent_sales'), vapiAssistantId);
    assert.equal(cellOf('agent_vapi_0b6c8f2a-1111-4222-8333-944455566677'), '0b6c8f2a-1111-4222-8333-944455566677');
    assert.equal(cellOf('agent_test_simulator'), '-');
  });

  it('doctor checks each configured provider with its smallest read, and names the key that is refused', async () => {
    retell.resetRequests();
    vapi.resetRequests();
    const good = await runJson({ ...env }, ['doctor']).catch(() => undefined);
    const report = good ?? JSON.parse((await runCli(env, ['doctor', '--json'])).stdout);
    const statuses = Object.fromEntries(report.checks.map((check: Record<string, string>) => [check.name, check.status]));
    assert.deepEqual([statuses['provider elevenlabs'], statuses['provider retell'], statuses['provider vapi']], ['skip', 'ok', 'ok']);
    assert.deepEqual(
      [...retell.requests, ...vapi.requests].map((request) => `${request.method} ${request.path}?${request.query}`),
      ['GET /get-concurrency?', 'GET /assistant?limit=1'],
    );
    const bad = await runCli({ ...env, RETELL_API_KEY: 'key_wrong', VAPI_API_KEY: 'vapi_wrong' }, ['doctor']);
    assert.equal(bad.code, 1);
    assert.match(bad.stdout, /^FAIL {2}provider retell: Retell refused the API key \(HTTP 401\); check RETELL_API_KEY\n {6}what to do: /m);
    assert.match(bad.stdout, /^FAIL {2}provider vapi: Vapi refused the API key \(HTTP 401\); check VAPI_API_KEY/m);
    for (const secret of [retellKey, vapiKey, 'key_wrong', 'vapi_wrong']) assert.ok(!bad.stdout.includes(secret));
  });
});
