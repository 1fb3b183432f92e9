// "Sections visited" on the lesson page (web/progress-panel.js watchSections,
// web/progress.js): a section counts once the learner has stayed with it
// (DWELL_MS in the reading band, 30–40 % down the window) or has focused or
// edited something inside it; sections flung past do not count. The panel
// says "k of N sections visited", N being the sections that page shows.
// Screenshots of the panel at 1280 and 390 px go to tests/screenshots/.
// Run: node --test tests/progress-page.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { browserSuite, assertClean, screenshot, waitForState } from './helpers/browser.mjs';
import { DWELL_MS } from '../web/progress-panel.js';
import { STORAGE_KEY } from '../web/progress.js';

const env = browserSuite();
const shots = fileURLToPath(new URL('./screenshots/', import.meta.url));

/** The ids the saved record lists as visited. */
const visited = (page) => page.evaluate((key) => JSON.parse(localStorage.getItem(key) || '{}').s ?? [], STORAGE_KEY);
/** "k of N sections visited" from the panel, as [k, N]. */
async function panelCount(page) {
  const line = await page.locator('[data-progress] .pg-line').textContent();
  const m = line.match(/(\d+) of (\d+) sections? visited/);
  assert.ok(m, `the panel does not say "k of N sections visited": "${line}"`);
  return [Number(m[1]), Number(m[2])];
}

/**
 * Record, in the page, each section's longest unbroken stay in the reading
 * band (the band watchSections uses), in ms, and which sections are in it now.
 */
function recordStays(page) {
  return page.evaluate(() => {
    window.stays = {};
    const since = {};
    window.inBand = new Set();
    let first = true;
    let started;
    window.started = new Promise((resolve) => { started = resolve; });
    const observer = new IntersectionObserver((entries) => {
      const now = performance.now();
      for (const { target: { id }, isIntersecting } of entries) {
        if (isIntersecting) { since[id] = now; window.inBand.add(id); } else if (since[id] !== undefined) {
          window.stays[id] = Math.max(window.stays[id] ?? 0, now - since[id]);
          delete since[id];
          window.inBand.delete(id);
        }
      }
      // The sections in the band when recording starts have been there since
      // the page loaded, for longer than the recorded stay: they are left out.
      if (first) { first = false; started([...window.inBand]); }
    }, { rootMargin: '-30% 0px -60% 0px' });
    for (const s of document.querySelectorAll('main > section[id]')) observer.observe(s);
    window.staysNow = () => {
      const now = performance.now();
      const out = { ...window.stays };
      for (const id of Object.keys(since)) out[id] = Math.max(out[id] ?? 0, now - since[id]);
      return out;
    };
  });
}

