// The lesson page by keyboard and screen reader alone: the focus is never
// dropped to the page when a control disables itself or a notice closes, a
// shared link puts the focus where it points, maps answer the keys a grid
// answers, what an edit or a run changes is read out, and no two controls
// share a name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, typeInto, renderEverySection } from './helpers/browser.mjs';

const suite = browserSuite();
const open = (hash = '', viewport = { width: 1280, height: 900 }) => suite.open(hash, { viewport });

/** What a screen reader treats as a live region. */
const LIVE = '[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"], [role="log"]';

/** The focused element, described: its data-field, data-action or id, else its tag. */
const focused = (page) => page.evaluate(() => {
  const n = document.activeElement;
  return n.dataset.field || n.dataset.action || n.id || n.tagName;
});

/** The live region holding `selector`'s element now, as a handle (null inside when there is none). */
const liveRegionOf = (page, selector) => page.evaluateHandle(([sel, live]) => document.querySelector(sel)?.closest(live) ?? null, [selector, LIVE]);

/**
 * `selector`'s element, written by an edit, sits in `region`, a live region
 * that was in the page before the edit: only then is its text read out.
 */
async function assertAnnounced(page, region, selector, where) {
  const seen = await page.evaluate(([before, sel, live]) => {
    const node = document.querySelector(sel);
    return { text: node?.textContent.trim().slice(0, 60) ?? null, hadRegion: before !== null,
      same: Boolean(before && before.isConnected && node && node.closest(live) === before) };
  }, [region, selector, LIVE]);
  assert.ok(seen.hadRegion, `${where}: before the edit, no live region was there to read out ${selector}`);
  assert.ok(seen.same, `${where}: ${selector} ("${seen.text}") is not in the live region that was there before the edit`);
}

test('a stepper button at its end keeps the focus, marked unavailable, and more presses stay at the end', async () => {
  const { context, page, problems } = await open('#view=kv-cache');
  // Token 3 of 5: Next twice reaches the last token; two more presses stay there.
  await page.locator('[data-field="kv-next"]').focus();
  for (let k = 0; k < 4; k++) await page.keyboard.press('Enter');
  assert.equal(await page.locator('[data-out="kv-step"]').textContent(), 'Token 5 of 5', 'Next held at the end');
  assert.equal(await focused(page), 'kv-next', 'at token 5 the focus stays on "Next token"');
  assert.equal(await page.locator('[data-field="kv-next"]').getAttribute('aria-disabled'), 'true', 'Next is marked unavailable at the end');
  await page.keyboard.press('Shift+Tab');
  assert.equal(await focused(page), 'kv-prev');
  for (let k = 0; k < 6; k++) await page.keyboard.press('Enter');
  assert.equal(await page.locator('[data-out="kv-step"]').textContent(), 'Token 1 of 5');
  assert.equal(await focused(page), 'kv-prev', 'at token 1 the focus stays on "Previous token"');
  assert.equal(await page.locator('[data-field="kv-next"]').getAttribute('aria-disabled'), 'false');

  // The same in online softmax, which starts at tile 1 of 3.
  await page.goto(`${suite.server.url}#view=online-softmax`);
  await page.waitForSelector('html[data-ready="true"]');
  await page.locator('[data-field="flash-next"]').focus();
  for (let k = 0; k < 4; k++) await page.keyboard.press('Enter');
  assert.equal(await page.locator('[data-out="flash-step"]').textContent(), 'Tile 3 of 3');
  assert.equal(await focused(page), 'flash-next', 'at the last tile the focus stays on "Next tile"');
  assert.equal(await page.locator('[data-field="flash-next"]').getAttribute('aria-disabled'), 'true');
  assertClean(problems, 'steppers');
  await context.close();
});

