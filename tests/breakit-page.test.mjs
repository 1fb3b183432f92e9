// The "Break it" section in Chromium: one card end to end (predict, break,
// see the red check and the marked entry, repair), its state in the URL hash
// and in localStorage, a page where localStorage is refused, the repair
// button once repaired, what a screen reader hears on marked entries, and
// the core's own C under each mistake ("Read the C").
// The section lives in the lesson page, web/index.html.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, startServer, waitForLesson, runAxe, assertClean, waitForState, settled, resizeTo } from './helpers/browser.mjs';
import { CHECKS } from '../web/checks.js';
import { EXERCISES } from '../web/exercises.js';
import { BUG_SOURCES } from '../web/generated/c-source.js';


const pagePath = 'index.html';
const suite = browserSuite();
const open = (options = {}, init) => suite.open(pagePath, { ...options, init });

const checkState = (card, name) => card.locator(`[data-check="${name}"]`).getAttribute('data-state');

/** The table cells a locator finds, as "[row, col]" counting from 0 ('none' if none), for a failure message. */
const cellsAt = (cells) => cells.evaluateAll((tds) => tds.map((td) => `[${td.dataset.row}, ${td.dataset.col}]`).join(' ') || 'none');

test('one card end to end: predict, break, see the red check and the mark, repair', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-causal-mask');
  assert.equal(await card.count(), 1, `the card is on ${pagePath}`);
  const cards = await page.locator('#break-it .bk-card').count();
  assert.equal(cards, EXERCISES.length, 'one card per bug');

  // Open the card with the keyboard.
  await card.locator('summary').focus();
  await page.keyboard.press('Enter');
  assert.equal(await card.evaluate((node) => node.open), true, 'the card is open after Enter on its summary');

  // Bug off: every check passes or does not apply.
  const states = await card.locator('.bk-check').evaluateAll((nodes) => nodes.map((n) => n.dataset.state));
  assert.ok(states.length === CHECKS.length && states.every((s) => s === 'pass' || s === 'skip'), `bug off: ${states}`);

  // Predict.
  await card.getByLabel('No future leak').check();
  assert.match(await card.locator('.bk-verdict').textContent(), /turn the bug on/);

  // Break it, with the keyboard.
  const toggle = card.locator('button.bk-switch');
  assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
  await toggle.focus();
  await page.keyboard.press('Space');
  assert.equal(await toggle.getAttribute('aria-pressed'), 'true');

  // The red checks, with their reasons.
  assert.equal(await checkState(card, 'noFutureLeak'), 'fail');
  assert.equal(await checkState(card, 'blockedWeightsZero'), 'fail');
  assert.equal(await checkState(card, 'rowSumsOne'), 'pass');
  assert.match(await card.locator('[data-check="noFutureLeak"] .bk-check-mark').textContent(), /✗ fail/);
  assert.match(await card.locator('.bk-verdict').textContent(), /prediction was right/);

  // The predicted check's entry is marked: an output cell, and its query's row in the weights.
  const marked = card.locator('[data-table="output"] td.bk-worst');
  assert.equal(await marked.count(), 1, `output cells marked as the worst entry, one wanted; marked: ${await cellsAt(marked)}`);
  assert.match(await marked.textContent(), /◆/);
  const row = await marked.getAttribute('data-row');
  const rowCells = card.locator(`[data-table="weights0"] td.bk-worst-row[data-row="${row}"]`);
  assert.equal(await rowCells.count(), 4, `weights cells marked as the worst output's row ${row}, all 4 keys wanted; marked: ${await cellsAt(rowCells)}`);

  // Mark the blocked-weight check's entry instead: query 1, key 4, on the weights heatmap.
  await card.locator('[data-check="blockedWeightsZero"] button.bk-show').click();
  const cell = card.locator('[data-table="weights0"] td.bk-worst');
  assert.equal(await cell.count(), 1, `weights cells marked for blockedWeightsZero, one wanted; marked: ${await cellsAt(cell)}`);
  assert.equal(await cell.getAttribute('data-row'), '0');
  assert.equal(await cell.getAttribute('data-col'), '3');
  assert.match(await cell.textContent(), /◆ 0\.475/);
  assert.match(await cell.textContent(), /blocked/);
  assert.match(await card.locator('[data-table="weights0"] th.bk-mark-row').textContent(), /▶ q1/);
  assert.match(await card.locator('[data-table="weights0"] th.bk-mark-col').textContent(), /▼ k4/);
  assert.equal(await card.locator('[data-check="blockedWeightsZero"] button.bk-show').getAttribute('aria-pressed'), 'true');

  // The state is in the hash and in localStorage.
  const saved = '-0'.repeat(3) + 'c3' + '-0'.repeat(EXERCISES.length - 4);
  await page.waitForFunction((want) => location.hash.includes(`brk.s=${want}`), saved);
  const record = JSON.parse(await page.evaluate(() => localStorage.getItem('attention-lab.progress.v1')));
  assert.equal(record.b, saved);
  assert.deepEqual(record.o, { 'no-causal-mask': 1 }, 'the outcome: the prediction was right');

  // Repair: all green again.
  await card.locator('button.bk-repair-button').click();
  assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
  const after = await card.locator('.bk-check').evaluateAll((nodes) => nodes.map((n) => n.dataset.state));
  assert.ok(after.every((s) => s === 'pass' || s === 'skip'), `after the repair: ${after}`);
  const stillMarked = card.locator('td.bk-worst, td.bk-worst-row');
  assert.equal(await stillMarked.count(), 0, `cells still marked after the repair: ${await cellsAt(stillMarked)}`);
  assert.match(await card.locator('summary .bk-badges').textContent(), /predicted · broken · repaired/);
  assert.match(await page.locator('.bk-progress').textContent(), new RegExp(`1 of ${EXERCISES.length} cards finished .*Now: 1 predicted, 1 broken, 1 repaired`));

  // A reload brings the same state back (once the hash, written when edits
  // pause, holds the repair).
  await page.waitForFunction((before) => !location.hash.includes(`brk.s=${before}`), saved);
  await page.reload();
  await waitForLesson(page);
  const again = page.locator('#bk-no-causal-mask');
  assert.equal(await again.evaluate((node) => node.open), true, 'after the reload the card is open again');
  assert.equal(await again.getByLabel('No future leak').isChecked(), true, 'after the reload the prediction "No future leak" is checked again');
  assert.match(await again.locator('summary .bk-badges').textContent(), /repaired/);

  assert.deepEqual(problems.pageErrors, []);
  assert.deepEqual(problems.consoleErrors, []);
  assert.deepEqual(problems.foreignRequests, []);
  await context.close();
});

