/**
 * Debian's Chromium driven by playwright-core (no browser download). Where /usr/bin/chromium is missing
 * the browser tests are skipped with a one-line reason; .ci/run installs it with apt-get when it can.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from './repo-root.js';

export const chromiumPath = process.env.CALLGATE_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** False when a browser is there, else why the browser tests are skipped. */
export function browserSkipReason(): string | false {
  return fs.existsSync(chromiumPath) ? false : `no browser at ${chromiumPath} (apt-get install chromium to run the browser tests)`;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

const resultsDir = path.join(repoRoot, 'test-results', 'portal');

/** Saves a full-page screenshot as test-results/portal/<name>.png (not committed). */
export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(resultsDir, { recursive: true });
  await page.screenshot({ path: path.join(resultsDir, `${name}.png`), fullPage: true });
}

/** Reloads until `selector` shows `text` (the worker delivers in the background). */
export async function reloadUntil(page: Page, selector: string, text: string | RegExp, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await page.locator(selector).filter({ hasText: text }).count();
    if (found > 0) return;
    if (Date.now() > deadline) throw new Error(`no ${selector} with ${String(text)} on ${page.url()} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await page.reload();
  }
}
