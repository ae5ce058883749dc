/**
 * A thin JSON client for a voice provider's REST API, shared by the adapters. It never retries: no provider
 * offers an idempotency key on its create endpoint, so a second try could dial twice (their SDKs retry
 * POSTs by default, which is why none is used). Every failure comes back as a value that says what happened
 * (HTTP status, unreachable before or after sending, timed out), and the credentials never leave this file
 * and the adapter's own.
 */
import { isIP } from 'node:net';
import type { ProviderFailure } from './provider.interface.js';
import { createRecordingFetcher, type RecordingFetcher } from './recording-fetch.js';

export interface ProviderHttpOptions {
  readonly baseUrl: string;
  /** Sent with every request (the credential header). */
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

export type ProviderResponse =
  | { readonly kind: 'ok'; readonly status: number; readonly body: unknown }
  | { readonly kind: 'http_error'; readonly status: number; readonly body: unknown; readonly retryAfter: string | null }
  /** `sent`: whether the request may have reached the provider (false only when the connection was refused or the host not found). */
  | { readonly kind: 'unreachable'; readonly message: string; readonly sent: boolean }
  | { readonly kind: 'timeout' };

export type ProviderErrorResponse = Exclude<ProviderResponse, { kind: 'ok' }>;

export interface ProviderHttpClient {
  request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ProviderResponse>;
  /**
   * A POST to a URL the provider gave (Vapi's control URL), as given; with the credentials only when it is at
   * one of the provider's own hosts.
   */
  postTo(url: string, body: unknown): Promise<ProviderResponse>;
  /** A recording, streamed: from the API's `path` with the credentials, or from a `url` the provider gave without them. */
  recording: RecordingFetcher;
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

export function createProviderHttpClient(options: ProviderHttpOptions): ProviderHttpClient {
  const send = async (method: 'GET' | 'POST', url: string, body: unknown, credentials: boolean): Promise<ProviderResponse> => {
    const init: RequestInit = {
      method,
      headers: {
        ...(credentials ? options.headers : {}),
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      signal: AbortSignal.timeout(options.timeoutMs),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    };
    try {
      const response = await fetch(url, init);
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
  };
  return {
    recording: createRecordingFetcher(options),
    request: (method, path, body) => send(method, `${options.baseUrl}${path}`, body, true),
    postTo(url, body) {
      // The credentials go only to the provider's own hosts: its API's, or another of the same domain.
      return send('POST', url, body, sameProviderDomain(url, options.baseUrl));
    },
  };
}

/**
 * Whether `url` is at the API's host or another host of its domain (api.vapi.ai and phone-call-….vapi.ai),
 * over https or the API's own scheme. An API at an IP address (or a one-label host) has no domain: only that
 * very host counts (127.0.0.1 and 10.0.0.1 share a suffix, not an owner).
 */
export function sameProviderDomain(url: string, baseUrl: string): boolean {
  try {
    const target = new URL(url);
    const api = new URL(baseUrl);
    if (target.protocol !== 'https:' && target.protocol !== api.protocol) return false;
    const host = target.hostname.toLowerCase();
    const apiHost = api.hostname.toLowerCase();
    if (host === apiHost) return true;
    const labels = apiHost.split('.');
    if (isIP(apiHost.replace(/^\[|\]$/g, '')) !== 0 || labels.length < 2) return false;
    const domain = labels.length > 2 ? labels.slice(1).join('.') : apiHost;
    return host === domain || host.endsWith(`.${domain}`);
  } catch {
    return false;
  }
}

/** How one kind of request words each way it can fail (the classification is the same for every request). */
interface FailureWords {
  readonly timeout: string;
  /** Refused before it was sent: nothing was done. */
  readonly unreachable: string;
  /** Dropped after it was sent: the answer is lost. */
  readonly dropped: string;
  readonly serverError: (status: number) => string;
  /** A 4xx other than 401, 403 and 429. */
  readonly refusal: (status: number, body: unknown) => string;
}

const credentialsRefused = "The voice provider refused this server's credentials; the operator must check its configuration.";

/**
 * A failed request as a ProviderFailure: no answer in time and a 5xx or a connection dropped after sending
 * are uncertain (retryable), a 429 or a connection refused before sending means nothing was done, a 4xx is a
 * refusal. `words` says each in the terms of the request.
 */
function requestFailure(response: ProviderErrorResponse, words: FailureWords): ProviderFailure {
  if (response.kind === 'timeout') return { kind: 'timeout', message: words.timeout, retryable: true };
  if (response.kind === 'unreachable') {
    return response.sent
      ? { kind: 'uncertain', message: words.dropped, retryable: true }
      : { kind: 'unavailable', message: words.unreachable, retryable: true };
  }
  const { status } = response;
  if (status === 429) return concurrencyFailure(response.retryAfter);
  if (status >= 500) return { kind: 'uncertain', message: words.serverError(status), retryable: true };
  if (status === 401 || status === 403) return { kind: 'rejected', message: credentialsRefused, retryable: false };
  return { kind: 'rejected', message: words.refusal(status, response.body), retryable: false };
}

/**
 * A failed request about a call (create, look-up, search), in words for the integrator: a 4xx is a refusal,
 * a 429 or a connection refused means nothing was done (retry with backoff), and no answer, a 5xx or a
 * connection dropped after sending leave it open whether the call was placed. `refusal` words a 4xx other
 * than 401/403/429, from its status and body (the provider's own body never reaches an answer: it may echo
 * the key; at most the names of fields it complains of).
 */
export function callRequestFailure(response: ProviderErrorResponse, refusal: (status: number, body: unknown) => string): ProviderFailure {
  return requestFailure(response, {
    timeout: 'The voice provider did not answer in time. The call may or may not have been placed.',
    unreachable: 'The voice provider could not be reached. Retry with backoff.',
    dropped: 'The connection to the voice provider dropped after the request was sent. The call may or may not have been placed.',
    serverError: (status) => `The voice provider answered HTTP ${status}. The call may or may not have been placed.`,
    refusal,
  });
}

/**
 * A failed request to end a call, in words for the integrator: whatever went wrong, the call is as it was
 * (or ending), and asking again is safe, since every provider's stop is idempotent (a connection dropped
 * after sending is an answer lost: the stop may have been done, and is asked again safely).
 */
export function cancelRequestFailure(response: ProviderErrorResponse): ProviderFailure {
  return requestFailure(response, {
    timeout: 'The voice provider did not answer the request to end the call in time. Retry.',
    unreachable: 'The voice provider could not be reached to end the call. Retry with backoff.',
    dropped: 'The connection to the voice provider dropped before it answered the request to end the call. Retry.',
    serverError: (status) => `The voice provider answered HTTP ${status} to the request to end the call. Retry.`,
    refusal: (status) => `The voice provider refused to end the call (HTTP ${status}).`,
  });
}

/** The provider could take no call now (a 429, or its concurrency limit): nothing was dialed. */
export function concurrencyFailure(retryAfter: string | null = null): Extract<ProviderFailure, { kind: 'unavailable' }> {
  const seconds = Number(retryAfter);
  return {
    kind: 'unavailable',
    message: 'The voice provider is at its concurrency or rate limit. Retry with backoff.',
    retryable: true,
    retryAfterSeconds: Number.isInteger(seconds) && seconds > 0 ? Math.min(seconds, 3_600) : 5,
  };
}

/** How the operator's messages about a provider's workspace name it and the settings to check (from its catalogue entry). */
export interface WorkspaceNames {
  readonly label: string;
  readonly keySetting: string;
  readonly baseUrlSetting: string;
}

/**
 * A failed request about the workspace itself (agents, phone numbers, doctor's check), in words for the
 * operator: the setting to check, not an integrator's retry advice about a call.
 */
export function workspaceRequestFailure(response: ProviderErrorResponse, provider: WorkspaceNames): ProviderFailure {
  if (response.kind === 'timeout') {
    return {
      kind: 'timeout',
      message: `${provider.label} did not answer in time (CALLGATE_PROVIDER_TIMEOUT_MS); try again, or raise it`,
      retryable: true,
    };
  }
  if (response.kind === 'unreachable') {
    const message = `${provider.label} could not be reached (${response.message}); check ${provider.baseUrlSetting} and this machine's network`;
    return { kind: 'unavailable', message, retryable: true };
  }
  const { status } = response;
  if (status === 401 || status === 403) {
    return {
      kind: 'rejected',
      message: `${provider.label} refused the API key (HTTP ${status}); check ${provider.keySetting}`,
      retryable: false,
    };
  }
  if (status === 429) {
    return {
      kind: 'unavailable',
      message: `${provider.label} is limiting this workspace's requests (HTTP 429); try again in a minute`,
      retryable: true,
    };
  }
  if (status >= 500) {
    return {
      kind: 'unavailable',
      message: `${provider.label} answered HTTP ${status}, a failure on its side; try again in a few minutes`,
      retryable: true,
    };
  }
  const message = `${provider.label} answered HTTP ${status}; check that ${provider.baseUrlSetting} is its API's address`;
  return { kind: 'rejected', message, retryable: false };
}

export type Json = Record<string, unknown>;

/** An object of a provider's JSON, or an empty one for anything else (their bodies are never trusted). */
export function record(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

/** A provider's id that is safe to store, put in a URL path and log: short, printable, no separators of ours. */
export const providerIdRule = /^[A-Za-z0-9_.:+-]{1,128}$/;
