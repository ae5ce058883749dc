import { resetPassword } from '../../../features/identity/users.service.js';
import { requiredOption } from '../../args.js';
import type { Command } from '../../command.js';

export const resetPasswordCommand: Command = {
  name: 'reset-password',
  summary: "Set a portal user's password and sign them out everywhere",
  options: {
    email: { value: 'EMAIL', description: 'Email of the user', required: true },
    password: { value: 'PASSWORD', description: 'The new password, at least 10 characters', required: true },
  },
  prepare(args) {
    const input = { email: requiredOption(args, 'email'), password: requiredOption(args, 'password') };
    return async ({ db }) => {
      const { sessionsEnded: ended, ...user } = await resetPassword(db, input);
      return {
        json: { ...user, sessions_ended: ended },
        text: `Set a new password for ${user.email}; ${ended} portal session${ended === 1 ? '' : 's'} ended.`,
      };
    };
  },
};
