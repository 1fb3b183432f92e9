// Masks: causal, padding, both at once (AND), and a mask of the learner's own.
// Every number shown comes from the wasm core.

import {
  h, numberGrid, numberField, heatmap, maskGrid, refocusMaskCell, statusLine, fmt, fmtShape, figures, blockedFrom, redraw, keptChildren, oneBased, refusalText, subscripted, anyBlocked,
} from '../lesson-ui.js';
import { announcer, isEdit } from '../lesson-announce.js';
import { codec } from '../lesson-state.js';
import { keyLabel, queryLabel, zeros, emptyRows, causalBits } from './common.js';
import { slot, group, unused } from './markup.js';

export const TOKEN_DEFAULTS = [[12, 91, 33, 0, 0], [44, 17, 29, 81, 5]];

// The widget's presets show the three parts of this section separately.
const MASK_PARTS = {
  causal: ['causal-controls', 'causal-status', 'causal'],
  padding: ['padding-controls', 'padding', 'padding-weights', 'padding-alone-status', 'padding-status'],
  combined: ['combined', 'combined-shapes'],
  custom: ['custom', 'custom-weights', 'custom-status'],
};
const maskUnused = (keep) => unused(...Object.entries(MASK_PARTS).filter(([k]) => k !== keep).flatMap(([, names]) => names));
const causalBlocks = [
  slot('causal-controls', 'inputs', { cls: 'controls' }), slot('causal-status'),
  slot('causal', 'weights', { cls: 'result two-col' }),
];
const paddingBlocks = [
  slot('padding-controls', 'inputs', { cls: 'controls' }), slot('padding'),
  slot('padding-weights', 'weights', { cls: 'result two-col', label: 'Weights of both sequences under the padding mask' }),
  slot('padding-alone-status'), slot('padding-status'),
];
const combinedBlocks = [
  slot('combined', 'weights', { cls: 'result two-col', label: 'Weights of both sequences under causal AND padding' }),
  slot('combined-shapes'),
];
const customBlocks = [
  group('result two-col', slot('custom', 'inputs'), slot('custom-weights', 'weights')), slot('custom-status'),
];

