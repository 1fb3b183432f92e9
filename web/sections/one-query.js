// One query against two keys, step by step: compare, scale, normalise, mix.
// Every number shown comes from the wasm core.

import {
  h, numberGrid, checkbox, statusLine, fmt, fmtVec, fmtPlain, setText, blockedFrom,
} from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { dimLabel } from './common.js';
import { slot } from './markup.js';
import { flowView } from '../lesson-flow.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

const sub = (name, i) => `${name}${'₀₁₂₃₄₅₆₇₈₉'[i] ?? i}`;

export const oneQuery = {
  id: 'one-query',
  prefix: 'one',
  title: 'One query, two keys',
  body: `
<p>A recurrent network reads a sentence one word at a time and squeezes everything it has read into a single running state, so a word far back must survive many steps to be used, and no step can start before the one before it ends. Attention, the core of the Transformer (“Attention Is All You Need”, 2017), drops that bottleneck: every position may look directly at every other, all at once. In “the pipeline the team rebuilt after three outages has finally stabilized”, the word “stabilized” belongs with “pipeline”, nine words earlier: attention reaches it in one step.</p>
<p>It works like a soft dictionary lookup. Instead of fetching the one entry whose key matches, it fetches a blend of all entries, weighted by how well each key matches. In “the animal did not cross the street because it was too tired”, the word “it” asks for something that can be tired: its query matches the key of “animal” far better than that of “street”, so its blend is mostly the value of “animal”. The result is not a pointer to one word but a mixture, which later layers can refine.</p>
<p>Attention answers a question by blending several stored answers. Three kinds of vector take part:</p>
<dl class="roles">
  <div><dt>Query</dt><dd>belongs to the position asking: what is it looking for?</dd></div>
  <div><dt>Key</dt><dd>belongs to each position that could answer: how should it be found?</dd></div>
  <div><dt>Value</dt><dd>also belongs to each answering position: what does it hand over once chosen?</dd></div>
</dl>
<p>Why not compare the query with the values directly? Because being found and being useful are two different jobs. A key can be shaped only to match the right queries, and a value only to carry what the asker needs; one vector doing both would have to compromise.</p>
<details class="warmup" data-disclosure="warm-up">
  <summary>Warm-up: predict a blend before any attention</summary>
  <p>Suppose the shares are already known, 0.2 and 0.8, and the two values are the plain numbers 10 and 5. The blend is 0.2 × 10 + 0.8 × 5 = 2 + 4 = <strong>6</strong>. The larger share pulls the result towards 5. Attention only adds a way to compute those shares.</p>
</details>
<p>The whole computation fits in one line. The scores compare each query with every key, the division keeps them in a sensible range, softmax turns them into shares, and the shares mix the values:</p>
<div class="formula" data-scroll-label="The attention formula">
  <math display="block" aria-label="Attention of Q, K, V equals softmax of Q times K transposed over the square root of d k, times V">
    <mrow>
      <mi>Attention</mi><mo>(</mo><mi>Q</mi><mo>,</mo><mi>K</mi><mo>,</mo><mi>V</mi><mo>)</mo>
      <mo>=</mo>
      <mi>softmax</mi>
      <mrow>
        <mo>(</mo>
        <mfrac>
          <mrow><mi>Q</mi><msup><mi>K</mi><mi>T</mi></msup></mrow>
          <msqrt><msub><mi>d</mi><mi>k</mi></msub></msqrt>
        </mfrac>
        <mo>)</mo>
      </mrow>
      <mi>V</mi>
    </mrow>
  </math>
</div>
<p>Start with one query, two keys and two values. These numbers were picked by hand to be easy to follow; a trained model would learn its own.</p>
<div class="inputs" data-slot="inputs"></div>
<div data-slot="toggle"></div>
<div class="result" data-slot="steps"></div>
<div class="result" data-slot="flow"></div>
<p class="aside"><strong>Exercise.</strong> Tick “only the first key is allowed”. The shares become [1, 0] and the result is exactly the first value, whatever numbers it holds. Blocking a key changes the shares <em>before</em> the values are mixed; it does not switch off one feature of the result afterwards.</p>
`,
  // The <attention-lab> presets that show this section (see markup.js for slot, group...).
  presets: {
    'two-keys': {
      title: 'One query, two keys', result: 'one.main', aliases: ['one-query'],
      blocks: [slot('inputs', 'inputs', { cls: 'inputs' }), slot('toggle', 'inputs'), slot('steps', null, { cls: 'result' }), slot('flow', 'output', { cls: 'result' })],
    },
  },
  fields: [
    ['q', codec.matrix(() => 1, () => 2), () => [[1, 0]]],
    ['k', codec.matrix(() => 2, () => 2), () => [[1, 0], [0, 1]]],
    ['v', codec.matrix(() => 2, () => 2), () => [[10, 0], [0, 20]]],
    ['first', codec.bool(), () => false],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Query q', name: 'one-q', matrix: st.q, rowLabel: () => 'q', colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'Keys', name: 'one-k', matrix: st.k, rowLabel: (i) => sub('k', i + 1), colLabel: dimLabel, onChange: commit, link: 'k' }),
      numberGrid({ label: 'Values', name: 'one-v', matrix: st.v, rowLabel: (i) => sub('v', i + 1), colLabel: dimLabel, onChange: commit, link: 'k' }),
    );
    ctx.slot(this.id, 'toggle').replaceChildren(checkbox({
      label: 'Only the first key is allowed (block key 2)', name: 'one-first', checked: st.first,
      onToggle: (on) => { st.first = on; commit(); },
    }));
    this.said = announcer(ctx.node(this.id), 'one-query');
    this.status = statusLine(this.said);
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
        // data-panel: which of the widget's panels (its `show` attribute) a
        // step belongs to. Each step keeps its number when others are hidden.
        h('li', { value: 1, 'data-panel': 'scores' }, h('strong', { text: 'Compare. ' }), 'Dot product of q with each key: ', o.dots),
        h('li', { value: 2, 'data-panel': 'scores' }, h('strong', { text: 'Scale. ' }), 'Divide by √d', h('sub', { text: 'k' }),
          ' = √2 ≈ 1.414 (each key has two entries): ', o.scaled, ' ', o.maskNote),
        h('li', { value: 3, 'data-panel': 'weights' }, h('strong', { text: 'Normalise. ' }), 'Softmax turns the scores into shares that add up to 1: ', o.weights),
        h('li', { value: 4, 'data-panel': 'output' }, h('strong', { text: 'Mix. ' }), 'Weight each value by its share and add: ', o.mix, ' = ', o.output),
      ),
      this.status.node,
      this.said.node,
    );
  },

  update(ctx, st, detail) {
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
    setText(o.dots, fmtVec(raw.scores.data, 3));
    setText(o.scaled, fmtVec(main.scores.data, 3));
    setText(o.maskNote, st.first ? '— key 2 is blocked, so its score is replaced by −∞ before the softmax.' : '');
    setText(o.weights, fmtVec(main.weights.data, 3));
    const w = main.weights.data;
    setText(o.mix, `${fmt(w[0], 3)} × [${st.v[0].map(fmtPlain).join(', ')}] + ${fmt(w[1], 3)} × [${st.v[1].map(fmtPlain).join(', ')}]`);
    setText(o.output, fmtVec(main.output.data, 3));
    if (isEdit(detail)) this.said.say(`Weights ${o.weights.textContent}; output ${o.output.textContent}.`);
    // The keys the mask blocks for the one query, by the core's rule.
    const blocked = mask ? blockedFrom(ctx.lab.allowedPairs([1, 2], { mask })) : null;
    const blockedKey = blocked ? (j) => blocked(0, j) : null;
    flowView(ctx.slot(this.id, 'flow'), {
      row: 0, rowName: 'the query', q: st.q[0], keys: 2, keyName: (j) => `key ${j + 1}`, dk: st.q[0].length,
      raw: raw.scores.data, scaled: main.scores.data, blocked: blockedKey,
      weights: main.weights.data, output: main.output.data,
    });
  },
};

export default oneQuery;
