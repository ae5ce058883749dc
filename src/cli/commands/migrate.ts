import { loadConfig } from '../../config.js';
import type { ToolCommand } from '../command.js';

/**
 * Applies the pending migrations and exits: the step of a rolling deploy that runs once, before processes
 * of the new version start with CALLGATE_MIGRATE_ON_START=false. It migrates whatever that setting says.
 */
export const migrateCommand: ToolCommand = {
  name: 'migrate',
  summary: 'Apply the pending database migrations and exit (for CALLGATE_MIGRATE_ON_START=false)',
  options: {},
  prepare() {
    return async ({ env }) => {
      const config = loadConfig(env);
      // Loaded only here: --help needs no database driver.
      const { migrateToLatest, openDatabase } = await import('../../db/database.js');
      const database = openDatabase(config.database);
      try {
        const applied = await migrateToLatest(database.db);
        const text =
          applied.length === 0
            ? 'The database is up to date: no migration to apply.'
            : `Applied ${applied.length} migration${applied.length === 1 ? '' : 's'}:\n${applied.map((name) => `  ${name}`).join('\n')}`;
        return { json: { applied, up_to_date: applied.length === 0 }, text };
      } finally {
        await database.destroy();
      }
    };
  },
};
