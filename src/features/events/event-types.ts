/** The types of events, and which of them an endpoint subscribed to wants. */
export const callEventTypes = ['call.completed', 'call.failed'] as const;
export type CallEventType = (typeof callEventTypes)[number];
/** Every type an endpoint may subscribe to; `["*"]` subscribes to all of them, those added later too. */
export const webhookEventTypes = [...callEventTypes, 'batch.completed'] as const;
export type EventType = (typeof webhookEventTypes)[number] | 'webhook.test';

/** Whether an endpoint subscribed to `eventTypes` (its JSON list) wants an event of `type`; a test event goes to the endpoint it tests. */
export function endpointWants(endpoint: { readonly event_types: string }, type: EventType): boolean {
  if (type === 'webhook.test') return true;
  const types = JSON.parse(endpoint.event_types) as string[];
  return types.includes('*') || types.includes(type);
}
