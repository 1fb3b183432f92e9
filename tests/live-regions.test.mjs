// What the lesson page's live regions say, recorded as a screen reader would
// hear it: a region says nothing while the page loads (its first text is in
// place before it is live), it still speaks after a learner's edit, training
// the multi-head model is announced at its start and end only, the progress
// panel says only a change of score, and the steppers' arrows are not read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, typeInto } from './helpers/browser.mjs';
import { QUESTIONS } from '../web/quiz-questions.js';
import { EXERCISES } from '../web/exercises.js';
import { TRAINED } from '../web/sections/trained-weights.js';

const suite = browserSuite();

/** The full lesson's score max: the questions and the break-it cards. */
const MAX = QUESTIONS.length + EXERCISES.length;

/** The parts of the page this file watches: each section by its id, the progress panel by [data-progress]. */
const WATCHED = ['conventions', 'kv-cache', 'online-softmax', 'dropout', 'multi-head', 'progress'];

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

/** The log since the last call, for the watched parts of the page. */
const said = async (page) => (await page.evaluate(() => window.liveSaid.splice(0))).filter((s) => WATCHED.includes(s.where));

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

test('after the load, a learner\'s edit in each section is still read out', async () => {
  const { page, problems, context } = await open('');
  await said(page);
  /** After an edit: `selector` sits in a live region, and the log has its new text, matching `want`. */
  const heardAfter = async (where, selector, want) => {
    assert.ok(await liveRegionOf(page, selector), `${where}: ${selector} is not in a live region after the edit`);
    const heard = (await said(page)).filter((s) => s.where === where).map((s) => s.text);
    assert.ok(heard.some((text) => want.test(text)), `${where}: nothing matching ${want} was read out after the edit; heard ${JSON.stringify(heard)}`);
  };

  await page.locator('[data-mask="conv-allowed"] button[data-row="0"][data-col="0"]').click();
  await heardAfter('conventions', '[data-out="conv-diagonal"]', /^⚠ Some query may not attend to itself/);

  await page.locator('[data-field="kv-next"]').click();
  await heardAfter('kv-cache', '[data-out="kv-step"]', /^Token 4 of 5$/);
  assert.ok(await liveRegionOf(page, '[data-check="kv-equal"]'), 'kv-cache: the check is not in a live region');
  await page.locator('[data-field="kv-stale"]').check();
  await heardAfter('kv-cache', '[data-check="kv-equal"]', /^✗ Tokens 1 to 4/);

  await page.locator('[data-field="flash-next"]').click();
  await heardAfter('online-softmax', '[data-out="flash-step"]', /^Tile 2 of 3$/);
  await page.locator('[data-field="flash-next"]').click();
  await heardAfter('online-softmax', '[data-check="flash-equal"]', /✓ Equal up to float rounding/);

  await typeInto(page, page.locator('[data-field="drop-p"]'), '0.5');
  await page.waitForFunction(() => document.querySelector('[data-check="drop-expected"]').textContent.includes('p = 0.50')
    && !document.querySelector('[data-check="drop-expected"]').hasAttribute('aria-busy'));
  await heardAfter('dropout', '[data-check="drop-expected"]', /^✓ On average the rows still sum to 1: .*p = 0\.50/);
  assertClean(problems, 'edits after the load');
  await context.close();
});

test('trained multi-head weights: the training is read out at its start and its end, its steps are shown only', async () => {
  const { page, problems, context } = await open('#view=multi-head');
  await said(page);
  const section = page.locator('#multi-head');
  await section.locator('input[type="radio"][value="trained"]').check();
  // While the model trains, its step is shown (the line is looked at as soon as it appears).
  const stepShown = await page.waitForFunction(() => /step \d+ of \d+/.test(document.querySelector('[data-out="mha-training"]')?.textContent ?? ''), null, { timeout: 5000 })
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
