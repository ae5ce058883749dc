/**
 * The delivery worker. It claims due deliveries with a lease, signs and POSTs each, and records every
 * attempt; a failure is retried on the schedule, a 410 disables the endpoint, and the last failure leaves
 * the delivery `failed`. It is a job of the worker's runner: a pass runs on new events (the notifier) and
 * on a periodic sweep, for retries that came due and for leases a crashed worker left behind. Results are
 * written in small batches, one transaction each, so a busy dispatcher does not pay one commit per delivery.
 */
import { randomBytes } from 'node:crypto';
import { failureLogLevel } from '../../db/unavailable.js';
import type { JobContext, PassResult } from '../../jobs/job-runner.js';
import { WorkerJob, type WorkerJobOptions } from '../../jobs/worker-job.js';
import type { Metrics } from '../metrics/metrics.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import * as repo from './dispatcher.repository.js';
import { claimDueDeliveries, recordAttempts, type AttemptRecord, type ClaimedDelivery } from './dispatcher.service.js';
import { activeSecrets, type EndpointAttemptChange } from '../webhook-endpoints/endpoints.service.js';
import { nextDelayMs, parseRetryAfterMs } from './retry-schedule.js';
import { signedHeaders } from '../webhook-endpoints/webhook-signing.js';
import type { WebhookResponse, WebhookSender } from './webhook-sender.js';

export interface DispatcherOptions extends WorkerJobOptions {
  readonly sender: WebhookSender;
  /** Delays after the first attempt, in ms. */
  readonly retryScheduleMs: readonly number[];
  readonly timeoutMs: number;
  /** Deliveries attempted at once by this worker. */
  readonly concurrency?: number;
  /** Attempts in flight to one endpoint at once, across every worker (CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY). */
  readonly endpointConcurrency?: number;
  readonly random?: () => number;
  /** Counts attempts by result and endpoints disabled. */
  readonly metrics?: Metrics;
}

/** An endpoint whose deliveries have all failed for this long is disabled (Svix's rule). */
export const disableAfterFailingMs = 5 * 24 * 60 * 60 * 1000;
const defaultConcurrency = 64;
const defaultEndpointConcurrency = 4;
/** A claim outlives the HTTP timeout by this margin, so a live worker never loses its claim mid-attempt (the default `leaseMs`). */
const leaseMarginMs = 30_000;
const claimBatchSize = 100;
/**
 * A dispatcher counts as live (and gets its part of each endpoint's slots) for three sweep intervals after it
 * last renewed its row, at least this long; it renews the row once a third of that has passed.
 */
const minLiveForMs = 3_000;
/** Rows of dispatchers that stopped beating this long ago are deleted. */
const goneAfterMs = 60 * 60 * 1000;
const errorExcerptLength = 500;

/** A job of the worker's runner: each pass claims due deliveries into the free slots and starts their attempts. */
export class WebhookDispatcher extends WorkerJob<DispatcherOptions> {
  readonly workerId = `wkr_${randomBytes(6).toString('hex')}`;
  private readonly inFlight = new Map<string, Promise<void>>();
  /** The deliveries being sent now, with when their attempt began: what a shutdown records as interrupted. */
  private readonly sending = new Map<string, { readonly delivery: ClaimedDelivery; readonly startedAt: Date }>();
  private pendingRecords: { record: AttemptRecord; done: () => void }[] = [];
  private flushing: Promise<void> | undefined;
  private flushScheduled = false;
  private wakeScheduled = false;
  /** Endpoints this worker saw fail without an answer since their last answer: an answer ends their run. */
  private readonly failingEndpoints = new Set<string>();
  /** Until when this worker's row says it is live (0: no row yet). */
  private liveUntil = 0;

  constructor(options: DispatcherOptions) {
    super({ name: 'webhook-dispatcher', label: 'webhook dispatcher pass' }, options);
  }

  /** A shutdown lets attempts under way finish, up to its deadline. */
  pending(): Promise<unknown> {
    return Promise.allSettled([...this.inFlight.values()]);
  }

