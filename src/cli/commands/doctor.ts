/**
 * `callgate doctor`: what an operator checks before (or instead of) reading logs. Each check says OK, FAIL
 * with what to do, WARN with what to do (something needs someone, but nothing is broken in callgate
 * itself: a webhook receiver that fails), or SKIP with why; the exit status is 1 when any failed, and
 * warnings alone leave it 0. It changes nothing: no migration, no file made (a SQLite file that does not
 * exist is reported, not created), and each provider check is the smallest read that provider offers.
 */
import dns from 'node:dns';
import fs from 'node:fs';
import net from 'node:net';
import { ConfigError, loadConfig, type Config } from '../../config.js';
import type { EndpointTrouble, LastAttempt } from '../../features/webhook-delivery/endpoint-health.service.js';
import { relativeTime } from '../../lib/duration.js';
import type { ToolCommand } from '../command.js';

type Status = 'ok' | 'warn' | 'fail' | 'skip';

interface Check {
  readonly name: string;
  readonly status: Status;
  /** What was found. */
  readonly detail: string;
  /** What to do about a failure or a warning. */
  readonly fix?: string;
}

const ok = (name: string, detail: string): Check => ({ name, status: 'ok', detail });
const warn = (name: string, detail: string, fix: string): Check => ({ name, status: 'warn', detail, fix });
const fail = (name: string, detail: string, fix: string): Check => ({ name, status: 'fail', detail, fix });
const skip = (name: string, detail: string): Check => ({ name, status: 'skip', detail });

/** Each provider's credentials, by its smallest read; skipped without its key, as ElevenLabs' always was. */
async function providerChecks(config: Config): Promise<Check[]> {
  const { agentDirectoryFor, providerCatalogue, withoutKeyNote } = await import('../../features/providers/provider-catalogue.js');
  const checks: Check[] = [];
  for (const { name: provider, settings } of providerCatalogue) {
    const name = `provider ${provider}`;
    const directory = agentDirectoryFor(provider, config);
    if (!directory) {
      checks.push(skip(name, withoutKeyNote(provider, config)));
      continue;
    }
    const result = await directory.checkAccess();
    if (result.ok) checks.push(ok(name, `the API key is accepted by ${config.providers[provider].baseUrl}`));
    else {
      checks.push(
        fail(
          name,
          result.error.message,
          `set a valid ${settings.apiKey} (and ${settings.baseUrl.name} if not the default), then run doctor again`,
        ),
      );
    }
  }
  return checks;
}

/** A time with how far it is from now: `2026-01-02T03:04:05.000Z (5 days ago)`. */
const when = (iso: string, now: Date) => `${iso} (${relativeTime(iso, now)})`;

/** A response body or an error message on one line, cut to `maxChars`. */
function excerpt(text: string, maxChars: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > maxChars ? `${line.slice(0, maxChars)}…` : line;
}

/** The last attempt's status code (with the start of its answer) or network error, and when it was. */
function lastError(attempt: LastAttempt | null, now: Date): string {
  if (!attempt) return 'none on record';
  const body = attempt.response_excerpt ? excerpt(attempt.response_excerpt, 100) : '';
  const what =
    attempt.status_code !== null ? `HTTP ${attempt.status_code}${body ? ` "${body}"` : ''}` : excerpt(attempt.error ?? 'no answer', 200);
  return `${what}, at ${when(attempt.attempted_at, now)}`;
}

/** When a failing endpoint's deliveries are tried next. */
function nextTry(trouble: Extract<EndpointTrouble, { state: 'failing' }>, now: Date): string {
  const { backoff, next_try_at: at } = trouble;
  if (backoff) {
    const due = backoff.probe_due ? ', due or under way' : '';
    return `${when(backoff.next_try_at, now)}${due}: it does not answer, so its deliveries wait for that one probe`;
  }
  if (at === null) return 'with its next event (no delivery waits)';
  return Date.parse(at) <= now.getTime()
    ? 'now (a delivery is due or under way)'
    : `${when(at, now)}, the retry of its first waiting delivery`;
}

