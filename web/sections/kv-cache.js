// The KV cache: decoding token by token with the multi-head module, each
// step attending from one new query to every cached key. Every number shown
// comes from the core: the module's forward with { cache, useCache }, and
// one full causal pass to compare with.

import { h, numberGrid, numberField, checkbox, statusLine, fmt, fmtSci, setText, setCheck, afterFrameIdle, blockedFrom, stepButtons } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { whenNear } from '../lesson-context.js';
import { dimLabel, keyLabel } from './common.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

const T = 5; // tokens
const C = 4; // dModel
const HEADS = 2;
const REPEATS = 200; // calls per live timing
// A longer sequence with wider vectors, timed once: there the arithmetic,
// not the fixed cost of a call, takes most of the time.
const LONG = { tokens: 256, dModel: 64, heads: 4 };
const LONG_BUDGET_MS = 20; // time spent calling each path of the long example

/**
 * A count of multiply-adds, exact as the core counted it and never grouped:
 * the words under the long example compare two counts, which rounding would
 * blur. (A count past 1e9, far beyond this section's, takes scientific notation.)
 */
const fmtCount = (n) => (Number.isInteger(n) && Math.abs(n) < 1e9 ? String(n) : fmt(n, 0));

const tokenLabel = (i) => `token ${i + 1}`;

