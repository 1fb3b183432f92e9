// The lesson page as a new learner meets it: number formats, narrow screens,
// numbering, labels in the learner's words, the colour scale, the widget's
// attributes. Each test here pins down a confusion a learner ran into.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, typeInto, renderEverySection, runAxe, settled, waitForState, resizeTo } from './helpers/browser.mjs';
import { rampColour, SERIES } from '../web/palette.js';
import { TYPING_PAUSE } from '../web/lesson-ui.js';

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

// ---------------------------------------------------------------------------
// Numbers: never grouped, scientific for large and small magnitudes
// ---------------------------------------------------------------------------

/** Text on the page that groups digits ("12,345"): the vectors print ", " between entries, so "1,000" is grouping. */
const GROUPED = /\d,\d{3}(?!\d)/;

test('numbers are never grouped: a typed 12345 survives a reload and stays editable; large values print in scientific notation', async () => {
  const { context, page, problems } = await open();
  const token = page.locator('[data-grid="mask-tokens"] input[data-row="0"][data-col="1"]');
  await typeInto(page, token, '12345');
  await typeInto(page, page.locator('input[data-field="mha-seed"]'), '10000');
  await page.waitForFunction(() => location.hash.includes('mha.seed=10000'));
  await page.reload();
  await page.waitForSelector('html[data-ready="true"]');
  assert.equal(await token.inputValue(), '12345', 'the token id is shown as typed');
  assert.equal(await token.getAttribute('aria-invalid'), null, 'and is valid');
  assert.equal(await page.locator('input[data-field="mha-seed"]').inputValue(), '10000', 'the seed too');
  await typeInto(page, token, '12346');
  assert.equal(await token.getAttribute('aria-invalid'), null, 'it can be edited again');
  // The edit's debounced hash write must land before the next address is
  // typed, or it would overwrite that address (as it would for a learner who
  // typed faster than 120 ms).
  await page.waitForFunction(() => location.hash.includes('12346'));

  // Huge scores: q·k = 1e12 prints as 1.0e12, not 999999995904.000. Only the
  // hash changes, so this is a same-document navigation: wait for the page to
  // take the new state before reading it.
  await page.goto(`${suite.server.url}#one.q=1000000,0&one.k=1000000,0;0,1&one.v=1000000,0;0,1`);
  await page.waitForSelector('html[data-ready="true"]');
  const dots = page.locator('[data-out="one-dots"]');
  await page.waitForFunction(() => document.querySelector('[data-out="one-dots"]').textContent.includes('e12'),
    null, { timeout: 30000 }).catch(() => {}); // on a timeout the assertion below says what was shown
  assert.equal(await dots.textContent(), '[1.0e12, 0.000]');
  await renderEverySection(page);
  const all = await page.evaluate(() => [
    ...[...document.querySelectorAll('main input')].map((n) => n.value),
    document.querySelector('main').innerText,
  ].join('\n'));
  assert.doesNotMatch(all, GROUPED, `grouped digits on the page: ${(all.match(new RegExp(`.{0,30}${GROUPED.source}.{0,10}`)) || [''])[0]}`);
  assert.doesNotMatch(all, /\d{9,}\.\d/, 'no long fixed-point numbers');

  // A large score is shown with the digits a float32 holds, no more: q·k / √2 = 707106.78 reads 707106.8.
  await page.goto(`${suite.server.url}#one.q=1000000,0&one.k=1,0;0,1`);
  await page.waitForSelector('html[data-ready="true"]');
  await page.waitForFunction(() => document.querySelector('[data-out="one-scaled"]').textContent.includes('707106.8'), null, { timeout: 30000 }).catch(() => {});
  assert.equal(await page.locator('[data-out="one-scaled"]').textContent(), '[707106.8, 0.000]', 'the scaled scores');
  const shown = await page.evaluate(() => document.querySelector('#one-query').innerText);
  const tooPrecise = [...shown.matchAll(/(?<![\d.])(\d+)\.(\d+)/g)].filter(([, whole, part]) => whole.replace(/^0+/, '').length + part.length > 7 && whole !== '0');
  assert.deepEqual(tooPrecise.map(([text]) => text), [], 'numbers with more significant digits than a float32 holds');
  assertClean(problems, 'grouping');
  await context.close();
});

// ---------------------------------------------------------------------------
// No sideways scroll at 390 px, whatever the values
// ---------------------------------------------------------------------------

