/**
 * `callgate doctor`: what an operator checks before (or instead of) reading logs. Each check says OK, FAIL
 * with what to do, or SKIP with why; the exit status is 1 when any failed. It changes nothing: no
 * migration, no file made (a SQLite file that does not exist is reported, not created), and each provider
 * check is the smallest read that provider offers.
 */
import dns from 'node:dns';
import fs from 'node:fs';
import net from 'node:net';
import { ConfigError, loadConfig, type Config } from '../../config.js';
import type { ToolCommand } from '../command.js';

type Status = 'ok' | 'fail' | 'skip';

interface Check {
  readonly name: string;
  readonly status: Status;
  /** What was found. */
  readonly detail: string;
  /** What to do about a failure. */
  readonly fix?: string;
}

const ok = (name: string, detail: string): Check => ({ name, status: 'ok', detail });
const fail = (name: string, detail: string, fix: string): Check => ({ name, status: 'fail', detail, fix });
const skip = (name: string, detail: string): Check => ({ name, status: 'skip', detail });

/** Each provider's credentials, by its smallest read; skipped without its key, as ElevenLabs' always was. */
async function providerChecks(config: Config): Promise<Check[]> {
  const { agentDirectoryFor, baseUrlSettings, realProviders, requiredSettings } = await import(
    '../../features/providers/provider-settings.js'
  );
  const checks: Check[] = [];
  for (const provider of realProviders) {
    const name = `provider ${provider}`;
    const keySetting = requiredSettings[provider];
    const directory = agentDirectoryFor(provider, config);
    if (!directory) {
      checks.push(
        skip(
          name,
          `${keySetting} is not set: ${provider === 'elevenlabs' ? 'only simulated calls can be placed' : `agents of provider ${provider} are refused`}`,
        ),
      );
      continue;
    }
    const result = await directory.checkAccess();
    if (result.ok) checks.push(ok(name, `the API key is accepted by ${config[provider].baseUrl}`));
    else {
      checks.push(
        fail(
          name,
          result.error.message,
          `set a valid ${keySetting} (and ${baseUrlSettings[provider]} if not the default), then run doctor again`,
        ),
      );
    }
  }
  return checks;
}

/**
 * The endpoint's address by the rules of the SSRF guard; with private targets allowed, the name must still
 * resolve. Doctor reads its own environment, not the server's: an endpoint that only
 * CALLGATE_WEBHOOK_ALLOW_PRIVATE makes valid (a local receiver) is named as such, not given up for deletion.
 */
async function endpointCheck(
  endpoint: { id: string; account_id: string; url: string },
  allowPrivate: boolean,
  /** How its backoff reads, when its deliveries wait for a probe (it stopped answering). */
  backoff: string | undefined,
): Promise<Check> {
  const { checkWebhookTarget } = await import('../../features/webhook-endpoints/ssrf-guard.js');
  const name = `webhook endpoint ${endpoint.id}`;
  const fix = `change its URL in the portal's Webhooks page of account ${endpoint.account_id}, or delete it: callgate webhooks delete ${endpoint.id}`;
  const target = await checkWebhookTarget(endpoint.url, allowPrivate);
  if (!target.ok && !allowPrivate && (await checkWebhookTarget(endpoint.url, true)).ok) {
    return fail(
      name,
      `${endpoint.url} ${target.reason}, unless the server runs with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true (local development), as this check did not`,
      `if your server has CALLGATE_WEBHOOK_ALLOW_PRIVATE=true, give doctor the same setting: CALLGATE_WEBHOOK_ALLOW_PRIVATE=true npx callgate doctor; otherwise (in production) ${fix}`,
    );
  }
  if (!target.ok) return fail(name, `${endpoint.url} ${target.reason}`, fix);
  const host = target.url.hostname.replace(/^\[|\]$/g, '');
  if (allowPrivate && !net.isIP(host)) {
    try {
      await dns.promises.lookup(host, { all: true });
    } catch {
      return fail(name, `${endpoint.url} has a host name that does not resolve`, fix);
    }
  }
  if (backoff) {
    // A valid address is not a working receiver: its deliveries wait for a probe until it answers again.
    return fail(
      name,
      `${endpoint.url} does not answer: ${backoff}; its events wait for it`,
      `make the receiver answer 2xx within CALLGATE_WEBHOOK_TIMEOUT_MS (its last attempts are on the portal's Webhooks page of account ${endpoint.account_id}); waiting deliveries go out by themselves once it does`,
    );
  }
  return ok(name, `${endpoint.url} resolves to an address webhooks may be sent to`);
}

