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
import http from 'node:http';
import https from 'node:https';
import { err, ok, type Result } from '../../lib/result.js';
import { blockedLiteralHost, guardedLookup } from '../webhook-endpoints/ssrf-guard.js';
import type { RecordingFailure, RecordingSource, RecordingStream } from './provider.interface.js';

export interface RecordingFetchOptions {
  readonly baseUrl: string;
  /** The credential headers, sent to the provider's API only. */
  readonly headers: Readonly<Record<string, string>>;
  /** For the answer's headers to arrive. */
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
  // node:http rather than undici: undici's HTTP/1 parser asserts (an uncaught exception, which would end the
  // process) when the provider ends its connection while a slow client holds the body back; node:http
  // pauses the socket and reads the rest when the client does. A connection of its own per recording
  // (`agent: false`): recordings are read seldom, and nothing is kept open to a host we had no reason to keep.
  return (target) =>
    new Promise((resolve) => {
      let url: URL;
      try {
        url = 'path' in target ? new URL(`${options.baseUrl}${target.path}`) : new URL(target.url);
      } catch {
        return resolve(err({ kind: 'not_available' }));
      }
      const outside = !('path' in target) && url.origin !== apiOrigin;
      if (outside && (url.protocol !== 'https:' || blockedLiteralHost(url, false) !== null)) return resolve(err({ kind: 'not_available' }));
      const headers = { ...('path' in target ? options.headers : {}), accept: 'audio/*, */*;q=0.5' };
      const client = url.protocol === 'https:' ? https : http;
      let settled = false;
      const settle = (result: Result<RecordingStream, RecordingFailure>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const request = client.request(url, {
        method: 'GET',
        headers,
        agent: false,
        ...(outside ? { lookup: guardedLookup(false) as unknown as http.RequestOptions['lookup'] } : {}),
      });
      // For the answer's headers only: once the audio flows, a client that reads slowly may take its time.
      const timer = setTimeout(() => {
        settle(err({ kind: 'timeout', message: 'The voice provider did not answer in time for the recording.', retryable: true }));
        request.destroy();
      }, options.timeoutMs);
      request.on('error', () => settle(err(unavailable('The voice provider could not be reached for the recording.'))));
      request.on('response', (answer) => {
        const status = answer.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          const length = Number(answer.headers['content-length']);
          return settle(
            ok({
              contentType: safeContentType(answer.headers['content-type']),
              contentLength: Number.isSafeInteger(length) && length >= 0 ? length : null,
              body: answer,
            }),
          );
        }
        // Read and dropped, so that the connection ends.
        answer.resume();
        if (notThere.has(status) && !(status === 403 && 'path' in target)) return settle(err({ kind: 'not_available' }));
        if (status === 401 || status === 403)
          return settle(
            err(unavailable("The voice provider refused callgate's credentials for the recording; the operator must check its API key.")),
          );
        const retryAfter = Number(answer.headers['retry-after']);
        return settle(
          err(
            unavailable(
              `The voice provider could not serve the recording (HTTP ${status}).`,
              Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(3_600, Math.ceil(retryAfter)) : undefined,
            ),
          ),
        );
      });
      request.end();
    });
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
