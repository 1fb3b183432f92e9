// Sections 5, 8 and 9: masks (causal, padding, both, custom), the
// observability numbers, and the three mask conventions. Masks are built with
// the helpers exported by attention.js; weights and statistics come from
// lab.sdpa.

import {
  h, numberGrid, numberField, select, heatmap, maskGrid, refocusMaskCell, statusLine,
  fmt, fmtSci, fmtShape, blockedFrom, emptyRowsOf,
} from './lesson-ui.js';
import { codec } from './lesson-state.js';

const keyLabel = (j) => `key ${j + 1}`;
const queryLabel = (i) => `query ${i + 1}`;

/** q = k = v = 0 of shape (...lead, T, 1): every score is equal, so weights spread evenly over allowed keys. */
function zeros(lead, T) {
  const shape = [...lead, T, 1];
  return { data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape };
}

/** Rows of a T × T allowed mask (nested booleans) that allow no key at all, by the core's rule. */
function emptyRows(lab, mask) {
  return emptyRowsOf(lab.allowedPairs([mask.length, mask.length], { mask }));
}

const causalBits = (T) => Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => j <= i));

// ---------------------------------------------------------------------------
// 5. Masks
// ---------------------------------------------------------------------------

export const TOKEN_DEFAULTS = [[12, 91, 33, 0, 0], [44, 17, 29, 81, 5]];

