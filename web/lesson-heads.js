// Sections 4, 6 and 7: shapes with batches and heads, self- versus
// cross-attention, and multi-head attention. Shapes, weights and outputs are
// those returned by the core's multi-head attention (lab.createMultiHeadAttention).

import {
  h, numberGrid, numberField, checkbox, radios, heatmap, valueTable, statusLine,
  fmt, fmtShape, HEAD_COLOURS, headInkClass, blockedFrom,
} from './lesson-ui.js';
import { codec } from './lesson-state.js';

const dimLabel = (j) => `d${j + 1}`;

/** Copy m into a rows × cols matrix, filling new cells with fill(i, j). */
export function resized(m, rows, cols, fill) {
  return Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) =>
    (m && i < m.length && j < m[i].length ? m[i][j] : fill(i, j))));
}

/**
 * Keep one multi-head module per configuration; free the previous one.
 * cache.free() releases the last one (a widget leaving the page).
 */
export function mhaCache() {
  let key = null, mha = null;
  const cache = (lab, config) => {
    const k = JSON.stringify(config);
    if (k !== key) {
      const next = lab.createMultiHeadAttention(config); // may throw: keep the old one then
      if (mha) mha.free();
      mha = next;
      key = k;
    }
    return mha;
  };
  cache.free = () => {
    if (mha) mha.free();
    mha = null;
    key = null;
  };
  return cache;
}

/** One heatmap per head of weights (1, H, Tq, Tk) for batch 0. */
function headHeatmaps(host, { weights, blocked, name, queryLabel, keyLabel }) {
  const [, H, Tq, Tk] = weights.shape;
  const figures = [];
  for (let head = 0; head < H; head++) {
    const fig = h('figure', { class: 'head-map', 'data-head': head });
    const mapHost = h('div');
    heatmap(mapHost, {
      name: `${name}-h${head}`, values: weights.data.subarray(head * Tq * Tk, (head + 1) * Tq * Tk),
      rows: Tq, cols: Tk, blocked, digits: 2,
      rowLabel: queryLabel, colLabel: keyLabel, caption: `Head ${head + 1} attention weights (rows: queries, columns: keys)`,
    });
    const swatch = h('span', { class: `head-swatch ${headInkClass(head)}`, text: String(head + 1) });
    swatch.style.backgroundColor = HEAD_COLOURS[head % HEAD_COLOURS.length];
    fig.append(h('figcaption', {}, swatch, ` Head ${head + 1}`), mapHost);
    figures.push(fig);
  }
  host.replaceChildren(...figures);
}

// ---------------------------------------------------------------------------
// 4. Shapes
// ---------------------------------------------------------------------------

const PIC_MAX = 4; // the split/merge picture shows at most 4 positions, heads and channels per head

