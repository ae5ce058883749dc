import { deleteEndpoint } from '../../../features/webhook-delivery/endpoint-changes.service.js';
import { toEndpointView } from '../../../features/webhook-endpoints/endpoints.service.js';
import type { Command } from '../../command.js';
import { requireEndpoint } from './endpoint.js';

export const deleteWebhookCommand: Command = {
  name: 'delete',
  summary: 'Delete a webhook endpoint; its pending deliveries end as failed, its history stays',
  options: {},
  positionals: ['ENDPOINT_ID'],
  prepare(args) {
    const endpointId = args.positionals[0] ?? '';
    return async ({ db, clock }) => {
      const endpoint = await requireEndpoint(db, endpointId);
      await deleteEndpoint(db, clock, endpoint);
      const view = toEndpointView(endpoint);
      return {
        json: { ...view, enabled: false, deleted: true },
        text: `Deleted webhook endpoint ${view.id} (${view.url}). Its pending deliveries ended as failed.`,
      };
    };
  },
};
