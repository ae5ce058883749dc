import { hash } from 'node:crypto';

/**
 * JSON with object keys sorted at every level, so two bodies that parse to the same value serialise to the
 * same text whatever their key order or white space.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  // A loop, not sort-filter-map-join: every created call with an Idempotency-Key fingerprints its body.
  const record = value as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined) continue;
    out += `${out.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${out}}`;
}

/** SHA-256 in hex, with Node's one-shot `hash` (a third of createHash's cost; two per created call). */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** Fingerprint of a parsed request body: equal for bodies that are the same JSON value. */
export function bodyFingerprint(body: unknown): string {
  return sha256Hex(canonicalJson(body ?? null));
}