test('hostile values do not widen the page at 390 px', async () => {
  const big = '1000000,1000000,1000000,1000000';
  for (const hash of [
    '#one.v=1000000,-1000000;-1000000,1000000',
    `#ex.q=${big};${big};${big}&ex.k=${big};${big};${big}&ex.v=1000000,-1000000;-1000000,1000000;1000000,1000000`,
    '#one.q=1000000,0&one.k=1000000,0;0,1&one.v=-1000000,1000000;1000000,-1000000',
    '#obs.mult=1000&mha.size=100&mha.dmodel=64&mha.heads=16&mha.t=8&shape.t=32&shape.d=32&shape.b=8&shape.h=8',
  ]) {
    const { context, page } = await open(hash, { width: 390, height: 844 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    const widest = await page.evaluate(() => {
      let worst = null;
      for (const n of document.querySelectorAll('main *')) {
        const r = n.getBoundingClientRect();
        if (r.right > window.innerWidth + 1 && !n.closest('.grid-wrap, .heatmap-wrap, .bk-table-wrap, .formula, .sr-only')) {
          if (!worst || r.right > worst.right) worst = { right: Math.round(r.right), what: `${n.tagName}.${n.className} "${n.textContent.slice(0, 40)}"` };
        }
      }
      return worst;
    });
    assert.ok(overflow <= 0, `${hash.slice(0, 50)}: the page is ${overflow} px too wide; widest: ${JSON.stringify(widest)}`);
    await context.close();
  }
});

test('at 390 px no map cuts its numbers, and a box that scrolls sideways says so', async () => {
  const { context, page, problems } = await open('#conv.t=8', { width: 390, height: 844 });
  await renderEverySection(page);
  // The C under each step too: its lines are longer than a phone is wide.
  await page.$$eval('main details.c-pass', (ds) => ds.forEach((d) => { d.open = true; }));
  // The scroll boxes are measured after the frame that lays them out: wait
  // until each drawn box is marked exactly when it scrolls, a C box among them.
  await waitForState(page, () => {
    const drawn = [...document.querySelectorAll('main .grid-wrap, main .heatmap-wrap, main pre.c-src')].filter((n) => n.checkVisibility({ contentVisibilityAuto: true }));
    const wide = drawn.filter((n) => n.scrollWidth > n.clientWidth + 1);
    return wide.some((n) => n.matches('pre.c-src')) && drawn.every((n) => (n.dataset.overflows === '1') === wide.includes(n));
  }, null, 'at 390 px the boxes that scroll sideways, C boxes among them, are marked, and only those');
  const cut = await page.$$eval('main .hm-cell', (cells) => cells
    .filter((c) => c.scrollWidth > c.clientWidth + 1)
    .map((c) => `${c.closest('section').id} "${c.textContent}" needs ${c.scrollWidth} px, has ${c.clientWidth}`));
  assert.deepEqual(cut, [], 'map cells too narrow for their numbers');
  // The boxes drawn (a box in a closed disclosure, or in a map far from the
  // viewport, is measured when it is drawn).
  const boxes = await page.$$eval('main .grid-wrap, main .heatmap-wrap, main pre.c-src', (nodes) => nodes
    .filter((n) => n.checkVisibility({ contentVisibilityAuto: true }))
    .map((n) => ({ where: `${n.closest('section').id} ${n.tagName === 'PRE' ? n.getAttribute('aria-label') : n.firstElementChild?.className}`, overflows: n.scrollWidth > n.clientWidth + 1,
      marked: n.dataset.overflows === '1', hint: getComputedStyle(n, '::before').content })));
  const wide = boxes.filter((b) => b.overflows);
  assert.ok(wide.length > 0, 'some boxes scroll at 390 px (the T = 8 conventions maps)');
  assert.ok(wide.some((b) => /^\S+ C source/.test(b.where)), 'some C boxes scroll at 390 px');
  for (const b of boxes) {
    assert.equal(b.marked, b.overflows, `${b.where}: marked as scrolling exactly when it does`);
    if (b.overflows) assert.match(b.hint, /Scroll sideways/, `${b.where}: shows the hint`);
  }
  assertClean(problems, 'narrow maps');
  await context.close();
});

test('a legend names the blocked look only where a map has a blocked cell', async () => {
  const { context, page, problems } = await open('');
  await renderEverySection(page);
  const keyed = (id) => page.$$eval(`#${id} .ramp-legend`, (ls) => ls.map((l) => Boolean(l.querySelector('.ramp-blocked-key:not([hidden]) .ramp-blocked'))));
  assert.deepEqual(await keyed('three-by-three'), [false], 'the 3×3 example blocks nothing');
  assert.deepEqual(await keyed('dropout'), [false], 'a dropped weight is a 0, not a blocked cell');
  assert.ok((await keyed('masks')).some(Boolean), 'the causal mask\'s map has blocked cells, and its legend says so');
  // The padding example's two maps share a legend under the second, whose sequence has no padding by default.
  const padKeyed = await page.$$eval('#masks [data-slot="padding-weights"] .ramp-legend', (ls) => ls.map((l) => Boolean(l.querySelector('.ramp-blocked-key:not([hidden]) .ramp-blocked'))));
  const padHatched = await page.$$eval('#masks [data-slot="padding-weights"] .hm-cell.blocked', (ns) => ns.length);
  assert.ok(padHatched > 0, 'the padding example hatches the padded keys of sequence 1');
  assert.deepEqual(padKeyed, [true], 'the shared legend of the padding example names the blocked look that sequence 1 has');
  const causal = page.locator('#multi-head input[data-field="mha-causal"]');
  const hatched = () => page.$$eval('#multi-head .hm-cell.blocked', (ns) => ns.length);
  if (!(await causal.isChecked())) await causal.check();
  assert.ok(await hatched() > 0, 'multi-head, causal: hatched cells');
  assert.deepEqual(await keyed('multi-head'), [true], 'multi-head, causal: the legend names the blocked look');
  await causal.uncheck();
  assert.equal(await hatched(), 0, 'multi-head without the causal mask: no hatched cell');
  assert.deepEqual(await keyed('multi-head'), [false], 'multi-head without the causal mask: the legend does not name a look no cell has');
  // Maps at 2 decimals: the hint under them says a row's shown numbers may miss 1 by their rounding, and they do so by no more.
  for (const id of ['self-cross', 'multi-head']) {
    const { hint, off } = await page.evaluate((id) => {
      const maps = [...document.querySelectorAll(`#${id} [data-heatmap*="-h"]`)];
      const off = maps.flatMap((map) => {
        const cells = [...map.querySelectorAll('.hm-cell[data-row]')];
        const rows = new Map();
        for (const c of cells) rows.set(c.dataset.row, (rows.get(c.dataset.row) ?? []).concat(Number(c.textContent)));
        return [...rows.values()].map((r) => Math.abs(r.reduce((a, b) => a + b, 0) - 1) - r.length * 0.005).filter((excess) => excess > 1e-9);
      });
      return { hint: document.querySelector(`#${id} [data-out="rounded-weights"]`)?.textContent ?? '', off };
    }, id);
    assert.match(hint, /2 decimals.*unrounded, every row adds up to 1/, `${id}: the hint under the maps`);
    assert.deepEqual(off, [], `${id}: rows whose shown weights miss 1 by more than their rounding`);
  }
  // The custom mask: blocking its one blocked pair again and again changes the legend only, never the map's cells.
  const customKeyed = () => page.$$eval('[data-slot="custom-weights"] .ramp-legend', (ls) => ls.map((l) => Boolean(l.querySelector('.ramp-blocked-key:not([hidden]) .ramp-blocked'))));
  const pair = page.locator('[data-mask="mask-custom"] button[data-row="0"][data-col="1"]');
  await page.evaluate(() => { window.keptCell = document.querySelector('[data-heatmap="mask-custom-weights"] .hm-cell'); });
  const before = await customKeyed();
  await pair.click();
  const after = await customKeyed();
  assert.deepEqual([before, after], [[false], [true]], 'the custom mask\'s legend names the blocked look once a pair is blocked');
  await pair.click();
  assert.deepEqual(await customKeyed(), [false], 'and no longer once it is allowed again');
  assert.equal(await page.evaluate(() => window.keptCell.isConnected), true, 'the map\'s cells were kept (updated in place), not built again');
  assertClean(problems, 'legends');
  await context.close();
});

test('at 390 px every legend keeps the blocked swatch on the line of its words', async () => {
  const { context, page, problems } = await open('', { width: 390, height: 844 });
  await renderEverySection(page);
  const apart = await page.$$eval('main .ramp-legend', (legends) => legends.filter((l) => l.checkVisibility()).flatMap((legend) => {
    const swatch = legend.querySelector('.ramp-blocked-key:not([hidden]) .ramp-blocked');
    if (!swatch) return [];
    const words = [...swatch.parentNode.childNodes].find((n) => n.nodeType === 3 && n.data.includes('blocked'));
    const range = document.createRange();
    range.selectNodeContents(words);
    const line = range.getClientRects()[0];
    const box = swatch.getBoundingClientRect();
    const middle = (box.top + box.bottom) / 2;
    return middle >= line.top && middle <= line.bottom ? [] : [`${legend.closest('section').id}: swatch at y ${box.top.toFixed(0)}, words at y ${line.top.toFixed(0)}`];
  }));
  assert.deepEqual(apart, [], `${apart.length} legends split the blocked swatch from its words`);
  assertClean(problems, 'legends at 390 px');
  await context.close();
});

test('a new window width marks the boxes that now scroll sideways, and unmarks them when it widens again', async () => {
  const { context, page, problems } = await open('#conv.t=8', { width: 1280, height: 900 });
  await renderEverySection(page);
  const check = async (width) => {
    await page.setViewportSize({ width, height: 900 });
    // Measured once the page is idle after the new width: wait until every
    // drawn box is marked exactly when it scrolls (what `wrong` below lists).
    await waitForState(page, () => [...document.querySelectorAll('main .grid-wrap, main .heatmap-wrap')]
      .filter((n) => n.checkVisibility({ contentVisibilityAuto: true }))
      .every((n) => (n.dataset.overflows === '1') === (n.scrollWidth > n.clientWidth + 1)), null, `at ${width} px the boxes that scroll sideways are marked, and only those`);
    const wrong = await page.$$eval('main .grid-wrap, main .heatmap-wrap', (nodes) => nodes
      .filter((n) => n.checkVisibility({ contentVisibilityAuto: true })) // drawn: a far multi-head map is measured once near
      .map((n) => ({ where: `${n.closest('section').id} ${n.firstElementChild?.className}`, overflows: n.scrollWidth > n.clientWidth + 1, marked: n.dataset.overflows === '1' }))
      .filter((b) => b.marked !== b.overflows)
      .map((b) => `${b.where}: ${b.overflows ? 'scrolls, not marked' : 'marked, does not scroll'}`));
    const scrolling = await page.$$eval('main [data-overflows="1"]', (nodes) => nodes.length);
    return { wrong, scrolling };
  };
  const wide = await check(1280);
  assert.deepEqual(wide.wrong, [], 'at 1280 px');
  const narrow = await check(390);
  assert.ok(narrow.scrolling > wide.scrolling, `more boxes scroll at 390 px than at 1280 px (${narrow.scrolling}, ${wide.scrolling})`);
  assert.deepEqual(narrow.wrong, [], 'after narrowing to 390 px');
  assert.deepEqual((await check(1280)).wrong, [], 'after widening to 1280 px again');
  assertClean(problems, 'a new window width');
  await context.close();
});

test('a far section is not laid out to measure its boxes; once near, the boxes that scroll sideways are marked', async () => {
  const { context, page, problems } = await open('#conv.t=8', { width: 390, height: 844 });
  await settled(page); // the page's idle work after loading has had its chance
  // Read without touching a size: asking a far box its width would lay it out.
  const boxes = () => page.$$eval('#conventions .grid-wrap, #conventions .heatmap-wrap', (nodes) => nodes.map((n) => ({
    shown: n.checkVisibility({ contentVisibilityAuto: true }), marked: n.dataset.overflows === '1', stop: n.getAttribute('tabindex') })));
  const far = await boxes();
  assert.ok(far.length > 0 && far.every((b) => !b.shown), `the conventions section is far and not drawn: ${JSON.stringify(far)}`);
  assert.deepEqual(far.filter((b) => b.marked || b.stop !== null), [], 'no far box was laid out to be measured');
  await page.locator('#conventions [data-mask="conv-allowed"]').scrollIntoViewIfNeeded();
  // Laid out in a next frame, and marked by the observer that watched it:
  // wait until some box is marked and each is marked exactly when it scrolls.
  await waitForState(page, () => {
    const nodes = [...document.querySelectorAll('#conventions .grid-wrap, #conventions .heatmap-wrap')];
    return nodes.some((n) => n.dataset.overflows === '1') && nodes.every((n) => (n.dataset.overflows === '1') === (n.scrollWidth > n.clientWidth + 1));
  }, null, 'once near, the boxes of the conventions section that scroll sideways are marked, and only those');
  const wrong = await page.$$eval('#conventions .grid-wrap, #conventions .heatmap-wrap', (nodes) => nodes
    .map((n) => ({ where: n.firstElementChild?.className, overflows: n.scrollWidth > n.clientWidth + 1, marked: n.dataset.overflows === '1' }))
    .filter((b) => b.marked !== b.overflows).map((b) => `${b.where}: ${b.overflows ? 'scrolls, not marked' : 'marked, does not scroll'}`));
  assert.deepEqual(wrong, [], 'once near, every box that scrolls is marked, and only those');
  assert.ok(await page.$$eval('#conventions [data-overflows="1"]', (nodes) => nodes.length) > 0, 'at 390 px with 8 positions some of its boxes scroll');
  assertClean(problems, 'a far section');
  await context.close();
});

test('an edit of the 3×3 example redraws the sections that read it: a far one after the frame, a near one at once, each as a fresh page draws it', async () => {
  // Observability and the custom mask both read the 3×3 example's Q, K and V.
  // Runs in the page: types value (if any) into Q's first cell, then reads both, in one task.
  const editAndRead = (value) => {
    if (value !== null) {
      const input = document.querySelector('[data-grid="ex-q"] input[data-row="0"][data-col="0"]');
      input.value = value;
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }
    const cells = (name) => [...document.querySelectorAll(`[data-heatmap="${name}"] .hm-cell`)].map((n) => n.textContent).join(' ');
    return { obsScore: document.querySelector('[data-out="obs-maxscore"]').textContent, obsMap: cells('obs-weights'), maskMap: cells('mask-custom-weights') };
  };
  const { context, page, problems } = await open('#view=three-by-three');
  await page.waitForTimeout(300); // the observer has reported which sections are far
  const before = await page.evaluate(editAndRead, null);
  // Far from the viewport: the edit's own task leaves them as they were...
  const inTask = await page.evaluate(editAndRead, '9');
  assert.deepEqual(inTask, before, 'far readers are not redrawn in the edit’s task');
  // ...and once the page is idle they show the edit, as a fresh page with the same state does.
  await page.waitForFunction((old) => document.querySelector('[data-out="obs-maxscore"]').textContent !== old, before.obsScore);
  const after = await page.evaluate(editAndRead, null);
  await page.waitForFunction(() => location.hash.includes('ex.q=9')); // the state is written to the hash after a pause
  const fresh = await open(await page.evaluate(() => location.hash.replace(/view=[^&]*/, 'view=observability')));
  assert.deepEqual(after, await fresh.page.evaluate(editAndRead, null), 'the far readers after the edit, against a fresh page');
  await fresh.context.close();

  // Near the viewport: redrawn in the edit's own task.
  await page.locator('#observability').scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);
  const nearBefore = await page.evaluate(editAndRead, null);
  const nearInTask = await page.evaluate(editAndRead, '-4');
  assert.notEqual(nearInTask.obsScore, nearBefore.obsScore, 'a near reader is redrawn with the edit');
  assertClean(problems, 'readers of the 3×3 example');
  await context.close();
});

test('at 390 px every number grid fits without scrolling sideways, and shows the largest token ids whole', async () => {
  // Token ids go up to 99999 (masks) and 9999 (multi-head): every cell holds the largest.
  const row = (n, id) => Array(n).fill(id).join(',');
  const { context, page, problems } = await open(`#mask.tokens=${row(5, 99999)};${row(5, 99999)}&mha.tokens=${row(5, 9999)}`, { width: 390, height: 844 });
  await renderEverySection(page);
  await settled(page); // the scroll boxes are measured after the frame that lays them out
  const grids = await page.$$eval('main table.grid-edit', (tables) => {
    // An input's scrollWidth ignores its text: the text is measured in the input's font.
    const pen = document.createElement('canvas').getContext('2d');
    const fits = (input) => {
      const cs = getComputedStyle(input);
      pen.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      return pen.measureText(input.value).width <= input.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) + 0.5;
    };
    return tables.map((t) => {
      const box = t.closest('.grid-wrap');
      return {
        grid: t.dataset.grid, size: `needs ${box.scrollWidth} px, has ${box.clientWidth}`,
        scrolls: box.scrollWidth > box.clientWidth + 1 || box.dataset.overflows === '1',
        cut: [...t.querySelectorAll('input')].filter((i) => !fits(i)).map((i) => i.value),
      };
    });
  });
  for (const name of ['mask-tokens', 'kv-x']) assert.ok(grids.some((g) => g.grid === name), `the grid ${name} is on the page`);
  assert.deepEqual(grids.filter((g) => g.scrolls).map((g) => `${g.grid} ${g.size}`), [], 'grids that scroll sideways at 390 px');
  assert.deepEqual(grids.filter((g) => g.cut.length > 0).map((g) => `${g.grid}: ${g.cut.join(' ')}`), [], 'cells whose number is wider than the box inside their padding');
  assertClean(problems, 'grids at 390 px');
  await context.close();
});

