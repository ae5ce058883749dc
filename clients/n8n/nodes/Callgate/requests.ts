/**
 * The Callgate node's requests, as pure functions of its parameters: what each operation sends (docs/api.md
 * and docs/batches.md), the per-item Idempotency-Key, the parsing of its JSON fields, and paging.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ApiRequest } from '../../shared/transport';

/** What makes an item's key: n8n's execution, this node and the item (docs: Retry On Fail reuses it). */
export interface ItemIdentity {
  readonly instanceId: string;
  readonly workflowId: string;
  readonly executionId: string;
  readonly nodeName: string;
  readonly itemIndex: number;
}

/**
 * The Idempotency-Key of one item: the same for the same n8n instance, workflow, execution, node and item,
 * so a node retried by "Retry On Fail" (same execution) sends it again and callgate answers the first call
 * instead of placing a second. A hash, because node names may hold spaces and any character while the header
 * takes printable ASCII only. Without an execution id (never in a real run) a random key is made: a retry
 * then cannot be recognised, which is better than a key that could match another run's call.
 */
export function itemIdempotencyKey(identity: ItemIdentity): string {
  if (identity.executionId === '') return `n8n-${randomUUID()}`;
  const digest = createHash('sha256')
    .update(JSON.stringify([identity.instanceId, identity.workflowId, identity.executionId, identity.nodeName, identity.itemIndex]))
    .digest('hex');
  return `n8n-${digest.slice(0, 48)}`;
}

/** The key sent: the user's own (trimmed) when given, else the item's. */
export function idempotencyKeyFor(userKey: unknown, identity: ItemIdentity): string {
  const given = typeof userKey === 'string' ? userKey.trim() : typeof userKey === 'number' ? String(userKey) : '';
  if (given === '') return itemIdempotencyKey(identity);
  if (given.length > 255 || !/^[!-~]+$/.test(given)) {
    throw new Error(
      `Idempotency Key must be 1 to 255 printable ASCII characters without spaces (callgate's rule); got ${JSON.stringify(given.slice(0, 60))}.`,
    );
  }
  return given;
}

/**
 * A JSON parameter read as a value: n8n hands over a JSON field either parsed or as text. Empty text is
 * undefined. A parse error says which field, where and what an example looks like.
 */
export function parseJsonField(value: unknown, field: string, example: string): unknown {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return value;
  if (value.trim() === '') return undefined;
  let reason: string;
  try {
    return JSON.parse(value);
  } catch (error) {
    reason = error instanceof Error ? error.message : String(error);
  }
  throw new Error(`${field} is not valid JSON (${reason}). Write it like ${example}.`);
}

/** Call metadata: a JSON object, or nothing (an empty object or empty text is left out). */
export function parseMetadata(value: unknown, field = 'Metadata'): Record<string, unknown> | undefined {
  const parsed = parseJsonField(value, field, '{"customer_name": "Ada"}');
  if (parsed === undefined) return undefined;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(
      `${field} must be a JSON object such as {"customer_name": "Ada"}, not ${Array.isArray(parsed) ? 'an array' : JSON.stringify(parsed)}.`,
    );
  }
  return Object.keys(parsed).length === 0 ? undefined : (parsed as Record<string, unknown>);
}

function required(value: unknown, field: string): string {
  const text = typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : '';
  if (text === '') throw new Error(`${field} is required.`);
  return text;
}

export interface CreateCallParameters {
  readonly agentId: unknown;
  readonly to: unknown;
  readonly metadata?: unknown;
  readonly idempotencyKey?: unknown;
}

/** POST /v1/calls with its Idempotency-Key. */
export function createCallRequest(parameters: CreateCallParameters, identity: ItemIdentity): ApiRequest {
  const body: Record<string, unknown> = { agent_id: required(parameters.agentId, 'Agent'), to: required(parameters.to, 'To') };
  const metadata = parseMetadata(parameters.metadata);
  if (metadata) body.metadata = metadata;
  return {
    method: 'POST',
    path: '/v1/calls',
    body,
    headers: { 'Idempotency-Key': idempotencyKeyFor(parameters.idempotencyKey, identity) },
  };
}

