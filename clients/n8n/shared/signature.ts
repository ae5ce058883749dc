/**
 * Standard Webhooks verification of a callgate delivery, with node:crypto only (docs/webhooks.md, "Verifying a
 * delivery"): the three webhook-* headers, a timestamp within five minutes of now, and one `v1,` signature
 * in `webhook-signature` (several during a secret rotation) equal to the base64 HMAC-SHA256 of
 * `${webhook-id}.${webhook-timestamp}.${raw body}`, keyed with the base64-decoded part of the secret after
 * `whsec_`, compared in constant time. The body is parsed only once it verified.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** How far a delivery's timestamp may be from this clock, in seconds, either way. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

export type HeaderBag = Record<string, string | string[] | undefined>;

export interface VerifyInput {
  /** The body exactly as received: verifying a body parsed and serialised again fails. */
  readonly rawBody: Buffer | string;
  /** The request's headers, as node's http module gives them (lower-case names). */
  readonly headers: HeaderBag;
  /** The endpoint's signing secret, `whsec_…`. */
  readonly secret: string;
  /** The current time in Unix seconds; the clock by default. */
  readonly nowSeconds?: number;
  readonly toleranceSeconds?: number;
}

export type VerifyResult = { readonly ok: true; readonly event: Record<string, unknown> } | { readonly ok: false; readonly reason: string };

function header(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  // A header sent twice is refused: which copy was signed cannot be known.
  if (Array.isArray(value)) return undefined;
  return value === undefined || value === '' ? undefined : value;
}

/** The HMAC key of a `whsec_<base64>` secret; undefined when the secret is not one. */
export function signingKey(secret: string): Buffer | undefined {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (encoded === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length === 0 ? undefined : key;
}

/** The base64 `v1` signature of a delivery (what callgate puts after `v1,`). */
export function sign(secret: string, id: string, timestamp: string, rawBody: Buffer | string): string {
  const key = signingKey(secret);
  if (!key) throw new Error('The signing secret is not a whsec_ secret (whsec_ followed by base64).');
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(rawBody).digest('base64');
}

export function verifySignature(input: VerifyInput): VerifyResult {
  const id = header(input.headers, 'webhook-id');
  const timestamp = header(input.headers, 'webhook-timestamp');
  const signatures = header(input.headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    return { ok: false, reason: 'The webhook-id, webhook-timestamp and webhook-signature headers are required.' };
  }
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'webhook-timestamp is not a Unix time in seconds.' };
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = input.toleranceSeconds ?? TIMESTAMP_TOLERANCE_SECONDS;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    return { ok: false, reason: `webhook-timestamp is more than ${tolerance} seconds away from this clock.` };
  }
  const key = signingKey(input.secret);
  if (!key) return { ok: false, reason: 'The stored signing secret is not a whsec_ secret.' };

  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(input.rawBody).digest();
  const matches = signatures.split(' ').some((entry) => {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') return false;
    const given = Buffer.from(entry.slice(comma + 1), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) return { ok: false, reason: 'No v1 signature in webhook-signature matches the body.' };

  let event: unknown;
  try {
    event = JSON.parse(typeof input.rawBody === 'string' ? input.rawBody : input.rawBody.toString('utf8'));
  } catch {
    return { ok: false, reason: 'The signed body is not JSON.' };
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    return { ok: false, reason: 'The signed body is not a JSON object.' };
  }
  return { ok: true, event: event as Record<string, unknown> };
}