test('a closed card runs its checks when it first opens: at once from its summary, and when a script or link opens it', async () => {
  const { page, problems, context } = await open();
  /** What card n's panel holds: its status line, its drawn checks and its tables. */
  const panel = (n) => page.locator('#break-it .bk-card').nth(n).evaluate((card) => ({
    open: card.open, status: card.querySelector('.bk-status').textContent,
    checks: card.querySelectorAll('.bk-check[data-state]').length, tables: card.querySelectorAll('.bk-maps table').length,
  }));
  // The first card opens with the page; the others wait, with nothing run.
  const first = await panel(0);
  assert.ok(first.open && first.status.startsWith('Bug off') && first.checks === CHECKS.length, `card 1 at load: ${JSON.stringify(first)}`);
  for (let n = 1; n < EXERCISES.length; n++) {
    const closed = await panel(n);
    assert.deepEqual(closed, { open: false, status: '', checks: 0, tables: 0 }, `card ${n + 1} before it is opened`);
  }
  // A press on a summary draws the card before it opens: read in the same
  // task as the press, before any frame, the panel is full already.
  const pressed = await page.locator('#break-it .bk-card').nth(1).evaluate((card) => {
    card.querySelector('summary').click();
    return { open: card.open, status: card.querySelector('.bk-status').textContent, checks: card.querySelectorAll('.bk-check[data-state]').length };
  });
  assert.ok(pressed.open && pressed.status.startsWith('Bug off') && pressed.checks === CHECKS.length, `card 2 right after its summary is pressed: ${JSON.stringify(pressed)}`);
  // Opened by a script (as a link to the card opens it), it is drawn as well.
  const last = EXERCISES.length - 1;
  await page.locator('#break-it .bk-card').nth(last).evaluate((card) => { card.open = true; });
  await waitForState(page, (n) => document.querySelectorAll('#break-it .bk-card')[n].querySelectorAll('.bk-check[data-state]').length > 0, last,
    `card ${last + 1}, opened by a script, draws its checks`);
  const scripted = await panel(last);
  assert.ok(scripted.status.startsWith('Bug off') && scripted.checks === CHECKS.length && scripted.tables > 0, `card ${last + 1} opened by a script: ${JSON.stringify(scripted)}`);
  assertClean(problems, 'cards opened');
  await context.close();
});

test('the cards\' lines agree with their checks and with the progress panel, through "Reset these cards" and "Reset all progress"', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-causal-mask');
  await card.locator('summary').click();
  // The status line counts what the check list shows: passes, fails and checks that do not apply.
  const statusAgrees = async (when) => {
    const states = await card.locator('.bk-check').evaluateAll((nodes) => nodes.map((n) => n.dataset.state));
    const n = (state) => states.filter((x) => x === state).length;
    const status = await card.locator('.bk-status').textContent();
    const skip = n('skip') ? `; ${n('skip')} ${n('skip') === 1 ? 'does' : 'do'} not apply` : '';
    const want = status.startsWith('Bug off')
      ? `Bug off: ${n('fail') ? `${n('fail')} of ${n('pass') + n('fail')} checks fail` : `all ${n('pass')} checks pass`}${skip}`
      : `Bug “no-causal-mask” is on: ${n('fail')} of ${n('pass') + n('fail')} checks fail${skip}`;
    assert.ok(status.startsWith(want), `${when}: the status line says "${status}", the list shows ${n('pass')} pass, ${n('fail')} fail, ${n('skip')} n/a`);
  };
  await statusAgrees('bug off');
  const finishedIn = async () => {
    const line = await page.locator('.bk-progress').textContent();
    const panel = await page.locator('[data-progress] .pg-line, [data-progress] p').first().textContent();
    return { line: line.match(/(\d+) of (\d+) cards finished/)?.slice(1).join(' of '), panel: panel.match(/(\d+) of (\d+) break-it exercises finished/)?.slice(1).join(' of '), text: line };
  };
  await card.getByLabel('No future leak').check();
  await card.locator('button.bk-switch').click();
  await statusAgrees('bug on');
  await card.locator('button.bk-repair-button').click();
  await statusAgrees('repaired');
  let seen = await finishedIn();
  assert.deepEqual([seen.line, seen.panel], [`1 of ${EXERCISES.length}`, `1 of ${EXERCISES.length}`], `finished cards, the cards' line and the panel: ${seen.text}`);

  // "Reset these cards" is practice: the finished card stays finished, in both places.
  await page.locator('button.bk-reset').click();
  seen = await finishedIn();
  assert.deepEqual([seen.line, seen.panel], [`1 of ${EXERCISES.length}`, `1 of ${EXERCISES.length}`], `after "Reset these cards": ${seen.text}`);
  assert.match(seen.text, /Now: 0 predicted, 0 broken, 0 repaired/);
  assert.match(await card.locator('.bk-verdict').textContent(), /first outcome, 1 point/);

  // "Reset all progress" erases the outcome: no card may still speak of it.
  await page.locator('button.pg-reset').click();
  await page.locator('button.pg-erase').click();
  seen = await finishedIn();
  assert.deepEqual([seen.line, seen.panel], [`0 of ${EXERCISES.length}`, `0 of ${EXERCISES.length}`], `after "Reset all progress": ${seen.text}`);
  const verdict = await card.locator('.bk-verdict').textContent();
  assert.doesNotMatch(verdict, /practice|first outcome/, `after "Reset all progress" the verdict still speaks of a kept outcome: "${verdict}"`);
  assertClean(problems, 'resets');
  await context.close();
});

test('a card whose bug was switched off again, not repaired, says it is not finished, and the cards\' line names it; "Apply the repair" finishes it', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-causal-mask');
  await card.locator('summary').click();
  await card.getByLabel('No future leak').check();
  const toggle = card.locator('button.bk-switch');
  await toggle.click(); // on
  let verdict = await card.locator('.bk-verdict').textContent();
  assert.match(verdict, /scores 1 point\. The card is not finished yet: read the repair below and press “Apply the repair” to finish it\./);
  await toggle.click(); // off, with the same switch
  verdict = await card.locator('.bk-verdict').textContent();
  assert.match(verdict, /prediction was right.*not finished yet.*“Apply the repair”/, `bug switched off: "${verdict}"`);
  // Every check passes again with the bug off: the verdict speaks of the round with the bug on.
  assert.match(verdict, /^Your prediction was right: “No future leak” fails with the bug on\./, `${verdict}`);
  const line = await page.locator('.bk-progress').textContent();
  assert.match(line, /0 of \d+ cards finished/);
  assert.match(line, /Waiting for “Apply the repair”: “The causal mask is dropped”\./, `the cards' line: "${line}"`);
  // The progress panel under the quiz names it too, among what is left.
  const panel = await page.locator('.pg-line').textContent();
  assert.match(panel, /Not finished yet\. Left: the repair of “The causal mask is dropped” \(press “Apply the repair” on its card\); \d+ break-it cards to try; 8 questions to answer\./, `the panel: "${panel}"`);
  await card.locator('button.bk-repair-button').click();
  verdict = await card.locator('.bk-verdict').textContent();
  assert.doesNotMatch(verdict, /not finished/, `repaired: "${verdict}"`);
  assert.doesNotMatch(await page.locator('.bk-progress').textContent(), /Waiting/);
  assertClean(problems, 'bug off, then repaired');
  await context.close();
});

