// Break-it grading in Chromium: a prediction cannot be changed once the bug
// has been switched on (so an outcome cannot be bought by trying each check),
// nor bought by a reset (a reset card is practice: the first outcome stays),
// the catch-all check that every bug fails is not a choice, the switch's
// visible text says the state it is in, and a card shown on its own keeps
// the number it has in the lesson.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { launchBrowser, openPage, startServer, assertClean, shownText } from './helpers/browser.mjs';
import { EXERCISES } from '../web/exercises.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

let server;
let browser;

before(async () => {
  server = await startServer({ root: ROOT });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function lesson() {
  const session = await openPage(browser, server.url);
  await session.page.goto(`${server.url}web/index.html`);
  await session.page.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
  return session;
}

/** The switch's visible text (what a sighted learner reads), and its pressed state. */
// The switch's text as drawn: its state word comes from the CSS too.
const switchText = async (card) => {
  const button = card.locator('button.bk-switch');
  return { text: (await shownText(button)).trim(), pressed: await button.getAttribute('aria-pressed') };
};

test('the prediction locks once the bug is on: no second guess, one outcome', async () => {
  const { page, problems, context } = await lesson();
  const results = [];
  await page.exposeFunction('recordResult', (detail) => results.push(detail));
  const card = page.locator('#bk-no-scale');
  await card.locator('summary').click();
  await card.getByLabel('Rows sum to 1').check();
  await card.locator('button.bk-switch').click();
  assert.match(await card.locator('.bk-verdict').textContent(), /still passes/);

  // Every option is now disabled; the wrong guess stays chosen.
  const options = card.locator('.bk-predict input[type="radio"]');
  const disabled = await options.evaluateAll((ns) => ns.map((n) => n.disabled));
  assert.ok(disabled.length > 0 && disabled.every(Boolean), `options disabled: ${disabled}`);
  await card.getByLabel('Scores scaled by 1/√dk').check({ force: true }).catch(() => {});
  assert.equal(await card.getByLabel('Rows sum to 1').isChecked(), true, 'the first prediction stays');
  assert.doesNotMatch(await card.locator('.bk-verdict').textContent(), /prediction was right/);

  // Off and on again does not unlock it either.
  await card.locator('button.bk-switch').click();
  assert.equal(await card.getByLabel('Scores scaled by 1/√dk').isDisabled(), true, 'still locked with the bug off');
  await card.locator('button.bk-switch').click();
  assert.equal(await card.getByLabel('Rows sum to 1').isChecked(), true);
  assertClean(problems, 'locked prediction');
  await context.close();
});

test('the switch reads "bug off" when off and "bug on" when on', async () => {
  const { page, problems, context } = await lesson();
  const card = page.locator('#bk-softmax-over-queries');
  const off = await switchText(card);
  assert.equal(off.pressed, 'false');
  assert.doesNotMatch(off.text, /bug on/i, `off: "${off.text}"`);
  assert.match(off.text, /bug off/i, `off: "${off.text}"`);
  await card.locator('button.bk-switch').click();
  const on = await switchText(card);
  assert.equal(on.pressed, 'true');
  assert.match(on.text, /bug on/i, `on: "${on.text}"`);
  assert.doesNotMatch(on.text, /bug off/i, `on: "${on.text}"`);
  // The accessible name does not change with the state (aria-pressed carries it).
  const names = [];
  for (let i = 0; i < 2; i++) {
    names.push(await card.locator('button.bk-switch').evaluate((b) => b.textContent.replace(b.querySelector('[aria-hidden]')?.textContent ?? '', '').trim()));
    await card.locator('button.bk-switch').click();
  }
  assert.equal(names[0], names[1]);
  assertClean(problems, 'switch label');
  await context.close();
});

test('a single-exercise widget shows no number from the lesson\'s list, and locks its prediction too', async () => {
  const { page, problems, context } = await openPage(browser, server.url);
  const bug = 'no-scale';
  const index = EXERCISES.findIndex((e) => e.bug === bug);
  await page.goto(`${server.url}web/embed.html?preset=break-it:${bug}`);
  const card = page.locator(`#bk-${bug}`);
  await card.locator('summary').waitFor();
  // The learner sees this card alone: its place in the lesson's list of 16 would only puzzle.
  const summary = (await card.locator('summary').textContent()).trim();
  assert.equal(await card.locator('.bk-num').count(), 0, `a number is shown: "${summary}"`);
  assert.doesNotMatch(summary, new RegExp(`\\b(${index + 1}|${EXERCISES.length})\\b`), `summary: "${summary}"`);

  const results = [];
  await page.exposeFunction('recordResult', (detail) => results.push(detail));
  await page.evaluate(() => document.querySelector('attention-lab').addEventListener('attention-result', (e) => window.recordResult(e.detail)));
  await card.getByLabel('Rows sum to 1').check();
  await card.locator('button.bk-switch').click();
  await card.getByLabel('Scores scaled by 1/√dk').check({ force: true, timeout: 1000 }).catch(() => {});
  await card.locator('button.bk-switch').click();
  await card.locator('button.bk-switch').click();
  await page.waitForTimeout(100);
  assert.deepEqual(results.map(({ exercise, passed }) => ({ exercise, passed })), [{ exercise: bug, passed: false }], 'one outcome, from the first prediction');
  assert.deepEqual(results[0].score, { raw: 0, max: 1, mastery: 1 });
  assertClean(problems, 'single card');
  await context.close();
});

test('"Matches the reference" is not a prediction: it fails for every bug, so it cannot tell one card from another', async () => {
  const { page, problems, context } = await lesson();
  const offered = await page.locator('#break-it .bk-card').evaluateAll((cards) => cards.map((card) => ({
    bug: card.dataset.bug,
    choices: [...card.querySelectorAll('.bk-predict input[type="radio"]')].map((input) => input.value),
  })));
  assert.equal(offered.length, EXERCISES.length);
  const catchAll = offered.filter(({ choices }) => choices.includes('matchesReference')).map(({ bug }) => bug);
  assert.deepEqual(catchAll, [], `cards offering "Matches the reference" as a prediction: ${catchAll.join(', ')}`);
  for (const { bug, choices } of offered) {
    const { catchers } = EXERCISES.find((e) => e.bug === bug);
    assert.ok(catchers.every((name) => choices.includes(name)), `${bug}: its catchers ${catchers} are among the choices ${choices}`);
  }
  // The check itself still runs and is shown.
  const card = page.locator('#bk-no-rescale');
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  assert.equal(await card.locator('[data-check="matchesReference"]').getAttribute('data-state'), 'fail');
  assertClean(problems, 'prediction choices');
  await context.close();
});

test('a reset lets the learner practise, but the first outcome stays: no second attention-result, and the verdict says which round scored', async () => {
  const { page, problems, context } = await openPage(browser, server.url);
  await page.goto(`${server.url}web/embed.html?preset=break-it`);
  const results = [];
  await page.exposeFunction('recordResult', (detail) => results.push(detail));
  await page.evaluate(() => document.querySelector('attention-lab').addEventListener('attention-result', (e) => window.recordResult(e.detail)));
  const card = page.locator('#bk-no-scale');
  await card.locator('summary').waitFor();
  if (!(await card.evaluate((d) => d.open))) await card.locator('summary').click();
  const verdict = async () => (await shownText(card.locator('.bk-verdict'))).trim();

  // The scored round: a wrong prediction.
  await card.getByLabel('Rows sum to 1').check();
  await card.locator('button.bk-switch').click();
  assert.match(await verdict(), /still passes.*locked.*no point/, `scored round: "${await verdict()}"`);
  await card.locator('button.bk-repair-button').click();
  await page.waitForTimeout(50);
  assert.deepEqual(results.map(({ exercise, passed }) => ({ exercise, passed })), [{ exercise: 'no-scale', passed: false }]);

  // Reset, then the right check, now that the checks have been seen.
  await page.locator('button.bk-reset').click();
  assert.equal(await card.getByLabel('Scores scaled by 1/√dk').isDisabled(), false, 'the reset card can be predicted again');
  const waiting = await verdict();
  await card.getByLabel('Scores scaled by 1/√dk').check();
  await card.locator('button.bk-switch').click();
  await page.waitForTimeout(100);
  assert.deepEqual(results.map(({ exercise, passed, score }) => ({ exercise, passed, raw: score.raw })),
    [{ exercise: 'no-scale', passed: false, raw: 0 }], 'after a reset, a practice round must not report another outcome');
  const text = await verdict();
  assert.doesNotMatch(text, /made before the checks were seen/, `a practice round's prediction was made after the checks were seen, yet the verdict says: "${text}"`);
  assert.match(text, /prediction was right/, text);
  assert.match(text, /[Pp]ractice.*first.*no point/, `the verdict says the score keeps the first outcome: "${text}"`);
  assert.match(waiting, /[Pp]ractice.*no point/, `before the practice round the verdict says it is practice: "${waiting}"`);
  assertClean(problems, 'reset and practise');
  await context.close();
});

test('a card that a link opens with its bug on scores no point, and a prediction after a reset cannot buy one', async () => {
  const bug = 'no-scale';
  const index = EXERCISES.findIndex((e) => e.bug === bug);
  const savedOutcome = (page) => page.evaluate((b) => JSON.parse(localStorage.getItem('attention-lab.progress.v1') || '{}').o?.[b], bug);
  // Card 8 with its bug on and no prediction ("-3"); then, in a second page, with the right prediction already made ("h3").
  for (const [cardState, before] of [['-3', /before a prediction was made, so this card scores no point/], ['h3', /right.*opened with its bug already on.*no point/]]) {
    const { page, problems, context } = await openPage(browser, server.url);
    const state = '-0'.repeat(index) + cardState + '-0'.repeat(EXERCISES.length - index - 1);
    await page.goto(`${server.url}web/index.html#view=break-it&brk.s=${state}`);
    await page.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
    const card = page.locator(`#bk-${bug}`);
    const verdict = async () => (await shownText(card.locator('.bk-verdict'))).trim();
    await page.waitForFunction((b) => document.querySelector(`#bk-${b} button.bk-switch`).getAttribute('aria-pressed') === 'true', bug);
    assert.equal(await card.locator('[data-check="scoresScaled"]').getAttribute('data-state'), 'fail', 'the link shows the check failing');
    assert.match(await verdict(), before, `${cardState}: the card opened with its bug on says: "${await verdict()}"`);
    assert.equal(await savedOutcome(page), 0, `${cardState}: the card's checks were shown, so its outcome is no point`);

    // Reset, then predict the check the card showed failing.
    await page.locator('button.bk-reset').click();
    assert.match(await verdict(), /[Pp]ractice.*no point/, `${cardState}: after the reset the card says it is practice: "${await verdict()}"`);
    await card.getByLabel('Scores scaled by 1/√dk').check();
    await card.locator('button.bk-switch').click();
    const text = await verdict();
    assert.match(text, /prediction was right/, text);
    assert.doesNotMatch(text, /1 point|made before the checks were seen/, `${cardState}: a prediction made after the checks were seen scored: "${text}"`);
    assert.match(text, /[Pp]ractice.*no point/, `${cardState}: the verdict says it is practice: "${text}"`);
    assert.equal(await savedOutcome(page), 0, `${cardState}: the saved outcome after the practice round`);
    assertClean(problems, `link ${cardState}`);
    await context.close();
  }
});

test('a link that changes a scored card\'s prediction starts the card again as practice: its verdict speaks of the first outcome', async () => {
  const bug = 'no-scale';
  const index = EXERCISES.findIndex((e) => e.bug === bug);
  const { page, problems, context } = await lesson();
  const card = page.locator(`#bk-${bug}`);
  await card.locator('summary').click();
  await card.getByLabel('Rows sum to 1').check();
  await card.locator('button.bk-switch').click();
  // The same card, bug on, with the right prediction in its place.
  const state = '-0'.repeat(index) + 'h3' + '-0'.repeat(EXERCISES.length - index - 1);
  await page.evaluate((s) => { location.hash = `view=break-it&brk.s=${s}`; }, state);
  await page.waitForFunction((b) => document.querySelector(`#bk-${b} input[value="scoresScaled"]`).checked, bug);
  const text = (await shownText(card.locator('.bk-verdict'))).trim();
  assert.match(text, /prediction was right.*[Pp]ractice.*first outcome, no point/, `the verdict after the link: "${text}"`);
  assertClean(problems, 'prediction changed by a link');
  await context.close();
});
