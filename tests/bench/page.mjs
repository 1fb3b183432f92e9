// Lesson page benchmark: one edit in each section, to the next painted frame,
// in headless Chromium.  npm run bench:page   (builds the wasm first)
//
// An edit is what a learner does (a typed value, a click, a slider step),
// dispatched as the browser would. Its time is the work it causes: the
// event handlers, plus the next frame's own work (its requestAnimationFrame
// callbacks, style, layout and paint, up to a message posted from that
// frame). The wait for the display's next vsync is not counted: it is idle.
// Each section is measured at its default size and at its largest.
// Not part of npm test: timings depend on the machine.
import { launchBrowser, openPage, startServer } from '../helpers/browser.mjs';

const EDITS = Number(process.env.EDITS || 60);
const WARMUP = 8;

/**
 * Each case: a section, the hash that sets its size, and the edit (run in
 * the page, given the edit's index so that it changes something each time).
 */
const CASES = [
  ['one-query', '', 'input', '[data-grid="one-q"] input[data-row="0"][data-col="0"]'],
  ['three-by-three', '', 'input', '[data-grid="ex-q"] input[data-row="0"][data-col="0"]'],
  ['why-scale', '', 'range', 'input[data-field="scale-dk"]'],
  ['why-scale', 'scale.dk=255', 'range', 'input[data-field="scale-dk"]', 'largest'],
  ['shapes', '', 'input', 'input[data-field="shape-d"]'],
  ['shapes', 'shape.b=8&shape.h=8&shape.t=32&shape.d=32', 'input', 'input[data-field="shape-d"]', 'largest'],
  ['masks', '', 'click', '[data-mask="mask-custom"] button[data-row="0"][data-col="1"]'],
  ['masks', '', 'input', '[data-grid="mask-tokens"] input[data-row="1"][data-col="4"]'],
  ['masks', 'mask.ct=8', 'input', '[data-grid="mask-tokens"] input[data-row="1"][data-col="4"]', 'largest'],
  ['self-cross', '', 'input', '[data-grid="cross-tgt"] input[data-row="0"][data-col="0"]'],
  ['self-cross', 'cross.tq=8&cross.tk=10', 'input', '[data-grid="cross-tgt"] input[data-row="0"][data-col="0"]', 'largest'],
  ['multi-head', '', 'input', '[data-grid="mha-tokens"] input[data-row="0"][data-col="0"]'],
  ['multi-head', 'mha.dmodel=64&mha.heads=16&mha.t=8', 'input', '[data-grid="mha-tokens"] input[data-row="0"][data-col="0"]', 'largest'],
  ['observability', '', 'input', 'input[data-field="obs-mult"]'],
  ['conventions', '', 'click', '[data-mask="conv-allowed"] button[data-row="0"][data-col="1"]'],
  ['conventions', 'conv.t=8', 'click', '[data-mask="conv-allowed"] button[data-row="0"][data-col="1"]', 'largest'],
];

/** Runs in the page: `count` edits of one control, each timed to the end of the next frame. */
async function editLoop({ kind, selector, count }) {
  const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => {
    const start = performance.now();
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve(performance.now() - start);
    channel.port2.postMessage(0);
  }));
  const times = [];
  for (let n = 0; n < count; n++) {
    await nextFrame(); // start from a settled page
    const node = document.querySelector(selector);
    const t0 = performance.now();
    if (kind === 'click') node.click();
    else {
      if (kind === 'range') node.value = String(Number(node.value) + (n % 2 ? -1 : 1));
      else node.value = String((n % 7) + 1);
      node.dispatchEvent(new Event('input', { bubbles: true }));
    }
    const handlers = performance.now() - t0;
    times.push(handlers + await nextFrame());
  }
  return times;
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

const server = await startServer();
const browser = await launchBrowser();
try {
  const rows = [];
  // SECTIONS=multi-head,masks measures only those sections.
  const only = process.env.SECTIONS ? process.env.SECTIONS.split(',') : null;
  for (const [section, hash, kind, selector, size = 'default'] of CASES.filter(([id]) => !only || only.includes(id))) {
    const { context, page } = await openPage(browser, server.url, { viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.url}#view=${section}${hash ? `&${hash}` : ''}`);
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20000 });
    await page.evaluate(editLoop, { kind, selector, count: WARMUP });
    const times = await page.evaluate(editLoop, { kind, selector, count: EDITS });
    rows.push({ section, size, edit: kind === 'click' ? 'click' : selector.match(/data-(?:grid|field)="([^"]+)"/)[1], median: quantile(times, 0.5), p95: quantile(times, 0.95) });
    await context.close();
  }
  console.log(`Edit → next frame in headless Chromium, ${EDITS} edits per row (ms)\n`);
  console.log('| section | size | edit | median | p95 | target p95 |');
  console.log('|---|---|---|---:|---:|---:|');
  for (const r of rows) {
    const target = r.size === 'default' ? 4 : 8;
    console.log(`| ${r.section} | ${r.size} | ${r.edit} | ${r.median.toFixed(2)} | ${r.p95.toFixed(2)} | ${target}${r.p95 <= target ? '' : ' ✗'} |`);
  }
} finally {
  await browser.close();
  await server.close();
}
