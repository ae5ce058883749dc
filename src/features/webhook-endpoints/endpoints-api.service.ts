/**
 * The endpoint store as /v1/webhook_endpoints sees it: an API key reaches only its own account's endpoints of
 * its own mode (anything else is not found, so that ids of other accounts and of the other mode say nothing),
 * makes endpoints of its mode, at most `endpointsPerModeMax` of them, and reads them in the API's shape. What
 * disabling or deleting one does to its deliveries is webhook-delivery's (endpoint-changes.service.ts), whose
 * routes call here.
 */
import type { Db } from '../../db/database.js';
import { lockTransaction } from '../../db/locks.js';
import { ApiError } from '../../errors/api-error.js';
import type { Clock } from '../../lib/clock.js';
import type { ApiKeyRow } from '../api-keys/api-keys.tables.js';
import { webhookEventTypes } from '../events/event-types.js';
import { completeKey, type HeldKey, type StoredResponse } from '../idempotency/idempotency.service.js';
import * as repo from './endpoints.repository.js';
import {
  endpointsPerModeMax,
  type CreateWebhookEndpointBody,
  type WebhookEndpoint,
  type WebhookEndpointList,
  type WebhookEndpointWithSecret,
} from './endpoints.schemas.js';
import { checkedEndpointRow, endpointsByIds, getEndpoint, rotateSecret } from './endpoints.service.js';
import type { WebhookEndpointRow } from './endpoints.tables.js';

export interface EndpointsApiDeps {
  readonly db: Db;
  readonly clock: Clock;
  /** CALLGATE_WEBHOOK_ALLOW_PRIVATE: http and private addresses allowed (development, tests). */
  readonly allowPrivate: boolean;
}

/** What of the API key decides what it reaches and what it makes. */
export type EndpointKey = Pick<ApiKeyRow, 'id' | 'account_id' | 'mode'>;

/** Serialises the count and the insert of creations, so that two at once cannot both pass the cap ("cgwe"). */
const createLockKey = 0x63_67_77_65;

export const endpointPath = (id: string) => `/v1/webhook_endpoints/${id}`;

/** An endpoint as the API shows it (never its secret). */
export function toWebhookEndpoint(row: WebhookEndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    enabled_events: JSON.parse(row.event_types) as string[],
    description: row.description,
    livemode: row.mode === 'live',
    status: row.enabled === 1 ? 'enabled' : 'disabled',
    disabled_reason: row.enabled === 1 ? null : row.disabled_reason,
    created_at: row.created_at,
  };
}

/**
 * `enabled_events` as the endpoint store takes it: `[]` for `["*"]` (every type, those added later too), the
 * types otherwise; an unknown type, or `*` beside others, is `invalid_request` naming the field.
 */
export function eventTypesOf(events: readonly string[]): readonly string[] {
  const known = webhookEventTypes as readonly string[];
  if (events.includes('*')) {
    if (events.every((type) => type === '*')) return [];
    throw new ApiError(
      'invalid_request',
      'enabled_events: "*" stands for every event type: send ["*"] alone, or list the types you want.',
      {
        param: 'enabled_events',
      },
    );
  }
  const unknown = [...new Set(events.filter((type) => !known.includes(type)))];
  if (unknown.length > 0) {
    throw new ApiError(
      'invalid_request',
      `enabled_events has unknown event types (${unknown.map((type) => JSON.stringify(type)).join(', ')}); known: ${known.join(', ')}, or ["*"] for all.`,
      { param: 'enabled_events' },
    );
  }
  return events;
}

const notFound = (id: string) =>
  new ApiError(
    'not_found',
    `No webhook endpoint ${id.slice(0, 100)} for this API key. A key sees the endpoints of its own account and mode only (test keys the test endpoints, live keys the live ones).`,
  );

/** The endpoint `id` if the key reaches it (its account, its mode, not deleted), or `not_found`. */
export async function endpointOfKey(db: Db, key: EndpointKey, id: string): Promise<WebhookEndpointRow> {
  const row = await getEndpoint(db, id, key.account_id);
  if (!row || row.mode !== key.mode) throw notFound(id);
  return row;
}

