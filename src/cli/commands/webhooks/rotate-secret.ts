import { rotateSecret, secretOverlapMs } from '../../../features/webhook-endpoints/endpoints.service.js';
import type { Command } from '../../command.js';
import { formatFields } from '../../output.js';
import { requireEndpoint } from './endpoint.js';

const overlapHours = secretOverlapMs / 3_600_000;

export const rotateWebhookSecretCommand: Command = {
  name: 'rotate-secret',
  summary: `Give a webhook endpoint a new signing secret; the old one keeps signing for ${overlapHours} hours`,
  options: {},
  positionals: ['ENDPOINT_ID'],
  prepare(args) {
    const endpointId = args.positionals[0] ?? '';
    return async ({ db, clock }) => {
      const rotated = await rotateSecret(db, clock, await requireEndpoint(db, endpointId));
      // Read back: the expiry is the one stored, which is what the worker goes by.
      const stored = await requireEndpoint(db, endpointId);
      const previousSecretExpiresAt = stored.previous_secret_expires_at;
      const text = [
        `Rotated the signing secret of webhook endpoint ${rotated.id}.`,
        formatFields([
          ['url', rotated.url],
          ['old secret until', previousSecretExpiresAt],
        ]),
        '',
        'New signing secret:',
        '',
        `  ${rotated.secret}`,
        '',
        `The old secret keeps signing, beside the new one, for ${overlapHours} hours: deploy the new one to the`,
        'receiver before then. Each delivery carries one signature per secret.',
      ].join('\n');
      return { json: { ...rotated, previous_secret_expires_at: previousSecretExpiresAt }, text };
    };
  },
};