test('an input is as wide as its number: a long value is shown whole, not cut, at 1280 px and 390 px', async () => {
  // One page, opened at the first width and then narrowed. The typed cell
  // ends each width as it started (0), so the next width starts from it too.
  const widths = [1280, 390];
  const { context, page, problems } = await open('#one.v=1000000,-1000000;-123456.75,0.000123&ex.q=-98765.4321,0,1,0;0,1,0,1;1,1,0,0', { width: widths[0], height: 844 });
  await renderEverySection(page);
  for (const width of widths) {
    if (width !== widths[0]) await resizeTo(page, width, 844);
    const long = await page.$$eval('main input.num', (inputs) => inputs.map((i) => i.value).filter((v) => v.length > 8));
    assert.deepEqual(long.sort(), ['-123456.75', '-98765.4321'], `${width} px: the long values the state sets are in their inputs`);
    const cut = await page.$$eval('main input.num', (inputs) => inputs
      .filter((i) => i.scrollWidth > i.clientWidth)
      .map((i) => `${i.closest('[data-grid]')?.dataset.grid ?? i.dataset.field}: "${i.value}" needs ${i.scrollWidth} px, shows ${i.clientWidth}`));
    assert.deepEqual(cut, [], `${width} px: inputs whose value is cut`);
    // Typed, a long value widens its input as it grows, and a short one gives the room back.
    const typed = page.locator('[data-grid="ex-k"] input[data-row="2"][data-col="3"]');
    const shows = () => typed.evaluate((i) => [i.scrollWidth, i.clientWidth]);
    const narrow = (await shows())[1];
    await typeInto(page, typed, '-0.000123456');
    const [need, wide] = await shows();
    assert.ok(need <= wide && wide > narrow, `${width} px: "-0.000123456" typed needs ${need} px, shows ${wide} (was ${narrow})`);
    await typeInto(page, typed, '0');
    assert.equal((await shows())[1], narrow, `${width} px: "0" typed after it: the input is as narrow as before`);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${width} px: the page scrolls sideways`);
    assertClean(problems, `long values at ${width} px`);
  }
  await context.close();
});

test('at 320 px and 390 px nothing sticks out of its section, but for the boxes that scroll', async () => {
  // One page, opened at the first width and then widened; its sections
  // rendered and its disclosures opened once.
  const widths = [320, 390];
  const { context, page, problems } = await open('', { width: widths[0], height: 844 });
  await renderEverySection(page);
  await page.$$eval('main details', (ds) => ds.forEach((d) => { d.open = true; }));
  for (const width of widths) {
    if (width !== widths[0]) await resizeTo(page, width, 844);
    await page.waitForTimeout(400); // laid out in the next frames
    const out = await page.$$eval('main > section', (sections) => sections.flatMap((s) => {
      const r = s.getBoundingClientRect();
      const cs = getComputedStyle(s);
      // The content box, with a few pixels to spare: a range input's margin
      // or a long word of code may reach into the padding, not past the card.
      const left = r.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft) - 3;
      const right = r.right - parseFloat(cs.borderRightWidth) - parseFloat(cs.paddingRight) + 3;
      // Boxes that scroll hold what is wider; in wrapped code, an inline box
      // also counts the spaces left hanging at the end of a line.
      const inside = '.grid-wrap, .heatmap-wrap, .bk-table-wrap, .formula, pre, .sr-only, .bk-sr';
      const outside = [...s.querySelectorAll('*')].filter((n) => {
        if (n.closest(inside) || getComputedStyle(n).position === 'absolute') return false;
        const b = n.getBoundingClientRect();
        return b.width > 0 && (b.left < left || b.right > right);
      });
      // Named by the outermost element that sticks out (its children go with it).
      return outside.filter((n) => !outside.includes(n.parentElement)).map((n) => {
        const b = n.getBoundingClientRect();
        return `${s.id} ${n.tagName.toLowerCase()}.${n.className} [${Math.round(b.left)}, ${Math.round(b.right)}] "${n.textContent.slice(0, 30)}"`;
      });
    }));
    assert.deepEqual(out, [], `${width} px: elements stick out of their section's box (viewport ${width} px)`);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${width} px: the page scrolls sideways`);
    assertClean(problems, `${width} px`);
  }
  await context.close();
});

