/**
 * The shape of a CLI command. A command first turns its arguments into a runner (no database yet, so a
 * usage error is cheap), then the runner calls the same service functions as the HTTP server and returns
 * both renderings of its result; main.ts prints the one that was asked for.
 */
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { ApiError } from '../errors/api-error.js';
import { getAccount } from '../features/identity/accounts.service.js';
import type { AccountRow } from '../features/identity/identity.tables.js';
import type { Clock } from '../lib/clock.js';
import type { ProviderRegistry } from '../features/providers/provider-registry.js';
import type { CommandArgs, OptionSpecs } from './args.js';

export interface CommandContext {
  /** The server's configuration, for the rules that depend on it (which providers can place calls). */
  readonly config: Config;
  readonly db: Db;
  readonly clock: Clock;
  /** The configured voice providers and the simulator, as the server has them (`calls cancel`). */
  providers(): Promise<ProviderRegistry>;
  /**
   * Wakes the delivery workers of other processes after this command queued deliveries: NOTIFY on
   * PostgreSQL; nothing on SQLite, where the server's periodic sweep finds them within a second.
   */
  wakeDeliveryWorkers(): Promise<void>;
  /** A line of progress for people, on stderr while the command runs; dropped with --json. */
  progress(line: string): void;
}

export interface CommandResult {
  /** Printed with --json: one object (lists are wrapped as `{ data: [...] }`). */
  readonly json: object;
  /** Printed otherwise, for people. */
  readonly text: string;
  /** The exit status when it is not 0 though the output is printed (doctor: a check failed). */
  readonly exitCode?: number;
}

export type CommandRunner = (context: CommandContext) => Promise<CommandResult>;

export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly options: OptionSpecs;
  /** Names of required positional arguments, in order (e.g. `KEY_ID`). */
  readonly positionals?: readonly string[];
  /** Validates the arguments; throws `UsageError` when they are wrong. */
  prepare(args: CommandArgs): CommandRunner;
}

/** What a one-word command gets: it loads the config and opens the database itself, if at all. */
export interface ToolContext {
  /** The environment to read the config from (`loadConfig(env)`), never `process.env`. */
  readonly env: NodeJS.ProcessEnv;
  readonly clock: Clock;
  progress(line: string): void;
}

/**
 * A command of one word (`callgate migrate`, `backup`, `doctor`): operations on the installation itself,
 * which must not migrate on the way in as the `<noun> <verb>` commands do.
 */
export interface ToolCommand {
  readonly name: string;
  readonly summary: string;
  readonly options: OptionSpecs;
  prepare(args: CommandArgs): (context: ToolContext) => Promise<CommandResult>;
}

/** A noun (`keys`) and its verbs (`create`, `list`, `revoke`). */
export interface CommandGroup {
  readonly name: string;
  readonly summary: string;
  readonly commands: readonly Command[];
}

/** The account behind `--account`, or a `not_found` ApiError naming the id that does not exist. */
export async function requireAccount(db: Db, accountId: string): Promise<AccountRow> {
  const account = await getAccount(db, accountId);
  if (!account) {
    // The usual cause is a CLI pointed at another database than the server's (its own environment decides).
    throw new ApiError(
      'not_found',
      `no account with id "${accountId}" in this database; \`npx callgate accounts list\` shows the ids, and the CLI reads DATABASE_URL or CALLGATE_DATA_DIR from its environment or a .env file in its folder: give it the server's`,
      { param: 'account' },
    );
  }
  return account;
}
