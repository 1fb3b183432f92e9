// What the lesson page's live regions say, recorded as a screen reader would
// hear it: a region says nothing while the page loads (its first text is in
// place before it is live), it still speaks after a learner's edit, training
// the multi-head model is announced at its start and end only, the progress
// panel says only a change of score, and the steppers' arrows are not read.
// A section with inputs says the result of a learner's edit once, after the
// edits pause, with the numbers the page shows (also those whose verdicts
// and steps are shown beside the inputs: those texts are not live, as they
// change with every keystroke); a section redrawn because it reads
// another's state says nothing, and neither does a refused edit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, typeInto } from './helpers/browser.mjs';
import { QUESTIONS } from '../web/quiz-questions.js';
import { EXERCISES } from '../web/exercises.js';
import { TRAINED } from '../web/sections/trained-weights.js';
import { ANNOUNCE_DELAY } from '../web/lesson-announce.js';

const suite = browserSuite();

/** The full lesson's score max: the questions and the break-it cards. */
const MAX = QUESTIONS.length + EXERCISES.length;

/** The parts of the page this file watches: each section by its id, the progress panel by [data-progress]. */
const WATCHED = ['rotary', 'conventions', 'kv-cache', 'online-softmax', 'dropout', 'multi-head', 'progress',
  'one-query', 'three-by-three', 'why-scale', 'shapes', 'masks', 'self-cross', 'observability', 'gradients', 'pytorch', 'watch-learn'];

/**
 * Installed before the page loads: window.liveSaid logs every change of text
 * inside a live region (aria-live not "off", or role status or alert) as
 * { ms, where, text }, where is the section's id ("progress" for the progress
 * panel) and text the region's whole text after the change.
 */
function recordLive() {
  const LIVE = '[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"]';
  window.liveSaid = [];
  new MutationObserver((changes) => {
    const seen = new Set();
    for (const change of changes) {
      const node = change.target.nodeType === 1 ? change.target : change.target.parentElement;
      const region = node?.closest(LIVE);
      if (!region || seen.has(region)) continue;
      seen.add(region);
      const where = region.closest('[data-progress]') ? 'progress' : region.closest('main > section, section[id]')?.id ?? '?';
      window.liveSaid.push({ ms: Math.round(performance.now()), where, text: region.textContent.trim() });
    }
  }).observe(document, { subtree: true, childList: true, characterData: true });
}

async function open(hash) {
  const session = await suite.open(hash, { viewport: { width: 1280, height: 900 }, init: recordLive });
  await session.page.waitForTimeout(2000); // the late parts of the first draw (means, timings) are in
  return session;
}

/**
 * The log since the last call, for the watched parts of the page. A region
 * emptied says nothing to a screen reader, so an empty text is not logged.
 */
const said = async (page) => (await page.evaluate(() => window.liveSaid.splice(0))).filter((s) => WATCHED.includes(s.where) && s.text !== '');

/** The live region holding `selector`'s element now, described, or null. */
const liveRegionOf = (page, selector) => page.evaluate((sel) => {
  const region = document.querySelector(sel)?.closest('[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"]');
  return region ? `${region.tagName.toLowerCase()} aria-live=${region.getAttribute('aria-live')}` : null;
}, selector);

for (const hash of ['#view=one-query', '']) {
  test(`loading the page${hash ? ` at ${hash}` : ''} reads out nothing from the sections the learner is not in`, async () => {
    const { page, problems, context } = await open(hash);
    const heard = await said(page);
    assert.deepEqual(heard, [], `live regions that changed their text after they became live, as the page loaded (${hash || 'default view'}): ${JSON.stringify(heard, null, 1)}`);
    assertClean(problems, `load ${hash}`);
    await context.close();
  });
}

/** The text the page shows at `selector` (its first match). */
const shown = (page, selector) => page.locator(selector).first().textContent();

/** The texts of the cells of row `row` of a map or value table (`selector`), left to right. */
const rowShown = (page, selector, row) => page.locator(`${selector} [data-row="${row}"][data-col]`).allTextContents();

/**
 * Make an edit as a learner makes it, wait for the edits' pause and for the
 * sections redrawn late (those that read another's state), and return what
 * was said, by watched part: { where: [text, ...] }.
 */
