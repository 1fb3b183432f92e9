// The lesson page (web/index.html) in Debian's Chromium.
//
// Every number the page shows is checked against the wasm core run here in
// Node (web/attention.js) on the inputs read back from the page. Edits are
// made by typing at the keyboard. Also checked: inline messages for invalid
// text and for the core's errors, the URL-hash state (round trip and hostile
// hashes), axe-core, console errors, foreign requests; with SCREENSHOTS set,
// screenshots of every section at 1280 px and 390 px (tests/screenshots/, git-ignored).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  browserSuite, assertClean, typeInto, runAxe, waitForLesson, checkShown, screenshot, renderEverySection, openPage, settled, resizeTo, waitForState } from './helpers/browser.mjs';
import {
  loadAttention, paddingMask, blockedFromAllowed, additiveFromAllowed,
} from '../web/attention.js';
import { fmt, fmtPlain, fmtVec, oneBased, parseNumberText, refusalText, TYPING_PAUSE } from '../web/lesson-ui.js';
import { codec, readHash } from '../web/lesson-state.js';
import { SECTIONS, VIEW_IDS, sectionNumber } from '../web/sections/registry.js';
import { EX_DEFAULTS } from '../web/sections/three-by-three.js';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const SECTION_IDS = ['one-query', 'three-by-three', 'why-scale', 'shapes', 'masks', 'gradients', 'self-cross',
  'multi-head', 'observability', 'conventions', 'quiz'];

let lab;
const suite = browserSuite({ setup: async () => { lab = await loadAttention(); } });

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const open = (hash = '', viewport = { width: 1280, height: 900 }) => suite.open(hash, { viewport });

const heat = (page, name) => page.$$eval(`[data-heatmap="${name}"] .hm-cell:not(.hm-extra)`, (ns) => ns.map((n) => n.textContent));
const heatExtra = (page, name) => page.$$eval(`[data-heatmap="${name}"] .hm-cell.hm-extra`, (ns) => ns.map((n) => n.textContent));
const heatBlocked = (page, name) => page.$$eval(`[data-heatmap="${name}"] .hm-cell:not(.hm-extra)`, (ns) => ns.map((n) => n.classList.contains('blocked')));
const table = (page, name) => page.$$eval(`[data-values="${name}"] td[data-row]`, (ns) => ns.map((n) => n.textContent));
const out = (page, key) => page.locator(`[data-out="${key}"]`).first().textContent();
const gridInput = (page, name, i, j) => page.locator(`[data-grid="${name}"] input[data-row="${i}"][data-col="${j}"]`);
const field = (page, name) => page.locator(`input[data-field="${name}"]`);

/** The numbers currently in an editable grid, read from its inputs. */
async function readGrid(page, name) {
  const cells = await page.$$eval(`[data-grid="${name}"] input`, (ns) => ns.map((n) => [Number(n.dataset.row), Number(n.dataset.col), n.value]));
  const m = [];
  for (const [i, j, v] of cells) (m[i] ??= [])[j] = Number(v);
  return m;
}

/** Pressed states of a mask group's buttons, as nested booleans. */
async function readPressed(page, name) {
  const cells = await page.$$eval(`[data-mask="${name}"] button`, (ns) => ns.map((n) => [Number(n.dataset.row ?? 0), Number(n.dataset.col), n.getAttribute('aria-pressed') === 'true']));
  const m = [];
  for (const [i, j, v] of cells) (m[i] ??= [])[j] = v;
  return m;
}

const T = (m, lead = []) => ({ data: m.flat(), shape: [...lead, m.length, m[0].length] });

// The page's inputs, read back, and the core's answers for them --------------

async function expectSection1(page) {
  const q = await readGrid(page, 'one-q'), k = await readGrid(page, 'one-k'), v = await readGrid(page, 'one-v');
  const first = await page.locator('input[data-field="one-first"]').isChecked();
  const mask = first ? { data: [1, 0], shape: [1, 2] } : undefined;
  const raw = lab.sdpa(q, k, v, { scale: 1, mask });
  const r = lab.sdpa(q, k, v, { mask });
  checkShown('section 1 dot products', [await out(page, 'one-dots')], raw.scores.data, 3);
  checkShown('section 1 scaled scores', [await out(page, 'one-scaled')], r.scores.data, 3);
  checkShown('section 1 weights', [await out(page, 'one-weights')], r.weights.data, 3);
  checkShown('section 1 output', [await out(page, 'one-output')], r.output.data, 3);
  return r;
}

async function exTensors(page) {
  return { q: await readGrid(page, 'ex-q'), k: await readGrid(page, 'ex-k'), v: await readGrid(page, 'ex-v') };
}

async function expectSection2(page) {
  const { q, k, v } = await exTensors(page);
  const r = lab.sdpa(q, k, v);
  const sums = lab.sdpa(q, k, [[1], [1], [1]]).output.data;
  checkShown('section 2 weights', await heat(page, 'ex-weights'), r.weights.data, 4);
  checkShown('section 2 row sums', await heatExtra(page, 'ex-weights'), sums, 4);
  checkShown('section 2 output', await table(page, 'ex-output'), r.output.data, 4);
  checkShown('section 2 scores', await table(page, 'ex-scores'), r.scores.data, 4);
}

async function expectSection3(page) {
  const dk = Number(await page.locator('input[data-field="scale-dk"]').inputValue());
  const seed = Number(await field(page, 'scale-seed').inputValue());
  const keys = Number(await field(page, 'scale-keys').inputValue());
  const s = lab.sampleDotProducts({ dk, count: 4096, seed });
  checkShown(`section 3 variances (dk ${dk})`, [await out(page, 'var-unscaled'), await out(page, 'var-scaled')],
    [s.varianceUnscaled, s.varianceScaled], 2);
  const p = lab.softmaxPeak({ dk, keys, count: 256, seed }); // PEAK_COUNT in web/sections/why-scale.js
  checkShown(`section 3 peak (dk ${dk})`, [await out(page, 'peak-unscaled'), await out(page, 'peak-scaled')],
    [p.meanMaxWeightUnscaled, p.meanMaxWeightScaled], 3);
  return { dk, s };
}

async function expectSection4(page) {
  const [B, H, Tn, D] = await Promise.all(['b', 'h', 't', 'd'].map(async (k) => Number(await field(page, `shape-${k}`).inputValue())));
  const mha = lab.createMultiHeadAttention({ dModel: H * D, numHeads: H, seed: 0 });
  const r = mha.forward({ data: new Float32Array(B * Tn * H * D), shape: [B, Tn, H * D] });
  mha.free();
  const shapes = await page.$$eval('[data-values="shape-table"] td[data-shape]', (ns) => Object.fromEntries(ns.map((n) => [n.dataset.shape, n.textContent])));
  const fmt = (s) => `(${s.join(', ')})`;
  assert.equal(shapes['scores and weights'], fmt(r.weights.shape), 'section 4 weights shape');
  assert.equal(shapes['output after the output projection'], fmt(r.output.shape), 'section 4 output shape');
  assert.equal(shapes['transpose: Q, K, V per head'], fmt([B, H, Tn, D]), 'section 4 per-head shape');
  assert.equal((await out(page, 'shape-count')).replace(/,/g, ''), String(r.weights.data.length), 'section 4 weight count');
  // The lesson's table names the key axis S (source positions), as the weights' last axis.
  const meaning = await page.locator('[data-values="shape-table"] tr:has(td[data-shape="scores and weights"]) td:last-child').textContent();
  assert.match(meaning, /\(B, H, T, S\) with S = T/, `section 4 weights row: "${meaning}"`);
  assert.match(await page.locator('#shapes').textContent(), /S source positions/, 'section 4 says what S is');
}

async function expectSection5(page) {
  const Tc = Number(await field(page, 'mask-ct').inputValue());
  const z = (lead, n) => ({ data: new Float32Array([...lead, n, 1].reduce((a, b) => a * b, 1)), shape: [...lead, n, 1] });
  const tri = { data: Array.from({ length: Tc * Tc }, (_, x) => (x % Tc <= Math.floor(x / Tc) ? 1 : 0)), shape: [Tc, Tc] };
  checkShown('section 5 causal weights', await heat(page, 'mask-causal-weights'), lab.sdpa(z([], Tc), z([], Tc), z([], Tc), { mask: tri }).weights.data, 3);
  const tokens = await readGrid(page, 'mask-tokens');
  const pad = Number(await field(page, 'mask-pad').inputValue());
  const comb = lab.sdpa(z([2, 1], 5), z([2, 1], 5), z([2, 1], 5), { mask: paddingMask(tokens, pad), causal: true }).weights.data;
  checkShown('section 5 combined, sequence 1', await heat(page, 'mask-combined-0'), comb.subarray(0, 25), 3);
  checkShown('section 5 combined, sequence 2', await heat(page, 'mask-combined-1'), comb.subarray(25, 50), 3);
  const custom = await readPressed(page, 'mask-custom');
  const { q, k, v } = await exTensors(page);
  checkShown('section 5 custom mask weights', await heat(page, 'mask-custom-weights'),
    lab.sdpa(q, k, v, { mask: { data: custom.flat(), shape: [3, 3] } }).weights.data, 4);
}

async function expectSection6(page) {
  const cross = await page.locator('[data-field="cross-mode"] input[value="cross"]').isChecked();
  const tgt = await readGrid(page, 'cross-tgt');
  const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2, seed: 3 });
  let r;
  if (cross) {
    const src = await readGrid(page, 'cross-src');
    // A padding switch is pressed for padding; the core's mask is 1 for a real token.
    const pad = (await readPressed(page, 'cross-pad'))[0];
    r = mha.forward(T(tgt, [1]), T(src, [1]), { keyPaddingMask: { data: pad.map((padded) => (padded ? 0 : 1)), shape: [1, src.length] } });
  } else {
    r = mha.forward(T(tgt, [1]));
  }
  mha.free();
  const [, H, Tq, Tk] = r.weights.shape;
  for (let h = 0; h < H; h++) {
    checkShown(`section 6 head ${h + 1}`, await heat(page, `cross-weights-h${h}`), r.weights.data.subarray(h * Tq * Tk, (h + 1) * Tq * Tk), 2);
  }
  checkShown('section 6 output', await table(page, 'cross-output'), r.output.data, 3);
  assert.equal(await out(page, 'cross-wshape'), `(${r.weights.shape.join(', ')})`, 'section 6 weights shape');
  return r;
}

