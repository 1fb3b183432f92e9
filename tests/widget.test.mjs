// Every way to embed attention-lab, in Debian's Chromium:
// the <attention-lab> element on hostile, plain, strict-CSP and
// cross-origin pages; the iframe (embed.html) talking to a parent on another
// origin; dist/attention-lab.html from file:// with the network blocked; the
// demo course page under axe-core (with screenshots at 1280 and 390 px in
// tests/screenshots/); and the README's snippets pasted into a fresh page.
//
// Numbers shown by a widget are compared with the core run here in Node
// (web/attention.js) on the inputs read back from the widget.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { browserSuite, openPage, startServer, assertClean, typeInto, runAxe, addAxe, checkShown, screenshot, waitForState, resizeTo } from './helpers/browser.mjs';
import { loadAttention } from '../web/attention.js';
import { dist } from '../web/dist.mjs';
import { SECTIONS } from '../web/sections/registry.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'";

let lab;
const suite = browserSuite({
  root: ROOT, // repo root: tests/fixtures/ and web/
  setup: async () => {
    lab = await loadAttention();
    await dist(); // dist/ for the single-file and README tests (esbuild: well under a second)
  },
});

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/** Playwright's CSS selectors pierce open shadow roots, so `scope` may be a widget. */
const heat = (scope, name) => scope.locator(`[data-heatmap="${name}"] .hm-cell:not(.hm-extra)`).allTextContents();

async function readGrid(scope, name) {
  const cells = await scope.locator(`[data-grid="${name}"] input`).evaluateAll((ns) => ns.map((n) => [Number(n.dataset.row), Number(n.dataset.col), n.value]));
  const m = [];
  for (const [i, j, v] of cells) (m[i] ??= [])[j] = Number(v);
  return m;
}

/** The 3×3 preset's weights, against the core on the widget's own inputs. */
async function expectExWeights(scope, label) {
  const q = await readGrid(scope, 'ex-q'), k = await readGrid(scope, 'ex-k'), v = await readGrid(scope, 'ex-v');
  const r = lab.sdpa(q, k, v);
  checkShown(label, await heat(scope, 'ex-weights'), r.weights.data, 4);
  return r;
}

function openFixture(name, { viewport, origin = suite.server.url } = {}) {
  return suite.open(`tests/fixtures/${name}`, { viewport, origin, ready: false });
}

const whenReady = (locator) => locator.evaluate((el) => el.ready);

/** Add a widget to tests/fixtures/host.html with these attributes; returns its locator. */
async function addWidget(page, id, attrs) {
  await page.evaluate(({ id, attrs }) => {
    const el = document.createElement('attention-lab');
    el.id = id;
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    document.getElementById('widgets').append(el);
  }, { id, attrs });
  const widget = page.locator(`#${id}`);
  await whenReady(widget);
  return widget;
}

// ---------------------------------------------------------------------------
// The element
// ---------------------------------------------------------------------------

test('on a hostile-CSS page the element renders, recomputes an edited cell, and nothing leaks either way', async () => {
  const { context, page, problems } = await openFixture('hostile.html');
  const widget = page.locator('attention-lab');
  await whenReady(widget);

  // It renders: the weights are there, visible, and equal to the core's.
  const cell = widget.locator('[data-heatmap="ex-weights"] .hm-cell').first();
  const box = await cell.boundingBox();
  assert.ok(box && box.width > 20 && box.height > 10, `a weight cell is drawn (${JSON.stringify(box)})`);
  await expectExWeights(widget, 'defaults');

  // The page's rules do not reach inside: tables shown, inputs at the widget's size, text not red.
  const inside = await widget.evaluate((el) => {
    const root = el.shadowRoot;
    const css = (sel) => getComputedStyle(root.querySelector(sel));
    return {
      table: css('table.grid-edit').display,
      inputFont: css('input.num').fontSize,
      labelColour: css('.al-label').color,
      headColour: css('.hm-head').color,
      rootFont: css('.al-root').fontSize,
    };
  });
  assert.equal(inside.table, 'table', 'table { display: none } stays outside');
  assert.equal(inside.inputFont, '15.2px', 'input { font-size: 40px } stays outside (0.95 × 16 px)');
  assert.notEqual(inside.labelColour, 'rgb(255, 0, 0)', 'div { color: red !important } stays outside');
  assert.notEqual(inside.headColour, 'rgb(255, 0, 0)');
  assert.equal(inside.rootFont, '16px');

  // Editing a cell recomputes the shown weights.
  const before = await heat(widget, 'ex-weights');
  await typeInto(page, widget.locator('[data-grid="ex-q"] input[data-row="0"][data-col="0"]'), '3');
  await typeInto(page, widget.locator('[data-grid="ex-k"] input[data-row="2"][data-col="1"]'), '-2');
  const r = await expectExWeights(widget, 'after editing');
  assert.notDeepEqual(await heat(widget, 'ex-weights'), before, 'the weights changed');
  assert.equal(r.weights.shape.join(), '3,3');

  // And nothing leaks out: the page keeps its own (hostile) look, and gained no stylesheet.
  const outside = await page.evaluate(() => ({
    text: getComputedStyle(document.querySelector('.host-text')).color,
    input: getComputedStyle(document.querySelector('.host-input')).fontSize,
    table: getComputedStyle(document.querySelector('.host-table')).display,
    sheets: document.styleSheets.length,
    adopted: document.adoptedStyleSheets.length,
    styles: document.querySelectorAll('style').length,
  }));
  assert.deepEqual(outside, { text: 'rgb(255, 0, 0)', input: '40px', table: 'none', sheets: 1, adopted: 0, styles: 0 });
  assertClean(problems, 'hostile page');
  await context.close();
});

test('two widgets on one page share one core and stay independent', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const wasm = [];
  page.on('request', (req) => { if (req.url().endsWith('.wasm')) wasm.push(req.url()); });
  const a = await addWidget(page, 'a', { preset: 'three-by-three' });
  const b = await addWidget(page, 'b', { preset: 'three-by-three' });
  const c = await addWidget(page, 'c', { preset: 'custom-mask' });
  assert.equal(wasm.length, 1, `one wasm download for three widgets (${wasm})`);

  const bBefore = await heat(b, 'ex-weights');
  await typeInto(page, a.locator('[data-grid="ex-q"] input[data-row="1"][data-col="1"]'), '4');
  await expectExWeights(a, 'widget a after its edit');
  await expectExWeights(b, 'widget b');
  assert.deepEqual(await heat(b, 'ex-weights'), bBefore, 'widget b did not change');
  assert.match(await a.evaluate((el) => el.state), /^ex\.q=1,0,1,0;0,4,0,1;1,1,0,0$/);
  assert.equal(await b.evaluate((el) => el.state), '');

  // Ids inside each shadow root repeat across widgets without clashing.
  await b.locator('[data-grid="ex-v"] input[data-row="0"][data-col="0"]').fill('-3');
  await expectExWeights(b, 'widget b after its own edit');
  assert.match(await b.evaluate((el) => el.state), /^ex\.v=-3,0;0,10;5,5$/);
  assert.match(await a.evaluate((el) => el.state), /^ex\.q=/);

  // The custom-mask widget reads the 3×3 example of its own state, not a's.
  const mask = c.locator('[data-mask="mask-custom"] button[data-row="0"][data-col="1"]');
  await mask.click();
  const custom = await c.locator('[data-mask="mask-custom"] button').evaluateAll((ns) => ns.map((n) => n.getAttribute('aria-pressed') === 'true'));
  const r = lab.sdpa([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]], [[10, 0], [0, 10], [5, 5]],
    { mask: { data: custom, shape: [3, 3] } });
  checkShown('custom-mask widget', await heat(c, 'mask-custom-weights'), r.weights.data, 4);
  assert.equal(await c.evaluate((el) => el.state), 'mask.custom=101;111;111');

  // A widget that leaves the page frees its core modules and can come back.
  const d = await addWidget(page, 'd', { preset: 'multi-head' });
  await d.evaluate((el) => { const parent = el.parentNode; el.remove(); parent.append(el); });
  await page.waitForFunction(() => document.querySelector('#d').shadowRoot.querySelectorAll('[data-heatmap^="mha-weights-h"]').length === 4);
  assertClean(problems, 'two widgets');
  await context.close();
});

