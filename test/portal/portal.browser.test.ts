/**
 * The portal in a real browser (Chromium through playwright-core) against the app on a real port with the
 * worker running: sign in, create a key and see its token once, use it, revoke it, add a webhook endpoint
 * with a local receiver, send a test event and see its delivery, open a call and see its outcome (and, once
 * ended, its transcript and its recording loaded through the session), make a
 * batch from a CSV file (its faulty lines first), see its progress, pause and cancel it. Every
 * page is saved as a screenshot in test-results/portal/, on a desktop and on a phone-sized viewport.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { addUser } from '../../src/features/identity/users.service.js';
import { freePort } from '../support/server-process.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { browserSkipReason, launchBrowser, reloadUntil, screenshot } from '../support/browser.js';
import { until } from '../support/wait.js';

/** An agent of each real provider beside the seed's simulator agent (named to sort after it). */
const providerAgents = [
  {
    agentId: 'agent_el_support',
    name: 'Support line ElevenLabs',
    provider: 'elevenlabs',
    phoneNumberId: 'phnum_main',
    phoneNumberProvider: 'twilio',
  },
  {
    agentId: 'agent_retell_support',
    name: 'Support line Retell',
    provider: 'retell',
    providerAgentId: 'agent_5f3c9e1d2b7a4c6e',
    phoneNumberId: '+14155550190',
    phoneNumber: '+14155550190',
  },
  {
    agentId: 'agent_vapi_support',
    name: 'Support line Vapi',
    provider: 'vapi',
    providerAgentId: '3b1f6c2e-9d4a-4e8b-a7c5-1f2e3d4c5b6a',
    phoneNumberId: '8c7d6e5f-4a3b-4c2d-9e1f-0a1b2c3d4e5f',
  },
] as const;

const email = 'ada@example.test';
const password = 'correct horse battery';

const skipReason = browserSkipReason();

/**
 * Waits until the page's script has read the chosen CSV file into the form's text box. Asked through the
 * protocol (inputValue), not a string for the page to evaluate: the portal's CSP forbids eval, and a string
 * predicate failed with an EvalError on a loaded machine.
 */
