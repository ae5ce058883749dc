import type { CommandGroup } from '../../command.js';
import { listDeliveriesCommand } from './list.js';

export const deliveriesGroup: CommandGroup = {
  name: 'deliveries',
  summary: 'Webhook deliveries: one per event and endpoint, with its attempts',
  commands: [listDeliveriesCommand],
};
