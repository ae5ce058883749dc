import type { Db } from '../../../db/database.js';
import { ApiError } from '../../../errors/api-error.js';
import { getEndpoint } from '../../../features/webhook-endpoints/endpoints.service.js';
import type { WebhookEndpointRow } from '../../../features/webhook-endpoints/endpoints.tables.js';

/** The endpoint named on the command line, or a `not_found` naming the id (deleted endpoints are gone). */
export async function requireEndpoint(db: Db, endpointId: string): Promise<WebhookEndpointRow> {
  const endpoint = await getEndpoint(db, endpointId);
  if (!endpoint) throw new ApiError('not_found', `no webhook endpoint with id "${endpointId}"`);
  return endpoint;
}