test('watch a head learn: pause and finish are read out, and the focus stays on Start, marked unavailable, when training finishes', async () => {
  const { context, page, problems } = await open('#view=watch-learn');
  /** The one-line summary for screen readers, and whether it is a live region (null: there is none). */
  const said = () => page.evaluate((live) => {
    const n = document.querySelector('#watch-learn [data-out="learn-said"]');
    return n && { text: n.textContent, live: n.closest(live) !== null };
  }, LIVE);
  await page.locator('[data-action="learn-start"]').focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => Number(document.querySelector('[data-out="learn-step"]').textContent) > 0);
  await page.keyboard.press('Enter'); // Pause
  const paused = await said();
  await page.keyboard.press('Enter'); // Start again
  await page.waitForFunction(() => document.querySelector('[data-action="learn-start"]').textContent === 'Finished', null, { timeout: 20000 });
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve()))); // a disabled button would lose the focus by the next frame
  assert.equal(await focused(page), 'learn-start', 'the focus stays on Start, never moved onto Reset');
  assert.equal(await page.locator('[data-action="learn-start"]').getAttribute('aria-disabled'), 'true', 'Start is marked unavailable');
  const looks = await page.evaluate(() => ['learn-start', 'learn-reset'].map((a) => getComputedStyle(document.querySelector(`[data-action="${a}"]`)).backgroundColor));
  assert.notEqual(looks[0], looks[1], `the unavailable Start looks unlike the available Reset (${looks.join(' vs ')})`);
  // In a high-contrast theme too, where backgrounds are the theme's own: the ink tells them apart.
  await page.emulateMedia({ forcedColors: 'active' });
  const inks = await page.evaluate(() => ['learn-start', 'learn-reset'].map((a) => getComputedStyle(document.querySelector(`[data-action="${a}"]`)).color));
  assert.notEqual(inks[0], inks[1], `in forced colours, the unavailable Start is inked as the available Reset (${inks.join(' vs ')})`);
  await page.emulateMedia({ forcedColors: 'none' });
  assert.ok(paused?.live, `a live summary line: ${JSON.stringify(paused)}`);
  assert.match(paused.text, /^Paused at step \d+: held-out accuracy \d+\.\d\s%$/);
  assert.match((await said()).text, /^Finished at step 400: held-out accuracy \d+\.\d\s%$/);
  assert.equal(await page.locator('#watch-learn [data-slot="readout"]').evaluate((n, live) => n.closest(live), LIVE), null,
    'the readout, written every frame, is not live');
  // Switching a head off (and on again) says what it did to the accuracy.
  await page.locator('[data-action="learn-ablate-1-1"]').focus();
  await page.keyboard.press('Enter');
  assert.match((await said()).text, /^Layer 1 head 1 switched off: held-out accuracy \d+\.\d\s%$/);
  await page.keyboard.press('Enter');
  assert.match((await said()).text, /^Layer 1 head 1 switched back on: held-out accuracy \d+\.\d\s%$/);
  assertClean(problems, 'watch-learn');
  await context.close();
});

test('a shared #view= link puts the focus on its section: the next Tab goes on there, not from the top', async () => {
  const { context, page, problems } = await open('#view=masks');
  // The heading has the focus, but draws no ring: the learner did not move the focus.
  const heading = await page.evaluate(() => ({ focused: document.activeElement.id, ring: document.activeElement.matches(':focus-visible') }));
  assert.deepEqual(heading, { focused: 'h-masks', ring: false }, 'on opening #view=masks');
  await page.keyboard.press('Tab');
  const at = await page.evaluate(() => ({ section: document.activeElement.closest('section')?.id ?? document.activeElement.className, y: window.scrollY }));
  assert.equal(at.section, 'masks', `Tab after opening #view=masks went to "${at.section}"`);
  assert.ok(at.y > 0, 'the page stays scrolled to the section');
  assertClean(problems, 'view link');
  await context.close();
});

test('the page notice: Dismiss and Escape close it and the focus goes on to the lesson', async () => {
  const { context, page, problems } = await open('#mask.ct=99');
  const notice = page.locator('#notice');
  assert.equal(await notice.isVisible(), true, 'a link it cannot use shows the notice');
  await page.keyboard.press('Tab'); // Skip to the lesson
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Dismiss');
  await page.keyboard.press('Enter');
  assert.equal(await notice.isVisible(), false, 'Dismiss hides it');
  assert.equal(await focused(page), 'h-one-query', 'the focus is on the first section\'s heading');

  // Another unusable link shows it again; Escape inside it closes it the same
  // way. Its view is still applied: the focus goes on to that section's heading.
  await page.goto(`${suite.server.url}#view=masks&mask.ct=98`);
  await notice.waitFor({ state: 'visible' });
  assert.equal(await focused(page), 'h-masks', 'the link\'s section has the focus');
  await notice.locator('button').focus();
  await page.keyboard.press('Escape');
  assert.equal(await notice.isVisible(), false, 'Escape hides it');
  assert.equal(await focused(page), 'h-masks', 'the focus is back on the heading of the section the link named');
  assertClean(problems, 'notice');
  await context.close();
});