// ---------------------------------------------------------------------------
// Mask conventions: the classic migration bug shows its heatmap
// ---------------------------------------------------------------------------

test('the default page shows no error; the migration bug shows its heatmap with the empty row marked and explained', async () => {
  const { context, page, problems } = await open();
  const errors = await page.$$eval('.core-error', (ns) => ns.filter((n) => !n.hidden && n.offsetParent !== null).map((n) => n.textContent));
  assert.deepEqual(errors, [], 'no error box on the default page');
  const misuse = page.locator('#conventions [data-slot="misuse"]');
  assert.equal(await misuse.locator('[data-heatmap="conv-misuse"]').count(), 1, 'the heatmap is shown');
  // Causal T = 4 read as blocked: query 4 may see no key; the others see the future only.
  const refused = await misuse.locator('.hm-cell.refused').evaluateAll((ns) => ns.map((n) => Number(n.dataset.row)));
  assert.deepEqual(refused, [3, 3, 3, 3], 'the row of query 4 is marked as refused');
  assert.match(await misuse.locator('.hm-rowhead.bad-row').textContent(), /query 4/);
  assert.match(await page.locator('#conventions [data-slot="misuse-note"]').textContent(), /query 4 .*no key/i, 'the page says why that row is refused');
  const row1 = await misuse.locator('.hm-cell[data-row="0"]').allTextContents();
  assert.deepEqual(row1, ['0', '0.333', '0.333', '0.333'], 'query 1 now reads only the future keys 2–4');
  assert.ok(await page.locator('#conventions .ramp-legend').count() >= 1, 'with the colour legend');
  assertClean(problems, 'default page');
  await context.close();
});

// ---------------------------------------------------------------------------
// 1-based numbering everywhere on the page
// ---------------------------------------------------------------------------

test('the page numbers from 1 everywhere, the core\'s messages included', async () => {
  const { context, page, problems } = await open();
  // Block the whole row labelled "query 2" of the custom mask.
  for (const j of [0, 1, 2]) await page.locator(`[data-mask="mask-custom"] button[data-row="1"][data-col="${j}"]`).click();
  const status = await page.locator('#masks [data-slot="custom-status"]').textContent();
  assert.match(status, /query 2\b/, `the message names the row the learner blocked: ${status}`);
  assert.doesNotMatch(status, /query 1\b|batch 0|head 0/, `no 0-based index: ${status}`);
  assert.doesNotMatch(status, /batch|head/, `the 3×3 example has no batch or head axis to name: ${status}`);
  // A sequence that starts with padding: its first query.
  await typeInto(page, page.locator('[data-grid="mask-tokens"] input[data-row="0"][data-col="0"]'), '0');
  const pad = await page.locator('#masks [data-slot="padding-status"]').textContent();
  assert.match(pad, /query 1\b/, pad);
  assert.doesNotMatch(pad, /query 0|batch 0|head 0/, pad);
  // The prose and the split/merge picture count from 1 too.
  await renderEverySection(page);
  const text = await page.locator('main').innerText();
  assert.doesNotMatch(text, /keys 0…/, 'prose says keys 1…i');
  const cells = (await page.locator('#shapes .pic-canvas').first().getAttribute('data-cells')).split(' ');
  assert.equal(cells[0], '1a', 'the first position of the picture is 1');
  assert.doesNotMatch(await page.locator('#shapes [data-out="shape-notes"]').textContent(), /positions 0/);
  assertClean(problems, '1-based');
  await context.close();
});