  /**
   * After the shutdown's wait: results are written; an attempt still waiting for its answer is recorded as
   * interrupted (the receiver may have had the request) and its delivery handed back, due at once, so
   * another worker can take it; any other claim is released.
   */
  async handBack(): Promise<void> {
    await this.flush();
    const now = this.options.clock.now();
    const interrupted = [...this.sending.values()].map(({ delivery, startedAt }) => this.interrupted(delivery, startedAt, now));
    if (interrupted.length > 0) {
      await recordAttempts(this.options.db, interrupted, this.backoffContext()).catch((error: unknown) => {
        this.options.logger.warn({ err: error, count: interrupted.length }, 'could not record interrupted webhook attempts');
      });
    }
    // What is still claimed (nothing sent yet, or the record above failed) goes back as it was.
    await repo.releaseClaims(this.options.db, this.workerId, [...this.inFlight.keys()]).catch(() => undefined);
    // The others take this worker's part of the endpoints' slots at their next claim.
    this.liveUntil = 0;
    await repo.removeWorker(this.options.db, this.workerId).catch(() => undefined);
  }

  /**
   * Keeps this worker counted among the live dispatchers, whose number divides each endpoint's slots: renewed
   * before it claims, at most once a third of its life, so a worker whose passes stop (stuck, or gone) drops
   * out within three sweeps and the others then share its part.
   */
  private async stayLive(now: Date): Promise<void> {
    const liveForMs = Math.max(minLiveForMs, 3 * this.intervalMs);
    if (this.liveUntil - now.getTime() > (liveForMs * 2) / 3) return;
    const liveUntil = addMs(now, liveForMs);
    await repo.renewWorker(this.options.db, this.workerId, isoTimestamp(liveUntil), isoTimestamp(addMs(now, -goneAfterMs)));
    this.liveUntil = liveUntil.getTime();
  }

  /** An attempt cut off by shutdown: counted and shown like any other, and the delivery due again at once. */
  private interrupted(delivery: ClaimedDelivery, startedAt: Date, now: Date): AttemptRecord {
    const at = isoTimestamp(now);
    const error = 'Interrupted: the worker shut down before the answer came; the delivery was handed back for another attempt.';
    const attemptNumber = delivery.attempt_count + 1;
    return {
      attempt: {
        id: newId('attempt', now.getTime()),
        delivery_id: delivery.id,
        attempt_number: attemptNumber,
        url: delivery.url,
        attempted_at: isoTimestamp(startedAt),
        status_code: null,
        duration_ms: Math.max(0, now.getTime() - startedAt.getTime()),
        response_excerpt: null,
        error,
      },
      deliveryId: delivery.id,
      workerId: this.workerId,
      delivery: {
        status: 'pending',
        next_attempt_at: at,
        attempt_count: attemptNumber,
        last_attempt_at: isoTimestamp(startedAt),
        last_status_code: null,
        last_error: error,
        updated_at: at,
      },
      endpointId: delivery.endpoint_id,
      endpoint: null,
    };
  }

  /** Resolves when nothing is in flight or waiting to be recorded; for tests and the benchmark. */
  override async idle(): Promise<void> {
    while (this.inFlight.size > 0 || this.pendingRecords.length > 0 || this.flushing) {
      await Promise.allSettled([...this.inFlight.values()]);
      await this.flush();
    }
  }