test('changing an attribute updates the widget; state, events and read-only mode', async () => {
  const { context, page, problems } = await openFixture('host.html');
  await page.evaluate(() => {
    window.changes = [];
    document.addEventListener('attention-change', (e) => window.changes.push({
      preset: e.detail.preset, state: e.detail.state, weights: e.detail.weights && Array.from(e.detail.weights.data), shape: e.detail.weights?.shape,
    }));
  });
  const w = await addWidget(page, 'w', { preset: 'multi-head', heads: '2' });
  const mapCount = () => w.locator('.head-map').count();
  assert.equal(await mapCount(), 2, 'heads="2": two head maps');

  const expectMha = async (label) => {
    const num = async (name) => Number(await w.locator(`input[data-field="${name}"]`).inputValue());
    const dModel = await num('mha-dmodel'), numHeads = await num('mha-heads'), seed = await num('mha-seed'), size = await num('mha-size');
    const tokens = (await readGrid(w, 'mha-tokens'))[0];
    const x = new Float32Array(tokens.length * dModel);
    tokens.forEach((id, t) => { x[t * dModel + (id % dModel)] = size; }); // the lesson's toy one-hot embedding
    const mha = lab.createMultiHeadAttention({ dModel, numHeads, seed });
    const r = mha.forward({ data: x, shape: [1, tokens.length, dModel] });
    mha.free();
    const [, H, T] = r.weights.shape;
    for (let h = 0; h < H; h++) {
      checkShown(`${label}, head ${h + 1}`, await heat(w, `mha-weights-h${h}`), r.weights.data.subarray(h * T * T, (h + 1) * T * T), 2);
    }
    return r;
  };
  await expectMha('heads 2');

  await w.evaluate((el) => el.setAttribute('seq-len', '3'));
  assert.equal(await w.locator('input[data-field="mha-t"]').inputValue(), '3');
  assert.equal((await heat(w, 'mha-weights-h0')).length, 9, 'seq-len="3": 3 × 3 maps');
  const r3 = await expectMha('seq-len 3');
  const last = await page.evaluate(() => window.changes.at(-1));
  assert.equal(last.state, 'mha.heads=2&mha.t=3');
  assert.deepEqual(last.shape, [1, 2, 3, 3]);
  checkShown('attention-change detail', last.weights.map(String), r3.weights.data, 6);

  await w.evaluate((el) => el.setAttribute('heads', '8'));
  assert.equal(await mapCount(), 8);
  await w.evaluate((el) => el.setAttribute('heads', '5')); // 32 does not split into 5 heads: d_model follows
  assert.equal(await mapCount(), 5);
  assert.equal(await w.locator('input[data-field="mha-dmodel"]').inputValue(), '30');
  await w.evaluate((el) => el.setAttribute('d-model', '32')); // 5 heads do not split it: heads wins, and the status line says so
  assert.equal(await mapCount(), 5);
  assert.equal(await w.locator('input[data-field="mha-dmodel"]').inputValue(), '30');
  assert.match(await w.locator('.al-status').textContent(), /d-model="32" was not used: it cannot be split evenly over heads="5", so d-model = 30 was used\./);
  await w.evaluate((el) => el.removeAttribute('d-model'));
  await w.evaluate((el) => el.setAttribute('heads', '99')); // out of the field's range: ignored, and said
  assert.match(await w.locator('.al-status').textContent(), /heads="99" was ignored/);

  // show: only the weights.
  assert.equal(await w.locator('details.more').isVisible(), true);
  await w.evaluate((el) => el.setAttribute('show', 'weights'));
  assert.equal(await w.locator('details.more').isVisible(), false, 'the output is hidden');
  assert.equal(await w.locator('.head-map').first().isVisible(), true);

  // theme.
  await w.evaluate((el) => el.setAttribute('theme', 'dark'));
  assert.equal(await w.locator('.al-root').evaluate((n) => getComputedStyle(n).backgroundColor), 'rgb(32, 33, 39)');
  await w.evaluate((el) => el.setAttribute('theme', 'light'));
  const background = () => w.locator('.al-root').evaluate((n) => getComputedStyle(n).backgroundColor);
  assert.equal(await background(), 'rgb(255, 255, 255)');
  await w.evaluate((el) => el.setAttribute('theme', 'auto'));
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction(() => document.querySelector('#w').shadowRoot.querySelector('.al-root').classList.contains('al-dark'));
  assert.equal(await background(), 'rgb(32, 33, 39)', 'theme="auto" follows a dark system setting');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.waitForFunction(() => !document.querySelector('#w').shadowRoot.querySelector('.al-root').classList.contains('al-dark'));

  // preset, then state (the page's URL-hash text), then .state.
  await w.evaluate((el) => el.setAttribute('preset', 'three-by-three'));
  await expectExWeights(w, 'preset three-by-three');
  await w.evaluate((el) => el.setAttribute('state', 'view=masks&ex.q=2,0,1,0;0,1,0,1;1,1,0,5'));
  assert.deepEqual(await readGrid(w, 'ex-q'), [[2, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 5]]);
  await expectExWeights(w, 'state attribute');
  await w.evaluate((el) => { el.state = 'ex.k=0,0,0,1;0,1,0,0;1,1,0,0'; });
  assert.deepEqual((await readGrid(w, 'ex-k'))[0], [0, 0, 0, 1]);
  await expectExWeights(w, '.state');
  assert.match(await w.evaluate((el) => el.state), /ex\.k=0,0,0,1;0,1,0,0;1,1,0,0/);
  const refused = await w.evaluate((el) => { try { el.state = 'ex.q=<img src=x>'; return null; } catch (err) { return err.message; } });
  assert.match(refused, /cannot be used/);
  assert.deepEqual((await readGrid(w, 'ex-k'))[0], [0, 0, 0, 1], 'a refused state changes nothing');
  await w.evaluate((el) => el.setAttribute('state', 'nonsense=1'));
  assert.match(await w.locator('.al-status').textContent(), /could not be used/);

  // editable="false": fields become read-only, and typing changes nothing.
  await w.evaluate((el) => { el.removeAttribute('state'); el.setAttribute('editable', 'false'); });
  const input = w.locator('[data-grid="ex-q"] input[data-row="0"][data-col="0"]');
  assert.equal(await input.evaluate((n) => n.readOnly), true);
  await input.focus();
  await page.keyboard.type('9');
  assert.equal(await input.inputValue(), '1');
  await w.evaluate((el) => el.setAttribute('editable', 'true'));
  assert.equal(await input.evaluate((n) => n.readOnly), false);

  // Every preset draws, and its attention-change carries the core's tensors.
  await w.evaluate((el) => { el.removeAttribute('heads'); el.removeAttribute('seq-len'); el.removeAttribute('show'); });
  const presets = ['two-keys', 'one-query', 'three-by-three', 'why-scale', 'shapes', 'masks', 'causal', 'padding', 'custom-mask',
    'cross', 'self-cross', 'multi-head', 'observability', 'conventions', 'break-it', 'break-it:inverted-mask'];
  for (const preset of presets) {
    await w.evaluate((el, p) => el.setAttribute('preset', p), preset);
    const change = await page.evaluate(() => window.changes.at(-1));
    assert.equal(change.preset, { 'one-query': 'two-keys', 'self-cross': 'cross' }[preset] ?? preset, 'aliases are resolved');
    assert.equal(await w.locator('.al-status').isVisible(), false, `${preset}: no message`);
    assert.ok(await w.locator('.al-section').evaluate((n) => n.childElementCount > 0), `${preset} draws`);
    // why-scale has no weights; conventions starts with a mask the core refuses (its lesson point).
    if (!['why-scale', 'conventions'].includes(preset)) assert.ok(change.weights?.length > 0, `${preset}: attention-change has weights`);
    else assert.equal(change.weights, null);
  }
  assert.equal(await w.locator('.bk-card').count(), 1, 'break-it:<bug> shows one card');

  // An unknown preset is said in words.
  await w.evaluate((el) => el.setAttribute('preset', 'nope'));
  const unknown = await w.locator('.al-status').textContent();
  assert.match(unknown, /Unknown preset "nope"\. Use one of: two-keys, three-by-three, .*, or break-it:<bug> with <bug> one of softmax-over-queries, .*no-scale, /);
  assert.doesNotMatch(unknown, /break-it:no-scale/, `the cards are one pattern, not sixteen names: "${unknown}"`);
  assertClean(problems, 'attributes');
  await context.close();
});

test('a theme or editable value the element does not know is named in the status line, and an unknown preset still names the widget', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const status = (w) => w.locator('.al-status').evaluate((n) => (n.hidden ? '' : n.textContent));
  const background = (w) => w.locator('.al-root').evaluate((n) => getComputedStyle(n).backgroundColor);

  const w = await addWidget(page, 'w', { preset: 'three-by-three', theme: 'purple' });
  let said = await status(w);
  assert.match(said, /theme="purple" was ignored: light, dark or auto was expected\./, `an unknown theme is said; seen ${JSON.stringify(said)}`);
  assert.equal(await background(w), 'rgb(255, 255, 255)', 'and the light theme is used');
  await w.evaluate((el) => el.setAttribute('theme', 'dark'));
  assert.equal(await status(w), '', 'a known theme clears the message (seen above)');
  assert.equal(await background(w), 'rgb(32, 33, 39)');

  const input = w.locator('[data-grid="ex-q"] input[data-row="0"][data-col="0"]');
  await w.evaluate((el) => el.setAttribute('editable', 'maybe'));
  said = await status(w);
  assert.match(said, /editable="maybe" was ignored: true or false was expected\./, `an unknown editable value is said; seen ${JSON.stringify(said)}`);
  assert.equal(await input.evaluate((n) => n.readOnly), false, 'and the widget stays editable');
  await w.evaluate((el) => el.setAttribute('editable', 'False'));
  assert.equal(await status(w), '', 'editable="False" is known');
  assert.equal(await input.evaluate((n) => n.readOnly), true);
  await w.evaluate((el) => el.setAttribute('editable', ''));
  assert.equal(await status(w), '', 'a bare editable attribute means editable');
  assert.equal(await input.evaluate((n) => n.readOnly), false);

  // An unknown preset: the group still has a name, its label when it has one.
  const name = (widget) => widget.locator('.al-root').evaluate((n) => n.getAttribute('aria-label'));
  const nope = await addWidget(page, 'nope', { preset: 'nope' });
  assert.match(await status(nope), /Unknown preset "nope"/);
  assert.ok(await name(nope), `an unknown preset: the group has an accessible name; seen ${JSON.stringify(await name(nope))}`);
  const labelled = await addWidget(page, 'labelled', { preset: 'nope', label: 'Attention demo' });
  assert.equal(await name(labelled), 'Attention demo', 'an unknown preset: the label attribute names the group');
  await w.evaluate((el) => el.setAttribute('preset', 'nope'));
  assert.doesNotMatch(await name(w), /3×3/, `the name no longer says the preset it had; seen ${JSON.stringify(await name(w))}`);
  assert.ok(await name(w), 'but there is one');
  assertClean(problems, 'unknown attribute values');
  await context.close();
});

/** Collect the page's console warnings (the widget writes each status-line problem there once). */
function consoleWarnings(page) {
  const warnings = [];
  page.on('console', (msg) => { if (msg.type() === 'warning') warnings.push(msg.text()); });
  return warnings;
}

const statusText = (w) => w.locator('.al-status').evaluate((n) => (n.hidden ? '' : n.textContent));

