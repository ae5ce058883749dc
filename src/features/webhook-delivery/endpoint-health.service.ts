/**
 * Endpoints whose deliveries fail, as the people who must act on them read it (`callgate doctor`, the
 * portal's overview). An enabled endpoint is failing from its first failed attempt after a success (its
 * failure clock, `failing_since`) until one succeeds; its deliveries are still tried. One that answered 410,
 * or failed for 5 days, was disabled by its failures: nothing is sent to it, and its events are not even
 * queued for it, until someone enables it again.
 */
import type { Db } from '../../db/database.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import { disabledByFailures, endpointsByIds } from '../webhook-endpoints/endpoints.service.js';
import type { WebhookAttemptRow } from './deliveries.tables.js';
import * as repo from './deliveries.repository.js';
import { endpointBackoffs, type EndpointBackoff } from './deliveries.service.js';
import { disableAfterFailingMs } from './webhook-dispatcher.job.js';

export interface FailingEndpoint {
  readonly state: 'failing';
  readonly endpoint_id: string;
  /** Its first failed attempt since its last success. */
  readonly failing_since: string;
  /**
   * When its deliveries are tried next: its next probe while it backs off, else its first pending delivery's
   * next attempt (a past time: due now, or under way); null when none waits (its next event goes at once).
   */
  readonly next_try_at: string | null;
  /** Set while it does not answer at all: its deliveries wait for a probe (see endpoint-backoff.ts). */
  readonly backoff: EndpointBackoff | null;
  /** Its first failed attempt after this time disables it, unless one succeeds before. */
  readonly disabled_after: string;
}

export interface DisabledEndpoint {
  readonly state: 'disabled';
  readonly endpoint_id: string;
  /** When its failures disabled it: its last attempt, which did (no attempt follows); its last change if none is kept. */
  readonly disabled_at: string;
  readonly disabled_reason: string;
  /** Its failure clock when it was disabled (null when its first failure, a 410, disabled it). */
  readonly failing_since: string | null;
}

export type EndpointTrouble = FailingEndpoint | DisabledEndpoint;

/**
 * Of these endpoints (deleted ones and those a person disabled are left out), the failing ones and those
 * their failures disabled, by id, as of `now`. Healthy endpoints have no entry. Each disabled one costs a
 * read of its deliveries (`lastAttempt`); a failing one, one index seek.
 */
export async function endpointTroubles(db: Db, endpointIds: readonly string[], now: Date): Promise<Map<string, EndpointTrouble>> {
  const live = [...(await endpointsByIds(db, endpointIds)).values()].filter((endpoint) => endpoint.deleted_at === null);
  const enabled = live.filter((endpoint) => endpoint.enabled === 1);
  const backoffs = await endpointBackoffs(
    db,
    enabled.map((endpoint) => endpoint.id),
    now,
  );
  const troubles = new Map<string, EndpointTrouble>();
  for (const endpoint of live) {
    const backoff = backoffs.get(endpoint.id) ?? null;
    // Every failure starts the clock, so a backoff without one is only the moment between the two writes.
    const failingSince = endpoint.failing_since ?? backoff?.failing_since;
    if (endpoint.enabled === 1 && failingSince) {
      troubles.set(endpoint.id, {
        state: 'failing',
        endpoint_id: endpoint.id,
        failing_since: failingSince,
        next_try_at: backoff ? backoff.next_try_at : await repo.firstPendingAttemptAt(db, endpoint.id),
        backoff,
        disabled_after: isoTimestamp(addMs(new Date(failingSince), disableAfterFailingMs)),
      });
    } else if (disabledByFailures(endpoint)) {
      const last = await lastAttempt(db, endpoint.id);
      troubles.set(endpoint.id, {
        state: 'disabled',
        endpoint_id: endpoint.id,
        disabled_at: last?.attempted_at ?? endpoint.updated_at,
        disabled_reason: endpoint.disabled_reason ?? '',
        failing_since: endpoint.failing_since,
      });
    }
  }
  return troubles;
}

export type LastAttempt = Pick<WebhookAttemptRow, 'attempted_at' | 'status_code' | 'error' | 'response_excerpt'>;

/**
 * The endpoint's latest attempt, with its status code or network error, or null when none is kept. It reads
 * every delivery of the endpoint: for one endpoint at a time, never for a list.
 */
export async function lastAttempt(db: Db, endpointId: string): Promise<LastAttempt | null> {
  const row = await repo.lastAttemptOfEndpoint(db, endpointId);
  return row
    ? { attempted_at: row.attempted_at, status_code: row.status_code, error: row.error, response_excerpt: row.response_excerpt }
    : null;
}
