// The "Watch a head learn" section in Chromium: training starts, the loss
// falls and the maps change, the page keeps answering while it trains,
// pausing enables the head switches and switching the copying head off drops
// the held-out accuracy; the cheating switch trains to a low loss and chance
// accuracy, and its maps show what training saw (the answer, unhatched) or,
// switched, what the held-out test runs. Screenshots at 1280 and 390 px go to
// tests/screenshots/.
// Run: node --test tests/watch-learn-page.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { browserSuite, assertClean, runAxe, typeInto, screenshot, waitForState } from './helpers/browser.mjs';
import { loadAttention } from '../web/attention.js';
import { describeMap, MAP_MARGIN } from '../web/sections/watch-learn.js';

const env = browserSuite();
const shots = fileURLToPath(new URL('./screenshots/', import.meta.url));

const number = (text) => Number(String(text).replace(/[^0-9.eE+-]/g, ''));

/** Read the readout's step, loss and accuracy (percent). */
async function readout(section) {
  const [step, loss, accuracy] = await Promise.all(['learn-step', 'learn-loss', 'learn-accuracy']
    .map((name) => section.locator(`[data-out="${name}"]`).textContent()));
  return { step: number(step), loss: number(loss), accuracy: number(accuracy) };
}

/** How many pixels of a map canvas have the grey of a hatched (blocked) cell, #dedcd5. */
const hatchPixels = (canvas) => canvas.evaluate((c) => {
  const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
  let n = 0;
  for (let p = 0; p < data.length; p += 4) n += data[p] === 222 && data[p + 1] === 220 && data[p + 2] === 213 && data[p + 3] === 255;
  return n;
});

/** The notes under the maps, one per head. */
const mapNotes = (section) => section.locator('figure.head-map > p.hint').allTextContents();

