import type { CommandGroup } from '../../command.js';
import { addSuppressionCommand } from './add.js';
import { listSuppressionsCommand } from './list.js';
import { removeSuppressionCommand } from './remove.js';

export const suppressionsGroup: CommandGroup = {
  name: 'suppressions',
  summary: 'Suppression lists: numbers an account never calls',
  commands: [addSuppressionCommand, listSuppressionsCommand, removeSuppressionCommand],
};
