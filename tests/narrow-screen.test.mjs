// The lesson page on the narrowest phones (360 px and 320 px wide) and beside
// them: the number grids, maps and formula fit their boxes, messages are read
// on one or two lines, a wide table keeps its row names in view, and code
// breaks between words. No width lets the page scroll sideways. With a
// reader's own text spacing, headings, contents numbers and chart labels keep
// apart; in a dark high-contrast theme a focused cell's ring shows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, typeInto, renderEverySection, settled, waitForState, resizeTo } from './helpers/browser.mjs';

const suite = browserSuite();
const HEIGHT = 844;
const open = (hash, width) => suite.open(hash, { viewport: { width, height: HEIGHT } });

/** What overflows among the boxes `selector` finds: "name: needs N px, has M" for each. */
function overflowing(page, selector) {
  return page.$$eval(selector, (boxes) => boxes
    .filter((b) => b.scrollWidth > b.clientWidth)
    .map((b) => `${b.closest('main > section').id} ${b.querySelector('caption')?.textContent ?? b.querySelector('[data-heatmap]')?.dataset.heatmap ?? b.className}: needs ${b.scrollWidth} px, has ${b.clientWidth}`));
}

test('at 360 px the number grids and the head maps fit their boxes, five-digit token ids too', async () => {
  const ids = Array(5).fill(99999).join(',');
  const { context, page, problems } = await open(`#mask.tokens=${ids};${ids}`, 360);
  await renderEverySection(page);
  await settled(page);
  const grids = ['ex-q', 'pt-q', 'kv-x', 'mask-tokens'].map((g) => `.grid-wrap:has([data-grid="${g}"])`);
  assert.equal(await page.locator(grids.join(', ')).count(), 4, 'the four grids are on the page');
  assert.deepEqual(await overflowing(page, grids.join(', ')), [], 'grids wider than their box at 360 px');
  assert.ok(await page.locator('#self-cross .heatmap-wrap').count() > 0, 'the head maps are on the page');
  assert.deepEqual(await overflowing(page, '#self-cross .heatmap-wrap'), [], 'maps wider than their box at 360 px');
  assertClean(problems, 'grids at 360 px');
  await context.close();
});

test('the attention formula fits at 360 px, and at 320 px it fits or says that it scrolls', async () => {
  const WIDTHS = [360, 320];
  const { context, page, problems } = await open('#view=one-query', WIDTHS[0]);
  const formula = page.locator('#one-query .formula');
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, HEIGHT);
    await settled(page);
    const [need, has] = await formula.evaluate((f) => [f.scrollWidth, f.clientWidth]);
    if (width === 360) assert.ok(need <= has, `360 px: the formula needs ${need} px, has ${has}`);
    else if (need > has) {
      await waitForState(page, () => document.querySelector('#one-query .formula').dataset.overflows === '1', null,
        `320 px: the formula needs ${need} px, has ${has}, and is not marked as scrolling`);
    }
    assertClean(problems, `formula at ${width} px`);
  }
  await context.close();
});

test('a field\'s message takes the row\'s width: two lines at most, at 1280, 390 and 360 px', async () => {
  const WIDTHS = [1280, 390, 360];
  const { context, page, problems } = await open('#view=watch-learn', WIDTHS[0]);
  // The message stays while the value does: typed once, read at each width.
  const input = page.getByLabel('Learning rate', { exact: true });
  await typeInto(page, input, '1e9');
  const msg = page.locator('#watch-learn .field .cell-msg').filter({ hasText: 'Out of range' });
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, HEIGHT);
    await msg.waitFor();
    const { lines, text } = await msg.evaluate((m) => ({ lines: Math.round(m.getBoundingClientRect().height / parseFloat(getComputedStyle(m).lineHeight)), text: m.textContent }));
    assert.ok(lines <= 2, `${width} px: "${text}" takes ${lines} lines`);
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), width, `${width} px: the page scrolls sideways`);
    assertClean(problems, `message at ${width} px`);
  }
  await context.close();
});

