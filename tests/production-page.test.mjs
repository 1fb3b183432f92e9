// The lesson's production sections in Debian's Chromium: every number shown
// is checked against the core run here in Node on the inputs read back from
// the page; edits by keyboard; the check each section asserts; 1280 px and
// 390 px (screenshots in tests/screenshots/, git-ignored), axe-core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  browserSuite, assertClean, typeInto, runAxe, checkShown as checkShownBy, screenshot, renderEverySection, openPage, shownText, resizeTo } from './helpers/browser.mjs';
import { loadAttention } from '../web/attention.js';
import { sectionName } from '../web/sections/registry.js';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const PRODUCTION_SECTIONS = ['rotary', 'kv-cache', 'online-softmax', 't-squared', 'dropout'];
let lab;
const suite = browserSuite({ setup: async () => { lab = await loadAttention(); } });

// The page's numbers equal the core's to the digits shown (helpers/browser.mjs),
// with a slack of 1e-6 rather than 1e-5: these sections show differences of
// order 1e-7 to 6 digits, where 1e-5 would pass a wrong one.
const checkShown = (label, shown, expected, digits) => checkShownBy(label, shown, expected, digits, { slack: 1e-6 });

async function readGrid(page, name) {
  const cells = await page.$$eval(`[data-grid="${name}"] input`, (ns) => ns.map((n) => [Number(n.dataset.row), Number(n.dataset.col), n.value]));
  const m = [];
  for (const [i, j, v] of cells) (m[i] ??= [])[j] = Number(v);
  return m;
}
const texts = (page, key) => page.$$eval(`[data-out="${key}"]`, (ns) => ns.map((n) => n.textContent));

// ---------------------------------------------------------------------------
// Online softmax
// ---------------------------------------------------------------------------

/** What the online-softmax section shows against lab.sdpaTiled and lab.sdpa on its inputs. */
async function expectOnline(page, { step, bug }) {
  const q = await readGrid(page, 'flash-q'), k = await readGrid(page, 'flash-k'), v = await readGrid(page, 'flash-v');
  const tile = Number(await page.locator('input[data-field="flash-tile"]').inputValue());
  const tiled = lab.sdpaTiled(q, k, v, { blockKeys: tile, trace: true, bug: bug ? 'no-rescale' : undefined });
  const plain = lab.sdpa(q, k, v);
  const shown = Math.min(step, tiled.tiles);
  checkShown('scores', await page.$$eval('[data-values="flash-scores"] td', (ns) => ns.map((n) => n.textContent)), plain.scores.data, 3);
  checkShown('running max', await texts(page, 'flash-m'), tiled.trace.max.data.slice(0, shown), 4);
  checkShown('rescale', await texts(page, 'flash-rescale'), tiled.trace.rescale.data.slice(0, shown), 4);
  checkShown('running sum', await texts(page, 'flash-l'), tiled.trace.sum.data.slice(0, shown), 4);
  checkShown('accumulator', await texts(page, 'flash-acc'), tiled.trace.accumulator.data.slice(0, shown * 2), 4);
  assert.equal((await texts(page, 'flash-step'))[0], `Tile ${shown} of ${tiled.tiles}`);
  return { tiled, plain, last: shown === tiled.tiles };
}

test('online softmax: the stepper shows the core\'s m, l, rescale and accumulator; the check holds, and fails with the bug', async () => {
  const { page, problems } = await suite.open('#online-softmax');
  const section = page.locator('#online-softmax');
  // Defaults: 6 keys in tiles of 2; step 1 of 3.
  let r = await expectOnline(page, { step: 1, bug: false });
  assert.equal(r.tiled.tiles, 3);
  assert.match((await texts(page, 'flash-wait'))[0], /Step to tile 3/);
  // Tile 1's rescale reads 0: the page says it is exp(−∞ − m), not a bug.
  assert.equal(r.tiled.trace.rescale.data[0], 0, 'the core starts from m = −∞');
  assert.match((await texts(page, 'flash-first')).join(' '), /−∞/, 'the 0 rescale of tile 1 is explained beside the table');
  // Step with the keyboard: focus "Next tile" and press Enter twice.
  await section.locator('button[data-field="flash-next"]').focus();
  await page.keyboard.press('Enter');
  await expectOnline(page, { step: 2, bug: false });
  await page.keyboard.press('Enter');
  r = await expectOnline(page, { step: 3, bug: false });
  assert.ok(r.last, `three steps reach the last of the core's ${r.tiled.tiles} tiles`);
  // The rescale really happens in the default example: the max moves at tiles 2 and 3.
  assert.ok(r.tiled.trace.rescale.data[1] < 1 && r.tiled.trace.rescale.data[2] < 1,
    `the max moves: rescale at tiles 2 and 3 is ${r.tiled.trace.rescale.data[1]}, ${r.tiled.trace.rescale.data[2]}, want both < 1`);
  checkShown('tiled output', await texts(page, 'flash-tiled'), r.tiled.output.data, 4);
  checkShown('plain output', await texts(page, 'flash-plain'), r.plain.output.data, 4);
  const check = section.locator('[data-check="flash-equal"]');
  assert.equal(await check.getAttribute('data-passed'), 'true');
  const diff = Math.max(...r.tiled.output.data.map((x, i) => Math.abs(x - r.plain.output.data[i])));
  assert.ok(diff <= 1e-6, `core difference ${diff}`);
  checkShown('max difference', await texts(page, 'flash-diff'), [diff], 6);

  // Break it: the check fails and says by how much.
  await section.locator('input[data-field="flash-bug"]').focus();
  await page.keyboard.press('Space');
  r = await expectOnline(page, { step: 3, bug: true });
  assert.equal(await check.getAttribute('data-passed'), 'false');
  const bugDiff = Math.max(...r.tiled.output.data.map((x, i) => Math.abs(x - r.plain.output.data[i])));
  assert.ok(bugDiff > 1e-3, `the bug changes the output (${bugDiff})`);
  checkShown('max difference with the bug', await texts(page, 'flash-diff'), [bugDiff], 4);
  // The note beside the trace says what the table shows: every rescale is 1.
  assert.deepEqual(await texts(page, 'flash-rescale'), ['1.0000', '1.0000', '1.0000'], 'the rescales shown with the bug');
  assert.match((await texts(page, 'flash-first')).join(' '), /every rescale is 1/, 'the note beside the trace, with the bug');
  await page.keyboard.press('Space');

  // Edit a key and the tile width by keyboard: everything follows the core.
  await typeInto(page, section.locator('[data-grid="flash-k"] input[data-row="0"][data-col="0"]'), '5');
  await page.keyboard.press('Enter');
  await typeInto(page, section.locator('input[data-field="flash-tile"]'), '4');
  await page.keyboard.press('Enter');
  r = await expectOnline(page, { step: 2, bug: false });
  assert.equal(r.tiled.tiles, 2);
  assert.equal(await check.getAttribute('data-passed'), 'true');
  // A tile width out of range keeps the last valid state with an inline message.
  await typeInto(page, section.locator('input[data-field="flash-tile"]'), '9');
  await page.keyboard.press('Enter');
  assert.equal((await texts(page, 'flash-step'))[0], 'Tile 2 of 2');
  assertClean(problems, 'online softmax');
  await page.context().close();
});

