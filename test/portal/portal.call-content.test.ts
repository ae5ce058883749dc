/**
 * What was said on a call, on its portal page, on SQLite and PostgreSQL: the line before the end, the
 * analysis and the transcript (in order, as a conversation, escaped), the empty states, and the recording
 * streamed through the portal with the session (never an API key): audio with the WAV bytes for the account,
 * the sign-in redirect without a session, 404 for another account, pages (never the API's JSON) for a call
 * not ended, a call without a recording and a provider that cannot serve it (503 with Retry-After).
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { recordOutcome } from '../../src/features/calls/calls.service.js';
import type { CallContent } from '../../src/features/providers/provider.interface.js';
import { forEachDialect } from '../support/dialects.js';
import { portalClient, signedInClient, type PortalClient } from '../support/portal-client.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';

const hostile = `<script>alert("x")</script>`;

/** The texts of the transcript's turns on a page, in order, with their speakers and offsets as shown. */
function turnsOf(page: string): { role: string; who: string; at: string | null; text: string }[] {
  const turns = [...page.matchAll(/<li class="turn turn-(\w+)">([\s\S]*?)<\/li>/g)];
  return turns.map(([, role, body]) => ({
    role: role!,
    who: /<span class="turn-who">([^<]*)<\/span>/.exec(body!)?.[1] ?? '',
    at: /<span class="turn-at[^"]*"[^>]*>([^<]*)<\/span>/.exec(body!)?.[1] ?? null,
    text: /<p class="turn-text">([\s\S]*?)<\/p>/.exec(body!)?.[1] ?? '',
  }));
}

function textOf(text: string): string {
  return text
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&#96;', '`')
    .replaceAll('&amp;', '&');
}

function ended(startedAgoSeconds: number, content: CallContent) {
  const endedAt = new Date();
  return {
    status: 'completed' as const,
    startedAt: new Date(endedAt.getTime() - startedAgoSeconds * 1000),
    endedAt,
    durationSeconds: startedAgoSeconds,
    transcriptSummary: 'Talked it through.',
    content,
  };
}

