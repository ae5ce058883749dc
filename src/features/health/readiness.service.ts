/**
 * Readiness (`GET /readyz`): can this process do its work now? The database answers, none of the migrations
 * this code knows is pending, and, in a process of the worker role, every job of the worker has ended a pass
 * lately (in an API-only process that check is skipped). A database that a newer version migrated while this
 * process ran keeps it ready, with a note: in a rolling deploy `callgate migrate` runs before the old
 * processes are replaced, and they serve beside the new schema until then (a load balancer that dropped them
 * all would stop the service); a process that starts against such a database refuses to start instead.
 * Liveness (`/healthz`) stays the cheaper question of whether the process answers at all.
 */
import { sql } from 'kysely';
import { migrationState, type Db } from '../../db/database.js';
import type { JobBeat } from '../../jobs/job-runner.js';
import type { Clock } from '../../lib/clock.js';

export interface ReadinessDeps {
  readonly db: Db;
  readonly clock: Clock;
  /** Present in a process of the worker role: its jobs' last passes. */
  readonly jobs: { beats(): JobBeat[] } | undefined;
  /** How long the database may take to answer before it counts as unreachable. */
  readonly databaseTimeoutMs?: number;
}

export interface Check {
  readonly ok: boolean;
  /** Not run here: what it checks is no part of this process (the worker's jobs in an API-only process). */
  readonly skipped?: boolean;
  /** What is wrong, in words an operator can act on; absent when ok. */
  readonly reason?: string;
  /** Something an operator should know that does not make the process unready. */
  readonly note?: string;
}

export interface Readiness {
  readonly ready: boolean;
  readonly checks: { readonly database: Check; readonly migrations: Check; readonly worker: Check };
}

const defaultDatabaseTimeoutMs = 2_000;

/**
 * A job beats while its last good pass (or its start) is within twice its interval plus half a minute: a
 * slow pass or two is no outage, a job stuck in a pass or failing every pass is.
 */
export function beatBoundMs(intervalMs: number): number {
  return 2 * intervalMs + 30_000;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const text = (typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message).slice(0, 300);
  // Driver messages end without a full stop; /readyz joins the failing checks' reasons into one text.
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

async function databaseCheck(deps: ReadinessDeps): Promise<Check> {
  try {
    await withTimeout(sql`select 1`.execute(deps.db), deps.databaseTimeoutMs ?? defaultDatabaseTimeoutMs, 'the database');
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: `The database is unreachable: ${reasonOf(error)}` };
  }
}

async function migrationsCheck(deps: ReadinessDeps): Promise<Check> {
  try {
    const state = await withTimeout(migrationState(deps.db), deps.databaseTimeoutMs ?? defaultDatabaseTimeoutMs, 'the database');
    if (state.pending.length > 0) {
      return { ok: false, reason: `Migrations not applied yet: ${state.pending.join(', ')}. Run the migrations, then this check passes.` };
    }
    if (state.unknown.length > 0) {
      return {
        ok: true,
        note: `The database has migrations this version does not know (${state.unknown.join(', ')}): a newer callgate migrated it; finish deploying that version (this process would not start again).`,
      };
    }
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: `The migrations could not be read: ${reasonOf(error)}` };
  }
}

function workerCheck(deps: ReadinessDeps): Check {
  if (!deps.jobs) {
    // Not a fault: an API-only process is ready without a worker; the worker processes answer for their jobs.
    return {
      ok: true,
      skipped: true,
      note: 'No worker runs in this process (CALLGATE_ROLES=api): the /readyz of the worker processes checks their jobs.',
    };
  }
  const beats = deps.jobs.beats();
  if (beats.length === 0) return { ok: false, reason: 'The worker role is configured but its jobs are not running.' };
  const now = deps.clock.now().getTime();
  const silent = beats.flatMap((beat) => {
    const last = (beat.lastPassAt ?? beat.startedAt).getTime();
    const ageMs = now - last;
    return ageMs > beatBoundMs(beat.intervalMs)
      ? [`${beat.name} (no pass ended well for ${Math.round(ageMs / 1000)} s; every ${Math.round(beat.intervalMs / 1000)} s expected)`]
      : [];
  });
  if (silent.length === 0) return { ok: true };
  return { ok: false, reason: `Worker jobs not beating: ${silent.join('; ')}. The server log says why their passes fail.` };
}

export async function checkReadiness(deps: ReadinessDeps): Promise<Readiness> {
  const database = await databaseCheck(deps);
  const migrations: Check = database.ok ? await migrationsCheck(deps) : { ok: false, reason: 'Not checked: the database is unreachable.' };
  const worker = workerCheck(deps);
  return { ready: database.ok && migrations.ok && worker.ok, checks: { database, migrations, worker } };
}