export const masks = {
  id: 'masks',
  prefix: 'mask',
  title: 'section 5',
  dependsOn: ['ex'],
  fields: [
    ['ct', codec.int(1, 8), () => 4],
    ['tokens', codec.matrix(() => 2, () => 5, { integer: true, min: 0, max: 99999 }), () => TOKEN_DEFAULTS.map((r) => r.slice())],
    ['pad', codec.int(0, 99999), () => 0],
    ['custom', codec.bits(() => 3, () => 3), () => causalBits(3).map((row) => row.map(() => true))],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    ctx.slot(this.id, 'causal-controls').replaceChildren(numberField({
      label: 'Sequence length T', name: 'mask-ct', value: st.ct, integer: true, min: 1, max: 8, size: 'sm',
      onValue: (v) => { st.ct = v; commit(); },
    }));
    ctx.slot(this.id, 'padding-controls').replaceChildren(
      numberGrid({ label: 'Token ids (2 sequences × 5 positions)', name: 'mask-tokens', matrix: st.tokens, integer: true, min: 0, max: 99999,
        rowLabel: (i) => `seq ${i + 1}`, colLabel: (j) => `pos ${j + 1}`, onChange: commit }),
      numberField({ label: 'Padding id', name: 'mask-pad', value: st.pad, integer: true, min: 0, max: 99999, size: 'sm',
        onValue: (v) => { st.pad = v; commit(); } }),
    );
    this.causalStatus = statusLine();
    this.paddingStatus = statusLine();
    this.customStatus = statusLine();
    ctx.slot(this.id, 'causal-status').replaceChildren(this.causalStatus.node);
    ctx.slot(this.id, 'padding-status').replaceChildren(this.paddingStatus.node);
    ctx.slot(this.id, 'custom-status').replaceChildren(this.customStatus.node);
    this.drawCustom(ctx, st);
  },

  drawCustom(ctx, st, focus) {
    const host = ctx.slot(this.id, 'custom');
    maskGrid(host, {
      name: 'mask-custom', rows: 3, cols: 3, get: (i, j) => st.custom[i][j], label: 'Custom mask: pressed means the query may attend to the key',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '✓' : '✕'), badRows: emptyRows(ctx.lab, st.custom),
      onToggle: (i, j) => {
        st.custom[i][j] = !st.custom[i][j];
        this.drawCustom(ctx, st, [i, j]);
        ctx.commit(this.prefix);
      },
    });
    if (focus) refocusMaskCell(host, ...focus);
  },

  update(ctx, st) {
    const { causalMask, paddingMask } = ctx.api;

    // Causal: the helper's lower triangle, and equal scores spread over it.
    const cm = causalMask(st.ct);
    const causal = ctx.core(this.causalStatus, () => ctx.lab.sdpa(zeros([], st.ct), zeros([], st.ct), zeros([], st.ct), { mask: cm }),
      [ctx.slot(this.id, 'causal')]);
    if (causal) {
      ctx.publish(`${this.prefix}.causal`, causal);
      const host = ctx.slot(this.id, 'causal');
      const maskHost = h('div'), weightHost = h('div');
      maskGrid(maskHost, { name: 'mask-causal', rows: st.ct, cols: st.ct, get: (i, j) => cm.data[i * st.ct + j],
        label: `Causal allowed mask, T = ${st.ct}`, rowLabel: queryLabel, colLabel: keyLabel });
      heatmap(weightHost, { name: 'mask-causal-weights', values: causal.weights.data, rows: st.ct, cols: st.ct, digits: 3,
        blocked: blockedFrom(ctx.lab.allowedPairs([st.ct, st.ct], { mask: cm })), rowLabel: queryLabel, colLabel: keyLabel,
        caption: 'Weights with equal scores under the causal mask' });
      host.replaceChildren(
        h('figure', {}, h('figcaption', { text: `causalMask(${st.ct}): 1 = allowed` }), maskHost),
        h('figure', {}, h('figcaption', { text: 'weights when every score is equal' }), weightHost));
    }

    // Padding (always drawn for the current token ids), then the combined mask, for both sequences.
    const padHost = ctx.slot(this.id, 'padding');
    const combinedHost = ctx.slot(this.id, 'combined');
    const pm = paddingMask(st.tokens, st.pad);
    const real = (b, j) => pm.data[b * 5 + j] === 1;
    const padGrid = h('div');
    maskGrid(padGrid, { name: 'mask-padding', rows: 2, cols: 5, get: (b, j) => real(b, j),
      label: `Padding allowed mask, shape ${fmtShape(pm.shape)}: 1 = real token`,
      rowLabel: (b) => `sequence ${b + 1}`, colLabel: keyLabel, text: (on) => (on ? '1' : '0') });
    padHost.replaceChildren(h('p', { class: 'readout' }, 'paddingMask(token ids, ', String(st.pad), ') has shape ',
      h('code', { 'data-out': 'mask-pshape', text: fmtShape(pm.shape) }),
      ': one row of keys per sequence, repeated for every head and every query.'), padGrid);
    const z = zeros([2, 1], 5);
    const out = ctx.core(this.paddingStatus, () => ctx.lab.sdpa(z, z, z, { mask: pm, causal: true }), [combinedHost]);
    if (!out) {
      // The core refused (a sequence that starts with padding leaves its first query with no key):
      // its message is shown and the last valid pictures stay. The custom mask below is independent.
      this.drawCustomResult(ctx, st);
      return;
    }
    ctx.publish(`${this.prefix}.padding`, out);
    const pairs = ctx.lab.allowedPairs(out.weights.shape, { mask: pm, causal: true });
    const maps = [0, 1].map((b) => {
      const mapHost = h('div');
      heatmap(mapHost, { name: `mask-combined-${b}`, values: out.weights.data.subarray(b * 25, (b + 1) * 25), rows: 5, cols: 5, digits: 3,
        blocked: blockedFrom(pairs, b), rowLabel: queryLabel, colLabel: keyLabel,
        caption: `Sequence ${b + 1}: weights under causal AND padding` });
      return h('figure', {}, h('figcaption', { text: `sequence ${b + 1}: causal AND padding` }), mapHost);
    });
    combinedHost.replaceChildren(...maps);
    this.drawCustomResult(ctx, st);
  },

  drawCustomResult(ctx, st) {
    const ex = ctx.states.ex;
    const host = ctx.slot(this.id, 'custom-weights');
    const out = ctx.core(this.customStatus, () => ctx.lab.sdpa(ex.q, ex.k, ex.v,
      { mask: st.custom }), [host]);
    if (!out) return;
    ctx.publish(`${this.prefix}.custom`, out);
    const mapHost = h('div');
    heatmap(mapHost, { name: 'mask-custom-weights', values: out.weights.data, rows: 3, cols: 3, digits: 4,
      blocked: (i, j) => !st.custom[i][j], rowLabel: queryLabel, colLabel: keyLabel,
      caption: 'Weights of the 3×3 example under the custom mask' });
    host.replaceChildren(h('figure', {}, h('figcaption', { text: 'weights of the 3×3 example under your mask' }), mapHost));
  },
};

// ---------------------------------------------------------------------------
// 8. Observability
// ---------------------------------------------------------------------------

const OBS_SOURCES = [
  ['plain', 'The 3×3 example, no mask'],
  ['causal', 'The 3×3 example, causal'],
  ['custom', 'The 3×3 example with the custom mask of section 5'],
  ['padding', 'The two padded sequences of section 5, causal AND padding'],
];

