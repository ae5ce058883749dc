/**
 * Webhook endpoints of an account: URL, wanted event types, enabled flag and signing secret. The endpoint
 * store is below webhook-delivery and knows nothing of deliveries: what enabling, disabling or deleting an
 * endpoint does to its deliveries is webhook-delivery's (endpoint-changes.service.ts), which calls here.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { webhookEventTypes } from '../events/event-types.js';
import { checkWebhookTarget } from './ssrf-guard.js';
import { generateWebhookSecret } from './webhook-signing.js';
import * as repo from './endpoints.repository.js';
import type { WebhookEndpointRow, WebhookEndpointsTable } from './endpoints.tables.js';

/** After a rotation the old secret keeps signing, beside the new one, for this long. */
export const secretOverlapMs = 24 * 60 * 60 * 1000;

/** The reason of an endpoint a person disabled; the dispatcher writes its own when failures disable one. */
export const disabledByUserReason = 'Disabled by a user.';

/**
 * Whether the endpoint's failures disabled it (a 410, or 5 days of failed deliveries) rather than a person:
 * that one needs someone to fix its receiver and enable it again. A disabled row without a reason is taken as
 * a person's doing.
 */
export function disabledByFailures(row: Pick<WebhookEndpointRow, 'enabled' | 'disabled_reason'>): boolean {
  return row.enabled === 0 && row.disabled_reason !== null && row.disabled_reason !== disabledByUserReason;
}

export interface EndpointView {
  id: string;
  account_id: string;
  url: string;
  description: string;
  enabled: boolean;
  event_types: string[];
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
  mode: WebhookEndpointRow['mode'];
  created_by_key_id: string | null;
}

export function toEndpointView(row: WebhookEndpointRow): EndpointView {
  const types = JSON.parse(row.event_types) as string[];
  return {
    id: row.id,
    account_id: row.account_id,
    url: row.url,
    description: row.description,
    enabled: row.enabled === 1,
    event_types: types.includes('*') ? [...webhookEventTypes] : types,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
    mode: row.mode,
    created_by_key_id: row.created_by_key_id,
  };
}

function normaliseEventTypes(types: readonly string[] | undefined): string[] {
  if (types === undefined || types.length === 0) return ['*'];
  const unique = [...new Set(types.map((type) => type.trim()).filter(Boolean))];
  const unknown = unique.filter((type) => !(webhookEventTypes as readonly string[]).includes(type));
  if (unknown.length > 0) {
    throw new ApiError('invalid_request', `unknown event type ${unknown.join(', ')}; known: ${webhookEventTypes.join(', ')}`, {
      param: 'event_types',
    });
  }
  return unique.length === webhookEventTypes.length ? ['*'] : unique;
}

async function checkedUrl(url: string, allowPrivate: boolean): Promise<string> {
  const check = await checkWebhookTarget(url.trim(), allowPrivate);
  if (!check.ok) throw new ApiError('invalid_request', `the URL ${check.reason}`, { param: 'url' });
  // A fragment is never sent in a request: kept, it would only make the same target look like another.
  check.url.hash = '';
  return check.url.toString();
}

export interface EndpointInput {
  accountId: string;
  url: string;
  description?: string;
  eventTypes?: readonly string[];
  /** The mode of the events it receives; live unless said (the portal and the CLI default to test themselves). */
  mode?: WebhookEndpointRow['mode'];
  /** The API key that makes it, over the API. */
  createdByKeyId?: string;
}

const descriptionMaxChars = 500;

/** A description trimmed, or refused when too long (cutting it silently would store what nobody wrote). */
function checkedDescription(text: string): string {
  const trimmed = text.trim();
  const length = [...trimmed].length;
  if (length > descriptionMaxChars) {
    throw new ApiError('invalid_request', `the description is ${length} characters long; at most ${descriptionMaxChars} are allowed`, {
      param: 'description',
    });
  }
  return trimmed;
}

/** A new endpoint's row, of checked fields: enabled, with one secret, never failing. */
export function newEndpointRow(fields: {
  readonly id: string;
  readonly accountId: string;
  readonly url: string;
  readonly description: string;
  readonly eventTypes: readonly string[];
  readonly secret: string;
  readonly now: string;
  readonly mode?: WebhookEndpointRow['mode'];
  readonly createdByKeyId?: string | null;
}): WebhookEndpointRow {
  return {
    id: fields.id,
    account_id: fields.accountId,
    url: fields.url,
    description: fields.description,
    enabled: 1,
    event_types: JSON.stringify(fields.eventTypes),
    secret: fields.secret,
    previous_secret: null,
    previous_secret_expires_at: null,
    disabled_reason: null,
    failing_since: null,
    created_at: fields.now,
    updated_at: fields.now,
    deleted_at: null,
    mode: fields.mode ?? 'live',
    created_by_key_id: fields.createdByKeyId ?? null,
  };
}

/** Creates an endpoint with a new secret; the view includes the secret. A refused field is `invalid_request`. */
export async function createEndpoint(
  db: Db,
  clock: Clock,
  allowPrivate: boolean,
  input: EndpointInput,
): Promise<EndpointView & { secret: string }> {
  const row = await checkedEndpointRow(clock, allowPrivate, input);
  await repo.insertEndpoint(db, row);
  return { ...toEndpointView(row), secret: row.secret };
}

/**
 * The row of a new endpoint, its fields checked (the URL's host resolved for the SSRF guard), not yet
 * stored: for a caller that stores it in a transaction of its own, which then holds no lock while a name
 * resolves. A refused field is `invalid_request`.
 */