test('the split/merge picture names its own capped sizes, and its notes list heads in order', async () => {
  const { context, page, problems } = await open('#shape.h=8&shape.d=32&shape.t=3&shape.wrong=1');
  const title = await page.locator('#shapes .pic-title').first().textContent();
  // The table says C = 256 (8 × 32); the picture draws 4 heads of 4 channels.
  assert.doesNotMatch(title, /C = 16/, `the picture does not call its 16 channels the model's C: ${title}`);
  assert.match(title, /drawn small: 3 positions × 16 channels \(4 heads × 4\)/, title);
  const notes = await page.locator('#shapes [data-out="shape-notes"] li').allTextContents();
  for (const note of notes) {
    const heads = note.match(/belonging to heads? ([\d, ]+)/)[1].split(', ').map(Number);
    assert.deepEqual(heads, [...heads].sort((a, b) => a - b), `heads in order: ${note}`);
    const positions = note.match(/holds (positions?) ([\d, ]+)/);
    assert.equal(positions[1], positions[2].includes(',') ? 'positions' : 'position', `singular for one: ${note}`);
  }
  assert.ok(notes.some((n) => /position \d and/.test(n)), `a head holding one position says so: ${notes.join(' | ')}`);
  assertClean(problems, 'shapes picture');
  await context.close();
});

// ---------------------------------------------------------------------------
// Why scale: fixed, labelled axes
// ---------------------------------------------------------------------------

test('why-scale histograms keep their axes as d_k changes, and say what the axes are', async () => {
  const { context, page, problems } = await open();
  const slider = page.locator('input[data-field="scale-dk"]');
  /** Per chart: its tick labels, its axis labels, and the x extent of its non-empty bars (one "M x,y …Z" each in the bars' path). */
  const read = () => page.$$eval('#why-scale .hist svg', (svgs) => svgs.map((svg) => {
    const path = svg.querySelector('path.bar').getAttribute('d');
    const xs = [...path.matchAll(/M([\d.]+),/g)].map((m) => Number(m[1]));
    // The top of the plot: its upper gridline, which is the y axis's highest tick.
    const top = Math.min(...[...svg.querySelectorAll('line.gridline')].map((l) => Number(l.getAttribute('y1'))));
    return {
      tallest: Math.min(...[...path.matchAll(/V([\d.]+)H/g)].map((m) => Number(m[1]))), top,
      ticks: [...svg.querySelectorAll('.tick')].map((t) => t.textContent),
      labels: [...svg.querySelectorAll('.axis-label')].map((t) => t.textContent),
      spread: Math.max(...xs) - Math.min(...xs),
    };
  }));
  const at = {};
  for (const dk of [1, 2, 4, 64, 256]) {
    await slider.fill(String(dk));
    at[dk] = await read();
    // No bar is cut off by the top of its axis (at d_k = 1 a score is one product x·y, whose values crowd around 0).
    for (const k of [0, 1]) assert.ok(at[dk][k].tallest > at[dk][k].top, `d_k ${dk}, chart ${k + 1}: the tallest bar reaches y ${at[dk][k].tallest}, the top of the axis is at y ${at[dk][k].top}`);
  }
  for (const k of [0, 1]) {
    assert.deepEqual(at[4][k].ticks, at[256][k].ticks, `chart ${k + 1}: the same ticks at d_k 4 and 256`);
    assert.equal(at[4][k].labels.length, 2, `chart ${k + 1}: an x label and a y label`);
    assert.ok(at[4][k].ticks.length >= 5, `chart ${k + 1}: ticks on both axes (${at[4][k].ticks})`);
  }
  const [unscaled, scaled] = [0, 1];
  assert.ok(at[256][unscaled].spread > 3 * at[4][unscaled].spread, `the unscaled spread grows: ${at[4][unscaled].spread} → ${at[256][unscaled].spread}`);
  assert.ok(at[256][scaled].spread < 1.6 * at[4][scaled].spread, `the scaled spread stays put: ${at[4][scaled].spread} → ${at[256][scaled].spread}`);
  assertClean(problems, 'why-scale');
  await context.close();
});

// ---------------------------------------------------------------------------
// Self- versus cross-attention
// ---------------------------------------------------------------------------

test('self-attention: one length field, and the readout agrees with it', async () => {
  const { context, page, problems } = await open();
  await page.locator('[data-field="cross-mode"] input[value="self"]').check();
  await typeInto(page, page.locator('input[data-field="cross-tq"]'), '2');
  assert.equal(await page.locator('input[data-field="cross-tk"]').isVisible(), false, 'no T_k field in self-attention');
  const readout = await page.locator('#self-cross [data-slot="shapes"]').textContent();
  assert.doesNotMatch(readout, /\s[:.,]/, `no stray space before punctuation: ${readout}`);
  assert.match(readout, /T_k = 2\b/, `T_k follows the one length: ${readout}`);
  assert.doesNotMatch(readout, /T_k = 4/);
  await page.locator('[data-field="cross-mode"] input[value="cross"]').check();
  assert.equal(await page.locator('input[data-field="cross-tk"]').isVisible(), true, 'T_k comes back for cross-attention');
  assertClean(problems, 'self-cross');
  await context.close();
});

test('at 320 px the "Where Q, K and V come from" table fits its box without scrolling, and is still a table with its headers', async () => {
  const { context, page, problems } = await open('#self-cross', { width: 320, height: 700 });
  await renderEverySection(page);
  await page.waitForTimeout(200); // laid out in the next frames
  const table = page.locator('#self-cross table.compare');
  await table.scrollIntoViewIfNeeded();
  const box = await table.evaluate((t) => {
    const wrap = t.closest('.grid-wrap') ?? t.parentElement;
    return { scrollWidth: wrap.scrollWidth, clientWidth: wrap.clientWidth, overflows: wrap.hasAttribute('data-overflows') };
  });
  assert.ok(box.scrollWidth <= box.clientWidth, `the table scrolls ${box.scrollWidth - box.clientWidth} px sideways in its box (${box.scrollWidth} > ${box.clientWidth})`);
  assert.equal(box.overflows, false, 'its box does not say "Scroll sideways for more"');
  // Still a table to a screen reader: its caption names it, the column and row headers stay.
  const snap = await page.locator('#self-cross .grid-wrap').first().ariaSnapshot();
  assert.match(snap, /table "Where Q, K and V come from"/, snap);
  assert.match(snap, /columnheader "Queries from"/, snap);
  assert.match(snap, /columnheader "Keys and values from"/, snap);
  assert.match(snap, /rowheader "Cross-attention"/, snap);
  assert.match(snap, /cell "the source \(encoder\) states"/, snap);
  assertClean(problems, 'self-cross table at 320 px');
  await context.close();
});