async function afterEdit(page, edit) {
  await said(page);
  await edit();
  // The edit's sentence comes once the edits pause (waited for up to
  // ANNOUNCE_DELAY and more). Anything else said, by a section redrawn late
  // or twice, comes with it or soon after: 400 ms more are waited for that.
  await page.waitForFunction((watched) => window.liveSaid.some((s) => watched.includes(s.where) && s.text !== ''), WATCHED,
    { timeout: ANNOUNCE_DELAY + 1200 }).catch(() => {});
  await page.waitForTimeout(400);
  const heard = {};
  for (const { where, text } of await said(page)) (heard[where] ??= []).push(text);
  return heard;
}

/** An edit of section `where` said exactly `want` once, and no other part of the page said anything. */
function saidOnce(heard, where, want) {
  assert.deepEqual(heard, { [where]: [want] }, `${where}: what the page said after the edit`);
}

test('rotary, conventions, KV cache, online softmax, dropout and observability say an edit\'s result once, after the edits pause; their verdicts and numbers shown are not live', async () => {
  const { page, problems, context } = await open('');
  assert.deepEqual(await said(page), [], 'the page loading said something');

  // Rotary: a shift typed in two keystrokes is said once, with the three scores.
  let heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="rope-shift"]'), '12'));
  for (const check of ['rope-shift-both', 'rope-shift-one']) assert.equal(await page.locator(`[data-check="${check}"]`).getAttribute('data-passed'), 'true', check);
  saidOnce(heard, 'rotary', `Score ${await shown(page, '[data-out="rope-given"]')} at positions 5, 2: it stays ${await shown(page, '[data-out="rope-both"]')} `
    + `when both shift by 12, and moves to ${await shown(page, '[data-out="rope-one"]')} when only the query does.`);

  // Mask conventions: a click says the pair in the three masks and the diagonal; a new T the causal masks.
  const convCell = (grid) => page.locator(`[data-mask="conv-${grid}"] .mask-cell[data-row="0"][data-col="0"]`);
  heard = await afterEdit(page, () => convCell('allowed').click());
  saidOnce(heard, 'conventions', `Query 1, key 1 now blocked (allowed ${await convCell('allowed').textContent()}, blocked ${await convCell('blocked').textContent()}, `
    + `additive ${await convCell('additive').textContent()}); some query may not attend to itself.`);
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="conv-t"]'), '6'));
  saidOnce(heard, 'conventions', 'Causal masks, 6 × 6: every query may attend to itself.');

  // KV cache: two steps said once, at the last token; the stale offset as its difference.
  // Pressed by keyboard: two mouse clicks by Playwright can be more than the
  // pause apart on a loaded machine, and would rightly be said twice.
  heard = await afterEdit(page, async () => {
    await page.locator('[data-field="kv-next"]').focus();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
  });
  assert.equal(await shown(page, '[data-out="kv-step"]'), 'Token 5 of 5');
  saidOnce(heard, 'kv-cache', `Token 5 of 5: tokens 1 to 5, decoded with the cache, equal the full pass up to float rounding; largest difference ${await shown(page, '[data-out="kv-diff"]')}.`);
  heard = await afterEdit(page, () => page.locator('[data-field="kv-stale"]').check());
  saidOnce(heard, 'kv-cache', `Token 5 of 5: tokens 1 to 5, decoded with the cache, differ from the full pass by up to ${await shown(page, '[data-out="kv-diff"]')}.`);

  // Online softmax: a tile short of the last says its running numbers; the last tile the comparison.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="flash-tile"]'), '3'));
  const tile = (name) => shown(page, `[data-values="flash-trace"] tr[data-tile="0"] [data-out="${name}"]`);
  saidOnce(heard, 'online-softmax', `Tile 1 of 2, keys 1–3: running max m ${await tile('flash-m')}, running sum l ${await tile('flash-l')}, accumulator ${await tile('flash-acc')}.`);
  heard = await afterEdit(page, () => page.locator('[data-field="flash-all"]').click());
  saidOnce(heard, 'online-softmax', `Tile 2 of 2: the tiled result ${await shown(page, '[data-out="flash-tiled"]')} equals the ordinary softmax `
    + `${await shown(page, '[data-out="flash-plain"]')} up to float rounding; largest difference ${await shown(page, '[data-out="flash-diff"]')}.`);
  heard = await afterEdit(page, () => page.locator('[data-field="flash-bug"]').check());
  saidOnce(heard, 'online-softmax', `Tile 2 of 2: the tiled result ${await shown(page, '[data-out="flash-tiled"]')} is not the ordinary softmax `
    + `${await shown(page, '[data-out="flash-plain"]')}; largest difference ${await shown(page, '[data-out="flash-diff"]')}.`);

  // Observability: a multiplier typed in two keystrokes is said once, the four numbers with the note on the largest score.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="obs-mult"]'), '10'));
  const stat = async (key) => [await shown(page, `[data-out="${key}"]`), await shown(page, `[data-out="${key}"] + .hint`)];
  const [score, scoreNote] = await stat('obs-maxscore');
  saidOnce(heard, 'observability', `Max |score| before softmax ${score}. ${scoreNote} Fraction of logits masked: ${(await stat('obs-masked'))[0]}. `
    + `Max row-sum error: ${(await stat('obs-rowsum'))[0]}. Max weight on a forbidden key: ${(await stat('obs-forbidden'))[0]}.`);
  assert.match(scoreNote, /close to one-hot/, 'observability: ten times the queries make a softmax close to one-hot');

  // Dropout: p typed in four keystrokes is said once its mean is in; a p out of range says its message only.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="drop-p"]'), '0.45'));
  assert.equal(await page.locator('[data-check="drop-expected"]').getAttribute('data-passed'), 'true');
  saidOnce(heard, 'dropout', `p = 0.45: this draw dropped ${await shown(page, '[data-out="drop-count"]')} of 16 weights; on average over 10000 draws `
    + `the rows still sum to 1, off by at most ${await shown(page, '[data-out="drop-mean-error"]')}.`);
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="drop-p"]'), '0.99'));
  assert.deepEqual(Object.keys(heard), ['dropout'], `the parts of the page that spoke after p = 0.99: ${JSON.stringify(heard)}`);
  // 0.99 is out of range: the field goes back to 0.45, the value the learner had (not the 0.9 typed on the way).
  assert.deepEqual(heard.dropout.filter((text) => !/still 0\.45$/.test(text)), [], 'dropout: what was said after p = 0.99, besides the field\'s message');
  assert.ok(heard.dropout.some((text) => /still 0\.45$/.test(text)), `dropout: the field's message after p = 0.99; heard ${JSON.stringify(heard)}`);

  // The verdicts, steps and numbers shown change with every keystroke: none of them is a live region.
  for (const selector of ['[data-out="obs-maxscore"]', '[data-check="rope-shift-both"]', '[data-check="rope-shift-one"]', '[data-out="conv-diagonal"]', '[data-out="kv-step"]',
    '[data-check="kv-equal"]', '[data-out="flash-step"]', '[data-check="flash-equal"]', '[data-check="drop-expected"]']) {
    assert.equal(await liveRegionOf(page, selector), null, `${selector} sits in a live region`);
  }
  assertClean(problems, 'edits in the sections with verdicts');
  await context.close();
});