export const shapes = {
  id: 'shapes',
  prefix: 'shape',
  title: 'section 4',
  fields: [
    ['b', codec.int(1, 8), () => 2],
    ['h', codec.int(1, 8), () => 4],
    ['t', codec.int(1, 32), () => 5],
    ['d', codec.int(1, 32), () => 8],
    ['wrong', codec.bool(), () => false],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    const field = (key, label, max) => numberField({
      label, name: `shape-${key}`, value: st[key], integer: true, min: 1, max, size: 'sm',
      onValue: (v) => { st[key] = v; commit(); },
    });
    ctx.slot(this.id, 'controls').replaceChildren(
      h('div', { class: 'controls-row' },
        field('b', 'B (batch)', 8), field('h', 'H (heads)', 8), field('t', 'T (positions)', 32), field('d', 'D (per head)', 32)),
    );
    ctx.slot(this.id, 'toggle').replaceChildren(checkbox({
      label: 'Show the common mistake: reshape without transposing', name: 'shape-wrong', checked: st.wrong,
      onToggle: (on) => { st.wrong = on; commit(); },
    }));
    this.status = statusLine();
    ctx.slot(this.id, 'status').replaceChildren(this.status.node);
    this.mha?.free(); // mounted again (a new state): give back the old module
    this.mha = mhaCache();
  },

  update(ctx, st) {
    const C = st.h * st.d;
    const res = ctx.core(this.status, () => {
      const mha = this.mha(ctx.lab, { dModel: C, numHeads: st.h, seed: 0 });
      const x = { data: new Float32Array(st.b * st.t * C), shape: [st.b, st.t, C] };
      return mha.forward(x);
    });
    if (!res) return;
    ctx.publish(`${this.prefix}.main`, res);
    // Shapes reported by the core, and the per-head shapes read off them.
    const [B, H, T] = res.weights.shape;
    const Cout = res.output.shape[2];
    const D = Cout / H;
    const rows = [
      ['Input x', [B, T, Cout], 'B sequences, T positions, C = H × D features', false],
      ['q, k, v after the projections', [B, T, Cout], 'three learned linear maps, same width', false],
      ['split: view as heads', [B, T, H, D], 'C cut into H pieces of D', false],
      ['transpose: Q, K, V per head', [B, H, T, D], 'heads become a batch-like axis', false],
      ['scores and weights', res.weights.shape, 'one distribution over keys per query, per head (from the core)', true],
      ['context per head: weights × V', [B, H, T, D], 'each head mixes its own D-wide values', false],
      ['merge: transpose back, join heads', [B, T, Cout], 'C = H × D again', false],
      ['output after the output projection', res.output.shape, 'mixes the heads together (from the core)', true],
    ];
    const table = h('table', { class: 'shape-table', 'data-values': 'shape-table' },
      h('caption', { text: `Tensor shapes for B = ${B}, H = ${H}, T = ${T}, D = ${D}` }),
      h('thead', {}, h('tr', {}, ...['Tensor', 'Shape', 'Meaning'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, rows.map(([name, shape, meaning, fromCore]) => h('tr', { class: fromCore ? 'from-core' : '' },
        h('th', { scope: 'row', text: name }), h('td', { class: 'mono', 'data-shape': name, text: fmtShape(shape) }), h('td', { text: meaning })))),
    );
    ctx.slot(this.id, 'table').replaceChildren(
      h('div', { class: 'grid-wrap' }, table),
      h('p', { class: 'readout' }, 'The weights hold ',
        h('strong', { 'data-out': 'shape-count', text: res.weights.data.length.toLocaleString('en-US') }),
        ` numbers (B × H × T × T). Double T and this grows four times; D does not appear in it at all.`),
    );
    this.drawPicture(ctx, Math.min(T, PIC_MAX), Math.min(H, PIC_MAX), Math.min(D, PIC_MAX), st.wrong);
  },

  /** The split/merge picture for one sequence, with small sizes. */
  drawPicture(ctx, T, H, D, wrong) {
    const C = H * D;
    const head = (c) => Math.floor(c / D);
    // Where cell (head hh, position t, channel d) of the per-head tensor comes from in x (T × C).
    const source = (hh, t, d) => {
      if (!wrong) return [t, hh * D + d];
      const flat = hh * T * D + t * D + d; // reshaping (T, C) straight to (H, T, D)
      return [Math.floor(flat / C), flat % C];
    };
    const cell = (t, c) => {
      const node = h('div', { class: `pic-cell ${headInkClass(head(c))}`, text: `${t}${'abcdefgh'[head(c)]}` });
      node.style.backgroundColor = HEAD_COLOURS[head(c) % HEAD_COLOURS.length];
      return node;
    };
    const grid = (rows, cols, at) => {
      const g = h('div', { class: 'pic-grid' });
      g.style.setProperty('--cols', String(cols));
      for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) g.append(cell(...at(i, j)));
      return g;
    };
    const x = grid(T, C, (t, c) => [t, c]);
    const blocks = h('div', { class: 'pic-blocks' });
    const notes = [];
    for (let hh = 0; hh < H; hh++) {
      blocks.append(h('div', { class: 'pic-block' }, h('span', { class: 'pic-label', text: `head ${hh + 1}` }),
        grid(T, D, (t, d) => source(hh, t, d))));
      const positions = new Set(), heads = new Set();
      for (let t = 0; t < T; t++) for (let d = 0; d < D; d++) {
        const [st, sc] = source(hh, t, d);
        positions.add(st);
        heads.add(head(sc) + 1);
      }
      const mixed = heads.size > 1 || positions.size < T;
      notes.push(`Head ${hh + 1} holds positions ${[...positions].join(', ')} and channels belonging to head ${[...heads].join(', ')}${mixed ? ': mixed up.' : '.'}`);
    }
    // Merging reads each block back with the inverse of the correct split.
    const merged = grid(T, C, (t, c) => source(head(c), t, c % D));
    ctx.slot(this.id, 'picture').replaceChildren(
      h('div', { class: 'picture', 'aria-hidden': 'true' },
        h('div', { class: 'pic-step' }, h('p', { class: 'pic-title', text: `x for one sequence: ${T} positions × C = ${C}` }), x),
        h('div', { class: 'pic-step' }, h('p', { class: 'pic-title', text: wrong ? 'reshape straight to (H, T, D): wrong' : 'split into heads, then transpose: (H, T, D)' }), blocks),
        h('div', { class: 'pic-step' }, h('p', { class: 'pic-title', text: 'merge: transpose back, join heads' }), merged),
      ),
      h('ul', { class: 'pic-notes', 'data-out': 'shape-notes' }, notes.map((n) => h('li', { text: n }))),
    );
  },
};

// ---------------------------------------------------------------------------
// 6. Self- versus cross-attention
// ---------------------------------------------------------------------------

const CROSS_D = 4, CROSS_H = 2, CROSS_SEED = 3;
const tgtFill = (i, j) => (((i * 7 + j * 3 + 1) % 9) - 4) / 4;
const srcFill = (i, j) => (((i * 5 + j * 2 + 3) % 9) - 4) / 4;
const padFill = (tk) => (j) => !(tk >= 4 && j >= tk - 2); // the last two source positions are padding

export const selfCross = {
  id: 'self-cross',
  prefix: 'cross',
  title: 'section 6',
  fields: [
    ['mode', codec.choice(['self', 'cross']), () => 'cross'],
    ['tq', codec.int(1, 8), () => 4],
    ['tk', codec.int(1, 10), () => 7],
    ['tgt', codec.matrix((st) => st.tq, () => CROSS_D), (st) => resized(null, st.tq, CROSS_D, tgtFill)],
    ['src', codec.matrix((st) => st.tk, () => CROSS_D), (st) => resized(null, st.tk, CROSS_D, srcFill)],
    ['pad', codec.bits(() => 1, (st) => st.tk), (st) => [Array.from({ length: st.tk }, (_, j) => padFill(st.tk)(j))]],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    this.mha?.free(); // mounted again (a new state): give back the old module
    this.mha = mhaCache();
    ctx.slot(this.id, 'controls').replaceChildren(
      radios({ legend: 'Where keys and values come from', name: 'cross-mode', value: st.mode,
        options: [['self', 'Self-attention: the same sequence'], ['cross', 'Cross-attention: a second (source) sequence']],
        onValue: (v) => { st.mode = v; this.drawInputs(ctx, st); commit(); } }),
      h('div', { class: 'controls-row' },
        numberField({ label: 'T_q (target positions)', name: 'cross-tq', value: st.tq, integer: true, min: 1, max: 8, size: 'sm',
          onValue: (v) => { st.tq = v; st.tgt = resized(st.tgt, v, CROSS_D, tgtFill); this.drawInputs(ctx, st); commit(); } }),
        numberField({ label: 'T_k (source positions)', name: 'cross-tk', value: st.tk, integer: true, min: 1, max: 10, size: 'sm',
          onValue: (v) => {
            st.tk = v;
            st.src = resized(st.src, v, CROSS_D, srcFill);
            st.pad = [Array.from({ length: v }, (_, j) => (j < st.pad[0].length ? st.pad[0][j] : true))];
            this.drawInputs(ctx, st);
            commit();
          } })),
    );
    this.status = statusLine();
    ctx.slot(this.id, 'status').replaceChildren(this.status.node);
    this.drawInputs(ctx, st);
  },

  drawInputs(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    const cross = st.mode === 'cross';
    const parts = [numberGrid({ label: `Target states t (${st.tq} × d_model = ${CROSS_D})`, name: 'cross-tgt', matrix: st.tgt,
      rowLabel: (i) => `t${i + 1}`, colLabel: dimLabel, onChange: commit })];
    if (cross) {
      parts.push(numberGrid({ label: `Source states s (${st.tk} × d_model = ${CROSS_D})`, name: 'cross-src', matrix: st.src,
        rowLabel: (i) => `s${i + 1}`, colLabel: dimLabel, onChange: commit }));
      const padHost = h('div', { class: 'pad-toggles' });
      const drawPad = () => {
        const group = h('div', { class: 'pad-row', role: 'group', 'aria-label': 'Source positions: pressed means a real token, not pressed means padding', 'data-mask': 'cross-pad' });
        st.pad[0].forEach((real, j) => {
          const btn = h('button', { type: 'button', class: `mask-cell ${real ? 'allowed' : 'blocked'}`, 'aria-pressed': real ? 'true' : 'false',
            'data-col': j, text: real ? `s${j + 1}` : `s${j + 1} pad` });
          btn.addEventListener('click', () => {
            st.pad[0][j] = !st.pad[0][j];
            drawPad();
            padHost.querySelector(`button[data-col="${j}"]`).focus();
            commit();
          });
          group.append(btn);
        });
        padHost.replaceChildren(h('p', { class: 'sub-label', text: 'Source padding (click to switch a position between token and padding)' }), group);
      };
      drawPad();
      parts.push(padHost);
    }
    ctx.slot(this.id, 'inputs').replaceChildren(...parts);
  },

  update(ctx, st) {
    const cross = st.mode === 'cross';
    const res = ctx.core(this.status, () => {
      const mha = this.mha(ctx.lab, { dModel: CROSS_D, numHeads: CROSS_H, seed: CROSS_SEED });
      const query = { data: st.tgt.flat(), shape: [1, st.tq, CROSS_D] };
      if (!cross) return mha.forward(query);
      const source = { data: st.src.flat(), shape: [1, st.tk, CROSS_D] };
      return mha.forward(query, source, { keyPaddingMask: { data: st.pad[0].map(Number), shape: [1, st.tk] } });
    });
    if (!res) return;
    ctx.publish(`${this.prefix}.main`, res);
    const Tk = res.weights.shape[3];
    headHeatmaps(ctx.slot(this.id, 'weights'), {
      weights: res.weights, name: 'cross-weights',
      blocked: cross ? blockedFrom(ctx.lab.allowedPairs([1, 1, st.tq, st.tk], { keyPaddingMask: { data: st.pad[0].map(Number), shape: [1, st.tk] } })) : null,
      queryLabel: (i) => `t${i + 1}`,
      keyLabel: (j) => (cross ? `s${j + 1}` : `t${j + 1}`),
    });
    ctx.slot(this.id, 'shapes').replaceChildren(h('p', { class: 'readout' },
      'Queries ', h('code', { text: fmtShape([1, st.tq, CROSS_D]) }),
      cross ? ' read keys and values ' : ' read keys and values from themselves ',
      cross ? h('code', { text: fmtShape([1, st.tk, CROSS_D]) }) : null,
      ': the weights are ', h('code', { 'data-out': 'cross-wshape', text: fmtShape(res.weights.shape) }),
      ` (batch, heads, T_q, T_k = ${Tk}) and the output is `, h('code', { 'data-out': 'cross-oshape', text: fmtShape(res.output.shape) }),
      '. The output always has one row per query.'));
    valueTable(ctx.slot(this.id, 'output'), {
      name: 'cross-output', values: res.output.data, rows: st.tq, cols: CROSS_D, digits: 3,
      rowLabel: (i) => `t${i + 1}`, colLabel: dimLabel, caption: 'Output (one row per target position)',
    });
  },
};

// ---------------------------------------------------------------------------
// 7. Multi-head attention
// ---------------------------------------------------------------------------

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
  title: 'section 7',
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
    });
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

export const headSections = [shapes, selfCross, multiHead];
