// Self- versus cross-attention through the core's multi-head module.
// Every number shown comes from the wasm core.

import { h, numberGrid, numberField, radios, valueTable, statusLine, fmt, fmtVec, fmtShape, blockedFrom, redraw, setText } from '../lesson-ui.js';
import { announcer, editedCell, EDITED, isEdit } from '../lesson-announce.js';
import { codec } from '../lesson-state.js';
import { dimLabel, resized, resizedKeeping, mhaCache, headHeatmaps } from './common.js';
import { slot } from './markup.js';

const CROSS_D = 4, CROSS_H = 2, CROSS_SEED = 3;
// The positions read as words of a toy translation, on the maps' axes: the
// target (queries) is French, the source (keys in cross-attention) English.
const TARGET_WORDS = ['le', 'chat', 'noir', 'a', 'vu', 'le', 'petit', 'chien'];
const SOURCE_WORDS = ['the', 'black', 'cat', 'saw', 'the', 'little', 'dog', 'in', 'the', 'park'];
const tgtFill = (i, j) => (((i * 7 + j * 3 + 1) % 9) - 4) / 4;
const srcFill = (i, j) => (((i * 5 + j * 2 + 3) % 9) - 4) / 4;
const padFill = (tk) => (j) => !(tk >= 4 && j >= tk - 2); // the last two source positions are padding

