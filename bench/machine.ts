/** What the numbers were measured on, and the machine-wide CPU counter read around each measurement. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';

export interface Machine {
  readonly cpuModel: string;
  readonly cores: number;
  readonly ramGb: number;
  readonly os: string;
  readonly node: string;
  readonly sqlite: string;
  readonly postgres: string;
}

function cpuModel(): string {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (match?.[1]) return match[1].trim();
  } catch {
    // Not Linux.
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

async function postgresVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ server_version: string }>('show server_version');
    return rows[0]?.server_version ?? 'unknown';
  } catch (error) {
    return `unreachable (${(error as Error).message})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function describeMachine(postgresAdminUrl: string): Promise<Machine> {
  const memory = new BetterSqlite3(':memory:');
  const sqlite = (memory.prepare('select sqlite_version() as v').get() as { v: string }).v;
  memory.close();
  return {
    cpuModel: cpuModel(),
    cores: os.cpus().length,
    ramGb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    sqlite: `${sqlite} (better-sqlite3)`,
    postgres: await postgresVersion(postgresAdminUrl),
  };
}

/** Busy and total jiffies of all cores together (/proc/stat); null off Linux. */
export interface CpuTicks {
  readonly busy: number;
  readonly total: number;
}

export function machineCpuTicks(): CpuTicks | null {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, value) => sum + value, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

/** Share of the whole machine (all cores) that was busy between two readings, 0–1. */
export function machineBusyShare(before: CpuTicks | null, after: CpuTicks | null): number | null {
  if (!before || !after || after.total === before.total) return null;
  return (after.busy - before.busy) / (after.total - before.total);
}

/** Kernel clock ticks per second, the unit of /proc/<pid>/stat CPU times. */
export const clockTicksPerSecond = (() => {
  const result = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const value = Number(result.stdout?.trim());
  return Number.isFinite(value) && value > 0 ? value : 100;
})();

/** User + system CPU ticks of one process so far, or null when it is gone (or off Linux). */
export function processCpuTicks(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of proc(5); the slice starts at field 3.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

export function loadAverage(): string {
  return os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');
}
