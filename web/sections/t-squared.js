// What T² costs: time and memory of attention against the sequence length T,
// measured live in this browser, for the path that keeps the weights and
// for the tiled path. Memory is the core's own figure (lab.lastCallBytes).

import { h, s, select, numberField, statusLine, fmt, setText, afterFrameIdle } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { whenNear } from '../lesson-context.js';

const LENGTHS = ['512', '1024', '2048', '4096'];
const MiB = 1024 * 1024;
const REPEATS = 5; // timed batches per length and path
const BATCH_MS = 2; // a batch of short calls lasts about this long

/** Slope of log(y) against log(x) between two points. */
/** A passing slope with the weights this far below 2 says why it is not 2. */
const SLOPE_SHORT = 0.05;
const slope = (x0, y0, x1, y1) => Math.log(y1 / y0) / Math.log(x1 / x0);

export const tSquared = {
  id: 't-squared',
  prefix: 'cost',
  // The heading is the title as it is, with the character ²: read as "squared",
  // where T<sup>2</sup> would be read "T2".
  title: 'What T² costs',
  body: `
<p>Every query meets every key, so the scores of one head form a T × T matrix: doubling the sequence length T quadruples it. Kept in memory, as the weights are when you ask for them, it grows as T². The tiled path of the previous section never keeps it: its memory grows only as T × d, with the inputs and the output. Its work still grows as T²: every score is still computed, once.</p>
<p>For a whole layer the count is B × H × T² scores of d<sub>head</sub> products each: O(B · H · T² · d<sub>head</sub>) = O(B · T² · d<sub>model</sub>), since H × d<sub>head</sub> = d<sub>model</sub>. When a long sequence does not fit, the usual ways out are a smaller batch, shorter sequences, activation checkpointing (keep less, recompute in the backward pass), a tiled kernel that never stores the T × T weights, or attention that lets each query see only a window or a sparse subset of the keys. A narrower model helps only in proportion: a smaller d<sub>model</sub> makes each score cheaper and the projections smaller, but every head still has its T × T scores, so doubling T still quadruples them.</p>
<p>The core measures both paths here, in your browser, at T = 64 doubling up to the length you pick. On a log-log chart a power law is a straight line whose slope is its exponent: the dashed line marks the slope of T².</p>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<div class="result" data-slot="charts"></div>
<div class="result" data-slot="check"></div>
`,
  fields: [
    ['maxT', codec.choice(LENGTHS), () => '1024'],
    ['d', codec.int(8, 64), () => 64],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    ctx.slot(this.id, 'controls').replaceChildren(
      select({ label: 'Longest T', name: 'cost-max', value: st.maxT, options: LENGTHS.map((t) => [t, t]),
        onValue: (value) => { st.maxT = value; commit(); } }),
      numberField({ label: 'Width d of q, k and v (8 to 64)', name: 'cost-d', value: st.d, integer: true, min: 8, max: 64, size: 'sm',
        onValue: (value) => { st.d = value; commit(); } }),
    );
    this.status = statusLine();
    ctx.slot(this.id, 'status').replaceChildren(this.status.node);
    // The progress line and the check that replaces it are read out once the
    // learner changes what is measured: their box becomes a live region as
    // the edit starts a measurement (a region added with its text would say
    // nothing). The first measurement, made once the learner comes near, is
    // not read out: no edit of theirs asked for it.
    this.measured = false;
    ctx.slot(this.id, 'check').setAttribute('aria-live', 'off');
  },

  /**
   * Measuring takes far longer than an edit may (a call at T = 4096 alone
   * takes tens of milliseconds), so an edit only starts it: the edit's frame
   * shows "measuring", then one call of one path runs per idle moment after
   * a painted frame, and the page stays responsive between them. A newer
   * edit abandons a measurement still running. The charts appear when every
   * length has been measured.
   */
  update(ctx, st) {
    const lengths = [];
    for (let T = 64; T <= Number(st.maxT); T *= 2) lengths.push(T);
    const chartsHost = ctx.slot(this.id, 'charts'), checkHost = ctx.slot(this.id, 'check');
    if (this.measured) checkHost.setAttribute('aria-live', 'polite');
    this.measured = true;
    const run = {};
    this.run = run;
    chartsHost.classList.add('measuring');
    // One progress line, its text set in place while edits follow each other.
    let progress = checkHost.querySelector(':scope > [data-out="cost-progress"]');
    if (!progress) {
      progress = h('p', { class: 'readout', 'data-out': 'cost-progress' });
      checkHost.replaceChildren(progress);
    }
    setText(progress, `Measuring T = ${lengths.join(', ')} at d = ${st.d}…`);
    // Inputs from a fixed pattern: the cost does not depend on the values.
    const input = (T) => ({ data: Float32Array.from({ length: T * st.d }, (_, i) => Math.sin(0.37 * i)), shape: [T, st.d] });
    // Per length and path: one warm-up call, which also gives the memory
    // figure and the batch size, then REPEATS timed batches; the fastest is
    // kept: whatever else the machine does only adds time, so one noisy batch
    // cannot bend the line. A batch repeats a short call to last about
    // BATCH_MS, as the clock may tick only every 0.1 ms.
    const todo = lengths.flatMap((T) => ['weights', 'tiled'].flatMap((path) =>
      Array.from({ length: 1 + REPEATS }, (_, rep) => ({ T, path, rep }))));
    const res = [];
    const step = () => {
      if (this.run !== run) return; // a newer edit took over
      const { T, path, rep } = todo.shift();
      if (path === 'weights' && rep === 0) res.push({ T, x: input(T) });
      const point = res[res.length - 1];
      const fn = path === 'weights' ? ctx.lab.sdpa : ctx.lab.sdpaTiled;
      const calls = rep === 0 ? 1 : point[path].batch;
      const ms = ctx.core(this.status, () => {
        const t0 = performance.now();
        for (let c = 0; c < calls; c++) fn.call(ctx.lab, point.x, point.x, point.x);
        return (performance.now() - t0) / calls;
      }, [chartsHost, checkHost]);
      if (ms === null) {
        chartsHost.classList.remove('measuring');
        checkHost.replaceChildren();
        return;
      }
      if (rep === 0) point[path] = { bytes: ctx.lab.lastCallBytes(), times: [], batch: Math.min(64, Math.ceil(BATCH_MS / Math.max(ms, 0.05))) };
      else point[path].times.push(ms);
      if (todo.length) afterFrameIdle(step);
      else {
        const fastest = (times) => Math.max(Math.min(...times), 0.001);
        this.drawMeasured(ctx, st, res.map(({ T, weights, tiled }) => ({
          T, weights: { ms: fastest(weights.times), bytes: weights.bytes }, tiled: { ms: fastest(tiled.times), bytes: tiled.bytes } })));
      }
    };
    // Each call waits for a painted frame and an idle moment: it never holds
    // back the frame of an edit, nor the work that follows that frame. The
    // first waits until the section is near the viewport: a learner who never
    // scrolls here spends nothing on timing this browser.
    this.cancelNear?.();
    this.cancelNear = whenNear(ctx.node(this.id), () => afterFrameIdle(step));
  },

  drawMeasured(ctx, st, res) {
    ctx.slot(this.id, 'charts').classList.remove('measuring');
    this.points = res;
    const n = res.length;
    ctx.slot(this.id, 'charts').replaceChildren(
      h('figure', { class: 'cost' },
        logLogChart({ points: res, value: (p) => p.ms, unit: 'ms', title: `Time per call against T, d = ${st.d}, log-log` }),
        h('figcaption', {}, 'Time per call (ms), measured now. ', legendText())),
      h('figure', { class: 'cost' },
        logLogChart({ points: res, value: (p) => p.bytes / MiB, unit: 'MiB', title: `Memory per call against T, d = ${st.d}, log-log` }),
        h('figcaption', {}, 'Memory per call (MiB), the core’s figure. ', legendText())),
      h('div', { class: 'grid-wrap' }, h('table', { class: 'values cost-table', 'data-measured': 'cost-table' },
        h('caption', { text: 'The measurements' }),
        h('thead', {}, h('tr', {}, ...['T', 'with weights: ms', 'MiB', 'tiled: ms', 'MiB'].map((c) => h('th', { scope: 'col', text: c })))),
        h('tbody', {}, ...res.map((p) => h('tr', { 'data-t': p.T },
          h('th', { scope: 'row', text: String(p.T) }),
          h('td', { text: fmt(p.weights.ms, 2) }), h('td', { 'data-out': 'cost-mem-weights', text: fmt(p.weights.bytes / MiB, 3) }),
          h('td', { text: fmt(p.tiled.ms, 2) }), h('td', { 'data-out': 'cost-mem-tiled', text: fmt(p.tiled.bytes / MiB, 3) })))))),
    );
    // The check: the memory slopes over the last doubling, 2 with weights and 1 tiled.
    const [a, b] = [res[n - 2], res[n - 1]];
    const memWeights = slope(a.T, a.weights.bytes, b.T, b.weights.bytes);
    const memTiled = slope(a.T, a.tiled.bytes, b.T, b.tiled.bytes);
    const weightsOk = Math.abs(memWeights - 2) < 0.3, tiledOk = Math.abs(memTiled - 1) < 0.3;
    const ok = weightsOk && tiledOk;
    // The core's figure counts the inputs and the output (T × d each) too, and
    // any buffers of fixed size: at short T they hide the growth of the rest.
    const why = [
      weightsOk ? '' : ' With the weights, the inputs and output, which grow as T × d, are still a sizeable share beside the T × T part: pick a longer T or a smaller d.',
      tiledOk ? '' : ' On the tiled path, parts of fixed size still weigh as much as those that grow with T: pick a longer T.',
      // Within the tolerance, a slope visibly short of 2 (by SLOPE_SHORT) still deserves its reason.
      weightsOk && memWeights < 2 - SLOPE_SHORT ? ' With the weights the slope stays below 2 because the inputs and the output, which grow only as T × d, are part of the memory too; the T × T part alone grows as T².' : '',
    ].join('');
    ctx.slot(this.id, 'check').replaceChildren(h('p', { class: `check ${ok ? 'pass' : 'fail'}`, 'data-check': 'cost-slopes', 'data-passed': String(ok) },
      ok ? '✓ ' : '✗ ', `From T = ${a.T} to ${b.T} the memory slope is `,
      h('strong', { 'data-out': 'cost-slope-weights', text: fmt(memWeights, 2) }), ' with the weights (T²: 2) and ',
      h('strong', { 'data-out': 'cost-slope-tiled', text: fmt(memTiled, 2) }), ` on the tiled path (T: 1).${why}`));
    ctx.drewLater(ctx.slot(this.id, 'charts'));
  },
};