test('multi-head: a d-model the heads do not split is said in the status line, and a valid pair is used', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const warnings = consoleWarnings(page);
  const sizes = async (w) => ({
    dModel: await w.locator('input[data-field="mha-dmodel"]').inputValue(),
    heads: await w.locator('input[data-field="mha-heads"]').inputValue(),
    maps: await w.locator('.head-map').count(),
    sectionError: await w.locator('[data-slot="status"] .core-error:not([hidden])').count(),
    stale: await w.locator('.stale').count(),
  });

  // d-model alone: the heads nearest the default 4 that split it (1, 2, 5, 10 split 10).
  const d10 = await addWidget(page, 'd10', { preset: 'multi-head', 'd-model': '10' });
  assert.deepEqual(await sizes(d10), { dModel: '10', heads: '5', maps: 5, sectionError: 0, stale: 0 }, 'd-model="10" opens on a valid pair');
  let said = await statusText(d10);
  assert.match(said, /d-model="10" cannot be split evenly over the preset's 4 heads, so heads = 5 was used \(with this d-model, heads may be 1, 2, 5 or 10\)\./,
    `the status line names d-model and heads; seen ${JSON.stringify(said)}`);
  // Once the learner edits the sizes, the note on the opening values goes: it would contradict the fields.
  const headsField = d10.locator('input[data-field="mha-heads"]');
  await typeInto(page, headsField, '2');
  assert.equal(await statusText(d10), '', 'after the learner set 2 heads, the status line still talks of the opening values');

  // Both given and clashing: heads wins, and the status line says which d-model was not used.
  const h5 = await addWidget(page, 'h5', { preset: 'multi-head', heads: '5', 'd-model': '64' });
  assert.deepEqual(await sizes(h5), { dModel: '60', heads: '5', maps: 5, sectionError: 0, stale: 0 }, 'heads="5" d-model="64"');
  said = await statusText(h5);
  assert.match(said, /d-model="64" was not used: it cannot be split evenly over heads="5", so d-model = 60 was used\./, `seen ${JSON.stringify(said)}`);
  const h4 = await addWidget(page, 'h4', { preset: 'multi-head', heads: '4', 'd-model': '7' });
  assert.deepEqual(await sizes(h4), { dModel: '8', heads: '4', maps: 4, sectionError: 0, stale: 0 }, 'heads="4" d-model="7"');
  assert.match(await statusText(h4), /d-model="7" was not used: it cannot be split evenly over heads="4", so d-model = 8 was used\./);
  // A pair that splits says nothing.
  await h4.evaluate((el) => el.setAttribute('d-model', '12'));
  assert.equal(await statusText(h4), '');

  // Each problem went to the console once.
  assert.deepEqual(warnings.filter((t) => /split evenly/.test(t)).length, 3, `one warning per problem; seen ${JSON.stringify(warnings)}`);

  // A state the core refuses before anything was drawn: the section says why, with no "Last valid result" boxes.
  await page.evaluate(async () => {
    const el = document.createElement('attention-lab');
    el.id = 'fresh';
    el.setAttribute('preset', 'multi-head');
    el.state = 'mha.dmodel=10';
    document.getElementById('widgets').append(el);
    await el.ready;
  });
  const fresh = page.locator('#fresh');
  const sectionStatus = () => fresh.locator('[data-slot="status"]').textContent();
  said = await sectionStatus();
  assert.match(said, /d_model = 10 cannot be split evenly over H = 4 heads/);
  assert.doesNotMatch(said, /last valid/i, `no valid result yet, so none is promised; seen ${JSON.stringify(said)}`);
  assert.equal(await fresh.locator('.stale').count(), 0, 'no empty "Last valid result" boxes');
  // Once there was a valid result, a refused input keeps it, marked.
  await fresh.evaluate((el) => { el.state = 'mha.dmodel=12'; });
  assert.equal(await fresh.locator('.head-map').count(), 4);
  await fresh.evaluate((el) => { el.state = 'mha.dmodel=10'; });
  assert.match(await sectionStatus(), /still those of the last valid input/);
  assert.ok(await fresh.locator('.stale').count() > 0, 'the last valid maps are marked');
  assertClean(problems, 'multi-head sizes');
  await context.close();
});

test('a size attribute on a preset without that size is named in the status line, and each problem is warned once in the console', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const warnings = consoleWarnings(page);
  const keys = await addWidget(page, 'keys', { preset: 'two-keys', 'seq-len': '5', heads: '3', 'd-model': '8' });
  const said = await statusText(keys);
  for (const attr of ['d-model="8"', 'heads="3"', 'seq-len="5"']) {
    const name = attr.split('=')[0];
    assert.ok(said.includes(`${attr} was ignored: ${name} does not apply to the two-keys preset.`), `${attr} is named; seen ${JSON.stringify(said)}`);
  }
  const pad = await addWidget(page, 'pad', { preset: 'padding', 'seq-len': '4' });
  assert.equal(await statusText(pad), 'seq-len="4" was ignored: seq-len does not apply to the padding preset.');

  // Redrawing, or another attribute's message coming and going, does not repeat a warning.
  await pad.evaluate((el) => el.setAttribute('theme', 'purple'));
  await pad.evaluate((el) => el.setAttribute('theme', 'dark'));
  await pad.evaluate((el) => el.setAttribute('seq-len', '3'));
  await pad.evaluate((el) => el.setAttribute('seq-len', '4'));
  await pad.evaluate((el) => { el.state = ''; el.setAttribute('state', 'mask.pad=1'); });
  const sizeWarnings = warnings.filter((t) => /does not apply/.test(t));
  assert.deepEqual(sizeWarnings, [
    '<attention-lab>: d-model="8" was ignored: d-model does not apply to the two-keys preset.',
    '<attention-lab>: heads="3" was ignored: heads does not apply to the two-keys preset.',
    '<attention-lab>: seq-len="5" was ignored: seq-len does not apply to the two-keys preset.',
    '<attention-lab>: seq-len="4" was ignored: seq-len does not apply to the padding preset.',
    '<attention-lab>: seq-len="3" was ignored: seq-len does not apply to the padding preset.',
  ], 'each problem once');
  assert.equal(warnings.filter((t) => /theme="purple"/.test(t)).length, 1, `the theme problem too; seen ${JSON.stringify(warnings)}`);
  // A preset that has the size takes it, and says nothing.
  await pad.evaluate((el) => el.setAttribute('preset', 'causal'));
  assert.equal(await statusText(pad), '');
  assert.equal(await pad.locator('input[data-field="mask-ct"]').inputValue(), '4');
  assertClean(problems, 'size attributes');
  await context.close();
});

test('a state for a section the preset does not show, or with a d_model its heads do not split, is named in the status line', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const warnings = consoleWarnings(page);

  // Another section's fields: kept in the state, but named, with the fields this preset reads.
  const other = await addWidget(page, 'other', { preset: 'causal', state: 'mha.heads=2&mha.dmodel=8' });
  let said = await statusText(other);
  assert.equal(said, 'The state sets mha.heads and mha.dmodel, which the preset "causal" does not show, so they change nothing here '
    + '(its state fields start with mask. or ex.).', 'the fields are named');
  assert.equal(await other.evaluate((el) => el.state), 'mha.dmodel=8&mha.heads=2', 'and kept, as given');
  // The same through the state property; a preset that shows them says nothing.
  await other.evaluate((el) => { el.removeAttribute('state'); el.state = 'mask.ct=3&kv.seed=4'; });
  said = await statusText(other);
  assert.match(said, /^The state sets kv\.seed, which the preset "causal" does not show, so it changes nothing here/, `the property's state too; seen ${JSON.stringify(said)}`);
  await other.evaluate((el) => { el.state = 'mha.heads=2'; el.setAttribute('preset', 'multi-head'); });
  assert.equal(await statusText(other), '', 'multi-head shows mha.*');
  assert.equal(await other.locator('.head-map').count(), 2);
  // The fields of a section this preset reads (masks read the 3×3 inputs) are not named.
  const reads = await addWidget(page, 'reads', { preset: 'custom-mask', state: 'ex.q=2,0,1,0;0,1,0,1;1,1,0,0' });
  assert.equal(await statusText(reads), '', 'custom-mask reads ex.*');
  // A lesson link's view: its fields apply, and the view is said not to.
  const link = await addWidget(page, 'link', { preset: 'causal', state: 'view=masks&mask.ct=3' });
  assert.equal(await statusText(link), 'The state\'s view (the section a lesson link scrolls to) does not apply to a widget, which shows its preset "causal", so it was ignored.');
  assert.equal(await link.locator('input[data-field="mask-ct"]').inputValue(), '3', 'the rest of the state applies');

  // A d_model from the state that its heads do not split: said as for the d-model attribute.
  const sizes = (w) => Promise.all(['mha-dmodel', 'mha-heads'].map((f) => w.locator(`input[data-field="${f}"]`).inputValue()));
  const both = await addWidget(page, 'both', { preset: 'multi-head', state: 'mha.heads=3&mha.dmodel=8' });
  assert.deepEqual(await sizes(both), ['9', '3'], 'heads win, as with the attributes');
  assert.equal(await statusText(both), 'mha.dmodel=8 (from the state) was not used: it cannot be split evenly over 3 heads, so d-model = 9 was used.',
    'state="mha.heads=3&mha.dmodel=8": the d_model used instead is said');
  const attr = await addWidget(page, 'attr', { preset: 'multi-head', heads: '3', state: 'mha.dmodel=8' });
  assert.deepEqual(await sizes(attr), ['9', '3']);
  assert.equal(await statusText(attr), 'mha.dmodel=8 (from the state) was not used: it cannot be split evenly over heads="3", so d-model = 9 was used.',
    'heads="3" state="mha.dmodel=8": the d_model used instead is said');
  // The heads alone, from the state: d_model follows them, as it does for heads="5".
  const heads = await addWidget(page, 'heads', { preset: 'multi-head', state: 'mha.heads=5' });
  assert.deepEqual(await sizes(heads), ['30', '5']);
  assert.equal(await statusText(heads), '');

  // Three for causal (mha.heads alone was drawn there before the preset changed), each once.
  assert.equal(warnings.filter((t) => /does not show/.test(t)).length, 3, `each state problem warned once; seen ${JSON.stringify(warnings)}`);
  assert.equal(warnings.filter((t) => /from the state/.test(t)).length, 2, `seen ${JSON.stringify(warnings)}`);
  assertClean(problems, 'state problems');
  await context.close();
});

test('theme, show and preset are read in any case, and show="inputs" is accepted', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const background = (w) => w.locator('.al-root').evaluate((n) => getComputedStyle(n).backgroundColor);
  const w = await addWidget(page, 'w', { preset: 'Three-By-Three', theme: 'DARK', show: 'inputs, Weights' });
  assert.equal(await statusText(w), '', 'no message');
  assert.equal(await background(w), 'rgb(32, 33, 39)', 'theme="DARK" is the dark theme');
  assert.equal(await w.locator('[data-heatmap="ex-weights"]').isVisible(), true, 'the weights show');
  assert.equal(await w.locator('[data-grid="ex-q"]').isVisible(), true, 'the inputs show');
  assert.equal(await w.locator('[data-panel="output"]').first().isVisible(), false, 'the output is left out');
  await expectExWeights(w, 'preset="Three-By-Three"');
  await w.evaluate((el) => el.setAttribute('theme', ' Light '));
  assert.equal(await background(w), 'rgb(255, 255, 255)');
  assert.equal(await statusText(w), '');
  assertClean(problems, 'any case');
  await context.close();
});

