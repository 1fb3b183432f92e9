// Trained weights in the multi-head section, in Chromium: picking them trains
// a small previous-token model in the core (in slices, after the page is
// ready), fixes the section's sizes with an inline note, and draws maps in
// which a head puts at least 0.9 of every query's weight one place back.
// The numbers shown are the core's (checked against the same run in Node);
// the state survives a reload; a word the model does not know is refused in
// the page's words and the last maps stay, marked. At 1280 and 390 px, axe
// clean, no horizontal overflow. Screenshots go to tests/screenshots/.
// Linked highlighting: a weight lights its query row, its key, their tokens
// and its output row, by pointer and by keyboard.
// Run: node --test tests/multi-head-page.test.mjs
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { browserSuite, assertClean, runAxe, typeInto, screenshot, waitForState } from './helpers/browser.mjs';
import { loadAttention } from '../web/attention.js';
import { TRAINED } from '../web/sections/trained-weights.js';

const env = browserSuite();
const shots = fileURLToPath(new URL('./screenshots/', import.meta.url));
const TRAINED_MAPS = '#multi-head [data-slot="weights"][data-weights="trained"]';

let lab;
before(async () => { lab = await loadAttention({ simd: true }); });

/** The maps (H, T, T) the same training run gives in Node, for tokens. */
function expectedMaps(tokens) {
  const trainer = lab.createTrainer(TRAINED.options);
  trainer.step(TRAINED.steps);
  const mha = lab.createMultiHeadAttention({ dModel: TRAINED.options.dModel, numHeads: TRAINED.options.heads, bias: false });
  mha.setWeights(trainer.weights(0));
  const { weights } = mha.forward(trainer.layerInput(0, tokens), { causal: true });
  mha.free();
  trainer.free();
  return weights;
}

/** Every head's shown weights, as numbers: [head][row][col]. */
async function shownMaps(page, H, T) {
  const maps = [];
  for (let h = 0; h < H; h++) {
    const texts = await page.$$eval(`[data-heatmap="mha-weights-h${h}"] .hm-cell:not(.hm-extra)`, (ns) => ns.map((n) => n.textContent));
    assert.equal(texts.length, T * T, `head ${h + 1}: ${texts.length} cells`);
    maps.push(Array.from({ length: T }, (_, i) => texts.slice(i * T, (i + 1) * T).map(Number)));
  }
  return maps;
}

/** The heads (1-based) whose every query i > 1 puts at least `least` on key i - 1. */
function previousTokenHeads(maps, least) {
  return maps.flatMap((rows, h) => (rows.slice(1).every((row, i) => row[i] >= least) ? [h + 1] : []));
}

