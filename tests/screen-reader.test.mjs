// What a screen reader hears on the lesson page: names and descriptions as
// Chromium exposes them (its accessibility tree), and what a live region
// announces after an edit. Each test names the section and the node it reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, typeInto, runAxe, assertClean } from './helpers/browser.mjs';

const suite = browserSuite();

/**
 * The node at `selector` as Chromium's accessibility tree has it: role, name,
 * description and live politeness ('' when none).
 */
async function axNode(page, selector) {
  await page.locator(selector).first().scrollIntoViewIfNeeded();
  const cdp = await page.context().newCDPSession(page);
  try {
    const { root } = await cdp.send('DOM.getDocument', { depth: 0 });
    const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector });
    assert.ok(nodeId, `no node matches ${selector}`);
    const { nodes } = await cdp.send('Accessibility.getPartialAXTree', { nodeId, fetchRelatives: false });
    const node = nodes[0];
    const prop = (name) => node.properties?.find((p) => p.name === name)?.value.value ?? '';
    return { role: node.role?.value ?? '', name: node.name?.value ?? '', description: node.description?.value ?? '', live: prop('live') };
  } finally {
    // The renderer's accessibility tree is turned off again, so that a
    // runAxe after this (which renders the whole page, then hides it again)
    // does not rebuild a live tree for all of it: the Chromium renderer
    // crashes seen in this file came in such a runAxe, after axNode.
    await cdp.send('Accessibility.disable').catch(() => {});
    await cdp.detach();
  }
}

test('observability: each number an edit changes is said with its term', async () => {
  const { page, problems, context } = await suite.open('#view=observability');
  const section = page.locator('#observability');
  const terms = await section.locator('dl.stats dt').allTextContents();
  assert.equal(terms.length, 4, `#observability dl.stats: four terms wanted, seen ${JSON.stringify(terms)}`);
  // The numbers themselves are not a live region (a typed multiplier changes
  // them at every keystroke); the section's sentence says them once the edits pause.
  assert.equal(await section.locator('dl.stats').evaluate((n) => n.closest('[aria-live]:not([aria-live="off"])')), null, 'dl.stats sits in a live region');
  await typeInto(page, section.getByLabel('Multiply Q by'), '20');
  const said = section.locator('[data-said="observability"]');
  await page.waitForFunction(() => document.querySelector('#observability [data-said="observability"]').textContent !== '');
  const sentence = (await said.textContent()).toLowerCase();
  const values = await section.locator('dl.stats dd strong').allTextContents();
  const bare = terms.filter((term, k) => !sentence.includes(`${term.toLowerCase()}${k === 0 ? ' ' : ': '}${values[k].toLowerCase()}`));
  assert.deepEqual(bare, [], `#observability: said without their numbers, after typing "20" into "Multiply Q by": "${sentence}"`);
  assertClean(problems, 'observability');
  await context.close();
});

test('head maps are named by their caption without the swatch\'s digit (multi-head, self-cross, watch-learn)', async () => {
  const { page, problems, context } = await suite.open('#view=multi-head');
  for (const [id, want] of [['multi-head', 'Head 1'], ['self-cross', 'Head 1'], ['watch-learn', 'Layer 1, head 1']]) {
    const where = `#${id} figure.head-map`;
    await page.locator(where).first().waitFor();
    // Playwright's snapshot: the figure's name from its caption, and the caption's text as read.
    const snap = (await page.locator(where).first().ariaSnapshot()).split('\n');
    assert.equal(snap[0], `- figure "${want}":`, `${where}: the first figure's name`);
    assert.equal(snap[1], `  - text: ${want}`, `${where} figcaption: its text as read`);
  }
  assertClean(problems, 'head maps');
  await context.close();
});

test('why-scale: the slider says its value; the output beside it is not announced again', async () => {
  const { page, problems, context } = await suite.open('#view=why-scale');
  const slider = page.locator('#scale-dk');
  await slider.focus();
  await page.keyboard.press('ArrowRight');
  const output = await axNode(page, '#why-scale output[for="scale-dk"]');
  assert.equal(output.live, '', `#why-scale output[for="scale-dk"]: a live region (live "${output.live}"), so each step is read twice`);
  assert.equal(await page.locator('#why-scale output[for="scale-dk"]').textContent(), '65', 'the output shows the new value');
  const range = await axNode(page, '#scale-dk');
  assert.equal(range.role, 'slider');
  assert.equal(range.name, 'd_k, the width of each query and key', '#scale-dk: the slider\'s name');
  assert.equal(await slider.inputValue(), '65');
  assertClean(problems, 'why-scale');
  await context.close();
});