test('production sections at 1280 px and 390 px: no sideways scroll, axe-core (and screenshots with SCREENSHOTS set)', async () => {
  await mkdir(SHOTS, { recursive: true });
  // One page, opened at the first size and then narrowed: all the tiles shown,
  // T² measured and every section rendered once, then checked at each size.
  const viewports = [{ width: 1280, height: 900 }, { width: 390, height: 844 }];
  const { page, problems } = await suite.open('#online-softmax', { viewport: viewports[0] });
  await page.locator('#online-softmax button[data-field="flash-all"]').click();
  // T² measures once the learner comes near it: whether it is near
  // #online-softmax depends on the sections drawn so far, so go there.
  await page.locator('#t-squared').scrollIntoViewIfNeeded();
  await page.locator('#t-squared [data-check="cost-slopes"]').waitFor({ timeout: 60000 });
  await renderEverySection(page); // the sections far from the viewport too: axe and the width check see them drawn
  for (const viewport of viewports) {
    if (viewport !== viewports[0]) await resizeTo(page, viewport.width, viewport.height);
    for (const id of PRODUCTION_SECTIONS) await screenshot(page.locator(`#${id}`), `${SHOTS}${id}-${viewport.width}.png`);
    // One axe run over the five sections; a violation names its node.
    await runAxe(page, `production sections at ${viewport.width} px`, { include: PRODUCTION_SECTIONS.map((id) => `#${id}`).join(', ') });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no sideways page scroll at ${viewport.width} px (${overflow} px)`);
    assertClean(problems, `${viewport.width} px`);
  }
  await page.context().close();
});

// ---------------------------------------------------------------------------
// Rotary positions
// ---------------------------------------------------------------------------

/** The rotary section's three scores against lab.applyRope + a float64 dot product. */
async function expectRotary(page, kept = {}) {
  const q = await readGrid(page, 'rope-q'), k = await readGrid(page, 'rope-k');
  const pos = async (name) => kept[name] ?? Number(await page.locator(`input[data-field="${name}"]`).inputValue());
  const [pq, pk, shift] = [await pos('rope-pq'), await pos('rope-pk'), await pos('rope-shift')];
  const score = (a, b) => {
    const rq = lab.applyRope(q, { positions: [a] }).data, rk = lab.applyRope(k, { positions: [b] }).data;
    return rq.reduce((sum, x, i) => sum + x * rk[i], 0);
  };
  const want = [score(pq, pk), score(pq + shift, pk + shift), score(pq + shift, pk)];
  for (const [i, key] of ['given', 'both', 'one'].entries()) checkShown(`rotary ${key}`, await texts(page, `rope-${key}`), [want[i]], 4);
  return want;
}

test('rotary positions: shifting both positions keeps the score, shifting one changes it; the pair picture', async () => {
  const { page, problems } = await suite.open('#rotary');
  const section = page.locator('#rotary');
  let [given, both, one] = await expectRotary(page);
  assert.ok(Math.abs(given - both) < 1e-4 && Math.abs(given - one) > 1e-3,
    `score at the given positions ${given}, both shifted ${both} (want within 1e-4), one shifted ${one} (want more than 1e-3 away)`);
  assert.equal(await section.locator('[data-check="rope-shift-both"]').getAttribute('data-passed'), 'true');
  assert.equal(await section.locator('[data-check="rope-shift-one"]').getAttribute('data-passed'), 'true');
  // The picture's numbers are the rotated first pair.
  const q = await readGrid(page, 'rope-q');
  const rq = lab.applyRope(q, { positions: [5] }).data;
  checkShown('rotated q pair', await texts(page, 'rope-q-pair'), [rq[0], rq[2]], 3);
  assert.equal(await section.locator('svg.rope-svg line.rope-arrow').count(), 4);
  // Keyboard edits: a new key entry and new positions.
  await typeInto(page, section.locator('[data-grid="rope-k"] input[data-row="0"][data-col="1"]'), '2.5');
  await page.keyboard.press('Enter');
  await typeInto(page, section.locator('input[data-field="rope-pq"]'), '40');
  await page.keyboard.press('Enter');
  await typeInto(page, section.locator('input[data-field="rope-shift"]'), '123');
  await page.keyboard.press('Enter');
  [given, both, one] = await expectRotary(page);
  assert.equal(await section.locator('[data-check="rope-shift-both"]').getAttribute('data-passed'), 'true');
  // Invalid text keeps the last valid state (position 2), with an inline message.
  await typeInto(page, section.locator('input[data-field="rope-pk"]'), '-3');
  await page.keyboard.press('Enter');
  assert.equal(await section.locator('input[data-field="rope-pk"]').getAttribute('aria-invalid'), 'true');
  await expectRotary(page, { 'rope-pk': 2 });
  assertClean(problems, 'rotary');
  await page.context().close();
});

test('rotary: a zero query is named as the reason the score does not move; the formula counts pairs from 1 like the labels', async () => {
  const { page, problems } = await suite.open('#rotary');
  const section = page.locator('#rotary');
  const intro = await section.locator('p').first().textContent();
  assert.ok(!/−2c\/d/.test(intro), `the formula counts c from 0 while the entries are d1…d4: ${intro}`);
  assert.match(intro, /pair i = 1, …, d\/2 is turned by the angle position × 10000−2\(i−1\)\/d/);
  assert.match(intro, /d1 with d3 and d2 with d4/);
  await typeInto(page, section.locator('input[data-field="rope-shift"]'), '44');
  await page.keyboard.press('Enter');
  for (let c = 0; c < 4; c++) {
    await typeInto(page, section.locator(`[data-grid="rope-q"] input[data-row="0"][data-col="${c}"]`), '0');
    await page.keyboard.press('Enter');
  }
  const [given, , one] = await expectRotary(page);
  assert.ok(given === 0 && one === 0, `a zero query scores 0: ${given}, ${one}`);
  const line = section.locator('[data-check="rope-shift-one"]');
  assert.equal(await line.getAttribute('data-passed'), 'false');
  const text = await line.textContent();
  assert.ok(!/2π/.test(text), `the reason blames the shift: ${text}`);
  assert.match(text, /q is all zeros, so the score is 0 at every position/);
  // The picture: q's first pair is (0, 0), so q has no arrow (k keeps its own), and the caption says why.
  const shown = await section.locator('svg.rope-svg').evaluate((svg) => [...svg.querySelectorAll('.rope-arrow, .rope-label')]
    .map((n) => `${n.getAttribute('class')}:${getComputedStyle(n).visibility}`));
  assert.deepEqual(shown, ['rope-arrow q faint:hidden', 'rope-arrow k faint:visible', 'rope-arrow q:hidden', 'rope-arrow k:visible',
    'rope-label q:hidden', 'rope-label k:visible'], 'no arrow nor label for a pair of zeros');
  assert.match(await section.locator('figure.rope-pic figcaption').textContent(), /q’s first pair is \(0, 0\), which has no direction, so it has no arrow\./);
  assertClean(problems, 'rotary zero query');
  await page.context().close();
});

// ---------------------------------------------------------------------------
// Dropout and row sums
// ---------------------------------------------------------------------------

const ONES = [[1], [1], [1], [1]];

/** The dropout section against lab.sdpa({ dropout, seed }) on its inputs. */
async function expectDropout(page, kept = {}) {
  // The mean over 200 seeds is computed after the edit's frame: its sentences are busy until then.
  await page.waitForFunction(() => document.querySelectorAll('#dropout [aria-busy="true"]').length === 0);
  const q = await readGrid(page, 'drop-q'), k = await readGrid(page, 'drop-k');
  const num = async (name) => kept[name] ?? Number(await page.locator(`input[data-field="${name}"]`).inputValue());
  const p = await num('drop-p'), seed = await num('drop-seed');
  const r = lab.sdpa(q, k, ONES, { dropout: p, seed });
  checkShown('dropout weights', await page.$$eval('[data-heatmap="drop-weights"] .hm-cell:not(.hm-extra)', (ns) => ns.map((n) => n.textContent)), r.weights.data, 3);
  checkShown('row sums', await page.$$eval('[data-heatmap="drop-weights"] .hm-cell.hm-extra', (ns) => ns.map((n) => n.textContent)), r.output.data, 3);
  assert.equal((await texts(page, 'drop-count'))[0], String(r.dropoutMask.data.filter((x) => x === 0).length));
  const mean = meanRowSums(q, k, p);
  checkShown('mean row sums', await texts(page, 'drop-mean'), mean, 3);
  return { r, mean, p };
}

/** The mean row sums over DRAWS draws: one call of the core on DRAWS copies of the example (seed 0). */
const DRAWS = 10000;
function meanRowSums(q, k, p) {
  const copies = (m) => {
    const one = m.flat();
    const data = new Float32Array(DRAWS * one.length);
    for (let b = 0; b < DRAWS; b++) data.set(one, b * one.length);
    return { data, shape: [DRAWS, m.length, m[0].length] };
  };
  const sums = lab.sdpa(copies(q), copies(k), copies(ONES), { dropout: p, seed: 0, needWeights: false }).output.data;
  const mean = new Float64Array(4);
  for (let b = 0; b < DRAWS; b++) for (let i = 0; i < 4; i++) mean[i] += sums[b * 4 + i] / DRAWS;
  return mean;
}

test('dropout: the core\'s weights and row sums, a new seed resamples, the mean row sum is about 1', async () => {
  const { page, problems } = await suite.open('#dropout');
  const section = page.locator('#dropout');
  const first = await expectDropout(page);
  assert.ok(first.r.stats.maxRowSumError > 0.01, `with dropout the rows do not sum to 1: the core's row-sum error is ${first.r.stats.maxRowSumError}, want > 0.01`);
  assert.equal(await section.locator('[data-check="drop-expected"]').getAttribute('data-passed'), 'true');
  // Resample by keyboard: a new seed, a new mask.
  await section.locator('button[data-field="drop-resample"]').focus();
  await page.keyboard.press('Enter');
  assert.equal(await section.locator('input[data-field="drop-seed"]').inputValue(), '2');
  const second = await expectDropout(page);
  assert.notDeepEqual(Array.from(second.r.dropoutMask.data), Array.from(first.r.dropoutMask.data));
  // p = 0: nothing dropped, rows sum to 1.
  await typeInto(page, section.locator('input[data-field="drop-p"]'), '0');
  await page.keyboard.press('Enter');
  const none = await expectDropout(page);
  assert.equal((await texts(page, 'drop-count'))[0], '0');
  assert.ok(none.r.stats.maxRowSumError < 1e-6, `p = 0: the core's row-sum error is ${none.r.stats.maxRowSumError}, want < 1e-6`);
  // p = 1 is out of range: inline message, last valid state kept.
  await typeInto(page, section.locator('input[data-field="drop-p"]'), '1');
  await page.keyboard.press('Enter');
  assert.equal(await section.locator('input[data-field="drop-p"]').getAttribute('aria-invalid'), 'true');
  await expectDropout(page, { 'drop-p': 0 });
  // The largest seed, written 1e3-style or in full, is shown in full: a whole number is never put in scientific notation.
  const seed = section.locator('input[data-field="drop-seed"]');
  await typeInto(page, seed, '2147483647');
  await page.keyboard.press('Enter');
  assert.equal(await seed.inputValue(), '2147483647');
  await expectDropout(page, { 'drop-p': 0 }); // p still holds the refused 1: the page uses 0
  await typeInto(page, seed, '2147483648');
  assert.match(await section.locator(`#${await seed.getAttribute('aria-describedby').then((ids) => ids.split(' ').pop())}`).textContent(),
    /^Out of range \(0 to 2147483647\): still 2147483647$/, 'the refusal names the range and the value kept in full');
  await page.keyboard.press('Escape');
  assert.equal(await seed.inputValue(), '2147483647', 'Escape puts the kept value back, in full');
  assert.equal(await seed.getAttribute('enterkeyhint'), 'done', 'a phone keyboard offers Done: Enter ends the edit');
  assertClean(problems, 'dropout');
  await page.context().close();
});

test('dropout at p = 0.95: the check\'s band is narrow enough to mean something, and says so', async () => {
  const { page, problems } = await suite.open('#dropout');
  const section = page.locator('#dropout');
  await typeInto(page, section.locator('input[data-field="drop-p"]'), '0.95');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('#dropout [aria-busy="true"]').length === 0);
  const verdict = section.locator('[data-check="drop-expected"]');
  const bands = await texts(page, 'drop-band');
  assert.equal(bands.length, 1, `the verdict names no expected spread around 1: "${await verdict.textContent()}"`);
  const band = Number(bands[0]);
  // A wrong scale (no 1/(1 − p)) would put the mean at 0.05: a band of 0.2 tells the two apart.
  assert.ok(band <= 0.2, `the band around 1 at p = 0.95 is ±${band}, wider than 0.2: the check would pass almost anything`);
  const { mean } = await expectDropout(page);
  const off = Math.max(...Array.from(mean, (m) => Math.abs(m - 1)));
  assert.ok(off <= band, `the core's mean row sums are off by ${off}, outside the band ±${band}`);
  assert.equal(await verdict.getAttribute('data-passed'), 'true');
  assert.match(await verdict.textContent(), new RegExp(`expected within ±${band.toFixed(4).replace('.', '\\.')} of 1`), 'the verdict states the expected spread');
  assertClean(problems, 'dropout band');
  await page.context().close();
});

