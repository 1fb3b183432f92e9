// Mask conventions: allowed, blocked and additive masks, and the classic migration bug.
// Every number shown comes from the wasm core.

import { h, numberField, heatmap, maskGrid, refocusMaskCell, statusLine, figures, blockedFrom, emptyRowsOf, setText } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { keyLabel, queryLabel, zeros, causalBits } from './common.js';
import { slot } from './markup.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

export const conventions = {
  id: 'conventions',
  prefix: 'conv',
  title: 'Mask conventions',
  body: `
<p>Libraries disagree about what a 1 in a boolean mask means. PyTorch’s <code>scaled_dot_product_attention</code> reads 1 (True) as “may attend”, like this page. <code>nn.MultiheadAttention</code> reads 1 as “ignore this position”. A third form adds 0 or −∞ straight onto the scores. The rule is the same in all three; only the spelling differs. Name masks after their meaning (<code>allowed</code>, <code>blocked</code>) and convert in one place when you cross from one API to another.</p>
<p>Click a cell in either of the first two grids: the other two are rebuilt from it with the library’s conversion helpers.</p>
<div class="controls" data-slot="controls"></div>
<div class="result conv" data-slot="panels"></div>
<div data-slot="checks"></div>
<h3>The classic migration bug</h3>
<p>Pass a correct causal <em>allowed</em> mask unchanged to an API that expects a <em>blocked</em> one, and the past is hidden while the future is open. This is what the core computes when your allowed mask is read the wrong way round:</p>
<div data-slot="misuse"></div>
<div data-slot="misuse-note"></div>
<div data-slot="misuse-status"></div>
`,
  presets: {
    conventions: {
      title: 'Mask conventions', result: 'conv.misuse', seqLen: ['conv', 't'],
      blocks: [
        slot('controls', 'inputs', { cls: 'controls' }), slot('panels', 'inputs', { cls: 'result conv' }), slot('checks', 'checks'),
        slot('misuse', 'weights', { label: 'What the core computes when this allowed mask is read as a blocked one' }), slot('misuse-note', 'weights'),
        slot('misuse-status'),
      ],
    },
  },
  fields: [
    ['t', codec.int(1, 8), () => 4],
    ['allowed', codec.bits((st) => st.t, (st) => st.t), (st) => causalBits(st.t)],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    const reset = h('button', { type: 'button', class: 'action', 'data-action': 'conv-reset', text: 'Reset to causal' });
    reset.addEventListener('click', () => { st.allowed = causalBits(st.t); commit(); });
    ctx.slot(this.id, 'controls').replaceChildren(h('div', { class: 'controls-row' },
      numberField({ label: 'T', name: 'conv-t', value: st.t, integer: true, min: 1, max: 8, size: 'sm',
        onValue: (v) => { st.t = v; st.allowed = causalBits(v); commit(); } }),
      reset));
    this.said = announcer(ctx.node(this.id), 'conventions');
    this.status = statusLine(this.said);
    // An edit's result (the clicked pair in the three masks, and whether the
    // diagonal is still allowed) is said once the edits pause.
    ctx.slot(this.id, 'misuse-status').replaceChildren(this.status.node, this.said.node);
    this.diagonal = h('p', { class: 'readout', 'data-out': 'conv-diagonal' });
    ctx.slot(this.id, 'checks').replaceChildren(this.diagonal);
  },

  // detail: EDITED for a new T or a reset; { edited, panel, cell } for a
  // click in the allowed or blocked grid, whose cell keeps the focus.
  update(ctx, st, detail) {
    const { blockedFromAllowed, allowedFromBlocked, additiveFromAllowed } = ctx.api;
    const T = st.t;
    const allowed = { data: Uint8Array.from(st.allowed.flat(), Number), shape: [T, T] };
    const blocked = blockedFromAllowed(allowed);
    const additive = additiveFromAllowed(allowed);
    // Which key each query may see under the allowed mask, by the core's rule.
    const pairs = ctx.lab.allowedPairs([T, T], { mask: allowed });
    const at = (m, i, j) => m.data[i * T + j];
    const setAllowed = (data) => { st.allowed = Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => data[i * T + j] === 1)); };

    // The three panels are kept from one click to the next: their grids are updated in place.
    const [allowedHost, blockedHost, additiveHost] = figures(ctx.slot(this.id, 'panels'), [
      ['allowed', 'Allowed: 1 = may attend', 'F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)'],
      ['blocked', 'Blocked: 1 = ignore', 'nn.MultiheadAttention(...)(x, x, x, attn_mask=blocked)'],
      ['additive', 'Additive: added to the scores', 'scores + additive  (0 or −∞)'],
    ].map(([key, title, api]) => ({ key, cls: 'conv-panel', caption: () => [h('strong', { text: title }), h('br'), h('code', { text: api })] })));
    maskGrid(allowedHost, {
      name: 'conv-allowed', rows: T, cols: T, get: (i, j) => at(allowed, i, j), label: 'Allowed mask: pressed means allowed',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '1' : '0'), badRows: emptyRowsOf(pairs),
      onToggle: (i, j) => {
        const data = allowed.data.slice();
        data[i * T + j] = 1 - data[i * T + j];
        setAllowed(data);
        ctx.commit(this.prefix, { edited: true, panel: 'allowed', cell: [i, j] });
      },
    });
    maskGrid(blockedHost, {
      name: 'conv-blocked', rows: T, cols: T, get: (i, j) => at(blocked, i, j), label: 'Blocked mask: pressed means blocked',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '1' : '0'), pressedMeans: 'blocked',
      onToggle: (i, j) => {
        const data = blocked.data.slice();
        data[i * T + j] = 1 - data[i * T + j];
        setAllowed(allowedFromBlocked({ data, shape: [T, T] }).data);
        ctx.commit(this.prefix, { edited: true, panel: 'blocked', cell: [i, j] });
      },
    });
    maskGrid(additiveHost, {
      name: 'conv-additive', rows: T, cols: T, get: (i, j) => at(additive, i, j) === 0, label: 'Additive mask: 0 keeps a score, minus infinity removes it',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '0' : '−∞'),
    });
    if (detail && detail.panel) {
      const grid = ctx.slot(this.id, 'panels').querySelector(`[data-mask="conv-${detail.panel}"]`);
      if (grid && !grid.contains(grid.ownerDocument.activeElement) && !grid.contains(grid.getRootNode().activeElement)) refocusMaskCell(grid, ...detail.cell);
    }

    const hidden = blockedFrom(pairs);
    let diagonalOk = true;
    for (let i = 0; i < T; i++) if (hidden(i, i)) diagonalOk = false;
    setText(this.diagonal, diagonalOk ? '✓ Every query may attend to itself: the diagonal is allowed in the allowed mask and 0 in the blocked mask.'
      : '⚠ Some query may not attend to itself: for a causal self-attention mask that usually means the convention was flipped.');

    // What happens if the allowed mask is handed, unchanged, to an API that
    // reads 1 as "blocked". The core runs each query on its own, so that a
    // row it refuses (a query left with no key) does not hide the others.
    const res = ctx.core(this.status, () => {
      const rows = [];
      for (let i = 0; i < T; i++) {
        try {
          rows.push(ctx.lab.sdpa(zeros([], 1), zeros([], T), zeros([], T), { mask: { data: blocked.data.subarray(i * T, (i + 1) * T), shape: [1, T] } }));
        } catch (err) {
          if (err.code !== 'ALL_MASKED_ROW') throw err;
          rows.push(null);
        }
      }
      return rows;
    }, [], { keepNote: false });
    if (!res) return;
    if (isEdit(detail)) this.say(detail, T, [allowed, blocked, additive], diagonalOk);
    const refused = new Set(res.flatMap((r, i) => (r ? [] : [i])));
    const values = new Float32Array(T * T).fill(NaN);
    res.forEach((r, i) => { if (r) values.set(r.weights.data, i * T); });
    if (refused.size === 0) ctx.publish(`${this.prefix}.misuse`, { weights: { data: values, shape: [T, T] }, output: null, scores: null });
    const [mapHost] = figures(ctx.slot(this.id, 'misuse'), [{ key: 'misuse', caption: 'equal scores, mask read the wrong way round' }]);
    heatmap(mapHost, { name: 'conv-misuse', values, rows: T, cols: T, digits: 3, refusedRows: refused,
      blocked: blockedFrom(ctx.lab.allowedPairs([T, T], { mask: blocked })), rowLabel: queryLabel, colLabel: keyLabel,
      caption: 'Weights when the mask meaning is flipped' });
    // The note is written again only when the refused rows change (most clicks keep them).
    const names = [...refused].map((i) => queryLabel(i));
    const note = ctx.slot(this.id, 'misuse-note');
    const others = T - refused.size; // rows the core did compute
    const noteKey = `${names.join(', ')} of ${T}`;
    if (note.noteKey === noteKey && note.firstChild) return;
    note.noteKey = noteKey;
    note.replaceChildren(
      refused.size === 0 ? h('p', { class: 'readout', 'data-out': 'conv-refused', text: 'Read this way, every query still has a key, so the core raises no error: the weights are simply wrong.' })
        : h('p', { class: 'readout', 'data-out': 'conv-refused' },
          h('strong', { text: `${names.join(', ')} ${refused.size > 1 ? 'are' : 'is'} marked ⚠: ` }),
          `read the wrong way round, the mask leaves ${refused.size > 1 ? 'these queries' : 'this query'} with no key at all. `
          + 'A softmax over nothing has no answer, so the core refuses such a row (ALL_MASKED_ROW) instead of returning NaN. '
          + (others === 0 ? 'No row is left to compute.'
            : others === 1 ? 'The one other row is computed, and it reads only the keys it should not.'
              : 'The other rows are computed, and they read only the keys they should not.')),
    );
  },

  /**
   * An edit's sentence: a click as the pair in the three masks, written as
   * their cells show it; a new T or a reset as the causal masks it made.
   * Either ends with whether every query may still attend to itself.
   */
  say(detail, T, [allowed, blocked, additive], diagonalOk) {
    const diagonal = diagonalOk ? 'every query may attend to itself.' : 'some query may not attend to itself.';
    if (!detail.cell) {
      this.said.say(`Causal masks, ${T} × ${T}: ${diagonal}`);
      return;
    }
    const [i, j] = detail.cell;
    const at = (m) => m.data[i * T + j];
    this.said.say(`Query ${i + 1}, key ${j + 1} now ${at(allowed) ? 'allowed' : 'blocked'} `
      + `(allowed ${at(allowed) ? '1' : '0'}, blocked ${at(blocked) ? '1' : '0'}, additive ${at(additive) === 0 ? '0' : '−∞'}); ${diagonal}`);
  },
};

export default conventions;