const encode = (id: string) => encodeURIComponent(id);

export function getCallRequest(callId: unknown): ApiRequest {
  return { method: 'GET', path: `/v1/calls/${encode(required(callId, 'Call ID'))}` };
}

export function getTranscriptRequest(callId: unknown): ApiRequest {
  return { method: 'GET', path: `/v1/calls/${encode(required(callId, 'Call ID'))}/transcript` };
}

/** POST /v1/calls/{id}/cancel: no body; a second one answers the same, so n8n's retries are safe. */
export function cancelCallRequest(callId: unknown): ApiRequest {
  return { method: 'POST', path: `/v1/calls/${encode(required(callId, 'Call ID'))}/cancel` };
}

export function getBatchRequest(batchId: unknown): ApiRequest {
  return { method: 'GET', path: `/v1/batches/${encode(required(batchId, 'Batch ID'))}` };
}

/** The filters of `GET /v1/calls` as the node names them, and the query parameter of each. */
const callFilterNames: Record<string, string> = {
  status: 'status',
  agentId: 'agent_id',
  to: 'to',
  batchId: 'batch_id',
  reference: 'reference',
  createdAfter: 'created_after',
  createdBefore: 'created_before',
};

/** The query of `GET /v1/calls` from the node's filters (empty ones left out; unknown ones refused). */
export function callFilters(filters: Record<string, unknown>): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [name, value] of Object.entries(filters)) {
    const parameter = callFilterNames[name];
    if (!parameter) throw new Error(`Unknown filter ${name}.`);
    const text = typeof value === 'string' ? value.trim() : value === undefined || value === null ? '' : String(value);
    if (text !== '') query[parameter] = text;
  }
  return query;
}

/** One page of a list route. */
export function listPageRequest(path: string, query: Record<string, string>, limit: number, startingAfter?: string): ApiRequest {
  const qs: Record<string, string | number> = { ...query, limit };
  if (startingAfter !== undefined) qs.starting_after = startingAfter;
  return { method: 'GET', path, qs };
}

export interface Page {
  readonly data: Record<string, unknown>[];
  readonly has_more: boolean;
}

export function asPage(body: unknown): Page {
  const page = body as Partial<Page> | null;
  if (!page || !Array.isArray(page.data) || typeof page.has_more !== 'boolean') {
    throw new Error('callgate answered a list without data and has_more.');
  }
  return page as Page;
}

/** The most a list route answers in one page. */
export const MAX_PAGE_SIZE = 100;

/**
 * Every row of a list route (`returnAll`), or the first `limit`: pages of at most 100, each after the last id
 * of the one before, until `has_more` is false or enough rows came.
 */
export async function collectPages(
  fetchPage: (request: ApiRequest) => Promise<unknown>,
  options: { path: string; query?: Record<string, string>; returnAll: boolean; limit?: number },
): Promise<Record<string, unknown>[]> {
  const wanted = options.returnAll ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor(options.limit ?? 50));
  const rows: Record<string, unknown>[] = [];
  let startingAfter: string | undefined;
  for (;;) {
    const size = Math.min(MAX_PAGE_SIZE, wanted - rows.length);
    const page = asPage(await fetchPage(listPageRequest(options.path, options.query ?? {}, size, startingAfter)));
    rows.push(...page.data.slice(0, wanted - rows.length));
    const last = page.data.at(-1);
    if (!page.has_more || rows.length >= wanted || !last || typeof last.id !== 'string') return rows;
    startingAfter = last.id;
  }
}

export interface RecipientFields {
  readonly to?: unknown;
  readonly reference?: unknown;
  readonly metadata?: unknown;
}

