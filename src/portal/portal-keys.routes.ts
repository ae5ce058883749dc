/**
 * API keys: list, create (the token is shown once, in the answer to the form; a form sent again makes no
 * second key), revoke after a confirmation.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listAgents } from '../features/agents/agents.service.js';
import { getApiKey, listApiKeys, revokeApiKey } from '../features/api-keys/api-keys.service.js';
import type { Db } from '../db/database.js';
import type { ApiKeyMode } from '../features/api-keys/api-keys.tables.js';
import { createKeyOnce, isFormToken, newFormToken } from './portal-keys.service.js';
import { frameUser, seeOther, sendNotFound, sendPage, sessionOf, type PortalDeps } from './portal-request.js';
import { EmptyForm, IdParams, KeyForm, NoticeQuery } from './portal.schemas.js';
import { noticeFor } from './views/layout.view.js';
import { keysPage, revokePage } from './views/keys.view.js';

const keyNameMaxLength = 100;

/** The account's keys, and its agents: whose provider says whether a live key's calls are real or simulated. */
async function keysAndAgents(db: Db, accountId: string) {
  const [keys, agents] = await Promise.all([listApiKeys(db, accountId), listAgents(db, accountId)]);
  return { keys, agents };
}

export const portalKeysRoutes: FastifyPluginAsyncTypebox<{ deps: PortalDeps }> = async (app, { deps }) => {
  app.get('/api-keys', { schema: { querystring: NoticeQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const { keys, agents } = await keysAndAgents(deps.db, session.accountId);
    const form = { name: '', mode: 'test' as const, formToken: newFormToken() };
    return sendPage(reply, 200, keysPage({ user: frameUser(session), keys, agents, form, notice: noticeFor(request.query.notice) }));
  });

  app.post('/api-keys', { schema: { body: KeyForm } }, async (request, reply) => {
    const session = sessionOf(request);
    const name = request.body.name.trim();
    const mode: ApiKeyMode = request.body.mode === 'live' ? 'live' : 'test';
    const sentToken = request.body.form_token;
    const error = !isFormToken(sentToken)
      ? 'This form is out of date. Check the keys above, then create the key again.'
      : name === ''
        ? 'Give the key a name.'
        : name.length > keyNameMaxLength
          ? `A name has at most ${keyNameMaxLength} characters.`
          : undefined;
    if (error) {
      const { keys, agents } = await keysAndAgents(deps.db, session.accountId);
      const formToken = isFormToken(sentToken) ? sentToken : newFormToken();
      return sendPage(reply, 400, keysPage({ user: frameUser(session), keys, agents, form: { name, mode, formToken, error } }));
    }
    const result = await createKeyOnce(deps.db, deps.clock, { accountId: session.accountId, name, mode, formToken: sentToken });
    const { keys, agents } = await keysAndAgents(deps.db, session.accountId);
    const form = { name: '', mode: 'test' as const, formToken: newFormToken() };
    if (result.kind === 'already_sent') {
      return sendPage(reply, 409, keysPage({ user: frameUser(session), keys, agents, form, alreadySent: { key: result.key } }));
    }
    // Rendered, not redirected: the token exists only in this answer and is stored nowhere.
    return sendPage(reply, 200, keysPage({ user: frameUser(session), keys, agents, form, created: result.key }));
  });

  app.get('/api-keys/:id/revoke', { schema: { params: IdParams } }, async (request, reply) => {
    const session = sessionOf(request);
    const key = await getApiKey(deps.db, session.accountId, request.params.id);
    if (!key) return sendNotFound(request, reply);
    if (key.status === 'revoked') return seeOther(reply, '/developers/api-keys');
    return sendPage(reply, 200, revokePage(frameUser(session), key));
  });

  app.post('/api-keys/:id/revoke', { schema: { params: IdParams, body: EmptyForm } }, async (request, reply) => {
    const session = sessionOf(request);
    const key = await revokeApiKey(deps.db, deps.clock, request.params.id, session.accountId);
    if (!key) return sendNotFound(request, reply);
    return seeOther(reply, '/developers/api-keys?notice=key_revoked');
  });
};
