/**
 * The suppression list: the account's numbers never to call, a page at a time; add one, remove one after a
 * confirmation, import a CSV file of them (all or nothing, every faulty line named).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { reasonMaxLength } from '../features/suppressions/suppressions.schemas.js';
import {
  addSuppression,
  countSuppressions,
  getSuppression,
  importSuppressions,
  listSuppressions,
  normalizeNumber,
  removeSuppression,
  type ImportResult,
} from '../features/suppressions/suppressions.service.js';
import { frameUser, isPlainId, pageOrNone, seeOther, sendNotFound, sendPage, sessionOf, type PortalDeps } from './portal-request.js';
import { SuppressionForm, SuppressionImportForm, SuppressionNumberQuery, SuppressionsQuery } from './portal.schemas.js';
import { noticeFor } from './views/layout.view.js';
import { removeSuppressionPage, suppressionsPage, type SuppressionsPageInput } from './views/suppressions.view.js';

const pageSize = 50;
/**
 * An import's form may be larger than the portal's other forms (64 KB): 10,000 numbers, URL-encoded, take
 * about 200 KB.
 */
export const importBodyLimitBytes = 1024 * 1024;

function importNotice(result: Extract<ImportResult, { kind: 'imported' }>): string {
  const parts = [`${result.added} ${result.added === 1 ? 'number' : 'numbers'} added`];
  if (result.alreadyListed > 0) parts.push(`${result.alreadyListed} already on the list`);
  if (result.repeated > 0) parts.push(`${result.repeated} repeated ${result.repeated === 1 ? 'line' : 'lines'} counted once`);
  return `Imported: ${parts.join(', ')}.`;
}

export const portalSuppressionsRoutes: FastifyPluginAsyncTypebox<{ deps: PortalDeps }> = async (app, { deps }) => {
  /** The page with the list's newest numbers (or those after `startingAfter`), and what the forms need. */
  async function page(
    accountId: string,
    extra: Omit<SuppressionsPageInput, 'user' | 'entries' | 'total' | 'paged' | 'olderUrl'>,
    startingAfter?: string,
  ) {
    const listed = await pageOrNone(
      listSuppressions(deps.db, accountId, {
        limit: pageSize,
        ...(startingAfter === undefined ? {} : { startingAfter }),
      }),
    );
    const entries = listed?.data ?? [];
    const last = entries.at(-1);
    return {
      entries,
      total: await countSuppressions(deps.db, accountId),
      paged: startingAfter !== undefined,
      olderUrl: listed?.has_more && last ? `/developers/suppressions?starting_after=${encodeURIComponent(last.id)}` : undefined,
      ...extra,
    };
  }

  app.get('/suppressions', { schema: { querystring: SuppressionsQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const after = request.query.starting_after;
    const data = await page(
      session.accountId,
      { notice: noticeFor(request.query.notice) },
      after !== undefined && isPlainId(after) ? after : undefined,
    );
    return sendPage(reply, 200, suppressionsPage({ user: frameUser(session), ...data }));
  });

  app.post('/suppressions', { schema: { body: SuppressionForm } }, async (request, reply) => {
    const session = sessionOf(request);
    const to = normalizeNumber(request.body.to);
    const reason = request.body.reason.trim();
    const error =
      to === null
        ? 'Enter the number in E.164 format: a + and the country code, such as +14155550123.'
        : reason.length > reasonMaxLength
          ? `A reason has at most ${reasonMaxLength} characters.`
          : undefined;
    if (error || to === null) {
      const add = { to: request.body.to.slice(0, 100), reason: reason.slice(0, reasonMaxLength * 2), error: error ?? '' };
      return sendPage(reply, 400, suppressionsPage({ user: frameUser(session), ...(await page(session.accountId, { add })) }));
    }
    const result = await addSuppression(deps, session.accountId, { to, reason: reason === '' ? undefined : reason });
    return seeOther(reply, `/developers/suppressions?notice=${result.kind === 'created' ? 'suppression_added' : 'suppression_exists'}`);
  });

  app.get('/suppressions/remove', { schema: { querystring: SuppressionNumberQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const to = normalizeNumber(request.query.to ?? '');
    if (to === null) return sendNotFound(request, reply);
    const entry = await getSuppression(deps.db, session.accountId, to);
    return sendPage(reply, 200, removeSuppressionPage(frameUser(session), entry));
  });

  app.post('/suppressions/remove', { schema: { body: SuppressionForm } }, async (request, reply) => {
    const session = sessionOf(request);
    const to = normalizeNumber(request.body.to);
    if (to === null) return sendNotFound(request, reply);
    await removeSuppression(deps.db, session.accountId, to);
    return seeOther(reply, '/developers/suppressions?notice=suppression_removed');
  });

  app.post('/suppressions/import', { bodyLimit: importBodyLimitBytes, schema: { body: SuppressionImportForm } }, async (request, reply) => {
    const session = sessionOf(request);
    const { csv } = request.body;
    const reason = request.body.reason.trim();
    const result =
      reason.length > reasonMaxLength
        ? ({ kind: 'invalid', problems: [{ line: 0, message: `A reason has at most ${reasonMaxLength} characters.` }] } as const)
        : await importSuppressions(deps, session.accountId, csv, reason === '' ? undefined : reason);
    if (result.kind === 'invalid') {
      const importForm = { csv, reason, problems: result.problems };
      return sendPage(reply, 400, suppressionsPage({ user: frameUser(session), ...(await page(session.accountId, { importForm })) }));
    }
    // Rendered (the counts are in no fixed notice); the address goes back to the list's.
    const data = await page(session.accountId, { notice: importNotice(result), replaceUrl: '/developers/suppressions' });
    return sendPage(reply, 200, suppressionsPage({ user: frameUser(session), ...data }));
  });
};
