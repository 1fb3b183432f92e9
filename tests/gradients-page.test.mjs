// The "How the gradient flows" section in Chromium: the numbers it shows are
// the core's, blocked pairs show an exact 0, a step lowers the loss and moves
// the weights, the finite-difference check shows two agreeing numbers, a bad
// edit keeps the last valid state, and the section passes axe-core at both widths.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadAttention } from '../web/attention.js';
import { browserSuite, assertClean, runAxe, typeInto, screenshot, resizeTo } from './helpers/browser.mjs';
// The section's fixed keys and values and its default queries and target.
const K = { data: [1, 0, 0, 1, 1, 1, -1, 0.5], shape: [4, 2] };
const V = { data: [1, 0, 0, 1, 1, 1, 2, -1], shape: [4, 2] };
const Q = [1, 0, 0, 1, 1, 1, 0.5, -1];
const TARGET = [0, 1, 1, 0, 0.5, 0.5, 1, 1];

const suite = browserSuite();
let lab;
before(async () => { lab = await loadAttention(); });
const open = (viewport = { width: 1280, height: 900 }) => suite.open('#gradients', { viewport });

/** The core's loss and gradients for queries q (flat) and the default target. */
function coreGradients(q, causal = true) {
  const qt = { data: q, shape: [4, 2] };
  const { output, weights } = lab.sdpa(qt, K, V, { causal });
  const dOutput = { data: output.data.map((o, i) => o - TARGET[i]), shape: [4, 2] };
  const loss = dOutput.data.reduce((s, d) => s + 0.5 * d * d, 0);
  return { loss, weights, ...lab.sdpaBackward(qt, K, V, dOutput, { causal }) };
}

const cells = (page, name) => page.$$eval(`[data-heatmap="${name}"] .hm-cell`, (ns) => ns.map((n) => ({
  text: n.textContent, blocked: n.classList.contains('blocked'), leak: n.classList.contains('leak') })));
const tableValues = (page, name) => page.$$eval(`[data-values="${name}"] td[data-row]`, (ns) => ns.map((n) => Number(n.textContent)));
const out = async (page, key) => Number((await page.locator(`[data-out="${key}"]`).textContent()).replace('−', '-'));

function near(label, got, want, tol) {
  const bad = Array.from(want).map((w, i) => [i, got[i], w]).filter(([, g, w]) => !(Math.abs(g - w) <= tol));
  assert.equal(got.length, want.length, `${label}: ${got.length} numbers shown, ${want.length} computed`);
  assert.ok(bad.length === 0, `${label}: entries differ beyond ${tol}: ${bad.slice(0, 4).map(([i, g, w]) => `[${i}] page ${g} core ${w}`).join('; ')}`);
}

test('the section shows the core\'s loss, gradients and exact zeros on blocked pairs', async () => {
  const { page, problems, context } = await open();
  const sections = await page.$$eval('main > section', (ns) => ns.map((n) => n.id));
  assert.equal(sections[sections.indexOf('masks') + 1], 'gradients', 'the section comes right after the masks');
  const want = coreGradients(Q);
  near('loss', [await out(page, 'grad-loss')], [want.loss], 5e-5);
  near('dV', await tableValues(page, 'grad-dv'), want.dv.data, 5e-5);
  near('dQ', await tableValues(page, 'grad-dq'), want.dq.data, 5e-5);
  for (const [name, tensor] of [['grad-dprobs', want.dProbs], ['grad-dscores', want.dScores]]) {
    const shown = await cells(page, name);
    near(name, shown.map((c) => Number(c.text)), tensor.data, 5e-4);
    shown.forEach((c, at) => {
      const [i, j] = [Math.floor(at / 4), at % 4];
      assert.equal(c.blocked, j > i, `${name} [${i}, ${j}] is ${c.blocked ? '' : 'not '}drawn blocked`);
      if (c.blocked) assert.equal(c.text, '0', `${name} [${i}, ${j}] shows ${c.text}`);
      assert.equal(c.leak, false);
    });
  }
  // Without the causal rule nothing is blocked.
  await page.locator('[data-field="grad-causal"]').check();
  await page.locator('[data-field="grad-causal"]').uncheck();
  await page.waitForFunction(() => !document.querySelector('[data-heatmap="grad-dprobs"] .blocked'));
  near('loss without the mask', [await out(page, 'grad-loss')], [coreGradients(Q, false).loss], 5e-5);
  assertClean(problems, 'gradients section');
  await context.close();
});