await forEachDialect('Portal call page: what was said, and the recording through the portal', (dialect) => {
  let t: TestApp;
  let client: PortalClient;
  before(async () => {
    // No monitor at first: calls stay under way until a test ends them, or until the monitor starts below.
    t = await startTestApp(dialect);
    client = await signedInClient(t);
  });
  after(async () => t.close());

  const createCall = async (body: Record<string, unknown> = {}, token = t.seed.token): Promise<string> => {
    const created = await t.createCall(callBody(t, body), { token });
    assert.equal(created.statusCode, 201);
    return created.json().id as string;
  };

  it('before the end: a line saying when the content comes, no player, and the recording route answers a 409 page', async () => {
    const id = await createCall();
    const page = await client.get(`/developers/calls/${id}`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<h2 id="said">What was said<\/h2>/);
    assert.match(page.body, /the recording appear here once the call has ended/);
    assert.doesNotMatch(page.body, /<audio/);
    assert.equal(turnsOf(page.body).length, 0);
    const recording = await client.get(`/developers/calls/${id}/recording`);
    assert.equal(recording.statusCode, 409);
    assert.match(String(recording.headers['content-type']), /^text\/html/);
    assert.match(recording.body, /has not ended yet/);
    assert.doesNotMatch(recording.body, /"error":/, 'not the API error JSON');
  });

  it('an ended call: the judgement, the data, the turns as a conversation with m:ss offsets, all escaped', async () => {
    const id = await createCall();
    await recordOutcome(
      t.services.db,
      t.services.clock,
      id,
      ended(80, {
        analysis: { successful: false, data: { outcome: 'callback', attempts: 2, opted_in: true, note: hostile, missing: null } },
        turns: [
          { role: 'agent', text: 'Hello, is this a good time?', offsetSeconds: 0 },
          { role: 'user', text: `Not now ${hostile}`, offsetSeconds: 9.6 },
          { role: 'agent', text: 'When may I call back?', offsetSeconds: 65.4 },
          { role: 'user', text: 'Tomorrow.', offsetSeconds: null },
        ],
        recording: null,
      }),
    );
    const page = (await client.get(`/developers/calls/${id}`)).body;
    assert.ok(!page.includes('<script>alert'), 'no raw script from the transcript or the data');
    assert.match(page, /class="analysis-successful"><span class="badge badge-bad">no<\/span>/);
    const data = /<dl class="facts compact analysis-data">([\s\S]*?)<\/dl>/.exec(page)?.[1] ?? '';
    const pairs = [...data.matchAll(/<dt><code>([^<]*)<\/code><\/dt><dd>([\s\S]*?)<\/dd>/g)].map(([, key, value]) => [
      key,
      textOf(value!.replace(/<[^>]+>/g, '')),
    ]);
    assert.deepEqual(pairs, [
      ['outcome', 'callback'],
      ['attempts', '2'],
      ['opted_in', 'true'],
      ['note', hostile],
      ['missing', 'null'],
    ]);
    assert.deepEqual(
      turnsOf(page).map((turn) => ({ ...turn, text: textOf(turn.text) })),
      [
        { role: 'agent', who: 'Agent', at: '0:00', text: 'Hello, is this a good time?' },
        { role: 'user', who: 'User', at: '0:09', text: `Not now ${hostile}` },
        { role: 'agent', who: 'Agent', at: '1:05', text: 'When may I call back?' },
        { role: 'user', who: 'User', at: null, text: 'Tomorrow.' },
      ],
    );
    // The provider kept no recording: no player, and the route says so in a page.
    assert.doesNotMatch(page, /<audio/);
    assert.match(page, /No recording: the provider kept none/);
    const recording = await client.get(`/developers/calls/${id}/recording`);
    assert.equal(recording.statusCode, 404);
    assert.match(recording.body, /This call has no recording/);
  });

  it('an ended call that kept nothing: no judgement, no data, and the empty transcript says why', async () => {
    const id = await createCall();
    await recordOutcome(t.services.db, t.services.clock, id, ended(5, { analysis: null, turns: null, recording: null }));
    const page = (await client.get(`/developers/calls/${id}`)).body;
    assert.match(page, /class="analysis-successful"><span class="badge badge-neutral">no judgement<\/span>/);
    assert.match(page, /<dt>Data<\/dt><dd><span class="muted">none<\/span><\/dd>/);
    assert.match(page, /No transcript: the provider kept none for this call, or the retention period for call content has passed\./);
    assert.equal(turnsOf(page).length, 0);
  });

  it('a provider that cannot serve the recording now: 503 with Retry-After, as a page', async () => {
    const id = await createCall();
    await recordOutcome(t.services.db, t.services.clock, id, ended(5, { analysis: null, turns: null, recording: { kind: 'provider' } }));
    // The call is Retell's, which this server has no key for: its provider cannot be reached.
    await t.services.db.updateTable('calls').set({ provider: 'retell' }).where('id', '=', id).execute();
    assert.match((await client.get(`/developers/calls/${id}`)).body, /<audio controls preload="none"/);
    const recording = await client.get(`/developers/calls/${id}/recording`);
    assert.equal(recording.statusCode, 503);
    assert.match(String(recording.headers['retry-after']), /^[1-9]\d*$/);
    assert.match(String(recording.headers['content-type']), /^text\/html/);
    assert.match(recording.body, /could not serve the recording just now/);
  });

  it('a simulated call (live and test mode): the analysis from its metadata, five turns in order, and the WAV through the session', async () => {
    t.services.jobs.start([t.services.callMonitor.name]);
    const testKey = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' });
    const metadata = { customer_name: hostile, crm_id: 'cus_42', attempt: 3 };
    const calls = [
      { id: await createCall({ metadata }), token: t.seed.token },
      { id: await createCall({ metadata }, testKey.token), token: testKey.token },
    ];
    for (const { id, token } of calls) {
      const page = await until(`the content of ${id} once it has ended`, async () => {
        const body = (await client.get(`/developers/calls/${id}`)).body;
        return /<h3>Transcript<\/h3>/.test(body) ? body : undefined;
      });
      assert.match(page, /<span class="badge badge-ok">completed<\/span>/);
      assert.ok(!page.includes('<script>alert'), 'the hostile name is text');
      assert.match(page, /class="analysis-successful"><span class="badge badge-(ok|bad)">(yes|no)<\/span>/);
      assert.ok(page.includes('<dt><code>crm_id</code></dt><dd>cus_42</dd>'), 'data from the metadata');
      assert.ok(page.includes('<dt><code>attempt</code></dt><dd><code>3</code></dd>'));
      assert.match(page, /<dt><code>outcome<\/code><\/dt>/);
      const turns = turnsOf(page);
      assert.deepEqual(
        turns.map((turn) => turn.role),
        ['agent', 'user', 'agent', 'user', 'agent'],
      );
      assert.equal(textOf(turns[0]!.text), `Hello ${hostile}, this is the callgate simulator.`);
      assert.equal(turns[1]!.text, 'Hi, who is this?');
      assert.ok(turns.every((turn) => turn.at !== null && /^\d+:\d\d$/.test(turn.at)));

      const src = `/developers/calls/${id}/recording`;
      assert.ok(page.includes(`<audio controls preload="none" src="${src}"`), 'the player plays through the portal');
      assert.ok(page.includes(`href="${src}" download>`), 'and a download link');
      const csp = String((await client.get(`/developers/calls/${id}`)).headers['content-security-policy']);
      assert.match(csp, /media-src 'self'/);
      const audio = await client.get(src);
      assert.equal(audio.statusCode, 200);
      assert.equal(audio.headers['content-type'], 'audio/wav');
      assert.equal(audio.headers['cache-control'], 'private, no-store');
      assert.equal(audio.headers['content-disposition'], `inline; filename="${id}.wav"`);
      assert.equal(Number(audio.headers['content-length']), audio.rawPayload.length);
      assert.equal(audio.rawPayload.subarray(0, 4).toString('ascii'), 'RIFF');
      assert.equal(audio.rawPayload.subarray(8, 12).toString('ascii'), 'WAVE');
      // The same bytes the API serves for the call.
      const api = await t.inject({ method: 'GET', url: `/v1/calls/${id}/recording`, headers: { authorization: `Bearer ${token}` } });
      assert.deepEqual(audio.rawPayload, api.rawPayload);
    }
  });

  it('the recording needs a session of the call\u2019s account: none redirects to sign in; another account gets 404', async () => {
    const id = await createCall();
    await until(`call ${id} to end`, async () =>
      (await client.get(`/developers/calls/${id}`)).body.includes('<audio') ? true : undefined,
    );
    const src = `/developers/calls/${id}/recording`;

    const anonymous = await portalClient(t).get(src);
    assert.equal(anonymous.statusCode, 303);
    assert.equal(anonymous.headers.location, `/developers/sign-in?next=${encodeURIComponent(src)}`);
    // An API key is no session here.
    const withKey = await t.inject({ method: 'GET', url: src, headers: { authorization: `Bearer ${t.seed.token}` } });
    assert.equal(withKey.statusCode, 303);

    const other = await signedInClient(t, await t.newAccount({ agentId: 'agent_other' }));
    for (const url of [`/developers/calls/${id}`, src]) {
      const refused = await other.get(url);
      assert.equal(refused.statusCode, 404, url);
      assert.match(String(refused.headers['content-type']), /^text\/html/);
      assert.match(refused.body, /There is no such page in this account/);
      assert.doesNotMatch(refused.body, /RIFF/);
    }
    for (const url of ['/developers/calls/call_nothing/recording', '/developers/calls/%00/recording', '/developers/calls/a.b/recording']) {
      assert.equal((await client.get(url)).statusCode, 404, url);
    }
  });
});