test('at 390 px the scores by tile keep their row name in view when scrolled to the right', async () => {
  const { context, page, problems } = await open('#view=online-softmax', 390);
  for (const values of ['flash-scores', 'flash-trace']) {
    const table = page.locator(`table[data-values="${values}"]`);
    await table.waitFor();
    const seen = await table.evaluate((t) => {
      const box = t.closest('.grid-wrap');
      box.scrollLeft = box.scrollWidth;
      const b = box.getBoundingClientRect();
      return [...t.querySelectorAll('tbody th')].map((th) => {
        const r = th.getBoundingClientRect();
        return { name: th.textContent, left: r.left - b.left, background: getComputedStyle(th).backgroundColor, scrolled: box.scrollLeft };
      });
    });
    // The scores are wider than the screen; the trace is when a step's accumulator is long.
    if (values === 'flash-scores') assert.ok(seen.length > 0 && seen[0].scrolled > 0, `${values}: the table scrolls at 390 px`);
    for (const s of seen) {
      assert.ok(Math.abs(s.left) <= 1, `${values}: row "${s.name}" is ${s.left} px from the box's left edge, scrolled by ${s.scrolled}`);
      assert.match(s.background, /^rgb\(/, `${values}: row "${s.name}" has an opaque background (${s.background}): the numbers pass under it`);
    }
  }
  assertClean(problems, 'online softmax at 390 px');
  await context.close();
});

test('a conventions panel\'s code breaks only between words, at 1280, 390 and 320 px', async () => {
  const WIDTHS = [1280, 390, 320];
  const { context, page, problems } = await open('#view=conventions&conv.t=2', WIDTHS[0]);
  const code = page.locator('#conventions .conv-panel code').first();
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, HEIGHT);
    await code.waitFor();
    // The characters each line starts with: a new line starts after a space.
    const breaks = await code.evaluate((c) => {
      const text = c.firstChild;
      const range = document.createRange();
      const starts = [];
      let top = null;
      for (let i = 0; i < text.length; i++) {
        range.setStart(text, i); range.setEnd(text, i + 1);
        const t = Math.round(range.getBoundingClientRect().top);
        if (top !== null && t > top) starts.push({ at: i, before: text.data.slice(0, i) });
        top = t;
      }
      return starts;
    });
    const mid = breaks.filter((b) => !/\s$/.test(b.before));
    assert.deepEqual(mid.map((b) => `a line ends with "${b.before.slice(-8)}"`), [], `${width} px: the code breaks inside a word`);
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), width, `${width} px: the page scrolls sideways`);
    assertClean(problems, `conventions at ${width} px`);
  }
  await context.close();
});

test('no section widens the page at 320, 360, 390 and 1280 px', async () => {
  const WIDTHS = [320, 360, 390, 1280];
  const { context, page, problems } = await open('#conv.t=8', WIDTHS[0]);
  await renderEverySection(page);
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, HEIGHT);
    await settled(page);
    const wider = await page.$$eval('main > section', (sections) => sections
      .filter((s) => s.scrollWidth > s.clientWidth || s.getBoundingClientRect().right > window.innerWidth)
      .map((s) => `${s.id}: ${s.scrollWidth} px in ${s.clientWidth}`));
    assert.deepEqual(wider, [], `${width} px: sections wider than the screen`);
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), width, `${width} px: the page scrolls sideways`);
    assertClean(problems, `the page at ${width} px`);
  }
  await context.close();
});

/** A reader's own text spacing (WCAG 1.4.12), as a bookmarklet would set it. */
const TEXT_SPACING = '* { line-height: 1.5 !important; letter-spacing: 0.12em !important; word-spacing: 0.16em !important; } p { margin-bottom: 2em !important; }';

test('with a reader\'s text spacing, a mask grid\'s column headings never run into each other, and the page never widens, at 1280, 390 and 320 px', async () => {
  const WIDTHS = [1280, 390, 320];
  const { context, page, problems } = await open('#view=masks', WIDTHS[0]);
  await page.addStyleTag({ content: TEXT_SPACING });
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, HEIGHT);
    await page.locator('#masks .maskgrid').first().waitFor();
    const touching = await page.$$eval('#masks .maskgrid', (grids) => grids.flatMap((grid) => {
      const texts = [...grid.querySelectorAll('.hm-head:not(.hm-rowhead)')].map((head) => {
        const r = document.createRange();
        r.selectNodeContents(head);
        return { text: head.textContent, box: r.getBoundingClientRect() };
      });
      return texts.slice(1).flatMap((b, k) => {
        const a = texts[k];
        const apart = b.box.left - a.box.right;
        const sameLine = a.box.bottom > b.box.top && b.box.bottom > a.box.top;
        return sameLine && apart < 1 ? [`"${a.text}" and "${b.text}": ${apart.toFixed(1)} px apart`] : [];
      });
    }));
    assert.deepEqual(touching, [], `${width} px: mask grid headings that touch`);
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), width, `${width} px: the page scrolls sideways`);
    assertClean(problems, `mask grid headings at ${width} px`);
  }
  await context.close();
});

