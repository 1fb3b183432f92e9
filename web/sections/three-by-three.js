// The 3×3 example (T = 3, d_k = 4, d_v = 2): weights with their row sums, scores and output.
// Every number shown comes from the wasm core.

import { numberGrid, heatmap, valueTable, statusLine, fmt, fmtVec } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { keyLabel, queryLabel, dimLabel } from './common.js';
import { slot, group } from './markup.js';
import { flowView } from '../lesson-flow.js';
import { announcer, editedCell, EDITED, isEdit } from '../lesson-announce.js';

export const EX_DEFAULTS = {
  q: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
  k: [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]],
  v: [[10, 0], [0, 10], [5, 5]],
};
const copy = (m) => m.map((row) => row.slice());
/** The decimals of this section's numbers: its maps, its output and the flow of a query. */
const DIGITS = 4;

export const threeByThree = {
  id: 'three-by-three',
  prefix: 'ex',
  title: 'The 3×3 example',
  body: `
<p>Now three positions ask and three answer at once. Stack the queries as the rows of Q (T<sub>q</sub> × d<sub>k</sub>), the keys as the rows of K (T<sub>k</sub> × d<sub>k</sub>) and the values as the rows of V (T<sub>k</sub> × d<sub>v</sub>). Queries and keys must share their width d<sub>k</sub>, because they are compared; the values may have any width d<sub>v</sub>, because they are only mixed.</p>
<ul>
  <li>Q Kᵀ has shape T<sub>q</sub> × T<sub>k</sub>: row <em>i</em> holds query <em>i</em>’s score against every key.</li>
  <li>Softmax runs along each row, over the keys, so every row of weights adds up to 1.</li>
  <li>Weights × V has shape T<sub>q</sub> × d<sub>v</sub>: one blended value per query.</li>
</ul>
<p>Here T = 3, d<sub>k</sub> = 4 and d<sub>v</sub> = 2, so the scores are divided by √4 = 2. With the starting numbers, query 3 scores 2 against key 3 and 1 against the other two keys, yet after the division its weights stay soft rather than all going to key 3.</p>
<div class="inputs" data-slot="inputs"></div>
<div data-slot="status"></div>
<div class="result two-col">
  <figure>
    <figcaption>Weights (rows: queries, columns: keys). Brighter is larger. The last column is each row’s sum, also computed by the core: multiplying the weights by a column of ones adds up each row.</figcaption>
    <div data-slot="weights"></div>
  </figure>
  <div>
    <div data-slot="output"></div>
    <div data-slot="scores"></div>
  </div>
</div>
<p>Point at or tap a weight, a score or an output row (or move through the weights with the arrow keys) to light up where it came from and what it feeds, and to follow that query row through the core below.</p>
<div class="result" data-slot="flow"></div>
<p>With the starting numbers, output row 3 is [5, 5]: its weights on values 1 and 2 are equal, and it leans most on value 3, which is already balanced. Attention returns a blend of values; it comes down to the winning value alone only when one score far outweighs the rest. If softmax ran down the columns instead, the columns would add up to 1 and each key would be sharing itself out among queries, which is a different question altogether.</p>
`,
  presets: {
    'three-by-three': {
      title: 'The 3×3 example', result: 'ex.main',
      blocks: [
        slot('inputs', 'inputs', { cls: 'inputs' }), slot('status'),
        group('result two-col',
          slot('weights', 'weights', { label: 'Weights (rows: queries, columns: keys; the last column is each row’s sum)' }),
          group('', slot('output', 'output'), slot('scores', 'scores'))),
        slot('flow', 'output', { cls: 'result' }),
      ],
    },
  },
  fields: [
    ['q', codec.matrix(() => 3, () => 4), () => copy(EX_DEFAULTS.q)],
    ['k', codec.matrix(() => 3, () => 4), () => copy(EX_DEFAULTS.k)],
    ['v', codec.matrix(() => 3, () => 2), () => copy(EX_DEFAULTS.v)],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Q (3 queries × d_k = 4)', name: 'ex-q', matrix: st.q, rowLabel: queryLabel, colLabel: dimLabel, onChange: commit, link: 'q' }),
      numberGrid({ label: 'K (3 keys × d_k = 4)', name: 'ex-k', matrix: st.k, rowLabel: keyLabel, colLabel: dimLabel, onChange: commit, link: 'k' }),
      numberGrid({ label: 'V (3 values × d_v = 2)', name: 'ex-v', matrix: st.v, rowLabel: (i) => `value ${i + 1}`, colLabel: dimLabel, onChange: commit, link: 'k' }),
    );
    this.said = announcer(ctx.node(this.id), 'three-by-three');
    this.status = statusLine(this.said);
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
    // The flow follows the query row last pointed at or focused anywhere in the section.
    this.flowRow = 0;
    const follow = (event) => {
      const row = event.target.closest?.('[data-link-q]');
      if (!row || row.closest('.flow') || Number(row.dataset.linkQ) === this.flowRow) return;
      this.flowRow = Number(row.dataset.linkQ);
      this.drawFlow(ctx);
    };
    const node = ctx.node(this.id);
    if (node && !node.flowFollow) {
      node.flowFollow = true;
      node.addEventListener('pointerover', follow);
      node.addEventListener('focusin', follow);
    }
  },

  drawFlow(ctx) {
    if (!this.shown) return;
    const { main, raw, q } = this.shown;
    const i = this.flowRow, Tk = 3, dv = 2;
    flowView(ctx.slot(this.id, 'flow'), {
      row: i, rowName: queryLabel(i), q: q[i], keys: Tk, keyName: keyLabel, dk: q[i].length, digits: DIGITS,
      raw: raw.subarray(i * Tk, (i + 1) * Tk), scaled: main.scores.data.subarray(i * Tk, (i + 1) * Tk),
      weights: main.weights.data.subarray(i * Tk, (i + 1) * Tk), output: main.output.data.subarray(i * dv, (i + 1) * dv),
    });
  },

  update(ctx, st, detail) {
    const { q, k, v } = st;
    const res = ctx.core(this.status, () => ({
      main: ctx.lab.sdpa(q, k, v),
      // Weights times a column of ones adds up each row: the row sums, from the core.
      sums: ctx.lab.sdpa(q, k, { data: [1, 1, 1], shape: [3, 1] }).output.data,
      // Scale 1: the raw dot products q·k, for the flow's first step.
      raw: ctx.lab.sdpa(q, k, v, { scale: 1 }).scores.data,
    }));
    if (!res) return;
    const { main, sums } = res;
    this.shown = { main, raw: res.raw, q: q.map((row) => row.slice()) };
    ctx.publish(`${this.prefix}.main`, main);
    heatmap(ctx.slot(this.id, 'weights'), {
      name: 'ex-weights', values: main.weights.data, rows: 3, cols: 3, digits: DIGITS,
      rowLabel: queryLabel, colLabel: keyLabel, caption: 'Attention weights: one row per query, one column per key',
      extra: { label: 'row sum', values: sums }, link: true,
    });
    valueTable(ctx.slot(this.id, 'scores'), {
      name: 'ex-scores', values: main.scores.data, rows: 3, cols: 3, digits: DIGITS,
      rowLabel: queryLabel, colLabel: keyLabel, caption: 'Scaled scores QKᵀ / √d_k', link: 'qk',
    });
    valueTable(ctx.slot(this.id, 'output'), {
      name: 'ex-output', values: main.output.data, rows: 3, cols: 2, digits: DIGITS,
      rowLabel: (i) => `output ${i + 1}`, colLabel: dimLabel, caption: 'Output: weights × V', link: 'q',
    });
    this.drawFlow(ctx);
    if (isEdit(detail)) this.said.say(this.saying(ctx, main));
  },

  /**
   * The result of the edit in the cell being edited, with the digits of the
   * maps: a query's row of weights and its output, the weights every query
   * puts on a key, or the three outputs after an edit of a value.
   */
  saying(ctx, main) {
    const cell = editedCell(ctx.root);
    const w = main.weights.data, out = main.output.data;
    const row = (i) => `${fmt(w[i * 3], DIGITS)}, ${fmt(w[i * 3 + 1], DIGITS)}, ${fmt(w[i * 3 + 2], DIGITS)}`;
    const output = (i) => fmtVec(out.subarray(i * 2, i * 2 + 2), DIGITS);
    if (cell?.grid === 'ex-q') {
      const i = cell.row;
      return `Query ${i + 1}: weights ${row(i)}; output ${i + 1} ${output(i)}.`;
    }
    if (cell?.grid === 'ex-k') {
      const j = cell.row;
      return `Weights on key ${j + 1}: ${[0, 1, 2].map((i) => `query ${i + 1} ${fmt(w[i * 3 + j], DIGITS)}`).join(', ')}.`;
    }
    return `Outputs ${[0, 1, 2].map(output).join(', ')}.`;
  },
};

export default threeByThree;
