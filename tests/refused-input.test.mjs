// What a screen reader meets when the core refuses an input, in Chromium:
// the status line says the refusal in words first and its code after; the
// last valid result is labelled in text a screen reader reads (its host is a
// group named "Last valid result"), and the label goes once an input is valid
// again; the field whose edit was refused is marked invalid and described by
// the status line; and the gradients section's "Take one step" says its
// result once, as the step line shows it. Axe clean throughout.
// Run: node --test tests/refused-input.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, runAxe, typeInto } from './helpers/browser.mjs';
import { refusalText } from '../web/lesson-ui.js';

const suite = browserSuite();
const open = (hash) => suite.open(hash, { viewport: { width: 1280, height: 900 } });

const CUSTOM_HOST = '#masks [data-slot="custom-weights"]';
const MHA_HOST = '#multi-head [data-slot="weights"]';

/** The accessible name and description Chromium gives the element at `selector`. */
async function accessible(page, selector) {
  const cdp = await page.context().newCDPSession(page);
  const { root } = await cdp.send('DOM.getDocument', { depth: 0 });
  const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector });
  assert.ok(nodeId, `no element matches ${selector}`);
  const { nodes } = await cdp.send('Accessibility.getPartialAXTree', { nodeId, fetchRelatives: false });
  await cdp.detach();
  const node = nodes[0];
  return { role: node.role?.value ?? '', name: node.name?.value ?? '', description: node.description?.value ?? '' };
}

/** Block (or allow again) every key of query `row` in "Your own mask". */
async function toggleRow(page, row) {
  for (const j of [0, 1, 2]) await page.locator(`[data-mask="mask-custom"] button[data-row="${row}"][data-col="${j}"]`).click();
}

test('a refusal reads in words first, with the core\'s code after it', async () => {
  assert.equal(refusalText('ALL_MASKED_ROW', 'query row has no allowed key (query 2): every query needs at least one key it may attend to'),
    'Query row has no allowed key (query 2): every query needs at least one key it may attend to (ALL_MASKED_ROW)');
  // A name stays as the API spells it; a message ending in parentheses takes the code after a dash.
  assert.equal(refusalText('BAD_ARGUMENT', 'eps must be a positive number (got 0)'), 'Eps must be a positive number (got 0) — BAD_ARGUMENT');
  assert.equal(refusalText('SHAPE_MISMATCH', 'q and k must share the last dim dk: q has 2, k has 3'), 'q and k must share the last dim dk: q has 2, k has 3 (SHAPE_MISMATCH)');
  assert.equal(refusalText('NON_FINITE_INPUT', 'q.data value 3 is NaN'), 'q.data value 3 is NaN (NON_FINITE_INPUT)');
  assert.equal(refusalText('SHAPE_MISMATCH', 'keyPaddingMask must have shape (B=2, Tk=5); got (2, 4)'), 'keyPaddingMask must have shape (B=2, Tk=5); got (2, 4) — SHAPE_MISMATCH');

  const { context, page, problems } = await open('#view=masks');
  await toggleRow(page, 1);
  const status = page.locator('#masks [data-slot="custom-status"] .core-error');
  await status.waitFor({ state: 'visible', timeout: 30000 });
  const said = await status.textContent();
  assert.match(said, /^Query row has no allowed key \(query 2\): .+ \(ALL_MASKED_ROW\)\. The results shown are still those of the last valid input/,
    `masks, "Your own mask": the refusal should start with its words and end with its code; seen "${said}"`);
  assertClean(problems, 'refusal in words first');
  await context.close();
});

