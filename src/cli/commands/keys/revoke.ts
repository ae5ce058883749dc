import { revokeApiKey } from '../../../features/api-keys/api-keys.service.js';
import { ApiError } from '../../../errors/api-error.js';
import type { Command } from '../../command.js';

export const revokeKeyCommand: Command = {
  name: 'revoke',
  summary: 'Revoke an API key for good; requests with it fail with 401 at once',
  options: {},
  positionals: ['KEY_ID'],
  prepare(args) {
    const keyId = args.positionals[0] ?? '';
    return async ({ db, clock }) => {
      // Revoking twice is harmless: the key keeps its first revocation time.
      const key = await revokeApiKey(db, clock, keyId);
      if (!key) throw new ApiError('not_found', `no API key with id "${keyId}"`);
      return { json: key, text: `Revoked key ${key.id} (${key.prefix}…, "${key.name}") at ${key.revoked_at}.` };
    };
  },
};
