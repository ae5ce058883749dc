import type { CommandGroup } from '../../command.js';
import { listCallsCommand } from './list.js';

export const callsGroup: CommandGroup = {
  name: 'calls',
  summary: 'Calls: read the calls of an account (they are placed through the API)',
  commands: [listCallsCommand],
};
