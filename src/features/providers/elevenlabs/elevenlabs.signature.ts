/**
 * `ElevenLabs-Signature: t=<unix seconds>,v0=<hex HMAC-SHA256 of "<t>.<raw body>">` (their post-call
 * webhooks). Checked on the raw bytes before any parsing, with a constant-time compare.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Their SDKs refuse signatures older than 30 minutes. We also refuse those more than 30 minutes ahead of
 * our clock (they never check that): a timestamp from the future would otherwise stay replayable for as
 * long as it lies ahead.
 */
export const signatureToleranceSeconds = 30 * 60;

export type SignatureFailure = 'missing' | 'malformed' | 'stale' | 'future' | 'mismatch';
export type SignatureCheck = { ok: true } | { ok: false; reason: SignatureFailure };

export function signElevenLabs(secret: string, timestampSeconds: number, body: string): string {
  const hex = createHmac('sha256', secret).update(`${timestampSeconds}.${body}`).digest('hex');
  return `t=${timestampSeconds},v0=${hex}`;
}

interface ParsedHeader {
  readonly timestamp: string;
  readonly signatures: readonly string[];
}

/**
 * The header's parts, or why it cannot be right whatever the body: missing, malformed (no `t=` of digits,
 * no `v0=` of 64 hex digits), or a timestamp out of the tolerance. Needs no body, so the route checks this
 * before reading one.
 */
export function parseSignatureHeader(header: string | undefined, nowMs: number): ParsedHeader | { failure: SignatureFailure } {
  if (!header) return { failure: 'missing' };
  const parts = new Map<string, string[]>();
  for (const part of header.split(',')) {
    const index = part.indexOf('=');
    if (index <= 0) continue;
    const key = part.slice(0, index).trim();
    parts.set(key, [...(parts.get(key) ?? []), part.slice(index + 1).trim()]);
  }
  const timestamp = parts.get('t')?.[0];
  const signatures = (parts.get('v0') ?? []).filter((candidate) => /^[0-9a-fA-F]{64}$/.test(candidate));
  if (!timestamp || !/^\d{1,12}$/.test(timestamp) || signatures.length === 0) return { failure: 'malformed' };
  const ageSeconds = nowMs / 1000 - Number(timestamp);
  if (ageSeconds > signatureToleranceSeconds) return { failure: 'stale' };
  if (-ageSeconds > signatureToleranceSeconds) return { failure: 'future' };
  return { timestamp, signatures };
}

export function verifyElevenLabsSignature(secret: string, header: string | undefined, body: string, nowMs: number): SignatureCheck {
  const parsed = parseSignatureHeader(header, nowMs);
  if ('failure' in parsed) return { ok: false, reason: parsed.failure };
  const { timestamp, signatures } = parsed;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex'), 'utf8');
  const matches = signatures.some((candidate) => {
    const given = Buffer.from(candidate.toLowerCase(), 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return matches ? { ok: true } : { ok: false, reason: 'mismatch' };
}
