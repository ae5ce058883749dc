import { updateEndpoint } from '../../../features/webhook-delivery/endpoint-changes.service.js';
import { toEndpointView } from '../../../features/webhook-endpoints/endpoints.service.js';
import type { Command } from '../../command.js';
import { requireEndpoint } from './endpoint.js';

/**
 * The way back for an endpoint the worker disabled (410 Gone, or 5 days of failures) or a user disabled in
 * the portal; without it the operator could see why an endpoint was disabled but not undo it.
 */
export const enableWebhookCommand: Command = {
  name: 'enable',
  summary: 'Enable a disabled webhook endpoint again (after a 410 or 5 days of failures); its failure count starts afresh',
  options: {},
  positionals: ['ENDPOINT_ID'],
  prepare(args) {
    const endpointId = args.positionals[0] ?? '';
    return async ({ config, db, clock }) => {
      const endpoint = await requireEndpoint(db, endpointId);
      if (endpoint.enabled === 1) {
        const view = toEndpointView(endpoint);
        return { json: view, text: `Webhook endpoint ${view.id} (${view.url}) is enabled already.` };
      }
      const view = await updateEndpoint(db, clock, config.webhookAllowPrivate, endpoint, { enabled: true });
      const text = [
        `Enabled webhook endpoint ${view.id} (${view.url}).`,
        `It had been disabled: ${endpoint.disabled_reason ?? 'no reason recorded'}`,
        '',
        'New events go to it again. Events of the time it was disabled were not queued for it; send one again with',
        `  npx callgate events resend EVT_ID --endpoint ${view.id}`,
      ].join('\n');
      return { json: view, text };
    };
  },
};
