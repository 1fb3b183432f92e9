// The quiz in Chromium: every question can be answered and is checked; a
// wrong choice is explained; retries are allowed but the first attempt is
// what scores; the grid and number answers are judged by the core; answers
// come back after a reload; keyboard only works; axe finds nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { launchBrowser, openPage, startServer, assertClean, shownText, resizeTo } from './helpers/browser.mjs';
import { loadAttention } from '../web/attention.js';
import { QUESTIONS } from '../web/quiz-questions.js';
import { EXERCISES } from '../web/exercises.js';
import { masteryScore } from '../web/progress.js';

/** The full lesson's score max: the questions and the break-it cards. */
const MAX = QUESTIONS.length + EXERCISES.length;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const AXE = fileURLToPath(new URL('../node_modules/axe-core/axe.min.js', import.meta.url));

let server;
let browser;
let lab;

before(async () => {
  server = await startServer({ root: ROOT });
  browser = await launchBrowser();
  lab = await loadAttention();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function lesson(options) {
  const session = await openPage(browser, server.url, options);
  await session.page.goto(`${server.url}web/index.html`);
  await session.page.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
  return session;
}

const form = (page, id) => page.locator(`form[data-quiz="${id}"]`);

/** The causal mask's blocked cells for T positions, from the core (a causal run on equal scores). */
function coreBlocked(T) {
  const zeros = Array.from({ length: T }, () => [0, 0]);
  const { weights } = lab.sdpa(zeros, zeros, zeros, { causal: true });
  return Array.from(weights.data, (w) => w === 0);
}

/** Answer question `q` in the page: right, or with a given wrong answer. */
async function answer(page, q, { wrong = null } = {}) {
  const f = form(page, q.id);
  if (q.kind === 'choice') {
    const id = wrong || q.choices.find((c) => c.right).id;
    await f.locator(`input[value="${id}"]`).check();
  } else if (q.kind === 'grid') {
    const blocked = coreBlocked(q.T);
    for (let k = 0; k < blocked.length; k++) {
      const want = wrong ? k === 1 : blocked[k];
      const cell = f.locator(`button[data-row="${Math.floor(k / q.T)}"][data-col="${k % q.T}"]`);
      if ((await cell.getAttribute('aria-pressed') === 'true') !== want) await cell.click();
    }
  } else {
    await f.locator('input.qz-number').fill(wrong || String(q.dModel / q.numHeads));
  }
  await f.locator('button[type="submit"]').click();
}

test('every question: a wrong first answer is explained and scores nothing; a retry is marked right but the first attempt counts', async () => {
  const { page, problems, context } = await lesson();
  assert.equal(await page.locator('form.qz-form').count(), 8, 'eight answer forms');
  for (const q of QUESTIONS) {
    const f = form(page, q.id);
    const wrong = q.kind === 'choice' ? q.choices.find((c) => !c.right).id : q.kind === 'number' ? '64' : 'x';
    await answer(page, q, { wrong });
    const feedback = (await shownText(f.locator('.qz-feedback'))).replace(/\s+/g, ' ');
    assert.match(feedback, /^✗?\s*Not quite/, `${q.id}: ${feedback}`);
    if (q.kind === 'choice') {
      const why = q.choices.find((c) => c.id === wrong).why.replace(/_/g, '');
      assert.ok(feedback.replace(/_/g, '').includes(why.slice(0, 40)), `${q.id}: the wrong choice is explained: ${feedback}`);
    }
    if (q.kind === 'number') assert.match(feedback, /8 heads/, `${q.id}: ${feedback}`);
    if (q.kind === 'grid') assert.match(feedback, /should be blocked/, `${q.id}: ${feedback}`);
    await answer(page, q);
    assert.match(await shownText(f.locator('.qz-feedback')), /Right/, `${q.id}: the retry is right`);
    assert.match(await shownText(f.locator('.qz-first')), /First attempt: wrong/, `${q.id}: the first attempt counts`);
    // The model answer is still there to read.
    const details = page.locator(`li[data-question="${q.id}"] details.answer`);
    await details.locator('summary').click();
    assert.equal(await details.evaluate((d) => d.open), true, `${q.id}: the model answer opens`);
  }
  assert.match(await shownText(page.locator('.pg-line')), new RegExp(`Score 0 of ${MAX}`));
  assertClean(problems, 'all wrong then right');
  await context.close();
});

test('right first time scores; the grid is judged by the core; answers and feedback come back after a reload', async () => {
  const { page, problems, context } = await lesson();
  const [scale, , causal, , headWidth] = QUESTIONS;
  await answer(page, scale);
  await answer(page, causal);
  await answer(page, headWidth);
  // The grid's right answer is the core's: 10 of the 25 pairs for 5 positions.
  const blocked = coreBlocked(5);
  assert.equal(blocked.filter(Boolean).length, 10,
    `pairs the core blocks for 5 causal positions; blocked (query, key) from 0: ${blocked.flatMap((b, i) => (b ? [`(${Math.floor(i / 5)}, ${i % 5})`] : [])).join(' ')}`);
  assert.match(await shownText(form(page, 'causal').locator('.qz-feedback')), /^✓?\s*Right/);
  assert.match(await shownText(page.locator('.pg-line')), new RegExp(`Score 3 of ${MAX} \\(${masteryScore(MAX)} to pass\\) · 3 of 8 questions answered`));

  await page.reload();
  await page.waitForSelector('html[data-ready="true"]');
  assert.equal(await form(page, 'scale').locator('input[value="a"]').isChecked(), true, 'the choice is restored');
  assert.equal(await form(page, 'head-width').locator('input.qz-number').inputValue(), '32');
  const pressed = await form(page, 'causal').locator('button[aria-pressed]').evaluateAll((ns) => ns.map((n) => n.getAttribute('aria-pressed') === 'true'));
  assert.deepEqual(pressed, coreBlocked(5), 'the grid is restored');
  for (const id of ['scale', 'causal', 'head-width']) {
    assert.match(await shownText(form(page, id).locator('.qz-feedback')), /Right/, `${id}: feedback restored`);
    assert.match(await shownText(form(page, id).locator('.qz-first')), /First attempt: right/);
  }
  assert.match(await shownText(page.locator('.pg-line')), new RegExp(`Score 3 of ${MAX}`));
  // Sections seen are part of the record.
  await page.locator('#quiz').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => JSON.parse(localStorage.getItem('attention-lab.progress.v1')).s?.includes('quiz'));
  assert.match(await shownText(page.locator('.pg-line')), /[1-9][0-9]* sections? visited/);

  // Reset, once confirmed: everything goes.
  await page.locator('button.pg-reset').click();
  await page.locator('button.pg-erase').click();
  assert.match(await shownText(page.locator('.pg-line')), new RegExp(`Score 0 of ${MAX} .* 0 of 8 questions answered`));
  assert.equal(await shownText(form(page, 'scale').locator('.qz-feedback')), '');
  assertClean(problems, 'restore');
  await context.close();
});

test('keyboard only: choose, check, mark grid cells', async () => {
  const { page, problems, context } = await lesson();
  const f = form(page, 'softmax-axis');
  await f.locator('input[value="a"]').focus();
  await page.keyboard.press('ArrowDown'); // b
  await page.keyboard.press('ArrowDown'); // c: the right one
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Check');
  await page.keyboard.press('Enter');
  assert.match(await shownText(f.locator('.qz-feedback')), /Right/);

  const g = form(page, 'causal');
  await g.locator('button[data-row="0"][data-col="1"]').focus();
  await page.keyboard.press('Space');
  assert.equal(await g.locator('button[data-row="0"][data-col="1"]').getAttribute('aria-pressed'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.col), '1', 'focus stays on the cell');
  // The grid is one tab stop: the arrow keys move between its cells.
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.col), '2', 'ArrowRight moves to the next cell');
  await page.keyboard.press('Space');
  assert.equal(await g.locator('button[data-row="0"][data-col="2"]').getAttribute('aria-pressed'), 'true', 'Space marks the cell arrived at');
  assertClean(problems, 'keyboard');
  await context.close();
});

