/**
 * The portal's batch form read into createBatch's body: its multipart fields, its start time, calling
 * window and retries, and the service's refusal of a field in the form's words.
 */
import type { FastifyRequest } from 'fastify';
import { decodeUtf8 } from '../lib/csv.js';
import { maxAttemptsLimit, retryDelayMinutesLimit, retryReasons, type CreateBatchBody } from '../features/batches/batches.schemas.js';
import { recipientZone, weekdays } from '../features/batches/calling-window.js';
import { matchFieldShapes } from './portal-request.js';
import type { BatchFormValues } from './views/batches.view.js';

/** `2026-11-24T09:00` from a datetime-local field is UTC (the portal shows every time in UTC). */
export function scheduledAtOf(text: string): string | undefined {
  const value = text.trim();
  if (value === '') return undefined;
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/.test(value) ? `${value}Z` : value;
}

/**
 * A multipart form as the portal's other forms arrive: each field's text, or its texts when sent several
 * times (then shaped by the schema as for an urlencoded form: the first for a text, a list for
 * checkboxes), and the file as its text (null when it is not UTF-8; absent when none was chosen). A value
 * cut at a limit is refused whole (413), never read in part.
 */
export async function flattenMultipart(request: FastifyRequest): Promise<void> {
  if (!request.isMultipart()) return;
  const parts = (request.body ?? {}) as Record<string, unknown>;
  const body: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(parts)) {
    const sent = (Array.isArray(entry) ? entry : [entry]) as {
      type?: string;
      value?: unknown;
      valueTruncated?: boolean;
      filename?: string;
      _buf?: Buffer;
    }[];
    const part = sent[0];
    if (part?.type === 'field') {
      if (sent.some((field) => field.valueTruncated)) throw Object.assign(new Error(`form field ${name} too large`), { statusCode: 413 });
      const texts = sent.map((field) => (typeof field.value === 'string' ? field.value : ''));
      body[name] = texts.length === 1 ? texts[0] : texts;
    } else if (part?.type === 'file') {
      const bytes = part._buf ?? Buffer.alloc(0);
      if (bytes.length === 0 && !part.filename) continue;
      body[name] = decodeUtf8(bytes);
    }
  }
  request.body = body;
  await matchFieldShapes(request);
}

export const wholeNumber = (text: string) => (/^[0-9]{1,4}$/.test(text) ? Number(text) : Number.NaN);

/** The form's calling window, for createBatch to check: none while its fields are all left empty. */
export function callingWindowOf(values: BatchFormValues): Pick<CreateBatchBody, 'calling_window'> {
  const { windowStart: start, windowEnd: end, windowTimeZone: zone } = values;
  if (start === '' && end === '' && zone === '' && values.windowDays.length === 0) return {};
  // A browser sends only the form's days; anything else is left out rather than refused.
  const days = weekdays.filter((day) => values.windowDays.includes(day));
  const fallback = values.windowFallbackTimeZone;
  return {
    calling_window: {
      start,
      end,
      time_zone: zone,
      ...(days.length > 0 ? { days } : {}),
      // The fallback serves "recipient" only: a zone left in its box after choosing a named one is not a fault.
      ...(zone === recipientZone && fallback !== '' ? { fallback_time_zone: fallback } : {}),
    },
  };
}

/** The form's retries: none with 1 dial per recipient, a message for a field out of range. */
export function retryOf(values: BatchFormValues): CreateBatchBody['retry'] | string {
  const maxAttempts = wholeNumber(values.retryMaxAttempts);
  if (!(maxAttempts >= 1 && maxAttempts <= maxAttemptsLimit))
    return `Dials per recipient must be a whole number from 1 to ${maxAttemptsLimit}.`;
  if (maxAttempts === 1) return undefined;
  const delay = wholeNumber(values.retryDelayMinutes);
  if (!(delay >= 1 && delay <= retryDelayMinutesLimit))
    return `Minutes between dials must be a whole number from 1 to ${retryDelayMinutesLimit}.`;
  const on = retryReasons.filter((reason) => values.retryOn.includes(reason));
  if (on.length === 0) return 'Tick busy, no answer or both: the calls to dial again.';
  return { on, max_attempts: maxAttempts, delay_minutes: delay };
}

/** The API's names of the window's fields, as the form labels them. */
const windowLabels: [string, string][] = [
  ['calling_window.fallback_time_zone', 'the fallback time zone'],
  ['calling_window.time_zone', 'the time zone'],
  ['calling_window.start', "the window's start"],
  ['calling_window.end', "the window's end"],
  ['calling_window.days', 'the days'],
  ['time_zone "recipient"', `time zone ${recipientZone}`],
];

/** The service's refusal of a field (the CSV was checked before) in the form's words. */
export function invalidMessage(param: string, message: string, graceMs: number): string {
  if (param !== 'scheduled_at') {
    const worded = windowLabels.reduce((text, [name, label]) => text.replaceAll(name, label), message);
    return `${worded.charAt(0).toUpperCase()}${worded.slice(1)}`;
  }
  if (message.includes('past'))
    return `The start time is in the past (more than ${graceMs / 1000} seconds ago): leave it empty to start now.`;
  if (message.includes('30 days')) return 'The start time is more than 30 days ahead.';
  return 'The start time is not a date and time: use the date picker, or leave it empty to start now.';
}
