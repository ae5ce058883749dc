/**
 * Dials: exactly one call per request, even when the provider's answer is lost. Every request to a provider
 * to place a call is recorded first (`beginDial`), with an id that travels with the request, in the same
 * transaction that holds its origin (the Idempotency-Key of an API request, a batch's recipient: see
 * dial-origin.ts) until the dial is known. A certain answer ends the dial at once (placed, refused). An
 * uncertain one (no answer in time, a 5xx, a dropped connection, a crash of the asker) leaves it `checking`:
 * the dial job (dials.job.ts) asks the provider for it by its id until it is found (the call is stored as if
 * the answer had come, and its origin takes it) or the search window ends without it (its origin learns that
 * nothing was placed: a key is freed, a recipient dialed again). While the provider cannot be asked, the
 * origin stays held: callgate never guesses. The dial driver (dial-driver.ts) runs these steps for an asker.
 */
import type { Db } from '../../db/database.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { AgentRow } from '../agents/agents.tables.js';
import { idempotencyLifetimeMs } from '../idempotency/idempotency.service.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import type { CallOutcome, DialSearch, ProviderFailure } from '../providers/provider.interface.js';
import * as repo from './dials.repository.js';
import type { DialRow, DialStep } from './dials.tables.js';
import * as callsRepo from './calls.repository.js';
import { newCallRow } from './call-row.js';
import { originKindOf, type DialOrigin, type DialOriginPort, type DialOriginPorts } from './dial-origin.js';

export interface DialSettings {
  /** How long after it was sent a lost dial is looked for before it counts as not placed (CALLGATE_DIAL_SEARCH_WINDOW). */
  readonly searchWindowMs: number;
  /** The provider's timeout (CALLGATE_PROVIDER_TIMEOUT_MS): an asker silent for longer than this and a margin has died. */
  readonly providerTimeoutMs: number;
}

/** Test-mode dials (the simulator) are searched for a few seconds only, so integrators can rehearse a lost answer. */
export const testSearchWindowMs = 3_000;
/** An asker is taken for dead this long after the provider's timeout. */
const askerMarginMs = 10_000;
/** Looks at the provider while a dial is checked: the first soon, then spaced out, the last at the window's end. */
const firstLookMs = { test: 1_000, live: 5_000 } as const;
const maxLookGapMs = 30_000;
/** After the provider could not be asked: 5 s, doubling, at most 5 minutes. */
const unreachableBackoffMs = { start: 5_000, max: 5 * 60_000 } as const;

export interface DialRequest {
  readonly to: string;
  readonly metadata: string | null;
}

function searchWindowOf(settings: DialSettings, mode: DialRow['mode']): number {
  // The window is the operator's word on the provider (config keeps it longer than the provider's timeout);
  // a dial taken over from a dead asker after the window has ended still gets its one look.
  return mode === 'test' ? testSearchWindowMs : settings.searchWindowMs;
}

function steps(...list: DialStep[]): string {
  return JSON.stringify(list);
}

/**
 * Records a dial before its provider is asked, and holds what asked for it (its port's `hold`: the
 * Idempotency-Key, the batch recipient) until the dial is known, in one transaction. Returns the dial; its
 * id goes with the request. An origin without columns or port is an API request without a key.
 */