test('a map\'s weights answer Home, End, Ctrl+Home, Ctrl+End, PageUp and PageDown, and Space does not scroll the page', async () => {
  const { context, page, problems } = await open('#view=three-by-three');
  const map = page.locator('[data-heatmap="ex-weights"]');
  const at = () => page.evaluate(() => [document.activeElement.dataset.row, document.activeElement.dataset.col].join(','));
  await map.locator('.hm-cell[tabindex="0"]').focus();
  const y = await page.evaluate(() => window.scrollY);
  await page.keyboard.press('Space');
  await page.waitForTimeout(100); // a scroll by Space would have landed by now
  assert.equal(await page.evaluate(() => window.scrollY), y, 'Space on a weight leaves the page where it was');
  assert.equal(await at(), '0,0');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('End');
  assert.equal(await at(), '1,2', 'End: the last cell of the row');
  await page.keyboard.press('Home');
  assert.equal(await at(), '1,0', 'Home: the first cell of the row');
  await page.keyboard.press('Control+End');
  assert.equal(await at(), '2,2', 'Ctrl+End: the last cell of the map');
  await page.keyboard.press('PageUp');
  assert.equal(await at(), '0,2', 'PageUp: the top of the column');
  await page.keyboard.press('Control+Home');
  assert.equal(await at(), '0,0', 'Ctrl+Home: the first cell of the map');
  await page.keyboard.press('PageDown');
  assert.equal(await at(), '2,0', 'PageDown: the bottom of the column');
  assert.equal(await map.locator('.hm-cell[tabindex="0"]').count(), 1, 'still one tab stop');
  assertClean(problems, 'map keys');
  await context.close();
});