test('a learner\'s edit in each section is said once, after the edits pause, with the numbers the page shows', async () => {
  const { page, problems, context } = await open('');
  assert.deepEqual(await said(page), [], 'the page loading said something');
  const cell = (grid, row, col) => page.locator(`[data-grid="${grid}"] input[data-row="${row}"][data-col="${col}"]`);

  // One query: the weights and the output, as the steps show them.
  const oneBefore = await shown(page, '[data-out="one-output"]');
  let heard = await afterEdit(page, () => typeInto(page, cell('one-q', 0, 0), '2'));
  const oneOutput = await shown(page, '[data-out="one-output"]');
  assert.notEqual(oneOutput, oneBefore, 'one-query: the output did not change');
  saidOnce(heard, 'one-query', `Weights ${await shown(page, '[data-out="one-weights"]')}; output ${oneOutput}.`);

  // The 3×3 example: the edited query's weights and output. The custom mask
  // and the invariants, which read this example, are redrawn and say nothing.
  heard = await afterEdit(page, () => typeInto(page, cell('ex-q', 1, 0), '3'));
  const exWeights = await rowShown(page, '[data-heatmap="ex-weights"]', 1);
  const exOutput = await rowShown(page, '[data-values="ex-output"]', 1);
  assert.equal(exWeights.length, 3);
  saidOnce(heard, 'three-by-three', `Query 2: weights ${exWeights.join(', ')}; output 2 [${exOutput.join(', ')}].`);

  // Why divide by √d_k: three steps of the slider are said once, at its last value.
  const slider = page.locator('[data-field="scale-dk"]');
  heard = await afterEdit(page, async () => {
    await slider.focus();
    for (let k = 0; k < 3; k++) await page.keyboard.press('ArrowRight');
  });
  assert.equal(await slider.inputValue(), '67');
  saidOnce(heard, 'why-scale', `d_k = 67: variance ${await shown(page, '[data-out="var-unscaled"]')} unscaled, ${await shown(page, '[data-out="var-scaled"]')} scaled. `
    + `The largest of 16 weights averages ${await shown(page, '[data-out="peak-unscaled"]')} without scaling and ${await shown(page, '[data-out="peak-scaled"]')} with it.`);

  // Shapes: the weights' shape and size, and the output's shape.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="shape-t"]'), '7'));
  const weightsShape = await shown(page, '[data-shape="scores and weights"]');
  assert.equal(weightsShape, '(2, 4, 7, 7)');
  saidOnce(heard, 'shapes', `Weights ${weightsShape}: ${await shown(page, '[data-out="shape-count"]')} numbers. `
    + `Output ${await shown(page, '[data-shape="output after the output projection"]')}.`);

  // Masks: each part says its own result.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="mask-ct"]'), '5'));
  const causalFirst = await rowShown(page, '[data-heatmap="mask-causal-weights"]', 0);
  const causalLast = await rowShown(page, '[data-heatmap="mask-causal-weights"]', 4);
  assert.equal(causalLast.length, 5);
  saidOnce(heard, 'masks', `Causal mask (5, 5): query 1 puts ${causalFirst[0]} on key 1; query 5 puts ${causalLast.join(', ')} on keys 1 to 5.`);
  heard = await afterEdit(page, () => typeInto(page, cell('mask-tokens', 1, 4), '0'));
  saidOnce(heard, 'masks', `Padding mask ${await shown(page, '[data-out="mask-pshape"]')}: sequence 1 has padding at keys 4, 5; `
    + `sequence 2 has padding at key 5. Causal AND padding: ${await shown(page, '[data-out="mask-cshape"]')}.`);
  heard = await afterEdit(page, () => page.locator('[data-mask="mask-custom"] button[data-row="1"][data-col="0"]').click());
  const custom = await rowShown(page, '[data-heatmap="mask-custom-weights"]', 1);
  assert.equal(custom[0], '0', 'masks: the blocked weight shown');
  saidOnce(heard, 'masks', `Query 2 under your mask: weights 0 (blocked), ${custom.slice(1).join(', ')}.`);

  // Self- and cross-attention: the edited target position's output row.
  heard = await afterEdit(page, () => typeInto(page, cell('cross-tgt', 1, 0), '2'));
  const crossRow = await rowShown(page, '[data-values="cross-output"]', 1);
  assert.equal(crossRow.length, 4);
  saidOnce(heard, 'self-cross', `Output row t2 [${crossRow.join(', ')}].`);
  // A padding switch: what changed first, with the weight the maps show the position.
  const s5 = page.locator('[data-mask="cross-pad"] button[data-col="4"]');
  const column = async (j) => [...await page.locator(`[data-heatmap="cross-weights-h0"] .hm-cell[data-col="${j}"]`).allTextContents(),
    ...await page.locator(`[data-heatmap="cross-weights-h1"] .hm-cell[data-col="${j}"]`).allTextContents()];
  heard = await afterEdit(page, () => s5.click());
  assert.deepEqual([...new Set(await column(4))], ['0'], 'self-cross: every target gives the padding s5 weight 0 on the maps');
  saidOnce(heard, 'self-cross', `s5 is now padding: every target gives it weight 0; output row t1 [${(await rowShown(page, '[data-values="cross-output"]', 0)).join(', ')}].`);
  heard = await afterEdit(page, () => s5.click());
  const s5Weights = (await column(4)).map(Number);
  const [low, high] = [Math.min(...s5Weights), Math.max(...s5Weights)];
  saidOnce(heard, 'self-cross', `s5 is a real token again: the targets give it weights ${(await column(4)).find((t) => Number(t) === low)} to ${(await column(4)).find((t) => Number(t) === high)}; `
    + `output row t1 [${(await rowShown(page, '[data-values="cross-output"]', 0)).join(', ')}].`);

  // Multi-head: a size is said as the sizes line; the last token as the leak test.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="mha-heads"]'), '8'));
  saidOnce(heard, 'multi-head', `d_model = 32 split over 8 heads gives d_head = ${await shown(page, '[data-out="mha-dhead"]')}. `
    + `Weights ${await shown(page, '[data-out="mha-wshape"]')}, output ${await shown(page, '[data-out="mha-oshape"]')}.`);
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-grid="mha-tokens"] input[data-col="4"]'), '7'));
  const leak = await shown(page, '[data-out="mha-leak"]');
  assert.match(leak, /You changed t5 \(5 → 7\)/);
  saidOnce(heard, 'multi-head', leak);

  // Gradients: the loss. A step says the step line's sentence, the edit
  // right after it its loss only, and a step size typed the line's new text.
  heard = await afterEdit(page, () => typeInto(page, cell('grad-q', 1, 0), '0.5'));
  saidOnce(heard, 'gradients', `Loss ${await shown(page, '[data-out="grad-loss"]')}.`);
  heard = await afterEdit(page, () => page.locator('[data-action="grad-step"]').click());
  saidOnce(heard, 'gradients', `Last step: the loss went from ${await shown(page, '[data-out="grad-before"]')} to ${await shown(page, '[data-out="grad-after"]')}.`);
  heard = await afterEdit(page, () => typeInto(page, cell('grad-target', 0, 0), '1'));
  saidOnce(heard, 'gradients', `Loss ${await shown(page, '[data-out="grad-loss"]')}.`);
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="grad-lr"]'), '2.5'));
  saidOnce(heard, 'gradients', 'Press “Take one step” to move q by −2.5 × dQ.');

  // PyTorch: the output rows.
  heard = await afterEdit(page, () => typeInto(page, cell('pt-q', 0, 0), '3'));
  const ptRows = await Promise.all([0, 1, 2].map(async (i) => `[${(await rowShown(page, '[data-values="pt-output"]', i)).join(', ')}]`));
  saidOnce(heard, 'pytorch', `Output ${ptRows.join(', ')}.`);

  // Watch a head learn: new settings give a new, untrained model.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="learn-seed"]'), '2'));
  saidOnce(heard, 'watch-learn', `A new model, not trained yet: held-out accuracy ${await shown(page, '[data-out="learn-accuracy"]')}. Press Start to train it.`);
  // With the cheat on, the choice of how the maps are drawn says what is now drawn.
  heard = await afterEdit(page, () => page.locator('[data-field="learn-cheat"]').check());
  saidOnce(heard, 'watch-learn', `A new model, not trained yet: held-out accuracy ${await shown(page, '[data-out="learn-accuracy"]')}. Press Start to train it.`);
  heard = await afterEdit(page, () => page.locator('#watch-learn input[type="radio"][value="evaluation"]').check());
  const view = await shown(page, '[data-out="learn-maps-view"]');
  assert.match(view, /^Maps as the held-out test runs them \(causal\):/);
  saidOnce(heard, 'watch-learn', view.slice(0, view.indexOf('.') + 1));

  // A state restored from the link (the address bar edited) says nothing.
  heard = await afterEdit(page, () => page.evaluate(() => {
    location.hash = 'one.first=1&scale.dk=32&shape.t=6&mask.ct=6&cross.tq=3&mha.heads=2&obs.mult=2&grad.row=3&pt.t=6&learn.seed=3'
      + '&rope.shift=8&conv.t=5&kv.step=2&flash.tile=3&drop.p=0.4';
  }));
  assert.equal(await page.locator('[data-field="mask-ct"]').inputValue(), '6', 'the state in the link was not restored');
  assert.deepEqual(heard, {}, 'what the page said when a state was restored from the link');
  assertClean(problems, 'edits in each section');
  await context.close();
});

