// The lesson page as an explorable: pointing at a number (mouse or keyboard)
// lights up where it came from and what it feeds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite, assertClean, runAxe, renderEverySection, settled } from './helpers/browser.mjs';

const suite = browserSuite();
const open = (hash = '', viewport = { width: 1280, height: 900 }) => suite.open(hash, { viewport });

/** What is lit in a section: source and linked elements, named by their kind and row/column. */
async function lit(page, section) {
  return page.$$eval(`#${section} .linked, #${section} .link-source`, (ns) => ns.map((n) => {
    const where = n.closest('[data-grid], [data-heatmap], [data-values], [data-mask], .flow');
    const name = !where ? '?' : where.classList.contains('flow') ? 'flow' : (where.dataset.grid || where.dataset.heatmap || where.dataset.values || where.dataset.mask);
    return `${n.classList.contains('link-source') ? '*' : ''}${name}:${n.dataset.linkQ ?? '-'},${n.dataset.linkK ?? '-'}`;
  }).sort());
}

/**
 * What a screen reader gets on the focused cell of a map: its role and name
 * (its line of the ARIA snapshot), the number it shows, and the headers of
 * its row and of its column in the grid (null where there is none).
 */
async function focusedCell(page) {
  const cell = page.locator('*:focus');
  const at = await cell.evaluate((n) => {
    const row = n.closest('[role="row"]');
    const head = row?.closest('[role="grid"]').querySelector('[role="row"]').children[[...row.children].indexOf(n)];
    return {
      shown: n.textContent,
      rowheader: row?.querySelector(':scope > [role="rowheader"]')?.textContent ?? null,
      columnheader: head?.matches('[role="columnheader"]') ? head.textContent : null,
    };
  });
  return { said: await cell.ariaSnapshot(), ...at };
}

/**
 * A linked map read two ways: by its look (the corner, heads and cells in
 * the order the CSS grid lays them out, cut into rows of --cols + 1, each
 * with the role and name a screen reader should get: a head its text, a cell
 * the number shown, "(blocked)" added for a blocked one), and by the ARIA
 * snapshot (each row with its children's roles and names).
 */
function readMap(page, name) {
  const map = page.locator(`[data-heatmap="${name}"]`);
  return Promise.all([
    map.evaluate((grid) => {
      const width = Number(grid.style.getPropertyValue('--cols')) + 1;
      const items = [...grid.querySelectorAll('.hm-corner, .hm-head, .hm-cell')].map((n, k) => {
        if (k === 0) return 'gridcell';
        const role = n.classList.contains('hm-rowhead') ? 'rowheader' : n.classList.contains('hm-head') ? 'columnheader' : 'gridcell';
        return `${role} "${n.textContent}${n.classList.contains('blocked') ? ' (blocked)' : ''}"`;
      });
      return Array.from({ length: items.length / width }, (_, r) => items.slice(r * width, (r + 1) * width));
    }),
    map.ariaSnapshot().then((yaml) => {
      const rows = [];
      for (const line of yaml.split('\n').slice(1)) {
        const [, indent, role, name] = line.match(/^(\s*)- (\w+)(?: "([^"]*)")?/) ?? assert.fail(`${name}: an ARIA snapshot line not read: ${line}`);
        if (role === 'row') rows.push([]);
        else if (indent.length > 2) rows.at(-1).push(name === undefined ? role : `${role} "${name}"`);
      }
      return rows;
    }),
  ]);
}

