/**
 * POST /v1/calls as an integrator feels it: p50/p99 at a fixed 100 requests a second (open loop), then
 * throughput from 50 connections, through a test-mode key (the simulator: no provider latency), with the
 * server's peak RSS at the end. Bare Fastify is measured the same way just before, for scale.
 */
import {
  cli,
  createAccount,
  createDatabase,
  freePort,
  simulatorAgentId,
  startScript,
  startServer,
  type BenchDatabase,
  type Dialect,
} from './harness.js';
import { createCall, openLoop, throughput, type Latency, type Throughput } from './load.js';

export interface CallsSettings {
  /** API keys of the account, used in turn: integrations each with their own key. */
  readonly keys: number;
  readonly connections: number;
  readonly rate: number;
  readonly durationS: number;
  readonly warmupS: number;
}

export interface CallsRound {
  readonly bare: { readonly latency: Latency; readonly throughput: Throughput };
  readonly callgate: { readonly latency: Latency; readonly throughput: Throughput; readonly peakRssMb: number };
}

async function measure(url: string, tokens: readonly string[], tag: string, settings: CallsSettings) {
  const { rate, durationS, warmupS, connections } = settings;
  const latency = await openLoop(url, createCall(tokens, simulatorAgentId, tag), rate, durationS, warmupS);
  const closedLoop = await throughput(url, createCall(tokens, simulatorAgentId, `${tag}-t`), connections, durationS, warmupS);
  return { latency, throughput: closedLoop };
}

/** The account's test-mode tokens: the one made with the account, then more up to `keys`. */
async function tokensOf(database: BenchDatabase, keys: number): Promise<string[]> {
  const { accountId, token } = await createAccount(database);
  const tokens = [token];
  while (tokens.length < keys) {
    const args = ['keys', 'create', '--account', accountId, '--name', `bench ${tokens.length}`, '--mode', 'test'];
    tokens.push((await cli<{ token: string }>(database, args)).token);
  }
  return tokens;
}

export async function callsRound(dialect: Dialect, round: number, settings: CallsSettings): Promise<CallsRound> {
  const bareServer = await startScript('bare-server.ts', await freePort(), {});
  let bare: CallsRound['bare'];
  try {
    bare = await measure(bareServer.url, ['none'], `bare-${round}`, settings);
  } finally {
    await bareServer.stop();
  }
  const database = await createDatabase(dialect);
  try {
    const tokens = await tokensOf(database, settings.keys);
    const server = await startServer(database);
    try {
      const measured = await measure(server.url, tokens, `r${round}`, settings);
      return { bare, callgate: { ...measured, peakRssMb: server.peakRssMb() } };
    } finally {
      await server.stop();
    }
  } finally {
    await database.drop();
  }
}