test('trained weights: a head looks one place back (>= 0.9), the numbers are the core\'s, the sizes are fixed and explained', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.dmodel=64&mha.heads=16&mha.t=8', { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#multi-head');
  assert.equal(await page.locator(TRAINED_MAPS).count(), 0, 'random weights first');
  await section.locator('input[type="radio"][value="trained"]').check();
  await page.waitForSelector(TRAINED_MAPS, { timeout: 90000 });

  // The sizes: fixed to the trained model's, disabled, and the note names what changed.
  assert.equal(await section.locator('input[data-field="mha-dmodel"]').inputValue(), '32');
  assert.equal(await section.locator('input[data-field="mha-heads"]').inputValue(), '4');
  for (const name of ['mha-dmodel', 'mha-heads', 'mha-size', 'mha-seed', 'mha-causal']) {
    assert.equal(await section.locator(`input[data-field="${name}"]`).isDisabled(), true, `${name} is fixed`);
  }
  assert.equal(await section.locator('input[data-field="mha-causal"]').isChecked(), true, 'causal, as in training');
  const note = await section.locator('[data-out="mha-trained-note"]').textContent();
  assert.match(note, /d_model = 32 and H = 4/);
  assert.match(note, /d_model was 64, now 32; H was 16, now 4/);

  // The maps: the core's numbers (the same run in Node), words on the axes, a previous-token head.
  const tokens = (await section.locator('[data-grid="mha-tokens"] input').evaluateAll((ns) => ns.map((n) => Number(n.value))));
  assert.deepEqual(tokens, [3, 1, 4, 1, 5, 9, 2, 6]);
  const T = tokens.length, H = TRAINED.options.heads;
  const maps = await shownMaps(page, H, T);
  const want = expectedMaps(tokens);
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const w = want.data[(h * T + i) * T + j], got = maps[h][i][j];
        assert.ok(Math.abs(got - w) <= Math.max(0.005 + 1e-6, 0.05 * w), `head ${h + 1} [${i + 1}, ${j + 1}]: page ${got}, core ${w}`);
      }
    }
  }
  const heads = previousTokenHeads(maps, 0.9);
  assert.ok(heads.length >= 1, `no head puts >= 0.9 on i - 1 in every row:\n${maps.map((m, h) => `head ${h + 1}: ${m.slice(1).map((row, i) => row[i]).join(' ')}`).join('\n')}`);
  assert.equal(await page.locator('[data-heatmap="mha-weights-h0"] .hm-rowhead').nth(1).textContent(), 't2 cat');
  await runAxe(page, 'multi-head, trained weights, 1280 px', { include: '#multi-head' });
  mkdirSync(shots, { recursive: true });
  await screenshot(section, `${shots}multi-head-trained-1280.png`);

  // A word the model does not know: refused in the page's words, the last maps kept and marked.
  await typeInto(page, section.locator('[data-grid="mha-tokens"] input[data-row="0"][data-col="2"]'), '1'); // "1" is a word ("cat")
  const lastValid = await shownMaps(page, H, T);
  await page.keyboard.type('2'); // "12" is not
  await page.waitForFunction(() => /knows 10 words/.test(document.querySelector('#multi-head [data-slot="status"]').textContent));
  const status = await section.locator('[data-slot="status"]').textContent();
  assert.match(status, /t3 = 12 is not one of them/);
  assert.doesNotMatch(status, /tokens entry|BAD_ARGUMENT/);
  assert.equal(await section.locator('[data-slot="weights"]').evaluate((n) => n.classList.contains('stale')), true, 'the last maps are marked');
  assert.deepEqual(await shownMaps(page, H, T), lastValid, 'the last valid maps stay');
  await typeInto(page, section.locator('[data-grid="mha-tokens"] input[data-row="0"][data-col="2"]'), '4');
  await page.waitForFunction(() => !document.querySelector('#multi-head [data-slot="weights"]').classList.contains('stale'));

  // The choice is in the link: a reload trains again and shows the same maps.
  // (a reload takes the address as it is: wait until the hash holds the last edit, written once edits pause)
  await page.waitForFunction(() => location.hash.includes('mha.weights=trained') && !/mha\.tokens=[^&]*\b12\b/.test(location.hash));
  await page.reload();
  await page.waitForSelector(TRAINED_MAPS, { timeout: 90000 });
  assert.deepEqual(await shownMaps(page, H, T), maps, 'the same maps after a reload');

  // Back to random: the fields are free again.
  await section.locator('input[type="radio"][value="random"]').check();
  await page.waitForSelector('#multi-head [data-slot="weights"][data-weights="random"]');
  assert.equal(await section.locator('input[data-field="mha-dmodel"]').isDisabled(), false);
  assert.equal(await section.locator('[data-out="mha-trained-note"]').isHidden(), true);
  assertClean(problems, 'multi-head, trained weights');
  await context.close();
});

test('trained weights at 390 px: the page is ready before training ends, no overflow, axe clean', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.weights=trained', { viewport: { width: 390, height: 844 } });
  await page.waitForSelector(TRAINED_MAPS, { timeout: 90000 });
  const maps = await shownMaps(page, TRAINED.options.heads, 5);
  assert.ok(previousTokenHeads(maps, 0.9).length >= 1, 'a previous-token head at 390 px too');
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal overflow');
  await runAxe(page, 'multi-head, trained weights, 390 px', { include: '#multi-head' });
  mkdirSync(shots, { recursive: true });
  await screenshot(page.locator('#multi-head'), `${shots}multi-head-trained-390.png`);
  assertClean(problems, 'multi-head, trained weights, 390 px');
  await context.close();
});