async function databaseChecks(config: Config): Promise<Check[]> {
  const name = 'database';
  if (config.database.dialect === 'sqlite' && !fs.existsSync(config.database.file)) {
    return [
      fail(
        name,
        `there is no database at ${config.database.file}`,
        'start callgate once (it makes the file), or set CALLGATE_DATA_DIR to the folder of the existing one',
      ),
    ];
  }
  const { migrationState, openDatabase } = await import('../../db/database.js');
  const database = openDatabase(config.database);
  try {
    let state: Awaited<ReturnType<typeof migrationState>>;
    try {
      state = await migrationState(database.db);
    } catch (error) {
      const where =
        config.database.dialect === 'postgres'
          ? 'check DATABASE_URL and that PostgreSQL is running and reachable'
          : 'check the file and its folder';
      return [fail(name, `cannot read the database: ${(error as Error).message}`, where)];
    }
    const checks: Check[] = [];
    const label = config.database.dialect === 'sqlite' ? `SQLite ${config.database.file}` : 'PostgreSQL';
    if (state.unknown.length > 0) {
      checks.push(
        fail(
          name,
          `${label} was migrated by a newer version of callgate (unknown migrations: ${state.unknown.join(', ')})`,
          'run that version of callgate or a newer one, or restore a backup taken before the upgrade',
        ),
      );
    } else if (state.pending.length > 0 && !config.migrateOnStart) {
      checks.push(
        fail(
          name,
          `${label} is behind this version (pending: ${state.pending.join(', ')}) and CALLGATE_MIGRATE_ON_START is false`,
          'run callgate migrate',
        ),
      );
    } else if (state.pending.length > 0) {
      checks.push(
        ok(name, `${label} reachable; ${state.pending.length} pending migration(s), applied at the next start (or run callgate migrate)`),
      );
    } else {
      checks.push(ok(name, `${label} reachable, migrations current (${state.applied.length} applied)`));
    }
    // The endpoints' table exists once the migrations ran; without it there is nothing to check yet.
    if (state.applied.includes('0002-webhooks')) {
      const { listAllEnabledEndpoints } = await import('../../features/webhook-endpoints/endpoints.service.js');
      const { describeBackoff, endpointBackoffs } = await import('../../features/webhook-delivery/deliveries.service.js');
      const endpoints = await listAllEnabledEndpoints(database.db);
      const backoffs = await endpointBackoffs(
        database.db,
        endpoints.map((endpoint) => endpoint.id),
        new Date(),
      );
      if (endpoints.length === 0) checks.push(skip('webhook endpoints', 'no enabled webhook endpoint'));
      for (const endpoint of endpoints) {
        const backoff = backoffs.get(endpoint.id);
        checks.push(await endpointCheck(endpoint, config.webhookAllowPrivate, backoff && describeBackoff(backoff)));
      }
    }
    return checks;
  } finally {
    await database.destroy();
  }
}

const marks: Record<Status, string> = { ok: 'OK  ', fail: 'FAIL', skip: 'SKIP' };

function render(checks: readonly Check[]): string {
  const lines = checks.map(
    (check) => `${marks[check.status]}  ${check.name}: ${check.detail}${check.fix ? `\n      what to do: ${check.fix}` : ''}`,
  );
  const failed = checks.filter((check) => check.status === 'fail').length;
  lines.push('', failed === 0 ? 'All checks passed.' : `${failed} check${failed === 1 ? '' : 's'} failed.`);
  return lines.join('\n');
}

export const doctorCommand: ToolCommand = {
  name: 'doctor',
  summary: 'Check the configuration, the database, the provider credentials and the webhook endpoints; exit 1 if any fails',
  options: {},
  prepare() {
    return async ({ env }) => {
      const checks: Check[] = [];
      let config: Config | undefined;
      try {
        config = loadConfig(env);
        checks.push(ok('configuration', `valid (roles ${[...config.roles].join(',')}, database ${config.database.dialect})`));
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        checks.push(
          fail('configuration', error.message, 'fix that setting in the environment; the other checks need a valid configuration'),
        );
      }
      if (config) {
        checks.push(...(await databaseChecks(config)));
        checks.push(...(await providerChecks(config)));
      }
      const passed = checks.every((check) => check.status !== 'fail');
      return { json: { ok: passed, checks }, text: render(checks), exitCode: passed ? 0 : 1 };
    };
  },
};