test('the steps\' text agrees with the maps: dProbs = dOutput · Vᵀ where the mask lets a weight through, and the text says why a blocked one shows 0 where that product is not 0', async () => {
  const { page, problems, context } = await open();
  const want = coreGradients(Q);
  // dOutput · Vᵀ in float64, from the core's output and the default target.
  const dOut = Array.from(lab.sdpa({ data: Q, shape: [4, 2] }, K, V, { causal: true }).output.data, (o, i) => o - TARGET[i]);
  const product = (i, j) => dOut[2 * i] * V.data[2 * j] + dOut[2 * i + 1] * V.data[2 * j + 1];
  const shown = await cells(page, 'grad-dprobs');
  const through = shown.flatMap((c, at) => (c.blocked ? [] : [[at, Number(c.text), product(Math.floor(at / 4), at % 4)]]));
  const bad = through.filter(([, got, w]) => Math.abs(got - w) > 5e-4);
  assert.equal(bad.length, 0, `dProbs shown vs dOutput · Vᵀ: ${bad.map(([at, g, w]) => `[${Math.floor(at / 4) + 1}, ${at % 4 + 1}] ${g} vs ${w.toFixed(4)}`).join('; ')}`);
  // Some blocked pair shows 0 where the product is not 0 (query 2, key 4: about −2.01 here) …
  const blockedNonZero = shown.flatMap((c, at) => (c.blocked && Math.abs(product(Math.floor(at / 4), at % 4)) > 0.1 ? [at] : []));
  assert.ok(blockedNonZero.length > 0 && blockedNonZero.every((at) => shown[at].text === '0' && want.dProbs.data[at] === 0), 'a blocked pair whose product is not 0 shows the core\'s 0');
  // … which the text must explain, not contradict.
  const steps = await page.locator('#gradients ol.passes > li').allTextContents();
  assert.match(steps[0], /each weight the mask lets through receives dProbs = dOutput · Vᵀ/, `the mix step: ${steps[0]}`);
  assert.match(steps[2], /dOutput · Vᵀ at that place need not be 0/, `the mask step: ${steps[2]}`);
  assertClean(problems, 'gradient text');
  await context.close();
});

test('one step lowers the loss, moves q and the weights, and lands in the URL hash', async () => {
  const { page, problems, context } = await open();
  const before = await out(page, 'grad-loss');
  const weightsBefore = (await cells(page, 'grad-weights')).map((c) => c.text);
  const dq = coreGradients(Q).dq.data;
  await page.locator('[data-action="grad-step"]').click();
  await page.waitForSelector('[data-out="grad-after"]');
  const after = await out(page, 'grad-loss');
  assert.ok(after < before, `the loss went from ${before} to ${after}`);
  near('loss before', [await out(page, 'grad-before')], [before], 5e-5);
  near('loss after', [await out(page, 'grad-after')], [after], 5e-5);
  const q = await page.$$eval('[data-grid="grad-q"] input', (ns) => ns.map((n) => Number(n.value)));
  near('q after the step', q, Q.map((x, i) => Math.round((x - 0.5 * dq[i]) * 1000) / 1000), 1e-9);
  near('the loss after is the core\'s for the new q', [after], [coreGradients(q).loss], 5e-5);
  assert.notDeepEqual((await cells(page, 'grad-weights')).map((c) => c.text), weightsBefore);
  await page.waitForFunction(() => /grad\.q=/.test(location.hash), null, { timeout: 30000 }); // written once edits pause
  assertClean(problems, 'after a step');
  await context.close();
});