test('16 heads of 8 × 8: after an edit every head shows the core\'s weights, the far ones once the frame is painted', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.dmodel=64&mha.heads=16&mha.t=8', { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#multi-head');
  await typeInto(page, section.locator('[data-grid="mha-tokens"] input[data-row="0"][data-col="0"]'), '5');
  await page.keyboard.press('Enter');
  // Head 16 is several screens below the tokens: its map is written when the page is idle after the edit.
  await page.waitForFunction(() => document.querySelector('[data-heatmap="mha-weights-h15"] .hm-rowhead')?.textContent === 't1 mat', null, { timeout: 10000 });
  const tokens = await section.locator('[data-grid="mha-tokens"] input').evaluateAll((ns) => ns.map((n) => Number(n.value)));
  assert.deepEqual(tokens, [5, 1, 4, 1, 5, 9, 2, 6]);
  const x = new Float32Array(8 * 64);
  tokens.forEach((id, t) => { x[t * 64 + (id % 64)] = 8; }); // the page's toy one-hot embedding, size 8
  const mha = lab.createMultiHeadAttention({ dModel: 64, numHeads: 16, seed: 7 });
  const { weights } = mha.forward({ data: x, shape: [1, 8, 64] });
  mha.free();
  const maps = await shownMaps(page, 16, 8);
  const bad = [];
  maps.forEach((rows, h) => rows.forEach((row, i) => row.forEach((got, j) => {
    const w = weights.data[(h * 8 + i) * 8 + j];
    if (!(Math.abs(got - w) <= 0.005 + 1e-6)) bad.push(`head ${h + 1} [${i + 1}, ${j + 1}]: page ${got}, core ${w.toFixed(4)}`);
  })));
  assert.deepEqual(bad.slice(0, 8), [], `${bad.length} of ${16 * 64} weights differ`);
  // A screen reader reads each map as a grid, which takes the new labels and
  // numbers with the map: its headers and cells say what the map shows.
  for (const h of [0, 15]) {
    const map = page.locator(`[data-heatmap="mha-weights-h${h}"]`);
    const shown = await map.locator('.hm-head, .hm-cell').allTextContents();
    const heard = (await map.ariaSnapshot()).split('\n')
      .map((line) => line.match(/^\s+- (?:columnheader|rowheader|gridcell) "([^"]*)"/)?.[1]).filter((name) => name !== undefined);
    assert.equal(shown.length, 8 + 8 * 9, `head ${h + 1}: 8 column heads, 8 rows of a head and 8 weights`);
    assert.deepEqual(heard, shown, `head ${h + 1}: the grid's headers and cells say what the map shows`);
  }
  assertClean(problems, 'multi-head, 16 heads');
  await context.close();
});

