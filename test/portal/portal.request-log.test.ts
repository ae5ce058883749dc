/**
 * The portal's request log on SQLite and PostgreSQL: what each authenticated API request leaves (time, key
 * prefix, method and path, status, error code, request id), refused requests included (400, 403, 404, 409,
 * 429), 7 days of it on the page, the purge of older rows, and the search by request_id.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { purgeOldRequests, requestLogRetentionMs } from '../../src/features/request-log/request-log.service.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, requestLogRow, startTestApp, type TestApp } from '../support/test-app.js';
import { signedInClient, type PortalClient } from '../support/portal-client.js';

const perKeyLimit = 8;

await forEachDialect('Portal request log', (dialect) => {
  let t: TestApp;
  let client: PortalClient;

  before(async () => {
    t = await startTestApp(dialect, { env: { CALLGATE_RATE_LIMIT_PER_MINUTE: String(perKeyLimit) } });
    client = await signedInClient(t);
  });
  after(async () => {
    await t.close();
  });

  it('records authenticated requests that were refused (400, 403, 404, 409, 429) with their error code (a mistyped path too), and successes', async () => {
    const account = await t.newAccount({ agentId: 'agent_logged' });
    const own = await signedInClient(t, account);
    const auth = { authorization: `Bearer ${account.token}` };
    const body = { agent_id: 'agent_logged', to: '+14155550123' };
    const json = { ...auth, 'content-type': 'application/json' };
    const requests = [
      { line: 'POST /v1/calls', expect: [201, null], send: () => t.createCall(body, { token: account.token, idempotencyKey: 'order-1' }) },
      {
        line: 'POST /v1/calls',
        expect: [409, 'idempotency_conflict'],
        send: () => t.createCall({ ...body, to: '+14155550999' }, { token: account.token, idempotencyKey: 'order-1' }),
      },
      {
        line: 'POST /v1/calls',
        expect: [400, 'invalid_json'],
        send: () => t.inject({ method: 'POST', url: '/v1/calls', headers: json, payload: '{"agent_id":' }),
      },
      {
        line: 'POST /v1/calls',
        expect: [403, 'agent_not_found'],
        send: () => t.createCall({ ...body, agent_id: 'agent_missing' }, { token: account.token }),
      },
      {
        line: 'GET /v1/calls/call_missing',
        expect: [404, 'not_found'],
        send: () => t.inject({ method: 'GET', url: '/v1/calls/call_missing', headers: auth }),
      },
      {
        line: 'POST /v1/call',
        expect: [404, 'not_found'],
        send: () => t.inject({ method: 'POST', url: '/v1/call', headers: json, payload: '{}' }),
      },
    ] as const;
    const seen: { id: string; line: string; status: number; error: string | null }[] = [];
    for (const request of requests) {
      const response = await request.send();
      assert.equal(response.statusCode, request.expect[0]);
      seen.push({ id: String(response.headers['x-request-id']), line: request.line, status: request.expect[0], error: request.expect[1] });
    }
    // Spend the rest of the key's minute, then one more: 429.
    let limited;
    for (let sent = requests.length; sent <= perKeyLimit; sent++)
      limited = await t.inject({ method: 'GET', url: '/v1/calls/call_missing', headers: auth });
    assert.equal(limited?.statusCode, 429);
    seen.push({
      id: String(limited?.headers['x-request-id']),
      line: 'GET /v1/calls/call_missing',
      status: 429,
      error: 'rate_limit_exceeded',
    });

    const keyPrefix = account.token.slice(0, 12);
    for (const { id, line, status, error } of seen) {
      await t.services.requestLog.flush();
      const page = (await own.get(`/developers/requests?request_id=${id}`)).body;
      // On one line, its zone in the column's heading (Time (UTC)) and in its tooltip.
      assert.match(
        page,
        /<time datetime="\d{4}-\d\d-\d\dT[^"]*" title="[^"]* UTC">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d<\/time>/,
        `${id}: the time`,
      );
      assert.ok(page.includes(`<code class="id">${keyPrefix}…</code>`), `${id}: the key prefix`);
      const path = /<code class="path">(.*?)<\/code>/.exec(page)?.[1];
      assert.equal(path?.replace(/<[^>]+>/g, ''), line, `${id}: method and path ${line}`);
      assert.ok(page.includes(`">${status}</span>`), `${id}: status ${status}`);
      // The code whole under its status, never broken after an underscore.
      if (error) assert.ok(page.includes(`<code class="error-code">${error}</code>`), `${id}: error code ${error}`);
      assert.ok(page.includes(`<code class="id">${id}</code>`), `${id}: the request id`);
    }
    // The seed account's user sees none of them.
    await t.services.requestLog.flush();
    const others = (await client.get('/developers/requests')).body;
    for (const { id } of seen) assert.ok(!others.includes(id), `${id} is not shown to another account`);
  });

  it('explains that requests without a valid key are not listed, and keeps no row for them', async () => {
    const refused = await t.createCall(callBody(t), { token: 'cg_live_not_a_key' });
    assert.equal(refused.statusCode, 401);
    await t.services.requestLog.flush();
    const stored = await t.services.db
      .selectFrom('request_logs')
      .select('id')
      .where('id', '=', String(refused.headers['x-request-id']))
      .execute();
    assert.equal(stored.length, 0);
    assert.match(
      (await client.get('/developers/requests')).body,
      /Requests without a valid API key \(401\) belong to no account and are not listed\./,
    );
  });

  it('shows the last 7 days, and the purge removes older rows', async () => {
    const now = t.services.clock.now().getTime();
    const row = (id: string, ageMs: number) => requestLogRow(t.seed, id, new Date(now - ageMs).toISOString());
    t.services.requestLog.add(row('req_six_days_old', requestLogRetentionMs - 24 * 60 * 60 * 1000));
    t.services.requestLog.add(row('req_eight_days_old', requestLogRetentionMs + 24 * 60 * 60 * 1000));
    await t.services.requestLog.flush();
    const page = (await client.get('/developers/requests')).body;
    assert.ok(page.includes('req_six_days_old'), 'six days old: listed');
    assert.ok(!page.includes('req_eight_days_old'), 'eight days old: not listed');
    assert.match(
      (await client.get('/developers/requests?request_id=req_eight_days_old')).body,
      /No request <code>req_eight_days_old<\/code> in this account in the last 7 days\./,
    );

    assert.ok((await purgeOldRequests(t.services.db, t.services.clock)) >= 1);
    const left = await t.services.db
      .selectFrom('request_logs')
      .select('id')
      .where('id', 'in', ['req_six_days_old', 'req_eight_days_old'])
      .execute();
    assert.deepEqual(
      left.map((r) => r.id),
      ['req_six_days_old'],
    );
  });

  it('shows 100 requests a page, newest first, with a link to the older ones until there are none', async () => {
    const account = await t.newAccount({ agentId: 'agent_pages' });
    const own = await signedInClient(t, account);
    const start = t.services.clock.now().getTime() - 60 * 60 * 1000;
    const ids = Array.from({ length: 230 }, (_, i) => `req_page_${String(i).padStart(3, '0')}`);
    for (const [i, id] of ids.entries()) {
      // Two requests in each millisecond: the id orders those.
      t.services.requestLog.add(requestLogRow(account, id, new Date(start + Math.floor(i / 2)).toISOString()));
    }
    await t.services.requestLog.flush();
    const shown: string[] = [];
    let url: string | undefined = '/developers/requests';
    const pages: string[] = [];
    while (url) {
      const body: string = (await own.get(url)).body;
      pages.push(body);
      shown.push(...[...body.matchAll(/<code class="id">(req_page_\d+)<\/code>/g)].map((match) => match[1]!));
      url = /<a href="([^"]+)">Older requests →<\/a>/.exec(body)?.[1]?.replaceAll('&amp;', '&');
      assert.ok(pages.length <= 3, 'at most three pages');
    }
    assert.deepEqual(shown, [...ids].reverse(), 'every request once, newest first');
    assert.deepEqual(
      pages.map((page) => (page.match(/<tr>/g) ?? []).length - 1),
      [100, 100, 30],
    );
    assert.ok(!pages[0]!.includes('← Newest') && pages[1]!.includes('← Newest'));
    // Another account's request id as the cursor shows nothing of either account.
    const foreign = (await client.get(`/developers/requests?before=${ids[150]}`)).body;
    assert.ok(!foreign.includes('req_page_'), 'no request of the other account');
  });

  it('marks a replayed answer (the stored one of its Idempotency-Key) in the list and on its page; keeps ids whole in a path', async () => {
    const first = await t.createCall(callBody(t), { idempotencyKey: 'log-replay-1' });
    const again = await t.createCall(callBody(t), { idempotencyKey: 'log-replay-1' });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const batchPath = '/v1/batches/batch_01m87nzs5g4bvs6f92extmzq1n/recipients?limit=5';
    await t.inject({ method: 'GET', url: batchPath, headers: { authorization: `Bearer ${t.seed.token}` } });
    await t.services.requestLog.flush();
    const row = async (response: { headers: Record<string, unknown> }) =>
      (await client.get(`/developers/requests?request_id=${String(response.headers['x-request-id'])}`)).body;
    assert.doesNotMatch(await row(first), />replayed</, 'the first answer is no replay');
    assert.match(await row(again), /<span class="badge badge-info">replayed<\/span>/);
    const page = (await client.get(`/developers/requests/${String(again.headers['x-request-id'])}`)).body;
    assert.match(page, /<dt>Replayed<\/dt><dd>.*The stored answer of an earlier request with the same Idempotency-Key/);
    const list = (await client.get('/developers/requests')).body;
    assert.ok(list.includes('<span class="id">batch_01m87nzs5g4bvs6f92extmzq1n</span>'), 'the batch id in the path is kept whole');
  });

  it('finds a request by its request_id, with spaces around it, and links each row to its page', async () => {
    const response = await t.createCall(callBody(t, { agent_id: 'agent_nowhere' }));
    const requestId = response.json().request_id as string;
    await t.services.requestLog.flush();
    const page = (await client.get(`/developers/requests?request_id=${encodeURIComponent(`  ${requestId} `)}`)).body;
    assert.ok(page.includes(`href="/developers/requests/${requestId}"`));
    assert.equal((page.match(/<tr>/g) ?? []).length, 2, 'the header and the one request');
    assert.match(page, new RegExp(`value="${requestId}"`), 'the search box keeps the id');
  });
});
