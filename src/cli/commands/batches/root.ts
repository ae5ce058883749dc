import type { CommandGroup } from '../../command.js';
import { cancelBatchCommand } from './cancel.js';
import { listBatchesCommand } from './list.js';
import { showBatchCommand } from './show.js';

export const batchesGroup: CommandGroup = {
  name: 'batches',
  summary: 'Batches: many calls from one request, dialed under a concurrency limit',
  commands: [listBatchesCommand, showBatchCommand, cancelBatchCommand],
};