test('16 heads of 8 × 8 at 390 px: a map wider than the screen scrolls in its own box, which says so; none is cut off', async () => {
  const { page, problems, context } = await env.open('#view=multi-head', { viewport: { width: 390, height: 844 } });
  const section = page.locator('#multi-head');
  await typeInto(page, section.locator('input[data-field="mha-heads"]'), '16');
  await page.keyboard.press('Enter');
  await typeInto(page, section.locator('input[data-field="mha-t"]'), '8');
  await page.keyboard.press('Enter');
  // The far maps are drawn once the page is idle, or when they come near.
  await page.waitForFunction(() => document.querySelectorAll('[data-heatmap^="mha-weights-h"] .hm-cell').length === 16 * 64, null, { timeout: 10000 });
  for (const wrap of await section.locator('.head-map .heatmap-wrap').all()) await wrap.scrollIntoViewIfNeeded();
  // The boxes are measured once the page is idle after the frames that lay
  // them out: wait until some box scrolls and each is marked exactly when it does.
  await waitForState(page, () => {
    const wraps = [...document.querySelectorAll('#multi-head .head-map .heatmap-wrap')];
    const scrolls = (n) => n.scrollWidth > n.clientWidth + 1;
    return wraps.some(scrolls) && wraps.every((n) => scrolls(n) === (n.dataset.overflows === '1'));
  }, null, 'at 390 px the head maps that scroll sideways are marked, and only those');
  const boxes = await section.locator('.head-map .heatmap-wrap').evaluateAll((ns) => ns.map((n) => ({
    map: n.querySelector('[data-heatmap]').dataset.heatmap, width: n.getBoundingClientRect().width,
    row: n.closest('.heads').getBoundingClientRect().width, scrolls: n.scrollWidth > n.clientWidth + 1, says: n.dataset.overflows === '1',
  })));
  assert.equal(boxes.length, 16);
  const cut = boxes.filter((b) => b.width > b.row + 0.5);
  assert.deepEqual(cut, [], 'a map box wider than the row of maps is cut off by the section');
  const silent = boxes.filter((b) => b.scrolls !== b.says);
  assert.deepEqual(silent, [], 'a box that scrolls sideways shows "Scroll sideways for more" (data-overflows), and only such a box');
  assert.ok(boxes.some((b) => b.scrolls), 'at 390 px an 8-column map of 16 heads is wider than the screen');
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no horizontal overflow');
  assertClean(problems, 'multi-head, 16 heads, 390 px');
  await context.close();
});

/** What is lit in the multi-head section, as "name:q,k,pos" (the source starred), sorted. */
function lit(page) {
  return page.$$eval('#multi-head .linked, #multi-head .link-source', (ns) => ns.map((n) => {
    const name = n.closest('[data-heatmap]')?.dataset.heatmap || n.closest('[data-grid]')?.dataset.grid || (n.closest('[data-slot="output"]') ? 'output' : n.tagName);
    return `${n.classList.contains('link-source') ? '*' : ''}${name}:${n.dataset.linkQ ?? '-'},${n.dataset.linkK ?? '-'},${n.dataset.linkPos ?? '-'}`;
  }).sort());
}

test('a head map far from the viewport holds about the place it takes once drawn, so the page does not jump as it comes into view', async () => {
  for (const [t, width] of [[2, 1280], [8, 390]]) {
    const { page, problems, context } = await env.open(`#view=one-query&mha.t=${t}`, { viewport: { width, height: 900 } });
    const sizes = () => page.$$eval('#multi-head .head-map', (figs) => figs.map((f) => {
      const r = f.getBoundingClientRect();
      return [r.width, r.height];
    }));
    const far = await sizes(); // the multi-head section is far below: its maps are not laid out
    assert.equal(await page.$eval('#multi-head .head-map', (f) => f.checkVisibility({ contentVisibilityAuto: true })), false, `T = ${t}: the maps start far from the viewport`);
    await page.locator('#multi-head [data-slot="weights"]').scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    const drawn = await sizes();
    far.forEach(([w, h], k) => {
      const [dw, dh] = drawn[k];
      assert.ok(Math.abs(h - dh) <= 0.15 * dh && Math.abs(w - dw) <= 0.15 * dw,
        `T = ${t} at ${width} px, head ${k + 1}: ${w.toFixed(0)} × ${h.toFixed(0)} px while far, ${dw.toFixed(0)} × ${dh.toFixed(0)} px drawn`);
    });
    assertClean(problems, `head maps at T = ${t}`);
    await context.close();
  }
});

