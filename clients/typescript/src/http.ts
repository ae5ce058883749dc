/**
 * One request to the API, tried again when trying again is safe and can help: when the answer says
 * `retryable` (429 and 5xx but a provider's definite refusal, `502 provider_error`; without a callgate body,
 * every 429 and 5xx) and when no answer came (connection refused or broken, timeout), with exponential
 * backoff and full jitter, or after the server's `Retry-After`; never on another 4xx. A create carries one Idempotency-Key across all its
 * tries, so the server places it once however many tries reach it (after a lost provider answer the server
 * holds the key until it knows whether the call was placed: a retry gets that call, never a second one).
 */
import { AbortedError, CallgateError, ConnectionError, errorClassFor } from './errors.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  readonly apiKey: string;
  /** Where callgate answers, such as `https://callgate.example.com` (no `/v1`). */
  readonly baseUrl: string;
  /** Tries after the first one (default 2: at most three tries in all). */
  readonly maxRetries?: number;
  /** How long one try may take before it is abandoned (and tried again), in ms; default 30,000. */
  readonly timeoutMs?: number;
  /** The delay before the first retry is drawn from 0 to this (ms), doubling each retry; default 500. */
  readonly initialRetryDelayMs?: number;
  /** The cap of that doubling (ms); default 8,000. */
  readonly maxRetryDelayMs?: number;
  /**
   * A `Retry-After` longer than this (ms, default 60,000) is not waited out: the error is thrown at once,
   * with `retry_after_seconds`, for the caller to schedule.
   */
  readonly maxRetryAfterMs?: number;
  /** The fetch to use; global fetch by default. Tests inject faults through it. */
  readonly fetch?: FetchLike;
}

export interface RequestOptions {
  /** The Idempotency-Key of a create; one is made (uuid v4) when not given. Kept across retries. */
  readonly idempotencyKey?: string;
  /** Stops the request, retries included; never retried itself. */
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  readonly maxRetries?: number;
}

/** What the client saw of the answer that it returns, for logs and tests. */
export interface ResponseInfo {
  readonly status: number;
  readonly headers: Headers;
  readonly request_id: string | null;
  /** The Idempotency-Key sent, on creates. */
  readonly idempotency_key: string | null;
  /** The server answered from its idempotency record (`Idempotent-Replayed: true`): nothing was created again. */
  readonly replayed: boolean;
  /** Tries made, this one included. */
  readonly attempts: number;
}

export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The path after the base URL, starting with `/v1/`, its parts already encoded. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  /** A creating POST: it carries an Idempotency-Key. */
  readonly idempotent?: boolean;
}

const defaults = {
  maxRetries: 2,
  timeoutMs: 30_000,
  initialRetryDelayMs: 500,
  maxRetryDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
};

/** Error codes of Node's sockets and undici (fetch) that mean the connection failed or broke. */
const networkCodes = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether a thrown error means no (whole) answer came, so that the request may be tried again. */
export function isNetworkError(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const code = codeOf(cause);
    if (code !== undefined && networkCodes.has(code)) return true;
    // undici's fetch rejects with TypeError "fetch failed" for any network failure, the reason in `cause`;
    // "terminated" when the body broke off. Node's http says "socket hang up".
    if (/^(fetch failed|terminated)$|socket hang up|other side closed/i.test(cause.message)) return true;
  }
  return false;
}

/** `Retry-After` in ms: delta seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date names its day and month ("Tue, 24 Nov 2026 09:00:05 GMT"); Date.parse would read "-1" as a year.
  if (!/[a-z]{3}/i.test(text)) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

type Outcome = { kind: 'answer'; response: Response; text: string } | { kind: 'no_answer'; error: CallgateError };

/** A successful answer whose body is left unread, for the caller to stream (a recording). */
export interface StreamedAnswer {
  readonly response: Response;
  readonly info: ResponseInfo;
}

export class Transport {
  private readonly options: Required<Omit<TransportOptions, 'fetch'>> & { fetch: FetchLike };