/** A failing or disabled endpoint's warning: since when, its last error, its next try, and what to do. */
function troubleCheck(
  endpoint: { id: string; account_id: string; url: string },
  trouble: EndpointTrouble,
  last: LastAttempt | null,
  now: Date,
): Check {
  const name = `webhook endpoint ${endpoint.id}`;
  const page = `the portal's page /developers/webhooks/${endpoint.id} of account ${endpoint.account_id}`;
  if (trouble.state === 'disabled') {
    return warn(
      name,
      `${endpoint.url} was disabled at ${when(trouble.disabled_at, now)} by its failures: ${trouble.disabled_reason} Last error: ${lastError(last, now)}. Next try: none, nothing is sent to it (new events are not queued for it) until it is enabled again`,
      `fix the receiver, then enable the endpoint: npx callgate webhooks enable ${endpoint.id} (or Edit, Enabled on ${page}), and check it with npx callgate webhooks test ${endpoint.id}; send the events it missed again with npx callgate events resend EVT_ID --endpoint ${endpoint.id}`,
    );
  }
  return warn(
    name,
    `${endpoint.url} is failing since ${when(trouble.failing_since, now)}. Last error: ${lastError(last, now)}. Next try: ${nextTry(trouble, now)}`,
    `fix the receiver so that it answers 2xx within CALLGATE_WEBHOOK_TIMEOUT_MS (each attempt is on ${page}, and in npx callgate deliveries list --account ${endpoint.account_id} --endpoint ${endpoint.id}); waiting deliveries go out by themselves at their next try, npx callgate webhooks test ${endpoint.id} sends one more. If none succeeds, its first failed attempt after ${trouble.disabled_after} disables it`,
  );
}

/**
 * The endpoint's address by the rules of the SSRF guard; with private targets allowed, the name must still
 * resolve. Doctor reads its own environment, not the server's: an endpoint that only
 * CALLGATE_WEBHOOK_ALLOW_PRIVATE makes valid (a local receiver) is named as such, not given up for deletion.
 * A valid address whose receiver fails, or whose failures disabled it, gets `warning` instead of OK.
 */
async function endpointCheck(
  endpoint: { id: string; account_id: string; url: string },
  allowPrivate: boolean,
  warning: Check | undefined,
): Promise<Check> {
  const { checkWebhookTarget } = await import('../../features/webhook-endpoints/ssrf-guard.js');
  const name = `webhook endpoint ${endpoint.id}`;
  const fix = `change its URL in the portal's Webhooks page of account ${endpoint.account_id}, or delete it: npx callgate webhooks delete ${endpoint.id}`;
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
  // A valid address is not a working receiver.
  return warning ?? ok(name, `${endpoint.url} resolves to an address webhooks may be sent to`);
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
          'run npx callgate migrate',
        ),
      );
    } else if (state.pending.length > 0) {
      checks.push(
        ok(
          name,
          `${label} reachable; ${state.pending.length} pending migration(s), applied at the next start (or run npx callgate migrate)`,
        ),
      );
    } else {
      checks.push(ok(name, `${label} reachable, migrations current (${state.applied.length} applied)`));
    }
    // The endpoints' table exists once the migrations ran; without it there is nothing to check yet.
    if (state.applied.includes('0002-webhooks')) {
      const { disabledByFailures, listAllEndpoints } = await import('../../features/webhook-endpoints/endpoints.service.js');
      const { endpointTroubles, lastAttempt } = await import('../../features/webhook-delivery/endpoint-health.service.js');
      // Enabled endpoints, and those their failures disabled (one a person disabled is nobody's surprise).
      const endpoints = (await listAllEndpoints(database.db)).filter((endpoint) => endpoint.enabled === 1 || disabledByFailures(endpoint));
      const now = new Date();
      const troubles = await endpointTroubles(
        database.db,
        endpoints.map((endpoint) => endpoint.id),
        now,
      );
      if (endpoints.length === 0) checks.push(skip('webhook endpoints', 'no enabled webhook endpoint'));
      for (const endpoint of endpoints) {
        const trouble = troubles.get(endpoint.id);
        const warning = trouble && troubleCheck(endpoint, trouble, await lastAttempt(database.db, endpoint.id), now);
        checks.push(await endpointCheck(endpoint, config.webhookAllowPrivate, warning));
      }
    }
    return checks;
  } finally {
    await database.destroy();
  }
}

const marks: Record<Status, string> = { ok: 'OK  ', warn: 'WARN', fail: 'FAIL', skip: 'SKIP' };

const counted = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

function render(checks: readonly Check[]): string {
  const lines = checks.map(
    (check) => `${marks[check.status]}  ${check.name}: ${check.detail}${check.fix ? `\n      what to do: ${check.fix}` : ''}`,
  );
  const failed = checks.filter((check) => check.status === 'fail').length;
  const warned = checks.filter((check) => check.status === 'warn').length;
  const warnings = warned === 0 ? '' : ` (${counted(warned, 'warning')})`;
  lines.push('', failed === 0 ? `All checks passed${warnings}.` : `${counted(failed, 'check')} failed${warnings}.`);
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