test('a linked map is a grid for screen readers: a header row, a row per query with its header, cells named by the number shown (blocked ones say so), and no second table', async () => {
  const { context, page, problems } = await open('#view=masks');
  await expectGrid(page, 'mask-causal-weights', 'Weights with equal scores under the causal mask', 5);
  // Under the causal mask (T = 4) keys after the query are blocked.
  const [shown, heard] = await readMap(page, 'mask-causal-weights');
  assert.equal(shown.length, 5, `a header row and 4 query rows: ${JSON.stringify(shown)}`);
  assert.deepEqual(heard, shown, 'the ARIA grid says, row by row, what the map shows');
  assert.deepEqual(shown[1].slice(2), ['gridcell "0 (blocked)"', 'gridcell "0 (blocked)"', 'gridcell "0 (blocked)"'], 'query 1 sees key 1 only');
  // The prose turns code's 0-based "query position 2 may see keys 0, 1 and 2" into this map's query 3 and keys 1 to 3.
  assert.match(await page.locator('#masks').innerText(), /query position 2 may see keys 0, 1 and 2”: that is query 3 and keys 1 to 3/);
  assert.deepEqual(shown[3].map((cell) => /blocked/.test(cell)), [false, false, false, false, true], `query 3 sees keys 1 to 3, not key 4: ${JSON.stringify(shown[3])}`);
  // The × drawn on a blocked cell is a picture: it is not read out.
  const mark = await page.locator('[data-heatmap="mask-causal-weights"] .hm-cell.blocked').first().evaluate((n) => getComputedStyle(n, '::after').content);
  assert.equal(mark, '"×" / ""', 'a blocked cell\'s × has an empty alternative text');
  // A map that is not linked stays a picture hidden from screen readers, with its table.
  const plain = page.locator('[data-heatmap="mask-padding-weights-0"]');
  assert.equal(await plain.getAttribute('aria-hidden'), 'true', 'a map that is not linked is hidden from screen readers');
  assert.equal(await plain.evaluate((n) => n.closest('figure').querySelectorAll('.sr-only table').length), 1, 'a map that is not linked keeps its table');
  // The 3×3 example's map: its row sums are a column of the grid too.
  await page.goto(`${suite.server.url}#view=three-by-three`);
  await page.waitForSelector('html[data-ready="true"]', { state: 'attached' });
  await expectGrid(page, 'ex-weights', 'Attention weights: one row per query, one column per key', 4);
  const [shown3, heard3] = await readMap(page, 'ex-weights');
  assert.deepEqual(shown3[0], ['gridcell', 'columnheader "key 1"', 'columnheader "key 2"', 'columnheader "key 3"', 'columnheader "row sum"']);
  assert.deepEqual(heard3, shown3, 'the ARIA grid of the 3×3 map says what it shows');
  // The rows for screen readers lay out nothing: the cells stay on the map's 3 rows and 4 columns, and the column heads wrap.
  const layout = await page.locator('[data-heatmap="ex-weights"]').evaluate((grid) => {
    const boxes = [...grid.querySelectorAll('.hm-cell')].map((n) => n.getBoundingClientRect());
    return {
      rows: new Set(boxes.map((b) => Math.round(b.top))).size, cols: new Set(boxes.map((b) => Math.round(b.left))).size,
      heads: [...new Set([...grid.querySelectorAll('.hm-head:not(.hm-rowhead)')].map((n) => getComputedStyle(n).whiteSpace))],
    };
  });
  assert.deepEqual(layout, { rows: 3, cols: 4, heads: ['normal'] }, 'the 3×3 map\'s layout');
  assertClean(problems, 'linked maps as grids');
  await context.close();
});

