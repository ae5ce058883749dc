import type { Db } from '../../db/database.js';
import type { AgentRow, NewAgentRow } from '../../db/schema.js';

export async function insertAgent(db: Db, row: NewAgentRow): Promise<void> {
  await db.insertInto('agents').values(row).execute();
}

/** The agent with this provider id in this account only: agents of other accounts are invisible. */
export async function findAgentInAccount(db: Db, accountId: string, agentId: string): Promise<AgentRow | undefined> {
  return db
    .selectFrom('agents')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
}

export async function listAgentsByAccount(db: Db, accountId: string): Promise<AgentRow[]> {
  return db.selectFrom('agents').selectAll().where('account_id', '=', accountId).orderBy('name').orderBy('id').execute();
}

export async function updateAgent(
  db: Db,
  id: string,
  changes: Pick<AgentRow, 'name' | 'provider' | 'phone_number_id' | 'phone_number_provider'>,
): Promise<void> {
  await db.updateTable('agents').set(changes).where('id', '=', id).execute();
}

/** Remembers the kind of an agent's phone number once the provider told us. */
export async function setPhoneNumberProvider(db: Db, id: string, phoneNumberProvider: string): Promise<void> {
  await db.updateTable('agents').set({ phone_number_provider: phoneNumberProvider }).where('id', '=', id).execute();
}