export const kvCache = {
  id: 'kv-cache',
  prefix: 'kv',
  title: 'The KV cache: decoding one token at a time',
  body: `
<p>A language model writes one token at a time, and each new token attends to all the tokens before it. Recomputing every key and value at every step would repeat almost all of the work. The KV cache keeps the keys and values of the tokens already seen: a step projects only the new token, appends its key and value to the cache, and attends from its one query to every cached key. Step t adds one row of scores.</p>
<p>Done right, the outputs are those of one full causal pass over the whole sequence, up to float rounding: the two compute the same thing but round at different steps. The classic mistake is a stale position offset: the new query must stand at the cache’s length, not at 0 as if it began a new sequence. Placed at 0, it is rotated by the wrong angle, and the causal rule, which compares positions, lets it see the first token only. (As in the rotary section, positions count from 0: token t stands at position t − 1.)</p>
<p>Two limits. A cache holds the keys and values of the sequence being written, so it is for self-attention only: the core’s multi-head module refuses a cache together with a separate source (<code>CACHE_CROSS_ATTENTION</code>), whose keys and values would not grow with the output anyway. And a cache is a tool of inference: with dropout on, each step would drop other weights than a full pass does, and the two would no longer agree. Put a model in evaluation mode (<code>model.eval()</code> in PyTorch) before decoding with a cache.</p>
<p>The switch below turns that mistake on inside the attention core, as a deliberate bug (<code>stale-cache-offset</code>): the page still passes the right offsets, but the core’s decoding step leaves the new query’s position at 0 instead of the cache’s length. The keys are still stored at their right positions. Watch the largest difference to the full pass.</p>
<div class="inputs" data-slot="inputs"></div>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<div class="result" data-slot="cache"></div>
<div class="result" data-slot="check"></div>
<div class="result" data-slot="work"></div>
<div class="result" data-slot="work-long"></div>
`,
  fields: [
    ['x', codec.matrix(() => T, () => C), () => [[1, 0, 0.5, -1], [0, 1, 1, 0], [-0.5, 0.5, 0, 1], [1, 1, -1, 0.5], [0, -1, 0.5, 0.5]]],
    ['seed', codec.int(0, 99999), () => 3],
    ['step', codec.int(1, T), () => 3],
    ['stale', codec.bool(), () => false],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Tokens x (one row per token, d_model = 4)', name: 'kv-x', matrix: st.x, rowLabel: tokenLabel, colLabel: dimLabel, onChange: commit }),
    );
    ({ prev: this.prev, next: this.next } = stepButtons({ noun: 'token', name: 'kv', count: () => T, at: () => st.step,
      go: (n) => { st.step = n; commit(); }, say: (text) => this.said.say(text) }));
    this.stepText = h('span', { class: 'num-out', 'data-out': 'kv-step' });
    ctx.slot(this.id, 'controls').replaceChildren(
      numberField({ label: 'Weight seed (2 heads of width 2, RoPE on)', name: 'kv-seed', value: st.seed, integer: true, min: 0, max: 99999, size: 'sm',
        onValue: (value) => { st.seed = value; commit(); } }),
      h('div', { class: 'field stepper' }, this.prev, this.stepText, this.next),
      checkbox({ label: 'Mistake: a stale position offset (a bug in the core places each new query at position 0)', name: 'kv-stale', checked: st.stale,
        onToggle: (on) => { st.stale = on; commit(); } }),
    );
    this.said = announcer(ctx.node(this.id), 'kv-cache');
    this.status = statusLine(this.said);
    // An edit's result (the token reached and the check against the full
    // pass) is said once the edits pause: steps pressed in a row say the last.
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
    this.module = null;
    this.moduleSeed = null;
  },

  /** The module for the seed, made once per seed. */
  moduleFor(ctx, seed) {
    if (this.moduleSeed !== seed) {
      this.module?.free();
      this.module = ctx.lab.createMultiHeadAttention({ dModel: C, numHeads: HEADS, rope: true, seed });
      this.moduleSeed = seed;
    }
    return this.module;
  },

  update(ctx, st, detail) {
    this.timing = null; // a measurement still waiting is for the old inputs
    const hosts = ['cache', 'check', 'work'].map((name) => ctx.slot(this.id, name));
    const res = ctx.core(this.status, () => {
      const mha = this.moduleFor(ctx, st.seed);
      const full = mha.forward([st.x], { causal: true });
      // Decode tokens 1..step with the cache, each query at the cache length.
      // The stale mistake is the core's bug stale-cache-offset on the same calls.
      const steps = [];
      let cache = null;
      for (let t = 0; t < st.step; t++) {
        const r = mha.forward([[st.x[t]]], { cache, useCache: true, causal: true, queryPositionOffset: t, bug: st.stale ? 'stale-cache-offset' : null });
        cache = r.cache;
        steps.push(Object.assign(r, { offset: t }));
      }
      // The work of token step, as the core counts it (lab.lastCallMadds) on
      // the two calls the timing repeats: the step with the cache of the
      // tokens before it, and recomputing all the tokens so far.
      const t = st.step;
      const options = { causal: true, needWeights: false };
      mha.forward([[st.x[t - 1]]], { ...options, cache: t > 1 ? steps[t - 2].cache : null, useCache: true });
      const cached = ctx.lab.lastCallMadds();
      mha.forward([st.x.slice(0, t)], options);
      const madds = { cached, full: ctx.lab.lastCallMadds() };
      return { full, steps, cacheShape: cache.key.shape, madds };
    }, hosts);
    if (!res) return;
    const { full, steps } = res;
    setText(this.stepText, `Token ${st.step} of ${T}`);
    // At either end a button is marked unavailable (aria-disabled), not
    // disabled: it keeps the focus, so a key held down stops at the end
    // instead of the focus falling to the page or turning back (stepButtons stops there).
    this.prev.setAttribute('aria-disabled', String(st.step <= 1));
    this.next.setAttribute('aria-disabled', String(st.step >= T));
    this.drawCache(ctx, st, steps, res.cacheShape);

    // The check: the decoded outputs against the full causal pass, rows 1..step.
    const got = steps.flatMap((r) => Array.from(r.output.data));
    const want = full.output.data.subarray(0, st.step * C);
    let diff = 0, size = 1;
    for (let n = 0; n < got.length; n++) {
      diff = Math.max(diff, Math.abs(got[n] - want[n]));
      size = Math.max(size, Math.abs(want[n]));
    }
    const ok = diff <= 1e-5 * size;
    const checkHost = ctx.slot(this.id, 'check');
    if (!this.check || !checkHost.contains(this.check.node)) {
      this.check = { lead: document.createTextNode(''), diff: h('strong', { 'data-out': 'kv-diff' }), tail: document.createTextNode('') };
      this.check.node = h('p', { 'data-check': 'kv-equal' }, this.check.lead, this.check.diff, this.check.tail);
      checkHost.replaceChildren(this.check.node);
    }
    const { node, lead, diff: diffNode, tail } = this.check;
    setCheck(node, ok);
    const decoded = st.step === 1 ? 'Token 1, decoded on its own, ' : `Tokens 1 to ${st.step}, decoded one at a time, `;
    const verb = st.step === 1 ? ['equals', 'differs'] : ['equal', 'differ'];
    setText(lead, ok ? `✓ ${decoded}${verb[0]} one full causal pass up to float rounding: the largest difference is `
      : `✗ ${decoded}${verb[1]} from the full causal pass by up to `);
    setText(diffNode, fmtSci(diff));
    setText(tail, ok ? '.' : st.stale ? ': each query was rotated as if it stood at position 0, and the causal rule let it see token 1 only.' : '.');
    if (isEdit(detail)) {
      const tokens = st.step === 1 ? ['token 1', 'equals', 'differs'] : [`tokens 1 to ${st.step}`, 'equal', 'differ'];
      this.said.say(`${this.stepText.textContent}: ${tokens[0]}, decoded with the cache, `
        + `${ok ? `${tokens[1]} the full pass up to float rounding; largest difference ${diffNode.textContent}.` : `${tokens[2]} from the full pass by up to ${diffNode.textContent}.`}`);
    }

    this.drawWork(ctx, st, res.madds);
  },

  /**
   * The cache and one new row of weights per step, head by head. The tables
   * are built once per step count; an edit sets their numbers in place.
   */
  drawCache(ctx, st, steps, cacheShape) {
    const host = ctx.slot(this.id, 'cache');
    if (!this.cache || this.cache.step !== st.step || !host.contains(this.cache.readout)) {
      const cells = [];
      const tables = [];
      for (let head = 0; head < HEADS; head++) {
        const head_ = h('tr', {}, h('td', { class: 'corner' }), ...Array.from({ length: T }, (_, j) => h('th', { scope: 'col', text: keyLabel(j) })));
        const rows = steps.map((r, t) => h('tr', { 'data-step': t }, h('th', { scope: 'row', text: `step ${t + 1}` }),
          ...Array.from({ length: T }, (_, j) => {
            if (j > t) return h('td', { class: 'not-yet', text: '' });
            // The weight, and for screen readers whether the causal rule hid that key.
            const td = h('td', {}, h('span', { 'data-out': `kv-w${head}` }), h('span', { class: 'sr-only' }));
            cells.push([td, head, t, j]);
            return td;
          })));
        tables.push(h('div', { class: 'grid-wrap' }, h('table', { class: 'values', 'data-values': `kv-weights-${head}` },
          h('caption', { text: `Head ${head + 1}: the new query’s weights at each step` }), h('thead', {}, head_), h('tbody', {}, ...rows))));
      }
      const shape = h('strong', { 'data-out': 'kv-cache-shape' });
      const stale = document.createTextNode('');
      const readout = h('p', { class: 'readout' }, 'After token ', String(st.step), ' the cache holds keys and values of shape ',
        shape, ': (batch, heads, tokens so far, head width). ', 'The query offset passed at each step is the cache’s length before the step: token ', String(st.step),
        ' was passed offset ', h('strong', { 'data-out': 'kv-offset' }), ' (position 0 is token 1)', stale);
      host.replaceChildren(readout, ...tables);
      this.cache = { step: st.step, readout, shape, stale, cells, offset: readout.querySelector('[data-out="kv-offset"]') };
    }
    const { shape, stale, cells, offset } = this.cache;
    setText(offset, String(steps[steps.length - 1].offset));
    setText(shape, `(${cacheShape.join(', ')})`);
    setText(stale, st.stale ? '; the core’s stale-offset bug ignores it and stands every new query at position 0, where the causal rule hides every key after token 1 (hatched).' : '.');
    // The keys the new query may see, by the core's causal rule, from where
    // the core stood it (the offset passed, or 0 where the stale bug takes over).
    const hidden = steps.map((r, t) => blockedFrom(ctx.lab.allowedPairs([1, t + 1], { causal: true, causalOffset: r.queryPosition })));
    for (const [td, head, t, j] of cells) {
      const v = steps[t].weights.data[head * (t + 1) + j]; // (1, H, 1, t + 1)
      const blocked = hidden[t](0, j);
      setText(td.firstChild, blocked && v === 0 ? '0' : fmt(v, 3));
      setText(td.lastChild, blocked ? ' (hidden by the causal rule)' : '');
      td.classList.toggle('blocked', blocked);
    }
  },

  /**
   * Work per step: multiply-adds as the core counted them on the two calls
   * (madds), time measured once the edit's frame is painted (200 calls of
   * each path would hold the frame back).
   * Beside it the same step on a longer, wider example, measured once.
   * The tables are data-measured, not data-values: a time is never the same twice.
   */
  drawWork(ctx, st, madds) {
    const t = st.step;
    const host = ctx.slot(this.id, 'work');
    const longHost = ctx.slot(this.id, 'work-long');
    if (!this.work || !host.contains(this.work.small.table)) {
      this.work = {
        small: workTable('kv-work', 'kv-madds'),
        long: workTable('kv-work-long', 'kv-long-madds'),
        note: h('span', { 'data-measured': 'kv-time-note' }), // a time: never the same twice
        pairs: h('strong', { 'data-out': 'kv-long-madds-pairs', text: '…' }),
      };
      const { small, long, note, pairs } = this.work;
      setText(long.caption, `The same step at token ${LONG.tokens} of ${LONG.tokens}, d_model = ${LONG.dModel}, ${LONG.heads} heads: multiply-adds counted by the core, time measured once in this browser`);
      for (const td of [...long.madds, ...long.times]) setText(td, '…');
      host.replaceChildren(h('div', { class: 'grid-wrap' }, small.table));
      longHost.replaceChildren(h('div', { class: 'grid-wrap' }, long.table),
        h('p', { class: 'hint' }, `At this section’s size (${T} tokens, d_model = ${C}) a call does so little arithmetic that its fixed cost `
          + '(entering the core, copying the inputs and the cache in and the results out) takes most of its time: the two times say '
          + 'little about the arithmetic, and either can come out ahead. The multiply-adds are the core’s own count of the work of each call, '
          + 'so their difference is exactly the work the cache saves: the core counts every product in its matrix products (the four projections, '
          + 'the scores and the weighted sums of the values), not the softmax. Recomputing with the causal rule, the core computes every score, '
          + 'but skips the weighted sum over a tile of keys that a whole block of queries may not see: at '
          + `${LONG.tokens} tokens it does fewer multiply-adds than the `, pairs, ' of the same call without the causal rule, a pass over every pair of tokens. ', note));
      // Timing this browser waits until the learner comes near (whenNear).
      this.cancelLong?.();
      this.cancelLong = whenNear(longHost, () => this.measureLong(ctx));
    }
    const { small } = this.work;
    setText(small.caption, `Work for token ${t}: multiply-adds counted by the core, time measured in this browser (mean of ${REPEATS} calls)`);
    setText(small.madds[0], fmtCount(madds.cached));
    setText(small.madds[1], fmtCount(madds.full));
    // A time measured for another token or seed is not this one's: it waits for the new measurement.
    const timed = `${st.seed}:${t}`;
    if (this.work.timed !== timed) for (const td of small.times) setText(td, '…');
    const run = {};
    this.timing = run;
    afterFrameIdle(() => {
      if (this.timing !== run) return; // a newer edit took over
      const timing = ctx.core(this.status, () => {
        const mha = this.moduleFor(ctx, st.seed);
        let prefix = null;
        for (let i = 0; i < t - 1; i++) prefix = mha.forward([[st.x[i]]], { cache: prefix, useCache: true, causal: true }).cache;
        return {
          cached: timePerCall(() => mha.forward([[st.x[t - 1]]], { cache: prefix, useCache: true, causal: true, needWeights: false }), { calls: REPEATS }),
          full: timePerCall(() => mha.forward([st.x.slice(0, t)], { causal: true, needWeights: false }), { calls: REPEATS }),
        };
      }, [], { keepNote: false });
      if (!timing) return;
      setText(small.times[0], fmt(timing.cached, 1));
      setText(small.times[1], fmt(timing.full, 1));
      this.work.timed = timed;
    });
  },

  /**
   * The last step of the long example, with its cache and recomputed, timed
   * once after the page's frame: its own module, inputs from a fixed pattern
   * (the cost does not depend on the values). Building the cache and timing
   * each path are three idle tasks, so none holds the page for long. Each
   * path's multiply-adds are the core's count of its last timed call; the
   * pass over every pair the words compare with is one call more, untimed.
   */
  measureLong(ctx) {
    const { long, note, pairs } = this.work;
    const mha = ctx.core(this.status, () => ctx.lab.createMultiHeadAttention({ dModel: LONG.dModel, numHeads: LONG.heads, rope: true, seed: 1 }), [], { keepNote: false });
    if (!mha) return;
    const x = Array.from({ length: LONG.tokens }, (_, i) => Array.from({ length: LONG.dModel }, (_, j) => Math.sin(0.37 * (i * LONG.dModel + j))));
    const last = [[x[LONG.tokens - 1]]];
    const options = { causal: true, needWeights: false };
    let prefix = null;
    const timing = {};
    const steps = [
      () => { for (let i = 0; i < LONG.tokens - 1; i++) prefix = mha.forward([[x[i]]], { ...options, cache: prefix, useCache: true }).cache; },
      () => {
        timing.cached = timePerCall(() => mha.forward(last, { ...options, cache: prefix, useCache: true }), { ms: LONG_BUDGET_MS });
        setText(long.madds[0], fmtCount(ctx.lab.lastCallMadds()));
      },
      () => {
        timing.full = timePerCall(() => mha.forward([x], options), { ms: LONG_BUDGET_MS });
        setText(long.madds[1], fmtCount(ctx.lab.lastCallMadds()));
        // What recomputing is compared with in the words under the table: every pair, no causal rule.
        mha.forward([x], { ...options, causal: false });
        setText(pairs, fmtCount(ctx.lab.lastCallMadds()));
      },
    ];
    const next = () => afterFrameIdle(() => {
      const ok = ctx.core(this.status, steps.shift(), [], { keepNote: false }) !== null;
      if (ok && steps.length > 0) { next(); return; }
      mha.free();
      if (!ok) return;
      // The ratio is that of the two times as shown, so a learner who divides them gets the same.
      const [cached, full] = [fmt(timing.cached, 1), fmt(timing.full, 1)];
      setText(long.times[0], cached);
      setText(long.times[1], full);
      setText(note, Number(full) > Number(cached)
        ? `On the longer example the arithmetic dominates, and recomputing took ${fmt(Number(full) / Number(cached), 1)} times as long as the step with the cache.`
        : 'On the longer example the arithmetic should dominate, yet this one measurement did not show the cache ahead: times vary with whatever else the machine is doing, while the multiply-adds count the work exactly.');
    });
    next();
  },
};

