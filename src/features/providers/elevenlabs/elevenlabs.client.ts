/**
 * A thin client of the ElevenLabs Agents API (`xi-api-key` auth), on the shared provider client: it never
 * retries (their outbound-call endpoint has no idempotency key, so a second try could dial twice), every
 * failure comes back as a value, and the API key never leaves here.
 */
import { createProviderHttpClient, type ProviderHttpClient, type ProviderResponse } from '../provider-http.js';

export interface ElevenLabsClientOptions {
  readonly apiKey: string;
  readonly baseUrl: string;
  readonly timeoutMs: number;
}

export type ElevenLabsResponse = ProviderResponse;

export type ElevenLabsClient = ProviderHttpClient;

export function createElevenLabsClient(options: ElevenLabsClientOptions): ElevenLabsClient {
  return createProviderHttpClient({ baseUrl: options.baseUrl, headers: { 'xi-api-key': options.apiKey }, timeoutMs: options.timeoutMs });
}
