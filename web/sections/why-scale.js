// Why the scores are divided by √d_k: histograms of sampled dot products and how peaked the softmax gets.
// Every number shown comes from the wasm core.

import {
  h, numberField, statusLine, fmt, binCounts, histogramSvg, updateHistogram, lineChartSvg, moveMarker, srOnly, setText,
} from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { slot } from './markup.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

const PEAK_DKS = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const SAMPLE_COUNT = 4096; // enough samples for a smooth histogram
const PEAK_COUNT = 256; // random queries averaged per point of the peakedness view
const SAMPLE_CACHE = 32; // d_k values whose samples are kept
const cancelIdle = (id) => (globalThis.cancelIdleCallback ?? clearTimeout)(id);
const HIST_X = 48; // the histograms' x axis: ±3 spreads of the unscaled dot product at d_k = 256 (spread 16)
const HIST_BINS = 97; // bins about 1 wide
// The histograms' y axis, above the tallest bar at any d_k. At d_k = 1 a dot
// product is one product x·y, whose values crowd around 0: about 2400 of the
// 4096 land in the middle bin (a unit-variance bell would put about 1600 there).
const HIST_Y = 2800;

export const whyScale = {
  id: 'why-scale',
  prefix: 'scale',
  title: 'Why divide by √d_k',
  heading: 'Why divide by √d<sub>k</sub>',
  body: `
<p>Take a query and a key whose d<sub>k</sub> entries are independent, with mean 0 and variance 1. Their dot product adds up d<sub>k</sub> products, each with variance about 1, so the sum has variance about d<sub>k</sub> and a spread (standard deviation) of about √d<sub>k</sub>. At d<sub>k</sub> = 64 typical scores are around ±8.</p>
<p>Softmax over scores that far apart is very peaked: one key takes most of the weight (the chart at the end measures how much), and the gradient reaching the other keys shrinks towards zero. Peaked weights are not always wrong, but a whole model that starts this way learns slowly. Dividing by √d<sub>k</sub> brings the variance back to about 1. It is the same idea as Xavier or He initialisation: keep signals in the range where a non-linearity still passes useful gradients. The divisor is the width of a key, not the length of the sequence. It helps training start well; it does not promise that training goes well.</p>
<p>The core below draws 4096 such pairs from a fixed seed. Move the slider and watch the unscaled spread grow while the scaled one stays put.</p>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<div class="result hist-pair" data-slot="hist"></div>
<h3>How peaked does the softmax get?</h3>
<p>For each d<sub>k</sub>, the core draws 256 random queries, each with its own set of random keys, applies softmax to each query's scores with and without the scale, and averages the largest weight over the 256 queries. A value near 1 means one key takes almost everything.</p>
<div class="result" data-slot="peak"></div>
`,
  presets: {
    'why-scale': {
      title: 'Why divide by √d_k', result: null,
      blocks: [
        slot('controls', 'inputs', { cls: 'controls' }), slot('status'),
        slot('hist', 'scores', { cls: 'result hist-pair' }), slot('peak', 'weights', { cls: 'result' }),
      ],
    },
  },
  fields: [
    ['dk', codec.int(1, 256), () => 64],
    ['seed', codec.int(0, 99999), () => 0],
    ['keys', codec.int(2, 64), () => 16],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    const sliderId = 'scale-dk';
    const slider = h('input', { id: sliderId, type: 'range', min: 1, max: 256, step: 1, 'data-field': 'scale-dk' });
    slider.value = String(st.dk);
    // The slider says its own value; the output is not a live region too,
    // or each step would be read twice.
    const shown = h('output', { for: sliderId, class: 'num-out strong', text: String(st.dk), 'aria-live': 'off' });
    slider.addEventListener('input', () => {
      st.dk = Number(slider.value);
      setText(shown, slider.value);
      commit();
    });
    this.peakKey = null;
    this.samples = new Map(); // `${kind}:${dk}:${keys}:${seed}` -> the core's answer
    cancelIdle(this.pending);
    ctx.slot(this.id, 'controls').replaceChildren(
      h('div', { class: 'field field-range' }, h('label', { for: sliderId, text: 'd_k, the width of each query and key' }), slider, shown),
      numberField({ label: 'Random seed', name: 'scale-seed', value: st.seed, integer: true, min: 0, max: 99999,
        onValue: (v) => { st.seed = v; commit(); } }),
      numberField({ label: 'Keys per softmax', name: 'scale-keys', value: st.keys, integer: true, min: 2, max: 64,
        onValue: (v) => { st.keys = v; commit(); } }),
    );
    this.said = announcer(ctx.node(this.id), 'why-scale');
    this.status = statusLine(this.said);
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
  },

  /**
   * The core's samples for one d_k, kept: drawing 4096 random pairs is most of
   * an edit's time, and a slider goes back and forth. While the page is idle,
   * the neighbours of the current d_k are asked for ahead of the next step.
   */
  sampled(ctx, kind, dk, st) {
    const key = `${kind}:${dk}:${st.keys}:${st.seed}`;
    if (!this.samples.has(key)) {
      if (this.samples.size >= SAMPLE_CACHE) this.samples.delete(this.samples.keys().next().value);
      this.samples.set(key, kind === 'dots'
        ? ctx.lab.sampleDotProducts({ dk, count: SAMPLE_COUNT, seed: st.seed })
        : ctx.lab.softmaxPeak({ dk, keys: st.keys, count: PEAK_COUNT, seed: st.seed }));
    }
    return this.samples.get(key);
  },

  prefetch(ctx, st) {
    const idle = globalThis.requestIdleCallback ?? ((fn) => setTimeout(fn, 50));
    cancelIdle(this.pending);
    const todo = [st.dk + 1, st.dk - 1, st.dk + 2, st.dk - 2].filter((dk) => dk >= 1 && dk <= 256);
    const step = (deadline) => {
      while (todo.length && (!deadline || deadline.timeRemaining() > 8)) {
        const dk = todo.shift();
        try {
          this.sampled(ctx, 'dots', dk, st);
          if (!PEAK_DKS.includes(dk)) this.sampled(ctx, 'peak', dk, st);
        } catch {
          return; // the core refused: the edit itself will say so
        }
      }
      if (todo.length) this.pending = idle(step);
    };
    this.pending = idle(step);
  },

  update(ctx, st, detail) {
    const sample = ctx.core(this.status, () => this.sampled(ctx, 'dots', st.dk, st));
    if (!sample) return;
    this.prefetch(ctx, st);
    // Fixed axes for every d_k, so that the two charts and every position of
    // the slider can be compared: x covers ±3 spreads of the widest unscaled
    // case (d_k = 256), y the tallest bar of a unit-variance histogram.
    const bins = HIST_BINS;
    // The two figures are built once; a new d_k moves their bars and sets their texts.
    const histHost = ctx.slot(this.id, 'hist');
    const fresh = !histHost.histParts || !histHost.contains(histHost.histParts[0].svg);
    const title = (what, variance) => `Histogram of ${SAMPLE_COUNT} ${what} dot products for d_k = ${st.dk}; variance ${fmt(variance, 2)}`;
    const chart = (values, cls, xLabel, what, variance) => {
      const counts = binCounts(values, -HIST_X, HIST_X, bins);
      const beyond = values.length - counts.reduce((a, b) => a + b, 0);
      const text = title(what, variance);
      const svg = fresh ? histogramSvg({ counts, lo: -HIST_X, hi: HIST_X, yMax: HIST_Y, xLabel, yLabel: 'count per bin', cls, title: text }) : null;
      return { svg, counts, title: text, beyond };
    };
    const un = chart(sample.unscaled, 'unscaled', 'q·k', 'unscaled', sample.varianceUnscaled);
    const sc = chart(sample.scaled, 'scaled', 'q·k / √d_k', 'scaled', sample.varianceScaled);
    const beyondNote = (n) => (n > 0 ? ` (${n} of ${SAMPLE_COUNT} fall beyond ±${HIST_X}, off the chart)` : '');
    if (fresh) {
      histHost.histParts = [[un, 'Unscaled q·k: variance ', 'var-unscaled'], [sc, 'Scaled q·k / √d_k: variance ', 'var-scaled']]
        .map(([c, text, out]) => {
          const variance = h('strong', { 'data-out': out });
          const beyond = h('span');
          return { svg: c.svg, variance, beyond, fig: h('figure', { class: 'hist' }, c.svg, h('figcaption', {}, text, variance, beyond)) };
        });
      histHost.replaceChildren(...histHost.histParts.map((p) => p.fig));
    }
    [[un, sample.varianceUnscaled], [sc, sample.varianceScaled]].forEach(([c, variance], k) => {
      const part = histHost.histParts[k];
      if (!fresh) updateHistogram(part.svg, c);
      setText(part.variance, fmt(variance, 2));
      setText(part.beyond, beyondNote(c.beyond));
    });

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
      : ctx.core(this.status, () => this.sampled(ctx, 'peak', st.dk, st));
    if (!now) return;
    // The chart and its table change with the keys and the seed only; the
    // marker moves in place, and the sentence under them changes with every d_k.
    const peakHost = ctx.slot(this.id, 'peak');
    if (!peakHost.peakParts || !peakHost.contains(peakHost.peakParts.readout)) {
      const chartHost = h('div');
      const readout = h('p', { class: 'readout' });
      peakHost.replaceChildren(chartHost, readout);
      peakHost.peakParts = { chartHost, readout };
      this.drawnParts?.delete('peak-chart');
    }
    const { chartHost, readout } = peakHost.peakParts;
    ctx.part(this, 'peak-chart', [peakKey], () => {
      const table = h('table', {},
        h('caption', { text: `Mean largest softmax weight over ${st.keys} keys` }),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'd_k' }), h('th', { scope: 'col', text: 'scaled' }), h('th', { scope: 'col', text: 'unscaled' }))),
        h('tbody', {}, this.curve.map((p, i) => h('tr', {},
          h('th', { scope: 'row', text: String(PEAK_DKS[i]) }), h('td', { text: fmt(p.meanMaxWeightScaled, 3) }), h('td', { text: fmt(p.meanMaxWeightUnscaled, 3) })))),
      );
      chartHost.peakSvg = lineChartSvg({
        xs: PEAK_DKS.map(String), yRange: [0, 1], marker: null,
        title: `Mean largest softmax weight over ${st.keys} keys as d_k grows, with and without scaling`,
        series: [
          { values: this.curve.map((p) => p.meanMaxWeightUnscaled), cls: 'unscaled' },
          { values: this.curve.map((p) => p.meanMaxWeightScaled), cls: 'scaled' },
        ],
      });
      chartHost.replaceChildren(
        h('figure', { class: 'peak' },
          chartHost.peakSvg,
          h('figcaption', {},
            h('span', { class: 'key-swatch unscaled' }), ' unscaled  ',
            h('span', { class: 'key-swatch scaled' }), ' scaled by 1/√d_k. ',
            `x: d_k (doubling), y: average largest weight among ${st.keys} keys (1/${st.keys} = perfectly even, 1 = all on one key).`)),
        srOnly(table));
    });
    moveMarker(chartHost.peakSvg, marker >= 0 ? marker : null);
    // The sentence is built once; an edit sets its three texts.
    if (!readout.parts) {
      readout.parts = [document.createTextNode(''), h('strong', { 'data-out': 'peak-unscaled' }), h('strong', { 'data-out': 'peak-scaled' })];
      readout.replaceChildren(readout.parts[0], readout.parts[1], ' without scaling and ', readout.parts[2], ' with it.');
    }
    const [lead, unscaled, scaled] = readout.parts;
    setText(lead, `At d_k = ${st.dk}: the largest of ${st.keys} weights averages `);
    setText(unscaled, fmt(now.meanMaxWeightUnscaled, 3));
    setText(scaled, fmt(now.meanMaxWeightScaled, 3));
    if (isEdit(detail)) {
      this.said.say(`d_k = ${st.dk}: variance ${histHost.histParts[0].variance.textContent} unscaled, ${histHost.histParts[1].variance.textContent} scaled. `
        + `The largest of ${st.keys} weights averages ${unscaled.textContent} without scaling and ${scaled.textContent} with it.`);
    }
  },
};

export default whyScale;
