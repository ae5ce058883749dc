import { ApiError } from '../../../errors/api-error.js';
import { sendTestEvent } from '../../../features/webhook-delivery/fan-out.service.js';
import type { Command } from '../../command.js';
import { formatFields } from '../../output.js';
import { requireEndpoint } from './endpoint.js';

export const testWebhookCommand: Command = {
  name: 'test',
  summary: 'Queue a signed webhook.test event for one endpoint; a running worker delivers it',
  options: {},
  positionals: ['ENDPOINT_ID'],
  prepare(args) {
    const endpointId = args.positionals[0] ?? '';
    return async ({ db, clock, wakeDeliveryWorkers }) => {
      const endpoint = await requireEndpoint(db, endpointId);
      if (endpoint.enabled !== 1) {
        throw new ApiError(
          'invalid_request',
          `webhook endpoint ${endpoint.id} is disabled (${endpoint.disabled_reason ?? 'no reason recorded'}); enable it first with "npx callgate webhooks enable ${endpoint.id}"`,
        );
      }
      const { eventId, deliveryId } = await sendTestEvent(db, clock, endpoint);
      await wakeDeliveryWorkers();
      const text = [
        `Queued a webhook.test event for ${endpoint.url}.`,
        formatFields([
          ['event', eventId],
          ['delivery', deliveryId ?? null],
        ]),
        '',
        'A running callgate worker delivers it. See how it went:',
        `  npx callgate deliveries list --account ${endpoint.account_id} --endpoint ${endpoint.id}`,
      ].join('\n');
      return { json: { event_id: eventId, delivery_id: deliveryId ?? null, endpoint_id: endpoint.id }, text };
    };
  },
};
