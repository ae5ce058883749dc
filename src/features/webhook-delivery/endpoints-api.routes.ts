/**
 * /v1/webhook_endpoints: an API key manages its account's endpoints of its own mode, as an automation tool
 * subscribes (REST hooks: create when a workflow is switched on, delete when it is switched off).
 *
 * The routes live here, in webhook-delivery, rather than beside the endpoint store: disabling, enabling and
 * deleting an endpoint end or free its deliveries (endpoint-changes.service.ts), and webhook-endpoints may not
 * import this room (the webhook rooms are layers: events < webhook-endpoints < webhook-delivery). The store's
 * part (creating, reading, rotating, the key's scope and the API's shape) is webhook-endpoints'
 * endpoints-api.service.ts.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { errorResponses } from '../../errors/error-schemas.js';
import { requireApiKey } from '../../http/api-auth.plugin.js';
import { parseListLimit } from '../../http/list-limit.js';
import {
  createEndpointOfKey,
  listEndpointsOfKey,
  retrieveEndpointOfKey,
  rotateEndpointSecretOfKey,
  type EndpointsApiDeps,
} from '../webhook-endpoints/endpoints-api.service.js';
import {
  CreateWebhookEndpointBody,
  CreateWebhookEndpointHeaders,
  ListWebhookEndpointsQuery,
  UpdateWebhookEndpointBody,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointParams,
  WebhookEndpointWithSecret,
  endpointsPerModeMax,
} from '../webhook-endpoints/endpoints.schemas.js';
import { deleteEndpointOfKey, updateEndpointOfKey } from './endpoint-changes.service.js';

const tags = ['Webhook endpoints'];

export const webhookEndpointsRoutes: FastifyPluginAsyncTypebox<{ deps: EndpointsApiDeps }> = async (app, { deps }) => {
  app.post(
    '/webhook_endpoints',
    {
      config: { idempotency: true },
      schema: {
        operationId: 'createWebhookEndpoint',
        tags,
        summary: 'Create a webhook endpoint',
        description: `An endpoint in the key's mode (a test key's receives test-mode events only, a live key's live-mode ones), enabled at once. The answer's secret (whsec_…) is shown here and after a rotation only: store it to verify the deliveries. The URL must be https on a public address (400 invalid_request, param url, otherwise); an account has at most ${endpointsPerModeMax} endpoints per mode (400 invalid_request). Send an Idempotency-Key to retry safely: a retry answers the first 201 again and creates nothing.`,
        headers: CreateWebhookEndpointHeaders,
        body: CreateWebhookEndpointBody,
        response: {
          201: WebhookEndpointWithSecret,
          ...errorResponses(['invalid_idempotency_key', 'idempotency_conflict'], { body: true }),
        },
      },
    },
    async (request, reply) => {
      const created = await createEndpointOfKey(deps, requireApiKey(request), request.body, request.idempotencyKey);
      return reply.code(201).headers(created.headers).send(created.body);
    },
  );

  app.get(
    '/webhook_endpoints',
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        tags,
        summary: 'List webhook endpoints',
        description: "The key's endpoints (its account's, of its mode), newest first, a page at a time; `url` finds those of one URL.",
        querystring: ListWebhookEndpointsQuery,
        response: { 200: WebhookEndpointList, ...errorResponses([]) },
      },
    },
    async (request) => {
      const { starting_after: startingAfter, url } = request.query;
      return listEndpointsOfKey(deps.db, requireApiKey(request), {
        limit: parseListLimit(request.query.limit),
        ...(startingAfter === undefined ? {} : { startingAfter }),
        ...(url === undefined ? {} : { url }),
      });
    },
  );
  registerMethodNotAllowed(app, '/webhook_endpoints', ['GET', 'POST']);

  const byId = { tags, params: WebhookEndpointParams };
  app.get(
    '/webhook_endpoints/:id',
    {
      schema: {
        ...byId,
        operationId: 'retrieveWebhookEndpoint',
        summary: 'Retrieve a webhook endpoint',
        description: "The endpoint, without its secret. Another account's endpoint, or one of the other mode, is 404 not_found.",
        response: { 200: WebhookEndpoint, ...errorResponses(['not_found']) },
      },
    },
    async (request) => retrieveEndpointOfKey(deps.db, requireApiKey(request), request.params.id),
  );

  app.patch(
    '/webhook_endpoints/:id',
    {
      schema: {
        ...byId,
        operationId: 'updateWebhookEndpoint',
        summary: 'Update a webhook endpoint',
        description:
          'Changes the fields sent (at least one). disabled: true stops its deliveries (pending ones end as failed); disabled: false enables it again, after a 410 Gone or 5 days of failures too, its failure count afresh (events of the time it was disabled are not sent).',
        body: UpdateWebhookEndpointBody,
        response: { 200: WebhookEndpoint, ...errorResponses(['not_found'], { body: true }) },
      },
    },
    async (request) => updateEndpointOfKey(deps.db, deps.clock, deps.allowPrivate, requireApiKey(request), request.params.id, request.body),
  );

  app.delete(
    '/webhook_endpoints/:id',
    {
      schema: {
        ...byId,
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint',
        description: 'Nothing more is sent to it; its pending deliveries end as failed. Deleting it again is 404 not_found.',
        response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(['not_found'], { body: true }) },
      },
    },
    async (request, reply) => {
      await deleteEndpointOfKey(deps.db, deps.clock, requireApiKey(request), request.params.id);
      return reply.code(204).send(null);
    },
  );
  registerMethodNotAllowed(app, '/webhook_endpoints/:id', ['GET', 'PATCH', 'DELETE']);

  app.post(
    '/webhook_endpoints/:id/rotate_secret',
    {
      schema: {
        ...byId,
        operationId: 'rotateWebhookEndpointSecret',
        summary: "Rotate a webhook endpoint's secret",
        description:
          'A new secret, in this answer only; for 24 hours deliveries carry a signature by the old secret beside the new one, time to deploy it. A second rotation within those hours ends the old secret at once.',
        response: { 200: WebhookEndpointWithSecret, ...errorResponses(['not_found'], { body: true }) },
      },
    },
    async (request) => rotateEndpointSecretOfKey(deps, requireApiKey(request), request.params.id),
  );
  registerMethodNotAllowed(app, '/webhook_endpoints/:id/rotate_secret', ['POST']);
};
