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
  ].join('\n');
}
