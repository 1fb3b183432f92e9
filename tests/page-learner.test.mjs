// The lesson page as a new learner meets it: number formats, narrow screens,
// numbering, labels in the learner's words, the colour scale, the widget's
// attributes. Each test here pins down a confusion a learner ran into.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, typeInto } from './helpers/browser.mjs';
import { rampColour, SERIES } from '../web/palette.js';

const suite = browserSuite();
const open = (hash = '', viewport = { width: 1280, height: 900 }) => suite.open(hash, { viewport });

// ---------------------------------------------------------------------------
// One palette with a legend
// ---------------------------------------------------------------------------

test('one colour ramp with a legend everywhere; blocked cells look the same; display-only grids differ from editable ones', async () => {
  const { context, page, problems } = await open('#brk.s=' + '-0'.repeat(12));
  // Every weight cell in the lesson is painted with the ramp's colour for its value.
  const lessonCells = await page.$$eval('[data-heatmap="ex-weights"] .hm-cell:not(.hm-extra)',
    (ns) => ns.map((n) => [Number(n.textContent), getComputedStyle(n).backgroundColor]));
  for (const [v, colour] of lessonCells) assert.equal(colour, rampColour(v), `lesson weight ${v}`);

  // So is every weight cell of a "Break it" card, on the same ramp.
  const card = page.locator('#bk-no-causal-mask');
  await card.locator('summary').click();
  const cardCells = await card.locator('[data-table="weights0"] td[data-row]').evaluateAll((ns) => ns
    .map((n) => ({ text: n.textContent, blocked: n.classList.contains('blocked'), colour: getComputedStyle(n).backgroundColor })));
  assert.ok(cardCells.length > 0, 'the card shows its weights');
  for (const c of cardCells.filter((x) => !x.blocked)) {
    const v = Number(c.text.replace('−', '-').replace(/[^0-9.eE+-]/g, ''));
    assert.equal(c.colour, rampColour(v), `break-it weight ${c.text}`);
  }

  // A blocked cell looks the same in the lesson and in a card.
  const blockedLook = (n) => { const s = getComputedStyle(n); return `${s.backgroundImage} | ${s.backgroundColor}`; };
  const lessonBlocked = await page.locator('[data-heatmap="mask-causal-weights"] .hm-cell.blocked').first().evaluate(blockedLook);
  const cardBlocked = await card.locator('[data-table="weights0"] td.blocked').first().evaluate(blockedLook);
  assert.equal(cardBlocked, lessonBlocked, 'blocked cells: card vs lesson');

  // A legend next to every coloured map, in the lesson and in the cards.
  for (const id of ['three-by-three', 'masks', 'self-cross', 'multi-head', 'observability']) {
    assert.ok(await page.locator(`#${id} .ramp-legend`).count() >= 1, `#${id} has a colour legend`);
  }
  assert.ok(await card.locator('.ramp-legend').count() >= 1, 'the break-it card has a colour legend');

  // Chart series come from the same ramp.
  const bars = await page.$$eval('#why-scale svg.chart .bar', (ns) => [...new Set(ns.map((n) => getComputedStyle(n).fill))]);
  assert.deepEqual(bars.sort(), [SERIES.scaled, SERIES.unscaled].sort(), 'histogram bars');

  // Display-only mask cells (the causal mask) do not look like the editable ones (the custom mask).
  const look = (n) => { const s = getComputedStyle(n); return `${s.borderTopStyle} ${s.borderTopWidth} ${s.boxShadow}`; };
  const shown = await page.locator('[data-mask="mask-causal"] .mask-cell.allowed').first().evaluate(look);
  const editable = await page.locator('[data-mask="mask-custom"] button.mask-cell.allowed').first().evaluate(look);
  assert.notEqual(shown, editable, `display-only "${shown}" vs editable "${editable}"`);
  assertClean(problems, 'palette');
  await context.close();
});

test('the widget uses the same ramp and shows its legend', async () => {
  const { context, page, problems } = await open();
  await page.evaluate(async () => {
    await import('/attention-lab.js');
    const el = document.createElement('attention-lab');
    el.setAttribute('preset', 'three-by-three');
    document.body.append(el);
    await el.ready;
  });
  const widget = page.locator('attention-lab');
  assert.equal(await widget.locator('.ramp-legend').count(), 1, 'the widget has a legend');
  const cells = await widget.locator('[data-heatmap="ex-weights"] .hm-cell:not(.hm-extra)').evaluateAll(
    (ns) => ns.map((n) => [Number(n.textContent), getComputedStyle(n).backgroundColor]));
  for (const [v, colour] of cells) assert.equal(colour, rampColour(v), `widget weight ${v}`);
  assertClean(problems, 'widget palette');
  await context.close();
});
