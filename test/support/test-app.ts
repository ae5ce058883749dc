/**
 * Builds the real application on a test database of its own, with a seeded account (a simulator agent and
 * a live key), and offers small helpers to call the API through Fastify's inject (the full HTTP stack).
 */
import { after, before } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices, type ServiceOverrides, type Services } from '../../src/container.js';
import type { ApiKeyMode } from '../../src/features/api-keys/api-keys.tables.js';
import type { NewRequestLog } from '../../src/features/request-log/request-log.tables.js';
import { newEndpointRow } from '../../src/features/webhook-endpoints/endpoints.service.js';
import type { WebhookEndpointRow } from '../../src/features/webhook-endpoints/endpoints.tables.js';
import { createAccount } from '../../src/features/identity/accounts.service.js';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { attachResponseCheck, type ResponseCheck } from './openapi-check.js';
import { createTestDatabase, type Dialect, type TestDatabase } from './test-database.js';

export interface SeededAccount {
  readonly accountId: string;
  readonly agentId: string;
  readonly token: string;
  readonly keyId: string;
}

export interface TestApp {
  readonly app: FastifyInstance;
  readonly services: Services;
  readonly database: TestDatabase;
  readonly seed: SeededAccount;
  /** Every /v1 answer checked against the OpenAPI document; a mismatch fails close(). */
  readonly responseCheck: ResponseCheck;
  /** Another account with its own agent and key. */
  newAccount(options?: { mode?: ApiKeyMode; agentId?: string }): Promise<SeededAccount>;
  /** POST /v1/calls with the seed key unless another token is given. */
  createCall(
    body: unknown,
    options?: { token?: string | null; idempotencyKey?: string; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export const testEnvDefaults: Record<string, string> = {
  CALLGATE_LOG_LEVEL: 'silent',
  CALLGATE_DEMO_SEED: 'false',
  CALLGATE_RATE_LIMIT_PER_MINUTE: '1000000',
  CALLGATE_IP_RATE_LIMIT_PER_MINUTE: '1000000',
  CALLGATE_SIMULATOR_DELAY_MS: '50',
  CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
};

export async function seedAccount(
  services: Services,
  options: { mode?: ApiKeyMode; agentId?: string; name?: string } = {},
): Promise<SeededAccount> {
  const { db, clock } = services;
  // The agent is made below, with the id and name the tests expect.
  const account = await createAccount(db, clock, { name: options.name ?? 'Test account', simulatorAgent: false });
  const { agent } = await upsertAgent(db, clock, {
    accountId: account.id,
    agentId: options.agentId ?? 'agent_test_reminders',
    name: 'Reminder bot',
    provider: 'simulator',
  });
  const key = await createApiKey(db, clock, { accountId: account.id, name: 'test', mode: options.mode ?? 'live' });
  return { accountId: account.id, agentId: agent.agent_id, token: key.token, keyId: key.id };
}

export async function startTestApp(
  dialect: Dialect,
  options: {
    env?: Record<string, string>;
    overrides?: ServiceOverrides;
    startMonitor?: boolean;
    startWorker?: boolean;
    /** Adds test-only routes to the app before it starts. */
    register?: (app: FastifyInstance, services: Services) => void;
  } = {},
): Promise<TestApp> {
  const database = await createTestDatabase(dialect, { migrated: true });
  const config = loadConfig({ ...testEnvDefaults, ...database.env, ...options.env });
  const services = await createServices(config, options.overrides);
  const app = buildApp(services);
  const responseCheck = attachResponseCheck(app);
  options.register?.(app, services);
  await app.ready();
  if (options.startWorker) services.startWorker();
  else if (options.startMonitor) services.jobs.start([services.callMonitor.name]);
  const seed = await seedAccount(services);

  const inject = (injectOptions: InjectOptions) => app.inject(injectOptions);
  return {
    app,
    services,
    database,
    seed,
    responseCheck,
    newAccount: (accountOptions) => seedAccount(services, accountOptions),
    inject,
    createCall(body, callOptions = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...callOptions.headers };
      const token = callOptions.token === undefined ? seed.token : callOptions.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      if (callOptions.idempotencyKey !== undefined) headers['idempotency-key'] = callOptions.idempotencyKey;
      return app.inject({
        method: 'POST',
        url: '/v1/calls',
        headers,
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    async close() {
      await app.close();
      await services.close();
      await database.drop();
      if (responseCheck.mismatches.length > 0) {
        throw new Error(`answers that do not match the OpenAPI document:\n${responseCheck.mismatches.join('\n')}`);
      }
    },
  };
}

/** A valid creation body for the seeded agent. */
export function callBody(app: TestApp, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { agent_id: app.seed.agentId, to: '+14155550123', ...extra };
}

/** A request-log row of an account's key (a created call), as the request-log hook writes one. */
export function requestLogRow(account: SeededAccount, id: string, createdAt: string): NewRequestLog {
  return {
    id,
    account_id: account.accountId,
    api_key_id: account.keyId,
    key_prefix: account.token.slice(0, 12),
    method: 'POST',
    path: '/v1/calls',
    status: 201,
    error_code: null,
    idempotency_key: null,
    duration_ms: 3,
    replayed: 0,
    created_at: createdAt,
  };
}

/**
 * A webhook endpoint row as createEndpoint writes one (every event type), but with a known id and a URL the
 * API would refuse or never check, for tests that write it themselves; `enabled` false for a disabled one.
 */
export function webhookEndpointRow(accountId: string, id: string, url: string, now: string, enabled = true): WebhookEndpointRow {
  return {
    ...newEndpointRow({ id, accountId, url, description: '', eventTypes: ['*'], secret: 'whsec_x', now }),
    enabled: enabled ? 1 : 0,
  };
}

export async function countCalls(services: Services): Promise<number> {
  const row = await services.db
    .selectFrom('calls')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * The app of a describe (or a `forEachDialect` body) on `dialect`: started before its tests and closed after
 * them. The value reads through to the app once started, so several describes of one file can each have
 * their own with one line.
 */
export function appFor(dialect: Dialect, options: Parameters<typeof startTestApp>[1] = {}): TestApp {
  let app: TestApp | undefined;
  before(async () => {
    app = await startTestApp(dialect, options);
  });
  after(async () => app?.close());
  return new Proxy({} as TestApp, {
    get(_target, key) {
      if (!app) throw new Error('the test app is used before its describe started it');
      const value: unknown = Reflect.get(app, key, app);
      return typeof value === 'function' ? value.bind(app) : value;
    },
  });
}
