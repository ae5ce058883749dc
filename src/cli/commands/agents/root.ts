import type { CommandGroup } from '../../command.js';
import { addAgentCommand } from './add.js';
import { listAgentsCommand } from './list.js';
import { syncAgentsCommand } from './sync.js';

export const agentsGroup: CommandGroup = {
  name: 'agents',
  summary: 'Voice agents an account may call with',
  commands: [addAgentCommand, listAgentsCommand, syncAgentsCommand],
};
