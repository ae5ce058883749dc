/**
 * U+0000 in text a client sends is refused everywhere text enters (API JSON bodies and query strings,
 * portal forms and query strings), on both databases alike: SQLite stores it, PostgreSQL refuses it in a
 * text value ("invalid byte sequence for encoding UTF8: 0x00"), so letting it through would make the same
 * request a 201 on one and a 500 on the other. No field of ours has a use for it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-error.js';

/** Where a U+0000 was found: in the value at `field`, or (`inKey`) in a key of the object at `field`. */
export interface NulPlace {
  /** As `param` names fields: `metadata.note`, `to`, `recipients[3].to`; '' for the value itself. */
  readonly field: string;
  readonly inKey: boolean;
}

/**
 * The first string or object key in `value` that holds U+0000, or null when there is none. Walks with its
 * own stack, never recursion, so no nesting can exhaust the call stack.
 */
export function findNul(value: unknown): NulPlace | null {
  return findText(value, (text) => text.includes('\u0000'));
}

/**
 * In the u mode a pair is one code point, so this matches only a surrogate without its other half: JSON can
 * carry one as an escape (`"\ud800"`), but it is no character, and each database stores it as U+FFFD (one on
 * PostgreSQL, three on SQLite): it would read back changed, and differently on each.
 */
const loneSurrogate = /[\uD800-\uDFFF]/u;

/** The first string or object key in `value` that holds a lone surrogate, or null when there is none. */
export function findLoneSurrogate(value: unknown): NulPlace | null {
  return findText(value, (text) => loneSurrogate.test(text));
}

/** The ApiError for a lone surrogate: 400 `invalid_request`, with `param` naming the field. */
export function loneSurrogateError(place: NulPlace): ApiError {
  const where = place.inKey
    ? `A key ${place.field === '' ? 'of the body' : `of ${place.field}`}`
    : place.field === ''
      ? 'The value'
      : place.field;
  return new ApiError(
    'invalid_request',
    `${where} contains a lone surrogate (an escape from \\ud800 to \\udfff without its pair), which is no character; send the text as UTF-8.`,
    place.field === '' ? {} : { param: place.field },
  );
}

function findText(value: unknown, holds: (text: string) => boolean): NulPlace | null {
  const stack: { value: unknown; path: string }[] = [{ value, path: '' }];
  while (stack.length > 0) {
    const { value: item, path } = stack.pop()!;
    if (typeof item === 'string') {
      if (holds(item)) return { field: path, inKey: false };
      continue;
    }
    if (item === null || typeof item !== 'object') continue;
    // An array's elements are named by index, as `param` names them: `recipients[3].to`.
    const entries = Array.isArray(item) ? item.map((element, index) => [`[${index}]`, element] as const) : Object.entries(item);
    if (entries.some(([key]) => holds(key))) return { field: path, inKey: true };
    // Pushed in reverse, so the first field in document order is reported first.
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, element] = entries[index]!;
      stack.push({ value: element, path: path === '' || Array.isArray(item) ? `${path}${key}` : `${path}.${key}` });
    }
  }
  return null;
}

/** The sentence that refuses it: what is wrong, where, and what to do. */
export function nulMessage(place: NulPlace): string {
  const where = place.inKey
    ? `A key ${place.field === '' ? 'of the body' : `of ${place.field}`}`
    : place.field === ''
      ? 'The value'
      : place.field;
  return `${where} contains a NUL character (U+0000), which is not accepted in any text; remove it and send again.`;
}

/** The ApiError for it: 400 `invalid_request`, with `param` naming the field. */
export function nulError(place: NulPlace): ApiError {
  return new ApiError('invalid_request', nulMessage(place), place.field === '' ? {} : { param: place.field });
}

/**
 * A preValidation hook for the API: a query parameter holding U+0000 is 400 `invalid_request` naming it. A
 * callback hook, not an async one: every request runs it, and an async hook costs a promise and a turn.
 */
export function refuseNulInQuery(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const place = findNul(request.query);
  done(place ? nulError(place) : undefined);
}
