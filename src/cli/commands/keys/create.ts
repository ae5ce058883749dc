import { createApiKey } from '../../../features/api-keys/api-keys.service.js';
import type { ApiKeyMode } from '../../../features/api-keys/api-keys.tables.js';
import { choiceOption, requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';

const apiKeyModes: readonly ApiKeyMode[] = ['live', 'test'];

export const createKeyCommand: Command = {
  name: 'create',
  summary: 'Create an API key and print its token, once',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account the key acts for (acct_...)', required: true },
    name: { value: 'NAME', description: 'What the key is for (one key per integration or environment)', required: true },
    mode: {
      value: apiKeyModes.join('|'),
      description: 'test places simulated calls only, live real ones (default test, as in the portal: a live key is asked for by name)',
    },
  },
  prepare(args) {
    const input = {
      accountId: requiredOption(args, 'account'),
      name: requiredOption(args, 'name').trim(),
      // Test by default, as the portal's form and Stripe's CLI: a key that reaches real people is asked for
      // with --mode live. The mode is printed on every answer, so nobody takes one kind for the other.
      mode: choiceOption(args, 'mode', apiKeyModes, 'test'),
    };
    return async ({ db, clock }) => {
      await requireAccount(db, input.accountId);
      const key = await createApiKey(db, clock, input);
      const text = [
        `Created ${key.mode} key ${key.id} for account ${key.account_id}.`,
        formatFields([
          [
            'mode',
            key.mode === 'test' ? 'test: simulated calls only (--mode live for real calls)' : 'live: real calls through the voice provider',
          ],
          ['name', key.name],
          ['prefix', key.prefix],
        ]),
        '',
        `Token (shown only this once; it cannot be shown again):`,
        '',
        `  ${key.token}`,
        '',
        'Copy it now. A lost token cannot be recovered: revoke the key and create another.',
      ].join('\n');
      return { json: key, text };
    };
  },
};