test('the last valid result is labelled in text a screen reader reads, and the label goes with a valid input', async () => {
  const { context, page, problems } = await open('#view=masks');
  assert.doesNotMatch((await accessible(page, CUSTOM_HOST)).name, /Last valid result/, 'masks: no label before any refusal');
  await toggleRow(page, 1);
  await page.locator(`${CUSTOM_HOST}.stale`).waitFor({ timeout: 30000 });
  let ax = await accessible(page, CUSTOM_HOST);
  assert.match(`${ax.name} ${ax.description}`, /Last valid result/,
    `masks, "Your own mask": the stale weights' accessible name or description should say "Last valid result"; seen ${JSON.stringify(ax)}`);
  assert.equal(await page.locator(CUSTOM_HOST).evaluate((n) => n.firstElementChild.textContent), 'Last valid result', 'masks: the label is text in the page, first in the stale host');
  await runAxe(page, 'masks, last valid result shown', { include: '#masks' });
  await toggleRow(page, 1);
  await page.locator(`${CUSTOM_HOST}:not(.stale)`).waitFor({ timeout: 30000 });
  ax = await accessible(page, CUSTOM_HOST);
  assert.doesNotMatch(`${ax.name} ${ax.description}`, /Last valid result/, `masks: once the mask is valid, the label goes; seen ${JSON.stringify(ax)}`);
  assert.equal(await page.locator(`${CUSTOM_HOST} .stale-label`).count(), 0, 'masks: no label element left');
  assert.equal(await page.locator(CUSTOM_HOST).getAttribute('role'), null, 'masks: the host is no group once valid');

  // Multi-head: 3 heads do not split d_model = 32.
  await page.goto(`${suite.server.url}#view=multi-head`);
  await page.reload();
  await page.waitForSelector('html[data-ready="true"]');
  const heads = page.locator('input[data-field="mha-heads"]');
  await typeInto(page, heads, '3');
  await page.locator(`${MHA_HOST}.stale`).waitFor({ timeout: 30000 });
  ax = await accessible(page, MHA_HOST);
  assert.match(`${ax.name} ${ax.description}`, /Last valid result/,
    `multi-head, H = 3: the stale maps' accessible name or description should say "Last valid result"; seen ${JSON.stringify(ax)}`);
  await runAxe(page, 'multi-head, last valid result shown', { include: '#multi-head' });
  await typeInto(page, heads, '4');
  await page.locator(`${MHA_HOST}:not(.stale)`).waitFor({ timeout: 30000 });
  ax = await accessible(page, MHA_HOST);
  assert.doesNotMatch(`${ax.name} ${ax.description}`, /Last valid result/, `multi-head: with H = 4 the label goes; seen ${JSON.stringify(ax)}`);
  assertClean(problems, 'last valid result label');
  await context.close();
});

test('a bounded field says its range before anything is typed, and a one-row grid does not repeat its row', async () => {
  const { context, page, problems } = await open('#view=multi-head');
  const said = {
    'conv-t': 'Whole number from 1 to 8.', 'mask-ct': 'Whole number from 1 to 8.', 'grad-row': 'Whole number from 1 to 4.',
    'mha-heads': 'Whole number from 1 to 16.', 'mha-t': 'Whole number from 1 to 8.', 'drop-p': 'Number from 0 to 0.95.',
  };
  for (const [field, range] of Object.entries(said)) {
    // A section far from the viewport is not rendered, nor in the accessibility tree.
    await page.locator(`input[data-field="${field}"]`).scrollIntoViewIfNeeded();
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    const ax = await accessible(page, `input[data-field="${field}"]`);
    assert.equal(ax.description, range, `${field}: the field's description should give its range before any input; seen ${JSON.stringify(ax)}`);
  }
  // Refused, the field is described by its range and by the message.
  await typeInto(page, page.locator('input[data-field="mha-t"]'), '9');
  const ax = await accessible(page, 'input[data-field="mha-t"]');
  assert.match(ax.description, /^Whole number from 1 to 8\. Out of range \(1 to 8\): still 5$/, `mha-t, 9 typed: range and message; seen ${JSON.stringify(ax)}`);
  await page.keyboard.press('Escape');
  assert.equal((await accessible(page, 'input[data-field="mha-t"]')).description, 'Whole number from 1 to 8.', 'mha-t, after Escape: the range alone again');
  for (const [selector, name] of [['[data-grid="one-q"] input[data-row="0"][data-col="1"]', 'Query q, d2'], ['[data-grid="mha-tokens"] input[data-col="2"]', 'Token ids, t3'],
    ['[data-grid="one-k"] input[data-row="1"][data-col="0"]', 'Keys, k₂, d1']]) {
    await page.locator(selector).scrollIntoViewIfNeeded();
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    assert.equal((await accessible(page, selector)).name, name, `${selector}: the input's name`);
  }
  assertClean(problems, 'ranges and names');
  await context.close();
});

