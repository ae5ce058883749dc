import { loadConfig } from '../../config.js';
import { requiredOption } from '../args.js';
import type { ToolCommand } from '../command.js';

export const backupCommand: ToolCommand = {
  name: 'backup',
  summary: 'Copy the SQLite database to FILE while the server runs (never overwrites; PostgreSQL: use pg_dump)',
  options: {
    to: { value: 'FILE', description: 'Where the copy is written; must not exist yet', required: true },
  },
  prepare(args) {
    const to = requiredOption(args, 'to');
    return async ({ env }) => {
      const config = loadConfig(env);
      if (config.database.dialect !== 'sqlite') {
        throw new Error(
          'npx callgate backup copies the SQLite database only; this installation uses PostgreSQL (DATABASE_URL): back it up with pg_dump, e.g. pg_dump --format=custom --file callgate.dump "$DATABASE_URL"',
        );
      }
      const { backupSqlite } = await import('../../db/backup.js');
      const result = await backupSqlite(config.database.file, to);
      return {
        json: { file: result.file, bytes: result.bytes, pages: result.pages },
        text: `Backed up ${config.database.file} to ${result.file} (${result.bytes} bytes). To restore: stop callgate, copy the file back as ${config.database.file}, delete callgate.sqlite-wal and callgate.sqlite-shm beside it, start callgate.`,
      };
    };
  },
};