test('dropout: the colour legend\'s ends are written as the page writes numbers', async () => {
  const { page, problems } = await suite.open('#dropout');
  const section = page.locator('#dropout');
  // Query 2 puts almost all its weight on one key; dropout at p = 0.5 doubles it: an end that is not a whole number.
  const set = async (grid, row, col, value) => {
    await typeInto(page, section.locator(`[data-grid="${grid}"] input[data-row="${row}"][data-col="${col}"]`), value);
    await page.keyboard.press('Enter');
  };
  await set('drop-q', 0, 0, '0');
  await set('drop-q', 0, 1, '0');
  await set('drop-q', 1, 0, '0');
  await set('drop-q', 1, 1, '20');
  await set('drop-k', 0, 0, '0');
  await set('drop-k', 0, 1, '0');
  await typeInto(page, section.locator('input[data-field="drop-p"]'), '0.5');
  await page.keyboard.press('Enter');
  await typeInto(page, section.locator('input[data-field="drop-seed"]'), '4');
  await page.keyboard.press('Enter');
  const { r } = await expectDropout(page);
  const top = Math.max(1, ...r.weights.data);
  assert.ok(!Number.isInteger(top), `the example's largest weight ${top} is not whole`);
  const ends = await section.locator('.ramp-legend .ramp-end').allTextContents();
  assert.equal(ends.length, 2);
  const long = ends.filter((t) => !/^-?\d+(\.\d{1,3})?$/.test(t));
  assert.deepEqual(long, [], `legend ends with more than 3 decimals (${ends.join(' … ')})`);
  assert.equal(ends[0], '0');
  assert.ok(Math.abs(Number(ends[1]) - top) <= 0.0005 + 1e-6, `the legend's top ${ends[1]}, the largest weight ${top}`);
  assertClean(problems, 'dropout legend');
  await page.context().close();
});

