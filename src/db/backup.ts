/**
 * An online copy of the SQLite database, consistent while the server keeps writing: SQLite's backup API
 * (better-sqlite3's `backup`) on a connection of its own. The file is in WAL mode, so the copy reads one
 * snapshot and never blocks the server's writers; it is written to a temporary name beside the target and
 * renamed when complete, so a failed or interrupted backup never leaves a file that looks like a backup.
 */
import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

export class BackupError extends Error {
  override readonly name = 'BackupError';
}

export interface BackupResult {
  readonly file: string;
  readonly bytes: number;
  readonly pages: number;
}

/** Copies the SQLite database `source` to `target`, which must not exist yet. */
export async function backupSqlite(source: string, target: string): Promise<BackupResult> {
  const to = path.resolve(target);
  if (!fs.existsSync(source)) throw new BackupError(`there is no database at ${source} (check CALLGATE_DATA_DIR)`);
  if (fs.existsSync(to))
    throw new BackupError(`${to} already exists: a backup never overwrites a file; choose a new name or remove it first`);
  if (!fs.existsSync(path.dirname(to))) throw new BackupError(`the folder ${path.dirname(to)} does not exist`);
  const partial = `${to}.partial-${process.pid}`;
  const sqlite = new BetterSqlite3(source, { fileMustExist: true });
  try {
    sqlite.pragma('busy_timeout = 5000');
    // All remaining pages in one step: a step reads one snapshot, while small steps would start over
    // each time the server commits between them and might never finish under load.
    const progress = await sqlite.backup(partial, { progress: () => 0x7fffffff });
    fs.renameSync(partial, to);
    return { file: to, bytes: fs.statSync(to).size, pages: progress.totalPages };
  } catch (error) {
    fs.rmSync(partial, { force: true });
    throw error;
  } finally {
    sqlite.close();
  }
}
