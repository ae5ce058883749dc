import { ApiError } from '../../../errors/api-error.js';
import { resendEvent } from '../../../features/webhook-delivery/fan-out.service.js';
import { optionalOption } from '../../args.js';
import type { Command } from '../../command.js';

export const resendEventCommand: Command = {
  name: 'resend',
  summary: 'Send a webhook event again (same id and body) as new deliveries',
  options: {
    endpoint: {
      value: 'ENDPOINT_ID',
      description: "To this endpoint of the event's account only (default: every enabled endpoint that wants the event)",
    },
  },
  positionals: ['EVENT_ID'],
  prepare(args) {
    const eventId = args.positionals[0] ?? '';
    const endpointId = optionalOption(args, 'endpoint');
    return async ({ db, clock, wakeDeliveryWorkers }) => {
      // An unknown event, or an endpoint not enabled in its account, is a not_found with its own text.
      const deliveryIds = await resendEvent(db, clock, eventId, endpointId === undefined ? {} : { endpointId });
      if (deliveryIds.length === 0) {
        throw new ApiError('not_found', `no enabled endpoint of the event's account wants ${eventId}; nothing was queued`);
      }
      await wakeDeliveryWorkers();
      const text = [
        `Queued ${eventId} again as ${deliveryIds.length === 1 ? 'a new delivery' : `${deliveryIds.length} new deliveries`}:`,
        ...deliveryIds.map((id) => `  ${id}`),
        '',
        'A running callgate worker delivers them; receivers see the same webhook-id as before.',
      ].join('\n');
      return { json: { event_id: eventId, delivery_ids: deliveryIds }, text };
    };
  },
};