/** A work table: rows with the cache and recomputing, columns multiply-adds and µs per call. */
function workTable(name, maddsName) {
  const caption = h('caption');
  const madds = [h('td', { 'data-out': `${maddsName}-cached` }), h('td', { 'data-out': `${maddsName}-full` })];
  const times = [h('td'), h('td')];
  const table = h('table', { class: 'values work-table', 'data-measured': name }, caption,
    h('thead', {}, h('tr', {}, h('td', { class: 'corner' }), h('th', { scope: 'col', text: 'multiply-adds' }), h('th', { scope: 'col', text: 'µs per call' }))),
    h('tbody', {},
      h('tr', {}, h('th', { scope: 'row', text: 'with the cache' }), madds[0], times[0]),
      h('tr', {}, h('th', { scope: 'row', text: 'recomputing everything' }), madds[1], times[1])));
  return { table, caption, madds, times };
}

/** Mean µs per call of fn: over `calls` calls, or over as many as fit in `ms` milliseconds (at least 3). */
function timePerCall(fn, { calls = Infinity, ms = Infinity }) {
  const t0 = performance.now();
  let n = 0;
  while (n < calls && (n < 3 || performance.now() - t0 < ms)) { fn(); n++; }
  return ((performance.now() - t0) / n) * 1000;
}

export default kvCache;
