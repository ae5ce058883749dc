import { listDeliveries } from '../../../features/webhook-delivery/deliveries.service.js';
import type { DeliveryStatus } from '../../../features/webhook-delivery/deliveries.tables.js';
import { integerOption, optionalChoiceOption, optionalOption, requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

const deliveryStatuses: readonly DeliveryStatus[] = ['pending', 'succeeded', 'failed'];
const defaultLimit = 20;
const maxLimit = 100;

/**
 * The error when there is one (`HTTP 500`, a timeout, or why the delivery ended without an attempt, such as
 * a deleted endpoint), else the status code of the last answer.
 */
function lastResult(delivery: { last_status_code: number | null; last_error: string | null }): string | null {
  if (delivery.last_error !== null) return delivery.last_error;
  return delivery.last_status_code === null ? null : String(delivery.last_status_code);
}

export const listDeliveriesCommand: Command = {
  name: 'list',
  summary: 'List the webhook deliveries of an account, newest first',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose deliveries are listed (acct_...)', required: true },
    status: { value: deliveryStatuses.join('|'), description: 'Only deliveries in this state' },
    endpoint: { value: 'ENDPOINT_ID', description: 'Only deliveries to this endpoint' },
    limit: { value: 'N', description: `At most N deliveries, 1 to ${maxLimit} (default ${defaultLimit})` },
  },
  prepare(args) {
    const filter = {
      accountId: requiredOption(args, 'account'),
      status: optionalChoiceOption(args, 'status', deliveryStatuses),
      endpointId: optionalOption(args, 'endpoint'),
      limit: integerOption(args, 'limit', { min: 1, max: maxLimit, fallback: defaultLimit }),
    };
    return async ({ db }) => {
      await requireAccount(db, filter.accountId);
      const deliveries = await listDeliveries(db, filter);
      const text =
        deliveries.length === 0
          ? `No deliveries match in account ${filter.accountId}.`
          : formatTable(
              ['id', 'event', 'call', 'endpoint url', 'status', 'attempts', 'last result', 'next attempt'],
              deliveries.map((delivery) => [
                delivery.id,
                delivery.event_type,
                delivery.call_id,
                delivery.endpoint_url,
                delivery.status,
                String(delivery.attempt_count),
                lastResult(delivery),
                delivery.next_attempt_at,
              ]),
            );
      return { json: { data: deliveries }, text };
    };
  },
};
