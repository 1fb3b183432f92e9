// Watch a head learn: a tiny attention-only model trains in the core on a toy
// task while the page draws its loss, its held-out accuracy and every head's
// attention map. Every number shown comes from the wasm core (lab.createTrainer).

import { TRAIN_TASKS, TRAIN_DEFAULTS } from '../attention.js';
import { h, numberField, checkbox, radios, select, statusLine, fmt, fmtSci, uid, sizedCanvas, onPixelRatioChange } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { rampRgb, rampColour, rampLegend, headColour } from '../palette.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

/** Token ids are drawn as letters: id 0 is A, id 26 is a, id 52 is 0. */
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const letter = (id) => LETTERS[id] ?? '?';

const TASK_NAMES = {
  'previous-token': 'Previous token (1 layer)',
  induction: 'Induction (2 layers)',
  reverse: 'Reverse (1 layer)',
};
/** Training stops by itself after this many steps. */
const STEP_LIMIT = { 'previous-token': 400, induction: 1500, reverse: 600 };
const FRAME_BUDGET_MS = 8;   // training time per animation frame
const MAPS_EVERY_MS = 150;   // redraw the attention maps at most this often
const EVAL_EVERY = 50;       // steps between held-out checks while training
const LOSS_COLOUR = rampColour(0.25);
const ACCURACY_COLOUR = rampColour(0.7);
const HATCH = '#dedcd5';
/**
 * The two ways to draw the maps under the cheat (trainer.attention's `as`):
 * as training ran the model, without the causal mask, or as the held-out
 * test runs it, causal. Without the cheat the two are the same.
 */
const MAP_VIEWS = ['training', 'evaluation'];

const reducedMotion = () => typeof matchMedia === 'function' && matchMedia('(prefers-reduced-motion: reduce)').matches;
const percent = (x) => `${fmt(100 * x, 1)}\u00a0%`; // the sign never wraps away from its number
/** A loss for the readout: scientific notation once it is below 0.01. */
const lossText = (x) => (x < 0.01 ? fmtSci(x, 2) : fmt(x, 3));

/**
 * One head's (T, T) map: rows are queries, columns keys, tokens as letters
 * on both axes; pairs the rule blocks (allowed (T, T), 0 = blocked) are hatched.
 */
function drawMap(canvas, weights, tokens, allowed) {
  const T = tokens.length;
  // A long sequence (induction's 31 tokens) takes 10 px cells: the map then
  // still fits a phone's column, and its letters stay 10 px tall.
  const cell = T <= 16 ? 15 : 10;
  const margin = cell + 4;
  const size = margin + T * cell + 1;
  const g = sizedCanvas(canvas, size, size);
  g.clearRect(0, 0, size, size);
  g.font = `${Math.min(12, cell)}px ui-monospace, monospace`;
  g.textAlign = 'center';
  g.textBaseline = 'middle';
  g.fillStyle = '#222';
  for (let i = 0; i < T; i++) {
    g.fillText(letter(tokens[i]), margin + (i + 0.5) * cell, margin / 2);
    g.fillText(letter(tokens[i]), margin / 2, margin + (i + 0.5) * cell);
  }
  for (let i = 0; i < T; i++) {
    for (let j = 0; j < T; j++) {
      const x = margin + j * cell, y = margin + i * cell;
      if (!allowed[i * T + j]) {
        g.fillStyle = HATCH;
        g.fillRect(x, y, cell, cell);
        g.strokeStyle = '#ffffff';
        g.beginPath();
        g.moveTo(x, y + cell);
        g.lineTo(x + cell, y);
        g.stroke();
        continue;
      }
      const [r, gr, b] = rampRgb(weights[i * T + j]);
      g.fillStyle = `rgb(${r}, ${gr}, ${b})`;
      g.fillRect(x, y, cell, cell);
    }
  }
}

/**
 * How far (in attention weight, a row summing to 1) a query's largest weight
 * must lead its runner-up to count as a choice: 0.05. A smaller lead (exact
 * ties included, as in an even row) is no clear choice: the row names no key.
 */
export const MAP_MARGIN = 0.05;

/**
 * Each query's choice in a (T, T) map: { top, keys } per query, `keys` the
 * number of keys it may see and `top` its most-weighted key when that leads
 * every other visible key by MAP_MARGIN or more, else null (no clear choice).
 * Which keys a query may see is `allowed` (T, T), 1 = visible, as the core
 * reported it for the run (trainer.attention): it is never re-derived here.
 */
