// Online softmax, the recurrence of FlashAttention: one query row meets the
// keys a tile at a time, keeping a running max m, a running sum l and an
// accumulator. Every number shown comes from the core's tiled path
// (lab.sdpaTiled with its trace) and its ordinary path (lab.sdpa).

import { h, numberGrid, numberField, checkbox, statusLine, fmt, fmtVec, fmtSci, redraw, setText, stepButtons } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { dimLabel, keyLabel } from './common.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

const T = 6; // keys
const D = 2; // width of q, k and v

/** The agreement the check asks of the tiled path, relative to the output's size. */
const AGREEMENT = 1e-6;

export const onlineSoftmax = {
  id: 'online-softmax',
  prefix: 'flash',
  title: 'Online softmax: attention a tile of keys at a time',
  body: `
<p>Why the largest score first? In float32, e<sup>x</sup> overflows to infinity once x passes about 88.7 (the largest float is about 3.4e38), and a score of 100 is easily reached. So softmax subtracts the row’s largest score before exponentiating: every exponent is then at most 0 and every exponential at most 1. The shares do not change, because the common factor e<sup>−max</sup> cancels in the division. A masked score of −∞ stays −∞, and its exponential is exactly 0. A row whose every score is −∞ has no largest finite score and no key to read: the core refuses it (ALL_MASKED_ROW) instead of returning NaN.</p>
<p>So softmax needs the largest score of a row before it can take a single exponential, and its sum before it can divide. Stored in full, the scores of T queries against T keys fill a T × T matrix: 4 bytes × 4096² = 64 MiB for one head at T = 4096. FlashAttention never stores them, and that is where its speed comes from: on a GPU, writing those scores out to the card’s main memory and reading them back costs more time than the arithmetic itself, so an exact kernel that keeps each tile in fast on-chip memory moves far fewer bytes. The result is the same attention, up to rounding. Each query row reads the keys a tile at a time and keeps three things:</p>
<ul>
  <li>the running max <var>m</var> of the scores seen so far, −∞ before the first tile;</li>
  <li>the running sum <var>l</var> of their exponentials, each taken against <var>m</var>, 0 before the first tile;</li>
  <li>the accumulator: the values weighted by those exponentials, summed, 0 before the first tile.</li>
</ul>
<p>When a tile brings a larger score, the max moves from m<sub>old</sub> to m<sub>new</sub>, and everything summed so far was taken against the old max. Multiplying <var>l</var> and the accumulator by exp(m<sub>old</sub> − m<sub>new</sub>) puts them on the new footing. After the last tile, accumulator ÷ <var>l</var> equals softmax(scores) · V up to float rounding: the two paths compute the same thing but round at different steps. Memory stayed proportional to T · d.</p>
<p>Edit the query, the keys and the values, change the tile width, and step through the tiles. The numbers come from the core’s tiled path, which <code>lab.sdpa</code> runs whenever it is not asked for the weights.</p>
<div class="inputs" data-slot="inputs"></div>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<div class="result" data-slot="scores"></div>
<div class="result" data-slot="steps"></div>
<div class="result" data-slot="check"></div>
`,
  fields: [
    ['q', codec.matrix(() => 1, () => D), () => [[1, 0]]],
    ['k', codec.matrix(() => T, () => D), () => [[0, 1], [1, 0], [0.5, 1], [3, 0], [2, 1], [4, 0.5]]],
    ['v', codec.matrix(() => T, () => D), () => [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2], [1, -1]]],
    ['tile', codec.int(1, T), () => 2],
    ['step', codec.int(1, T), () => 1],
    ['bug', codec.bool(), () => false],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    const tileCount = () => Math.ceil(T / st.tile);
    this.tileField = numberField({
      label: 'Keys per tile', name: 'flash-tile', value: st.tile, integer: true, min: 1, max: T,
      onValue: (value) => { st.tile = value; st.step = Math.min(st.step, tileCount()); commit(); },
    });
    ({ prev: this.prev, next: this.next } = stepButtons({ noun: 'tile', name: 'flash', count: tileCount, at: () => st.step,
      go: (n) => { st.step = n; commit(); }, say: (text) => this.said.say(text) }));
    this.all = h('button', { type: 'button', 'data-field': 'flash-all', text: 'All tiles' });
    this.all.addEventListener('click', () => { st.step = tileCount(); commit(); });
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Query q', name: 'flash-q', matrix: st.q, rowLabel: () => 'q', colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'Keys', name: 'flash-k', matrix: st.k, rowLabel: keyLabel, colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'Values', name: 'flash-v', matrix: st.v, rowLabel: (j) => `value ${j + 1}`, colLabel: dimLabel, onChange: commit }),
    );
    this.stepText = h('span', { class: 'num-out', 'data-out': 'flash-step' });
    ctx.slot(this.id, 'controls').replaceChildren(
      this.tileField,
      h('div', { class: 'field stepper' }, this.prev, this.stepText, this.next, this.all),
      checkbox({
        label: 'Break it: drop the rescale exp(m_old − m_new) (bug no-rescale)', name: 'flash-bug', checked: st.bug,
        onToggle: (on) => { st.bug = on; commit(); },
      }),
    );
    this.said = announcer(ctx.node(this.id), 'online-softmax');
    this.status = statusLine(this.said);
    // An edit's result (the tile reached, and under the last tile the
    // comparison) is said once the edits pause.
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
  },

  update(ctx, st, detail) {
    const options = { blockKeys: st.tile, trace: true, bug: st.bug ? 'no-rescale' : undefined };
    const res = ctx.core(this.status, () => ({
      tiled: ctx.lab.sdpaTiled(st.q, st.k, st.v, options),
      plain: ctx.lab.sdpa(st.q, st.k, st.v),
    }), [ctx.slot(this.id, 'steps'), ctx.slot(this.id, 'check')]);
    if (!res) return;
    const { tiled, plain } = res;
    ctx.publish(`${this.prefix}.main`, plain);
    const tiles = tiled.tiles;
    st.step = Math.min(st.step, tiles);
    setText(this.stepText, `Tile ${st.step} of ${tiles}`);
    // At either end a button is marked unavailable (aria-disabled), not
    // disabled: it keeps the focus, so a key held down stops at the end
    // instead of the focus falling to the page or turning back (stepButtons stops there).
    this.prev.setAttribute('aria-disabled', String(st.step <= 1));
    this.next.setAttribute('aria-disabled', String(st.step >= tiles));

    // The row of scores, grouped by tile, so the learner sees where the max moves.
    const scores = plain.scores.data;
    const tileOf = (j) => Math.floor(j / st.tile);
    const scoreRow = h('tr', {}, h('th', { scope: 'row', text: 'score q·k / √d' }));
    const head = h('tr', {}, h('td', { class: 'corner' }));
    for (let j = 0; j < T; j++) {
      const shown = tileOf(j) < st.step;
      head.append(h('th', { scope: 'col', class: `tile-${tileOf(j) % 2}`, text: `${keyLabel(j)} (tile ${tileOf(j) + 1})` }));
      scoreRow.append(h('td', { class: `tile-${tileOf(j) % 2}${shown ? '' : ' not-yet'}`, 'data-col': j, text: fmt(scores[j], 3) }));
    }
    redraw(ctx.slot(this.id, 'scores'), h('div', { class: 'grid-wrap' },
      h('table', { class: 'values sticky-rows', 'data-values': 'flash-scores' }, h('caption', { text: 'The query’s scores, by tile' }),
        h('thead', {}, head), h('tbody', {}, scoreRow))),
      h('p', { class: 'hint', text: 'Every other tile is shaded, to tell the tiles apart. Scores in grey italics belong to tiles not read yet.' }));

    // One line per tile reached: m, the rescale, l and the accumulator after it.
    const { max, sum, rescale, accumulator } = tiled.trace;
    const rows = [];
    for (let t = 0; t < st.step; t++) {
      const acc = accumulator.data.subarray(t * D, (t + 1) * D);
      const first = t * st.tile + 1, last = Math.min(T, (t + 1) * st.tile);
      rows.push(h('tr', { 'data-tile': t },
        h('th', { scope: 'row', text: first === last ? `${t + 1}: key ${first}` : `${t + 1}: keys ${first}–${last}` }),
        h('td', { 'data-out': 'flash-m', text: fmt(max.data[t], 4) }),
        h('td', { 'data-out': 'flash-rescale', class: t > 0 && rescale.data[t] < 1 ? 'moved' : '', text: fmt(rescale.data[t], 4) }),
        h('td', { 'data-out': 'flash-l', text: fmt(sum.data[t], 4) }),
        h('td', { 'data-out': 'flash-acc', text: fmtVec(acc, 4) })));
    }
    redraw(ctx.slot(this.id, 'steps'), h('div', { class: 'grid-wrap' },
      h('table', { class: 'values sticky-rows', 'data-values': 'flash-trace' },
        h('caption', { text: 'After each tile: running max m, rescale exp(m_old − m_new), running sum l, accumulator' }),
        h('thead', {}, h('tr', {}, ...['tile', 'm', 'rescale', 'l', 'accumulator'].map((c) => h('th', { scope: 'col', text: c })))),
        h('tbody', {}, ...rows))),
      h('p', { class: 'hint', 'data-out': 'flash-first', text: st.bug
        ? 'With the bug on, every rescale is 1, even where the max moves: what was summed against an old max is kept as if it had been taken against the new one. (At tile 1 that costs nothing: the sum and accumulator were still empty.)'
        : 'Tile 1’s rescale is exp(−∞ − m) = 0: it multiplies the empty sum and accumulator, which is nothing to keep.' }));

    // The check: after the last tile, accumulator / l against the ordinary softmax.
    const checkHost = ctx.slot(this.id, 'check');
    if (st.step < tiles) {
      redraw(checkHost, h('p', { class: 'readout', 'data-out': 'flash-wait',
        text: `Step to tile ${tiles} to compare the result with the ordinary softmax.` }));
      // Short of the last tile, the running numbers after it, as its row shows them.
      const t = st.step - 1;
      const first = t * st.tile + 1, last = Math.min(T, (t + 1) * st.tile);
      if (isEdit(detail)) {
        this.said.say(`${this.stepText.textContent}, ${first === last ? `key ${first}` : `keys ${first}–${last}`}: running max m ${fmt(max.data[t], 4)}, `
          + `running sum l ${fmt(sum.data[t], 4)}, accumulator ${fmtVec(accumulator.data.subarray(t * D, (t + 1) * D), 4)}.`);
      }
      return;
    }
    const got = tiled.output.data, want = plain.output.data;
    let diff = 0, size = 1;
    for (let c = 0; c < D; c++) {
      diff = Math.max(diff, Math.abs(got[c] - want[c]));
      size = Math.max(size, Math.abs(want[c]));
    }
    const ok = diff <= AGREEMENT * size;
    redraw(checkHost,
      h('p', { class: 'readout' }, 'Tiled result, accumulator ÷ l: ', h('strong', { 'data-out': 'flash-tiled', text: fmtVec(got, 4) })),
      h('p', { class: 'readout' }, 'Ordinary softmax(scores) · V: ', h('strong', { 'data-out': 'flash-plain', text: fmtVec(want, 4) })),
      h('p', { class: `check ${ok ? 'pass' : 'fail'}`, 'data-check': 'flash-equal', 'data-passed': String(ok) },
        ok ? '✓ Equal up to float rounding: the largest difference is ' : '✗ Not equal: the largest difference is ',
        h('strong', { 'data-out': 'flash-diff', text: fmtSci(diff) }),
        ok ? ` (at most ${fmtSci(AGREEMENT)} × the output’s size).`
          : st.bug ? '. Without the rescale, exponentials taken against different maxima are added as if they were alike.'
            : '.'),
    );
    if (!isEdit(detail)) return;
    const [tiledText, plainText, diffText] = [fmtVec(got, 4), fmtVec(want, 4), fmtSci(diff)];
    this.said.say(ok ? `${this.stepText.textContent}: the tiled result ${tiledText} equals the ordinary softmax ${plainText} up to float rounding; largest difference ${diffText}.`
      : `${this.stepText.textContent}: the tiled result ${tiledText} is not the ordinary softmax ${plainText}; largest difference ${diffText}.`);
  },
};

export default onlineSoftmax;
