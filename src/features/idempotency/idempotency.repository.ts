import { sql, type ExpressionBuilder } from 'kysely';
import { dialectOf, type Db } from '../../db/database.js';
import {
  inOneTransaction,
  oncePerStatement,
  preparedQuery,
  withoutNames,
  type InsertStatement,
  type PreparedQuery,
  type SelectStatement,
} from '../../db/prepared.js';
import type { Database } from '../../db/schema.js';
import type { IdempotencyKeysTable, IdempotencyRow } from './idempotency.tables.js';

export interface IdempotencyScope {
  readonly apiKeyId: string;
  readonly route: string;
  readonly key: string;
}

/** Inserts an in-flight record unless one exists; true when this request now holds the key. */
export async function insertInFlight(db: Db, row: IdempotencyKeysTable): Promise<boolean> {
  const result = await insertInFlightQuery(db, row);
  return Number(result.numAffectedRows ?? 0n) > 0;
}

function claimInsert(db: Db, p: IdempotencyKeysTable) {
  return db
    .insertInto('idempotency_keys')
    .values({
      api_key_id: p.api_key_id,
      route: p.route,
      idempotency_key: p.idempotency_key,
      request_hash: p.request_hash,
      state: p.state,
      owner: p.owner,
      response_status: p.response_status,
      response_body: p.response_body,
      response_headers: p.response_headers,
      locked_until: p.locked_until,
      expires_at: p.expires_at,
      created_at: p.created_at,
    })
    .onConflict((oc) => oc.columns(['api_key_id', 'route', 'idempotency_key']).doNothing());
}

// Prepared, like the completion below: every POST with an Idempotency-Key runs both.
const insertInFlightQuery = preparedQuery('idempotency claim', claimInsert);

/** A route's read, run with the claim of its key: its statement and its parameters. */
export interface ReadWithClaim<P extends object, Row> {
  readonly statement: SelectStatement<P, Row>;
  readonly params: P;
}

/**
 * `insertInFlight` with a read the route needs whichever way the claim goes. On PostgreSQL one statement
 * (the insert in a data-modifying WITH, the read beside it, seeing the same snapshot): a created resource
 * then waits for one round trip less, and sends one statement less. On SQLite, where a statement costs no
 * round trip, the insert and then the read.
 */
export async function insertInFlightWithRead<P extends object, Row>(
  db: Db,
  row: IdempotencyKeysTable,
  read: ReadWithClaim<P, Row>,
): Promise<{ readonly inserted: boolean; readonly rows: readonly Row[] }> {
  if (dialectOf(db) !== 'postgres') {
    const inserted = await insertInFlight(db, row);
    return { inserted, rows: await runRead(db, read) };
  }
  const { rows } = await claimWithReadQuery(read.statement)(db, { ...row, ...read.params });
  // The count of inserted rows is on every row; the read's own rows are those with its columns (a left join).
  const inserted = Number(rows[0]?.idempotency_claimed ?? 0) > 0;
  return {
    inserted,
    rows: rows.filter((r) => r.idempotency_read === 1).map(({ idempotency_claimed, idempotency_read, ...own }) => own as Row),
  };
}

/** A route's read alone, for a request that claims no key. */
export async function runRead<P extends object, Row>(db: Db, read: ReadWithClaim<P, Row>): Promise<readonly Row[]> {
  return (await preparedRead(read.statement)(db, read.params)).rows;
}

type ClaimWithReadRow = Record<string, unknown> & { idempotency_claimed: number | string; idempotency_read: number | null };

// The names of the claim's parameters, which a read's parameters must not use.
const claimNames = new Set(
  Object.keys({
    api_key_id: 0,
    route: 0,
    idempotency_key: 0,
    request_hash: 0,
    state: 0,
    owner: 0,
    response_status: 0,
    response_body: 0,
    response_headers: 0,
    locked_until: 0,
    expires_at: 0,
    created_at: 0,
  } satisfies Record<keyof IdempotencyKeysTable, 0>),
);

// Prepared once per read statement: every created resource with a key runs one of them.
const preparedReads = oncePerStatement((statement: SelectStatement<object, unknown>) => preparedQuery(statement.name || 'read', statement));

