import type { Db } from '../../db/database.js';
import { olderThan, type ListCursor } from '../../db/cursor.js';
import type { AgentRow, NewAgentRow } from './agents.tables.js';

export async function insertAgent(db: Db, row: NewAgentRow): Promise<void> {
  await db.insertInto('agents').values(row).execute();
}

/** The agent with this provider id in this account only: agents of other accounts are invisible. */
export async function findAgentInAccount(db: Db, accountId: string, agentId: string): Promise<AgentRow | undefined> {
  return db.selectFrom('agents').selectAll().where('account_id', '=', accountId).where('agent_id', '=', agentId).executeTakeFirst();
}

export async function listAgentsByAccount(db: Db, accountId: string): Promise<AgentRow[]> {
  return db.selectFrom('agents').selectAll().where('account_id', '=', accountId).orderBy('name').orderBy('id').execute();
}

/**
 * A page of the account's agents, newest first by creation time and then row id, after `startingAfter` (the
 * last agent of the page before). The unique (account_id, agent_id) index finds them; an account has few.
 */
export async function listAgentsPage(
  db: Db,
  filter: { accountId: string; limit: number; startingAfter?: ListCursor },
): Promise<AgentRow[]> {
  let query = db.selectFrom('agents').selectAll().where('account_id', '=', filter.accountId);
  if (filter.startingAfter) query = query.where(olderThan(filter.startingAfter));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

export async function updateAgent(
  db: Db,
  id: string,
  changes: Pick<AgentRow, 'name' | 'provider' | 'provider_agent_id' | 'phone_number_id' | 'phone_number_provider' | 'phone_number'>,
): Promise<void> {
  await db.updateTable('agents').set(changes).where('id', '=', id).execute();
}

/** The accounts that have an agent of this provider id, oldest agent first. */
export async function accountsWithAgent(db: Db, agentId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('agents')
    .select('account_id')
    .where('agent_id', '=', agentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => row.account_id);
}
