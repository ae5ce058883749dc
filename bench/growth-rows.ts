/** The growth benchmark's rows: which account, key and id row i has (bench/growth-process.ts writes them, bench/growth-bench.ts reads them). */

/** The bench's accounts and keys: calls, events and request-log rows are spread over all of them. */
export const growthAccounts = 4;
export const liveKeysPerAccount = 8;
export const testKeysPerAccount = 2;
export const keysPerAccount = liveKeysPerAccount + testKeysPerAccount;

export const growthAgentId = 'agent_bench';

/** The id of the i-th stored call (zero-padded: the same text in both dialects). */
export function storedCallId(i: number): string {
  return `call_conv_bench${String(i).padStart(12, '0')}`;
}

/** The account (index) and key (index within the account) of the i-th stored row. */
export function rowKey(i: number): { account: number; key: number } {
  const n = i % (growthAccounts * keysPerAccount);
  return { account: n % growthAccounts, key: Math.floor(n / growthAccounts) };
}

export const isLiveKey = (key: number) => key < liveKeysPerAccount;

export interface GrowthKey {
  readonly account: number;
  readonly key: number;
  readonly accountId: string;
  readonly apiKeyId: string;
  readonly token: string;
  readonly mode: 'live' | 'test';
}

/** The tables that grow with use: a plan that reads one of them whole costs more as it grows. */
const growingTables = [
  'calls',
  'webhook_events',
  'webhook_deliveries',
  'webhook_attempts',
  'request_logs',
  'idempotency_keys',
  'batch_recipients',
  'batches',
  'call_slots',
  'rate_limits',
];

const indent = (line: string) => line.length - line.trimStart().length;

/**
 * The growing tables a plan reads whole: a SQLite SCAN (of the table or of one of its indexes), a PostgreSQL
 * Seq Scan, or a PostgreSQL index scan with no Index Cond among its lines (every entry of the index, filtered).
 */
export function scansIn(dialect: 'sqlite' | 'postgres', plan: readonly string[]): string[] {
  const scans = new Set<string>();
  plan.forEach((line, at) => {
    let table: string | undefined;
    if (dialect === 'sqlite') table = /\bSCAN (\w+)/.exec(line)?.[1];
    else {
      table = /Seq Scan on (\w+)/.exec(line)?.[1];
      const index = /Index (?:Only )?Scan(?: Backward)? using \w+ on (\w+)/.exec(line);
      if (index) {
        const own: string[] = [];
        for (const next of plan.slice(at + 1)) {
          if (indent(next) <= indent(line) || next.trimStart().startsWith('->')) break;
          own.push(next);
        }
        if (!own.some((next) => next.includes('Index Cond'))) table = index[1];
      }
    }
    if (table && growingTables.includes(table)) scans.add(table);
  });
  return [...scans];
}