export const observability = {
  id: 'observability',
  prefix: 'obs',
  title: 'section 8',
  dependsOn: ['ex', 'mask'],
  fields: [
    ['src', codec.choice(OBS_SOURCES.map(([v]) => v)), () => 'causal'],
    ['mult', codec.num(-1000, 1000), () => 1],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    ctx.slot(this.id, 'controls').replaceChildren(
      select({ label: 'Example', name: 'obs-src', value: st.src, options: OBS_SOURCES, onValue: (v) => { st.src = v; commit(); } }),
      numberField({ label: 'Multiply Q by', name: 'obs-mult', value: st.mult, min: -1000, max: 1000, size: 'sm',
        hint: 'Scales the 3×3 example’s queries: larger queries, larger scores.', onValue: (v) => { st.mult = v; commit(); } }),
    );
    this.status = statusLine();
    ctx.slot(this.id, 'status').replaceChildren(this.status.node);
  },

  update(ctx, st) {
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
    }, [host, ctx.slot(this.id, 'weights')]);
    if (!res) return;
    ctx.publish(`${this.prefix}.main`, res);
    const s = res.stats;
    const rows = [
      ['max |score| before softmax', fmt(s.maxAbsScore, 3), 'obs-maxscore',
        s.maxAbsScore > 20 ? 'Large: the softmax is close to one-hot and its gradients are tiny.' : 'Moderate: the softmax stays smooth.'],
      ['fraction of logits masked', `${fmt(s.maskedFraction, 3)} (${fmt(100 * s.maskedFraction, 1)} %)`, 'obs-masked',
        'Blocked query–key pairs over all pairs.'],
      ['max row-sum error', fmtSci(s.maxRowSumError), 'obs-rowsum',
        s.maxRowSumError < 1e-5 ? 'Every row of weights adds up to 1 (up to float rounding).' : 'Some row does not add up to 1: the softmax ran over the wrong axis?'],
      ['max weight on a forbidden key', fmtSci(s.maxForbiddenWeight), 'obs-forbidden',
        s.maxForbiddenWeight === 0 ? 'Exactly 0: nothing leaks past the mask.' : 'Not 0: a blocked key is being read.'],
    ];
    // The weights the numbers describe (the first sequence for the padded example).
    const [Tq, Tk] = res.weights.shape.slice(-2);
    const mapHost = h('div');
    const blockedAt = opts.mask || opts.causal ? blockedFrom(ctx.lab.allowedPairs(res.weights.shape, opts)) : null;
    heatmap(mapHost, { name: 'obs-weights', values: res.weights.data.subarray(0, Tq * Tk), rows: Tq, cols: Tk, digits: 3,
      blocked: blockedAt, rowLabel: queryLabel, colLabel: keyLabel, caption: 'Weights of the chosen example' });
    ctx.slot(this.id, 'weights').replaceChildren(h('figure', {},
      h('figcaption', { text: st.src === 'padding' ? 'weights of sequence 1' : 'weights of the chosen example' }), mapHost));
    host.replaceChildren(h('dl', { class: 'stats' }, rows.map(([name, value, key, note]) => h('div', { class: 'stat' },
      h('dt', { text: name }), h('dd', {}, h('strong', { 'data-out': key, text: value }), h('span', { class: 'hint', text: note }))))));
  },
};

// ---------------------------------------------------------------------------
// 9. Mask conventions
// ---------------------------------------------------------------------------

