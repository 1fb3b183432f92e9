// Lesson page benchmark: one edit in each section, to the next painted frame,
// in headless Chromium.  npm run bench:page   (installs Chromium if missing and builds the wasm first)
//
// An edit is what a learner does (a typed value, a click, a slider step),
// dispatched as the browser would. Its time is the work it causes: the
// event handlers, plus the next frame's own work (its requestAnimationFrame
// callbacks, style, layout and paint, up to a message posted from that
// frame). The wait for the display's next vsync is not counted: it is idle.
// Each section is measured at its default size and at its largest.
// Not part of npm test: timings depend on the machine.
import { loadavg } from 'node:os';
import { LEARNER_CHROMIUM, launchBrowser, openPage, startServer } from '../helpers/browser.mjs';

const EDITS = Number(process.env.EDITS || 60);
const WARMUP = 8;
/** SECTIONS=masks,shapes measures those sections only. */
const ONLY = process.env.SECTIONS ? process.env.SECTIONS.split(',') : null;

/**
 * Each case: the section, the hash that sets its size, the edit, and the
 * size it stands for. An edit is { kind, selector, values }: kind 'input'
 * types values[n % values.length] (1…7 by default) into the input, 'range'
 * steps a slider up and down by one, 'click' clicks. Sections whose inputs
 * have a fixed size have one row (their default is their largest); `edits`
 * lowers the count of a case whose every edit is slow by design.
 */
const CELLS = [1, 2, 3, 4, 5, 6, 7];
const cell = (grid, row = 0, col = 0) => `[data-grid="${grid}"] input[data-row="${row}"][data-col="${col}"]`;
const field = (name) => `input[data-field="${name}"]`;
// The floor: a bare page whose edit sets one number. Its time is the
// browser's own cost of a frame on this machine, which no section can beat.
const FLOOR_PAGE = `<!doctype html><meta charset="utf-8"><title>floor</title>
<p><input id="x" aria-label="x" value="1"> <output id="out">2</output></p>
<script>document.getElementById('x').addEventListener('input', (e) => { document.getElementById('out').textContent = String(2 * Number(e.target.value)); });</script>`;
const CASES = [
  { section: 'floor (bare page)', kind: 'input', selector: '#x', bare: true },
  // The lesson page's own floor: a one-query input is edited, but no handler
  // hears it, so only the input's new value is drawn. What a section costs
  // above this row is its own work; this row is the page's size and styling.
  { section: 'floor (lesson page, input only)', view: 'one-query', kind: 'input', selector: cell('one-q'), inert: true },
  { section: 'one-query', kind: 'input', selector: cell('one-q') },
  { section: 'three-by-three', kind: 'input', selector: cell('ex-q') },
  { section: 'why-scale', kind: 'range', selector: field('scale-dk') },
  { section: 'why-scale', hash: 'scale.dk=255', kind: 'range', selector: field('scale-dk'), size: 'largest' },
  { section: 'shapes', kind: 'input', selector: field('shape-d') },
  { section: 'shapes', hash: 'shape.b=8&shape.h=8&shape.t=32&shape.d=32', kind: 'input', selector: field('shape-d'), size: 'largest' },
  { section: 'masks', kind: 'click', selector: '[data-mask="mask-custom"] button[data-row="0"][data-col="1"]' },
  { section: 'masks', kind: 'input', selector: cell('mask-tokens', 1, 4) },
  { section: 'masks', hash: 'mask.ct=8', kind: 'input', selector: cell('mask-tokens', 1, 4), size: 'largest' },
  // Query 2: under the default causal mask query 1 sees key 1 only, so editing it changes no number.
  { section: 'gradients', kind: 'input', selector: cell('grad-q', 1, 0) },
  { section: 'self-cross', kind: 'input', selector: cell('cross-tgt') },
  { section: 'self-cross', hash: 'cross.tq=8&cross.tk=10', kind: 'input', selector: cell('cross-tgt'), size: 'largest' },
  { section: 'multi-head', kind: 'input', selector: cell('mha-tokens') },
  { section: 'multi-head', hash: 'mha.dmodel=64&mha.heads=16&mha.t=8', kind: 'input', selector: cell('mha-tokens'), size: 'largest' },
  { section: 'watch-learn', kind: 'input', selector: field('learn-lr'), values: [0.02, 0.01] },
  { section: 'observability', kind: 'input', selector: field('obs-mult') },
  { section: 'conventions', kind: 'click', selector: '[data-mask="conv-allowed"] button[data-row="0"][data-col="1"]' },
  { section: 'conventions', hash: 'conv.t=8', kind: 'click', selector: '[data-mask="conv-allowed"] button[data-row="0"][data-col="1"]', size: 'largest' },
  { section: 'rotary', kind: 'input', selector: cell('rope-q') },
  { section: 'kv-cache', kind: 'input', selector: cell('kv-x') },
  { section: 'online-softmax', kind: 'input', selector: cell('flash-k') },
  { section: 't-squared', kind: 'input', selector: field('cost-d'), values: [32, 64] },
  { section: 't-squared', hash: 'cost.maxT=4096', kind: 'input', selector: field('cost-d'), values: [32, 64], size: 'largest', edits: 10 },
  { section: 'dropout', kind: 'input', selector: cell('drop-q') },
  { section: 'break-it', kind: 'click', selector: '.bk-card .bk-switch' },
];