async function expectSection7(page) {
  const num = async (name) => Number(await field(page, name).inputValue());
  const dModel = await num('mha-dmodel'), numHeads = await num('mha-heads'), seed = await num('mha-seed'), size = await num('mha-size');
  const causal = await page.locator('input[data-field="mha-causal"]').isChecked();
  const tokens = (await readGrid(page, 'mha-tokens'))[0];
  const x = new Float32Array(tokens.length * dModel);
  tokens.forEach((id, t) => { x[t * dModel + (id % dModel)] = size; }); // the page's toy one-hot embedding
  const mha = lab.createMultiHeadAttention({ dModel, numHeads, seed });
  const r = mha.forward({ data: x, shape: [1, tokens.length, dModel] }, undefined, { causal });
  mha.free();
  const [, H, Tn] = r.weights.shape;
  for (let h = 0; h < H; h++) {
    checkShown(`section 7 head ${h + 1}`, await heat(page, `mha-weights-h${h}`), r.weights.data.subarray(h * Tn * Tn, (h + 1) * Tn * Tn), 2);
  }
  // The output table is drawn while its disclosure is open, by the section's
  // 'toggle' listener (a task after the change): wait for each closed one's
  // toggle event, whose listener added here runs after the section's.
  await page.evaluate(() => Promise.all([...document.querySelectorAll('details[data-disclosure="mha-output"]')]
    .filter((d) => !d.open)
    .map((d) => new Promise((resolve) => {
      d.addEventListener('toggle', resolve, { once: true });
      d.open = true;
    }))));
  checkShown('section 7 output', await table(page, 'mha-output'), r.output.data, 2);
  await page.evaluate(() => { for (const d of document.querySelectorAll('details[data-disclosure="mha-output"]')) d.open = false; });
  return r;
}

async function expectSection8(page) {
  const src = await page.locator('select[data-field="obs-src"]').inputValue();
  const mult = Number(await field(page, 'obs-mult').inputValue());
  const { q, k, v } = await exTensors(page);
  let r;
  if (src === 'padding') {
    const tokens = await readGrid(page, 'mask-tokens');
    const pad = Number(await field(page, 'mask-pad').inputValue());
    const z = { data: new Float32Array(10), shape: [2, 1, 5, 1] };
    r = lab.sdpa(z, z, z, { mask: paddingMask(tokens, pad), causal: true });
  } else {
    const opts = {};
    if (src === 'causal') opts.causal = true;
    if (src === 'custom') opts.mask = { data: (await readPressed(page, 'mask-custom')).flat(), shape: [3, 3] };
    r = lab.sdpa(q.map((row) => row.map((x) => x * mult)), k, v, opts);
  }
  const [Tq, Tk] = r.weights.shape.slice(-2);
  checkShown(`section 8 weights (${src})`, await heat(page, 'obs-weights'), r.weights.data.subarray(0, Tq * Tk), 3);
  const s = r.stats;
  checkShown(`section 8 max |score| (${src})`, [await out(page, 'obs-maxscore')], [s.maxAbsScore], 3);
  checkShown(`section 8 masked fraction (${src})`, [(await out(page, 'obs-masked')).split(' ')[0]], [s.maskedFraction], 3);
  const rowSum = Number(await out(page, 'obs-rowsum'));
  assert.ok(Math.abs(rowSum - s.maxRowSumError) <= 0.01 * s.maxRowSumError + 1e-12, `section 8 row-sum error: page ${rowSum}, core ${s.maxRowSumError}`);
  assert.equal(Number(await out(page, 'obs-forbidden')), s.maxForbiddenWeight, 'section 8 forbidden weight');
  return s;
}

async function expectSection9(page) {
  const allowed = await readPressed(page, 'conv-allowed');
  const Tn = allowed.length;
  const a = { data: allowed.flat().map(Number), shape: [Tn, Tn] };
  const blocked = await readPressed(page, 'conv-blocked');
  assert.deepEqual(blocked.flat().map(Number), Array.from(blockedFromAllowed(a).data), 'section 9 blocked = blockedFromAllowed(allowed)');
  const additive = await page.$$eval('[data-mask="conv-additive"] .mask-cell', (ns) => ns.map((n) => n.textContent));
  checkShown('section 9 additive', additive, additiveFromAllowed(a).data, 0);
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

test('defaults show the lesson\'s worked examples, computed by the core', async () => {
  const { context, page, problems } = await open();
  assert.equal(await out(page, 'one-dots'), '[1.000, 0.000]');
  assert.equal(await out(page, 'one-scaled'), '[0.707, 0.000]');
  assert.equal(await out(page, 'one-weights'), '[0.670, 0.330]');
  assert.equal(await out(page, 'one-output'), '[6.698, 6.605]');
  await expectSection1(page);

  assert.deepEqual(await heat(page, 'ex-weights'),
    ['0.3837', '0.2327', '0.3837', '0.2327', '0.3837', '0.3837', '0.2741', '0.2741', '0.4519'], 'seed 2 weights');
  assert.deepEqual(await table(page, 'ex-output'), ['5.7548', '4.2452', '4.2452', '5.7548', '5.0000', '5.0000'], 'seed 2 output');
  assert.deepEqual(await heatExtra(page, 'ex-weights'), ['1.0000', '1.0000', '1.0000'], 'row sums');
  await expectSection2(page);

  const { s } = await expectSection3(page);
  assert.ok(s.varianceUnscaled > 50 && s.varianceUnscaled < 80 && Math.abs(s.varianceScaled - 1) < 0.2,
    `dk = 64: variances ${s.varianceUnscaled} / ${s.varianceScaled}`);

  await expectSection4(page);
  assert.equal(await page.locator('[data-shape="scores and weights"]').textContent(), '(2, 4, 5, 5)');

  assert.deepEqual(await heat(page, 'mask-causal-weights'), ['1.000', '0', '0', '0', '0.500', '0.500', '0', '0',
    '0.333', '0.333', '0.333', '0', '0.250', '0.250', '0.250', '0.250'], 'causal T = 4, equal scores; blocked keys show an exact 0');
  assert.deepEqual((await readGrid(page, 'mask-tokens')), [[12, 91, 33, 0, 0], [44, 17, 29, 81, 5]]);
  assert.equal(await out(page, 'mask-pshape'), '(2, 1, 1, 5)');
  const blocked = await heatBlocked(page, 'mask-combined-0');
  assert.deepEqual(blocked.slice(20), [false, false, false, true, true], 'sequence 1, query 5: padding keys 4 and 5 blocked');
  await expectSection5(page);

  assert.equal(await out(page, 'cross-wshape'), '(1, 2, 4, 7)');
  assert.equal(await out(page, 'cross-oshape'), '(1, 4, 4)');
  await expectSection6(page);

  assert.equal(await out(page, 'mha-wshape'), '(1, 4, 5, 5)');
  assert.equal(await out(page, 'mha-dhead'), '8');
  await expectSection7(page);

  await expectSection8(page);
  await expectSection9(page);
  assert.equal(await page.locator('#conventions [data-slot="misuse-status"]').textContent(), '', 'the migration example shows no error box');
  assert.deepEqual(await page.$$eval('[data-heatmap="conv-misuse"] .hm-cell.refused', (ns) => [...new Set(ns.map((n) => n.dataset.row))]), ['3'],
    'a causal mask read as blocked leaves the last query with no key: its row is marked');

  // The exercise: only the first key allowed, by keyboard.
  await page.locator('input[data-field="one-first"]').focus();
  await page.keyboard.press('Space');
  assert.equal(await out(page, 'one-weights'), '[1.000, 0.000]');
  assert.equal(await out(page, 'one-output'), '[10.000, 0.000]');
  await expectSection1(page);
  assertClean(problems, 'defaults');
  await context.close();
});

test('editing by keyboard in every section redraws numbers equal to the core\'s', async () => {
  const { context, page, problems } = await open();

  // 1: from the heading, Tab reaches the query's first cell (no mouse at all).
  await page.locator('#h-one-query').focus();
  await page.keyboard.press('Tab'); // warm-up <summary>
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Query q, d1');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('2');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('-1.5');
  await expectSection1(page);
  assert.notEqual(await out(page, 'one-weights'), '[0.670, 0.330]');

  // 2: a key cell, and the redraw happens synchronously in the input event (well within one frame).
  await typeInto(page, gridInput(page, 'ex-k', 1, 0), '2');
  await expectSection2(page);
  const sync = await page.evaluate(() => {
    const input = document.querySelector('[data-grid="ex-v"] input[data-row="2"][data-col="0"]');
    input.value = '7';
    input.dispatchEvent(new Event('input', { bubbles: true }));
    return document.querySelector('[data-values="ex-output"] td[data-row="2"][data-col="0"]').textContent;
  });
  assert.notEqual(sync, '5.0000', 'the output was redrawn before the event handler returned');
  await expectSection2(page);

  // 3: the dk slider by arrow keys and End, the seed by typing.
  await page.locator('input[data-field="scale-dk"]').focus();
  await page.keyboard.press('ArrowLeft');
  await expectSection3(page);
  await page.keyboard.press('End');
  const { dk, s } = await expectSection3(page);
  assert.equal(dk, 256);
  assert.ok(s.varianceUnscaled > 200 && Math.abs(s.varianceScaled - 1) < 0.2, `dk 256 variances ${s.varianceUnscaled}, ${s.varianceScaled}`);
  await typeInto(page, field(page, 'scale-seed'), '5');
  await expectSection3(page);

  // 4: T and D.
  await typeInto(page, field(page, 'shape-t'), '9');
  await typeInto(page, field(page, 'shape-d'), '3');
  await expectSection4(page);
  assert.equal(await page.locator('[data-shape="scores and weights"]').textContent(), '(2, 4, 9, 9)');

  // 5: a token id becomes padding; a custom mask cell is switched with Space.
  await typeInto(page, gridInput(page, 'mask-tokens', 1, 2), '0');
  await typeInto(page, field(page, 'mask-ct'), '6');
  const customCell = page.locator('[data-mask="mask-custom"] button[data-row="0"][data-col="2"]');
  await customCell.focus();
  await page.keyboard.press('Space');
  assert.equal(await page.locator('[data-mask="mask-custom"] button[data-row="0"][data-col="2"]').getAttribute('aria-pressed'), 'false');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.col), '2', 'focus stays on the switched cell');
  await expectSection5(page);
  assert.deepEqual((await heatBlocked(page, 'mask-combined-1')).slice(20), [false, false, true, false, false], 'sequence 2 key 3 is now padding');

  // 6: a source state, a padding switch, then self-attention by arrow keys in the radio group.
  await typeInto(page, gridInput(page, 'cross-src', 2, 1), '3');
  await page.locator('[data-mask="cross-pad"] button[data-col="5"]').focus();
  await page.keyboard.press('Enter');
  await expectSection6(page);
  await page.locator('[data-field="cross-mode"] input[value="cross"]').focus();
  await page.keyboard.press('ArrowUp');
  const mode = await page.$eval('[data-field="cross-mode"]', (group) => group.querySelector('input:checked')?.value ?? null);
  assert.equal(mode, 'self', 'section 6: the mode checked after ArrowUp from "cross"');
  const self = await expectSection6(page);
  assert.deepEqual(self.weights.shape, [1, 2, 4, 4]);

  // 7: a token, causal on, new weights.
  await typeInto(page, gridInput(page, 'mha-tokens', 0, 3), '17');
  await page.locator('input[data-field="mha-causal"]').focus();
  await page.keyboard.press('Space');
  await page.locator('button[data-action="mha-draw"]').focus();
  await page.keyboard.press('Enter');
  assert.equal(await field(page, 'mha-seed').inputValue(), '8');
  const r7 = await expectSection7(page);
  assert.deepEqual((await heatBlocked(page, 'mha-weights-h0')).slice(0, 5), [false, true, true, true, true], 'causal: query 1 sees key 1 only');
  assert.equal(r7.weights.data[1], 0);
  await typeInto(page, field(page, 'mha-heads'), '8');
  await expectSection7(page);

  // 8: the example by keyboard, and a bigger Q.
  await page.locator('select[data-field="obs-src"]').focus();
  await page.keyboard.press('ArrowDown'); // causal -> custom
  assert.equal(await page.locator('select[data-field="obs-src"]').inputValue(), 'custom');
  await typeInto(page, field(page, 'obs-mult'), '30');
  const stats = await expectSection8(page);
  assert.ok(stats.maxAbsScore > 20 && stats.maskedFraction > 0,
    `section 8 with Q × 30: maxAbsScore ${stats.maxAbsScore} (want > 20), maskedFraction ${stats.maskedFraction} (want > 0)`);

  // 9: block the diagonal in the allowed grid, then allow a cell in the blocked grid.
  await page.locator('[data-mask="conv-allowed"] button[data-row="1"][data-col="1"]').focus();
  await page.keyboard.press('Space');
  await expectSection9(page);
  assert.match(await out(page, 'conv-diagonal'), /^⚠/);
  await page.locator('[data-mask="conv-blocked"] button[data-row="0"][data-col="3"]').focus();
  await page.keyboard.press('Space');
  await expectSection9(page);
  const allowed = await readPressed(page, 'conv-allowed');
  assert.equal(allowed[0][3], true, `section 9: Space on blocked (query 1, key 4) allows it; the allowed grid's row 1 is [${allowed[0]}]`);

  // 10: an answer opens from the keyboard.
  await page.locator('#quiz details.answer summary').first().focus();
  await page.keyboard.press('Enter');
  assert.equal(await page.locator('#quiz details.answer').first().evaluate((d) => d.open), true, 'section 10: the first answer is open after Enter on its summary');
  await page.waitForFunction(() => location.hash.includes('ui.open=quiz-answer-1'));

  // Section 5's custom mask feeds section 8; section 2 feeds both.
  await expectSection5(page);
  await expectSection8(page);
  assertClean(problems, 'keyboard edits');
  await context.close();
});