export async function checkedEndpointRow(clock: Clock, allowPrivate: boolean, input: EndpointInput): Promise<WebhookEndpointRow> {
  const description = checkedDescription(input.description ?? '');
  const url = await checkedUrl(input.url, allowPrivate);
  const now = isoTimestamp(clock.now());
  return newEndpointRow({
    id: newId('webhookEndpoint', clock.now().getTime()),
    accountId: input.accountId,
    url,
    description,
    eventTypes: normaliseEventTypes(input.eventTypes),
    secret: generateWebhookSecret(),
    now,
    mode: input.mode ?? 'live',
    createdByKeyId: input.createdByKeyId ?? null,
  });
}

export async function listEndpoints(db: Db, accountId: string): Promise<EndpointView[]> {
  return (await repo.listEndpointsByAccount(db, accountId)).map(toEndpointView);
}

/** An endpoint, only within `accountId` when given (another account's endpoint is not found). */
export async function getEndpoint(db: Db, id: string, accountId?: string): Promise<WebhookEndpointRow | null> {
  const row = await repo.findEndpoint(db, id);
  if (!row || (accountId !== undefined && row.account_id !== accountId)) return null;
  return row;
}

export interface EndpointChanges {
  url?: string;
  description?: string;
  eventTypes?: readonly string[];
  enabled?: boolean;
}

/**
 * Saves checked changes of an endpoint and returns its row as it now is; a refused field is
 * `invalid_request`. Its deliveries are left alone: change endpoints through webhook-delivery's
 * `updateEndpoint`, which ends or frees them too.
 */
export async function saveEndpointChanges(
  db: Db,
  clock: Clock,
  allowPrivate: boolean,
  endpoint: WebhookEndpointRow,
  changes: EndpointChanges,
): Promise<WebhookEndpointRow> {
  const next: Partial<WebhookEndpointRow> = { updated_at: isoTimestamp(clock.now()) };
  if (changes.url !== undefined) next.url = await checkedUrl(changes.url, allowPrivate);
  if (changes.description !== undefined) next.description = checkedDescription(changes.description);
  if (changes.eventTypes !== undefined) next.event_types = JSON.stringify(normaliseEventTypes(changes.eventTypes));
  if (changes.enabled !== undefined) {
    next.enabled = changes.enabled ? 1 : 0;
    // Re-enabling starts the failure clock afresh.
    if (changes.enabled) Object.assign(next, { disabled_reason: null, failing_since: null });
    else next.disabled_reason = disabledByUserReason;
  }
  await repo.updateEndpoint(db, endpoint.id, next);
  return { ...endpoint, ...next };
}

/**
 * Marks an endpoint deleted at `at` (kept for its delivery history), in `db`: webhook-delivery's
 * `deleteEndpoint` does it in the transaction that ends the endpoint's pending deliveries.
 */
export async function markEndpointDeleted(db: Db, endpointId: string, at: string): Promise<void> {
  await repo.updateEndpoint(db, endpointId, { deleted_at: at, enabled: 0, updated_at: at });
}

/** Issues a new secret; for 24 hours deliveries are signed with the old and the new one. */
export async function rotateSecret(db: Db, clock: Clock, endpoint: WebhookEndpointRow): Promise<EndpointView & { secret: string }> {
  const now = clock.now();
  const secret = generateWebhookSecret();
  const changes = {
    secret,
    previous_secret: endpoint.secret,
    previous_secret_expires_at: isoTimestamp(addMs(now, secretOverlapMs)),
    updated_at: isoTimestamp(now),
  };
  await repo.updateEndpoint(db, endpoint.id, changes);
  return { ...toEndpointView({ ...endpoint, ...changes }), secret };
}

/** The secrets that sign a delivery now: the current one, and the previous one while it overlaps. */
export function activeSecrets(
  endpoint: Pick<WebhookEndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>,
  now: Date,
): string[] {
  const secrets = [endpoint.secret];
  if (endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > isoTimestamp(now)) {
    secrets.push(endpoint.previous_secret);
  }
  return secrets;
}

/** The enabled endpoints of an account, in id order. */
export async function listEnabledEndpoints(db: Db, accountId: string): Promise<WebhookEndpointRow[]> {
  return repo.listEnabledEndpointsOfAccounts(db, [accountId]);
}

/** The enabled endpoints of these accounts, in id order (the fan-out reads them with the events it writes). */
export async function listEnabledEndpointsOfAccounts(db: Db, accountIds: readonly string[]): Promise<WebhookEndpointRow[]> {
  return repo.listEnabledEndpointsOfAccounts(db, accountIds);
}

/** Every endpoint of the installation, enabled or not (deleted ones aside), by account then id (`callgate doctor`). */
export async function listAllEndpoints(db: Db): Promise<WebhookEndpointRow[]> {
  return repo.listAllEndpoints(db);
}

/** Endpoints by id, deleted ones too: what a delivery shows of its endpoint, and where the dispatcher sends it. */
export async function endpointsByIds(db: Db, ids: readonly string[]): Promise<Map<string, WebhookEndpointRow>> {
  return new Map((await repo.listEndpointsByIds(db, [...new Set(ids)])).map((row) => [row.id, row]));
}

/** What the results of delivery attempts change on an endpoint: its failure clock, or its being disabled. */
export type EndpointAttemptChange = Partial<Pick<WebhookEndpointsTable, 'enabled' | 'disabled_reason' | 'failing_since' | 'updated_at'>>;

/**
 * Applies the dispatcher's changes to endpoints in `db` (its transaction), one endpoint at a time in id
 * order: every transaction that writes attempt results locks its endpoints in the same order, then its
 * deliveries, so two of them never wait for each other.
 */
export async function applyAttemptChanges(db: Db, changes: ReadonlyMap<string, EndpointAttemptChange>): Promise<void> {
  for (const id of [...changes.keys()].sort()) await repo.updateEndpoint(db, id, changes.get(id)!);
}
