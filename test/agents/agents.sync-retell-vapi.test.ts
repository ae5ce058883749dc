/**
 * How agent sync reads the Retell and Vapi workspaces, through the service on each database against the
 * fakes. Retell's v2 lists (`POST /v2/list-agents`, `GET /v2/list-phone-numbers`) page by the
 * `pagination_key` each page gives until `has_more` is false; the agents are asked for voice only; a number
 * may be shared by weighted agents, and each gets the number where its weight is largest. A list that would
 * page without end fails the sync and writes nothing. Vapi's `GET /assistant` pages by `createdAtLt`, an ISO
 * date-time as the assistants' `createdAt` are.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { ApiError } from '../../src/errors/api-error.js';
import { syncAgents } from '../../src/features/agents/agents-sync.service.js';
import { listAgents, upsertAgent } from '../../src/features/agents/agents.service.js';
import type { AgentDirectory } from '../../src/features/providers/provider.interface.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeRetell, type FakeRetell } from '../support/fake-retell.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import {
  fillRetellPages,
  fillWorkspaces,
  retellKey,
  retellPaged,
  retellPagedNumbers,
  retellPagedExpected,
  retellPathsServed,
  retellVapiEnv,
  vapiKey,
  vapiSecret,
} from '../support/retell-vapi-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const voiceFilter = { filter_criteria: { channel: { type: 'string', op: 'eq', value: 'voice' } } };

await forEachDialect('Agent sync: how the Retell and Vapi workspaces are read', (dialect) => {
  let retell: FakeRetell;
  let vapi: FakeVapi;
  let t: TestApp;
  let accountId: string;

  before(async () => {
    retell = await startFakeRetell({ apiKey: retellKey });
    vapi = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret });
    t = await startTestApp(dialect, { env: retellVapiEnv(retell, vapi) });
  });
  after(async () => {
    await t?.close();
    await retell?.close();
    await vapi?.close();
  });
  beforeEach(async () => {
    retell.reset();
    vapi.reset();
    fillWorkspaces(undefined, vapi);
    fillRetellPages(retell);
    accountId = (await t.newAccount()).accountId;
  });

  const directory = (provider: 'retell' | 'vapi'): AgentDirectory => {
    const found = t.services.agentDirectories.get(provider);
    assert.ok(found, `${provider} is configured`);
    return found;
  };
  const retellAgents = async () =>
    (await listAgents(t.services.db, accountId))
      .filter((agent) => agent.provider === 'retell')
      .map((agent) => [agent.provider_agent_id, agent.name, agent.phone_number_id] as const);
  const sorted = <T extends readonly unknown[]>(rows: readonly T[]) => [...rows].sort((a, b) => String(a[0]).localeCompare(String(b[0])));

  it('Retell: every voice agent and number of a three-page workspace, through the v2 lists only, each agent with its number', async () => {
    const progress: { agentsListed: number; page: number }[] = [];
    const result = await syncAgents(t.services.db, t.services.clock, directory('retell'), accountId, (p) => progress.push(p));
    assert.deepEqual([result.added, result.updated, result.skipped], [5, 0, []]);
    assert.deepEqual(sorted(await retellAgents()), sorted(retellPagedExpected), 'the chat agent is not among them');
    const synced = (await listAgents(t.services.db, accountId)).filter((agent) => agent.provider === 'retell' && agent.phone_number_id);
    assert.ok(synced.every((agent) => agent.phone_number === agent.phone_number_id && agent.phone_number_provider === 'retell-twilio'));
    assert.deepEqual(progress, [
      { agentsListed: 2, page: 1 },
      { agentsListed: 4, page: 2 },
      { agentsListed: 5, page: 3 },
    ]);

    assert.deepEqual(retellPathsServed(retell), ['POST /v2/list-agents', 'GET /v2/list-phone-numbers']);
    const agentPages = retell.requestsTo('agents');
    const numberPages = retell.requestsTo('phoneNumbers');
    assert.deepEqual([agentPages.length, numberPages.length], [3, 3]);
    for (const pages of [agentPages, numberPages]) {
      assert.deepEqual(
        pages.map((request) => [...request.query.keys()]),
        [['limit'], ['limit', 'pagination_key'], ['limit', 'pagination_key']],
        'no pagination_key_version',
      );
      assert.ok(pages.every((request) => request.query.get('limit') === '1000'));
      assert.equal(new Set(pages.map((request) => request.query.get('pagination_key'))).size, 3, 'each page asked with a new key');
    }
    assert.ok(
      agentPages.every((request) => JSON.stringify(request.body) === JSON.stringify(voiceFilter)),
      'every page of agents asks for voice agents',
    );
  });

  it('Retell: a shared number goes by weight whatever the order; a free number on the last page, given by hand, is kept', async () => {
    retell.phoneNumbers.reverse();
    retell.phoneNumbers.push(retell.phoneNumbers.shift()!); // the free number last again, alone on page 3
    await upsertAgent(t.services.db, t.services.clock, {
      accountId,
      agentId: 'agent_by_hand',
      name: 'By hand',
      provider: 'retell',
      providerAgentId: retellPaged.unbound,
      phoneNumberId: retellPagedNumbers.free,
      phoneNumber: retellPagedNumbers.free,
    });
    const expected = retellPagedExpected.map((row) => (row[0] === retellPaged.unbound ? [row[0], row[1], retellPagedNumbers.free] : row));
    const first = await syncAgents(t.services.db, t.services.clock, directory('retell'), accountId);
    assert.deepEqual([first.added, first.updated], [4, 1]);
    assert.deepEqual(sorted(await retellAgents()), sorted(expected));
    const again = await syncAgents(t.services.db, t.services.clock, directory('retell'), accountId);
    assert.deepEqual([again.added, again.updated], [0, 5]);
    assert.deepEqual(sorted(await retellAgents()), sorted(expected));
  });

  for (const [title, list, misstep] of [
    ['agents: more follow but no key', 'agents', { has_more: true }],
    ['agents: a key given before', 'agents', 'repeat'],
    ['phone numbers: more follow but no key', 'phoneNumbers', { has_more: true, pagination_key: '' }],
    ['phone numbers: a key given before', 'phoneNumbers', 'repeat'],
  ] as const) {
    it(`Retell ${title}: the sync fails saying the workspace could not be listed, and writes nothing`, async () => {
      let served = 0;
      retell.respond = (request) => {
        if (request.route !== list) return undefined;
        served++;
        const pagination_key = misstep === 'repeat' ? 'pk_same' : undefined;
        return { status: 200, body: { items: [], ...(misstep === 'repeat' ? { has_more: true, pagination_key } : misstep) } };
      };
      await assert.rejects(syncAgents(t.services.db, t.services.clock, directory('retell'), accountId), (error) => {
        assert.ok(error instanceof ApiError);
        assert.equal(error.code, 'provider_error');
        const what = list === 'agents' ? 'agents' : 'phone numbers';
        assert.match(
          error.message,
          new RegExp(
            `^could not list ${what}: Retell .+, so the Retell workspace's ${what} could not be listed; try again, and if it persists report it to Retell$`,
          ),
        );
        return true;
      });
      assert.equal(served, misstep === 'repeat' ? 2 : 1, 'it stops at once');
      assert.deepEqual(await retellAgents(), []);
    });
  }

  it('Retell: a list that keeps giving new keys ends after 100 pages as a failure', async () => {
    let served = 0;
    retell.respond = (request) =>
      request.route === 'agents' ? { status: 200, body: { items: [], has_more: true, pagination_key: `pk_${++served}` } } : undefined;
    await assert.rejects(syncAgents(t.services.db, t.services.clock, directory('retell'), accountId), (error) => {
      assert.ok(error instanceof ApiError);
      assert.match(
        error.message,
        /^could not list agents: Retell listed more than 100 pages of agents, so the Retell workspace's agents could not be listed; try again, and if it persists report it to Retell$/,
      );
      return true;
    });
    assert.equal(served, 100);
    assert.deepEqual(await retellAgents(), []);
  });

  it('Retell: the fake answers 404 in their error shape on the lists they removed', async () => {
    for (const [method, path] of [
      ['GET', '/list-agents'],
      ['GET', '/list-chat-agents'],
      ['GET', '/list-phone-numbers'],
    ]) {
      const response = await fetch(`${retell.url}${path}`, { method, headers: { authorization: `Bearer ${retellKey}` } });
      assert.equal(response.status, 404, path);
      assert.deepEqual(await response.json(), { status: 'error', message: 'Not Found' });
    }
    assert.deepEqual(retell.requestsTo('agents'), []);
  });

  it("Vapi: pages the assistants by createdAtLt, the oldest listed assistant's ISO createdAt", async () => {
    vapi.assistants.push({ id: '0b6c8f2a-1111-4222-8333-944455566677', name: 'Older', createdAt: '2026-04-01T08:30:00.000Z' });
    const result = await syncAgents(t.services.db, t.services.clock, directory('vapi'), accountId);
    assert.equal(result.added, 2);
    const asked = vapi.requestsTo('assistants').map((request) => request.query.get('createdAtLt'));
    assert.deepEqual(asked, [null, '2026-04-01T08:30:00.000Z']);
    assert.equal(new Date(asked[1]!).toISOString(), asked[1], 'an ISO 8601 date-time, as Vapi takes it');
  });
});
