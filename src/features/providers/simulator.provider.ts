/**
 * The built-in provider: places no real call. A call "ends" `delayMs` after it was placed, with an outcome
 * that depends only on the destination, the conversation id and `delayMs`, so it can be worked out again
 * after a restart. Magic destinations (documented in the README's magic-number table) produce the failure paths.
 *
 * Its timestamps are those of a call that really lasted `delayMs`: it is answered after a short ring and
 * ends at `createdAt + delayMs`, the moment the monitor learns of the end. So `started_at` and `ended_at`
 * never lie after the event that reports them, and `duration_seconds` fits in that time (a short delay
 * makes a short call; 242 s or more gives the whole range of 15 to 240 s).
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { err, ok } from '../../lib/result.js';
import type { CallCheck, CallOutcome, CallReference, VoiceProvider } from './provider.interface.js';

export const simulatorMagicNumbers = {
  busy: '+15005550001',
  noAnswer: '+15005550002',
  refused: '+15005550003',
  /** The call is placed, but its answer is lost: the first answer is 504; the dial is then found. */
  lostAnswerPlaced: '+15005550004',
  /**
   * The answer is lost and no call was placed: the first answer is 504; the dial is then not found, and the
   * next dial to the number (the retry with the same key, a batch's redial) places the call.
   */
  lostAnswerNotPlaced: '+15005550005',
  /** The call is placed, then an answering machine takes it: it fails with `voicemail`. */
  voicemail: '+15005550006',
} as const;

/**
 * The conversation id of a simulated call whose answer was lost, made from its dial id: any process, even
 * after a restart, finds the same call for the dial, as a provider's search would.
 */
export function lostAnswerConversationId(dialId: string): string {
  return `conv_lost${digest(dialId).toString('hex').slice(0, 24)}`;
}

/** How many dials the simulator remembers having placed, for `findDial` after a lost answer or a crash. */
const rememberedDials = 10_000;

/** Longest ring between placing a simulated call and its answer; a short delay rings for a third of it. */
const maxRingMs = 2_000;
/** Conversation lengths drawn when the delay leaves room for them. */
const durationRangeSeconds = { min: 15, max: 240 } as const;

const summaries = [
  'The agent reached the contact, confirmed the appointment and answered a question about parking.',
  'The contact asked to reschedule; the agent offered two new times and the contact chose the later one.',
  'The agent delivered the reminder; the contact confirmed and had no further questions.',
  'The contact was interested and asked for a follow-up email with pricing details.',
  'The agent verified the delivery address and the contact confirmed the time window.',
];

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export function simulatedOutcome(call: CallReference, delayMs: number): CallOutcome {
  const endsAt = new Date(call.createdAt.getTime() + delayMs);
  if (call.to === simulatorMagicNumbers.busy) {
    return { status: 'failed', reason: 'busy', message: 'The line was busy.', failedAt: endsAt };
  }
  if (call.to === simulatorMagicNumbers.noAnswer) {
    return { status: 'failed', reason: 'no_answer', message: 'Nobody answered before the ringing timeout.', failedAt: endsAt };
  }
  if (call.to === simulatorMagicNumbers.voicemail) {
    return { status: 'failed', reason: 'voicemail', message: 'An answering machine took the call.', failedAt: endsAt };
  }
  const hash = digest(call.conversationId);
  const ringMs = Math.min(maxRingMs, Math.floor(delayMs / 3));
  // Whole seconds of conversation that fit between the answer and the end.
  const roomSeconds = Math.floor((delayMs - ringMs) / 1000);
  const shortest = Math.min(durationRangeSeconds.min, roomSeconds);
  const longest = Math.min(durationRangeSeconds.max, roomSeconds);
  const durationSeconds = shortest + (hash.readUInt16BE(0) % (longest - shortest + 1));
  return {
    status: 'completed',
    startedAt: new Date(endsAt.getTime() - durationSeconds * 1000),
    endedAt: endsAt,
    durationSeconds,
    transcriptSummary: summaries[hash.readUInt8(2) % summaries.length] ?? summaries[0]!,
  };
}