test('invalid text shows an inline message on that cell and keeps the last valid state', async () => {
  const { context, page, problems } = await open();
  await typeInto(page, gridInput(page, 'ex-q', 0, 0), '3');
  await page.waitForFunction(() => /ex\.q=3,0,1,0;/.test(location.hash)); // written once the edits pause
  await page.waitForTimeout(TYPING_PAUSE); // 3 has stood: it is the learner's value, which invalid text keeps
  const before = { weights: await heat(page, 'ex-weights'), output: await table(page, 'ex-output'), hash: await page.evaluate(() => location.hash) };
  assert.match(before.hash, /ex\.q=3,0,1,0;/);
  const cell = gridInput(page, 'ex-q', 0, 0);
  for (const bad of ['', 'abc', 'NaN', '1e999', '<b>x</b>', '1,2,3', '1.000,5']) {
    // Replace the text in one edit (as a paste would), so no valid prefix such as "1" of "1e999" is taken on the way.
    await cell.focus();
    await page.keyboard.press('Control+A');
    if (bad === '') await page.keyboard.press('Delete');
    else await page.keyboard.insertText(bad);
    assert.equal(await cell.getAttribute('aria-invalid'), 'true', `"${bad}" is marked invalid`);
    const describedBy = (await cell.getAttribute('aria-describedby')) || '';
    const msg = await page.evaluate((ids) => ids.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean)
      .map((n) => ({ text: n.textContent, visible: !n.hidden && n.offsetParent !== null })), describedBy);
    assert.ok(msg.some((m) => m.visible && /still 3/.test(m.text)), `"${bad}": a visible message linked by aria-describedby says the last value is kept: ${JSON.stringify(msg)}`);
    assert.deepEqual(await heat(page, 'ex-weights'), before.weights, `"${bad}": weights unchanged`);
    assert.deepEqual(await table(page, 'ex-output'), before.output, `"${bad}": output unchanged`);
    assert.equal(await page.evaluate(() => location.hash), before.hash, `"${bad}": hash unchanged`);
  }
  assert.equal(await page.locator('b').count(), 0, 'typed markup is never rendered');
  // A decimal comma, the point of a phone's number keypad in many locales, is a point.
  await typeInto(page, cell, '0,5');
  assert.equal(await cell.getAttribute('aria-invalid'), null, '"0,5" is a number');
  await page.keyboard.press('Tab');
  assert.equal(await cell.inputValue(), '0.5', 'once the edit is done, the cell writes it as the page writes numbers');
  await expectSection2(page);

  // Single fields too: an out-of-range or non-integer T.
  const t = field(page, 'shape-t');
  for (const bad of ['0', '2.5', '999']) {
    await t.focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(bad);
    assert.equal(await t.getAttribute('aria-invalid'), 'true', `T = "${bad}" is invalid`);
  }
  assert.equal(await page.locator('[data-shape="scores and weights"]').textContent(), '(2, 4, 5, 5)', 'the last valid T = 5 is kept');
  // A phone keypad without a minus sign (iOS) only for numbers that cannot be negative.
  assert.equal(await t.getAttribute('inputmode'), 'numeric', 'T, a positive integer, gets the number keypad');
  assert.equal(await cell.getAttribute('inputmode'), null, 'a Q entry may be negative: the full keyboard, which has a minus sign');
  assertClean(problems, 'invalid text');
  await context.close();
});

test('the core\'s errors are shown inline and the last valid result stays', async () => {
  const { context, page, problems } = await open();
  // Custom mask, also watched by section 8: block the whole second row.
  await page.locator('select[data-field="obs-src"]').selectOption('custom');
  const before = await heat(page, 'mask-custom-weights');
  for (const j of [0, 1]) {
    await page.locator(`[data-mask="mask-custom"] button[data-row="1"][data-col="${j}"]`).focus();
    await page.keyboard.press('Space');
  }
  const mid = await heat(page, 'mask-custom-weights');
  assert.notDeepEqual(mid, before);
  await page.locator('[data-mask="mask-custom"] button[data-row="1"][data-col="2"]').focus();
  await page.keyboard.press('Space');
  const status = page.locator('#masks [data-slot="custom-status"] .core-error');
  await assert.doesNotReject(status.waitFor({ state: 'visible', timeout: 30000 }));
  // The page shows the core's own message: the same call here must refuse with the same text.
  const { q, k, v } = await exTensors(page);
  const custom = (await readPressed(page, 'mask-custom')).flat();
  const expected = refusal(() => lab.sdpa(q, k, v, { mask: { data: custom, shape: [3, 3] } }));
  assert.match(expected, /^ALL_MASKED_ROW: .*query 1\b/, 'the core refuses query row 1 (the second row)');
  // One sequence with one head: the page leaves out the "batch 1, head 1" the core names.
  const shown = onPage(expected).replace('batch 1, head 1, ', '');
  assert.ok((await status.textContent()).startsWith(shown), `section 5 shows "${await status.textContent()}", the core says "${expected}" (counting from 0)`);
  assert.deepEqual(await heat(page, 'mask-custom-weights'), mid, 'the last valid weights stay');
  const weightsClass = await page.locator('#masks [data-slot="custom-weights"]').evaluate((n) => n.className);
  assert.ok(weightsClass.split(/\s+/).includes('stale'), `section 5: the last valid weights are marked stale; their classes are "${weightsClass}"`);
  assert.match(await page.locator('#masks .hm-rowhead.bad-row').first().textContent(), /query 2/, 'the empty row is flagged');
  // Section 8 reads the mask from far below: it is redrawn once the page is idle after the edit's frame.
  const observed = page.locator('#observability [data-slot="status"]');
  await page.waitForFunction(() => /ALL_MASKED_ROW/.test(document.querySelector('#observability [data-slot="status"]').textContent), null, { timeout: 30000 }).catch(() => {});
  assert.match(await observed.textContent(), /ALL_MASKED_ROW/, 'section 8 shows the same refusal when it uses the custom mask');

  // Padding: a sequence that starts with the pad id.
  await typeInto(page, gridInput(page, 'mask-tokens', 0, 0), '0');
  const z = { data: new Float32Array(10), shape: [2, 1, 5, 1] };
  const tokens = await readGrid(page, 'mask-tokens');
  const padRefusal = refusal(() => lab.sdpa(z, z, z, { mask: paddingMask(tokens, 0), causal: true }));
  assert.match(padRefusal, /^ALL_MASKED_ROW: .*batch 0.*query 0\b/);
  const padShown = await page.locator('#masks [data-slot="padding-status"]').textContent();
  // This part shows sequences and no heads: "batch 1, head 1, " reads "sequence 1, ".
  const padOnPage = onPage(padRefusal).replace(/batch (\d+), head 1, /, 'sequence $1, ');
  assert.ok(padShown.startsWith(padOnPage), `section 5 padding shows "${padShown}", the core's refusal (counting from 1, words first, in the part's words) is "${padOnPage}"`);
  // Multi-head: heads that do not divide d_model.
  await typeInto(page, field(page, 'mha-heads'), '5');
  const headRefusal = refusal(() => lab.createMultiHeadAttention({ dModel: 32, numHeads: 5 }));
  assert.match(headRefusal, /^HEADS_DO_NOT_DIVIDE: /);
  assert.match(await page.locator('#multi-head [data-slot="status"]').textContent(), /^d_model = 32 cannot be split .* H = 5 heads/, 'section 7 says why, in the words of its fields');
  assert.equal(await out(page, 'mha-wshape'), '(1, 4, 5, 5)', 'the last valid heads stay');
  // Recover.
  await page.locator('[data-mask="mask-custom"] button[data-row="1"][data-col="2"]').press('Space');
  assert.equal(await page.locator('#masks [data-slot="custom-status"] .core-error').isHidden(), true, 'section 5: the core error is hidden once the mask is valid again');
  await expectSection5Custom(page);
  assertClean(problems, 'core errors');
  await context.close();
});