test('sections flung past (the mouse wheel, then End) are not counted; those read for the dwell time are, out of the page\'s total', async () => {
  const { page, problems, context } = await env.open('');
  await recordStays(page);
  const atLoad = await page.evaluate(() => window.started);
  // Fling: a wheel turn every 60 ms down the whole page, then End.
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  for (let y = 0; y < height; y += 900) {
    await page.mouse.move(640, 450);
    await page.mouse.wheel(0, 900);
    await page.waitForTimeout(60);
  }
  await page.keyboard.press('End');
  // Wait until the section the page came to rest on has stayed past the
  // dwell time (a slow machine takes longer to get there after End).
  await waitForState(page, (least) => Object.values(window.staysNow()).some((ms) => ms >= least), DWELL_MS + 400,
    'no section stayed in the band past the dwell time after End', { timeout: 15000 });
  const stays = await page.evaluate(() => window.staysNow());
  const seen = await visited(page);
  const flown = Object.entries(stays).filter(([id, ms]) => ms < DWELL_MS - 300 && !atLoad.includes(id)).map(([id]) => id);
  console.log(`# ${Object.keys(stays).length} sections crossed the band, ${flown.length} of them for less than ${DWELL_MS - 300} ms; visited: ${seen.join(', ')}`);
  assert.ok(flown.length >= 5, `the fling should cross many sections quickly; crossed briefly: ${flown.join(', ')}`);
  const counted = flown.filter((id) => seen.includes(id));
  assert.deepEqual(counted, [], `sections flung past (longest stay in the band, ms: ${counted.map((id) => `${id} ${Math.round(stays[id])}`).join(', ')}) were counted as visited`);
  // What the learner stopped on, and stayed with past the dwell time, counts.
  const read = Object.entries(stays).filter(([, ms]) => ms >= DWELL_MS + 400).map(([id]) => id);
  assert.ok(read.length >= 1, `no section stayed in the band at the end: ${JSON.stringify(stays)}`);
  for (const id of read) assert.ok(seen.includes(id), `${id} stayed in the band for ${Math.round(stays[id])} ms (dwell ${DWELL_MS} ms) but is not counted; visited: ${seen.join(', ')}`);
  // The panel: k of the page's N sections.
  const total = await page.evaluate(() => document.querySelectorAll('main > section[id]').length);
  assert.deepEqual(await panelCount(page), [seen.length, total], 'the panel\'s "k of N sections visited"');
  mkdirSync(shots, { recursive: true });
  const panel = page.locator('[data-progress]');
  await panel.scrollIntoViewIfNeeded();
  await screenshot(panel, `${shots}progress-panel-1280.png`);
  assertClean(problems, 'fling');
  await context.close();
});

test('with reduced motion, focusing a field inside a section counts it at once, even outside the reading band; 390 px screenshot', async () => {
  const { page, problems, context } = await env.open('', { viewport: { width: 390, height: 800 }, device: { reducedMotion: 'reduce' } });
  assert.deepEqual(await visited(page), [], 'nothing is visited at load');
  // A field in a section far below, focused without scrolling: no dwell can have counted it.
  const field = page.locator('#why-scale input').first();
  const where = await field.evaluate((el) => {
    el.focus({ preventScroll: true });
    return { focused: document.activeElement === el, top: Math.round(el.getBoundingClientRect().top) };
  });
  assert.ok(where.focused && where.top > 1600, `the field should be focused far below the band: ${JSON.stringify(where)}`);
  await page.waitForTimeout(100);
  assert.deepEqual(await visited(page), ['why-scale'], `focusing a field in why-scale (at ${where.top} px, below the window) should count it at once`);
  // Typing in a field of another section, reached by the keyboard alone.
  await page.evaluate(() => document.querySelector('#masks input, #masks select, #masks button')?.focus({ preventScroll: true }));
  assert.deepEqual((await visited(page)).sort(), ['masks', 'why-scale'], 'focus in masks');
  const total = await page.evaluate(() => document.querySelectorAll('main > section[id]').length);
  assert.deepEqual(await panelCount(page), [2, total]);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `page is ${width} px wide at 390 px`);
  mkdirSync(shots, { recursive: true });
  const panel = page.locator('[data-progress]');
  await panel.scrollIntoViewIfNeeded();
  await screenshot(panel, `${shots}progress-panel-390.png`);
  assertClean(problems, 'focus');
  await context.close();
});

test('a page with three sections (a SCORM package, an embed) says "of 3 sections visited"', async () => {
  const { page, problems, context } = await env.open('', { ready: false });
  // The same page as a package builds it (dist.mjs): <main data-sections="…">.
  await page.route(/\/(index\.html)?$/, async (route) => {
    const response = await route.fetch();
    const body = (await response.text()).replace('<main id="lesson"', '<main id="lesson" data-sections="masks,quiz,break-it"');
    await route.fulfill({ response, body });
  });
  await page.reload();
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 30000 });
  assert.equal(await page.evaluate(() => document.querySelectorAll('main > section[id]').length), 3);
  const [k, n] = await panelCount(page);
  assert.equal(n, 3, `a three-section page says "${k} of ${n} sections visited"`);
  assertClean(problems, 'three sections');
  await context.close();
});
