/**
 * Each test suite gets a database of its own: a fresh SQLite file, or a fresh PostgreSQL database made on
 * the server at CALLGATE_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres) and
 * dropped afterwards.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { DatabaseConfig } from '../../src/config.js';

export type Dialect = 'sqlite' | 'postgres';
export const dialects: readonly Dialect[] = ['sqlite', 'postgres'];

export const postgresAdminUrl = process.env.CALLGATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let postgresProbe: Promise<string | null> | undefined;

/** Null when PostgreSQL answers, else the reason it does not (used as the skip reason). */
export function postgresUnavailableReason(): Promise<string | null> {
  postgresProbe ??= (async () => {
    const client = new pg.Client({ connectionString: postgresAdminUrl, connectionTimeoutMillis: 15_000 });
    try {
      await client.connect();
      await client.query('select 1');
      return null;
    } catch (error) {
      return `PostgreSQL is not reachable at ${postgresAdminUrl.replace(/:[^:@/]*@/, ':***@')} (${(error as Error).message})`;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return postgresProbe;
}

export interface TestDatabase {
  readonly dialect: Dialect;
  readonly config: DatabaseConfig;
  /** Environment that points a child process at this database. */
  readonly env: Record<string, string>;
  drop(): Promise<void>;
}

function postgresUrlFor(database: string): string {
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function createTestDatabase(dialect: Dialect): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-test-'));
    return {
      dialect,
      config: { dialect: 'sqlite', file: path.join(dir, 'callgate.sqlite') },
      env: { CALLGATE_DATA_DIR: dir },
      drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `callgate_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = postgresUrlFor(name);
  return {
    dialect,
    config: { dialect: 'postgres', url },
    env: { DATABASE_URL: url },
    async drop() {
      const client = new pg.Client({ connectionString: postgresAdminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}
