// Shared set-up for the browser tests: Debian's Chromium driven by
// playwright-core, against web/ served on 127.0.0.1.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startServer } from '../../web/serve.mjs';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

const FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
];

/** Launch headless Chromium. Fails with a clear message when it is missing. */
export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it with 'apt-get install -y chromium'`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

/**
 * A page that records console errors, page errors and every request that
 * leaves the server's origin (those are aborted).
 */
export async function openPage(browser, origin, { viewport = { width: 1280, height: 900 } } = {}) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems = { consoleErrors: [], pageErrors: [], foreignRequests: [] };
  page.on('console', (msg) => { if (msg.type() === 'error') problems.consoleErrors.push(msg.text()); });
  page.on('pageerror', (err) => problems.pageErrors.push(String(err)));
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(origin) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    problems.foreignRequests.push(url);
    return route.abort();
  });
  return { context, page, problems };
}

/** No page errors, console errors or requests to another origin, named by `where`. */
export function assertClean(problems, where) {
  assert.deepEqual(problems.pageErrors, [], `${where}: page errors`);
  assert.deepEqual(problems.consoleErrors, [], `${where}: console errors`);
  assert.deepEqual(problems.foreignRequests, [], `${where}: requests to another origin`);
}

export { startServer };
