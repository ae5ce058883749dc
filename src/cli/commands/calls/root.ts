import type { CommandGroup } from '../../command.js';
import { cancelCallCommand } from './cancel.js';
import { listCallsCommand } from './list.js';

export const callsGroup: CommandGroup = {
  name: 'calls',
  summary: 'Calls: read the calls of an account (they are placed through the API), cancel one',
  commands: [listCallsCommand, cancelCallCommand],
};
