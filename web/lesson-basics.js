// Sections 1–3 of the lesson: one query against two keys, the 3×3 example,
// and why the scores are divided by √d_k. Every number shown is returned by
// the wasm core (lab.sdpa, lab.sampleDotProducts, lab.softmaxPeak).

import {
  h, numberGrid, numberField, checkbox, heatmap, valueTable, statusLine,
  fmt, fmtVec, fmtPlain, binCounts, histogramSvg, lineChartSvg, srOnly,
} from './lesson-ui.js';
import { codec } from './lesson-state.js';

const sub = (name, i) => `${name}${'₀₁₂₃₄₅₆₇₈₉'[i] ?? i}`;
const keyLabel = (j) => `key ${j + 1}`;
const queryLabel = (i) => `query ${i + 1}`;
const dimLabel = (j) => `d${j + 1}`;

// ---------------------------------------------------------------------------
// 1. One query, two keys
// ---------------------------------------------------------------------------

export const oneQuery = {
  id: 'one-query',
  prefix: 'one',
  title: 'section 1',
  fields: [
    ['q', codec.matrix(() => 1, () => 2), () => [[1, 0]]],
    ['k', codec.matrix(() => 2, () => 2), () => [[1, 0], [0, 1]]],
    ['v', codec.matrix(() => 2, () => 2), () => [[10, 0], [0, 20]]],
    ['first', codec.bool(), () => false],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Query q', name: 'one-q', matrix: st.q, rowLabel: () => 'q', colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'Keys', name: 'one-k', matrix: st.k, rowLabel: (i) => sub('k', i + 1), colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'Values', name: 'one-v', matrix: st.v, rowLabel: (i) => sub('v', i + 1), colLabel: dimLabel, onChange: commit }),
    );
    ctx.slot(this.id, 'toggle').replaceChildren(checkbox({
      label: 'Only the first key is allowed (block key 2)', name: 'one-first', checked: st.first,
      onToggle: (on) => { st.first = on; commit(); },
    }));
    this.status = statusLine();
    this.out = {
      dots: h('span', { class: 'num-out', 'data-out': 'one-dots' }),
      scaled: h('span', { class: 'num-out', 'data-out': 'one-scaled' }),
      maskNote: h('span', { class: 'mask-note' }),
      weights: h('span', { class: 'num-out', 'data-out': 'one-weights' }),
      mix: h('span', { class: 'num-out', 'data-out': 'one-mix-terms' }),
      output: h('span', { class: 'num-out strong', 'data-out': 'one-output' }),
    };
    const o = this.out;
    ctx.slot(this.id, 'steps').replaceChildren(
      h('ol', { class: 'steps' },
        // data-panel: which of the widget's panels (its `show` attribute) a step belongs to.
        h('li', { 'data-panel': 'scores' }, h('strong', { text: 'Compare. ' }), 'Dot product of q with each key: ', o.dots),
        h('li', { 'data-panel': 'scores' }, h('strong', { text: 'Scale. ' }), 'Divide by √d', h('sub', { text: 'k' }),
          ' = √2 ≈ 1.414 (each key has two entries): ', o.scaled, ' ', o.maskNote),
        h('li', { 'data-panel': 'weights' }, h('strong', { text: 'Normalise. ' }), 'Softmax turns the scores into shares that add up to 1: ', o.weights),
        h('li', { 'data-panel': 'output' }, h('strong', { text: 'Mix. ' }), 'Weight each value by its share and add: ', o.mix, ' = ', o.output),
      ),
      this.status.node,
    );
  },

  update(ctx, st) {
    // The state's nested arrays go to the core as they are: the API reads their shape.
    const { q, k, v } = st;
    const mask = st.first ? { data: [1, 0], shape: [1, 2] } : undefined;
    const res = ctx.core(this.status, () => ({
      // scale 1 gives the raw dot products; the default scale gives the lesson's scores.
      raw: ctx.lab.sdpa(q, k, v, { scale: 1, mask }),
      main: ctx.lab.sdpa(q, k, v, { mask }),
    }));
    if (!res) return;
    const { raw, main } = res;
    ctx.publish(`${this.prefix}.main`, main);
    const o = this.out;
    o.dots.textContent = fmtVec(raw.scores.data, 3);
    o.scaled.textContent = fmtVec(main.scores.data, 3);
    o.maskNote.textContent = st.first ? '— key 2 is blocked, so its score is replaced by −∞ before the softmax.' : '';
    o.weights.textContent = fmtVec(main.weights.data, 3);
    const w = main.weights.data;
    o.mix.textContent = `${fmt(w[0], 3)} × [${st.v[0].map(fmtPlain).join(', ')}] + ${fmt(w[1], 3)} × [${st.v[1].map(fmtPlain).join(', ')}]`;
    o.output.textContent = fmtVec(main.output.data, 3);
  },
};

