/**
 * A browser-like client of the portal over `inject`: keeps the session cookie, sends forms with the page's
 * CSRF token, and comes from an IP of its own so that sign-in limits of one test do not touch another.
 */
import type { LightMyRequestResponse } from 'fastify';
import { addUser } from '../../src/features/identity/users.service.js';
import type { SeededAccount, TestApp } from './test-app.js';

export const portalOrigin = 'http://localhost:80';
export const password = 'correct horse battery';

let nextIp = 1;

export interface PortalClient {
  cookie: string | undefined;
  readonly ip: string;
  get(url: string): Promise<LightMyRequestResponse>;
  /** POSTs a form; `_csrf` is added from the session's pages unless the form has one (null: send none). */
  post(
    url: string,
    form: Record<string, string | string[]>,
    options?: { csrf?: string | null; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  signIn(email: string, pass?: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  csrf(): Promise<string>;
  /** The one-time `form_token` of a freshly loaded key-creation form. */
  keyFormToken(): Promise<string>;
}

export function encodeForm(form: Record<string, string | string[]>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(form)) for (const item of Array.isArray(value) ? value : [value]) params.append(name, item);
  return params.toString();
}

export function formTokenOf(page: string): string {
  const match = /name="form_token" value="([^"]+)"/.exec(page);
  if (!match?.[1]) throw new Error('no form_token field on the page');
  return match[1];
}

export function csrfOf(page: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(page);
  if (!match?.[1]) throw new Error('no CSRF field on the page');
  return match[1];
}

/** The value of a cookie in a response's Set-Cookie, or undefined. */
export function setCookieOf(response: LightMyRequestResponse, name: string): string | undefined {
  const header = response.headers['set-cookie'];
  const cookies = Array.isArray(header) ? header : header ? [header] : [];
  const line = cookies.find((cookie) => cookie.startsWith(`${name}=`));
  return line ? line.slice(name.length + 1).split(';')[0] : undefined;
}

/** The value of cg_session in a response's Set-Cookie, or undefined. */
export function sessionCookieOf(response: LightMyRequestResponse): string | undefined {
  return setCookieOf(response, 'cg_session');
}

/** The sign-in form as a browser loads it: the token of its `_csrf` field, which its cg_signin cookie holds too. */
export async function signInForm(t: Pick<TestApp, 'inject'>, ip = '10.8.0.1'): Promise<{ token: string; cookie: string | undefined }> {
  const page = await t.inject({ method: 'GET', url: '/developers/sign-in', remoteAddress: ip });
  return { token: csrfOf(page.body), cookie: setCookieOf(page, 'cg_signin') };
}

export function portalClient(t: TestApp): PortalClient {
  const ip = `10.9.${Math.floor(nextIp / 250)}.${(nextIp++ % 250) + 1}`;
  const client: PortalClient = {
    cookie: undefined,
    ip,
    get(url) {
      return t.inject({ method: 'GET', url, remoteAddress: ip, headers: client.cookie ? { cookie: `cg_session=${client.cookie}` } : {} });
    },
    async post(url, form, options = {}) {
      const body = { ...form };
      if (options.csrf !== null && !('_csrf' in body)) body._csrf = options.csrf ?? (await client.csrf());
      return t.inject({
        method: 'POST',
        url,
        remoteAddress: ip,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          origin: portalOrigin,
          ...(client.cookie ? { cookie: `cg_session=${client.cookie}` } : {}),
          ...options.headers,
        },
        payload: encodeForm(body),
      });
    },
    async signIn(email, pass = password, headers = { origin: portalOrigin }) {
      // As a browser does: load the form (its token, and the same in the cg_signin cookie), then send it.
      const form = await signInForm(t, ip);
      const cookies = [`cg_signin=${form.token}`, ...(client.cookie ? [`cg_session=${client.cookie}`] : [])];
      const response = await t.inject({
        method: 'POST',
        url: '/developers/sign-in',
        remoteAddress: ip,
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies.join('; '), ...headers },
        payload: encodeForm({ _csrf: form.token, email, password: pass }),
      });
      const cookie = sessionCookieOf(response);
      if (cookie !== undefined) client.cookie = cookie;
      return response;
    },
    async csrf() {
      const page = await client.get('/developers/api-keys');
      if (page.statusCode !== 200) throw new Error(`not signed in (GET /developers/api-keys answered ${page.statusCode})`);
      return csrfOf(page.body);
    },
    async keyFormToken() {
      return formTokenOf((await client.get('/developers/api-keys')).body);
    },
  };
  return client;
}

let nextUser = 1;

/** A portal user in the seeded account or a given one, signed in. */
export async function signedInClient(t: TestApp, account: SeededAccount = t.seed): Promise<PortalClient & { email: string }> {
  const email = `dev${nextUser++}-${account.accountId.slice(-6)}@example.test`;
  await addUser(t.services.db, t.services.clock, { accountId: account.accountId, email, password });
  const client = portalClient(t);
  const response = await client.signIn(email);
  if (response.statusCode !== 303) throw new Error(`sign-in failed: ${response.statusCode}`);
  return Object.assign(client, { email });
}