export function mapChoices(weights, T, allowed) {
  if (!allowed || allowed.length !== T * T) throw new TypeError('mapChoices: allowed must be the (T, T) visibility the core reported');
  return Array.from({ length: T }, (_, i) => {
    let top = -1, second = -Infinity, keys = 0;
    for (let j = 0; j < T; j++) {
      if (!allowed[i * T + j]) continue;
      keys++;
      const w = weights[i * T + j];
      if (top < 0 || w > weights[i * T + top]) {
        if (top >= 0) second = weights[i * T + top];
        top = j;
      } else if (w > second) second = w;
    }
    const clear = keys > 1 && weights[i * T + top] - second >= MAP_MARGIN;
    return { keys, top: clear ? top : null, forced: keys === 1 ? top : null };
  });
}

/**
 * Whether the clear choices of a map follow the tokens: among the queries
 * with a choice whose token appeared earlier in the sequence (the eligible
 * ones), at least
 * TOKEN_SHARE look hardest at the token just after an earlier copy (the
 * induction pattern, tried first) or at the copy itself. Returns { rows,
 * eligible, after } or null.
 */
function tokenPattern(choices, tokens) {
  const earlier = (i) => i > 0 && tokens.lastIndexOf(tokens[i], i - 1) >= 0; // at i = 0, a start of −1 would search it all
  const eligible = choices.filter((c, i) => c.keys > 1 && earlier(i)).length;
  if (eligible < 2) return null;
  for (const after of [true, false]) {
    const holds = after ? (i, j) => j >= 1 && j - 1 < i && tokens[j - 1] === tokens[i] : (i, j) => j < i && tokens[j] === tokens[i];
    const rows = choices.flatMap(({ top }, i) => (top !== null && holds(i, top) ? [i] : []));
    if (rows.length >= TOKEN_SHARE * eligible) return { rows, eligible, after };
  }
  return null;
}

/** The share of the eligible queries a token pattern must hold to describe a map (tokenPattern). */
const TOKEN_SHARE = 0.75;

/**
 * In words, for screen readers and tests: the line of the map that most
 * queries look at hardest. Only queries with a choice count: a query that
 * may see one key only (query 1 under the causal mask) puts its weight there
 * perforce, which shows nothing learned; and a query whose largest weight
 * does not lead the runner-up by MAP_MARGIN has no clear favourite (see
 * mapChoices). The lines tried are the diagonals (query i looking at key
 * i − d, d places back), the anti-diagonals (key s − i, the mirror image of
 * the query about a fixed point, as in reversing), and last the diagonals
 * ahead (key i + d), which only a map drawn without the causal mask can
 * light up. The line holding the most of the clear choices is described,
 * with the mean weight its queries put there. When fewer than half of the
 * queries with a choice have a clear one, there is no clear pattern yet; a
 * head whose hardest looks carry little more than an even share is said to
 * spread its weight. `allowed`: as for mapChoices. With the sequence's
 * `tokens`, a head that follows the tokens rather than the positions is
 * described by them first (see tokenPattern): where the copies sit varies
 * from one sequence to the next, so a distance would be true of this
 * sequence only.
 */
