// Dropout on the attention weights: during training some weights are zeroed
// at random and the rest scaled up by 1/(1 − p), so each row's sum is no
// longer 1, though its expected sum still is. Every number shown comes from
// the core (lab.sdpa with { dropout, seed }).

import { h, numberGrid, numberField, statusLine, heatmap, fmt, fmtPlain, fmtVec, fmtSci, setText, setCheck, afterFrameIdle } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { dimLabel, keyLabel, queryLabel } from './common.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

const T = 4;
const D = 2;
// The expected row sum is estimated from DRAWS independent draws: one call
// of the core on DRAWS copies of the example, each copy dropping its own
// weights (the mask is drawn per entry of the batch). A row sum's variance is
// at most p/(1 − p), so at p = 0.95 the mean of DRAWS draws is within ±0.18
// of its expectation (4 standard errors): narrow enough to catch a wrong scale.
const DRAWS = 10000;
const DRAW_SEED = 0;
const ONES = Array.from({ length: T }, () => [1]); // v = ones: the output is each row's sum
/** p as the sentences write it: two decimals (0.30) when they hold it exactly, else as typed (0.125). */
const pText = (p) => (Number(fmt(p, 2)) === p ? fmt(p, 2) : fmtPlain(p));
/** What the mean row sums depend on: not the seed shown. */
const meanKey = (st) => JSON.stringify([st.q, st.k, st.p]);

