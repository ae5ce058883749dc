/**
 * On a first start with an empty database, creates a demo account with a simulator agent and a test-mode
 * key, so that a newcomer can place a call with curl within a minute.
 */
import path from 'node:path';
import { loadConfig, type Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { lockTransaction } from '../../db/locks.js';
import type { Clock } from '../../lib/clock.js';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { accountsWithAgent } from '../agents/agents.service.js';
import { createCallCurl } from '../calls/curl-example.js';
import { createAccount, hasAccounts } from '../identity/accounts.service.js';

export interface DemoSeed {
  accountId: string;
  agentId: string;
  keyId: string;
  token: string;
}

export const demoAgentId = 'agent_demo_simulator';

/** The lock that several processes starting at once take around the seed (any constant). */
const seedLockKey = 0x63_67_73_64; // "cgsd"

/**
 * Runs `work` in a transaction that one process at a time gets, whatever the number of processes starting
 * on the database: check-then-insert would otherwise let two processes both see it empty and both seed.
 */
async function oneAtATime<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    // Another process waits here, then sees this one's account.
    await lockTransaction(trx, seedLockKey);
    return work(trx);
  });
}

export async function seedDemoIfEmpty(db: Db, clock: Clock): Promise<DemoSeed | null> {
  return oneAtATime(db, async (trx) => {
    if (await hasAccounts(trx)) return null;
    const account = await createAccount(trx, clock, {
      name: 'Demo account',
      simulatorAgent: { agentId: demoAgentId, name: 'Demo agent (simulator)' },
    });
    const key = await createApiKey(trx, clock, { accountId: account.id, name: 'Demo test key', mode: 'test' });
    return { accountId: account.id, agentId: demoAgentId, keyId: key.id, token: key.token };
  });
}

/** The demo account of this database (the first with the demo agent), if the first start made one. */
export async function findDemoAccount(db: Db): Promise<string | undefined> {
  return (await accountsWithAgent(db, demoAgentId))[0];
}

/** Quotes a value for a POSIX shell, unless it is plain enough to need none. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The settings a CLI must be given, in front of `npx callgate …`, to use this server's database and print
 * its addresses: the CLI reads its own environment, and without them opens ./data and names port 3000.
 * A database password is not printed: the URL then comes from the shell's own DATABASE_URL.
 */
export function cliSettingsFor(config: Pick<Config, 'publicUrl' | 'database'>): string {
  const settings: string[] = [];
  const cliDefaults = loadConfig({});
  if (config.database.dialect === 'postgres') {
    const hasPassword = new URL(config.database.url).password !== '';
    settings.push(`DATABASE_URL=${hasPassword ? '"$DATABASE_URL"' : shellWord(config.database.url)}`);
  } else if (cliDefaults.database.dialect === 'sqlite' && config.database.file !== cliDefaults.database.file) {
    settings.push(`CALLGATE_DATA_DIR=${shellWord(path.dirname(config.database.file))}`);
  }
  if (config.publicUrl !== cliDefaults.publicUrl) settings.push(`CALLGATE_PUBLIC_URL=${shellWord(config.publicUrl)}`);
  return settings.map((setting) => `${setting} `).join('');
}

/** `cliSettings`: what `cliSettingsFor` gives for the server's config, so that the hints paste as they are. */
export function demoBanner(seed: DemoSeed, baseUrl: string, cliSettings = ''): string {
  return [
    '',
    'callgate: created a demo account on this empty database.',
    `  account:  ${seed.accountId}`,
    `  agent:    ${seed.agentId} (simulator)`,
    `  test key: ${seed.token}`,
    '  (the key is shown only this once; it places simulated calls only)',
    '',
    'Place a call:',
    ...createCallCurl(baseUrl, seed.agentId, seed.token)
      .split('\n')
      .map((line) => `  ${line}`),
    '',
    `Developer portal: ${baseUrl}/developers`,
    `  sign-in user: ${cliSettings}npx callgate users add --account ${seed.accountId} --email you@example.com --password '…'`,
    '',
    "Receive each call's outcome as a signed webhook (the command prints the signing secret, whsec_…):",
    `  ${cliSettings}npx callgate webhooks create --account ${seed.accountId} --url https://your-receiver.example/webhooks`,
    `  a receiver on this machine (http://127.0.0.1:8080/webhooks): set CALLGATE_WEBHOOK_ALLOW_PRIVATE=true for this`,
    '  server and for that command; without it only public https URLs are accepted (docs/webhooks.md).',
    '',
  ].join('\n');
}

/**
 * The line every start prints for people, below the JSON logs: where the portal and the docs are, the demo
 * account's id (which `webhooks create --account` needs), and, when this start printed no key for it, how
 * to make one: the demo key is shown once, and a first start that failed may have taken it along.
 */
export function startLine(
  baseUrl: string,
  demo: { readonly accountId: string; readonly keyPrinted: boolean } | undefined,
  cliSettings = '',
): string {
  const lines = [`callgate: portal ${baseUrl}/developers · API reference ${baseUrl}/docs · guides in docs/ (README.md)`];
  if (demo) {
    lines.push(
      demo.keyPrinted
        ? `  demo account: ${demo.accountId} (its test key is printed above)`
        : `  demo account: ${demo.accountId}; a test key for it: ${cliSettings}npx callgate keys create --account ${demo.accountId} --name demo --mode test`,
    );
  }
  return lines.join('\n');
}
