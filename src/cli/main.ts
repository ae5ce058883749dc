/**
 * The `callgate` operator CLI. It reads the server's config, opens only the database (no rate limiters, no
 * call monitor, no logger, so nothing is logged and no secret leaves except a new key's token or an
 * endpoint's signing secret in the output), runs the migrations (or checks them, with
 * CALLGATE_MIGRATE_ON_START=false) and calls the same service functions as the HTTP server. The one-word
 * tools (`migrate`, `backup`, `copy-data`, `doctor`) open what they need themselves. `runCli` turns a command line into output and an exit code without touching the
 * process, so tests run it in-process; bin.ts (run by bin/callgate.js) binds it to argv and the streams.
 */
import { ConfigError, loadConfig, type Config } from '../config.js';
import { systemClock } from '../lib/clock.js';
import { parseCommandArgs, UsageError } from './args.js';
import type { Command, CommandGroup, CommandResult, CommandRunner, ToolCommand } from './command.js';
import { accountsGroup } from './commands/accounts/root.js';
import { agentsGroup } from './commands/agents/root.js';
import { backupCommand } from './commands/backup.js';
import { copyDataCommand } from './commands/copy-data.js';
import { batchesGroup } from './commands/batches/root.js';
import { callsGroup } from './commands/calls/root.js';
import { deliveriesGroup } from './commands/deliveries/root.js';
import { doctorCommand } from './commands/doctor.js';
import { eventsGroup } from './commands/events/root.js';
import { keysGroup } from './commands/keys/root.js';
import { suppressionsGroup } from './commands/suppressions/root.js';
import { migrateCommand } from './commands/migrate.js';
import { usersGroup } from './commands/users/root.js';
import { webhooksGroup } from './commands/webhooks/root.js';
import { commandUsage, groupUsage, rootUsage, toolUsage } from './usage.js';

const commandGroups: readonly CommandGroup[] = [
  accountsGroup,
  agentsGroup,
  keysGroup,
  usersGroup,
  webhooksGroup,
  deliveriesGroup,
  eventsGroup,
  batchesGroup,
  suppressionsGroup,
  callsGroup,
];

const toolCommands: readonly ToolCommand[] = [migrateCommand, backupCommand, copyDataCommand, doctorCommand];

export interface CliIo {
  /** Writes one block of text followed by a newline. */
  stdout(text: string): void;
  stderr(text: string): void;
}

const exitOk = 0;
const exitFailure = 1;
const exitUsage = 2;

const helpTokens = new Set(['--help', '-h']);
const globalTokens = new Set(['--json', ...helpTokens]);

/**
 * Takes `<noun> <verb>` off the front of the line. Only global flags may stand before them, so an option
 * value (`--name accounts`) is never mistaken for a command word.
 */
function splitCommand(argv: readonly string[]): { noun: string | undefined; verb: string | undefined; rest: string[] } {
  const words: string[] = [];
  const rest: string[] = [];
  let inCommand = true;
  for (const token of argv) {
    if (inCommand && words.length < 2 && !token.startsWith('-')) {
      words.push(token);
      continue;
    }
    if (!globalTokens.has(token)) inCommand = false;
    rest.push(token);
  }
  return { noun: words[0], verb: words[1], rest };
}

async function withDatabase(config: Config, progress: (line: string) => void, run: CommandRunner): Promise<CommandResult> {
  // Loaded only here: --help and usage errors need no database driver, and start in a third of the time.
  const { openDatabase, prepareSchema } = await import('../db/database.js');
  const { notifyDeliveryWorkers } = await import('../features/webhook-delivery/delivery-notifier.js');
  const database = openDatabase(config.database);
  const wakeDeliveryWorkers = async () => {
    if (database.dialect !== 'postgres') return;
    // Only a shortcut: the deliveries are committed and every worker's sweep finds them within a second.
    await notifyDeliveryWorkers(database.pool).catch(() => undefined);
  };
  try {
    await prepareSchema(database.db, { migrate: config.migrateOnStart });
    // Loaded when a command asks: only `calls cancel` and `batches cancel --hang-up` speak to the providers.
    const providers = async () => (await import('../features/providers/provider-registry.js')).providerRegistryFor(config, systemClock);
    return await run({ config, db: database.db, clock: systemClock, providers, wakeDeliveryWorkers, progress });
  } finally {
    await database.destroy();
  }
}

