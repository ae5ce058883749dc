import type { CommandGroup } from '../../command.js';
import { createAccountCommand } from './create.js';
import { listAccountsCommand } from './list.js';
import { updateAccountCommand } from './update.js';

export const accountsGroup: CommandGroup = {
  name: 'accounts',
  summary: 'Accounts: the customers of this installation',
  commands: [createAccountCommand, listAccountsCommand, updateAccountCommand],
};
