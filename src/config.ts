/**
 * The one place that reads `process.env`. Every setting is parsed, validated and documented here, and the
 * result is frozen: the rest of the code receives a `Config` and never looks at the environment itself.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { providerCatalogue, type ProviderSettingsByName } from './features/providers/provider-catalogue.js';
import { parseDuration, parseDurationList } from './lib/duration.js';

export type DatabaseConfig = { readonly dialect: 'sqlite'; readonly file: string } | { readonly dialect: 'postgres'; readonly url: string };

export type Role = 'api' | 'worker';

export interface Config {
  /** What this process runs: the HTTP API, the background worker (call monitor, webhook dispatcher), or both.
   * `CALLGATE_ROLES`, default `api,worker`. */
  readonly roles: ReadonlySet<Role>;
  /** TCP port of the HTTP server. `PORT`, default 3000. */
  readonly port: number;
  /** Interface to listen on. `HOST`, default 127.0.0.1 (local only; set 0.0.0.0 to expose it). */
  readonly host: string;
  /** Base URL printed in quick starts. `CALLGATE_PUBLIC_URL`, default `http://HOST:PORT`. */
  readonly publicUrl: string;
  /**
   * Whether `publicUrl` was given (CALLGATE_PUBLIC_URL, or at least PORT): the CLI reads its own environment,
   * and without either it would name port 3000 wherever the server runs.
   */
  readonly publicUrlGiven: boolean;
  /** Folder of the SQLite file. `CALLGATE_DATA_DIR`, default `./data`. */
  readonly dataDir: string;
  /** SQLite in `dataDir` unless `DATABASE_URL=postgres://…` is set. */
  readonly database: DatabaseConfig;
  /** When set, rate-limit counters live in Redis (`REDIS_URL=redis://…`). */
  readonly redisUrl: string | undefined;
  /** Requests per minute per API key (spec 8). `CALLGATE_RATE_LIMIT_PER_MINUTE`, default 10. */
  readonly rateLimitPerMinute: number;
  /** Requests without a valid key per minute per client IP. `CALLGATE_IP_RATE_LIMIT_PER_MINUTE`, default 60. */
  readonly ipRateLimitPerMinute: number;
  /** How long a duplicate request waits for the first one with the same Idempotency-Key.
   * `CALLGATE_IDEMPOTENCY_WAIT_MS`, default 10000. */
  readonly idempotencyWaitMs: number;
  /** How long an in-flight idempotency record locks its key before a crash is assumed.
   * `CALLGATE_IDEMPOTENCY_LOCK_MS`, default 60000 (longer than any provider timeout). */
  readonly idempotencyLockMs: number;
  /** Delay before a simulated call ends. `CALLGATE_SIMULATOR_DELAY_MS`, default 3000. */
  readonly simulatorDelayMs: number;
  /** Create a demo account, agent and test key on a first start with an empty database.
   * `CALLGATE_DEMO_SEED`, default true. */
  readonly demoSeed: boolean;
  /** Trust `X-Forwarded-For` from a reverse proxy for the client IP. `CALLGATE_TRUST_PROXY`, default false. */
  readonly trustProxy: boolean;
  /** Failed portal sign-ins per 15 minutes for the account of an email (or an unknown email), from all
   * addresses together; a success gives its attempt back. `CALLGATE_PORTAL_SIGNIN_PER_ACCOUNT`, default 100:
   * high, so that one address cannot lock the owner out, yet a cap on guesses from many addresses. */
  readonly portalSignInPerAccount: number;
  /** Failed portal sign-ins per 15 minutes for one account from one client IP; a success gives its attempt
   * back. `CALLGATE_PORTAL_SIGNIN_PER_ACCOUNT_IP`, default 10. */
  readonly portalSignInPerAccountIp: number;
  /** Portal sign-in attempts per 15 minutes per client IP. `CALLGATE_PORTAL_SIGNIN_PER_IP`, default 30. */
  readonly portalSignInPerIp: number;
  /** Timeout of one webhook delivery attempt. `CALLGATE_WEBHOOK_TIMEOUT_MS`, default 10000. */
  readonly webhookTimeoutMs: number;
  /** Delays before each retry after the first, immediate attempt.
   * `CALLGATE_WEBHOOK_RETRY_SCHEDULE`, default `5s,5m,30m,2h,5h,10h,10h` (eight attempts over about 28 hours). */
  readonly webhookRetryScheduleMs: readonly number[];
  /** Allow webhook URLs on http and on loopback/private addresses (local development and tests only).
   * `CALLGATE_WEBHOOK_ALLOW_PRIVATE`, default false. */
  readonly webhookAllowPrivate: boolean;
  /** Webhook attempts one worker process makes at once. `CALLGATE_WEBHOOK_CONCURRENCY`, default 64. */
  readonly webhookConcurrency: number;
  /** Webhook attempts in flight to one endpoint at once, across every worker process, split between the
   * workers running. `CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY`, default 4. */
  readonly webhookEndpointConcurrency: number;
  /**
   * Each real provider's settings, read by the names its catalogue entry gives (`<NAME>_API_KEY`,
   * `<NAME>_BASE_URL`, and `<NAME>_WEBHOOK_SECRET` where its webhooks have a secret of their own). An unset
   * API key = agents of that provider are refused. Keys and secrets are never logged.
   */
  readonly providers: ProviderSettingsByName;
  /** Timeout of one request to a voice provider. `CALLGATE_PROVIDER_TIMEOUT_MS`, default 10000. */
  readonly providerTimeoutMs: number;
  /** How long a batch's dial may take before its worker is taken for dead and the recipient ends
   * `interrupted` (never dialed twice). `CALLGATE_BATCH_DIAL_LEASE_MS`, default 60000; longer than
   * CALLGATE_PROVIDER_TIMEOUT_MS. */
  readonly batchDialLeaseMs: number;
  /** How long after it was sent a dial whose answer was lost is looked for at the provider before it counts
   * as not placed (its Idempotency-Key is then freed). `CALLGATE_DIAL_SEARCH_WINDOW`, a duration; default 2m. */
  readonly dialSearchWindowMs: number;
  /** A call still `initiated` this long after creation is looked up at the provider.
   * `CALLGATE_RECONCILE_AFTER`, a duration such as `15m`, `900s` or `900000ms`; default 15m. */
  readonly reconcileAfterMs: number;
  /** `Strict-Transport-Security` value sent on every response when `CALLGATE_PUBLIC_URL` is https
   * (`max-age=` `CALLGATE_HSTS_MAX_AGE`, default 31536000 s); undefined over http or with a max-age of 0. */
  readonly strictTransportSecurity: string | undefined;
  /** The whole request head must arrive within this many ms of its first byte (or of the connection, for a
   * client that sends nothing), or the socket gets a 408 and is closed. `CALLGATE_HEADERS_TIMEOUT_MS`, default 10000. */
  readonly headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this many ms (the time to answer does not count).
   * `CALLGATE_REQUEST_TIMEOUT_MS`, default 30000. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this many ms. `CALLGATE_KEEP_ALIVE_TIMEOUT_MS`, default
   * 65000: longer than the 60 s idle timeout of common proxies and load balancers, so that the proxy always
   * closes first and never sends a request down a connection callgate is closing. */
  readonly keepAliveTimeoutMs: number;
  /** Apply pending migrations when a process starts (server and CLI). `CALLGATE_MIGRATE_ON_START`, default
   * true; false for a rolling deploy, which runs `callgate migrate` once and then refuses a database behind. */
  readonly migrateOnStart: boolean;
  /** Request-log rows are deleted this many days after the request. `CALLGATE_REQUEST_LOG_DAYS`, default 7. */
  readonly requestLogDays: number;
  /** Webhook events whose deliveries are all finished are deleted, with their deliveries and attempts, this
   * many days after the event. `CALLGATE_EVENT_RETENTION_DAYS`, default 30. */
  readonly eventRetentionDays: number;
  /** Personal data: a call's transcript and analysis data are deleted, and its recording no longer served, this
   * long after the call ended (its summary, judgement and events stay). `CALLGATE_TRANSCRIPT_RETENTION`, a
   * duration from 1h to 3650d; default 30d. */
  readonly transcriptRetentionMs: number;
  /** When set, `GET /metrics` needs `Authorization: Bearer <token>`. `CALLGATE_METRICS_TOKEN`, at least 16
   * characters, no spaces; default unset (open: keep the path away from the internet). */
  readonly metricsToken: string | undefined;
  /** When set, `/metrics` and `/readyz` are served on this port by a server of their own (worker-only
   * processes too), and the API port serves no `/metrics`. `CALLGATE_METRICS_PORT`, default unset. */
  readonly metricsPort: number | undefined;
  /** pino level. `CALLGATE_LOG_LEVEL`, default info. */
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

