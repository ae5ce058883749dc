/**
 * What asks for a dial, as the dial driver (dial-driver.ts) and the dial job (dials.service `lookForDial`)
 * see it: a port of a few steps, one per kind of origin. An API request holding its Idempotency-Key is
 * the calls' own (request-origin.ts); a batch's recipient is the batches' (batches/recipient-origin.ts),
 * which the container hands to the dial job in the registry of ports (`DialOriginPorts`), so nothing here
 * imports the batches.
 */
import type { Db } from '../../db/database.js';
import type { ApiKeyRow } from '../api-keys/api-keys.tables.js';
import type { ProviderFailure } from '../providers/provider.interface.js';
import type { CallRow } from './calls.tables.js';
import type { DialRow } from './dials.tables.js';

/** The kinds of origin: an API request (POST /v1/calls), a batch's recipient. */
export const dialOriginKinds = ['request', 'recipient'] as const;
export type DialOriginKind = (typeof dialOriginKinds)[number];

/** A dial's origin kind, from what it recorded: a recipient's dial names it, a request's does not. */
export function originKindOf(dial: Pick<DialRow, 'recipient_id'>): DialOriginKind {
  return dial.recipient_id === null ? 'request' : 'recipient';
}

/**
 * The steps of a dial an origin takes part in. Each gets the dial's row, which records the origin (its
 * Idempotency-Key, its batch and recipient), so that any process can take them, after a crash too; each
 * writes in the transaction given where the guarantee needs the two to commit together.
 */
export interface DialOriginPort {
  /**
   * Holds the origin until its dial is known, in `trx`, the transaction that records the dial (`until`: the
   * Idempotency-Key's lifetime from now): nothing else may settle it or dial it again meanwhile. Throws, and
   * so rolls the dial back, when the asker no longer holds it.
   */
  hold(trx: Db, dial: DialRow, until: Date): Promise<void>;
  /** The dial's answer was lost (or its asker died) and the dial is `checking` now: what the origin says meanwhile. */
  lost(db: Db, dial: DialRow, failure: ProviderFailure): Promise<void>;
  /**
   * The dial placed `call` (answered, or found after a lost answer): the origin takes it, in `trx`, the
   * transaction that stores the call. False when the origin had moved on (a recipient failed as interrupted).
   */
  placed(trx: Db, dial: DialRow, call: CallRow): Promise<boolean>;
  /**
   * The dial's answer was lost and the provider lists no call for it: what the origin does, decided before the
   * dial ends and said in its history (`note`), then done by `end` in the transaction that ends the dial.
   */
  notPlaced(db: Db, dial: DialRow): Promise<{ readonly note: string; readonly end: (trx: Db) => Promise<void> }>;
  /** Whether the dial placed a call will never be known: the origin ends without a second dial, in `trx`. */
  abandoned(trx: Db, dial: DialRow): Promise<void>;
  /** Whether the dial job's resolutions give the workers something to do (a recipient to dial again, a batch finished). */
  readonly wakesWorkers: boolean;
}

/** The port of each kind of origin, as the container wires them for the dial job. */
export type DialOriginPorts = Readonly<Record<DialOriginKind, DialOriginPort>>;

/** What a dial records of its origin, to find it again from any process. */
export type DialOriginColumns = Partial<
  Pick<DialRow, 'batch_id' | 'recipient_id' | 'reference' | 'idempotency_route' | 'idempotency_key' | 'idempotency_owner'>
>;

/** An origin asking for a dial now (`dial` of dial-driver.ts): whom the call is for, what the dial records, its port. */
export interface DialOrigin {
  readonly apiKey: Pick<ApiKeyRow, 'id' | 'account_id' | 'mode'>;
  readonly columns: DialOriginColumns;
  readonly port: DialOriginPort;
  /**
   * The dial may outlive this asker (its answer was lost, its call is stored later or was stored by the dial
   * job): what the asker holds in memory stays held as it ends. Called before anything is written about it.
   */
  keep?(): void;
}