// ---------------------------------------------------------------------------
// The KV cache
// ---------------------------------------------------------------------------

/**
 * A count as the page must show it: every digit, never grouped (the counts
 * here stay below 1e9, where the page would turn to scientific notation).
 */
const countText = (n) => {
  assert.ok(Number.isInteger(n) && n < 1e9, `a count of multiply-adds the page prints exactly: ${n}`);
  return String(n);
};

/** The KV cache section against the module's cached decoding and its full causal pass. */
async function expectKv(page, { step, stale }) {
  const x = await readGrid(page, 'kv-x');
  const seed = Number(await page.locator('input[data-field="kv-seed"]').inputValue());
  const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2, rope: true, seed });
  try {
    const full = mha.forward([x], { causal: true });
    const weights = [[], []];
    const outputs = [];
    let cache = null;
    for (let t = 0; t < step; t++) {
      // Through the cache either way, with the right offsets; the stale mistake is the core's bug.
      const r = mha.forward([[x[t]]], { cache, useCache: true, causal: true, bug: stale ? 'stale-cache-offset' : null });
      cache = r.cache;
      if (stale) {
        // Placed at position 0, each query sees key 1 only.
        for (let head = 0; head < 2; head++) {
          assert.deepEqual(Array.from(r.weights.data.slice(head * (t + 1), (head + 1) * (t + 1))), [1, ...new Array(t).fill(0)], `stale step ${t + 1}, head ${head + 1}`);
        }
      }
      for (let head = 0; head < 2; head++) weights[head].push(...r.weights.data.slice(head * (t + 1), (head + 1) * (t + 1)));
      outputs.push(...r.output.data);
    }
    for (let head = 0; head < 2; head++) checkShown(`head ${head + 1} weights`, await texts(page, `kv-w${head}`), weights[head], 3);
    const diff = Math.max(...outputs.map((o, i) => Math.abs(o - full.output.data[i])));
    checkShown('max difference', await texts(page, 'kv-diff'), [diff], diff < 1e-3 ? 6 : 4);
    assert.equal((await texts(page, 'kv-cache-shape'))[0], `(1, 2, ${step}, 2)`);
    // The multiply-adds are the core's count of the two calls the page times:
    // the step with the cache of the tokens before it, and recomputing them all.
    const prefix = step > 1 ? mha.forward([x.slice(0, step - 1)], { useCache: true, causal: true }).cache : null;
    mha.forward([[x[step - 1]]], { cache: prefix, useCache: true, causal: true, queryPositionOffset: step - 1, needWeights: false });
    const cachedMadds = lab.lastCallMadds();
    mha.forward([x.slice(0, step)], { causal: true, needWeights: false });
    const fullMadds = lab.lastCallMadds();
    // By hand (dModel 4, 2 heads of width 2): 4 projections of one token, and
    // one row of scores and mix over `step` keys; recomputing, `step` tokens.
    assert.equal(cachedMadds, 4 * 16 + 2 * step * 4, `the core's count of the cached step ${step}`);
    assert.equal(fullMadds, 4 * step * 16 + 2 * step * step * 4, `the core's count of recomputing ${step} tokens`);
    assert.equal((await texts(page, 'kv-madds-cached'))[0], countText(cachedMadds), 'multiply-adds with the cache');
    assert.equal((await texts(page, 'kv-madds-full'))[0], countText(fullMadds), 'multiply-adds recomputing');
    // The times per call are measured once the edit's frame is painted: a number in each row, soon.
    await page.waitForFunction(() => [...document.querySelectorAll('[data-measured="kv-work"] tbody td:last-child')]
      .every((td) => /^\d+\.\d$/.test(td.textContent)), null, { timeout: 10000 });
    return diff;
  } finally {
    mha.free();
  }
}

test('KV cache: one row of scores per step, equal to one full causal pass; a stale offset breaks it', async () => {
  const { page, problems } = await suite.open('#kv-cache');
  const section = page.locator('#kv-cache');
  let diff = await expectKv(page, { step: 3, stale: false });
  assert.ok(diff <= 1e-5, `token 3: cached and full outputs differ by ${diff} in the core, want <= 1e-5`);
  assert.equal(await section.locator('[data-check="kv-equal"]').getAttribute('data-passed'), 'true');
  await section.locator('button[data-field="kv-next"]').focus();
  await page.keyboard.press('Enter');
  await page.keyboard.press('Enter');
  assert.equal((await texts(page, 'kv-step'))[0], 'Token 5 of 5');
  diff = await expectKv(page, { step: 5, stale: false });
  assert.equal(await section.locator('[data-check="kv-equal"]').getAttribute('data-passed'), 'true');
  // The stale offset: the equality breaks, visibly.
  await section.locator('input[data-field="kv-stale"]').focus();
  await page.keyboard.press('Space');
  diff = await expectKv(page, { step: 5, stale: true });
  assert.ok(diff > 1e-3, `the stale offset changes the outputs (${diff})`);
  assert.equal(await section.locator('[data-check="kv-equal"]').getAttribute('data-passed'), 'false');
  const shownDiff = (await texts(page, 'kv-diff'))[0];
  assert.ok(Number(shownDiff.replace('−', '-')) > 1e-3, `the page shows a max difference above 1e-3: "${shownDiff}"`);
  assert.match(await section.locator('[data-slot="cache"] .readout').textContent(), /stale-offset bug/, 'the readout says the core\'s bug is on');
  // The keys the bug hides look blocked, as in every map: all but key 1 from step 2 on.
  const hiddenLook = () => section.locator('[data-slot="cache"] td:has([data-out^="kv-w"])').evaluateAll((tds) => tds.map((td) => td.classList.contains('blocked')).join(''));
  const hiddenKeys = (step) => Array.from({ length: step }, (_, j) => String(step > 1 && j > 0)).join('');
  assert.equal(await hiddenLook(), [1, 2, 3, 4, 5].map(hiddenKeys).join('').repeat(2), 'with the stale offset, keys after token 1 are drawn blocked');
  assert.match(await section.locator('[data-slot="cache"] td.blocked').first().textContent(), /^0 \(hidden by the causal rule\)$/);
  assert.match(await section.textContent(), /stale-cache-offset/, 'the words name the core\'s bug');
  await page.keyboard.press('Space');
  await page.waitForFunction(() => !document.querySelector('#kv-cache [data-slot="cache"] td.blocked'), null, { timeout: 30000 });
  // Edit a token and the seed by keyboard.
  await typeInto(page, section.locator('[data-grid="kv-x"] input[data-row="1"][data-col="2"]'), '-2');
  await page.keyboard.press('Enter');
  await typeInto(page, section.locator('input[data-field="kv-seed"]'), '11');
  await page.keyboard.press('Enter');
  await expectKv(page, { step: 5, stale: false });
  assert.equal(await section.locator('[data-check="kv-equal"]').getAttribute('data-passed'), 'true');
  assertClean(problems, 'kv cache');
  await page.context().close();
});