test('show naming a panel the preset does not draw says so; hidden steps keep their numbers', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const causal = await addWidget(page, 'causal', { preset: 'causal', show: 'scores' });
  const said = await statusText(causal);
  assert.match(said, /^show="scores": the preset "causal" has no scores panel \(it has [a-z, ]+\), so it shows none of its panels\.$/, `status line: ${JSON.stringify(said)}`);
  assert.equal(await causal.locator('[data-heatmap="mask-causal-weights"]').isVisible(), false, 'show="scores": no weights either');
  // A panel it has, and one it has not: the sentence says what is shown.
  await causal.evaluate((el) => el.setAttribute('show', 'weights scores'));
  const mixed = await statusText(causal);
  assert.match(mixed, /^show="weights scores": the preset "causal" has no scores panel \(it has [a-z, ]+\), so it shows only its weights panel\.$/,
    `status line: ${JSON.stringify(mixed)}`);
  assert.equal(await causal.locator('[data-heatmap="mask-causal-weights"]').isVisible(), true, 'show="weights scores": the weights show, as said');
  await causal.evaluate((el) => el.setAttribute('show', 'weights'));
  assert.equal(await statusText(causal), '', 'a panel the preset draws: no message');
  // The one-query steps are numbered 1-4; show="weights" leaves step 3 alone, still
  // numbered 3 (li.value: the number its value attribute gives it, 0 for none).
  const keys = await addWidget(page, 'keys', { preset: 'two-keys', show: 'weights' });
  const steps = await keys.locator('ol.steps > li').evaluateAll((lis) => lis.filter((li) => li.offsetParent !== null).map((li) => `${li.value}. ${li.querySelector('strong').textContent.trim()}`));
  assert.deepEqual(steps, ['3. Normalise.'], 'the steps shown, with the numbers the list gives them');
  assertClean(problems, 'show and steps');
  await context.close();
});

test('a break-it card with show="checks" shows its checks, and neither the weight maps nor their colour legend', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const w = await addWidget(page, 'w', { preset: 'break-it:no-scale', show: 'checks' });
  const card = w.locator('#bk-no-scale');
  await card.evaluate((n) => { n.open = true; }); // a lone card may open by itself
  await card.locator('button.bk-switch').click();
  assert.equal(await card.locator('.bk-checks').isVisible(), true, 'the checks show');
  const shown = await card.locator('.bk-maps > *').evaluateAll((ns) => ns.filter((n) => n.offsetParent !== null).map((n) => n.className || n.tagName));
  assert.deepEqual(shown, [], 'parts of the maps area still drawn');
  assertClean(problems, 'show=checks');
  await context.close();
});

test('with the README\'s accent for both themes, axe-core finds no contrast problem (light, dark, and auto on a dark system)', async () => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const element = readme.slice(readme.indexOf('### The element'), readme.indexOf('### The iframe'));
  const css = /```css\n([\s\S]*?)```/.exec(element)?.[1];
  assert.ok(css && /--attention-lab-accent:/.test(css) && /--attention-lab-accent-ink:/.test(css), 'the README gives an accent and its ink for both themes');
  const { context, page, problems } = await openFixture('host.html');
  await page.addStyleTag({ content: css });
  await page.emulateMedia({ colorScheme: 'dark' });
  const widgets = [];
  for (const theme of ['light', 'dark', 'auto']) widgets.push(await addWidget(page, theme, { preset: 'multi-head', theme, 'seq-len': '3' }));
  for (const w of widgets) await w.locator('details.more summary').click(); // the output table, too
  // The accent is the README's in each theme, and the button's text is its ink.
  const button = (id) => page.locator(`#${id} button[data-action="mha-draw"]`).evaluate((n) => [getComputedStyle(n).color, getComputedStyle(n).backgroundColor]);
  assert.deepEqual(await button('light'), ['rgb(255, 255, 255)', 'rgb(106, 44, 145)']);
  assert.deepEqual(await button('dark'), ['rgb(29, 11, 41)', 'rgb(215, 184, 238)']);
  assert.deepEqual(await button('auto'), ['rgb(29, 11, 41)', 'rgb(215, 184, 238)'], 'theme="auto" on a dark system');
  // Only contrast: this bare host page has other findings of its own (no h1), not the widgets' colours.
  await addAxe(page);
  const found = await page.evaluate(async () => (await window.axe.run(document, { runOnly: ['color-contrast'] })).violations
    .flatMap((v) => v.nodes.map((n) => `${n.target.join(' ')}: ${n.failureSummary}`)));
  assert.deepEqual(found, [], 'axe-core color-contrast');
  assertClean(problems, 'README accent');
  await context.close();
});

test('the README\'s parts of each preset are the parts the element draws', async () => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const list = readme.slice(readme.indexOf('- **parts**:'), readme.indexOf('For example, `attention-lab::part(container)'));
  const said = new Map();
  for (const [, names, parts] of list.matchAll(/^ {2}((?:`[^`]+`(?:, )?)+): ([^;.(]+)/gm)) {
    for (const [, name] of names.matchAll(/`([^`]+)`/g)) said.set(name, parts.trim() === 'none' ? [] : parts.split(', ').map((p) => p.trim()).sort());
  }
  const presets = [...said.keys()].map((name) => (name === 'break-it:<bug>' ? 'break-it:no-scale' : name));
  assert.ok(presets.length >= 15, `the README lists the parts of ${presets.length} presets: ${[...said.keys()].join(', ')}`);
  const { context, page, problems } = await openFixture('host.html');
  const wrong = [];
  for (const [k, preset] of presets.entries()) {
    const widget = await addWidget(page, `parts-${k}`, { preset });
    const drawn = await widget.evaluate((el) => [...new Set([...el.shadowRoot.querySelectorAll('[part]')]
      .flatMap((n) => n.getAttribute('part').split(' ')))].filter((p) => !['container', 'status', 'panel'].includes(p)).sort());
    const listed = said.get(preset === 'break-it:no-scale' ? 'break-it:<bug>' : preset);
    if (drawn.join() !== listed.join()) wrong.push(`${preset}: the README says ${listed.join(', ') || 'none'}, the element draws ${drawn.join(', ') || 'none'}`);
    await widget.evaluate((el) => el.remove());
  }
  assert.deepEqual(wrong, []);
  assertClean(problems, 'README parts');
  await context.close();
});

test('at 390 px the shape table fits the widget: nothing clipped, no sideways scroll, meanings at a readable width', async () => {
  const { context, page, problems } = await openFixture('host.html', { viewport: { width: 390, height: 844 } });
  const w = await addWidget(page, 'shape-widget', { preset: 'shapes' });
  const fit = await w.locator('table.shape-table').evaluate((table) => {
    const wrap = table.closest('.grid-wrap');
    const meanings = [...table.querySelectorAll('tbody td:last-child')];
    return {
      scroll: wrap.scrollWidth - wrap.clientWidth,
      clipped: [...table.querySelectorAll('caption, tbody th, tbody td')].filter((n) => n.scrollWidth > n.clientWidth + 1).map((n) => n.textContent),
      narrowest: Math.min(...meanings.map((n) => n.getBoundingClientRect().width)),
      rows: table.rows.length,
    };
  });
  assert.ok(fit.scroll <= 0, `the table's box does not scroll sideways (${fit.scroll} px too wide)`);
  assert.deepEqual(fit.clipped, [], 'no cell is clipped');
  assert.ok(fit.narrowest >= 250, `each meaning has the widget's width, not a word per line (${fit.narrowest} px)`);
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0, 'no sideways page scroll');
  // Still a table for a screen reader: a row per tensor, with its header cell.
  const rows = await w.locator('table.shape-table').ariaSnapshot();
  assert.match(rows, /- rowheader "Input x"/);
  assert.match(rows, /- columnheader "Meaning"/);
  assertClean(problems, 'shape table at 390 px');
  await context.close();
});

test('in a 288 px column (a 320 px phone) the widget takes its narrow padding, and the 3×3 weights scroll inside their box, saying so', async () => {
  const { context, page, problems } = await openFixture('host.html', { viewport: { width: 320, height: 700 } });
  await page.addStyleTag({ content: 'body { margin: 0; padding: 0 16px; }' }); // a course page's margins: a 288 px column
  const w = await addWidget(page, 'narrow', { preset: 'three-by-three' });
  // The widget's box, and what sticks out of it (ignoring what a box that scrolls or clips holds:
  // a wide map in its scroll box, the tables kept for screen readers only).
  const layout = (widget) => widget.evaluate((el) => {
    const root = el.shadowRoot.querySelector('.al-root');
    const box = root.getBoundingClientRect();
    const edge = box.right - parseFloat(getComputedStyle(root).borderRightWidth) - parseFloat(getComputedStyle(root).paddingRight); // of the content
    const holds = (n) => getComputedStyle(n).overflowX !== 'visible';
    const out = [...root.querySelectorAll('*')].filter((n) => {
      if (n.getClientRects().length === 0) return false;
      for (let p = n.parentElement; p && p !== root; p = p.parentElement) if (holds(p)) return false;
      return n.getBoundingClientRect().right > edge + 0.5;
    }).map((n) => `${n.tagName.toLowerCase()}.${n.className} ${n.dataset.slot ?? ''}`);
    const wrap = root.querySelector('[data-slot="weights"] .heatmap-wrap');
    return {
      width: Math.round(box.width), padding: getComputedStyle(root).paddingLeft, out,
      scrolls: wrap.scrollWidth > wrap.clientWidth, hint: wrap.dataset.overflows === '1', tabStop: wrap.getAttribute('tabindex'),
      // The keyboard reaches what scrolls: the box itself, or the map's own focusable weight (its one tab stop).
      cellStop: wrap.querySelector('[tabindex="0"]') !== null,
    };
  });
  await page.evaluate(() => new Promise((resolve) => requestIdleCallback(resolve, { timeout: 2000 }))); // the scroll boxes are marked
  const seen = await layout(w);
  assert.equal(seen.width, 288);
  assert.equal(seen.padding, '12px', `a narrow widget has the narrow padding (0.75em); seen ${seen.padding}`);
  assert.deepEqual(seen.out, [], 'nothing sticks out of the widget\'s content box into its padding or border');
  assert.ok(seen.scrolls && seen.hint && (seen.tabStop === '0') !== seen.cellStop,
    `the weights map scrolls in its own box, which says so, and one tab stop reaches it (the box, or else its focusable weight); seen ${JSON.stringify(seen)}`);
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0, 'no sideways page scroll');

  // The same widget in an iframe of that width: its page does not scroll sideways either.
  await page.evaluate(() => {
    const frame = document.createElement('iframe');
    frame.src = '/web/embed.html?preset=three-by-three';
    frame.title = 'attention-lab in a 288 px iframe';
    frame.style.cssText = 'width: 288px; height: 400px; border: 0';
    document.getElementById('widgets').append(frame);
  });
  const frame = page.frameLocator('iframe');
  await whenReady(frame.locator('attention-lab'));
  const inFrame = await frame.locator('html').evaluate((html) => ({ scroll: html.scrollWidth, client: html.clientWidth }));
  assert.ok(inFrame.scroll <= inFrame.client, `the iframe's page does not scroll sideways (${inFrame.scroll} px wide in ${inFrame.client})`);
  assertClean(problems, 'a 288 px column');
  await context.close();
});