test('train previous-token on the page: loss falls, maps change, the page stays interactive, ablation drops accuracy', async () => {
  const { page, problems, context } = await env.open('#watch-learn');
  const section = page.locator('#watch-learn');
  const map = section.locator('canvas[data-canvas="learn-map-1-1"]');
  const before = await map.evaluate((c) => c.toDataURL());
  const start = await readout(section);
  assert.equal(start.step, 0);
  // Without the cheat, training and the held-out test run the same rule: no choice of view.
  assert.equal(await section.locator('[data-field="learn-maps"]').isVisible(), false, 'a choice of view without the cheat');
  assert.match(await section.locator('[data-out="learn-maps-view"]').textContent(), /^Maps as training and the held-out test both run them \(causal\):/);
  assert.ok(await hatchPixels(map) > 0, 'the causal maps hatch the keys after each query');

  // Record the gaps between animation frames while training runs.
  await page.evaluate(() => {
    window.frameGaps = [];
    let last = performance.now();
    const tick = (now) => { window.frameGaps.push(now - last); last = now; if (window.frameGaps.length < 400) requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
  });
  await section.locator('[data-action="learn-start"]').click();
  await page.waitForFunction(() => Number(document.querySelector('[data-out="learn-step"]').textContent) >= 60, null, { timeout: 60000 });

  // Typing elsewhere on the page still works while it trains.
  const seedField = page.locator('[data-field="scale-seed"]');
  const typed = Date.now();
  await typeInto(page, seedField, '42');
  assert.equal(await seedField.inputValue(), '42');
  const typingMs = Date.now() - typed;
  const gaps = await page.evaluate(() => window.frameGaps.slice(5));
  const sorted = [...gaps].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  console.log(`# frame gaps while training: median ${median.toFixed(1)} ms, 90th percentile ${sorted[Math.floor(0.9 * sorted.length)].toFixed(1)} ms, longest ${sorted[sorted.length - 1].toFixed(0)} ms over ${gaps.length} frames`);
  assert.ok(median < 100, `median gap between frames while training: ${median.toFixed(0)} ms`);
  // Not a speed figure: a page that blocked its thread for the training
  // (tens of seconds) would fail this on any machine, a busy one included.
  assert.ok(typingMs < 10000, `typing two characters took ${typingMs} ms`);

  await page.waitForSelector('#watch-learn [data-action="learn-start"]:has-text("Finished")', { timeout: 90000 });
  const end = await readout(section);
  assert.ok(end.loss < start.loss || !Number.isFinite(start.loss), `loss ${end.loss}`);
  assert.ok(end.loss < 0.5, `loss after training: ${end.loss}`);
  assert.ok(end.accuracy >= 99, `held-out accuracy ${end.accuracy} %`);
  assert.notEqual(await map.evaluate((c) => c.toDataURL()), before, 'the map did not change');
  assert.match(await section.locator(`#${await map.getAttribute('aria-describedby')}`).textContent(), /previous token/, 'the note describing the map');

  // Paused: the head switch works; the only head carries the task.
  const off = section.locator('[data-action="learn-ablate-1-1"]');
  assert.equal(await off.isDisabled(), false);
  await off.click();
  assert.equal(await off.getAttribute('aria-pressed'), 'true');
  const ablated = await readout(section);
  assert.ok(ablated.accuracy < 30, `accuracy with the head off: ${ablated.accuracy} %`);
  // Which head is off shows at the head itself: its map dimmed, its note and the switch's look say so.
  const head = section.locator('figure[data-head="1.1"]');
  const seen = await head.evaluate((fig) => ({
    off: fig.classList.contains('head-off'), note: fig.querySelector('.hint').textContent,
    mark: getComputedStyle(fig.querySelector('button'), '::before').content,
  }));
  assert.ok(seen.off && /^Switched off/.test(seen.note) && seen.mark.includes('✓'), `the switched-off head: ${JSON.stringify(seen)}`);
  await off.click();
  assert.equal(await head.evaluate((fig) => fig.classList.contains('head-off') || /Switched off/.test(fig.textContent)), false, 'switched on again: no mark left');
  assert.equal((await readout(section)).accuracy, end.accuracy);

  mkdirSync(shots, { recursive: true });
  await screenshot(section, `${shots}watch-learn-1280.png`);
  await runAxe(page, 'watch-learn', { include: '#watch-learn' });
  assertClean(problems, 'watch-learn');
  await context.close();
});

test('a new learning rate before the first step changes nothing shown, and the steps then take that rate', async () => {
  const { page, problems, context } = await env.open('#watch-learn');
  const section = page.locator('#watch-learn');
  const map = section.locator('canvas[data-canvas="learn-map-1-1"]');
  const shown = async () => ({ ...(await readout(section)), map: await map.evaluate((c) => c.toDataURL()) });
  const untrained = await shown();
  // Three steps at the default rate, then Reset: the loss those steps reached.
  const stepThrice = async () => {
    for (let n = 0; n < 3; n++) await section.locator('[data-action="learn-step"]').click();
    return (await readout(section)).loss;
  };
  const atDefault = await stepThrice();
  await section.locator('[data-action="learn-reset"]').click();
  assert.deepEqual(await shown(), untrained, 'Reset shows the untrained model again');
  await typeInto(page, section.locator('input[data-field="learn-lr"]'), '0.1');
  await page.keyboard.press('Enter');
  assert.deepEqual(await shown(), untrained, 'a new rate leaves the untrained model as it was shown');
  // The core's trainer, stepped three times at 0.1 here in Node, reaches the loss the page now shows.
  const lab = await loadAttention();
  const trainer = lab.createTrainer({ task: 'previous-token', lr: 0.1, seed: 1 });
  let loss;
  for (let n = 0; n < 3; n++) loss = trainer.step().loss;
  trainer.free();
  const atNew = await stepThrice();
  assert.notEqual(atNew, atDefault, 'the rate changed what three steps reach');
  assert.ok(Math.abs(atNew - loss) <= 0.0005 + 1e-6, `page ${atNew}, core ${loss}`);
  assertClean(problems, 'watch-learn rate');
  await context.close();
});

test('a link to this section followed while the page is open draws its curve, with a name, as opening it does', async () => {
  const { page, problems, context } = await env.open('#view=three-by-three');
  await page.evaluate(() => { location.hash = '#view=watch-learn'; });
  const curve = page.locator('#watch-learn canvas[data-canvas="learn-curve"]');
  await page.waitForFunction(() => document.querySelector('#watch-learn canvas[data-canvas="learn-curve"]')?.getAttribute('aria-label'), null, { timeout: 10000 })
    .catch(() => {});
  const label = await curve.getAttribute('aria-label');
  assert.match(label ?? '', /^Training loss not measured yet at step 0; held-out accuracy/, `the curve is named; its aria-label is ${JSON.stringify(label)}`);
  const inked = await curve.evaluate((c) => {
    const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    let n = 0;
    for (let k = 3; k < data.length; k += 4) if (data[k] > 0) n++;
    return n;
  });
  assert.ok(inked > 100, `the curve's axes are drawn (${inked} pixels inked)`);
  await runAxe(page, 'watch-learn after a link', { include: '#watch-learn' });
  assertClean(problems, 'watch-learn after a link');
  await context.close();
});

test('at a new pixel ratio (a zoom) the curve and the maps are drawn again at that density, showing the same state', async () => {
  // The page hears of a new ratio through matchMedia('(resolution: …dppx)'); this headless
  // browser sends no event for the emulated zoom below, so the test sends it.
  const init = () => {
    const own = window.matchMedia.bind(window);
    window.ratioQueries = [];
    window.matchMedia = (text) => { const list = own(text); if (text.includes('dppx')) window.ratioQueries.push(list); return list; };
  };
  const { page, problems, context } = await env.open('#watch-learn', { init });
  const section = page.locator('#watch-learn');
  for (let n = 0; n < 3; n++) await section.locator('[data-action="learn-step"]').click();
  const canvases = section.locator('canvas[data-canvas]');
  const density = () => canvases.evaluateAll((cs) => cs.map((c) => c.width / parseFloat(c.style.width)));
  assert.ok((await density()).every((d) => d === 1), `drawn at 1 device pixel per CSS pixel: ${await density()}`);
  const before = await readout(section);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Emulation.setDeviceMetricsOverride', { width: 1280, height: 900, deviceScaleFactor: 2, mobile: false });
  await page.evaluate(() => window.ratioQueries.filter((list) => !list.matches).forEach((list) => list.dispatchEvent(new Event('change'))));
  await page.waitForFunction(() => [...document.querySelectorAll('#watch-learn canvas[data-canvas]')].every((c) => c.width === 2 * parseFloat(c.style.width)), null, { timeout: 30000 })
    .catch(async () => assert.fail(`not drawn again at 2 device pixels per CSS pixel: ${JSON.stringify(await density())}`));
  assert.deepEqual(await readout(section), before, 'the same step, loss and accuracy');
  assertClean(problems, 'watch-learn zoom');
  await context.close();
});

test('a narrower window draws the loss curve again at the new width, not shrunk', async () => {
  const { page, problems, context } = await env.open('#watch-learn', { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#watch-learn');
  for (let n = 0; n < 3; n++) await section.locator('[data-action="learn-step"]').click();
  const curve = section.locator('canvas[data-canvas="learn-curve"]');
  const size = () => curve.evaluate((c) => ({ drawn: parseFloat(c.style.width), shown: c.getBoundingClientRect().width, host: c.parentElement.clientWidth }));
  const wide = await size();
  assert.equal(wide.drawn, 560, `drawn at its full width at 1280 px: ${JSON.stringify(wide)}`);
  const before = await readout(section);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForFunction(() => {
    const c = document.querySelector('#watch-learn canvas[data-canvas="learn-curve"]');
    return parseFloat(c.style.width) <= c.parentElement.clientWidth;
  }, null, { timeout: 30000 }).catch(async () => assert.fail(`the curve was not drawn again for 390 px: ${JSON.stringify(await size())}`));
  const narrow = await size();
  assert.ok(Math.abs(narrow.shown - narrow.drawn) < 1, `shown at the width it was drawn at, not scaled: ${JSON.stringify(narrow)}`);
  assert.deepEqual(await readout(section), before, 'the same step, loss and accuracy');
  assertClean(problems, 'watch-learn narrower');
  await context.close();
});

test('the cheating switch on induction: low training loss, held-out accuracy near chance, maps as training saw them or as the test runs them; 390 px screenshot', async () => {
  const { page, problems, context } = await env.open('#learn.task=induction&learn.cheat=1&view=watch-learn', { viewport: { width: 390, height: 900 } });
  const section = page.locator('#watch-learn');
  assert.equal(await section.locator('[data-field="learn-cheat"]').isChecked(), true);
  await section.locator('[data-action="learn-start"]').click();
  await page.waitForFunction(() => Number(document.querySelector('[data-out="learn-step"]').textContent) >= 300, null, { timeout: 90000 });
  await section.locator('[data-action="learn-start"]').click(); // pause
  await page.waitForSelector('#watch-learn [data-action="learn-start"]:has-text("Start")');
  const end = await readout(section);
  assert.ok(end.loss < 0.1, `cheating loss ${end.loss}`);
  assert.ok(end.accuracy < 30, `held-out accuracy ${end.accuracy} %`);

  // The maps show the model as training ran it: nothing hatched, and the
  // weight on the answer, the next token, in plain sight.
  const aside = await section.locator('.aside').textContent();
  assert.doesNotMatch(aside, /does not show|always drawn with the causal rule/, 'the aside says the maps hide the answer');
  assert.match(aside, /drawn as training ran the model, so no cell is hatched/);
  const maps = section.locator('canvas[data-canvas^="learn-map-"]');
  assert.equal(await maps.count(), 4);
  const hatched = async () => Promise.all((await maps.all()).map(hatchPixels));
  assert.deepEqual(await hatched(), [0, 0, 0, 0], 'hatched pixels per map, as training saw them');
  assert.ok((await mapNotes(section)).some((note) => /look hardest at the next token/.test(note)), `notes: ${await mapNotes(section)}`);
  const caption = section.locator('[data-out="learn-maps-view"]');
  assert.match(await caption.textContent(), /^Maps as training saw them \(no causal mask\): .*key one place ahead/);
  assert.match(await section.locator('[data-slot="legend"] .hint').textContent(), /^No cell is hatched/);
  assert.match(await maps.first().getAttribute('aria-label'), /^Layer 1, head 1, as training saw it \(no causal mask\), on the sequence /);
  const views = section.locator('[data-field="learn-maps"]');
  assert.equal(await views.locator('input[value="training"]').isChecked(), true);

  // The held-out test's view of the same model: the keys after each query
  // hatched, no note about the next token, training kept.
  await views.locator('input[value="evaluation"]').check();
  assert.match(await caption.textContent(), /^Maps as the held-out test runs them \(causal\):/);
  assert.ok((await hatched()).every((n) => n > 0), `hatched pixels per map, as the test runs them: ${await hatched()}`);
  assert.ok((await mapNotes(section)).every((note) => !/next token/.test(note)), `notes: ${await mapNotes(section)}`);
  assert.match(await maps.first().getAttribute('aria-label'), /^Layer 1, head 1, as the held-out test runs it \(causal\), on the sequence /);
  assert.match(await section.locator('[data-slot="legend"] .hint').textContent(), /^Hatched cells/);
  assert.deepEqual(await readout(section), end, 'another view of the maps keeps the training');
  // The page writes its hash a moment after a change (lesson-page.js).
  await waitForState(page, () => /learn\.maps=evaluation/.test(location.hash), null, () => `the link names the view: ${page.url()}`);
  // By keyboard, back to what training saw.
  await views.locator('input[value="evaluation"]').focus();
  await page.keyboard.press('ArrowUp');
  assert.equal(await views.locator('input[value="training"]').isChecked(), true);
  assert.match(await caption.textContent(), /^Maps as training saw them/);
  assert.deepEqual(await hatched(), [0, 0, 0, 0]);

  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `page is ${width} px wide at 390 px`);
  mkdirSync(shots, { recursive: true });
  await screenshot(section, `${shots}watch-learn-390.png`);
  await runAxe(page, 'watch-learn cheat', { include: '#watch-learn' });
  assertClean(problems, 'watch-learn cheat');
  await context.close();
});

test('reverse, trained: the map notes and labels describe the anti-diagonal the maps show, as the core\'s weights have it', async () => {
  const { page, problems, context } = await env.open('#learn.task=reverse&view=watch-learn');
  const section = page.locator('#watch-learn');
  await section.locator('[data-action="learn-start"]').click();
  await page.waitForSelector('#watch-learn [data-action="learn-start"]:has-text("Finished")', { timeout: 90000 });
  // The same training in Node: each head's most-weighted key per query.
  const lab = await loadAttention();
  const trainer = lab.createTrainer({ task: 'reverse', seed: 1 });
  for (let n = 0; n < 600; n++) trainer.step();
  const { tokens, layers, allowed } = trainer.attention();
  trainer.free();
  const T = tokens.length;
  const sees = (i) => Array.from({ length: T }, (_, j) => j).filter((j) => allowed.data[i * T + j]);
  // Queries that may see one key only (the core's rule) have no choice and are not counted.
  const choosing = Array.from({ length: T }, (_, i) => i).filter((i) => sees(i).length > 1);
  assert.equal(choosing.length, T - 1, 'under the causal rule only query 1 sees a single key');
  for (const [hd, head] of layers[0].entries()) {
    const w = head.data ?? head;
    // Query i (0-based) answering from the mirrored position looks at key T − 2 − i (1-based positions add up to T),
    // clearly: by MAP_MARGIN more than at any other key it may see.
    const mirrored = choosing.filter((i) => {
      const k = T - 2 - i;
      return allowed.data[i * T + k] && sees(i).every((j) => j === k || w[i * T + k] - w[i * T + j] >= MAP_MARGIN);
    });
    const mean = mirrored.reduce((acc, i) => acc + w[i * T + T - 2 - i], 0) / mirrored.length;
    const canvas = section.locator(`canvas[data-canvas="learn-map-1-${hd + 1}"]`);
    const note = await canvas.locator('xpath=following-sibling::p[1]').textContent();
    const want = `${mirrored.length} of the ${T - 1} queries that see more than one key look hardest at the mirror-image token (query and key positions add up to ${T}), putting ${mean.toFixed(2)} of their weight there on average; query 1 sees only key 1, so its weight there is forced and not counted.`;
    assert.equal(note, want, `head ${hd + 1}: the note under the map`);
    assert.equal(await canvas.evaluate((c) => document.getElementById(c.getAttribute('aria-describedby'))?.textContent), want, `head ${hd + 1}: the canvas is described by the note`);
  }
  assertClean(problems, 'watch-learn reverse');
  await context.close();
});

// describeMap in Node, on the visibility the core reports (trainer.attention's
// `allowed`): the maps here are made up, the rule of which key each query may see is the core's.
const causalAllowed = async (task = 'previous-token') => {
  const lab = await loadAttention();
  const trainer = lab.createTrainer({ task, seed: 1 });
  const { tokens, allowed } = trainer.attention();
  trainer.free();
  return { T: tokens.length, allowed: allowed.data };
};
/** A map whose row i is row(i, visibleKeys) on the keys query i may see, 0 elsewhere. */
const mapOf = (T, allowed, row) => {
  const w = new Float32Array(T * T);
  for (let i = 0; i < T; i++) {
    const keys = Array.from({ length: T }, (_, j) => j).filter((j) => allowed[i * T + j]);
    for (const [j, x] of Object.entries(row(i, keys))) w[i * T + Number(j)] = x;
  }
  return w;
};

test('a map note says a head spreads its weight when its hardest looks carry little more than an even share', async () => {
  const T = 8;
  const allowed = new Uint8Array(T * T).fill(1); // as training ran a model without the causal mask
  const even = new Float32Array(T * T).fill(0.1);
  for (let i = 0; i < T; i++) even[i * T + ((i + 1) % T)] = 0.3; // a clear but weak favourite one place ahead
  const sharp = new Float32Array(T * T);
  for (let i = 0; i < T; i++) sharp[i * T + Math.max(0, i - 1)] = 1;
  const notes = [describeMap(even, T, allowed), describeMap(sharp, T, allowed)];
  assert.match(notes[0], /^No line stands out: this head spreads its weight roughly evenly/, `near-even map: ${notes[0]}`);
  assert.equal(notes[1], '7 of the 8 queries that see more than one key look hardest at the previous token, putting 1.00 of their weight there on average', `sharp map: ${notes[1]}`);
});

test('a row whose largest weights tie (or lead by less than MAP_MARGIN) is no clear choice, not a look at the first key', async () => {
  const { T, allowed } = await causalAllowed();
  // Every query splits its weight evenly over the keys it may see.
  const uniform = mapOf(T, allowed, (i, keys) => Object.fromEntries(keys.map((j) => [j, 1 / keys.length])));
  // Every query splits it between the previous token and itself.
  const halves = mapOf(T, allowed, (i, keys) => (keys.length === 1 ? { [keys[0]]: 1 } : { [i - 1]: 0.5, [i]: 0.5 }));
  for (const [what, w] of [['uniform rows', uniform], ['rows split 0.5 / 0.5', halves]]) {
    const note = describeMap(w, T, allowed);
    assert.match(note, /^No clear pattern yet: none of the \d+ queries that see more than one key puts clearly more weight on one key than on any other/,
      `${what}: the note should say no query has a clear favourite, not "${note}"`);
  }
  // Just under the margin is a tie; just over it, a choice.
  const lead = (gap) => mapOf(T, allowed, (i, keys) => (keys.length === 1 ? { [keys[0]]: 1 } : { [i - 1]: 0.5 + gap / 2, [i]: 0.5 - gap / 2 }));
  const under = describeMap(lead(MAP_MARGIN - 0.01), T, allowed);
  const over = describeMap(lead(MAP_MARGIN + 0.01), T, allowed);
  assert.match(under, /^No clear pattern yet/, `a lead of ${MAP_MARGIN - 0.01}: ${under}`);
  assert.match(over, new RegExp(`^${T - 1} of the ${T - 1} queries that see more than one key look hardest at the previous token`), `a lead of ${MAP_MARGIN + 0.01}: ${over}`);
});

test('query 1 under the causal mask sees only key 1: its forced weight of 1 is not counted as something learned', async () => {
  const { T, allowed } = await causalAllowed();
  // Every query on itself: query 1 can do nothing else.
  const diagonal = mapOf(T, allowed, (i) => ({ [i]: 1 }));
  const note = describeMap(diagonal, T, allowed);
  assert.equal(note, `${T - 1} of the ${T - 1} queries that see more than one key look hardest at themselves, putting 1.00 of their weight there on average; query 1 sees only key 1, so its weight there is forced and not counted`,
    `the diagonal map, ${T} queries, query 1 forced`);
  // Only query 1 on the diagonal, every other row even: the forced row is no pattern at all.
  const forcedOnly = mapOf(T, allowed, (i, keys) => Object.fromEntries(keys.map((j) => [j, 1 / keys.length])));
  const said = describeMap(forcedOnly, T, allowed);
  assert.doesNotMatch(said, /look hardest at themselves/, `only the forced row looks at itself, yet the note says: ${said}`);
  // As training ran the model under the cheat (no causal mask), query 1 has a choice, and counts.
  const lab = await loadAttention();
  const trainer = lab.createTrainer({ task: 'previous-token', seed: 1, bug: 'no-causal-mask' });
  const open = trainer.attention(null, { as: 'training' }).allowed.data;
  trainer.free();
  assert.equal(describeMap(diagonal, T, open), `${T} of the ${T} queries that see more than one key look hardest at themselves, putting 1.00 of their weight there on average`);
});

test('the cheating switch on reverse: held-out accuracy climbs, and the aside keeps "stays at chance" for induction', async () => {
  // Reverse trains in a few seconds; with the leak its answer still sits at a fixed place in the past.
  const { page, problems, context } = await env.open('#view=watch-learn&learn.task=reverse&learn.cheat=1', { viewport: { width: 1280, height: 900 } });
  await page.locator('#watch-learn [data-action="learn-start"]').click();
  await page.waitForSelector('#watch-learn [data-action="learn-start"]:has-text("Finished")', { timeout: 30000 });
  const accuracy = Number((await page.locator('#watch-learn [data-out="learn-accuracy"]').textContent()).replace(/\s%/, ''));
  assert.ok(accuracy > 50, `reverse with the leak still learns: held-out accuracy ${accuracy} %`);
  const aside = await page.locator('#watch-learn p.aside').textContent();
  const claim = aside.split(/(?<=\.)\s+/).find((s) => /stays at chance/.test(s));
  assert.match(claim, /^On induction/, `held-out accuracy is ${accuracy} % on reverse, yet the aside says: "${claim}"`);
  assertClean(problems, 'cheating on reverse');
  await context.close();
});

test('a tiny learning rate leaves previous-token unlearnt, and the prose that says training may fail names the learning rate too', async () => {
  const { page, problems, context } = await env.open('#view=watch-learn&learn.lr=0.0001', { viewport: { width: 1280, height: 900 } });
  await page.locator('#watch-learn [data-action="learn-start"]').click();
  await page.waitForSelector('#watch-learn [data-action="learn-start"]:has-text("Finished")', { timeout: 30000 });
  const accuracy = Number((await page.locator('#watch-learn [data-out="learn-accuracy"]').textContent()).replace(/\s%/, ''));
  assert.ok(accuracy < 50, `at a learning rate of 0.0001, 400 steps leave the task unlearnt: ${accuracy} %`);
  const prose = (await page.locator('#watch-learn > p').allTextContents()).join(' ');
  const claim = prose.split(/(?<=[.)])\s+/).find((s) => /does not always succeed/.test(s));
  assert.match(claim, /learning rate/, `held-out accuracy is ${accuracy} % at the learning rate typed, yet the prose blames only seeds: "${claim}"`);
  assertClean(problems, 'tiny learning rate');
  await context.close();
});

test('the screen reader\'s line says training runs once Start is pressed again, and a reload starts a new model, as the prose says', async () => {
  const { page, problems, context } = await env.open('#watch-learn');
  const section = page.locator('#watch-learn');
  assert.match(await section.innerText(), /the link keeps the task and the settings, not the training, so a reload, or a new task, seed, learning rate or cheating switch, starts a new model from step 0/);
  const said = section.locator('[data-out="learn-said"]');
  const start = section.locator('[data-action="learn-start"]');
  await start.click();
  assert.equal(await said.textContent(), 'Training from step 0.');
  await waitForState(page, () => Number(document.querySelector('#watch-learn [data-out="learn-step"]').textContent.replace(/\D/g, '')) >= 20, null, 'training reaches step 20');
  await start.evaluate((button) => button.click()); // pause, at once (no wait for actionability while training runs on)
  await waitForState(page, () => /^Paused at step \d+/.test(document.querySelector('#watch-learn [data-out="learn-said"]').textContent), null, 'the line says it paused');
  const paused = (await readout(section)).step;
  await start.click();
  assert.equal(await said.textContent(), `Training from step ${paused}.`, 'pressed again, the line no longer says "Paused"');
  // Pause again; on a slow machine training may have finished first (Start
  // is then Finished and unavailable), which serves the reload as well.
  await start.evaluate((button) => button.click());
  await page.waitForSelector('#watch-learn [data-action="learn-start"]:is(:text-is("Start"), :text-is("Finished"))');
  await page.reload();
  await page.waitForSelector('html[data-ready="true"]', { state: 'attached' });
  assert.equal((await readout(page.locator('#watch-learn'))).step, 0, 'after a reload the model starts again from step 0');
  assertClean(problems, 'watch-learn restart');
  await context.close();
});

test('a map note names the induction pattern (the token just after an earlier copy of the query\'s own token), not a distance true of one sequence only', () => {
  const T = 8;
  const causal = Array.from({ length: T * T }, (_, k) => Number(k % T <= Math.floor(k / T)));
  const map = (top) => { // each query i puts 0.9 on key top[i] (the rest spread over its other keys)
    const w = new Float32Array(T * T);
    for (let i = 0; i < T; i++) {
      for (let j = 0; j <= i; j++) w[i * T + j] = i === 0 ? 1 : j === top[i] ? 0.9 : 0.1 / i;
    }
    return w;
  };
  // A repeated half: the key after the earlier copy is also 3 places back, on this sequence only,
  // and one query of the first half happens to look 3 places back too: the distance holds 5 rows, the tokens 4 of 4.
  const repeated = [1, 2, 3, 4, 1, 2, 3, 4];
  const w1 = map([0, 0, 1, 0, 1, 2, 3, 4]);
  assert.match(describeMap(w1, T, causal, repeated), /^4 of the 4 queries whose token appeared earlier look hardest at the token just after that earlier copy \(the induction pattern\), putting 0\.90/);
  assert.match(describeMap(w1, T, causal), /^5 of the 7 queries that see more than one key look hardest at the token 3 places back/, 'without the tokens, the distance is all there is to say');
  // Copies at different distances: only the tokens explain the looks.
  const scattered = [5, 1, 2, 5, 1, 7, 2, 9];
  const w2 = map([0, 0, 1, 1, 2, 1, 3, 0]);
  assert.match(describeMap(w2, T, causal, scattered), /^3 of the 3 queries whose token appeared earlier look hardest at the token just after that earlier copy/);
  // Without the causal mask (the cheating switch's view) query 1 has a choice too, but its token appeared nowhere before it.
  const open = Array(T * T).fill(1);
  const w4 = new Float32Array(T * T);
  [5, 0, 1, 2, 1, 2, 3, 4].forEach((j, i) => { for (let k = 0; k < T; k++) w4[i * T + k] = k === j ? 0.93 : 0.01; });
  assert.match(describeMap(w4, T, open, repeated), /^4 of the 4 queries whose token appeared earlier look hardest at the token just after that earlier copy/);
  // A previous-token head on a sequence with repeats: the tokens explain nothing, the line does.
  const w3 = map([0, 0, 1, 2, 3, 4, 5, 6]);
  assert.match(describeMap(w3, T, causal, repeated), /^7 of the 7 queries that see more than one key look hardest at the previous token/);
});

test('training that finishes by itself leaves the focus on Start/Pause, marked unavailable: a late Space does not reset the model', async () => {
  const { page, problems, context } = await env.open('#view=watch-learn', { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#watch-learn');
  const start = section.locator('[data-action="learn-start"]');
  await start.focus();
  await page.keyboard.press('Space');
  await page.waitForSelector('#watch-learn [data-action="learn-start"]:has-text("Finished")', { timeout: 60000 });
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve()))); // a disabled button would lose the focus by the next frame
  const focus = await page.evaluate(() => document.activeElement.dataset.action ?? document.activeElement.tagName);
  assert.equal(focus, 'learn-start', 'the focus after training finished');
  assert.equal(await start.getAttribute('aria-disabled'), 'true', 'Finished is marked unavailable');
  const trained = await readout(section);
  assert.equal(trained.step, 400);
  // The Space meant to pause, pressed just too late.
  await page.keyboard.press('Space');
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
  assert.deepEqual(await readout(section), trained, 'a Space on Finished changed the model');
  assert.equal(await start.textContent(), 'Finished');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.action), 'learn-start', 'the focus after the late Space');
  // Reset, chosen, starts a new model, and Start is available again.
  await section.locator('[data-action="learn-reset"]').click();
  assert.equal((await readout(section)).step, 0);
  assert.equal(await start.getAttribute('aria-disabled'), 'false', 'Start after Reset');
  assert.equal(await start.textContent(), 'Start');
  assertClean(problems, 'watch-learn finishing');
  await context.close();
});

test('the last of the steps taken one at a time finishes training, as a run does: Finished, marked unavailable, and said', async () => {
  const { page, problems, context } = await env.open('#view=watch-learn', { viewport: { width: 1280, height: 900 } });
  const section = page.locator('#watch-learn');
  const one = section.locator('[data-action="learn-step"]');
  // 399 steps at once, then the last one by keyboard.
  await page.evaluate(() => { const b = document.querySelector('#watch-learn [data-action="learn-step"]'); for (let n = 0; n < 399; n++) b.click(); });
  assert.equal((await readout(section)).step, 399);
  assert.equal(await one.getAttribute('aria-disabled'), 'false', 'One step before the last step');
  await one.focus();
  await page.keyboard.press('Enter');
  assert.equal((await readout(section)).step, 400);
  assert.equal(await section.locator('[data-action="learn-start"]').textContent(), 'Finished');
  assert.equal(await one.getAttribute('aria-disabled'), 'true', 'One step after the last step');
  assert.match(await section.locator('[data-out="learn-said"]').textContent(), /^Finished at step 400: held-out accuracy \d+\.\d\s%$/);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.action), 'learn-step', 'the focus stays on One step');
  assertClean(problems, 'watch-learn one step at a time');
  await context.close();
});