test('the field whose value the core refuses is marked invalid and described by the status line until it is valid', async () => {
  const { context, page, problems } = await open('#view=multi-head');
  const heads = page.locator('input[data-field="mha-heads"]');
  const statusId = await page.locator('#multi-head [data-slot="status"] .core-error').getAttribute('id');
  assert.ok(statusId, 'multi-head: the status line has an id to be described by');
  await typeInto(page, heads, '3');
  await page.locator('#multi-head [data-slot="status"] .core-error:not([hidden])').waitFor({ timeout: 30000 });
  assert.equal(await heads.getAttribute('aria-invalid'), 'true', 'multi-head, H = 3 with d_model = 32: the Heads field should be aria-invalid');
  const describedBy = (await heads.getAttribute('aria-describedby') || '').split(/\s+/);
  assert.ok(describedBy.includes(statusId), `multi-head, H = 3: the Heads field should be described by the status line #${statusId}; aria-describedby is "${describedBy.join(' ')}"`);
  const ax = await accessible(page, 'input[data-field="mha-heads"]');
  assert.match(ax.description, /cannot be split evenly/, `multi-head: the Heads field's description says why; seen ${JSON.stringify(ax)}`);
  await runAxe(page, 'multi-head, refused heads', { include: '#multi-head' });
  await typeInto(page, heads, '4');
  await page.locator('#multi-head [data-slot="status"] .core-error[hidden]').waitFor({ state: 'attached', timeout: 30000 });
  assert.equal(await heads.getAttribute('aria-invalid'), null, 'multi-head, H = 4: the Heads field is valid again');
  assert.ok(!((await heads.getAttribute('aria-describedby')) || '').split(/\s+/).includes(statusId), 'multi-head, H = 4: the status line no longer describes the field');
  assertClean(problems, 'refused field');
  await context.close();
});

test('gradients: "Take one step" says its result once, after the edits pause, and the page load says nothing there', async () => {
  // Record, from the start of the page, every text the section's live regions receive.
  const init = () => {
    window.liveSaid = [];
    new MutationObserver((records) => {
      for (const r of records) {
        const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
        const live = node?.closest('[aria-live="polite"], [aria-live="assertive"], [role="status"], [role="alert"]');
        if (live && live.closest('#gradients') && live.textContent) window.liveSaid.push([live.dataset.slot ?? live.dataset.said ?? '', live.textContent]);
      }
    }).observe(document, { subtree: true, childList: true, characterData: true });
  };
  const { context, page, problems } = await suite.open('#view=gradients', { viewport: { width: 1280, height: 900 }, init });
  const line = page.locator('#gradients [data-slot="step"]');
  assert.match(await line.textContent(), /^Press “Take one step”/, 'gradients: the first text is in place at load');
  await page.evaluate(() => new Promise((resolve) => requestIdleCallback(() => resolve(), { timeout: 2000 })));
  const atLoad = await page.evaluate(() => window.liveSaid.splice(0));
  assert.deepEqual(atLoad, [], 'gradients: a live region said something while the page loaded');
  await page.locator('#gradients button[data-action="grad-step"]').click();
  await page.waitForFunction(() => /^Last step/.test(document.querySelector('#gradients [data-slot="step"]').textContent));
  // The sentence comes once the edits pause (its absence is told by the assertion below).
  await page.waitForFunction(() => /^Last step/.test(document.querySelector('#gradients [data-said="gradients"]')?.textContent ?? ''), null, { timeout: 30000 })
    .catch(() => {});
  const text = await line.textContent();
  assert.match(text, /^Last step: the loss went from \S+ to \S+\.$/);
  const said = await page.evaluate(() => window.liveSaid);
  assert.deepEqual(said, [['gradients', text]], 'gradients: after "Take one step", what the section\'s live regions said');
  await runAxe(page, 'gradients after a step', { include: '#gradients' });
  assertClean(problems, 'gradients step');
  await context.close();
});