test('Escape in an invalid number puts back the last valid value and clears the message', async () => {
  const { context, page, problems } = await open('#view=one-query');
  for (const selector of ['[data-grid="one-q"] input[data-row="0"][data-col="0"]', 'input[data-field="cost-d"]']) {
    const input = page.locator(selector).first();
    const before = await input.inputValue();
    await input.focus();
    await page.keyboard.press('End');
    await page.keyboard.type('x');
    const marked = await input.evaluate((el) => ({ invalid: el.getAttribute('aria-invalid'), value: el.value }));
    assert.equal(marked.invalid, 'true', `${selector}: "${marked.value}" is marked invalid`);
    await page.keyboard.press('Escape');
    const after = await input.evaluate((el) => {
      const ids = (el.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
      return { invalid: el.getAttribute('aria-invalid'), value: el.value, focused: document.activeElement === el,
        messages: [...ids.map((id) => document.getElementById(id)?.textContent ?? ''),
          ...[...el.closest('section').querySelectorAll('.cell-msg')].map((m) => m.textContent)].filter((t) => /still/.test(t)) };
    });
    assert.deepEqual(after, { invalid: null, value: before, focused: true, messages: [] },
      `${selector}: after Escape the input shows its last valid value ${before}, unmarked, with no message`);
  }
  assertClean(problems, 'Escape in an invalid number');
  await context.close();
});

test('what T² costs is not read out when first measured, only after the learner changes it', async () => {
  const { context, page, problems } = await open('#view=one-query');
  // The page measures T² once the learner comes near, on no edit of theirs.
  await page.locator('#t-squared').scrollIntoViewIfNeeded();
  await page.waitForSelector('[data-check="cost-slopes"]', { state: 'attached', timeout: 60000 });
  const atLoad = await page.evaluate((live) => {
    const node = document.querySelector('[data-check="cost-slopes"]');
    const region = node.closest(live);
    return region ? `${region.tagName.toLowerCase()}[data-slot="${region.dataset.slot}"] aria-live=${region.getAttribute('aria-live')}` : null;
  }, LIVE);
  assert.equal(atLoad, null, 'the first measurement, made as the learner scrolls there, sits in a live region and is read out');
  // A passing slope short of 2 says why, so a ✓ beside "1.82 (T²: 2)" does not read as a contradiction.
  const check = await page.evaluate(() => {
    const node = document.querySelector('[data-check="cost-slopes"]');
    return { passed: node.dataset.passed, slope: Number(node.querySelector('[data-out="cost-slope-weights"]').textContent), text: node.textContent };
  });
  if (check.passed === 'true' && check.slope < 1.95) assert.match(check.text, /stays below 2 because the inputs and the output/, `slope ${check.slope}: ${check.text}`);
  if (check.slope >= 1.95) assert.doesNotMatch(check.text, /stays below 2/, `slope ${check.slope}: ${check.text}`);
  assertClean(problems, 'T² at load');
  await context.close();
});

test('the result of an edit is read out: check lines are live regions before their text changes', async () => {
  // The sections that say an edit's result in a sentence of their own, once
  // the edits pause, are heard in tests/live-regions.test.mjs.
  const { context, page, problems } = await open();
  // What T² costs: "Measuring …" is read out, and so is the result that replaces it.
  await typeInto(page, page.locator('[data-field="cost-d"]'), '16');
  await page.waitForFunction(() => document.querySelector('[data-out="cost-progress"]')?.textContent.includes('d = 16'));
  const region = await liveRegionOf(page, '[data-out="cost-progress"]');
  await page.waitForSelector('[data-check="cost-slopes"]', { timeout: 20000 });
  await assertAnnounced(page, region, '[data-check="cost-slopes"]', 'T² measured');
  assertClean(problems, 'live checks');
  await context.close();
});

/**
 * The accessible names of the page's buttons and disclosures, as Chromium
 * computes them, that more than one control has.
 */
async function sharedNames(page, context, pattern) {
  const cdp = await context.newCDPSession(page);
  const { nodes } = await cdp.send('Accessibility.getFullAXTree');
  const names = nodes.filter((n) => !n.ignored && ['button', 'DisclosureTriangle'].includes(n.role?.value))
    .map((n) => n.name?.value ?? '').filter((name) => pattern.test(name));
  return { names, count: names.length, shared: [...new Set(names.filter((name, i) => names.indexOf(name) !== i))] };
}

test('no two controls share a name: the C of each flow step, and each question\'s Check and answer', async () => {
  const { context, page, problems } = await open();
  await renderEverySection(page); // a section far from the viewport is not in the accessibility tree
  const pass = await sharedNames(page, context, /^Read the C: pass/);
  assert.ok(pass.count >= 10, `two flows of five steps: ${pass.count} "Read the C" disclosures seen`);
  assert.deepEqual(pass.shared, [], '"Read the C" names used more than once');
  assert.ok(pass.names.some((name) => /^Read the C: pass 2 of attn_sdpa \(.*\) for step 3 \(÷ √d_k\) in “The 3×3 example”$/.test(name)),
    `the step and the section end the name: ${JSON.stringify(pass.names.slice(0, 3))}`);
  const quiz = await sharedNames(page, context, /^(Check|Show the answer)/);
  assert.equal(quiz.count, 16, 'eight "Check" buttons and eight "Show the answer" disclosures');
  assert.deepEqual(quiz.shared, [], 'quiz names used more than once');
  const check = page.locator('#quiz form[data-quiz="scale"] button[type="submit"]');
  assert.equal(await check.textContent(), 'Check', 'the button still shows "Check"');
  assert.equal(await check.getAttribute('aria-label'), 'Check your answer to question 1');
  assertClean(problems, 'names');
  await context.close();
});

/** Record, in the page, each text a live region takes from now on (its class or data-out, then its text). */
const recordLive = (page) => page.evaluate((live) => {
  window.liveSaid = [];
  new MutationObserver((changes) => {
    for (const change of changes) {
      const region = (change.target.nodeType === 1 ? change.target : change.target.parentElement)?.closest(live);
      if (region) window.liveSaid.push(`${region.dataset.out || region.className}: ${region.textContent.trim()}`);
    }
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}, LIVE);
const liveSaid = (page) => page.evaluate(() => window.liveSaid.splice(0));

test('the progress panel is read out when the score changes, not each time a section counts as visited', async () => {
  const { context, page, problems } = await open();
  await recordLive(page);
  // Tabbing into a section counts it at once: the panel's count goes up, silently.
  // (A section the viewport rests on long enough counts too: on a slow
  // machine the first one may already have, so the count is compared.)
  const line = page.locator('[data-progress] .pg-line');
  const visited = async () => Number((await line.textContent()).match(/\b(\d+) of \d+ sections visited/)[1]);
  const before = await visited();
  await page.locator('#h-masks').focus();
  await page.keyboard.press('Tab');
  await page.locator('#h-rotary').focus();
  await page.keyboard.press('Tab');
  const after = await visited();
  assert.ok(after >= before + 2, `two sections counted: ${before} visited before, ${after} after`);
  let said = (await liveSaid(page)).filter((s) => /sections? visited|Score \d/.test(s));
  assert.deepEqual(said, [], 'a visit is not read out');

  // A prediction on a break-it card changes no score: the panel says nothing either.
  const card = page.locator('#break-it details.bk-card').first();
  // By keyboard (focus, then Space or Enter): a pointer aimed at a control
  // on this long page can miss it if a section far above is laid out meanwhile.
  const choose = async (control, key) => { await control.focus(); await page.keyboard.press(key); };
  await choose(card.locator('input[type="radio"]').first(), 'Space');
  said = (await liveSaid(page)).filter((s) => /Score \d/.test(s));
  assert.deepEqual(said, [], 'an unchanged score is not read out again');

  // An answer changes the score: that is read out, once and short; the full line is plain text.
  const form = page.locator('#quiz form').first();
  await choose(form.locator('input[type="radio"]').first(), 'Space');
  assert.equal(await form.locator('input[type="radio"]').first().isChecked(), true, 'the first choice is taken');
  await choose(form.locator('button[type="submit"]'), 'Enter');
  said = (await liveSaid(page)).filter((s) => /Score \d/.test(s));
  assert.equal(said.length, 1, `one announcement of the new score: ${JSON.stringify(said)}`);
  assert.match(said[0], /: Score 1 of \d+$/);
  assert.match(await line.textContent(), /1 of 8 questions answered .*\b\d+ of \d+ sections visited/s, 'the line still shows both');
  assertClean(problems, 'progress panel');
  await context.close();
});

test('"Reset all progress?" says what it erases when the focus lands on "Keep my progress"', async () => {
  const { context, page, problems } = await open('#view=quiz');
  await page.locator('button.pg-reset').focus();
  await page.keyboard.press('Enter');
  assert.equal(await focused(page), 'BUTTON');
  const cdp = await context.newCDPSession(page);
  const { nodes } = await cdp.send('Accessibility.getFullAXTree');
  const group = nodes.find((n) => n.role?.value === 'group' && n.name?.value === 'Reset all progress?');
  assert.ok(group, 'a group named "Reset all progress?"');
  const description = group.description?.value ?? '';
  assert.match(description, /cannot be undone/, `the group's description: "${description}"`);
  assertClean(problems, 'reset confirm');
  await context.close();
});

test('at 320 px the formula, which scrolls sideways, is a named tab stop with the hint; a map with a focusable weight adds no stop of its own', async () => {
  const { context, page, problems } = await open('#view=one-query', { width: 320, height: 800 });
  await page.evaluate(() => new Promise((resolve) => requestIdleCallback(() => resolve(), { timeout: 2000 })));
  const formula = await page.locator('#one-query .formula').evaluate((n) => ({
    overflows: n.scrollWidth > n.clientWidth + 1, tab: n.getAttribute('tabindex'), role: n.getAttribute('role'),
    name: n.getAttribute('aria-label'), hint: getComputedStyle(n, '::before').content,
  }));
  assert.equal(formula.overflows, true, 'the formula is wider than a 320 px screen');
  assert.deepEqual({ tab: formula.tab, role: formula.role }, { tab: '0', role: 'group' }, 'a tab stop and a named group');
  assert.match(formula.name ?? '', /formula.*\(scrolls sideways\)/i, `named: "${formula.name}"`);
  assert.match(formula.hint, /Scroll sideways for more/, 'the visible hint');

  // Self- and cross-attention: each head's map is wider than the screen, and one of its weights is a tab stop.
  await page.goto(`${suite.server.url}#view=self-cross`);
  await page.waitForSelector('html[data-ready="true"]');
  const wrap = page.locator('#self-cross .heatmap-wrap:has(.hm-cell[tabindex="0"])').first();
  await wrap.scrollIntoViewIfNeeded();
  await page.evaluate(() => new Promise((resolve) => requestIdleCallback(() => resolve(), { timeout: 2000 })));
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  const box = await wrap.evaluate((n) => ({ overflows: n.dataset.overflows, tab: n.getAttribute('tabindex') }));
  assert.equal(box.overflows, '1', 'the map scrolls sideways and says so');
  assert.notEqual(box.tab, '0', 'its weights already take the focus (and scroll it): the box is no extra stop');
  assertClean(problems, 'scroll boxes at 320 px');
  await context.close();
});
