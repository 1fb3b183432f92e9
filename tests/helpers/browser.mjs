// Shared set-up for every browser test: Debian's Chromium driven by
// playwright-core, against web/ (or another folder) served on 127.0.0.1.
// A test file calls browserSuite() once and opens its pages with it.
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../web/serve.mjs';

// The tests drive Debian's chromium-headless-shell: the same Blink as the
// chromium package, without the browser around it (the build Playwright
// itself runs headless). The whole suite takes about 40 % less time in it.
// The page benchmark times edits in the browser a learner opens, chromium.
// CHROMIUM_PATH picks another executable for both.
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium-headless-shell';
export const LEARNER_CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

const FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
];

/**
 * Launch headless Chromium (`executable`: CHROMIUM or LEARNER_CHROMIUM).
 * Fails with a clear message when it is missing.
 */
export async function launchBrowser(executable = CHROMIUM) {
  if (!existsSync(executable)) {
    const name = executable.split('/').pop();
    throw new Error(`Chromium not found at ${executable}: install it with 'apt-get install -y ${name}'`);
  }
  return chromium.launch({ executablePath: executable, headless: true, args: FLAGS });
}

// Each page's problems, for waitForState to name when a state never comes.
const problemsOf = new WeakMap();

/**
 * A page that records console errors, page errors and every request that
 * leaves the server's origin (those are aborted).
 */
export async function openPage(browser, origin, { viewport = { width: 1280, height: 900 }, ...device } = {}) {
  const context = await browser.newContext({ viewport, ...device }); // device: e.g. { hasTouch: true, isMobile: true }
  const page = await context.newPage();
  const problems = { consoleErrors: [], pageErrors: [], foreignRequests: [] };
  problemsOf.set(page, problems);
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

/**
 * A screenshot for people to look at (tests/screenshots/), taken only when
 * SCREENSHOTS is set (SCREENSHOTS=1 npm test): a plain test run asserts
 * nothing with them, and they would take about a minute of it.
 * @param {{ screenshot: Function }} target a page or a locator
 */
export async function screenshot(target, path, options = {}) {
  if (process.env.SCREENSHOTS) await target.screenshot({ path, ...options });
}

/** No page errors, console errors or requests to another origin, named by `where`. */
export function assertClean(problems, where) {
  assert.deepEqual(problems.pageErrors, [], `${where}: page errors`);
  assert.deepEqual(problems.consoleErrors, [], `${where}: console errors`);
  assert.deepEqual(problems.foreignRequests, [], `${where}: requests to another origin`);
}

export { startServer };

// ---------------------------------------------------------------------------
// The set-up every browser test file shares
// ---------------------------------------------------------------------------

const AXE = fileURLToPath(new URL('../../node_modules/axe-core/axe.min.js', import.meta.url));

/**
 * One server and one Chromium for a test file, started before its tests and
 * closed after them. Call at the top level of the file.
 * @param {{ root?: string, setup?: () => Promise<void> }} [options]
 *   root: the folder to serve (default web/); setup: more work before the tests
 * @returns {{ server, browser, open }} server and browser are set once the tests run
 */
export function browserSuite({ root, setup } = {}) {
  const env = {
    server: null,
    browser: null,
    /**
     * Open `path` (relative to the served folder; '' is the lesson page, '#...' a
     * hash on it) in a fresh context. Waits for the lesson page to be ready
     * unless `ready` is false.
     */
    async open(path = '', { viewport, ready = true, init, origin = env.server.url, device = {} } = {}) {
      const session = await openPage(env.browser, origin, viewport ? { viewport, ...device } : device);
      if (init) await session.page.addInitScript(init);
      await session.page.goto(`${origin}${path}`);
      if (ready) await waitForLesson(session.page);
      return session;
    },
  };
  before(async () => {
    if (setup) await setup();
    env.server = await startServer(root ? { root } : {});
    env.browser = await launchBrowser();
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.close();
  });
  return env;
}

/**
 * Render every section of the lesson page, including those far from the
 * viewport (which the page leaves unrendered: content-visibility), so that
 * innerText reads the whole page's text as drawn.
 */
export function renderEverySection(page) {
  return page.addStyleTag({ content: 'main > section { content-visibility: visible !important; }' });
}

/**
 * The text of `locator` as drawn (innerText), scrolled into view first: a
 * section far from the viewport is not rendered and has no drawn text.
 */
export function shownText(locator) {
  return locator.evaluate((node) => {
    node.scrollIntoView({ block: 'nearest' });
    // The section is rendered in the next frame; its text is read after it.
    return new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(node.innerText))));
  });
}

/** Numbers as the page prints them: "[0.670, −0.330]", "1.2e−7", "−∞", "∞". */
export function parseShown(text) {
  return text.replace(/[[\]]/g, '').split(/,\s*/).filter((t) => t.trim() !== '').map((t) => {
    const s = t.trim().replace(/−/g, '-');
    if (s === '-∞') return -Infinity;
    if (s === '∞') return Infinity;
    return Number(s);
  });
}

