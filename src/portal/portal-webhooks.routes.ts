/** Webhook endpoints: add, edit, delete, reveal and rotate the secret, send a test event, resend a delivery. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-error.js';
import { createEndpoint, getEndpoint, listEndpoints, rotateSecret } from '../features/webhook-endpoints/endpoints.service.js';
import { deleteEndpoint, updateEndpoint } from '../features/webhook-delivery/endpoint-changes.service.js';
import { webhookEventTypes } from '../features/events/event-types.js';
import { sendTestEvent } from '../features/webhook-delivery/fan-out.service.js';
import { endpointBackoffs } from '../features/webhook-delivery/deliveries.service.js';
import type { WebhookEndpointRow } from '../features/webhook-endpoints/endpoints.tables.js';
import { frameUser, seeOther, sendNotFound, sendPage, sessionOf, type PortalDeps } from './portal-request.js';
import { DeliveryParams, EmptyForm, EndpointForm, IdParams, NoticeQuery, ResendForm } from './portal.schemas.js';
import { keyNamesOf, loadEndpointPage, resendDelivery } from './portal.service.js';
import { portalPath } from './views/components.js';
import { noticeFor } from './views/layout.view.js';
import { endpointFormPage, endpointPage, webhooksPage, type EndpointFormValues } from './views/webhooks.view.js';

function endpointValues(form: Static<typeof EndpointForm>): EndpointFormValues {
  return {
    url: form.url.trim().slice(0, 2048),
    description: form.description,
    eventTypes: webhookEventTypes.filter((type) => form.event_types.includes(type)),
    enabled: form.enabled === 'on',
    // Test unless live is chosen: a receiver being tried out never gets live events.
    mode: form.mode === 'live' ? 'live' : 'test',
  };
}

/** A refused form field (the service's `invalid_request`) as a sentence on the page. */
function problemOf(error: unknown): string {
  if (!(error instanceof ApiError && error.code === 'invalid_request')) throw error;
  return `${error.message.charAt(0).toUpperCase()}${error.message.slice(1)}.`;
}