test('a card\'s legend names the blocked look exactly when one of its weights is blocked', async () => {
  const { page, problems, context } = await open();
  await page.evaluate(() => { for (const d of document.querySelectorAll('#break-it details.bk-card')) d.open = true; });
  // Every card drawn (its checks have a state); a card whose input the core refuses has no maps.
  await page.waitForFunction(() => [...document.querySelectorAll('#break-it .bk-card')].every((c) => c.querySelector('.bk-check[data-state]')), null, { timeout: 10000 });
  const cards = await page.$$eval('#break-it .bk-card:has(.bk-maps .ramp-legend)', (cs) => cs.map((c) => ({
    bug: c.dataset.bug,
    blocked: c.querySelectorAll('.bk-maps .bk-cell.blocked').length,
    keyed: Boolean(c.querySelector('.ramp-legend .ramp-blocked-key:not([hidden])')),
  })));
  const wrong = cards.filter(({ blocked, keyed }) => keyed !== blocked > 0);
  assert.deepEqual(wrong, [], 'cards whose legend names a look none of their cells has, or misses one they have');
  assert.ok(cards.some((c) => c.blocked > 0) && cards.some((c) => c.blocked === 0), `both kinds of card are on the page: ${JSON.stringify(cards)}`);
  assertClean(problems, 'card legends');
  await context.close();
});

test('a state in the URL hash is applied; a bad one is ignored', async () => {
  const { page, problems, context } = await open();
  // Card 8 (no-scale) with the bug on and a prediction of scoresScaled ('h'),
  // saved when there were 12 cards: the later cards decode as untouched.
  const state = '-0'.repeat(7) + 'h3' + '-0'.repeat(4);
  await page.evaluate((s) => { location.hash = `brk.s=${s}`; }, state);
  const card = page.locator('#bk-no-scale');
  await page.waitForFunction(() => document.querySelector('#bk-no-scale button.bk-switch').getAttribute('aria-pressed') === 'true');
  assert.equal(await checkState(card, 'scoresScaled'), 'fail');
  assert.match(await card.locator('[data-check="scoresScaled"] .bk-check-reason').textContent(), /1\/√dk is missing/);
  const worstScore = card.locator('[data-table="scores"] td.bk-worst');
  assert.equal(await worstScore.count(), 1, `scores cells marked for scoresScaled, one wanted; marked: ${await cellsAt(worstScore)}`);

  await page.evaluate(() => { location.hash = 'brk.s=<img>'; });
  await page.waitForTimeout(100);
  assert.equal(await card.locator('button.bk-switch').getAttribute('aria-pressed'), 'true', 'a bad state changes nothing');
  const images = await page.locator('img').evaluateAll((nodes) => nodes.map((n) => n.outerHTML));
  assert.equal(images.length, 0, `the hash brk.s=<img> put images in the page: ${images.join(' ')}`);
  assert.deepEqual(problems.pageErrors, []);
  await context.close();
});

test('without localStorage the cards still work', async () => {
  const { page, problems, context } = await open({}, () => {
    Object.defineProperty(window, 'localStorage', { get() { throw new DOMException('denied', 'SecurityError'); } });
  });
  const card = page.locator('#bk-softmax-over-queries');
  await card.locator('button.bk-switch').click();
  assert.equal(await checkState(card, 'rowSumsOne'), 'fail');
  const rowCells = card.locator('[data-table="weights0"] td.bk-worst-row');
  assert.equal(await rowCells.count(), 4, `weights cells marked as rowSumsOne's row, all 4 keys wanted; marked: ${await cellsAt(rowCells)}`);
  await card.locator('button.bk-repair-button').click();
  assert.equal(await checkState(card, 'rowSumsOne'), 'pass');
  assert.deepEqual(problems.pageErrors, []);
  await context.close();
});

test('the switch is named "Break it" in both states: its ○/● mark is drawn, not read', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-scale');
  await card.locator('summary').click();
  const toggle = card.locator('button.bk-switch');
  for (const pressed of ['false', 'true', 'false']) {
    assert.equal(await toggle.getAttribute('aria-pressed'), pressed);
    const mark = await toggle.evaluate((n) => getComputedStyle(n, '::before').content);
    assert.match(mark, pressed === 'true' ? /●/ : /○/, `aria-pressed=${pressed}: the mark is still drawn`);
    // The accessibility tree's own line for the button, which says what a screen reader hears.
    const seen = await toggle.ariaSnapshot();
    assert.equal(await card.getByRole('button', { name: 'Break it', exact: true }).count(), 1,
      `aria-pressed=${pressed}: the switch's accessible name is exactly "Break it"; seen ${JSON.stringify(seen)}`);
    await toggle.click();
  }
  assert.deepEqual(problems.pageErrors, []);
  await context.close();
});

