/**
 * Batches: the account's batches (test and live, as the calls page shows both) with their progress, a page
 * per batch with its recipients and the pause / resume / cancel buttons, and a batch made from a CSV file.
 */
import fastifyMultipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Static } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-error.js';
import { statusOf } from '../errors/catalogue.js';
import type { CsvProblem } from '../lib/csv.js';
import { listAgents } from '../features/agents/agents.service.js';
import { listApiKeys } from '../features/api-keys/api-keys.service.js';
import type { ApiKeyMode } from '../features/api-keys/api-keys.tables.js';
import { maxConcurrencyLimit, nameMaxLength, type Batch, type CreateBatchBody } from '../features/batches/batches.schemas.js';
import {
  batchModes,
  changeBatch,
  getBatch,
  listBatches,
  listRecipients,
  scheduleGraceMs,
  type BatchAction,
} from '../features/batches/batches.service.js';
import type { BatchStatus } from '../features/batches/batches.tables.js';
import { parseRecipientsCsv } from '../features/batches/recipients-csv.js';
import { callingWindowOf, flattenMultipart, invalidMessage, retryOf, scheduledAtOf, wholeNumber } from './portal-batch-form.js';
import { createBatchOnce } from './portal-batches.service.js';
import { isFormToken, newFormToken } from './portal-keys.service.js';
import { frameUser, isPlainId, pageOrNone, seeOther, sendNotFound, sendPage, sessionOf, type PortalDeps } from './portal-request.js';
import { BatchForm, BatchesQuery, BatchQuery, EmptyForm, IdParams } from './portal.schemas.js';
import { portalPath } from './views/components.js';
import { errorPage } from './views/errors.view.js';
import {
  batchFormPage,
  batchPage,
  batchesPage,
  batchStatusFilters,
  emptyBatchForm,
  modeFilters,
  recipientStatusFilters,
  type BatchFormValues,
  type BatchWithMode,
} from './views/batches.view.js';

const pageSize = 25;
const recipientsPageSize = 50;
/** A CSV file (or pasted text) of 10,000 recipients with a few variables each fits well within this. */
export const csvMaxBytes = 10 * 1024 * 1024;

/** Messages after a redirect (`?notice=`): fixed texts only, never request input. */
const batchNotices: Record<string, string> = {
  batch_created: 'The batch is created. Its calls are dialed from its start time, never more at once than its limit.',
  batch_paused: 'The batch is paused: no new call is dialed; calls under way go on.',
  batch_resumed: 'The batch is resumed.',
  batch_cancelled: 'The batch is cancelled: every recipient not yet dialed ends as cancelled; calls under way go on.',
};
const actionNotices: Record<BatchAction, string> = { pause: 'batch_paused', resume: 'batch_resumed', cancel: 'batch_cancelled' };

const noticeOf = (code: string | undefined) => (code !== undefined && Object.hasOwn(batchNotices, code) ? batchNotices[code] : undefined);

/** Why an action is refused, as the API says it (batch_finished, batch_not_resumable), in the page's words. */
function refusal(action: BatchAction, status: string): string {
  if (action === 'resume')
    return `This batch is ${status}: it cannot be resumed (batch_not_resumable). Only a paused batch can be resumed.`;
  if (action === 'pause')
    return `This batch is ${status}: it cannot be paused (batch_finished). Only a scheduled or running batch can be paused.`;
  return `This batch has completed: every recipient has ended, nothing is left to cancel (batch_finished).`;
}

function withQuery(path: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value) query.set(name, value);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

