/**
 * What a provider kept of a call (its judgement, the results its agent collected, the conversation turn by
 * turn, where the recording is), made into `CallContent` from values each adapter has picked out of its
 * vendor's shape. The data is signed or read with our key, so it is kept, but bounded: a runaway transcript
 * or results object cannot fill the database, and text never holds U+0000 (PostgreSQL cannot store it).
 */
import type { AnalysisValue, CallAnalysis, CallContent, RecordingSource, TranscriptTurn } from './provider.interface.js';
import { finiteNumber } from './provider-values.js';

/** Bounds on what is stored of one call: far above any real conversation, well below harm. */
export const contentLimits = { turns: 5_000, turnChars: 10_000, dataKeys: 200, keyChars: 200, valueChars: 5_000 } as const;

function cleanText(text: string, max: number): string {
  return text.replace(/\u0000/g, '').slice(0, max);
}

/** A collected value as stored: scalars as given, anything else (an object, a list) as its JSON text. */
function analysisValue(value: unknown): AnalysisValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string') return cleanText(value, contentLimits.valueChars);
  return cleanText(JSON.stringify(value) ?? '', contentLimits.valueChars);
}

/** The provider's structured results (keys as it names them) in the stored shape; {} when there are none. */
export function analysisData(entries: Iterable<readonly [string, unknown]>): Record<string, AnalysisValue> {
  const data: Record<string, AnalysisValue> = {};
  let count = 0;
  for (const [key, value] of entries) {
    if (count >= contentLimits.dataKeys) break;
    const name = cleanText(key, contentLimits.keyChars);
    if (name === '' || name === '__proto__') continue;
    data[name] = analysisValue(value);
    count += 1;
  }
  return data;
}

/** The analysis of a call: the provider's judgement (null when it made none) and its collected results. */
export function callAnalysis(successful: boolean | null, data: Record<string, AnalysisValue>): CallAnalysis {
  return { successful, data };
}

/**
 * Turns in the stored shape, in the order given: those without a speaker we show (`role` null) or without
 * words are left out; an offset that is not a finite number of seconds at or after the start is null.
 */
export function transcriptTurns(items: Iterable<{ role: 'agent' | 'user' | null; text: unknown; offset: unknown }>): TranscriptTurn[] {
  const turns: TranscriptTurn[] = [];
  for (const item of items) {
    if (turns.length >= contentLimits.turns) break;
    if (item.role === null || typeof item.text !== 'string') continue;
    const text = cleanText(item.text, contentLimits.turnChars).trim();
    if (text === '') continue;
    const offset = finiteNumber(item.offset);
    turns.push({ role: item.role, text, offsetSeconds: offset !== null && offset >= 0 ? Math.round(offset * 1000) / 1000 : null });
  }
  return turns;
}

/** A recording URL the provider gave, when it is one callgate may fetch (http or https, of sane length). */
export function recordingUrl(value: unknown): RecordingSource | null {
  if (typeof value !== 'string' || value.length > 4_000) return null;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? { kind: 'url', url: url.toString() } : null;
  } catch {
    return null;
  }
}

/** The content of a call, or undefined when the provider gave none of it (nothing to store or merge). */
export function callContent(content: CallContent): CallContent | undefined {
  return content.analysis === null && content.turns === null && content.recording === null ? undefined : content;
}