test('a linked map drawn again: a cell no longer blocked loses its "(blocked)", and a refused row\'s cells say so', async () => {
  const { context, page, problems } = await open('#view=three-by-three');
  // A 2 × 2 linked map of its own, drawn by the page's heatmap() into the 3×3 section.
  await page.evaluate(async () => {
    const { heatmap } = await import('/lesson-ui.js');
    const host = document.querySelector('#three-by-three').appendChild(document.createElement('div'));
    window.drawProbe = (values, blocked, refused) => heatmap(host, {
      name: 'probe', values, rows: 2, cols: 2, blocked, refusedRows: new Set(refused), rowLabel: (i) => `q${i + 1}`, colLabel: (j) => `k${j + 1}`,
      caption: 'probe map', digits: 2, legend: false, link: true,
    });
  });
  const heard = async (values, blocked, refused = []) => {
    await page.evaluate(([values, blocked, refused]) => window.drawProbe(values, (i, j) => blocked.includes(`${i},${j}`), refused), [values, blocked, refused]);
    // The query rows' lines of the ARIA snapshot (the header row's names are checked in the test above).
    return (await page.locator('[data-heatmap="probe"]').ariaSnapshot()).split('\n')
      .filter((line) => /^\s{4}- '?(rowheader|gridcell) /.test(line)).map((line) => line.trim());
  };
  const head = ['- rowheader "q1"', '- gridcell "1.00"', '- gridcell "0 (blocked)": "0"', '- rowheader "q2"', '- gridcell "0.50"', '- gridcell "0.50"'];
  assert.deepEqual(await heard([1, 0, 0.5, 0.5], ['0,1']), head, 'key 2 blocked for query 1');
  assert.deepEqual(await heard([0.5, 0.5, 0.5, 0.5], []), ['- rowheader "q1"', '- gridcell "0.50"', '- gridcell "0.50"', ...head.slice(3)], 'nothing blocked: each cell is named by its number');
  assert.deepEqual(await heard([1, 0, NaN, NaN], ['0,1', '1,0', '1,1'], [1]), [...head.slice(0, 3), '- rowheader "q2 ⚠"', `- 'gridcell "refused: no key allowed"': —`, `- 'gridcell "refused: no key allowed"': —`],
    'query 2 refused (every key blocked)');
  assertClean(problems, 'a linked map drawn again');
  await context.close();
});

/** The linked map `name` is the grid named `caption` with `rows` rows, and its host has no screen-reader table besides. */
async function expectGrid(page, name, caption, rows) {
  const grid = page.getByRole('grid', { name: caption, exact: true });
  assert.equal(await grid.count(), 1, `one grid named "${caption}" (the map ${name})`);
  assert.equal(await grid.getAttribute('data-heatmap'), name, `the grid named "${caption}"`);
  assert.equal(await grid.getByRole('row').count(), rows, `${name}: rows of the grid`);
  const tables = await grid.evaluate((n) => n.closest('.heatmap-wrap').parentElement.querySelectorAll('table').length);
  assert.equal(tables, 0, `${name}: a linked map has no hidden table repeating its numbers`);
}

test('3×3 example on a touch screen: a tap on a weight or a score keeps its links lit until a tap elsewhere', async () => {
  const { context, page, problems } = await suite.open('#view=three-by-three', { viewport: { width: 390, height: 844 }, device: { hasTouch: true, isMobile: true } });
  const settle = () => page.waitForTimeout(300);
  await page.locator('[data-heatmap="ex-weights"] .hm-cell[data-row="1"][data-col="2"]').tap();
  await settle();
  const weight = await lit(page, 'three-by-three');
  assert.ok(weight.includes('*ex-weights:1,2'), `a tapped weight stays lit after the finger lifts: ${weight.join(' ')}`);
  // A score is not focusable: before, the finger's pointerout (and the weight's focusout) cleared it at once.
  await page.locator('[data-values="ex-scores"] td[data-link-q="2"][data-link-k="0"]').tap();
  await settle();
  const score = await lit(page, 'three-by-three');
  assert.ok(score.includes('*ex-scores:2,0'), `a tapped score stays lit: ${score.join(' ')}`);
  assert.ok(score.includes('ex-weights:2,0'), `and its weight with it: ${score.join(' ')}`);
  await page.locator('#three-by-three h2').tap();
  await settle();
  assert.deepEqual(await lit(page, 'three-by-three'), [], 'a tap outside the linked numbers clears them');
  // A tap that switches a mask cell redraws the grid: nothing stays lit around the cell it replaced.
  const maskCell = page.locator('[data-mask="mask-custom"] button[data-row="1"][data-col="2"]');
  await maskCell.scrollIntoViewIfNeeded();
  await maskCell.tap();
  await settle();
  const afterMask = await page.$$eval('#masks .linked, #masks .link-source', (ns) => ns.map((n) => n.className));
  const sourceLit = afterMask.some((c) => c.includes('link-source'));
  assert.ok(afterMask.length === 0 || sourceLit, `after a mask tap, lit without a lit source: ${afterMask.join(' | ')}`);
  assertClean(problems, 'three-by-three, touch');
  await context.close();
});

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
    // the flow view follows query 2: its q and output, and the score, scaled score and weight of key 3
    'flow:1,-', 'flow:1,-', 'flow:1,2', 'flow:1,2', 'flow:1,2',
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
  const heard = await focusedCell(page);
  assert.deepEqual(heard, { ...heard, said: `- gridcell "${heard.shown}"`, rowheader: 'query 2', columnheader: 'key 3' },
    'the focused weight is a grid cell named by its number, under the headers of its query and key');
  assert.match(heard.shown, /^\d\.\d{4}$/);
  // Focusing a query's inputs lights its whole row downstream.
  await page.locator('[data-grid="ex-q"] input[data-row="0"][data-col="0"]').focus();
  const fromQ = await lit(page, 'three-by-three');
  assert.ok(fromQ.includes('ex-weights:0,2') && fromQ.includes('ex-output:0,-') && !fromQ.some((x) => x.startsWith('ex-k')), fromQ.join(' '));
  await runAxe(page, '3×3 with a focused weight', { include: '#three-by-three' });
  assertClean(problems, '3×3 links');
  await context.close();
});