test('an edit of the 3×3 example is said by that section only, not by those that read it', async () => {
  // Seen from the invariants' section, which is then redrawn at once (far
  // away, it is redrawn once the page is idle: the test above covers that).
  const { page, problems, context } = await open('#view=observability');
  await said(page);
  const before = await shown(page, '[data-out="obs-maxscore"]');
  const heard = await afterEdit(page, () => typeInto(page, page.locator('[data-grid="ex-q"] input[data-row="2"][data-col="0"]'), '4'));
  assert.notEqual(await shown(page, '[data-out="obs-maxscore"]'), before, 'observability: not redrawn after the 3×3 example changed');
  assert.deepEqual(Object.keys(heard), ['three-by-three'], `the parts of the page that spoke: ${JSON.stringify(heard)}`);
  assertClean(problems, '3×3 example read by others');
  await context.close();
});

test('a refused edit says its refusal only, not a result', async () => {
  const { page, problems, context } = await open('#view=multi-head');
  await said(page);
  // A valid edit first, so that the region holds a result's sentence.
  let heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="mha-heads"]'), '2'));
  assert.ok(heard['multi-head']?.some((text) => /split over 2 heads/.test(text)), `multi-head: the valid edit was not said; heard ${JSON.stringify(heard)}`);
  // The core refuses 5 heads for d_model = 32: its message is said, no sizes,
  // and the last result's sentence is taken out of the region.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="mha-heads"]'), '5'));
  await page.waitForFunction(() => document.querySelector('[data-said="multi-head"]').textContent === '', null, { timeout: ANNOUNCE_DELAY + 1200 }).catch(() => {});
  assert.equal(await page.locator('[data-said="multi-head"]').textContent(), '', 'multi-head: the last result was still in the region after a refused edit');
  assert.deepEqual(heard['multi-head']?.filter((text) => /d_head|Weights/.test(text)) ?? [], [], 'multi-head: a result was said after a refused edit');
  assert.ok(heard['multi-head']?.some((text) => /cannot be split evenly over H = 5/.test(text)), `multi-head: the refusal was not said; heard ${JSON.stringify(heard)}`);
  // Back to the sizes shown before the refusal: their result is news again, and said.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-field="mha-heads"]'), '4'));
  assert.deepEqual(heard['multi-head'], [`d_model = 32 split over 4 heads gives d_head = 8. Weights ${await shown(page, '[data-out="mha-wshape"]')}, output ${await shown(page, '[data-out="mha-oshape"]')}.`],
    'multi-head: what was said after the valid edit that followed the refusal');
  // A sequence that starts with padding: the combined mask is refused.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-grid="mask-tokens"] input[data-row="0"][data-col="0"]'), '0'));
  assert.deepEqual(heard.masks?.filter((text) => /^Padding mask/.test(text)) ?? [], [], 'masks: a result was said after a refused edit');
  assert.ok(heard.masks?.some((text) => /no allowed key/i.test(text)), `masks: the refusal was not said; heard ${JSON.stringify(heard)}`);
  // A text that is not a number, typed through a valid 2: its message only, and the field keeps the 0 it had.
  heard = await afterEdit(page, () => typeInto(page, page.locator('[data-grid="one-q"] input[data-row="0"][data-col="1"]'), '2x'));
  assert.deepEqual(heard, { 'one-query': ['q, d2: Not a number: still 0'] }, 'one-query: what was said after "2x"');
  assertClean(problems, 'refused edits');
  await context.close();
});