function preparedRead<P extends object, Row>(statement: SelectStatement<P, Row>): PreparedQuery<P, Row> {
  return preparedReads(statement as SelectStatement<object, unknown>) as unknown as PreparedQuery<P, Row>;
}

const claimWithReadQueries = oncePerStatement((statement: SelectStatement<object, unknown>) => {
  const name = statement.name || 'read';
  return preparedQuery(`idempotency claim, ${name}`, (db, p: IdempotencyKeysTable) =>
    db
      .with('claim', () => claimInsert(db, p).returning(sql<number>`1`.as('one')))
      .with('route_read', () => statement(db, withoutNames(name, p, claimNames)).select(sql<number>`1`.as('idempotency_read')))
      .selectFrom(sql<{ idempotency_claimed: number }>`(select count(*)::int as idempotency_claimed from claim)`.as('claimed'))
      .leftJoin('route_read', (join) => join.onTrue())
      .selectAll('route_read')
      .select('claimed.idempotency_claimed'),
  ) as PreparedQuery<IdempotencyKeysTable, ClaimWithReadRow>;
});

function claimWithReadQuery<P extends object>(
  statement: SelectStatement<P, unknown>,
): PreparedQuery<IdempotencyKeysTable & P, ClaimWithReadRow> {
  return claimWithReadQueries(statement as SelectStatement<object, unknown>) as PreparedQuery<IdempotencyKeysTable & P, ClaimWithReadRow>;
}

export async function findRecord(db: Db, scope: IdempotencyScope): Promise<IdempotencyRow | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('api_key_id', '=', scope.apiKeyId)
    .where('route', '=', scope.route)
    .where('idempotency_key', '=', scope.key)
    .executeTakeFirst();
}