export const dropout = {
  id: 'dropout',
  prefix: 'drop',
  title: 'Dropout and row sums',
  body: `
<p>In training, many models apply dropout to the attention weights: after the softmax, each weight is set to 0 with probability p, and every weight that survives is multiplied by 1/(1 − p). This is <em>inverted</em> dropout. A weight w survives with probability 1 − p and is then w/(1 − p), so on average it is still w; at inference time nothing is dropped and nothing is scaled.</p>
<p>So with dropout on, a row of weights no longer adds up to 1: it adds up to 1 <em>on average over the random draws</em>. That is why a check that rows sum to 1, like the one in the break-it lab, is run with dropout off: with dropout on it would fail on correct code.</p>
<div class="inputs" data-slot="inputs"></div>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<div class="result" data-slot="weights"></div>
<div class="result" data-slot="check"></div>
`,
  fields: [
    ['q', codec.matrix(() => T, () => D), () => [[1, 0], [0, 1], [1, 1], [2, -1]]],
    ['k', codec.matrix(() => T, () => D), () => [[1, 0], [0, 1], [1, 1], [-1, 2]]],
    ['p', codec.num(0, 0.95), () => 0.3],
    ['seed', codec.int(0, 2 ** 31 - 1), () => 1],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Queries', name: 'drop-q', matrix: st.q, rowLabel: queryLabel, colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'Keys', name: 'drop-k', matrix: st.k, rowLabel: keyLabel, colLabel: dimLabel, onChange: commit }),
    );
    this.seedField = numberField({
      label: 'Seed', name: 'drop-seed', value: st.seed, integer: true, min: 0, max: 2 ** 31 - 1, size: 'sm',
      onValue: (value) => { st.seed = value; commit(); },
    });
    const resample = h('button', { type: 'button', 'data-field': 'drop-resample', text: 'Resample: new seed' });
    resample.addEventListener('click', () => {
      st.seed = (st.seed + 1) % 2 ** 31;
      this.seedField.setValue(st.seed);
      commit();
    });
    ctx.slot(this.id, 'controls').replaceChildren(
      numberField({ label: 'Dropout p (0 to 0.95)', name: 'drop-p', value: st.p, min: 0, max: 0.95, size: 'sm',
        onValue: (value) => { st.p = value; commit(); } }),
      this.seedField,
      h('div', { class: 'field stepper' }, resample),
    );
    this.said = announcer(ctx.node(this.id), 'dropout');
    this.status = statusLine(this.said);
    // An edit's result (the weights this draw dropped, and the verdict on
    // the mean row sums) is said once the edits pause and the mean is in.
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
  },

  /**
   * The expected row sum: the mean of the row sums the core gives over DRAWS
   * draws. It does not depend on the seed shown, so a new seed reuses it.
   */
  meanRowSums(ctx, st) {
    const key = meanKey(st);
    if (this.mean?.key !== key) {
      const copies = (m) => {
        const one = m.flat();
        const data = new Float32Array(DRAWS * one.length);
        for (let b = 0; b < DRAWS; b++) data.set(one, b * one.length);
        return { data, shape: [DRAWS, m.length, m[0].length] };
      };
      const sums = ctx.lab.sdpa(copies(st.q), copies(st.k), copies(ONES), { dropout: st.p, seed: DRAW_SEED, needWeights: false }).output.data;
      const mean = new Float64Array(T);
      for (let b = 0; b < DRAWS; b++) for (let i = 0; i < T; i++) mean[i] += sums[b * T + i] / DRAWS;
      this.mean = { key, mean };
    }
    return this.mean.mean;
  },

  update(ctx, st, detail) {
    this.meanRun = null; // a mean still waiting is for the old inputs
    const edited = isEdit(detail);
    const res = ctx.core(this.status, () => ({
      run: ctx.lab.sdpa(st.q, st.k, ONES, { dropout: st.p, seed: st.seed }),
      off: ctx.lab.sdpa(st.q, st.k, ONES),
    }), [ctx.slot(this.id, 'weights'), ctx.slot(this.id, 'check')]);
    if (!res) return;
    const { run, off } = res;
    ctx.publish(`${this.prefix}.main`, run);
    const w = run.weights.data;
    let top = 1;
    for (const x of w) top = Math.max(top, x);
    heatmap(ctx.slot(this.id, 'weights'), {
      values: w, rows: T, cols: T, rowLabel: queryLabel, colLabel: keyLabel, name: 'drop-weights', digits: 3,
      caption: `Weights after dropout, p = ${pText(st.p)}, seed ${st.seed}; a dropped weight shows as 0; last column: the row's sum`,
      domain: [0, top], extra: { label: 'row sum', values: run.output.data },
    });
    const parts = this.checkParts(ctx);
    setText(parts.count, String(run.dropoutMask.data.reduce((n, kept) => n + (kept ? 0 : 1), 0)));
    setText(parts.on, fmtSci(run.stats.maxRowSumError));
    setText(parts.off, fmtSci(off.stats.maxRowSumError));
    // The mean over DRAWS draws is a large call of the core: for new inputs
    // it is computed once the edit's frame is painted; until then its
    // sentences keep the last mean, marked busy. An edit's sentence waits
    // for the mean too.
    if (this.mean?.key === meanKey(st)) {
      this.drawMean(st, this.mean.mean, edited);
      return;
    }
    for (const node of [parts.meanLine, parts.verdict]) node.setAttribute('aria-busy', 'true');
    const waiting = {};
    this.meanRun = waiting;
    afterFrameIdle(() => {
      if (this.meanRun !== waiting) return; // a newer edit took over
      const mean = ctx.core(this.status, () => this.meanRowSums(ctx, st), [ctx.slot(this.id, 'check')]);
      if (mean) this.drawMean(st, mean, edited);
    });
  },

  /** The sentences under the map, built once; an edit sets their numbers in place. */
  checkParts(ctx) {
    const host = ctx.slot(this.id, 'check');
    if (!this.check || !host.contains(this.check.verdict)) {
      const out = (name) => h('strong', { 'data-out': name });
      const parts = {
        count: out('drop-count'), on: out('drop-error-on'), off: out('drop-error-off'), mean: out('drop-mean'),
        meanError: out('drop-mean-error'), band: out('drop-band'), tail: document.createTextNode(''), end: document.createTextNode(''),
        // Until the first mean is in (it runs after the frame), the verdict says so.
        lead: document.createTextNode(`Averaging ${DRAWS} draws…`),
      };
      parts.mean.textContent = '…';
      parts.meanLine = h('p', { class: 'readout' }, `Mean row sums over ${DRAWS} draws: `, parts.mean);
      parts.verdict = h('p', { 'data-check': 'drop-expected' }, parts.lead, parts.meanError, parts.tail, parts.band, parts.end);
      host.replaceChildren(
        h('p', { class: 'readout' }, 'This draw dropped ', parts.count, ` of ${T * T} weights. Largest |row sum − 1| with dropout: `, parts.on,
          '; with dropout off: ', parts.off, '.'),
        parts.meanLine, parts.verdict);
      this.check = parts;
    }
    return this.check;
  },

  /** The mean row sums over DRAWS draws and the check that they are about 1; after an edit, the sentence that says them. */
  drawMean(st, mean, edited) {
    const { mean: meanNode, meanError: meanErrorNode, band, lead, tail, end, verdict, meanLine } = this.check;
    let meanError = 0;
    for (let i = 0; i < T; i++) meanError = Math.max(meanError, Math.abs(mean[i] - 1));
    // A row sum's variance is sum_j w_j² p/(1 − p) <= p/(1 − p), so the mean of DRAWS
    // draws strays from 1 by a standard error of at most √(p/(1 − p)/DRAWS): allow 4 of them.
    const allowed = 4 * Math.sqrt(st.p / (1 - st.p) / DRAWS) + 1e-6;
    const ok = meanError <= allowed;
    setText(meanNode, fmtVec(mean, 3));
    setCheck(verdict, ok);
    setText(lead, ok ? '✓ On average the rows still sum to 1: the mean row sums are off by at most ' : '✗ The mean row sum is far from 1: off by ');
    setText(meanErrorNode, fmtSci(meanError));
    setText(tail, `, and with p = ${pText(st.p)} the mean of ${DRAWS} draws is expected within ±`);
    setText(band, fmtSci(allowed));
    if (!end.data) end.data = ' of 1 (4 standard errors).';
    for (const node of [meanLine, verdict]) node.removeAttribute('aria-busy');
    if (!edited) return;
    const dropped = `p = ${pText(st.p)}: this draw dropped ${this.check.count.textContent} of ${T * T} weights; `;
    this.said.say(ok ? `${dropped}on average over ${DRAWS} draws the rows still sum to 1, off by at most ${meanErrorNode.textContent}.`
      : `${dropped}the mean row sums over ${DRAWS} draws are far from 1, off by ${meanErrorNode.textContent}.`);
  },
};

export default dropout;
