import type { Db } from '../../db/database.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import * as repo from './api-keys.repository.js';
import type { ApiKeyMode, ApiKeyRow } from './api-keys.tables.js';
import { generateToken, hashToken, parseBearer } from './api-keys.tokens.js';

/** last_used_at is written at most this often per key, so authentication adds no write to most requests. */
export const lastUsedResolutionMs = 60_000;

/** An API key as shown to people: never the token or its hash. */
export interface ApiKeyView {
  id: string;
  account_id: string;
  name: string;
  mode: ApiKeyMode;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  status: 'active' | 'revoked';
}

export function toApiKeyView(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    mode: row.mode,
    prefix: row.prefix,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
    status: row.revoked_at ? 'revoked' : 'active',
  };
}

/** Creates a key and returns its token: the only moment the full token exists outside the client. */
export async function createApiKey(
  db: Db,
  clock: Clock,
  input: { accountId: string; name: string; mode: ApiKeyMode },
): Promise<ApiKeyView & { token: string }> {
  const { token, hash, prefix } = generateToken(input.mode);
  const now = clock.now();
  const row: ApiKeyRow = {
    id: newId('apiKey', now.getTime()),
    account_id: input.accountId,
    name: input.name,
    mode: input.mode,
    token_hash: hash,
    prefix,
    created_at: isoTimestamp(now),
    last_used_at: null,
    revoked_at: null,
  };
  await repo.insertApiKey(db, row);
  return { ...toApiKeyView(row), token };
}

export async function listApiKeys(db: Db, accountId: string): Promise<ApiKeyView[]> {
  return (await repo.listApiKeysByAccount(db, accountId)).map(toApiKeyView);
}

/** A key of this account, or null (another account's key is not found). */
export async function getApiKey(db: Db, accountId: string, keyId: string): Promise<ApiKeyView | null> {
  if (keyId.includes('\u0000')) return null;
  const row = await repo.findApiKeyInAccount(db, accountId, keyId);
  return row ? toApiKeyView(row) : null;
}

/** An unrevoked key of this account as stored, or null: what a batch created in the portal is placed with. */
export async function findActiveApiKey(db: Db, accountId: string, keyId: string): Promise<ApiKeyRow | null> {
  if (keyId.includes('\u0000')) return null;
  const row = await repo.findApiKeyInAccount(db, accountId, keyId);
  return row && row.revoked_at === null ? row : null;
}

/**
 * Revokes a key for good; null when there is no such key (within `accountId` when given). Takes effect on
 * the next request of every process.
 */
export async function revokeApiKey(db: Db, clock: Clock, keyId: string, accountId?: string): Promise<ApiKeyView | null> {
  if (keyId.includes('\u0000')) return null;
  const existing = accountId === undefined ? await repo.findApiKeyById(db, keyId) : await repo.findApiKeyInAccount(db, accountId, keyId);
  if (!existing) return null;
  await repo.revokeApiKey(db, keyId, isoTimestamp(clock.now()));
  const row = await repo.findApiKeyById(db, keyId);
  return row ? toApiKeyView(row) : null;
}

/** The counter of a key's requests in the per-key rate limiter. */
export function keyCounter(keyId: string): string {
  return repo.keyCounterPrefix + keyId;
}

/**
 * The active key behind an Authorization header, or null for every kind of failure (missing, malformed,
 * unknown, revoked), which callers answer alike. Looked up on every request, so a revocation holds at once.
 */
export async function authenticate(db: Db, clock: Clock, header: string | undefined): Promise<ApiKeyRow | null> {
  const token = parseBearer(header);
  if (token === null) return null;
  return active(db, clock, await repo.findApiKeyByHash(db, hashToken(token)));
}

/** The key if it is active (recording its use at most once a minute), else null. */
async function active(db: Db, clock: Clock, row: ApiKeyRow | undefined): Promise<ApiKeyRow | null> {
  if (!row || row.revoked_at !== null) return null;
  const now = clock.now();
  const staleBefore = isoTimestamp(addMs(now, -lastUsedResolutionMs));
  if (row.last_used_at === null || row.last_used_at < staleBefore) {
    await repo.touchApiKeyLastUsed(db, row.id, isoTimestamp(now), staleBefore);
  }
  return row;
}
