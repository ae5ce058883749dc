/** The client: one resource object per part of the API, each method one route of it. */
import { PageIterator, type Page } from './pagination.js';
import { Transport, type ApiRequest, type RequestOptions, type ResponseInfo, type TransportOptions } from './http.js';
import type {
  Agent,
  Batch,
  Call,
  CallCreated,
  CallTranscript,
  CreateBatchParams,
  CreateCallParams,
  CreateSuppressionParams,
  Event,
  ListAgentsParams,
  ListBatchesParams,
  ListCallsParams,
  ListEventsParams,
  ListRecipientsParams,
  ListSuppressionsParams,
  Recipient,
  Suppression,
  CreateWebhookEndpointParams,
  ListWebhookEndpointsParams,
  UpdateWebhookEndpointParams,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from './types.js';
import { webhooks } from './webhooks.js';

export type CallgateOptions = TransportOptions;

/** A value the API returned, with `lastResponse` (not enumerable: it stays out of JSON and deep equality). */
export type WithResponse<T> = T & { readonly lastResponse: ResponseInfo };

/** What a list method's parameters have in common: the cursor is the iterator's business. */
type ListParams = { readonly limit?: number; readonly starting_after?: string };

const id = (value: string) => encodeURIComponent(value);

class Resource {
  constructor(protected readonly transport: Transport) {}

  protected async send<T extends object>(request: ApiRequest, options?: RequestOptions): Promise<WithResponse<T>> {
    const { body, response } = await this.transport.request<T>(request, options);
    return Object.defineProperty(body ?? ({} as T), 'lastResponse', { value: response, enumerable: false }) as WithResponse<T>;
  }

  protected page<T>(path: string, params: object, options?: RequestOptions): Promise<WithResponse<Page<T>>> {
    return this.send<Page<T>>({ method: 'GET', path, query: params as ApiRequest['query'] }, options);
  }

  protected iterate<T extends { id: string }>(path: string, params: ListParams, options?: RequestOptions): PageIterator<T> {
    return new PageIterator<T>(
      (startingAfter) => this.page<T>(path, { ...params, starting_after: startingAfter }, options),
      params.starting_after,
    );
  }
}

export class Calls extends Resource {
  /**
   * POST /v1/calls. One Idempotency-Key (a uuid v4 unless `options.idempotencyKey` is given) is sent on
   * every try, so retries after a lost answer never place a second call.
   */
  create(params: CreateCallParams, options?: RequestOptions): Promise<WithResponse<CallCreated>> {
    return this.send({ method: 'POST', path: '/v1/calls', body: params, idempotent: true }, options);
  }

  /** GET /v1/calls/{id}: the call with its outcome once it ended. */
  retrieve(callId: string, options?: RequestOptions): Promise<WithResponse<Call>> {
    return this.send({ method: 'GET', path: `/v1/calls/${id(callId)}` }, options);
  }

  /** Every call (newest first) matching `params`, across pages: `for await (const call of client.calls.list())`. */
  list(params: ListCallsParams = {}, options?: RequestOptions): PageIterator<Call> {
    return this.iterate('/v1/calls', params, options);
  }

  /** GET /v1/calls: one page. */
  listPage(params: ListCallsParams = {}, options?: RequestOptions): Promise<WithResponse<Page<Call>>> {
    return this.page('/v1/calls', params, options);
  }

  /**
   * POST /v1/calls/{id}/cancel: asks the call's provider to end it (cancelled while it rings, hung up once
   * answered); the call then carries `cancel_requested_at`, and ends with one event as usual. Cancelling
   * again changes nothing, so it is retried like a GET. 409 call_already_ended once it has ended; 409
   * cancel_not_supported where the provider cannot end calls (ElevenLabs).
   */
  cancel(callId: string, options?: RequestOptions): Promise<WithResponse<Call>> {
    return this.send({ method: 'POST', path: `/v1/calls/${id(callId)}/cancel` }, options);
  }

  /** GET /v1/calls/{id}/transcript: the ended call's conversation, turn by turn (409 call_not_ended before its end). */
  getTranscript(callId: string, options?: RequestOptions): Promise<WithResponse<CallTranscript>> {
    return this.send({ method: 'GET', path: `/v1/calls/${id(callId)}/transcript` }, options);
  }

  /**
   * GET /v1/calls/{id}/recording: the ended call's audio, unread: stream `body` (to a file, say) or take it
   * whole with `arrayBuffer()`. Retried like any GET until the answer's headers arrive; 404
   * recording_not_available when the provider kept none.
   */
  async getRecording(callId: string, options?: RequestOptions): Promise<CallRecording> {
    const { response, info } = await this.transport.stream({ method: 'GET', path: `/v1/calls/${id(callId)}/recording` }, options);
    const length = Number(response.headers.get('content-length'));
    return {
      contentType: response.headers.get('content-type') ?? 'application/octet-stream',
      contentLength: response.headers.has('content-length') && Number.isSafeInteger(length) ? length : null,
      body: response.body ?? new ReadableStream<Uint8Array>({ start: (controller) => controller.close() }),
      arrayBuffer: () => response.arrayBuffer(),
      lastResponse: info,
    };
  }
}

export class Agents extends Resource {
  /** GET /v1/agents/{id}: an agent of the key's account (`agent_…`); another account's is a NotFoundError. */
  retrieve(agentId: string, options?: RequestOptions): Promise<WithResponse<Agent>> {
    return this.send({ method: 'GET', path: `/v1/agents/${id(agentId)}` }, options);
  }

  /** Every agent of the account (newest first), across pages: `for await (const agent of client.agents.list())`. */
  list(params: ListAgentsParams = {}, options?: RequestOptions): PageIterator<Agent> {
    return this.iterate('/v1/agents', params, options);
  }

  /** GET /v1/agents: one page. */
  listPage(params: ListAgentsParams = {}, options?: RequestOptions): Promise<WithResponse<Page<Agent>>> {
    return this.page('/v1/agents', params, options);
  }
}

/** A call's recording as `calls.getRecording` gives it: read `body` once, as a stream or through `arrayBuffer()`. */
export interface CallRecording {
  /** The provider's audio type: audio/mpeg, audio/wav, … */
  readonly contentType: string;
  /** Bytes in all, when the server said. */
  readonly contentLength: number | null;
  readonly body: ReadableStream<Uint8Array>;
  arrayBuffer(): Promise<ArrayBuffer>;
  readonly lastResponse: ResponseInfo;
}

export class Batches extends Resource {
  /** POST /v1/batches, with one Idempotency-Key across its tries (as calls.create). */
  create(params: CreateBatchParams, options?: RequestOptions): Promise<WithResponse<Batch>> {
    return this.send({ method: 'POST', path: '/v1/batches', body: params, idempotent: true }, options);
  }

  retrieve(batchId: string, options?: RequestOptions): Promise<WithResponse<Batch>> {
    return this.send({ method: 'GET', path: `/v1/batches/${id(batchId)}` }, options);
  }

  list(params: ListBatchesParams = {}, options?: RequestOptions): PageIterator<Batch> {
    return this.iterate('/v1/batches', params, options);
  }

  listPage(params: ListBatchesParams = {}, options?: RequestOptions): Promise<WithResponse<Page<Batch>>> {
    return this.page('/v1/batches', params, options);
  }

  /** A batch's recipients in the order sent, across pages. */
  listRecipients(batchId: string, params: ListRecipientsParams = {}, options?: RequestOptions): PageIterator<Recipient> {
    return this.iterate(`/v1/batches/${id(batchId)}/recipients`, params, options);
  }

  listRecipientsPage(batchId: string, params: ListRecipientsParams = {}, options?: RequestOptions): Promise<WithResponse<Page<Recipient>>> {
    return this.page(`/v1/batches/${id(batchId)}/recipients`, params, options);
  }

  // The three actions end in a state, not a new resource: the same request twice gives the same answer,
  // so they are retried like GETs (without an Idempotency-Key, which these routes do not read).
  pause(batchId: string, options?: RequestOptions): Promise<WithResponse<Batch>> {
    return this.send({ method: 'POST', path: `/v1/batches/${id(batchId)}/pause` }, options);
  }

  resume(batchId: string, options?: RequestOptions): Promise<WithResponse<Batch>> {
    return this.send({ method: 'POST', path: `/v1/batches/${id(batchId)}/resume` }, options);
  }

  /** With `{ hang_up: true }`, the batch's calls under way are asked to end too (as calls.cancel). */
  cancel(batchId: string, params: { hang_up?: boolean } = {}, options?: RequestOptions): Promise<WithResponse<Batch>> {
    return this.send(
      { method: 'POST', path: `/v1/batches/${id(batchId)}/cancel`, ...(params.hang_up === undefined ? {} : { body: params }) },
      options,
    );
  }
}

export class Suppressions extends Resource {
  /** POST /v1/suppressions: 201 with a new entry, 200 with the existing one for a number already listed. */
  create(params: CreateSuppressionParams, options?: RequestOptions): Promise<WithResponse<Suppression>> {
    return this.send({ method: 'POST', path: '/v1/suppressions', body: params, idempotent: true }, options);
  }

  /** GET /v1/suppressions/{to}, `to` in E.164 (`+14155550123`; the client encodes the `+`). */
  retrieve(to: string, options?: RequestOptions): Promise<WithResponse<Suppression>> {
    return this.send({ method: 'GET', path: `/v1/suppressions/${id(to)}` }, options);
  }

  /** DELETE /v1/suppressions/{to}: the number may be called again. A number not listed is a NotFoundError. */
  async delete(to: string, options?: RequestOptions): Promise<ResponseInfo> {
    return (await this.send<object>({ method: 'DELETE', path: `/v1/suppressions/${id(to)}` }, options)).lastResponse;
  }

  list(params: ListSuppressionsParams = {}, options?: RequestOptions): PageIterator<Suppression> {
    return this.iterate('/v1/suppressions', params, options);
  }

  listPage(params: ListSuppressionsParams = {}, options?: RequestOptions): Promise<WithResponse<Page<Suppression>>> {
    return this.page('/v1/suppressions', params, options);
  }
}

export class Events extends Resource {
  /** GET /v1/events/{id}: the event exactly as its webhooks carried it (the last 30 days). */
  retrieve(eventId: string, options?: RequestOptions): Promise<WithResponse<Event>> {
    return this.send({ method: 'GET', path: `/v1/events/${id(eventId)}` }, options);
  }

  /** The key's events of the last 30 days, newest first, across pages; to catch up, pass `created_after`. */
  list(params: ListEventsParams = {}, options?: RequestOptions): PageIterator<Event> {
    return this.iterate('/v1/events', params, options);
  }

  listPage(params: ListEventsParams = {}, options?: RequestOptions): Promise<WithResponse<Page<Event>>> {
    return this.page('/v1/events', params, options);
  }
}

export class WebhookEndpoints extends Resource {
  /**
   * POST /v1/webhook_endpoints: an endpoint in the key's mode, answered with its `secret` (whsec_…), which no
   * other read shows: store it. One Idempotency-Key across its tries (as calls.create), so a retry after a
   * lost answer gets the same endpoint and secret, never a second endpoint.
   */
  create(params: CreateWebhookEndpointParams, options?: RequestOptions): Promise<WithResponse<WebhookEndpointWithSecret>> {
    return this.send({ method: 'POST', path: '/v1/webhook_endpoints', body: params, idempotent: true }, options);
  }

  /** GET /v1/webhook_endpoints/{id}: an endpoint of the key's account and mode (any other is a NotFoundError). */
  retrieve(endpointId: string, options?: RequestOptions): Promise<WithResponse<WebhookEndpoint>> {
    return this.send({ method: 'GET', path: `/v1/webhook_endpoints/${id(endpointId)}` }, options);
  }

  /** Every endpoint of the key (newest first), across pages; `{url}` finds those of one URL. */
  list(params: ListWebhookEndpointsParams = {}, options?: RequestOptions): PageIterator<WebhookEndpoint> {
    return this.iterate('/v1/webhook_endpoints', params, options);
  }

  /** GET /v1/webhook_endpoints: one page. */
  listPage(params: ListWebhookEndpointsParams = {}, options?: RequestOptions): Promise<WithResponse<Page<WebhookEndpoint>>> {
    return this.page('/v1/webhook_endpoints', params, options);
  }

  /**
   * PATCH /v1/webhook_endpoints/{id}: the fields given change (`disabled: false` enables it again). Setting
   * fields twice gives the same endpoint, so it is retried like a GET.
   */
  update(endpointId: string, params: UpdateWebhookEndpointParams, options?: RequestOptions): Promise<WithResponse<WebhookEndpoint>> {
    return this.send({ method: 'PATCH', path: `/v1/webhook_endpoints/${id(endpointId)}`, body: params }, options);
  }

  /** DELETE /v1/webhook_endpoints/{id}: nothing more is sent to it. One deleted already is a NotFoundError. */
  async delete(endpointId: string, options?: RequestOptions): Promise<ResponseInfo> {
    return (await this.send<object>({ method: 'DELETE', path: `/v1/webhook_endpoints/${id(endpointId)}` }, options)).lastResponse;
  }

  /**
   * POST /v1/webhook_endpoints/{id}/rotate_secret: a new `secret`; the old one signs beside it for 24 hours.
   * Not retried unless `options.maxRetries` says so: a second rotation, after an answer lost on the way,
   * would end the old secret's 24 hours at once for a new one nobody saw.
   */
  rotateSecret(endpointId: string, options?: RequestOptions): Promise<WithResponse<WebhookEndpointWithSecret>> {
    return this.send({ method: 'POST', path: `/v1/webhook_endpoints/${id(endpointId)}/rotate_secret` }, { maxRetries: 0, ...options });
  }
}

export class Callgate {
  readonly calls: Calls;
  readonly agents: Agents;
  readonly batches: Batches;
  readonly suppressions: Suppressions;
  readonly events: Events;
  readonly webhookEndpoints: WebhookEndpoints;
  /** `webhooks.verify(payload, headers, secret)`; needs no API key (also exported on its own). */
  readonly webhooks = webhooks;

  constructor(options: CallgateOptions) {
    const transport = new Transport(options);
    this.calls = new Calls(transport);
    this.agents = new Agents(transport);
    this.batches = new Batches(transport);
    this.suppressions = new Suppressions(transport);
    this.events = new Events(transport);
    this.webhookEndpoints = new WebhookEndpoints(transport);
  }
}