test('trained multi-head weights: the training is read out at its start and its end, its steps are shown only', async () => {
  const { page, problems, context } = await open('#view=multi-head');
  await said(page);
  const section = page.locator('#multi-head');
  await section.locator('input[type="radio"][value="trained"]').check();
  // While the model trains, its step is shown (the line is looked at as soon as it appears).
  const stepShown = await page.waitForFunction(() => /step \d+ of \d+/.test(document.querySelector('[data-out="mha-training"]')?.textContent ?? ''), null, { timeout: 30000 })
    .then(() => true, () => false);
  const stepLive = stepShown ? await liveRegionOf(page, '[data-out="mha-training"]') : null;
  await page.waitForSelector('#multi-head [data-slot="weights"][data-weights="trained"]', { timeout: 20000 });
  await page.waitForTimeout(300);
  const heard = (await said(page)).filter((s) => s.where === 'multi-head').map((s) => s.text);
  assert.deepEqual(heard, [
    `Training the model in the core: ${TRAINED.steps} steps. The maps below appear when it is done.`,
    'The model is trained: the maps below show its heads.',
  ], `multi-head: what the live regions said while the model trained (${heard.length} times)`);
  assert.ok(stepShown, 'multi-head: no "step k of N" shown in [data-out="mha-training"] while the model trained');
  assert.equal(stepLive, null, 'multi-head: the training step line sits in a live region');
  assert.equal(await page.locator('[data-out="mha-training"]').isHidden(), true, 'multi-head: the step line is still shown once the model is trained');
  assertClean(problems, 'multi-head, trained');
  await context.close();
});