test('a column that narrows while the window keeps its width: the weights box is measured again and says it scrolls', async () => {
  const { context, page, problems } = await openFixture('host.html', { viewport: { width: 1280, height: 800 } });
  await page.addStyleTag({ content: '#widgets { width: 1000px; }' });
  const w = await addWidget(page, 'column', { preset: 'three-by-three' });
  const idle = () => page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestIdleCallback(resolve, { timeout: 2000 }))));
  const marks = () => w.evaluate((el) => {
    const wrap = el.shadowRoot.querySelector('[data-slot="weights"] .heatmap-wrap');
    return { scrolls: wrap.scrollWidth > wrap.clientWidth + 1, hint: wrap.dataset.overflows === '1' };
  });
  await idle();
  assert.deepEqual(await marks(), { scrolls: false, hint: false }, 'in a 1000 px column the weights fit');
  // A course page's sidebar opens: the column narrows, the window does not.
  await page.evaluate(() => { document.getElementById('widgets').style.width = '288px'; });
  await idle();
  await idle();
  assert.deepEqual(await marks(), { scrolls: true, hint: true }, 'in a 288 px column the weights scroll, and their box says so');
  await page.evaluate(() => { document.getElementById('widgets').style.width = '1000px'; });
  await idle();
  await idle();
  assert.deepEqual(await marks(), { scrolls: false, hint: false }, 'wide again: the hint goes');
  assertClean(problems, 'a column that narrows');
  await context.close();
});

