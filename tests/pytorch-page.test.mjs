// The lesson's PyTorch section in Debian's Chromium: the output shown and
// both scripts are checked against the core and pytorch-script.js run here
// in Node on the inputs read back from the page; edits, the copy buttons and
// the shapes by keyboard; 1280 px and 390 px (screenshots in
// tests/screenshots/, git-ignored), no sideways scroll, axe-core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { browserSuite, assertClean, typeInto, runAxe, screenshot, resizeTo } from './helpers/browser.mjs';
import { loadAttention } from '../web/attention.js';
import { pytorchScript, numpyScript, transposeShapes, multiHeadScript, multiHeadNumpyScript, multiHeadExample } from '../web/pytorch-script.js';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
let lab;
const suite = browserSuite({ setup: async () => { lab = await loadAttention(); } });

async function readGrid(page, name) {
  const cells = await page.$$eval(`[data-grid="${name}"] input`, (ns) => ns.map((n) => [Number(n.dataset.row), Number(n.dataset.col), n.value]));
  const m = [];
  for (const [i, j, v] of cells) (m[i] ??= [])[j] = Number(v);
  return m;
}

async function readMask(page) {
  const cells = await page.$$eval('[data-mask="pt-mask"] button', (ns) => ns.map((n) => [Number(n.dataset.row), Number(n.dataset.col), n.getAttribute('aria-pressed') === 'true']));
  const m = [];
  for (const [i, j, on] of cells) (m[i] ??= [])[j] = on;
  return m;
}

const scriptText = (page, key) => page.locator(`#pytorch pre[data-script="${key}"]`).evaluate((n) => n.textContent);

/** The section's output and scripts against the core and the script builders on the page's inputs. */
async function expectSection(page) {
  const q = await readGrid(page, 'pt-q'), k = await readGrid(page, 'pt-k'), v = await readGrid(page, 'pt-v');
  const allowed = await readMask(page);
  const res = lab.sdpa(q, k, v, { mask: { data: Uint8Array.from(allowed.flat(), Number), shape: [3, 3] } });
  for (const name of ['output', 'weights']) {
    const shown = await page.$$eval(`[data-values="pt-${name}"] td[data-row]`, (ns) => ns.map((n) => Number(n.textContent)));
    assert.equal(shown.length, res[name].data.length, `${name}: every entry shown`);
    const bad = shown.map((x, i) => [i, x, res[name].data[i]]).filter(([, x, y]) => !(Math.abs(x - y) <= 0.5e-4 + 1e-6));
    assert.deepEqual(bad, [], `${name} [index, page, core]`);
  }
  const input = { q, k, v, allowed, output: res.output.data, weights: res.weights.data };
  assert.equal(await scriptText(page, 'pytorch'), pytorchScript(input), 'the PyTorch script holds the page\'s inputs and the core\'s numbers');
  assert.equal(await scriptText(page, 'numpy'), numpyScript(input), 'the NumPy script holds the page\'s inputs and the core\'s numbers');
  return { allowed, res };
}