test('result tables that scroll say so at 1280 px, 390 px and 320 px, and axe-core finds no violations at 1280 px and 320 px', async () => {
  const VIEWPORTS = [{ width: 1280, height: 900 }, { width: 390, height: 844 }, { width: 320, height: 700 }];
  const { page, problems, context } = await open({ viewport: VIEWPORTS[0] });
  // Every card open and two bugs on, once: the switches toggle, and the
  // result tables they draw stay while the window changes size.
  await page.evaluate(() => { for (const d of document.querySelectorAll('#break-it details')) d.open = true; });
  await page.locator('#bk-inverted-mask button.bk-switch').click();
  await page.locator('#bk-no-all-masked-guard button.bk-switch').click();
  for (const viewport of VIEWPORTS) {
    if (viewport !== VIEWPORTS[0]) await resizeTo(page, viewport.width, viewport.height);
    // A result table wider than the screen scrolls in its box: the box says
    // so, and the keyboard reaches it under a name that tells it from the rest.
    // The boxes are measured once the page is idle after the frames that lay
    // them out: wait until each box that scrolls is marked (at 320 px, until
    // some do), then read them.
    await waitForState(page, (narrowest) => {
      const boxes = [...document.querySelectorAll('#break-it .bk-table-wrap')].filter((box) => box.scrollWidth > box.clientWidth + 1);
      return (!narrowest || boxes.length > 0)
        && boxes.every((box) => box.dataset.overflows === '1' && box.getAttribute('tabindex') === '0' && box.getAttribute('aria-label'));
    }, viewport.width === 320, `${viewport.width} px: the result tables that scroll sideways are marked`);
    const tables = await page.$$eval('#break-it .bk-table-wrap', (boxes) => boxes.map((box) => ({
      card: box.closest('.bk-card').id, table: box.querySelector('table').dataset.table,
      scrolls: box.scrollWidth > box.clientWidth + 1, hint: box.dataset.overflows === '1',
      tab: box.getAttribute('tabindex'), name: box.getAttribute('aria-label'),
    })));
    const scrolling = tables.filter((t) => t.scrolls);
    if (viewport.width === 320) assert.ok(scrolling.length > 0, '320 px: some result tables scroll sideways (the case this test is for)');
    assert.deepEqual(scrolling.filter((t) => !t.hint || t.tab !== '0' || !t.name).map((t) => `${t.card} ${t.table}: hint ${t.hint}, tabindex ${t.tab}, name ${t.name}`), [],
      `${viewport.width} px: tables that scroll sideways without the hint, a tab stop or a name`);
    const names = scrolling.map((t) => t.name);
    assert.equal(new Set(names).size, names.length, `${viewport.width} px: each scrolling table has its own name: ${names.join(' | ')}`);
    // axe at the widest and the narrowest width: at 390 px the cards hold the
    // same elements as at 320 px, and only what scrolls differs (checked above).
    if (viewport.width !== 390) await runAxe(page, `${viewport.width} px`, { include: '#break-it' });
    assert.deepEqual(problems.pageErrors, [], `${viewport.width} px: page errors`);
  }
  await context.close();
});

test('the section works under a strict Content-Security-Policy (no inline scripts or styles)', async () => {
  const csp = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:";
  const strict = await startServer({ headers: () => ({ 'content-security-policy': csp }) });
  try {
    const { page, problems, context } = await suite.open(pagePath, { origin: strict.url });
    const card = page.locator('#bk-causal-upper');
    await card.locator('summary').click();
    await card.locator('button.bk-switch').click();
    assert.equal(await card.locator('[data-check="blockedWeightsZero"]').getAttribute('data-state'), 'fail');
    // The colours come from the stylesheet, so CSP let them through.
    const colour = await card.locator('[data-table="weights0"] td.bk-cell').first().evaluate((td) => getComputedStyle(td).backgroundColor);
    assert.notEqual(colour, 'rgba(0, 0, 0, 0)');
    assert.deepEqual(problems.consoleErrors, [], 'no CSP violations');
    assert.deepEqual(problems.pageErrors, []);
    await context.close();
  } finally {
    await strict.close();
  }
});

test('once repaired, "Apply the repair" gives way to a line that says so; turning the bug on again brings it back', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-scale');
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  const button = card.locator('button.bk-repair-button');
  assert.equal(await button.isVisible(), true, 'the bug is on: the repair can be applied');
  await button.click();
  const after = { visible: await button.isVisible(), text: (await card.locator('.bk-repair').innerText()).replace(/\s+/g, ' ') };
  assert.equal(after.visible, false, `after the repair the button is still shown; the repair box reads "${after.text}"`);
  assert.match(after.text, /Repair applied/, after.text);
  // Focus did not fall to the page: it is back on the card's switch, and the
  // card's one live region says what happened: the status line, then the verdict.
  assert.equal(await page.evaluate(() => document.activeElement?.className), 'bk-switch');
  const region = card.locator('.bk-said[role="status"][aria-atomic="true"]');
  assert.equal(await region.locator('.bk-status').count(), 1, 'the status line is in the card\'s one live region');
  assert.equal(await region.locator('.bk-verdict').count(), 1, 'so is the verdict: they are said together');
  assert.match(await region.textContent(), /repaired/);
  assert.equal(await card.locator('[role="status"], [aria-live]').count(), 1, 'one live region per card: one action, one announcement');
  // Tab goes on down the card, never back up to the card's top.
  const tops = await card.evaluate((node) => node.querySelector('summary').getBoundingClientRect().top);
  await page.keyboard.press('Tab');
  const next = await page.evaluate(() => ({ cls: document.activeElement?.className, top: document.activeElement?.getBoundingClientRect().top }));
  assert.ok(next.top > tops && next.cls !== 'bk-switch', `Tab after the repair went to ${JSON.stringify(next)}`);
  await card.locator('button.bk-switch').click();
  assert.equal(await button.isVisible(), true, 'the bug is on again: the repair is offered again');
  assert.equal(await card.locator('.bk-repaired').isVisible(), false, 'the bug is on again: the "Repair applied" line is hidden');
  assert.deepEqual(problems.pageErrors, []);
  await context.close();
});

test('a screen reader hears "marked by the check" only on the entries the check blames, once', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-rescale');
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  const marked = (table) => card.locator(`[data-table="${table}"] td`).evaluateAll((cells) => cells
    .filter((td) => td.textContent.includes('marked by the check'))
    .map((td) => `row ${Number(td.dataset.row) + 1}, column ${Number(td.dataset.col) + 1}: "${td.textContent}"`));
  // The check blames output row 1, column 4; the weights show that query's row as context, not as blamed entries.
  const reason = await card.locator('[data-check="permutationEquivariance"] .bk-check-reason').textContent();
  assert.match(reason, /output row 1, column 4/, reason);
  assert.deepEqual(await marked('output'), ['row 1, column 4: "◆ 1.000 (marked by the check)"']);
  const weights = await marked('weights0');
  assert.deepEqual(weights, [], `weights cells read out as marked, though the check blames an output entry: ${weights.join('; ')}`);
  // The weights row is still shown, and its header says why.
  const rowCells = card.locator('[data-table="weights0"] td.bk-worst-row');
  assert.equal(await rowCells.count(), 4, `weights cells shown as the blamed output's query row, all 4 keys wanted; shown: ${await cellsAt(rowCells)}`);
  assert.match(await card.locator('[data-table="weights0"] th.bk-mark-row').textContent(), /▶ q1.*output/);
  // A check that blames a whole row of weights says so once, on the row's header, not on each cell.
  const rows = page.locator('#bk-softmax-over-queries');
  if (!(await rows.evaluate((d) => d.open))) await rows.locator('summary').click();
  await rows.locator('button.bk-switch').click();
  const rowMarked = await rows.locator('[data-table="weights0"] td').evaluateAll((cells) => cells
    .filter((td) => td.textContent.includes('marked by the check')).map((td) => `[${td.dataset.row}, ${td.dataset.col}]`));
  assert.deepEqual(rowMarked, [], `softmax-over-queries: weights cells read out as marked, though the row header says it; marked: ${rowMarked.join(' ')}`);
  assert.match(await rows.locator('[data-table="weights0"] th.bk-mark-row').textContent(), /^▶ q\d \(row marked by the check\)$/,
    'softmax-over-queries: the blamed row\'s header');
  assert.deepEqual(problems.pageErrors, []);
  await context.close();
});