test('the dark theme rings a focused break-it control in a colour at least 3:1 against the card, and draws a locked chosen prediction in readable ink', async () => {
  const { context, page, problems } = await openFixture('host.html', { viewport: { width: 390, height: 844 } });
  const w = await addWidget(page, 'dark-card', { preset: 'break-it:no-scale', theme: 'dark' });
  await w.locator('#bk-no-scale').evaluate((n) => { n.open = true; });
  await page.locator('#before').focus();
  await page.keyboard.press('Tab'); // a keyboard user: focus rings show
  const rings = await w.evaluate((el) => {
    const rgb = (c) => c.match(/[\d.]+/g).map(Number);
    const lum = (c) => {
      const [r, g, b] = rgb(c).map((v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    const behind = (n) => {
      for (let p = n.parentElement; p; p = p.parentElement) {
        const c = getComputedStyle(p).backgroundColor;
        if (rgb(c)[3] !== 0) return c;
      }
      return 'rgb(255, 255, 255)';
    };
    const card = el.shadowRoot.querySelector('#bk-no-scale');
    const controls = [card.querySelector('summary'), card.querySelector('.bk-c-toggle'), card.querySelector('input[type="radio"]'), card.querySelector('.bk-switch')];
    const rings = controls.map((n) => {
      n.focus();
      const style = getComputedStyle(n);
      return { control: n.className || n.tagName.toLowerCase(), ring: style.outlineColor, width: style.outlineWidth, contrast: Number(contrast(style.outlineColor, behind(n)).toFixed(2)) };
    });
    // A prediction, then the bug on: the choices lock, the chosen one in full ink.
    card.querySelector('input[type="radio"]').click();
    card.querySelector('.bk-switch').click();
    const chosen = card.querySelector('input[type="radio"]:checked').closest('label');
    const ink = getComputedStyle(chosen).color;
    return { rings, chosen: { ink, contrast: Number(contrast(ink, behind(chosen)).toFixed(2)) } };
  });
  for (const ring of rings.rings) {
    assert.notEqual(ring.width, '0px', `${ring.control} has a focus ring`);
    assert.ok(ring.contrast >= 3, `${ring.control}: its focus ring (${ring.ring}) contrasts ${ring.contrast}:1 with the card`);
  }
  assert.ok(rings.chosen.contrast >= 4.5, `the locked chosen prediction (${rings.chosen.ink}) contrasts ${rings.chosen.contrast}:1 with the card`);
  assertClean(problems, 'dark focus rings');
  await context.close();
});

/** The contrast ratio (WCAG) of two computed colours, "rgb(r, g, b)". */
function contrastOf(a, b) {
  const lum = (c) => {
    const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map((v) => { const s = Number(v) / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return Number(((x + 0.05) / (y + 0.05)).toFixed(2));
}

/** A custom property of the widget's root as a computed colour. */
const rootColour = (w, name) => w.evaluate((el, name) => {
  const probe = el.shadowRoot.querySelector('.al-root').appendChild(document.createElement('span'));
  probe.style.color = `var(${name})`;
  const c = getComputedStyle(probe).color;
  probe.remove();
  return c;
}, name);

test('the dark theme draws the C code box dark, its text and every kind of token at least 4.5:1 against it', async () => {
  const { context, page, problems } = await openFixture('host.html');
  // A break-it card's "Read the C", and a C pass under the flow view.
  const card = await addWidget(page, 'dark-card-code', { preset: 'break-it:no-scale', theme: 'dark' });
  await card.locator('#bk-no-scale').evaluate((n) => { n.open = true; });
  await card.locator('.bk-c-toggle').click();
  const flow = await addWidget(page, 'dark-flow-code', { preset: 'one-query', theme: 'dark' });
  await flow.locator('details.c-pass').first().evaluate((n) => { n.open = true; });
  for (const [where, w] of [['"Read the C"', card], ['the flow view', flow]]) {
    const code = w.locator('pre.c-src').first();
    await code.waitFor();
    const seen = await code.evaluate((pre) => {
      const background = getComputedStyle(pre).backgroundColor;
      const inks = { text: getComputedStyle(pre).color };
      for (const cls of ['tok-kw', 'tok-num', 'tok-str', 'tok-com']) {
        const n = pre.querySelector(`.${cls}`) ?? pre.appendChild(Object.assign(document.createElement('span'), { className: cls }));
        inks[cls] = getComputedStyle(n).color;
      }
      return { background, inks };
    });
    for (const [what, ink] of Object.entries(seen.inks)) {
      const ratio = contrastOf(ink, seen.background);
      assert.ok(ratio >= 4.5, `dark C code in ${where}: ${what} (${ink}) contrasts ${ratio}:1 with the box (${seen.background})`);
    }
  }
  assertClean(problems, 'dark C code');
  await context.close();
});

test('the dark theme\'s hatch: its stripes tell apart, and its ink and a blocked NaN read at least 4.5:1 on both stripes', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const w = await addWidget(page, 'dark-nan', { preset: 'break-it:no-all-masked-guard', theme: 'dark' });
  await w.locator('#bk-no-all-masked-guard').evaluate((n) => { n.open = true; });
  await w.locator('.bk-switch').click();
  const nan = w.locator('.bk-cell.blocked.bk-nan').first();
  await nan.waitFor();
  const ink = await nan.evaluate((n) => getComputedStyle(n).color);
  const stripes = [await rootColour(w, '--hatch-a'), await rootColour(w, '--hatch-b')];
  const hatchInk = await rootColour(w, '--hatch-ink');
  const between = contrastOf(stripes[0], stripes[1]);
  assert.ok(between >= 2, `dark hatch: its stripes (${stripes.join(', ')}) contrast ${between}:1 with each other`);
  for (const stripe of stripes) {
    for (const [what, colour] of [['the hatch ink', hatchInk], ['a blocked NaN', ink]]) {
      const ratio = contrastOf(colour, stripe);
      assert.ok(ratio >= 4.5, `dark hatch: ${what} (${colour}) contrasts ${ratio}:1 with the stripe ${stripe}`);
    }
  }
  assertClean(problems, 'dark hatch');
  await context.close();
});

test('editable="false": the mask grid\'s cells look like display-only cells (flat, no pointer), in both themes', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const looks = (n) => {
    const s = getComputedStyle(n);
    return {
      background: s.backgroundColor, shadow: s.boxShadow, cursor: s.cursor, transform: s.transform,
      border: ['Top', 'Right', 'Bottom', 'Left'].map((side) => `${s[`border${side}Width`]} ${s[`border${side}Style`]} ${s[`border${side}Color`]}`).join(' / '),
    };
  };
  for (const theme of ['light', 'dark']) {
    // The causal preset draws display-only cells; custom-mask draws buttons.
    const shown = await addWidget(page, `shown-${theme}`, { preset: 'causal', theme });
    const locked = await addWidget(page, `locked-${theme}`, { preset: 'custom-mask', theme, editable: 'false' });
    const flat = await shown.locator('div.mask-cell.allowed').first().evaluate(looks);
    const cell = locked.locator('button.mask-cell.allowed').first();
    assert.equal(await cell.evaluate((n) => n.disabled), true, `${theme}: a read-only mask cell is disabled`);
    assert.deepEqual(await cell.evaluate(looks), flat, `${theme}: a read-only mask cell looks like a display-only one`);
    await cell.hover({ force: true });
    assert.deepEqual(await cell.evaluate(looks), flat, `${theme}: and stays so under the pointer`);
    // An editable widget's cells are still raised buttons.
    const editable = await addWidget(page, `editable-${theme}`, { preset: 'custom-mask', theme });
    const raised = await editable.locator('button.mask-cell.allowed').first().evaluate(looks);
    assert.notEqual(raised.shadow, 'none', `${theme}: an editable mask cell is raised`);
    assert.equal(raised.cursor, 'pointer', `${theme}: an editable mask cell shows a pointer`);
  }
  assertClean(problems, 'read-only mask cells');
  await context.close();
});

test('the dark theme draws the break-it card\'s "Read the C" as a link, as the light theme does, readable on the card', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const read = (el) => {
    const rgb = (c) => c.match(/[\d.]+/g).map(Number);
    const lum = (c) => {
      const [r, g, b] = rgb(c).map((v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    const toggle = el.shadowRoot.querySelector('.bk-c-toggle');
    let behind = 'rgb(255, 255, 255)';
    for (let p = toggle.parentElement; p; p = p.parentElement) {
      const c = getComputedStyle(p).backgroundColor;
      if (rgb(c)[3] !== 0) { behind = c; break; }
    }
    toggle.focus({ focusVisible: true });
    const s = getComputedStyle(toggle);
    const probe = toggle.parentElement.appendChild(document.createElement('span'));
    probe.style.color = 'var(--accent)';
    const accent = getComputedStyle(probe).color;
    probe.remove();
    return {
      box: { border: `${s.borderTopWidth} ${s.borderTopStyle}`, background: s.backgroundColor, padding: s.padding, shadow: s.boxShadow },
      text: Number(contrast(s.color, behind).toFixed(2)),
      ring: Number(contrast(s.outlineColor, behind).toFixed(2)),
      color: s.color, accent, behind,
    };
  };
  const light = await (await addWidget(page, 'c-light', { preset: 'break-it:no-scale' })).evaluate(read);
  const dark = await (await addWidget(page, 'c-dark', { preset: 'break-it:no-scale', theme: 'dark' })).evaluate(read);
  assert.deepEqual(light.box, { border: '0px none', background: 'rgba(0, 0, 0, 0)', padding: light.box.padding, shadow: 'none' }, 'light: no box');
  assert.deepEqual(dark.box, light.box, 'dark: drawn like the light one (no border, no background)');
  assert.ok(dark.text >= 4.5, `dark: its text (${dark.color}) contrasts ${dark.text}:1 with the card (${dark.behind})`);
  assert.ok(dark.ring >= 3, `dark: its focus ring contrasts ${dark.ring}:1 with the card`);
  assert.equal(dark.color, dark.accent, 'dark: it takes the theme\'s link colour (the accent), as the light one takes its blue');
  assertClean(problems, '"Read the C" in both themes');
  await context.close();
});

test('keyboard only: Tab into the element, type, toggle, and the numbers follow the core', async () => {
  const { context, page, problems } = await openFixture('host.html');
  const w = await addWidget(page, 'k', { preset: 'two-keys' });
  await page.locator('#before').focus();
  await page.keyboard.press('Tab');
  const focused = () => page.evaluate(() => {
    let el = document.activeElement;
    while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
    return el ? el.getAttribute('aria-label') || el.getAttribute('data-field') || el.tagName : null;
  });
  assert.equal(await focused(), 'Query q, d1', 'Tab goes from the page into the widget');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('2');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('-1.5');
  const out = (key) => w.locator(`[data-out="${key}"]`).textContent();
  const nums = (text) => text.replace(/[[\]]/g, '').split(',').map(String);
  let r = lab.sdpa([[2, -1.5]], [[1, 0], [0, 1]], [[10, 0], [0, 20]]);
  checkShown('weights after typing', nums(await out('one-weights')), r.weights.data, 3);
  checkShown('output after typing', nums(await out('one-output')), r.output.data, 3);

  // On to the checkbox by Tab alone, and Space blocks key 2.
  for (let i = 0; i < 10 && (await focused()) !== 'one-first'; i++) await page.keyboard.press('Tab');
  assert.equal(await focused(), 'one-first');
  await page.keyboard.press('Space');
  r = lab.sdpa([[2, -1.5]], [[1, 0], [0, 1]], [[10, 0], [0, 20]], { mask: [[1, 0]] });
  assert.equal(await out('one-weights'), '[1.000, 0.000]');
  checkShown('output with key 2 blocked', nums(await out('one-output')), r.output.data, 3);
  assert.equal(await w.evaluate((el) => el.state), 'one.q=2,-1.5&one.first=1');
  assertClean(problems, 'keyboard');
  await context.close();
});

test('on a strict-CSP page: no securitypolicyviolation, and the widgets and the iframe work', async () => {
  const strict = await startServer({ root: ROOT, headers: () => ({ 'content-security-policy': CSP }) });
  try {
    const { context, page, problems } = await openPage(suite.browser, strict.url);
    // In every frame, from the first moment (init scripts are not subject to the page's CSP).
    await context.addInitScript(() => {
      window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    const violations = async (p) => (await Promise.all(p.frames().map((f) => f.evaluate(() => window.cspViolations)))).flat();
    await page.goto(`${strict.url}tests/fixtures/csp.html`);
    for (const id of ['ex', 'bk', 'mh']) await whenReady(page.locator(`#${id}`));
    // The listener works: a style attribute set from script is a violation, and is seen (then forgotten).
    await page.evaluate(() => document.body.setAttribute('style', 'color: red'));
    await page.waitForFunction(() => window.cspViolations.length === 1);
    assert.match((await violations(page))[0], /style-src/);
    await page.evaluate(() => { window.cspViolations.length = 0; });
    problems.consoleErrors.length = 0;
    const ex = page.locator('#ex');
    await typeInto(page, ex.locator('[data-grid="ex-v"] input[data-row="0"][data-col="1"]'), '7');
    await typeInto(page, ex.locator('[data-grid="ex-q"] input[data-row="2"][data-col="3"]'), '2');
    await expectExWeights(ex, 'under CSP');
    // The styles arrived (constructable stylesheets): a styled heatmap grid and the card's colours.
    assert.equal(await ex.locator('.heatmap').first().evaluate((n) => getComputedStyle(n).display), 'inline-grid');
    const bk = page.locator('#bk');
    await bk.locator('button.bk-switch').click();
    assert.equal(await bk.locator('[data-check="rowSumsOne"]').getAttribute('data-state'), 'fail');
    assert.notEqual(await bk.locator('td.bk-cell').first().evaluate((n) => getComputedStyle(n).backgroundColor), 'rgba(0, 0, 0, 0)');
    assert.equal(await page.locator('#mh').locator('.head-map').count(), 2);
    // The iframe: embed.html under the same policy.
    const frame = page.frameLocator('#frame');
    assert.equal(await frame.locator('[data-heatmap="mask-causal-weights"] .hm-cell').count(), 16);
    // The lesson page itself, too.
    const lesson = await context.newPage();
    await lesson.goto(`${strict.url}web/index.html`);
    await lesson.waitForSelector('html[data-ready="true"]');
    await lesson.locator('#bk-no-scale summary').click();
    await lesson.locator('#bk-no-scale button.bk-switch').click();
    await page.waitForTimeout(100); // a violation event is dispatched asynchronously
    assert.deepEqual([...await violations(page), ...await violations(lesson)], [], 'no CSP violation in the page, its iframe or the lesson');
    assertClean(problems, 'strict CSP');
    await context.close();
  } finally {
    await strict.close();
  }
});

test('loaded from another origin with CORS headers, the element works', async () => {
  const cdn = await startServer({ root: join(ROOT, 'dist'), headers: () => ({ 'access-control-allow-origin': '*' }) });
  try {
    const session = await openPage(suite.browser, suite.server.url);
    const { context, page, problems } = session;
    problems.foreignRequests = []; // this page is meant to load from the other origin
    await context.unroute('**/*');
    await page.goto(`${suite.server.url}tests/fixtures/cors.html?lab=${encodeURIComponent(cdn.url)}`);
    await page.waitForFunction(() => document.documentElement.dataset.ready);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.ready), 'true');
    const r = lab.sdpa([[1, 0]], [[1, 0], [0, 1]], [[10, 0], [0, 20]]);
    const shown = (await page.locator('attention-lab [data-out="one-weights"]').textContent()).replace(/[[\]]/g, '').split(',');
    checkShown('cross-origin widget', shown, r.weights.data, 3);
    assert.deepEqual(problems.pageErrors, []);
    assert.deepEqual(problems.consoleErrors, []);
    await context.close();
  } finally {
    await cdn.close();
  }
});

// ---------------------------------------------------------------------------
// The iframe
// ---------------------------------------------------------------------------

test('embed.html takes the element\'s options from its query string, d-model included, and from its hash; the query wins', async () => {
  const embed = async (address) => {
    const session = await suite.open(`web/embed.html${address}`, { ready: false });
    const widget = session.page.locator('attention-lab');
    await whenReady(widget);
    const attrs = await widget.evaluate((el) => Object.fromEntries([...el.attributes].map((a) => [a.name, a.value])));
    return { ...session, widget, attrs };
  };
  const num = (w, name) => w.locator(`input[data-field="${name}"]`).inputValue();

  const mh = await embed('?preset=multi-head&heads=2&d-model=16');
  assert.equal(await num(mh.widget, 'mha-dmodel'), '16', `d-model=16 gives d_model 16; the element got ${JSON.stringify(mh.attrs)}`);
  assert.equal(await mh.widget.locator('.head-map').count(), 2, 'heads=2: two maps');
  assert.equal(await mh.widget.evaluate((el) => el.state), 'mha.dmodel=16&mha.heads=2');
  // The widget is the frame's main landmark: a screen reader in an LMS page can jump to it.
  assert.equal(await mh.page.locator('main attention-lab').count(), 1, 'the widget sits in the page\'s one <main>');
  assert.equal(await mh.page.locator('main').count(), 1);
  assert.match(await mh.page.locator('main').getAttribute('aria-label') ?? '', /^attention-lab: /, 'named as the widget is, so that frames are told apart');
  assertClean(mh.problems, 'embed query');
  await mh.context.close();

  // A course author who writes the options after "#" gets them too.
  const hashed = await embed('#preset=causal&seq-len=3');
  assert.deepEqual(hashed.attrs, { preset: 'causal', 'seq-len': '3' }, 'the hash\'s options reach the element');
  assert.equal(await hashed.widget.locator('[data-heatmap="mask-causal-weights"] .hm-cell').count(), 9, 'causal, 3 × 3');
  assertClean(hashed.problems, 'embed hash');
  await hashed.context.close();

  // Both: each option from the query string when it has it, otherwise from the hash.
  const both = await embed('?preset=masks#preset=causal&theme=dark');
  assert.deepEqual(both.attrs, { preset: 'masks', theme: 'dark' }, 'the query string wins, the hash fills in');
  assertClean(both.problems, 'embed query and hash');
  await both.context.close();
});

test('embed.html takes a state written as it is (its fields after "&") or percent-encoded, and names an unknown option', async () => {
  const embed = async (address) => {
    // The page's warnings, from its first script on.
    const init = () => {
      window.warned = [];
      const warn = console.warn.bind(console);
      console.warn = (...args) => { window.warned.push(args.join(' ')); warn(...args); };
    };
    const session = await suite.open(`web/embed.html${address}`, { ready: false, init });
    const widget = session.page.locator('attention-lab');
    await whenReady(widget);
    const status = await session.page.locator('#embed-status').evaluate((n) => (n.hidden ? '' : n.textContent));
    const warnings = (await session.page.evaluate(() => window.warned)).filter((t) => t.startsWith('embed.html:'));
    return { ...session, widget, status, warnings };
  };
  for (const address of ['?preset=multi-head&state=mha.heads=2&mha.dmodel=8', '?preset=multi-head&state=mha.heads%3D2%26mha.dmodel%3D8',
    '#preset=multi-head&state=mha.heads=2&mha.dmodel=8', '?preset=multi-head&mha.dmodel=8&mha.heads=2']) {
    const e = await embed(address);
    assert.equal(await e.widget.evaluate((el) => el.state), 'mha.dmodel=8&mha.heads=2', `${address}: both fields reach the widget`);
    assert.equal(await e.widget.locator('.head-map').count(), 2, `${address}: two heads`);
    assert.equal(e.status, '', `${address}: no message`);
    assertClean(e.problems, address);
    await e.context.close();
  }

  const odd = await embed('?preset=causal&sequence=3&colour=red#thme=dark');
  assert.equal(odd.status, 'embed.html: "sequence", "colour", "thme" are not options of this page, so they were ignored '
    + '(use preset, editable, heads, d-model, seq-len, show, state, theme, label, origin, or the fields of a state such as mha.heads).');
  assert.equal(await odd.page.locator('#embed-status').isVisible(), true, 'the message is shown');
  assert.equal(await odd.widget.locator('[data-heatmap="mask-causal-weights"] .hm-cell').count(), 16, 'the known options still apply');
  assert.equal(odd.warnings.length, 1, `and written to the console; seen ${JSON.stringify(odd.warnings)}`);
  assertClean(odd.problems, 'unknown embed options');
  await odd.context.close();
});

test('the iframe posts resize and result messages to a parent on another origin, and ignores what it is sent', async () => {
  const other = await startServer({ root: ROOT }); // another port: another origin
  try {
    const embedUrl = `${other.url}web/embed.html?preset=break-it:no-scale&theme=auto`;
    const { context, page, problems } = await openPage(suite.browser, suite.server.url);
    await context.unroute('**/*'); // the parent loads its iframe from the other origin on purpose
    await page.goto(`${suite.server.url}tests/fixtures/parent.html?embed=${encodeURIComponent(embedUrl)}`);
    const embedOrigin = other.url.replace(/\/$/, '');
    // The first report comes while the core loads; then the card's height.
    // Each height is posted in both forms, one message after the other: wait
    // until the last of each says the same height.
    const lastHeights = () => page.evaluate(() => ['attention-lab:resize', 'lti.frameResize']
      .map((kind) => window.messages.findLast((m) => m.data?.type === kind || m.data?.subject === kind)?.data.height));
    await waitForState(page, () => {
      const last = (kind) => window.messages.findLast((m) => m.data?.type === kind || m.data?.subject === kind)?.data.height;
      return last('lti.frameResize') > 300 && last('attention-lab:resize') === last('lti.frameResize');
    }, null, async () => `the card's height in both resize messages (last heights: ${await lastHeights()})`);
    const messages = () => page.evaluate(() => window.messages);
    const first = await messages();
    const resize = first.findLast((m) => m.data?.type === 'attention-lab:resize');
    const canvas = first.findLast((m) => m.data?.subject === 'lti.frameResize');
    assert.ok(resize && canvas, 'both forms of resize message');
    assert.equal(resize.origin, embedOrigin);
    assert.ok(resize.fromFrame, 'sent by the iframe');
    assert.equal(canvas.data.height, resize.data.height);
    assert.ok(resize.data.height > 300, `the card is taller than the frame (${resize.data.height})`);

    const frame = page.frameLocator('iframe');
    const card = frame.locator('#bk-no-scale');

    // The parent (or anything) posts to the iframe: nothing happens.
    const stateBefore = await frame.locator('attention-lab').evaluate((el) => el.state);
    await page.evaluate(() => {
      const win = document.querySelector('iframe').contentWindow;
      for (const data of [{ type: 'attention-lab:state', state: 'brk.s=h3-0-0-0-0-0-0-0-0-0-0-0' }, '<img src=x onerror=alert(1)>',
        { subject: 'lti.frameResize', height: 1 }, { type: 'attention-lab:result', exercise: 'no-scale', passed: true }, null]) {
        win.postMessage(data, '*');
      }
    });
    await page.waitForTimeout(100);
    assert.equal(await frame.locator('attention-lab').evaluate((el) => el.state), stateBefore, 'incoming messages change nothing');
    assert.equal(await card.locator('button.bk-switch').getAttribute('aria-pressed'), 'false');

    // A wrong prediction: one result message; the prediction is then locked.
    await card.getByRole('radio', { name: 'Rows sum to 1' }).check();
    await card.locator('button.bk-switch').click();
    await page.waitForFunction(() => window.messages.filter((m) => m.data?.type === 'attention-lab:result').length === 1);
    assert.equal(await card.getByRole('radio', { name: 'Scores scaled by 1/√dk' }).isDisabled(), true);
    const results = (await messages()).filter((m) => m.data?.type === 'attention-lab:result');
    assert.deepEqual(results.map((m) => m.data), [
      { type: 'attention-lab:result', exercise: 'no-scale', passed: false, saved: true },
    ]);
    assert.ok(results.every((m) => m.origin === embedOrigin && m.fromFrame));

    // The card grew (the repair box appeared): the new height is sent.
    const actual = await frame.locator('html').evaluate((n) => Math.ceil(n.getBoundingClientRect().height));
    await page.waitForFunction((h) => window.messages.filter((m) => m.data?.type === 'attention-lab:resize').at(-1).data.height === h,
      actual, { timeout: 30000 });
    const heights = (await messages()).filter((m) => m.data?.type === 'attention-lab:resize').map((m) => m.data.height);
    assert.ok(heights.length >= 3 && new Set(heights).size >= 3, `the height changes are reported (${heights})`);
    assert.deepEqual(problems.pageErrors, []);
    assert.deepEqual(problems.consoleErrors, []);
    await context.close();
  } finally {
    await other.close();
  }
});

test('the iframe keeps a card\'s first outcome through a reload: the card opens decided, and no second result is posted; other options keep their own', async () => {
  const { context, page, problems } = await openPage(suite.browser, suite.server.url);
  const open = async (options) => {
    await page.goto(`${suite.server.url}tests/fixtures/parent.html?embed=${encodeURIComponent(`${suite.server.url}web/embed.html#${options}`)}`);
    const card = page.frameLocator('iframe').locator('#bk-no-scale');
    await card.locator('button.bk-switch').waitFor();
    return card;
  };
  const results = () => page.evaluate(() => window.messages.filter((m) => m.data?.type === 'attention-lab:result').map((m) => m.data));
  let card = await open('preset=break-it:no-scale');
  await card.getByRole('radio', { name: 'Rows sum to 1' }).check();
  await card.locator('button.bk-switch').click();
  await page.waitForFunction(() => window.messages.some((m) => m.data?.type === 'attention-lab:result'));
  assert.deepEqual(await results(), [{ type: 'attention-lab:result', exercise: 'no-scale', passed: false, saved: true }]);

  await page.reload();
  card = page.frameLocator('iframe').locator('#bk-no-scale');
  await card.locator('button.bk-switch').waitFor();
  assert.equal(await card.getByRole('radio', { name: 'Rows sum to 1' }).isChecked(), true, 'the prediction made before the reload');
  assert.equal(await card.getByRole('radio', { name: 'Scores scaled by 1/√dk' }).isDisabled(), true, 'still locked');
  assert.match(await card.locator('.bk-verdict').textContent(), /scores no point/);
  await card.locator('button.bk-switch').click(); // off
  await card.locator('button.bk-switch').click(); // on again
  // A probe posted from the frame after the clicks arrives after any result they posted.
  await page.frames().find((f) => f !== page.mainFrame()).evaluate(() => parent.postMessage({ type: 'probe' }, '*'));
  await page.waitForFunction(() => window.messages.some((m) => m.data?.type === 'probe'));
  assert.deepEqual(await results(), [], 'no second result after a reload');

  // The same card with other options (another course's frame) keeps its own record.
  card = await open('preset=break-it:no-scale&theme=dark');
  assert.equal(await card.getByRole('radio', { name: 'Scores scaled by 1/√dk' }).isDisabled(), false);
  assertClean(problems, 'iframe across reloads');
  await context.close();
});

test('the iframe\'s origin option: a valid one gets the messages; one that is not an origin is named, and nothing is posted', async () => {
  const other = await startServer({ root: ROOT }); // the iframe on another origin than its parent
  const parentOrigin = suite.server.url.replace(/\/$/, '');
  const openParent = async (options) => {
    const { context, page, problems } = await openPage(suite.browser, suite.server.url);
    await context.unroute('**/*'); // the parent loads its iframe from the other origin on purpose
    const warnings = consoleWarnings(page); // a frame's console messages come to its page
    const embedUrl = `${other.url}web/embed.html?${options}&preset=causal`;
    await page.goto(`${suite.server.url}tests/fixtures/parent.html?embed=${encodeURIComponent(embedUrl)}`);
    const frame = page.frameLocator('iframe');
    await frame.locator('attention-lab').evaluate((el) => el.ready);
    const status = await frame.locator('#embed-status').evaluate((n) => (n.hidden ? '' : n.textContent));
    return { context, page, problems, warnings, status, fromFrame: () => page.evaluate(() => window.messages.filter((m) => m.fromFrame)) };
  };
  try {
    // The parent's own origin: the messages reach it.
    const valid = await openParent(`origin=${encodeURIComponent(parentOrigin)}`);
    assert.equal(valid.status, '', 'a valid origin: no message');
    await valid.page.waitForFunction(() => window.messages.some((m) => m.fromFrame && m.data?.type === 'attention-lab:resize'), null, { timeout: 30000 });
    assertClean(valid.problems, 'valid origin');
    await valid.context.close();

    for (const given of ['lms.example.edu', 'null']) {
      const bad = await openParent(`origin=${given}`);
      assert.equal(bad.status, `embed.html: the option origin="${given}" is not an origin (write one as https://lms.example.edu: a scheme, a host, and a port if any), `
        + 'so no message is posted to the parent page.', `origin=${given} is named`);
      assert.equal(bad.warnings.filter((t) => t.startsWith('embed.html:') && t.includes(`origin="${given}"`)).length, 1, `and warned once in the console; seen ${JSON.stringify(bad.warnings)}`);
      await bad.page.waitForTimeout(300); // the first resize message is posted as soon as the widget is drawn
      assert.deepEqual(await bad.fromFrame(), [], `origin=${given}: nothing is posted to the parent`);
      assertClean(bad.problems, `origin=${given}`);
      await bad.context.close();
    }
  } finally {
    await other.close();
  }
});

// ---------------------------------------------------------------------------
// The single file, the demo course page, the README
// ---------------------------------------------------------------------------

test('dist/attention-lab.html works from file:// with the network blocked', async () => {
  const file = pathToFileURL(join(ROOT, 'dist', 'attention-lab.html')).href;
  const context = await suite.browser.newContext();
  await context.setOffline(true);
  const blocked = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.split('#')[0] === file) return route.continue();
    blocked.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(file);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 15000 });
  assert.match(await page.locator('#boot-status').textContent(), /Computed live by the attention core/);
  await typeInto(page, page.locator('[data-grid="ex-q"] input[data-row="0"][data-col="2"]'), '-2');
  await expectExWeights(page, 'single file');
  // The hash is written once edits pause.
  await page.waitForFunction(() => /ex\.q=1,0,-2,0/.test(location.hash), null, { timeout: 30000 });
  // The full lesson, with the break-it lab.
  assert.equal(await page.locator('main > section').count(), SECTIONS.length);
  const card = page.locator('#bk-no-causal-mask');
  await card.locator('summary').click();
  await card.locator('button.bk-switch').click();
  assert.equal(await card.locator('[data-check="noFutureLeak"]').getAttribute('data-state'), 'fail');
  assert.deepEqual(blocked, [], 'no request left the file');
  assert.deepEqual(errors, []);
  await context.close();
});

test('the demo course page: axe-core finds nothing, at 1280 px and 390 px (screenshots)', async () => {
  await mkdir(SHOTS, { recursive: true });
  // One page, opened at the first size and resized to the next: the widgets
  // and the iframes lay themselves out again, and each iframe is sized again.
  const VIEWPORTS = [{ width: 1280, height: 900 }, { width: 390, height: 844 }];
  const { context, page, problems } = await suite.open('web/course-demo.html', { viewport: VIEWPORTS[0], ready: false });
  for (const widget of await page.locator('attention-lab').all()) await whenReady(widget);
  for (const viewport of VIEWPORTS) {
    if (viewport !== VIEWPORTS[0]) await resizeTo(page, viewport.width, viewport.height);
    for (const frame of await page.locator('iframe').all()) await frame.scrollIntoViewIfNeeded();
    await page.waitForFunction(() => [...document.querySelectorAll('iframe')].every((f) => f.contentDocument?.querySelector('attention-lab')?.shadowRoot?.querySelector('.al-section')));
    // Each iframe is sized to its content by the page's listener (course-demo.js): no inner scroll bar.
    await page.waitForFunction(() => [...document.querySelectorAll('iframe')].every((f) => f.style.height !== ''
      && Math.abs(f.getBoundingClientRect().height - f.contentDocument.documentElement.scrollHeight) <= 1), undefined, { timeout: 10000 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no sideways page scroll at ${viewport.width} px (${overflow} px)`);
    // The page styles a widget through the documented hooks only: a custom property and ::part(container).
    const brand = page.locator('attention-lab.brand .al-root');
    assert.deepEqual(await brand.evaluate((n) => [getComputedStyle(n).borderTopWidth, getComputedStyle(n).backgroundColor]),
      ['2px', 'rgb(255, 253, 248)']);
    await screenshot(page, `${SHOTS}course-demo-${viewport.width}.png`, { fullPage: true });
    for (const frame of page.frames().slice(1)) await addAxe(frame);
    await runAxe(page, `course demo at ${viewport.width} px`);
    assertClean(problems, `course demo at ${viewport.width} px`);
  }
  await context.close();
});

test('the demo course page reports an exercise as it happened: switched on without a prediction is no point, not a wrong prediction', async () => {
  const { context, page, problems } = await suite.open('web/course-demo.html', { ready: false });
  const results = page.locator('#results');
  // The result arrives when the bug is first switched on, before the card is finished (broken and repaired).
  assert.doesNotMatch(await results.textContent(), /finished/, 'the waiting text does not promise a finished exercise');
  const iframe = page.locator('iframe[src*="break-it"]');
  await iframe.scrollIntoViewIfNeeded();
  const card = page.frameLocator('iframe[src*="break-it"]');
  await card.locator('button.bk-switch').click(); // no prediction chosen
  await assert.doesNotReject(page.waitForFunction(() => document.getElementById('results').textContent.includes('no-scale')));
  const text = await results.textContent();
  assert.match(await card.locator('.bk-verdict').textContent(), /before a prediction was made/);
  assert.doesNotMatch(text, /prediction wrong/, `no prediction was made, so the page must not call it wrong: "${text}"`);
  assert.match(text, /no point/, `the page says what the exercise scored: "${text}"`);
  assertClean(problems, 'demo result');
  await context.close();
});

test('the demo course page\'s text matches its widgets: a widget said to show "only" some panels shows no others', async () => {
  const { context, page, problems } = await suite.open('web/course-demo.html', { ready: false });
  for (const widget of await page.locator('attention-lab[show]').all()) {
    await whenReady(widget);
    // The panels drawn (the parts named "panel …"), and the paragraph that introduces the widget.
    const panels = await widget.evaluate((el) => [...el.shadowRoot.querySelectorAll('[part~="panel"]')]
      .filter((n) => n.checkVisibility()).map((n) => n.getAttribute('part').split(' ').find((p) => p !== 'panel')));
    const intro = await widget.evaluate((el) => {
      let p = el.previousElementSibling;
      while (p && p.tagName !== 'P') p = p.previousElementSibling;
      return p ? p.textContent : '';
    });
    if (!/\bonly\b/.test(intro)) continue;
    for (const panel of new Set(panels)) {
      assert.ok(new RegExp(`\\b${panel}`).test(intro), `the widget shows its ${panel} panel, but its introduction says: "${intro}"`);
    }
  }
  assertClean(problems, 'demo text');
  await context.close();
});

test('the README snippets work when pasted into a fresh page', async () => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Embed in your course'), readme.indexOf('## Benchmark'));
  const snippets = [...section.matchAll(/```html\n([\s\S]*?)```/g)].map((m) => m[1]);
  const element = snippets.find((s) => s.includes('<attention-lab '));
  const iframe = snippets.find((s) => s.includes('<iframe'));
  const single = snippets.find((s) => s.includes('attention-lab.html'));
  assert.ok(element && iframe && single, 'the element, iframe and single-file snippets are there');

  // A fresh site: dist/ copied as attention-lab/, one page per snippet.
  const site = await mkdtemp(join(tmpdir(), 'attention-lab-site-'));
  const fresh = await startServer({ root: site });
  try {
    await cp(join(ROOT, 'dist'), join(site, 'attention-lab'), { recursive: true });
    const page = (body) => `<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Course</title></head>\n<body>\n<p>Text before.</p>\n${body}\n<p>Text after.</p>\n</body>\n</html>\n`;
    await writeFile(join(site, 'element.html'), page(element));
    await writeFile(join(site, 'iframe.html'), page(iframe));
    await writeFile(join(site, 'single.html'), page(single));
    const { context, page: tab, problems } = await openPage(suite.browser, fresh.url);

    await tab.goto(`${fresh.url}element.html`);
    const widget = tab.locator('attention-lab');
    await whenReady(widget);
    const T = Number(await widget.locator('input[data-field="mask-ct"]').inputValue());
    assert.equal(T, 5, 'seq-len="5" from the snippet');
    const z = { data: new Float32Array(T), shape: [T, 1] };
    const causal = { data: Array.from({ length: T * T }, (_, x) => (x % T <= Math.floor(x / T) ? 1 : 0)), shape: [T, T] };
    checkShown('element snippet', await heat(widget, 'mask-causal-weights'), lab.sdpa(z, z, z, { mask: causal }).weights.data, 3);

    await tab.goto(`${fresh.url}iframe.html`);
    // The first height comes while the core loads; wait for the widget's own.
    await tab.waitForFunction(() => {
      const f = document.querySelector('iframe.attention-lab');
      return f.contentDocument?.querySelector('attention-lab')?.shadowRoot.querySelector('.al-section')
        && Math.abs(f.getBoundingClientRect().height - f.contentDocument.documentElement.getBoundingClientRect().height) <= 1;
    });
    const { frameHeight, content } = await tab.evaluate(() => {
      const f = document.querySelector('iframe.attention-lab');
      return { frameHeight: f.getBoundingClientRect().height, content: f.contentDocument.documentElement.getBoundingClientRect().height };
    });
    assert.ok(Math.abs(frameHeight - Math.ceil(content)) <= 1, `the listener sized the iframe to its content (${frameHeight} vs ${content})`);
    assert.equal(await tab.frameLocator('iframe').locator('[data-heatmap="mask-causal-weights"] .hm-cell').count(), 16);

    await tab.goto(`${fresh.url}single.html`);
    await tab.locator('a').click();
    await tab.waitForSelector('html[data-ready="true"]');
    await expectExWeights(tab, 'single file, linked');
    assertClean(problems, 'README snippets');
    await context.close();
  } finally {
    await fresh.close();
    await rm(site, { recursive: true, force: true });
  }
});
