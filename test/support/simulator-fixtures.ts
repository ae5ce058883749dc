import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import type { TestApp } from './test-app.js';

/** An ElevenLabs agent in the seed account, with a test-mode and a live key. */
export async function createAgentsAndKeyForMode(t: TestApp): Promise<{ agentId: string; testToken: string; liveToken: string }> {
  const { db, clock } = t.services;
  const { agent } = await upsertAgent(db, clock, {
    accountId: t.seed.accountId,
    agentId: 'agent_elevenlabs_real',
    name: 'Real agent',
    provider: 'elevenlabs',
    phoneNumberId: 'phnum_123',
  });
  const testKey = await createApiKey(db, clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' });
  const liveKey = await createApiKey(db, clock, { accountId: t.seed.accountId, name: 'live', mode: 'live' });
  return { agentId: agent.agent_id, testToken: testKey.token, liveToken: liveKey.token };
}