/**
 * The one rendering of a failed command line: the text after `callgate: ` and the exit code. A usage error
 * shows the help (exit 2); a bad setting says it is one. Every expected failure is an ApiError whose
 * message is written for the operator, whatever its code; an unexpected error (a database that refuses
 * connections) names its cause in its message too. Both exit 1.
 */
function failureOf(error: unknown, commandLine: string): { text: string; exitCode: number } {
  if (error instanceof UsageError) {
    return { text: `${error.message}\n\n${error.help ?? `Run "${commandLine} --help" for usage.`}`, exitCode: exitUsage };
  }
  if (error instanceof ConfigError) return { text: `configuration error: ${error.message}`, exitCode: exitFailure };
  return { text: error instanceof Error ? error.message : String(error), exitCode: exitFailure };
}

type Resolved =
  | { readonly usage: string }
  | { readonly tool: ToolCommand; readonly rest: string[] }
  | { readonly group: CommandGroup; readonly command: Command; readonly rest: string[] };

/** Finds the command of a line, or the usage text that `--help` asked for. */
function resolveCommand(argv: readonly string[]): Resolved {
  const { noun, verb, rest } = splitCommand(argv);
  const endOfOptions = rest.indexOf('--');
  const help = (endOfOptions === -1 ? rest : rest.slice(0, endOfOptions)).some((token) => helpTokens.has(token));
  if (noun === undefined) {
    if (help) return { usage: rootUsage(commandGroups, toolCommands) };
    throw new UsageError('missing command', rootUsage(commandGroups, toolCommands));
  }
  const tool = toolCommands.find((candidate) => candidate.name === noun);
  if (tool) {
    if (verb !== undefined) throw new UsageError(`unexpected "${verb}" after "${noun}"`, toolUsage(tool));
    if (help) return { usage: toolUsage(tool) };
    return { tool, rest };
  }
  const group = commandGroups.find((candidate) => candidate.name === noun);
  if (!group) throw new UsageError(`unknown command "${noun}"`, 'Run "callgate --help" for usage.');
  if (verb === undefined) {
    if (help) return { usage: groupUsage(group) };
    throw new UsageError(`missing command after "${noun}"`, groupUsage(group));
  }
  const command = group.commands.find((candidate) => candidate.name === verb);
  if (!command) throw new UsageError(`unknown command "${noun} ${verb}"`, `Run "callgate ${noun} --help" for usage.`);
  if (help) return { usage: commandUsage(group, command) };
  return { group, command, rest };
}

/** Runs one command line and returns the exit code; reads `env`, never `process.env`. */
export async function runCli(argv: readonly string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  let commandLine = 'callgate';
  try {
    const resolved = resolveCommand(argv);
    if ('usage' in resolved) {
      io.stdout(resolved.usage);
      return exitOk;
    }
    if ('tool' in resolved) {
      const { tool, rest } = resolved;
      commandLine = `callgate ${tool.name}`;
      const args = parseCommandArgs(rest, tool.options, []);
      const run = tool.prepare(args);
      const progress = args.json ? () => undefined : (line: string) => io.stderr(line);
      const result = await run({ env, clock: systemClock, progress });
      io.stdout(args.json ? JSON.stringify(result.json) : result.text);
      return result.exitCode ?? exitOk;
    }
    const { group, command, rest } = resolved;
    commandLine = `callgate ${group.name} ${command.name}`;
    const args = parseCommandArgs(rest, command.options, command.positionals ?? []);
    const run = command.prepare(args);
    const progress = args.json ? () => undefined : (line: string) => io.stderr(line);
    const result = await withDatabase(loadConfig(env), progress, run);
    io.stdout(args.json ? JSON.stringify(result.json) : result.text);
    return result.exitCode ?? exitOk;
  } catch (error) {
    const failure = failureOf(error, commandLine);
    io.stderr(`callgate: ${failure.text}`);
    return failure.exitCode;
  }
}
