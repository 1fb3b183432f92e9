// The four numbers the core measures on every call, on an example of the learner's choice.
// Every number shown comes from the wasm core.

import { h, numberField, select, heatmap, statusLine, fmt, fmtSci, figures, blockedFrom, redraw, setText, refusalText } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { keyLabel, queryLabel, zeros } from './common.js';
import { slot, group } from './markup.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

const OBS_SOURCES = ['plain', 'causal', 'custom', 'padding'];
/** Largest row-sum error still read as float rounding; a NaN error is above it. */
const ROW_SUM_TOLERANCE = 1e-5;

/**
 * Where the masks of the custom and padded examples are set: " of section 5",
 * or '' where the masks section is not shown (a package or a widget without
 * it; its state still defines them).
 */
const masksRef = (ctx) => {
  const name = ctx.sectionName('masks');
  return name ? ` of ${name}` : '';
};

/** The examples to choose from: [value, label]. */
const sourceOptions = (ctx) => [
  ['plain', 'The 3×3 example, no mask'],
  ['causal', 'The 3×3 example, causal'],
  ['custom', `The 3×3 example with the custom mask${masksRef(ctx)}`],
  ['padding', `The two padded sequences${masksRef(ctx)}, causal AND padding`],
];

const MULT_HINT = 'Scales the 3×3 example’s queries: larger queries, larger scores.';
const MULT_UNUSED = 'Not used by the two padded sequences: their queries are all zeros, so scaling them changes nothing.';

/**
 * A row left with no key, in the chosen example's words and with where to
 * change it; null for any other refusal (the core's own words then).
 */
function refusal(err, src, ctx) {
  const at = /batch (\d+), head \d+, query (\d+)/.exec(err.message);
  if (err.code !== 'ALL_MASKED_ROW' || !at || (src !== 'custom' && src !== 'padding')) return null;
  const b = Number(at[1]) + 1, q = Number(at[2]) + 1;
  const masks = ctx.sectionName('masks');
  if (src === 'custom') {
    return refusalText(err.code, `Query row has no allowed key (query ${q}): every key of query ${q} is blocked by the custom mask${masksRef(ctx)}`
      + ` — ${masks ? 'allow one there, or ' : ''}choose another example`);
  }
  // Under causal AND padding, query q sees keys 1 to q: all of them are padding.
  const keys = q === 1 ? 'key 1 only, and it is padding' : `keys 1 to ${q}, and all are padding`;
  return refusalText(err.code, `Query row has no allowed key (sequence ${b}, query ${q}): under causal AND padding query ${q} sees ${keys}`
    + ` — ${masks ? `change the token ids of sequence ${b} in ${masks}, or ` : ''}choose another example`);
}

/** A largest weight at or above this makes a row one-hot in all but name. */
const ONE_HOT = 0.99;

/**
 * The row with the largest single weight among rows that may attend to more
 * than one key: { row, weight }, or null when no row has a choice.
 * weights and allowed are flat, rows of Tk keys.
 */
function peakedRow(weights, allowed, Tk) {
  let peak = null;
  for (let row = 0; row * Tk < weights.length; row++) {
    const top = rowChoice(weights, allowed, row, Tk);
    if (top.keys > 1 && (peak === null || top.weight > peak.weight)) peak = { row, weight: top.weight };
  }
  return peak;
}

/** How many keys row `row` may see, and its largest weight on one of them. */
function rowChoice(weights, allowed, row, Tk) {
  let keys = 0, weight = 0;
  for (let j = row * Tk; j < (row + 1) * Tk; j++) {
    if (!allowed[j]) continue;
    keys++;
    weight = Math.max(weight, weights[j]);
  }
  return { keys, weight };
}

/**
 * The rows among the first Tq (the map on the page) that may see one key
 * only: their weight 1 on it is forced, not a sign of large scores. Said
 * beside the peak so that the note does not contradict the map.
 */
function forcedNote(weights, allowed, Tq, Tk) {
  const rows = [];
  for (let i = 0; i < Tq; i++) if (rowChoice(weights, allowed, i, Tk).keys === 1) rows.push(i + 1);
  if (!rows.length) return '';
  const names = rows.length === 1 ? `query ${rows[0]} sees` : `queries ${rows.slice(0, -1).join(', ')} and ${rows.at(-1)} see`;
  return ` (${names} only one key, so ${rows.length === 1 ? 'its' : 'their'} weight of 1 there is forced)`;
}

