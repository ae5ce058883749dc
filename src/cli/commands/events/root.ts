import type { CommandGroup } from '../../command.js';
import { resendEventCommand } from './resend.js';

export const eventsGroup: CommandGroup = {
  name: 'events',
  summary: 'Webhook events: what happened, as sent to the endpoints',
  commands: [resendEventCommand],
};
