/**
 * Moves SQLite's WAL checkpoints off the event loop. By default the connection that commits the
 * 1,000th page of the WAL copies the pages back into the database file and fsyncs it, inside that commit:
 * on the server that is a request's handler, and it cost about half of every commit's time in the benchmark.
 * Here the server's connection stops checkpointing by itself and a worker thread with a connection of its
 * own runs PASSIVE checkpoints (which never block writers) a few times a second. Durability is unchanged:
 * a commit is in the WAL either way, and the WAL is what recovery reads.
 *
 * If the thread fails to start or dies, the connection checkpoints by itself again, as SQLite does by
 * default, so the WAL never grows without bound.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/** SQLite's own default for wal_autocheckpoint, restored when the thread is gone. */
const defaultAutoCheckpointPages = 1000;

export interface CheckpointerOptions {
  /** How often the thread checkpoints. */
  readonly intervalMs?: number;
  /** Called once if the thread fails; the connection is back to checkpointing by itself by then. */
  readonly onError?: (error: Error) => void;
}

export interface Checkpointer {
  stop(): Promise<void>;
}

// The worker's code is inline (CommonJS) so the same file works from dist/ and from the TypeScript sources
// under tsx. It loads the very better-sqlite3 the main thread uses.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const timer = setInterval(() => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (error) { parentPort.postMessage({ error: String(error) }); }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  try { db.pragma('wal_checkpoint(PASSIVE)'); } finally { db.close(); parentPort.close(); }
});
`;

export function startCheckpointer(sqlite: BetterSqlite3.Database, options: CheckpointerOptions = {}): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  sqlite.pragma('wal_autocheckpoint = 0');
  let failed = false;
  const fail = (error: Error): void => {
    if (failed) return;
    failed = true;
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${defaultAutoCheckpointPages}`);
    options.onError?.(error);
  };
  const worker = new Worker(workerSource, {
    eval: true,
    workerData: { driver, file: sqlite.name, intervalMs: options.intervalMs ?? 200 },
  });
  // The thread must never keep a process alive that is otherwise done.
  worker.unref();
  let stopping = false;
  const exited = new Promise<void>((resolve) => {
    worker.once('exit', (code) => {
      if (!stopping) fail(new Error(`the SQLite checkpoint thread exited (code ${code})`));
      resolve();
    });
  });
  worker.on('error', (error) => fail(error));
  worker.on('message', (message: { error?: string }) => {
    if (message.error) fail(new Error(`SQLite checkpoint failed: ${message.error}`));
  });
  return {
    async stop() {
      if (stopping) return exited;
      stopping = true;
      // Waiting for the thread's last checkpoint must keep the process alive.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}