export const selfCross = {
  id: 'self-cross',
  prefix: 'cross',
  title: 'Self-attention and cross-attention',
  body: `
<p>The formula is the same in both; only the origin of the keys and values changes.</p>
<div class="grid-wrap">
<table class="compare stack-narrow">
  <caption>Where Q, K and V come from</caption>
  <thead><tr><th scope="col">Kind</th><th scope="col">Queries from</th><th scope="col">Keys and values from</th><th scope="col">Score shape (B batch, H heads)</th></tr></thead>
  <tbody>
    <tr><th scope="row">Self-attention</th><td data-label="Queries from">the sequence itself</td><td data-label="Keys and values from">the same sequence</td><td data-label="Score shape (B batch, H heads)"><span class="keep">(B, H, T, T)</span></td></tr>
    <tr><th scope="row">Cross-attention</th><td data-label="Queries from">the target (decoder) states</td><td data-label="Keys and values from">the source (encoder) states</td><td data-label="Score shape (B batch, H heads)"><span class="keep">(B, H, T<sub>q</sub>, T<sub>k</sub>)</span></td></tr>
  </tbody>
</table>
</div>
<p>Where each is used: an encoder layer lets every position of its input read every other, so its self-attention has no causal mask and its weight map can be dense. A decoder layer’s self-attention adds the causal mask, since a position must not read tokens not yet generated. Cross-attention joins two sequences: a translation’s output reading its source sentence, a decoder reading retrieved documents, text reading the patches of an image.</p>
<p>In self-attention T<sub>q</sub> = T<sub>k</sub>, which hides mistakes that mix up the two lengths. Testing with 4 target positions and 7 source positions exposes them: the weights must be (…, 4, 7), the output must have 4 rows, and the source padding mask must have length 7, not 4. Below, a small multi-head module (d<sub>model</sub> = 4, two heads, fixed seeded weights) runs on the states you edit; the starting values are just a repeating pattern.</p>
<p><strong>Name the two inputs by their roles.</strong> A function that takes one <code>x</code> and projects queries, keys and values from it is self-attention, whatever it is called. A cross-attention function takes two sequences under names that say which is which, such as <code>query_states</code> (the sequence that asks: here the target) and <code>memory_states</code> (the sequence that is read: here the source). Q comes from the first; K and V from the second, whose length may differ. With two anonymous arguments it is easy to hand over the target where the source belongs, and a self-attention test, where both are the same, would never notice. This page’s core takes them the same way: <code>mha.forward(query, keyValue)</code>, the queries’ states first, then the states they read.</p>
<p>To keep the maps readable, the positions carry the words of a toy translation: the target (the queries) is French, the source (the keys and values of cross-attention) English. The numbers are still the made-up states below, not real embeddings.</p>
<div class="controls" data-slot="controls"></div>
<div class="inputs" data-slot="inputs"></div>
<div data-slot="status"></div>
<div data-slot="shapes"></div>
<p>Point at or tap a weight (or move through a map with the arrow keys) to light up its target row, its source row and padding switch, and the output row it feeds. In self-attention the one sequence gives both: the weight lights its query’s row and its key’s row of the target states.</p>
<div class="result heads" data-slot="weights"></div>
<div data-slot="output"></div>
`,
  presets: {
    cross: {
      title: 'Self-attention and cross-attention', result: 'cross.main', seqLen: ['cross', 'tq'], aliases: ['self-cross'],
      blocks: [
        slot('controls', 'inputs', { cls: 'controls' }), slot('inputs', 'inputs', { cls: 'inputs' }), slot('status'),
        slot('shapes'), slot('weights', 'weights', { cls: 'result heads' }), slot('output', 'output'),
      ],
    },
  },
  fields: [
    ['mode', codec.choice(['self', 'cross']), () => 'cross'],
    ['tq', codec.int(1, 8), () => 4],
    ['tk', codec.int(1, 10), () => 7],
    ['tgt', codec.matrix((st) => st.tq, () => CROSS_D), (st) => resized(null, st.tq, CROSS_D, tgtFill)],
    ['src', codec.matrix((st) => st.tk, () => CROSS_D), (st) => resized(null, st.tk, CROSS_D, srcFill)],
    ['pad', codec.bits(() => 1, (st) => st.tk), (st) => [Array.from({ length: st.tk }, (_, j) => padFill(st.tk)(j))]],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    this.mha?.free(); // mounted again (a new state): give back the old module
    this.mha = mhaCache();
    // What a smaller T_q or T_k cuts off, kept until the size grows again.
    this.kept = { tgt: {}, src: {}, pad: {} };
    ctx.slot(this.id, 'controls').replaceChildren(
      radios({ legend: 'Where keys and values come from', name: 'cross-mode', value: st.mode,
        options: [['self', 'Self-attention: the same sequence'], ['cross', 'Cross-attention: a second (source) sequence']],
        onValue: (v) => { st.mode = v; this.drawInputs(ctx, st); commit(); } }),
      h('div', { class: 'controls-row' },
        this.tqField = numberField({ label: 'T_q (target positions)', name: 'cross-tq', value: st.tq, integer: true, min: 1, max: 8, size: 'sm',
          onValue: (v) => { st.tq = v; st.tgt = resizedKeeping(this.kept.tgt, st.tgt, v, CROSS_D, tgtFill); this.drawInputs(ctx, st); commit(); } }),
        this.tkField = numberField({ label: 'T_k (source positions)', name: 'cross-tk', value: st.tk, integer: true, min: 1, max: 10, size: 'sm',
          onValue: (v) => {
            st.tk = v;
            st.src = resizedKeeping(this.kept.src, st.src, v, CROSS_D, srcFill);
            st.pad = [resizedPadding(this.kept.pad, st.pad[0], v)];
            this.drawInputs(ctx, st);
            commit();
          } })),
    );
    this.said = announcer(ctx.node(this.id), 'self-cross');
    this.status = statusLine(this.said);
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
    this.drawInputs(ctx, st);
  },

  drawInputs(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    const cross = st.mode === 'cross';
    // Self-attention has one sequence, so one length: T_k is T_q.
    this.tkField.hidden = !cross;
    setText(this.tqField.querySelector('label'), cross ? 'T_q (target positions)' : 'T (positions; T_q = T_k)');
    // A part is built again only when what it shows changed: a new length
    // gives a new matrix, the mode changes the target rows' links. So a T_k
    // edit leaves the target grid as it is, its focus and marks with it.
    const kept = this.inputParts || new Map();
    this.inputParts = new Map();
    const part = (name, key, make) => {
      const old = kept.get(name);
      const next = old && old.key.every((k, n) => k === key[n]) ? old : { key, node: make() };
      this.inputParts.set(name, next);
      return next.node;
    };
    // Linked highlighting: a target row is a query; in self-attention it is also a key.
    const parts = [part('tgt', [st.tgt, cross], () => numberGrid({ label: `Target states t (${st.tq} × d_model = ${CROSS_D})`, name: 'cross-tgt', matrix: st.tgt,
      rowLabel: (i) => `t${i + 1}`, colLabel: dimLabel, onChange: commit, link: cross ? 'q' : 'pos' }))];
    if (cross) {
      parts.push(part('src', [st.src], () => numberGrid({ label: `Source states s (${st.tk} × d_model = ${CROSS_D})`, name: 'cross-src', matrix: st.src,
        rowLabel: (i) => `s${i + 1}`, colLabel: dimLabel, onChange: commit, link: 'k' })));
      // A click on a switch: the learner's pattern is the one shown now, and
      // the positions a smaller T_k cut off are forgotten (resizedPadding).
      parts.push(part('pad', [st.pad], () => padSwitches(st, (j) => {
        this.kept.pad = {};
        ctx.commit(this.prefix, { edited: true, pad: j });
      })));
    }
    const host = ctx.slot(this.id, 'inputs');
    if (parts.length !== host.children.length || parts.some((node, k) => host.children[k] !== node)) host.replaceChildren(...parts);
  },

  update(ctx, st, detail) {
    const cross = st.mode === 'cross';
    const res = ctx.core(this.status, () => {
      const mha = this.mha(ctx.lab, { dModel: CROSS_D, numHeads: CROSS_H, seed: CROSS_SEED });
      const query = { data: st.tgt.flat(), shape: [1, st.tq, CROSS_D] };
      if (!cross) return mha.forward(query);
      const source = { data: st.src.flat(), shape: [1, st.tk, CROSS_D] };
      return mha.forward(query, source, { keyPaddingMask: { data: st.pad[0].map(Number), shape: [1, st.tk] } });
    }, ['shapes', 'weights', 'output'].map((name) => ctx.slot(this.id, name)));
    if (!res) return;
    ctx.publish(`${this.prefix}.main`, res);
    const Tk = res.weights.shape[3];
    headHeatmaps(ctx.slot(this.id, 'weights'), {
      weights: res.weights, name: 'cross-weights',
      blocked: cross ? blockedFrom(ctx.lab.allowedPairs([1, 1, st.tq, st.tk], { keyPaddingMask: { data: st.pad[0].map(Number), shape: [1, st.tk] } })) : null,
      queryLabel: (i) => `t${i + 1} ${TARGET_WORDS[i]}`,
      // A padding position is filler, not a word: it is named as the switch names it.
      keyLabel: (j) => (!cross ? `t${j + 1} ${TARGET_WORDS[j]}` : st.pad[0][j] ? `s${j + 1} ${SOURCE_WORDS[j]}` : `s${j + 1} pad`),
      link: true,
    });
    redraw(ctx.slot(this.id, 'shapes'), h('p', { class: 'readout' },
      'Queries ', h('code', { text: fmtShape([1, st.tq, CROSS_D]) }),
      cross ? ' read keys and values from the source ' : ' read keys and values from themselves',
      cross ? h('code', { text: fmtShape([1, st.tk, CROSS_D]) }) : null,
      ': the weights are ', h('code', { 'data-out': 'cross-wshape', text: fmtShape(res.weights.shape) }),
      ` (batch, heads, T_q = ${res.weights.shape[2]}, T_k = ${Tk}) and the output is `, h('code', { 'data-out': 'cross-oshape', text: fmtShape(res.output.shape) }),
      '. The output always has one row per query.'));
    valueTable(ctx.slot(this.id, 'output'), {
      name: 'cross-output', values: res.output.data, rows: st.tq, cols: CROSS_D, digits: 3,
      rowLabel: (i) => `t${i + 1}`, colLabel: dimLabel, caption: 'Output (one row per target position)', link: 'q',
    });
    if (!isEdit(detail)) return;
    // An edited target row is said as its output row; a padding switch as
    // what it changed, the weights the position now gets and the first
    // output row; any other edit (a source state, a length, the mode) as the
    // shapes and the first output row.
    const row = (i) => `t${i + 1} ${fmtVec(res.output.data.subarray(i * CROSS_D, (i + 1) * CROSS_D), 3)}`;
    const cell = editedCell(ctx.root);
    if (cell?.grid === 'cross-tgt' && cell.row < st.tq) this.said.say(`Output row ${row(cell.row)}.`);
    else if (cross && detail.pad !== undefined) this.said.say(`${switchedText(res.weights, detail.pad, st.pad[0][detail.pad])}; output row ${row(0)}.`);
    else this.said.say(`Weights ${fmtShape(res.weights.shape)}, output ${fmtShape(res.output.shape)}; output row ${row(0)}.`);
  },
};

