// Touch targets: every control a learner points at or taps is at least
// 24 × 24 CSS px (WCAG 2.2, 2.5.8 Target Size (Minimum)), on the lesson page
// with every section rendered and every disclosure open, and in each of the
// <attention-lab> element's presets, at 1280 px and 390 px wide.
//
// Exceptions, each with its reason (WCAG 2.5.8's own exceptions):
//   - inline: a link inside a sentence or a block of text (its size is set
//     by the line of text it sits in);
//   - equivalent: a checkbox or radio button with a <label>: a click on the
//     label sets it too, so the label is the target that is measured (the
//     label's box holds the input's, or sits beside it);
//   - not a pointer target: an element with no box (display: none, a closed
//     disclosure's content) or a visually hidden one (1 × 1 px, for screen
//     readers only), which nobody can point at.
// A failure names each control too small by where it is (the section's id,
// or the widget's preset), a selector or its label, and its size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { browserSuite, assertClean, renderEverySection, resizeTo } from './helpers/browser.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const suite = browserSuite({ root: ROOT }); // repo root: the lesson is web/, the widget host tests/fixtures/
const MIN = 24;
const WIDTHS = [1280, 390];

/**
 * In the page: every control under each of `scopes` ([where, root element])
 * smaller than min × min, as "where selector "label" w×h". Shadow roots
 * (the widgets') are searched too.
 */
function smallTargets({ scopes, min }) {
  const CONTROLS = 'a[href], button, input:not([type="hidden"]), select, textarea, summary, '
    + '[role="button"], [role="link"], [role="checkbox"], [role="radio"], [role="switch"], [role="slider"], [role="tab"], '
    + '[tabindex]:not([tabindex="-1"])';
  const all = (root) => {
    const found = [...root.querySelectorAll(CONTROLS)];
    for (const el of [root, ...root.querySelectorAll('*')]) if (el.shadowRoot) found.push(...all(el.shadowRoot));
    return found;
  };
  // A link in a sentence: shown inline, in a block whose text is more than the link's.
  const inlineInText = (el) => {
    if (el.tagName !== 'A' || getComputedStyle(el).display !== 'inline') return false;
    let block = el.parentElement;
    while (block && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
    return !!block && block.textContent.trim().length > el.textContent.trim().length;
  };
  const describe = (el) => {
    const tag = el.tagName.toLowerCase();
    const attrs = ['data-field', 'data-mask', 'data-row', 'data-col', 'name', 'type', 'data-heatmap']
      .filter((a) => el.hasAttribute(a)).map((a) => `[${a}="${el.getAttribute(a)}"]`).join('');
    const cls = el.classList.length ? `.${[...el.classList].join('.')}` : '';
    const label = (el.getAttribute('aria-label') || el.labels?.[0]?.textContent || el.textContent || el.value || '').trim().replace(/\s+/g, ' ').slice(0, 40);
    return `${tag}${cls}${attrs} "${label}"`;
  };
  const unite = (a, b) => {
    const left = Math.min(a.left, b.left), top = Math.min(a.top, b.top);
    return { width: Math.max(a.right, b.right) - left, height: Math.max(a.bottom, b.bottom) - top };
  };
  const out = [];
  let measured = 0;
  for (const [where, root] of scopes.map(([w, sel]) => [w, document.querySelector(sel)])) {
    for (const el of all(root)) {
      const r = el.getBoundingClientRect();
      if (r.width <= 1 || r.height <= 1) continue; // no box, or visually hidden
      if (inlineInText(el)) continue;
      measured += 1;
      // A checkbox or radio button is set by a click on its label as well: the label is measured.
      const label = /^(checkbox|radio)$/.test(el.type) && el.labels?.[0];
      const box = label ? unite(r, label.getBoundingClientRect()) : r;
      if (box.width + 0.01 < min || box.height + 0.01 < min) {
        const section = el.closest('main > section')?.id;
        out.push(`${section ?? where} ${describe(el)} ${box.width.toFixed(1)}×${box.height.toFixed(1)}${label ? ' (with its label)' : ''}`);
      }
    }
  }
  return { measured, small: out };
}

// Each page is opened once, at the first width, and resized to the next: the
// sections rendered, the disclosures opened and the widgets added at the
// first width stay so at every width.
const AT = `${WIDTHS.join(' px and ')} px`;

test(`lesson page at ${AT}: every control is at least ${MIN}×${MIN} px`, async () => {
  const { context, page, problems } = await suite.open('web/', { viewport: { width: WIDTHS[0], height: 900 } });
  await renderEverySection(page);
  await page.$$eval('main details', (ds) => ds.forEach((d) => { d.open = true; }));
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, 900);
    await page.waitForTimeout(400); // laid out in the next frames
    const scopes = [['page', 'body']];
    const { measured, small } = await page.evaluate(smallTargets, { scopes, min: MIN });
    assert.ok(measured > 200, `${width} px: the page's controls were measured (${measured})`);
    assert.deepEqual(small, [], `${width} px: ${small.length} controls smaller than ${MIN}×${MIN} px`);
    assertClean(problems, `lesson at ${width} px`);
  }
  await context.close();
});