test('linked highlighting stays inside its own section, by pointer and by keyboard', async () => {
  const { context, page, problems } = await open('#view=multi-head');
  /** The sections outside `own` that have something lit. */
  const litElsewhere = (own) => page.$$eval('.linked, .link-source', (ns, own) => [...new Set(ns.map((n) => n.closest('section')?.id ?? n.tagName)
    .filter((id) => id !== own))], own);
  await page.locator('#multi-head [data-grid="mha-tokens"] input').first().focus();
  assert.ok(await page.locator('#multi-head .link-source').count() > 0, 'the focused token is lit');
  assert.deepEqual(await litElsewhere('multi-head'), [], 'a focused multi-head token lights nothing in other sections');
  await page.locator('#multi-head [data-grid="mha-tokens"] input').first().blur();
  assert.deepEqual(await litElsewhere(null), [], 'nothing is lit once the token loses the focus');
  await page.locator('[data-heatmap="ex-weights"] .hm-cell[data-row="0"][data-col="0"]').hover();
  assert.ok(await page.locator('#three-by-three .link-source').count() > 0, 'the pointed-at weight is lit');
  assert.deepEqual(await litElsewhere('three-by-three'), [], 'a pointed-at 3×3 weight lights nothing in other sections');
  assertClean(problems, 'links inside a section');
  await context.close();
});

test('masks: a custom mask cell and a causal weight light only their own figure pair', async () => {
  const { context, page, problems } = await open('#view=masks');
  await page.locator('[data-mask="mask-custom"] button[data-row="2"][data-col="0"]').hover();
  const custom = await lit(page, 'masks');
  assert.ok(custom.includes('*mask-custom:2,0') && custom.includes('mask-custom-weights:2,0'), custom.join(' '));
  assert.ok(!custom.some((x) => x.startsWith('mask-causal')), `the causal figure is another scope: ${custom.join(' ')}`);
  // The pointer leaves first: focusing scrolls the page, and a pointer left
  // where it was would come to rest on (and light) another cell.
  await page.mouse.move(0, 0);
  await page.locator('[data-heatmap="mask-causal-weights"] .hm-cell[tabindex="0"]').focus();
  await page.keyboard.press('ArrowDown');
  const causal = await lit(page, 'masks');
  assert.ok(causal.includes('*mask-causal-weights:1,0') && causal.includes('mask-causal:1,0'), causal.join(' '));
  assert.ok(!causal.some((x) => x.startsWith('mask-custom')), causal.join(' '));
  await runAxe(page, 'masks with a focused weight', { include: '#masks' });
  assertClean(problems, 'masks links');
  await context.close();
});