test('KV cache: a size where the times mean something backs the prose; at token 1 the words fit one token', async () => {
  const { page, problems } = await suite.open('#kv-cache');
  const section = page.locator('#kv-cache');
  const long = section.locator('[data-measured="kv-work-long"]');
  assert.equal(await long.count(), 1, 'the page times the cached step against recomputing on a size where the arithmetic dominates');
  assert.match(await long.locator('caption').textContent(), /token 256 of 256, d_model = 64, 4 heads/);
  // The timing starts when the table comes near the viewport.
  await long.scrollIntoViewIfNeeded();
  await page.waitForFunction(() => [...document.querySelectorAll('[data-measured="kv-work-long"] tbody td:last-child')]
    .every((td) => /^\d+\.\d$/.test(td.textContent)), null, { timeout: 20000 });
  // The multiply-adds are the core's count of the same two calls, run here.
  const mha = lab.createMultiHeadAttention({ dModel: 64, numHeads: 4, rope: true, seed: 1 });
  const x = Array.from({ length: 256 }, (_, i) => Array.from({ length: 64 }, (_, j) => Math.sin(0.37 * (i * 64 + j))));
  const prefix = mha.forward([x.slice(0, 255)], { causal: true, needWeights: false, useCache: true }).cache;
  mha.forward([[x[255]]], { causal: true, needWeights: false, cache: prefix, useCache: true });
  const cachedMadds = lab.lastCallMadds();
  mha.forward([x], { causal: true, needWeights: false });
  const fullMadds = lab.lastCallMadds();
  mha.forward([x], { causal: false, needWeights: false });
  const pairsMadds = lab.lastCallMadds();
  mha.free();
  // By hand, token 256 of width 64 in 4 heads of 16: with the cache
  // 4·64² + 2·256·64; recomputing 4·256·64² for the projections, 256²·64 for
  // the scores, and the mix without the tiles the causal rule hides from a
  // whole block of 16 queries: keys 128..255 for queries 0..127, (256² − 128²)·64.
  assert.equal(cachedMadds, 4 * 64 ** 2 + 2 * 256 * 64, 'the core\'s count of the cached step');
  assert.equal(fullMadds, 4 * 256 * 64 ** 2 + 256 ** 2 * 64 + (256 ** 2 - 128 ** 2) * 64, 'the core\'s count of recomputing');
  assert.equal((await texts(page, 'kv-long-madds-cached'))[0], countText(cachedMadds), 'long example, with the cache');
  assert.equal((await texts(page, 'kv-long-madds-full'))[0], countText(fullMadds), 'long example, recomputing');
  assert.match(await section.textContent(), /the core computes every score, but skips the weighted sum over a tile of keys that a whole block of queries may not see/,
    'the prose says why recomputing counts fewer than every pair');
  // The words compare recomputing with a pass over every pair: the count
  // they name is the core's, and the comparison holds on the exact counts.
  assert.equal((await texts(page, 'kv-long-madds-pairs'))[0], countText(pairsMadds), 'the pass over every pair the words compare with');
  assert.ok(fullMadds < pairsMadds, `recomputing with the causal rule counts ${fullMadds}, every pair ${pairsMadds}: the words say fewer`);
  assert.match(await section.textContent(), new RegExp(`at 256 tokens it does fewer multiply-adds than the ${pairsMadds} of the same call without the causal rule, a pass over every pair of tokens`));
  const [cached, full] = (await long.locator('tbody td:last-child').allTextContents()).map(Number);
  // The note says what these two times show (no speed is asserted here: times belong to the bench).
  const note = await section.locator('[data-measured="kv-time-note"]').textContent();
  if (full > cached) assert.match(note, new RegExp(`recomputing took ${(full / cached).toFixed(1).replace('.', '\\.')} times as long`), `${cached} µs vs ${full} µs: ${note}`);
  else assert.match(note, /did not show the cache ahead/, `${cached} µs vs ${full} µs: ${note}`);
  assert.match(await section.textContent(), /At this section’s size \(5 tokens, d_model = 4\) a call does so little arithmetic that its fixed cost/, 'the tiny example\'s times are explained');
  // Token 1: one token, in the singular.
  await section.locator('button[data-field="kv-prev"]').click();
  await section.locator('button[data-field="kv-prev"]').click();
  await expectKv(page, { step: 1, stale: false });
  const check = await section.locator('[data-check="kv-equal"]').textContent();
  assert.ok(!/Tokens 1 to 1\b/.test(check), `at token 1: ${check}`);
  assert.match(check, /^✓ Token 1, decoded on its own, equals one full causal pass/);
  assertClean(problems, 'kv cache timing');
  await page.context().close();
});

// ---------------------------------------------------------------------------
// What T² costs
// ---------------------------------------------------------------------------

test('what T² costs: the core\'s memory figure per T on both paths, slopes 2 and 1 asserted', async () => {
  const { page, problems } = await suite.open('#t-squared');
  const section = page.locator('#t-squared');
  const check = async (maxT, d) => {
    // Measuring runs after the edit, one call per task; the check appears when it is done.
    await section.locator('[data-check="cost-slopes"]').waitFor({ timeout: 60000 });
    assert.equal(await section.locator('.measuring').count(), 0);
    const lengths = [];
    for (let T = 64; T <= maxT; T *= 2) lengths.push(T);
    const want = { weights: [], tiled: [] };
    for (const T of lengths) {
      const x = { data: Float32Array.from({ length: T * d }, (_, i) => Math.sin(0.37 * i)), shape: [T, d] };
      lab.sdpa(x, x, x);
      want.weights.push(lab.lastCallBytes() / 2 ** 20);
      lab.sdpaTiled(x, x, x);
      want.tiled.push(lab.lastCallBytes() / 2 ** 20);
    }
    checkShown('memory with weights', await texts(page, 'cost-mem-weights'), want.weights, 3);
    checkShown('memory tiled', await texts(page, 'cost-mem-tiled'), want.tiled, 3);
    const n = lengths.length;
    const slope = (ys) => Math.log(ys[n - 1] / ys[n - 2]) / Math.log(2);
    checkShown('slope with weights', await texts(page, 'cost-slope-weights'), [slope(want.weights)], 2);
    checkShown('slope tiled', await texts(page, 'cost-slope-tiled'), [slope(want.tiled)], 2);
    assert.equal(await section.locator('[data-check="cost-slopes"]').getAttribute('data-passed'), 'true');
    assert.equal(await section.locator('svg.chart').count(), 2);
    // The dashed T² line stays between the chart's top and bottom gridlines.
    const outside = await section.locator('svg.chart').evaluateAll((charts) => charts.flatMap((svg, n) => {
      const ys = [...svg.querySelectorAll('line.gridline')].map((g) => Number(g.getAttribute('y1')));
      const [top, bottom] = [Math.min(...ys), Math.max(...ys)];
      const line = svg.querySelector('line.cost-slope-line');
      return ['y1', 'y2'].map((a) => Number(line.getAttribute(a)))
        .filter((y) => y < top - 0.5 || y > bottom + 0.5).map((y) => `chart ${n + 1}: the line reaches y = ${y.toFixed(1)}, the plot spans ${top.toFixed(1)} to ${bottom.toFixed(1)}`);
    }));
    assert.deepEqual(outside, [], 'the T² line leaves the plot');
  };
  await check(1024, 64);
  await section.locator('select[data-field="cost-max"]').selectOption('2048');
  await typeInto(page, section.locator('input[data-field="cost-d"]'), '32');
  await page.keyboard.press('Enter');
  await check(2048, 32);
  assertClean(problems, 'T² costs');
  await page.context().close();
});