test(`<attention-lab> presets at ${AT}: every control is at least ${MIN}×${MIN} px`, async () => {
  const { context, page, problems } = await suite.open('tests/fixtures/host.html', { viewport: { width: WIDTHS[0], height: 900 }, ready: false });
  const presets = await page.evaluate(async () => (await import('/web/attention-lab.js')).PRESET_NAMES);
  assert.ok(presets.length > 5, `the element has presets: ${presets}`);
  await page.evaluate(async (names) => {
    const host = document.getElementById('widgets');
    for (const name of names) {
      const el = document.createElement('attention-lab');
      el.setAttribute('preset', name);
      el.id = `w-${name.replace(/[^a-z0-9-]/gi, '-')}`;
      host.append(el);
    }
    await Promise.all([...host.children].map((el) => el.ready));
    // Open every disclosure inside the widgets (the break-it cards).
    for (const el of host.children) el.shadowRoot?.querySelectorAll('details').forEach((d) => { d.open = true; });
  }, presets);
  const scopes = presets.map((name) => [`preset=${name}`, `#w-${name.replace(/[^a-z0-9-]/gi, '-')}`]);
  for (const width of WIDTHS) {
    if (width !== WIDTHS[0]) await resizeTo(page, width, 900);
    await page.waitForTimeout(400);
    const { measured, small } = await page.evaluate(smallTargets, { scopes, min: MIN });
    assert.ok(measured > presets.length * 3, `${width} px: the widgets' controls were measured (${measured} in ${presets.length} presets)`);
    assert.deepEqual(small, [], `${width} px: ${small.length} controls in the widgets smaller than ${MIN}×${MIN} px`);
    assertClean(problems, `widgets at ${width} px`);
  }
  await context.close();
});

// A touch browser (iOS Safari) zooms into an input whose text is under 16 px
// when it is tapped. On a touch screen held sideways (844 px wide, wider than
// the phone layout) every input and select still has 16 px text.
test('a touch screen held sideways: every number input and select has text of at least 16 px', async () => {
  const { context, page, problems } = await suite.open('web/', { viewport: { width: 844, height: 390 }, device: { hasTouch: true, isMobile: true } });
  assert.ok(await page.evaluate(() => matchMedia('(pointer: coarse)').matches), 'the emulated screen is a touch screen');
  await renderEverySection(page);
  const small = await page.$$eval('main input.num, main select', (nodes) => nodes
    .map((n) => [n.dataset.field ?? n.closest('[data-grid]')?.dataset.grid ?? n.name, parseFloat(getComputedStyle(n).fontSize)])
    .filter(([, size]) => size < 16));
  assert.deepEqual(small, [], 'inputs and selects under 16 px');
  assertClean(problems, 'touch screen held sideways');
  await context.close();
});