/** "CODE: message" of the error fn throws, as the page prints it. */
function refusal(fn) {
  try { fn(); } catch (err) { return `${err.code}: ${err.message}`; }
  return 'no error';
}

/** A refusal ("CODE: message") as the page shows it: counting from 1, in words first, its code after. */
function onPage(refused) {
  const [, code, message] = /^(\w+): (.*)$/s.exec(refused);
  return refusalText(code, oneBased(message));
}

async function expectSection5Custom(page) {
  const custom = await readPressed(page, 'mask-custom');
  const { q, k, v } = await exTensors(page);
  checkShown('section 5 custom mask weights', await heat(page, 'mask-custom-weights'),
    lab.sdpa(q, k, v, { mask: { data: custom.flat(), shape: [3, 3] } }).weights.data, 4);
}

test('the URL hash holds the whole state and reproduces the view', async () => {
  const { context, page, problems } = await open();
  await typeInto(page, gridInput(page, 'one-v', 1, 1), '12');
  await page.locator('input[data-field="one-first"]').check();
  await typeInto(page, gridInput(page, 'ex-v', 0, 1), '-2.25');
  await page.locator('input[data-field="scale-dk"]').fill('100');
  await typeInto(page, field(page, 'shape-h'), '2');
  await page.locator('input[data-field="shape-wrong"]').check();
  await typeInto(page, gridInput(page, 'mask-tokens', 1, 4), '0');
  await page.locator('[data-mask="mask-custom"] button[data-row="2"][data-col="0"]').click();
  await typeInto(page, field(page, 'cross-tk'), '5');
  await page.locator('[data-mask="cross-pad"] button[data-col="1"]').click();
  await page.locator('input[data-field="mha-causal"]').check();
  await typeInto(page, field(page, 'mha-t'), '6');
  await page.locator('select[data-field="obs-src"]').selectOption('padding');
  await page.locator('[data-mask="conv-allowed"] button[data-row="0"][data-col="3"]').click();
  await page.locator('#quiz details.answer summary').nth(4).click();
  await page.locator('nav.toc a[href="#multi-head"]').click();
  await page.waitForFunction(() => location.hash.includes('view=multi-head') && location.hash.includes('ui.open='));

  // Read once the work left for idle moments is done (a far section that
  // reads an edited one is redrawn then). What times this browser is left
  // out: it runs only once the learner comes near, and a time is never the
  // same twice.
  const snapshot = async (p) => (await settled(p), p).evaluate(() => ({
    inputs: [...document.querySelectorAll('main input, main select')].map((n) => (n.type === 'checkbox' || n.type === 'radio' ? n.checked : n.value)),
    pressed: [...document.querySelectorAll('main button[aria-pressed]')].map((n) => n.getAttribute('aria-pressed')),
    shown: [...document.querySelectorAll('[data-heatmap] .hm-cell, [data-values] td, [data-out]')]
      .filter((n) => !n.closest('#t-squared, [data-measured]')).map((n) => n.textContent),
    open: [...document.querySelectorAll('main details')].map((d) => d.open),
  }));
  const first = await snapshot(page);
  const href = page.url();
  assert.match(href, /#.*view=multi-head/);
  for (const key of ['one.v=', 'one.first=1', 'ex.v=', 'scale.dk=100', 'shape.h=2', 'shape.wrong=1', 'mask.tokens=', 'mask.custom=',
    'cross.tk=5', 'cross.pad=', 'mha.causal=1', 'mha.t=6', 'obs.src=padding', 'conv.allowed=', 'ui.open=']) {
    assert.ok(href.includes(key), `the hash holds ${key}: ${href}`);
  }

  const second = await open(href.slice(href.indexOf('#')));
  const again = await snapshot(second.page);
  assert.deepEqual(again.inputs, first.inputs, 'every input is restored');
  assert.deepEqual(again.pressed, first.pressed, 'every mask cell is restored');
  assert.deepEqual(again.open, first.open, 'open quiz answers are restored');
  assert.deepEqual(again.shown, first.shown, 'every displayed number is the same');
  assert.equal(second.page.url(), href, 'the hash is written back unchanged');
  const top = await second.page.locator('#multi-head').evaluate((n) => n.getBoundingClientRect().top);
  assert.ok(Math.abs(top) < 40, `the section in view is scrolled to (top ${top})`);
  assert.equal(await second.page.locator('nav.toc a[aria-current="true"]').getAttribute('href'), '#multi-head');
  await expectSection7(second.page);
  await expectSection8(second.page);
  // A plain in-page link ("#masks", as the skip link or a bookmark would give) only moves the view.
  await second.page.evaluate(() => { location.hash = '#masks'; });
  await second.page.waitForFunction(() => location.hash.includes('view=masks'));
  assert.deepEqual((await snapshot(second.page)).inputs, first.inputs, 'a plain anchor keeps the state');
  assert.ok(second.page.url().includes('one.first=1'), `the state stays in the hash: ${second.page.url()}`);
  assertClean(problems, 'first page');
  assertClean(second.problems, 'restored page');
  await second.context.close();
  await context.close();
});

test('open disclosures are kept by name; a link saved when they were kept by position still opens the same ones', async () => {
  // Saved from the page before disclosures had names: warm-up, the multi-head
  // output and quiz answer 2 open, and section 1's "only the first key" ticked.
  const saved = '#view=one-query&one.first=1&ui.open=1101000000';
  const { context, page, problems } = await open(saved);
  const openNow = () => page.$$eval('main details[data-disclosure]', (ns) => ns.filter((d) => d.open).map((d) => d.dataset.disclosure));
  assert.deepEqual(await openNow(), ['warm-up', 'mha-output', 'quiz-answer-2'], 'the old link opens the same disclosures');
  assert.equal(await page.locator('input[data-field="one-first"]').isChecked(), true, 'the old link checks one.first');
  assert.match(page.url(), /ui\.open=warm-up,mha-output,quiz-answer-2(&|$)/, `rewritten by name: ${page.url()}`);
  // By name: an answer opened now is written by its name, whatever comes before it.
  await page.locator('details[data-disclosure="quiz-answer-7"] summary').click();
  await page.waitForFunction(() => location.hash.includes('quiz-answer-7'));
  const href = page.url();
  const second = await open(href.slice(href.indexOf('#')));
  assert.deepEqual(await second.page.$$eval('main details[data-disclosure]', (ns) => ns.filter((d) => d.open).map((d) => d.dataset.disclosure)),
    ['warm-up', 'mha-output', 'quiz-answer-2', 'quiz-answer-7']);
  // A name the page does not have (a disclosure removed since) is skipped, not an error.
  await second.page.evaluate(() => { location.hash = '#ui.open=quiz-answer-1,gone-since'; });
  await second.page.waitForFunction(() => document.querySelector('details[data-disclosure="quiz-answer-1"]').open);
  assert.equal(await second.page.locator('#notice').isVisible(), false, 'no notice for an unknown name');
  assertClean(problems, 'old link');
  assertClean(second.problems, 'by name');
  await second.context.close();
  await context.close();
});

test('a malformed, oversized or hostile hash is ignored with a notice and runs nothing', async () => {
  const hostile = [
    '#ex.q=<img src=x onerror="window.__pwned=1">',
    '#view=<script>window.__pwned=1</script>',
    `#one.q=${'1'.repeat(9000)}`,
    '#ex.q=%E0%A4%A',
    '#ex.q=1,0,1,0;0,1,0,1;<img src=x onerror=window.__pwned=1>',
    '#view=masks&one.q=1,0&one.q=2,0',
    '#nothere.x=1',
    '#mask.custom=111;000;11',
    '#one.q=1e999,0',
    '#conv.t=3&conv.allowed=1111;1111;1111;1111',
    '#__proto__.x=1',
    '#ex.q=<svg onload=window.__pwned=1>',
  ];
  const defaults = ['0.3837', '0.2327', '0.3837', '0.2327', '0.3837', '0.3837', '0.2741', '0.2741', '0.4519'];
  const { context, page, problems } = await open();
  const checkRejected = async (hash) => {
    const where = hash.slice(0, 60);
    const notice = page.locator('#notice');
    assert.equal(await notice.isVisible(), true, `${where}: a notice is shown`);
    assert.match(await notice.textContent(), /could not be used/, `${where}: notice text`);
    assert.equal(await page.evaluate(() => window.__pwned), undefined, `${where}: no script ran`);
    assert.equal(await page.locator('img, svg[onload], script:not([src])').count(), 0, `${where}: no element was injected`);
  };
  // Opened as a link: the page starts from its defaults and clears the bad hash.
  for (const hash of hostile.slice(0, 4)) {
    await page.goto('about:blank');
    await page.goto(`${suite.server.url}${hash}`);
    await waitForLesson(page);
    await checkRejected(hash);
    assert.deepEqual(await heat(page, 'ex-weights'), defaults, `${hash.slice(0, 60)}: the defaults are shown`);
    assert.equal(await page.evaluate(() => location.hash), '', `${hash.slice(0, 60)}: the bad hash is cleared`);
  }
  // Typed into the address bar of a page in use: the current state stays and its hash is written back.
  await typeInto(page, gridInput(page, 'ex-q', 0, 0), '4');
  // The edit reaches the address bar once edits pause (a short debounce); a
  // learner types a new address after that, so the test does too.
  await page.waitForFunction(() => /ex\.q=4,0,1,0;/.test(location.hash));
  const kept = await heat(page, 'ex-weights');
  for (const hash of hostile.slice(4)) {
    await page.evaluate(() => { document.getElementById('notice').hidden = true; });
    await page.evaluate((h) => { location.hash = h; }, hash);
    await page.waitForFunction(() => !document.getElementById('notice').hidden);
    await checkRejected(hash);
    assert.deepEqual(await heat(page, 'ex-weights'), kept, `${hash.slice(0, 60)}: the state is kept`);
    const now = await page.evaluate(() => location.hash);
    assert.ok(/ex\.q=4,0,1,0;0,1,0,1;1,1,0,0/.test(now) && !/[<>%]/.test(now), `${hash.slice(0, 60)}: the hash of the kept state is written back (${now})`);
  }
  assertClean(problems, 'hostile hashes');
  await context.close();
});

test('every section at 1280 px and 390 px (laid out whole at 390 px): no sideways scroll, axe-core (and screenshots with SCREENSHOTS set)', async () => {
  await mkdir(SHOTS, { recursive: true });
  for (const viewport of [{ width: 1280, height: 900 }, { width: 390, height: 844 }]) {
    const { context, page, problems } = await open('', viewport);
    await screenshot(page, `${SHOTS}page-${viewport.width}-top.png`);
    // On a phone's width every section is laid out, also those far from the
    // viewport: what sticks out is measured, and axe sees it drawn.
    if (viewport.width === 390) await renderEverySection(page);
    for (const id of SECTION_IDS) {
      const section = page.locator(`#${id}`);
      const box = await section.boundingBox();
      assert.ok(box && box.width <= viewport.width, `#${id} fits in ${viewport.width} px (width ${box && box.width})`);
      await screenshot(section, `${SHOTS}page-${viewport.width}-${id}.png`);
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no horizontal page scroll at ${viewport.width} px (overflow ${overflow} px)`);

    // Timing this browser waits until the learner comes near: a page read at
    // the top has timed neither the KV cache's long example nor T².
    assert.deepEqual(await page.locator('[data-measured="kv-work-long"] tbody td:last-child').allTextContents(), ['…', '…'],
      `${viewport.width} px: the KV cache's long example is timed only once the learner comes near it`);
    assert.equal(await page.locator('#t-squared [data-measured="cost-table"]').count(), 0, `${viewport.width} px: T² is measured only once near`);

    // axe-core, with an inline message, a core error and open disclosures on show.
    await typeInto(page, gridInput(page, 'ex-q', 1, 1), 'abc');
    await typeInto(page, gridInput(page, 'mask-tokens', 1, 0), '0');
    await page.locator('#quiz details.answer summary').first().click();
    await page.locator('details.more summary').click();
    await screenshot(page.locator('#masks'), `${SHOTS}page-${viewport.width}-masks-error.png`);
    // "What T² costs" measures once near and then draws its table: checked once it is there.
    await page.locator('#t-squared').scrollIntoViewIfNeeded();
    await page.waitForSelector('#t-squared [data-measured="cost-table"]', { state: 'attached', timeout: 60000 });
    await runAxe(page, `${viewport.width} px`, { impacts: ['serious', 'critical'] });
    assertClean(problems, `${viewport.width} px`);
    await context.close();
  }
});

// ---------------------------------------------------------------------------
// The prose after a learner's edit: what it says about the numbers stays true
// ---------------------------------------------------------------------------

/** The numbers of every "[a, b]" in a text, as lists. */
const bracketed = (text) => (text.match(/\[[^\]]*\]/g) || []).map((s) => s.slice(1, -1).split(',').map((t) => Number(t.trim().replace('−', '-'))));

test('one query: the exercise names only numbers the page shows, also after the values are edited', async () => {
  const { context, page, problems } = await open('#view=one-query&one.v=1,2;3,4&one.first=1');
  const shown = [await out(page, 'one-weights'), await out(page, 'one-output')].map((t) => bracketed(t)[0]);
  assert.deepEqual(shown, [[1, 0], [1, 2]], 'only key 1 allowed: shares [1, 0], output the first value');
  const exercise = await page.locator('#one-query p.aside').textContent();
  for (const v of bracketed(exercise)) {
    assert.ok(shown.some((s) => s.length === v.length && s.every((x, i) => x === v[i])),
      `the exercise names [${v.join(', ')}], which the page does not show (shares ${JSON.stringify(shown[0])}, output ${JSON.stringify(shown[1])}): "${exercise}"`);
  }
  assertClean(problems, 'one query, edited values');
  await context.close();
});

test('3×3: when one score outweighs the rest, the output is that value alone, and the prose allows it', async () => {
  // Query 3 scores 1000 against key 3 and 500 against the others: its weights are [0, 0, 1].
  const { context, page, problems } = await open('#view=three-by-three&ex.q=1,0,1,0;0,1,0,1;1000,1000,0,0&ex.v=10,0;0,10;1,9');
  assert.deepEqual((await heat(page, 'ex-weights')).slice(6, 9), ['0.0000', '0.0000', '1.0000']);
  assert.deepEqual((await table(page, 'ex-output')).slice(4, 6), ['1.0000', '9.0000'], 'output 3 is value 3');
  const prose = await page.locator('#three-by-three > p').allTextContents();
  const never = prose.find((p) => /never just the winning/.test(p));
  assert.equal(never, undefined, `output 3 is value 3 alone, yet the prose says: "${never}"`);
  assertClean(problems, '3×3, one-hot row');
  await context.close();
});

test('masks: the prose says which examples have equal scores; the custom mask reads the 3×3 example\'s', async () => {
  const { context, page, problems } = await open('#masks');
  const row1 = (await heat(page, 'mask-custom-weights')).slice(0, 3);
  assert.ok(new Set(row1).size > 1, `the custom mask's weights are not even: row 1 is ${row1.join(', ')}`);
  const prose = await page.locator('#masks > p').allTextContents();
  const claim = prose.find((p) => /every example/i.test(p) && /equal scores/.test(p));
  assert.equal(claim, undefined, `the custom mask's row 1 is ${row1.join(', ')}, not even, yet the prose says: "${claim}"`);
  assertClean(problems, 'masks, equal scores');
  await context.close();
});

test('a link the core refuses before anything was drawn: the section says why and promises no last valid result', async () => {
  // Sequence 1 all padding, a custom row that blocks every key, a source all padding.
  const hash = '#view=masks&mask.tokens=0,0,0,0,0;44,17,29,81,5&mask.custom=000;111;111&cross.pad=0000000';
  const { context, page, problems } = await open(hash);
  for (const [where, slot] of [['masks', 'padding-alone-status'], ['masks', 'custom-status'], ['self-cross', 'status']]) {
    const said = await page.locator(`#${where} [data-slot="${slot}"] .core-error`).textContent();
    assert.match(said, /^Query row has no allowed key .*\(ALL_MASKED_ROW\)/, `${where} ${slot}: the core's refusal is shown, words first; seen "${said}"`);
    assert.doesNotMatch(said, /last valid/i, `${where} ${slot}: nothing was drawn, so no last valid result can be shown; seen "${said}"`);
  }
  const empty = await page.$$eval('#masks .stale, #self-cross .stale', (ns) => ns.map((n) => n.dataset.slot));
  assert.deepEqual(empty, [], 'no empty "Last valid result" boxes');
  // Once there was a valid result, a refused edit keeps it, marked, and says so.
  await typeInto(page, gridInput(page, 'mask-tokens', 0, 0), '12');
  assert.equal(await page.locator('#masks [data-slot="padding-alone-status"] .core-error').isHidden(), true);
  await typeInto(page, gridInput(page, 'mask-tokens', 0, 0), '0');
  assert.match(await page.locator('#masks [data-slot="padding-alone-status"] .core-error').textContent(), /still those of the last valid input/);
  assert.ok(await page.locator('#masks [data-slot="padding-weights"].stale').count() === 1, 'the last valid padding maps are marked');
  assertClean(problems, 'refused on arrival');
  await context.close();
});

test('masks: each refusal stands next to the example it belongs to', async () => {
  /** Where the shown refusals sit: before or after the "Both rules at once" heading. */
  const placed = (page) => page.$$eval('#masks .core-error:not([hidden])', (ns) => {
    const heading = [...document.querySelectorAll('#masks h3')].find((n) => /Both rules/.test(n.textContent));
    return ns.map((n) => [heading.compareDocumentPosition(n) & Node.DOCUMENT_POSITION_PRECEDING ? 'padding' : 'both rules', n.textContent]);
  });
  // Sequence 1 all padding: the padding mask alone leaves its queries no key.
  const { context, page, problems } = await open('#view=masks&mask.tokens=0,0,0,0,0;44,17,29,81,5');
  let shown = await placed(page);
  assert.equal(shown.length, 1, `one refusal: ${JSON.stringify(shown)}`);
  assert.equal(shown[0][0], 'padding', `the padding example alone is refused, yet its message stands under "Both rules at once": "${shown[0][1]}"`);
  assert.match(shown[0][1], /^Query row has no allowed key .*\(ALL_MASKED_ROW\)/);
  // Sequence 1 starts with padding: padding alone is fine, causal AND padding is refused.
  await typeInto(page, gridInput(page, 'mask-tokens', 0, 1), '7');
  shown = await placed(page);
  assert.deepEqual(shown.map(([where]) => where), ['both rules'], `only the combined rule is refused: ${JSON.stringify(shown)}`);
  assert.match(shown[0][1], /^Query row has no allowed key .*\(ALL_MASKED_ROW\)/);
  assertClean(problems, 'masks, where refusals stand');
  await context.close();
});

test('shapes: with one head the reshape without the transpose mixes nothing, and neither the picture nor the aside calls it wrong', async () => {
  const { context, page, problems } = await open('#view=shapes&shape.h=1&shape.wrong=1');
  const notes = await page.locator('#shapes [data-out="shape-notes"]').textContent();
  assert.doesNotMatch(notes, /mixed up/, 'one head: the per-head tensor is x itself');
  const title = await page.locator('#shapes .pic-title').nth(1).textContent();
  assert.doesNotMatch(title, /wrong/, `every head holds its own positions and channels ("${notes}"), yet the picture says: "${title}"`);
  const aside = await page.locator('#shapes p.aside').textContent();
  assert.match(aside, /more than one head/, `with one head nothing is mixed, yet the aside says: "${aside}"`);
  const drawn = await page.locator('#shapes .pic-title').first().textContent();
  assert.doesNotMatch(drawn, /\b1 heads\b/, `one head is "1 head": "${drawn}"`);
  assertClean(problems, 'shapes, one head');
  await context.close();
});

test('observability: the synthetic-input aside quotes the 3×3 example\'s starting keys and values', () => {
  const body = SECTIONS.find((s) => s.id === 'observability').body.replace(/<[^>]+>/g, '');
  const values = /its values are \((\d+), (\d+)\), \((\d+), (\d+)\) and \((\d+), (\d+)\)/.exec(body);
  assert.ok(values, `the aside quotes the values: ${body}`);
  assert.deepEqual(values.slice(1).map(Number), EX_DEFAULTS.v.flat(), 'the values quoted are the example\'s');
  assert.match(body, /its first two keys are rows of the identity/);
  EX_DEFAULTS.k.slice(0, 2).forEach((row, i) => assert.deepEqual(row, row.map((_, j) => Number(i === j)), `key ${i + 1} is row ${i + 1} of the identity`));
});

test('shapes: H = 2 with the starting sizes gives the shapes the prose quotes, from the core', async () => {
  const { context, page, problems } = await open('#view=shapes');
  const prose = (await page.locator('#shapes > p').allTextContents()).join(' ');
  const quoted = /Try H = 2 .*context per head is then (\([\d, ]+\)) and the weights (\([\d, ]+\))/.exec(prose);
  assert.ok(quoted, `the prose invites H = 2 and quotes two shapes: "${prose}"`);
  await typeInto(page, field(page, 'shape-h'), '2');
  await page.waitForFunction(() => /shape\.h=2/.test(location.hash));
  const shape = (name) => page.locator(`#shapes td[data-shape="${name}"]`).textContent();
  assert.equal(await shape('context per head: weights × V'), quoted[1], 'the context per head');
  assert.equal(await shape('scores and weights'), quoted[2], 'the weights, as the core returned them');
  assertClean(problems, 'shapes, H = 2');
  await context.close();
});

test('shapes: the drill the prose sets (B = 2, H = 3, T = 5, D = 4) gives the scores shape it quotes, from the core', async () => {
  const { context, page, problems } = await open('#view=shapes');
  const prose = (await page.locator('#shapes > p').allTextContents()).join(' ');
  const drill = /with B = (\d+), H = (\d+), T = (\d+) and D = (\d+), say before you look what the scores must be; the table gives (\([\d, ]+\))/.exec(prose);
  assert.ok(drill, `the prose sets the drill and quotes the scores' shape: "${prose}"`);
  for (const [name, value] of [['shape-b', drill[1]], ['shape-h', drill[2]], ['shape-t', drill[3]], ['shape-d', drill[4]]]) await typeInto(page, field(page, name), value);
  await page.waitForFunction((want) => want.every((w) => location.hash.includes(w)), [`shape.h=${drill[2]}`, `shape.d=${drill[4]}`]);
  assert.equal(await page.locator('#shapes td[data-shape="scores and weights"]').textContent(), drill[5], 'the scores, as the core returned them');
  assertClean(problems, 'shapes drill');
  await context.close();
});

test('shapes: the picture draws each square of the split and of the straight reshape with its head\'s colour', async () => {
  // T = 2, H = 2, D = 2: x is (2, 4); a square is named by its position and its head's letter.
  // The page hears of a new pixel ratio through matchMedia('(resolution: …dppx)'); the
  // emulated zoom below changes the ratio but this headless browser sends no event, so the test sends it.
  const init = () => {
    const own = window.matchMedia.bind(window);
    window.ratioQueries = [];
    window.matchMedia = (text) => { const list = own(text); if (text.includes('dppx')) window.ratioQueries.push(list); return list; };
  };
  const { context, page, problems } = await suite.open('#view=shapes&shape.t=2&shape.h=2&shape.d=2', { viewport: { width: 1280, height: 900 }, init });
  const cells = async (n) => page.locator('#shapes .pic-canvas').nth(n).getAttribute('data-cells');
  assert.equal(await cells(0), '1a 1a 1b 1b 2a 2a 2b 2b', 'x, row by row');
  assert.equal(await cells(1), '1a 1a 2a 2a 1b 1b 2b 2b', 'split, then transpose: head 1 holds both positions of its own channels');
  assert.equal(await cells(2), await cells(0), 'merging gives x back');
  // Drawn, not only named: the first square of x and of the blocks has head 1's colour, x's third head 2's.
  const pixel = (n, x, y) => page.locator('#shapes .pic-canvas').nth(n).evaluate((canvas, [x, y]) => {
    const ratio = canvas.width / parseFloat(canvas.style.width);
    return [...canvas.getContext('2d').getImageData(Math.round(x * ratio), Math.round(y * ratio), 1, 1).data.slice(0, 3)];
  }, [x, y]);
  const { headColour } = await import('../web/palette.js');
  const rgb = (text) => text.match(/\d+/g).map(Number);
  const square = await page.evaluate(() => Math.round(1.3 * parseFloat(getComputedStyle(document.documentElement).fontSize)));
  assert.deepEqual(await pixel(0, 2, 2), rgb(headColour(0, 2).colour), 'x: square 1 is head 1\'s');
  assert.deepEqual(await pixel(0, 2 * (square + 2) + 2, 2), rgb(headColour(1, 2).colour), 'x: square 3 is head 2\'s');
  await page.locator('#shapes input[type="checkbox"]').check();
  await page.waitForFunction(() => document.querySelectorAll('#shapes .pic-canvas')[1].dataset.cells === '1a 1a 1b 1b 2a 2a 2b 2b');
  const title = await page.locator('#shapes .pic-title').nth(1).textContent();
  assert.match(title, /wrong/, `reshaped straight, head 1 holds position 1's channels of both heads: ${title}`);
  // Zoomed (two device pixels per CSS pixel): the canvases are drawn again at that density, with the same squares.
  const density = () => page.locator('#shapes .pic-canvas').evaluateAll((cs) => cs.map((c) => c.width / parseFloat(c.style.width)));
  assert.deepEqual(await density(), [1, 1, 1]);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 900, deviceScaleFactor: 2, mobile: false });
  await page.evaluate(() => window.ratioQueries.filter((list) => !list.matches).forEach((list) => list.dispatchEvent(new Event('change'))));
  await page.waitForFunction(() => [...document.querySelectorAll('#shapes .pic-canvas')].every((c) => c.width === 2 * parseFloat(c.style.width)), null, { timeout: 30000 })
    .catch(async () => assert.fail(`not drawn again at 2 device pixels per CSS pixel: ${JSON.stringify(await density())}`));
  assert.equal(await cells(1), '1a 1a 1b 1b 2a 2a 2b 2b', 'the same squares after the zoom');
  assert.deepEqual(await pixel(0, 2 * (square + 2) + 2, 2), rgb(headColour(1, 2).colour), 'x: square 3 is head 2\'s, at the new density');
  assertClean(problems, 'shapes picture drawn');
  await context.close();
});