test('linked highlighting: a weight lights its query row and key in every head, their tokens and its output row; keyboard too', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.heads=2&mha.t=3', { viewport: { width: 1280, height: 900 } });
  await page.locator('details[data-disclosure="mha-output"] > summary').click();
  // The table is drawn by the disclosure's toggle event, which comes a task after the click.
  await page.waitForFunction(() => document.querySelectorAll('#multi-head [data-slot="output"] td').length > 0);
  const outputCells = await page.locator('#multi-head [data-slot="output"] td').count();
  const C = outputCells / 3;
  const cell = page.locator('[data-heatmap="mha-weights-h1"] .hm-cell[data-row="2"][data-col="1"]');
  await cell.hover();
  const expected = [
    '*mha-weights-h1:2,1,-',
    'mha-weights-h0:2,1,-', // the same query and key in the other head
    'mha-weights-h0:2,-,-', 'mha-weights-h1:2,-,-', // the query's row headings
    'mha-weights-h0:-,1,-', 'mha-weights-h1:-,1,-', // the key's column headings
    'mha-tokens:-,-,1', 'mha-tokens:-,-,1', 'mha-tokens:-,-,2', 'mha-tokens:-,-,2', // the key's and the query's tokens (heading, cell)
    ...Array.from({ length: C + 1 }, () => 'output:2,-,-'), // the query's output row (heading and C values)
  ].sort();
  assert.deepEqual(await lit(page), expected, 'hover');
  assert.equal(await page.locator('[data-heatmap="mha-weights-h1"] .hm-cell[data-row="2"][data-col="0"]').evaluate((n) => n.classList.contains('linked')), false, 'another key of the same row is not lit');
  await page.mouse.move(0, 0);
  assert.deepEqual(await lit(page), [], 'nothing lit once the pointer leaves');

  // Keyboard: the map's one tab stop, arrows to (3, 2); focus lights the same.
  await page.locator('[data-heatmap="mha-weights-h1"] .hm-cell[tabindex="0"]').focus();
  for (const key of ['ArrowDown', 'ArrowDown', 'ArrowRight']) await page.keyboard.press(key);
  assert.equal(await page.evaluate(() => `${document.activeElement.dataset.row},${document.activeElement.dataset.col}`), '2,1');
  assert.deepEqual(await lit(page), expected, 'focus');
  // A screen reader hears a grid cell named by the number shown, in the row of query 3 and the column of key 2.
  assert.equal(await cell.ariaSnapshot(), `- gridcell "${await cell.textContent()}"`, 'the focused weight (head 2, query 3, key 2) is a grid cell named by the number shown');
  const grid = page.locator('#multi-head').getByRole('grid', { name: 'Head 2 attention weights (rows: queries, columns: keys)', exact: true });
  const row = grid.getByRole('row').nth(3);
  assert.equal(await row.getByRole('gridcell').nth(1).evaluate((n) => n === document.activeElement), true, 'the focused weight is the grid\'s row 3, cell 2');
  assert.match(await row.getByRole('rowheader').textContent(), /^t3 \S+$/);
  assert.match(await grid.getByRole('row').first().getByRole('columnheader').nth(1).textContent(), /^t2 \S+$/);
  // A token lights its row and its column in every map.
  await page.locator('[data-grid="mha-tokens"] input[data-col="0"]').focus();
  const fromToken = await lit(page);
  assert.ok(fromToken.includes('mha-weights-h0:0,2,-') && fromToken.includes('mha-weights-h1:2,0,-') && !fromToken.includes('mha-weights-h0:1,2,-'), fromToken.join(' '));
  await runAxe(page, 'multi-head with a focused weight', { include: '#multi-head' });
  assertClean(problems, 'multi-head links');
  await context.close();
});