test('"Read the C" under the mistake (labelled as PyTorch terms): opened by keyboard, the core\'s C in named boxes', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-mask-after-softmax');
  await card.locator('summary').focus();
  await page.keyboard.press('Enter');
  assert.equal(await card.evaluate((node) => node.open), true, 'the card is open after Enter on its summary');

  // The one-line mistake and repair are PyTorch-style lines, and say so.
  const headings = await card.locator('.bk-body > h4, .bk-repair > h4').allTextContents();
  assert.deepEqual(headings, ['The mistake, in PyTorch terms', 'The repair, in PyTorch terms']);

  // The disclosure follows the mistake; its code is built when it first opens.
  const source = card.locator('.bk-mistake + .bk-c-source');
  assert.equal(await source.count(), 1, 'a "Read the C" disclosure right under the mistake');
  const toggle = source.getByRole('button', { name: 'Read the C: how the core switches this bug on', exact: true });
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
  assert.equal(await source.locator('pre').count(), 0, 'no code box before it is opened');
  await toggle.focus();
  await page.keyboard.press('Enter');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true', 'Enter opens it');
  const body = page.locator(`#${await toggle.getAttribute('aria-controls')}`);
  assert.equal(await body.isVisible(), true, 'aria-controls names the box it opens');
  const parts = BUG_SOURCES['mask-after-softmax'];
  const boxes = body.locator('pre.c-src');
  assert.equal(await boxes.count(), parts.length, `C boxes for mask-after-softmax, one per part of its source: ${parts.map((p) => p.where).join('; ')}`);
  assert.deepEqual(await boxes.allTextContents(), parts.map((p) => p.code), 'the C as extracted from c_src');
  assert.match(await boxes.first().textContent(), /case ATTN_BUG_MASK_AFTER_SOFTMAX:/);
  const keywords = await body.locator('pre.c-src .tok-kw').count();
  assert.ok(keywords > 0, `highlighted as the lesson highlights C: ${keywords} keywords marked .tok-kw`);
  assert.deepEqual(await body.locator('.bk-c-where').allTextContents(), parts.map((p) => `${p.file}, ${p.where}`));

  // Each box is a region with a tab stop: Tab from the button reaches the first.
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => {
    const a = document.activeElement;
    return { tag: a.tagName, role: a.getAttribute('role'), name: a.getAttribute('aria-label') };
  });
  assert.deepEqual(focused, { tag: 'PRE', role: 'region', name: 'C source of bug mask-after-softmax: c_src/attention.c, make_plan, in “Break it”' });
  // Enter again closes it.
  await toggle.focus();
  await page.keyboard.press('Enter');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
  assert.equal(await body.isVisible(), false, 'Enter closed the C: its box is hidden');

  // Space opens another card's, with the multi-head module's C.
  const heads = page.locator('#bk-heads-without-transpose');
  await heads.locator('summary').click();
  await heads.locator('button.bk-c-toggle').focus();
  await page.keyboard.press('Space');
  assert.match((await heads.locator('pre.c-src').allTextContents()).join('\n'),
    /ATTN_BUG_HEADS_WITHOUT_TRANSPOSE[^]*static void reshape_only\(/);

  // With every card's C open, every region on the page has a name of its own.
  await page.evaluate(() => {
    for (const b of document.querySelectorAll('#break-it button.bk-c-toggle[aria-expanded="false"]')) b.click();
  });
  assert.equal(await page.locator('#break-it .bk-c-source pre.c-src').count(), Object.values(BUG_SOURCES).flat().length,
    `C boxes with every card's C open, one per part of BUG_SOURCES (${Object.keys(BUG_SOURCES).length} bugs)`);
  const names = await page.$$eval('[role="region"]', (nodes) => nodes.map((n) => n.getAttribute('aria-label')));
  const unnamed = names.filter((name) => !name).length;
  assert.equal(unnamed, 0, `regions without a name, of ${names.length}: named ${JSON.stringify(names)}`);
  const twice = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
  assert.deepEqual(twice, [], 'region names used more than once');
  await runAxe(page, 'every card\'s C open', { include: '#break-it' });
  assert.deepEqual(problems.pageErrors, []);
  assert.deepEqual(problems.consoleErrors, []);
  await context.close();
});

test('a prompt that wraps sits inside its box: no card\'s border crosses its lines, at 1280 px and 390 px', async () => {
  const VIEWPORTS = [{ width: 1280, height: 900 }, { width: 390, height: 844 }];
  const { page, context } = await open({ viewport: VIEWPORTS[0] });
  for (const viewport of VIEWPORTS) {
    if (viewport !== VIEWPORTS[0]) await resizeTo(page, viewport.width, viewport.height);
    await page.locator('#break-it .bk-card').first().waitFor();
    const crossed = await page.locator('#break-it .bk-predict > legend').evaluateAll((legends) => legends.map((legend) => {
      const box = legend.parentElement;
      const top = box.getBoundingClientRect().top + parseFloat(getComputedStyle(box).borderTopWidth);
      const r = legend.getBoundingClientRect();
      return { card: legend.closest('.bk-card').id, above: r.top - top, lines: Math.round(r.height / parseFloat(getComputedStyle(legend).lineHeight)) };
    }).filter(({ above }) => above < -0.5));
    assert.deepEqual(crossed, [], `${viewport.width} px: prompts whose box's top border runs through or above their text (px above the border's inner edge, lines)`);
  }
  await context.close();
});