test('shapes: the per-head blocks wrap to the picture\'s width instead of shrinking (390 px), and stand in one line when they fit (1280 px)', async () => {
  // One page, narrowed first and then widened: the picture is drawn again for each width.
  const widths = [390, 1280];
  const { context, page, problems } = await open('#view=shapes', { width: widths[0], height: 900 });
  for (const width of widths) {
    if (width !== widths[0]) await resizeTo(page, width, 900);
    const blocks = page.locator('#shapes .pic-canvas').nth(1);
    await blocks.scrollIntoViewIfNeeded();
    const size = () => blocks.evaluate((c) => ({ drawn: parseFloat(c.style.width), shown: c.getBoundingClientRect().width,
      room: c.closest('.picture').getBoundingClientRect().width, square: Math.round(1.3 * parseFloat(getComputedStyle(document.documentElement).fontSize)) }));
    // The width is observed after a layout: wait until the blocks are drawn for it.
    await page.waitForFunction(() => { const c = document.querySelectorAll('#shapes .pic-canvas')[1]; return parseFloat(c.style.width) <= c.closest('.picture').getBoundingClientRect().width; });
    const { drawn, shown, room, square } = await size();
    assert.equal(shown, drawn, `${width} px: the blocks are drawn at their own size (${drawn} px), not narrowed to ${shown} px`);
    const block = 4 * (square + 2) - 2; // four channels of one head
    if (width === 1280) assert.ok(drawn >= 4 * block, `1280 px: four blocks in one line (${drawn} px wide)`);
    else assert.ok(drawn < 4 * block && drawn <= room, `390 px: the blocks wrap within ${room} px (${drawn} px wide)`);
    assert.equal(await blocks.getAttribute('data-cells'), Array.from({ length: 4 }, (_, hh) => Array.from({ length: 16 }, (_, n) => `${Math.floor(n / 4) + 1}${'abcd'[hh]}`).join(' ')).join(' '));
    assertClean(problems, `shapes blocks at ${width} px`);
  }
  await context.close();
});

