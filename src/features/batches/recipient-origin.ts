/**
 * A batch's recipient as a dial's origin (calls/dial-origin.ts). While its dial is unknown the recipient
 * stays `dialing`, held past its claim's lease, so that nothing else fails it or dials it again; it takes
 * the call its dial placed, answered or found; a lost dial that placed nothing has it dialed again, once;
 * and a dial that can never be known ends it `interrupted`.
 */
import { addMs, type Clock } from '../../lib/clock.js';
import type { DialOrigin, DialOriginPort } from '../calls/dial-origin.js';
import { handOverSlots } from '../concurrency/concurrency.service.js';
import { notPlacedDialsOfRecipient } from '../calls/dials.service.js';
import type { DialRow } from '../calls/dials.tables.js';
import {
  failAfterLostDials,
  holdRecipientForDial,
  interruptDialing,
  recipientTookCall,
  redialAfterLostDial,
} from './batch-progress.service.js';
import type { BatchRow, RecipientRow } from './batches.tables.js';

/**
 * A recipient whose dial placed nothing is dialed again once: should that dial lose its answer and place
 * nothing too, the recipient fails rather than being dialed again for as long as the provider keeps
 * dropping its answers (each try holds a slot for a search window and uses no attempt).
 */
const redialsAfterLostDials = 1;
/** A recipient is held an hour past its dial's hold, so that it never comes free while its dial is open. */
const holdMarginMs = 60 * 60_000;

function recipientOf(dial: DialRow): { readonly batchId: string; readonly id: string } {
  if (dial.batch_id === null || dial.recipient_id === null) throw new Error(`The dial ${dial.id} is no batch recipient's.`);
  return { batchId: dial.batch_id, id: dial.recipient_id };
}

/**
 * The port of batch recipients. `known` is the recipient's row as the dialer claimed it (its calls so far);
 * the dial job's port has none and reads it.
 */
export function recipientPort(clock: Clock, known?: Pick<RecipientRow, 'call_ids'>): DialOriginPort {
  return {
    wakesWorkers: true,
    async hold(trx, dial, until) {
      await holdRecipientForDial(trx, recipientOf(dial).id, addMs(until, holdMarginMs));
    },
    // The recipient stays `dialing`, held by its dial, until the dial job knows whether it was called.
    async lost() {},
    async placed(trx, dial, call) {
      const { batchId, id } = recipientOf(dial);
      // The stored call holds the account's place from now on: the recipient's slot goes in the same commit,
      // or a claim in between would count the call and its slot both and leave a free slot unused.
      await handOverSlots(trx, [id]);
      return recipientTookCall(trx, clock, batchId, id, call.id, known);
    },
    async notPlaced(db, dial) {
      const { batchId, id } = recipientOf(dial);
      if ((await notPlacedDialsOfRecipient(db, id)) < redialsAfterLostDials) {
        return {
          note: ' The recipient is dialed again.',
          end: async (trx) => {
            await redialAfterLostDial(trx, clock, batchId, id);
          },
        };
      }
      return {
        note: ' Its earlier dial was lost too: the recipient fails.',
        end: async (trx) => {
          await failAfterLostDials(trx, clock, batchId, id, redialsAfterLostDials + 1);
        },
      };
    },
    async abandoned(trx, dial) {
      const { batchId, id } = recipientOf(dial);
      await interruptDialing(
        trx,
        clock,
        batchId,
        id,
        'The provider could not be asked within 24 hours whether this dial placed a call; the call may have been placed, so it is not dialed again.',
      );
    },
  };
}

/** A claimed recipient of `batch` asking for its dial now, with its batch's API key. */
export function recipientOrigin(clock: Clock, batch: BatchRow, recipient: RecipientRow): DialOrigin {
  return {
    apiKey: { id: batch.api_key_id, account_id: batch.account_id, mode: batch.mode },
    columns: { batch_id: batch.id, recipient_id: recipient.id, reference: recipient.reference },
    port: recipientPort(clock, recipient),
  };
}