export async function beginDial(
  deps: { readonly db: Db; readonly clock: Clock; readonly dials: DialSettings },
  origin: Pick<DialOrigin, 'apiKey'> & Partial<Pick<DialOrigin, 'columns' | 'port'>>,
  agent: AgentRow,
  provider: DialRow['provider'],
  request: DialRequest,
): Promise<DialRow> {
  const now = deps.clock.now();
  const at = isoTimestamp(now);
  const recorded = origin.columns ?? {};
  const dial: DialRow = {
    id: newId('dial', now.getTime()),
    account_id: origin.apiKey.account_id,
    api_key_id: origin.apiKey.id,
    mode: origin.apiKey.mode,
    provider,
    agent_ref: agent.id,
    agent_id: agent.agent_id,
    provider_agent_id: agent.provider_agent_id ?? agent.agent_id,
    phone_number_id: agent.phone_number_id,
    to_number: request.to,
    metadata: request.metadata,
    batch_id: recorded.batch_id ?? null,
    recipient_id: recorded.recipient_id ?? null,
    reference: recorded.reference ?? null,
    idempotency_route: recorded.idempotency_route ?? null,
    idempotency_key: recorded.idempotency_key ?? null,
    idempotency_owner: recorded.idempotency_owner ?? null,
    state: 'asking',
    call_id: null,
    asked_at: at,
    due_at: isoTimestamp(addMs(now, deps.dials.providerTimeoutMs + askerMarginMs)),
    search_until: isoTimestamp(addMs(now, searchWindowOf(deps.dials, origin.apiKey.mode))),
    looks: 0,
    history: steps({ at, step: `Recorded; asking ${provider} to place the call.` }),
    created_at: at,
    updated_at: at,
  };
  // Held past any answer: only the dial's outcome frees them (the dial job, in any process, after a crash too).
  const holdUntil = addMs(now, idempotencyLifetimeMs);
  await deps.db.transaction().execute(async (trx) => {
    await repo.insertDial(trx, dial);
    await origin.port?.hold(trx, dial, holdUntil);
  });
  return dial;
}

/** The provider placed the call: the dial ends `placed`, in `trx` (the transaction that stores the call). False when the dial was resolved already. */
export async function dialPlaced(trx: Db, clock: Clock, dial: DialRow, callId: string): Promise<boolean> {
  return repo.moveDial(trx, dial.id, ['asking', 'checking'], {
    state: 'placed',
    step: `The provider placed the call ${callId}.`,
    at: isoTimestamp(clock.now()),
    callId,
  });
}

/** The provider said no, or could not be reached before the request was sent: nothing was placed. */
export async function dialRefused(db: Db, clock: Clock, dial: DialRow, failure: ProviderFailure): Promise<void> {
  const why = failure.kind === 'rejected' ? 'The provider refused the call' : 'The provider could not take the call';
  await repo.moveDial(db, dial.id, ['asking'], { state: 'refused', step: `${why}: ${failure.message}`, at: isoTimestamp(clock.now()) });
}

/**
 * The provider's answer was lost: the dial is looked for (`checking`), and its origin says so meanwhile (its
 * key answers retries with the lost answer). False when the dial was resolved already (its job found it first).
 */
export async function dialLost(db: Db, clock: Clock, dial: DialRow, failure: ProviderFailure, origin: DialOriginPort): Promise<boolean> {
  const now = clock.now();
  const moved = await repo.moveDial(db, dial.id, ['asking'], {
    state: 'checking',
    step: `The answer was lost (${failure.message}); looking for the call at the provider.`,
    at: isoTimestamp(now),
    dueAt: isoTimestamp(firstLookAt(dial, now)),
  });
  if (moved) await origin.lost(db, dial, failure);
  return moved;
}

/**
 * The first look at a lost dial: after a few seconds, or halfway to the end of a shorter window, so that
 * even a short window has a look within it before the last one at its end.
 */
function firstLookAt(dial: DialRow, now: Date): Date {
  const left = Math.max(0, Date.parse(dial.search_until) - now.getTime());
  return addMs(now, Math.min(firstLookMs[dial.mode], Math.round(left / 2)));
}

/** What the dial job needs: the database, the providers, the port of each kind of origin, and who to tell of a call it stored. */
export interface DialJobDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly providers: ProviderRegistry;
  readonly origins: DialOriginPorts;
  /** Told of each call a search found (the call monitor's first look at it). */
  readonly onCallPlaced?: (callId: string, checkAt: Date) => void;
}

export type DialResult = 'found' | 'not_placed' | 'abandoned';

/** The next look at a dial still not found: spaced out with its age, the last one at the end of the window. */
function nextLookAt(dial: DialRow, now: Date): Date {
  const age = now.getTime() - Date.parse(dial.asked_at);
  const gap = Math.min(maxLookGapMs, Math.max(firstLookMs[dial.mode], Math.round(age / 2)));
  const next = addMs(now, gap);
  const end = new Date(dial.search_until);
  return next.getTime() > end.getTime() && now.getTime() < end.getTime() ? end : next;
}

