/**
 * The trigger's webhook endpoint requests and decisions, as pure functions (docs/webhooks.md, "Subscribe from
 * an automation tool"): create one endpoint for n8n's URL and the chosen events, find it again by id, delete
 * it, and tell whether an endpoint still serves the trigger as it is configured now.
 */
import type { ApiRequest } from '../../shared/transport';

export const EVENT_TYPES = ['call.completed', 'call.failed', 'batch.completed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** What the trigger keeps in the workflow's static data (per node). */
export interface StoredEndpoint {
  webhookId?: string;
  webhookSecret?: string;
  webhookUrl?: string;
}

/** The chosen events, checked: at least one, each a known type, each once, in the list's order. */
export function chosenEvents(value: unknown): EventType[] {
  const list = Array.isArray(value) ? value : typeof value === 'string' && value !== '' ? [value] : [];
  if (list.length === 0) throw new Error('Choose at least one event.');
  for (const event of list) {
    if (!EVENT_TYPES.includes(event as EventType))
      throw new Error(`Unknown event ${JSON.stringify(event)}; known: ${EVENT_TYPES.join(', ')}.`);
  }
  return EVENT_TYPES.filter((event) => list.includes(event));
}

/** The description callgate shows for the endpoint: which n8n workflow and node made it (500 characters at most). */
export function endpointDescription(workflowName: string | undefined, nodeName: string): string {
  const workflow = workflowName && workflowName.trim() !== '' ? workflowName.trim() : 'workflow';
  return `n8n: ${workflow} / ${nodeName}`.slice(0, 500);
}

export function createEndpointRequest(url: string, events: readonly EventType[], description: string, idempotencyKey: string): ApiRequest {
  return {
    method: 'POST',
    path: '/v1/webhook_endpoints',
    body: { url, enabled_events: [...events], description },
    headers: { 'Idempotency-Key': idempotencyKey },
  };
}

export function getEndpointRequest(id: string): ApiRequest {
  return { method: 'GET', path: `/v1/webhook_endpoints/${encodeURIComponent(id)}` };
}

export function deleteEndpointRequest(id: string): ApiRequest {
  return { method: 'DELETE', path: `/v1/webhook_endpoints/${encodeURIComponent(id)}` };
}

/** The endpoints of exactly this URL (one page of 100: more than the 50 an account may have in one mode). */
export function endpointsOfUrlRequest(url: string): ApiRequest {
  return { method: 'GET', path: '/v1/webhook_endpoints', qs: { url, limit: 100 } };
}

/** A URL as callgate writes it (WHATWG serialisation: `https://example.com` is `https://example.com/`). */
export function normalizedUrl(url: string): string {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
}

/** The event types an endpoint receives; `*` is every type. */
function receivedTypes(enabledEvents: unknown): Set<string> {
  const list = Array.isArray(enabledEvents) ? enabledEvents.map(String) : [];
  return new Set(list.includes('*') ? EVENT_TYPES : list);
}

/**
 * Whether a stored endpoint, as callgate answered it, still serves the trigger: the same URL, exactly the
 * chosen events, and enabled (a disabled one, after a 410 or days of failures, gets nothing more). Any
 * difference means: delete it and make a new one.
 */
export function endpointServes(endpoint: Record<string, unknown>, url: string, events: readonly EventType[]): boolean {
  if (typeof endpoint.url !== 'string' || normalizedUrl(endpoint.url) !== normalizedUrl(url)) return false;
  if (endpoint.status !== 'enabled') return false;
  const types = receivedTypes(endpoint.enabled_events);
  return types.size === events.length && events.every((event) => types.has(event));
}

/** The id and secret of a creation's answer. */
export function createdEndpoint(body: unknown): { id: string; secret: string } {
  const endpoint = body as Record<string, unknown> | null;
  if (!endpoint || typeof endpoint.id !== 'string' || typeof endpoint.secret !== 'string') {
    throw new Error('callgate answered the endpoint creation without an id and a secret.');
  }
  return { id: endpoint.id, secret: endpoint.secret };
}