test('cross-attention: a padding position is named pad on the maps\' axes, not given a word, and follows its switch', async () => {
  const { context, page, problems } = await open('#view=self-cross');
  await page.locator('[data-field="cross-mode"] input[value="cross"]').check();
  const heads = () => page.$$eval('[data-heatmap="cross-weights-h0"] .hm-head', (ns) => ns.map((n) => n.textContent));
  const pads = () => page.$$eval('[data-mask="cross-pad"] button', (ns) => ns.map((n) => n.getAttribute('aria-pressed') === 'true'));
  const check = async (when) => {
    const [names, padded] = [await heads(), await pads()];
    padded.forEach((pad, j) => {
      if (pad) assert.equal(names[j], `s${j + 1} pad`, `${when}: source position ${j + 1} is padding; its column is headed "${names[j]}" (all: ${names.join(' | ')})`);
      else assert.doesNotMatch(names[j], /pad/, `${when}: source position ${j + 1} is a token; its column is headed "${names[j]}"`);
    });
    return padded.filter(Boolean).length;
  };
  assert.ok(await check('at the start') > 0, 'the starting example has padding');
  await page.locator('[data-mask="cross-pad"] button').last().click();
  await check('after switching the last position to a token');
  assertClean(problems, 'self-cross');
  await context.close();
});

test('cross-attention: a longer T_k adds real tokens before the padding, which stays at the end; the learner\'s switches are kept', async () => {
  const { context, page, problems } = await open('#view=self-cross');
  const tk = page.locator('input[data-field="cross-tk"]');
  const sw = (j) => page.locator(`[data-mask="cross-pad"] button[data-col="${j}"]`);
  // The switches as text, p for padding and t for a real token ("tttttpp").
  const shown = () => page.$$eval('[data-mask="cross-pad"] button', (ns) => ns.map((n) => (n.getAttribute('aria-pressed') === 'true' ? 'p' : 't')).join(''));
  const heads = () => page.$$eval('[data-heatmap="cross-weights-h0"] .hm-head:not(.hm-rowhead)', (ns) => ns.map((n) => n.textContent).join(' | '));
  const expect = async (want, when) => {
    const got = await shown();
    assert.equal(got, want, `${when}: the switches read ${got} (t token, p padding), ${want} expected; the map's keys read ${await heads()}`);
  };
  await expect('tttttpp', 'at the start');
  await typeInto(page, tk, '10');
  await expect('ttttttttpp', 'T_k 7 → 10 (typed through 1)');
  assert.match(await heads(), /s8 in \| s9 pad \| s10 pad$/, 'the map\'s last keys are the two padding positions');
  // The learner's own choice: s2 is padding. Typed down to 4 and back to 10, it stays.
  await sw(1).click();
  await typeInto(page, tk, '4');
  await expect('tptt', 'T_k 10 → 4 cuts positions off the end');
  await typeInto(page, tk, '10');
  await expect('tpttttttpp', 'T_k 4 → 10 (typed through 1) brings back the positions cut off');
  // A switch clicked at the shorter size: T_k grows with real tokens before its trailing padding.
  await typeInto(page, tk, '4');
  await sw(3).click();
  await expect('tptp', 'T_k 4 with s4 made padding');
  await typeInto(page, tk, '6');
  await expect('tptttp', 'T_k 4 → 6: s5 and s6 are real tokens before the trailing padding');
  assertClean(problems, 'T_k and the padding switches');
  await context.close();
});

test('cross-attention: a padding switch keeps one name, which says what pressed means and holds the text it shows', async () => {
  const { context, page, problems } = await open('#view=self-cross');
  const s5 = page.locator('[data-mask="cross-pad"] button[data-col="4"]');
  const seen = () => s5.evaluate((n) => ({ name: n.getAttribute('aria-label'), pressed: n.getAttribute('aria-pressed'), text: n.textContent }));
  assert.deepEqual(await seen(), { name: 's5 pad', pressed: 'false', text: 's5' }, 'a real token: "s5 pad", not pressed');
  assert.match(await s5.ariaSnapshot(), /^- button "s5 pad"(: s5)?$/, 'the name a screen reader reads, not pressed');
  await s5.click();
  assert.deepEqual(await seen(), { name: 's5 pad', pressed: 'true', text: 's5 pad' }, 'switched to padding: the name stays, pressed says so');
  assert.match(await s5.ariaSnapshot(), /^- button "s5 pad"( \[pressed\])?(: s5 pad)?$/, 'the name a screen reader reads, pressed');
  assert.equal(await page.getByRole('button', { name: 's6 pad', pressed: true }).count(), 1, 's6 starts as padding');
  assert.equal(await page.getByRole('button', { name: 's5 pad', pressed: true }).count(), 1, 's5 is now padding');
  // Label in name: every text a switch shows is part of its name (speech input).
  await runAxe(page, 'cross-attention padding switches', { include: '#self-cross [data-mask="cross-pad"]' });
  assertClean(problems, 'padding switch names');
  await context.close();
});

test('masks: a token-id example the core refuses is flagged right under the token ids, with a button that leads to the core\'s message', async () => {
  // One page, opened at the first width and then narrowed: each width ends
  // with the example valid again (12), as the page opened.
  const widths = [1280, 390];
  const { context, page, problems } = await open('#view=masks', { width: widths[0], height: 900 });
  for (const width of widths) {
    if (width !== widths[0]) await resizeTo(page, width, 900);
    const cell = page.locator('[data-grid="mask-tokens"] input[data-row="0"][data-col="0"]');
    const note = page.locator('#masks [data-out="mask-refused"]');
    assert.equal(await note.textContent(), '', `${width} px: no note while the example is valid`);
    await typeInto(page, cell, '0');
    await page.waitForFunction(() => document.querySelector('#masks [data-out="mask-refused"]').textContent !== '', null, { timeout: 30000 }).catch(() => {});
    const text = await note.textContent();
    assert.equal(text, 'The core refused this example: query 1 of sequence 1 has no key it may see. See the core’s message below.', `${width} px: the note`);
    // Right under the grid: its top within a line of the grid's last row, inside the page's width.
    const gap = await page.evaluate(() => {
      const grid = document.querySelector('[data-grid="mask-tokens"]').getBoundingClientRect();
      const n = document.querySelector('#masks [data-out="mask-refused"]').getBoundingClientRect();
      return { below: Math.round(n.top - grid.bottom), left: Math.round(n.left - grid.left), right: Math.round(n.right), page: document.documentElement.clientWidth };
    });
    assert.ok(gap.below >= 0 && gap.below < 30 && Math.abs(gap.left) < 30 && gap.right <= gap.page, `${width} px: the note is not right under the grid: ${JSON.stringify(gap)}`);
    // The button leads to the core's message, and the page's link (its state)
    // stays. It is no link: opened in a new tab, "#status-N" would lead nowhere.
    assert.equal(await note.locator('a').count(), 0, `${width} px: the note holds no link to open elsewhere`);
    const link = note.getByRole('button', { name: 'See the core’s message below' });
    const target = await link.getAttribute('data-target');
    // In a high-contrast theme it is inked as the theme's links are, not as plain text.
    await page.emulateMedia({ forcedColors: 'active' });
    const inks = await link.evaluate((n) => {
      const a = Object.assign(document.createElement('a'), { href: '#masks', textContent: 'a link' });
      n.after(a);
      const both = { button: getComputedStyle(n).color, link: getComputedStyle(a).color, text: getComputedStyle(n.parentNode).color };
      a.remove();
      return both;
    });
    assert.ok(inks.button === inks.link && inks.button !== inks.text, `${width} px, forced colours: the button's ink ${JSON.stringify(inks)}`);
    await page.emulateMedia({ forcedColors: 'none' });
    assert.match(await page.locator(`[id="${target}"]`).textContent(), /^Query row has no allowed key \(sequence 1, query 1\)/, `${width} px: the link's target is the core's message`);
    await link.click();
    await page.waitForFunction((id) => { const r = document.getElementById(id).getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }, target, { timeout: 30000 })
      .catch(() => assert.fail(`${width} px: the core's message is not in view after the link`));
    assert.equal(await page.evaluate(() => document.activeElement.id), target, `${width} px: the focus is on the core's message`);
    await waitForState(page, (id) => location.hash.includes('mask.tokens=0,') && !location.hash.includes(id), target,
      async () => `${width} px: the address holds the state, not the link's target: ${await page.evaluate(() => location.hash)}`);
    await typeInto(page, cell, '12');
    await page.waitForFunction(() => document.querySelector('#masks [data-out="mask-refused"]').textContent === '', null, { timeout: 30000 }).catch(() => {});
    assert.equal(await note.textContent(), '', `${width} px: the note is gone once the example is valid again`);
    assertClean(problems, `refused token ids at ${width} px`);
  }
  await context.close();
});

