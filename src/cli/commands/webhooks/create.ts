import { ApiError } from '../../../errors/api-error.js';
import { webhookEventTypes } from '../../../features/events/event-types.js';
import { createEndpoint } from '../../../features/webhook-endpoints/endpoints.service.js';
import { refusedOnlyAsPrivate } from '../../../features/webhook-endpoints/ssrf-guard.js';
import type { ApiKeyMode } from '../../../features/api-keys/api-keys.tables.js';
import { choiceOption, listOption, optionalOption, requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';

const endpointModes: readonly ApiKeyMode[] = ['test', 'live'];

export const createWebhookCommand: Command = {
  name: 'create',
  summary: 'Add a webhook endpoint to an account and print its signing secret',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose events the endpoint receives (acct_...)', required: true },
    url: {
      value: 'URL',
      description: 'Where events are POSTed: a public https URL (http and private addresses only with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true)',
      required: true,
    },
    events: { value: webhookEventTypes.join(','), description: 'Event types to send, comma-separated (default all)' },
    description: { value: 'TEXT', description: 'What the endpoint is for, shown to people' },
    mode: {
      value: 'test|live',
      description: "The mode of the events it receives: test (a test-mode key's calls and batches; the default) or live",
    },
  },
  prepare(args) {
    const input = {
      accountId: requiredOption(args, 'account'),
      url: requiredOption(args, 'url'),
      eventTypes: listOption(args, 'events'),
      description: optionalOption(args, 'description'),
      // Test unless told, as the portal and Stripe's CLI: a receiver being tried out never gets live events.
      mode: choiceOption(args, 'mode', endpointModes, 'test'),
    };
    return async ({ config, db, clock }) => {
      await requireAccount(db, input.accountId);
      // The same URL rules as the API: https and public addresses unless the server allows private ones.
      const endpoint = await createEndpoint(db, clock, config.webhookAllowPrivate, input).catch((error: unknown) => {
        // The CLI reads its own environment: a server started with the setting does not lend it to the CLI.
        const refusedUrl = error instanceof ApiError && error.code === 'invalid_request' && error.param === 'url';
        if (refusedUrl && !config.webhookAllowPrivate && refusedOnlyAsPrivate(input.url.trim())) {
          const hint = 'for a local receiver, run this command with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true too';
          throw new ApiError(error.code, `${error.message} (${hint})`, { param: error.param });
        }
        throw error;
      });
      const text = [
        `Created ${endpoint.mode} webhook endpoint ${endpoint.id} for account ${endpoint.account_id}.`,
        formatFields([
          [
            'mode',
            endpoint.mode === 'test'
              ? "test: receives the events of test-mode keys' calls and batches only (--mode live for production)"
              : 'live: receives the events of live calls and batches only',
          ],
          ['url', endpoint.url],
          ['events', endpoint.event_types.join(', ')],
          ['description', endpoint.description || null],
        ]),
        '',
        'Signing secret (receivers verify the webhook-signature header with it):',
        '',
        `  ${endpoint.secret}`,
        '',
        `Give it to the receiver now: the CLI does not show it again (the portal's endpoint page can).`,
        `A leaked secret is replaced with "npx callgate webhooks rotate-secret ${endpoint.id}".`,
        `Next: npx callgate webhooks test ${endpoint.id}`,
      ].join('\n');
      return { json: endpoint, text };
    };
  },
};
