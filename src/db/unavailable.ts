/**
 * Which database failures mean "the database is away" (a dropped or refused connection, a server shutting
 * down, a SQLite file that cannot be written) rather than a bug: those are answered 503
 * `database_unavailable` ("retry with backoff") and logged as warnings, and the process carries on.
 */

import { setTimeout as sleep } from 'node:timers/promises';

/** Node socket errors of a connection that dropped or could not be made. */
const socketCodes = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception), 57P01 admin_shutdown, 57P02 crash_shutdown,
 * 57P03 cannot_connect_now (starting up or in recovery), 53300 too_many_connections, and 3D000
 * invalid_catalog_name: the database was dropped or renamed under the process (every connection ends and
 * new ones are refused with it); it may come back (restored, renamed back), so it is an outage, not a bug.
 */
const postgresStates = /^(08...|57P0[1-3]|53300|3D000)$/;

/** node-postgres says these in words only, without a code. */
const postgresMessages = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
];

/**
 * SQLite (better-sqlite3 error codes, extended ones included): the file or its folder cannot be opened or
 * written, the disk is full, or an I/O error.
 */
const sqlitePrefixes = ['SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_FULL', 'SQLITE_IOERR'];

export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const { code, message, cause, errors } = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string') {
    if (socketCodes.has(code) || postgresStates.test(code)) return true;
    if (sqlitePrefixes.some((prefix) => code.startsWith(prefix))) return true;
  }
  if (typeof message === 'string' && postgresMessages.some((words) => message.startsWith(words))) return true;
  // Node's connect to a name with several addresses fails with an AggregateError of each attempt.
  if (Array.isArray(errors) && errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return cause !== undefined && isDatabaseUnavailable(cause, depth + 1);
}

/**
 * The log level of a failed database operation: a warning while the database is away (expected, and it
 * comes back: the work is retried), an error for anything else.
 */
export function failureLogLevel(error: unknown): 'warn' | 'error' {
  return isDatabaseUnavailable(error) ? 'warn' : 'error';
}

const retryStartMs = 250;
const retryMaxMs = 2_000;

/**
 * Runs `work` after a short wait, and again with backoff (up to 2 s apart) for as long as it fails because
 * the database is away; rejects on any other error. For writes that must still happen once the database is
 * back (storing a call the provider placed, freeing an Idempotency-Key). `giveUpAfterMs` bounds work that
 * stops mattering (a key's lock ends by itself). Its timers do not keep a process alive.
 */
export async function retryWhileUnavailable(
  work: () => Promise<void>,
  options: { onUnavailable?: (error: unknown) => void; giveUpAfterMs?: number } = {},
): Promise<void> {
  const giveUpAt = options.giveUpAfterMs === undefined ? Infinity : Date.now() + options.giveUpAfterMs;
  let waitMs = retryStartMs;
  for (;;) {
    await sleep(waitMs, undefined, { ref: false });
    try {
      return await work();
    } catch (error) {
      if (!isDatabaseUnavailable(error) || Date.now() >= giveUpAt) throw error;
      options.onUnavailable?.(error);
      waitMs = Math.min(retryMaxMs, waitMs * 2);
    }
  }
}
