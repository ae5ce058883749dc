/**
 * Verifies a delivery as docs/webhooks.md says (Standard Webhooks: the raw body, the three `webhook-*`
 * headers, a timestamp within 5 minutes, any `v1` signature matching) with the standardwebhooks library,
 * and only then parses it.
 */
import { Webhook } from 'standardwebhooks';
import { WebhookVerificationError } from './errors.js';
import type { WebhookEvent } from './types.js';

/** Headers as a fetch `Headers`, or as Node's `request.headers` (lower-case names). */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

const names = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(' ') : (value as string | undefined);
}

function refuse(message: string, cause?: unknown): WebhookVerificationError {
  return new WebhookVerificationError({ status: null, code: 'webhook_verification_failed', message, request_id: null, cause });
}

/**
 * Checks that `payload` (the raw body, exactly as received: a string or the bytes) was signed by callgate
 * with `secret` (`whsec_…`, the endpoint's), and returns the event. Throws a WebhookVerificationError when
 * a header is missing, the timestamp is more than 5 minutes away, or no signature matches; answer 400 then.
 * Event types this version does not know are returned too (`type` is a string): ignore them.
 */
export function verify(payload: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const found: Record<string, string> = {};
  for (const name of names) {
    const value = headerOf(headers, name);
    if (value === undefined || value === '') throw refuse(`The ${name} header is missing: this request was not sent by callgate.`);
    found[name] = value;
  }
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  let event: unknown;
  try {
    event = new Webhook(secret).verify(body, found);
  } catch (error) {
    throw refuse(`The webhook did not verify: ${error instanceof Error ? error.message : String(error)}.`, error);
  }
  if (event === null || typeof event !== 'object' || typeof (event as { type?: unknown }).type !== 'string') {
    throw refuse('The webhook verified but is not a callgate event (no type).');
  }
  return event as WebhookEvent;
}

export const webhooks = { verify };