// ---------------------------------------------------------------------------
// 2. The 3×3 example (T = 3, d_k = 4, d_v = 2)
// ---------------------------------------------------------------------------

export const EX_DEFAULTS = {
  q: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
  k: [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]],
  v: [[10, 0], [0, 10], [5, 5]],
};
const copy = (m) => m.map((row) => row.slice());

export const threeByThree = {
  id: 'three-by-three',
  prefix: 'ex',
  title: 'section 2',
  fields: [
    ['q', codec.matrix(() => 3, () => 4), () => copy(EX_DEFAULTS.q)],
    ['k', codec.matrix(() => 3, () => 4), () => copy(EX_DEFAULTS.k)],
    ['v', codec.matrix(() => 3, () => 2), () => copy(EX_DEFAULTS.v)],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Q (3 queries × d_k = 4)', name: 'ex-q', matrix: st.q, rowLabel: queryLabel, colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'K (3 keys × d_k = 4)', name: 'ex-k', matrix: st.k, rowLabel: keyLabel, colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'V (3 values × d_v = 2)', name: 'ex-v', matrix: st.v, rowLabel: (i) => `value ${i + 1}`, colLabel: dimLabel, onChange: commit }),
    );
    this.status = statusLine();
    ctx.slot(this.id, 'status').replaceChildren(this.status.node);
  },

  update(ctx, st) {
    const { q, k, v } = st;
    const res = ctx.core(this.status, () => ({
      main: ctx.lab.sdpa(q, k, v),
      // Weights times a column of ones adds up each row: the row sums, from the core.
      sums: ctx.lab.sdpa(q, k, { data: [1, 1, 1], shape: [3, 1] }).output.data,
    }));
    if (!res) return;
    const { main, sums } = res;
    ctx.publish(`${this.prefix}.main`, main);
    heatmap(ctx.slot(this.id, 'weights'), {
      name: 'ex-weights', values: main.weights.data, rows: 3, cols: 3, digits: 4,
      rowLabel: queryLabel, colLabel: keyLabel, caption: 'Attention weights: one row per query, one column per key',
      extra: { label: 'row sum', values: sums },
    });
    valueTable(ctx.slot(this.id, 'scores'), {
      name: 'ex-scores', values: main.scores.data, rows: 3, cols: 3, digits: 4,
      rowLabel: queryLabel, colLabel: keyLabel, caption: 'Scaled scores QKᵀ / √d_k',
    });
    valueTable(ctx.slot(this.id, 'output'), {
      name: 'ex-output', values: main.output.data, rows: 3, cols: 2, digits: 4,
      rowLabel: (i) => `output ${i + 1}`, colLabel: dimLabel, caption: 'Output: weights × V',
    });
  },
};

// ---------------------------------------------------------------------------
// 3. Why divide by √d_k
// ---------------------------------------------------------------------------

const PEAK_DKS = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const SAMPLE_COUNT = 4096; // as in the second seed
const PEAK_COUNT = 256; // random queries averaged per point of the peakedness view