/**
 * Assert that the numbers a page shows (texts, each one number or a list,
 * rounded to `digits`) equal the core's `expected`: within half a unit in the
 * last digit plus `slack` (float32 values next to a rounding boundary), or
 * the same value (equal infinities). On failure, name the first mismatching
 * entries by index with the page's text and the core's number, and the
 * largest difference.
 */
export function checkShown(label, shown, expected, digits, { slack = 1e-5 } = {}) {
  const exp = Array.from(expected);
  const got = shown.flatMap((s) => parseShown(s));
  assert.equal(got.length, exp.length, `${label}: the page shows ${got.length} numbers, the core returned ${exp.length}`);
  const tol = 0.5 * 10 ** -digits + slack;
  const bad = [];
  let maxDiff = 0;
  got.forEach((g, i) => {
    const diff = Math.abs(g - exp[i]);
    if (Number.isFinite(diff)) maxDiff = Math.max(maxDiff, diff);
    if (!(diff <= tol) && !(g === exp[i])) bad.push(`[${i}] page ${shown.length === got.length ? shown[i] : g} vs core ${exp[i]} (diff ${diff})`);
  });
  assert.ok(bad.length === 0, `${label}: ${bad.length} of ${exp.length} entries differ beyond ${tol}; max diff ${maxDiff}\n  ${bad.slice(0, 6).join('\n  ')}`);
}

/**
 * Resolve once the page has drawn a frame and been idle twice after it. The
 * page leaves some work for idle moments: the "scrolls sideways" marks
 * (markScrollBoxes in web/lesson-context.js) are written in an idle callback
 * queued by a redraw or by a ResizeObserver, which runs in the frame's
 * rendering steps, after this frame callback. An idle callback queued there
 * runs before the second one here (which is queued while the first runs).
 * For a state that should appear, wait for that state itself
 * (waitForState); this is for what must have had its chance to happen.
 */
export function settled(page) {
  return page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestIdleCallback(() => requestIdleCallback(resolve)))));
}

/**
 * Give an open page a new window size and wait until it has drawn at it
 * (its resize observers and the idle work they set off included): one page
 * checked at several widths, where opening it again at each would only
 * repeat its load. The first width of such a test is the one it opened at.
 */
export async function resizeTo(page, width, height = 844) {
  await page.setViewportSize({ width, height });
  await settled(page);
}

/**
 * page.waitForFunction(fn, arg), failing with `message` (a string, or an async
 * function returning one, for what the page shows then) rather than a bare
 * timeout.
 */
export async function waitForState(page, fn, arg, message, { timeout = 30000 } = {}) {
  try {
    await page.waitForFunction(fn, arg, { timeout });
  } catch (err) {
    if (!/Timeout/i.test(err?.name ?? '') && !/Timeout/.test(err?.message ?? '')) throw err;
    const said = typeof message === 'function' ? await message() : message;
    // A state that never came is often an exception in the page: name it.
    const errors = problemsOf.get(page)?.pageErrors ?? [];
    const thrown = errors.length ? `; the page threw: ${errors.join(' | ')}` : '';
    throw new Error(`${said} (not so after ${timeout} ms${thrown})`, { cause: err });
  }
}

/** Wait until the lesson page has drawn every section. */
export function waitForLesson(page) {
  return page.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
}

/** Replace an input's text by typing, as a keyboard user would ('' empties it). */
export async function typeInto(page, locator, text) {
  await locator.focus();
  await page.keyboard.press('Control+A');
  if (text === '') await page.keyboard.press('Backspace');
  else await page.keyboard.type(text);
}

/**
 * Run axe-core in a page or frame and fail, naming the rules and nodes, on
 * violations. include: a selector to check (default the whole document);
 * impacts: only these impacts count (default all).
 */
export async function runAxe(target, where, { include = null, impacts = null } = {}) {
  // The page finishes some work when idle (a new scroll box's tab stop, for
  // one): it is checked as a learner would meet it, once that has run.
  await target.evaluate(() => new Promise((resolve) => requestIdleCallback(() => resolve(), { timeout: 2000 })));
  await target.addScriptTag({ path: AXE });
  const violations = await target.evaluate(async (sel) => {
    // Parts of the page far from the viewport are left unrendered
    // (content-visibility): their boxes have no place, and axe would take the
    // colour of whatever it finds there for their background. They are
    // rendered for the run; the style that renders them goes after it (work
    // their drawing set off, such as a map drawn on coming near, stays done).
    const drawn = document.createElement('style');
    drawn.textContent = '* { content-visibility: visible !important; }';
    document.head.append(drawn);
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    try {
      const r = await window.axe.run(sel ?? document, { resultTypes: ['violations'] });
      return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
    } finally {
      drawn.remove();
    }
  }, include);
  const counted = impacts ? violations.filter((v) => impacts.includes(v.impact)) : violations;
  assert.deepEqual(counted, [], `${where}: axe-core violations:\n${JSON.stringify(counted, null, 1)}`);
  return violations;
}

/** Load axe-core into a frame without running it (a page's runAxe then checks inside it too). */
export function addAxe(target) {
  return target.addScriptTag({ path: AXE });
}