/**
 * The padding switches (true = a real token) for a new T_k. A smaller T_k
 * cuts positions off the end; they are kept in `memory` (an object of the
 * section's, {} at mount and after a click on a switch) and come back when
 * T_k grows again, so typing 10, which passes through 1, keeps the
 * learner's switches. Positions beyond those kept are real tokens, put in
 * before the run of padding that ends the source: padding stays at the end,
 * where a padded sequence has it ("the black cat … in pad pad" for T_k = 10,
 * not "… pad pad in the park").
 */
function resizedPadding(memory, bits, tk) {
  const known = memory.bits = bits.concat((memory.bits || []).slice(bits.length));
  if (tk <= known.length) return known.slice(0, tk);
  let end = known.length; // where the trailing padding starts
  while (end > 0 && !known[end - 1]) end--;
  return [...known.slice(0, end), ...Array(tk - known.length).fill(true), ...known.slice(end)];
}

/**
 * What a click on source position j's switch did, with the weights the core
 * now gives that position over all heads and targets (weights (1, H, Tq, Tk)).
 */
function switchedText(weights, j, real) {
  const [, H, Tq, Tk] = weights.shape;
  const got = [];
  for (let n = 0; n < H * Tq; n++) got.push(weights.data[n * Tk + j]);
  const [low, high] = [Math.min(...got), Math.max(...got)];
  const shown = (w) => (w === 0 ? '0' : fmt(w, 2)); // as the maps show it
  const given = shown(low) === shown(high) ? `every target gives it weight ${shown(low)}` : `the targets give it weights ${shown(low)} to ${shown(high)}`;
  return real ? `s${j + 1} is a real token again: ${given}` : `s${j + 1} is now padding: ${given}`;
}