test('at 390 px the C scrolls in its box, not the page', async () => {
  const { page, problems, context } = await open({ viewport: { width: 390, height: 844 } });
  const card = page.locator('#bk-no-rescale');
  await card.locator('summary').click();
  await card.locator('button.bk-c-toggle').click();
  const box = card.locator('.bk-c-source pre.c-src').nth(1);
  await box.scrollIntoViewIfNeeded();
  const widths = await box.evaluate((pre) => ({ box: pre.scrollWidth > pre.clientWidth, page: document.documentElement.scrollWidth }));
  assert.deepEqual(widths, { box: true, page: 390 }, 'the long C lines scroll inside their box');
  await runAxe(page, '390 px, the C open', { include: '#bk-no-rescale' });
  assert.deepEqual(problems.pageErrors, []);
  await context.close();
});

test('at 390 px a marked entry reads as one line, "◆ −0.381", and its check\'s reason writes the number the same way', async () => {
  const { page, problems, context } = await open({ viewport: { width: 390, height: 844 } });
  const card = page.locator('#bk-heads-without-transpose');
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  await card.locator('[data-check="matchesReference"] button.bk-show').click();
  const marked = card.locator('[data-table="output"] td.bk-worst');
  assert.equal(await marked.count(), 1, `output cells marked for matchesReference, one wanted; marked: ${await cellsAt(marked)}`);
  await marked.scrollIntoViewIfNeeded();
  // The marked cell's row is no taller than the table's other rows: its ◆ sits beside its number.
  const heights = await marked.evaluate((td) => ({
    marked: td.parentElement.getBoundingClientRect().height,
    others: [...td.closest('tbody').rows].filter((tr) => tr !== td.parentElement).map((tr) => tr.getBoundingClientRect().height),
    diamondTop: td.querySelector('.bk-diamond').getBoundingClientRect().top,
    numberTop: (() => { const r = document.createRange(); r.selectNodeContents(td); return [...r.getClientRects()].at(-1).top; })(),
  }));
  assert.ok(heights.others.every((hgt) => Math.abs(hgt - heights.marked) < 1), `the marked cell's row is ${heights.marked} px high, the other rows ${heights.others.join(', ')} px`);
  assert.ok(Math.abs(heights.diamondTop - heights.numberTop) < 2, `the ◆ starts at ${heights.diamondTop} px, its number's line at ${heights.numberTop} px: they are on two lines`);
  // The reason names the entry with the number the table shows, sign and all.
  const number = (await marked.evaluate((td) => td.bkNumber.data));
  const reason = await card.locator('[data-check="matchesReference"] .bk-check-reason').textContent();
  assert.match(number, /^−\d/, `the marked entry is a negative number: "${number}"`);
  assert.ok(reason.includes(`is ${number};`), `the reason names the marked entry as the table shows it, "${number}": "${reason}"`);
  assert.doesNotMatch(reason, /-\d/, `the reason writes a negative with a hyphen: "${reason}"`);
  assertClean(problems, '390 px marked cell');
  await context.close();
});

test('a card writes d_k with a subscript where it is drawn, and d_k in plain text where it is a label', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-scale');
  await card.locator('summary').click();
  await card.locator('input[value="scoresScaled"]').check();
  await card.locator('button.bk-switch').click();
  const drawn = await card.evaluate((node) => {
    const html = (sel) => [...node.querySelectorAll(sel)].map((n) => n.innerHTML.replace(/<input[^>]*>/, '').trim());
    return {
      title: html('.bk-title'), setting: html('.bk-setting'), option: html('.bk-option:has(input[value="scoresScaled"]) .bk-option-text'),
      check: html('[data-check="scoresScaled"] .bk-check-title'), reason: html('[data-check="scoresScaled"] .bk-check-reason'),
      verdict: html('.bk-verdict'),
    };
  });
  assert.deepEqual(drawn, {
    title: ['No 1/√d<sub>k</sub>'],
    setting: ['Input: 4 tokens, no mask, d<sub>k</sub> = 4.'],
    option: ['Scores scaled by 1/√d<sub>k</sub>'],
    check: ['Scores scaled by 1/√d<sub>k</sub>'],
    reason: ['The score of query 1 on key 4 is 3.000; q·k/√d<sub>k</sub> is 1.500: √d<sub>k</sub> = 2.000 times too large, so the 1/√d<sub>k</sub> is missing.'],
    verdict: ['Your prediction was right: “Scores scaled by 1/√d<sub>k</sub>” fails. Your prediction is locked: it was made before the checks were seen, so this card scores 1 point. The card is not finished yet: read the repair below and press “Apply the repair” to finish it.'],
  });
  assert.equal(await card.locator('[data-check="scoresScaled"] button.bk-show').getAttribute('aria-label'), 'Mark it below: Scores scaled by 1/√d_k');
  assertClean(problems, 'subscripts');
  await context.close();
});

/** Where the marked cells (◆) of a card lie against their scroll boxes' visible parts and the viewport, in px. */
const markedPlaces = (card) => card.evaluate((node) => [...node.querySelectorAll('td.bk-worst')].map((td) => {
  const box = td.closest('.bk-table-wrap');
  const b = box.getBoundingClientRect();
  const r = td.getBoundingClientRect();
  const left = b.left + box.clientLeft;
  return {
    table: td.closest('table').dataset.table, row: Number(td.dataset.row), col: Number(td.dataset.col),
    cutLeft: Math.max(0, left - r.left), cutRight: Math.max(0, r.right - (left + box.clientWidth)),
    above: Math.max(0, -r.top), below: Math.max(0, r.bottom - innerHeight),
  };
}));

