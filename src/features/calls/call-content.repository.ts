/**
 * The SQL of what a provider kept of a call: its transcript and recording source (`call_content`) and the
 * analysis columns of `calls` that a late report fills and the retention purge empties.
 */
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { CallContentTable } from './calls.tables.js';

export type CallContentRow = CallContentTable;

/** Stores the content of calls that have just ended (a row per call, whatever the provider kept). */
export async function insertContents(db: Db, rows: readonly CallContentRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('call_content')
    .values([...rows])
    .onConflict((conflict) => conflict.column('call_id').doNothing())
    .execute();
}

export async function findContent(db: Db, callId: string): Promise<CallContentRow | undefined> {
  return db.selectFrom('call_content').selectAll().where('call_id', '=', callId).executeTakeFirst();
}

/** Whether the call's content names a recording at its provider (false without content, or after the purge). */
export async function hasRecordingSource(db: Db, callId: string): Promise<boolean> {
  const row = await db
    .selectFrom('call_content')
    .select('call_id')
    .where('call_id', '=', callId)
    .where('recording', 'is not', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** What a late report may fill of an ended call: each part only where it is still missing. */
export interface LateContent {
  readonly callId: string;
  readonly successful: number | null;
  /** The analysis data as JSON, or null when the report has none. */
  readonly data: string | null;
  readonly summary: string | null;
  readonly turns: string | null;
  readonly recording: string | null;
}

/**
 * Fills what an ended call still lacks from a report that came after its end (Retell's `call_analyzed`
 * after the look-up ended it, a second report), never replacing what it has: an analysis, a summary, a
 * transcript, a recording. Nothing once the purge has deleted its content (no row): what the operator
 * said to forget stays forgotten. Returns whether the call had content to fill.
 */
export async function mergeLateContent(db: Db, late: LateContent): Promise<boolean> {
  // Only the parts the report has are set, each from the column when it is there already (a parameter
  // beside its column, so PostgreSQL knows its type).
  const content = await db
    .updateTable('call_content')
    .set((eb) => ({
      turns: late.turns === null ? eb.ref('turns') : eb.fn.coalesce('turns', eb.val(late.turns)),
      recording: late.recording === null ? eb.ref('recording') : eb.fn.coalesce('recording', eb.val(late.recording)),
    }))
    .where('call_id', '=', late.callId)
    .executeTakeFirst();
  if (Number(content.numUpdatedRows) === 0) return false;
  const { successful, data, summary } = late;
  if (successful === null && data === null && summary === null) return true;
  await db
    .updateTable('calls')
    .set((eb) => ({
      ...(successful === null ? {} : { analysis_successful: eb.fn.coalesce('analysis_successful', eb.val(successful)) }),
      ...(data === null
        ? {}
        : { analysis_data: sql<string>`case when ${eb.ref('analysis_data')} = '{}' then ${data} else ${eb.ref('analysis_data')} end` }),
      ...(summary === null
        ? {}
        : {
            transcript_summary: sql<string>`case when ${eb.ref('transcript_summary')} = '' then ${summary} else ${eb.ref('transcript_summary')} end`,
          }),
    }))
    .where('id', '=', late.callId)
    .where('status', '<>', 'initiated')
    .execute();
  return true;
}

/** The ids of up to `limit` calls whose content was stored before `cutoff`, oldest first. */
export async function contentStoredBefore(db: Db, cutoff: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('call_content')
    .select('call_id')
    .where('stored_at', '<', cutoff)
    .orderBy('stored_at')
    .limit(limit)
    .execute();
  return rows.map((row) => row.call_id);
}

/** Deletes these calls' transcripts, recording sources and analysis data; their summary and judgement stay. */
export async function purgeContent(db: Db, callIds: readonly string[]): Promise<void> {
  if (callIds.length === 0) return;
  await db.updateTable('calls').set({ analysis_data: null }).where('id', 'in', callIds).execute();
  await db.deleteFrom('call_content').where('call_id', 'in', callIds).execute();
}
