// The lesson page as an explorable: pointing at a number (mouse or keyboard)
// lights up where it came from and what it feeds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, runAxe } from './helpers/browser.mjs';

const suite = browserSuite();
const open = (hash = '', viewport = { width: 1280, height: 900 }) => suite.open(hash, { viewport });

/** What is lit in a section: source and linked elements, named by their kind and row/column. */
async function lit(page, section) {
  return page.$$eval(`#${section} .linked, #${section} .link-source`, (ns) => ns.map((n) => {
    const where = n.closest('[data-grid], [data-heatmap], [data-values], [data-mask]');
    const name = where ? (where.dataset.grid || where.dataset.heatmap || where.dataset.values || where.dataset.mask) : '?';
    return `${n.classList.contains('link-source') ? '*' : ''}${name}:${n.dataset.linkQ ?? '-'},${n.dataset.linkK ?? '-'}`;
  }).sort());
}

test('3×3 example: hovering or focusing a weight lights its query row, key, value, score and output row', async () => {
  const { context, page, problems } = await open('#view=three-by-three');
  const cell = page.locator('[data-heatmap="ex-weights"] .hm-cell[data-row="1"][data-col="2"]');
  await cell.hover();
  const expected = [
    '*ex-weights:1,2',
    'ex-weights:-,2', // its key's column heading
    'ex-weights:1,-', 'ex-weights:1,-', // its query's row heading and row sum
    'ex-q:1,-', 'ex-k:-,2', 'ex-v:-,2',
    'ex-scores:-,2', 'ex-scores:1,-', 'ex-scores:1,2',
    'ex-output:1,-', 'ex-output:1,-', 'ex-output:1,-',
  ].sort();
  assert.deepEqual(await lit(page, 'three-by-three'), expected, 'hover');
  // Other weights of the same row are not lit.
  assert.equal(await page.locator('[data-heatmap="ex-weights"] .hm-cell[data-row="1"][data-col="0"]').evaluate((n) => n.classList.contains('linked')), false);
  await page.mouse.move(0, 0);
  assert.deepEqual(await lit(page, 'three-by-three'), [], 'nothing lit once the pointer leaves');

  // Keyboard: one tab stop in the map, arrows move between the weights, and the focused one lights the same way.
  await page.locator('[data-heatmap="ex-weights"] .hm-cell[tabindex="0"]').focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.evaluate(() => `${document.activeElement.dataset.row},${document.activeElement.dataset.col}`), '1,2');
  assert.deepEqual(await lit(page, 'three-by-three'), expected, 'focus');
  const label = await cell.getAttribute('aria-label');
  assert.match(label, /^query 2, key 3: weight \d/, 'the focused weight is named for a screen reader');
  // Focusing a query's inputs lights its whole row downstream.
  await page.locator('[data-grid="ex-q"] input[data-row="0"][data-col="0"]').focus();
  const fromQ = await lit(page, 'three-by-three');
  assert.ok(fromQ.includes('ex-weights:0,2') && fromQ.includes('ex-output:0,-') && !fromQ.some((x) => x.startsWith('ex-k')), fromQ.join(' '));
  await runAxe(page, '3×3 with a focused weight', { include: '#three-by-three' });
  assertClean(problems, '3×3 links');
  await context.close();
});

test('masks: a custom mask cell and a causal weight light only their own figure pair', async () => {
  const { context, page, problems } = await open('#view=masks');
  await page.locator('[data-mask="mask-custom"] button[data-row="2"][data-col="0"]').hover();
  const custom = await lit(page, 'masks');
  assert.ok(custom.includes('*mask-custom:2,0') && custom.includes('mask-custom-weights:2,0'), custom.join(' '));
  assert.ok(!custom.some((x) => x.startsWith('mask-causal')), `the causal figure is another scope: ${custom.join(' ')}`);
  await page.locator('[data-heatmap="mask-causal-weights"] .hm-cell[tabindex="0"]').focus();
  await page.keyboard.press('ArrowDown');
  const causal = await lit(page, 'masks');
  assert.ok(causal.includes('*mask-causal-weights:1,0') && causal.includes('mask-causal:1,0'), causal.join(' '));
  assert.ok(!causal.some((x) => x.startsWith('mask-custom')), causal.join(' '));
  await runAxe(page, 'masks with a focused weight', { include: '#masks' });
  assertClean(problems, 'masks links');
  await context.close();
});