/**
 * One look at a claimed open dial: an `asking` one whose asker died becomes `checking` first. Then the
 * provider is asked for it (or an outcome held for it names its call) and the dial is resolved, or its next
 * look set. Returns how it was resolved, if it was.
 */
export async function lookForDial(deps: DialJobDeps, claimed: DialRow): Promise<DialResult | undefined> {
  const { db, clock } = deps;
  const origin = deps.origins[originKindOf(claimed)];
  let dial = claimed;
  if (dial.state === 'asking') {
    const now = clock.now();
    const failure: ProviderFailure = {
      kind: 'timeout',
      message: 'the process asking the provider stopped before its answer was recorded',
      retryable: true,
    };
    const moved = await dialLost(db, clock, dial, failure, origin);
    if (!moved) return undefined;
    dial = { ...dial, state: 'checking', due_at: isoTimestamp(now) };
  }
  const held = await repo.heldOutcomeOfDial(db, dial.id);
  const search: DialSearch | ProviderFailure = held ? { state: 'found', conversationId: held.conversation_id } : await ask(deps, dial);
  const now = clock.now();
  const looks = dial.looks + 1;
  if ('kind' in search) {
    if (now.getTime() >= Date.parse(dial.asked_at) + idempotencyLifetimeMs) return abandon(deps, origin, dial, search);
    const backoff = Math.min(unreachableBackoffMs.max, unreachableBackoffMs.start * 2 ** Math.min(dial.looks, 16));
    await repo.moveDial(db, dial.id, ['checking'], {
      state: 'checking',
      step: `The provider could not be asked (${search.message}); asking again later.`,
      at: isoTimestamp(now),
      dueAt: isoTimestamp(addMs(now, backoff)),
      looks,
    });
    return undefined;
  }
  if (search.state === 'found') return (await storeFound(deps, origin, dial, search.conversationId)) ? 'found' : undefined;
  if (now.getTime() < Date.parse(dial.search_until)) {
    await repo.moveDial(db, dial.id, ['checking'], {
      state: 'checking',
      step: `Not listed by the provider yet (look ${looks}).`,
      at: isoTimestamp(now),
      dueAt: isoTimestamp(nextLookAt(dial, now)),
      looks,
    });
    return undefined;
  }
  return (await endNotPlaced(deps, origin, dial, looks)) ? 'not_placed' : undefined;
}

async function ask(deps: DialJobDeps, dial: DialRow): Promise<DialSearch | ProviderFailure> {
  const provider = deps.providers.byName(dial.provider);
  const result = await provider.findDial({
    dialId: dial.id,
    agentId: dial.provider_agent_id,
    phoneNumberId: dial.phone_number_id,
    to: dial.to_number,
    askedAt: new Date(dial.asked_at),
  });
  return result.ok ? result.value : result.error;
}

async function storeFound(deps: DialJobDeps, origin: DialOriginPort, dial: DialRow, conversationId: string): Promise<boolean> {
  const { db, clock } = deps;
  const now = clock.now();
  const provider = deps.providers.byName(dial.provider);
  const firstCheckAt = addMs(now, provider.firstCheckDelayMs);
  // The same row its answer would have made, created when its dial asked.
  const row = newCallRow({
    conversationId,
    origin: dial,
    dialId: dial.id,
    createdAt: dial.asked_at,
    now,
    firstCheckAt,
    foundAfterLostAnswer: true,
  });
  const stored = await db.transaction().execute(async (trx) => {
    const moved = await repo.moveDial(trx, dial.id, ['checking'], {
      state: 'found',
      step: `Found at the provider: the call ${row.id} was placed. Stored as if the answer had come.`,
      at: isoTimestamp(now),
      callId: row.id,
    });
    if (!moved) return false;
    await callsRepo.insertCall(trx, row);
    await origin.placed(trx, dial, row);
    return true;
  });
  if (stored) deps.onCallPlaced?.(row.id, firstCheckAt);
  return stored;
}