export const whyScale = {
  id: 'why-scale',
  prefix: 'scale',
  title: 'section 3',
  fields: [
    ['dk', codec.int(1, 256), () => 64],
    ['seed', codec.int(0, 99999), () => 0],
    ['keys', codec.int(2, 64), () => 16],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    const sliderId = 'scale-dk';
    const slider = h('input', { id: sliderId, type: 'range', min: 1, max: 256, step: 1, 'data-field': 'scale-dk' });
    slider.value = String(st.dk);
    const shown = h('output', { for: sliderId, class: 'num-out strong', text: String(st.dk) });
    slider.addEventListener('input', () => {
      st.dk = Number(slider.value);
      shown.textContent = slider.value;
      commit();
    });
    this.peakKey = null;
    ctx.slot(this.id, 'controls').replaceChildren(
      h('div', { class: 'field field-range' }, h('label', { for: sliderId, text: 'd_k, the width of each query and key' }), slider, shown),
      numberField({ label: 'Random seed', name: 'scale-seed', value: st.seed, integer: true, min: 0, max: 99999,
        onValue: (v) => { st.seed = v; commit(); } }),
      numberField({ label: 'Keys per softmax', name: 'scale-keys', value: st.keys, integer: true, min: 2, max: 64,
        onValue: (v) => { st.keys = v; commit(); } }),
    );
    this.status = statusLine();
    ctx.slot(this.id, 'status').replaceChildren(this.status.node);
  },

  update(ctx, st) {
    const sample = ctx.core(this.status, () => ctx.lab.sampleDotProducts({ dk: st.dk, count: SAMPLE_COUNT, seed: st.seed }));
    if (!sample) return;
    let R = 4;
    for (const x of sample.unscaled) R = Math.max(R, Math.abs(x));
    R = Math.ceil(R);
    const bins = 81;
    const title = (what, variance) => `Histogram of ${SAMPLE_COUNT} ${what} dot products for d_k = ${st.dk}; variance ${fmt(variance, 2)}`;
    ctx.slot(this.id, 'hist').replaceChildren(
      h('figure', { class: 'hist' },
        histogramSvg({ counts: binCounts(sample.unscaled, -R, R, bins), lo: -R, hi: R, cls: 'unscaled', title: title('unscaled', sample.varianceUnscaled) }),
        h('figcaption', {}, 'Unscaled q·k: variance ', h('strong', { 'data-out': 'var-unscaled', text: fmt(sample.varianceUnscaled, 2) }))),
      h('figure', { class: 'hist' },
        histogramSvg({ counts: binCounts(sample.scaled, -R, R, bins), lo: -R, hi: R, cls: 'scaled', title: title('scaled', sample.varianceScaled) }),
        h('figcaption', {}, 'Scaled q·k / √d_k: variance ', h('strong', { 'data-out': 'var-scaled', text: fmt(sample.varianceScaled, 2) }))),
    );

    // The peakedness curve depends only on the number of keys and the seed.
    const peakKey = `${st.keys}:${st.seed}`;
    if (this.peakKey !== peakKey) {
      const curve = ctx.core(this.status, () => PEAK_DKS.map((dk) => ctx.lab.softmaxPeak({ dk, keys: st.keys, count: PEAK_COUNT, seed: st.seed })));
      if (!curve) return;
      this.curve = curve;
      this.peakKey = peakKey;
    }
    // At a d_k on the curve the core's answer is already in it (same inputs).
    const marker = PEAK_DKS.indexOf(st.dk);
    const now = marker >= 0 ? this.curve[marker]
      : ctx.core(this.status, () => ctx.lab.softmaxPeak({ dk: st.dk, keys: st.keys, count: PEAK_COUNT, seed: st.seed }));
    if (!now) return;
    const table = h('table', {},
      h('caption', { text: `Mean largest softmax weight over ${st.keys} keys` }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'd_k' }), h('th', { scope: 'col', text: 'scaled' }), h('th', { scope: 'col', text: 'unscaled' }))),
      h('tbody', {}, this.curve.map((p, i) => h('tr', {},
        h('th', { scope: 'row', text: String(PEAK_DKS[i]) }), h('td', { text: fmt(p.meanMaxWeightScaled, 3) }), h('td', { text: fmt(p.meanMaxWeightUnscaled, 3) })))),
    );
    ctx.slot(this.id, 'peak').replaceChildren(
      h('figure', { class: 'peak' },
        lineChartSvg({
          xs: PEAK_DKS.map(String), yRange: [0, 1], marker: marker >= 0 ? marker : null,
          title: `Mean largest softmax weight over ${st.keys} keys as d_k grows, with and without scaling`,
          series: [
            { values: this.curve.map((p) => p.meanMaxWeightUnscaled), cls: 'unscaled' },
            { values: this.curve.map((p) => p.meanMaxWeightScaled), cls: 'scaled' },
          ],
        }),
        h('figcaption', {},
          h('span', { class: 'key-swatch unscaled' }), ' unscaled  ',
          h('span', { class: 'key-swatch scaled' }), ' scaled by 1/√d_k. ',
          `x: d_k (doubling), y: average largest weight among ${st.keys} keys (1/${st.keys} = perfectly even, 1 = all on one key).`)),
      srOnly(table),
      h('p', { class: 'readout' }, `At d_k = ${st.dk}: the largest of ${st.keys} weights averages `,
        h('strong', { 'data-out': 'peak-unscaled', text: fmt(now.meanMaxWeightUnscaled, 3) }), ' without scaling and ',
        h('strong', { 'data-out': 'peak-scaled', text: fmt(now.meanMaxWeightScaled, 3) }), ' with it.'),
    );
  },
};

export const basicSections = [oneQuery, threeByThree, whyScale];
