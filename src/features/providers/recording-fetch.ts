/**
 * Fetches a call's recording from where its provider keeps it and hands the bytes on as a stream: a
 * recording may be tens of megabytes, and twenty clients may listen at once, so nothing is read whole into
 * memory (backpressure runs from the client's socket back to the provider's). Two kinds of source:
 *
 * - the provider's own API (`path`), with its credentials (ElevenLabs' audio endpoint);
 * - a URL the provider gave (`url`; Retell's `recording_url`, Vapi's `recordingUrl`), fetched with no
 *   credential at all, so a provider key never reaches a host other than the provider's API. Such a URL is
 *   fetched only at the provider API's own origin or over https at a public address (the webhook targets'
 *   SSRF guard): a signed payload is trusted to say where the audio is, not to reach inside our network.
 */
import { Agent, request } from 'undici';
import { err, ok, type Result } from '../../lib/result.js';
import { blockedLiteralHost, guardedLookup } from '../webhook-endpoints/ssrf-guard.js';
import type { RecordingFailure, RecordingSource, RecordingStream } from './provider.interface.js';

export interface RecordingFetchOptions {
  readonly baseUrl: string;
  /** The credential headers, sent to the provider's API only. */
  readonly headers: Readonly<Record<string, string>>;
  /** For the answer's headers to arrive, and the longest pause between two pieces of the body. */
  readonly timeoutMs: number;
}

export type RecordingTarget = { readonly path: string } | { readonly url: string };

export type RecordingFetcher = (target: RecordingTarget) => Promise<Result<RecordingStream, RecordingFailure>>;

/** Statuses after which the recording is not there (gone, expired, never made): asking again will not help. */
const notThere = new Set([403, 404, 410]);

/** A type we pass on as is; anything else (a provider answering HTML) goes out as bytes, never rendered. */
function safeContentType(value: string | string[] | undefined): string {
  const type = (Array.isArray(value) ? value[0] : value)?.split(';')[0]?.trim().toLowerCase() ?? '';
  return /^(audio|video)\/[a-z0-9.+-]{1,64}$/.test(type) ? type : 'application/octet-stream';
}

function unavailable(message: string, retryAfterSeconds?: number): RecordingFailure {
  return { kind: 'unavailable', message, retryable: true, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) };
}

export function createRecordingFetcher(options: RecordingFetchOptions): RecordingFetcher {
  const apiOrigin = new URL(options.baseUrl).origin;
  const timeouts = { headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs };
  // Connections are made per fetch and not kept: recordings are read seldom, and a kept pool would hold
  // sockets to hosts we have no reason to stay connected to.
  const api = new Agent({ ...timeouts, pipelining: 0, connect: { timeout: options.timeoutMs } });
  const outside = new Agent({ ...timeouts, pipelining: 0, connect: { timeout: options.timeoutMs, lookup: guardedLookup(false) } });

  return async (target) => {
    let url: URL;
    let headers: Record<string, string> = {};
    let dispatcher = api;
    try {
      url = 'path' in target ? new URL(`${options.baseUrl}${target.path}`) : new URL(target.url);
    } catch {
      return err({ kind: 'not_available' });
    }
    if ('path' in target) {
      headers = { ...options.headers };
    } else if (url.origin !== apiOrigin) {
      if (url.protocol !== 'https:' || blockedLiteralHost(url, false) !== null) return err({ kind: 'not_available' });
      dispatcher = outside;
    }
    try {
      const answer = await request(url, { method: 'GET', headers: { ...headers, accept: 'audio/*, */*;q=0.5' }, dispatcher });
      if (answer.statusCode >= 200 && answer.statusCode < 300) {
        const length = Number(answer.headers['content-length']);
        return ok({
          contentType: safeContentType(answer.headers['content-type']),
          contentLength: Number.isSafeInteger(length) && length >= 0 ? length : null,
          body: answer.body,
        });
      }
      // Read and dropped, so that the connection is freed.
      await answer.body.dump();
      if (notThere.has(answer.statusCode) && !(answer.statusCode === 403 && 'path' in target)) return err({ kind: 'not_available' });
      if (answer.statusCode === 401 || answer.statusCode === 403)
        return err(
          unavailable("The voice provider refused callgate's credentials for the recording; the operator must check its API key."),
        );
      const retryAfter = Number(answer.headers['retry-after']);
      return err(
        unavailable(
          `The voice provider could not serve the recording (HTTP ${answer.statusCode}).`,
          Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(3_600, Math.ceil(retryAfter)) : undefined,
        ),
      );
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
        return err({ kind: 'timeout', message: 'The voice provider did not answer in time for the recording.', retryable: true });
      return err(unavailable('The voice provider could not be reached for the recording.'));
    }
  };
}

/**
 * A call's recording from its source: a URL as given, or `apiPath` of the provider's API (null for a
 * provider that serves none there).
 */
export async function recordingFromSource(
  fetcher: RecordingFetcher,
  source: RecordingSource,
  apiPath: string | null,
): Promise<Result<RecordingStream, RecordingFailure>> {
  if (source.kind === 'url') return fetcher({ url: source.url });
  return apiPath === null ? err({ kind: 'not_available' }) : fetcher({ path: apiPath });
}