test('Positions T, then a click in the new token (no Tab): the cell keeps the focus and takes what is typed', async () => {
  const { page, problems, context } = await env.open('#view=multi-head', { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#multi-head');
  await typeInto(page, section.locator('input[data-field="mha-t"]'), '6');
  const t6 = section.locator('[data-grid="mha-tokens"] input[data-col="5"]');
  await t6.click(); // the click's mousedown takes the focus from "Positions T"
  await page.keyboard.press('Control+A');
  await page.keyboard.type('8');
  assert.deepEqual(await t6.evaluate((n) => [n.value, n === document.activeElement]), ['8', true], 'the t6 cell has the focus and the 8');
  assert.equal(await page.locator('[data-heatmap="mha-weights-h0"] .hm-rowhead').nth(5).textContent(), 't6 dog', 'the maps read token 8 (“dog”)');
  assertClean(problems, 'Positions T then a token');
  await context.close();
});

test('leak check: the message describes the latest edit, also when an earlier token changes after the last one', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.causal=1', { viewport: { width: 1280, height: 900 } });
  const token = (j) => page.locator(`[data-grid="mha-tokens"] input[data-col="${j}"]`);
  const leak = page.locator('#multi-head [data-slot="leak"]');
  await typeInto(page, token(4), '7');
  assert.match(await leak.textContent(), /^✓ You changed t5 \(5 → 7\)\. The outputs of t1, t2, t3, t4 did not move/);
  await typeInto(page, token(0), '8');
  const text = await leak.textContent();
  assert.doesNotMatch(text, /t5 \(5 → 7\)|did not move/, 'no message about the earlier edit stays');
  assert.match(text, /^You changed t1 \(3 → 8\), not the last token t5/);
  // An edit that changes nothing (the same number typed again) keeps the message.
  await typeInto(page, token(0), '8');
  assert.equal(await leak.textContent(), text);
  // The last token again: the check runs again, from the state after the t1 edit.
  await typeInto(page, token(4), '2');
  assert.match(await leak.textContent(), /^✓ You changed t5 \(7 → 2\)/);
  assertClean(problems, 'leak check messages');
  await context.close();
});

test('sizes line: one head is "1 head", several are "heads"', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.dmodel=1&mha.heads=1', { viewport: { width: 1280, height: 900 } });
  const summary = page.locator('#multi-head [data-slot="summary"]');
  assert.match(await summary.textContent(), /^d_model = 1 split over 1 head gives d_head = 1\./);
  await typeInto(page, page.locator('input[data-field="mha-dmodel"]'), '4');
  await typeInto(page, page.locator('input[data-field="mha-heads"]'), '2');
  assert.match(await summary.textContent(), /^d_model = 4 split over 2 heads gives d_head = 2\./);
  assertClean(problems, 'heads in the sizes line');
  await context.close();
});

test('the prose\'s sizes are the starting ones and say so: after an edit the sizes line gives others', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.dmodel=8&mha.heads=2', { viewport: { width: 1280, height: 900 } });
  assert.match(await page.locator('#multi-head [data-slot="summary"]').textContent(), /^d_model = 8 split over 2 heads/);
  const prose = await page.locator('#multi-head > p').allTextContents();
  // A sentence of the fixed prose that names sizes other than those in use must say they are the starting ones.
  const sentences = prose.flatMap((p) => p.split(/(?<=\.)\s+/)).filter((s) => /dmodel = 32\b|H = 4\b/.test(s));
  assert.ok(sentences.length > 0, 'the prose names the starting sizes');
  for (const s of sentences) assert.match(s, /start/i, `d_model is 8 and H is 2 now, yet the prose says: "${s}"`);
  assertClean(problems, 'sizes in the prose');
  await context.close();
});

test('trained weights: the prose does not say the first query looks one place back, where the map shows 1 on itself', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.weights=trained', { viewport: { width: 1280, height: 900 } });
  await page.waitForSelector(TRAINED_MAPS, { timeout: 90000 });
  const maps = await shownMaps(page, TRAINED.options.heads, 5);
  assert.ok(maps.every((rows) => rows[0][0] === 1), 'query 1 can only see itself: 1 on key 1 in every head');
  const prose = (await page.locator('#multi-head > p').allTextContents()).join(' ');
  const claim = prose.split(/(?<=\.)\s+/).find((s) => /one place back/.test(s));
  assert.match(claim, /after the first|but the first|except the first/, `query 1 has no earlier position, yet the prose says: "${claim}"`);
  assertClean(problems, 'trained, the first query');
  await context.close();
});

