import { normalizeNumber } from '../../../features/suppressions/suppressions.service.js';
import { UsageError, requiredOption, type CommandArgs } from '../../args.js';

/** `--to`: E.164, as people may write it (`+1 415 555 0123`); a number without its + is a usage error. */
export function numberOption(args: CommandArgs): string {
  const given = requiredOption(args, 'to');
  const number = normalizeNumber(given);
  if (number === null) {
    throw new UsageError(
      `option --to must be a phone number in E.164 format, such as +14155550123 (with its + and country code), got "${given}"`,
    );
  }
  return number;
}
