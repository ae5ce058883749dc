import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { upsertAgent } from '../agents/agents.service.js';
import * as repo from './accounts.repository.js';
import type { AccountRow, UserRow } from './identity.tables.js';
import { insertUser } from './users.repository.js';
import { checkNewUser, newUserRow } from './users.service.js';

export interface AccountView {
  id: string;
  name: string;
  created_at: string;
  /** Calls in progress at once in each mode; null: no limit (src/features/concurrency). */
  max_concurrent_calls: number | null;
  users?: { id: string; email: string }[];
  /** The simulator agent a new account gets, so that its test keys can place a call at once. */
  agents?: { agent_id: string; name: string; provider: 'simulator' }[];
}

/**
 * The simulator agent of a new account, as Stripe's test mode works from the first minute: a test key of
 * the account can place a (simulated) call before anyone has set up a voice provider.
 */
export const testAgent = { agentId: 'agent_test_simulator', name: 'Test agent (simulator)' } as const;

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
  if (name === '') throw new ApiError('invalid_request', 'an account needs a name', { param: 'name' });
  if ((input.email === undefined) !== (input.password === undefined)) {
    throw new ApiError('invalid_request', 'give both an email and a password, or neither');
  }
  const now = clock.now();
  const account: AccountRow = { id: newId('account', now.getTime()), name, created_at: isoTimestamp(now), max_concurrent_calls: null };
  const view: AccountView = { ...account };
  let user: UserRow | undefined;
  if (input.email !== undefined && input.password !== undefined) {
    const email = checkNewUser({ email: input.email, password: input.password });
    user = await newUserRow(db, now, { accountId: account.id, email, password: input.password });
    view.users = [{ id: user.id, email }];
  }
  const agent = input.simulatorAgent === undefined ? testAgent : input.simulatorAgent;
  const write = async (trx: Db) => {
    await repo.insertAccount(trx, account);
    if (user) await insertUser(trx, user);
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
export async function listAccounts(
  db: Db,
): Promise<{ id: string; name: string; users: number; created_at: string; max_concurrent_calls: number | null }[]> {
  return repo.listAccountsWithUserCounts(db);
}

export async function getAccount(db: Db, id: string): Promise<AccountRow | undefined> {
  return repo.findAccountById(db, id);
}

/** True once the installation has an account (the demo seed runs on an empty database only). */
export async function hasAccounts(db: Db): Promise<boolean> {
  return (await repo.countAccounts(db)) > 0;
}

/** The most concurrent calls an account may be given (`accounts update --max-concurrent-calls`). */
export const maxConcurrentCallsMax = 100_000;

/**
 * Sets the account's limit of calls in progress at once in each mode (null: none); returns the account as
 * it is now, or undefined when there is no such account. Calls under way go on when a limit is lowered
 * below their number: new ones wait (batches) or are refused (429) until enough have ended.
 */
export async function setMaxConcurrentCalls(db: Db, id: string, limit: number | null): Promise<AccountRow | undefined> {
  if (limit !== null && !(Number.isInteger(limit) && limit >= 1 && limit <= maxConcurrentCallsMax)) {
    throw new ApiError('invalid_request', `max_concurrent_calls must be a whole number from 1 to ${maxConcurrentCallsMax}, or none`, {
      param: 'max_concurrent_calls',
    });
  }
  if (!(await repo.updateMaxConcurrentCalls(db, id, limit))) return undefined;
  return repo.findAccountById(db, id);
}