test('leak check with one position: no earlier output exists, and the line does not say one stayed put', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.t=1&mha.tokens=3&mha.causal=1', { viewport: { width: 1280, height: 900 } });
  await typeInto(page, page.locator('[data-grid="mha-tokens"] input[data-col="0"]'), '4');
  const text = await page.locator('#multi-head [data-slot="leak"]').textContent();
  assert.match(text, /You changed t1 \(3 → 4\)/);
  assert.doesNotMatch(text, /did not move|keeps the future out|^✓/, `with T = 1 nothing could have moved: "${text}"`);
  assert.match(text, /no earlier position/);
  assertClean(problems, 'leak check, one position');
  await context.close();
});

test('a link whose d_model the heads do not split marks both fields, described by the status line, until a valid H', async () => {
  const { page, problems, context } = await env.open('#view=multi-head&mha.dmodel=30&mha.heads=4', { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#multi-head');
  const status = section.locator('p.core-error[role="status"]');
  assert.match(await status.textContent(), /d_model = 30 cannot be split evenly over H = 4 heads/);
  const statusId = await status.getAttribute('id');
  const marks = () => section.locator('input[data-field="mha-dmodel"], input[data-field="mha-heads"]').evaluateAll((inputs, id) => inputs
    .map((n) => `${n.dataset.field}: ${n.getAttribute('aria-invalid') === 'true' ? 'invalid' : 'valid'}${(n.getAttribute('aria-describedby') ?? '').split(' ').includes(id) ? ', described by the status line' : ''}`), statusId);
  assert.deepEqual(await marks(), ['mha-dmodel: invalid, described by the status line', 'mha-heads: invalid, described by the status line']);
  await typeInto(page, section.locator('input[data-field="mha-heads"]'), '5');
  await waitForState(page, () => !document.querySelector('#multi-head input[aria-invalid="true"]'), null,
    async () => `H = 5 splits d_model = 30, and no field stays marked: ${JSON.stringify(await marks())}`);
  assert.deepEqual(await marks(), ['mha-dmodel: valid', 'mha-heads: valid']);
  assertClean(problems, 'unsplit d_model from a link');
  await context.close();
});

test('"Draw new weights" says the new seed and a query whose strongest key changed, as the maps show it', async () => {
  const { page, problems, context } = await env.open('#view=multi-head', { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#multi-head');
  const before = await shownMaps(page, 4, 5);
  const said = section.locator('[data-said="multi-head"]');
  await section.locator('button[data-action="mha-draw"]').focus();
  await page.keyboard.press('Enter');
  await waitForState(page, () => document.querySelector('#multi-head [data-said="multi-head"]').textContent !== '', null, 'the draw is said');
  assert.equal(await section.locator('input[data-field="mha-seed"]').inputValue(), '8');
  const text = await said.textContent();
  const m = /^New weights from seed 8: in head (\d), query t(\d) now looks most at t(\d) \(([\d.]+)\), no longer at t(\d)\.$/.exec(text);
  assert.ok(m, `said after "Draw new weights": "${text}"`);
  const [head, query, key, weight, was] = m.slice(1, 5).map(Number).concat(Number(m[5]));
  const after = await shownMaps(page, 4, 5);
  const row = after[head - 1][query - 1];
  assert.equal(row[key - 1], weight, `head ${head}, query t${query}: the map shows ${row[key - 1]} at t${key}, the sentence ${weight}`);
  assert.equal(Math.max(...row), weight, `head ${head}, query t${query}: row ${JSON.stringify(row)}, its largest is not at t${key}`);
  const old = before[head - 1][query - 1];
  assert.equal(Math.max(...old), old[was - 1], `head ${head}, query t${query} before: row ${JSON.stringify(old)}, its largest is not at t${was}`);
  assert.notEqual(was, key, 'the strongest key changed');
  assertClean(problems, 'draw new weights');
  await context.close();
});