  /**
   * Looks for more work once the attempts ending now have all ended: the attempts of one recorded batch end
   * together, and waking at the first of them claimed a single delivery before claiming the rest.
   */
  private wakeAfterAttempts(): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      this.wake();
    });
  }

  async runOnce({ now, stopping }: JobContext): Promise<PassResult> {
    const concurrency = this.options.concurrency ?? defaultConcurrency;
    const room = concurrency - this.inFlight.size;
    // While attempts are under way, wait until a quarter of the slots are free: a claim costs about the
    // same for 1 row as for 16, so fewer, larger claims gave about 4 % more deliveries a second in the
    // benchmark. An idle worker claims at once, so a new event still goes out within milliseconds.
    if (stopping()) return {};
    await this.stayLive(now);
    if (room <= 0 || (this.inFlight.size > 0 && room < Math.ceil(concurrency / 4))) return {}; // a finishing attempt wakes us again
    const lease = isoTimestamp(addMs(now, this.options.leaseMs ?? this.options.timeoutMs + leaseMarginMs));
    const limit = Math.min(room, claimBatchSize);
    const batch = await claimDueDeliveries(this.options.db, {
      workerId: this.workerId,
      now: isoTimestamp(now),
      leaseUntil: lease,
      limit,
      perEndpoint: this.options.endpointConcurrency ?? defaultEndpointConcurrency,
    });
    for (const delivery of batch) {
      const attempt = this.attempt(delivery).finally(() => {
        this.inFlight.delete(delivery.id);
        this.wakeAfterAttempts();
      });
      this.inFlight.set(delivery.id, attempt);
    }
    return { more: batch.length === limit, claimed: batch.length };
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const now = this.options.clock.now();
    const at = isoTimestamp(now);
    if (delivery.enabled !== 1 || delivery.deleted_at !== null) {
      // Disabled or deleted endpoints get nothing; the delivery ends without an attempt.
      const reason = delivery.deleted_at ? 'The endpoint was deleted.' : 'The endpoint is disabled.';
      return this.record({
        attempt: null,
        deliveryId: delivery.id,
        workerId: this.workerId,
        delivery: { status: 'failed', next_attempt_at: null, last_error: reason, updated_at: at },
        endpointId: delivery.endpoint_id,
        endpoint: null,
      });
    }
    const timestamp = Math.floor(now.getTime() / 1000);
    const headers = signedHeaders(activeSecrets(delivery, now), delivery.event_id, timestamp, delivery.payload);
    this.sending.set(delivery.id, { delivery, startedAt: now });
    let response: WebhookResponse;
    try {
      response = await this.options.sender.send({ url: delivery.url, headers: { ...headers }, body: delivery.payload });
    } finally {
      this.sending.delete(delivery.id);
    }
    // Should a shutdown have recorded this attempt as interrupted meanwhile, its claim is gone and
    // recordAttempts leaves this late answer out.
    const record = this.outcome(delivery, now, response);
    this.logAttempt(delivery, record);
    return this.record(record);
  }

  /**
   * One line per attempt at info, so that an operator sees deliveries in the server's log (a receiver down
   * for a day would fill a warn-level log with its retries; the metrics count them), and a warn line when an
   * endpoint is disabled, which needs someone. Ids, status and timing only: no URL (it may carry a token),
   * no body.
   */
  private logAttempt(delivery: ClaimedDelivery, record: AttemptRecord): void {
    const { attempt } = record;
    if (!attempt) return;
    const { logger, metrics } = this.options;
    const fields = {
      endpoint_id: delivery.endpoint_id,
      event_id: delivery.event_id,
      delivery_id: delivery.id,
      attempt: attempt.attempt_number,
      result: record.delivery.status === 'pending' ? 'retrying' : record.delivery.status,
      status_code: attempt.status_code,
      duration_ms: attempt.duration_ms,
    };
    metrics?.webhookAttempts.inc({ result: fields.result });
    if (record.delivery.status === 'succeeded') {
      logger.info(fields, 'webhook delivered');
    } else {
      logger.info({ ...fields, error: attempt.error, next_attempt_at: record.delivery.next_attempt_at ?? null }, 'webhook attempt failed');
    }
    if (record.endpoint?.enabled === 0) {
      metrics?.webhookEndpointsDisabled.inc({ reason: attempt.status_code === 410 ? 'gone' : 'failing' });
      logger.warn({ endpoint_id: delivery.endpoint_id, reason: record.endpoint.disabled_reason }, 'webhook endpoint disabled');
    }
  }

  /** Decides what an answer means for the delivery and its endpoint. */
  private outcome(delivery: ClaimedDelivery, attemptedAt: Date, response: WebhookResponse): AttemptRecord {
    const finishedAt = this.options.clock.now();
    const at = isoTimestamp(finishedAt);
    const attemptNumber = delivery.attempt_count + 1;
    const status = response.kind === 'response' ? response.status : null;
    const error =
      response.kind === 'error'
        ? response.error.slice(0, errorExcerptLength)
        : status !== null && (status < 200 || status >= 300)
          ? `HTTP ${status}`
          : null;
    const attempt = {
      id: newId('attempt', finishedAt.getTime()),
      delivery_id: delivery.id,
      attempt_number: attemptNumber,
      url: delivery.url,
      attempted_at: isoTimestamp(attemptedAt),
      status_code: status,
      duration_ms: response.durationMs,
      response_excerpt: response.kind === 'response' ? response.excerpt : null,
      error,
    };
    const common: repo.DeliveryResult = {
      attempt_count: attemptNumber,
      last_attempt_at: isoTimestamp(attemptedAt),
      last_status_code: status,
      last_error: error,
      updated_at: at,
    };
    const answered = response.kind === 'response';
    if (answered) this.failingEndpoints.delete(delivery.endpoint_id);
    const inFailureRun = delivery.in_failure_run || this.failingEndpoints.has(delivery.endpoint_id);
    if (!answered) this.failingEndpoints.add(delivery.endpoint_id);
    const base = { attempt, deliveryId: delivery.id, workerId: this.workerId, endpointId: delivery.endpoint_id, answered, inFailureRun };

    if (status !== null && status >= 200 && status < 300) {
      return {
        ...base,
        delivery: { ...common, status: 'succeeded', next_attempt_at: null },
        endpoint: delivery.failing_since ? { failing_since: null } : null,
      };
    }
    if (status === 410) {
      return {
        ...base,
        delivery: { ...common, status: 'failed', next_attempt_at: null },
        endpoint: { enabled: 0, disabled_reason: 'The endpoint answered 410 Gone, so it was disabled.', updated_at: at },
      };
    }
    const retryAfterMs =
      response.kind === 'response' && (status === 429 || status === 503)
        ? parseRetryAfterMs(response.retryAfter, finishedAt.getTime())
        : null;
    const delay = nextDelayMs(this.options.retryScheduleMs, attemptNumber, retryAfterMs, this.options.random);
    const endpoint = this.failingEndpoint(delivery, finishedAt);
    // An endpoint disabled by this failure gets no more attempts: the delivery ends here, as its others do.
    if (delay === null || endpoint?.enabled === 0) {
      return { ...base, delivery: { ...common, status: 'failed', next_attempt_at: null }, endpoint };
    }
    return {
      ...base,
      delivery: { ...common, status: 'pending', next_attempt_at: isoTimestamp(addMs(finishedAt, delay)) },
      endpoint,
    };
  }

  /** Starts the failure clock of an endpoint, or disables it when it has failed for 5 days. */
  private failingEndpoint(delivery: ClaimedDelivery, now: Date): EndpointAttemptChange | null {
    if (!delivery.failing_since) return { failing_since: isoTimestamp(now) };
    if (now.getTime() - Date.parse(delivery.failing_since) >= disableAfterFailingMs) {
      return {
        enabled: 0,
        disabled_reason: `Every delivery failed for 5 days (since ${delivery.failing_since}), so the endpoint was disabled.`,
        updated_at: isoTimestamp(now),
      };
    }
    return null;
  }

  /** A failing endpoint is first probed after the retry schedule's first delay (5 s by default). */
  private backoffContext() {
    return { now: this.options.clock.now(), firstWaitMs: this.options.retryScheduleMs[0] ?? 5_000 };
  }

  private record(record: AttemptRecord): Promise<void> {
    const written = new Promise<void>((done) => this.pendingRecords.push({ record, done }));
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // Results that arrive in the same tick are written together.
      setImmediate(() => {
        this.flushScheduled = false;
        void this.flush();
      });
    }
    return written;
  }

  private async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pendingRecords.length === 0) return;
    const batch = this.pendingRecords;
    this.pendingRecords = [];
    const records = batch.map((entry) => entry.record);
    this.flushing = recordAttempts(this.options.db, records, this.backoffContext())
      .then(({ lost, backoffsBegun }) => {
        this.handle.leaseLost(lost);
        for (const [endpointId, nextTryAt] of backoffsBegun) {
          this.options.logger.info(
            { endpoint_id: endpointId, next_try_at: nextTryAt },
            'webhook endpoint is not answering; its deliveries wait for a probe',
          );
        }
      })
      .catch((error: unknown) => {
        // The claims stay until their lease ends; the sweep then retries these deliveries.
        this.options.logger[failureLogLevel(error)]({ err: error, count: records.length }, 'could not record webhook attempts');
      })
      .finally(() => {
        this.flushing = undefined;
        for (const entry of batch) entry.done();
      });
    await this.flushing;
  }
}
