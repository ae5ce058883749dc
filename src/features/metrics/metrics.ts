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

  readonly httpRequests = new Counter({
    name: 'callgate_http_requests_total',
    help: 'HTTP requests answered, by route pattern (unmatched paths as "unmatched"), method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'callgate_http_request_duration_seconds',
    help: 'Time from a request received to its answer sent, by route pattern, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: latencyBucketsSeconds,
    registers: [this.registry],
  });
  readonly httpRefusals = new Counter({
    name: 'callgate_http_refusals_total',
    help: 'Requests refused with 429, by error code (rate_limit_exceeded, concurrency_limit_exceeded, ...).',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly callsPlaced = new Counter({
    name: 'callgate_calls_placed_total',
    help: 'Calls the voice provider was asked to place, by provider and outcome (placed, or the failure kind).',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly callsEnded = new Counter({
    name: 'callgate_calls_ended_total',
    help: 'Calls that ended, by provider and outcome (completed, or the failure reason).',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly providerDuration = new Histogram({
    name: 'callgate_provider_request_duration_seconds',
    help: 'Time a voice provider took to answer, by provider and operation (place_call, check_call).',
    labelNames: ['provider', 'operation'] as const,
    buckets: latencyBucketsSeconds,
    registers: [this.registry],
  });
  readonly providerFailures = new Counter({
    name: 'callgate_provider_request_failures_total',
    help: 'Voice provider requests that failed, by provider, operation and kind (rejected, unavailable, timeout, error).',
    labelNames: ['provider', 'operation', 'kind'] as const,
    registers: [this.registry],
  });

  readonly webhookAttempts = new Counter({
    name: 'callgate_webhook_attempts_total',
    help: 'Webhook delivery attempts, by result (succeeded, retrying, failed).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly webhookEndpointsDisabled = new Counter({
    name: 'callgate_webhook_endpoints_disabled_total',
    help: 'Webhook endpoints disabled by the dispatcher, by reason (gone: a 410; failing: every delivery failed for 5 days).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly idempotencyClaims = new Counter({
    name: 'callgate_idempotency_requests_total',
    help: 'Requests with an Idempotency-Key, by result (owned: processed; replay; conflict; in_progress: still running after the wait).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly idempotencyWaits = new Counter({
    name: 'callgate_idempotency_waits_total',
    help: 'Requests that waited for an earlier request with the same Idempotency-Key to finish.',
    registers: [this.registry],
  });

  readonly jobPasses = new Counter({
    name: 'callgate_job_passes_total',
    help: 'Passes of the worker jobs, by job and result (ok, error).',
    labelNames: ['job', 'result'] as const,
    registers: [this.registry],
  });
  readonly jobPassDuration = new Histogram({
    name: 'callgate_job_pass_duration_seconds',
    help: 'Time one pass of a worker job took, by job.',
    labelNames: ['job'] as const,
    buckets: latencyBucketsSeconds,
    registers: [this.registry],
  });
  readonly jobClaims = new Counter({
    name: 'callgate_job_claims_total',
    help: 'Rows a worker job claimed (calls to check, deliveries to send, batches to dial), by job.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly jobLeaseLosses = new Counter({
    name: 'callgate_job_lease_losses_total',
    help: 'Claims a worker job lost before it recorded its work (the lease ran out and another worker took the row), by job.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });

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
