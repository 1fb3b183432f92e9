// How the gradient flows back through attention: a loss against an editable
// target, the core's backward pass (dProbs, dScores, dV, dQ), one step of
// gradient descent on q, and a finite-difference check of one entry.
// Every number shown comes from the wasm core: the forward (lab.sdpa), the
// loss and its gradient (lab.squaredError), the backward (lab.sdpaBackward),
// the descent step (lab.descend) and the finite-difference slope
// (lab.sdpaLossSlope).

import {
  h, numberGrid, numberField, checkbox, heatmap, valueTable, legend, statusLine, fmt, fmtSci, fmtPlain, figures, blockedFrom, redraw, redrawNode, keptChildren, VALUE_LIMIT,
} from '../lesson-ui.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';
import { codec } from '../lesson-state.js';
import { keyLabel, queryLabel, dimLabel } from './common.js';
import { slot, group } from './markup.js';

const T = 4;
const D = 2;
// Keys and values stay fixed; the learner edits the queries (or steps them) and the target.
const K = { data: Float32Array.from([1, 0, 0, 1, 1, 1, -1, 0.5]), shape: [T, D] };
const V = { data: Float32Array.from([1, 0, 0, 1, 1, 1, 2, -1]), shape: [T, D] };
const GRAD_DEFAULTS = {
  q: [[1, 0], [0, 1], [1, 1], [0.5, -1]],
  target: [[0, 1], [1, 0], [0.5, 0.5], [1, 1]],
};
const copy = (m) => m.map((row) => row.slice());
const tensor = (m) => ({ data: Float32Array.from(m.flat()), shape: [m.length, m[0].length] });
const valueLabel = (j) => `value ${j + 1}`;

/** A symmetric colour domain [−m, m] for signed values, m rounded up to two significant digits. */
function signedDomain(values) {
  let m = 0;
  for (const x of values) m = Math.max(m, Math.abs(x));
  if (m === 0) return [-1, 1];
  const step = 10 ** (Math.floor(Math.log10(m)) - 1);
  const top = Math.ceil(m / step) * step;
  return [-Number(top.toPrecision(2)), Number(top.toPrecision(2))];
}

