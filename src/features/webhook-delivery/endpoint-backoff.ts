/**
 * When a failing endpoint's deliveries wait. An endpoint that stops answering (a timeout, a connection
 * refused) would hold its slots for the whole timeout on every attempt; after a run of such failures its
 * deliveries wait, each keeping its own schedule and attempt count, and one probe at a time goes out, at a
 * pace that starts at the retry schedule's first delay and doubles up to 5 minutes. The first answer (any
 * HTTP status) ends the run: a receiver that answers, even with an error, holds a slot for milliseconds, and
 * its deliveries follow their retry schedule as before.
 */

/** A run of this many attempts without an answer makes the endpoint's deliveries wait. */
export const failureRunToBackOff = 5;
/** The longest wait between two probes. */
export const probeMaxWaitMs = 5 * 60_000;

/** The wait before the next probe, after `probes` waits began (0 for the first). */
export function probeWaitMs(firstWaitMs: number, probes: number): number {
  return Math.min(probeMaxWaitMs, Math.max(1, firstWaitMs) * 2 ** Math.min(probes, 20));
}
