/**
 * `rate_limits`, PostgreSQL only: made and written by rate-limiter-flexible's RateLimiterPostgres (its CREATE
 * TABLE IF NOT EXISTS, not a migration), and by the counting statement of rate-limit.repository.ts, which
 * writes its rows as the library does. Not part of `Database`: nothing else reads it.
 */
export interface RateLimitsTable {
  /** `<limiter name>:<counter name>` (the library's keyPrefix joining). */
  key: string;
  points: number;
  /** End of the window, ms since the epoch (bigint, read back as a string). */
  expire: string | null;
}

// A type, not an interface: Kysely's withTables wants an index signature, which only a type alias has implied.
export type RateLimitsTables = {
  rate_limits: RateLimitsTable;
};