// ---------------------------------------------------------------------------
// Shapes the masks section states, and the parameters of the multi-head layer
// ---------------------------------------------------------------------------

/** The text of a data-out element, failing clearly when the page has none. */
async function outOrFail(page, key, where) {
  const n = await page.locator(`[data-out="${key}"]`).count();
  assert.ok(n > 0, `${where}: the page shows no [data-out="${key}"]`);
  return out(page, key);
}

test('masks: the causal caption, the combined mask and the two-head weights show the core\'s shapes, also after edits', async () => {
  const { context, page, problems } = await open('#masks');
  const z = (lead, n) => ({ data: new Float32Array([...lead, n].reduce((a, b) => a * b, 1)), shape: [...lead, n, 1] });
  const check = async (when) => {
    const Tc = Number(await field(page, 'mask-ct').inputValue());
    const caption = await page.locator('#masks [data-slot="causal"] figcaption').first().textContent();
    const cm = lab.allowedPairs([Tc, Tc], { causal: true });
    assert.ok(caption.includes(`Shape (${cm.shape.join(', ')})`), `${when}: the causal caption names the mask's shape (${cm.shape.join(', ')}); it reads "${caption}"`);
    assert.ok(caption.includes(`(1, 1, ${Tc}, ${Tc})`), `${when}: the caption says the (T, T) mask is read as (1, 1, ${Tc}, ${Tc}); it reads "${caption}"`);
    const tokens = await readGrid(page, 'mask-tokens');
    const pad = Number(await field(page, 'mask-pad').inputValue());
    const pm = paddingMask(tokens, pad);
    const [B, , , T] = pm.shape;
    const combined = lab.allowedPairs([B, 1, T, T], { mask: pm, causal: true });
    const twoHeads = lab.sdpa(z([B, 2], T), z([B, 2], T), z([B, 2], T), { mask: pm, causal: true });
    assert.equal(await outOrFail(page, 'mask-cshape', when), `(${combined.shape.join(', ')})`, `${when}: the combined mask's shape`);
    assert.equal(await outOrFail(page, 'mask-wshape2', when), `(${twoHeads.weights.shape.join(', ')})`, `${when}: the two-head weights' shape`);
    const eight = (lead) => ({ data: new Float32Array([...lead, T, 8].reduce((a, b) => a * b, 1)), shape: [...lead, T, 8] });
    const context = lab.sdpa(eight([B, 2]), eight([B, 2]), eight([B, 2]), { mask: pm, causal: true }).output.shape;
    assert.equal(await outOrFail(page, 'mask-context2', when), `(${context.join(', ')})`, `${when}: the two-head context's shape (d_head = 8)`);
    // "Padded queries still produce outputs": every padded query row of the
    // combined rule has keys, and the core's weights on it add up to 1.
    const w = lab.sdpa(z([B, 1], T), z([B, 1], T), z([B, 1], T), { mask: pm, causal: true }).weights.data;
    let padded = 0;
    tokens.forEach((row, b) => row.forEach((id, i) => {
      if (id !== pad) return;
      padded++;
      const sum = w.subarray((b * T + i) * T, (b * T + i + 1) * T).reduce((a, x) => a + x, 0);
      assert.ok(Math.abs(sum - 1) < 1e-5, `${when}: padded query ${i + 1} of sequence ${b + 1} has an output row (weights sum ${sum}, want 1)`);
    }));
    return padded;
  };
  assert.ok(await check('defaults') > 0, 'the default tokens have padded queries, which the prose speaks of');
  assert.equal(await out(page, 'mask-cshape'), '(2, 1, 5, 5)', 'the lesson\'s combined mask (B, 1, T, T)');
  assert.equal(await out(page, 'mask-wshape2'), '(2, 2, 5, 5)', 'the lesson\'s weights with H = 2');
  assert.equal(await out(page, 'mask-context2'), '(2, 2, 5, 8)', 'the lesson\'s context with H = 2 heads of d_head = 8');
  await typeInto(page, field(page, 'mask-ct'), '7');
  await typeInto(page, gridInput(page, 'mask-tokens', 1, 4), '0');
  await page.waitForFunction(() => /mask\.ct=7/.test(location.hash));
  await check('T = 7, a padded token in sequence 2');
  const prose = (await page.locator('#masks > p').allTextContents()).join(' ');
  assert.match(prose, /such sequences must be dropped from the batch/, 'the prose says all-padding sequences are dropped before attention');
  assert.match(prose, /set to zero .* or left out of the loss/, 'the prose says padded queries\' outputs are zeroed or left out of the loss');
  assertClean(problems, 'masks, shapes');
  await context.close();
});

