/** Two worker processes sharing one batch, for the multi-process batch tests. */
import type { Db } from '../../src/db/database.js';
import type { ServerProcess } from './server-process.js';
import { until } from './wait.js';

/** A worker has dialed once its debug log names a claim of batch recipients. */
export const workerDialed = (worker: ServerProcess) => /batch recipients claimed/.test(worker.output());

/**
 * The worker that wakes first tends to take every free slot. While one has not dialed yet, the other is
 * stopped (SIGSTOP) for a moment, as a stalled worker would be, so that both dial the batch's calls (five
 * tries at most; the caller asserts that both did).
 */
export async function letEveryWorkerDial(db: Db, batchId: string, workers: readonly ServerProcess[]): Promise<void> {
  const dialing = async () =>
    (await db.selectFrom('batch_recipients').select('id').where('batch_id', '=', batchId).where('status', '=', 'dialing').execute()).length;
  for (let attempt = 0; attempt < 5 && !workers.every(workerDialed); attempt++) {
    const idle = workers.find((worker) => !workerDialed(worker))!;
    const busy = workers.find((worker) => worker !== idle)!;
    // Not while it dials: the recipients it holds as `dialing` would keep their slots until it goes on.
    await until('a moment without a dial under way', async () => ((await dialing()) === 0 ? true : undefined));
    process.kill(busy.pid, 'SIGSTOP');
    try {
      // Up to the call monitor's 30 s lease: calls the stopped worker's monitor had claimed free their
      // slots only once that lease ends, and until then the other worker has no slot to dial.
      await until('the other worker to dial', () => (workerDialed(idle) ? true : undefined), 35_000).catch(() => undefined);
    } finally {
      process.kill(busy.pid, 'SIGCONT');
    }
  }
}
