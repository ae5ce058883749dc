/**
 * The child's side of a bench script that runs the service (bench/batch-process.ts,
 * bench/dispatcher-process.ts): the service's modules from dist/, the answers to its parent over IPC, and
 * the one way such a child reports a failure (a `failed` message, then exit 1).
 */

// The service runs from dist/ (what `npm start` runs; `npm run bench` builds it first), typed by its sources.
const dist = new URL('../dist/', import.meta.url);
export async function fromDist<T>(file: string): Promise<T> {
  return (await import(new URL(file, dist).href)) as T;
}

/** Sends a message to the parent (the messages' union types it). */
export function sendToParent<M extends { readonly type: string }>(message: M): void {
  process.send?.(message);
}

function fail(error: unknown): never {
  sendToParent({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}

/** Answers each of the parent's requests with `handle`; a request that throws ends the child as failed. */
export function onParentRequest<R>(handle: (request: R) => Promise<void>): void {
  process.on('message', (request: R) => {
    handle(request).catch(fail);
  });
}

/** Runs `main` in a child forked by bench/run.ts; started by hand, it says so and exits 2. */
export function runServiceChild(script: string, main: () => Promise<void>): void {
  if (!process.send) {
    process.stderr.write(`${script} is started by bench/run.ts (npm run bench), not by hand\n`);
    process.exit(2);
  }
  main().catch(fail);
}
