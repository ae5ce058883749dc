/**
 * The suppression list: numbers an account must never call. POST /v1/calls refuses them (`403
 * number_suppressed`) and the batch dialer fails a recipient whose number is on the list when its turn
 * comes. One list per account, for test and live mode alike: it guards real people, whichever key added
 * the entry. The API, the CLI and the portal call this service with parsed input and get values back, or an
 * ApiError in the API's words when the request cannot be met.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import type { CsvProblem } from '../../lib/csv.js';
import { newId } from '../../lib/ids.js';
import { isE164 } from '../../lib/phone-numbers.js';
import { completeKey, type HeldKey, type IdempotencySettings, type StoredResponse } from '../idempotency/idempotency.service.js';
import { parseImport } from './suppressions-csv.js';
import * as repo from './suppressions.repository.js';
import { reasonMaxLength, type Suppression } from './suppressions.schemas.js';
import type { SuppressionRow } from './suppressions.tables.js';

export interface SuppressionsDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly idempotency: IdempotencySettings;
}

/**
 * A number as people type or export it (`+1 (415) 555-0123`), without its spaces, dashes, dots and
 * brackets; E.164 or null. The `+` and the country code are never guessed. For the portal and the CLI;
 * the API takes E.164 only, as POST /v1/calls does.
 */
export function normalizeNumber(text: string): string | null {
  const number = text.replace(/[\s().-]/g, '');
  return isE164(number) ? number : null;
}

export function toSuppression(row: SuppressionRow): Suppression {
  return { id: row.id, to: row.to_number, reason: row.reason, created_at: row.created_at };
}

/** Where an entry is read and removed: its number, URL-encoded. */
export function suppressionPath(to: string): string {
  return `/v1/suppressions/${encodeURIComponent(to)}`;
}

/** Whether the account may not call this number; the check before every call and every batch dial. */
export async function isSuppressed(db: Db, accountId: string, to: string): Promise<boolean> {
  return (await repo.findByNumber(db, accountId, to)) !== undefined;
}

export type AddSuppressionResult =
  | { readonly kind: 'created'; readonly response: StoredResponse; readonly entry: Suppression }
  /** The number was on the list already: its entry, unchanged (a second reason does not replace the first). */
  | { readonly kind: 'existing'; readonly entry: Suppression };

/**
 * Puts a number on the account's list (`to` is E.164: the caller checked it). With an Idempotency-Key
 * (`key`), the entry is stored with the completion of the key, so a replay answers this 201.
 */
export async function addSuppression(
  deps: Pick<SuppressionsDeps, 'db' | 'clock'>,
  accountId: string,
  input: { readonly to: string; readonly reason?: string | undefined },
  key: HeldKey | null = null,
): Promise<AddSuppressionResult> {
  const existing = await repo.findByNumber(deps.db, accountId, input.to);
  if (existing) return { kind: 'existing', entry: toSuppression(existing) };
  const now = deps.clock.now();
  const row: SuppressionRow = {
    id: newId('suppression', now.getTime()),
    account_id: accountId,
    to_number: input.to,
    reason: input.reason ?? null,
    created_at: isoTimestamp(now),
  };
  const entry = toSuppression(row);
  const response: StoredResponse = { status: 201, body: entry, headers: { location: suppressionPath(row.to_number) } };
  try {
    await deps.db.transaction().execute(async (trx) => {
      await repo.insertSuppression(trx, row);
      if (key) await completeKey(trx, key, response);
    });
  } catch (error) {
    // Another request added the number between the read and the insert (the unique index refused ours):
    // the answer is then the one for a number already listed.
    const added = await repo.findByNumber(deps.db, accountId, input.to);
    if (added) return { kind: 'existing', entry: toSuppression(added) };
    throw error;
  }
  return { kind: 'created', response, entry };
}

const notListed = (to: string) => new ApiError('not_found', `${to} is not on this account's suppression list.`);

/** The entry of a listed number, or a `not_found`. */
export async function getSuppression(db: Db, accountId: string, to: string): Promise<Suppression> {
  const row = await repo.findByNumber(db, accountId, to);
  if (!row) throw notListed(to);
  return toSuppression(row);
}

/** Takes a number off the account's list, or a `not_found` when it was not on it. */
export async function removeSuppression(db: Db, accountId: string, to: string): Promise<void> {
  if (!(await repo.deleteByNumber(db, accountId, to))) throw notListed(to);
}