// ---------------------------------------------------------------------------
// Watching the invariants
// ---------------------------------------------------------------------------

/** The weights map's numbers by row, with null for a blocked cell. */
const weightRows = (page, name) => page.$$eval(`[data-heatmap="${name}"] .hm-cell:not(.hm-extra)`, (ns) => {
  const rows = [];
  for (const n of ns) (rows[Number(n.dataset.row)] ??= [])[Number(n.dataset.col)] = n.classList.contains('blocked') ? null : Number(n.textContent);
  return rows;
});

test('watching the invariants: the max-score note agrees with how peaked the weights map is', async () => {
  const { page, problems } = await suite.open('#observability');
  const section = page.locator('#observability');
  for (const mult of ['20', '1', '10', '0.5']) {
    await typeInto(page, section.locator('input[data-field="obs-mult"]'), mult);
    await page.keyboard.press('Enter');
    // The largest weight of a row that has more than one key to choose from, as the map shows it.
    const rows = await weightRows(page, 'obs-weights');
    const peak = Math.max(...rows.map((r) => r.filter((w) => w !== null)).filter((r) => r.length > 1).map((r) => Math.max(...r)));
    const note = await section.locator('[data-out="obs-maxscore"] + .hint').textContent();
    const oneHot = peak >= 0.99;
    assert.equal(/^Large/.test(note), oneHot, `Q × ${mult}: the map's peak weight is ${peak}, the note says "${note}"`);
    assert.ok(note.includes(peak.toFixed(3)), `Q × ${mult}: the note names the peak weight ${peak.toFixed(3)}: "${note}"`);
    // A row with one allowed key shows 1.000 whatever the scores: a note that
    // caps the weights below that must say those rows are forced.
    const forced = rows.map((r, i) => (r.filter((w) => w !== null).length === 1 ? i + 1 : null)).filter((i) => i !== null);
    if (!oneHot) {
      for (const q of forced) {
        assert.match(note, new RegExp(`quer(y|ies) [0-9, and]*\\b${q}\\b[0-9, and]* sees? only one key`),
          `Q × ${mult}: query ${q} shows 1.000 on its only key, above the ${peak.toFixed(3)} the note caps the map at, and the note does not say why: "${note}"`);
      }
    }
  }
  assertClean(problems, 'observability');
  await page.context().close();
});

// ---------------------------------------------------------------------------
// Mask conventions
// ---------------------------------------------------------------------------

test('mask conventions: the refused-row note speaks only of rows that exist', async () => {
  const { page, problems } = await suite.open('#conventions');
  const section = page.locator('#conventions');
  const note = () => section.locator('[data-out="conv-refused"]').textContent();
  await typeInto(page, section.locator('input[data-field="conv-t"]'), '1');
  await page.keyboard.press('Enter');
  let text = await note();
  assert.match(text, /^query 1 is marked ⚠/);
  assert.ok(!/other rows/.test(text), `T = 1 has no other rows: ${text}`);
  assert.match(text, /No row is left to compute\./);
  await typeInto(page, section.locator('input[data-field="conv-t"]'), '2');
  await page.keyboard.press('Enter');
  text = await note();
  assert.match(text, /^query 2 is marked ⚠/);
  assert.match(text, /The one other row is computed/, `T = 2: ${text}`);
  assertClean(problems, 'conventions');
  await page.context().close();
});

// ---------------------------------------------------------------------------
// The prose after a learner's edit: what it says about the numbers stays true
// ---------------------------------------------------------------------------

test('online softmax: with a large value the two results differ in the last digits shown, and no sentence calls them exactly equal', async () => {
  const { page, problems } = await suite.open('#view=online-softmax&flash.step=3&flash.v=100000,1;0.1,0.3;1,1;2,0;0,2;1,-1');
  const section = page.locator('#online-softmax');
  const [tiled] = await texts(page, 'flash-tiled');
  const [plain] = await texts(page, 'flash-plain');
  assert.notEqual(tiled, plain, 'float rounding shows in the digits: the example is the one meant');
  assert.equal(await section.locator('[data-check="flash-equal"]').getAttribute('data-passed'), 'true');
  const said = [...await section.locator(':scope > p').allTextContents(), await section.locator('[data-check="flash-equal"]').textContent()];
  for (const s of said) {
    assert.doesNotMatch(s, /exactly softmax|✓ Equal:/, `the page shows ${tiled} and ${plain}, yet says: "${s}"`);
  }
  assertClean(problems, 'online softmax, rounding');
  await page.context().close();
});

test('KV cache: the starting example differs from the full pass by float rounding, and no sentence calls them exactly equal', async () => {
  const { page, problems } = await suite.open('#kv-cache');
  const section = page.locator('#kv-cache');
  const [diff] = await texts(page, 'kv-diff');
  assert.notEqual(Number(diff.replace('−', '-')), 0, `the shown difference is ${diff}`);
  const said = [...await section.locator(':scope > p').allTextContents(), await section.locator('[data-check="kv-equal"]').textContent()];
  for (const s of said) {
    assert.doesNotMatch(s, /exactly those of|equal one full causal pass:/, `the largest difference shown is ${diff}, yet the page says: "${s}"`);
  }
  assertClean(problems, 'KV cache, rounding');
  await page.context().close();
});