test('multi-head: the parameter count is the core module\'s weight arrays, 4 · d_model², the same for every H', async () => {
  const { context, page, problems } = await open('#multi-head');
  const seen = [];
  for (const [C, H] of [[32, 4], [32, 8], [32, 1], [24, 3]]) {
    await typeInto(page, field(page, 'mha-dmodel'), String(C));
    await typeInto(page, field(page, 'mha-heads'), String(H));
    await page.waitForFunction(([c, hh]) => document.querySelector('#multi-head [data-slot="summary"]').textContent.includes(`d_model = ${c} split over ${hh} head`), [C, H]);
    const seed = Number(await field(page, 'mha-seed').inputValue());
    const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: H, seed });
    const held = Object.values(mha.getWeights());
    mha.free();
    const weights = held.reduce((n, p) => n + p.weight.data.length, 0);
    const biases = held.reduce((n, p) => n + (p.bias ? p.bias.data.length : 0), 0);
    const shown = await outOrFail(page, 'mha-params', `d_model ${C}, H ${H}`);
    assert.equal(shown, String(weights), `d_model ${C}, H ${H}: the page shows ${shown} weights, the core's module holds ${weights}`);
    assert.equal(weights, 4 * C * C, `d_model ${C}, H ${H}: the module holds ${weights} weights, not 4 · d_model² = ${4 * C * C}`);
    const line = await page.locator('#multi-head [data-slot="summary"]').textContent();
    assert.ok(line.includes(`and ${biases} biases`), `d_model ${C}, H ${H}: the line names the ${biases} biases: "${line}"`);
    seen.push([C, shown]);
  }
  assert.equal(seen[0][1], seen[1][1], `at d_model 32 the count does not change with H: ${JSON.stringify(seen)}`);
  assert.equal(seen[0][1], seen[2][1], `at d_model 32 the count does not change with H: ${JSON.stringify(seen)}`);
  assertClean(problems, 'multi-head parameters');
  await context.close();
});

// ---------------------------------------------------------------------------
// Share links, the contents list and the Back button
// ---------------------------------------------------------------------------

test('share links: a number reads back as exactly the value the page used, in its shortest text', () => {
  const num = codec.num();
  const grid = codec.matrix(() => 1, () => 5);
  const values = [2.5e-7, 1.5e-6, 1e6, -0.125, 1 / 3, 0.1, -1e6, 1e-300];
  for (const v of values) {
    const text = num.encode(v);
    assert.equal(num.decode(text), v, `${v} was written as "${text}" and read back as ${num.decode(text)}`);
  }
  const row = [values.slice(0, 5)];
  assert.deepEqual(grid.decode(grid.encode(row)), row, `a row written as "${grid.encode(row)}"`);
  // Ordinary values stay as short as the learner typed them.
  assert.deepEqual([0.5, -2.25, 10, 0, 1e-6].map(num.encode), ['0.5', '-2.25', '10', '0', '0.000001']);
});

test('numbers: a large number keeps a float32\'s 7 significant digits in scientific notation, as the fixed form below 1e6 does; a count keeps 2; a typed value is echoed as typed', () => {
  // The one-query section with q = [1e6, 1e6] and k1 = [1, 0.2345]: the dot product 1234500 sits beside its scaled 872923.3.
  assert.equal(fmt(1234500), '1.2345e6');
  assert.equal(fmt(1234500 / Math.SQRT2), '872923.3');
  assert.equal(fmt(999999995904), '1.0e12', 'the issue\'s example: not 999999995904.000');
  assert.equal(fmt(-2.5e6, 4), '-2.5e6');
  assert.equal(fmt(16777216, 0), '1.7e7', 'a count (T² at T = 4096) stays short');
  assert.equal(fmt(999999.96), '1.0e6', 'a value that rounds to a million is written as one, not 1000000.0');
  assert.equal(fmt(999999.4), '999999.4');
  assert.equal(fmt(2.5e-7), '2.5e-7');
  assert.equal(fmtPlain(0.0001234), '0.0001234', 'a typed value keeps its digits (it was shown as 0.000123)');
  assert.equal(fmtPlain(1 / 3), '0.3333333');
  // In one vector, large numbers in scientific notation show the same decimals (the 3×3 flow view with a query entry of 1e6).
  assert.equal(fmtVec([1e6, 1, 1000001], 4), '[1.000000e6, 1.0000, 1.000001e6]');
  assert.equal(fmtVec([-2.5e6, 1.25e7, 4.4e-5], 3), '[-2.50e6, 1.25e7, 4.4e-5]', 'tiny values keep their own form');
  assert.equal(fmtVec([0.5, 2]), '[0.500, 2.000]');
});

test('share links: a whole number reads as the page\'s own fields read it, and its range is written in full', () => {
  const seed = codec.int(0, 2 ** 31 - 1);
  assert.equal(seed.decode('1e3'), 1000, 'a seed typed in a link as 1e3, as a field accepts it');
  assert.equal(seed.decode('2147483647'), 2 ** 31 - 1);
  for (const bad of ['1.5', '3e9', '-1', 'x']) {
    assert.throws(() => seed.decode(bad), (e) => e.message === 'a whole number from 0 to 2147483647 was expected',
      `"${bad}" is refused with the range in full, not as 2.147483647e9`);
  }
  assert.deepEqual(parseNumberText('3e9', { integer: true, min: 0, max: 2 ** 31 - 1 }).short, 'Out of range (0 to 2147483647)');
  // A number that is not whole keeps its short form: a limit of a million is 1e6.
  assert.deepEqual(parseNumberText('2e6', {}).short, 'Out of range (-1e6 to 1e6)');
});

test('typed or pasted text: invisible characters are dropped, full-width digits read, other scripts\' digits named', () => {
  assert.deepEqual(parseNumberText('\u200b2'), { ok: true, value: 2 }, 'a zero-width space before 2 (pasted) is not part of the number');
  assert.deepEqual(parseNumberText('\ufeff-0.5'), { ok: true, value: -0.5 });
  assert.deepEqual(parseNumberText('１.５'), { ok: true, value: 1.5 }, 'full-width digits are digits');
  assert.deepEqual(parseNumberText('－２．５'), { ok: true, value: -2.5 }, 'and a full-width sign and point');
  for (const other of ['10²', '2³', '①', '½']) assert.equal(parseNumberText(other).ok, false, `"${other}" is not read as another number`);
  assert.equal(parseNumberText('١٢').short, 'Not a number (use the digits 0–9)', 'Arabic-Indic digits: what to type instead');
  assert.equal(parseNumberText('abc').short, 'Not a number');
});

