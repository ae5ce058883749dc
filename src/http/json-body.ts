/**
 * The checks of the API's body parser (json-body.plugin.ts) that read the text as sent: its encoding, its
 * nesting, and numbers a double cannot keep.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-error.js';

/**
 * How deeply arrays and objects may nest in a JSON body. A call's body is two levels deep (metadata is flat
 * by the spec), so this is far above anything legitimate, and far below what a recursive walk of the value
 * (the Idempotency-Key's fingerprint, schema validation) can take: 3,000 nested arrays used to exhaust the
 * stack there and answer 500.
 */
export const jsonMaxDepth = 32;

/**
 * True when `text` nests arrays or objects deeper than `maxDepth`. A single pass with a counter, run before
 * any parser or walk sees the body; brackets inside strings are skipped. It need not judge validity: a
 * malformed body that passes is refused by the parser next.
 */
export function nestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c /* \ */) i++;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/** The charset parameter of a Content-Type, lower-cased and unquoted, or undefined when there is none. */
export function contentTypeCharset(contentType: string | undefined): string | undefined {
  if (!contentType) return undefined;
  for (const parameter of contentType.split(';').slice(1)) {
    const [name, ...rest] = parameter.split('=');
    if (name?.trim().toLowerCase() !== 'charset') continue;
    return rest
      .join('=')
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
  }
  return undefined;
}

/** A Content-Type charset or Content-Encoding the parser does not read, as its 415. */
export function encodingProblem(request: FastifyRequest): ApiError | null {
  const charset = contentTypeCharset(request.headers['content-type']);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return new ApiError('unsupported_media_type', `JSON bodies must be UTF-8; charset=${charset.slice(0, 40)} is not supported.`);
  }
  const encoding = request.headers['content-encoding']?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    return new ApiError(
      'unsupported_media_type',
      `Content-Encoding ${encoding.slice(0, 40)} is not supported; send the body uncompressed.`,
    );
  }
  return null;
}

/** Whether `text` is JSON to a parser without secure-json-parse's prototype checks. */
export function parsesAsPlainJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A JSON number's decimal value as sign, significant digits and exponent, so that 1.50e2 and 150 compare equal. */
function decimalValue(token: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(token);
  if (!match) return token;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match;
  const digits = `${whole}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  const significant = digits.replace(/0+$/, '');
  // The value is 0.<significant> × 10^power; the point sits after the whole part, less the leading zeros.
  const leadingZeros = whole.length + fraction.length - digits.length;
  const power = Number(exponent) + whole.length - leadingZeros;
  return `${sign}${significant}e${power}`;
}

/** Keys joined with dots, an array's indexes in brackets: `metadata.n`, `recipients[3].metadata.n`. */
function paramPath(path: readonly (string | number)[]): string {
  return path.reduce<string>((text, part) => (typeof part === 'number' ? `${text}[${part}]` : text === '' ? part : `${text}.${part}`), '');
}

/** Where a number that cannot be kept was found, and what it would have become. */
export interface InexactNumber {
  readonly token: string;
  /** The field, as `param` names fields: `metadata.n`, `to`, `recipients[3].metadata.n`; empty at the top level. */
  readonly path: string;
  /** What it would read back as (`Infinity` out of range). */
  readonly readBack: string;
}

/**
 * The first number in `text` (valid JSON) that would not read back as sent once stored: one out of a
 * double's range (1e400 becomes Infinity, 1e-400 zero) or with more precision than a double holds
 * (12345678901234567890 reads back as 12345678901234567000, 9007199254740993.0 as 9007199254740992).
 * Such a number would reach the agent changed, so it is refused instead. Every number as JSON.stringify
 * writes a double is kept (that is its shortest exact form), as are the integers up to ±2^53 and decimals
 * of up to 15 significant digits.
 */
const mayHaveInexactNumber = /\d{16}|(?<![\w.])-?\d+(?:\.\d+)?[eE]/;

export function inexactNumber(text: string): InexactNumber | null {
  // Most bodies have no long digit run and no number with an exponent: skip the scan. A number starts
  // after `:`, `,`, `[` or white space, never after a letter, digit, `_` or `.` as a digit inside an id
  // does (`agt_01j9e…`); a match that is no number only costs the scan.
  if (!mayHaveInexactNumber.test(text)) return null;
  const path: (string | number)[] = [];
  const containers: ('object' | 'array')[] = [];
  let expectKey = false;
  const number = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (expectKey) {
        path[path.length - 1] = JSON.parse(text.slice(i, end + 1)) as string;
        expectKey = false;
      }
      i = end + 1;
    } else if (c === '{' || c === '[') {
      containers.push(c === '{' ? 'object' : 'array');
      path.push(c === '{' ? '' : 0);
      expectKey = c === '{';
      i++;
    } else if (c === '}' || c === ']') {
      containers.pop();
      path.pop();
      i++;
    } else if (c === ',') {
      if (containers.at(-1) === 'array') path[path.length - 1] = (path.at(-1) as number) + 1;
      else expectKey = true;
      i++;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      number.lastIndex = i;
      const token = number.exec(text)![0];
      const value = Number(token);
      const readBack = String(value);
      if (!Number.isFinite(value) || decimalValue(readBack) !== decimalValue(token)) return { token, path: paramPath(path), readBack };
      i += token.length;
    } else {
      i++; // white space, ':', and the letters of true, false and null
    }
  }
  return null;
}
