/**
 * The bodies the request log keeps: the request's JSON as sent and the response as answered, each at most
 * 16 KB, with nothing secret. Run after the answer went out (the onResponse hook), never before it: the
 * request path only keeps references to text it already has (the parser's string, the serialized reply).
 */

/** Stored bytes per body, marker included (Stripe's dashboard shows about as much). */
export const loggedBodyMaxBytes = 16 * 1024;

/** What replaces a secret value. */
export const redactedValue = '[redacted]';

/**
 * API tokens and webhook signing secrets wherever they appear, even in metadata values (a customer pasting a
 * token there does not make it less secret), and their beginnings, should a cut fall inside one.
 */
const secretPatterns = /\bcg_(?:live|test)_[0-9a-f]{6,}|\bwhsec_[A-Za-z0-9+/=]{6,}/g;

/**
 * Fields that hold secrets in any body of ours or to come (an endpoint's signing secret, a password, a
 * token), redacted wherever they are outside `metadata`, whose values are the customer's and kept. No /v1
 * route sends or answers one today; this keeps a future one from leaking into the log.
 */
const secretFields = new Set(['secret', 'previous_secret', 'password', 'token', 'api_key']);
const secretFieldInText = /"(?:secret|previous_secret|password|token|api_key)"\s*:/;

function redactFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactFields);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = key === 'metadata' ? item : secretFields.has(key) && item !== null ? redactedValue : redactFields(item);
  }
  return out;
}

/** `text` without secrets: the JSON is re-written only when a secret field's name appears in it. */
export function redactSecrets(text: string): string {
  let out = text;
  if (secretFieldInText.test(out)) {
    try {
      out = JSON.stringify(redactFields(JSON.parse(out)));
    } catch {
      // Not JSON (a refused body): no field to find, the patterns below still apply.
    }
  }
  return out.replace(secretPatterns, redactedValue);
}

const encoder = new TextEncoder();

function cutMarker(keptBytes: number, totalBytes: number): string {
  return `\n… [cut: the first ${keptBytes} of ${totalBytes} bytes are kept]`;
}

/**
 * `text` if it fits in `maxBytes` of UTF-8, else its beginning, cut between characters (never inside one),
 * and a marker saying it was cut, all within `maxBytes`.
 */
export function capText(text: string, maxBytes = loggedBodyMaxBytes): string {
  // Three bytes per UTF-16 unit at most: short text fits without counting.
  if (text.length * 3 <= maxBytes) return text;
  const totalBytes = Buffer.byteLength(text, 'utf8');
  if (totalBytes <= maxBytes) return text;
  const room = maxBytes - Buffer.byteLength(cutMarker(maxBytes, totalBytes), 'utf8');
  // encodeInto writes whole characters only, so `read` ends on a character boundary (surrogate pairs too).
  const { read, written } = encoder.encodeInto(text, new Uint8Array(room));
  return text.slice(0, read) + cutMarker(written, totalBytes);
}

/** True when `text` was cut by capText (the portal then shows it as text, not as JSON). */
export function wasCut(text: string): boolean {
  return /\n… \[cut: the first \d+ of \d+ bytes are kept\]$/.test(text);
}

/** Bodies up to this size are read as JSON to find secret fields; every /v1 body but a batch's is. */
const parsedBodyMaxBytes = 64 * 1024;
const secretFieldValue = /("(?:secret|previous_secret|password|token|api_key)"\s*:\s*)"(?:[^"\\]|\\.)*"?/g;

/**
 * The body as the log keeps it: null when there was none. A larger body (a batch of up to 10 MB) is cut
 * first and its secret fields found by pattern, metadata included, so that no more than 16 KB is ever read.
 */
export function loggedBody(text: string | null | undefined): string | null {
  if (text === null || text === undefined || text === '') return null;
  if (text.length * 3 <= parsedBodyMaxBytes || Buffer.byteLength(text, 'utf8') <= parsedBodyMaxBytes) return capText(redactSecrets(text));
  return capText(text).replace(secretFieldValue, `$1"${redactedValue}"`).replace(secretPatterns, redactedValue);
}
