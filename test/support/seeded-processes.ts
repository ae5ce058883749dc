/**
 * callgate as real server processes on one seeded database (an account with a simulator agent, an ElevenLabs
 * agent and a live key): for the tests of what holds across processes and through a kill -9.
 */
import { after, before } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { apiKey, workspaceNumbers } from './elevenlabs-fixtures.js';
import { startFakeElevenLabs, type FakeElevenLabs } from './fake-elevenlabs.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { seedAccount, testEnvDefaults, type SeededAccount } from './test-app.js';
import { createTestDatabase, type Dialect, type TestDatabase } from './test-database.js';

export interface SeededDatabase {
  readonly database: TestDatabase;
  readonly handle: DatabaseHandle;
  readonly seed: SeededAccount;
}

/** A database with a seeded account (a simulator agent, an ElevenLabs agent and a live key), and its handle. */
export async function seededDatabase(dialect: Dialect): Promise<SeededDatabase> {
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

export interface Processes {
  start(env: Record<string, string>): Promise<ServerProcess>;
  stopAll(): Promise<void>;
}

export function processesOf(): Processes {
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

/** A seeded database and a fake ElevenLabs, for a describe whose processes dial through it. */
export interface SeededWithFakeElevenLabs {
  readonly seeded: SeededDatabase;
  readonly fake: FakeElevenLabs;
}

/**
 * For a describe (or a `forEachDialect` body) whose `processes` place calls with ElevenLabs: a seeded database
 * on `dialect` and a fake ElevenLabs with the workspace's numbers, answering by `respond` before its default
 * behaviour, made before its tests; after them, the processes are stopped first, then the fake and the
 * database. The value reads through to them once made.
 */
export function withFakeElevenLabs(dialect: Dialect, processes: Processes, respond: FakeElevenLabs['respond']): SeededWithFakeElevenLabs {
  let seeded: SeededDatabase | undefined;
  let fake: FakeElevenLabs | undefined;
  before(async () => {
    seeded = await seededDatabase(dialect);
    fake = await startFakeElevenLabs({ apiKey });
    fake.phoneNumbers = structuredClone(workspaceNumbers);
    fake.respond = respond;
  });
  after(async () => {
    await processes.stopAll();
    await fake?.close();
    await seeded?.handle.destroy();
    await seeded?.database.drop();
  });
  const made = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('withFakeElevenLabs is used before its describe made the database and the fake');
    return value;
  };
  return {
    get seeded() {
      return made(seeded);
    },
    get fake() {
      return made(fake);
    },
  };
}
