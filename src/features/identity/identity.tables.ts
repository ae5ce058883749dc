import type { Selectable } from 'kysely';

export interface AccountsTable {
  id: string;
  name: string;
  created_at: string;
  /** Calls in progress at once in each mode (src/features/concurrency); null: no limit. */
  max_concurrent_calls: number | null;
}

export interface UsersTable {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  created_at: string;
}

export interface PortalSessionsTable {
  /** SHA-256 (hex) of the session token; the token itself lives only in the user's cookie. */
  id: string;
  user_id: string;
  account_id: string;
  /** Hidden `_csrf` field of every form of the session. */
  csrf_token: string;
  created_at: string;
  /** Refreshed at most once a minute; a session unused for the idle timeout has ended. */
  last_seen_at: string;
  /** The absolute end of the session, however active. */
  expires_at: string;
}

export interface IdentityTables {
  accounts: AccountsTable;
  users: UsersTable;
  portal_sessions: PortalSessionsTable;
}

export type AccountRow = Selectable<AccountsTable>;
export type UserRow = Selectable<UsersTable>;
export type PortalSessionRow = Selectable<PortalSessionsTable>;