// ---------------------------------------------------------------------------
// Invalid text: the message says why, on screen and to a screen reader
// ---------------------------------------------------------------------------

/**
 * The message node of `input` as it stands (the .cell-msg beside a field,
 * or under a grid for one of its cells): its text, whether it is drawn, and
 * the live region it sits in, if any.
 */
function cellMessage(input) {
  return input.evaluate((node) => {
    const msg = node.closest('.grid-wrap')?.querySelector(`.grid-msgs .cell-msg[data-msg-for="${node.dataset.row},${node.dataset.col}"]`)
      ?? node.parentElement.querySelector('.cell-msg');
    const live = msg.closest('[aria-live], [role="status"], [role="alert"], [role="log"]');
    return {
      id: msg.id,
      text: msg.textContent,
      title: msg.title,
      drawn: getComputedStyle(msg).display !== 'none' && !msg.closest('[hidden]'),
      live: live ? `${live.tagName.toLowerCase()} role=${live.getAttribute('role')} aria-live=${live.getAttribute('aria-live')}` : null,
      describedBy: (node.getAttribute('aria-describedby') || '').split(/\s+/),
    };
  });
}

test('an invalid number names the allowed range in its visible message, which a screen reader hears', async () => {
  const { context, page, problems } = await open('#view=shapes', { width: 390, height: 844 });
  const t = page.locator('input[data-field="shape-t"]');
  // The live region is in the accessibility tree before anything is written to it,
  // or the first message would not be announced.
  const idle = await cellMessage(t);
  assert.ok(idle.live && idle.drawn && idle.text === '',
    `before an edit: an empty live region, drawn (so in the accessibility tree); seen ${JSON.stringify(idle)}`);

  const kept = await t.inputValue();
  await typeInto(page, t, '0');
  const bad = await cellMessage(t);
  assert.equal(await t.getAttribute('aria-invalid'), 'true');
  assert.match(bad.text, new RegExp(`^Out of range \\(1 to \\d+\\): still ${kept}$`), `the visible text names the range; seen ${JSON.stringify(bad)}`);
  assert.equal(bad.id, idle.id, 'the message is written into the node that was there before');
  assert.ok(bad.live, `the message sits in a live region; seen ${JSON.stringify(bad)}`);
  assert.ok(bad.describedBy.includes(bad.id), `the input is described by the message; seen ${JSON.stringify(bad)}`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `at 390 px the message widens the page by ${overflow} px`);
  await runAxe(page, 'shapes with an invalid T', { include: '#shapes' });

  // A grid cell says why too.
  const cell = page.locator('[data-grid="mask-tokens"] input[data-row="0"][data-col="0"]');
  await typeInto(page, cell, '2.5');
  const grid = await cellMessage(cell);
  assert.match(grid.text, /whole number.*: still \d+/i, `a grid cell's message says why; seen ${JSON.stringify(grid)}`);
  assert.ok(grid.live, `a grid cell's message sits in a live region; seen ${JSON.stringify(grid)}`);

  // Valid edits over a valid value never touch the message (nothing to announce, nothing to redraw).
  await typeInto(page, t, '4');
  assert.deepEqual(await cellMessage(t).then((m) => [m.text, m.drawn]), ['', true], 'a valid edit clears the message');
  const writes = await t.evaluate(async (node) => {
    const msg = node.parentElement.querySelector('.cell-msg');
    let count = 0;
    const observer = new MutationObserver((records) => { count += records.length; });
    observer.observe(msg, { attributes: true, childList: true, characterData: true, subtree: true });
    for (const text of ['5', '6', '7']) {
      node.value = text;
      node.dispatchEvent(new Event('input', { bubbles: true }));
    }
    await Promise.resolve();
    observer.disconnect();
    return count + observer.takeRecords().length;
  });
  assert.equal(writes, 0, `valid edits wrote ${writes} changes to the empty message`);
  assertClean(problems, 'invalid-number message');
  await context.close();
});

test('an invalid grid cell is named in a message under the grid, and its row keeps its place', async () => {
  // One page, opened at the first width and then narrowed: each width types
  // its own valid value before the invalid one.
  const widths = [1280, 390];
  const { context, page, problems } = await open('#view=three-by-three', { width: widths[0], height: 900 });
  for (const width of widths) {
    if (width !== widths[0]) await resizeTo(page, width, 900);
    const cell = page.locator('[data-grid="ex-q"] input[data-row="0"][data-col="1"]');
    // Where the row's heading, its cells and the next row sit: an error must move none of them.
    const places = () => page.locator('[data-grid="ex-q"]').evaluate((table) => [...table.querySelectorAll('tbody th, tbody input')]
      .map((n) => { const r = n.getBoundingClientRect(); return `${n.textContent || n.dataset.row + ',' + n.dataset.col} ${Math.round(r.left)},${Math.round(r.top)} ${Math.round(r.width)}×${Math.round(r.height)}`; }));
    // A cell is as wide as its text: the places are taken with a valid value
    // as long as the invalid one, so that only the message could move them.
    await typeInto(page, cell, '1000000');
    const before = await places();
    await page.waitForTimeout(TYPING_PAUSE + 100); // 1000000 has stood: it is the learner's value
    await typeInto(page, cell, '2000000');
    const msg = await cellMessage(cell);
    assert.match(msg.text, /^query 1, d2: Out of range \(-1e6 to 1e6\): still 1e6$/, `${width} px: the message names the cell and the value typed before (not 200000, typed on the way); seen ${JSON.stringify(msg)}`);
    assert.ok(msg.live && msg.describedBy.includes(msg.id), `${width} px: a live region that describes the input; seen ${JSON.stringify(msg)}`);
    const after = await places();
    const moved = before.map((b, i) => (b === after[i] ? null : `${b} → ${after[i]}`)).filter(Boolean);
    assert.deepEqual(moved, [], `${width} px: the message moved parts of the grid`);
    const shown = await page.locator(`#${msg.id}`).evaluate((n) => { const r = n.getBoundingClientRect(); const box = n.closest('.grid-wrap').getBoundingClientRect(); return r.width > 0 && r.left >= box.left - 1 && r.right <= box.right + 1; });
    assert.ok(shown, `${width} px: the message is drawn inside the grid's box`);
    await typeInto(page, cell, '2');
    assert.equal((await cellMessage(cell)).text, '', `${width} px: a valid value clears the message`);
    assertClean(problems, `invalid grid cell at ${width} px`);
  }
  await context.close();
});