async function csvRead(page: Page, text: string): Promise<void> {
  await until('the CSV file to be read into the form', async () =>
    (await page.locator('#import-csv').inputValue()).includes(text) ? true : undefined,
  );
}
// A skipped test (not a skipped suite) so that the run's summary counts it as skipped.
if (skipReason) it('Portal in a browser [sqlite]', { skip: skipReason }, () => undefined);
else {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let baseUrl: string;
  let token: string;
  /** The completed call that "opens a call" made, whose content a later test reads. */
  let endedCallId: string | undefined;

  async function callApi(bearer: string) {
    const response = await fetch(`${baseUrl}/v1/calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify(callBody(t, { metadata: { customer_name: 'Ada', note: '<b>not bold</b>' } })),
    });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  }

  // One app and one browser session for the whole file: each describe below goes on from where the one
  // before it left the portal (signed in, with the key, endpoint and calls it made).
  before(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    // Keys of all three real providers (never called here: the Agents page only shows their agents and syncs).
    const nowhere = 'http://127.0.0.1:9';
    t = await startTestApp('sqlite', {
      startWorker: true,
      env: {
        CALLGATE_SIMULATOR_DELAY_MS: '50',
        PORT: String(port),
        CALLGATE_PUBLIC_URL: baseUrl,
        ...Object.fromEntries(
          ['ELEVENLABS', 'RETELL', 'VAPI'].flatMap((name) => [
            [`${name}_API_KEY`, `${name.toLowerCase()}-key`],
            [`${name}_BASE_URL`, nowhere],
          ]),
        ),
      },
      overrides: { dispatcherSweepIntervalMs: 100, monitorSweepIntervalMs: 20 },
    });
    await t.app.listen({ port, host: '127.0.0.1' });
    for (const agent of providerAgents) await upsertAgent(t.services.db, t.services.clock, { accountId: t.seed.accountId, ...agent });
    await addUser(t.services.db, t.services.clock, { accountId: t.seed.accountId, email, password });
    receiver = await startWebhookReceiver();
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  describe('Portal in a browser [sqlite]: signing in and API keys', () => {
    it('signs in', async () => {
      await page.goto(`${baseUrl}/developers/api-keys`);
      assert.match(page.url(), /\/developers\/sign-in\?next=/);
      await screenshot(page, '01-sign-in');
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill('wrong password!');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'do not match' }).waitFor();
      await screenshot(page, '02-sign-in-failed');
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${baseUrl}/developers/api-keys`);
      await page.goto(`${baseUrl}/developers`);
      await page.getByRole('heading', { name: 'Get your first call working' }).waitFor();
      await page.keyboard.press('Tab');
      assert.equal(
        await page.evaluate<string>('document.activeElement.textContent'),
        'Skip to content',
        'the first Tab reaches the skip link',
      );
      assert.ok((await page.locator('#curl').textContent())?.includes(`${baseUrl}/v1/calls`));
      assert.ok((await page.locator('#curl').textContent())?.includes(t.seed.agentId));
      assert.match(
        (await page.locator('#concurrent-calls').textContent()) ?? '',
        /^no limit/,
        'an account has no concurrency limit by default',
      );
      await screenshot(page, '03-overview');
    });

    it('creates a key and shows its token once, with a copy button', async () => {
      await page.goto(`${baseUrl}/developers/api-keys`);
      await page.getByLabel('Name').fill('Browser test key');
      await page.getByRole('radio', { name: /^Test/ }).check();
      await page.getByRole('button', { name: 'Create key' }).click();
      token = ((await page.locator('#new-token').textContent()) ?? '').trim();
      assert.match(token, /^cg_test_[0-9a-f]{64}$/);
      assert.equal(new URL(page.url()).pathname, '/developers/api-keys', 'the address no longer points at the form');
      await page.getByRole('button', { name: 'Copy token to clipboard' }).click();
      await page.getByRole('button', { name: 'Copy token to clipboard' }).filter({ hasText: 'Copied' }).waitFor();
      assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), token);
      await screenshot(page, '04-key-created');
      await page.reload();
      const content = await page.content();
      assert.ok(!content.includes(token), 'a reload shows the token no more');
      assert.ok(content.includes(`${token.slice(0, 12)}…`), 'only its prefix');
      await screenshot(page, '05-keys');
    });

    it('without JavaScript, a reload of the answer sends the form again and makes no second key', async () => {
      const noScript = await browser.newContext({
        viewport: { width: 1280, height: 860 },
        javaScriptEnabled: false,
        storageState: await context.storageState(),
      });
      try {
        const plain = await noScript.newPage();
        await plain.goto(`${baseUrl}/developers/api-keys`);
        await plain.getByLabel('Name').fill('No-script key');
        await plain.getByRole('button', { name: 'Create key' }).click();
        const shown = ((await plain.locator('#new-token').textContent()) ?? '').trim();
        assert.match(shown, /^cg_test_[0-9a-f]{64}$/);
        // Copy buttons need the script: without it none is shown (the token is there to select by hand).
        const copies = plain.locator('button.copy');
        assert.ok((await copies.count()) > 0, 'the page has its copy button');
        for (const button of await copies.all()) assert.equal(await button.isVisible(), false, 'a copy button shows without JavaScript');
        assert.equal(new URL(plain.url()).pathname, '/developers/api-keys');
        const resent = await plain.reload(); // no script to replace the address: the browser posts the form again
        assert.equal(resent?.request().method(), 'POST');
        assert.equal(resent?.status(), 409);
        await plain.getByRole('heading', { name: /This form was already sent/ }).waitFor();
        assert.ok(!(await plain.content()).includes(shown), 'the token is not shown again');
        await screenshot(plain, '04b-key-form-sent-again');
        const named = await t.services.db.selectFrom('api_keys').select('id').where('name', '=', 'No-script key').execute();
        assert.equal(named.length, 1, 'one key');
      } finally {
        await noScript.close();
      }
    });

    it('uses the key against POST /v1/calls, then revokes it after a confirmation and gets 401', async () => {
      const created = await callApi(token);
      assert.equal(created.status, 201);
      await page.reload();
      const row = page.locator('tr', { hasText: 'Browser test key' });
      await page.getByRole('link', { name: 'Revoke key Browser test key' }).click();
      await page.getByText('immediate and irreversible').waitFor();
      await screenshot(page, '06-revoke-confirm');
      await page.getByRole('button', { name: 'Revoke key now' }).click();
      await page.getByRole('status').filter({ hasText: 'The key is revoked' }).waitFor();
      assert.ok(await row.getByText('revoked').first().isVisible());
      const refused = await callApi(token);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error, 'unauthorized');
    });
  });

  describe('Portal in a browser [sqlite]: webhooks, calls, agents and requests', () => {
    it('adds a webhook endpoint, sends a test event and sees the delivery with its 200', async () => {
      await page.goto(`${baseUrl}/developers/webhooks`);
      await screenshot(page, '07-webhooks-empty');
      await page.getByRole('link', { name: 'Add endpoint' }).click();
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByLabel(/^Description/).fill('Local receiver');
      // Test is chosen unless live is: the calls below are made with a live key.
      assert.equal(await page.getByRole('radio', { name: /^Test/ }).isChecked(), true);
      await page.getByRole('radio', { name: /^Live/ }).check();
      await screenshot(page, '08-webhook-new');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByRole('status').filter({ hasText: 'The endpoint is added' }).waitFor();
      await page.getByRole('button', { name: 'Reveal secret' }).click();
      assert.match((await page.locator('#endpoint-secret').textContent()) ?? '', /^whsec_/);
      await page.getByRole('button', { name: 'Send test event' }).click();
      await receiver.waitFor(1);
      await reloadUntil(page, '.delivery summary', /200/);
      assert.ok(await page.locator('.delivery').first().getByText('webhook.test').first().isVisible());
      await screenshot(page, '09-endpoint-delivered');
      await page.goto(`${baseUrl}/developers/webhooks`);
      await screenshot(page, '10-webhooks');
    });

    it('opens a call and sees its outcome and its delivered event', async () => {
      const created = await callApi(t.seed.token);
      assert.equal(created.status, 201);
      await page.goto(`${baseUrl}/developers/calls`);
      await page.getByRole('link', { name: created.body.id }).click();
      await reloadUntil(page, '.delivery summary', /200/);
      endedCallId = created.body.id;
      assert.ok(await page.getByText('completed').first().isVisible());
      assert.ok(await page.getByText('call.completed').first().isVisible());
      assert.ok((await page.locator('pre.json').textContent())?.includes('<b>not bold</b>'), 'metadata shown as text');
      // The mode beside the status, and each delivery's endpoint named in its summary, open or not.
      assert.equal(await page.locator('.page-head .badge', { hasText: /^live$/ }).count(), 1);
      const summary = page.locator('.delivery summary').first();
      assert.match((await summary.locator('.delivery-endpoint').textContent()) ?? '', /Local receiver/);
      await summary.click();
      assert.equal(await page.locator('.delivery[open]').count(), 0, 'closed now');
      assert.ok(await summary.getByText('Local receiver').isVisible(), 'the endpoint is named without opening the delivery');
      await screenshot(page, '11-call');
      await page.goto(`${baseUrl}/developers/calls`);
      const callRow = page.locator('tr', { hasText: created.body.id });
      assert.ok(await callRow.locator('.badge', { hasText: /^live$/ }).isVisible(), 'the calls list shows the mode');
      await screenshot(page, '12-calls');
    });

    it("shows what was said on an ended call: its transcript, and its recording playing through the portal's session", async () => {
      // The call of the test above, ended: its page has shown its delivered call.completed.
      const id = endedCallId;
      assert.ok(id, 'the test above made a call');
      await page.goto(`${baseUrl}/developers/calls/${id}`);
      await page.getByRole('heading', { name: 'What was said' }).waitFor();
      const turns = page.locator('.transcript .turn');
      assert.equal(await turns.count(), 5);
      assert.match((await turns.first().textContent()) ?? '', /Hello Ada, this is the callgate simulator\./);
      assert.ok(await turns.nth(4).isVisible());
      // The agent speaks from the left, the person called from the right.
      const agent = await turns.nth(0).boundingBox();
      const user = await turns.nth(1).boundingBox();
      assert.ok(agent && user && agent.x < user.x && agent.x + agent.width < user.x + user.width, 'the two sides sit apart');
      assert.ok(await page.getByRole('link', { name: 'Download' }).isVisible());

      // The player fetches nothing until asked (preload none): asked, it loads the audio with the session's cookie.
      const answer = page.waitForResponse((response) => response.url() === `${baseUrl}/developers/calls/${id}/recording`);
      const duration = await page.locator('audio').evaluate(
        (audio) =>
          new Promise<number>((resolve, reject) => {
            audio.addEventListener('loadedmetadata', () => resolve(audio.duration), { once: true });
            audio.addEventListener(
              'error',
              () => reject(new Error(`the audio did not load: ${audio.error?.code} ${audio.error?.message}`)),
              {
                once: true,
              },
            );
            audio.preload = 'metadata';
            audio.load();
          }),
      );
      assert.ok(Number.isFinite(duration) && duration > 0, `a duration of ${duration} s`);
      const response = await answer;
      assert.equal(response.status(), 200);
      assert.equal(response.headers()['content-type'], 'audio/wav');
      await screenshot(page, '11b-call-content');
    });

    it('shows the agents and finds a request by its request_id', async () => {
      await page.goto(`${baseUrl}/developers/agents`);
      assert.ok(await page.getByText(t.seed.agentId).first().isVisible());
      // Agents of the three providers, each with its provider (and Retell's and Vapi's own ids), and a sync per provider.
      for (const agent of providerAgents) {
        const row = page.locator('tr', { hasText: agent.agentId });
        assert.ok(await row.getByText(agent.provider, { exact: false }).first().isVisible(), agent.provider);
        if ('providerAgentId' in agent) assert.ok(await row.getByText(agent.providerAgentId).isVisible(), agent.providerAgentId);
      }
      for (const label of ['ElevenLabs', 'Retell', 'Vapi']) {
        assert.ok(await page.getByRole('button', { name: `Sync from ${label}` }).isVisible(), label);
      }
      await screenshot(page, '13-agents');
      const refused = await callApi(token);
      await t.services.requestLog.flush();
      await page.goto(`${baseUrl}/developers/requests`);
      await screenshot(page, '14-requests');
      const errorRequest = await fetch(`${baseUrl}/v1/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.seed.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agent_id: 'agent_missing', to: '+14155550123' }),
      });
      const { request_id: requestId } = (await errorRequest.json()) as { request_id: string };
      assert.equal(refused.status, 401);
      await t.services.requestLog.flush();
      await page.getByLabel('Request id').fill(requestId);
      await page.getByRole('button', { name: 'Search' }).click();
      assert.ok(await page.getByText('agent_not_found').isVisible());
      await screenshot(page, '15-request-found');

      // At 1280 px the whole table fits: no sideways scrolling, request id and duration inside the viewport,
      // long paths (a page of a batch's recipients, an event list with every filter) included.
      for (const url of [
        `/v1/batches/batch_01m87nzs5g4bvs6f92extmzq1n/recipients?status=failed&limit=100&starting_after=rcp_01m87nzs5g4bvs6f92extmzq1n`,
        `/v1/events?type=call.completed&created_after=${encodeURIComponent('2026-11-24T08:00:00.000+01:00')}&starting_after=evt_01m87nzs5g4bvs6f92extmzq1n`,
      ]) {
        await fetch(`${baseUrl}${url}`, { headers: { authorization: `Bearer ${t.seed.token}` } });
      }
      // A long error code too (the longest kind of answer a row shows: an error and its code).
      const badKey = await fetch(`${baseUrl}/v1/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.seed.token}`, 'content-type': 'application/json', 'idempotency-key': 'k'.repeat(300) },
        body: JSON.stringify({ agent_id: 'agent_missing', to: '+14155550123' }),
      });
      assert.equal(((await badKey.json()) as { error: string }).error, 'invalid_idempotency_key');
      await t.services.requestLog.flush();
      await page.goto(`${baseUrl}/developers/requests`);
      const viewportWidth = page.viewportSize()!.width;
      assert.equal(viewportWidth, 1280);
      const wrap = page.locator('.table-wrap').first();
      const [scrollWidth, clientWidth] = await wrap.evaluate((element) => [element.scrollWidth, element.clientWidth]);
      assert.ok(scrollWidth <= clientWidth, `the table needs ${scrollWidth} px in ${clientWidth} px`);
      const rows = page.locator('.table-wrap tbody tr');
      assert.ok((await rows.count()) >= 3);
      for (let index = 0; index < (await rows.count()); index++) {
        for (const column of [4, 5]) {
          const box = await rows.nth(index).locator(`td:nth-child(${column})`).boundingBox();
          assert.ok(box && box.x >= 0 && box.x + box.width <= viewportWidth, `row ${index} column ${column} at ${JSON.stringify(box)}`);
        }
      }
      await screenshot(page, '15j-requests-at-1280');

      // The request's page: its body and the answer, pretty-printed and escaped, and nothing secret.
      await page.getByRole('link', { name: requestId }).click();
      const [requestBody, responseBody] = await page.locator('pre.body').allTextContents();
      assert.deepEqual(JSON.parse(requestBody!), { agent_id: 'agent_missing', to: '+14155550123' });
      assert.ok(requestBody!.includes('\n  "agent_id"'), 'pretty-printed');
      assert.equal(JSON.parse(responseBody!).error, 'agent_not_found');
      assert.equal(JSON.parse(responseBody!).request_id, requestId);
      const text = (await page.locator('main').textContent()) ?? '';
      assert.ok(!text.includes(t.seed.token) && !/Bearer/.test(text), 'no token on the page');
      await screenshot(page, '15k-request');
    });
  });

  describe('Portal in a browser [sqlite]: charts, batches and suppressions', () => {
    it('draws the overview charts on the server: visible without JavaScript, nothing fetched from another origin', async (test) => {
      // A busy and an unanswered call beside the completed one of the test above, all live (the seed key).
      for (const to of ['+15005550001', '+15005550002', '+15005550002']) {
        const response = await fetch(`${baseUrl}/v1/calls`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.seed.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(callBody(t, { to })),
        });
        assert.equal(response.status, 201);
      }
      await t.services.requestLog.flush();
      const noScript = await browser.newContext({
        viewport: { width: 1280, height: 860 },
        javaScriptEnabled: false,
        storageState: await context.storageState(),
      });
      try {
        const plain = await noScript.newPage();
        const elsewhere: string[] = [];
        plain.on('request', (request) => {
          const url = new URL(request.url());
          if (url.origin !== baseUrl && url.protocol !== 'data:') elsewhere.push(request.url());
        });
        await plain.goto(`${baseUrl}/developers?period=30d&mode=live`);
        // The worker ends the calls in the background: reload until the chart tells both failures.
        await reloadUntil(plain, '#chart-calls-desc', /1 failed: busy, 2 failed: no_answer/);
        await plain.getByRole('link', { name: 'Last 24 hours' }).click();
        await plain.waitForURL(/period=24h&mode=live/);
        const chart = plain.getByRole('img', { name: /Calls per hour by outcome/ });
        assert.ok(await chart.isVisible(), 'the calls chart is visible');
        const box = await chart.boundingBox();
        assert.ok(box && box.width > 600 && box.height > 150, `the chart is drawn at ${JSON.stringify(box)}`);
        assert.equal(await plain.locator('svg.chart').count(), 3);
        assert.ok((await plain.locator('#chart-calls rect, svg.chart rect[class^="series-failed"]').count()) >= 2, 'failed bars are drawn');
        assert.match(
          (await plain.locator('#chart-calls-desc').textContent()) ?? '',
          /live mode: 4 in all: 1 completed, 1 failed: busy, 2 failed: no_answer/,
        );
        assert.ok(await plain.getByRole('img', { name: /Webhook deliveries per hour/ }).isVisible());
        assert.ok(await plain.getByRole('img', { name: /latency of POST \/v1\/calls/ }).isVisible());
        assert.match((await plain.locator('#chart-latency-desc').textContent()) ?? '', /\d+ requests, p50 [\d.,]+ ms, p99 [\d.,]+ ms/);
        // At 1280 px the page does not scroll sideways, and no label of a chart runs past its edge (where the
        // SVG cuts it off): the 30 days' last day under a half-width chart did.
        assert.ok((await plain.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth')) <= 1);
        const labelsCut = `[...document.querySelectorAll('svg.chart')].flatMap((svg) => {
          const edge = svg.getBoundingClientRect();
          return [...svg.querySelectorAll('text')]
            .filter((text) => { const box = text.getBoundingClientRect(); return box.right > edge.right + 0.5 || box.left < edge.left - 0.5; })
            .map((text) => svg.getAttribute('aria-labelledby').split(' ')[0] + ': ' + text.textContent);
        })`;
        assert.deepEqual(await plain.evaluate<string[]>(labelsCut), [], 'the last 24 hours');
        await plain.goto(`${baseUrl}/developers?period=30d&mode=live`);
        assert.deepEqual(await plain.evaluate<string[]>(labelsCut), [], 'the last 30 days');
        assert.deepEqual(elsewhere, [], 'no request left this origin');
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-overview-'));
        const file = path.join(dir, 'overview-charts.png');
        await plain.locator('#activity').screenshot({ path: file });
        assert.ok(fs.statSync(file).size > 5_000, 'a screenshot with something in it');
        test.diagnostic(`overview charts screenshot: ${file}`);
        await screenshot(plain, '15l-overview-charts');
      } finally {
        await noScript.close();
      }
    });

    it('creates a batch from a CSV file, sees its progress on the list, pauses and cancels it', async () => {
      const upload = (name: string, csv: string) =>
        page.getByLabel('Recipients: a CSV file').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(csv) });
      const tomorrow = new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString().slice(0, 16);
      await page.goto(`${baseUrl}/developers`);
      await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Batches' }).click();
      await page.getByText('No batches yet.').waitFor();
      await page.getByRole('link', { name: 'New batch from a CSV file' }).click();
      await page.getByLabel(/^Name/).fill('Browser reminders');
      await page.getByLabel(/^Start at/).fill(tomorrow);
      await page.getByLabel('Calls at once').fill('2');
      await upload('bad.csv', 'to,reference,customer_name\n+14155550123,a-1,Ada\n4155550124,a-2,Grace\n+14155550123,a-3,Ada again\n');
      await page.getByRole('button', { name: 'Create batch' }).click();
      const problems = page.getByRole('alert').filter({ hasText: 'no batch was created' });
      await problems.waitFor();
      assert.ok(await problems.getByText('4155550124 is not a phone number in E.164 format').isVisible());
      assert.ok(await problems.getByText('+14155550123 is already on line 2').isVisible());
      await screenshot(page, '15b-batch-csv-problems');
      assert.equal(await t.services.db.selectFrom('batches').select('id').executeTakeFirst(), undefined, 'nothing created');

      await upload(
        'reminders.csv',
        '\uFEFFPhone,reference,customer_name\r\n+14155550123,a-1,Ada\r\n+14155550124,a-2,"Grace, Hopper"\r\n+14155550125,a-3,Alan\r\n',
      );
      await page.getByRole('button', { name: 'Create batch' }).click();
      await page.waitForURL(/\/developers\/batches\/batch_[A-Za-z0-9]+\?notice=batch_created$/);
      await page.getByRole('status').filter({ hasText: 'The batch is created' }).waitFor();
      const batchId = /batch_[A-Za-z0-9]+/.exec(page.url())![0];
      assert.ok((await page.getByRole('cell', { name: 'Grace, Hopper' }).count()) === 0, 'metadata is not a column of the table');
      assert.ok(await page.getByRole('cell', { name: '+14155550124' }).isVisible());
      await screenshot(page, '15c-batch-created');

      await page.getByRole('link', { name: 'Batches', exact: true }).first().click();
      const row = page.locator('tr', { hasText: 'Browser reminders' });
      assert.ok(await row.locator('svg.progress-bar').isVisible(), 'a progress bar');
      assert.ok(await row.getByText('0 of 3 ended').isVisible());
      assert.ok(await row.getByText('3 queued').isVisible(), 'its counts in words');
      assert.ok(await row.getByText('scheduled').isVisible());
      await screenshot(page, '15d-batches');

      await row.getByRole('link', { name: 'Browser reminders' }).click();
      await page.getByRole('button', { name: 'Pause' }).click();
      await page.getByRole('status').filter({ hasText: 'The batch is paused' }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Pause' }).count(), 0);
      assert.ok(await page.getByRole('button', { name: 'Resume' }).isVisible());
      await page.getByRole('button', { name: 'Cancel batch' }).click();
      await page.getByRole('status').filter({ hasText: 'The batch is cancelled' }).waitFor();
      assert.ok(await page.getByText('3 of 3 ended').isVisible());
      assert.ok(await page.locator('.progress-legend').getByText('3 cancelled').isVisible());
      assert.equal(
        await page.getByRole('button', { name: /^(Pause|Resume|Cancel batch)$/ }).count(),
        0,
        'a cancelled batch takes no action',
      );
      await screenshot(page, '15e-batch-cancelled');
      const stored = await t.services.db.selectFrom('batches').select('status').where('id', '=', batchId).executeTakeFirstOrThrow();
      assert.equal(stored.status, 'cancelled');
    });

    it('keeps numbers off the suppression list: adds one, imports a CSV file (fixing a bad line), removes one', async () => {
      await page.goto(`${baseUrl}/developers`);
      await page.getByRole('link', { name: 'Suppressions' }).click();
      await page.getByRole('heading', { name: 'Suppression list' }).waitFor();
      await page.getByLabel('Phone number').fill('+1 415 555 0301');
      await page.locator('#suppress-reason').fill('Asked not to be called');
      await page.getByRole('button', { name: 'Add to the list' }).click();
      await page.getByRole('status').filter({ hasText: 'The number is on the list' }).waitFor();
      assert.ok(await page.getByRole('cell', { name: '+14155550301', exact: true }).isVisible());
      await screenshot(page, '15f-suppression-added');

      // A file with a bad line: read into the form by the page's script, refused whole, the line named.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-suppressions-'));
      const file = path.join(dir, 'do-not-call.csv');
      fs.writeFileSync(file, 'to,reason\n+14155550302,opted out\n4155550303,typo\n');
      await page.getByLabel('CSV file').setInputFiles(file);
      await csvRead(page, '+14155550302');
      await page.getByRole('button', { name: 'Import numbers' }).click();
      await page.getByRole('alert').filter({ hasText: 'Nothing was imported' }).waitFor();
      assert.ok(await page.getByText(/Line 3.*not a phone number/).isVisible());
      await screenshot(page, '15g-suppression-import-refused');
      fs.writeFileSync(file, 'to,reason\n+14155550302,opted out\n+14155550303,typo fixed\n');
      await page.getByLabel('CSV file').setInputFiles(file);
      await csvRead(page, '+14155550303,typo fixed');
      await page.getByRole('button', { name: 'Import numbers' }).click();
      await page.getByRole('status').filter({ hasText: 'Imported: 2 numbers added.' }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/developers/suppressions', 'the address no longer points at the form');
      assert.ok(await page.getByRole('cell', { name: '+14155550303', exact: true }).isVisible());
      fs.rmSync(dir, { recursive: true, force: true });
      await screenshot(page, '15h-suppressions-imported');

      const refused = await fetch(`${baseUrl}/v1/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.seed.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(callBody(t, { to: '+14155550302' })),
      });
      assert.equal(refused.status, 403);
      assert.equal(((await refused.json()) as { error: string }).error, 'number_suppressed');

      await page.getByRole('link', { name: 'Remove +14155550301 from the list' }).click();
      await page.getByRole('heading', { name: /Remove \+14155550301 from the list\?/ }).waitFor();
      await screenshot(page, '15i-suppression-remove');
      await page.getByRole('button', { name: 'Remove from the list' }).click();
      await page.getByRole('status').filter({ hasText: 'The number is off the list' }).waitFor();
      assert.equal(await page.getByRole('cell', { name: '+14155550301', exact: true }).count(), 0);
      assert.equal(await page.getByRole('cell', { name: '+14155550302', exact: true }).count(), 1);
    });
  });

  describe('Portal in a browser [sqlite]: on a phone, the API reference, signing out', () => {
    it('reads well on a phone', async () => {
      const phone = await browser.newContext({
        viewport: { width: 390, height: 844 },
        isMobile: true,
        hasTouch: true,
        storageState: await context.storageState(),
      });
      const small = await phone.newPage();
      const callId = (await t.services.db.selectFrom('calls').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow()).id;
      const endpointId = (await t.services.db.selectFrom('webhook_endpoints').select('id').executeTakeFirstOrThrow()).id;
      const batchId = (await t.services.db.selectFrom('batches').select('id').executeTakeFirstOrThrow()).id;
      const pages: [string, string][] = [
        ['overview', '/developers'],
        ['keys', '/developers/api-keys'],
        ['webhooks', '/developers/webhooks'],
        ['endpoint', `/developers/webhooks/${endpointId}`],
        ['calls', '/developers/calls'],
        ['call', `/developers/calls/${callId}`],
        ['agents', '/developers/agents'],
        ['requests', '/developers/requests'],
        ['suppressions', '/developers/suppressions'],
        ['endpoint-edit', `/developers/webhooks/${endpointId}/edit`],
        ['endpoint-new', '/developers/webhooks/new'],
        ['batches', '/developers/batches'],
        ['batch', `/developers/batches/${batchId}`],
        ['batch-new', '/developers/batches/new'],
      ];
      const failures: string[] = [];
      for (const [name, path] of pages) {
        await small.goto(`${baseUrl}${path}`);
        await screenshot(small, `phone-${name}`);
        const unlabelled = await small.evaluate<string[]>(
          "[...document.querySelectorAll('input:not([type=hidden]), select, textarea')].filter((field) => field.labels.length === 0).map((field) => field.name)",
        );
        if (unlabelled.length > 0) failures.push(`${name} has fields without a label: ${unlabelled.join(', ')}`);
        const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
        if (overflow > 1) failures.push(`${name} is ${overflow}px wider than the phone`);
      }
      await phone.close();
      assert.deepEqual(failures, []);
    });

    it('opens the API reference from the navigation: rendered by callgate, nothing requested from another origin', async () => {
      await page.goto(`${baseUrl}/developers`);
      const requested: string[] = [];
      const onRequest = (request: { url(): string }) => void requested.push(request.url());
      page.on('request', onRequest);
      try {
        await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'API reference' }).click();
        await page.waitForURL(`${baseUrl}/docs`);
        await page.getByRole('heading', { name: /callgate API/ }).waitFor();
        await page.locator('#createCall').getByText('/v1/calls').first().waitFor();
        await page.locator('#webhook-call\\.completed').waitFor();
        // The stylesheet applied: the contents list sits beside the reference, not above it.
        const beside = await page.evaluate<boolean>(
          "document.querySelector('.toc').getBoundingClientRect().right <= document.querySelector('main').getBoundingClientRect().left",
        );
        assert.ok(beside, 'the contents list is beside the reference');
        // Every entry of the contents list shows whole: none runs past the list's edge (where it was cut).
        const cut = await page.evaluate<string[]>(`(() => {
          const list = document.querySelector('.toc');
          const edge = list.getBoundingClientRect().right;
          const cut = [...list.querySelectorAll('a')].filter((a) => a.getBoundingClientRect().right > edge + 0.5).map((a) => a.textContent);
          if (list.scrollWidth > list.clientWidth + 1) cut.push('the list scrolls sideways');
          return cut;
        })()`);
        assert.deepEqual(cut, []);
        await screenshot(page, '15-api-reference');
      } finally {
        page.off('request', onRequest);
      }
      assert.ok(
        requested.some((url) => url === `${baseUrl}/docs/docs.css`),
        requested.join(', '),
      );
      assert.deepEqual(
        requested.filter((url) => new URL(url).origin !== baseUrl),
        [],
      );
      // On a phone its tables scroll by themselves; the page is no wider than the screen.
      const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
      const small = await phone.newPage();
      await small.goto(`${baseUrl}/docs`);
      await screenshot(small, 'phone-api-reference');
      const overflow = await small.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      await phone.close();
      assert.ok(overflow <= 1, `the API reference is ${overflow}px wider than the phone`);
    });

    it('signs out, and the old session is over', async () => {
      await page.goto(`${baseUrl}/developers`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('status').filter({ hasText: 'You are signed out.' }).waitFor();
      await screenshot(page, '16-signed-out');
      await page.goto(`${baseUrl}/developers/api-keys`);
      assert.match(page.url(), /\/developers\/sign-in/);
    });
  });
}
