/**
 * The portal's Batches pages over HTTP, on SQLite and PostgreSQL: the list with each batch's progress, a
 * batch's page with its recipients (filtered, paged, linked to their calls) and the pause / resume /
 * cancel buttons, a batch made from a CSV file (every faulty line reported, nothing created; a form sent
 * twice makes one batch), and another account's batches out of reach.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { allRecipients, apiGet, createBatch, numbers, readBatch } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import type { Dialect } from '../support/test-database.js';
import { csrfOf, formTokenOf, portalOrigin, signedInClient, type PortalClient } from '../support/portal-client.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';

const tomorrow = () => new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString();

interface FilePart {
  readonly name: string;
  readonly filename: string;
  readonly content: string | Buffer;
}

/** A multipart/form-data body as a browser sends the batch form (fields, then the file). */
function multipartBody(fields: Record<string, string | string[]>, file?: FilePart): { payload: Buffer; contentType: string } {
  const boundary = '----callgateTestBoundary7MA4YWxkTrZu0gW';
  const chunks: Buffer[] = [];
  for (const [name, values] of Object.entries(fields)) {
    for (const value of [values].flat()) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
    }
  }
  if (file) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.name}"; filename="${file.filename}"\r\nContent-Type: text/csv\r\n\r\n`,
      ),
      Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

let t: TestApp;
let client: PortalClient;

/** The new-batch form as loaded: its CSRF token and one-time form token. */
async function loadForm(): Promise<{ csrf: string; formToken: string; page: string }> {
  const page = await client.get('/developers/batches/new');
  assert.equal(page.statusCode, 200);
  return { csrf: csrfOf(page.body), formToken: formTokenOf(page.body), page: page.body };
}

function postMultipart(fields: Record<string, string | string[]>, file?: FilePart): Promise<LightMyRequestResponse> {
  const { payload, contentType } = multipartBody(fields, file);
  return t.inject({
    method: 'POST',
    url: '/developers/batches',
    remoteAddress: client.ip,
    headers: { 'content-type': contentType, origin: portalOrigin, cookie: `cg_session=${client.cookie}` },
    payload,
  });
}

async function batchCount(): Promise<number> {
  const row = await t.services.db
    .selectFrom('batches')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', t.seed.accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const formFields = (form: { csrf: string; formToken: string }, extra: Record<string, string | string[]> = {}) => ({
  _csrf: form.csrf,
  form_token: form.formToken,
  api_key_id: t.seed.keyId,
  agent_id: t.seed.agentId,
  name: '',
  scheduled_at: '',
  max_concurrency: '5',
  csv_text: '',
  ...extra,
});

/** Each part below starts an app of its own with its workers, and signs in. */
function withPortal(dialect: Dialect): void {
  before(async () => {
    t = await startTestApp(dialect, {
      startWorker: true,
      overrides: { dialerSweepIntervalMs: 50, monitorSweepIntervalMs: 20, dispatcherSweepIntervalMs: 50 },
    });
    client = await signedInClient(t);
  });
  after(async () => {
    await t.close();
  });
}

