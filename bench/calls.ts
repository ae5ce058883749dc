/**
 * POST /v1/calls as an integrator feels it: p50/p99 at a fixed 100 requests a second (open loop), then
 * throughput from 50 connections, through a test-mode key (the simulator: no provider latency), with the
 * server's peak RSS at the end. Bare Fastify is measured the same way just before, for scale.
 */
import { createAccount, createDatabase, freePort, simulatorAgentId, startScript, startServer, type Dialect } from './harness.js';
import { createCall, openLoop, throughput, type Latency, type Throughput } from './load.js';

export interface CallsSettings {
  readonly connections: number;
  readonly rate: number;
  readonly durationS: number;
  readonly warmupS: number;
}

export interface CallsRound {
  readonly bare: { readonly latency: Latency; readonly throughput: Throughput };
  readonly callgate: { readonly latency: Latency; readonly throughput: Throughput; readonly peakRssMb: number };
}

async function measure(url: string, token: string, tag: string, settings: CallsSettings) {
  const latency = await openLoop(url, createCall(token, simulatorAgentId, tag), settings.rate, settings.durationS, settings.warmupS);
  const closedLoop = await throughput(url, createCall(token, simulatorAgentId, `${tag}-t`), settings);
  return { latency, throughput: closedLoop };
}

export async function callsRound(dialect: Dialect, round: number, settings: CallsSettings): Promise<CallsRound> {
  const bareServer = await startScript('bare-server.ts', await freePort(), {});
  let bare: CallsRound['bare'];
  try {
    bare = await measure(bareServer.url, 'none', `bare-${round}`, settings);
  } finally {
    await bareServer.stop();
  }
  const database = await createDatabase(dialect);
  try {
    const { token } = await createAccount(database);
    const server = await startServer(database);
    try {
      const measured = await measure(server.url, token, `r${round}`, settings);
      return { bare, callgate: { ...measured, peakRssMb: server.peakRssMb() } };
    } finally {
      await server.stop();
    }
  } finally {
    await database.drop();
  }
}
