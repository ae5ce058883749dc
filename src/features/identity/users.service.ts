/**
 * Portal users: people of one account who sign in to the developer portal. Passwords are scrypt hashes with
 * a per-user salt (passwords.ts); emails are stored lower-case and are unique across the installation.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { findAccountById } from './accounts.repository.js';
import type { UserRow } from './identity.tables.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { deleteSessionsOfUser } from './sessions.repository.js';
import * as repo from './users.repository.js';

export interface UserView {
  id: string;
  account_id: string;
  email: string;
  created_at: string;
}

export function toUserView(row: UserRow): UserView {
  return { id: row.id, account_id: row.account_id, email: row.email, created_at: row.created_at };
}

/** The portal users of an account (never their password hashes). */
export async function listUsers(db: Db, accountId: string): Promise<UserView[]> {
  return (await repo.listUsersOfAccount(db, accountId)).map(toUserView);
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const minPasswordLength = 10;

function checkPassword(password: string): void {
  if (password.length < minPasswordLength) {
    throw new ApiError('invalid_request', `a password needs at least ${minPasswordLength} characters`, { param: 'password' });
  }
}

/** The email as stored, once it and the password meet the rules for a new user. */
export function checkNewUser(input: { email: string; password: string }): string {
  const email = normaliseEmail(input.email);
  if (!emailPattern.test(email)) throw new ApiError('invalid_request', `not an email address: ${input.email}`, { param: 'email' });
  checkPassword(input.password);
  return email;
}

/** The row of a new user (not stored yet), once `email` (checked by `checkNewUser`) is free. */
export async function newUserRow(db: Db, now: Date, input: { accountId: string; email: string; password: string }): Promise<UserRow> {
  if (await repo.findUserByEmail(db, input.email)) {
    throw new ApiError('invalid_request', `a user with email ${input.email} exists already`, { param: 'email' });
  }
  return {
    id: newId('user', now.getTime()),
    account_id: input.accountId,
    email: input.email,
    password_hash: await hashPassword(input.password),
    created_at: isoTimestamp(now),
  };
}

/** Adds a portal user to an existing account. */
export async function addUser(db: Db, clock: Clock, input: { accountId: string; email: string; password: string }): Promise<UserView> {
  const email = checkNewUser(input);
  if (!(await findAccountById(db, input.accountId))) {
    throw new ApiError('not_found', `no account with id "${input.accountId}"`, { param: 'account' });
  }
  const row = await newUserRow(db, clock.now(), { accountId: input.accountId, email, password: input.password });
  await repo.insertUser(db, row);
  return toUserView(row);
}

/** Sets a new password and ends every portal session of the user (whoever knew the old one is signed out). */
export async function resetPassword(db: Db, input: { email: string; password: string }): Promise<UserView & { sessionsEnded: number }> {
  const email = normaliseEmail(input.email);
  checkPassword(input.password);
  const user = await repo.findUserByEmail(db, email);
  if (!user) throw new ApiError('not_found', `no user with email ${email}`, { param: 'email' });
  const passwordHash = await hashPassword(input.password);
  const sessionsEnded = await db.transaction().execute(async (trx) => {
    await repo.updatePasswordHash(trx, user.id, passwordHash);
    return deleteSessionsOfUser(trx, user.id);
  });
  return { ...toUserView(user), sessionsEnded };
}

/** A hash of a password nobody has, checked when the email is unknown so that both answers take as long. */
let decoyHash: Promise<string> | undefined;

/** The user with this email and password, or null (unknown email and wrong password look the same). */
export async function authenticateUser(db: Db, email: string, password: string): Promise<UserRow | null> {
  const user = await repo.findUserByEmail(db, normaliseEmail(email));
  if (!user) {
    decoyHash ??= hashPassword('decoy password that no user has');
    await verifyPassword(password, await decoyHash);
    return null;
  }
  return (await verifyPassword(password, user.password_hash)) ? user : null;
}
