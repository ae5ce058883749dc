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
import { Readable } from 'node:stream';
import type { Clock } from '../../lib/clock.js';
import { derivedIdBody, idPrefixes, newId } from '../../lib/ids.js';
import { err, ok } from '../../lib/result.js';
import { analysisData } from './provider-content.js';
import type {
  AnalysisValue,
  CallCheck,
  CallContent,
  CallOutcome,
  CallReference,
  TranscriptTurn,
  VoiceProvider,
} from './provider.interface.js';

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
export function lostAnswerConversationId(dialId: string, askedAt: Date): string {
  // Shaped as every other conversation id (`conv_01m8…`, its time when the dial asked), so one account's call
  // ids share one format; ids made before (`conv_lost…`) stay valid, as the simulator reads none of it.
  return `${idPrefixes.conversation}_${derivedIdBody(askedAt.getTime(), digest(dialId))}`;
}

/** How many dials the simulator remembers having placed, for `findDial` after a lost answer or a crash. */
const rememberedDials = 10_000;

/** Longest ring between placing a simulated call and its answer; a short delay rings for a third of it. */
const maxRingMs = 2_000;
/** Conversation lengths drawn when the delay leaves room for them. */
const durationRangeSeconds = { min: 15, max: 240 } as const;

/** Each simulated conversation: its summary, what the contact said, and the results an agent would collect. */
const conversations = [
  {
    summary: 'The agent reached the contact, confirmed the appointment and answered a question about parking.',
    agent: 'I am calling to confirm your appointment tomorrow at 10 am. Does that still work for you?',
    user: 'Yes, that works. Is there parking nearby?',
    close: 'There is free parking behind the building. See you tomorrow!',
    successful: true,
    data: { outcome: 'confirmed', follow_up_needed: false },
  },
  {
    summary: 'The contact asked to reschedule; the agent offered two new times and the contact chose the later one.',
    agent: 'I am calling about your appointment tomorrow at 10 am. Can you still make it?',
    user: 'Not really, could we move it? Thursday would be better.',
    close: 'I can offer Thursday at 9 or at 2. Two o’clock it is; you will get a confirmation.',
    successful: true,
    data: { outcome: 'rescheduled', follow_up_needed: false },
  },
  {
    summary: 'The agent delivered the reminder; the contact confirmed and had no further questions.',
    agent: 'This is a quick reminder about your appointment tomorrow. Will you be there?',
    user: 'Yes, I will be there. No questions, thanks.',
    close: 'Great, thank you for your time. Goodbye!',
    successful: true,
    data: { outcome: 'confirmed', follow_up_needed: false },
  },
  {
    summary: 'The contact was interested and asked for a follow-up email with pricing details.',
    agent: 'I am calling about the offer you asked us about last week. Is now a good time?',
    user: 'Sure. Could you email me the pricing details?',
    close: 'Of course, the pricing goes out by email today. Thank you!',
    successful: true,
    data: { outcome: 'interested', follow_up_needed: true },
  },
  {
    summary: 'The agent verified the delivery address and the contact confirmed the time window.',
    agent: 'I am calling to check the delivery address and time window for your order.',
    user: 'The address is right, but please deliver after 2 pm.',
    close: 'Noted: after 2 pm at the address on file. Thank you!',
    successful: false,
    data: { outcome: 'needs_change', follow_up_needed: true },
  },
] as const;

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The name a greeting uses, when the metadata gives one. */
function contactName(metadata: CallReference['metadata']): string | null {
  for (const key of ['name', 'first_name', 'customer_name', 'contact_name']) {
    const value = metadata?.[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim().slice(0, 60);
  }
  return null;
}

/**
 * What a simulated conversation kept: five turns spread over its length, an analysis whose data is the
 * conversation's results beside the call's metadata (up to ten of its values, so a client sees its own
 * variables come back), and a short recording the simulator itself serves.
 */
function simulatedContent(call: CallReference, durationSeconds: number, pick: (typeof conversations)[number]): CallContent {
  const name = contactName(call.metadata);
  const lines: [TranscriptTurn['role'], string][] = [
    ['agent', `Hello${name === null ? '' : ` ${name}`}, this is the callgate simulator.`],
    ['user', 'Hi, who is this?'],
    ['agent', pick.agent],
    ['user', pick.user],
    ['agent', pick.close],
  ];
  const step = durationSeconds / lines.length;
  const fromMetadata = Object.entries(call.metadata ?? {}).slice(0, 10);
  const data: Record<string, AnalysisValue> = { ...analysisData(fromMetadata), ...pick.data };
  return {
    analysis: { successful: pick.successful, data },
    turns: lines.map(([role, text], index) => ({ role, text, offsetSeconds: Math.round(index * step * 10) / 10 })),
    recording: { kind: 'provider' },
  };
}

/** Seconds of audio in a simulated recording: enough to play, small enough to serve from memory. */
const recordingSeconds = 2;
const sampleRate = 8_000;

/**
 * The simulated recording: a WAV file (16-bit mono PCM) of a soft tone whose pitch depends on the call,
 * fading in and out so that it does not click.
 */
export function simulatedRecording(conversationId: string): Buffer {
  const samples = recordingSeconds * sampleRate;
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write('WAVEfmt ', 8, 'ascii');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(sampleRate, 24);
  wav.writeUInt32LE(sampleRate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(samples * 2, 40);
  const pitch = 330 + (digest(conversationId).readUInt16BE(0) % 220);
  for (let i = 0; i < samples; i++) {
    const fade = Math.min(1, i / 800, (samples - i) / 800);
    wav.writeInt16LE(Math.round(Math.sin((2 * Math.PI * pitch * i) / sampleRate) * 6_000 * fade), 44 + i * 2);
  }
  return wav;
}

/**
 * The end of a simulated call that was cancelled at `at`, before its own end: still ringing, it fails as
 * `cancelled`; answered, it completes with what was said until then. A magic number's call never answers.
 */
function cancelledOutcome(call: CallReference, delayMs: number, at: Date): CallOutcome {
  const answeredAt = call.createdAt.getTime() + Math.min(maxRingMs, Math.floor(delayMs / 3));
  const neverAnswers = [simulatorMagicNumbers.busy, simulatorMagicNumbers.noAnswer, simulatorMagicNumbers.voicemail] as string[];
  if (neverAnswers.includes(call.to) || at.getTime() < answeredAt) {
    return { status: 'failed', reason: 'cancelled', message: 'The call was cancelled before it was answered.', failedAt: at };
  }
  const durationSeconds = Math.floor((at.getTime() - answeredAt) / 1000);
  const pick = conversations[digest(call.conversationId).readUInt8(2) % conversations.length] ?? conversations[0];
  return {
    status: 'completed',
    startedAt: new Date(at.getTime() - durationSeconds * 1000),
    endedAt: at,
    durationSeconds,
    transcriptSummary: 'The call was ended early: it was cancelled while the agent was speaking with the contact.',
    content: simulatedContent(call, durationSeconds, pick),
  };
}

export function simulatedOutcome(call: CallReference, delayMs: number): CallOutcome {
  const endsAt = new Date(call.createdAt.getTime() + delayMs);
  const cancelledAt = call.cancelRequestedAt;
  if (cancelledAt && cancelledAt.getTime() < endsAt.getTime()) return cancelledOutcome(call, delayMs, cancelledAt);
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
  const pick = conversations[hash.readUInt8(2) % conversations.length] ?? conversations[0];
  return {
    status: 'completed',
    startedAt: new Date(endsAt.getTime() - durationSeconds * 1000),
    endedAt: endsAt,
    durationSeconds,
    transcriptSummary: pick.summary,
    content: simulatedContent(call, durationSeconds, pick),
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
        return ok({ state: 'found', conversationId: lostAnswerConversationId(dial.dialId, dial.askedAt) });
      // A simulated call lives in the process that placed it: one placed by a process that died is gone.
      const conversationId = placedDials.get(dial.dialId);
      return ok(conversationId === undefined ? { state: 'not_found' } : { state: 'found', conversationId });
    },
    // Any simulated call can be ended during its simulated seconds: it ends when the cancel was agreed,
    // which the call's row keeps (cancel_requested_at), so that the outcome can be worked out again.
    async cancel(call) {
      const ended = options.clock.now().getTime() >= call.createdAt.getTime() + options.delayMs;
      return ok({ state: ended ? 'already_ended' : 'ending' });
    },
    async checkCall(call) {
      const endsAt = Math.min(call.createdAt.getTime() + options.delayMs, call.cancelRequestedAt?.getTime() ?? Number.POSITIVE_INFINITY);
      if (options.clock.now().getTime() < endsAt) {
        const check: CallCheck = { state: 'running', checkAgainAt: new Date(endsAt) };
        return ok(check);
      }
      return ok({ state: 'ended', outcome: simulatedOutcome(call, options.delayMs) });
    },
    async fetchRecording(call) {
      const audio = simulatedRecording(call.conversationId);
      return ok({ contentType: 'audio/wav', contentLength: audio.length, body: Readable.from([audio]) });
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
