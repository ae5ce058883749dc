/** The statements of `dials` and `held_outcomes`: record a dial, move it on, claim the open ones, keep early outcomes. */
import { sql } from 'kysely';
import { claimRows } from '../../db/claim.js';
import type { Db } from '../../db/database.js';
import {
  type DialRow,
  type DialsTable,
  type DialState,
  type HeldOutcomeRow,
  type HeldOutcomesTable,
  openDialStates,
} from './dials.tables.js';

export async function insertDial(db: Db, row: DialsTable): Promise<void> {
  await db.insertInto('dials').values(row).execute();
}

export async function findDial(db: Db, id: string): Promise<DialRow | undefined> {
  return db.selectFrom('dials').selectAll().where('id', '=', id).executeTakeFirst();
}

/** What moving a dial on writes: its state and the fields of that state, with one step more of history. */
export interface DialChange {
  readonly state: DialState;
  readonly step: string;
  readonly at: string;
  readonly callId?: string;
  readonly dueAt?: string;
  readonly looks?: number;
}

/** How many dials of a batch recipient ended as not placed (lost answers the provider lists no call for). */
export async function countNotPlacedOfRecipient(db: Db, recipientId: string): Promise<number> {
  const row = await db
    .selectFrom('dials')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('recipient_id', '=', recipientId)
    .where('state', '=', 'not_placed')
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Moves the dial on, only from one of `from` (so an asker and the job, or two workers, never both resolve
 * it); the step is appended to its history in the same statement. Returns whether it moved.
 */
export async function moveDial(db: Db, id: string, from: readonly DialState[], change: DialChange): Promise<boolean> {
  const step = JSON.stringify({ at: change.at, step: change.step });
  // The history is a JSON array: the step goes in before its closing bracket (the same SQL on both dialects).
  const history = sql<string>`case when history = '[]' then ${`[${step}]`} else substr(history, 1, length(history) - 1) || ${`,${step}]`} end`;
  const result = await db
    .updateTable('dials')
    .set({
      state: change.state,
      updated_at: change.at,
      history,
      ...(change.callId === undefined ? {} : { call_id: change.callId }),
      ...(change.dueAt === undefined ? {} : { due_at: change.dueAt }),
      ...(change.looks === undefined ? {} : { looks: change.looks }),
    })
    .where('id', '=', id)
    .where('state', 'in', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Claims open dials that are due: `asking` ones whose asker is taken for dead, `checking` ones whose next
 * look has come. The claim moves `due_at` to `leaseUntil`, so no other worker takes them meanwhile; the
 * look then sets when the next one is due.
 */
export async function claimDueDials(db: Db, now: string, leaseUntil: string, limit: number): Promise<DialRow[]> {
  const rows = await claimRows(db, {
    table: 'dials',
    due: (eb) => eb.and([eb('state', 'in', openDialStates), eb('due_at', '<=', now)]),
    orderBy: 'due_at',
    limit,
    set: { due_at: leaseUntil },
  })
    .returningAll()
    .execute();
  return rows as DialRow[];
}

/** The open dials' count and the oldest one's asking time (the metrics). */
export async function openDialsSummary(db: Db): Promise<{ open: number; oldestAskedAt: string | null }> {
  const row = await db
    .selectFrom('dials')
    .select((eb) => [eb.fn.countAll<number | string>().as('open'), eb.fn.min('asked_at').as('oldest')])
    .where('state', 'in', openDialStates)
    .executeTakeFirstOrThrow();
  return { open: Number(row.open), oldestAskedAt: (row.oldest as string | null) ?? null };
}

/** Keeps an outcome for a call not stored yet; a second report of the same call changes nothing. */
export async function holdOutcome(db: Db, row: HeldOutcomesTable): Promise<void> {
  await db
    .insertInto('held_outcomes')
    .values(row)
    .onConflict((oc) => oc.columns(['provider', 'conversation_id']).doNothing())
    .execute();
}

/** An outcome held for this dial (its report named the dial id). */
export async function heldOutcomeOfDial(db: Db, dialId: string): Promise<HeldOutcomeRow | undefined> {
  return db.selectFrom('held_outcomes').selectAll().where('dial_id', '=', dialId).executeTakeFirst();
}

/** Held outcomes whose call is stored now, at most `limit`. */
export async function heldOutcomesWithCall(db: Db, limit: number): Promise<(HeldOutcomeRow & { call_id: string })[]> {
  return db
    .selectFrom('held_outcomes as h')
    .innerJoin('calls as c', (join) =>
      join.onRef('c.provider', '=', 'h.provider').onRef('c.provider_conversation_id', '=', 'h.conversation_id'),
    )
    .selectAll('h')
    .select('c.id as call_id')
    .limit(limit)
    .execute();
}

export async function deleteHeldOutcome(db: Db, provider: string, conversationId: string): Promise<void> {
  await db
    .deleteFrom('held_outcomes')
    .where('provider', '=', provider as HeldOutcomeRow['provider'])
    .where('conversation_id', '=', conversationId)
    .execute();
}

/** Drops outcomes held since before `before` whose call never came (a conversation callgate did not place). */
export async function purgeHeldOutcomes(db: Db, before: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('held_outcomes')
    .where((eb) =>
      eb(
        eb.refTuple('provider', 'conversation_id'),
        'in',
        eb
          .selectFrom('held_outcomes')
          .select(['provider', 'conversation_id'])
          .where('received_at', '<', before)
          .limit(limit)
          .$asTuple('provider', 'conversation_id'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Brings a checked dial's next look forward to `now` (a report naming it came). */
export async function lookNow(db: Db, id: string, now: string): Promise<void> {
  await db
    .updateTable('dials')
    .set({ due_at: now })
    .where('id', '=', id)
    .where('state', '=', 'checking')
    .where('due_at', '>', now)
    .execute();
}