test('watch-learn: a map has a short name and is described once, by the note under it', async () => {
  const { page, problems, context } = await suite.open('#view=watch-learn');
  const where = '#watch-learn canvas[data-canvas="learn-map-1-1"]';
  await page.locator(where).waitFor();
  const map = await axNode(page, where);
  const note = (await page.locator(where).locator('xpath=following-sibling::p[1]').textContent()).trim();
  assert.ok(note.length > 20, `${where}: the note under the map is empty`);
  assert.match(map.name, /^Layer 1, head 1 on the sequence [A-Z]+$/, `${where}: the canvas's name`);
  assert.equal(map.description, note, `${where}: the canvas is described by the note under it`);
  assertClean(problems, 'watch-learn');
  await context.close();
});

test('break it: glyphs are not read; the mark is said once, on the cell or on the row header', async () => {
  const { page, problems, context } = await suite.open('#view=break-it');
  // A blamed output entry, row 1, column 4; its query's row in the weights as context.
  const card = page.locator('#bk-no-rescale');
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  const out = '#bk-no-rescale [data-table="output"]';
  assert.match((await axNode(page, `${out} td.bk-worst`)).name, /^\d\.\d{3} \(marked by the check\)$/, `${out} td.bk-worst: the blamed cell's name`);
  assert.equal((await axNode(page, `${out} th.bk-mark-row`)).name, 'token 1', `${out} th.bk-mark-row: the row header of a marked cell`);
  assert.equal((await axNode(page, `${out} th.bk-mark-col`)).name, 'f4', `${out} th.bk-mark-col: the column header of a marked cell`);
  const weights = '#bk-no-rescale [data-table="weights0"]';
  assert.equal((await axNode(page, `${weights} th.bk-mark-row`)).name, 'q1 (its output entry is marked by the check)', `${weights} th.bk-mark-row: the context row's header`);
  // A blamed row of weights: its header says so, once.
  const rows = page.locator('#bk-softmax-over-queries');
  if (!(await rows.evaluate((d) => d.open))) await rows.locator('summary').click();
  await rows.locator('button.bk-switch').click();
  const rowTable = '#bk-softmax-over-queries [data-table="weights0"]';
  assert.match((await axNode(page, `${rowTable} th.bk-mark-row`)).name, /^q\d \(row marked by the check\)$/, `${rowTable} th.bk-mark-row: the blamed row's header`);
  const row = await page.locator(`${rowTable} th.bk-mark-row`).evaluate((th) => th.closest('tr').querySelector('td').dataset.row);
  const cellNames = [];
  for (let j = 0; j < 4; j++) cellNames.push((await axNode(page, `${rowTable} td[data-row="${row}"][data-col="${j}"]`)).name);
  assert.equal(cellNames.length, 4, `${rowTable}: 4 cells of the blamed row`);
  assert.ok(cellNames.every((name) => /^\d\.\d{3}$/.test(name)), `${rowTable} td.bk-worst-row: each cell says its number only, seen ${JSON.stringify(cellNames)}`);
  assertClean(problems, 'break it');
  await context.close();
});

test('what T² costs: the heading and its table-of-contents link read "T²", not "T2"', async () => {
  const { page, problems, context } = await suite.open('#view=t-squared');
  const heading = await axNode(page, '#t-squared h2');
  assert.match(heading.name, /What T² costs$/, '#t-squared h2: the heading\'s name');
  const link = await axNode(page, 'nav.toc a[href="#t-squared"]');
  assert.match(link.name, /What T² costs$/, 'nav.toc a[href="#t-squared"]: the link\'s name');
  assertClean(problems, 't-squared');
  await context.close();
});

