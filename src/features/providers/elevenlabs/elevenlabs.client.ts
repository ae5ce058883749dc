/**
 * A thin client of the ElevenLabs Agents API (`xi-api-key` auth). It never retries: their outbound-call
 * endpoint has no idempotency key, so a second try could dial twice. Every failure comes back as a value
 * that says what happened (HTTP status, unreachable, timed out), and the API key never leaves this file.
 */
export interface ElevenLabsClientOptions {
  readonly apiKey: string;
  readonly baseUrl: string;
  readonly timeoutMs: number;
}

export type ElevenLabsResponse =
  | { readonly kind: 'ok'; readonly status: number; readonly body: unknown }
  | { readonly kind: 'http_error'; readonly status: number; readonly body: unknown; readonly retryAfter: string | null }
  /** `sent`: whether the request may have reached the provider (false only when the connection was refused or the host not found). */
  | { readonly kind: 'unreachable'; readonly message: string; readonly sent: boolean }
  | { readonly kind: 'timeout' };

export interface ElevenLabsClient {
  request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ElevenLabsResponse>;
}

/** Network errors that mean the request never left this machine. */
const notSentCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'ERR_INVALID_URL']);

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text.slice(0, 500);
  }
}

export function createElevenLabsClient(options: ElevenLabsClientOptions): ElevenLabsClient {
  return {
    async request(method, path, body) {
      const init: RequestInit = {
        method,
        headers: {
          'xi-api-key': options.apiKey,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        signal: AbortSignal.timeout(options.timeoutMs),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      };
      try {
        const response = await fetch(`${options.baseUrl}${path}`, init);
        const parsed = await readBody(response);
        if (response.ok) return { kind: 'ok', status: response.status, body: parsed };
        return { kind: 'http_error', status: response.status, body: parsed, retryAfter: response.headers.get('retry-after') };
      } catch (error) {
        const name = (error as { name?: string }).name;
        if (name === 'TimeoutError' || name === 'AbortError') return { kind: 'timeout' };
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        const code = cause?.code;
        return {
          kind: 'unreachable',
          message: code ?? cause?.message ?? (error as Error).message,
          sent: code === undefined || !notSentCodes.has(code),
        };
      }
    },
  };
}
