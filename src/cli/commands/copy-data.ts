import { loadConfig } from '../../config.js';
import { isoTimestamp } from '../../lib/clock.js';
import { requiredOption, UsageError } from '../args.js';
import type { ToolCommand } from '../command.js';
import { formatTable } from '../output.js';

const toExample = 'postgres://user:password@host:5432/database';

/**
 * Where the copy went, for people and logs: host, port and database, never the user's password (nor the rest
 * of the URL, whose parameters may carry one too).
 */
function describeTarget(url: URL): { host: string; port: number; database: string } {
  return { host: url.hostname || 'localhost', port: Number(url.port || 5432), database: decodeURIComponent(url.pathname.slice(1)) };
}

/** The --to value as a PostgreSQL URL; a usage error otherwise, which names only its scheme (the rest may hold a password). */
function targetUrl(value: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || !/^postgres(ql)?:$/.test(url.protocol)) {
    const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(value)?.[0];
    throw new UsageError(
      `option --to must be a PostgreSQL URL such as ${toExample}, got ${scheme ? `a "${scheme}" URL` : 'no URL'}; the database should be new and empty`,
    );
  }
  if (url.pathname.length <= 1) throw new UsageError(`option --to must name the database: ${toExample}`);
  return url;
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * `callgate copy-data --to postgres://…`: copies the SQLite database of the current settings into an empty
 * PostgreSQL database (src/db/copy-to-postgres.ts), the way to move to several processes. A tool command: it
 * must not migrate the source on the way in, and it opens both databases itself.
 */
export const copyDataCommand: ToolCommand = {
  name: 'copy-data',
  summary: 'Copy everything from the SQLite database into an empty PostgreSQL database (stop the server first)',
  options: {
    to: { value: 'URL', description: `The PostgreSQL database to fill, new and empty: ${toExample}`, required: true },
  },
  prepare(args) {
    const to = targetUrl(requiredOption(args, 'to'));
    return async ({ env, clock, progress }) => {
      const config = loadConfig(env);
      if (config.database.dialect !== 'sqlite') {
        throw new Error(
          'callgate copy-data copies from the SQLite database, but DATABASE_URL is set, so the settings name a PostgreSQL database: run it with the settings the SQLite server used (DATABASE_URL unset, in the environment and in .env, and its CALLGATE_DATA_DIR). Between PostgreSQL databases use pg_dump and pg_restore',
        );
      }
      const target = describeTarget(to);
      const targetName = `${target.host}:${target.port}/${target.database}`;
      const startedAt = Date.now();
      // Loaded only here: --help needs no database driver.
      const { copyToPostgres } = await import('../../db/copy-to-postgres.js');
      const result = await copyToPostgres({
        sourceFile: config.database.file,
        targetUrl: to.toString(),
        now: isoTimestamp(clock.now()),
        step: progress,
        progress: (table, copied, total) => progress(`${table}: ${count(copied)} of ${count(total)} rows`),
      });
      const durationMs = Date.now() - startedAt;
      const totalRows = result.tables.reduce((sum, table) => sum + table.copiedRows, 0);
      const rows = result.tables.map((table) => [
        table.table,
        count(table.copiedRows),
        table.leftOutRows === 0 ? '' : `${count(table.leftOutRows)}: ${table.leftOutReason}`,
      ]);
      const text = [
        `Copied ${config.database.file} to PostgreSQL at ${targetName} (schema ${result.schemaVersion}) in ${(durationMs / 1000).toFixed(1)} s.`,
        '',
        formatTable(['table', 'rows', 'not copied'], [...rows, ['total', count(totalRows), '']]),
        '',
        'Every count was checked on the target before the commit. Next: set DATABASE_URL to this database on every process, then start callgate; keep the SQLite file until you no longer need to go back.',
      ].join('\n');
      return {
        json: {
          source: { file: config.database.file },
          target,
          schema_version: result.schemaVersion,
          migrations_applied: result.appliedToTarget,
          tables: result.tables.map((table) => ({
            table: table.table,
            source_rows: table.sourceRows,
            copied_rows: table.copiedRows,
            not_copied_rows: table.leftOutRows,
            not_copied_reason: table.leftOutReason,
          })),
          total_rows: totalRows,
          duration_ms: durationMs,
        },
        text,
      };
    };
  },
};