/** Recipients given as a JSON array of `{to, reference?, metadata?}`. */
export function parseRecipients(value: unknown): Record<string, unknown>[] {
  const parsed = parseJsonField(
    value,
    'Recipients',
    '[{"to": "+14155550123", "reference": "appt-1", "metadata": {"customer_name": "Ada"}}]',
  );
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw new Error('Recipients must be a JSON array with at least one {"to": "+1…"} object.');
  }
  return parsed.map((recipient, index) => {
    if (typeof recipient !== 'object' || recipient === null || Array.isArray(recipient)) {
      throw new Error(`Recipients[${index}] must be an object such as {"to": "+14155550123"}.`);
    }
    return recipient as Record<string, unknown>;
  });
}

/** Recipients given as the node's fields, one entry each. */
export function recipientsFromFields(entries: readonly RecipientFields[]): Record<string, unknown>[] {
  if (entries.length === 0) throw new Error('Add at least one recipient.');
  return entries.map((entry, index) => {
    const recipient: Record<string, unknown> = { to: required(entry.to, `Recipient ${index + 1}: To`) };
    const reference = typeof entry.reference === 'string' ? entry.reference.trim() : '';
    if (reference !== '') recipient.reference = reference;
    const metadata = parseMetadata(entry.metadata, `Recipient ${index + 1}: Metadata`);
    if (metadata) recipient.metadata = metadata;
    return recipient;
  });
}

export interface BatchOptions {
  readonly name?: string;
  readonly scheduledAt?: string;
  readonly maxConcurrency?: number;
  readonly callingWindow?: {
    readonly start?: string;
    readonly end?: string;
    readonly days?: string[];
    readonly timeZone?: string;
    readonly fallbackTimeZone?: string;
  };
  readonly retry?: { readonly on?: string[]; readonly maxAttempts?: number; readonly delayMinutes?: number };
}

/**
 * `scheduled_at` as callgate takes it (ISO 8601 with its zone): a time with a zone or offset as given, one
 * without (as n8n's date picker gives it) read in the time zone of the n8n process.
 */
export function scheduledTime(value: string): string {
  if (/(Z|[+-]\d\d:?\d\d)$/i.test(value)) return value;
  const time = new Date(value);
  if (Number.isNaN(time.getTime())) throw new Error(`Scheduled At is not a date and time: ${JSON.stringify(value)}.`);
  return time.toISOString();
}

/** POST /v1/batches: the agent, the recipients, the options set (docs/batches.md) and the Idempotency-Key. */
export function createBatchRequest(
  parameters: { agentId: unknown; recipients: Record<string, unknown>[]; options: BatchOptions; idempotencyKey?: unknown },
  identity: ItemIdentity,
): ApiRequest {
  const body: Record<string, unknown> = { agent_id: required(parameters.agentId, 'Agent'), recipients: parameters.recipients };
  const { name, scheduledAt, maxConcurrency, callingWindow, retry } = parameters.options;
  if (name !== undefined && name.trim() !== '') body.name = name.trim();
  if (scheduledAt !== undefined && scheduledAt.trim() !== '') body.scheduled_at = scheduledTime(scheduledAt.trim());
  if (maxConcurrency !== undefined) body.max_concurrency = maxConcurrency;
  if (callingWindow) {
    const window: Record<string, unknown> = {
      start: required(callingWindow.start, 'Calling Window: Start'),
      end: required(callingWindow.end, 'Calling Window: End'),
    };
    if (callingWindow.days && callingWindow.days.length > 0) window.days = callingWindow.days;
    window.time_zone = required(callingWindow.timeZone, 'Calling Window: Time Zone');
    if (callingWindow.fallbackTimeZone) window.fallback_time_zone = callingWindow.fallbackTimeZone;
    body.calling_window = window;
  }
  if (retry) {
    const rule: Record<string, unknown> = {};
    if (retry.on && retry.on.length > 0) rule.on = retry.on;
    if (retry.maxAttempts !== undefined) rule.max_attempts = retry.maxAttempts;
    if (retry.delayMinutes !== undefined) rule.delay_minutes = retry.delayMinutes;
    body.retry = rule;
  }
  return {
    method: 'POST',
    path: '/v1/batches',
    body,
    headers: { 'Idempotency-Key': idempotencyKeyFor(parameters.idempotencyKey, identity) },
  };
}