await forEachDialect('Portal batches: the new batch form and CSV files', (dialect) => {
  withPortal(dialect);

  it('has a Batches entry in the navigation; the new batch form offers the account`s keys and agents', async () => {
    const list = await client.get('/developers/batches');
    assert.equal(list.statusCode, 200);
    assert.match(list.body, /<a href="\/developers\/batches" aria-current="page">Batches<\/a>/);
    assert.match(list.body, /No batches yet\./);
    const { page } = await loadForm();
    assert.match(page, /enctype="multipart\/form-data"/);
    assert.ok(page.includes(`value="${t.seed.keyId}"`), 'the seed key is offered');
    assert.ok(page.includes(`value="${t.seed.agentId}"`), 'the seed agent is offered');
    assert.match(page, /type="file"/);
  });

  it('reports every faulty line of a CSV with its line number, and creates nothing', async () => {
    const before = await batchCount();
    const csv = [
      'Phone,Reference,customer_name', // line 1
      '+14155550100,ok-1,Ada', // 2
      '14155550101,bad-format,Grace', // 3: no +
      '+14155550100,dup,Ada again', // 4: the number of line 2
      `+14155550102,${'r'.repeat(256)},Long ref`, // 5
      '+14155550103,too,many,values', // 6
      '', // 7: empty, skipped
      `+14155550104,big,${'x'.repeat(5200)}`, // 8: metadata over 5 KB
      '"+14155550105","quoted, with comma","multi', // 9-10: one record over two lines, fine
      'line value"',
      ',no-number,Nobody', // 11
    ].join('\r\n');
    const form = await loadForm();
    const answer = await client.post('/developers/batches', formFields(form, { csv_text: csv }), { csrf: form.csrf });
    assert.equal(answer.statusCode, 400);
    const page = answer.body;
    assert.match(page, /6 problems in the CSV: no batch was created/);
    const lines = [...page.matchAll(/<td data-label="Line" class="num"><div class="cell">(\d+)<\/div>/g)].map((match) => Number(match[1]));
    assert.deepEqual(lines, [3, 4, 5, 6, 8, 11]);
    assert.match(page, /14155550101 is not a phone number in E\.164 format/);
    assert.match(page, /\+14155550100 is already on line 2; a number appears at most once in a batch/);
    assert.match(page, /the reference has 256 characters; at most 255/);
    assert.match(page, /it has 4 values and the header 3 columns/);
    assert.match(page, /metadata \(the columns other than to and reference\) is \d+ bytes of JSON; at most 5120 are allowed/);
    assert.match(page, /the Phone column is empty/);
    assert.ok(page.includes(form.formToken), 'the same form (token) comes back, filled in');
    assert.equal(await batchCount(), before, 'nothing was created');
  });

  it('refuses a CSV without a to or phone column, an empty one, more than 10,000 lines, and a file that is not UTF-8', async () => {
    const send = async (csvText: string) => {
      const form = await loadForm();
      return client.post('/developers/batches', formFields(form, { csv_text: csvText }), { csrf: form.csrf });
    };
    const noTo = await send('number,name\n+14155550100,Ada\n');
    assert.equal(noTo.statusCode, 400);
    assert.match(noTo.body, /the header has no to \(or phone\) column/);
    const empty = await send('to,name\n');
    assert.match(empty.body, /the file has no recipients/);
    const tooMany = await send(['to', ...numbers(10_001, 0)].join('\n'));
    assert.equal(tooMany.statusCode, 400);
    assert.match(tooMany.body, /the file has 10,001 recipients; a batch has at most 10,000/);
    const form = await loadForm();
    const latin1 = await postMultipart(formFields(form), {
      name: 'csv_file',
      filename: 'latin1.csv',
      content: Buffer.from('to,name\n+14155550100,Ren\xe9\n', 'latin1'),
    });
    assert.equal(latin1.statusCode, 400);
    assert.match(latin1.body, /the file is not UTF-8 text/);
    const huge = await postMultipart(formFields(await loadForm()), {
      name: 'csv_file',
      filename: 'huge.csv',
      content: `to,note\n+14155550100,${'x'.repeat(10 * 1024 * 1024)}\n`,
    });
    assert.equal(huge.statusCode, 413);
    assert.match(huge.body, /The CSV is larger than 10 MB/);
    const nothing = await client.post('/developers/batches', formFields(await loadForm()), {});
    assert.equal(nothing.statusCode, 400);
    assert.match(nothing.body, /Choose a CSV file, or paste the CSV/);
    const longName = await client.post(
      '/developers/batches',
      formFields(await loadForm(), { name: 'n'.repeat(201), csv_text: 'to\n+14155550100\n' }),
      {},
    );
    assert.equal(longName.statusCode, 400);
    assert.match(longName.body, /A name has at most 200 characters/);
  });

  it('creates a batch from an uploaded CSV file (BOM, CRLF, quotes) and goes to its page; the form sent again makes no second batch', async () => {
    const before = await batchCount();
    const csv =
      '\uFEFFTO,reference,customer_name,note\r\n+14155550200,appt-1,Ada,"Room 4, floor 2"\r\n+14155550201,,Grace,"She said ""hi"""\r\n+14155550202,appt-3,Alan,\r\n';
    const form = await loadForm();
    // One reading of the clock for the form and the check: two could fall on either side of a minute.
    const scheduledMinute = tomorrow().slice(0, 16);
    const fields = formFields(form, { name: 'Reminders <24 Nov>', scheduled_at: scheduledMinute, max_concurrency: '2' });
    const file = { name: 'csv_file', filename: 'reminders.csv', content: csv };
    const created = await postMultipart(fields, file);
    assert.equal(created.statusCode, 303, created.body);
    const location = created.headers.location as string;
    const id = /^\/developers\/batches\/(batch_[A-Za-z0-9]+)\?notice=batch_created$/.exec(location)?.[1];
    assert.ok(id, location);
    assert.equal(await batchCount(), before + 1);

    const batch = await readBatch(t, id);
    assert.equal(batch.name, 'Reminders <24 Nov>');
    assert.equal(batch.status, 'scheduled');
    assert.equal(batch.max_concurrency, 2);
    assert.equal(batch.scheduled_at, `${scheduledMinute}:00.000Z`);
    assert.deepEqual(batch.counts, { total: 3, queued: 3, dialing: 0, in_progress: 0, completed: 0, failed: 0, cancelled: 0 });
    const recipients = await allRecipients(t, id);
    assert.deepEqual(
      recipients.map((recipient) => [recipient.to, recipient.reference, recipient.metadata]),
      [
        ['+14155550200', 'appt-1', { customer_name: 'Ada', note: 'Room 4, floor 2' }],
        ['+14155550201', null, { customer_name: 'Grace', note: 'She said "hi"' }],
        ['+14155550202', 'appt-3', { customer_name: 'Alan', note: '' }],
      ],
    );

    const page = await client.get(location);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /The batch is created/);
    assert.match(page.body, /Reminders &lt;24 Nov&gt;/);
    assert.ok(!page.body.includes('Reminders <24'), 'the name is escaped');

    // A double click or a reload sends the same form again: it ends on the same batch.
    const again = await postMultipart(fields, file);
    assert.equal(again.statusCode, 303);
    assert.equal(again.headers.location, `/developers/batches/${id}`);
    // The same form with something changed is not a new batch either.
    const changed = await postMultipart({ ...fields, name: 'Another name' }, file);
    assert.equal(changed.statusCode, 409);
    assert.match(changed.body, /This form was already sent/);
    assert.equal(await batchCount(), before + 1, 'one batch for one form');
  });
});

