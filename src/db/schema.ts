/**
 * The database as Kysely sees it: the tables of every feature, each declared in its feature's
 * `*.tables.ts`. Both dialects store the same shapes: ids and timestamps as text (ISO 8601 UTC with
 * milliseconds, so text order is time order), JSON as text, counts as integers.
 */
import type { AgentsTables } from '../features/agents/agents.tables.js';
import type { ApiKeysTables } from '../features/api-keys/api-keys.tables.js';
import type { BatchesTables } from '../features/batches/batches.tables.js';
import type { CallsTables } from '../features/calls/calls.tables.js';
import type { DialsTables } from '../features/calls/dials.tables.js';
import type { ConcurrencyTables } from '../features/concurrency/concurrency.tables.js';
import type { IdempotencyTables } from '../features/idempotency/idempotency.tables.js';
import type { IdentityTables } from '../features/identity/identity.tables.js';
import type { PortalTables } from '../portal/portal.tables.js';
import type { SuppressionsTables } from '../features/suppressions/suppressions.tables.js';
import type { RequestLogTables } from '../features/request-log/request-log.tables.js';
import type { DeliveriesTables } from '../features/webhook-delivery/deliveries.tables.js';
import type { EndpointsTables } from '../features/webhook-endpoints/endpoints.tables.js';
import type { EventsTables } from '../features/events/events.tables.js';

export interface Database
  extends IdentityTables,
    AgentsTables,
    ApiKeysTables,
    CallsTables,
    DialsTables,
    IdempotencyTables,
    EndpointsTables,
    EventsTables,
    DeliveriesTables,
    RequestLogTables,
    PortalTables,
    BatchesTables,
    SuppressionsTables,
    ConcurrencyTables {}
