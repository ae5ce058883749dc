/**
 * `x-retell-signature: v=<epoch ms>,d=<hex HMAC-SHA256 of raw body + timestamp>`, keyed with the Retell API
 * key (their SDK's `sign`/`verify`). Checked on the raw bytes before any parsing, with a constant-time
 * compare, within five minutes either way of our clock.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const retellToleranceMs = 5 * 60 * 1000;

export function signRetell(apiKey: string, timestampMs: number, body: string): string {
  return `v=${timestampMs},d=${createHmac('sha256', apiKey)
    .update(body + timestampMs)
    .digest('hex')}`;
}

type Parsed = { readonly timestamp: string; readonly digest: string } | { readonly refusal: string };

/** The header's parts, or why it cannot be right whatever the body (so the route checks it before reading one). */
export function parseRetellSignature(header: string | undefined, nowMs: number): Parsed {
  if (!header) return { refusal: 'The x-retell-signature header is missing.' };
  const match = /^v=(\d{1,15}),d=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!match) return { refusal: 'The x-retell-signature header is invalid.' };
  const skew = nowMs - Number(match[1]);
  if (skew > retellToleranceMs) return { refusal: 'The x-retell-signature timestamp is more than 5 minutes old.' };
  if (-skew > retellToleranceMs)
    return { refusal: "The x-retell-signature timestamp is more than 5 minutes ahead of this server's clock." };
  return { timestamp: match[1]!, digest: match[2]!.toLowerCase() };
}

/** Undefined when the header signs `body` with `apiKey` now; otherwise why not. */
export function verifyRetellSignature(apiKey: string, header: string | undefined, body: string, nowMs: number): string | undefined {
  const parsed = parseRetellSignature(header, nowMs);
  if ('refusal' in parsed) return parsed.refusal;
  const expected = Buffer.from(
    createHmac('sha256', apiKey)
      .update(body + parsed.timestamp)
      .digest('hex'),
    'utf8',
  );
  const given = Buffer.from(parsed.digest, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected) ? undefined : 'The x-retell-signature header is invalid.';
}
