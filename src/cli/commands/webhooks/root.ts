import type { CommandGroup } from '../../command.js';
import { createWebhookCommand } from './create.js';
import { deleteWebhookCommand } from './delete.js';
import { enableWebhookCommand } from './enable.js';
import { listWebhooksCommand } from './list.js';
import { rotateWebhookSecretCommand } from './rotate-secret.js';
import { testWebhookCommand } from './test.js';

export const webhooksGroup: CommandGroup = {
  name: 'webhooks',
  summary: 'Webhook endpoints: where call outcomes are sent, signed',
  commands: [
    createWebhookCommand,
    listWebhooksCommand,
    enableWebhookCommand,
    deleteWebhookCommand,
    rotateWebhookSecretCommand,
    testWebhookCommand,
  ],
};
