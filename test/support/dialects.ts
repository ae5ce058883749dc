/**
 * Runs a suite once per database. Where PostgreSQL cannot be reached the PostgreSQL run is skipped with a
 * one-line reason, never passed silently; with CALLGATE_TEST_REQUIRE_POSTGRES=1 (as in CI) it fails instead.
 */
import { describe, it } from 'node:test';
import { dialects, postgresUnavailableReason, type Dialect } from './test-database.js';

const requirePostgres = process.env.CALLGATE_TEST_REQUIRE_POSTGRES === '1';
const only = process.env.CALLGATE_TEST_DIALECT as Dialect | undefined;

export async function forEachDialect(title: string, suite: (dialect: Dialect) => void): Promise<void> {
  for (const dialect of dialects) {
    if (only && only !== dialect) continue;
    let skip: string | false = false;
    if (dialect === 'postgres') {
      const reason = await postgresUnavailableReason();
      if (reason && requirePostgres) throw new Error(`CALLGATE_TEST_REQUIRE_POSTGRES=1 but ${reason}`);
      if (reason) skip = reason;
    }
    if (skip) {
      // A skipped describe is not counted in the summary's "skipped"; a skipped test in it is.
      describe(`${title} [${dialect}]`, () => it(`runs on ${dialect}`, { skip }));
      continue;
    }
    describe(`${title} [${dialect}]`, () => suite(dialect));
  }
}
