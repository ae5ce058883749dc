/**
 * The `limit` query parameter every list endpoint takes (calls, batches, a batch's recipients,
 * suppressions, events): one range, one check, one message, one way the OpenAPI document describes it.
 */
import { Type } from '@sinclair/typebox';
import { ApiError } from '../errors/api-error.js';

export const listLimitDefault = 20;
export const listLimitMax = 100;

const description = `An integer from 1 to ${listLimitMax}, default ${listLimitDefault}`;

/**
 * The route's schema: text, as a query string is, since Ajv coerces nothing (server-options.ts). Ajv's
 * coercion would also take "1e1" or " 10"; parseListLimit takes digits only, and its message names the range
 * (a pattern error would show a regex).
 */
export const ListLimitQuery = Type.Optional(Type.String({ description }));

/**
 * What the OpenAPI document says instead of ListLimitQuery (openapi.document.ts): an integer with its
 * bounds, which is what a client sends; written in a query string, "10" is the integer 10.
 */
export const documentedListLimit = { type: 'integer', minimum: 1, maximum: listLimitMax, default: listLimitDefault, description };

/** The query's `limit` as a number; a 400 invalid_request naming the range when it is not one of them. */
export function parseListLimit(text: string | undefined): number {
  const limit = text === undefined ? listLimitDefault : /^[0-9]{1,3}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= listLimitMax)) {
    throw new ApiError('invalid_request', `limit must be an integer from 1 to ${listLimitMax}.`, { param: 'limit' });
  }
  return limit;
}
