import type { CommandGroup } from '../../command.js';
import { addUserCommand } from './add.js';
import { listUsersCommand } from './list.js';
import { resetPasswordCommand } from './reset-password.js';

export const usersGroup: CommandGroup = {
  name: 'users',
  summary: 'Users: the people of an account who sign in to the developer portal',
  commands: [addUserCommand, listUsersCommand, resetPasswordCommand],
};