test('dropout: the p the sentences name is the p typed, and a weight of 0 is not called a dropped one when the softmax gave it', async () => {
  // p = 0.125: two decimals would show 0.13. Query 1 = (1000, 0) gives keys 2 and 4 a weight of 0 before any drop.
  const { page, problems } = await suite.open('#view=dropout&drop.p=0.125&drop.q=1000,0;0,1;1,1;2,-1&drop.seed=3');
  const section = page.locator('#dropout');
  const { r } = await expectDropout(page);
  const caption = await section.locator('[data-slot="weights"] table caption').textContent();
  const verdict = await section.locator('[data-check="drop-expected"]').textContent();
  for (const s of [caption, verdict]) assert.match(s, /p = 0\.125\b/, `the learner typed p = 0.125: "${s}"`);
  const zeros = Array.from(r.weights.data).filter((w) => w === 0).length;
  const dropped = r.dropoutMask.data.filter((x) => x === 0).length;
  assert.ok(zeros > dropped, `more weights are 0 (${zeros}) than were dropped (${dropped}): the example is the one meant`);
  assert.doesNotMatch(caption, /a 0 is a dropped weight/, `${zeros} weights are 0 but ${dropped} were dropped, yet the caption says: "${caption}"`);
  assertClean(problems, 'dropout, p and zeros');
  await page.context().close();
});

test('mask conventions: when the allowed mask itself warns, the note does not say that nothing warns', async () => {
  // An allowed mask of zeros: read the wrong way round every key is open (no refusal), while the diagonal check warns.
  const { page, problems } = await suite.open('#view=conventions&conv.allowed=0000;0000;0000;0000');
  const section = page.locator('#conventions');
  const diagonal = await section.locator('[data-out="conv-diagonal"]').textContent();
  assert.match(diagonal, /^⚠/);
  const note = await section.locator('[data-out="conv-refused"]').textContent();
  assert.doesNotMatch(note, /nothing warns/, `the line above warns ("${diagonal}"), yet the note says: "${note}"`);
  assert.match(note, /no error/);
  assertClean(problems, 'conventions, warnings');
  await page.context().close();
});

test('watching the invariants, padded example: the max-score note speaks of the sequence the map shows', async () => {
  // Sequence 1 is one real token then padding: under causal AND padding every
  // query of it sees key 1 only. Sequence 2 is all real, so its rows do choose.
  const { page, problems } = await suite.open('#view=observability&obs.src=padding&mask.tokens=12,0,0,0,0;44,17,29,81,5');
  const section = page.locator('#observability');
  const rows = await weightRows(page, 'obs-weights');
  assert.ok(rows.every((r) => r.filter((w) => w !== null).length === 1), 'the map of sequence 1 has one allowed key per row');
  const note = await section.locator('[data-out="obs-maxscore"] + .hint').textContent();
  assert.doesNotMatch(note, /more than 0\.\d+ on one key|puts 0\.\d+ of its weight/,
    `every row of the map shows 1.000 on its only key, yet the note says: "${note}"`);
  assert.match(note, /sequence 1/, `the map is sequence 1 alone; the note should say which sequence it reads: "${note}"`);
  assertClean(problems, 'observability, padded');
  await page.context().close();
});

test('rotary: when float rounding moves the shifted score, the check does not say it keeps the score', async () => {
  // Entries of a million cancel in the dot product: float32 rounding leaves
  // scores of tens of thousands that differ from one pair of positions to the next.
  const { page, problems } = await suite.open('#view=rotary&rope.q=1000000,1000000,1,0&rope.k=1000000,-1000000,0,1&rope.pq=3&rope.pk=3&rope.shift=5');
  const check = page.locator('#rotary [data-check="rope-shift-both"]');
  assert.equal(await check.getAttribute('data-passed'), 'false', 'the shifted score moved by more than the check allows');
  const text = await check.textContent();
  assert.doesNotMatch(text, /keeps the score/, `the two scores differ, yet the check says: "${text}"`);
  assert.match(text, /rounding/, `the check says why the scores differ: "${text}"`);
  // With the default inputs it passes and says so.
  await typeInto(page, page.locator('[data-grid="rope-q"] input[data-col="0"]'), '1');
  await typeInto(page, page.locator('[data-grid="rope-q"] input[data-col="1"]'), '0.5');
  await typeInto(page, page.locator('[data-grid="rope-k"] input[data-col="0"]'), '0.8');
  await typeInto(page, page.locator('[data-grid="rope-k"] input[data-col="1"]'), '-1');
  assert.equal(await check.getAttribute('data-passed'), 'true');
  assert.match(await check.textContent(), /^✓ Shifting both positions by 5 keeps the score/);
  assertClean(problems, 'rotary, rounding');
  await page.context().close();
});

test('what T² costs: when the measured slope is not near 2, the check says why rather than only ✗', async () => {
  // At T = 256 to 512 with d = 64 the inputs and output (T × d each) still
  // weigh much beside the T × T weights: the slope comes out well under 2.
  const { page, problems } = await suite.open('#view=t-squared&cost.maxT=512&cost.d=64');
  const check = page.locator('#t-squared [data-check="cost-slopes"]');
  await check.waitFor({ timeout: 60000 });
  assert.equal(await check.getAttribute('data-passed'), 'false', 'the slope with the weights is under 1.7');
  const text = await check.textContent();
  assert.match(text, /T × d/, `the prose says the weights grow as T², the check shows a smaller slope and does not say why: "${text}"`);
  assertClean(problems, 'T², small sizes');
  await page.context().close();
});

test('rotary and KV cache: beside each 0-based position the page says which 1-based token it is', async () => {
  const { page, problems } = await suite.open('#rotary');
  const note = async (where) => {
    const n = await page.locator('[data-out="rope-tokens"]').count();
    assert.ok(n === 1, `${where}: no note beside the position fields says which token a position is`);
    return page.locator('[data-out="rope-tokens"]').textContent();
  };
  for (const [pq, pk] of [[5, 2], [0, 11]]) {
    await typeInto(page, page.locator('input[data-field="rope-pq"]'), String(pq));
    await typeInto(page, page.locator('input[data-field="rope-pk"]'), String(pk));
    await page.waitForFunction(([a, b]) => {
      const t = document.querySelector('[data-out="rope-tokens"]')?.textContent ?? '';
      return t.includes(`position ${a} is token`) && t.includes(`position ${b} is token`);
    }, [pq, pk], { timeout: 30000 }).catch(() => {});
    const text = await note(`positions ${pq}, ${pk}`);
    assert.match(text, /position 0 is token 1/, `the note says position 0 is token 1: "${text}"`);
    assert.ok(text.includes(`query at position ${pq} is token ${pq + 1}`), `query at position ${pq} is token ${pq + 1}; the note reads "${text}"`);
    assert.ok(text.includes(`key at position ${pk} is token ${pk + 1}`), `key at position ${pk} is token ${pk + 1}; the note reads "${text}"`);
  }
  assertClean(problems, 'rotary: positions and tokens');
  await page.context().close();
  const kv = await suite.open('#kv-cache');
  const section = kv.page.locator('#kv-cache');
  for (let step = 3; step >= 1; step--) {
    if (step < 3) await section.locator('button[data-field="kv-prev"]').click();
    await kv.page.waitForFunction((n) => document.querySelector('[data-out="kv-step"]')?.textContent === `Token ${n} of 5`, step);
    const offset = await texts(kv.page, 'kv-offset');
    assert.deepEqual(offset, [String(step - 1)], `at token ${step} the readout names the offset passed, ${step - 1}; it shows ${JSON.stringify(offset)}`);
    const readout = await section.locator('[data-slot="cache"] .readout').textContent();
    assert.ok(readout.includes(`token ${step} was passed offset ${step - 1} (position 0 is token 1)`), `at token ${step}: "${readout}"`);
  }
  const prose = (await section.locator(':scope > p').allTextContents()).join(' ');
  assert.match(prose, /positions count from 0: token t stands at position t − 1/, 'the prose pairs tokens and positions');
  assertClean(kv.problems, 'KV cache: positions and tokens');
  await kv.context.close();
});