async function endNotPlaced(deps: DialJobDeps, origin: DialOriginPort, dial: DialRow, looks: number): Promise<boolean> {
  const { db, clock } = deps;
  const ending = await origin.notPlaced(db, dial);
  return db.transaction().execute(async (trx) => {
    const moved = await repo.moveDial(trx, dial.id, ['checking'], {
      state: 'not_placed',
      step: `Not placed: the provider lists no call for it after ${looks} looks within its search window.${ending.note}`,
      at: isoTimestamp(clock.now()),
      looks,
    });
    if (!moved) return false;
    await ending.end(trx);
    return true;
  });
}

async function abandon(
  deps: DialJobDeps,
  origin: DialOriginPort,
  dial: DialRow,
  failure: ProviderFailure,
): Promise<DialResult | undefined> {
  const { db, clock } = deps;
  const ended = await db.transaction().execute(async (trx) => {
    const moved = await repo.moveDial(trx, dial.id, ['checking'], {
      state: 'abandoned',
      step: `The provider could not be asked within the Idempotency-Key's 24 hours (${failure.message}); whether the call was placed is unknown.`,
      at: isoTimestamp(clock.now()),
    });
    if (!moved) return false;
    await origin.abandoned(trx, dial);
    return true;
  });
  return ended ? 'abandoned' : undefined;
}

/** How many dials of a batch recipient ended as not placed (lost answers the provider listed no call for). */
export async function notPlacedDialsOfRecipient(db: Db, recipientId: string): Promise<number> {
  return repo.countNotPlacedOfRecipient(db, recipientId);
}

/** A dial as the portal's call page shows it: its id, where it stands, and its history, oldest step first. */
export interface DialHistory {
  readonly id: string;
  readonly state: DialRow['state'];
  readonly steps: readonly DialStep[];
}

/** The history of the dial that placed a call of this account (none for calls placed before dials were recorded). */
export async function dialHistoryOfCall(db: Db, accountId: string, callId: string): Promise<DialHistory | undefined> {
  const call = await callsRepo.findCallInAccount(db, accountId, callId);
  if (!call?.dial_id) return undefined;
  const dial = await repo.findDial(db, call.dial_id);
  return dial && { id: dial.id, state: dial.state, steps: JSON.parse(dial.history) as DialStep[] };
}

/** Claims open dials that are due, under a lease of `leaseMs` (the dial job). */
export async function claimDueDials(db: Db, clock: Clock, leaseMs: number, limit: number): Promise<DialRow[]> {
  const now = clock.now();
  return repo.claimDueDials(db, isoTimestamp(now), isoTimestamp(addMs(now, leaseMs)), limit);
}

/** Open dials and the age of the oldest, in seconds (the metrics). */
export async function openDials(db: Db, clock: Clock): Promise<{ readonly open: number; readonly oldestAgeSeconds: number }> {
  const { open, oldestAskedAt } = await repo.openDialsSummary(db);
  const oldestAgeSeconds = oldestAskedAt === null ? 0 : Math.max(0, (clock.now().getTime() - Date.parse(oldestAskedAt)) / 1000);
  return { open, oldestAgeSeconds };
}

/** An outcome as `held_outcomes` keeps it (JSON, dates as text) and back. */
export function outcomeToJson(outcome: CallOutcome): string {
  return JSON.stringify(outcome);
}

export function outcomeFromJson(text: string): CallOutcome {
  const value = JSON.parse(text) as Record<string, unknown>;
  if (value.status === 'completed') {
    return {
      status: 'completed',
      startedAt: new Date(value.startedAt as string),
      endedAt: new Date(value.endedAt as string),
      durationSeconds: value.durationSeconds as number,
      transcriptSummary: value.transcriptSummary as string,
    };
  }
  return {
    status: 'failed',
    reason: value.reason as Extract<CallOutcome, { status: 'failed' }>['reason'],
    message: (value.message as string | null) ?? null,
    failedAt: new Date(value.failedAt as string),
  };
}