export function describeMap(weights, T, allowed, tokens = null) {
  const choices = mapChoices(weights, T, allowed);
  const choosing = choices.filter((c) => c.keys > 1).length;
  const clear = choices.filter((c) => c.top !== null).length;
  // Positions are 1-based on the page.
  const forced = choices.flatMap((c, i) => (c.forced !== null ? [[i, c.forced]] : []));
  const forcedText = forced.length === 0 ? ''
    : forced.length === 1 ? `; query ${forced[0][0] + 1} sees only key ${forced[0][1] + 1}, so its weight there is forced and not counted`
      : `; ${forced.length} queries see only one key each, so their weights there are forced and not counted`;
  const queries = `${choosing === 1 ? 'query that sees' : 'queries that see'} more than one key`;
  if (choosing === 0) return 'No query here sees more than one key, so this map shows no choice the head has learned';
  if (2 * clear < choosing) {
    return clear === 0
      ? `No clear pattern yet: none of the ${choosing} ${queries} puts clearly more weight on one key than on any other${forcedText}`
      : `No clear pattern yet: only ${clear} of the ${choosing} ${queries} ${clear === 1 ? 'puts' : 'put'} clearly more weight on one key than on any other${forcedText}`;
  }
  const meanOf = (rows) => rows.reduce((acc, i) => acc + weights[i * T + choices[i].top], 0) / rows.length;
  const tokenLook = tokens && tokenPattern(choices, tokens);
  let look, mean;
  if (tokenLook) {
    const { rows, eligible, after } = tokenLook;
    mean = meanOf(rows);
    const where = after ? 'the token just after that earlier copy (the induction pattern)' : 'that earlier copy';
    look = `${rows.length} of the ${eligible} ${eligible === 1 ? 'query' : 'queries'} whose token appeared earlier ${rows.length === 1 ? 'looks' : 'look'} hardest at ${where}`;
  } else {
    const lines = [];
    for (let d = 0; d < T; d++) lines.push({ back: d, key: (i) => i - d });
    for (let sum = 0; sum <= 2 * T - 2; sum++) lines.push({ sum, key: (i) => sum - i });
    for (let d = 1; d < T; d++) lines.push({ ahead: d, key: (i) => i + d });
    let best = null;
    for (const line of lines) {
      const rows = choices.flatMap(({ top }, i) => (top !== null && line.key(i) === top ? [i] : []));
      if (!best || rows.length > best.rows.length) best = { line, rows };
    }
    const { line, rows } = best;
    mean = meanOf(rows);
    // 0-based query i and key s − i add up to s + 2 as 1-based positions.
    const where = line.back === 0 ? 'themselves' : line.back === 1 ? 'the previous token'
      : line.back !== undefined ? `the token ${line.back} places back`
        : line.ahead === 1 ? 'the next token'
          : line.ahead !== undefined ? `the token ${line.ahead} places ahead`
            : `the mirror-image token (query and key positions add up to ${line.sum + 2})`;
    look = `${rows.length} of the ${choosing} ${queries} ${rows.length === 1 ? 'looks' : 'look'} hardest at ${where}`;
  }
  // Under three times an even share (1/T), the hardest look is hardly a look.
  if (mean < 3 / T) return `No line stands out: this head spreads its weight roughly evenly (${look}, with only ${fmt(mean, 2)} of their weight)${forcedText}`;
  return `${look}, putting ${fmt(mean, 2)} of their weight there on average${forcedText}`;
}

/** The loss (left axis) and held-out accuracy (right axis, 0 to 1) against the step. */
function drawCurve(canvas, losses, accuracies, limit, width) {
  const W = Math.max(260, Math.min(560, width || 560)), H = 220, left = 44, right = 44, top = 12, bottom = 34;
  const g = sizedCanvas(canvas, W, H);
  g.clearRect(0, 0, W, H);
  // The loss axis reaches the largest loss so far (a loss that climbs later stretches it).
  let maxLoss = 1;
  for (const p of losses) if (Number.isFinite(p.loss) && p.loss > maxLoss) maxLoss = p.loss;
  const x = (step) => left + ((W - left - right) * step) / limit;
  const yLoss = (loss) => top + (H - top - bottom) * (1 - loss / maxLoss);
  const yAcc = (acc) => top + (H - top - bottom) * (1 - acc);
  g.strokeStyle = '#8a8880';
  g.lineWidth = 1;
  g.strokeRect(left, top, W - left - right, H - top - bottom);
  g.fillStyle = '#333';
  g.font = '12px system-ui, sans-serif';
  g.textAlign = 'center';
  g.fillText('0', left, H - bottom + 14);
  g.fillText(String(limit), W - right, H - bottom + 14);
  g.fillText('optimiser step', W / 2, H - 6);
  g.textAlign = 'right';
  g.fillText(fmt(maxLoss, 2), left - 4, top + 8);
  g.fillText('0', left - 4, H - bottom);
  g.textAlign = 'left';
  g.fillText('1', W - right + 4, top + 8);
  g.fillText('0', W - right + 4, H - bottom);
  const line = (points, colour, dash, xOf, yOf) => {
    if (points.length === 0) return;
    g.strokeStyle = colour;
    g.lineWidth = 2;
    g.setLineDash(dash);
    g.beginPath();
    points.forEach((p, k) => (k ? g.lineTo(xOf(p), yOf(p)) : g.moveTo(xOf(p), yOf(p))));
    g.stroke();
    g.setLineDash([]);
  };
  line(losses, LOSS_COLOUR, [], (p) => x(p.step), (p) => yLoss(p.loss));
  line(accuracies, ACCURACY_COLOUR, [6, 4], (p) => x(p.step), (p) => yAcc(p.accuracy));
}

