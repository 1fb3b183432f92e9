// Which key a query may see is the core's rule, not the page's: the lesson
// page asks lab.allowedPairs and draws what it answers. Here the page's lab
// (the one loadAttention resolves to, cached per build) is given a rule that
// answers the opposite of the core, and the custom mask's map, the one-query
// flow and the conventions' diagonal note must follow that answer. The
// multi-head sizes line must show the module's own head width in the same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, typeInto, waitForState } from './helpers/browser.mjs';

const suite = browserSuite();

/** Hatched cells of a heatmap, row by row, as nested booleans. */
const hatching = (page, name) => page.$$eval(`[data-heatmap="${name}"] .hm-cell:not(.hm-extra)`, (ns) => {
  const rows = [];
  for (const n of ns) (rows[Number(n.dataset.row)] ??= [])[Number(n.dataset.col)] = n.classList.contains('blocked');
  return rows;
});

/** Pressed states of a mask group's buttons, as nested booleans. */
const pressed = (page, name) => page.$$eval(`[data-mask="${name}"] button`, (ns) => {
  const rows = [];
  for (const n of ns) (rows[Number(n.dataset.row ?? 0)] ??= [])[Number(n.dataset.col)] = n.getAttribute('aria-pressed') === 'true';
  return rows;
});

const scaledTexts = (page) => page.$$eval('#one-query .flow-scaled', (ns) => ns.map((n) => n.textContent));
const out = (page, key) => page.locator(`[data-out="${key}"]`).first().textContent();
const not = (m) => m.map((row) => row.map((x) => !x));

test('the page draws visibility and the head width from the core, whatever they are', async () => {
  const { context, page, problems } = await suite.open();

  // The core's own rule first: the custom map hatches what the mask leaves out.
  const custom = await pressed(page, 'mask-custom');
  assert.deepEqual(await hatching(page, 'mask-custom-weights'), not(custom), 'with the core\'s rule, the custom map hatches the unpressed cells');

  // From here on the page's lab answers the opposite of the core's rule, and
  // its multi-head modules report a head width of 99.
  await page.evaluate(async () => {
    const { loadAttention } = await import('/attention.js');
    const lab = await loadAttention();
    const allowedPairs = lab.allowedPairs.bind(lab);
    lab.allowedPairs = (shape, options) => {
      const pairs = allowedPairs(shape, options);
      return { data: pairs.data.map((x) => 1 - x), shape: pairs.shape };
    };
    const module = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2 });
    Object.defineProperty(Object.getPrototypeOf(module), 'headDim', { get: () => 99 });
    module.free();
  });

  // Masks: toggle key 2 for query 1; the map now hatches the pressed cells.
  await page.locator('[data-mask="mask-custom"] button[data-row="0"][data-col="1"]').click();
  const edited = custom.map((row, i) => row.map((x, j) => (i === 0 && j === 1 ? !x : x)));
  await waitForState(page, (want) => {
    const ns = [...document.querySelectorAll('[data-heatmap="mask-custom-weights"] .hm-cell:not(.hm-extra)')];
    return ns.length === 9 && ns.every((n) => n.classList.contains('blocked') === want[Number(n.dataset.row)][Number(n.dataset.col)]);
  }, edited, async () => `the custom map hatches ${JSON.stringify(await hatching(page, 'mask-custom-weights'))}; the lab's rule blocks ${JSON.stringify(edited)}`);

  // One query: "block key 2"; the lab's rule blocks key 1 instead, and the flow shows that.
  await page.locator('input[data-field="one-first"]').check();
  await waitForState(page, () => [...document.querySelectorAll('#one-query .flow-scaled')].some((n) => n.textContent.includes('→')),
    null, async () => `the flow's scaled scores are ${JSON.stringify(await scaledTexts(page))}`);
  const scaled = await scaledTexts(page);
  assert.ok(scaled[0].endsWith('→ −∞') && !scaled[1].includes('→'), `key 1, not key 2, becomes −∞ by the lab's rule: ${JSON.stringify(scaled)}`);

  // Conventions: the diagonal stays pressed in the allowed mask, yet the lab's rule hides it.
  await page.locator('[data-mask="conv-allowed"] button[data-row="0"][data-col="1"]').click();
  const allowed = await pressed(page, 'conv-allowed');
  assert.ok(allowed.every((row, i) => row[i]), `the diagonal is allowed in the mask: ${JSON.stringify(allowed)}`);
  await waitForState(page, () => document.querySelector('[data-out="conv-diagonal"]').textContent.startsWith('⚠'),
    null, async () => `the diagonal note says "${await out(page, 'conv-diagonal')}"; the lab's rule hides every diagonal pair`);

  // Multi-head: the sizes line shows the module's head width, not d_model / H.
  await typeInto(page, page.locator('input[data-field="mha-heads"]'), '8');
  await waitForState(page, () => document.querySelector('[data-out="mha-dhead"]').textContent === '99',
    null, async () => `d_head is shown as ${await out(page, 'mha-dhead')}; the module says 99`);

  assertClean(problems, 'visibility from the core');
  await context.close();
});