test('the progress panel reads out only a change of score, short; the full line is plain text', async () => {
  const { page, problems, context } = await open('#view=quiz');
  await said(page);
  const line = page.locator('[data-progress] .pg-line');
  assert.equal(await liveRegionOf(page, '[data-progress] .pg-line'), null, 'the full progress line sits in a live region');

  // A right first answer: the score goes up, read out once and short.
  const q = QUESTIONS.find((question) => question.kind === 'choice');
  const form = page.locator(`form[data-quiz="${q.id}"]`);
  await form.locator(`input[value="${q.choices.find((c) => c.right).id}"]`).check();
  await form.locator('button[type="submit"]').click();
  await page.waitForTimeout(200);
  let heard = (await said(page)).filter((s) => s.where === 'progress').map((s) => s.text);
  assert.deepEqual(heard, [`Score 1 of ${MAX}`], 'the progress panel after a right answer');
  assert.match(await line.textContent(), new RegExp(`Score 1 of ${MAX} \\(\\d+ to pass\\) · 1 of ${QUESTIONS.length} questions answered`));

  // A wrong first answer changes no score: the panel says nothing.
  const other = QUESTIONS.find((question) => question.kind === 'choice' && question.id !== q.id);
  const second = page.locator(`form[data-quiz="${other.id}"]`);
  await second.locator(`input[value="${other.choices.find((c) => !c.right).id}"]`).check();
  await second.locator('button[type="submit"]').click();
  await page.waitForTimeout(200);
  heard = (await said(page)).filter((s) => s.where === 'progress').map((s) => s.text);
  assert.deepEqual(heard, [], 'the progress panel after a wrong answer, which changes no score');
  assert.match(await line.textContent(), new RegExp(`2 of ${QUESTIONS.length} questions answered`));

  // A break-it card, predicted, broken and repaired: each step that changes
  // the score is read out as the new score, and only those.
  const card = page.locator('#bk-no-causal-mask');
  await card.locator('summary').click();
  const steps = [
    ['predict', () => card.getByLabel('No future leak').check()],
    ['break', () => card.locator('button.bk-switch').click()],
    ['repair', () => card.locator('button.bk-repair-button').click()],
  ];
  const score = async () => Number((await line.textContent()).match(/^Score (\d+) of/)[1]);
  const start = await score();
  let was = start;
  for (const [what, act] of steps) {
    await act();
    await page.waitForTimeout(200);
    const now = await score();
    heard = (await said(page)).filter((s) => s.where === 'progress').map((s) => s.text);
    assert.deepEqual(heard, now === was ? [] : [`Score ${now} of ${MAX}`], `the progress panel after break-it's ${what} (score ${was} → ${now})`);
    was = now;
  }
  assert.ok(was > start, `the repaired card scored: ${start} → ${was}`);
  assert.match(await line.textContent(), new RegExp(`1 of ${EXERCISES.length} break-it exercises finished`));
  assertClean(problems, 'progress panel');
  await context.close();
});