export const gradients = {
  id: 'gradients',
  prefix: 'grad',
  title: 'How the gradient flows',
  body: `
<p>Training needs the other direction: how much should each number change to make the output closer to what we want? Here the output is compared with a <em>target</em> you can edit, and the loss is L = ½‖output − target‖². Its gradient with respect to the output is simply output − target. The backward pass carries that gradient back through the four steps of attention, in reverse order:</p>
<ol class="passes">
  <li><strong>Mix.</strong> output = weights · V, so each value row receives dV = weightsᵀ · dOutput, and each weight the mask lets through receives dProbs = dOutput · Vᵀ.</li>
  <li><strong>Softmax.</strong> dScores = weights ⊙ (dProbs − the row’s sum of dProbs ⊙ weights). Raising one score takes weight from the others in the row, and the row sum accounts for that.</li>
  <li><strong>Mask.</strong> A blocked score was replaced by −∞, a constant, so its weight is the constant 0: no change of Q, K or V can move it, and nothing flows back through it. The core gives it dProbs and dScores of exactly 0 (dOutput · Vᵀ at that place need not be 0: it tells how the loss would change if that weight could move, and it cannot). A key that no query may see gets no gradient at all.</li>
  <li><strong>Scores.</strong> scores = Q Kᵀ / √d<sub>k</sub>, so dQ = dScores · K / √d<sub>k</sub> and dK = dScoresᵀ · Q / √d<sub>k</sub>.</li>
</ol>
<p class="aside">In a real model attention has no target of its own. The gradient that reaches its output comes from the loss on the model’s final prediction, and training changes the projection weights W<sub>q</sub>, W<sub>k</sub>, W<sub>v</sub> that make Q, K and V (and the output projection after them), not the queries themselves. The softmax and the mask have no parameters and learn nothing: on its way to those projection weights the gradient passes through the softmax (step 2) and is stopped by the mask at blocked entries (step 3). The editable target here stands in for that incoming gradient, so the steps of the backward pass can be followed one at a time.</p>
<p>The keys and values below are fixed; the queries and the target are yours. Four tokens, width 2.</p>
<div class="inputs" data-slot="inputs"></div>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<p class="readout" data-slot="loss"></p>
<div class="result two-col" data-slot="maps"></div>
<div class="result two-col" data-slot="grads"></div>
<h3>Take one step downhill</h3>
<p>Gradient descent moves every query entry a little against its gradient: q ← q − step size × dQ. (A model would move W<sub>q</sub> instead, by dW<sub>q</sub> = Xᵀ · dQ; stepping the queries directly shows the same pull on a smaller stage.) Watch the weights shift and the loss fall. With the causal rule on, as it starts, query 1 sees key 1 only: its output is value 1 whatever its query, so its part of the loss cannot shrink and its row of dQ is 0. The loss levels off above that part. A step that is too large can also overshoot and make the loss grow: untick Causal and try a step size of 50.</p>
<div class="controls" data-slot="step-controls"></div>
<p class="readout" data-slot="step"></p>
<h3>Check one entry by nudging it</h3>
<p>The gradient promises a slope. Nudge one query entry by +ε and by −ε, run the forward pass both times, and divide the change in loss by 2ε. For a moderate ε, such as the starting 0.001, the two numbers agree to several digits; a much smaller or larger ε agrees less well, for the reasons the line below gives.</p>
<div class="controls" data-slot="fd-controls"></div>
<p class="readout" data-slot="fd"></p>
`,
  dependsOn: [],
  presets: {
    gradients: {
      title: 'How the gradient flows', result: 'grad.main',
      blocks: [
        slot('inputs', 'inputs', { cls: 'inputs' }), slot('controls', 'inputs', { cls: 'controls' }), slot('status'),
        slot('loss', 'output'), slot('maps', 'weights', { cls: 'result two-col' }), slot('grads', 'output', { cls: 'result two-col' }),
        group('', slot('step-controls', 'inputs', { cls: 'controls' }), slot('step', 'output')),
        group('', slot('fd-controls', 'checks', { cls: 'controls' }), slot('fd', 'checks')),
      ],
    },
  },
  fields: [
    ['q', codec.matrix(() => T, () => D), () => copy(GRAD_DEFAULTS.q)],
    ['target', codec.matrix(() => T, () => D), () => copy(GRAD_DEFAULTS.target)],
    ['causal', codec.bool(), () => true],
    ['lr', codec.num(0.001, 100), () => 0.5],
    ['row', codec.int(1, T), () => 2],
    ['col', codec.int(1, D), () => 1],
    ['eps', codec.num(1e-6, 1), () => 0.001],
  ],

  mount(ctx, st) {
    const commit = (detail = EDITED) => ctx.commit(this.prefix, detail);
    this.said = announcer(ctx.node(this.id), 'gradients');
    this.status = statusLine(this.said);
    // An edit's result (the loss, or the check of dQ) is said once the edits
    // pause; a step, and a new step size, as the step line's new text. The
    // step line itself is not live: an edit after a step rewrites it, and
    // the edit's loss is all that is said then.
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
    this.lastStep = null;
    this.drawInputs(ctx, st);
    ctx.slot(this.id, 'controls').replaceChildren(checkbox({
      label: 'Causal: query i may see keys 1…i only', checked: st.causal, name: 'grad-causal',
      onToggle: (on) => { st.causal = on; this.lastStep = null; commit(); },
    }));
    const stepButton = h('button', { type: 'button', class: 'action', 'data-action': 'grad-step', text: 'Take one step' });
    stepButton.addEventListener('click', () => this.step(ctx, st));
    ctx.slot(this.id, 'step-controls').replaceChildren(
      numberField({ label: 'Step size', name: 'grad-lr', value: st.lr, min: 0.001, max: 100, size: 'sm',
        onValue: (v) => { st.lr = v; commit({ edited: 'step' }); } }),
      stepButton);
    ctx.slot(this.id, 'fd-controls').replaceChildren(
      numberField({ label: 'Query', name: 'grad-row', value: st.row, integer: true, min: 1, max: T, size: 'sm',
        onValue: (v) => { st.row = v; commit({ edited: 'check' }); } }),
      numberField({ label: 'Entry', name: 'grad-col', value: st.col, integer: true, min: 1, max: D, size: 'sm',
        onValue: (v) => { st.col = v; commit({ edited: 'check' }); } }),
      numberField({ label: 'Nudge ε', name: 'grad-eps', value: st.eps, min: 1e-6, max: 1, size: 'sm',
        onValue: (v) => { st.eps = v; commit({ edited: 'check' }); } }));
  },

  /** The query and target grids (redrawn after a step changes q). */
  drawInputs(ctx, st) {
    const edited = () => { this.lastStep = null; ctx.commit(this.prefix, EDITED); };
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Queries Q (4 × 2)', name: 'grad-q', matrix: st.q, rowLabel: queryLabel, colLabel: dimLabel, onChange: edited }),
      numberGrid({ label: 'Target output (4 × 2)', name: 'grad-target', matrix: st.target, rowLabel: queryLabel, colLabel: dimLabel, onChange: edited }),
      h('p', { class: 'readout' }, 'Fixed keys K = [[1, 0], [0, 1], [1, 1], [−1, 0.5]] and values V = [[1, 0], [0, 1], [1, 1], [2, −1]].'));
  },

  /** Forward and backward for queries q: { forward, loss, grads } from the core, or null when refused. */
  run(ctx, st, q) {
    return ctx.core(this.status, () => {
      const options = { causal: st.causal };
      const forward = ctx.lab.sdpa(tensor(q), K, V, options);
      const { loss, dOutput } = ctx.lab.squaredError(forward.output, tensor(st.target));
      const grads = ctx.lab.sdpaBackward(tensor(q), K, V, dOutput, options);
      return { forward, loss, grads };
    }, [ctx.slot(this.id, 'maps'), ctx.slot(this.id, 'grads')]);
  },

  /** One step of gradient descent on q, with the loss before and after. */
  step(ctx, st) {
    const now = this.run(ctx, st, st.q);
    if (!now) return;
    const moved = ctx.core(this.status, () => ctx.lab.descend(tensor(st.q), now.grads.dq, st.lr));
    if (!moved) return;
    // Shown to 3 decimals so that the grid holds the whole number; the loss after is that of the q shown.
    const next = st.q.map((row, i) => row.map((x, j) => Number(moved.data[i * D + j].toFixed(3))));
    // A step may not take q where its cells (and a link) cannot hold it.
    const out = next.flat().findIndex((x) => Math.abs(x) > VALUE_LIMIT);
    if (out >= 0) {
      const i = Math.floor(out / D), j = out % D;
      this.status.show(`This step would take ${queryLabel(i)}, ${dimLabel(j)} to ${fmtPlain(next[i][j])}, past what a cell holds `
        + `(${fmtPlain(-VALUE_LIMIT)} to ${fmtPlain(VALUE_LIMIT)}): lower the step size. Q is as it was.`);
      return;
    }
    const after = this.run(ctx, st, next);
    if (!after) return;
    st.q.forEach((row, i) => row.splice(0, D, ...next[i]));
    this.lastStep = { before: now.loss, after: after.loss };
    this.drawInputs(ctx, st);
    ctx.commit(this.prefix, { edited: 'step' });
  },

  update(ctx, st, detail) {
    const now = this.run(ctx, st, st.q);
    if (!now) return;
    const { forward, loss, grads } = now;
    ctx.publish(`${this.prefix}.main`, { ...forward, ...grads });
    // Which pairs are blocked is the core's answer too (the rule lives in C).
    const blocked = st.causal ? blockedFrom(ctx.lab.allowedPairs([T, T], { causal: true })) : null;

    redraw(ctx.slot(this.id, 'loss'), 'Loss ½‖output − target‖² = ',
      h('strong', { 'data-out': 'grad-loss', text: fmt(loss, 4) }), '.');

    // The maps are updated in place from one redraw to the next; the two gradient maps share one legend.
    const maps = ctx.slot(this.id, 'maps');
    const [weightsHost, dProbsHost, dScoresHost] = figures(maps, [
      { key: 'weights', caption: 'Weights (rows: queries, columns: keys)' },
      { key: 'dprobs', caption: 'dProbs: gradient of each weight' },
      { key: 'dscores', caption: 'dScores: gradient of each scaled score' },
    ]);
    const signed = signedDomain([...grads.dProbs.data, ...grads.dScores.data]);
    heatmap(weightsHost, {
      name: 'grad-weights', values: forward.weights.data, rows: T, cols: T, blocked, digits: 3,
      rowLabel: queryLabel, colLabel: keyLabel, caption: 'Attention weights' });
    heatmap(dProbsHost, {
      name: 'grad-dprobs', values: grads.dProbs.data, rows: T, cols: T, blocked, digits: 3, domain: signed, legend: false,
      rowLabel: queryLabel, colLabel: keyLabel, caption: 'Gradient of the loss for each attention weight (dProbs)' });
    heatmap(dScoresHost, {
      name: 'grad-dscores', values: grads.dScores.data, rows: T, cols: T, blocked, digits: 3, domain: signed, legend: false,
      rowLabel: queryLabel, colLabel: keyLabel, caption: 'Gradient of the loss for each scaled score (dScores)' });
    const shared = legend({ lo: signed[0], hi: signed[1], what: 'gradient (dProbs, dScores)' });
    const oldLegend = maps.querySelector(':scope > .ramp-legend');
    if (oldLegend) redrawNode(oldLegend, shared);
    else maps.append(shared);

    const tables = keptChildren(ctx.slot(this.id, 'grads'), 3, () => [h('div'), h('div'), h('div')]);
    [['Output (rows: queries)', forward.output.data, 'grad-output', queryLabel],
      ['dV: gradient of each value row', grads.dv.data, 'grad-dv', valueLabel],
      ['dQ: gradient of each query row', grads.dq.data, 'grad-dq', queryLabel],
    ].forEach(([caption, values, name, rowLabel], k) => valueTable(tables[k], {
      values, rows: T, cols: D, rowLabel, colLabel: dimLabel, caption, digits: 4, name }));

    const stepText = this.lastStep
      ? ['Last step: the loss went from ', h('strong', { 'data-out': 'grad-before', text: fmt(this.lastStep.before, 4) }), ' to ',
        h('strong', { 'data-out': 'grad-after', text: fmt(this.lastStep.after, 4) }), '.']
      : ['Press “Take one step” to move q by −', String(st.lr), ' × dQ.'];
    redraw(ctx.slot(this.id, 'step'), ...stepText);

    const check = this.drawCheck(ctx, st, grads.dq.data);
    if (!isEdit(detail)) return;
    this.said.say(detail.edited === 'check' ? check
      : detail.edited === 'step' ? ctx.slot(this.id, 'step').textContent
        : `Loss ${fmt(loss, 4)}.`);
  },

  /** The finite-difference check of dQ at (row, col); returns its numbers in a sentence. */
  drawCheck(ctx, st, dq) {
    const i = st.row - 1, j = st.col - 1;
    const where = `query ${st.row}, entry ${st.col}`;
    // The core refuses a nudge that float32 loses (q ± ε rounds back to q) or a loss it cannot hold.
    const explain = (err) => (err.code === 'BAD_ARGUMENT' && /lost in float32/.test(err.message)
      ? `ε = ${fmtPlain(st.eps)} is lost in float32 at ${where}, which holds ${fmtPlain(st.q[i][j])}: q ± ε rounds back to q, so there is no slope to measure. Use a larger ε.`
      : err.code === 'OVERFLOW' ? `The loss at q ± ε, ${where}, overflows float32 (the output and the target are too far apart), so there is no slope to measure.`
        : null);
    const slope = ctx.core(this.status, () => ctx.lab.sdpaLossSlope(tensor(st.q), K, V, tensor(st.target),
      { at: i * D + j, eps: st.eps, causal: st.causal }), [], { explain, keepNote: false });
    const analytic = dq[i * D + j];
    if (slope === null) {
      redraw(ctx.slot(this.id, 'fd'), `Query ${st.row}, entry ${st.col}: the backward pass gives `,
        h('strong', { 'data-out': 'grad-analytic', text: fmtSci(analytic, 4) }), `; the nudge by ±${fmtPlain(st.eps)} gives no slope here (the message above says why).`);
      return `Query ${st.row}, entry ${st.col}: the backward pass gives ${fmtSci(analytic, 4)}; the nudge gives no slope.`;
    }
    redraw(ctx.slot(this.id, 'fd'),
      `Query ${st.row}, entry ${st.col}: the backward pass gives `, h('strong', { 'data-out': 'grad-analytic', text: fmtSci(analytic, 4) }),
      `; nudging by ±${fmtPlain(st.eps)} gives a slope of `, h('strong', { 'data-out': 'grad-slope', text: fmtSci(slope, 4) }),
      '. Difference: ', h('span', { 'data-out': 'grad-fd-diff', text: fmtSci(Math.abs(analytic - slope), 2) }),
      '. The float32 forward pass limits the agreement: a very small ε loses digits to rounding, a large one to curvature.');
    return `Query ${st.row}, entry ${st.col}: the backward pass gives ${fmtSci(analytic, 4)}, the nudge a slope of ${fmtSci(slope, 4)}.`;
  },
};

export default gradients;