test('a step that would take q past what a cell holds (±1e6) is refused, and q and the link stay as they were', async () => {
  const hash = '#view=gradients&grad.lr=100&grad.target=1e6,-1e6;1e6,-1e6;1e6,-1e6;1e6,-1e6&grad.causal=0';
  const { page, problems, context } = await suite.open(hash, { viewport: { width: 1280, height: 900 } });
  const qs = () => page.$$eval('[data-grid="grad-q"] input', (ns) => ns.map((n) => Number(n.value)));
  const status = page.locator('#gradients .core-error').first();
  let refused = false;
  for (let n = 0; n < 12 && !refused; n++) {
    const before = await qs();
    await page.locator('[data-action="grad-step"]').click();
    refused = await status.isVisible();
    const q = await qs();
    if (refused) {
      assert.deepEqual(q, before, 'a refused step leaves q as it was');
      assert.match(await status.textContent(), /^This step would take query \d, d\d to -?[\d.e]+, past what a cell holds \(-1e6 to 1e6\): lower the step size\. Q is as it was\.$/);
    }
    assert.ok(q.every((x) => Math.abs(x) <= 1e6), `step ${n + 1}: every cell of q within ±1e6: ${q}`);
  }
  assert.ok(refused, 'with a target of ±1e6 and a step size of 100, a step would pass 1e6, and is refused');
  // The link the page writes reads back: no part of it is refused.
  await page.waitForFunction(() => /grad\.lr=100/.test(location.hash), null, { timeout: 30000 });
  const second = await suite.open(new URL(page.url()).hash, { viewport: { width: 1280, height: 900 } });
  assert.equal(await second.page.locator('#notice').isHidden(), true, `the page's own link opens without a notice: ${await second.page.locator('#notice').textContent()}`);
  assertClean(second.problems, 'reopened link');
  await second.context.close();
  assertClean(problems, 'refused step');
  await context.close();
});