test('share links: a page opened from a link shows the same numbers as the page that made it, tiny values too', async () => {
  const { context, page, problems } = await open();
  // q = [1, 1000000] and k1 = [1, 0.00000025]: the tiny entry adds 0.25 to the dot product.
  await typeInto(page, gridInput(page, 'one-q', 0, 1), '1000000');
  await typeInto(page, gridInput(page, 'one-k', 0, 1), '0.00000025');
  await typeInto(page, field(page, 'grad-eps'), '0.0000015');
  await page.keyboard.press('Tab');
  await page.waitForFunction(() => location.hash.includes('grad.eps='));
  const href = page.url();
  assert.ok(href.includes('one.k=1,2.5e-7;0,1'), `the link holds the key exactly: ${href}`);
  assert.ok(href.includes('grad.eps=0.0000015'), `the link holds ε exactly: ${href}`);
  const shown = async (p) => ({
    scaled: await out(p, 'one-scaled'),
    weights: await out(p, 'one-weights'),
    fd: await p.locator('#gradients [data-slot="fd"]').textContent(),
    // The page writes a number back in its own notation (2.5e-7 for 0.00000025): the values are compared.
    inputs: await p.$$eval('#one-query input:not([type="checkbox"]), #gradients input:not([type="checkbox"])', (ns) => ns.map((n) => Number(n.value))),
  });
  const first = await shown(page);
  // The first scaled score, (1 + 0.25) / √2, from the core; without the tiny entry it would be 0.707.
  const core = lab.sdpa([[1, 1e6]], [[1, 2.5e-7], [0, 1]], [[10, 0], [0, 20]]);
  checkShown('the first scaled score', [first.scaled.split(',')[0]], [core.scores.data[0]], 3);
  assert.match(first.scaled, /^\[0\.884,/, 'the tiny key entry counts on the page that made the link');
  assert.match(first.fd, /±(0\.0000015|1\.5e-6) /, 'the nudge is the ε typed');

  const second = await open(href.slice(href.indexOf('#')));
  assert.deepEqual(await shown(second.page), first, 'the page opened from the link shows the same inputs and numbers');
  assertClean(problems, 'page that made the link');
  assertClean(second.problems, 'page opened from it');
  await second.context.close();
  await context.close();
});

test('a link with parts the page cannot use: the notice names each, what was given and what is allowed; the rest applies', async () => {
  const problems = readHash('view=dropout&drop.p=5&py.b=3&one.q=1,2,3&one.first=1', SECTIONS.filter((s) => s.fields && !s.create), VIEW_IDS).problems;
  assert.deepEqual(problems, [
    'one.q (“One query, two keys”) is “1,2,3”, but 1 row of 2 numbers was expected (“,” between numbers, “;” between rows)',
    'drop.p (“Dropout and row sums”) is “5”, but a number from 0 to 0.95 was expected',
    'py.b is not a key this page knows',
  ]);
  // A control or formatting character is written as its code: a right-to-left override cannot turn the notice around.
  const hostile = readHash('view=\u202emasks&mask.ct=4\u0000', SECTIONS.filter((s) => s.fields && !s.create), VIEW_IDS).problems;
  assert.deepEqual(hostile, [
    'view is “U+202Emasks”, which is not a section of this page',
    'mask.ct (“Masks”) is “4U+0000”, but a whole number from 1 to 8 was expected',
  ]);

  const { context, page, problems: seen } = await open('#view=dropout&drop.p=5');
  const notice = page.locator('#notice [data-notice-text]');
  const inView = async (p, id) => {
    const marked = await p.evaluate(() => document.querySelector('nav.toc a[aria-current="true"]')?.getAttribute('href') ?? null);
    assert.equal(marked, `#${id}`, `the link's section, ${id}, is the one the contents mark`);
    const top = await p.locator(`#${id}`).evaluate((n) => n.getBoundingClientRect().top);
    assert.ok(Math.abs(top) < 40, `${id} is scrolled to (top ${top})`);
  };
  assert.equal(await notice.textContent(), 'Part of this link could not be used: drop.p (“Dropout and row sums”) is “5”, '
    + 'but a number from 0 to 0.95 was expected. The rest of the link was applied.');
  await inView(page, 'dropout');
  assert.equal(await field(page, 'drop-p').inputValue(), '0.3', 'p keeps its default');
  assert.equal(await page.evaluate(() => location.hash), '#view=dropout', 'the part that was used is written back');

  // Every valid field applies, the bad one keeps its default.
  const second = await open('#view=one-query&one.q=1,2,3&one.first=1');
  assert.match(await second.page.locator('#notice [data-notice-text]').textContent(), /one\.q \(“One query, two keys”\) is “1,2,3”, but 1 row of 2 numbers was expected/);
  await inView(second.page, 'one-query');
  assert.equal(await second.page.locator('input[data-field="one-first"]').isChecked(), true, 'one.first=1 applies');
  assert.deepEqual(await readGrid(second.page, 'one-q'), [[1, 0]], 'q keeps its default');
  await expectSection1(second.page);

  // An unknown key is named; with nothing else in the link the page says it shows its defaults.
  const third = await open('#py.b=3');
  assert.equal(await third.page.locator('#notice [data-notice-text]').textContent(),
    'Part of this link could not be used: py.b is not a key this page knows. The page shows its defaults.');

  // Typed into a page in use: the values stay, the section named is shown.
  await typeInto(third.page, gridInput(third.page, 'ex-q', 0, 0), '4');
  await third.page.waitForFunction(() => /ex\.q=4,/.test(location.hash));
  await third.page.evaluate(() => { document.getElementById('notice').hidden = true; location.hash = '#view=masks&ex.q=1'; });
  await third.page.waitForFunction(() => !document.getElementById('notice').hidden);
  assert.match(await third.page.locator('#notice [data-notice-text]').textContent(), /ex\.q \(“The 3×3 example”\) is “1”, but 3 rows of 4 numbers were expected .*\. The page keeps its current values\./);
  await inView(third.page, 'masks');
  assert.match(third.page.url(), /view=masks&ex\.q=4,/, 'the values in use are kept');
  for (const s of [seen, second.problems, third.problems]) assertClean(s, 'links with bad parts');
  await third.context.close();
  await second.context.close();
  await context.close();
});

test('contents: following an entry is a step in the history; Back and Forward move between sections, edits and scrolling add none', async () => {
  const { context, page, problems } = await open();
  await page.goto('about:blank');
  await page.goto(suite.server.url);
  await waitForLesson(page);
  const where = () => page.evaluate(() => ({
    current: document.querySelector('nav.toc a[aria-current="true"]')?.getAttribute('href') ?? null,
    url: location.href,
    length: history.length,
  }));
  const top = (id) => page.locator(`#${id}`).evaluate((n) => Math.round(n.getBoundingClientRect().top));
  const start = await where();

  await page.locator('nav.toc a[href="#masks"]').click();
  await page.waitForFunction(() => location.hash.includes('view=masks'));
  // An edit and some scrolling inside the section replace the entry.
  await typeInto(page, gridInput(page, 'mask-tokens', 1, 4), '0');
  await page.waitForFunction(() => location.hash.includes('mask.tokens='));
  await page.mouse.wheel(0, 200);
  await page.waitForFunction(() => location.hash.includes('view=masks') && document.getElementById('masks').getBoundingClientRect().top < -100);
  const scrolled = await page.evaluate(() => window.scrollY);
  await page.locator('nav.toc a[href="#multi-head"]').click();
  await page.waitForFunction(() => location.hash.includes('view=multi-head'));
  assert.equal((await where()).length, start.length + 2, 'two entries followed, two steps in the history');

  await page.goBack();
  await page.waitForFunction(() => location.hash.includes('view=masks'));
  assert.equal((await where()).current, '#masks', 'Back: the contents mark the section before');
  await page.waitForFunction((y) => Math.abs(window.scrollY - y) < 2, scrolled, { timeout: 30000 })
    .catch(async () => assert.fail(`Back: the page is at ${await page.evaluate(() => window.scrollY)}, not where the learner was (${scrolled})`));
  assert.equal(await page.evaluate(() => document.activeElement.id), 'h-masks', 'Back: the next Tab goes on in that section');
  assert.match(page.url(), /mask\.tokens=/, 'Back keeps the edit');
  await expectSection5(page);

  await page.goBack();
  await page.waitForFunction(() => !location.hash.includes('view=masks'));
  assert.notEqual((await where()).current, '#masks', 'Back again: where the learner was before the contents');
  assert.match(page.url(), /^http/, 'still on the lesson');
  assert.match(page.url(), /mask\.tokens=/, 'still with the edit');

  await page.goForward();
  await page.waitForFunction(() => location.hash.includes('view=masks'));
  await page.goForward();
  await page.waitForFunction(() => location.hash.includes('view=multi-head'));
  // The contents mark the section the window shows, once the browser has put
  // back the scroll position: on a loaded machine a frame or more after the address.
  await waitForState(page, () => document.querySelector('nav.toc a[aria-current="true"]')?.getAttribute('href') === '#multi-head', null,
    async () => `Forward goes again: the contents mark ${(await where()).current}, multi-head's top is at ${await top('multi-head')}`);
  assert.ok(Math.abs(await top('multi-head')) < 40, `Forward: multi-head is scrolled to (top ${await top('multi-head')})`);
  assertClean(problems, 'Back and Forward');
  await context.close();
});

test('contents of a page holding some sections: each entry has its section\'s own number, as its heading, and an unnumbered one none (1280 px and 390 px)', async () => {
  const ids = ['masks', 'quiz', 'break-it'];
  // One page, opened at the first width and then narrowed.
  const widths = [1280, 390];
  const session = await openPage(suite.browser, suite.server.url, { viewport: { width: widths[0], height: 900 } });
  await session.page.route(suite.server.url, async (route) => {
    const response = await route.fetch();
    const body = (await response.text()).replace('<main id="lesson">', `<main id="lesson" data-sections="${ids.join(',')}">`);
    await route.fulfill({ response, body });
  });
  await session.page.goto(suite.server.url);
  await waitForLesson(session.page);
  for (const width of widths) {
    if (width !== widths[0]) await resizeTo(session.page, width, 900);
    const seen = await session.page.evaluate(() => [...document.querySelectorAll('nav.toc li')].map((li) => ({
      text: li.innerText.replace(/\s+/g, ' ').trim(),
      // What the list would draw by itself: a marker, or a counter before the link.
      marker: getComputedStyle(li).listStyleType,
      before: getComputedStyle(li.querySelector('a'), '::before').content,
      heading: document.querySelector(`${li.querySelector('a').getAttribute('href')} .sec-num`)?.textContent ?? null,
    })));
    const expected = ids.map((id) => {
      const n = sectionNumber(id);
      const title = SECTIONS.find((s) => s.id === id).title;
      return { text: n == null ? title : `${n}. ${title}`, marker: 'none', before: 'none', heading: n == null ? null : String(n) };
    });
    assert.deepEqual(seen.map((s) => ({ ...s, before: s.before === 'normal' ? 'none' : s.before })), expected, `${width} px: the contents`);
    await screenshot(session.page, `${SHOTS}toc-some-sections-${width}.png`);
    assertClean(session.problems, `${width} px`);
  }
  await session.context.close();
});

test('forced colours (a high-contrast theme): the data keeps its colours, keys tell the series apart, drawings keep a light ground', async () => {
  const { context, page, problems } = await open();
  await page.emulateMedia({ forcedColors: 'active', colorScheme: 'dark' });
  await renderEverySection(page);
  const seen = await page.evaluate(() => {
    const style = (sel) => getComputedStyle(document.querySelector(sel));
    const cell = document.querySelector('[data-heatmap="ex-weights"] .hm-cell[data-row="0"][data-col="0"]');
    return {
      cell: [getComputedStyle(cell).backgroundColor, cell.style.backgroundColor],
      ramp: style('#three-by-three .ramp-bar').backgroundImage,
      blocked: style('#masks .hm-cell.blocked').backgroundImage,
      swatches: [...document.querySelectorAll('#why-scale .key-swatch')].map((n) => getComputedStyle(n).borderTopColor),
      rope: style('#rotary .rope-svg').backgroundColor,
      curve: style('#watch-learn canvas[data-canvas="learn-curve"]').backgroundColor,
    };
  });
  assert.equal(seen.cell[0], seen.cell[1], `a weight keeps its shade of the ramp: ${JSON.stringify(seen.cell)}`);
  assert.match(seen.ramp, /gradient/, `the legend's ramp is drawn: ${seen.ramp}`);
  assert.match(seen.blocked, /gradient/, `a blocked pair keeps its hatch: ${seen.blocked}`);
  assert.ok(new Set(seen.swatches).size >= 2, `the chart keys have their series' colours: ${JSON.stringify(seen.swatches)}`);
  assert.equal(seen.rope, 'rgb(255, 255, 255)', 'the rotary picture has a light ground for its dark arrows');
  assert.equal(seen.curve, 'rgb(255, 255, 255)', 'the loss curve has a light ground for its dark axes');
  assertClean(problems, 'forced colours');
  await context.close();
});