test('PyTorch section: in the contents; output and scripts from the core; a mask edit by keyboard; an empty row refused', async () => {
  const { page, problems } = await suite.open('#pytorch');
  const section = page.locator('#pytorch');
  assert.equal(await page.locator('nav.toc a[href="#pytorch"]').textContent(), 'The PyTorch APIs');
  let { allowed } = await expectSection(page);
  assert.deepEqual(allowed, [[true, false, false], [true, true, false], [true, true, true]], 'starts causal');
  // The masks in each convention, as the calls show them.
  const calls = await section.locator('[data-slot="calls"]').textContent();
  assert.match(calls, /allowed = torch\.tensor\(\[\[ True, False, False\],/);
  assert.match(calls, /blocked = torch\.tensor\(\[\[False, {2}True, {2}True\],/);
  assert.match(calls, /additive = torch\.tensor\(\[\[ {2}0\., -inf, -inf\],/);

  // Allow query 1 to see key 3 with the keyboard.
  await section.locator('[data-mask="pt-mask"] button[data-row="0"][data-col="2"]').focus();
  await page.keyboard.press('Enter');
  ({ allowed } = await expectSection(page));
  assert.equal(allowed[0][2], true);
  assert.match(await section.locator('[data-slot="calls"]').textContent(), /blocked = torch\.tensor\(\[\[False, {2}True, False\],/);

  // Edit Q by keyboard: the output and the scripts follow.
  await typeInto(page, section.locator('[data-grid="pt-q"] input[data-row="1"][data-col="0"]'), '0.1');
  await page.keyboard.press('Tab');
  await expectSection(page);
  assert.match(await scriptText(page, 'pytorch'), /q = torch\.tensor\(\[\[1, 0, 1, 0\], \[0\.1, 1, 0, 1\]/);

  // Block every key of query 1: the core refuses the row; the last valid scripts stay.
  await section.locator('[data-mask="pt-mask"] button[data-row="0"][data-col="0"]').focus();
  await page.keyboard.press('Enter');
  await expectSection(page);
  const before = await scriptText(page, 'pytorch');
  await section.locator('[data-mask="pt-mask"] button[data-row="0"][data-col="2"]').focus();
  await page.keyboard.press('Enter');
  assert.match(await section.locator('.core-error').textContent(), /ALL_MASKED_ROW/);
  assert.equal(await scriptText(page, 'pytorch'), before, 'the scripts keep the last valid state');
  assert.equal(await section.locator('[data-slot="scripts"]').evaluate((n) => n.classList.contains('stale')), true);
  await page.keyboard.press('Enter');
  await expectSection(page);
  assert.equal(await section.locator('.core-error').isHidden(), true);
  assertClean(problems, 'pytorch section');
  await page.context().close();
});

test('PyTorch section opened from a link the core refuses: no last valid result is promised, and the scripts cannot be copied until there is one', async () => {
  const { page, problems } = await suite.open('#view=pytorch&pt.allowed=000;110;111');
  const section = page.locator('#pytorch');
  const error = await section.locator('.core-error').first().textContent();
  assert.match(error, /ALL_MASKED_ROW/, 'query 1 has no key: refused');
  assert.doesNotMatch(error, /[Ll]ast valid/, `nothing was drawn yet, so nothing is kept: "${error}"`);
  assert.equal(await section.locator('.stale').count(), 0, 'no box is marked as the last valid result');
  const disabled = () => section.locator('button[data-action^="pt-copy-"]').evaluateAll((bs) => bs.map((b) => `${b.dataset.action}:${b.disabled}`));
  assert.deepEqual(await disabled(), ['pt-copy-pytorch:true', 'pt-copy-numpy:true', 'pt-copy-check:false', 'pt-copy-mha:false', 'pt-copy-mhaNumpy:false'],
    'the two scripts of the inputs are not written yet; the shape check and the multi-head scripts do not depend on them');
  assert.equal(await scriptText(page, 'mha'), multiHeadScript(multiHeadExample(lab)), 'the multi-head module script is written all the same');
  // Allow query 1 its own key: everything is drawn, and every script can be copied.
  await section.locator('[data-mask="pt-mask"] button[data-row="0"][data-col="0"]').focus();
  await page.keyboard.press('Enter');
  await expectSection(page);
  assert.deepEqual(await disabled(), ['pt-copy-pytorch:false', 'pt-copy-numpy:false', 'pt-copy-check:false', 'pt-copy-mha:false', 'pt-copy-mhaNumpy:false']);
  assertClean(problems, 'pytorch section from a refused link');
  await page.context().close();
});

test('PyTorch section: the copy buttons by keyboard, with the clipboard and with the fallback selection', async () => {
  const { page, problems, context } = await suite.open('#pytorch');
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: suite.server.url });
  const section = page.locator('#pytorch');
  // The multi-head module script: the core's example, built here in Node the same way.
  assert.equal(await scriptText(page, 'mha'), multiHeadScript(multiHeadExample(lab)), 'the multi-head module script holds the core\'s parameters and numbers');
  assert.equal(await scriptText(page, 'mhaNumpy'), multiHeadNumpyScript(multiHeadExample(lab)), 'its NumPy twin too');
  for (const key of ['pytorch', 'numpy', 'mha', 'mhaNumpy']) {
    await section.locator(`button[data-action="pt-copy-${key}"]`).focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /clipboard/.test(document.querySelector('[data-out="pt-copy-note"]').textContent));
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), await scriptText(page, key), `${key}: the clipboard holds the script`);
  }
  assertClean(problems, 'copy with the clipboard');
  await context.close();

  // A browser that refuses the clipboard: the script is selected instead.
  const refused = await suite.open('#pytorch', {
    init: () => { Object.defineProperty(navigator, 'clipboard', { value: { writeText: () => Promise.reject(new Error('denied')) } }); },
  });
  const s2 = refused.page.locator('#pytorch');
  assert.equal(await s2.locator('details:has(pre[data-script="numpy"])').evaluate((n) => n.open), false);
  await s2.locator('button[data-action="pt-copy-numpy"]').focus();
  await refused.page.keyboard.press('Space');
  await refused.page.waitForFunction(() => /selected/.test(document.querySelector('[data-out="pt-copy-note"]').textContent));
  assert.equal(await s2.locator('details:has(pre[data-script="numpy"])').evaluate((n) => n.open), true, 'the NumPy script is opened');
  // (a selection's text leaves out the script's last newline)
  assert.equal(await refused.page.evaluate(() => String(document.getSelection())), (await scriptText(refused.page, 'numpy')).trimEnd(), 'the whole script is selected');
  assertClean(refused.problems, 'copy by selection');
  await refused.page.context().close();
});

test('PyTorch section: .T against transpose(-2, -1) for the sizes typed in', async () => {
  const { page, problems } = await suite.open('#pytorch');
  const section = page.locator('#pytorch');
  const shown = async () => Object.fromEntries(await section.locator('[data-values="pt-shapes"] [data-out]').evaluateAll((ns) => ns.map((n) => [n.dataset.out, n.textContent])));
  const fmt = (shape) => `(${shape.join(', ')})`;
  const expectShapes = async (sizes) => {
    const s = transposeShapes(sizes);
    const zeros = { data: new Float32Array(sizes.reduce((a, b) => a * b, 1)), shape: sizes };
    assert.deepEqual(await shown(), {
      'pt-shape-k': fmt(sizes), 'pt-shape-dot-t': fmt(s.dotT), 'pt-shape-swapped': fmt(s.swapped),
      'pt-shape-wrong': s.withDotT.error ? 'error' : fmt(s.withDotT.shape),
      'pt-shape-scores': fmt(lab.sdpa(zeros, zeros, zeros).scores.shape),
    });
  };
  await expectShapes([2, 4, 5, 8]);
  assert.equal((await shown())['pt-shape-dot-t'], '(8, 5, 4, 2)');
  for (const [key, value] of [['b', '1'], ['h', '8'], ['t', '8']]) {
    await typeInto(page, section.locator(`input[data-field="pt-${key}"]`), value);
    await page.keyboard.press('Tab');
  }
  // d = H = T = 8 and B = 1: q @ k.T now runs, on the wrong axes.
  await expectShapes([1, 8, 8, 8]);
  assert.equal((await shown())['pt-shape-wrong'], '(8, 8, 8, 1)');
  // Out of range: an inline message, the last valid shapes stay.
  await typeInto(page, section.locator('input[data-field="pt-d"]'), '0');
  await page.keyboard.press('Tab');
  assert.equal(await section.locator('input[data-field="pt-d"]').getAttribute('aria-invalid'), 'true');
  await expectShapes([1, 8, 8, 8]);
  assertClean(problems, 'shapes');
  await page.context().close();
});

test('PyTorch section at 1280 px and 390 px: screenshots, no sideways scroll, axe-core', async () => {
  await mkdir(SHOTS, { recursive: true });
  // One page, opened at the first size and resized to the next: the scripts
  // opened once stay open at every width.
  const VIEWPORTS = [{ width: 1280, height: 900 }, { width: 390, height: 844 }];
  const { page, problems } = await suite.open('#pytorch', { viewport: VIEWPORTS[0] });
  await page.locator('#pytorch details:has(pre[data-script="numpy"]) summary').click();
  await page.locator('#pytorch details:has(pre[data-script="mha"]) summary').click();
  for (const viewport of VIEWPORTS) {
    if (viewport !== VIEWPORTS[0]) await resizeTo(page, viewport.width, viewport.height);
    await screenshot(page.locator('#pytorch'), `${SHOTS}pytorch-${viewport.width}.png`);
    await runAxe(page, `pytorch at ${viewport.width} px`, { include: '#pytorch' });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no sideways page scroll at ${viewport.width} px (${overflow} px)`);
    // Nothing sticks out of the section's box (a wide script scrolls inside its own).
    const sticking = await page.locator('#pytorch').evaluate((section) => {
      const right = section.getBoundingClientRect().right;
      return [...section.querySelectorAll('pre, table, figure, button, input')].filter((n) => n.getBoundingClientRect().right > right + 0.5)
        .map((n) => `${n.tagName.toLowerCase()}${n.dataset.script ? `[${n.dataset.script}]` : ''}`);
    });
    assert.deepEqual(sticking, [], `elements wider than the section at ${viewport.width} px`);
    assertClean(problems, `${viewport.width} px`);
  }
  await page.context().close();
});

test('.T with every size 1: k.T is k.transpose(-2, -1), and the line does not say the result is not the scores', async () => {
  const { page, problems } = await suite.open('#view=pytorch&pt.b=1&pt.h=1&pt.t=1&pt.d=1');
  const line = page.locator('#pytorch [data-out="pt-shape-wrong"]').locator('xpath=..');
  const text = await line.textContent();
  assert.equal(await page.locator('#pytorch [data-out="pt-shape-dot-t"]').textContent(), '(1, 1, 1, 1)');
  assert.doesNotMatch(text, /not scores|wrong axes/, `k holds one number, so k.T and k.transpose(-2, -1) are the same tensor, yet the line says: "${text}"`);
  // With a size above 1, the warning is back.
  await typeInto(page, page.locator('input[data-field="pt-t"]'), '2');
  await page.keyboard.press('Enter');
  assert.match(await line.textContent(), /shape error|not scores/);
  assertClean(problems, 'pytorch, all sizes 1');
  await page.context().close();
});

test('PyTorch section: the notes on batch_first, head-averaged weights, mask dtype and device, and mask shapes', async () => {
  const { context, page, problems } = await suite.open('#pytorch');
  const n = await page.locator('#pytorch [data-notes="pt-api"] li').count();
  assert.equal(n, 4, `four notes on the layer and on masks; the page shows ${n}`);
  const notes = await page.locator('#pytorch [data-notes="pt-api"]').textContent();
  for (const [what, re] of [
    ['batch_first=True and the (B, T, d) order', /batch_first=True.*\(B, T, d\)/],
    ['average_attn_weights=False gives (B, H, Tq, Tk)', /average_attn_weights=False.*\(B, H, Tq, Tk\)/],
    ['a boolean mask on the scores\' device', /boolean tensor.*device=q\.device/],
    ['(Tq, Tk) read as (1, 1, Tq, Tk)', /\(Tq, Tk\) mask, such as the causal one, is read as \(1, 1, Tq, Tk\)/],
    ['(1 or B, 1 or H, Tq, Tk)', /\(1 or B, 1 or H, Tq, Tk\)/],
    ['(B, Tq, Tk) given as mask.unsqueeze(1)', /\(B, Tq, Tk\).*mask\.unsqueeze\(1\)/],
    ['nn.MultiheadAttention takes (Tq, Tk) or (B·H, Tq, Tk), padding apart', /attn_mask is \(Tq, Tk\) or \(B·H, Tq, Tk\).*key_padding_mask, \(B, Tk\)/],
  ]) assert.match(notes, re, `the notes say ${what}: "${notes}"`);
  const card = await page.locator('#pytorch [data-slot="calls"] figure').nth(1).textContent();
  assert.match(card, /batch_first=True: inputs and out are \(B, T, d\)/, `the nn.MultiheadAttention card explains batch_first: "${card}"`);
  assert.match(card, /average_attn_weights=False for one map per head, \(B, H, T, T\)/, `the card names average_attn_weights=False: "${card}"`);
  // What the shapes note claims of broadcasting, by the core's own (numpy) rules:
  // a (B, Tq, Tk) mask against (B, H, Tq, Tk) scores is aligned from the right,
  // so with B ≠ H it is refused, and as (B, 1, Tq, Tk) it gives each sequence its pattern.
  const [B, H, T] = [2, 3, 4];
  const z = { data: new Float32Array(B * H * T), shape: [B, H, T, 1] };
  const perSeq = Uint8Array.from({ length: B * T * T }, (_, i) => (Math.floor(i / (T * T)) === 0 ? 1 : Number(i % T <= Math.floor(i / T) % T)));
  assert.throws(() => lab.sdpa(z, z, z, { mask: { data: perSeq, shape: [B, T, T] } }), /SHAPE_MISMATCH|broadcast/i, 'a 3-D (B, Tq, Tk) mask is not read per sequence by plain broadcasting');
  const w = lab.sdpa(z, z, z, { mask: { data: perSeq, shape: [B, 1, T, T] } }).weights.data;
  for (let h = 0; h < H; h++) {
    assert.ok(Math.abs(w[(0 * H + h) * T * T + 1] - 1 / T) < 1e-6, `sequence 1, head ${h + 1}: every key allowed (weight ${w[(0 * H + h) * T * T + 1]}, want ${1 / T})`);
    assert.equal(w[(1 * H + h) * T * T + 1], 0, `sequence 2, head ${h + 1}: the causal pattern blocks key 2 for query 1`);
  }
  // The third script on the page is the one built from the core's shapes.
  const { sdpaCheckScript } = await import('../web/pytorch-script.js');
  const shown = await page.locator('#pytorch pre[data-script="check"]').textContent();
  assert.equal(shown, sdpaCheckScript(lab), 'the shape-check script on the page is the core-built one');
  assert.equal(await page.locator('#pytorch button[data-action="pt-copy-check"]').count(), 1, 'a button copies it');
  assertClean(problems, 'PyTorch notes');
  await context.close();
});