export const conventions = {
  id: 'conventions',
  prefix: 'conv',
  title: 'section 9',
  fields: [
    ['t', codec.int(1, 8), () => 4],
    ['allowed', codec.bits((st) => st.t, (st) => st.t), (st) => causalBits(st.t)],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix);
    const reset = h('button', { type: 'button', class: 'action', 'data-action': 'conv-reset', text: 'Reset to causal' });
    reset.addEventListener('click', () => { st.allowed = causalBits(st.t); commit(); });
    ctx.slot(this.id, 'controls').replaceChildren(h('div', { class: 'controls-row' },
      numberField({ label: 'T', name: 'conv-t', value: st.t, integer: true, min: 1, max: 8, size: 'sm',
        onValue: (v) => { st.t = v; st.allowed = causalBits(v); commit(); } }),
      reset));
    this.status = statusLine();
    ctx.slot(this.id, 'misuse-status').replaceChildren(this.status.node);
  },

  update(ctx, st, focus) {
    const { blockedFromAllowed, allowedFromBlocked, additiveFromAllowed } = ctx.api;
    const T = st.t;
    const allowed = { data: Uint8Array.from(st.allowed.flat(), Number), shape: [T, T] };
    const blocked = blockedFromAllowed(allowed);
    const additive = additiveFromAllowed(allowed);
    const at = (m, i, j) => m.data[i * T + j];
    const setAllowed = (data) => { st.allowed = Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => data[i * T + j] === 1)); };

    const panel = (title, api, draw) => {
      const host = h('div');
      draw(host);
      return h('figure', { class: 'conv-panel' }, h('figcaption', {}, h('strong', { text: title }), h('br'), h('code', { text: api })), host);
    };
    const allowedPanel = panel('Allowed: 1 = may attend', 'F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)', (host) => maskGrid(host, {
      name: 'conv-allowed', rows: T, cols: T, get: (i, j) => at(allowed, i, j), label: 'Allowed mask: pressed means allowed',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '1' : '0'), badRows: emptyRows(ctx.lab, st.allowed),
      onToggle: (i, j) => {
        const data = allowed.data.slice();
        data[i * T + j] = 1 - data[i * T + j];
        setAllowed(data);
        ctx.commit(this.prefix, { panel: 'allowed', cell: [i, j] });
      },
    }));
    const blockedPanel = panel('Blocked: 1 = ignore', 'nn.MultiheadAttention(...)(x, x, x, attn_mask=blocked)', (host) => maskGrid(host, {
      name: 'conv-blocked', rows: T, cols: T, get: (i, j) => at(blocked, i, j), label: 'Blocked mask: pressed means blocked',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '1' : '0'), pressedMeans: 'blocked',
      onToggle: (i, j) => {
        const data = blocked.data.slice();
        data[i * T + j] = 1 - data[i * T + j];
        setAllowed(allowedFromBlocked({ data, shape: [T, T] }).data);
        ctx.commit(this.prefix, { panel: 'blocked', cell: [i, j] });
      },
    }));
    const additivePanel = panel('Additive: added to the scores', 'scores + additive  (0 or −∞)', (host) => maskGrid(host, {
      name: 'conv-additive', rows: T, cols: T, get: (i, j) => at(additive, i, j) === 0, label: 'Additive mask: 0 keeps a score, minus infinity removes it',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '0' : '−∞'),
    }));
    const panels = ctx.slot(this.id, 'panels');
    panels.replaceChildren(allowedPanel, blockedPanel, additivePanel);
    if (focus && focus.panel) {
      const grid = panels.querySelector(`[data-mask="conv-${focus.panel}"]`);
      if (grid) refocusMaskCell(grid, ...focus.cell);
    }

    let diagonalOk = true;
    for (let i = 0; i < T; i++) if (!at(allowed, i, i)) diagonalOk = false;
    ctx.slot(this.id, 'checks').replaceChildren(h('p', { class: 'readout', 'data-out': 'conv-diagonal' },
      diagonalOk ? '✓ Every query may attend to itself: the diagonal is allowed in the allowed mask and 0 in the blocked mask.'
        : '⚠ Some query may not attend to itself: for a causal self-attention mask that usually means the convention was flipped.'));

    // What happens if the allowed mask is handed, unchanged, to an API that reads 1 as "blocked".
    const misuseHost = ctx.slot(this.id, 'misuse');
    const misuse = ctx.core(this.status, () => ctx.lab.sdpa(zeros([], T), zeros([], T), zeros([], T), { mask: blocked }), [], { keepNote: false });
    if (misuse) {
      ctx.publish(`${this.prefix}.misuse`, misuse);
      const mapHost = h('div');
      heatmap(mapHost, { name: 'conv-misuse', values: misuse.weights.data, rows: T, cols: T, digits: 3,
        blocked: blockedFrom(ctx.lab.allowedPairs([T, T], { mask: blocked })), rowLabel: queryLabel, colLabel: keyLabel,
        caption: 'Weights when the mask meaning is flipped' });
      misuseHost.replaceChildren(h('figure', {}, h('figcaption', { text: 'equal scores, mask read the wrong way round' }), mapHost));
    } else {
      misuseHost.replaceChildren(h('p', { class: 'readout', text: 'Read the wrong way round, this mask leaves a query with no key at all, and the core refuses the call:' }));
    }
  },
};

export const maskSections = [masks, observability, conventions];