/**
 * Runs in the page: `count` edits of one control, each timed from the edit to
 * the end of the next frame. A frame callback registered before the edit
 * runs first in that frame, so the frame's own work is counted from its start:
 * every frame callback the edit asked for, then style, layout and paint, up to
 * a message posted by the last callback (delivered after the frame's task).
 * Returns [handlers, frame] per edit.
 */
async function editLoop({ kind, selector, values, count }) {
  const afterFrame = () => new Promise((resolve) => requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve(performance.now());
    channel.port2.postMessage(0);
  }));
  const times = [];
  for (let n = 0; n < count; n++) {
    await afterFrame(); // start from a settled page
    let frameStart = 0;
    const started = new Promise((resolve) => requestAnimationFrame(() => { frameStart = performance.now(); resolve(); }));
    const node = document.querySelector(selector);
    const t0 = performance.now();
    if (kind === 'click') node.click();
    else {
      if (kind === 'range') node.value = String(Number(node.value) + (n % 2 ? -1 : 1));
      else node.value = String(values[n % values.length]);
      node.dispatchEvent(new Event('input', { bubbles: true }));
    }
    const handlers = performance.now() - t0;
    const end = await afterFrame();
    await started;
    times.push([handlers, end - frameStart]);
  }
  return times;
}

/**
 * Runs in the page: resolves once the page's own idle work is done. The page
 * does some work when idle after it loads (maps far from the viewport, the
 * live timings of T² and the KV cache); an edit measured while it runs would
 * count some of it. Settled: five idle callbacks in a row each found a whole
 * idle period (nearly 50 ms) free. A page that asks for frames without end
 * never has one: after `limit` ms the wait gives up, and returns false.
 */
async function settle(limit) {
  // A busy page has no idle time at all: the timeout still calls back (with none left).
  const idle = () => new Promise((resolve) => requestIdleCallback(resolve, { timeout: 1000 }));
  const start = performance.now();
  for (let free = 0; free < 5;) {
    if (performance.now() - start > limit) return false;
    free = (await idle()).timeRemaining() > 40 ? free + 1 : 0;
  }
  return true;
}
const SETTLE_LIMIT = 20000;

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

// PAGE_ROOT=/path/to/web measures another copy of the page (e.g. an older commit's, to compare in one sitting).
const server = await startServer(process.env.PAGE_ROOT ? { root: process.env.PAGE_ROOT } : {});
const browser = await launchBrowser(LEARNER_CHROMIUM); // the browser a learner opens, not the tests' headless shell
try {
  const rows = [];
  for (const { section, view = section, hash = '', kind, selector, values = CELLS, size = 'default', edits = EDITS, bare = false, inert = false } of CASES) {
    if (ONLY && !ONLY.includes(section) && !bare && !inert) continue;
    process.stderr.write(`measuring ${section}, ${size} size\n`); // a run takes minutes: say where it is
    const { context, page } = await openPage(browser, server.url, { viewport: { width: 1280, height: 900 } });
    if (bare) await page.setContent(FLOOR_PAGE);
    else {
      await page.goto(`${server.url}#view=${view}${hash ? `&${hash}` : ''}`);
      await page.waitForSelector('html[data-ready="true"]', { timeout: 120000, state: 'attached' });
    }
    const settled = await page.evaluate(settle, SETTLE_LIMIT);
    if (inert) await page.evaluate(() => window.addEventListener('input', (e) => e.stopImmediatePropagation(), true));
    await page.evaluate(editLoop, { kind, selector, values, count: Math.min(WARMUP, edits) });
    const times = await page.evaluate(editLoop, { kind, selector, values, count: edits });
    const what = kind === 'click' ? 'click' : (selector.match(/data-(?:grid|field)="([^"]+)"/) ?? [, 'input'])[1];
    const total = times.map(([a, b]) => a + b);
    rows.push({ section, size, edit: what, count: edits, median: quantile(total, 0.5), p95: quantile(total, 0.95),
      handlers: quantile(times.map(([a]) => a), 0.5), frame: quantile(times.map(([, b]) => b), 0.5), settled });
    await context.close();
  }
  console.log(`Edit → next frame in headless Chromium (ms); load average ${loadavg().map((x) => x.toFixed(2)).join(', ')}\n`);
  console.log('| section | size | edit | edits | median | p95 | target p95 | median of handlers | median of frame |');
  console.log('|---|---|---|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const target = r.section.startsWith('floor') ? '–' : r.size === 'default' ? 4 : 8;
    const mark = target === '–' || r.p95 <= target ? '' : ' ✗';
    const busy = r.settled ? '' : ' (still busy when measured)';
    console.log(`| ${r.section}${busy} | ${r.size} | ${r.edit} | ${r.count} | ${r.median.toFixed(2)} | ${r.p95.toFixed(2)} | ${target}${mark} | ${r.handlers.toFixed(2)} | ${r.frame.toFixed(2)} |`);
  }
} finally {
  await browser.close();
  await server.close();
}
