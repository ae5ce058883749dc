/** API tokens: `cg_<mode>_<64 lowercase hex>` from 32 random bytes, stored only as SHA-256. */
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../lib/json.js';
import type { ApiKeyMode } from './api-keys.tables.js';

export const tokenPattern = /^cg_(live|test)_[0-9a-f]{64}$/;

/** How much of a token is kept for display: `cg_live_1a2b`. */
const displayPrefixLength = 'cg_live_'.length + 4;

export interface NewToken {
  readonly token: string;
  readonly hash: string;
  readonly prefix: string;
}

export function generateToken(mode: ApiKeyMode): NewToken {
  const token = `cg_${mode}_${randomBytes(32).toString('hex')}`;
  return { token, hash: hashToken(token), prefix: token.slice(0, displayPrefixLength) };
}

export function hashToken(token: string): string {
  return sha256Hex(token);
}

/**
 * The token of an `Authorization: Bearer <token>` header, or null when the header is missing or malformed.
 * The scheme is matched case-insensitively (RFC 9110 11.1); exactly one space separates it from the token.
 */
export function parseBearer(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^bearer ([^\s]+)$/i.exec(header);
  if (!match?.[1] || !tokenPattern.test(match[1])) return null;
  return match[1];
}
