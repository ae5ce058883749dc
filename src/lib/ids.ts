/**
 * Every identifier the service makes comes from here, so prefixes stay unique and greppable.
 * Ids are time-sortable (48-bit millisecond timestamp, then 80 random bits, Crockford base32, lowercase):
 * sorting by id is sorting by creation time, which cursor pagination relies on.
 */
import { randomBytes } from 'node:crypto';

export const idPrefixes = {
  account: 'acct',
  user: 'usr',
  agent: 'agt',
  apiKey: 'key',
  call: 'call',
  conversation: 'conv',
  event: 'evt',
  request: 'req',
  webhookEndpoint: 'we',
  delivery: 'dlv',
  attempt: 'att',
  session: 'ses',
} as const;

export type IdKind = keyof typeof idPrefixes;

const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';

function encodeBase32(value: bigint, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = alphabet[Number(value & 31n)] + out;
    value >>= 5n;
  }
  return out;
}

/** A new sortable id body (26 characters) without prefix. */
export function newIdBody(nowMs: number = Date.now()): string {
  const random = BigInt('0x' + randomBytes(10).toString('hex'));
  return encodeBase32(BigInt(nowMs), 10) + encodeBase32(random, 16);
}

/** A new id such as `call_01j9…`. */
export function newId(kind: IdKind, nowMs?: number): string {
  return `${idPrefixes[kind]}_${newIdBody(nowMs)}`;
}