test('with a reader\'s text spacing at 1280 px, a two-digit contents number stands apart from its title', async () => {
  const { context, page, problems } = await open('', 1280);
  await page.addStyleTag({ content: TEXT_SPACING });
  const gaps = await page.$$eval('.toc li', (items) => items.filter((li) => li.querySelector('.toc-num')?.textContent.trim().length >= 2).map((li) => {
    const r = document.createRange();
    r.selectNodeContents(li.querySelector('.toc-num'));
    const num = r.getBoundingClientRect();
    r.selectNodeContents(li.querySelector('a'));
    return { item: li.textContent.trim(), gap: r.getClientRects()[0].left - num.right };
  }));
  assert.ok(gaps.length > 0, 'the contents have two-digit numbers');
  for (const { item, gap } of gaps) assert.ok(gap >= 4, `"${item}": its number is ${gap.toFixed(1)} px from its title`);
  assertClean(problems, 'contents with text spacing');
  await context.close();
});

test('with a reader\'s text spacing, the why-scale charts\' labels stay inside their chart, at 1280 and 390 px', async () => {
  const WIDTHS = [1280, 390];
  const { context, page, problems } = await open('#view=why-scale', WIDTHS[0]);
  await page.addStyleTag({ content: TEXT_SPACING });
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, HEIGHT);
    await page.locator('#why-scale svg.chart text.tick').first().waitFor();
    const cut = await page.$$eval('#why-scale svg.chart', (svgs) => svgs.flatMap((svg) => {
      const b = svg.getBoundingClientRect();
      return [...svg.querySelectorAll('text')].flatMap((t) => {
        const r = t.getBoundingClientRect();
        const out = Math.max(b.left - r.left, r.right - b.right);
        return out > 0 ? [`"${t.textContent}": ${out.toFixed(1)} px outside`] : [];
      });
    }));
    assert.deepEqual(cut, [], `${width} px: chart labels cut at the chart's edge`);
    assertClean(problems, `why-scale chart at ${width} px`);
  }
  await context.close();
});

test('in a dark high-contrast theme, a focused weight cell and a focused mask button are ringed in a colour that shows on the page', async () => {
  const cases = [['#view=three-by-three', '#three-by-three .hm-cell[tabindex="0"]'], ['#view=masks', '#masks button.mask-cell']];
  for (const [hash, selector] of cases) {
    const { context, page, problems } = await open(hash, 1280);
    await page.emulateMedia({ forcedColors: 'active', colorScheme: 'dark' });
    const target = page.locator(selector).first();
    await target.focus();
    await page.keyboard.press('ArrowRight'); // a keyboard user: the ring shows
    const seen = await page.evaluate(() => {
      const n = document.activeElement;
      const s = getComputedStyle(n);
      const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
      const lum = (c) => {
        const [r, g, b] = rgb(c).map((v) => { const x = v / 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      const page = getComputedStyle(document.body).backgroundColor;
      const [x, y] = [lum(s.outlineColor), lum(page)].sort((p, q) => q - p);
      return { cls: n.className, visible: n.matches(':focus-visible'), width: s.outlineWidth, ring: s.outlineColor, page, contrast: Number(((x + 0.05) / (y + 0.05)).toFixed(2)) };
    });
    assert.ok(seen.visible && seen.width !== '0px', `${hash}: the focused ${seen.cls} has a focus ring (${seen.width})`);
    assert.ok(seen.contrast >= 3, `${hash}: the focused ${seen.cls}'s ring (${seen.ring}) contrasts ${seen.contrast}:1 with the page (${seen.page})`);
    assertClean(problems, `forced-colour focus on ${hash}`);
    await context.close();
  }
});