test('at 360 px card 11\'s marked cell is scrolled into its table\'s box: when the bug is turned on, and by "Mark it below", which also brings it into view', async () => {
  const { page, problems, context } = await open({ viewport: { width: 360, height: 800 } });
  const card = page.locator('#bk-merge-without-transpose');
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  const inBox = (places) => places.length > 0 && places.every((p) => p.cutLeft < 0.5 && p.cutRight < 0.5);
  const inView = (places) => inBox(places) && places.every((p) => p.above < 0.5 && p.below < 0.5);
  await waitForState(page, (node) => [...node.querySelectorAll('td.bk-worst')].some((td) => {
    const box = td.closest('.bk-table-wrap');
    const b = box.getBoundingClientRect();
    const r = td.getBoundingClientRect();
    return r.left >= b.left + box.clientLeft - 0.5 && r.right <= b.left + box.clientLeft + box.clientWidth + 0.5;
  }), await card.elementHandle(), async () => `bug on: the marked cells, px cut off by their box: ${JSON.stringify(await markedPlaces(card))}`, { timeout: 30000 });
  let places = await markedPlaces(card);
  assert.ok(inBox(places), `bug on: the marked cells, px cut off by their box: ${JSON.stringify(places)}`);

  // "Mark it below" on "Matches the reference": output row 2, column 4 (the cell card 11's first check marks too), brought into the box and the viewport.
  // The table is scrolled back to its start and the page to its top first, so that the button has both to do.
  await card.locator('[data-table="output"]').evaluate((table) => { table.closest('.bk-table-wrap').scrollLeft = 0; window.scrollTo(0, 0); });
  await card.locator('[data-check="matchesReference"] button.bk-show').click();
  await waitForState(page, (node) => {
    const td = node.querySelector('td.bk-worst');
    const box = td.closest('.bk-table-wrap');
    const b = box.getBoundingClientRect();
    const r = td.getBoundingClientRect();
    return td.dataset.row === '1' && r.left >= b.left + box.clientLeft - 0.5 && r.right <= b.left + box.clientLeft + box.clientWidth + 0.5
      && r.top >= -0.5 && r.bottom <= innerHeight + 0.5;
  }, await card.elementHandle(), async () => `after "Mark it below": the marked cells, px cut off by their box and the viewport: ${JSON.stringify(await markedPlaces(card))}`, { timeout: 30000 });
  places = await markedPlaces(card);
  assert.deepEqual(places.map(({ table, row, col }) => [table, row, col]), [['output', 1, 3]], 'the marked cell is output row 2, column 4');
  assert.ok(inView(places), `after "Mark it below": px cut off by the box and the viewport: ${JSON.stringify(places)}`);
  // Near the middle of the screen, with the rows around it, not flush with an edge.
  const middle = await card.locator('td.bk-worst').evaluate((td) => { const r = td.getBoundingClientRect(); return (r.top + r.bottom) / 2 / innerHeight; });
  assert.ok(middle > 0.25 && middle < 0.75, `after "Mark it below" the marked cell's middle is at ${(100 * middle).toFixed(0)} % of the viewport's height`);
  assertClean(problems, '360 px marked cell in view');
  await context.close();
});

/** A state with every card broken and its bug off, so that every repair shows. */
const allBroken = '-2'.repeat(EXERCISES.length);

test('code boxes keep each line of code on one line and scroll sideways in their box, while a comment wraps in view; the page never widens, at 320, 360 and 390 px', async () => {
  const WIDTHS = [320, 360, 390];
  const { page, problems, context } = await open({ viewport: { width: WIDTHS[0], height: 800 } });
  // Every card broken, once: the state stays while the window changes size.
  await page.evaluate((s) => { location.hash = `view=break-it&brk.s=${s}`; }, allBroken);
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, 800);
    await waitForState(page, (n) => document.querySelectorAll('#break-it .bk-repair:not([hidden])').length === n, EXERCISES.length,
      `${width} px: every card's repair shows`);
    await page.locator('#break-it .bk-card').evaluateAll((cards) => { for (const c of cards) c.open = true; });
    const boxes = await page.locator('#break-it pre.bk-code').evaluateAll((pres) => pres.map((pre) => {
      const code = pre.querySelector('code');
      const notes = [...code.querySelectorAll('.bk-code-note')];
      const lines = code.textContent.split('\n').filter((line) => !line.startsWith('#')).length;
      const noteHeight = notes.reduce((sum, n) => sum + n.getBoundingClientRect().height, 0);
      const drawn = Math.round((code.getBoundingClientRect().height - noteHeight) / parseFloat(getComputedStyle(pre).lineHeight));
      // A comment is read without scrolling: it ends inside the box's visible width.
      const box = pre.getBoundingClientRect();
      const hidden = notes.filter((n) => [...n.getClientRects()].some((r) => r.right > box.left + pre.clientLeft + pre.clientWidth + 0.5)).map((n) => n.textContent);
      // A comment has a line of its own (a comment after code would scroll away with it).
      const trailing = code.textContent.split('\n').filter((line) => !line.startsWith('#') && line.includes('#'));
      return { card: pre.closest('.bk-card').id, lines, drawn, hidden, trailing, wider: box.right > document.documentElement.clientWidth + 0.5 };
    }));
    const broken = boxes.filter((b) => b.drawn !== b.lines || b.wider || b.hidden.length || b.trailing.length);
    assert.deepEqual(broken, [], `${width} px: code boxes whose code lines wrap (drawn lines vs lines of code), whose comments run out of view, or that stick out of the page`);
    const page1 = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.equal(page1, width, `${width} px: the page is ${page1} px wide`);
    const repair = page.locator('#bk-merge-without-transpose pre.bk-fix');
    assert.equal(await repair.evaluate((pre) => pre.scrollWidth > pre.clientWidth), true, `${width} px: card 11's repair scrolls in its box`);
    assertClean(problems, `${width} px code boxes`);
  }
  await context.close();
});

test('at 360 and 390 px a card\'s title starts on its number\'s line, and a wrapped prediction\'s lines start under its text, not under its radio', async () => {
  const WIDTHS = [360, 390];
  const { page, problems, context } = await open({ viewport: { width: WIDTHS[0], height: 800 } });
  await page.locator('#break-it .bk-card').evaluateAll((cards) => { for (const c of cards) c.open = true; });
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, 800);
    const titles = await page.locator('#break-it .bk-card > summary').evaluateAll((summaries) => summaries.map((s) => {
      const num = s.querySelector('.bk-num').getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(s.querySelector('.bk-title'));
      const first = range.getClientRects()[0];
      return { card: s.querySelector('.bk-num').textContent, below: Math.round(first.top - num.bottom), left: Math.round(first.left - num.right) };
    }).filter(({ below, left }) => below >= 0 || left < 0));
    assert.deepEqual(titles, [], `${width} px: titles whose first line is not beside their number (px below the number's bottom, px right of it)`);
    const options = await page.locator('#break-it .bk-option').evaluateAll((labels) => labels.map((label) => {
      const radio = label.querySelector('input').getBoundingClientRect();
      const range = document.createRange();
      range.setStartAfter(label.querySelector('input'));
      range.setEndAfter(label.lastChild);
      const lefts = [...range.getClientRects()].filter((r) => r.width > 0).map((r) => r.left);
      return { option: label.textContent.trim(), under: Math.round(radio.right - Math.min(...lefts)) };
    }).filter(({ under }) => under > 0));
    assert.deepEqual(options, [], `${width} px: prediction options with text under the radio (px left of the radio's right edge)`);
    assertClean(problems, `${width} px titles and options`);
  }
  await context.close();
});