test('cross-attention: a weight lights its target row, its source row and padding switch, and its output row; in self mode its query and key rows', async () => {
  const { context, page, problems } = await open('#view=self-cross');
  const cell = page.locator('[data-heatmap="cross-weights-h0"] .hm-cell[data-row="1"][data-col="2"]');
  await cell.hover();
  const lightsFrom = (row, col) => [
    `*cross-weights-h0:${row},${col}`,
    `cross-weights-h0:${row},-`, `cross-weights-h0:-,${col}`, // its query's row heading and its key's column heading
    `cross-weights-h1:${row},${col}`, `cross-weights-h1:${row},-`, `cross-weights-h1:-,${col}`, // the same pair in head 2
    `cross-tgt:${row},-`, `cross-src:-,${col}`, `cross-pad:-,${col}`,
    `cross-output:${row},-`, `cross-output:${row},-`, `cross-output:${row},-`, `cross-output:${row},-`, `cross-output:${row},-`,
  ].sort();
  assert.deepEqual(await lit(page, 'self-cross'), lightsFrom(1, 2), 'hover');
  await page.mouse.move(0, 0);
  assert.deepEqual(await lit(page, 'self-cross'), [], 'nothing lit once the pointer leaves');

  // Keyboard: one tab stop per map, arrows move, the focused weight lights the same way.
  await page.locator('[data-heatmap="cross-weights-h0"] .hm-cell[tabindex="0"]').focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  assert.deepEqual(await lit(page, 'self-cross'), lightsFrom(1, 2), 'focus');
  const heard = await focusedCell(page);
  assert.deepEqual(heard, { ...heard, said: `- gridcell "${heard.shown}"`, rowheader: 't2 chat', columnheader: 's3 cat' },
    'the focused weight is a grid cell named by its number, under the headers of its target and source tokens');
  assert.match(heard.shown, /^\d\.\d+$/);
  // Focusing a source state lights its key column in every map, not the target rows.
  await page.locator('[data-grid="cross-src"] input[data-row="3"][data-col="0"]').focus();
  const fromSource = await lit(page, 'self-cross');
  assert.ok(fromSource.includes('cross-weights-h0:0,3') && fromSource.includes('cross-pad:-,3') && !fromSource.some((x) => x.startsWith('cross-tgt') || x.startsWith('cross-output')), fromSource.join(' '));

  // Self-attention: the one sequence is both; weight (query 2, key 3) lights target rows 2 and 3, output row 2.
  await page.locator('[data-field="cross-mode"] input[value="self"]').check();
  await page.locator('[data-heatmap="cross-weights-h0"] .hm-cell[data-row="1"][data-col="2"]').hover();
  const self = await lit(page, 'self-cross');
  const rows = await page.$$eval('#self-cross [data-grid="cross-tgt"] tr.linked', (ns) => ns.map((n) => n.dataset.linkPos).sort());
  assert.deepEqual(rows, ['1', '2'], `target rows lit in self mode: ${self.join(' ')}`);
  assert.ok(self.includes('cross-output:1,-') && !self.includes('cross-output:2,-'), self.join(' '));
  await runAxe(page, 'cross-attention with a lit weight', { include: '#self-cross' });
  assertClean(problems, 'cross-attention links');
  await context.close();
});

test('flow view: the pointed-at row through the passes, numbers from the core, and the C of each pass from c_src', async () => {
  const { readFile } = await import('node:fs/promises');
  const { SDPA_PASSES } = await import('../web/generated/c-source.js');
  const c = await readFile(new URL('../c_src/attention.c', import.meta.url), 'utf8') + await readFile(new URL('../c_src/kernels.c', import.meta.url), 'utf8');
  const flat = (text) => text.split('\n').map((l) => l.trim()).filter(Boolean);
  const source = new Set(flat(c));
  for (const [n, pass] of Object.entries(SDPA_PASSES)) {
    for (const line of flat(pass.code)) assert.ok(source.has(line), `pass ${n}: "${line}" is not a line of c_src`);
  }
  assert.match(SDPA_PASSES[4].code, /plan\.softmax\(s, n, Tk\);/);

  const { context, page, problems } = await open('#view=three-by-three');
  await page.locator('[data-heatmap="ex-weights"] .hm-cell[data-row="2"][data-col="0"]').hover();
  const flow = page.locator('#three-by-three .flow');
  assert.equal(await flow.getAttribute('data-row'), '2');
  const outputRow = await page.$$eval('[data-values="ex-output"] td[data-row="2"]', (ns) => ns.map((n) => n.textContent));
  assert.equal(await page.locator('#three-by-three [data-out="flow-output"]').textContent(),
    `[${outputRow.join(', ')}]`, 'the flow shows output row 3 as the table does, with the same decimals');
  // The first step shows the query row only, and says so (the keys are the K grid above it).
  const first = await flow.locator('.flow-step').first().locator('.flow-what').textContent();
  assert.doesNotMatch(first, /keys laid out/, `the first step promises only what it shows: ${first}`);
  const weightsRow = await page.$$eval('[data-heatmap="ex-weights"] .hm-cell[data-row="2"]:not(.hm-extra)', (ns) => ns.map((n) => Number(n.textContent)));
  const flowWeights = await flow.locator('.flow-weights').allTextContents();
  flowWeights.forEach((t, j) => assert.equal(Number(t), weightsRow[j], `weight ${j + 1}: the flow shows ${t}, the map ${weightsRow[j]}`));
  // The flow's score of the pointed-at weight is lit with it.
  assert.equal(await flow.locator('.flow-scaled[data-link-k="0"]').evaluate((n) => n.classList.contains('linked')), true);
  // Its C, as in c_src.
  const pass = flow.locator('details.c-pass').nth(3);
  await pass.locator('summary').click();
  assert.equal(await pass.locator('pre code').textContent(), SDPA_PASSES[4].code);
  assert.ok(await pass.locator('pre code .tok-kw').count() > 0, 'highlighted');
  await runAxe(page, '3×3 flow with its C open', { include: '#three-by-three' });
  assertClean(problems, 'flow');
  await context.close();
});