await forEachDialect('Portal batches: lists, recipients, windows and retries', (dialect) => {
  withPortal(dialect);

  it('lists the account`s batches newest first with a progress bar whose counts are written out, filtered and paged', async () => {
    const first = await createBatch(t, numbers(2, 3000), { scheduled_at: tomorrow(), name: 'First of the list' });
    const second = await createBatch(t, numbers(3, 3100), { scheduled_at: tomorrow(), name: 'Second of the list' });
    await client.post(`/developers/batches/${first.id}/cancel`, {});
    const list = await client.get('/developers/batches');
    assert.equal(list.statusCode, 200);
    const body = list.body;
    assert.ok(body.indexOf(second.id) < body.indexOf(first.id), 'newest first');
    assert.match(body, /<svg class="progress-bar"[^>]*aria-hidden="true"/);
    assert.match(body, /0 of 3 ended/);
    assert.match(body, /2 of 2 ended/);
    assert.match(body, /<\/span>2 cancelled<\/li>/);
    assert.match(body, /<\/span>3 queued<\/li>/);
    assert.match(body, /badge-live">live</);

    const cancelledOnly = await client.get('/developers/batches?status=cancelled');
    assert.ok(cancelledOnly.body.includes(first.id));
    assert.ok(!cancelledOnly.body.includes(second.id));
    const testOnly = await client.get('/developers/batches?mode=test');
    assert.ok(!testOnly.body.includes(first.id), 'the seed key is live');

    // 26 more batches: the first page holds 25, the next the rest.
    for (const index of Array.from({ length: 26 }, (_, n) => n))
      await createBatch(t, numbers(1, 4000 + index), { scheduled_at: tomorrow() });
    const page1 = await client.get('/developers/batches');
    const older = /href="(\/developers\/batches\?starting_after=batch_[A-Za-z0-9]+)">Older batches/.exec(page1.body)?.[1];
    assert.ok(older, 'an Older link');
    const page2 = await client.get(older.replaceAll('&amp;', '&'));
    assert.equal(page2.statusCode, 200);
    assert.ok(page2.body.includes(first.id), 'the oldest batches are on the second page');
    assert.ok(!page1.body.includes(first.id));
    assert.match(page2.body, /← Newest/);
  });

  it('shows a batch`s recipients, filtered by state and paged, each with its call once placed', async () => {
    const tos = [...numbers(3, 5000), simulatorMagicNumbers.busy];
    const batch = await createBatch(t, tos, { name: 'Dialed now', max_concurrency: 4 });
    await until('the batch to complete', async () => ((await readBatch(t, batch.id)).status === 'completed' ? true : undefined));
    const page = await client.get(`/developers/batches/${batch.id}`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /4 of 4 ended/);
    const recipients = await allRecipients(t, batch.id);
    for (const recipient of recipients) {
      assert.ok(recipient.call_id);
      assert.ok(page.body.includes(`href="/developers/calls/${recipient.call_id}"`), 'each recipient links to its call');
    }
    assert.match(page.body, /<code>busy<\/code>/);
    assert.doesNotMatch(
      page.body,
      /<button type="submit" class="button[^"]*">(Pause|Resume|Cancel batch)</,
      'a completed batch has no buttons',
    );
    const callPage = await client.get(`/developers/calls/${recipients[0]!.call_id}`);
    assert.equal(callPage.statusCode, 200);

    const failed = await client.get(`/developers/batches/${batch.id}?status=failed`);
    assert.ok(failed.body.includes(simulatorMagicNumbers.busy));
    assert.ok(!failed.body.includes(tos[0]!));
    const queued = await client.get(`/developers/batches/${batch.id}?status=queued`);
    assert.match(queued.body, /No recipient is queued\./);

    const big = await createBatch(t, numbers(60, 6000), { scheduled_at: tomorrow() });
    const first = await client.get(`/developers/batches/${big.id}`);
    assert.ok(first.body.includes(numbers(1, 6049)[0]!));
    assert.ok(!first.body.includes(numbers(1, 6050)[0]!), '50 recipients a page');
    const next = /href="([^"]+)">Next recipients/.exec(first.body)?.[1];
    assert.ok(next);
    const second = await client.get(next.replaceAll('&amp;', '&'));
    assert.ok(second.body.includes(numbers(1, 6050)[0]!));
    assert.ok(second.body.includes(numbers(1, 6059)[0]!));
    assert.ok(!second.body.includes(numbers(1, 6049)[0]!));
    assert.match(second.body, /← First recipients/);
  });

  it('creates a batch with a calling window and retries from the form, refusing a faulty one with the service`s reasons', async () => {
    const form = await loadForm();
    assert.match(form.page, /name="window_start" type="time"/);
    assert.match(form.page, /name="retry_on" value="busy" checked/);
    const windowFields = {
      window_start: '09:00',
      window_end: '17:30',
      window_days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      window_time_zone: 'recipient',
      window_fallback_time_zone: 'America/New_York',
      retry_on: 'busy',
      retry_max_attempts: '3',
      retry_delay_minutes: '90',
      scheduled_at: tomorrow().slice(0, 19),
    };
    const csv = { name: 'csv_file', filename: 'window.csv', content: 'to,reference\n+14155550500,a\n+442071838750,b\n' };
    const before = await batchCount();
    const refusals: [Record<string, string | string[]>, RegExp][] = [
      [
        { window_end: '08:00' },
        /The window&#39;s end must come after the window&#39;s start \(09:00\); a window cannot run across midnight\./,
      ],
      [{ window_fallback_time_zone: '' }, /The fallback time zone is required with time zone recipient/],
      [{ window_time_zone: 'Mars/Olympus' }, /The time zone must be an IANA time zone such as America\/New_York/],
      [{ window_start: '' }, /The window&#39;s start must be a time of day as HH:MM/],
      [{ retry_max_attempts: '9' }, /Dials per recipient must be a whole number from 1 to 5\./],
      [{ retry_delay_minutes: '0' }, /Minutes between dials must be a whole number from 1 to 1440\./],
      [{ retry_on: [] }, /Tick busy, no answer or both/],
    ];
    for (const [change, message] of refusals) {
      const refused = await postMultipart(formFields(form, { ...windowFields, ...change }), csv);
      assert.equal(refused.statusCode, 400, JSON.stringify(change));
      assert.match(refused.body, message);
      // The form comes back as it was sent.
      assert.match(refused.body, /name="window_days" value="tue" checked/);
      assert.doesNotMatch(refused.body, /name="window_days" value="sat" checked/);
    }
    assert.equal(await batchCount(), before, 'nothing made');

    const created = await postMultipart(formFields(form, windowFields), csv);
    assert.equal(created.statusCode, 303, created.body);
    const id = /batch_[A-Za-z0-9]+/.exec(created.headers.location as string)![0];
    const batch = await readBatch(t, id);
    assert.deepEqual(batch.calling_window, {
      start: '09:00',
      end: '17:30',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      time_zone: 'recipient',
      fallback_time_zone: 'America/New_York',
    });
    assert.deepEqual(batch.retry, { on: ['busy'], max_attempts: 3, delay_minutes: 90 });
    const page = (await client.get(`/developers/batches/${id}`)).body;
    assert.match(
      page,
      /<dt>Calling window<\/dt><dd>09:00–17:30, mon–fri, in each recipient&#39;s time zones, from its number \(America\/New_York for a number of no known zone\)<\/dd>/,
    );
    assert.match(page, /<dt>Retries<\/dt><dd>a busy recipient is dialed again 90 minutes later, up to 3 dials in all<\/dd>/);
    // Each recipient shows when its own window lets it be dialed.
    for (const recipient of await allRecipients(t, id)) {
      assert.ok(recipient.next_attempt_at >= batch.scheduled_at);
      assert.ok(page.includes(`<time class="wrap" datetime="${recipient.next_attempt_at}">`));
    }

    // Without window or retries, the page says so; an empty window and 1 dial send neither.
    const plain = await loadForm();
    const plainCreated = await postMultipart(
      formFields(plain, { scheduled_at: tomorrow().slice(0, 19), window_days: [], retry_on: ['busy', 'no_answer'] }),
      csv,
    );
    const plainId = /batch_[A-Za-z0-9]+/.exec(plainCreated.headers.location as string)![0];
    assert.deepEqual([(await readBatch(t, plainId)).calling_window, (await readBatch(t, plainId)).retry], [null, null]);
    const plainPage = (await client.get(`/developers/batches/${plainId}`)).body;
    assert.match(plainPage, /<dt>Calling window<\/dt><dd>none: recipients are dialed at any hour<\/dd>/);
    assert.match(plainPage, /<dt>Retries<\/dt><dd>none: one dial per recipient<\/dd>/);
  });

  it('shows a retried recipient`s attempts, its next attempt while it waits, and every call it became', async () => {
    const batch = await createBatch(t, [simulatorMagicNumbers.busy], { retry: { on: ['busy'], max_attempts: 2, delay_minutes: 1 } });
    const here = `/developers/batches/${batch.id}`;
    const waiting = await until('the first attempt to end busy', async () => {
      const [recipient] = await allRecipients(t, batch.id);
      return recipient!.attempts === 1 && recipient!.status === 'queued' ? recipient! : undefined;
    });
    const cell = (page: string, label: string) =>
      new RegExp(`<td data-label="${label}"[^>]*><div class="cell">(.*?)</div></td>`, 's').exec(page)?.[1];
    const first = (await client.get(here)).body;
    const shown = (iso: string) => iso.replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC');
    assert.equal(cell(first, 'Attempts'), '1');
    assert.equal(
      cell(first, 'Calls'),
      `<a href="/developers/calls/${waiting.call_ids[0]}"><code class="id">${waiting.call_ids[0]}</code></a>`,
    );
    assert.equal(
      cell(first, 'Next attempt'),
      `<time class="wrap" datetime="${waiting.next_attempt_at}"><span>${shown(waiting.next_attempt_at).slice(0, 10)}</span> <span>${shown(waiting.next_attempt_at).slice(11)}</span></time>`,
    );
    // Why it waits: its call's failure, as the API's last_failure_reason and last_failure_message say.
    assert.equal(cell(first, 'Last failure'), `<code>busy</code><div class="muted small">${waiting.last_failure_message}</div>`);

    // The delay is a minute: it is made to have passed, and the dialer takes the recipient again.
    await t.services.db
      .updateTable('batch_recipients')
      .set({ next_attempt_at: new Date().toISOString() })
      .where('id', '=', waiting.id)
      .execute();
    const final = await until('the second attempt to end', async () => {
      const [recipient] = await allRecipients(t, batch.id);
      return recipient!.status === 'failed' ? recipient! : undefined;
    });
    assert.equal(final.attempts, 2);
    assert.equal(final.call_ids.length, 2);
    const last = (await client.get(here)).body;
    assert.equal(cell(last, 'Attempts'), '2');
    assert.equal(
      cell(last, 'Calls'),
      final.call_ids.map((callId: string) => `<a href="/developers/calls/${callId}"><code class="id">${callId}</code></a>`).join('<br>'),
    );
    assert.match(cell(last, 'Next attempt')!, /muted">—/);
  });
});