test('a number answer that is not a whole number marks its input invalid, described by the message, until it is fixed', async () => {
  const { page, problems, context } = await lesson();
  const q = QUESTIONS.find((question) => question.kind === 'number');
  const f = form(page, q.id);
  const input = f.locator('input.qz-number');
  /** The input's invalid mark and the texts of the nodes that describe it. */
  const marked = () => input.evaluate((n) => ({
    invalid: n.getAttribute('aria-invalid'),
    described: (n.getAttribute('aria-describedby') || '').split(/\s+/).filter(Boolean)
      .map((id) => n.ownerDocument.getElementById(id)?.textContent ?? `(no element #${id})`),
  }));
  // The question's text always describes the input; the message, while the answer is invalid.
  const question = (await f.locator('xpath=preceding-sibling::p[1]').textContent());
  assert.deepEqual(await marked(), { invalid: null, described: [question] }, 'unmarked before any check');

  await input.fill('4.5');
  await f.locator('button[type="submit"]').click();
  const bad = await marked();
  assert.equal(bad.invalid, 'true', `"4.5" is marked invalid; seen ${JSON.stringify(bad)}`);
  assert.equal(bad.described[0], question, `the input is described by the question first; seen ${JSON.stringify(bad)}`);
  assert.ok(bad.described.some((text) => /Type a whole number/.test(text)), `the input is described by the message; seen ${JSON.stringify(bad)}`);

  // Fixed: a whole number (wrong, then right) is checked, and the marks go.
  await input.fill('64');
  await f.locator('button[type="submit"]').click();
  assert.match(await shownText(f.locator('.qz-feedback')), /Not quite/);
  const fixed = await marked();
  assert.deepEqual(fixed, { invalid: null, described: [question] }, `a checked whole number clears the marks; seen ${JSON.stringify(fixed)}`);

  // Invalid again, then the right answer: the marks go with the message.
  await input.fill('');
  await f.locator('button[type="submit"]').click();
  assert.equal((await marked()).invalid, 'true', 'an empty answer is marked');
  await input.fill(String(q.dModel / q.numHeads));
  await f.locator('button[type="submit"]').click();
  assert.match(await shownText(f.locator('.qz-feedback')), /Right/);
  assert.deepEqual(await marked(), { invalid: null, described: [question] }, 'the right answer clears them');
  assertClean(problems, 'number answer');
  await context.close();
});