test('an invalid text puts back the value the learner had, not a prefix typed on the way; a size typed through 1 keeps the matrix', async () => {
  const { context, page, problems } = await open('#view=one-query');
  const q = page.locator('[data-grid="one-q"] input[data-row="0"][data-col="0"]');
  const output = () => page.locator('[data-out="one-output"]').textContent();
  await typeInto(page, q, '1e6');
  await page.waitForTimeout(TYPING_PAUSE + 100);
  await waitForState(page, () => /one\.q=1000000,/.test(location.hash), null, async () => `the link holds 1e6: ${await page.evaluate(() => location.hash)}`);
  const kept = { output: await output(), hash: await page.evaluate(() => location.hash) };
  // 1e7 passes through a valid 1 on the way, then is out of range.
  await typeInto(page, q, '1e7');
  const msg = await cellMessage(q);
  assert.match(msg.text, /Out of range \(-1e6 to 1e6\): still 1e6$/, `the message names the value the learner had; seen ${JSON.stringify(msg)}`);
  assert.equal(await output(), kept.output, 'the output is that of 1e6 again, not of the 1 typed on the way');
  // The page writes its hash a moment after a change (lesson-page.js).
  await waitForState(page, (h) => location.hash === h, kept.hash,
    async () => `the link holds 1e6 again: ${kept.hash} wanted, ${await page.evaluate(() => location.hash)} seen`);
  await page.keyboard.press('Escape');
  assert.match(await q.inputValue(), /^1e6$/, 'Escape shows the value kept');

  // T_k typed as 10 passes through 1: the source rows and padding switches the learner set come back
  // (the new positions are real tokens, before the padding at the end).
  const tk = page.locator('input[data-field="cross-tk"]');
  const s5 = () => page.locator('[data-grid="cross-src"] input[data-row="4"][data-col="0"]');
  await typeInto(page, s5(), '9');
  const padded = () => page.locator('#self-cross .pad-row .mask-cell').evaluateAll((ns) => ns.map((n) => n.classList.contains('blocked')));
  await page.locator('#self-cross .pad-row .mask-cell[data-col="1"]').click();
  const padsBefore = await padded(); // s2 made padding; s6 and s7 padding from the start
  await typeInto(page, tk, '10');
  assert.equal(await s5().inputValue(), '9', 'source row 5 kept what was typed in it');
  assert.deepEqual(await padded(), [...padsBefore.slice(0, 5), false, false, false, true, true], 'the switch the learner set is kept, and the padding is still at the end');
  assert.equal((await padded()).length, 10);
  await page.waitForTimeout(TYPING_PAUSE + 100);
  await typeInto(page, tk, '11');
  assert.match((await cellMessage(tk)).text, /still 10$/, 'an out-of-range T_k keeps 10');
  assert.equal((await padded()).length, 10, 'ten source positions shown');
  assert.equal(await s5().inputValue(), '9', 'source row 5 still holds 9');
  assertClean(problems, 'settled values');
  await context.close();
});

// ---------------------------------------------------------------------------
// Multi-head: the learner's words, and stale maps marked
// ---------------------------------------------------------------------------

test('multi-head errors use the field names and the stale maps are marked as the last valid result', async () => {
  const { context, page, problems } = await open();
  await typeInto(page, page.locator('input[data-field="mha-heads"]'), '5');
  const status = await page.locator('#multi-head [data-slot="status"]').textContent();
  assert.match(status, /d_model = 32/, status);
  assert.match(status, /H = 5/, status);
  assert.doesNotMatch(status, /dModel|numHeads|HEADS_DO_NOT_DIVIDE/, `no API names: ${status}`);
  for (const name of ['weights', 'summary']) {
    assert.equal(await page.locator(`#multi-head [data-slot="${name}"]`).evaluate((n) => n.classList.contains('stale')), true, `${name} marked stale`);
  }
  await typeInto(page, page.locator('input[data-field="mha-heads"]'), '8');
  assert.equal(await page.locator('#multi-head [data-slot="weights"]').evaluate((n) => n.classList.contains('stale')), false, 'fresh again');
  assertClean(problems, 'multi-head');
  await context.close();
});

// ---------------------------------------------------------------------------
// The widget's attributes
// ---------------------------------------------------------------------------

test('two widgets of one course page showing the same map that scrolls sideways stay axe-clean (no two landmarks of one name)', async () => {
  const { context, page, problems } = await suite.open('course-demo.html', { viewport: { width: 390, height: 844 }, ready: false });
  await page.evaluate(async () => {
    await import('/attention-lab.js');
    // A course page of its own: a heading, and the same widget twice.
    // (a narrow column: the mask, which has no control of its own, scrolls and becomes a named tab stop)
    document.body.replaceChildren(Object.assign(document.createElement('main'), { innerHTML: '<h1>A course page</h1>' }));
    document.querySelector('main').style.maxWidth = '300px';
    for (let n = 0; n < 2; n++) {
      const el = document.createElement('attention-lab');
      el.setAttribute('preset', 'causal');
      el.setAttribute('seq-len', '8');
      document.querySelector('main').append(el);
      await el.ready;
    }
  });
  // The boxes that scroll are marked once the page is idle.
  await page.waitForFunction(() => [...document.querySelectorAll('attention-lab')].every((el) => el.shadowRoot.querySelector('[data-overflows][tabindex="0"][aria-label]')), null, { timeout: 10000 })
    .catch(() => assert.fail('no box of either widget was marked as scrolling sideways at 390 px'));
  await runAxe(page, 'two causal widgets at 390 px');
  assertClean(problems, 'two widgets');
  await context.close();
});

test('widget: heads alone picks a d_model that splits, d-model is an attribute, unknown show values warn, padding is padding only', async () => {
  const { context, page, problems } = await open();
  await page.evaluate(() => import('/attention-lab.js'));
  const add = (id, attrs) => page.evaluate(async ({ id, attrs }) => {
    const el = document.createElement('attention-lab');
    el.id = id;
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    document.body.append(el);
    await el.ready;
  }, { id, attrs });
  await add('h3', { preset: 'multi-head', heads: '3' });
  const h3 = page.locator('#h3');
  assert.equal(await h3.locator('.head-map').count(), 3, 'heads="3" shows three maps');
  const dModel = Number(await h3.locator('input[data-field="mha-dmodel"]').inputValue());
  assert.equal(dModel % 3, 0, `d_model ${dModel} splits into 3 heads`);
  assert.equal(await h3.locator('[data-slot="status"] .core-error:not([hidden])').count(), 0, 'no error');

  await add('d24', { preset: 'multi-head', heads: '4', 'd-model': '24' });
  assert.equal(await page.locator('#d24 input[data-field="mha-dmodel"]').inputValue(), '24');
  assert.equal(await page.locator('#d24').evaluate((el) => el.state), 'mha.dmodel=24');

  await add('show', { preset: 'three-by-three', show: 'weights wieghts' });
  assert.match(await page.locator('#show .al-status').textContent(), /show=.*"wieghts"/, 'an unknown show value is named');

  await add('pad', { preset: 'padding' });
  // Sequence 1 is 12 91 33 0 0 with padding id 0: every query reads keys 1–3, none of the future is hidden.
  const pad = page.locator('#pad');
  const row1 = await pad.locator('[data-heatmap="mask-padding-weights-0"] .hm-cell[data-row="0"]').allTextContents();
  assert.deepEqual(row1, ['0.333', '0.333', '0.333', '0', '0'], 'query 1 reads the three real tokens: no causal mask');
  assertClean(problems, 'widget attributes');
  await context.close();
});
