/**
 * Every identifier the service makes comes from here, so prefixes stay unique and greppable.
 * Ids are time-sortable (48-bit millisecond timestamp, then 80 random bits, Crockford base32, lowercase):
 * sorting by id is sorting by creation time, which cursor pagination relies on; within one millisecond the
 * ids of one process follow each other (the random part counts up, see `recent`), as ULID's monotonic rule.
 */
import { randomFillSync } from 'node:crypto';

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
  batch: 'batch',
  recipient: 'rcp',
  suppression: 'sup',
  callSlot: 'slot',
  dial: 'dial',
} as const;

export type IdKind = keyof typeof idPrefixes;

/**
 * The longest id a path takes (/v1/calls/{id}, /v1/batches/{id}, /v1/events/{id}): the router's
 * maxParamLength (server-options.ts), which answers a longer one 404 before any route runs, and the route
 * schemas' maxLength, so the OpenAPI document states the bound that holds. Ids are far shorter.
 */
export const pathIdMaxLength = 100;

const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';

// Random bytes are drawn from the OS a pool at a time: one call per id cost more than the rest of making it
// (the webhook dispatcher makes an id per attempt, the API one per request). Every byte is used once.
const pool = Buffer.alloc(10 * 256);
let poolOffset = pool.length;

/** Where `count` (at most the pool's size) fresh random bytes start in the pool. */
function takeRandom(count: number): number {
  if (poolOffset + count > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += count;
  return at;
}

/** `count` random bytes (1 to 64) as lowercase hex, from the same pool: a token no one has to guess, only never repeat. */
export function randomHex(count: number): string {
  if (!Number.isInteger(count) || count < 1 || count > 64) throw new RangeError(`randomHex: count must be 1 to 64, got ${count}`);
  const at = takeRandom(count);
  return pool.toString('hex', at, at + count);
}

/** `length` base32 digits of a non-negative integer below 2^53, most significant first. */
function encodeBase32(value: number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = alphabet[value % 32]! + out;
    value = Math.floor(value / 32);
  }
  return out;
}

const halfRange = 2 ** 40;
/**
 * The milliseconds whose ids were made lately, each with the random halves of its last id, least lately used
 * first. An id of one of them counts up from there (ULID's monotonic rule), so ids of one millisecond sort as
 * they were made in this process, even while ids of other milliseconds are made in between (an injected
 * clock held still beside the system clock, or a request's `now` read before another request's).
 */
const recent = new Map<number, { high: number; low: number }>();
const recentMax = 1024;

/** A new sortable id body (26 characters) without prefix. */
export function newIdBody(nowMs: number = Date.now()): string {
  let random = recent.get(nowMs);
  if (random) {
    // Two resources made in one millisecond (a client's quick pair of creates) list in the order made.
    recent.delete(nowMs);
    if (random.low + 1 < halfRange) random.low += 1;
    else if (random.high + 1 < halfRange) random = { high: random.high + 1, low: 0 };
    else throw new RangeError('newIdBody: 2^80 ids in one millisecond');
  } else {
    const at = takeRandom(10);
    // 80 random bits as two 40-bit halves (exact in a double), 8 digits each.
    random = { high: pool.readUIntBE(at, 5), low: pool.readUIntBE(at + 5, 5) };
    if (recent.size >= recentMax) recent.delete(recent.keys().next().value!);
  }
  recent.set(nowMs, random);
  return encodeBase32(nowMs, 10) + encodeBase32(random.high, 8) + encodeBase32(random.low, 8);
}

/**
 * An id body of the same shape as `newIdBody`'s, made from `seed` instead of drawn: the same time and seed
 * always give the same id, which any process can work out again (the simulator's call found after a lost
 * answer, from its dial). The seed's first 10 bytes are its random part.
 */
export function derivedIdBody(timeMs: number, seed: Buffer): string {
  if (seed.length < 10) throw new RangeError('derivedIdBody: the seed needs 10 bytes');
  return encodeBase32(timeMs, 10) + encodeBase32(seed.readUIntBE(0, 5), 8) + encodeBase32(seed.readUIntBE(5, 5), 8);
}

/** A new id such as `call_01j9…`. */
export function newId(kind: IdKind, nowMs?: number): string {
  return `${idPrefixes[kind]}_${newIdBody(nowMs)}`;
}

/**
 * A call's id is made from the provider's own id of it (`call_<conversation id>`), not drawn: a provider's
 * webhook then names the call without a lookup. Built here alone, for the call's create and its webhook.
 */
export function callIdOf(providerCallId: string): string {
  return `${idPrefixes.call}_${providerCallId}`;
}