/** The charts' key: each swatch stays on the line of its label. */
function legendText() {
  const item = (cls, label) => h('span', { class: 'key-item' }, h('span', { class: `key-swatch ${cls}` }), ` ${label}`);
  return h('span', {}, item('cost-weights', 'with weights'), '  ', item('cost-tiled', 'tiled'), '  ', item('cost-slope', 'slope of T²'));
}

/** A log-log line chart of both paths, with a dashed T² line through the first weights point. */
function logLogChart({ points, value, unit, title }) {
  const W = 340, H = 200, padL = 46, padR = 18, padT = 10, padB = 30;
  const xs = points.map((p) => Math.log2(p.T));
  const ys = points.flatMap((p) => [value(p.weights), value(p.tiled)]).map(Math.log10);
  const [x0, x1] = [xs[0], xs[xs.length - 1]];
  // slope 2 in (log2 T, log10 y): log10 y rises by 2·log10(2) per doubling.
  // The axis spans the line's ends as well as the points, so the line stays inside.
  const start = Math.log10(value(points[0].weights));
  const end = start + 2 * Math.log10(2) * (x1 - x0);
  const y0 = Math.floor(Math.min(...ys, start)), y1 = Math.ceil(Math.max(...ys, end, Math.min(...ys) + 1));
  const X = (v) => padL + ((v - x0) / (x1 - x0 || 1)) * (W - padL - padR);
  const Y = (v) => padT + (1 - (v - y0) / (y1 - y0)) * (H - padT - padB);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title }, s('title', { text: title }));
  svg.append(s('line', { x1: padL, x2: W - padR, y1: H - padB, y2: H - padB, class: 'axis' }));
  svg.append(s('line', { x1: padL, x2: padL, y1: padT, y2: H - padB, class: 'axis' }));
  for (let e = y0; e <= y1; e++) {
    svg.append(s('line', { x1: padL, x2: W - padR, y1: Y(e), y2: Y(e), class: 'gridline' }));
    svg.append(s('text', { x: padL - 4, y: Y(e) + 4, class: 'tick end', text: `1e${e}` }));
  }
  points.forEach((p, k) => svg.append(s('text', { x: X(xs[k]), y: H - padB + 14, class: 'tick mid', text: String(p.T) })));
  svg.append(s('text', { x: W - padR, y: H - 4, class: 'tick end', text: `T   (y: ${unit})` }));
  svg.append(s('line', { x1: X(x0), y1: Y(start), x2: X(x1), y2: Y(end), class: 'cost-slope-line' }));
  for (const [key, cls] of [['weights', 'cost-weights'], ['tiled', 'cost-tiled']]) {
    const d = points.map((p, k) => `${k ? 'L' : 'M'}${X(xs[k]).toFixed(1)},${Y(Math.log10(value(p[key]))).toFixed(1)}`).join(' ');
    svg.append(s('path', { d, class: `series ${cls}` }));
    points.forEach((p, k) => svg.append(s('circle', { cx: X(xs[k]), cy: Y(Math.log10(value(p[key]))), r: 3, class: `dot ${cls}` })));
  }
  return svg;
}

export default tSquared;
