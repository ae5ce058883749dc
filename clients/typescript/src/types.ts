/**
 * The client's names for the API's shapes, each taken from the generated types (src/generated/openapi.ts,
 * from the OpenAPI document the server serves): nothing here restates a field.
 */
import type { components, operations, webhooks } from './generated/openapi.js';

type Json<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;
type BodyOf<Operation> = Operation extends { requestBody: infer Body } ? Json<Body> : never;
type RequestBody<Op extends keyof operations> = BodyOf<operations[Op]>;
type Success<Op extends keyof operations, Status extends number> =
  operations[Op]['responses'] extends Record<Status, infer Response> ? Json<Response> : never;
type Query<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;
/** A list's query (`limit` an integer). `starting_after` is the list iterator's to set, but a first cursor may be given. */
type ListQuery<Op extends keyof operations> = Query<Op>;
type Item<List> = List extends { data: (infer Element)[] } ? Element : never;

export type CreateCallParams = RequestBody<'createCall'>;
export type CallCreated = Success<'createCall', 201>;
export type Call = Success<'retrieveCall', 200>;
export type ListCallsParams = ListQuery<'listCalls'>;
/** GET /v1/calls/{id}/transcript: the ended call's turns, in order. */
export type CallTranscript = Success<'getCallTranscript', 200>;
export type TranscriptTurn = CallTranscript['turns'][number];
/** An ended call's `analysis`: the provider's judgement and the results its agent collected. */
export type CallAnalysis = NonNullable<Call['analysis']>;
export type Metadata = NonNullable<CreateCallParams['metadata']>;

/** An agent of the account (GET /v1/agents): what a call or a batch is placed with, never a provider credential. */
export type Agent = Success<'retrieveAgent', 200>;
export type ListAgentsParams = ListQuery<'listAgents'>;

export type CreateBatchParams = RequestBody<'createBatch'>;
export type Batch = Success<'retrieveBatch', 200>;
export type ListBatchesParams = ListQuery<'listBatches'>;
export type Recipient = Item<Success<'listBatchRecipients', 200>>;
export type ListRecipientsParams = ListQuery<'listBatchRecipients'>;

export type CreateSuppressionParams = RequestBody<'createSuppression'>;
export type Suppression = Success<'retrieveSuppression', 200>;
export type ListSuppressionsParams = ListQuery<'listSuppressions'>;

/** An event as GET /v1/events answers it: call.completed, call.failed or batch.completed. */
export type Event = Success<'retrieveEvent', 200>;
export type ListEventsParams = ListQuery<'listEvents'>;

export type CreateWebhookEndpointParams = RequestBody<'createWebhookEndpoint'>;
export type UpdateWebhookEndpointParams = RequestBody<'updateWebhookEndpoint'>;
/** An endpoint as every read answers it: never with its secret. */
export type WebhookEndpoint = Success<'retrieveWebhookEndpoint', 200>;
/** The answer of a creation or a rotation: the endpoint with its `secret` (whsec_…), shown there only. */
export type WebhookEndpointWithSecret = Success<'createWebhookEndpoint', 201>;
export type ListWebhookEndpointsParams = ListQuery<'listWebhookEndpoints'>;

/** The body of each webhook of the document's `webhooks` section, by event type. */
export type WebhookEvents = { [Type in keyof webhooks]: BodyOf<webhooks[Type]['post']> };
/** What a webhook delivers, narrowed by `type` (docs/webhooks.md: ignore types you do not know). */
export type WebhookEvent = WebhookEvents[keyof WebhookEvents];
export type CallCompletedEvent = WebhookEvents['call.completed'];
export type CallFailedEvent = WebhookEvents['call.failed'];
export type BatchCompletedEvent = WebhookEvents['batch.completed'];
export type WebhookTestEvent = WebhookEvents['webhook.test'];

/** An error body: `{error, message, request_id, param?}`, `error` a code of the catalogue. */
export type ErrorBody = components['schemas']['Error'];
export type ErrorCode = components['schemas']['ErrorCode'];