export const watchLearn = {
  id: 'watch-learn',
  prefix: 'learn',
  title: 'Watch a head learn',
  body: `
<p>The trained heads of the multi-head section came ready-made. Here a tiny model <em>trains</em> in front of you, in the same core: token and position embeddings, one or two layers of multi-head attention with residual connections and nothing else, a LayerNorm and an unembedding, trained with AdamW on a toy task. Press Start and watch the maps. The model lives only in this page: the link keeps the task and the settings, not the training, so a reload, or a new task, seed, learning rate or cheating switch, starts a new model from step 0.</p>
<ul>
  <li><strong>Previous token</strong>: each position must output the token just before it; one head learns to look exactly one place back, a line just below the diagonal.</li>
  <li><strong>Induction</strong>: a few random letters as filler, then a run of random letters, then the same run again. In the second copy the next letter is predictable: find the earlier occurrence of the current letter and copy what came after it. That takes two heads in a row: a layer-1 head that looks one place back, then a layer-2 head (the <em>induction head</em>) that looks at the token after the earlier copy of the current one.</li>
  <li><strong>Reverse</strong>: the second half mirrors the first, so a head learns an anti-diagonal.</li>
</ul>
<div class="controls" data-slot="controls"></div>
<div class="controls-row" data-slot="buttons"></div>
<div data-slot="status"></div>
<p class="readout" data-slot="readout"></p>
<figure class="result">
  <figcaption>Training loss (solid line, left axis) and held-out accuracy (dashed line, right axis, 0 to 1). Held-out sequences come from another seed, and each position is predicted from its prefix alone, as in generation.</figcaption>
  <div data-slot="curve"></div>
</figure>
<div class="controls-row" data-slot="view"></div>
<p class="readout" data-slot="view-caption" data-out="learn-maps-view"></p>
<div class="result heads" data-slot="maps"></div>
<div data-slot="legend"></div>
<p>When training pauses or finishes, switch a head off and watch the held-out accuracy: the head whose absence hurts is the one that does the work. The maps alone do not prove that; the ablation does. Two heads may share the work, so that switching off either one alone changes little (try reverse, or switching two off). And training does not always succeed: some seeds get stuck (induction with seed 2 stays below 50 % held-out accuracy), and a learning rate far from the starting one can leave a task half learnt when the steps run out, which is worth seeing too.</p>
<p class="aside"><strong>The cheating switch.</strong> With it on, training runs with the <code>no-causal-mask</code> bug: every position can see the whole sequence, including the very token it is asked to predict. The training loss collapses toward 0. On induction, held-out accuracy, measured causally, stays at chance: the model learned to read the answer, not to do the task. On the other two tasks the answer also sits at a fixed place in the past, so a model trained with the leak can still find it there, and its held-out accuracy may climb all the same. The maps are then drawn as training ran the model, so no cell is hatched (the choice above the maps switches them to the held-out test’s view). On induction, once the loss has collapsed, look at the rows of the second copy: some head puts most of its weight just above the diagonal, on the next token, which is the very token that query must predict. In the held-out test’s view those cells are hatched: the test hides the answer, and what the model learned does not work without it. The checks that look only at the arithmetic (each row of weights sums to 1, every number is finite) would still pass; only a check on the mask itself, or on what a query may see of the future, catches it (see the break-it card “The causal mask is dropped”, <code>no-causal-mask</code>). Green unit tests of attention vouch for each step’s arithmetic, and for nothing more: whether the model has learnt the task is a separate question, which only a held-out test answers.</p>
`,
  fields: [
    ['task', codec.choice(TRAIN_TASKS), () => 'previous-token'],
    ['lr', codec.num(0.0001, 0.1), () => 0.01],
    ['seed', codec.int(0, 99999), () => 1],
    ['cheat', codec.bool(), () => false],
    ['maps', codec.choice(MAP_VIEWS), () => 'training'],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    this.stop();
    ctx.slot(this.id, 'controls').replaceChildren(
      select({ label: 'Task', name: 'learn-task', value: st.task, options: TRAIN_TASKS.map((t) => [t, TASK_NAMES[t]]),
        onValue: (v) => { st.task = v; commit(); } }),
      numberField({ label: 'Learning rate', name: 'learn-lr', value: st.lr, min: 0.0001, max: 0.1, size: 'sm',
        onValue: (v) => { st.lr = v; commit(); } }),
      numberField({ label: 'Seed', name: 'learn-seed', value: st.seed, integer: true, min: 0, max: 99999, size: 'sm',
        onValue: (v) => { st.seed = v; commit(); } }),
      checkbox({ label: 'Cheat: train without the causal mask (the no-causal-mask bug)', name: 'learn-cheat', checked: st.cheat,
        onToggle: (on) => { st.cheat = on; commit(); } }),
    );
    // A button marked unavailable (aria-disabled, see showFinished) ignores presses.
    const button = (action, text, onClick) => {
      const b = h('button', { type: 'button', class: 'action', 'data-action': action, text });
      b.addEventListener('click', () => {
        if (b.getAttribute('aria-disabled') !== 'true') onClick();
      });
      return b;
    };
    this.startButton = button('learn-start', 'Start', () => (this.running ? this.pause(ctx) : this.start(ctx, st)));
    this.stepButton = button('learn-step', 'One step', () => this.stepOnce(ctx, st));
    this.resetButton = button('learn-reset', 'Reset', () => this.update(ctx, st, EDITED));
    // One line for screen readers when training pauses or finishes and when a
    // head is switched off or on. The readout itself is not live: it changes
    // every frame while training.
    this.said = h('p', { class: 'sr-only', role: 'status', 'data-out': 'learn-said' });
    // New settings or Reset: the fresh model is said once the edits pause;
    // a new view of the maps, what they now show.
    this.settingsSaid = announcer(ctx.node(this.id), 'watch-learn');
    ctx.slot(this.id, 'buttons').replaceChildren(this.startButton, this.stepButton, this.resetButton, this.said, this.settingsSaid.node);
    this.status = statusLine(this.settingsSaid);
    ctx.slot(this.id, 'status').replaceChildren(this.status.node);
    this.curve = h('canvas', { role: 'img', 'data-canvas': 'learn-curve' });
    this.shown = null; // mounted again (a link followed): the new curve is not drawn yet
    const curveHost = ctx.slot(this.id, 'curve');
    this.curveWidth = curveHost.clientWidth; // read once, before anything is drawn
    curveHost.replaceChildren(this.curve);
    // Which view the maps show: a choice under the cheat, and always written
    // above them (viewCaption). A new choice is said as the caption's first sentence.
    this.viewChoice = radios({ legend: 'Draw the maps', name: 'learn-maps', value: st.maps,
      options: [['training', 'As training saw them (no causal mask)'], ['evaluation', 'As the held-out test runs them (causal)']],
      onValue: (v) => { st.maps = v; ctx.commit(this.prefix, { edited: 'maps', maps: true }); } });
    ctx.slot(this.id, 'view').replaceChildren(this.viewChoice);
    this.viewCaption = ctx.slot(this.id, 'view-caption');
    this.hatchHint = h('p', { class: 'hint' });
    ctx.slot(this.id, 'legend').replaceChildren(rampLegend(document, { what: 'attention weight', blocked: false }), this.hatchHint);
    // The curve and the maps are drawn at the device's pixel ratio: a new
    // ratio draws them again (while training runs, its next frame does).
    this.stopRatio?.();
    this.stopRatio = onPixelRatioChange(() => {
      if (!this.running && ctx.node(this.id)?.isConnected) this.draw(ctx);
    });
    // The curve takes its column's width: a new width (a window narrowed, a
    // phone turned) draws it again at that width, instead of shrinking the
    // old drawing and its labels. The width is observed, never read in a redraw.
    this.curveObserver?.disconnect();
    if (typeof ResizeObserver === 'function') {
      this.curveObserver = new ResizeObserver(([entry]) => {
        const width = Math.round(entry.contentRect.width);
        if (!width || width === Math.round(this.curveWidth)) return;
        this.curveWidth = width;
        if (!this.running && ctx.node(this.id)?.isConnected) this.draw(ctx);
      });
      this.curveObserver.observe(curveHost);
    }
  },

  /**
   * Which view the maps show, and the words that say so: the caption above
   * them and the hint under the legend. Set on an edit, never per frame.
   */
  showView(st) {
    this.cheat = st.cheat;
    this.mapsAs = st.cheat ? st.maps : 'evaluation';
    this.viewChoice.hidden = !st.cheat;
    const answer = st.task === 'previous-token' ? 'one place back, just below the diagonal'
      : 'one place ahead, just above the diagonal';
    const predict = ` Where a query has a token to predict, that token is the key ${answer}.`;
    const [lead, rest] = !st.cheat
      ? ['Maps as training and the held-out test both run them (causal):', ' each query sees itself and the keys before it; the keys after it are hatched.']
      : this.mapsAs === 'training'
        ? ['Maps as training saw them (no causal mask):', ` each query sees every key, those after it too, so no cell is hatched.${predict}`]
        : ['Maps as the held-out test runs them (causal):', ` each query sees itself and the keys before it; the keys after it, which training saw, are hatched.${predict}`];
    this.viewCaption.replaceChildren(h('strong', { text: lead }), rest);
    this.viewSaid = `${lead}${rest.slice(0, rest.indexOf('.') + 1)}`;
    this.hatchHint.textContent = this.mapsAs === 'training' && st.cheat
      ? 'No cell is hatched: training ran without the causal mask, so every query saw every key.'
      : 'Hatched cells: keys after the query, which the causal rule hides from it.';
  },

  /** New settings or Reset: a fresh trainer, nothing trained yet. */
  update(ctx, st, detail) {
    // Another view of the maps: the same model drawn again; training goes on.
    if (detail?.maps && this.trainer) {
      this.showView(st);
      this.untrained = JSON.stringify([st.task, st.seed, st.cheat, st.maps]);
      this.draw(ctx);
      if (isEdit(detail)) this.settingsSaid.say(this.viewSaid);
      return;
    }
    this.stop();
    const trainer = ctx.core(this.status, () => ctx.lab.createTrainer({
      task: st.task, lr: st.lr, seed: st.seed, bug: st.cheat ? 'no-causal-mask' : null,
    }));
    if (!trainer) return;
    // Said with the accuracy as the readout shows it.
    const said = () => {
      if (!isEdit(detail)) return;
      const accuracy = ctx.slot(this.id, 'readout').querySelector('[data-out="learn-accuracy"]').textContent;
      this.settingsSaid.say(`A new model, not trained yet: held-out accuracy ${accuracy}. Press Start to train it.`);
    };
    this.trainer?.free();
    this.trainer = trainer;
    this.showFinished(false);
    this.task = st.task;
    // The untrained model, its held-out check and its maps do not depend on
    // the learning rate, which only scales the optimiser's steps: when the
    // page already shows this model untrained (a new rate before any step),
    // nothing it shows changes and nothing is evaluated or drawn again.
    const untrained = JSON.stringify([st.task, st.seed, st.cheat, st.maps]);
    if (this.shown && this.shown.untrained === untrained && ctx.slot(this.id, 'maps').contains(this.mapCanvases?.[0] ?? null)) {
      this.losses = [];
      this.ablated = new Set();
      this.loss = NaN;
      said();
      return;
    }
    this.untrained = untrained;
    this.showView(st);
    this.losses = [];
    this.accuracies = [];
    this.ablated = new Set();
    this.loss = NaN;
    this.evaluate(1);
    // The maps' figures depend on the model's layers and heads only: a new
    // learning rate or seed redraws into the same canvases.
    const { layers, heads } = trainer.config;
    const mapsKey = `${layers}x${heads}`;
    if (this.mapsKey !== mapsKey || !ctx.slot(this.id, 'maps').contains(this.mapCanvases?.[0] ?? null)) this.buildMaps(ctx);
    else for (const b of this.ablateButtons) { b.setAttribute('aria-pressed', 'false'); b.disabled = true; }
    this.mapsKey = mapsKey;
    this.draw(ctx);
    said();
  },

  start(ctx) {
    if (!this.trainer || this.trainer.config === undefined) return;
    if (this.step() >= STEP_LIMIT[this.task]) return;
    this.restoreHeads();
    this.running = true;
    this.startButton.textContent = 'Pause';
    // The line a screen reader last heard said "Paused" or "A new model": it now says what runs.
    this.said.textContent = `Training from step ${this.step()}.`;
    this.setAblateEnabled(false);
    let lastMaps = 0;
    const frame = (now) => {
      if (!this.running) return;
      const t0 = performance.now();
      const limit = STEP_LIMIT[this.task];
      do {
        const { step, loss } = this.trainer.step();
        this.loss = loss;
        this.losses.push({ step, loss });
        if (step % EVAL_EVERY === 0) this.evaluate(1);
      } while (performance.now() - t0 < FRAME_BUDGET_MS && this.step() < limit);
      const done = this.step() >= limit;
      const mapsDue = now - lastMaps >= (reducedMotion() ? 4 * MAPS_EVERY_MS : MAPS_EVERY_MS);
      if (done) this.pause(ctx);
      else {
        this.draw(ctx, { maps: mapsDue });
        if (mapsDue) lastMaps = now;
        this.raf = requestAnimationFrame(frame);
      }
    };
    this.raf = requestAnimationFrame(frame);
  },

  pause(ctx) {
    this.stop();
    const finished = this.step() >= STEP_LIMIT[this.task];
    this.startButton.textContent = finished ? 'Finished' : 'Start';
    this.showFinished(finished);
    this.evaluate(4);
    this.setAblateEnabled(true);
    this.draw(ctx);
    this.said.textContent = `${finished ? 'Finished' : 'Paused'} at step ${this.step()}: held-out accuracy ${percent(this.accuracy)}`;
  },

  /**
   * Start and One step, unavailable once training has finished: marked so
   * (aria-disabled), not disabled, so that a focused one keeps the focus. The
   * focus never moves on by itself: a Space meant to pause, pressed just as
   * training ends, would press whatever took it (Reset, erasing the model).
   */
  showFinished(finished) {
    this.startButton.setAttribute('aria-disabled', String(finished));
    this.stepButton.setAttribute('aria-disabled', String(finished));
  },

  stop() {
    this.running = false;
    if (this.raf) cancelAnimationFrame(this.raf);
    this.raf = 0;
    if (this.startButton) this.startButton.textContent = 'Start';
  },

  stepOnce(ctx) {
    if (this.running || !this.trainer || this.step() >= STEP_LIMIT[this.task]) return;
    this.restoreHeads();
    const { step, loss } = this.trainer.step();
    this.loss = loss;
    this.losses.push({ step, loss });
    // The last step finishes training, as it does when training runs.
    if (step >= STEP_LIMIT[this.task]) {
      this.pause(ctx);
      return;
    }
    this.evaluate(1);
    this.draw(ctx);
  },

  step() {
    return this.losses.length ? this.losses[this.losses.length - 1].step : 0;
  },

  evaluate(batches) {
    const { loss, accuracy } = this.trainer.evaluate({ batches });
    this.evalLoss = loss;
    this.accuracy = accuracy;
    if (this.ablated.size === 0) {
      const step = this.step();
      const last = this.accuracies[this.accuracies.length - 1];
      if (last && last.step === step) last.accuracy = accuracy;
      else this.accuracies.push({ step, accuracy });
    }
  },

  restoreHeads() {
    for (const key of this.ablated) {
      const [l, hd] = key.split('.').map(Number);
      this.trainer.ablate(l, hd, false);
    }
    this.ablated.clear();
    for (const b of this.ablateButtons || []) b.setAttribute('aria-pressed', 'false');
  },

  setAblateEnabled(on) {
    for (const b of this.ablateButtons || []) b.disabled = !on;
  },

  /** One figure per head: its canvas, a description and a switch-off button. */
  buildMaps(ctx) {
    const { layers: L, heads: H } = this.trainer.config;
    this.mapCanvases = [];
    this.mapNotes = [];
    this.ablateButtons = [];
    const figures = [];
    for (let l = 0; l < L; l++) {
      for (let hd = 0; hd < H; hd++) {
        // The map is named short and described by the note under it, which says what it shows.
        const note = h('p', { class: 'hint', id: uid('learn-note') });
        const canvas = h('canvas', { role: 'img', 'data-canvas': `learn-map-${l + 1}-${hd + 1}`, 'aria-describedby': note.id });
        const off = h('button', { type: 'button', class: 'action', 'aria-pressed': 'false', 'data-action': `learn-ablate-${l + 1}-${hd + 1}`,
          text: `Switch off layer ${l + 1}, head ${hd + 1}` });
        off.disabled = true;
        off.addEventListener('click', () => {
          if (this.running) return;
          const key = `${l}.${hd}`;
          const on = !this.ablated.has(key);
          this.trainer.ablate(l, hd, on);
          if (on) this.ablated.add(key); else this.ablated.delete(key);
          off.setAttribute('aria-pressed', String(on));
          this.evaluate(4);
          this.draw(ctx);
          // The accuracy is with every head now off: how many, when that is not just this one.
          const count = this.ablated.size;
          const rest = count > (on ? 1 : 0) ? ` with ${count} head${count > 1 ? 's' : ''} switched off` : '';
          this.said.textContent = `Layer ${l + 1} head ${hd + 1} switched ${on ? 'off' : 'back on'}: held-out accuracy ${percent(this.accuracy)}${rest}`;
        });
        const { colour, ink } = headColour(l * H + hd, L * H);
        // The swatch's digit repeats the caption's: it is not read.
        const swatch = h('span', { class: `head-swatch ${ink}`, text: String(hd + 1), 'aria-hidden': 'true' });
        swatch.style.backgroundColor = colour;
        figures.push(h('figure', { class: 'head-map', 'data-head': `${l + 1}.${hd + 1}` },
          h('figcaption', {}, swatch, ` Layer ${l + 1}, head ${hd + 1}`), canvas, note, off));
        this.mapCanvases.push(canvas);
        this.mapNotes.push(note);
        this.ablateButtons.push(off);
      }
    }
    ctx.slot(this.id, 'maps').replaceChildren(...figures);
  },

  draw(ctx, { maps = true } = {}) {
    if (!this.trainer) return;
    const { vocab, layers: L, heads: H } = this.trainer.config;
    const step = this.step();
    // What the page shows: the untrained model of these settings, or a later state.
    this.shown = step === 0 && this.ablated.size === 0 && maps ? { untrained: this.untrained } : null;
    const off = this.ablated.size ? ` with ${this.ablated.size} head${this.ablated.size > 1 ? 's' : ''} switched off` : '';
    ctx.slot(this.id, 'readout').replaceChildren(
      'Step ', h('strong', { 'data-out': 'learn-step', text: String(step) }),
      ' of ', String(STEP_LIMIT[this.task]), '. Training loss ',
      h('strong', { 'data-out': 'learn-loss', text: Number.isFinite(this.loss) ? lossText(this.loss) : 'not measured yet' }),
      `. Held-out accuracy${off} `, h('strong', { 'data-out': 'learn-accuracy', text: percent(this.accuracy) }),
      ` (chance is about ${percent(1 / vocab)}).`);
    drawCurve(this.curve, this.losses, this.accuracies, STEP_LIMIT[this.task], this.curveWidth);
    this.curve.setAttribute('aria-label', `Training loss ${Number.isFinite(this.loss) ? lossText(this.loss) : 'not measured yet'} at step ${step}; held-out accuracy ${percent(this.accuracy)}`);
    if (!maps) return;
    // The weights, and which keys each query could see, of one run in the core:
    // as the held-out test runs the model, or under the cheat as training did.
    const { tokens, layers, allowed } = this.trainer.attention(null, { as: this.mapsAs });
    const view = !this.cheat ? '' : this.mapsAs === 'training' ? ', as training saw it (no causal mask),' : ', as the held-out test runs it (causal),';
    for (let l = 0; l < L; l++) {
      for (let hd = 0; hd < H; hd++) {
        const k = l * H + hd;
        const weights = layers[l][hd].data;
        drawMap(this.mapCanvases[k], weights, tokens, allowed.data);
        // A head switched off still computes its weights; only its output is dropped.
        const off = this.ablated.has(`${l}.${hd}`);
        const said = `${off ? 'Switched off: its output is dropped, and the map shows what it would read. ' : ''}${describeMap(weights, tokens.length, allowed.data, tokens)}`;
        this.mapCanvases[k].setAttribute('aria-label', `Layer ${l + 1}, head ${hd + 1}${view} on the sequence ${tokens.map(letter).join('')}`);
        this.mapNotes[k].textContent = `${said}.`;
        this.mapCanvases[k].closest('figure')?.classList.toggle('head-off', off);
      }
    }
  },
};

export default watchLearn;
