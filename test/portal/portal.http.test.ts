/**
 * The developer portal over HTTP, on SQLite and PostgreSQL: sign-in, the session cookie, session fixation,
 * sign-out, CSRF on every form that changes something, and sign-in throttling.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { findUserByEmail } from '../../src/features/identity/users.repository.js';
import { createSession, resolveSession, sessionIdleMs, sessionMaxMs } from '../../src/features/identity/sessions.service.js';
import { resetPassword } from '../../src/features/identity/users.service.js';
import { ManualClock } from '../../src/lib/clock.js';
import { sha256Hex } from '../../src/lib/json.js';
import { forEachDialect } from '../support/dialects.js';
import type { Dialect } from '../support/test-database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import {
  encodeForm,
  password,
  portalClient,
  portalOrigin,
  sessionCookieOf,
  setCookieOf,
  signedInClient,
  signInForm,
} from '../support/portal-client.js';

const perAccountLimit = 6;
const perAccountIpLimit = 3;
const perIpLimit = 12;

let t: TestApp;
let receiver: WebhookReceiver;

/** Each part below starts an app of its own with these sign-in limits, and a local webhook receiver. */
function withPortal(dialect: Dialect): void {
  before(async () => {
    t = await startTestApp(dialect, {
      env: {
        CALLGATE_PORTAL_SIGNIN_PER_ACCOUNT: String(perAccountLimit),
        CALLGATE_PORTAL_SIGNIN_PER_ACCOUNT_IP: String(perAccountIpLimit),
        CALLGATE_PORTAL_SIGNIN_PER_IP: String(perIpLimit),
      },
    });
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });
}