export const portalBatchesRoutes: FastifyPluginAsyncTypebox<{ deps: PortalDeps }> = async (app, { deps }) => {
  app.get('/batches', { schema: { querystring: BatchesQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const { status: statusParam, mode: modeParam, starting_after: after, notice } = request.query;
    const status = batchStatusFilters.find((candidate) => candidate === statusParam);
    const mode = modeFilters.find((candidate) => candidate === modeParam);
    const startingAfter = after !== undefined && isPlainId(after) ? after : undefined;
    const filters = { status, mode } satisfies { status?: BatchStatus | undefined; mode?: ApiKeyMode | undefined };
    const page = await pageOrNone(
      listBatches(deps.db, session.accountId, {
        limit: pageSize,
        ...(status ? { status } : {}),
        ...(mode ? { mode } : {}),
        ...(startingAfter ? { startingAfter } : {}),
      }),
    );
    const batches = page?.data ?? [];
    const modes = await batchModes(
      deps.db,
      session.accountId,
      batches.map((batch) => batch.id),
    );
    const last = batches.at(-1);
    return sendPage(
      reply,
      200,
      batchesPage({
        user: frameUser(session),
        batches: batches.map((batch) => ({ ...batch, mode: modes.get(batch.id) })),
        status,
        mode,
        paged: startingAfter !== undefined,
        olderUrl: page?.has_more && last ? withQuery('/developers/batches', { ...filters, starting_after: last.id }) : undefined,
        newestUrl: withQuery('/developers/batches', filters),
        notice: noticeOf(notice),
      }),
    );
  });

  /** The batch of the URL in the signed-in account, with its mode, or null. */
  async function batchOf(request: FastifyRequest, id: string): Promise<BatchWithMode | null> {
    const { accountId } = sessionOf(request);
    const batch = await getBatch(deps.db, id, { accountId });
    return batch ? withMode(accountId, batch) : null;
  }

  async function withMode(accountId: string, batch: Batch): Promise<BatchWithMode> {
    return { ...batch, mode: (await batchModes(deps.db, accountId, [batch.id])).get(batch.id) };
  }

  async function renderBatch(
    request: FastifyRequest,
    reply: FastifyReply,
    batch: BatchWithMode,
    extra: { statusParam?: string | undefined; after?: string | undefined; notice?: string | undefined; error?: string; status?: number },
  ) {
    const recipientStatus = recipientStatusFilters.find((candidate) => candidate === extra.statusParam);
    const startingAfter = extra.after !== undefined && isPlainId(extra.after) ? extra.after : undefined;
    const here = portalPath('batches', batch.id);
    const page = await pageOrNone(
      listRecipients(deps.db, batch, {
        limit: recipientsPageSize,
        ...(recipientStatus ? { status: recipientStatus } : {}),
        ...(startingAfter ? { startingAfter } : {}),
      }),
    );
    const recipients = page?.data ?? [];
    const last = recipients.at(-1);
    return sendPage(
      reply,
      extra.status ?? 200,
      batchPage({
        user: frameUser(sessionOf(request)),
        batch,
        recipients,
        recipientStatus,
        paged: startingAfter !== undefined,
        nextUrl: page?.has_more && last ? withQuery(here, { status: recipientStatus, starting_after: last.id }) : undefined,
        firstUrl: withQuery(here, { status: recipientStatus }),
        notice: extra.notice,
        error: extra.error,
      }),
    );
  }

  app.get('/batches/new', async (request, reply) => {
    const session = sessionOf(request);
    const [keys, agents] = await Promise.all([listApiKeys(deps.db, session.accountId), listAgents(deps.db, session.accountId)]);
    // A test key first: trying a batch should phone nobody.
    const preferred = keys.find((key) => key.status === 'active' && key.mode === 'test') ?? keys.find((key) => key.status === 'active');
    const values = { ...emptyBatchForm, apiKeyId: preferred?.id ?? '', agentId: agents[0]?.agent_id ?? '' };
    return sendPage(reply, 200, batchFormPage({ user: frameUser(session), keys, agents, values, formToken: newFormToken() }));
  });

  // The form carries a file, so it is multipart: parsed here only, within the CSV's size.
  await app.register(async (form) => {
    await form.register(fastifyMultipart, {
      attachFieldsToBody: true,
      limits: { fileSize: csvMaxBytes, fieldSize: csvMaxBytes, files: 1, fields: 40, parts: 41, headerPairs: 100 },
    });
    form.addHook('preValidation', flattenMultipart);
    form.setErrorHandler((error, request, reply) => {
      if ((error as { statusCode?: unknown }).statusCode !== 413) throw error;
      const page = errorPage({
        status: 413,
        title: 'File too large',
        message: `The CSV is larger than ${csvMaxBytes / 1024 / 1024} MB. Split it into several batches and try again.`,
        requestId: request.id,
        user: frameUser(sessionOf(request)),
      });
      return sendPage(reply, 413, page);
    });
    form
      .withTypeProvider<TypeBoxTypeProvider>()
      .post('/batches', { bodyLimit: csvMaxBytes, schema: { body: BatchForm } }, async (request, reply) =>
        createFromForm(request, reply, request.body),
      );
  });

  async function createFromForm(request: FastifyRequest, reply: FastifyReply, form: Static<typeof BatchForm>) {
    const session = sessionOf(request);
    const fromFile = typeof form.csv_file === 'string' || form.csv_file === null;
    const values: BatchFormValues = {
      apiKeyId: form.api_key_id,
      agentId: form.agent_id,
      name: form.name.trim(),
      scheduledAt: form.scheduled_at.trim(),
      maxConcurrency: form.max_concurrency.trim(),
      windowStart: form.window_start.trim(),
      windowEnd: form.window_end.trim(),
      windowDays: form.window_days,
      windowTimeZone: form.window_time_zone.trim(),
      windowFallbackTimeZone: form.window_fallback_time_zone.trim(),
      retryOn: form.retry_on,
      retryMaxAttempts: form.retry_max_attempts.trim(),
      retryDelayMinutes: form.retry_delay_minutes.trim(),
      csvText: form.csv_text,
    };
    const sentToken = form.form_token;
    const formToken = isFormToken(sentToken) ? sentToken : newFormToken();
    const fail = async (status: number, error: string | undefined, problems?: readonly CsvProblem[]) => {
      const [keys, agents] = await Promise.all([listApiKeys(deps.db, session.accountId), listAgents(deps.db, session.accountId)]);
      return sendPage(
        reply,
        status,
        batchFormPage({ user: frameUser(session), keys, agents, values, formToken, error, fromFile, ...(problems ? { problems } : {}) }),
      );
    };

    if (!isFormToken(sentToken)) return fail(400, 'This form is out of date. Check the batches list, then create the batch again.');
    const maxConcurrency = wholeNumber(values.maxConcurrency);
    const retry = retryOf(values);
    const fieldError =
      values.name.length > nameMaxLength
        ? `A name has at most ${nameMaxLength} characters.`
        : !(maxConcurrency >= 1 && maxConcurrency <= maxConcurrencyLimit)
          ? `Calls at once must be a whole number from 1 to ${maxConcurrencyLimit}.`
          : typeof retry === 'string'
            ? retry
            : undefined;
    const csvText = fromFile ? form.csv_file : form.csv_text;
    if (csvText === null)
      return fail(400, fieldError, [{ line: 0, message: 'the file is not UTF-8 text; save it as CSV UTF-8 and choose it again.' }]);
    if (csvText === undefined || csvText.trim() === '') return fail(400, fieldError ?? 'Choose a CSV file, or paste the CSV.');
    const parsed = parseRecipientsCsv(csvText);
    if (parsed.kind === 'invalid') return fail(400, fieldError, parsed.problems);
    if (fieldError) return fail(400, fieldError);

    const scheduledAt = scheduledAtOf(values.scheduledAt);
    const body: CreateBatchBody = {
      agent_id: values.agentId,
      recipients: parsed.recipients,
      max_concurrency: maxConcurrency,
      ...(values.name === '' ? {} : { name: values.name }),
      ...(scheduledAt === undefined ? {} : { scheduled_at: scheduledAt }),
      ...callingWindowOf(values),
      ...(retry === undefined || typeof retry === 'string' ? {} : { retry }),
    };
    const result = await createBatchOnce(deps.batches, { accountId: session.accountId, apiKeyId: values.apiKeyId, formToken, body });
    switch (result.kind) {
      case 'created':
        return seeOther(reply, `${portalPath('batches', result.batchId)}?notice=batch_created`);
      case 'already_sent':
        if (result.batchId !== null) return seeOther(reply, portalPath('batches', result.batchId));
        return sendPage(
          reply,
          409,
          errorPage({
            status: 409,
            title: 'This form was already sent',
            message:
              'This form has been sent before (it may still be creating its batch). Check the batches list before creating the batch again with a new form.',
            requestId: request.id,
            user: frameUser(session),
          }),
        );
      case 'api_key_not_found':
        return fail(400, 'Choose one of your API keys that is not revoked.');
      case 'agent_not_found':
        return fail(400, 'Choose one of your agents.');
      case 'invalid':
        return fail(400, invalidMessage(result.param, result.message, scheduleGraceMs));
    }
  }

  app.get('/batches/:id', { schema: { params: IdParams, querystring: BatchQuery } }, async (request, reply) => {
    const batch = await batchOf(request, request.params.id);
    if (!batch) return sendNotFound(request, reply);
    const { status, starting_after: after, notice } = request.query;
    return renderBatch(request, reply, batch, { statusParam: status, after, notice: noticeOf(notice) });
  });

  for (const action of ['pause', 'resume', 'cancel'] as const) {
    app.post(`/batches/:id/${action}`, { schema: { params: IdParams, body: EmptyForm } }, async (request, reply) => {
      try {
        const batch = await changeBatch(deps.batches, request.params.id, action, { accountId: sessionOf(request).accountId });
        return seeOther(reply, `${portalPath('batches', batch.id)}?notice=${actionNotices[action]}`);
      } catch (error) {
        // A batch that ended refuses the action (409): its page again, with the refusal in the portal's words.
        const refused = error instanceof ApiError && statusOf(error.code) === 409;
        const batch = refused ? await batchOf(request, request.params.id) : null;
        if (!batch) throw error;
        return renderBatch(request, reply, batch, { error: refusal(action, batch.status), status: 409 });
      }
    });
  }
};