/** A provider's API base URL, without a trailing slash. */
function baseUrl(env: Env, name: string, fallback: string): string {
  const value = (env[name]?.trim() || fallback).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(value)) throw new ConfigError(`${name} must start with https:// (or http:// for a local fake)`);
  return value;
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Parses and validates the environment; throws `ConfigError` with a message naming the bad variable. */
/**
 * The environment with the settings of a `.env` file in `dir` (the working directory) beneath it: the server
 * and the CLI read the same file, so a setting is written once; a variable set in the real environment wins.
 * No `.env` is no error. Its values are never printed (a parse problem names the file only).
 */
export function withDotEnv(env: Env, dir: string = process.cwd()): Env {
  const file = path.join(dir, '.env');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return env;
    throw new ConfigError(
      `${file} could not be read (${(error as NodeJS.ErrnoException).code ?? 'error'}); fix its permissions or remove it`,
    );
  }
  const fromFile = parseEnv(text) as Env;
  return { ...fromFile, ...Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined)) };
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65_535);
  const host = env.HOST?.trim() || '127.0.0.1';
  const dataDir = path.resolve(env.CALLGATE_DATA_DIR?.trim() || './data');

  const databaseUrl = env.DATABASE_URL?.trim();
  let database: DatabaseConfig;
  if (databaseUrl) {
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
      throw new ConfigError('DATABASE_URL must start with postgres:// (leave it unset to use SQLite)');
    }
    database = { dialect: 'postgres', url: databaseUrl };
  } else {
    database = { dialect: 'sqlite', file: path.join(dataDir, 'callgate.sqlite') };
  }

  const redisUrl = env.REDIS_URL?.trim() || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new ConfigError('REDIS_URL must start with redis://');

  const logLevel = (env.CALLGATE_LOG_LEVEL?.trim() || 'info') as Config['logLevel'];
  if (!logLevels.includes(logLevel)) {
    throw new ConfigError(`CALLGATE_LOG_LEVEL must be one of ${logLevels.join(', ')}`);
  }

  const rolesText = env.CALLGATE_ROLES?.trim() || 'api,worker';
  // `both` reads as it is said: both roles, the same as the default.
  const roleList = (rolesText === 'both' ? 'api,worker' : rolesText)
    .split(',')
    .map((role) => role.trim())
    .filter(Boolean);
  if (roleList.length === 0 || roleList.some((role) => role !== 'api' && role !== 'worker')) {
    throw new ConfigError(`CALLGATE_ROLES must be api, worker, api,worker or both, got "${rolesText}"`);
  }

  let webhookRetryScheduleMs: number[];
  try {
    webhookRetryScheduleMs = parseDurationList(env.CALLGATE_WEBHOOK_RETRY_SCHEDULE?.trim() || '5s,5m,30m,2h,5h,10h,10h', 'retry schedule');
  } catch (error) {
    throw new ConfigError(`CALLGATE_WEBHOOK_RETRY_SCHEDULE: ${(error as Error).message}`);
  }

  let reconcileAfterMs: number;
  try {
    reconcileAfterMs = parseDuration(env.CALLGATE_RECONCILE_AFTER?.trim() || '15m');
  } catch (error) {
    throw new ConfigError(`CALLGATE_RECONCILE_AFTER: ${(error as Error).message}`);
  }

  let dialSearchWindowMs: number;
  try {
    dialSearchWindowMs = parseDuration(env.CALLGATE_DIAL_SEARCH_WINDOW?.trim() || '2m');
  } catch (error) {
    throw new ConfigError(`CALLGATE_DIAL_SEARCH_WINDOW: ${(error as Error).message}`);
  }
  if (dialSearchWindowMs < 1_000 || dialSearchWindowMs > 24 * 3_600_000) {
    throw new ConfigError('CALLGATE_DIAL_SEARCH_WINDOW must be between 1s and 24h');
  }

  const retentionText = env.CALLGATE_TRANSCRIPT_RETENTION?.trim() || '30d';
  const retentionRule = `CALLGATE_TRANSCRIPT_RETENTION must be a duration from 1h to 3650d, such as 30d or 72h (got "${retentionText.slice(0, 40)}")`;
  let transcriptRetentionMs: number;
  try {
    transcriptRetentionMs = parseDuration(retentionText);
  } catch {
    throw new ConfigError(retentionRule);
  }
  if (transcriptRetentionMs < 3_600_000 || transcriptRetentionMs > 3_650 * 86_400_000) throw new ConfigError(retentionRule);

  const providers = Object.freeze(
    Object.fromEntries(
      providerCatalogue.map(({ name, settings }) => [
        name,
        Object.freeze({
          apiKey: env[settings.apiKey]?.trim() || undefined,
          baseUrl: baseUrl(env, settings.baseUrl.name, settings.baseUrl.default),
          webhookSecret: settings.webhookSecret ? env[settings.webhookSecret]?.trim() || undefined : undefined,
        }),
      ]),
    ) as ProviderSettingsByName,
  );

  const providerTimeoutMs = integer(env, 'CALLGATE_PROVIDER_TIMEOUT_MS', 10_000, 100, 120_000);
  // A provider may place a call until it answers (and after callgate stops waiting): a window that ends by
  // the timeout would count a call still being placed as not placed, and its retry would call again.
  if (dialSearchWindowMs <= providerTimeoutMs) {
    throw new ConfigError(
      `CALLGATE_DIAL_SEARCH_WINDOW (${dialSearchWindowMs} ms) must be longer than CALLGATE_PROVIDER_TIMEOUT_MS (${providerTimeoutMs} ms): a call the provider placed must be listed before the window ends`,
    );
  }
  const idempotencyLockMs = integer(env, 'CALLGATE_IDEMPOTENCY_LOCK_MS', 60_000, 1_000, 3_600_000);
  // A request holding an idempotency key must finish (provider call included) before its lock can lapse,
  // or a duplicate could take the key over while the first still places its call.
  if (idempotencyLockMs <= providerTimeoutMs) {
    throw new ConfigError('CALLGATE_IDEMPOTENCY_LOCK_MS must be longer than CALLGATE_PROVIDER_TIMEOUT_MS');
  }

  const batchDialLeaseMs = integer(env, 'CALLGATE_BATCH_DIAL_LEASE_MS', 60_000, 1_000, 3_600_000);
  // A live worker still waiting for the provider must never be taken for dead.
  if (batchDialLeaseMs <= providerTimeoutMs) {
    throw new ConfigError('CALLGATE_BATCH_DIAL_LEASE_MS must be longer than CALLGATE_PROVIDER_TIMEOUT_MS');
  }

  const displayHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  const publicUrl = (env.CALLGATE_PUBLIC_URL?.trim() || `http://${displayHost}:${port}`).replace(/\/+$/, '');
  // HSTS only means something over https; a max-age of 0 lets an operator withdraw it from browsers.
  const hstsMaxAge = integer(env, 'CALLGATE_HSTS_MAX_AGE', 31_536_000, 0, 63_072_000);
  const strictTransportSecurity = /^https:\/\//i.test(publicUrl) && hstsMaxAge > 0 ? `max-age=${hstsMaxAge}` : undefined;

  const headersTimeoutMs = integer(env, 'CALLGATE_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const requestTimeoutMs = integer(env, 'CALLGATE_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  // Node refuses a header timeout longer than the request's, which includes the headers.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('CALLGATE_HEADERS_TIMEOUT_MS must not be longer than CALLGATE_REQUEST_TIMEOUT_MS');
  }

  const metricsToken = env.CALLGATE_METRICS_TOKEN?.trim() || undefined;
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,256}$/.test(metricsToken)) {
    throw new ConfigError('CALLGATE_METRICS_TOKEN must be 16 to 256 printable characters without spaces (e.g. openssl rand -hex 32)');
  }
  const metricsPort = env.CALLGATE_METRICS_PORT?.trim() ? integer(env, 'CALLGATE_METRICS_PORT', 0, 1, 65_535) : undefined;
  if (metricsPort !== undefined && metricsPort === port && roleList.includes('api')) {
    throw new ConfigError('CALLGATE_METRICS_PORT must differ from PORT (or leave it unset to serve /metrics on PORT)');
  }

  return Object.freeze({
    roles: new Set(roleList as Role[]),
    port,
    host,
    publicUrl,
    publicUrlGiven: Boolean(env.CALLGATE_PUBLIC_URL?.trim() || env.PORT?.trim()),
    dataDir,
    database: Object.freeze(database),
    redisUrl,
    rateLimitPerMinute: integer(env, 'CALLGATE_RATE_LIMIT_PER_MINUTE', 10, 1, 1_000_000_000),
    ipRateLimitPerMinute: integer(env, 'CALLGATE_IP_RATE_LIMIT_PER_MINUTE', 60, 1, 1_000_000_000),
    idempotencyWaitMs: integer(env, 'CALLGATE_IDEMPOTENCY_WAIT_MS', 10_000, 0, 600_000),
    idempotencyLockMs,
    simulatorDelayMs: integer(env, 'CALLGATE_SIMULATOR_DELAY_MS', 3_000, 0, 86_400_000),
    demoSeed: boolean(env, 'CALLGATE_DEMO_SEED', true),
    trustProxy: boolean(env, 'CALLGATE_TRUST_PROXY', false),
    portalSignInPerAccount: integer(env, 'CALLGATE_PORTAL_SIGNIN_PER_ACCOUNT', 100, 1, 1_000_000),
    portalSignInPerAccountIp: integer(env, 'CALLGATE_PORTAL_SIGNIN_PER_ACCOUNT_IP', 10, 1, 1_000_000),
    portalSignInPerIp: integer(env, 'CALLGATE_PORTAL_SIGNIN_PER_IP', 30, 1, 1_000_000),
    webhookTimeoutMs: integer(env, 'CALLGATE_WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
    webhookRetryScheduleMs: Object.freeze(webhookRetryScheduleMs),
    webhookAllowPrivate: boolean(env, 'CALLGATE_WEBHOOK_ALLOW_PRIVATE', false),
    webhookConcurrency: integer(env, 'CALLGATE_WEBHOOK_CONCURRENCY', 64, 1, 1_000),
    webhookEndpointConcurrency: integer(env, 'CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY', 4, 1, 1_000),
    providers,
    providerTimeoutMs,
    batchDialLeaseMs,
    reconcileAfterMs,
    dialSearchWindowMs,
    strictTransportSecurity,
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer(env, 'CALLGATE_KEEP_ALIVE_TIMEOUT_MS', 65_000, 100, 3_600_000),
    migrateOnStart: boolean(env, 'CALLGATE_MIGRATE_ON_START', true),
    requestLogDays: integer(env, 'CALLGATE_REQUEST_LOG_DAYS', 7, 1, 3_650),
    eventRetentionDays: integer(env, 'CALLGATE_EVENT_RETENTION_DAYS', 30, 1, 3_650),
    transcriptRetentionMs,
    metricsToken,
    metricsPort,
    logLevel,
  });
}
