// <attention-lab> as a course author meets it: properties set by a page
// script before the element is defined, the npm package bundled with
// esbuild's defaults and its file locations set in the app's module body, a
// start that failed and is tried again, size attributes removed, the preset
// names in the .d.ts, and embed.html opened from a disk. In Debian's
// Chromium, against the repository (and, for the bundles, a folder built
// here in a temporary directory).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { browserSuite, openPage, startServer, assertClean } from './helpers/browser.mjs';
import { PRESET_NAMES } from '../web/attention-lab.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = join(ROOT, 'web');
const suite = browserSuite({ root: ROOT });

const temps = [];
after(() => Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true }))));

/** A page at `path` on the repository's server whose HTML is `html` (it need not exist on disk). */
async function openHtml(path, html) {
  const session = await openPage(suite.browser, suite.server.url);
  await session.page.route(`${suite.server.url}${path}`, (route) => route.fulfill({ contentType: 'text/html', body: html }));
  await session.page.goto(`${suite.server.url}${path}`);
  return session;
}

const whenReady = (locator) => locator.evaluate((el) => el.ready);

// ---------------------------------------------------------------------------
// Without a browser
// ---------------------------------------------------------------------------

test('every preset name the element accepts is in AttentionLabPreset (attention-lab.d.ts)', async () => {
  const dts = await readFile(join(WEB, 'attention-lab.d.ts'), 'utf8');
  const type = /export type AttentionLabPreset =([^;]*);/.exec(dts)?.[1];
  assert.ok(type, 'attention-lab.d.ts declares AttentionLabPreset');
  const names = new Set([...type.matchAll(/'([^']+)'/g)].map((m) => m[1]));
  const bugs = /export type BugName =([^;]*);/.exec(await readFile(join(WEB, 'attention.d.ts'), 'utf8'))[1];
  const bugNames = new Set([...bugs.matchAll(/'([^']+)'/g)].map((m) => m[1]));
  const missing = PRESET_NAMES.filter((name) => {
    const bug = /^break-it:(.+)$/.exec(name)?.[1];
    return bug ? !(type.includes('`break-it:${BugName}`') && bugNames.has(bug)) : !names.has(name);
  });
  assert.deepEqual(missing, [], `attention-lab.d.ts: AttentionLabPreset lacks ${missing.join(', ')}`);
});

test('the package\'s element bundles with esbuild\'s default options (browser, esm, nothing external)', async () => {
  let result;
  try {
    result = await build({
      stdin: { contents: "import 'attention-lab/element';\nimport 'attention-lab';\n", resolveDir: join(ROOT, 'tests') },
      bundle: true, format: 'esm', write: false, logLevel: 'silent',
    });
  } catch (err) {
    assert.fail(`esbuild could not bundle attention-lab/element: ${err.errors.map((e) => e.text).join('; ')}`);
  }
  assert.deepEqual(result.warnings.map((w) => w.text), [], 'esbuild warnings');
});

// ---------------------------------------------------------------------------
// Properties set before the element is defined
// ---------------------------------------------------------------------------

test('state and preset set by a page script before the element is defined are applied when it is', async () => {
  const state = 'ex.q=2,0,1,0;0,1,0,1;1,1,0,0';
  const { context, page, problems } = await openHtml('tests/author-upgrade.html', `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Upgrade</title><link rel="icon" href="data:,">
<script type="module" src="/web/attention-lab.js"></script></head>
<body>
<attention-lab id="e1"></attention-lab>
<attention-lab id="e2"></attention-lab>
<attention-lab id="e3"></attention-lab>
<script>
  e1.state = '${state}';
  e2.preset = 'causal';
  e3.state = 'not a state';
  window.before = [customElements.get('attention-lab') === undefined, e1.state, e2.preset];
</script>
</body></html>`);
  assert.deepEqual(await page.evaluate(() => window.before), [true, state, 'causal'], 'the script ran before the element was defined');
  for (const id of ['e1', 'e2', 'e3']) await whenReady(page.locator(`#${id}`));
  const seen = await page.evaluate(() => ({
    own: ['e1', 'e2', 'e3'].flatMap((id) => ['state', 'preset'].filter((name) => Object.hasOwn(document.getElementById(id), name)).map((n) => `${id}.${n}`)),
    e1State: e1.state,
    e1Row: [...e1.shadowRoot.querySelectorAll('[data-grid="ex-q"] input[data-row="0"]')].map((n) => Number(n.value)),
    e2Preset: e2.preset,
    e2Attribute: e2.getAttribute('preset'),
    e2Label: e2.shadowRoot.querySelector('.al-root').getAttribute('aria-label'),
    e3State: e3.state,
    fresh: document.createElement('attention-lab').state,
  }));
  assert.deepEqual(seen.own, [], 'no own property is left hiding the accessors');
  assert.match(seen.e1State, /ex\.q=2,0,1,0;0,1,0,1;1,1,0,0/, `e1.state reads back the state set (${seen.e1State})`);
  assert.deepEqual(seen.e1Row, [2, 0, 1, 0], 'e1 shows the state set: the first row of Q');
  assert.equal(seen.e2Preset, 'causal');
  assert.equal(seen.e2Attribute, 'causal', 'the preset went through the accessor (the attribute)');
  assert.match(seen.e2Label, /causal/i, `e2 draws the causal preset (its label is "${seen.e2Label}")`);
  // An invalid state is refused as setting it would refuse it: an error naming it, and the defaults.
  assert.equal(seen.e3State, seen.fresh, 'e3 keeps its defaults');
  assert.equal(problems.pageErrors.length, 1, `one error, for e3's state: ${problems.pageErrors.join(' | ')}`);
  assert.match(problems.pageErrors[0], /attention-lab: this state cannot be used/);
  problems.pageErrors.length = 0;
  assertClean(problems, 'properties set before definition');
  await context.close();
});

// ---------------------------------------------------------------------------
// File locations set by the app's module, and a start tried again
// ---------------------------------------------------------------------------

const CSS = ['lesson.css', 'breakit.css', 'attention-lab.css'];
const WASM = ['attention-simd.wasm', 'attention-scalar.wasm'];
const SET_BASES = "styleLocation.base = new URL('./assets/', import.meta.url);\nwasmLocation.base = new URL('./assets/', import.meta.url);\n";

/**
 * A folder to serve: assets/ with the stylesheets and the wasm; pkg/, the
 * package's modules without them (so their default locations are not found);
 * bundle.js, an app bundled by esbuild from the package; and pages.
 */
async function appFolder() {
  const root = await mkdtemp(join(tmpdir(), 'attention-lab-author-'));
  temps.push(root);
  await mkdir(join(root, 'assets'));
  for (const file of CSS) await cp(join(WEB, file), join(root, 'assets', file));
  for (const file of WASM) await cp(join(WEB, 'wasm', file), join(root, 'assets', file));
  await cp(WEB, join(root, 'pkg'), { recursive: true, filter: (src) => !/\.(css|wasm)$/.test(src) });
  const bundled = await build({
    stdin: {
      contents: `import { styleLocation } from 'attention-lab/element';\nimport { wasmLocation } from 'attention-lab';\n${SET_BASES}`,
      resolveDir: join(ROOT, 'tests'),
    },
    bundle: true, format: 'esm', write: false, logLevel: 'silent',
  });
  await writeFile(join(root, 'bundle.js'), bundled.outputFiles[0].text);
  await writeFile(join(root, 'modules.js'),
    `import { styleLocation } from './pkg/attention-lab.js';\nimport { wasmLocation } from './pkg/attention.js';\n${SET_BASES}`);
  const page = (script) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>App</title><link rel="icon" href="data:,">
<script type="module" src="${script}"></script></head>
<body><attention-lab id="w" preset="causal"></attention-lab></body></html>`;
  // The same with paths relative to the page, as an author would write them.
  await writeFile(join(root, 'relative.js'),
    "import { styleLocation } from './pkg/attention-lab.js';\nimport { wasmLocation } from './pkg/attention.js';\nstyleLocation.base = './assets/';\nwasmLocation.base = 'assets/';\n");
  await writeFile(join(root, 'bundle.html'), page('bundle.js'));
  await writeFile(join(root, 'modules.html'), page('modules.js'));
  await writeFile(join(root, 'relative.html'), page('relative.js'));
  await writeFile(join(root, 'retry.html'), `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Retry</title><link rel="icon" href="data:,">
<script type="module">
  import { styleLocation } from './pkg/attention-lab.js';
  import { wasmLocation } from './pkg/attention.js';
  window.locations = { styleLocation, wasmLocation };
</script></head><body></body></html>`);
  return root;
}

test('styleLocation.base and wasmLocation.base set in the body of the app\'s module (as URLs, or as paths relative to the page) are used by a widget already in the page', async () => {
  const root = await appFolder();
  const server = await startServer({ root });
  try {
    for (const page of ['bundle.html', 'modules.html', 'relative.html']) {
      const { context, page: tab, problems } = await openPage(suite.browser, server.url);
      const requested = [];
      tab.on('request', (request) => requested.push(new URL(request.url()).pathname));
      await tab.goto(`${server.url}${page}`);
      const outcome = await tab.locator('#w').evaluate((el) => el.ready.then(() => 'ready', (err) => `rejected: ${err.message}`));
      assert.equal(outcome, 'ready', `${page}: the widget starts (requests: ${requested.join(', ')})`);
      const assets = requested.filter((p) => /\.(css|wasm)$/.test(p));
      assert.ok(assets.length > 0 && assets.every((p) => p.startsWith('/assets/')), `${page}: CSS and wasm come from /assets/ only: ${assets.join(', ')}`);
      assertClean(problems, page);
      await context.close();
    }
  } finally {
    await server.close();
  }
});

test('a widget whose start failed tries again when it is connected again', async () => {
  const root = await appFolder();
  const server = await startServer({ root });
  try {
    const { context, page } = await openPage(suite.browser, server.url);
    // The missing stylesheets are answered late: the core's 404 comes first, and
    // the retry must not join the stylesheet load still running from /nowhere/.
    await page.route('**/nowhere/*.css', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      await route.fulfill({ status: 404, body: '' });
    });
    await page.goto(`${server.url}retry.html`);
    await page.waitForFunction(() => window.locations);
    const first = await page.evaluate(async () => {
      locations.styleLocation.base = new URL('/nowhere/', location.href);
      locations.wasmLocation.base = new URL('/nowhere/', location.href);
      const el = document.createElement('attention-lab');
      el.id = 'w';
      document.body.append(el);
      const outcome = await el.ready.then(() => 'ready', (err) => `rejected: ${err.message}`);
      return { outcome, status: el.shadowRoot.querySelector('.al-status').textContent };
    });
    assert.match(first.outcome, /^rejected: cannot load .*\/nowhere\//, 'the first start fails');
    assert.match(first.status, /attention-lab could not start/);
    const second = await page.evaluate(async () => {
      locations.styleLocation.base = new URL('/assets/', location.href);
      locations.wasmLocation.base = new URL('/assets/', location.href);
      const el = document.getElementById('w');
      el.remove();
      document.body.append(el);
      const outcome = await el.ready.then(() => 'ready', (err) => `rejected: ${err.message}`);
      return { outcome, status: el.shadowRoot.querySelector('.al-status').textContent, cells: el.shadowRoot.querySelectorAll('.hm-cell').length };
    });
    assert.equal(second.outcome, 'ready', `connected again, the widget starts (its status: "${second.status}")`);
    assert.ok(second.cells > 0, 'and draws its weights');
    await context.close();
  } finally {
    await server.close();
  }
});

// ---------------------------------------------------------------------------
// Size attributes removed
// ---------------------------------------------------------------------------

test('removing seq-len, heads or d-model puts back what the widget shows without it', async () => {
  const { context, page, problems } = await suite.open('tests/fixtures/host.html', { ready: false });
  await page.waitForFunction(() => customElements.get('attention-lab'));
  const cases = [
    ['multi-head', {}, 'seq-len', '7'],
    ['multi-head', {}, 'heads', '2'],
    ['multi-head', {}, 'd-model', '12'],
    ['multi-head', { heads: '3' }, 'd-model', '12'],
    ['multi-head', { 'd-model': '12' }, 'heads', '3'],
    ['multi-head', { state: 'mha.t=3' }, 'seq-len', '6'],
    ['shapes', {}, 'seq-len', '6'],
    ['causal', {}, 'seq-len', '6'],
  ];
  for (const [preset, attrs, name, value] of cases) {
    const where = `${preset} ${JSON.stringify(attrs)} ${name}="${value}"`;
    const states = await page.evaluate(async ({ preset, attrs, name, value }) => {
      const make = async () => {
        const el = document.createElement('attention-lab');
        el.setAttribute('preset', preset);
        for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
        document.getElementById('widgets').append(el);
        await el.ready;
        return el;
      };
      const plain = await make();
      const without = plain.state;
      plain.remove();
      const el = await make();
      el.setAttribute(name, value);
      const withIt = el.state;
      el.removeAttribute(name);
      const removed = el.state;
      const status = el.shadowRoot.querySelector('.al-status').textContent;
      el.remove();
      return { without, withIt, removed, status };
    }, { preset, attrs, name, value });
    assert.notEqual(states.withIt, states.without, `${where}: the attribute changes the state`);
    assert.equal(states.removed, states.without, `${where}: removed, the state is the one without it (status: "${states.status}")`);
  }
  assertClean(problems, 'size attributes removed');
  await context.close();
});

// ---------------------------------------------------------------------------
// embed.html from a disk
// ---------------------------------------------------------------------------

test('embed.html opened from a disk (file://) says why it cannot run', async () => {
  const { page, context } = await openPage(suite.browser, 'file://');
  await page.goto(pathToFileURL(join(WEB, 'embed.html')).href);
  await page.waitForFunction(() => document.getElementById('boot-status')?.classList.contains('core-error'), null, { timeout: 10000 })
    .catch(() => {});
  const status = page.locator('#boot-status');
  const text = (await status.count()) ? await status.textContent() : '(no #boot-status)';
  assert.match(text, /cannot run from a file opened on a disk: it must be served over http or https\. In the attention-lab folder, run npm start/, `web/embed.html: #boot-status says "${text}"`);
  assert.equal(await status.isVisible(), true);
  await context.close();
});

// ---------------------------------------------------------------------------
// A single break-it card
// ---------------------------------------------------------------------------

test('a single break-it card can be reset to practise again, and keeps its first outcome', async () => {
  const { context, page, problems } = await suite.open('tests/fixtures/host.html', { ready: false });
  await page.waitForFunction(() => customElements.get('attention-lab'));
  await page.evaluate(async () => {
    const el = document.createElement('attention-lab');
    el.id = 'w';
    el.setAttribute('preset', 'break-it:no-scale');
    window.results = [];
    el.addEventListener('attention-result', (e) => window.results.push(e.detail.passed));
    document.getElementById('widgets').append(el);
    await el.ready;
  });
  const card = page.locator('#w .bk-card');
  const radios = card.locator('.bk-predict input[type="radio"]');
  const enabled = () => radios.evaluateAll((ns) => ns.filter((n) => !n.disabled).length);
  const count = await radios.count();
  assert.ok(count > 1, `the card offers predictions (${count})`);
  await card.getByLabel('Rows sum to 1').check();
  await card.locator('button.bk-switch').click();
  assert.equal(await enabled(), 0, 'once the bug is on, the prediction is locked');
  const reset = page.locator('#w button.bk-reset');
  assert.equal(await reset.count(), 1, 'the single card has a reset button');
  assert.equal((await reset.textContent()).trim(), 'Reset this card');
  await reset.click();
  assert.equal(await enabled(), count, 'after the reset, the prediction can be made again');
  await card.getByLabel('Scores scaled by 1/√dk').check();
  await card.locator('button.bk-switch').click();
  assert.deepEqual(await page.evaluate(() => window.results), [false], 'one outcome, the first round\'s');
  assertClean(problems, 'single card reset');
  await context.close();
});

// ---------------------------------------------------------------------------
// A break-it card's outcome across reloads
// ---------------------------------------------------------------------------

/** Add a break-it:no-scale widget to host.html, collecting its attention-result details in window.results. */
async function addCard(page, attrs = {}) {
  await page.waitForFunction(() => customElements.get('attention-lab'));
  await page.evaluate(async (attrs) => {
    const el = document.createElement('attention-lab');
    el.id = 'w';
    el.setAttribute('preset', 'break-it:no-scale');
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    window.results = [];
    el.addEventListener('attention-result', (e) => window.results.push(e.detail));
    document.getElementById('widgets').append(el);
    await el.ready;
  }, attrs);
  return page.locator('#w .bk-card');
}

test('a break-it card keeps its first outcome through a reload of the page, shows it decided, and resetProgress() starts it again', async () => {
  const { context, page, problems } = await suite.open('tests/fixtures/host.html', { ready: false });
  let card = await addCard(page);
  await card.getByLabel('Rows sum to 1').check();
  await card.locator('button.bk-switch').click();
  const first = await page.evaluate(() => window.results);
  assert.equal(first.length, 1);
  assert.deepEqual({ ...first[0], score: undefined }, { exercise: 'no-scale', passed: false, saved: true, score: undefined });
  assert.equal(await page.locator('#w').evaluate((el) => el.progressKey), 'attention-lab.widget.v1:/tests/fixtures/host.html:break-it:no-scale');

  await page.reload();
  card = await addCard(page);
  // The card opens as it was left: the wrong prediction locked, the bug on, no point.
  assert.equal(await card.getByLabel('Rows sum to 1').isChecked(), true, 'the prediction made before the reload');
  assert.equal(await card.getByLabel('Scores scaled by 1/√dk').isDisabled(), true, 'the prediction is still locked');
  assert.match(await card.locator('.bk-verdict').textContent(), /scores no point/);
  // Switching the bug off and on again decides nothing new.
  await card.locator('button.bk-switch').click();
  await card.locator('button.bk-switch').click();
  assert.deepEqual(await page.evaluate(() => window.results), [], 'no second outcome after a reload');

  // The author's reset forgets the record: the card starts again, and scores anew.
  await page.locator('#w').evaluate((el) => el.resetProgress());
  card = page.locator('#w .bk-card');
  assert.equal(await card.getByLabel('Scores scaled by 1/√dk').isDisabled(), false, 'after resetProgress() the card can be predicted again');
  await card.getByLabel('Scores scaled by 1/√dk').check();
  await card.locator('button.bk-switch').click();
  assert.deepEqual((await page.evaluate(() => window.results)).map((d) => d.passed), [true]);
  assertClean(problems, 'break-it card across reloads');
  await context.close();
});

test('a new progressKey set after the widget has drawn takes that key\'s record: the cards start as given, and no outcome is decided for the learner', async () => {
  const { context, page, problems } = await suite.open('tests/fixtures/host.html', { ready: false });
  const card = await addCard(page);
  await card.getByLabel('Rows sum to 1').check();
  await card.locator('button.bk-switch').click(); // decided under the default key: no point
  await page.evaluate(() => { window.results = []; });
  await page.locator('#w').evaluate((el) => { el.progressKey = 'my-course:unit-3'; });
  const fresh = page.locator('#w .bk-card');
  assert.equal(await fresh.getByLabel('Rows sum to 1').isChecked(), false, 'no prediction carried over to the new key');
  assert.equal(await fresh.getByLabel('Scores scaled by 1/√dk').isDisabled(), false, 'the card can be predicted');
  assert.deepEqual(await page.evaluate(() => window.results), [], 'no outcome decided for the learner under the new key');
  const stored = await page.evaluate(() => localStorage.getItem('my-course:unit-3'));
  assert.doesNotMatch(stored ?? '', /no-scale/, `the new key's record holds no outcome: ${stored}`);
  // Setting the same key again draws nothing anew; the old key's outcome is still there.
  await page.locator('#w').evaluate((el) => { el.progressKey = 'my-course:unit-3'; });
  assert.match(await page.evaluate(() => localStorage.getItem('attention-lab.widget.v1:/tests/fixtures/host.html:break-it:no-scale')), /"no-scale":0/);
  assertClean(problems, 'progressKey changed after drawing');
  await context.close();
});

test('two break-it widgets of one page under the same progress key both say so, until one has its own key or leaves', async () => {
  const { context, page, problems } = await suite.open('tests/fixtures/host.html', { ready: false });
  await page.waitForFunction(() => customElements.get('attention-lab'));
  const warnings = [];
  page.on('console', (msg) => { if (msg.type() === 'warning') warnings.push(msg.text()); });
  await page.evaluate(async () => {
    for (const id of ['a', 'b']) {
      const el = document.createElement('attention-lab');
      el.id = id;
      el.setAttribute('preset', 'break-it:no-scale');
      document.getElementById('widgets').append(el);
      await el.ready;
    }
  });
  const status = (id) => page.locator(`#${id}`).evaluate((el) => el.shadowRoot.querySelector('.al-status').textContent);
  const shared = /Another attention-lab widget on this page keeps its progress under the same key \("attention-lab\.widget\.v1:\/tests\/fixtures\/host\.html:break-it:no-scale"\)/;
  assert.match(await status('a'), shared);
  assert.match(await status('b'), shared);
  assert.ok(warnings.some((w) => shared.test(w)), `a console warning too: ${JSON.stringify(warnings)}`);
  await page.locator('#b').evaluate((el) => { el.progressKey = 'course:unit-2'; });
  assert.doesNotMatch(await status('a'), /same key/, 'b has its own key now');
  assert.doesNotMatch(await status('b'), /same key/);
  await page.locator('#b').evaluate((el) => { el.progressKey = null; });
  assert.match(await status('a'), shared, 'b shares the default key again');
  await page.locator('#b').evaluate((el) => el.remove());
  assert.doesNotMatch(await status('a'), /same key/, 'b has left the page');
  assertClean(problems, 'two widgets under one key');
  await context.close();
});

test('a break-it card on another page path keeps its own outcome; where localStorage is refused it still works, says saved: false, and warns of nothing', async () => {
  const { context, page, problems } = await suite.open('tests/fixtures/host.html', { ready: false });
  let card = await addCard(page);
  await card.getByLabel('Rows sum to 1').check();
  await card.locator('button.bk-switch').click();
  // The same card on another page (another path, same origin): a record of its own.
  const html = await readFile(join(ROOT, 'tests/fixtures/host.html'), 'utf8');
  await page.route(`${suite.server.url}course-b/page.html`, (route) => route.fulfill({ contentType: 'text/html', body: html }));
  await page.goto(`${suite.server.url}course-b/page.html`);
  card = await addCard(page);
  assert.equal(await card.getByLabel('Scores scaled by 1/√dk').isDisabled(), false, 'another page\'s card is not decided');
  await page.goto(`${suite.server.url}tests/fixtures/host.html`);
  card = await addCard(page);
  assert.equal(await card.getByLabel('Scores scaled by 1/√dk').isDisabled(), true, 'back on the first page, its card is decided');
  await context.close();

  const refused = await suite.open('tests/fixtures/host.html', {
    ready: false,
    init: () => Object.defineProperty(window, 'localStorage', { get() { throw new DOMException('denied', 'SecurityError'); } }),
  });
  const said = [];
  refused.page.on('console', (msg) => { if (msg.type() === 'warning' || msg.type() === 'error') said.push(msg.text()); });
  card = await addCard(refused.page);
  await card.getByLabel('Scores scaled by 1/√dk').check();
  await card.locator('button.bk-switch').click();
  assert.deepEqual((await refused.page.evaluate(() => window.results)).map(({ passed, saved }) => ({ passed, saved })), [{ passed: true, saved: false }]);
  assert.equal(await refused.page.locator('#w .al-status').evaluate((n) => n.hidden || n.textContent === ''), true, 'the status line says nothing');
  assert.deepEqual(said, [], 'nothing in the console');
  assertClean(refused.problems, 'localStorage refused');
  assert.deepEqual(problems.pageErrors, []);
  await refused.context.close();
});