export const observability = {
  id: 'observability',
  prefix: 'obs',
  title: 'Watching the invariants',
  body: `
<p>A broken attention layer often still returns tensors of the right shape, and the loss curve may not tell you. Four numbers, measured by the core on every call, catch most mistakes while you build one. They are meant for development and tests rather than for every step of a production run.</p>
<p class="aside"><strong>Start from synthetic inputs.</strong> Before a new layer meets real embeddings, give it inputs whose right answer you can read at a glance: keys that are rows of the identity, values whose columns are easy to tell apart, a sequence short enough to print whole. The 3×3 example, as it starts, is such an input: its first two keys are rows of the identity, and its values are (10, 0), (0, 10) and (5, 5). On inputs like these, a query that should read only earlier positions and puts weight on a later one points at the mask or the softmax, not at the data.</p>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<div class="result obs">
  <div data-slot="weights"></div>
  <div data-slot="stats"></div>
</div>
`,
  dependsOn: ['ex', 'mask'],
  presets: {
    observability: {
      title: 'Watching the invariants', result: 'obs.main',
      blocks: [
        slot('controls', 'inputs', { cls: 'controls' }), slot('status'),
        group('result obs', slot('weights', 'weights'), slot('stats', 'checks')),
      ],
    },
  },
  fields: [
    ['src', codec.choice(OBS_SOURCES), () => 'causal'],
    ['mult', codec.num(-1000, 1000), () => 1],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    this.mult = numberField({ label: 'Multiply Q by', name: 'obs-mult', value: st.mult, min: -1000, max: 1000, size: 'sm',
      hint: MULT_HINT, onValue: (v) => { st.mult = v; commit(); } });
    ctx.slot(this.id, 'controls').replaceChildren(
      select({ label: 'Example', name: 'obs-src', value: st.src, options: sourceOptions(ctx),
        onValue: (v) => { st.src = v; this.showMode(st); ctx.commit(this.prefix, { edited: 'src' }); } }),
      this.mult,
    );
    this.showMode(st);
    this.said = announcer(ctx.node(this.id), 'observability');
    this.status = statusLine(this.said);
    // An edit's result (the four numbers, with the note on the largest
    // score) is said once the edits pause.
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
  },

  /** The multiplier scales the 3×3 example's queries: with the padded sequences it is disabled, and its hint says why. */
  showMode(st) {
    const unused = st.src === 'padding';
    this.mult.querySelector('input').disabled = unused;
    setText(this.mult.querySelector('.hint'), unused ? MULT_UNUSED : MULT_HINT);
  },

  // Redrawn only when what the chosen example reads has changed.
  update(ctx, st, detail) {
    const mk = ctx.states.mask;
    const inputs = [st, ctx.states.ex, st.src === 'custom' ? mk.custom : null, st.src === 'padding' ? [mk.tokens, mk.pad] : null];
    ctx.part(this, 'example', inputs, () => this.draw(ctx, st, isEdit(detail) ? detail : null));
  },

  /** edited: the detail of a learner's edit of this section, or null. */
  draw(ctx, st, edited) {
    const ex = ctx.states.ex;
    const mk = ctx.states.mask;
    const host = ctx.slot(this.id, 'stats');
    let opts = {}; // the example's rule, kept for its heatmap
    const res = ctx.core(this.status, () => {
      if (st.src === 'padding') {
        const z = zeros([2, 1], 5);
        opts = { mask: ctx.api.paddingMask(mk.tokens, mk.pad), causal: true };
        return ctx.lab.sdpa(z, z, z, opts);
      }
      const q = ex.q.map((row) => row.map((x) => x * st.mult));
      if (st.src === 'causal') opts.causal = true;
      if (st.src === 'custom') opts.mask = mk.custom;
      return ctx.lab.sdpa(q, ex.k, ex.v, opts);
    }, [host, ctx.slot(this.id, 'weights')], { explain: (err) => refusal(err, st.src, ctx) });
    if (!res) return;
    ctx.publish(`${this.prefix}.main`, res);
    const s = res.stats;
    // What large scores do is what the map shows: a row whose largest weight
    // is near 1 is one-hot in all but name. Rows with a single allowed key
    // always put 1 on it, so only rows that have a choice are read.
    const [Tq, Tk] = res.weights.shape.slice(-2);
    const pairs = ctx.lab.allowedPairs(res.weights.shape, opts);
    // Only the rows the map shows are read (sequence 1 of the padded example),
    // so that the note describes the picture beside it.
    const shown = Tq * Tk;
    const peak = peakedRow(res.weights.data.subarray(0, shown), pairs.data.subarray(0, shown), Tk);
    const oneHot = peak !== null && peak.weight >= ONE_HOT;
    const where = st.src === 'padding' ? 'in sequence 1 (the map), ' : '';
    const peakText = where + (peak === null ? 'no query has more than one key to choose from.'
      : oneHot ? `${queryLabel(peak.row % Tq)} puts ${fmt(peak.weight, 3)} of its weight on one key, so the softmax is close to one-hot and its gradients are tiny.`
        : `no query that can choose among several keys puts more than ${fmt(peak.weight, 3)} on one key${forcedNote(res.weights.data, pairs.data, Tq, Tk)}.`);
    const rows = [
      ['max |score| before softmax', fmt(s.maxAbsScore, 3), 'obs-maxscore',
        `${oneHot ? 'Large: ' : 'Moderate: the softmax stays smooth; '}${peakText}`],
      ['fraction of logits masked', `${fmt(s.maskedFraction, 3)} (${fmt(100 * s.maskedFraction, 1)}\u00a0%)`, 'obs-masked',
        'Blocked query–key pairs over all pairs.'],
      ['max row-sum error', fmtSci(s.maxRowSumError), 'obs-rowsum',
        s.maxRowSumError < ROW_SUM_TOLERANCE ? 'Every row of weights adds up to 1 (up to float rounding).' : 'Some row does not add up to 1: the softmax ran over the wrong axis?'],
      ['max weight on a forbidden key', fmtSci(s.maxForbiddenWeight), 'obs-forbidden',
        s.maxForbiddenWeight === 0 ? 'Exactly 0: nothing leaks past the mask.' : 'Not 0: a blocked key is being read.'],
    ];
    // The weights the numbers describe (the first sequence for the padded example).
    const [mapHost] = figures(ctx.slot(this.id, 'weights'), [
      { key: 'weights', caption: st.src === 'padding' ? 'weights of sequence 1' : 'weights of the chosen example' }]);
    const blockedAt = opts.mask || opts.causal ? blockedFrom(pairs) : null;
    heatmap(mapHost, { name: 'obs-weights', values: res.weights.data.subarray(0, Tq * Tk), rows: Tq, cols: Tk, digits: 3,
      blocked: blockedAt, rowLabel: queryLabel, colLabel: keyLabel, caption: 'Weights of the chosen example' });
    // The four numbers, kept by redraw() from one edit to the next. They are
    // not live (a typed multiplier changes them at every keystroke): an edit
    // of this section says them once the edits pause; a redraw because the
    // 3×3 example or a mask of the masks section changed says nothing.
    redraw(host, h('dl', { class: 'stats' }, rows.map(([name, value, key, note]) => h('div', { class: 'stat' },
      h('dt', { text: name }), h('dd', {}, h('strong', { 'data-out': key, text: value }), h('span', { class: 'hint', text: note }))))));
    if (!edited) return;
    const [[, score, , scoreNote], ...rest] = rows;
    // A new example is said by its name and what it shows, in a sentence
    // short enough to hear at each step through the list: the numbers are in
    // the table. A new multiplier says the four numbers.
    if (edited.edited === 'src') {
      const name = sourceOptions(ctx).find(([value]) => value === st.src)[1];
      const finding = !(s.maxRowSumError < ROW_SUM_TOLERANCE) ? `some row does not add up to 1 (max row-sum error ${fmtSci(s.maxRowSumError)})`
        : s.maxForbiddenWeight !== 0 ? `a blocked key is being read (max weight on a forbidden key ${fmtSci(s.maxForbiddenWeight)})`
          : s.maskedFraction > 0 ? `${fmt(100 * s.maskedFraction, 1)}\u00a0% of the query–key pairs are blocked, and the weight on them is exactly 0: nothing leaks past the mask`
            : `${st.src === 'plain' ? '' : 'the mask blocks no pair; '}max |score| before softmax ${score}, ${oneHot ? 'large: the softmax is close to one-hot' : 'moderate: the softmax stays smooth'}`;
      this.said.say(`${name}: ${finding}.`);
      return;
    }
    this.said.say(`Max |score| before softmax ${score}. ${scoreNote} ${rest.map(([name, value]) => `${name[0].toUpperCase()}${name.slice(1)}: ${value}.`).join(' ')}`);
  },
};

export default observability;