test('the steppers\' arrows are shown but not part of the buttons\' names', async () => {
  const { page, problems, context } = await open('#view=online-softmax');
  for (const [field, name, arrow] of [['flash-prev', 'Previous tile', '◀'], ['flash-next', 'Next tile', '▶'],
    ['kv-prev', 'Previous token', '◀'], ['kv-next', 'Next token', '▶']]) {
    const button = page.locator(`[data-field="${field}"]`);
    const snapshot = await button.ariaSnapshot(); // '- button "Next tile"', with " [disabled]" at either end
    assert.match(snapshot, new RegExp(`^- button "${name}"( \\[disabled\\])?$`), `${field}: its accessible name`);
    assert.match(await button.textContent(), new RegExp(arrow), `${field}: the arrow is still shown`);
  }
  assertClean(problems, 'stepper names');
  await context.close();
});

test('a stepper pressed at its end says so briefly, instead of the whole step again (online softmax, KV cache)', async () => {
  const { page, problems, context } = await open('#view=online-softmax');
  // Pressed by keyboard on the focused button, as a learner at the end keeps pressing.
  const press = (field) => afterEdit(page, async () => {
    await page.locator(`[data-field="${field}"]`).focus();
    await page.keyboard.press('Enter');
  });
  // Online softmax starts at tile 1 of 3.
  let heard = await press('flash-prev');
  saidOnce(heard, 'online-softmax', 'Already at the first tile.');
  await page.locator('[data-field="flash-all"]').click();
  assert.equal(await shown(page, '[data-out="flash-step"]'), 'Tile 3 of 3');
  // Its sentence comes once the edits pause, which a slow machine may delay
  // past the next press's wait: it is heard first, so the press is heard alone.
  await page.waitForFunction(() => window.liveSaid.some((s) => s.where === 'online-softmax' && s.text.startsWith('Tile 3 of 3')), null, { timeout: 30000 });
  await said(page);
  heard = await press('flash-next');
  saidOnce(heard, 'online-softmax', 'Already at the last tile.');
  assert.equal(await page.locator('[data-field="flash-next"]').getAttribute('aria-disabled'), 'true', 'Next tile at the last tile');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.field), 'flash-next', 'Next tile keeps the focus at the last tile');
  // The KV cache starts at token 3 of 5: two presses reach the end, said once as the step; a third says it is there.
  heard = await afterEdit(page, async () => {
    await page.locator('[data-field="kv-next"]').focus();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
  });
  assert.equal(await shown(page, '[data-out="kv-step"]'), 'Token 5 of 5');
  assert.match(heard['kv-cache']?.[0] ?? '', /^Token 5 of 5: /, `kv-cache: what reaching the last token said: ${JSON.stringify(heard)}`);
  heard = await press('kv-next');
  saidOnce(heard, 'kv-cache', 'Already at the last token.');
  assert.equal(await page.locator('[data-field="kv-next"]').getAttribute('aria-disabled'), 'true', 'Next token at the last token');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.field), 'kv-next', 'Next token keeps the focus at the last token');
  for (let k = 0; k < 4; k++) await page.locator('[data-field="kv-prev"]').click();
  assert.equal(await shown(page, '[data-out="kv-step"]'), 'Token 1 of 5');
  heard = await press('kv-prev');
  saidOnce(heard, 'kv-cache', 'Already at the first token.');
  assertClean(problems, 'steppers at their ends');
  await context.close();
});

