/**
 * The dial driver: how a call is placed exactly once, for whatever asks for it (an API request with its
 * Idempotency-Key, request-origin.ts; a batch's recipient, batches/recipient-origin.ts). The guarantee lives
 * here and in the dial job (dials.service `lookForDial`) only; an origin takes part through its port
 * (dial-origin.ts).
 * 1. The dial is recorded before the provider is asked, in the transaction that holds its origin (`beginDial`):
 *    whatever happens to the answer, or to this process, the dial is resolved and the origin held until then.
 * 2. The provider is asked, with the dial's id (test-mode keys always reach the simulator).
 * 3. A certain no ends the dial `refused`; the asker answers it (`refused`).
 * 4. An uncertain answer (no answer in time, a 5xx, a dropped connection) leaves the dial `checking`, its
 *    origin held, to the dial job's search by the dial's id: never a second create (`lost`).
 * 5. A placed call is stored under a guard (the dial job may have stored it first, its asker taken for dead),
 *    with the dial's end and its origin's part in one transaction (`placed`); while the database is away it
 *    is stored as soon as it is back (`storing`): the call exists, and its outcome must not be lost.
 */
import type { Db } from '../../db/database.js';
import { isDatabaseUnavailable, retryWhileUnavailable } from '../../db/unavailable.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import type { AgentRow } from '../agents/agents.tables.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import { mayHavePlaced, type PlaceCallRequest, type ProviderFailure } from '../providers/provider.interface.js';
import * as callsRepo from './calls.repository.js';
import type { CallRow } from './calls.tables.js';
import { newCallRow } from './call-row.js';
import type { DialOrigin } from './dial-origin.js';
import { beginDial, dialLost, dialPlaced, dialRefused, type DialSettings } from './dials.service.js';
import type { DialRow } from './dials.tables.js';

export interface DialDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly providers: ProviderRegistry;
  readonly dials: DialSettings;
  /** Told about each dial whose answer was lost (the dial job's wake-up). */
  readonly onDialLost?: () => void;
  /** Told about each new call and when to first look at it (the call monitor's prompt timer). */
  readonly onCallPlaced?: (callId: string, checkAt: Date) => void;
  /** Told how storing a placed call goes when the database was away at first (see `keepStoring`). */
  readonly onStoreRetry?: (event: { callId: string; stored: boolean; error?: unknown }) => void;
}

/** What is to be placed: the number, and the metadata passed to the agent. */
export interface CallToPlace {
  readonly to: string;
  readonly metadata: PlaceCallRequest['metadata'];
}

/**
 * How a dial went, for its asker to answer. `taken`: whether the origin took the stored call (false: it had
 * moved on meanwhile), undefined when the dial job stored it first or (`storing`) it could not be stored.
 */
export type DialAttempt =
  | { readonly kind: 'refused'; readonly dial: DialRow; readonly failure: ProviderFailure }
  | { readonly kind: 'lost'; readonly dial: DialRow; readonly failure: ProviderFailure }
  | { readonly kind: 'placed'; readonly dial: DialRow; readonly call: CallRow; readonly taken: boolean | undefined }
  | {
      readonly kind: 'storing';
      readonly dial: DialRow;
      readonly call: CallRow;
      readonly error: unknown;
      /** Settles once the call is stored (or storing it failed for another reason than the database being away); never rejects. */
      readonly taken: Promise<boolean | undefined>;
    };

/** Places one call for `origin` with `agent`, exactly once, whatever happens to the provider's answer. */
export async function dial(deps: DialDeps, origin: DialOrigin, agent: AgentRow, request: CallToPlace): Promise<DialAttempt> {
  const provider = deps.providers.forCall(agent, origin.apiKey.mode);
  const metadata = request.metadata === null ? null : JSON.stringify(request.metadata);
  const recorded = await beginDial(deps, origin, agent, provider.name, { to: request.to, metadata });
  const answer = await provider.placeCall({
    dialId: recorded.id,
    // Retell and Vapi know the agent by an id of their own; ElevenLabs' agent id is callgate's.
    agentId: agent.provider_agent_id ?? agent.agent_id,
    phoneNumberId: agent.phone_number_id,
    phoneNumberProvider: agent.phone_number_provider,
    to: request.to,
    metadata: request.metadata,
  });
  if (!answer.ok) {
    const failure = answer.error;
    if (!mayHavePlaced(failure)) {
      await dialRefused(deps.db, deps.clock, recorded, failure);
      return { kind: 'refused', dial: recorded, failure };
    }
    // The call may exist: never dialed again, never forgotten. The dial job finds out; the origin waits for it.
    origin.keep?.();
    try {
      await dialLost(deps.db, deps.clock, recorded, failure, origin.port);
      deps.onDialLost?.();
    } catch (error) {
      // Left `asking`, the dial is taken up by the job once its asker counts as dead: the answer stands.
      if (!isDatabaseUnavailable(error)) throw error;
    }
    return { kind: 'lost', dial: recorded, failure };
  }

  const now = deps.clock.now();
  const firstCheckAt = addMs(now, provider.firstCheckDelayMs);
  const call = newCallRow({
    conversationId: answer.value.conversationId,
    origin: recorded,
    dialId: recorded.id,
    createdAt: isoTimestamp(now),
    now,
    firstCheckAt,
    foundAfterLostAnswer: false,
    control: answer.value.control ?? null,
  });
  const store = () =>
    deps.db.transaction().execute(async (trx) => {
      // Resolved meanwhile by the dial job (this answer came after its asker was taken for dead): it stored the
      // call and its origin took it already.
      if (!(await dialPlaced(trx, deps.clock, recorded, call.id)) && (await callsRepo.findCallById(trx, call.id))) return undefined;
      await callsRepo.insertCall(trx, call);
      return origin.port.placed(trx, recorded, call);
    });
  try {
    const taken = await store();
    if (taken === undefined) origin.keep?.();
    else deps.onCallPlaced?.(call.id, firstCheckAt);
    return { kind: 'placed', dial: recorded, call, taken };
  } catch (error) {
    // The call exists at the provider now. Forgetting it would lose its outcome, and freeing its origin would
    // let a retry place a second call; so it is stored as soon as the database is back, the origin held meanwhile.
    if (!isDatabaseUnavailable(error)) throw error;
    origin.keep?.();
    return { kind: 'storing', dial: recorded, call, error, taken: keepStoring(deps, call, store, firstCheckAt) };
  }
}

/**
 * Stores a placed call once the database answers again, retrying with backoff for as long as the process
 * lives. A first attempt that failed may have committed before its connection dropped: a call already
 * there is done. An API request's key stays held meanwhile (its lock, CALLGATE_IDEMPOTENCY_LOCK_MS, bounds how
 * long a retry waits for it); once stored, a retry with the key replays the 201.
 */
async function keepStoring(
  deps: DialDeps,
  call: CallRow,
  store: () => Promise<boolean | undefined>,
  firstCheckAt: Date,
): Promise<boolean | undefined> {
  let taken: boolean | undefined;
  try {
    await retryWhileUnavailable(
      async () => {
        taken = (await callsRepo.findCallById(deps.db, call.id)) ? true : await store();
      },
      { onUnavailable: (error) => deps.onStoreRetry?.({ callId: call.id, stored: false, error }) },
    );
  } catch (error) {
    deps.onStoreRetry?.({ callId: call.id, stored: false, error });
    return undefined;
  }
  if (taken !== undefined) deps.onCallPlaced?.(call.id, firstCheckAt);
  deps.onStoreRetry?.({ callId: call.id, stored: true });
  return taken;
}