test('with every disclosure open, each named region has its own name (the C of each flow step included) and axe finds nothing', async () => {
  const { context, page, problems } = await open();
  await renderEverySection(page);
  await page.evaluate(() => { for (const d of document.querySelectorAll('details')) d.open = true; });
  await runAxe(page, 'every disclosure open at 1280 px');
  const names = await page.$$eval('[role="region"][aria-label], section[aria-label], [role="region"][aria-labelledby]', (ns) => ns
    .map((n) => n.getAttribute('aria-label') ?? n.getAttribute('aria-labelledby').split(/\s+/).map((id) => document.getElementById(id)?.textContent).join(' ')));
  const twice = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
  assert.deepEqual(twice, [], `region names used more than once, of ${names.length}`);
  const passes = names.filter((name) => /C source of pass/.test(name));
  assert.ok(passes.length >= 10, `the C of every flow step is a named region (two flows of five steps); seen ${JSON.stringify(passes)}`);
  assertClean(problems, 'all disclosures open');
  await context.close();
});

test('leak test by hand: with the causal mask, changing the last token moves no earlier output, and the check names them', async () => {
  const { typeInto } = await import('./helpers/browser.mjs');
  const { context, page, problems } = await open('#view=multi-head&mha.causal=1');
  await typeInto(page, page.locator('[data-grid="mha-tokens"] input[data-row="0"][data-col="4"]'), '7');
  await page.keyboard.press('Tab');
  const leak = page.locator('[data-out="mha-leak"]');
  await leak.waitFor();
  assert.match(await leak.textContent(), /^✓ You changed t5 \(5 → 7\)\. The outputs of t1, t2, t3, t4 did not move/);
  // Without the mask the earlier rows do move, and the check names them.
  await page.locator('input[data-field="mha-causal"]').uncheck();
  await typeInto(page, page.locator('[data-grid="mha-tokens"] input[data-row="0"][data-col="4"]'), '8');
  await page.keyboard.press('Tab');
  await page.waitForFunction(() => document.querySelector('[data-out="mha-leak"]')?.textContent.startsWith('⚠'));
  assert.match(await leak.textContent(), /^⚠ You changed t5 \(7 → 8\), and the outputs of t1, t2, t3, t4 moved/);
  // Axes read tokens as words.
  assert.equal(await page.locator('[data-heatmap="mha-weights-h0"] .hm-rowhead').first().textContent(), 't1 on');
  assertClean(problems, 'leak test');
  await context.close();
});

