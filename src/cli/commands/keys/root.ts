import type { CommandGroup } from '../../command.js';
import { createKeyCommand } from './create.js';
import { listKeysCommand } from './list.js';
import { revokeKeyCommand } from './revoke.js';

export const keysGroup: CommandGroup = {
  name: 'keys',
  summary: 'API keys: the Bearer tokens of the HTTP API',
  commands: [createKeyCommand, listKeysCommand, revokeKeyCommand],
};