test('quiz: each question\'s controls are described by the question; an empty answer by the feedback too', async () => {
  const { page, problems, context } = await suite.open('#view=quiz');
  const question = (id) => page.locator(`li[data-question="${id}"] > p`).first().textContent().then((t) => t.replace(/\s+/g, ' ').trim());
  const cases = [
    ['softmax-axis', 'fieldset', 'Choose one answer to question 2'],
    ['causal', '[role="group"]', 'Your causal mask, 5 positions (pressed = blocked)'],
    ['head-width', 'input.qz-number', 'dhead ='],
  ];
  for (const [id, control, name] of cases) {
    const where = `form[data-quiz="${id}"] ${control}`;
    const node = await axNode(page, where);
    assert.equal(node.name, name, `${where}: its name`);
    assert.equal(node.description, await question(id), `${where}: described by the question's text`);
  }
  // Check with no choice: the fieldset is described by the feedback too.
  await page.locator('form[data-quiz="softmax-axis"] button[type="submit"]').click();
  const where = 'form[data-quiz="softmax-axis"] fieldset';
  assert.equal((await axNode(page, where)).description, `${await question('softmax-axis')} Choose one of the answers first.`, `${where}: after Check with no choice`);
  // Answered: the feedback no longer describes it.
  await page.locator('form[data-quiz="softmax-axis"] input[type="radio"]').first().check();
  await page.locator('form[data-quiz="softmax-axis"] button[type="submit"]').click();
  assert.equal((await axNode(page, where)).description, await question('softmax-axis'), `${where}: after an answer is checked`);
  await runAxe(page, 'quiz', { include: '#quiz' });
  assertClean(problems, 'quiz');
  await context.close();
});

// The sections at their defaults are checked by axe in tests/page.test.mjs;
// a card with its bug on (the marks on a blamed row) is checked here.
test('a break-it card with its bug on stays axe-clean', async () => {
  const { page, problems, context } = await suite.open('#view=break-it');
  const card = page.locator('#bk-no-rescale');
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  await runAxe(page, '#bk-no-rescale with the bug on', { include: '#bk-no-rescale' });
  assertClean(problems, 'axe');
  await context.close();
});

test('the whole page, as a learner first opens it, is axe-clean (sections far from the viewport included)', async () => {
  // Nothing is rendered by hand first: runAxe renders the far sections itself.
  const { page, problems, context } = await suite.open('');
  await runAxe(page, 'the whole page at load');
  assertClean(problems, 'axe');
  await context.close();
});

// Linked highlighting in words: a focused weight (or mask switch) is
// described by what it is linked to, with the numbers as the page shows them.

/** The texts of the cells `selector` matches in the page, in order (an input's value). */
function shownTexts(page, selector) {
  return page.$$eval(selector, (ns) => ns.map((n) => (n.localName === 'input' ? n.value : n.textContent.trim())));
}

test('3×3 example: a weight focused by keyboard is described by its query, key, value, score and output, as shown', async () => {
  const { page, problems, context } = await suite.open('#view=three-by-three');
  const map = '[data-heatmap="ex-weights"]';
  const cell = `${map} .hm-cell[data-row="1"][data-col="2"]`;
  // What the learner sees linked to weight (query 2, key 3), read from the page.
  const expected = async () => {
    const row = async (grid, i) => `[${(await shownTexts(page, `[data-grid="${grid}"] input[data-row="${i}"]`)).join(', ')}]`;
    const [score] = await shownTexts(page, '[data-values="ex-scores"] td[data-row="1"][data-col="2"]');
    const output = await shownTexts(page, '[data-values="ex-output"] td[data-row="1"]');
    const [sum] = await shownTexts(page, `${map} .hm-extra[data-row="1"]`);
    return `query 2, key 3; from query 2: ${await row('ex-q', 1)}, key 3: ${await row('ex-k', 2)}, value 3: ${await row('ex-v', 2)}, `
      + `score: ${score}; feeds output 2: [${output.join(', ')}], row sum: ${sum}`;
  };
  // Keyboard: the map's tab stop, then the arrows to query 2, key 3.
  await page.locator(`${map} .hm-cell[tabindex="0"]`).focus();
  for (const key of ['ArrowDown', 'ArrowRight', 'ArrowRight']) await page.keyboard.press(key);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.linkQ + document.activeElement.dataset.linkK), '12', 'the arrows reached query 2, key 3');
  const before = await expected();
  const heard = await axNode(page, cell);
  assert.equal(heard.name, await page.locator(cell).textContent(), `${cell}: named by its own number`);
  assert.equal(heard.description, before, `${cell}: described by its links`);
  await runAxe(page, '3×3 with a described weight', { include: '#three-by-three' });
  // An edit of query 2 changes its score and output; the weight focused again says the new numbers.
  const [oldScore] = await shownTexts(page, '[data-values="ex-scores"] td[data-row="1"][data-col="2"]');
  await typeInto(page, page.locator('[data-grid="ex-q"] input[data-row="1"][data-col="0"]'), '3');
  await page.waitForFunction((old) => document.querySelector('[data-values="ex-scores"] td[data-row="1"][data-col="2"]').textContent !== old, oldScore);
  await page.locator(cell).focus();
  const after = await expected();
  assert.notEqual(after, before, 'the edit changed what the weight is linked to');
  assert.equal((await axNode(page, cell)).description, after, `${cell}: described by its links after typing 3 into query 2, d1`);
  assertClean(problems, '3×3 described weight');
  await context.close();
});

