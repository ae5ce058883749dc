/**
 * Portal sign-in and sessions. The cookie holds a random 32-byte token; the database holds only its
 * SHA-256, so a leaked table signs nobody in. Every sign-in makes a new session (a token planted in a
 * browser before sign-in is never promoted: session fixation), and sign-out deletes the row.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import { sha256Hex } from '../../lib/json.js';
import type { RateLimiter } from '../rate-limit/rate-limit.interface.js';
import type { UserRow } from './identity.tables.js';
import * as repo from './sessions.repository.js';
import { findUserByEmail } from './users.repository.js';
import { authenticateUser, normaliseEmail } from './users.service.js';

/** A session unused this long has ended. */
export const sessionIdleMs = 12 * 60 * 60 * 1000;
/** A session ends this long after sign-in, however active. */
export const sessionMaxMs = 7 * 24 * 60 * 60 * 1000;
/** last_seen_at is written at most this often, so most page views add no write. */
const touchResolutionMs = 60_000;

/** The shape of a `randomToken()`. */
export const tokenPattern = /^[A-Za-z0-9_-]{43}$/;

export interface PortalSession {
  readonly id: string;
  readonly userId: string;
  readonly email: string;
  readonly accountId: string;
  readonly accountName: string;
  readonly csrfToken: string;
  readonly expiresAt: string;
}

/**
 * Sign-in attempts are counted per client IP, per account of the email (or the email, when unknown) from
 * one IP, and per account from all IPs together. The per-(account, IP) budget is the tight one: it stops
 * guessing from one address without locking the account's owner out everywhere else. The per-account one
 * is much higher and caps guessing spread over many addresses.
 */
export interface SignInLimiters {
  readonly perAccount: RateLimiter;
  readonly perAccountIp: RateLimiter;
  readonly perIp: RateLimiter;
}

/** 32 random bytes as 43 base64url characters: session, CSRF and one-time form tokens. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

function sessionId(token: string): string {
  return sha256Hex(`portal-session:${token}`);
}

export async function createSession(db: Db, clock: Clock, user: UserRow): Promise<{ token: string; session: PortalSession }> {
  const now = clock.now();
  const token = randomToken();
  const row = {
    id: sessionId(token),
    user_id: user.id,
    account_id: user.account_id,
    csrf_token: randomToken(),
    created_at: isoTimestamp(now),
    last_seen_at: isoTimestamp(now),
    expires_at: isoTimestamp(addMs(now, sessionMaxMs)),
  };
  // Sign-ins are rare, so this is where ended sessions are swept away.
  await repo.deleteEndedSessions(db, row.created_at, isoTimestamp(addMs(now, -sessionIdleMs)));
  await repo.insertSession(db, row);
  const found = await repo.findSessionWithUser(db, row.id);
  return {
    token,
    session: {
      id: row.id,
      userId: user.id,
      email: user.email,
      accountId: user.account_id,
      accountName: found?.account_name ?? '',
      csrfToken: row.csrf_token,
      expiresAt: row.expires_at,
    },
  };
}

/** The live session of a cookie token, or null when it is unknown, idle for too long or past its end. */
export async function resolveSession(db: Db, clock: Clock, token: string | undefined): Promise<PortalSession | null> {
  if (token === undefined || !tokenPattern.test(token)) return null;
  const row = await repo.findSessionWithUser(db, sessionId(token));
  if (!row) return null;
  const now = clock.now();
  const nowText = isoTimestamp(now);
  if (row.expires_at <= nowText || row.last_seen_at < isoTimestamp(addMs(now, -sessionIdleMs))) {
    await repo.deleteSession(db, row.id);
    return null;
  }
  if (row.last_seen_at < isoTimestamp(addMs(now, -touchResolutionMs))) await repo.touchSession(db, row.id, nowText);
  return {
    id: row.id,
    userId: row.user_id,
    email: row.email,
    accountId: row.account_id,
    accountName: row.account_name,
    csrfToken: row.csrf_token,
    expiresAt: row.expires_at,
  };
}

export async function endSession(db: Db, session: Pick<PortalSession, 'id'>): Promise<void> {
  await repo.deleteSession(db, session.id);
}

export interface SignedIn {
  /** For the session cookie; stored nowhere. */
  readonly token: string;
  readonly session: PortalSession;
}

/** A 429 that says when to try again, in minutes (the limits' windows are long). */
function throttled(retryAfterSeconds: number): ApiError {
  const minutes = Math.ceil(retryAfterSeconds / 60);
  return new ApiError(
    'rate_limit_exceeded',
    `Sign-in is paused for this account or network. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
    { retryAfterSeconds },
  );
}

export interface SignInDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly limiters: SignInLimiters;
}

/**
 * Checks an email and password. Every attempt counts against the limits before the password is looked
 * at: counting failures only afterwards would let parallel guesses all pass the check first. A success
 * then gives its account's attempts back, so that a team signing in through the day never meets those
 * limits; only failures use them up. The IP's attempt stays counted: refunding it would let someone with an
 * account of their own sign in between guesses at others and never meet the per-IP limit. An address that
 * used up its budget for an account is refused before the account-wide count, so its further tries do not
 * eat into what the owner's addresses have left. Refused with 429 `rate_limit_exceeded` past a limit and
 * 401 `unauthorized` for a wrong email or password (which of the two is not said).
 */
export async function signIn(deps: SignInDeps, input: { email: string; password: string; ip: string }): Promise<SignedIn> {
  const email = normaliseEmail(input.email);
  const byIp = await deps.limiters.perIp.consume(`ip:${input.ip}`);
  if (!byIp.allowed) throw throttled(byIp.resetSeconds);
  const known = email === '' ? undefined : await findUserByEmail(deps.db, email);
  const accountKey = known ? `account:${known.account_id}` : `email:${email.slice(0, 320)}`;
  const accountIpKey = `${accountKey}:ip:${input.ip}`;
  const byAccountIp = await deps.limiters.perAccountIp.consume(accountIpKey);
  if (!byAccountIp.allowed) throw throttled(byAccountIp.resetSeconds);
  const byAccount = await deps.limiters.perAccount.consume(accountKey);
  if (!byAccount.allowed) throw throttled(byAccount.resetSeconds);
  const user = await authenticateUser(deps.db, email, input.password);
  if (!user) throw new ApiError('unauthorized', 'That email and password do not match a user.');
  await deps.limiters.perAccountIp.refund(accountIpKey);
  await deps.limiters.perAccount.refund(accountKey);
  return createSession(deps.db, deps.clock, user);
}
