/**
 * Query-string values that a JSON schema cannot check with a useful message: a date and time with its zone,
 * and a phone number. Each refusal is a 400 invalid_request naming the parameter. A `+` sent unencoded in a
 * query string reads as a space (form encoding), the likeliest slip with both, so the message says so.
 */
import { ApiError } from '../errors/api-error.js';
import { parseIsoDateTime } from '../lib/clock.js';
import { e164Pattern, isE164 } from '../lib/phone-numbers.js';

/** `text` as a date, when it is an ISO 8601 date and time with its time zone (Z or an offset). */
export function parseQueryDateTime(text: string, param: string): Date {
  const at = parseIsoDateTime(text);
  if (at) return at;
  const plusAsSpace = / \d{2}(:?\d{2})?$/.test(text) && parseIsoDateTime(text.replace(/ (?=[^ ]*$)/, '+'));
  throw new ApiError(
    'invalid_request',
    plusAsSpace
      ? `${param} has a space where its offset's + should be: a + in a query string reads as a space, so send it as %2B (2026-11-24T09:00:00%2B01:00), or use Z.`
      : `${param} must be an ISO 8601 date and time with its time zone, such as 2026-11-24T09:00:00Z.`,
    { param },
  );
}

/** `text` when it is a phone number in E.164 format. */
export function parseQueryPhoneNumber(text: string, param: string): string {
  if (isE164(text)) return text;
  throw new ApiError(
    'invalid_request',
    isE164(`+${text.slice(1)}`) && text.startsWith(' ')
      ? `${param} starts with a space where its + should be: a + in a query string reads as a space, so send it as %2B (%2B14155550123).`
      : `${param} must be a phone number in E.164 format, such as +14155550123, its + sent as %2B (pattern ${e164Pattern}).`,
    { param },
  );
}