test('an edit sets readouts and tables in place: the same elements take the new numbers, and a sideways scroll box keeps its tab stop', async () => {
  const { context, page, problems } = await open('#view=gradients');
  const loss = page.locator('[data-out="grad-loss"]');
  const before = await loss.textContent();
  await loss.evaluate((n) => { n.kept = true; });
  await page.locator('[data-grid="grad-q"] input[data-row="1"][data-col="0"]').fill('3');
  await page.waitForFunction((t) => document.querySelector('[data-out="grad-loss"]').textContent !== t, before);
  assert.equal(await loss.evaluate((n) => n.kept === true), true, 'the loss line is the element it was, its number rewritten');
  await context.close();

  // At 390 px the online-softmax scores scroll sideways: the page gives the box a tab stop, and an edit keeps it.
  const phone = await open('#view=online-softmax', { width: 390, height: 900 });
  const box = phone.page.locator('#online-softmax [data-slot="scores"] > .grid-wrap');
  await phone.page.waitForFunction(() => document.querySelector('#online-softmax [data-slot="scores"] > .grid-wrap')?.getAttribute('tabindex') === '0');
  await box.evaluate((n) => { n.kept = true; });
  const score = phone.page.locator('[data-values="flash-scores"] td[data-col="0"]');
  const old = await score.textContent();
  await phone.page.locator('[data-grid="flash-k"] input[data-row="0"][data-col="0"]').fill('5');
  await phone.page.waitForFunction((t) => document.querySelector('[data-values="flash-scores"] td[data-col="0"]').textContent !== t, old);
  await phone.page.evaluate(() => new Promise((resolve) => requestIdleCallback(resolve, { timeout: 1000 })));
  assert.deepEqual(await box.evaluate((n) => [n.kept === true, n.getAttribute('tabindex'), n.getAttribute('role'), n.dataset.overflows]), [true, '0', 'group', '1'],
    'the scroll box is the same element and keeps its tab stop, role and sideways hint');
  assertClean(problems, 'gradients');
  assertClean(phone.problems, 'online softmax at 390 px');
  await phone.context.close();
});

test('cross-attention: after typing T_k (no Tab), the first click on a padding switch is not lost', async () => {
  const { typeInto } = await import('./helpers/browser.mjs');
  const { context, page, problems } = await open('#view=self-cross');
  const target = page.locator('[data-grid="cross-tgt"]');
  await target.evaluate((n) => { n.kept = true; });
  await typeInto(page, page.locator('input[data-field="cross-tk"]'), '3');
  const s1 = page.locator('[data-mask="cross-pad"] button[data-col="0"]');
  assert.equal(await page.locator('[data-mask="cross-pad"] button').count(), 3, 'T_k = 3 gives three switches while typing');
  // The cursor is still in T_k: the click's mousedown takes the focus from it.
  await s1.click();
  assert.deepEqual(await s1.evaluate((n) => [n.getAttribute('aria-pressed'), n.textContent, n === document.activeElement]), ['true', 's1 pad', true],
    'the first click makes s1 padding and keeps the focus on it');
  assert.equal(await page.locator('[data-heatmap="cross-weights-h0"] .hm-cell[data-row="0"][data-col="0"]').textContent(), '0', 's1 is blocked in the maps');
  assert.equal(await target.evaluate((n) => n.kept === true), true, 'a T_k edit leaves the target grid as it was: it did not change');
  assertClean(problems, 'T_k then a padding click');
  await context.close();
});

test('self- and cross-attention: the table\'s score shapes have the heads axis, as the demo\'s weights do', async () => {
  const { context, page, problems } = await open('#view=self-cross');
  const tableShapes = await page.$$eval('#self-cross table.compare tbody tr', (rows) => rows.map((r) => r.lastElementChild.textContent));
  assert.deepEqual(tableShapes, ['(B, H, T, T)', '(B, H, Tq, Tk)']);
  for (const mode of ['cross', 'self']) {
    await page.locator(`[data-field="cross-mode"] input[value="${mode}"]`).check();
    const shape = await page.locator('[data-out="cross-wshape"]').textContent();
    const shown = mode === 'cross' ? tableShapes[1] : tableShapes[0];
    assert.equal(shape.split(',').length, shown.split(',').length, `${mode}: the demo's weights ${shape} and the table's ${shown} have as many axes`);
    assert.match(await page.locator('#self-cross [data-slot="shapes"]').textContent(), /\(batch, heads, T_q = \d, T_k = \d\)/);
  }
  assertClean(problems, 'self-cross shapes');
  await context.close();
});

