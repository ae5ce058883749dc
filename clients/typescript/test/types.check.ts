/**
 * Type-checked with the rest (npm run typecheck), never run: the client's types, derived from the generated
 * file, are real shapes (not never, not any), and narrow as the README shows.
 */
import type {
  Batch,
  Call,
  CallCreated,
  CreateBatchParams,
  Event,
  ListCallsParams,
  Recipient,
  Suppression,
  WebhookEvent,
  CallFailedEvent,
  CallTranscript,
  Agent,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
} from '../src/index.js';
type IsNever<T> = [T] extends [never] ? true : false;
type IsAny<T> = 0 extends 1 & T ? true : false;
const checks: [
  IsNever<Call>,
  IsAny<Call>,
  IsNever<Batch>,
  IsNever<Recipient>,
  IsNever<Suppression>,
  IsNever<Event>,
  IsNever<CallCreated>,
  IsNever<CreateBatchParams>,
  IsNever<WebhookEvent>,
  IsAny<WebhookEvent>,
  IsNever<CallFailedEvent>,
  IsNever<CallTranscript>,
  IsNever<Agent>,
  IsNever<WebhookEndpoint>,
  IsNever<WebhookEndpointWithSecret>,
] = [false, false, false, false, false, false, false, false, false, false, false, false, false, false, false];
const limit: ListCallsParams = { limit: 2, status: 'failed' };
declare const b: Batch;
const total: number = b.counts.total;
declare const e: WebhookEvent;
if (e.type === 'call.completed') {
  const d: number = e.data.duration_seconds;
  void d;
}
if (e.type === 'webhook.test') {
  const d: string = e.data.endpoint_id;
  void d;
}
declare const c: Call;
const judged: boolean | null | undefined = c.analysis?.successful;
const live: boolean = c.livemode;
declare const t: CallTranscript;
const role: 'agent' | 'user' | undefined = t.turns[0]?.role;
declare const w: WebhookEndpointWithSecret;
const secret: string = w.secret;
declare const r: Recipient;
const ids: string[] = r.call_ids;
void checks;
void limit;
void total;
void ids;
void judged;
void live;
void role;
void secret;