  constructor(options: TransportOptions) {
    if (!options.apiKey) throw new TypeError('callgate: apiKey is required (cg_live_… or cg_test_…).');
    if (!options.baseUrl) throw new TypeError('callgate: baseUrl is required, such as https://callgate.example.com.');
    const fetchImpl = options.fetch ?? (globalThis.fetch as FetchLike | undefined);
    if (!fetchImpl) throw new TypeError('callgate: no global fetch (Node 20 or newer has one); pass the fetch option.');
    this.options = {
      apiKey: options.apiKey,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      maxRetries: options.maxRetries ?? defaults.maxRetries,
      timeoutMs: options.timeoutMs ?? defaults.timeoutMs,
      initialRetryDelayMs: options.initialRetryDelayMs ?? defaults.initialRetryDelayMs,
      maxRetryDelayMs: options.maxRetryDelayMs ?? defaults.maxRetryDelayMs,
      maxRetryAfterMs: options.maxRetryAfterMs ?? defaults.maxRetryAfterMs,
      fetch: fetchImpl,
    };
  }

  /** Sends `request`, retrying as the module comment says, and returns the parsed body with what was seen. */
  async request<T>(request: ApiRequest, options: RequestOptions = {}): Promise<{ body: T; response: ResponseInfo }> {
    const answer = await this.send(request, options, true);
    return { body: parseBody<T>(answer.text, answer.info), response: answer.info };
  }

  /**
   * As `request`, but a success's body is not read: it is the caller's to stream (a recording may be tens
   * of megabytes). The timeout covers the answer's headers; retries happen before any body is handed out.
   */
  async stream(request: ApiRequest, options: RequestOptions = {}): Promise<StreamedAnswer> {
    const answer = await this.send(request, options, false);
    return { response: answer.response, info: answer.info };
  }

  private async send(
    request: ApiRequest,
    options: RequestOptions,
    readBody: boolean,
  ): Promise<{ response: Response; text: string; info: ResponseInfo }> {
    const url = this.urlOf(request);
    const idempotencyKey = request.idempotent ? (options.idempotencyKey ?? globalThis.crypto.randomUUID()) : undefined;
    const headers: Record<string, string> = {
      accept: readBody ? 'application/json' : '*/*',
      authorization: `Bearer ${this.options.apiKey}`,
      'user-agent': 'callgate-typescript/0.1.0',
    };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    const init: RequestInit = {
      method: request.method,
      headers,
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
    };
    const maxRetries = options.maxRetries ?? this.options.maxRetries;

    for (let attempt = 1; ; attempt++) {
      const outcome = await this.tryOnce(url, init, options, idempotencyKey, readBody);
      const retriesLeft = attempt <= maxRetries;
      if (outcome.kind === 'no_answer') {
        if (!retriesLeft) throw outcome.error;
        await this.wait(this.backoffMs(attempt), options.signal, idempotencyKey);
        continue;
      }
      const { response, text } = outcome;
      const requestId = response.headers.get('x-request-id');
      if (response.ok) {
        const info: ResponseInfo = {
          status: response.status,
          headers: response.headers,
          request_id: requestId,
          idempotency_key: idempotencyKey ?? null,
          replayed: response.headers.get('idempotent-replayed') === 'true',
          attempts: attempt,
        };
        return { response, text, info };
      }
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      const error = apiErrorOf(response, text, requestId, retryAfterMs, idempotencyKey);
      // The answer says whether trying again can help (a 502 provider_error is a definite no); without a
      // callgate body (a proxy's page), 429 and 5xx are tried again.
      const retryable = error.retryable ?? (response.status === 429 || response.status >= 500);
      if (!retryable || !retriesLeft) throw error;
      if (retryAfterMs !== undefined && retryAfterMs > this.options.maxRetryAfterMs) throw error;
      await this.wait(retryAfterMs ?? this.backoffMs(attempt), options.signal, idempotencyKey);
    }
  }