/** How many numbers are on the account's list. */
export async function countSuppressions(db: Db, accountId: string): Promise<number> {
  return repo.countSuppressions(db, accountId);
}

/**
 * A page of the account's list, newest first, as GET /v1/calls pages calls. `startingAfter` must be an
 * entry of this account, so a cursor cannot probe others (400 when it is not).
 */
export async function listSuppressions(
  db: Db,
  accountId: string,
  query: { readonly limit: number; readonly startingAfter?: string },
): Promise<{ data: Suppression[]; has_more: boolean }> {
  let cursor: SuppressionRow | undefined;
  if (query.startingAfter !== undefined) {
    cursor = query.startingAfter.includes('\u0000') ? undefined : await repo.findById(db, accountId, query.startingAfter);
    if (!cursor) throw new ApiError('invalid_request', 'starting_after is not an entry of this account.', { param: 'starting_after' });
  }
  const rows = await repo.listSuppressions(db, {
    accountId,
    limit: query.limit + 1,
    ...(cursor === undefined ? {} : { startingAfter: { createdAt: cursor.created_at, id: cursor.id } }),
  });
  return { data: rows.slice(0, query.limit).map(toSuppression), has_more: rows.length > query.limit };
}

/** Numbers one import may hold, as many as one batch has recipients. */
export const importMaxNumbers = 10_000;

export type ImportResult =
  /** Nothing was imported: every line at fault, in the file's order. */
  | { readonly kind: 'invalid'; readonly problems: readonly CsvProblem[] }
  | {
      readonly kind: 'imported';
      /** Numbers put on the list now. */
      readonly added: number;
      /** Numbers of the file that were on the list already (left as they were). */
      readonly alreadyListed: number;
      /** Lines that repeated a number of an earlier line. */
      readonly repeated: number;
    };

/**
 * Imports a file of numbers (suppressions-csv.ts says which shapes) all or nothing: when any line is at
 * fault nothing is added and every fault is reported with its line, so the file can be fixed and sent
 * again as a whole. `reason` is given to the numbers whose line names none.
 */
export async function importSuppressions(
  deps: Pick<SuppressionsDeps, 'db' | 'clock'>,
  accountId: string,
  text: string,
  reason?: string,
): Promise<ImportResult> {
  const parsed = parseImport(text);
  if (!parsed.ok) return { kind: 'invalid', problems: [{ line: parsed.line, message: parsed.message }] };
  if (parsed.rows.length === 0) return { kind: 'invalid', problems: [{ line: 0, message: 'The file has no numbers.' }] };
  if (parsed.rows.length > importMaxNumbers) {
    return {
      kind: 'invalid',
      problems: [{ line: 0, message: `The file has ${parsed.rows.length} numbers; at most ${importMaxNumbers} are imported at once.` }],
    };
  }
  const problems: CsvProblem[] = [];
  const numbers = new Map<string, string | null>();
  for (const row of parsed.rows) {
    const number = normalizeNumber(row.to);
    const rowReason = row.reason ?? reason ?? null;
    if (row.to === '') problems.push({ line: row.line, message: 'has no number.' });
    else if (number === null) {
      problems.push({
        line: row.line,
        message: `"${row.to.slice(0, 40)}" is not a phone number in E.164 format, such as +14155550123 (with its + and country code).`,
      });
    } else if (rowReason !== null && rowReason.length > reasonMaxLength) {
      problems.push({
        line: row.line,
        message: `its reason is ${rowReason.length} characters long; at most ${reasonMaxLength} are allowed.`,
      });
    } else if (!numbers.has(number)) numbers.set(number, rowReason);
  }
  if (problems.length > 0) return { kind: 'invalid', problems };

  const now = deps.clock.now();
  const createdAt = isoTimestamp(now);
  const rows = [...numbers].map(
    ([to, rowReason]): SuppressionRow => ({
      id: newId('suppression', now.getTime()),
      account_id: accountId,
      to_number: to,
      reason: rowReason,
      created_at: createdAt,
    }),
  );
  const inserted = await deps.db.transaction().execute((trx) => repo.insertMissing(trx, rows));
  return {
    kind: 'imported',
    added: inserted.length,
    alreadyListed: rows.length - inserted.length,
    repeated: parsed.rows.length - rows.length,
  };
}
