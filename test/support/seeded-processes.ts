/**
 * callgate as real server processes on one seeded database (an account with a simulator agent, an ElevenLabs
 * agent and a live key): for the tests of what holds across processes and through a kill -9.
 */
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { seedAccount, testEnvDefaults, type SeededAccount } from './test-app.js';
import { createTestDatabase, type Dialect, type TestDatabase } from './test-database.js';

/** A database with a seeded account (a simulator agent, an ElevenLabs agent and a live key), and its handle. */
export async function seededDatabase(dialect: Dialect): Promise<{ database: TestDatabase; handle: DatabaseHandle; seed: SeededAccount }> {
  const database = await createTestDatabase(dialect, { migrated: true });
  const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
  try {
    const seed = await seedAccount(services);
    await upsertAgent(services.db, services.clock, {
      accountId: seed.accountId,
      agentId: 'agent_el_twilio',
      name: 'ElevenLabs',
      provider: 'elevenlabs',
      phoneNumberId: 'phnum_twilio_1',
      phoneNumberProvider: 'twilio',
    });
    return { database, handle: openDatabase(database.config), seed };
  } finally {
    await services.close();
  }
}

export async function request(
  method: 'GET' | 'POST',
  url: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, any> }> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

export function processesOf(): { start(env: Record<string, string>): Promise<ServerProcess>; stopAll(): Promise<void> } {
  const running = new Set<ServerProcess>();
  return {
    async start(env) {
      const server = await startServerProcess({ env });
      running.add(server);
      return server;
    },
    async stopAll() {
      await Promise.all([...running].map((server) => server.stop()));
      running.clear();
    },
  };
}