test('an editable mask grid is one tab stop: arrows move, Space toggles, the focus ring is not the links\' colour, names are words', async () => {
  const { context, page, problems } = await open('#view=masks');
  const grid = page.locator('[data-mask="mask-custom"]');
  const stops = await grid.locator('button').evaluateAll((ns) => ns.filter((n) => n.tabIndex === 0).length);
  assert.equal(stops, 1, 'tab stops in the 3×3 custom mask');
  // Tab from the field before the grid lands on the grid's one stop; arrows move, Space switches.
  await grid.locator('button[data-row="0"][data-col="0"]').focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  const at = await page.evaluate(() => [document.activeElement.dataset.row, document.activeElement.dataset.col, document.activeElement.getAttribute('aria-label')]);
  assert.deepEqual(at, ['1', '1', 'query 2, key 2: allowed'], 'the arrows moved to query 2, key 2, named in words');
  const before = await grid.locator('button[data-row="1"][data-col="1"]').getAttribute('aria-pressed');
  await page.keyboard.press('Space');
  assert.notEqual(await grid.locator('button[data-row="1"][data-col="1"]').getAttribute('aria-pressed'), before, 'Space switched the focused pair');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'query 2, key 2: blocked');
  // Leaving and coming back by Tab returns to the cell last used.
  await page.keyboard.press('Tab');
  await page.keyboard.press('Shift+Tab');
  assert.deepEqual(await page.evaluate(() => [document.activeElement.dataset.row, document.activeElement.dataset.col]), ['1', '1'], 'Shift+Tab comes back to the last cell');
  // The focused button's ring is the page's ink, not the orange of the cells it lights.
  const rings = await page.evaluate(() => {
    const focused = document.activeElement;
    const linked = document.querySelector('#masks .linked:not(:focus)');
    return { focused: getComputedStyle(focused).outlineColor, linked: linked ? getComputedStyle(linked).outlineColor : null };
  });
  assert.ok(rings.linked, 'the focused pair lights its weight');
  assert.notEqual(rings.focused, rings.linked, `the focus ring (${rings.focused}) differs from the link outline (${rings.linked})`);
  assertClean(problems, 'mask grid keyboard');
  await context.close();
});

test('on a phone no scroll box is a tab stop without a name, even one wider than its table by a rounding sliver', async () => {
  // At 375 px a self-cross table is a fraction of a pixel wider than its box:
  // the browser counts that box as a scroller and would stop the Tab key on it.
  const { context, page, problems } = await open('#view=self-cross', { width: 375, height: 812 });
  await renderEverySection(page);
  await settled(page); // scroll boxes are measured after the frame that lays them out
  const slivers = await page.$$eval('main .grid-wrap, main .heatmap-wrap', (boxes) => boxes
    .filter((b) => b.clientWidth > 0 && b.scrollWidth > b.clientWidth && b.scrollWidth <= b.clientWidth + 1).length);
  const nameless = [];
  await page.locator('#h-self-cross').focus();
  for (let n = 0; n < 120; n++) {
    await page.keyboard.press('Tab');
    const stop = await page.evaluate(() => {
      const a = document.activeElement;
      if (!a.closest('#self-cross')) return 'left';
      return a.matches('.grid-wrap, .heatmap-wrap') && !a.getAttribute('aria-label') ? `${a.firstElementChild?.tagName} ${a.scrollWidth}/${a.clientWidth}` : '';
    });
    if (stop === 'left') break;
    if (stop) nameless.push(stop);
  }
  assert.deepEqual(nameless, [], `Tab stops on scroll boxes with no name (${slivers} sliver-wide boxes on the page)`);
  assertClean(problems, 'sliver boxes');
  await context.close();
});

test('flow view numbers glide to a new value, briefly, and not under reduced motion; the maps do not glide', async () => {
  const { context, page, problems } = await open('#view=three-by-three');
  const durations = () => page.evaluate(() => ({
    flow: getComputedStyle(document.querySelector('#three-by-three .flow-num')).transitionDuration,
    map: getComputedStyle(document.querySelector('[data-heatmap="ex-weights"] .hm-cell')).transitionDuration,
  }));
  assert.deepEqual(await durations(), { flow: '0.16s', map: '0s' });
  await page.emulateMedia({ reducedMotion: 'reduce' });
  assert.deepEqual(await durations(), { flow: '0s', map: '0s' }, 'under prefers-reduced-motion nothing glides');
  assertClean(problems, 'transitions');
  await context.close();
});
