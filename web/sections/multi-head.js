// Multi-head attention on a toy one-hot embedding of token ids.
// Every number shown comes from the wasm core.

import { h, numberGrid, numberField, checkbox, valueTable, statusLine, fmtShape, blockedFrom } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { resized, mhaCache, headHeatmaps, explainHeads } from './common.js';
import { slot, more } from './markup.js';

const TOKEN_FILL = [3, 1, 4, 1, 5, 9, 2, 6];

/** The toy embedding: token id i becomes a vector whose only non-zero entry, `size`, is in channel i mod d_model. */
export function oneHot(tokens, dModel, size) {
  const data = new Float32Array(tokens.length * dModel);
  tokens.forEach((id, t) => { data[t * dModel + (id % dModel)] = size; });
  return { data, shape: [1, tokens.length, dModel] };
}

export const multiHead = {
  id: 'multi-head',
  prefix: 'mha',
  title: 'Multi-head attention',
  body: `
<p>Several heads do not each get a full copy of the model width. The width is <em>split</em>: with d<sub>model</sub> = 512, going from 8 to 16 heads shrinks each head from 64 to 32 numbers. Each head has its own slice of the projections and its own softmax, so heads can specialise; the output projection then lets their results interact again.</p>
<p>Here d<sub>model</sub> = 32 and H = 4, with weights drawn from a seed. As a toy embedding, token id <em>i</em> becomes a vector of zeros except for one entry, the embedding size <em>s</em>, in channel <em>i</em> mod d<sub>model</sub>. A larger <em>s</em> gives larger scores and sharper maps. At the start, tokens 2 and 4 are both id 1, so without the causal mask their rows are identical in every head; with it, they differ.</p>
<div class="controls" data-slot="controls"></div>
<div class="inputs" data-slot="tokens"></div>
<div data-slot="status"></div>
<div data-slot="summary"></div>
<div class="result heads" data-slot="weights"></div>
<details class="more" data-disclosure="mha-output">
  <summary>Show the output (T × d<sub>model</sub>)</summary>
  <div data-slot="output"></div>
</details>
<p class="aside"><strong>Reading attention maps.</strong> A bright cell says that this head, at this layer, blended in a lot of that position’s value. That is handy for checking masks and row sums. It does not prove that the position caused the final prediction: other heads, later layers, MLPs and residual paths can change or override it. To claim an explanation, test it with ablations or other interventions.</p>
`,
  presets: {
    'multi-head': {
      title: 'Multi-head attention', result: 'mha.main', heads: ['mha', 'heads'], dModel: ['mha', 'dmodel'], seqLen: ['mha', 't'],
      blocks: [
        slot('controls', 'inputs', { cls: 'controls' }), slot('tokens', 'inputs', { cls: 'inputs' }), slot('status'),
        slot('summary'), slot('weights', 'weights', { cls: 'result heads' }),
        more('Show the output (T × d_model)', 'output', slot('output', 'output')),
      ],
    },
  },
  fields: [
    ['dmodel', codec.int(1, 64), () => 32],
    ['heads', codec.int(1, 16), () => 4],
    ['t', codec.int(1, 8), () => 5],
    ['tokens', codec.matrix(() => 1, (st) => st.t, { integer: true, min: 0, max: 9999 }),
      (st) => [Array.from({ length: st.t }, (_, j) => TOKEN_FILL[j % TOKEN_FILL.length])]],
    ['size', codec.num(0, 100), () => 8],
    ['causal', codec.bool(), () => false],
    ['seed', codec.int(0, 999999), () => 7],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    this.mha?.free(); // mounted again (a new state): give back the old module
    this.mha = mhaCache();
    const seedField = numberField({ label: 'Weight seed', name: 'mha-seed', value: st.seed, integer: true, min: 0, max: 999999, size: 'sm',
      onValue: (v) => { st.seed = v; commit(); } });
    const draw = h('button', { type: 'button', class: 'action', 'data-action': 'mha-draw', text: 'Draw new weights' });
    draw.addEventListener('click', () => {
      st.seed = (st.seed + 1) % 1000000;
      seedField.setValue(st.seed);
      commit();
    });
    ctx.slot(this.id, 'controls').replaceChildren(
      h('div', { class: 'controls-row' },
        numberField({ label: 'd_model', name: 'mha-dmodel', value: st.dmodel, integer: true, min: 1, max: 64, size: 'sm',
          onValue: (v) => { st.dmodel = v; commit(); } }),
        numberField({ label: 'Heads H', name: 'mha-heads', value: st.heads, integer: true, min: 1, max: 16, size: 'sm',
          onValue: (v) => { st.heads = v; commit(); } }),
        numberField({ label: 'Positions T', name: 'mha-t', value: st.t, integer: true, min: 1, max: 8, size: 'sm',
          onValue: (v) => {
            st.t = v;
            st.tokens = resized(st.tokens, 1, v, (i, j) => TOKEN_FILL[j % TOKEN_FILL.length]);
            this.drawTokens(ctx, st);
            commit();
          } }),
        numberField({ label: 'Embedding size s', name: 'mha-size', value: st.size, min: 0, max: 100, size: 'sm',
          onValue: (v) => { st.size = v; commit(); } }),
        seedField, draw),
      checkbox({ label: 'Causal: each position sees only itself and earlier ones', name: 'mha-causal', checked: st.causal,
        onToggle: (on) => { st.causal = on; commit(); } }),
    );
    this.status = statusLine();
    ctx.slot(this.id, 'status').replaceChildren(this.status.node);
    this.drawTokens(ctx, st);
  },

  drawTokens(ctx, st) {
    ctx.slot(this.id, 'tokens').replaceChildren(numberGrid({
      label: 'Token ids', name: 'mha-tokens', matrix: st.tokens, integer: true, min: 0, max: 9999,
      colLabel: (j) => `t${j + 1}`, onChange: () => ctx.commit(this.prefix),
    }));
  },

  update(ctx, st) {
    const res = ctx.core(this.status, () => {
      const mha = this.mha(ctx.lab, { dModel: st.dmodel, numHeads: st.heads, seed: st.seed });
      return mha.forward(oneHot(st.tokens[0], st.dmodel, st.size), undefined, { causal: st.causal });
    }, ['summary', 'weights', 'output'].map((name) => ctx.slot(this.id, name)),
    { explain: (err) => explainHeads(err, st.dmodel, st.heads) });
    if (!res) return;
    ctx.publish(`${this.prefix}.main`, res);
    const [, H, T] = res.weights.shape;
    const C = res.output.shape[2];
    ctx.slot(this.id, 'summary').replaceChildren(h('p', { class: 'readout' },
      `d_model = ${C} split over ${H} heads gives d_head = `, h('strong', { 'data-out': 'mha-dhead', text: String(C / H) }),
      '. Weights ', h('code', { 'data-out': 'mha-wshape', text: fmtShape(res.weights.shape) }),
      ', output ', h('code', { 'data-out': 'mha-oshape', text: fmtShape(res.output.shape) }), '.'));
    headHeatmaps(ctx.slot(this.id, 'weights'), {
      weights: res.weights, name: 'mha-weights',
      blocked: st.causal ? blockedFrom(ctx.lab.allowedPairs([T, T], { causal: true })) : null,
      queryLabel: (i) => `t${i + 1}`, keyLabel: (j) => `t${j + 1}`,
    });
    valueTable(ctx.slot(this.id, 'output'), {
      name: 'mha-output', values: res.output.data, rows: T, cols: C, digits: 2, scrollable: true,
      rowLabel: (i) => `t${i + 1}`, colLabel: (j) => String(j + 1), caption: 'Output after the output projection (one row per position)',
    });
  },
};

export default multiHead;