test('observability: a new example is said by its name and its one key finding; the numbers stay in the table', async () => {
  const { page, problems, context } = await open('#view=observability');
  const select = page.locator('[data-field="obs-src"]');
  const name = (value) => select.locator(`option[value="${value}"]`).textContent();
  const stat = (key) => shown(page, `[data-out="${key}"]`);
  // By keyboard, as a learner runs through the examples: causal, then custom.
  let heard = await afterEdit(page, async () => {
    await select.focus();
    await page.keyboard.press('ArrowDown');
  });
  assert.equal(await select.inputValue(), 'custom');
  // The custom mask starts with every pair allowed.
  assert.equal(await stat('obs-masked'), '0.000 (0.0\u00a0%)', 'the custom mask as it starts blocks nothing');
  saidOnce(heard, 'observability', `${await name('custom')}: the mask blocks no pair; max |score| before softmax ${await stat('obs-maxscore')}, moderate: the softmax stays smooth.`);
  const masked = async () => `${(await stat('obs-masked')).replace(/^.*\((.*)\)$/, '$1')}`;
  heard = await afterEdit(page, () => select.selectOption('padding'));
  saidOnce(heard, 'observability', `${await name('padding')}: ${await masked()} of the query–key pairs are blocked, and the weight on them is exactly 0: nothing leaks past the mask.`);
  heard = await afterEdit(page, () => select.selectOption('causal'));
  saidOnce(heard, 'observability', `${await name('causal')}: ${await masked()} of the query–key pairs are blocked, and the weight on them is exactly 0: nothing leaks past the mask.`);
  heard = await afterEdit(page, () => select.selectOption('plain'));
  assert.equal(await stat('obs-masked'), '0.000 (0.0\u00a0%)', 'the plain example blocks nothing');
  saidOnce(heard, 'observability', `${await name('plain')}: max |score| before softmax ${await stat('obs-maxscore')}, moderate: the softmax stays smooth.`);
  for (const text of Object.values(heard).flat()) assert.ok(text.length < 120, `observability: ${text.length} characters said for a new example: "${text}"`);
  assertClean(problems, 'observability examples');
  await context.close();
});
