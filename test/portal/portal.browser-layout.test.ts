/**
 * The portal and /docs at 1280 px, in a real browser, with an account that has done everything once: keys,
 * an endpoint with deliveries, calls that completed and failed, a request replayed with its Idempotency-Key,
 * a batch with a recipient waiting for its retry. No table or code block of any page runs past its card,
 * no page logs an error in the console (a missing /favicon.ico did), and the pages a newcomer stumbled on
 * read whole: the batch's recipients with their last failure, the request log's ids unbroken and its replays
 * marked, the CSV batch form in sections, the overview past its first steps, the contents list of /docs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { failureReasons } from '../../src/features/providers/provider.interface.js';
import { addUser } from '../../src/features/identity/users.service.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { allRecipients, createBatch, numbers } from '../support/batch-client.js';
import { browserSkipReason, launchBrowser, screenshot } from '../support/browser.js';
import { freePort } from '../support/server-process.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { contrastRatio, deltaE2000, parseRgb } from '../support/colour-difference.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const email = 'layout@example.test';
const password = 'correct horse battery';

/**
 * What runs past its card on the page: each table's scrolling frame wider inside than out, each code block
 * scrolling sideways, and each of them reaching past the right edge of the card around it.
 */
const overflowing = `(() => {
  const found = [];
  const describe = (element) => element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') + (element.className ? '.' + String(element.className).split(' ').join('.') : '');
  for (const element of document.querySelectorAll('.table-wrap, pre, table')) {
    if (element.getClientRects().length === 0 || element.closest('.visually-hidden')) continue;
    if (element.scrollWidth > element.clientWidth + 1) found.push(describe(element) + ' needs ' + element.scrollWidth + ' px in ' + element.clientWidth);
    const card = element.closest('.card, main, .operation');
    if (card && element.getBoundingClientRect().right > card.getBoundingClientRect().right + 0.5) found.push(describe(element) + ' runs past its card');
  }
  if (document.documentElement.scrollWidth > document.documentElement.clientWidth + 1) found.push('the page scrolls sideways');
  return found;
})()`;

/** Each element's text and how many lines it takes (its text boxes' tops, apart by more than 4 px). */
const linesOf = (selector: string) => `[...document.querySelectorAll(${JSON.stringify(selector)})]
  .filter((element) => element.getClientRects().length > 0)
  .map((element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    const tops = [...range.getClientRects()].map((rect) => rect.top).sort((a, b) => a - b);
    return { text: element.textContent.trim(), lines: tops.filter((top, index) => index === 0 || top - tops[index - 1] > 4).length };
  })`;

/**
 * The cards at the top of the overview (before its charts), each with the cards beside it: one beside a
 * taller one, or alone on its line without filling it, leaves an empty column.
 */
const cardsAboveTheCharts = `(() => {
  const activity = document.querySelector('#activity').getBoundingClientRect();
  const cards = [...document.querySelectorAll('main .card')]
    .filter((card) => !card.parentElement.closest('.card') && card.getBoundingClientRect().bottom <= activity.top)
    .map((card) => ({ name: card.querySelector('h2').textContent.trim(), box: card.getBoundingClientRect().toJSON() }));
  return { rowWidth: activity.width, cards: cards.map((card) => ({
    ...card,
    beside: cards.filter((other) => other !== card && other.box.top < card.box.bottom && other.box.bottom > card.box.top).map((other) => other.name),
  })) };
})()`;

/** The series of the calls chart, in the chart's order: each a colour of its own. */
const callSeries = ['completed', ...failureReasons.map((reason) => `failed-${reason}`), 'initiated'];