// ---------------------------------------------------------------------------
// Masks and watching the invariants: references to other sections, refusals
// in the part's own words, and a control that has no effect in a mode
// ---------------------------------------------------------------------------

/**
 * The lesson page as a package of `sections` only (dist.mjs writes them into
 * <main data-sections>), served from web/ like the full page.
 */
async function openPackage(sections, hash = '') {
  const session = await openPage(suite.browser, suite.server.url);
  await session.page.route((url) => url.pathname === '/', async (route) => {
    const response = await route.fetch();
    const body = (await response.text()).replace('<main id="lesson">', `<main id="lesson" data-sections="${sections}">`);
    assert.match(body, /data-sections=/, 'web/index.html no longer has <main id="lesson">');
    await route.fulfill({ response, body });
  });
  await session.page.goto(`${suite.server.url}${hash}`);
  await session.page.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
  return session;
}

const obsOptions = (page) => page.$$eval('select[data-field="obs-src"] option', (ns) => ns.map((n) => n.textContent));
const masksProse = async (page) => (await page.locator('#masks').textContent()).match(/applied to the 3×3 example[^.]*\./)?.[0];

test('masks and watching the invariants name another section by its number only where it is shown', async () => {
  // The whole lesson: the numbers are the registry's.
  const { page, problems } = await suite.open('#observability');
  const masks = sectionName('masks');
  assert.match(masks, /^section \d+$/);
  assert.equal(await page.locator('#masks .sec-num').textContent(), masks.replace('section ', ''), 'the masks heading shows the number the text uses');
  assert.deepEqual((await obsOptions(page)).slice(2), [
    `The 3×3 example with the custom mask of ${masks}`, `The two padded sequences of ${masks}, causal AND padding`]);
  assert.equal(await masksProse(page), `applied to the 3×3 example of ${sectionName('three-by-three')}.`);
  assertClean(problems, 'full lesson');
  await page.context().close();

  // A package without the masks section, and one without the 3×3 example: no number that points nowhere.
  const obs = await openPackage('observability');
  const options = await obsOptions(obs.page);
  assert.deepEqual(options.slice(2), ['The 3×3 example with the custom mask', 'The two padded sequences, causal AND padding'],
    `the package has no masks section: ${JSON.stringify(options)}`);
  assertClean(obs.problems, 'package: observability');
  await obs.context.close();
  const pkg = await openPackage('masks,observability');
  assert.equal(await masksProse(pkg.page), 'applied to the 3×3 example.', 'the package has no section with the 3×3 example');
  const sections = await pkg.page.$$eval('main > section', (ns) => ns.map((n) => n.id));
  assert.deepEqual(sections, ['masks', 'observability']);
  assert.ok((await obsOptions(pkg.page)).includes(`The 3×3 example with the custom mask of ${masks}`), 'masks is in this package: its number stays');
  assertClean(pkg.problems, 'package: masks, observability');
  await pkg.context.close();

  // A widget shows one section alone.
  const widget = await suite.open('embed.html?preset=observability', { ready: false });
  await widget.page.locator('select[data-field="obs-src"]').waitFor();
  assert.deepEqual((await obsOptions(widget.page)).filter((t) => /section/.test(t)), [], 'a widget has no other sections to point to');
  assertClean(widget.problems, 'widget: observability');
  await widget.context.close();
});

test('masks, padding part: a sequence that starts with padding is refused in the part\'s words (sequence, query; no batch or head)', async () => {
  const { page, problems } = await suite.open('#masks');
  const section = page.locator('#masks');
  await typeInto(page, section.locator('[data-grid="mask-tokens"] input[data-row="1"][data-col="0"]'), '0');
  await page.keyboard.press('Enter');
  const status = section.locator('[data-slot="padding-status"] .core-error');
  await status.waitFor({ state: 'visible' });
  const text = await shownText(status);
  assert.match(text, /^Query row has no allowed key \(sequence 2, query 1\)/, `the padding part shows sequences and no heads: "${text}"`);
  assert.doesNotMatch(text, /batch|head/, `"${text}"`);
  assertClean(problems, 'masks, padding refused');
  await page.context().close();
});

test('watching the invariants: a refused row says where to fix it; the multiplier is disabled, with its reason, for the padded sequences', async () => {
  const masks = sectionName('masks');
  // The custom mask blocks every key of query 1.
  let { page, problems } = await suite.open('#view=observability&obs.src=custom&mask.custom=000;111;111');
  let text = await shownText(page.locator('#observability [data-slot="status"] .core-error'));
  assert.match(text, new RegExp(`^Query row has no allowed key \\(query 1\\): every key of query 1 is blocked by the custom mask of ${masks} — allow one there`),
    `the refusal says where to fix it: "${text}"`);
  assertClean(problems, 'observability, custom refused');
  await page.context().close();
  // Sequence 2 starts with padding.
  ({ page, problems } = await suite.open('#view=observability&obs.src=padding&mask.tokens=12,91,33,0,0;0,17,29,81,5'));
  const section = page.locator('#observability');
  text = await shownText(section.locator('[data-slot="status"] .core-error'));
  assert.match(text, new RegExp(`^Query row has no allowed key \\(sequence 2, query 1\\): .*change the token ids of sequence 2 in ${masks}`),
    `the refusal names the sequence and where to fix it: "${text}"`);
  assert.doesNotMatch(text, /batch|head/, `"${text}"`);

  // The padded sequences' queries are zeros: "Multiply Q by" changes nothing there, so it is disabled and says why.
  const mult = section.locator('input[data-field="obs-mult"]');
  const hint = () => shownText(section.locator('[data-slot="controls"] .field:has(input[data-field="obs-mult"]) .hint'));
  assert.equal(await mult.isDisabled(), true, 'the multiplier is disabled for the padded sequences');
  assert.match(await hint(), /Not used by the two padded sequences/);
  // Chosen by keyboard: another example enables it again, and its hint is back.
  await section.locator('select[data-field="obs-src"]').focus();
  await page.keyboard.press('ArrowUp');
  await page.waitForFunction(() => !document.querySelector('input[data-field="obs-mult"]').disabled);
  assert.equal(await section.locator('select[data-field="obs-src"]').inputValue(), 'custom');
  assert.match(await hint(), /Scales the 3×3 example’s queries/);
  await page.keyboard.press('ArrowDown');
  await page.waitForFunction(() => document.querySelector('input[data-field="obs-mult"]').disabled);
  // Tab from the example goes past the disabled field.
  await page.keyboard.press('Tab');
  assert.notEqual(await page.evaluate(() => document.activeElement?.dataset.field), 'obs-mult', 'a disabled field takes no focus');
  await runAxe(page, 'observability, padded sequences', { include: '#observability' });
  assertClean(problems, 'observability, padded');
  await page.context().close();
});
