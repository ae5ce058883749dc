/**
 * Queries of the hot path (every POST /v1/calls runs them), built and compiled by Kysely once per dialect
 * instead of on every run: in the benchmark, building and compiling queries was a fifth of the CPU time
 * of a created call. The query is written with the ordinary, typed Kysely builder; it is compiled with a
 * placeholder in place of each argument, and each run swaps the arguments into the compiled parameters.
 * The SQL text stays the same, so SQLite's statement cache (database.ts) and PostgreSQL see the same query.
 * A run on a process's own instance (not a transaction) skips Kysely's executor: on SQLite it runs on the
 * connection at once when no transaction is under way (`DirectSqlite`), on PostgreSQL on a connection of the
 * pool (`DirectPostgres`), where it is also prepared once per connection.
 */
import {
  CompiledQuery,
  type Compilable,
  type InsertQueryBuilder,
  type InsertResult,
  type QueryResult,
  type SelectQueryBuilder,
} from 'kysely';
import { createHash } from 'node:crypto';
import { directPostgresOf, directSqliteOf, type Db } from './database.js';

type Slot = { readonly param: string } | { readonly value: unknown };

interface Compiled {
  readonly sql: string;
  readonly query: CompiledQuery['query'];
  readonly slots: readonly Slot[];
  /** PostgreSQL's name for the statement (see `DirectPostgres`). */
  readonly statementName: string;
}

const marker = '\u0000callgate-prepared:';

/** A prepared query: run it with `db` (or a transaction) and its parameters, or `bind` them for `inOneTransaction`. */
export interface PreparedQuery<Params, Row> {
  (db: Db, params: Params): Promise<QueryResult<Row>>;
  /** The compiled statement with these parameters, for `inOneTransaction`. */
  bind(db: Db, params: Params): CompiledQuery<Row>;
}

/**
 * `build` gets the parameters as an object and must hand each field it reads to Kysely as a value (in
 * where, set, values or limit), never to `sql.raw` or as an identifier: compiling checks that every field
 * read became a parameter, and throws otherwise.
 */
export function preparedQuery<Params extends object, Row>(
  name: string,
  build: (db: Db, params: Params) => Compilable<Row>,
): PreparedQuery<Params, Row> {
  // Keyed by the dialect's adapter class: the SQL differs by dialect, not by connection or transaction.
  const cache = new Map<unknown, Compiled>();

  function compile(db: Db): Compiled {
    const read = new Set<string>();
    const placeholders = new Proxy({} as Params, {
      get(_target, key) {
        if (typeof key !== 'string') return undefined;
        read.add(key);
        return marker + key;
      },
    });
    const compiled = build(db, placeholders).compile();
    const bound = new Set<string>();
    const slots = compiled.parameters.map((parameter): Slot => {
      if (typeof parameter !== 'string' || !parameter.startsWith(marker)) return { value: parameter };
      const param = parameter.slice(marker.length);
      bound.add(param);
      return { param };
    });
    if (bound.size !== read.size || compiled.sql.includes(marker)) {
      throw new Error(`prepared query "${name}": every parameter must be passed to Kysely as a value`);
    }
    const statementName = `cg_${createHash('sha256').update(compiled.sql).digest('hex').slice(0, 24)}`;
    return { sql: compiled.sql, query: compiled.query, slots, statementName };
  }

  function compiledFor(db: Db): Compiled {
    const adapter = db.getExecutor().adapter.constructor;
    let compiled = cache.get(adapter);
    if (!compiled) {
      compiled = compile(db);
      cache.set(adapter, compiled);
    }
    return compiled;
  }

  function parametersOf(compiled: Compiled, params: Params): unknown[] {
    const values = params as Record<string, unknown>;
    return compiled.slots.map((slot) => ('param' in slot ? values[slot.param] : slot.value));
  }

  function bind(db: Db, params: Params): CompiledQuery<Row> {
    const compiled = compiledFor(db);
    return { ...CompiledQuery.raw(compiled.sql, parametersOf(compiled, params)), query: compiled.query };
  }

  const run = async (db: Db, params: Params): Promise<QueryResult<Row>> => {
    const direct = directSqliteOf(db);
    if (direct?.free()) {
      const compiled = compiledFor(db);
      return direct.execute<Row>(compiled.sql, parametersOf(compiled, params));
    }
    const postgres = directPostgresOf(db);
    if (postgres) {
      const compiled = compiledFor(db);
      return postgres.execute<Row>(compiled.sql, parametersOf(compiled, params), compiled.statementName);
    }
    return db.executeQuery<Row>(bind(db, params));
  };
  return Object.assign(run, { bind });
}

/**
 * Runs statements as one transaction (as part of `db` when it is a transaction). On SQLite, when no transaction
 * is under way, that is BEGIN, the statements and COMMIT in one synchronous step on the connection (nothing
 * else can run in between); otherwise a Kysely transaction, which waits for its turn on the connection.
 */
export async function inOneTransaction(db: Db, statements: readonly CompiledQuery[]): Promise<void> {
  const direct = directSqliteOf(db);
  if (direct?.free()) {
    direct.transaction(() => {
      for (const statement of statements) direct.execute(statement.sql, statement.parameters);
    });
    return;
  }
  const runAll = async (trx: Db) => {
    for (const statement of statements) await trx.executeQuery(statement);
  };
  // Inside a transaction already, the statements are part of it.
  await (db.isTransaction ? runAll(db) : db.transaction().execute(runAll));
}

/**
 * A resource's INSERT as a builder of its parameters, for a prepared query to compile once (so it must read
 * its parameters as `preparedQuery` says). Other features wrap it, e.g. with the completion of an
 * idempotency key; the `any` lets a test insert into a table of its own.
 */
// biome-ignore lint/suspicious/noExplicitAny: the statement may insert into any table, a test's own included
export type InsertStatement<P> = (db: Db, params: P) => InsertQueryBuilder<any, any, InsertResult>;

/**
 * A SELECT as a builder of its parameters, compiled once as `preparedQuery` says, for another feature to run
 * with a statement of its own (an Idempotency-Key's claim runs a route's read so: see `claimWithRead`).
 */
// biome-ignore lint/suspicious/noExplicitAny: the read may select from any table
export type SelectStatement<P, Row> = (db: Db, params: P) => SelectQueryBuilder<any, any, Row>;

/**
 * The parameters as one of two statements compiled into one may read them: a read of a name the other
 * statement uses is a mistake (both would get one value), caught when the statement is compiled.
 */
export function withoutNames<P extends object>(name: string, params: P, taken: ReadonlySet<string>): P {
  return new Proxy(params, {
    get(target, field, receiver) {
      if (typeof field === 'string' && taken.has(field)) {
        throw new Error(`${name}: the parameter ${field} is the other statement's; name it otherwise`);
      }
      return Reflect.get(target, field, receiver) as unknown;
    },
  });
}

/**
 * `make` run once per statement function, on its first use, its result kept as long as the function lives:
 * a feature that wraps another's statement (an idempotency key's claim or completion) compiles it once.
 */
export function oncePerStatement<S extends object, V>(make: (statement: S) => V): (statement: S) => V {
  const made = new WeakMap<S, V>();
  return (statement) => {
    let value = made.get(statement);
    if (value === undefined) {
      value = make(statement);
      made.set(statement, value);
    }
    return value;
  };
}