test('a nudge that float32 loses (q = 1e6, ε = 1e-6) gives no slope: the page says why in its own words, and shows no NaN', async () => {
  const { page, problems, context } = await suite.open('#view=gradients&grad.q=1000000,0;0,1;1,1;0.5,-1&grad.eps=0.000001&grad.row=1&grad.col=1',
    { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#gradients');
  assert.equal(await section.locator('.core-error').first().textContent(),
    'ε = 1e-6 is lost in float32 at query 1, entry 1, which holds 1e6: q ± ε rounds back to q, so there is no slope to measure. Use a larger ε.');
  const fd = await section.locator('[data-slot="fd"]').textContent();
  assert.match(fd, /^Query 1, entry 1: the backward pass gives 0; the nudge by ±1e-6 gives no slope here/);
  assert.doesNotMatch(await section.textContent(), /NaN/, 'no NaN anywhere in the section');
  // A larger ε measures a slope again, and the message goes.
  await typeInto(page, section.locator('input[data-field="grad-eps"]'), '0.5');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#gradients [data-out="grad-slope"]'));
  assert.equal(await section.locator('.core-error').first().isHidden(), true);
  assertClean(problems, 'lost nudge');
  await context.close();
});

test('as the text says: without the causal rule a step of 50 overshoots (the loss grows); with it, query 1\'s row of dQ is 0', async () => {
  const { page, problems, context } = await open();
  const text = await page.locator('#gradients').textContent();
  assert.match(text, /untick Causal and try a step size of 50/);
  const causal = coreGradients(Q);
  assert.deepEqual(Array.from(causal.dq.data.slice(0, 2)), [0, 0], 'query 1 sees key 1 only: its dQ row is 0');
  await page.locator('[data-field="grad-causal"]').uncheck();
  await page.waitForFunction(() => !document.querySelector('[data-heatmap="grad-dprobs"] .blocked'));
  await typeInto(page, page.locator('input[data-field="grad-lr"]'), '50');
  await page.keyboard.press('Enter');
  const before = await out(page, 'grad-loss');
  await page.locator('[data-action="grad-step"]').click();
  await page.waitForSelector('[data-out="grad-after"]');
  const after = await out(page, 'grad-loss');
  assert.ok(after > before, `a step of 50 without the mask: the loss went from ${before} to ${after}`);
  assertClean(problems, 'overshoot');
  await context.close();
});

test('the finite-difference check shows both numbers, and they agree', async () => {
  const { page, problems, context } = await open();
  for (const [row, col] of [[2, 1], [4, 2]]) {
    await page.locator('[data-field="grad-row"]').fill(String(row));
    await page.locator('[data-field="grad-row"]').press('Enter');
    await page.locator('[data-field="grad-col"]').fill(String(col));
    await page.locator('[data-field="grad-col"]').press('Enter');
    await page.waitForFunction((r) => document.querySelector('[data-slot="fd"]').textContent.startsWith(`Query ${r},`), row);
    const analytic = await out(page, 'grad-analytic');
    const slope = await out(page, 'grad-slope');
    near(`dq[${row}, ${col}]`, [analytic], [coreGradients(Q).dq.data[(row - 1) * 2 + col - 1]], 5e-4);
    assert.ok(Math.abs(analytic - slope) <= 1e-3, `query ${row}, entry ${col}: backward ${analytic}, slope ${slope}`);
  }
  assertClean(problems, 'finite differences');
  await context.close();
});

test('with a tiny nudge the two numbers part after the second digit, and the prose does not promise that they agree', async () => {
  const { page, problems, context } = await suite.open('#view=gradients&grad.eps=0.000001', { viewport: { width: 1280, height: 900 } });
  const analytic = await out(page, 'grad-analytic');
  const slope = await out(page, 'grad-slope');
  assert.ok(Math.abs(analytic - slope) > 1e-3, `ε = 1e-6 loses digits to float32 rounding: backward ${analytic}, slope ${slope}`);
  const prose = await page.locator('#gradients > p').allTextContents();
  const promise = prose.flatMap((p) => p.split(/(?<=\.)\s+/)).find((s) => /should agree|agree to several digits/.test(s));
  assert.ok(promise === undefined || /moderate|too small|tiny|smaller/.test(promise),
    `the page shows ${analytic} and ${slope}, yet says: "${promise}"`);
  assertClean(problems, 'finite differences, tiny nudge');
  await context.close();
});

test('a bad edit shows an inline message and keeps the last valid numbers', async () => {
  const { page, problems, context } = await open();
  const loss = await out(page, 'grad-loss');
  const input = page.locator('[data-grid="grad-target"] input[data-row="0"][data-col="0"]');
  await input.fill('abc');
  await input.press('Enter');
  assert.equal(await input.getAttribute('aria-invalid'), 'true');
  assert.equal(await out(page, 'grad-loss'), loss);
  await input.fill('3');
  await input.press('Enter');
  await page.waitForFunction((l) => document.querySelector('[data-out="grad-loss"]').textContent !== l, String(loss.toFixed(4)));
  assert.notEqual(await out(page, 'grad-loss'), loss);
  assertClean(problems, 'bad edit');
  await context.close();
});

test('at 1280 px and 390 px: no sideways scroll, and axe-core finds nothing serious', async () => {
  // One page, opened at the first width and resized to the next.
  const WIDTHS = [1280, 390];
  const { page, problems, context } = await open({ width: WIDTHS[0], height: 900 });
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, 900);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${width} px scrolls sideways`);
    await runAxe(page, `gradients section at ${width} px`, { include: '#gradients' });
    await screenshot(page.locator('#gradients'), fileURLToPath(new URL(`./screenshots/gradients-${width}.png`, import.meta.url)));
    assertClean(problems, `${width} px`);
  }
  await context.close();
});