/** What the simulator saw of the calls it placed: for tests and the benchmark (a batch's max_concurrency). */
export interface SimulatorStats {
  /** Calls placed since the start (or the last reset). */
  readonly placed: number;
  /** Calls in progress now: placed, and not yet at their end (`delayMs` after they were placed). */
  readonly inProgress: number;
  /** The most calls that were in progress at once. */
  readonly highestConcurrency: number;
}

export interface SimulatorProvider extends VoiceProvider {
  stats(): SimulatorStats;
  resetStats(): void;
}

/**
 * `delayMs` is how long every simulated call lasts (CALLGATE_SIMULATOR_DELAY_MS): 3 s by default, 50 ms in
 * the tests, 500 ms in the benchmark's batch.
 */
const lostAnswer = {
  kind: 'timeout',
  message: 'The simulator lost its answer (a magic number for rehearsing lost provider answers): the call may or may not have been placed.',
  retryable: true,
} as const;

export function createSimulatorProvider(options: { clock: Clock; delayMs: number }): SimulatorProvider {
  // The end of each call in progress, in ms since the epoch by the clock; a call counts from its placing
  // to its end, the span in which callgate must count it as in progress too. Every call lasts `delayMs`,
  // so ends come in the order of placing: a queue whose ended head is dropped (cheap on the hot path).
  let endsAt: number[] = [];
  let head = 0;
  let placed = 0;
  let highestConcurrency = 0;
  const placedDials = new Map<string, string>();
  // Agents whose last dial to +15005550005 lost its answer: their next one is placed (and the one after is lost
  // again). Kept by the process, as a provider keeps its calls: with several API processes a retry may land on
  // one that has not lost a dial yet, and loses it once there.
  const lostOnce = new Set<string>();
  const inProgressAt = (now: number) => {
    while (head < endsAt.length && endsAt[head]! <= now) head++;
    if (head > 1024 && head * 2 > endsAt.length) {
      endsAt = endsAt.slice(head);
      head = 0;
    }
    return endsAt.length - head;
  };
  return {
    name: 'simulator',
    firstCheckDelayMs: options.delayMs,
    async placeCall(request) {
      if (request.to === simulatorMagicNumbers.lostAnswerNotPlaced && !lostOnce.delete(request.agentId)) {
        lostOnce.add(request.agentId);
        if (lostOnce.size > rememberedDials) lostOnce.delete(lostOnce.values().next().value!);
        return err(lostAnswer);
      }
      if (request.to === simulatorMagicNumbers.refused) {
        return err({
          kind: 'rejected',
          message: `The simulator refuses calls to ${simulatorMagicNumbers.refused} (a magic number for testing provider errors).`,
          retryable: false,
        });
      }
      const now = options.clock.now().getTime();
      endsAt.push(now + options.delayMs);
      placed += 1;
      highestConcurrency = Math.max(highestConcurrency, inProgressAt(now));
      if (request.to === simulatorMagicNumbers.lostAnswerPlaced) return err(lostAnswer);
      const conversationId = newId('conversation', now);
      placedDials.set(request.dialId, conversationId);
      if (placedDials.size > rememberedDials) placedDials.delete(placedDials.keys().next().value!);
      return ok({ conversationId });
    },
    async findDial(dial) {
      if (dial.to === simulatorMagicNumbers.lostAnswerPlaced)
        return ok({ state: 'found', conversationId: lostAnswerConversationId(dial.dialId) });
      // A simulated call lives in the process that placed it: one placed by a process that died is gone.
      const conversationId = placedDials.get(dial.dialId);
      return ok(conversationId === undefined ? { state: 'not_found' } : { state: 'found', conversationId });
    },
    async checkCall(call) {
      const endsAt = call.createdAt.getTime() + options.delayMs;
      if (options.clock.now().getTime() < endsAt) {
        const check: CallCheck = { state: 'running', checkAgainAt: new Date(endsAt) };
        return ok(check);
      }
      return ok({ state: 'ended', outcome: simulatedOutcome(call, options.delayMs) });
    },
    stats: () => ({ placed, inProgress: inProgressAt(options.clock.now().getTime()), highestConcurrency }),
    resetStats() {
      endsAt = [];
      head = 0;
      placed = 0;
      highestConcurrency = 0;
    },
  };
}