/** The colour each series is drawn with, as a legend key (`color`) and as a bar (`fill`), and the card's. */
const seriesColours = `(() => {
  const legend = document.createElement('ul');
  legend.className = 'chart-legend';
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  document.querySelector('main .card').append(legend, svg);
  const colours = {};
  for (const key of ${JSON.stringify(callSeries)}) {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'chart-key series-' + key;
    item.append(swatch);
    legend.append(item);
    const bar = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
    bar.setAttribute('class', 'series-' + key);
    svg.append(bar);
    colours[key] = { key: getComputedStyle(swatch).color, bar: getComputedStyle(bar).fill };
  }
  const card = getComputedStyle(document.querySelector('main .card')).backgroundColor;
  legend.remove();
  svg.remove();
  return { colours, card };
})()`;

const skipReason = browserSkipReason();
if (skipReason) it('Portal at 1280 px [sqlite]', { skip: skipReason }, () => undefined);
else {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  let batchId: string;
  let waitingTo: string;
  let replayedRequestIds: string[];
  const consoleErrors: string[] = [];

  async function post(path: string, body: unknown, idempotencyKey?: string) {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.seed.token}`,
        'content-type': 'application/json',
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: JSON.stringify(body),
    });
    return { status: response.status, requestId: response.headers.get('x-request-id') ?? '', body: (await response.json()) as any };
  }

  before(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await startTestApp('sqlite', {
      startWorker: true,
      env: { CALLGATE_SIMULATOR_DELAY_MS: '50', PORT: String(port), CALLGATE_PUBLIC_URL: baseUrl },
      overrides: { dispatcherSweepIntervalMs: 100, monitorSweepIntervalMs: 20 },
    });
    await t.app.listen({ port, host: '127.0.0.1' });
    await addUser(t.services.db, t.services.clock, { accountId: t.seed.accountId, email, password });
    receiver = await startWebhookReceiver();
    await createEndpoint(t.services.db, t.services.clock, true, {
      accountId: t.seed.accountId,
      url: receiver.url,
      description: 'Local receiver',
    });

    // Calls that complete and fail, one sent twice with its Idempotency-Key (the second a replay).
    const first = await post('/v1/calls', callBody(t), 'layout-replay-1');
    const again = await post('/v1/calls', callBody(t), 'layout-replay-1');
    assert.equal(again.body.id, first.body.id);
    replayedRequestIds = [first.requestId, again.requestId];
    await post('/v1/calls', callBody(t, { to: simulatorMagicNumbers.busy }));
    // A batch whose busy recipient waits a day for its retry, the others done.
    waitingTo = simulatorMagicNumbers.busy;
    const batch = await createBatch(t, [...numbers(3, 7000), waitingTo], {
      name: 'Layout reminders',
      retry: { on: ['busy'], max_attempts: 2, delay_minutes: 1440 },
    });
    batchId = batch.id;
    await until('the batch to wait for its retry', async () => {
      const recipients = await allRecipients(t, batchId);
      return recipients.every((recipient) =>
        recipient.to === waitingTo ? recipient.attempts === 1 && recipient.status === 'queued' : recipient.status === 'completed',
      )
        ? true
        : undefined;
    });
    await receiver.waitFor(3);
    // A request with a long path, for the request log.
    await fetch(`${baseUrl}/v1/batches/${batchId}/recipients?status=failed&limit=100&starting_after=rcp_01m87nzs5g4bvs6f92extmzq1n`, {
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    // A long error code: the request log shows it whole or not at all.
    const badKey = await post('/v1/calls', callBody(t), 'k'.repeat(300));
    assert.equal(badKey.body.error, 'invalid_idempotency_key');
    await t.services.requestLog.flush();

    browser = await launchBrowser();
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${page.url()}: ${message.text()}`);
    });
    await page.goto(`${baseUrl}/developers/sign-in`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${baseUrl}/developers`);
  });
  after(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  describe('Portal at 1280 px [sqlite]', () => {
    it('no table or code block of any page runs past its card, and no page logs an error', async () => {
      const callId = (await t.services.db.selectFrom('calls').select('id').orderBy('id').executeTakeFirstOrThrow()).id;
      const endpointId = (await t.services.db.selectFrom('webhook_endpoints').select('id').executeTakeFirstOrThrow()).id;
      const pages: [string, string][] = [
        ['overview', '/developers'],
        ['keys', '/developers/api-keys'],
        ['webhooks', '/developers/webhooks'],
        ['endpoint', `/developers/webhooks/${endpointId}`],
        ['endpoint-new', '/developers/webhooks/new'],
        ['calls', '/developers/calls'],
        ['call', `/developers/calls/${callId}`],
        ['agents', '/developers/agents'],
        ['requests', '/developers/requests'],
        ['request', `/developers/requests/${replayedRequestIds[1]}`],
        ['suppressions', '/developers/suppressions'],
        ['batches', '/developers/batches'],
        ['batch', `/developers/batches/${batchId}`],
        ['batch-new', '/developers/batches/new'],
        ['api-reference', '/docs'],
      ];
      const failures: string[] = [];
      for (const [name, path] of pages) {
        await page.goto(`${baseUrl}${path}`);
        await screenshot(page, `1280-${name}`);
        for (const problem of await page.evaluate<string[]>(overflowing)) failures.push(`${name}: ${problem}`);
      }
      assert.deepEqual(failures, []);
      assert.deepEqual(consoleErrors, [], 'no page logged an error');
      const favicon = await fetch(`${baseUrl}/favicon.ico`);
      assert.equal(favicon.status, 200);
      assert.equal(favicon.headers.get('content-type'), 'image/x-icon');
      assert.deepEqual([...new Uint8Array(await favicon.arrayBuffer()).slice(0, 4)], [0, 0, 1, 0], 'an icon file');
    });

    it('the batch page shows every column of its recipients, and why and until when one waits for its retry', async () => {
      await page.goto(`${baseUrl}/developers/batches/${batchId}`);
      const table = page.locator('.table-wrap').first();
      const card = page.locator('section', { has: page.locator('#recipients') });
      const [tableBox, cardBox] = [await table.boundingBox(), await card.boundingBox()];
      const updated = page.getByRole('columnheader', { name: 'Updated' });
      const updatedBox = await updated.boundingBox();
      assert.ok(updatedBox && cardBox && tableBox, 'the column and its card are shown');
      assert.ok(
        updatedBox.x + updatedBox.width <= cardBox.x + cardBox.width,
        `Updated at ${JSON.stringify(updatedBox)} within ${JSON.stringify(cardBox)}`,
      );
      const [waiting] = (await allRecipients(t, batchId)).filter((recipient) => recipient.to === waitingTo);
      const row = page.locator('tbody tr', { hasText: waitingTo });
      assert.match((await row.textContent()) ?? '', /busy/, 'its last failure');
      assert.ok(await row.locator(`time[datetime="${waiting!.next_attempt_at}"]`).isVisible(), 'its next attempt');
    });

    it('the request log keeps ids whole and marks a replayed answer', async () => {
      await page.goto(`${baseUrl}/developers/requests`);
      const broken = await page.evaluate<string[]>(
        "[...document.querySelectorAll('.table-wrap .id')].filter((id) => id.getClientRects().length > 1).map((id) => id.textContent)",
      );
      assert.ok((await page.locator('.table-wrap .id').count()) >= 6, 'ids are marked');
      assert.deepEqual(broken, [], 'no id broken across lines');
      const [original, replay] = replayedRequestIds.map((id) => page.locator('tbody tr', { hasText: id! }));
      assert.equal(await original!.getByText('replayed').count(), 0, 'the first answer is no replay');
      assert.ok(await replay!.getByText('replayed').isVisible(), 'the replay is marked');
      await replay!.getByRole('link', { name: replayedRequestIds[1] }).click();
      await page
        .getByText(/replayed/i)
        .first()
        .waitFor();
    });

    it('lays the CSV batch form out in sections: the weekdays on one line, the page far shorter than one column', async () => {
      await page.goto(`${baseUrl}/developers/batches/new`);
      const days = page.locator('input[name="window_days"]');
      assert.equal(await days.count(), 7);
      const tops = new Set<number>();
      for (const day of await days.all()) tops.add(Math.round((await day.boundingBox())!.y));
      assert.equal(tops.size, 1, `the weekday boxes side by side, not stacked (${[...tops].join(', ')})`);
      const height = await page.evaluate<number>('document.documentElement.scrollHeight');
      assert.ok(height < 1_600, `the form page is ${height} px tall`);
      const form = await page.locator('form.batch-form').boundingBox();
      assert.ok(form && form.width > 900, `the form uses the page's width (${JSON.stringify(form)})`);
    });

    it('the overview, every first step done, leads with the account; its curl command shows whole', async () => {
      await page.goto(`${baseUrl}/developers`);
      assert.equal(await page.getByRole('heading', { name: 'Get your first call working' }).count(), 0);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      const curl = page.locator('#curl');
      if (!(await curl.isVisible())) await page.getByText('Quick start').first().click();
      const [scrollWidth, clientWidth] = await curl.evaluate((element) => [element.scrollWidth, element.clientWidth]);
      assert.ok(scrollWidth <= clientWidth, `the curl command needs ${scrollWidth} px in ${clientWidth}`);
      assert.match((await curl.textContent()) ?? '', /"customer_name": "Ada"\}\}'$/);
    });

    it('the request log shows each time on one line and each error code whole', async () => {
      await page.goto(`${baseUrl}/developers/requests`);
      await screenshot(page, '1280-requests-lines');
      const times = await page.evaluate<{ text: string; lines: number }[]>(linesOf('.table-wrap tbody time'));
      assert.ok(times.length >= 8, `times are shown (${times.length})`);
      assert.deepEqual(
        times.filter((shown) => shown.lines !== 1),
        [],
        'no time on two lines',
      );
      const codes = (await page.evaluate<{ text: string; lines: number }[]>(linesOf('.table-wrap tbody code'))).filter((code) =>
        ['invalid_request', 'invalid_idempotency_key'].includes(code.text),
      );
      assert.deepEqual(codes.map((code) => code.text).sort(), ['invalid_idempotency_key', 'invalid_request'], 'both error codes are shown');
      assert.deepEqual(
        codes.filter((code) => code.lines !== 1),
        [],
        'no error code split across lines',
      );
      const [path] = (await page.evaluate<{ text: string; lines: number }[]>(linesOf('.table-wrap tbody code.path'))).filter((shown) =>
        shown.text.includes('starting_after='),
      );
      assert.ok(path && path.lines <= 3, `the longest path takes ${path?.lines} lines`);
    });

    it("/docs' contents list shows each path on one line, and the Webhooks page names every event an endpoint receives", async () => {
      await page.goto(`${baseUrl}/docs`);
      const wrapped = await page.evaluate<string[]>(
        "[...document.querySelectorAll('.toc a')].filter((a) => { const range = document.createRange(); range.selectNodeContents(a.querySelector('.path') ?? a); return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size > 1; }).map((a) => a.textContent)",
      );
      assert.deepEqual(wrapped, []);
      await page.goto(`${baseUrl}/developers/webhooks`);
      const lead = (await page.locator('.lead').first().textContent()) ?? '';
      for (const type of ['call.completed', 'call.failed', 'batch.completed']) assert.ok(lead.includes(type), lead);
    });
  });

  describe('Portal at 1280 px [sqlite]: the overview and the CSV form read whole', () => {
    it('the overview with its quick start folded leaves no empty column', async () => {
      await page.goto(`${baseUrl}/developers`);
      assert.equal(await page.locator('details.quick-start').getAttribute('open'), null, 'the quick start is folded');
      const { rowWidth, cards } = await page.evaluate<{
        rowWidth: number;
        cards: { name: string; box: { top: number; bottom: number; width: number }; beside: string[] }[];
      }>(cardsAboveTheCharts);
      assert.deepEqual(
        cards.map((card) => card.name),
        ['Your integration', 'Quick start'],
      );
      for (const card of cards) {
        if (card.beside.length === 0) {
          assert.ok(card.box.width >= rowWidth - 2, `${card.name}, alone on its line, is ${card.box.width} px wide of ${rowWidth}`);
        } else {
          for (const name of card.beside) {
            const other = cards.find((candidate) => candidate.name === name)!;
            assert.ok(
              Math.abs(other.box.bottom - card.box.bottom) <= 2,
              `${card.name} ends at ${card.box.bottom} px beside ${name} ending at ${other.box.bottom} px: an empty column`,
            );
          }
        }
      }
      assert.deepEqual(cards.find((card) => card.name === 'Quick start')?.beside, [], 'the folded quick start has its line');
    });

    it('shows every placeholder of the CSV batch form whole', async () => {
      await page.goto(`${baseUrl}/developers/batches/new`);
      const clipped = await page.evaluate<string[]>(`[...document.querySelectorAll('form.batch-form input[placeholder]')]
        .filter((input) => input.getClientRects().length > 0)
        .flatMap((input) => {
          const style = getComputedStyle(input);
          const context = document.createElement('canvas').getContext('2d');
          context.font = style.font;
          const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
          const needs = context.measureText(input.placeholder).width;
          return input.scrollWidth > input.clientWidth || needs > room
            ? [input.id + ': "' + input.placeholder + '" needs ' + Math.ceil(needs) + ' px in ' + Math.floor(room)]
            : [];
        })`);
      assert.deepEqual(clipped, []);
      assert.ok(await page.locator('#window_time_zone').isVisible(), 'the time zone field is checked');
    });

    it('an empty chart says so once', async () => {
      // The seed key is live: in test mode the account has no call, delivery or request to draw.
      await page.goto(`${baseUrl}/developers?period=24h&mode=test`);
      for (const sentence of [
        'No calls in the last 24 hours.',
        'No webhook deliveries in the last 24 hours.',
        'No POST /v1/calls requests in the last 24 hours.',
      ]) {
        const shown = await page.evaluate<number>(`[...document.querySelectorAll('main *')]
          .filter((element) => !element.closest('.visually-hidden, title, desc') && element.getClientRects().length > 0)
          .filter((element) => [...element.childNodes].some((node) => node.nodeType === 3 && node.textContent.includes(${JSON.stringify(sentence)})))
          .length`);
        assert.equal(shown, 1, `"${sentence}" shown ${shown} times`);
      }
      await screenshot(page, '1280-overview-empty-charts');
    });

    it("draws each series of the calls chart in a colour of its own: voicemail far from completed's green, cancelled too", async () => {
      await page.goto(`${baseUrl}/developers`);
      const { colours, card } = await page.evaluate<{ colours: Record<string, { key: string; bar: string }>; card: string }>(seriesColours);
      const tooClose: string[] = [];
      for (const [index, first] of callSeries.entries()) {
        for (const second of callSeries.slice(index + 1)) {
          const difference = deltaE2000(parseRgb(colours[first]!.key), parseRgb(colours[second]!.key));
          if (difference < 15)
            tooClose.push(`${first} ${colours[first]!.key} and ${second} ${colours[second]!.key}: ΔE2000 ${difference.toFixed(1)}`);
        }
      }
      assert.deepEqual(tooClose, [], 'every two series at least 15 apart (ΔE2000)');
      const voicemail = deltaE2000(parseRgb(colours['failed-voicemail']!.key), parseRgb(colours.completed!.key));
      assert.ok(voicemail >= 30, `Failed: voicemail is ${voicemail.toFixed(1)} from Completed`);
      for (const key of callSeries) assert.equal(colours[key]!.key, colours[key]!.bar, `${key}: its key and its bars agree`);
      for (const key of callSeries.filter((series) => series !== 'initiated')) {
        const ratio = contrastRatio(parseRgb(colours[key]!.key), parseRgb(card));
        assert.ok(ratio >= 3, `${key} ${colours[key]!.key} has ${ratio.toFixed(2)}:1 against the card`);
      }
    });
  });
}