await forEachDialect('Portal sign-in and sessions', (dialect) => {
  withPortal(dialect);

  it('sends a visitor without a session to the sign-in page, keeping where they were going', async () => {
    const client = portalClient(t);
    for (const url of [
      '/developers',
      '/developers/api-keys',
      '/developers/webhooks',
      '/developers/agents',
      '/developers/calls',
      '/developers/requests',
      '/developers/calls/call_x',
    ]) {
      const response = await client.get(url);
      assert.equal(response.statusCode, 303, url);
      assert.equal(response.headers.location, `/developers/sign-in?next=${encodeURIComponent(url)}`);
    }
    const form = await client.post('/developers/api-keys', { name: 'x' }, { csrf: 'anything' });
    assert.equal(form.statusCode, 303);
    assert.equal(form.headers.location, '/developers/sign-in');
    const page = await client.get('/developers/sign-in');
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /^text\/html/);
    assert.match(page.body, /<label for="email">Email<\/label>/);
    assert.match(page.body, /<label for="password">Password<\/label>/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
  });

  it('signs in with the right password: a new HttpOnly, SameSite=Lax cookie for /developers whose token is not stored', async () => {
    const account = await t.newAccount();
    const client = await signedInClient(t, account);
    const again = portalClient(t);
    const response = await again.signIn(client.email.toUpperCase());
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/developers');
    const setCookie = String(response.headers['set-cookie']);
    assert.match(setCookie, /^cg_session=[A-Za-z0-9_-]{43};/);
    assert.match(setCookie, /; Path=\/developers/);
    assert.match(setCookie, /; HttpOnly/);
    assert.match(setCookie, /; SameSite=Lax/);
    assert.doesNotMatch(setCookie, /Secure/, 'plain http: no Secure flag');
    const token = sessionCookieOf(response)!;
    const rows = await t.services.db.selectFrom('portal_sessions').selectAll().execute();
    assert.ok(
      rows.every((row) => row.id !== token && row.csrf_token !== token),
      'the token itself is never stored',
    );
    const overview = await again.get('/developers');
    assert.equal(overview.statusCode, 200);
    assert.ok(overview.body.includes(client.email));
  });

  it('marks the cookie Secure when the public URL is https', async () => {
    const app = buildApp({ ...t.services, config: Object.freeze({ ...t.services.config, publicUrl: 'https://portal.example.test' }) });
    try {
      const account = await t.newAccount();
      const { email } = await signedInClient(t, account);
      const form = await signInForm(app);
      const response = await app.inject({
        method: 'POST',
        url: '/developers/sign-in',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          origin: 'https://portal.example.test',
          cookie: `cg_signin=${form.token}`,
        },
        payload: encodeForm({ _csrf: form.token, email, password }),
        remoteAddress: '10.200.0.1',
      });
      assert.equal(response.statusCode, 303);
      assert.match(String(response.headers['set-cookie']), /; Secure/);
    } finally {
      await app.close();
    }
  });

  it('marks the cookie Secure behind a TLS-terminating proxy only when CALLGATE_TRUST_PROXY is on', async () => {
    const { email } = await signedInClient(t, await t.newAccount());
    const form = await signInForm(t);
    const viaProxy = {
      'content-type': 'application/x-www-form-urlencoded',
      host: 'portal.example.test',
      'x-forwarded-proto': 'https',
      origin: 'https://portal.example.test',
      cookie: `cg_signin=${form.token}`,
    };
    for (const trustProxy of [true, false]) {
      const app = buildApp({
        ...t.services,
        config: Object.freeze({ ...t.services.config, trustProxy, publicUrl: 'http://localhost:3000' }),
      });
      try {
        const response = await app.inject({
          method: 'POST',
          url: '/developers/sign-in',
          headers: viaProxy,
          payload: encodeForm({ _csrf: form.token, email, password }),
          remoteAddress: '10.201.0.1',
        });
        if (trustProxy) {
          assert.equal(response.statusCode, 303);
          assert.match(String(response.headers['set-cookie']), /; Secure/, 'https at the proxy: Secure');
        } else {
          // The forwarded scheme is not believed, so the https Origin is not this site's either.
          assert.equal(response.statusCode, 403);
          assert.equal(sessionCookieOf(response), undefined);
          const direct = await app.inject({
            method: 'POST',
            url: '/developers/sign-in',
            headers: { ...viaProxy, origin: 'http://portal.example.test' },
            payload: encodeForm({ _csrf: form.token, email, password }),
            remoteAddress: '10.201.0.2',
          });
          assert.equal(direct.statusCode, 303);
          assert.doesNotMatch(String(direct.headers['set-cookie']), /Secure/, 'an untrusted X-Forwarded-Proto does not count');
        }
      } finally {
        await app.close();
      }
    }
  });

  it('refuses a wrong password or an unknown email with the same words, and sets no cookie', async () => {
    const account = await t.newAccount();
    const { email } = await signedInClient(t, account);
    const wrong = await portalClient(t).signIn(email, 'not the password');
    const unknown = await portalClient(t).signIn('nobody@example.test', 'not the password');
    // An email far longer than any counter name the limiter's store keeps (PostgreSQL's was 255: a 500).
    const long = await portalClient(t).signIn(`${'b'.repeat(300)}@example.test`, 'not the password');
    for (const response of [wrong, unknown, long]) {
      assert.equal(response.statusCode, 401);
      assert.equal(response.headers['set-cookie'], undefined);
      assert.match(response.body, /That email and password do not match a user\./);
    }
  });

  it('never promotes a cookie set before sign-in: a planted token stays useless and a live one is ended', async () => {
    const account = await t.newAccount();
    const victim = await signedInClient(t, account);
    // A token of the right shape chosen by an attacker.
    const planted = portalClient(t);
    planted.cookie = 'A'.repeat(43);
    const first = await planted.signIn(victim.email);
    assert.equal(first.statusCode, 303);
    assert.notEqual(planted.cookie, 'A'.repeat(43));
    const stale = portalClient(t);
    stale.cookie = 'A'.repeat(43);
    assert.equal((await stale.get('/developers')).statusCode, 303);

    // The attacker's own live session planted in the victim's browser: signing in replaces and ends it.
    const attacker = await signedInClient(t, await t.newAccount());
    const attackerToken = attacker.cookie!;
    const browser = portalClient(t);
    browser.cookie = attackerToken;
    const response = await browser.signIn(victim.email);
    assert.equal(response.statusCode, 303);
    assert.notEqual(browser.cookie, attackerToken, 'a new session id at sign-in');
    assert.ok((await browser.get('/developers')).body.includes(victim.email));
    assert.equal((await attacker.get('/developers')).statusCode, 303, 'the replaced session is over');
    const row = await t.services.db
      .selectFrom('portal_sessions')
      .select('id')
      .where('id', '=', sha256Hex(`portal-session:${attackerToken}`))
      .executeTakeFirst();
    assert.equal(row, undefined);
  });

  it('signs out: the row is deleted, the cookie cleared, and the old cookie leads to the sign-in page', async () => {
    const client = await signedInClient(t, await t.newAccount());
    const token = client.cookie!;
    const response = await client.post('/developers/sign-out', {});
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/developers/sign-in?notice=signed_out');
    assert.match(String(response.headers['set-cookie']), /^cg_session=;.*Expires=Thu, 01 Jan 1970/);
    const old = portalClient(t);
    old.cookie = token;
    const after = await old.get('/developers/api-keys');
    assert.equal(after.statusCode, 303);
    assert.match(String(after.headers.location), /^\/developers\/sign-in/);
    const notice = await old.get('/developers/sign-in?notice=signed_out');
    assert.match(notice.body, /You are signed out\./);
  });

  it('ends a session after 12 hours unused, and after 7 days however active', async () => {
    const { email } = await signedInClient(t, await t.newAccount());
    const user = (await findUserByEmail(t.services.db, email))!;
    const clock = new ManualClock(Date.parse('2026-03-01T08:00:00.000Z'));
    const idle = await createSession(t.services.db, clock, user);
    clock.advance(sessionIdleMs - 60_000);
    assert.ok(await resolveSession(t.services.db, clock, idle.token), 'still alive just before the idle limit');
    clock.advance(sessionIdleMs + 1);
    assert.equal(await resolveSession(t.services.db, clock, idle.token), null, 'ended after 12 idle hours');

    const busy = await createSession(t.services.db, clock, user);
    const end = clock.now().getTime() + sessionMaxMs;
    while (clock.now().getTime() + 60 * 60_000 < end) {
      clock.advance(60 * 60_000);
      assert.ok(await resolveSession(t.services.db, clock, busy.token), 'used every hour: alive');
    }
    clock.set(end);
    assert.equal(await resolveSession(t.services.db, clock, busy.token), null, 'ended at 7 days');
    assert.equal(await resolveSession(t.services.db, clock, 'not a token'), null);
  });

  it('ends every session of a user whose password is reset', async () => {
    const client = await signedInClient(t, await t.newAccount());
    await resetPassword(t.services.db, { email: client.email, password: 'a brand new password' });
    assert.equal((await client.get('/developers')).statusCode, 303);
    assert.equal((await portalClient(t).signIn(client.email)).statusCode, 401, 'the old password no longer works');
    assert.equal((await portalClient(t).signIn(client.email, 'a brand new password')).statusCode, 303);
  });
});

