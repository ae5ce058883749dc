import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { createTestDatabase } from '../../test/support/test-database.js';
import { serviceEnv } from '../child-process.js';
import { measure } from '../measure.js';
const kind = (process.argv[2] ?? 'floor') as 'floor' | 'app';
const dialect = (process.argv[3] ?? 'postgres') as 'sqlite' | 'postgres';
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-'));
const database = await createTestDatabase(dialect);
try {
  const env = serviceEnv('info', { CALLGATE_RATE_LIMIT_PER_MINUTE: '1000000000', CALLGATE_SIMULATOR_DELAY_MS: '3000', BENCH_KEYS: '1000', ...database.env });
  const file = `/tmp/exp/${kind}-${dialect}.cpuprofile`;
  const m = await measure({ label: kind, kind, env, dialect }, { durationS: 5, warmupS: 3, connections: 50 }, workDir, file);
  console.log(kind, Math.round(m.requestsPerSecond), 'req/s', file);
} finally {
  await database.drop();
}
