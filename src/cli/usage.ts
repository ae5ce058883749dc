/** Help texts, built from the command definitions so that they cannot drift from what is parsed. */
import { globalFlags } from './args.js';
import type { Command, CommandGroup, ToolCommand } from './command.js';

const footer = [
  "The database is the server's: DATABASE_URL (PostgreSQL) when set, else the SQLite file in",
  'CALLGATE_DATA_DIR (default ./data). Migrations run first, as at server start, unless',
  'CALLGATE_MIGRATE_ON_START=false (then run "npx callgate migrate").',
  'Exit status: 0 on success, 1 when the command failed, 2 on a usage error.',
];

function column(rows: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}

const flagRows: (readonly [string, string])[] = [
  ['--json', globalFlags.json.description],
  ['-h, --help', globalFlags.help.description],
];

export function rootUsage(groups: readonly CommandGroup[], tools: readonly ToolCommand[] = []): string {
  const commands = [
    ...groups.flatMap((group) => group.commands.map((command) => [`${group.name} ${command.name}`, command.summary] as const)),
    ...tools.map((tool) => [tool.name, tool.summary] as const),
  ];
  return [
    'callgate: operator commands for a callgate installation',
    '',
    'Usage: callgate <command> [options]',
    '',
    'Commands:',
    ...column(commands),
    '',
    'Options of every command:',
    ...column(flagRows),
    '',
    'Run "callgate <command> --help" for the options of a command.',
    ...footer,
  ].join('\n');
}

export function groupUsage(group: CommandGroup): string {
  return [
    `callgate ${group.name}: ${group.summary}`,
    '',
    `Usage: callgate ${group.name} <${group.commands.map((command) => command.name).join('|')}> [options]`,
    '',
    'Commands:',
    ...column(group.commands.map((command) => [command.name, command.summary] as const)),
    '',
    `Run "callgate ${group.name} <command> --help" for the options of a command.`,
  ].join('\n');
}

export function commandSynopsis(group: CommandGroup, command: Command): string {
  const options = Object.entries(command.options).map(([name, spec]) =>
    spec.required ? `--${name} ${spec.value}` : `[--${name} ${spec.value}]`,
  );
  return ['callgate', group.name, command.name, ...(command.positionals ?? []), ...options, '[--json]'].join(' ');
}

export function commandUsage(group: CommandGroup, command: Command): string {
  const optionRows = Object.entries(command.options).map(
    ([name, spec]) => [`--${name} ${spec.value}`, `${spec.required ? 'Required. ' : ''}${spec.description}`] as const,
  );
  return [
    `Usage: ${commandSynopsis(group, command)}`,
    '',
    `${command.summary}.`,
    '',
    'Options:',
    ...column([...optionRows, ...flagRows]),
    '',
    ...footer,
  ].join('\n');
}

export function toolUsage(tool: ToolCommand): string {
  const options = Object.entries(tool.options);
  const synopsis = options.map(([name, spec]) => (spec.required ? `--${name} ${spec.value}` : `[--${name} ${spec.value}]`));
  const optionRows = options.map(
    ([name, spec]) => [`--${name} ${spec.value}`, `${spec.required ? 'Required. ' : ''}${spec.description}`] as const,
  );
  return [
    `Usage: ${['callgate', tool.name, ...synopsis, '[--json]'].join(' ')}`,
    '',
    `${tool.summary}.`,
    '',
    'Options:',
    ...column([...optionRows, ...flagRows]),
    '',
    "The database is the server's: DATABASE_URL (PostgreSQL) when set, else the SQLite file in",
    'CALLGATE_DATA_DIR (default ./data).',
    'Exit status: 0 on success, 1 when the command failed, 2 on a usage error.',
  ].join('\n');
}
