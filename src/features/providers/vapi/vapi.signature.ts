/**
 * Vapi's HMAC server authentication as configured for callgate (their defaults): `x-signature` is the hex
 * HMAC-SHA256 of `"{x-timestamp}.{raw body}"`, keyed with the credential's secret (VAPI_WEBHOOK_SECRET). An
 * optional `sha256=` prefix is accepted. The timestamp may be in seconds or milliseconds (their docs do not
 * say which); it must lie within five minutes either way of our clock.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const vapiToleranceMs = 5 * 60 * 1000;

export function signVapi(secret: string, timestamp: number | string, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

type Parsed = { readonly timestamp: string; readonly digest: string } | { readonly refusal: string };

/** Both headers' values, or why they cannot be right whatever the body. */
export function parseVapiSignature(signature: string | undefined, timestamp: string | undefined, nowMs: number): Parsed {
  if (!signature) return { refusal: 'The x-signature header is missing.' };
  if (!timestamp) return { refusal: 'The x-timestamp header is missing.' };
  const digest = /^(?:sha256=)?([0-9a-fA-F]{64})$/.exec(signature.trim())?.[1];
  if (!digest) return { refusal: 'The x-signature header is invalid.' };
  if (!/^\d{1,15}$/.test(timestamp.trim())) return { refusal: 'The x-timestamp header is invalid.' };
  const value = Number(timestamp.trim());
  // Seconds until the year 5138; anything larger is milliseconds.
  const ms = value < 1e11 ? value * 1000 : value;
  if (nowMs - ms > vapiToleranceMs) return { refusal: 'The x-timestamp header is more than 5 minutes old.' };
  if (ms - nowMs > vapiToleranceMs) return { refusal: "The x-timestamp header is more than 5 minutes ahead of this server's clock." };
  return { timestamp: timestamp.trim(), digest: digest.toLowerCase() };
}

/** Undefined when the headers sign `body` with `secret` now; otherwise why not. */
export function verifyVapiSignature(
  secret: string,
  signature: string | undefined,
  timestamp: string | undefined,
  body: string,
  nowMs: number,
): string | undefined {
  const parsed = parseVapiSignature(signature, timestamp, nowMs);
  if ('refusal' in parsed) return parsed.refusal;
  const expected = Buffer.from(signVapi(secret, parsed.timestamp, body), 'utf8');
  const given = Buffer.from(parsed.digest, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected) ? undefined : 'The x-signature header is invalid.';
}