export const masks = {
  id: 'masks',
  prefix: 'mask',
  title: 'Masks',
  body: `
<p>A mask says which keys each query may read, without changing any tensor’s size. On this page a mask is an <em>allowed</em> mask: 1 means the query may attend to that key. A blocked key’s score is replaced by −∞ <em>before</em> the softmax, so its weight comes out exactly 0 and the other weights still add up to 1. Masking after the softmax would be too late: the forbidden key would already have shaped the denominator.</p>
<p>In the pictures, a <span class="legend-blocked blocked">hatched cell</span> is blocked; in a map of weights it is also marked × in its corner, and in your own mask below it reads ✕. The causal and padding examples use equal scores (all queries and keys zero), so each of their rows simply spreads its weight evenly over the keys it is allowed to see. Your own mask, at the end, is applied to the scores of the 3×3 example instead.</p>

<h3>Causal: no peeking ahead</h3>
<p>A decoder generating text must not look at positions it has not produced yet, so query <em>i</em> may see keys 1…<em>i</em> only: a lower triangle. (Code counts positions from 0, so there the same rule reads “query position 2 may see keys 0, 1 and 2”: that is query 3 and keys 1 to 3 on this page.) Deleting the future keys instead would give every row a different length and ruin the rectangular tensors that make the computation fast.</p>
<div class="controls" data-slot="causal-controls"></div>
<div data-slot="causal-status"></div>
<div class="result two-col" data-slot="causal" data-link-scope></div>

<h3>Padding: ignore the filler</h3>
<p>Sequences in a batch have different lengths, so shorter ones are filled up with a padding id. Padding describes <em>keys</em> that must not be read, so the mask has shape (B, 1, 1, T): one row of keys per sequence, repeated over heads and queries. It blocks columns, not rows: a padded position still asks its own question, so the padded queries in the maps below still get rows of weights and an output. Those outputs mean nothing; they are set to zero (multiplied by a mask of the real queries) or left out of the loss. The same filler must not count in training either: when the targets are padded too, the loss skips those positions (PyTorch’s <code>ignore_index</code>, or a loss mask), or the model learns to predict padding.</p>
<div class="controls" data-slot="padding-controls"></div>
<div data-slot="padding"></div>
<p>On its own, padding hides the same keys from every query: each row of a sequence spreads its weight over that sequence’s real tokens.</p>
<div class="result two-col" data-slot="padding-weights"></div>
<div data-slot="padding-alone-status"></div>

<h3>Both rules at once: AND</h3>
<p>A key is visible only if every rule allows it, so the masks are combined with a logical AND. The causal mask, (1, 1, T, T), and the padding mask, (B, 1, 1, T), broadcast against each other into one mask with a row of keys per query and a copy per sequence, still shared by every head. The line under the maps gives its shape, and the shapes of the weights and of the context when the same mask serves two heads.</p>
<p>Try making a sequence start with the padding id (in the token ids above): its first query is then left with no key at all. A softmax over nothing but −∞ has no answer, so the core refuses with an error instead of quietly returning NaN. A sequence that is padding from start to end would leave <em>every</em> query without a key, so such sequences must be dropped from the batch (or never built) before attention runs.</p>
<div data-slot="padding-status"></div>
<div class="result two-col" data-slot="combined"></div>
<div data-slot="combined-shapes"></div>
<p class="aside" data-aside="mask-value"><strong>Why −∞ and not just a large negative number.</strong> e<sup>−∞</sup> is exactly 0, so a blocked key gets no weight at all. A large but finite negative score only makes its weight tiny, and the constant has to fit the number format: −1e9, common in float32 code, does not exist in float16 (whose largest magnitude is about 65504), so such code breaks under mixed precision. Some libraries fill blocked scores with the lowest finite value of the dtype instead (<code>torch.finfo(dtype).min</code>), so that a row with no allowed key still gives numbers rather than NaN. Such a row does not fail: its softmax spreads evenly over keys it was never allowed to see, so the output looks plausible and is wrong. That is why the core refuses a row with no allowed key, as above. A model that has to accept such rows needs a fallback designed on purpose, written down and tested, such as an output row of zeros, rather than whatever the fill value happens to produce.</p>

<h3>Your own mask</h3>
<p>Click or tap the cells (or, on a keyboard, Tab into the grid, move with the arrow keys and press Space) to allow ✓ or block ✕ each pair, applied to the 3×3 example<span data-ref="three-by-three"></span>. Block a whole row and watch the core flag it.</p>
<div class="result two-col" data-link-scope>
  <div data-slot="custom"></div>
  <div data-slot="custom-weights"></div>
</div>
<div data-slot="custom-status"></div>
<p class="aside">Checking one row is a good habit: its allowed weights add up to 1 and its blocked weights are exactly 0. Shapes alone cannot catch a mask bug: a tensor of the right size can still give weight to a future key or a padding token. Only the values can.</p>
`,
  dependsOn: ['ex'],
  presets: {
    masks: {
      title: 'Masks', result: 'mask.custom', seqLen: ['mask', 'ct'],
      blocks: [...causalBlocks, ...paddingBlocks, ...combinedBlocks, ...customBlocks],
    },
    causal: {
      title: 'The causal mask', result: 'mask.causal', seqLen: ['mask', 'ct'],
      blocks: [...causalBlocks, maskUnused('causal')],
    },
    padding: {
      title: 'The padding mask', result: 'mask.padding',
      blocks: [...paddingBlocks, maskUnused('padding')],
    },
    'custom-mask': {
      title: 'Your own mask', result: 'mask.custom',
      blocks: [...customBlocks, maskUnused('custom')],
    },
  },
  fields: [
    ['ct', codec.int(1, 8), () => 4],
    ['tokens', codec.matrix(() => 2, () => 5, { integer: true, min: 0, max: 99999 }), () => TOKEN_DEFAULTS.map((r) => r.slice())],
    ['pad', codec.int(0, 99999), () => 0],
    ['custom', codec.bits(() => 3, () => 3), () => causalBits(3).map((row) => row.map(() => true))],
  ],

  mount(ctx, st) {
    // Each part says its own result after an edit of its inputs.
    const commit = (part) => () => ctx.commit(this.prefix, { edited: part });
    const causal = commit('causal'), padding = commit('padding');
    ctx.slot(this.id, 'causal-controls').replaceChildren(numberField({
      label: 'Sequence length T', name: 'mask-ct', value: st.ct, integer: true, min: 1, max: 8, size: 'sm',
      onValue: (v) => { st.ct = v; causal(); },
    }));
    const tokens = numberGrid({ label: 'Token ids (2 sequences × 5 positions)', name: 'mask-tokens', matrix: st.tokens, integer: true, min: 0, max: 99999,
      rowLabel: (i) => `seq ${i + 1}`, colLabel: (j) => `pos ${j + 1}`, onChange: padding });
    // Under the grid, with the grid's own messages (empty, it takes no room):
    // a refusal of the token ids, whose message is far below (refusedNote).
    // As wide as the grid, never wider (grid-note): the padding id field beside it stays put.
    this.refused = h('p', { class: 'cell-msg grid-note', 'data-out': 'mask-refused' });
    tokens.querySelector('.grid-msgs').append(this.refused);
    ctx.slot(this.id, 'padding-controls').replaceChildren(
      tokens,
      numberField({ label: 'Padding id', name: 'mask-pad', value: st.pad, integer: true, min: 0, max: 99999, size: 'sm',
        onValue: (v) => { st.pad = v; padding(); } }),
    );
    // One announcer per part, beside its status line: a widget may show one part only.
    const node = ctx.node(this.id);
    this.said = { causal: announcer(node, 'mask-causal'), padding: announcer(node, 'mask-padding'), custom: announcer(node, 'mask-custom') };
    this.causalStatus = statusLine(this.said.causal);
    this.paddingAloneStatus = statusLine(this.said.padding); // padding on its own
    this.paddingStatus = statusLine(this.said.padding); // causal AND padding
    this.customStatus = statusLine(this.said.custom);
    // The padding lines are where the note's button leads: focused, not tabbed to.
    for (const line of [this.paddingAloneStatus, this.paddingStatus]) line.node.tabIndex = -1;
    ctx.slot(this.id, 'causal-status').replaceChildren(this.causalStatus.node, this.said.causal.node);
    ctx.slot(this.id, 'padding-alone-status').replaceChildren(this.paddingAloneStatus.node);
    ctx.slot(this.id, 'padding-status').replaceChildren(this.paddingStatus.node, this.said.padding.node);
    ctx.slot(this.id, 'custom-status').replaceChildren(this.customStatus.node, this.said.custom.node);
    // The prose names the 3×3 example's section only where that section is
    // shown (a package may leave it out): its defaults still define the example.
    const ref = node.querySelector('[data-ref="three-by-three"]');
    const example = ctx.sectionName('three-by-three');
    if (ref) ref.textContent = example ? ` of ${example}` : '';
    this.drawCustom(ctx, st);
  },

  drawCustom(ctx, st, focus) {
    const host = ctx.slot(this.id, 'custom');
    maskGrid(host, {
      name: 'mask-custom', rows: 3, cols: 3, get: (i, j) => st.custom[i][j], label: 'Custom mask: pressed means the query may attend to the key',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '✓' : '✕'), badRows: emptyRows(ctx.lab, st.custom), link: true,
      onToggle: (i, j) => {
        st.custom[i][j] = !st.custom[i][j];
        this.drawCustom(ctx, st, [i, j]);
        ctx.commit(this.prefix, { edited: 'custom', row: i });
      },
    });
    if (focus) refocusMaskCell(host, ...focus);
  },

  // Three parts, each redrawn only when its own inputs change (the custom
  // mask also reads the 3×3 example of another section).
  // The part the learner edited (detail.edited) says its result; a redraw
  // because the 3×3 example changed says nothing.
  update(ctx, st, detail) {
    const edited = isEdit(detail) ? detail : {};
    ctx.part(this, 'causal', [st.ct], () => this.drawCausal(ctx, st, edited.edited === 'causal'));
    ctx.part(this, 'padding', [st.tokens, st.pad], () => this.drawPadding(ctx, st, edited.edited === 'padding'));
    ctx.part(this, 'custom', [st.custom, ctx.states.ex], () => this.drawCustomResult(ctx, st, edited.edited === 'custom' ? edited.row : null));
  },

  drawCausal(ctx, st, edited) {
    // Causal: the helper's lower triangle, and equal scores spread over it.
    const cm = ctx.api.causalMask(st.ct);
    const causal = ctx.core(this.causalStatus, () => ctx.lab.sdpa(zeros([], st.ct), zeros([], st.ct), zeros([], st.ct), { mask: cm }),
      [ctx.slot(this.id, 'causal')]);
    if (!causal) return;
    ctx.publish(`${this.prefix}.causal`, causal);
    const [maskHost, weightHost] = figures(ctx.slot(this.id, 'causal'), [
      { key: 'mask', caption: `causalMask(${st.ct}): 1 = allowed. Shape ${fmtShape(cm.shape)}; against scores of shape (B, H, ${cm.shape.join(', ')}) it is read as ${fmtShape([1, 1, ...cm.shape])}, the same for every sequence and head` },
      { key: 'weights', caption: 'weights when every score is equal' }]);
    maskGrid(maskHost, { name: 'mask-causal', rows: st.ct, cols: st.ct, get: (i, j) => cm.data[i * st.ct + j],
      label: `Causal allowed mask, T = ${st.ct}`, rowLabel: queryLabel, colLabel: keyLabel, link: true });
    heatmap(weightHost, { name: 'mask-causal-weights', values: causal.weights.data, rows: st.ct, cols: st.ct, digits: 3,
      blocked: blockedFrom(ctx.lab.allowedPairs([st.ct, st.ct], { mask: cm })), rowLabel: queryLabel, colLabel: keyLabel,
      caption: 'Weights with equal scores under the causal mask', link: true });
    if (!edited) return;
    const T = st.ct, w = causal.weights.data;
    const last = Array.from(w.subarray((T - 1) * T, T * T), (x) => fmt(x, 3)).join(', ');
    this.said.causal.say(`Causal mask ${fmtShape(cm.shape)}: query 1 puts ${fmt(w[0], 3)} on key 1`
      + `${T > 1 ? `; query ${T} puts ${last} on keys 1 to ${T}` : ''}.`);
  },

  drawPadding(ctx, st, edited) {
    // Padding (always drawn for the current token ids), alone and with the causal mask, for both sequences.
    const padHost = ctx.slot(this.id, 'padding');
    const combinedHost = ctx.slot(this.id, 'combined');
    const shapesHost = ctx.slot(this.id, 'combined-shapes');
    const pm = ctx.api.paddingMask(st.tokens, st.pad);
    const real = (b, j) => pm.data[b * 5 + j] === 1;
    const [line, padGrid] = keptChildren(padHost, 2, () => [h('p', { class: 'readout' }), h('div')]);
    redraw(line, 'paddingMask(token ids, ', String(st.pad), ') has shape ',
      h('code', { 'data-out': 'mask-pshape', text: fmtShape(pm.shape) }),
      ': one row of keys per sequence, repeated for every head and every query.');
    maskGrid(padGrid, { name: 'mask-padding', rows: 2, cols: 5, get: (b, j) => real(b, j),
      label: `Padding allowed mask, shape ${fmtShape(pm.shape)}: 1 = real token`,
      rowLabel: (b) => `sequence ${b + 1}`, colLabel: keyLabel, text: (on) => (on ? '1' : '0') });
    const z = zeros([2, 1], 5);
    // This part shows sequences and no heads: the core's "batch 2, head 1, " reads "sequence 2, " here.
    // The refusal is kept for the note under the token ids.
    let refusal = null;
    const explain = (err) => {
      refusal = err;
      return refusalText(err.code, oneBased(err.message).replace(/batch (\d+), head 1, /, 'sequence $1, '));
    };
    // Which pairs are blocked comes from the core's own rule for the same options.
    const twoMaps = (host, name, what, weights, options) => {
      const pairs = ctx.lab.allowedPairs(weights.shape, options);
      // The one legend, under the second map, names the blocked look if either map has it.
      const keyBlocked = [0, 1].some((b) => anyBlocked(5, 5, blockedFrom(pairs, b)));
      figures(host, [0, 1].map((b) => ({ key: `seq${b}`, caption: `sequence ${b + 1}: ${what}` })))
        .forEach((mapHost, b) => heatmap(mapHost, { name: `${name}-${b}`, values: weights.data.subarray(b * 25, (b + 1) * 25), rows: 5, cols: 5, digits: 3, legend: b === 1, keyBlocked,
          blocked: blockedFrom(pairs, b), rowLabel: queryLabel, colLabel: keyLabel,
          caption: `Sequence ${b + 1}: weights under ${what}` }));
    };
    const padWeightsHost = ctx.slot(this.id, 'padding-weights');
    // A refusal of padding alone is said under its own maps; the combined
    // rule is then not asked, and its line below says nothing of its own.
    const alone = ctx.core(this.paddingAloneStatus, () => ctx.lab.sdpa(z, z, z, { mask: pm }), [padWeightsHost, combinedHost, shapesHost], { explain });
    if (!alone) {
      this.paddingStatus.clear();
      this.refusedNote(refusal, this.paddingAloneStatus.node);
      return;
    }
    ctx.publish(`${this.prefix}.padding`, alone);
    twoMaps(padWeightsHost, 'mask-padding-weights', 'padding', alone.weights, { mask: pm });
    // With the causal mask the core may refuse (a sequence that starts with padding leaves its
    // first query with no key): its message is shown and the last valid pictures stay.
    // The same rule asked of the core twice more: the combined mask itself,
    // (B, 1, T, T), and the weights when two heads share it.
    const [B, , , T] = pm.shape;
    const got = ctx.core(this.paddingStatus, () => {
      const r = ctx.lab.sdpa(z, z, z, { mask: pm, causal: true });
      const both = ctx.lab.allowedPairs([B, 1, T, T], { mask: pm, causal: true });
      // Two heads of d_head = 8, as in a real layer: the context keeps d_head.
      const z2 = { data: new Float32Array(B * 2 * T * 8), shape: [B, 2, T, 8] };
      const twoHeads = ctx.lab.sdpa(z2, z2, z2, { mask: pm, causal: true });
      return { r, combinedShape: both.shape, twoHeadShape: twoHeads.weights.shape, contextShape: twoHeads.output.shape };
    }, [combinedHost, shapesHost], { explain });
    this.refusedNote(got ? null : refusal, this.paddingStatus.node);
    if (!got) return;
    const out = got.r;
    ctx.publish(`${this.prefix}.combined`, out);
    twoMaps(combinedHost, 'mask-combined', 'causal AND padding', out.weights, { mask: pm, causal: true });
    const [shapeLine] = keptChildren(shapesHost, 1, () => [h('p', { class: 'readout' })]);
    redraw(shapeLine, 'Causal AND padding is one mask of shape ',
      h('code', { 'data-out': 'mask-cshape', text: fmtShape(got.combinedShape) }),
      ', that is (B, 1, T, T), where T = ', String(T), ' is the length of the token-id sequences (not the causal example’s T): a row of keys for every query of every sequence. With H = ', String(got.twoHeadShape[1]),
      ' heads of ', ...subscripted('d_head'), ' = ', String(got.contextShape[3]), ' the weights have shape ', h('code', { 'data-out': 'mask-wshape2', text: fmtShape(got.twoHeadShape) }),
      ', that is (B, H, T, T): each head reads the same mask. The context, weights × V, is ',
      h('code', { 'data-out': 'mask-context2', text: fmtShape(got.contextShape) }), ', that is ', ...subscripted('(B, H, T, d_head).'));
    if (!edited) return;
    // The padded keys of each sequence, as the mask grid above shows them (0 = padding).
    const padded = [0, 1].map((b) => {
      const keys = [0, 1, 2, 3, 4].filter((j) => !real(b, j)).map((j) => j + 1);
      return keys.length === 0 ? `sequence ${b + 1} has no padding`
        : `sequence ${b + 1} has padding at ${keys.length === 1 ? 'key' : 'keys'} ${keys.join(', ')}`;
    });
    this.said.padding.say(`Padding mask ${fmtShape(pm.shape)}: ${padded.join('; ')}. Causal AND padding: ${fmtShape(got.combinedShape)}.`);
  },

  /**
   * The core's refusal of the token ids (err, null when they are valid),
   * said in one line under the grid where they are typed: the message
   * itself is in `line`, far below, under the prose that explains it. The
   * note's button leads there without touching the address (which holds
   * the page's state).
   */
  refusedNote(err, line) {
    if (!err) {
      if (this.refused.firstChild) this.refused.replaceChildren();
      return;
    }
    const where = err.code === 'ALL_MASKED_ROW' && oneBased(err.message).match(/batch (\d+), head \d+, query (\d+)/);
    // A button, not a link: it moves within this state of the page, which
    // an address opened in a new tab would not have.
    const toMessage = h('button', { type: 'button', class: 'text-button', 'data-target': line.id, text: 'See the core’s message below' });
    toMessage.addEventListener('click', () => {
      line.scrollIntoView({ block: 'center' });
      line.focus({ preventScroll: true });
    });
    this.refused.replaceChildren(
      where ? `The core refused this example: query ${where[2]} of sequence ${where[1]} has no key it may see. ` : 'The core refused this example. ',
      toMessage, '.');
  },

  drawCustomResult(ctx, st, editedRow) {
    const ex = ctx.states.ex;
    const host = ctx.slot(this.id, 'custom-weights');
    // The 3×3 example is one sequence with one head: the core's "batch 1,
    // head 1" would name axes the learner never sees here.
    const explain = (err) => refusalText(err.code, oneBased(err.message).replaceAll('batch 1, head 1, ', ''));
    const out = ctx.core(this.customStatus, () => ctx.lab.sdpa(ex.q, ex.k, ex.v,
      { mask: st.custom }), [host], { explain });
    const edited = editedRow != null;
    if (!out) return;
    ctx.publish(`${this.prefix}.custom`, out);
    // Which pairs your mask blocks, by the core's rule (the mask is nested booleans).
    const blocked = blockedFrom(ctx.lab.allowedPairs([3, 3], { mask: st.custom }));
    const [mapHost] = figures(host, [{ key: 'weights', caption: 'weights of the 3×3 example under your mask' }]);
    heatmap(mapHost, { name: 'mask-custom-weights', values: out.weights.data, rows: 3, cols: 3, digits: 4,
      blocked, rowLabel: queryLabel, colLabel: keyLabel,
      caption: 'Weights of the 3×3 example under the custom mask', link: true });
    if (!edited) return;
    // The toggled query's row, as the map shows it: a blocked weight is exactly 0.
    const i = editedRow;
    const row = [0, 1, 2].map((j) => {
      const v = out.weights.data[i * 3 + j];
      return blocked(i, j) && v === 0 ? '0 (blocked)' : fmt(v, 4);
    });
    this.said.custom.say(`Query ${i + 1} under your mask: weights ${row.join(', ')}.`);
  },
};

export default masks;