await forEachDialect('Portal batches: actions, other accounts and test mode', (dialect) => {
  withPortal(dialect);

  it('pauses, resumes and cancels with buttons valid for the state shown; a refused action is a clear message, not a 500', async () => {
    const batch = await createBatch(t, numbers(3, 7000), { scheduled_at: tomorrow() });
    const here = `/developers/batches/${batch.id}`;
    const buttons = async () =>
      [...(await client.get(here)).body.matchAll(/action="\/developers\/batches\/batch_[A-Za-z0-9]+\/(pause|resume|cancel)"/g)].map(
        (match) => match[1],
      );
    assert.deepEqual(await buttons(), ['pause', 'cancel']);

    const paused = await client.post(`${here}/pause`, {});
    assert.equal(paused.statusCode, 303);
    assert.equal(paused.headers.location, `${here}?notice=batch_paused`);
    assert.equal((await readBatch(t, batch.id)).status, 'paused');
    assert.match((await client.get(paused.headers.location as string)).body, /The batch is paused/);
    assert.deepEqual(await buttons(), ['resume', 'cancel']);

    const resumed = await client.post(`${here}/resume`, {});
    assert.equal(resumed.headers.location, `${here}?notice=batch_resumed`);
    assert.equal((await readBatch(t, batch.id)).status, 'scheduled');

    const cancelled = await client.post(`${here}/cancel`, {});
    assert.equal(cancelled.headers.location, `${here}?notice=batch_cancelled`);
    const after = await readBatch(t, batch.id);
    assert.equal(after.status, 'cancelled');
    assert.equal(after.counts.cancelled, 3);
    assert.deepEqual(await buttons(), []);

    // A page loaded before the cancel still shows Resume: its form meets a clear refusal.
    const refused = await client.post(`${here}/resume`, {});
    assert.equal(refused.statusCode, 409);
    assert.match(refused.body, /role="alert">This batch is cancelled: it cannot be resumed \(batch_not_resumable\)/);
    const refusedPause = await client.post(`${here}/pause`, {});
    assert.equal(refusedPause.statusCode, 409);
    assert.match(refusedPause.body, /it cannot be paused \(batch_finished\)/);

    const forged = await client.post(`${here}/cancel`, {}, { csrf: null });
    assert.equal(forged.statusCode, 403);
  });

  it('keeps another account`s batches, keys and agents out of reach: 404 pages, nothing changed', async () => {
    const other = await t.newAccount({ agentId: 'agent_other_batches', mode: 'test' });
    const theirs = await createBatch(
      t,
      numbers(2, 8000),
      { agent_id: other.agentId, scheduled_at: tomorrow(), name: 'Theirs' },
      { token: other.token },
    );
    assert.equal((await client.get(`/developers/batches/${theirs.id}`)).statusCode, 404);
    assert.match((await client.get(`/developers/batches/${theirs.id}`)).body, /There is no such page in this account/);
    for (const action of ['pause', 'resume', 'cancel']) {
      assert.equal((await client.post(`/developers/batches/${theirs.id}/${action}`, {})).statusCode, 404, action);
    }
    assert.equal((await readBatch(t, theirs.id, other.token)).status, 'scheduled', 'untouched');
    assert.ok(!(await client.get('/developers/batches')).body.includes(theirs.id));
    assert.ok(!(await client.get('/developers/batches?mode=test')).body.includes(theirs.id));
    assert.equal((await client.get('/developers/batches/batch_unknown')).statusCode, 404);

    const before = await batchCount();
    const withTheirKey = await loadForm();
    const keyAnswer = await client.post(
      '/developers/batches',
      formFields(withTheirKey, { api_key_id: other.keyId, csv_text: 'to\n+14155550300\n' }),
      {
        csrf: withTheirKey.csrf,
      },
    );
    assert.equal(keyAnswer.statusCode, 400);
    assert.match(keyAnswer.body, /Choose one of your API keys/);
    const withTheirAgent = await loadForm();
    const agentAnswer = await client.post(
      '/developers/batches',
      formFields(withTheirAgent, { agent_id: other.agentId, csv_text: 'to\n+14155550300\n' }),
      { csrf: withTheirAgent.csrf },
    );
    assert.equal(agentAnswer.statusCode, 400);
    assert.match(agentAnswer.body, /Choose one of your agents/);
    assert.equal(await batchCount(), before);
    // The corrected form (same token) then works: a refused form made nothing and used up nothing.
    const corrected = await client.post('/developers/batches', formFields(withTheirAgent, { csv_text: 'to\n+14155550300\n' }), {
      csrf: withTheirAgent.csrf,
    });
    assert.equal(corrected.statusCode, 303, corrected.body);
    assert.equal(await batchCount(), before + 1);
  });

  it('creates a test-mode batch with a test key, shown as test; a start time in the past or a bad limit is refused on the form', async () => {
    const key = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'Portal test key', mode: 'test' });
    const form = await loadForm();
    const past = await client.post(
      '/developers/batches',
      formFields(form, { api_key_id: key.id, scheduled_at: '2020-01-01T09:00', csv_text: 'to\n+14155550400\n' }),
      { csrf: form.csrf },
    );
    assert.equal(past.statusCode, 400);
    assert.match(past.body, /The start time is in the past/);
    const limit = await client.post(
      '/developers/batches',
      formFields(form, { api_key_id: key.id, max_concurrency: '1001', csv_text: 'to\n+14155550400\n' }),
      { csrf: form.csrf },
    );
    assert.equal(limit.statusCode, 400);
    assert.match(limit.body, /Calls at once must be a whole number from 1 to 1000/);
    const created = await client.post(
      '/developers/batches',
      formFields(form, { api_key_id: key.id, scheduled_at: tomorrow().slice(0, 19), csv_text: 'to\n+14155550400\n' }),
      { csrf: form.csrf },
    );
    assert.equal(created.statusCode, 303, created.body);
    const id = /batch_[A-Za-z0-9]+/.exec(created.headers.location as string)![0];
    assert.equal((await apiGet(t, `/v1/batches/${id}`, key.token)).statusCode, 200, 'a batch of the test key');
    assert.equal((await apiGet(t, `/v1/batches/${id}`)).statusCode, 404, 'not of the live key');
    const testOnly = await client.get('/developers/batches?mode=test');
    assert.ok(testOnly.body.includes(id));
    assert.match(testOnly.body, /badge-neutral">test</);
  });
});