/** Takes over an in-flight record whose holder stopped answering (its lock expired). */
export async function takeOver(
  db: Db,
  scope: IdempotencyScope,
  previousOwner: string,
  next: { owner: string; locked_until: string; request_hash: string },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set(next)
    .where('api_key_id', '=', scope.apiKeyId)
    .where('route', '=', scope.route)
    .where('idempotency_key', '=', scope.key)
    .where('state', '=', 'in_progress')
    .where('owner', '=', previousOwner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export function completionParams(
  scope: IdempotencyScope,
  owner: string,
  response: { status: number; body: string; headers: string; expiresAt: string },
): CompletionParams {
  return {
    apiKeyId: scope.apiKeyId,
    route: scope.route,
    key: scope.key,
    owner,
    responseStatus: response.status,
    responseBody: response.body,
    responseHeaders: response.headers,
    expiresAt: response.expiresAt,
  };
}

export interface CompletionParams extends IdempotencyScope {
  readonly owner: string;
  readonly responseStatus: number;
  readonly responseBody: string;
  readonly responseHeaders: string;
  readonly expiresAt: string;
}

/** What completing a record sets: the stored response and the end of its 24 hours. */
export function completedColumns(p: CompletionParams) {
  return {
    state: 'completed' as const,
    response_status: p.responseStatus,
    response_body: p.responseBody,
    response_headers: p.responseHeaders,
    expires_at: p.expiresAt,
  };
}

/** The in-flight record of this scope that `owner` holds. */
export function heldBy(eb: ExpressionBuilder<Database, 'idempotency_keys'>, p: CompletionParams) {
  return eb.and([
    eb('api_key_id', '=', p.apiKeyId),
    eb('route', '=', p.route),
    eb('idempotency_key', '=', p.key),
    eb('owner', '=', p.owner),
    eb('state', '=', 'in_progress'),
  ]);
}

const markCompletedQuery = preparedQuery('idempotency complete', (db, p: CompletionParams) =>
  db
    .updateTable('idempotency_keys')
    .set(completedColumns(p))
    .where((eb) => heldBy(eb, p)),
);

/**
 * Runs a resource's insert and completes the key its request holds, atomically: the key is completed only
 * if the row was inserted, and neither happens without the other. On PostgreSQL one statement (the insert
 * in a data-modifying WITH), since BEGIN, two statements and COMMIT cost four round trips on the path of
 * every created resource; SQLite has no INSERT inside a WITH, and its transaction costs no round trips.
 * The resource's parameters must not use the completion's names (compiling the statement checks it).
 */
export async function insertCompletingKey<P extends object>(
  db: Db,
  statement: InsertStatement<P>,
  params: P,
  completion: CompletionParams,
): Promise<void> {
  const queries = completingQueries(statement);
  if (dialectOf(db) === 'postgres') {
    await queries.inOneStatement(db, { ...params, ...completion });
  } else {
    await inOneTransaction(db, [queries.insert.bind(db, params), markCompletedQuery.bind(db, completion)]);
  }
}

// The names the completion adds to the parameters of the one statement on PostgreSQL.
const completionNames = new Set(
  Object.keys({
    apiKeyId: 0,
    route: 0,
    key: 0,
    owner: 0,
    responseStatus: 0,
    responseBody: 0,
    responseHeaders: 0,
    expiresAt: 0,
  } satisfies Record<keyof CompletionParams, 0>),
);

interface CompletingQueries<P> {
  readonly insert: PreparedQuery<P, unknown>;
  readonly inOneStatement: PreparedQuery<P & CompletionParams, unknown>;
}

// Prepared once per insert statement (and dialect): every created resource with a key runs one of them.
const completingQueriesOf = oncePerStatement((statement: InsertStatement<object>): CompletingQueries<object> => {
  const name = statement.name || 'insert';
  return {
    insert: preparedQuery(name, (db, p: object) => statement(db, withoutNames(name, p, completionNames))),
    inOneStatement: preparedQuery(`${name}, complete its idempotency key`, (db, p: CompletionParams) =>
      db
        .with('inserted', () => statement(db, withoutNames(name, p, completionNames)).returning(sql<number>`1`.as('one')))
        .updateTable('idempotency_keys')
        .set(completedColumns(p))
        .where((eb) => eb.and([heldBy(eb, p), eb.exists(eb.selectFrom('inserted').select('one'))])),
    ),
  };
});

function completingQueries<P extends object>(statement: InsertStatement<P>): CompletingQueries<P> {
  return completingQueriesOf(statement as InsertStatement<object>) as unknown as CompletingQueries<P>;
}

/** Deletes a record: an in-flight one held by `owner`, or a completed one that expired. */
export async function deleteRecord(
  db: Db,
  scope: IdempotencyScope,
  condition: { owner: string } | { expiredBefore: string },
): Promise<void> {
  let query = db
    .deleteFrom('idempotency_keys')
    .where('api_key_id', '=', scope.apiKeyId)
    .where('route', '=', scope.route)
    .where('idempotency_key', '=', scope.key);
  query =
    'owner' in condition
      ? query.where('owner', '=', condition.owner).where('state', '=', 'in_progress')
      : query.where('state', '=', 'completed').where('expires_at', '<=', condition.expiredBefore);
  await query.execute();
}

/** Removes at most `limit` completed records past their 24 hours and in-flight ones abandoned long ago. */
export async function purgeExpired(db: Db, now: string, abandonedBefore: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where((eb) =>
      eb(
        eb.refTuple('api_key_id', 'route', 'idempotency_key'),
        'in',
        eb
          .selectFrom('idempotency_keys')
          .select(['api_key_id', 'route', 'idempotency_key'])
          .where((inner) =>
            inner.or([
              inner.and([inner('state', '=', 'completed'), inner('expires_at', '<=', now)]),
              inner.and([inner('state', '=', 'in_progress'), inner('locked_until', '<=', abandonedBefore)]),
            ]),
          )
          .limit(limit)
          .$asTuple('api_key_id', 'route', 'idempotency_key'),
      ),
    )
    // An in-flight record that was completed or taken over since the select is not expired any more.
    .where((eb) =>
      eb.or([
        eb.and([eb('state', '=', 'completed'), eb('expires_at', '<=', now)]),
        eb.and([eb('state', '=', 'in_progress'), eb('locked_until', '<=', abandonedBefore)]),
      ]),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
