/**
 * The bodies the request log keeps, on SQLite and PostgreSQL through the real app: the request's JSON as
 * sent and the answer as sent (metadata values kept), a refused body too, at most 16 KB each cut between
 * characters with a marker, no token, no Authorization header, no secret field; and their page in the
 * portal (pretty-printed, escaped, the account's only). The cutting and redacting rules themselves first.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { capText, loggedBody, loggedBodyMaxBytes, redactSecrets, wasCut } from '../../src/features/request-log/request-log-bodies.js';
import { postBatch } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import { signedInClient } from '../support/portal-client.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';

describe('Request log bodies: cutting and redacting', () => {
  it('keeps text that fits, and cuts the rest between characters, marker included, within the limit', () => {
    assert.equal(capText('{"a":1}'), '{"a":1}');
    // 4-byte characters (an emoji) and 2-byte ones around the cut: never half a character.
    for (const unit of ['😀', 'é', 'a', 'aé😀']) {
      const text = unit.repeat(10_000);
      const cut = capText(text, 1000);
      assert.ok(wasCut(cut));
      assert.ok(Buffer.byteLength(cut) <= 1000, `${Buffer.byteLength(cut)} bytes`);
      const kept = cut.slice(0, cut.indexOf('\n… [cut:'));
      assert.ok(text.startsWith(kept) && kept.length > 800 / 4);
      assert.ok(!Buffer.from(kept).toString('utf8').includes('\uFFFD'), 'no broken character');
      assert.match(cut, new RegExp(`of ${Buffer.byteLength(text)} bytes are kept\\]$`));
    }
    const exact = 'x'.repeat(loggedBodyMaxBytes);
    assert.equal(capText(exact), exact, 'exactly 16 KB is kept whole');
    assert.ok(wasCut(capText(`${exact}y`)));
  });

  it('redacts secret fields outside metadata, tokens and signing secrets anywhere, and keeps the rest', () => {
    const token = `cg_live_${'ab12'.repeat(16)}`;
    const secret = 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTIzNA==';
    const body = JSON.stringify({
      url: 'https://example.com/hooks',
      secret,
      nested: [{ password: 'hunter2', keep: 1 }],
      metadata: { password: 'kept as sent', note: `my key is ${token}` },
    });
    const out = JSON.parse(redactSecrets(body));
    assert.deepEqual(out, {
      url: 'https://example.com/hooks',
      secret: '[redacted]',
      nested: [{ password: '[redacted]', keep: 1 }],
      metadata: { password: 'kept as sent', note: 'my key is [redacted]' },
    });
    // A cut token's beginning goes too, and a large body's secret fields are found by pattern.
    assert.equal(redactSecrets(`{"note":"${token.slice(0, 20)}`), '{"note":"[redacted]');
    const large = loggedBody(`{"secret":"${secret.slice(6)}","pad":"${'x'.repeat(100_000)}"}`)!;
    assert.ok(large.startsWith('{"secret":"[redacted]","pad":"xxx') && wasCut(large));
    assert.equal(loggedBody(''), null);
    assert.equal(loggedBody(null), null);
  });
});

await forEachDialect('Request log bodies', (dialect) => {
  let t: TestApp;

  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  async function logged(response: { headers: Record<string, unknown> }) {
    await t.services.requestLog.flush();
    return t.services.db
      .selectFrom('request_logs')
      .selectAll()
      .where('id', '=', String(response.headers['x-request-id']))
      .executeTakeFirstOrThrow();
  }

  it('keeps the request body as sent and the answer as sent, metadata values included, and never the token', async () => {
    const sent = JSON.stringify(callBody(t, { metadata: { customer_name: 'Zoë <b>', vip: true, visits: 3, note: null } }), null, 1);
    const res = await t.createCall(sent, { idempotencyKey: 'bodies-1' });
    assert.equal(res.statusCode, 201);
    const row = await logged(res);
    assert.equal(row.request_body, sent);
    assert.equal(row.response_body, res.body);
    const everything = JSON.stringify(row);
    assert.ok(!everything.includes(t.seed.token) && !everything.includes(t.seed.token.slice(8, 30)), 'no token');
    assert.ok(!/authorization|bearer/i.test(everything), 'no Authorization header');
  });

  it('an error answer, a refused body and a GET: what there was', async () => {
    const refused = await t.inject({
      method: 'POST',
      url: '/v1/calls',
      headers: { authorization: `Bearer ${t.seed.token}`, 'content-type': 'application/json' },
      payload: '{"agent_id":',
    });
    assert.equal(refused.statusCode, 400);
    const refusedRow = await logged(refused);
    assert.equal(refusedRow.request_body, '{"agent_id":');
    assert.equal(JSON.parse(refusedRow.response_body!).error, 'invalid_json');

    const read = await t.inject({ method: 'GET', url: '/v1/calls?limit=1', headers: { authorization: `Bearer ${t.seed.token}` } });
    const readRow = await logged(read);
    assert.equal(readRow.request_body, null);
    assert.equal(readRow.response_body, read.body);
  });

  it('a token pasted into metadata is not kept', async () => {
    const res = await t.createCall(callBody(t, { metadata: { note: `key ${t.seed.token}` } }));
    const row = await logged(res);
    assert.equal(JSON.parse(row.request_body!).metadata.note, 'key [redacted]');
  });

  it('a body over 16 KB (a batch) is kept to 16 KB, cut between characters, with a marker', async () => {
    const recipients = Array.from({ length: 600 }, (_, index) => ({
      to: `+1415555${String(2000 + index).padStart(4, '0')}`,
      reference: `réf-😀-${index}`,
      metadata: { customer_name: `Zoë ${index}` },
    }));
    const sent = JSON.stringify({ agent_id: t.seed.agentId, recipients });
    assert.ok(Buffer.byteLength(sent) > 2 * loggedBodyMaxBytes);
    const res = await postBatch(t, sent);
    assert.equal(res.statusCode, 201, res.body);
    const row = await logged(res);
    const kept = row.request_body!;
    assert.ok(wasCut(kept));
    assert.ok(Buffer.byteLength(kept) <= loggedBodyMaxBytes);
    assert.ok(sent.startsWith(kept.slice(0, kept.indexOf('\n… [cut:'))), 'the beginning of what was sent, no character broken');
    assert.equal(row.response_body, res.body, 'the answer fits');
  });

  it("the portal's request page shows both bodies pretty-printed and escaped, for the account's requests only", async () => {
    const res = await t.createCall(callBody(t, { metadata: { note: '<script>alert(1)</script>' } }));
    const row = await logged(res);
    const client = await signedInClient(t);
    const list = (await client.get('/developers/requests')).body;
    assert.ok(list.includes(`href="/developers/requests/${row.id}"`), 'the table links to the page');
    const page = await client.get(`/developers/requests/${row.id}`);
    assert.equal(page.statusCode, 200);
    assert.ok(page.body.includes('&lt;script&gt;alert(1)&lt;/script&gt;') && !page.body.includes('<script>alert(1)'), 'escaped');
    assert.ok(page.body.includes('{\n  &quot;agent_id&quot;: &quot;') || page.body.includes('{\n  "agent_id": "'), 'pretty-printed');
    assert.ok(page.body.includes(`&quot;id&quot;: &quot;${res.json().id}&quot;`) || page.body.includes(`"id": "${res.json().id}"`));
    assert.ok(!page.body.includes(t.seed.token));

    const other = await signedInClient(t, await t.newAccount({ agentId: 'agent_elsewhere' }));
    assert.equal((await other.get(`/developers/requests/${row.id}`)).statusCode, 404);
    assert.equal((await client.get('/developers/requests/req_unknown')).statusCode, 404);
  });
});
