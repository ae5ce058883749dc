/**
 * Option parsing shared by every command, on top of node:util `parseArgs` (strict: an unknown option or a
 * missing value is a usage error). Commands declare their options; this module checks presence and shape
 * before the database is opened, so a typo costs no connection.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A `--name VALUE` option of a command. Every command option takes a value; flags are global. */
export interface OptionSpec {
  /** Placeholder shown in usage, e.g. `NAME` or `live|test`. */
  readonly value: string;
  readonly description: string;
  readonly required?: boolean;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** Wrong command line: exit code 2, then `help` (a usage text or a pointer to one) when given. */
export class UsageError extends Error {
  override readonly name = 'UsageError';

  constructor(
    message: string,
    readonly help?: string,
  ) {
    super(message);
  }
}

/** Flags understood by every command, wherever they stand on the line. */
export const globalFlags = {
  json: { description: 'Print exactly one JSON object on stdout (lists: {"data": [...]})' },
  help: { short: 'h', description: 'Show usage' },
} as const;

export interface CommandArgs {
  /** Option values by name; absent options are undefined. */
  readonly options: Readonly<Record<string, string | undefined>>;
  readonly positionals: readonly string[];
  readonly json: boolean;
}

/** Maps parseArgs' long messages to short ones naming the option. */
function usageMessage(error: Error & { code?: string }): string {
  const option = /'(-[^' ]+)/.exec(error.message)?.[1];
  if (option && error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${option}`;
  if (option && error.message.includes('does not take an argument')) return `option ${option} takes no value`;
  // parseArgs takes a value starting with a dash (`--limit -5`) for the next option and calls it ambiguous.
  if (option && error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && error.message.includes('ambiguous')) {
    return `option ${option} needs a value (for one that starts with a dash, write ${option}=VALUE)`;
  }
  if (option && error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') return `option ${option} needs a value`;
  return error.message;
}

export function parseCommandArgs(argv: readonly string[], options: OptionSpecs, positionalNames: readonly string[]): CommandArgs {
  const config: NonNullable<ParseArgsConfig['options']> = {
    json: { type: 'boolean' },
    help: { type: 'boolean', short: globalFlags.help.short },
  };
  for (const name of Object.keys(options)) config[name] = { type: 'string' };

  let parsed: { values: Record<string, string | boolean | (string | boolean)[] | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: config, strict: true, allowPositionals: true });
  } catch (error) {
    if (error instanceof Error && String((error as { code?: string }).code).startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError(usageMessage(error));
    }
    throw error;
  }

  const values: Record<string, string | undefined> = {};
  for (const [name, spec] of Object.entries(options)) {
    const raw = parsed.values[name];
    const value = typeof raw === 'string' ? raw : undefined;
    if (spec.required && value === undefined) throw new UsageError(`missing option --${name} ${spec.value}`);
    if (spec.required && value !== undefined && value.trim() === '') throw new UsageError(`option --${name} must not be empty`);
    values[name] = value;
  }

  const { positionals } = parsed;
  if (positionals.length > positionalNames.length) {
    throw new UsageError(`unexpected argument "${positionals[positionalNames.length]}"`);
  }
  if (positionals.length < positionalNames.length) {
    throw new UsageError(`missing argument ${positionalNames[positionals.length]}`);
  }
  return { options: values, positionals, json: parsed.values.json === true };
}

/** A required option's value; `parseCommandArgs` has already checked that it is present and not blank. */
export function requiredOption(args: CommandArgs, name: string): string {
  const value = args.options[name];
  if (value === undefined) throw new UsageError(`missing option --${name}`);
  return value;
}

export function optionalOption(args: CommandArgs, name: string): string | undefined {
  return args.options[name];
}

/** One of a closed list of values (a mode, a provider), or undefined when the option is absent. */
export function optionalChoiceOption<T extends string>(args: CommandArgs, name: string, allowed: readonly T[]): T | undefined {
  const value = args.options[name];
  if (value === undefined) return undefined;
  const match = allowed.find((candidate) => candidate === value);
  if (match === undefined) throw new UsageError(`option --${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  return match;
}

/** One of a closed list of values (a mode, a provider), or the fallback when the option is absent. */
export function choiceOption<T extends string>(args: CommandArgs, name: string, allowed: readonly T[], fallback: T): T {
  return optionalChoiceOption(args, name, allowed) ?? fallback;
}

/** A whole number within [min, max], or the fallback when the option is absent. */
export function integerOption(args: CommandArgs, name: string, range: { min: number; max: number; fallback: number }): number {
  const value = args.options[name];
  if (value === undefined) return range.fallback;
  const number = /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!(number >= range.min && number <= range.max)) {
    throw new UsageError(`option --${name} must be a whole number from ${range.min} to ${range.max}, got "${value}"`);
  }
  return number;
}

/** A comma-separated list (`a,b`), without blanks; undefined when the option is absent. */
export function listOption(args: CommandArgs, name: string): string[] | undefined {
  const value = args.options[name];
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0) throw new UsageError(`option --${name} needs at least one value`);
  return items;
}
