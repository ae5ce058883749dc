import { listApiKeys } from '../../../features/api-keys/api-keys.service.js';
import { listEndpoints } from '../../../features/webhook-endpoints/endpoints.service.js';
import { describeBackoff, endpointBackoffs } from '../../../features/webhook-delivery/deliveries.service.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

/**
 * `listEndpoints` returns views without the secret: a listing never shows one. An endpoint whose deliveries
 * wait for a probe (it stopped answering) says since when and when the next try is.
 */
export const listWebhooksCommand: Command = {
  name: 'list',
  summary: 'List the webhook endpoints of an account (never their secrets)',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose endpoints are listed (acct_...)', required: true },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    return async ({ db, clock }) => {
      await requireAccount(db, accountId);
      const endpoints = await listEndpoints(db, accountId);
      const keyNames = new Map((await listApiKeys(db, accountId)).map((key) => [key.id, `${key.name} (${key.prefix}…)`]));
      const backoffs = await endpointBackoffs(
        db,
        endpoints.map((endpoint) => endpoint.id),
        clock.now(),
      );
      const enabled = (endpoint: (typeof endpoints)[number]) => {
        if (!endpoint.enabled) return `no (${endpoint.disabled_reason ?? 'disabled'})`;
        const backoff = backoffs.get(endpoint.id);
        return backoff ? `yes (${describeBackoff(backoff)})` : 'yes';
      };
      const text =
        endpoints.length === 0
          ? `Account ${accountId} has no webhook endpoints yet.`
          : formatTable(
              ['id', 'mode', 'url', 'events', 'enabled', 'description', 'created'],
              endpoints.map((endpoint) => [
                endpoint.id,
                endpoint.mode,
                endpoint.url,
                endpoint.event_types.join(','),
                enabled(endpoint),
                endpoint.created_by_key_id
                  ? `${endpoint.description || '-'} (made over the API by the key ${keyNames.get(endpoint.created_by_key_id) ?? endpoint.created_by_key_id})`
                  : endpoint.description || null,
                endpoint.created_at,
              ]),
            );
      // `backoff` only on an endpoint whose deliveries wait for a probe.
      const data = endpoints.map((endpoint) => {
        const backoff = backoffs.get(endpoint.id);
        return backoff ? { ...endpoint, backoff } : endpoint;
      });
      return { json: { data }, text };
    };
  },
};
