/** Waiting in tests for the event they need, never for a fixed time. */
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` until it returns a value other than undefined, and returns it; fails after `timeoutMs`. */
export async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** `until` with a shorter deadline, for what a test in one process should see within seconds. */
export function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  return until(what, check, timeoutMs);
}

/** Polls a yes-or-no `check` until it says yes; fails after `timeoutMs`. */
export async function waitUntil(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 5_000): Promise<void> {
  await until(what, async () => ((await check()) ? true : undefined), timeoutMs);
}