  private urlOf(request: ApiRequest): string {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(request.query ?? {})) if (value !== undefined) params.set(name, String(value));
    const query = params.toString();
    return `${this.options.baseUrl}${request.path}${query === '' ? '' : `?${query}`}`;
  }

  /** Full jitter (AWS's "exponential backoff and jitter"): a delay drawn from 0 to the doubled cap. */
  private backoffMs(attempt: number): number {
    const cap = Math.min(this.options.maxRetryDelayMs, this.options.initialRetryDelayMs * 2 ** (attempt - 1));
    return Math.random() * cap;
  }

  private async wait(ms: number, signal: AbortSignal | undefined, idempotencyKey: string | undefined): Promise<void> {
    try {
      await sleep(ms, signal);
    } catch (reason) {
      throw aborted(reason, idempotencyKey);
    }
  }

  /** One try: the answer read to its end, or the reason none came. A caller's abort is thrown. */
  private async tryOnce(
    url: string,
    init: RequestInit,
    options: RequestOptions,
    idempotencyKey: string | undefined,
    readBody = true,
  ): Promise<Outcome> {
    if (options.signal?.aborted) throw aborted(options.signal.reason, idempotencyKey);
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`callgate: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onAbort = () => controller.abort(options.signal?.reason);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await this.options.fetch(url, { ...init, signal: controller.signal });
      // A success to stream is handed out unread (the caller stops it with `body.cancel()`).
      if (!readBody && response.ok) return { kind: 'answer', response, text: '' };
      // The body is read inside the try: a connection that breaks mid-body is no answer either.
      const text = await response.text();
      return { kind: 'answer', response, text };
    } catch (error) {
      if (timedOut) {
        return {
          kind: 'no_answer',
          error: new ConnectionError({
            status: null,
            code: 'timeout',
            message: `No answer from callgate within ${timeoutMs} ms (${init.method} ${url}).`,
            request_id: null,
            idempotency_key: idempotencyKey,
            cause: error,
          }),
        };
      }
      if (options.signal?.aborted) throw aborted(options.signal.reason, idempotencyKey);
      if (!isNetworkError(error)) {
        // Not the network (a malformed URL, say): trying again would fail the same way.
        throw new CallgateError({
          status: null,
          code: 'request_failed',
          message: `The request could not be sent (${init.method} ${url}): ${describe(error)}.`,
          request_id: null,
          idempotency_key: idempotencyKey,
          cause: error,
        });
      }
      return {
        kind: 'no_answer',
        error: new ConnectionError({
          status: null,
          code: 'connection_error',
          message: `The connection to callgate failed before an answer (${init.method} ${url}): ${describe(error)}.`,
          request_id: null,
          idempotency_key: idempotencyKey,
          cause: error,
        }),
      };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }
}

function parseBody<T>(text: string, info: ResponseInfo): T {
  if (text === '') return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new CallgateError({
      status: info.status,
      code: 'invalid_response',
      message: `callgate answered ${info.status} with a body that is not JSON: ${text.slice(0, 200)}`,
      request_id: info.request_id,
      idempotency_key: info.idempotency_key ?? undefined,
      cause: error,
    });
  }
}

function describe(error: unknown): string {
  const parts: string[] = [];
  for (let cause = error, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth++) {
    const code = codeOf(cause);
    parts.push(code === undefined ? cause.message : `${cause.message} (${code})`);
  }
  return parts.join(': ') || String(error);
}

function aborted(reason: unknown, idempotencyKey: string | undefined): AbortedError {
  return new AbortedError({
    status: null,
    code: 'aborted',
    message: 'The request was aborted by its AbortSignal.',
    request_id: null,
    idempotency_key: idempotencyKey,
    cause: reason,
  });
}

/** The error of an answer: `{error, message, request_id, param}` as callgate renders every failure. */
function apiErrorOf(
  response: Response,
  text: string,
  requestId: string | null,
  retryAfterMs: number | undefined,
  idempotencyKey: string | undefined,
): CallgateError {
  let body: { error?: unknown; message?: unknown; request_id?: unknown; param?: unknown; retryable?: unknown } = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object') body = parsed as typeof body;
  } catch {
    // Not callgate's JSON (a proxy's page, say): the status speaks alone.
  }
  const Class = errorClassFor(response.status);
  return new Class({
    status: response.status,
    code: typeof body.error === 'string' ? body.error : `http_${response.status}`,
    message:
      typeof body.message === 'string'
        ? body.message
        : `callgate answered ${response.status} ${response.statusText}: ${text.slice(0, 200)}`,
    request_id: typeof body.request_id === 'string' ? body.request_id : requestId,
    param: typeof body.param === 'string' ? body.param : undefined,
    retry_after_seconds: retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
    idempotency_key: idempotencyKey,
    retryable: typeof body.retryable === 'boolean' ? body.retryable : undefined,
  });
}