await forEachDialect('Portal CSRF and sign-in throttling', (dialect) => {
  withPortal(dialect);

  it('refuses every state-changing form without the session CSRF token, and changes nothing', async () => {
    const client = await signedInClient(t, await t.newAccount());
    const accountId = (
      await t.services.db.selectFrom('users').select('account_id').where('email', '=', client.email).executeTakeFirstOrThrow()
    ).account_id;
    const csrf = await client.csrf();
    const created = await client.post('/developers/webhooks', {
      url: receiver.url,
      description: 'd',
      event_types: ['call.completed', 'call.failed'],
      enabled: 'on',
    });
    assert.equal(created.statusCode, 303);
    const endpointId = /\/developers\/webhooks\/(we_[a-z0-9]+)/.exec(String(created.headers.location))![1]!;
    const keyPage = await client.post('/developers/api-keys', { name: 'k', mode: 'test', form_token: await client.keyFormToken() });
    const keyId = /\/developers\/api-keys\/(key_[a-z0-9]+)\/revoke/.exec(keyPage.body)![1]!;
    assert.equal((await client.post(`/developers/webhooks/${endpointId}/test`, {})).statusCode, 303);
    const delivery = await t.services.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirstOrThrow();

    const snapshot = async () => ({
      keys: await t.services.db
        .selectFrom('api_keys')
        .select(['id', 'revoked_at', 'name'])
        .where('account_id', '=', accountId)
        .orderBy('id')
        .execute(),
      endpoints: await t.services.db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('account_id', '=', accountId)
        .orderBy('id')
        .execute(),
      deliveries: await t.services.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('account_id', '=', accountId)
        .orderBy('id')
        .execute(),
    });
    const before = await snapshot();
    const forms: [string, Record<string, string | string[]>][] = [
      ['/developers/api-keys', { name: 'forged', mode: 'live', form_token: await client.keyFormToken() }],
      [`/developers/api-keys/${keyId}/revoke`, {}],
      ['/developers/webhooks', { url: receiver.url, event_types: 'call.completed', enabled: 'on' }],
      [`/developers/webhooks/${endpointId}`, { url: receiver.url, description: 'forged', event_types: 'call.failed' }],
      [`/developers/webhooks/${endpointId}/delete`, {}],
      [`/developers/webhooks/${endpointId}/secret`, {}],
      [`/developers/webhooks/${endpointId}/rotate`, {}],
      [`/developers/webhooks/${endpointId}/test`, {}],
      [`/developers/webhooks/${endpointId}/deliveries/${delivery.id}/resend`, {}],
      ['/developers/sign-out', {}],
    ];
    const wrongToken = `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}`;
    for (const [url, form] of forms) {
      for (const token of [null, '', wrongToken]) {
        const response = await client.post(url, form, { csrf: token });
        assert.equal(response.statusCode, 403, `${url} with csrf ${String(token)}`);
        assert.match(response.body, /This form has expired/);
        assert.doesNotMatch(response.body, /whsec_[A-Za-z0-9+/=]{20,}/, 'no secret in the refusal');
      }
    }
    // Another session's token is no better than a made-up one.
    const other = await signedInClient(t, await t.newAccount());
    assert.equal((await client.post(`/developers/api-keys/${keyId}/revoke`, {}, { csrf: await other.csrf() })).statusCode, 403);
    assert.deepEqual(await snapshot(), before);
    assert.equal((await client.get('/developers')).statusCode, 200, 'still signed in');
  });

  it('accepts the sign-in form only from a page of this site (Origin, or Referer without Origin)', async () => {
    const { email } = await signedInClient(t, await t.newAccount());
    const cases: [Record<string, string>, number][] = [
      [{}, 403],
      [{ origin: 'https://evil.example' }, 403],
      [{ origin: 'null' }, 403],
      [{ referer: 'https://evil.example/login' }, 403],
      [{ referer: `${portalOrigin}/developers/sign-in` }, 303],
      [{ origin: portalOrigin }, 303],
    ];
    for (const [headers, status] of cases) {
      const response = await portalClient(t).signIn(email, password, headers);
      assert.equal(response.statusCode, status, JSON.stringify(headers));
      if (status === 403) assert.equal(sessionCookieOf(response), undefined);
    }
  });

  it('accepts the sign-in form only with the token of its page, which its cg_signin cookie holds too', async () => {
    const { email } = await signedInClient(t, await t.newAccount());
    const form = await signInForm(t);
    assert.match(form.token, /^[A-Za-z0-9_-]{32}$/);
    assert.equal(form.cookie, form.token, 'the page sets its token in the cookie');
    const page = await t.inject({ method: 'GET', url: '/developers/sign-in' });
    assert.match(String(page.headers['set-cookie']), /^cg_signin=[A-Za-z0-9_-]{32}; Path=\/developers\/sign-in; HttpOnly; SameSite=Lax$/);
    // A browser that holds a token keeps it: two tabs share one.
    const again = await t.inject({ method: 'GET', url: '/developers/sign-in', headers: { cookie: `cg_signin=${form.token}` } });
    assert.equal(setCookieOf(again, 'cg_signin'), form.token);
    const other = await signInForm(t);
    const post = (cookie: string | undefined, field: string | undefined) =>
      t.inject({
        method: 'POST',
        url: '/developers/sign-in',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          origin: portalOrigin,
          ...(cookie ? { cookie: `cg_signin=${cookie}` } : {}),
        },
        payload: encodeForm({ ...(field === undefined ? {} : { _csrf: field }), email, password }),
      });
    for (const [cookie, field] of [
      [undefined, undefined],
      [form.token, undefined],
      [undefined, form.token],
      [form.token, other.token],
      [form.token, ''],
    ] as const) {
      const refused = await post(cookie, field);
      assert.equal(refused.statusCode, 403, `cookie ${String(cookie)}, field ${String(field)}`);
      assert.equal(sessionCookieOf(refused), undefined);
    }
    const accepted = await post(other.token, other.token);
    assert.equal(accepted.statusCode, 303);
    assert.ok(sessionCookieOf(accepted));
  });

  it(`throttles sign-in per account and address: failure ${perAccountIpLimit + 1} from one address gets 429 there, while the owner still signs in from another`, async () => {
    const account = await t.newAccount();
    const owner = await signedInClient(t, account);
    const attacker = portalClient(t);
    for (let attempt = 1; attempt <= perAccountIpLimit; attempt++) {
      assert.equal((await attacker.signIn(owner.email, 'wrong password!')).statusCode, 401, `attempt ${attempt}`);
    }
    // The attacker's address is done for this account, even with the right password...
    const blocked = await attacker.signIn(owner.email);
    assert.equal(blocked.statusCode, 429);
    assert.ok(Number(blocked.headers['retry-after']) > 0 && Number(blocked.headers['retry-after']) <= 900);
    assert.equal(sessionCookieOf(blocked), undefined);
    // ...and its further tries are refused before they reach the account's own count.
    for (let attempt = 1; attempt <= perAccountLimit; attempt++) {
      assert.equal((await attacker.signIn(owner.email, 'wrong password!')).statusCode, 429);
    }
    // The owner, at another address, is not locked out.
    const again = portalClient(t);
    const response = await again.signIn(owner.email);
    assert.equal(response.statusCode, 303);
    assert.ok(sessionCookieOf(response));
    assert.equal((await again.get('/developers')).statusCode, 200);
  });

  it(`throttles sign-in per account across addresses: failure ${perAccountLimit + 1} within 15 minutes gets 429, even with the right password`, async () => {
    const account = await t.newAccount();
    const { email } = await signedInClient(t, account); // a success: it gives its attempt back
    for (let attempt = 1; attempt <= perAccountLimit; attempt++) {
      assert.equal((await portalClient(t).signIn(email, 'wrong password!')).statusCode, 401, `attempt ${attempt}`);
    }
    const blocked = await portalClient(t).signIn(email);
    assert.equal(blocked.statusCode, 429);
    assert.match(String(blocked.headers['retry-after']), /^\d+$/);
    assert.ok(Number(blocked.headers['retry-after']) > 0 && Number(blocked.headers['retry-after']) <= 900);
    assert.match(blocked.body, /Too many sign-in attempts/);
    assert.match(blocked.body, /Try again in \d+ minutes?/);
    assert.equal(sessionCookieOf(blocked), undefined);
    // Another account is not affected.
    const other = await signedInClient(t, await t.newAccount());
    assert.equal((await other.get('/developers')).statusCode, 200);
  });

  it(`successful sign-ins never use up the account's limit: ${perAccountLimit * 2} in a row all succeed`, async () => {
    const account = await t.newAccount();
    const { email } = await signedInClient(t, account);
    for (let attempt = 1; attempt <= perAccountLimit * 2; attempt++) {
      const response = await portalClient(t).signIn(email);
      assert.equal(response.statusCode, 303, `sign-in ${attempt}`);
    }
  });

  it(`throttles sign-in per IP across emails: attempt ${perIpLimit + 1} from one address gets 429`, async () => {
    const client = portalClient(t);
    for (let attempt = 1; attempt <= perIpLimit; attempt++) {
      assert.equal((await client.signIn(`guess${attempt}@example.test`, 'wrong password!')).statusCode, 401);
    }
    const blocked = await client.signIn('guess-last@example.test', 'wrong password!');
    assert.equal(blocked.statusCode, 429);
    assert.match(String(blocked.headers['retry-after']), /^\d+$/);
  });
});
