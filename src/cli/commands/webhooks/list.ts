import { listEndpoints } from '../../../features/webhook-endpoints/endpoints.service.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

/** `listEndpoints` returns views without the secret: a listing never shows one. */
export const listWebhooksCommand: Command = {
  name: 'list',
  summary: 'List the webhook endpoints of an account (never their secrets)',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose endpoints are listed (acct_...)', required: true },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    return async ({ db }) => {
      await requireAccount(db, accountId);
      const endpoints = await listEndpoints(db, accountId);
      const text =
        endpoints.length === 0
          ? `Account ${accountId} has no webhook endpoints yet.`
          : formatTable(
              ['id', 'url', 'events', 'enabled', 'description', 'created'],
              endpoints.map((endpoint) => [
                endpoint.id,
                endpoint.url,
                endpoint.event_types.join(','),
                endpoint.enabled ? 'yes' : `no (${endpoint.disabled_reason ?? 'disabled'})`,
                endpoint.description || null,
                endpoint.created_at,
              ]),
            );
      return { json: { data: endpoints }, text };
    };
  },
};