test('axe-core finds no violations in the answered quiz, at 1280 px and 390 px', async () => {
  // One page, answered once at the first size and resized to the next: the
  // answers and their feedback stay as they are at every width.
  const VIEWPORTS = [{ width: 1280, height: 900 }, { width: 390, height: 844 }];
  const { page, problems, context } = await lesson({ viewport: VIEWPORTS[0] });
  await answer(page, QUESTIONS[0], { wrong: 'b' });
  await answer(page, QUESTIONS[2]);
  await answer(page, QUESTIONS[4], { wrong: '64' });
  await page.addScriptTag({ path: AXE });
  for (const viewport of VIEWPORTS) {
    if (viewport !== VIEWPORTS[0]) await resizeTo(page, viewport.width, viewport.height);
    const violations = await page.evaluate(async () => {
      const r = await window.axe.run('#quiz', { resultTypes: ['violations'] });
      return r.violations.map((v) => ({ id: v.id, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
    });
    assert.deepEqual(violations, [], `${viewport.width} px: ${JSON.stringify(violations)}`);
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), viewport.width, `nothing widens the page at ${viewport.width} px`);
    assertClean(problems, `axe ${viewport.width}`);
  }
  await context.close();
});

test('the intro says how the model answers are reached: they start closed, so it never calls them open; it says what opening one first costs', async () => {
  const { page, problems, context } = await lesson();
  assert.equal(await page.locator('#quiz [data-quiz-intro]').isVisible(), false, 'the intro for reading alone is hidden once answers are checked');
  assert.equal(await page.locator('#quiz [data-quiz-rules]').isVisible(), true, 'the intro for checked answers is shown');
  const intro = await shownText(page.locator('#quiz [data-quiz-rules]'));
  const open = await page.locator('#quiz details.answer').evaluateAll((ds) => ds.filter((d) => d.open).length);
  assert.equal(open, 0, 'every model answer starts closed');
  assert.doesNotMatch(intro, /\b(stay|are|is) open\b/, `the intro must not call the closed answers open: "${intro}"`);
  assert.match(intro, /Show the answer/, `the intro names the control that opens a model answer: "${intro}"`);
  assert.match(intro, /only your first attempt scores/i, `the intro says which attempt scores: "${intro}"`);
  assert.match(intro, /before your first attempt gives up that question’s point/, `the intro says what opening the answer first costs: "${intro}"`);
  assertClean(problems, 'intro');
  await context.close();
});

test('a wrong choice\'s explanation never opens with the words of the choice it refutes', () => {
  // "It does not: …" under the choice "It does not: …" reads as agreeing with it.
  const opening = (text) => text.split(/[:;,.]/)[0].trim().toLowerCase();
  for (const q of QUESTIONS.filter((question) => question.kind === 'choice')) {
    for (const c of q.choices.filter((choice) => !choice.right)) {
      assert.notEqual(opening(c.why), opening(c.text), `${q.id} ${c.id}: the explanation "${c.why}" opens like the choice "${c.text}"`);
    }
  }
});

test('the choices give nothing away: the right one is not marked by its length or its place', () => {
  const choiceQuestions = QUESTIONS.filter((question) => question.kind === 'choice');
  const shown = (c) => c.text.replace(/_/g, ''); // d_k is drawn as d with a subscript k
  let longest = 0;
  const places = new Map();
  for (const q of choiceQuestions) {
    const right = q.choices.find((c) => c.right);
    const wrong = q.choices.filter((c) => !c.right).map((c) => shown(c).length);
    const lengths = q.choices.map((c) => `${c.id}${c.right ? '*' : ''}: ${shown(c).length}`).join(', ');
    // Each wrong choice is about as long as the right one: within a fifth of it.
    for (const n of wrong) assert.ok(Math.abs(n - shown(right).length) <= 0.2 * shown(right).length, `${q.id}: lengths (right starred) ${lengths}`);
    if (shown(right).length > Math.max(...wrong)) longest += 1;
    const place = q.choices.indexOf(right);
    places.set(place, (places.get(place) || 0) + 1);
  }
  assert.ok(longest <= 1, `the right choice is the longest in ${longest} of ${choiceQuestions.length} questions`);
  const most = Math.max(...places.values());
  assert.ok(most <= choiceQuestions.length / 3, `one place (a, b, c…) holds ${most} of ${choiceQuestions.length} right choices: ${JSON.stringify([...places])}`);
});

test('opening the model answer before the first attempt gives up the point: the feedback, the first-attempt line and the score say so, after a reload too', async () => {
  const { page, problems, context } = await lesson();
  const scale = QUESTIONS.find((q) => q.id === 'scale');
  const f = form(page, 'scale');
  const details = page.locator('li[data-question="scale"] details.answer');
  await details.locator('summary').click();
  assert.match(await shownText(f.locator('.qz-feedback')), /answer was opened before your first attempt.*practice.*no point/,
    'opening the answer first says at once what it costs');
  const saved = await page.evaluate(() => localStorage.getItem('attention-lab.progress.v1'));
  assert.match(saved ?? '', /"r":\["scale"\]/, `the record keeps the opened answer: ${saved}`);
  await details.locator('summary').click(); // closing it again changes nothing
  await answer(page, scale);
  const feedback = await shownText(f.locator('.qz-feedback'));
  assert.match(feedback, /^✓?\s*Right\..*The answer was open before your first attempt: practice, no point\./s, feedback);
  assert.match(await shownText(f.locator('.qz-first')), /First attempt: right ✓, made after the answer was opened \(practice, no point\)/);
  assert.match(await shownText(page.locator('.pg-line')), new RegExp(`Score 0 of ${MAX} .* 1 of 8 questions answered`));
  // Answered first, opened after: the point stays.
  const maps = QUESTIONS.find((q) => q.id === 'maps');
  await answer(page, maps);
  await page.locator('li[data-question="maps"] details.answer summary').click();
  assert.match(await shownText(form(page, 'maps').locator('.qz-first')), /First attempt: right ✓ \(1 point\)/);
  assert.doesNotMatch(await shownText(form(page, 'maps').locator('.qz-feedback')), /practice/);
  assert.match(await shownText(page.locator('.pg-line')), new RegExp(`Score 1 of ${MAX} .* 2 of 8 questions answered`));

  // The page writes its link a moment after a change: reload once the link holds maps's open answer.
  const mapsAnswer = await page.locator('li[data-question="maps"] details.answer').getAttribute('data-disclosure');
  await page.waitForFunction((id) => decodeURIComponent(location.hash).includes(id), mapsAnswer);
  await page.reload();
  await page.waitForSelector('html[data-ready="true"]');
  assert.match(await shownText(f.locator('.qz-feedback')), /practice, no point/, 'the reload keeps the practice note');
  assert.match(await shownText(f.locator('.qz-first')), /made after the answer was opened/);
  assert.match(await shownText(page.locator('.pg-line')), new RegExp(`Score 1 of ${MAX}`));
  // A reset starts over, but an answer still open (maps's, from the link the reload kept) is open before the next first attempt.
  await page.locator('button.pg-reset').click();
  await page.locator('button.pg-erase').click();
  assert.match(await shownText(form(page, 'maps').locator('.qz-feedback')), /answer was opened before your first attempt/, 'the open answer counts again');
  assert.equal(await shownText(f.locator('.qz-feedback')), '', 'a closed answer costs nothing after the reset');
  assertClean(problems, 'answer opened first');
  await context.close();
});

test('a link that opens a model answer counts as opening it: that question is practice', async () => {
  const session = await openPage(browser, server.url);
  await session.page.goto(`${server.url}web/index.html#ui.open=quiz-answer-2`);
  await session.page.waitForSelector('html[data-ready="true"]');
  const { page, problems, context } = session;
  const f = form(page, 'softmax-axis');
  // The link's open answers are applied after the quiz is drawn: wait for that, then say what is shown.
  await page.waitForFunction(() => document.querySelector('details[data-disclosure="quiz-answer-2"]').open);
  assert.match(await shownText(f.locator('.qz-feedback')), /answer was opened before your first attempt/, 'the opened answer is noted at once');
  await answer(page, QUESTIONS.find((q) => q.id === 'softmax-axis'));
  assert.match(await shownText(f.locator('.qz-first')), /made after the answer was opened/);
  assert.match(await shownText(page.locator('.pg-line')), new RegExp(`Score 0 of ${MAX}`));
  assertClean(problems, 'answer opened by a link');
  await context.close();
});

test('a number answer is judged by its value: leading zeros do not make the right number wrong', async () => {
  const { page, problems, context } = await lesson();
  const q = QUESTIONS.find((question) => question.kind === 'number');
  const f = form(page, q.id);
  await f.locator('input.qz-number').fill(`00${q.dModel / q.numHeads}`);
  await f.locator('button[type="submit"]').click();
  const feedback = await shownText(f.locator('.qz-feedback'));
  assert.match(feedback, /Right/, `"00${q.dModel / q.numHeads}" is ${q.dModel / q.numHeads}; seen: ${feedback}`);
  assert.match(await shownText(f.locator('.qz-first')), /First attempt: right/);
  assertClean(problems, 'leading zeros');
  await context.close();
});

test('"Reset all progress" asks first: "Keep my progress" (or Escape) keeps every answer, only the confirm erases', async () => {
  const { page, problems, context } = await lesson();
  await answer(page, QUESTIONS[0]);
  const line = page.locator('.pg-line');
  assert.match(await shownText(line), /1 of 8 questions answered/);
  const reset = page.locator('button.pg-reset');

  // One press, by mouse or by a keyboard one Tab away from "Reset these cards", erases nothing.
  await reset.click();
  assert.match(await shownText(line), /1 of 8 questions answered/, 'one press of "Reset all progress" must not erase the answers');
  const keep = page.getByRole('button', { name: 'Keep my progress' });
  assert.equal(await keep.evaluate((n) => n === document.activeElement), true, 'the focus goes to the safe choice');
  await page.keyboard.press('Enter');
  assert.match(await shownText(line), /1 of 8 questions answered/, '"Keep my progress" keeps it');
  assert.equal(await reset.evaluate((n) => n === document.activeElement), true, 'the focus comes back to "Reset all progress"');

  await reset.press('Enter');
  await page.keyboard.press('Escape');
  assert.match(await shownText(line), /1 of 8 questions answered/, 'Escape keeps it');
  assert.equal(await page.getByRole('button', { name: 'Keep my progress' }).count(), 0, 'and closes the question');

  await reset.click();
  await page.getByRole('button', { name: 'Yes, erase my progress' }).click();
  assert.match(await shownText(line), /Score 0 of .* 0 of 8 questions answered/, 'the confirm erases');
  assert.equal(await form(page, 'scale').locator('input[value="a"]').isChecked(), false);
  assert.equal(await reset.evaluate((n) => n === document.activeElement), true, 'the focus comes back to "Reset all progress"');
  assertClean(problems, 'reset asks first');
  await context.close();
});

test('Check on the untouched grid asks for a mark and scores nothing, as an unanswered choice or number does', async () => {
  const { page, problems, context } = await lesson();
  const grid = QUESTIONS.find((question) => question.kind === 'grid');
  const f = form(page, grid.id);
  await f.locator('button[type="submit"]').click(); // no cell marked: nothing answered yet
  const feedback = await shownText(f.locator('.qz-feedback'));
  assert.doesNotMatch(feedback, /Not quite/, `an untouched grid is not a wrong first attempt: "${feedback}"`);
  assert.match(feedback, /Mark/, `it says what to do: "${feedback}"`);
  assert.equal(await shownText(f.locator('.qz-first')), '', 'no first attempt recorded');
  assert.match(await shownText(page.locator('.pg-line')), /0 of 8 questions answered/);
  // Then the right answer still scores the point.
  await answer(page, grid);
  assert.match(await shownText(f.locator('.qz-first')), /First attempt: right/);
  assertClean(problems, 'untouched grid');
  await context.close();
});