/**
 * The source's padding switches, one per position: each is named for what
 * pressing it means, "s5 pad", and keeps that name; pressed, the position is
 * padding. Its text shows the same to the eye: "s5 pad" when padding, "s5"
 * when a real token (a name that holds every text it shows, as speech input
 * needs). A click switches one in place and calls onToggle(j).
 */
function padSwitches(st, onToggle) {
  const group = h('div', { class: 'pad-row', role: 'group', 'aria-label': 'Source positions: pressed means padding, not pressed means a real token', 'data-mask': 'cross-pad' });
  const show = (btn, real, j) => {
    btn.classList.toggle('allowed', real);
    btn.classList.toggle('blocked', !real);
    btn.setAttribute('aria-pressed', real ? 'false' : 'true');
    btn.textContent = real ? `s${j + 1}` : `s${j + 1} pad`;
  };
  st.pad[0].forEach((real, j) => {
    const btn = h('button', { type: 'button', class: 'mask-cell', 'data-col': j, 'data-link-k': j, 'aria-label': `s${j + 1} pad` });
    show(btn, real, j);
    btn.addEventListener('click', () => {
      st.pad[0][j] = !st.pad[0][j];
      show(btn, st.pad[0][j], j);
      onToggle(j);
    });
    group.append(btn);
  });
  return h('div', { class: 'pad-toggles' }, h('p', { class: 'sub-label', text: 'Source padding (click to switch a position between token and padding)' }), group);
}

export default selfCross;