export const portalWebhooksRoutes: FastifyPluginAsyncTypebox<{ deps: PortalDeps }> = async (app, { deps }) => {
  const allowPrivate = deps.config.webhookAllowPrivate;

  /** The endpoint of the URL in the signed-in account, or a 404 page already sent. */
  async function endpointOr404(request: FastifyRequest, reply: FastifyReply, id: string): Promise<WebhookEndpointRow | null> {
    const endpoint = await getEndpoint(deps.db, id, sessionOf(request).accountId);
    if (!endpoint) await sendNotFound(request, reply);
    return endpoint;
  }

  async function renderEndpoint(
    request: FastifyRequest,
    reply: FastifyReply,
    endpointId: string,
    extra: { secret?: string; notice?: string; error?: string; status?: number },
  ) {
    const session = sessionOf(request);
    const data = await loadEndpointPage(deps.db, session.accountId, endpointId, deps.clock.now());
    if (!data) return sendNotFound(request, reply);
    const { status = 200, ...rest } = extra;
    return sendPage(reply, status, endpointPage({ user: frameUser(session), ...data, ...rest }));
  }

  app.get('/webhooks', { schema: { querystring: NoticeQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const endpoints = await listEndpoints(deps.db, session.accountId);
    const backoffs = await endpointBackoffs(
      deps.db,
      endpoints.map((endpoint) => endpoint.id),
      deps.clock.now(),
    );
    const keyNames = endpoints.some((endpoint) => endpoint.created_by_key_id !== null)
      ? await keyNamesOf(deps.db, session.accountId)
      : new Map<string, string>();
    return sendPage(reply, 200, webhooksPage(frameUser(session), endpoints, noticeFor(request.query.notice), backoffs, keyNames));
  });

  app.get('/webhooks/new', async (request, reply) => {
    const values: EndpointFormValues = { url: '', description: '', eventTypes: [...webhookEventTypes], enabled: true, mode: 'test' };
    return sendPage(reply, 200, endpointFormPage(frameUser(sessionOf(request)), { values, allowPrivate }));
  });

  app.post('/webhooks', { schema: { body: EndpointForm } }, async (request, reply) => {
    const session = sessionOf(request);
    const values = endpointValues(request.body);
    const fail = (error: string) => sendPage(reply, 400, endpointFormPage(frameUser(session), { values, error, allowPrivate }));
    if (values.eventTypes.length === 0) return fail('Choose at least one event type.');
    let endpoint;
    try {
      endpoint = await createEndpoint(deps.db, deps.clock, allowPrivate, {
        accountId: session.accountId,
        url: values.url,
        description: values.description,
        eventTypes: values.eventTypes,
        mode: values.mode,
      });
    } catch (error) {
      return fail(problemOf(error));
    }
    if (!values.enabled) {
      const row = await getEndpoint(deps.db, endpoint.id, session.accountId);
      if (row) await updateEndpoint(deps.db, deps.clock, allowPrivate, row, { enabled: false });
    }
    return seeOther(reply, `${portalPath('webhooks', endpoint.id)}?notice=endpoint_created`);
  });

  app.get('/webhooks/:id', { schema: { params: IdParams, querystring: NoticeQuery } }, async (request, reply) =>
    renderEndpoint(request, reply, request.params.id, { notice: noticeFor(request.query.notice) }),
  );

  app.get('/webhooks/:id/edit', { schema: { params: IdParams } }, async (request, reply) => {
    const endpoint = await endpointOr404(request, reply, request.params.id);
    if (!endpoint) return reply;
    const values = {
      url: endpoint.url,
      description: endpoint.description,
      eventTypes: (JSON.parse(endpoint.event_types) as string[]).includes('*')
        ? [...webhookEventTypes]
        : (JSON.parse(endpoint.event_types) as string[]),
      enabled: endpoint.enabled === 1,
      mode: endpoint.mode,
    };
    return sendPage(reply, 200, endpointFormPage(frameUser(sessionOf(request)), { endpoint, values, allowPrivate }));
  });

  app.post('/webhooks/:id', { schema: { params: IdParams, body: EndpointForm } }, async (request, reply) => {
    const endpoint = await endpointOr404(request, reply, request.params.id);
    if (!endpoint) return reply;
    const values = endpointValues(request.body);
    const fail = (error: string) =>
      sendPage(reply, 400, endpointFormPage(frameUser(sessionOf(request)), { endpoint, values, error, allowPrivate }));
    if (values.eventTypes.length === 0) return fail('Choose at least one event type.');
    try {
      // Unchanged fields are left alone: re-saving must not reset the failure clock or re-resolve the host.
      await updateEndpoint(deps.db, deps.clock, allowPrivate, endpoint, {
        description: values.description,
        eventTypes: values.eventTypes,
        ...(values.url === endpoint.url ? {} : { url: values.url }),
        ...(values.enabled === (endpoint.enabled === 1) ? {} : { enabled: values.enabled }),
      });
    } catch (error) {
      return fail(problemOf(error));
    }
    return seeOther(reply, `${portalPath('webhooks', endpoint.id)}?notice=endpoint_updated`);
  });

  app.post('/webhooks/:id/delete', { schema: { params: IdParams, body: EmptyForm } }, async (request, reply) => {
    const endpoint = await endpointOr404(request, reply, request.params.id);
    if (!endpoint) return reply;
    await deleteEndpoint(deps.db, deps.clock, endpoint);
    return seeOther(reply, '/developers/webhooks?notice=endpoint_deleted');
  });

  // Secrets are shown only on request, to a signed-in user of the account, and never cached.
  app.post('/webhooks/:id/secret', { schema: { params: IdParams, body: EmptyForm } }, async (request, reply) => {
    const endpoint = await endpointOr404(request, reply, request.params.id);
    if (!endpoint) return reply;
    return renderEndpoint(request, reply, endpoint.id, { secret: endpoint.secret });
  });

  // Redirected, not rendered: a reload of a rendered answer (without JavaScript) would rotate again, and a
  // second rotation ends the overlap of the secret the receiver still uses. The new one is a reveal away.
  app.post('/webhooks/:id/rotate', { schema: { params: IdParams, body: EmptyForm } }, async (request, reply) => {
    const endpoint = await endpointOr404(request, reply, request.params.id);
    if (!endpoint) return reply;
    await rotateSecret(deps.db, deps.clock, endpoint);
    return seeOther(reply, `${portalPath('webhooks', endpoint.id)}?notice=secret_rotated`);
  });

  app.post('/webhooks/:id/test', { schema: { params: IdParams, body: EmptyForm } }, async (request, reply) => {
    const endpoint = await endpointOr404(request, reply, request.params.id);
    if (!endpoint) return reply;
    try {
      await sendTestEvent(deps.db, deps.clock, endpoint);
    } catch (error) {
      return renderEndpoint(request, reply, endpoint.id, { error: problemOf(error), status: 409 });
    }
    deps.notifier.notify();
    return seeOther(reply, `${portalPath('webhooks', endpoint.id)}?notice=test_sent`);
  });

  app.post(
    '/webhooks/:id/deliveries/:deliveryId/resend',
    { schema: { params: DeliveryParams, body: ResendForm } },
    async (request, reply) => {
      const session = sessionOf(request);
      const { id, deliveryId } = request.params;
      try {
        await resendDelivery(deps.db, deps.clock, session.accountId, id, deliveryId);
      } catch (error) {
        // Nothing to resend to: the endpoint's page again, saying why (a conflict with its state, 409).
        if (!(error instanceof ApiError && error.param === 'endpoint_id')) throw error;
        return renderEndpoint(request, reply, id, { error: error.message, status: 409 });
      }
      deps.notifier.notify();
      const { back } = request.body;
      const target = /^\/developers\/(webhooks|calls)\/[A-Za-z0-9_-]{1,200}$/.test(back) ? back : portalPath('webhooks', id);
      return seeOther(reply, `${target}?notice=resent`);
    },
  );
};
