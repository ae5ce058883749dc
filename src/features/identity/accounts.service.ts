import type { Db } from '../../db/database.js';
import type { AccountRow } from '../../db/schema.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { upsertAgent } from '../agents/agents.service.js';
import * as repo from './accounts.repository.js';
import { hashPassword } from './passwords.js';

export interface AccountView {
  id: string;
  name: string;
  created_at: string;
  users?: { id: string; email: string }[];
  /** The simulator agent a new account gets, so that its test keys can place a call at once. */
  agents?: { agent_id: string; name: string; provider: 'simulator' }[];
}

/**
 * The simulator agent of a new account, as Stripe's test mode works from the first minute: a test key of
 * the account can place a (simulated) call before anyone has set up a voice provider.
 */
export const testAgent = { agentId: 'agent_test_simulator', name: 'Test agent (simulator)' } as const;

export class AccountInputError extends Error {
  override readonly name = 'AccountInputError';
}

/** The rules for portal users' emails and passwords (the users feature applies the same). */
export const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const minPasswordLength = 10;

/**
 * Creates an account with its simulator agent (`testAgent`, or the one given; `false` for none) and, when
 * an email and password are given, its first portal user. Given a transaction, it writes in that one.
 */
export async function createAccount(
  db: Db,
  clock: Clock,
  input: { name: string; email?: string; password?: string; simulatorAgent?: { agentId: string; name: string } | false },
): Promise<AccountView> {
  const name = input.name.trim();
  if (name === '') throw new AccountInputError('an account needs a name');
  if ((input.email === undefined) !== (input.password === undefined)) {
    throw new AccountInputError('give both an email and a password, or neither');
  }
  const now = clock.now();
  const account: AccountRow = { id: newId('account', now.getTime()), name, created_at: isoTimestamp(now) };
  const view: AccountView = { ...account };
  let user: { id: string; email: string; password_hash: string } | undefined;
  if (input.email !== undefined && input.password !== undefined) {
    const email = input.email.trim().toLowerCase();
    if (!emailPattern.test(email)) throw new AccountInputError(`not an email address: ${input.email}`);
    if (input.password.length < minPasswordLength) {
      throw new AccountInputError(`a password needs at least ${minPasswordLength} characters`);
    }
    if (await repo.findUserByEmail(db, email)) throw new AccountInputError(`a user with email ${email} exists already`);
    user = { id: newId('user', now.getTime()), email, password_hash: await hashPassword(input.password) };
    view.users = [{ id: user.id, email }];
  }
  const agent = input.simulatorAgent === undefined ? testAgent : input.simulatorAgent;
  const write = async (trx: Db) => {
    await repo.insertAccount(trx, account);
    if (user) await repo.insertUser(trx, { ...user, account_id: account.id, created_at: account.created_at });
    if (agent) {
      await upsertAgent(trx, clock, { accountId: account.id, agentId: agent.agentId, name: agent.name, provider: 'simulator' });
      view.agents = [{ agent_id: agent.agentId, name: agent.name, provider: 'simulator' }];
    }
  };
  // Kysely cannot nest transactions: inside one (the demo seed's), write there.
  if (db.isTransaction) await write(db);
  else await db.transaction().execute(write);
  return view;
}

/** The accounts of this installation, for the operator (`callgate accounts list`). */
export async function listAccounts(db: Db): Promise<{ id: string; name: string; users: number; created_at: string }[]> {
  return repo.listAccountsWithUserCounts(db);
}

export async function getAccount(db: Db, id: string): Promise<AccountRow | undefined> {
  return repo.findAccountById(db, id);
}