test('masks: a focused switch of the custom mask is described by its weight, and by the new weight once pressed', async () => {
  const { page, problems, context } = await suite.open('#view=masks');
  const button = '[data-mask="mask-custom"] button[data-row="1"][data-col="2"]';
  const weight = '[data-heatmap="mask-custom-weights"] .hm-cell[data-row="1"][data-col="2"]';
  await page.locator(button).focus();
  const shown = await page.locator(weight).textContent();
  const heard = await axNode(page, button);
  assert.equal(heard.name, 'query 2, key 3: allowed', `${button}: its name`);
  assert.equal(heard.description, `feeds weight: ${shown}`, `${button}: described by its weight`);
  // Space blocks the pair with the focus kept on the switch: the weight is
  // drawn again (0), and the words follow once the frame is painted.
  await page.keyboard.press('Space');
  assert.equal(await page.locator(weight).textContent(), '0', 'the blocked pair\'s weight');
  // Waited for up to 30 s; if the words never follow, the assertion below says what is heard.
  await page.waitForFunction((sel) => document.getElementById(document.querySelector(sel).getAttribute('aria-describedby') ?? '')?.textContent === 'feeds weight: 0', button, { timeout: 30000 })
    .catch(() => {});
  const pressed = await axNode(page, button);
  assert.equal(pressed.name, 'query 2, key 3: blocked', `${button}: its name once pressed`);
  assert.equal(pressed.description, 'feeds weight: 0', `${button}: described by its new weight once pressed`);
  // A weight of the causal example is described by its mask cell.
  await page.locator('[data-heatmap="mask-causal-weights"] .hm-cell[tabindex="0"]').focus();
  await page.keyboard.press('ArrowDown');
  const causal = '[data-heatmap="mask-causal-weights"] .hm-cell[data-row="1"][data-col="0"]';
  assert.equal((await axNode(page, causal)).description, 'query 2, key 1; from mask: 1, allowed', `${causal}: described by its mask cell`);
  await runAxe(page, 'masks with a described weight', { include: '#masks' });
  assertClean(problems, 'masks described switch');
  await context.close();
});

test('self-cross: a focused weight is described by its target and source rows, its output row and the same pair in the other head', async () => {
  const { page, problems, context } = await suite.open('#view=self-cross');
  const cell = '[data-heatmap="cross-weights-h0"] .hm-cell[data-row="1"][data-col="2"]';
  await page.locator('[data-heatmap="cross-weights-h0"] .hm-cell[tabindex="0"]').focus();
  for (const key of ['ArrowDown', 'ArrowRight', 'ArrowRight']) await page.keyboard.press(key);
  const row = async (selector) => `[${(await shownTexts(page, selector)).join(', ')}]`;
  const heads = await page.locator('#self-cross [data-heatmap^="cross-weights-h"]').count();
  const others = [];
  for (let k = 1; k < heads; k++) others.push(`head ${k + 1}: ${await page.locator(`[data-heatmap="cross-weights-h${k}"] .hm-cell[data-row="1"][data-col="2"]`).textContent()}`);
  const rowName = (await page.locator('[data-heatmap="cross-weights-h0"] .hm-rowhead').nth(1).textContent());
  const colName = (await page.locator('[data-heatmap="cross-weights-h0"] .hm-head:not(.hm-rowhead)').nth(2).textContent());
  const want = `${rowName}, ${colName}; from target t2: ${await row('[data-grid="cross-tgt"] input[data-row="1"]')}, source s3: ${await row('[data-grid="cross-src"] input[data-row="2"]')}; `
    + `feeds output t2: ${await row('[data-values="cross-output"] td[data-row="1"]')}; same pair in ${others.join(', ')}`;
  assert.equal((await axNode(page, cell)).description, want, `${cell}: described by its links`);
  await runAxe(page, 'self-cross with a described weight', { include: '#self-cross' });
  assertClean(problems, 'self-cross described weight');
  await context.close();
});