test('once the bug is on, the chosen prediction stands out among the locked ones', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-causal-mask');
  await card.locator('summary').click();
  await card.getByLabel('No future leak').check();
  await card.locator('button.bk-switch').click();
  const looks = await card.locator('.bk-option').evaluateAll((labels) => labels.map((label) => {
    const style = getComputedStyle(label);
    return { chosen: label.querySelector('input').checked, disabled: label.querySelector('input').disabled, color: style.color, weight: Number(style.fontWeight) };
  }));
  assert.ok(looks.every((l) => l.disabled), 'every choice is locked');
  const chosen = looks.filter((l) => l.chosen);
  const others = looks.filter((l) => !l.chosen);
  assert.equal(chosen.length, 1, 'one choice is checked');
  assert.ok(others.every((o) => o.color !== chosen[0].color && o.weight < chosen[0].weight),
    `the chosen choice (${chosen[0].color}, weight ${chosen[0].weight}) is drawn like the others: ${JSON.stringify(others.slice(0, 2))}`);
  assertClean(problems, 'locked prediction');
  await context.close();
});

test('a reset, elsewhere or the section\'s own, rewrites the cards\' status quietly (the section\'s own says once what it did); the learner\'s next action on a card is announced again', async () => {
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-causal-mask');
  const region = card.locator('.bk-said[role="status"]');
  await card.locator('summary').click();
  await card.getByLabel('No future leak').check();
  await card.locator('button.bk-switch').click();
  assert.equal(await region.getAttribute('aria-live'), null, 'the card\'s status is live while the learner works the card');
  // Record the region's live setting at the moment its text changes.
  await region.evaluate((node) => {
    window.bkLiveAtWrite = [];
    new MutationObserver(() => window.bkLiveAtWrite.push(node.getAttribute('aria-live'))).observe(node, { childList: true, subtree: true, characterData: true });
  });
  await page.locator('button.pg-reset').click();
  await page.locator('button.pg-erase').click();
  await waitForState(page, () => document.querySelector('#bk-no-causal-mask .bk-status').textContent.startsWith('Bug off'), null,
    'after "Reset all progress" the card\'s status says the bug is off');
  const seen = await page.evaluate(() => window.bkLiveAtWrite);
  assert.ok(seen.length > 0 && seen.every((live) => live === 'off'), `the region's aria-live when its text changed after the reset: ${JSON.stringify(seen)}`);
  await page.evaluate(() => { window.bkLiveAtWrite = []; });
  await card.getByLabel('No future leak').check();
  const after = await page.evaluate(() => window.bkLiveAtWrite);
  assert.ok(after.length > 0 && after.every((live) => live === null), `the region's aria-live when the learner's own choice changed its text: ${JSON.stringify(after)}`);
  // Quietened again by a reset elsewhere, the cards speak again once the learner resets them here.
  await page.locator('button.pg-reset').click();
  await page.locator('button.pg-erase').click();
  await waitForState(page, () => document.querySelector('#bk-no-causal-mask .bk-said').getAttribute('aria-live') === 'off', null, 'a reset elsewhere quietens the cards');
  await card.getByLabel('No future leak').check();
  await card.locator('button.bk-switch').click();
  await waitForState(page, () => document.querySelector('#bk-no-causal-mask .bk-status').textContent.includes('is on'), null, 'the bug is on again');
  // The reset is brought into view first and pressed once the page is idle:
  // the section above it (the quiz), drawn as it comes into view, may have
  // grown while it was off screen and push the button down.
  const resetButton = page.locator('#break-it button.bk-reset');
  await resetButton.scrollIntoViewIfNeeded();
  await settled(page);
  // The section's own reset says once what it did; the cards it rewrites stay quiet.
  await page.evaluate(() => { window.bkLiveAtWrite = []; });
  await resetButton.click();
  const said = page.locator('#break-it [data-out="bk-reset-said"][role="status"]');
  await waitForState(page, () => document.querySelector('#break-it [data-out="bk-reset-said"]').textContent !== '', null, 'the reset is said');
  assert.equal(await said.textContent(), 'One card reset: bug off, prediction open again. Scores stay.', 'what the section\'s own reset says');
  const rewritten = await page.evaluate(() => window.bkLiveAtWrite);
  assert.ok(rewritten.length > 0 && rewritten.every((live) => live === 'off'), `the card's region when the section's reset rewrote it: ${JSON.stringify(rewritten)}`);
  await page.locator('#break-it button.bk-reset').click();
  await waitForState(page, () => document.querySelector('#break-it [data-out="bk-reset-said"]').textContent.startsWith('Nothing'), null, 'a second reset is said too');
  await card.getByLabel('No future leak').check();
  assert.equal(await region.getAttribute('aria-live'), null, 'after the reset, the learner\'s next action on the card is said');
  assertClean(problems, 'quiet reset');
  await context.close();
});

test('in a high-contrast theme only a failed check carries the bar at its left; a passing one has none', async () => {
  // One page, its card opened and its bug switched on once (both toggle),
  // seen in the light theme and then the dark one.
  const { page, problems, context } = await open();
  const card = page.locator('#bk-no-causal-mask');
  await page.emulateMedia({ forcedColors: 'active', colorScheme: 'light' });
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  for (const colorScheme of ['light', 'dark']) {
    await page.emulateMedia({ forcedColors: 'active', colorScheme });
    await card.locator('.bk-check.is-fail').first().waitFor();
    const bars = await card.locator('.bk-check').evaluateAll((rows) => rows.map((row) => {
      const s = getComputedStyle(row);
      // The colour the bar is drawn on: the row's own, or the nearest one behind it.
      // (A high-contrast theme keeps a transparent background's alpha of 0.)
      const rgba = (n) => getComputedStyle(n).backgroundColor.match(/[\d.]+/g).map(Number);
      let behind = row;
      while (behind.parentElement && rgba(behind)[3] === 0) behind = behind.parentElement;
      const drawn = s.borderLeftStyle !== 'none' && parseFloat(s.borderLeftWidth) > 0 && s.borderLeftColor !== getComputedStyle(behind).backgroundColor;
      return { check: row.dataset.check, state: row.dataset.state, drawn, bar: `${s.borderLeftWidth} ${s.borderLeftStyle} ${s.borderLeftColor} on ${getComputedStyle(behind).backgroundColor}` };
    }));
    assert.ok(bars.some((b) => b.state === 'fail'), `${colorScheme}: a check fails with the bug on`);
    for (const b of bars) {
      assert.equal(b.drawn, b.state === 'fail', `${colorScheme}: the ${b.state} check "${b.check}" has the left bar ${b.bar}`);
    }
    assertClean(problems, `check bars in a ${colorScheme} high-contrast theme`);
  }
  await context.close();
});
