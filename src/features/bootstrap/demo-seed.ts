/**
 * On a first start with an empty database, creates a demo account with a simulator agent and a test-mode
 * key, so that a newcomer can place a call with curl within a minute.
 */
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { countAccounts } from '../accounts/accounts.repository.js';
import { createAccount } from '../accounts/accounts.service.js';
import { upsertAgent } from '../agents/agents.service.js';
import { createApiKey } from '../api-keys/api-keys.service.js';
import { createCallCurl } from '../calls/curl-example.js';

export interface DemoSeed {
  accountId: string;
  agentId: string;
  keyId: string;
  token: string;
}

export const demoAgentId = 'agent_demo_simulator';

export async function seedDemoIfEmpty(db: Db, clock: Clock): Promise<DemoSeed | null> {
  if ((await countAccounts(db)) > 0) return null;
  const account = await createAccount(db, clock, { name: 'Demo account' });
  const { agent } = await upsertAgent(db, clock, {
    accountId: account.id,
    agentId: demoAgentId,
    name: 'Demo agent (simulator)',
    provider: 'simulator',
  });
  const key = await createApiKey(db, clock, { accountId: account.id, name: 'Demo test key', mode: 'test' });
  return { accountId: account.id, agentId: agent.agent_id, keyId: key.id, token: key.token };
}

export function demoBanner(seed: DemoSeed, baseUrl: string): string {
  return [
    '',
    'callgate: created a demo account on this empty database.',
    `  account:  ${seed.accountId}`,
    `  agent:    ${seed.agentId} (simulator)`,
    `  test key: ${seed.token}`,
    '  (the key is shown only this once; it places simulated calls only)',
    '',
    'Place a call:',
    ...createCallCurl(baseUrl, seed.agentId, seed.token).split('\n').map((line) => `  ${line}`),
    '',
    `Developer portal: ${baseUrl}/developers`,
    `  sign-in user: npx callgate users add --account ${seed.accountId} --email you@example.com --password '…'`,
    '',
  ].join('\n');
}
