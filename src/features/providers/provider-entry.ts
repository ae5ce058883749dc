/**
 * What one provider says of itself, once: its name and label, the settings it reads, how its client, call
 * adapter and agent directory are made, its signed webhook, what `agents add` asks of its agents and where
 * its docs are. Each provider's folder exports one entry (`<name>.entry.ts`); the catalogue lists them, and
 * config, container, app, server, the CLI, doctor and the portal read only the catalogue. Adding a provider
 * is one folder and one line there (docs/development.md, "Adding a provider").
 */
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../../lib/clock.js';
import type { ProviderHttpClient } from './provider-http.js';
import type { ProviderWebhookDeps, ProviderWebhookHandling } from './provider-webhook.deps.js';
import type { AgentDirectory, VoiceProvider } from './provider.interface.js';

/** The settings every real provider reads (config.ts reads them from the environment by these names). */
export interface ProviderSettingNames {
  /** The API key's variable; without it the provider places no calls and lists no agents. */
  readonly apiKey: string;
  /** The API base URL's variable and its default (tests point it at a local fake). */
  readonly baseUrl: { readonly name: string; readonly default: string };
  /** The variable of the secret that signs its webhooks; absent when they are signed with the API key (Retell). */
  readonly webhookSecret?: string;
}

/** The values config.ts read for one provider (`config.providers[name]`). */
export interface ProviderSettingValues {
  readonly apiKey: string | undefined;
  readonly baseUrl: string;
  /** Undefined when not set, or when the provider has no such setting. */
  readonly webhookSecret: string | undefined;
}

/** What a provider's adapter is made with, beside its client. */
export interface ProviderContext {
  readonly clock: Clock;
  /** How long after placing a call the monitor first asks how it stands (CALLGATE_RECONCILE_AFTER_MS). */
  readonly reconcileAfterMs: number;
}

/** The provider's signed webhook, served at `path` by the one shared route (provider-webhook.routes.ts). */
export interface ProviderWebhook {
  /** `/providers/<name>/webhook`. */
  readonly path: string;
  /** Why the server cannot take these webhooks (a secret not set), or undefined when it can. */
  readonly notConfigured: string | undefined;
  /** A refusal from the headers alone (missing, malformed, out of the time tolerance), or undefined. */
  checkHeaders(request: FastifyRequest, nowMs: number): string | undefined;
  /** A refusal of the signature over the raw body, or undefined when it matches. */
  verify(request: FastifyRequest, raw: string, nowMs: number): string | undefined;
  /** Acts on the verified payload. */
  handle(deps: ProviderWebhookDeps, payload: unknown): Promise<ProviderWebhookHandling>;
}

/** How an agent of the provider names the number its calls come from (`agents add`). */
export type AgentNumberOption =
  /** The provider's id of a number of its workspace (`--phone-number-id`). */
  | 'phone-number-id'
  /** The E.164 number itself, which is its id at the provider (`--from-number`). */
  | 'from-number';

export interface ProviderEntry<Name extends string = string> {
  readonly name: Name;
  /** The name as people write it. */
  readonly label: string;
  /** Its section of the docs, from the repository's root. */
  readonly docs: `docs/providers.md#${string}`;
  readonly settings: ProviderSettingNames;
  /**
   * Whether it places real calls out of the box: its missing key is warned at start (ElevenLabs, the first);
   * the others are opt-in, and a missing key is said at info level.
   */
  readonly warnWithoutKey: boolean;
  readonly agents: {
    /**
     * What the provider calls its agent id when callgate's `agent_id` is not it (`--provider-agent-id`,
     * required, e.g. "Retell agent id"); undefined when callgate's agent id is the provider's own (ElevenLabs).
     */
    readonly providerAgentId: string | undefined;
    readonly number: AgentNumberOption;
  };
  /**
   * Why it cannot end a call through its API (POST /v1/calls/{id}/cancel answers 409 cancel_not_supported with
   * it, configured or not); absent when it can.
   */
  readonly cannotCancel?: string;
  /** Its API client, which never retries and returns failures as values; the key never leaves it. */
  createClient(settings: { readonly apiKey: string; readonly baseUrl: string }, timeoutMs: number): ProviderHttpClient;
  createProvider(client: ProviderHttpClient, context: ProviderContext): VoiceProvider;
  createDirectory(client: ProviderHttpClient): AgentDirectory;
  webhook(settings: ProviderSettingValues): ProviderWebhook;
}

/** Keeps the entry's name a literal type, so the catalogue's names make the provider type. */
export function defineProvider<const Name extends string>(entry: ProviderEntry<Name>): ProviderEntry<Name> {
  return Object.freeze(entry);
}

/** The first value of a request header. */
export function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
