/**
 * The process's metrics: one prom-client Registry per `Services` (the container makes it; tests get a fresh
 * one each, so their counts never mix), with every instrument the features move. Labels come from fixed
 * sets only (route patterns, provider names, outcome kinds, job names, catalogue codes): never an id, a
 * token, a URL or a phone number, so the number of series stays bounded whatever the traffic.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Latency buckets in seconds, from a cached read (2 ms) to a provider at its timeout (10 s and over). */
const latencyBucketsSeconds = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = this.counter(
    'callgate_http_requests_total',
    'HTTP requests answered, by route pattern (unmatched paths as "unmatched"), method and status.',
    ['route', 'method', 'status'],
  );
  readonly httpDuration = this.latencyHistogram(
    'callgate_http_request_duration_seconds',
    'Time from a request received to its answer sent, by route pattern, method and status.',
    ['route', 'method', 'status'],
  );
  readonly httpRefusals = this.counter(
    'callgate_http_refusals_total',
    'Requests refused with 429, by error code (rate_limit_exceeded, concurrency_limit_exceeded, ...).',
    ['code'],
  );

  readonly callsPlaced = this.counter(
    'callgate_calls_placed_total',
    'Calls the voice provider was asked to place, by provider and outcome (placed, or the failure kind).',
    ['provider', 'outcome'],
  );
  readonly dialsResolved = this.counter(
    'callgate_dials_total',
    'Dials (requests to a provider to place a call), by result: placed, refused, lost (its answer was lost), found (a lost one found at the provider), not_placed (a lost one the provider does not list), abandoned (the provider could not be asked within 24 hours).',
    ['result'],
  );
  readonly callsEnded = this.counter(
    'callgate_calls_ended_total',
    'Calls that ended, by provider and outcome (completed, or the failure reason).',
    ['provider', 'outcome'],
  );
  readonly providerDuration = this.latencyHistogram(
    'callgate_provider_request_duration_seconds',
    'Time a voice provider took to answer, by provider and operation (place_call, check_call).',
    ['provider', 'operation'],
  );
  readonly providerFailures = this.counter(
    'callgate_provider_request_failures_total',
    'Voice provider requests that failed, by provider, operation and kind (rejected, unavailable, timeout, error).',
    ['provider', 'operation', 'kind'],
  );

  readonly webhookAttempts = this.counter(
    'callgate_webhook_attempts_total',
    'Webhook delivery attempts, by result (succeeded, retrying, failed).',
    ['result'],
  );
  readonly webhookEndpointsDisabled = this.counter(
    'callgate_webhook_endpoints_disabled_total',
    'Webhook endpoints disabled by the dispatcher, by reason (gone: a 410; failing: every delivery failed for 5 days).',
    ['reason'],
  );

  readonly idempotencyClaims = this.counter(
    'callgate_idempotency_requests_total',
    'Requests with an Idempotency-Key, by result (owned: processed; replay; conflict; in_progress: still running after the wait).',
    ['result'],
  );
  readonly idempotencyWaits = this.counter(
    'callgate_idempotency_waits_total',
    'Requests that waited for an earlier request with the same Idempotency-Key to finish.',
  );

  readonly jobPasses = this.counter('callgate_job_passes_total', 'Passes of the worker jobs, by job and result (ok, error).', [
    'job',
    'result',
  ]);
  readonly jobWakeups = this.counter(
    'callgate_job_wakeups_total',
    'What asked a worker job for a pass, by job and source (signal: a wake-up heard, NOTIFY on PostgreSQL; sweep: its interval; job: its own work).',
    ['job', 'source'],
  );
  readonly jobPassDuration = this.latencyHistogram('callgate_job_pass_duration_seconds', 'Time one pass of a worker job took, by job.', [
    'job',
  ]);
  readonly jobClaims = this.counter(
    'callgate_job_claims_total',
    'Rows a worker job claimed (calls to check, deliveries to send, batches to dial), by job.',
    ['job'],
  );
  readonly jobLeaseLosses = this.counter(
    'callgate_job_lease_losses_total',
    'Claims a worker job lost before it recorded its work (the lease ran out and another worker took the row), by job.',
    ['job'],
  );

  constructor(options: { readonly defaultMetrics?: boolean } = {}) {
    // Node's own: CPU, memory, event-loop lag, GC, handles. Collected at scrape time into this registry.
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** A call that ended: `completed`, or its failure reason (a fixed list), by provider. */
  callEnded(call: { readonly provider: string; readonly status: string; readonly failure_reason: string | null }): void {
    this.callsEnded.inc({
      provider: call.provider,
      outcome: call.status === 'completed' ? 'completed' : (call.failure_reason ?? 'unknown'),
    });
  }

  /** Idempotency's observer: each claim's result and each wait. */
  readonly idempotencyObserver = {
    claimed: (result: string) => this.idempotencyClaims.inc({ result }),
    waited: () => this.idempotencyWaits.inc(),
  };

  /** A counter in this registry (the fields above are made with it, after `registry`). */
  private counter<L extends string = string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  /** A latency histogram in seconds in this registry, on the shared buckets. */
  private latencyHistogram<L extends string>(name: string, help: string, labelNames: readonly L[]): Histogram<L> {
    return new Histogram<L>({ name, help, labelNames, buckets: latencyBucketsSeconds, registers: [this.registry] });
  }

  /** A gauge whose value is read at scrape time (a query, a runner's state); `read` sets its series. */
  gauge<L extends string>(spec: {
    name: string;
    help: string;
    labelNames?: readonly L[];
    read: (gauge: Gauge<L>) => Promise<void> | void;
  }): Gauge<L> {
    const { read } = spec;
    return new Gauge<L>({
      name: spec.name,
      help: spec.help,
      labelNames: spec.labelNames ?? [],
      registers: [this.registry],
      async collect() {
        await read(this);
      },
    });
  }

  /** The Prometheus text exposition of every metric, and its content type. */
  async exposition(): Promise<{ readonly contentType: string; readonly body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