/**
 * Creates an endpoint in the key's mode, made by the key, and answers it with its secret (201). The cap is
 * checked and the row stored under one lock, with the Idempotency-Key's completion, so that a replay answers
 * this very 201 (secret included) and creates nothing. The URL is checked (its host resolved) before the lock.
 */
export async function createEndpointOfKey(
  deps: EndpointsApiDeps,
  key: EndpointKey,
  body: CreateWebhookEndpointBody,
  heldKey: HeldKey | null,
): Promise<StoredResponse & { body: WebhookEndpointWithSecret }> {
  const row = await checkedEndpointRow(deps.clock, deps.allowPrivate, {
    accountId: key.account_id,
    url: body.url,
    ...(body.description === undefined ? {} : { description: body.description }),
    ...(body.enabled_events === undefined ? {} : { eventTypes: eventTypesOf(body.enabled_events) }),
    mode: key.mode,
    createdByKeyId: key.id,
  });
  const response = { status: 201, body: { ...toWebhookEndpoint(row), secret: row.secret }, headers: { location: endpointPath(row.id) } };
  await deps.db.transaction().execute(async (trx) => {
    await lockTransaction(trx, createLockKey);
    if ((await repo.countEndpointsOfMode(trx, key.account_id, key.mode)) >= endpointsPerModeMax) {
      throw new ApiError(
        'invalid_request',
        `This account has ${endpointsPerModeMax} ${key.mode} webhook endpoints, the most it may have in one mode. Delete one it no longer uses (DELETE /v1/webhook_endpoints/{id}; GET /v1/webhook_endpoints lists them), then create this one again.`,
      );
    }
    await repo.insertEndpoint(trx, row);
    if (heldKey) await completeKey(trx, heldKey, response);
  });
  return response;
}

/**
 * A page of the key's endpoints, newest first, as GET /v1/calls pages calls; `url` keeps those of exactly that
 * URL, written as the endpoint stores it (`https://example.com` is `https://example.com/`). `startingAfter`
 * must be an endpoint the key reaches or reached (one deleted since still pages on), else `invalid_request`.
 */
export async function listEndpointsOfKey(
  db: Db,
  key: EndpointKey,
  query: { readonly limit: number; readonly startingAfter?: string; readonly url?: string },
): Promise<WebhookEndpointList> {
  if (query.startingAfter !== undefined) {
    const cursor = (await endpointsByIds(db, [query.startingAfter])).get(query.startingAfter);
    if (!cursor || cursor.account_id !== key.account_id || cursor.mode !== key.mode) {
      throw new ApiError('invalid_request', 'starting_after is not a webhook endpoint of this API key.', { param: 'starting_after' });
    }
  }
  const rows = await repo.listEndpointsPage(db, {
    accountId: key.account_id,
    mode: key.mode,
    limit: query.limit + 1,
    ...(query.url === undefined ? {} : { url: storedUrlForm(query.url) }),
    ...(query.startingAfter === undefined ? {} : { startingAfter: query.startingAfter }),
  });
  return { data: rows.slice(0, query.limit).map(toWebhookEndpoint), has_more: rows.length > query.limit };
}

/** A URL as the store writes it (the WHATWG serialisation the URL check returns); left as it is when it is none. */
function storedUrlForm(url: string): string {
  try {
    return new URL(url.trim()).toString();
  } catch {
    return url;
  }
}

export async function retrieveEndpointOfKey(db: Db, key: EndpointKey, id: string): Promise<WebhookEndpoint> {
  return toWebhookEndpoint(await endpointOfKey(db, key, id));
}

/** A new secret for the key's endpoint; the old one keeps signing beside it for 24 hours. */
export async function rotateEndpointSecretOfKey(
  deps: Pick<EndpointsApiDeps, 'db' | 'clock'>,
  key: EndpointKey,
  id: string,
): Promise<WebhookEndpointWithSecret> {
  const row = await endpointOfKey(deps.db, key, id);
  const { secret } = await rotateSecret(deps.db, deps.clock, row);
  return { ...toWebhookEndpoint(row), secret };
}
