/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-signature` holds
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one per active secret, space-separated, so a
 * receiver keeps verifying while a rotated secret overlaps the new one. It lives with the endpoints, which
 * make and rotate the secrets; the dispatcher (webhook-delivery, above them) signs every attempt with it.
 */
import { createHmac, randomBytes } from 'node:crypto';

const secretPrefix = 'whsec_';
/** Standard Webhooks asks for 24 to 64 bytes of secret; we use 32. */
const secretBytes = 32;

export function generateWebhookSecret(): string {
  return secretPrefix + randomBytes(secretBytes).toString('base64');
}

function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(secretPrefix) ? secret.slice(secretPrefix.length) : secret, 'base64');
}

export function signPayload(secret: string, eventId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${eventId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** The three Standard Webhooks headers of one attempt, signed with every secret given. */
export function signedHeaders(secrets: readonly string[], eventId: string, timestampSeconds: number, body: string): SignedHeaders {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => signPayload(secret, eventId, timestampSeconds, body)).join(' '),
  };
}
