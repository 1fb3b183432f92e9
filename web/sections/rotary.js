// Rotary position embeddings (RoPE): q and k are turned by angles that grow
// with their positions, so their score depends only on how far apart they
// are. Every number shown comes from the core (lab.applyRope rotates, and
// lab.sdpa with scale 1 gives the dot products).

import { h, s, numberGrid, numberField, statusLine, fmt, fmtVec, fmtSci, setText, setCheck } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { dimLabel } from './common.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

const D = 4; // even: entry c turns with entry c + D/2
const SAME = 1e-4; // two scores count as equal within this, relative to their size

export const rotary = {
  id: 'rotary',
  prefix: 'rope',
  title: 'Rotary positions: scores that depend on distance',
  body: `
<p>Attention by itself does not know where a token sits: permute the tokens and the outputs are permuted with them. Rotary position embeddings (RoPE) put the position in by turning q and k. Their entries are taken in pairs, pair i being entry i together with entry i + d/2 (with d = 4 here, d1 with d3 and d2 with d4), and pair i = 1, …, d/2 is turned by the angle position × 10000<sup>−2(i−1)/d</sup>: the first pair by the position itself in radians, later pairs slower. This split-halves pairing is the one of the multi-head module here, of GPT-NeoX and of Hugging Face’s Llama. The RoFormer paper and Meta’s own Llama code pair neighbours instead, entries 2i − 1 and 2i: the same model, once the columns of the query and key projections are put in the other order. Pairing needs an even head width: the core refuses RoPE when d is odd. The first token stands at position 0 and is not turned at all.</p>
<p>A dot product of two turned vectors depends only on the difference of their angles. So the score of a query at position p with a key at position p′ depends on p − p′ alone: shift both positions by the same amount and the score does not move; move just one and it does.</p>
<div class="inputs" data-slot="inputs"></div>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<div class="result" data-slot="scores"></div>
<div class="result" data-slot="picture"></div>
`,
  fields: [
    ['q', codec.matrix(() => 1, () => D), () => [[1, 0.5, -0.5, 1]]],
    ['k', codec.matrix(() => 1, () => D), () => [[0.8, -1, 0.6, 0.2]]],
    ['pq', codec.int(0, 100000), () => 5],
    ['pk', codec.int(0, 100000), () => 2],
    ['shift', codec.int(1, 100000), () => 7],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Query q', name: 'rope-q', matrix: st.q, rowLabel: () => 'q', colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'Key k', name: 'rope-k', matrix: st.k, rowLabel: () => 'k', colLabel: dimLabel, onChange: commit }),
    );
    const field = (label, name, key, min) => numberField({
      label, name, value: st[key], integer: true, min, max: 100000, size: 'sm',
      onValue: (value) => { st[key] = value; commit(); },
    });
    // Positions are offsets from 0 (they enter the angle as they are); the
    // page numbers tokens from 1, so the line beside the fields says which is which.
    this.tokenNote = h('p', { class: 'hint', 'data-out': 'rope-tokens' });
    ctx.slot(this.id, 'controls').replaceChildren(
      field('Position of the query', 'rope-pq', 'pq', 0),
      field('Position of the key', 'rope-pk', 'pk', 0),
      field('Shift by', 'rope-shift', 'shift', 1),
      this.tokenNote,
    );
    this.said = announcer(ctx.node(this.id), 'rotary');
    this.status = statusLine(this.said);
    // An edit's result (the three scores) is said once the edits pause.
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
  },

  update(ctx, st, detail) {
    // Each case: the query and the key rotated at their positions, then their dot product.
    const cases = [
      ['as given', st.pq, st.pk],
      ['both shifted', st.pq + st.shift, st.pk + st.shift],
      ['only the query shifted', st.pq + st.shift, st.pk],
    ];
    const res = ctx.core(this.status, () => cases.map(([, pq, pk]) => {
      const rq = ctx.lab.applyRope(st.q, { positions: [pq] });
      const rk = ctx.lab.applyRope(st.k, { positions: [pk] });
      const dot = ctx.lab.sdpa(rq, rk, [[0]], { scale: 1 }).scores.data[0];
      return { rq, rk, dot };
    }), [ctx.slot(this.id, 'scores'), ctx.slot(this.id, 'picture')]);
    setText(this.tokenNote, `Positions count from 0 and tokens from 1: position 0 is token 1, so the query at position ${st.pq} is token ${st.pq + 1} and the key at position ${st.pk} is token ${st.pk + 1}.`);
    if (!res) return;
    const [given, both, one] = res;
    const size = Math.max(1, Math.abs(given.dot));
    const sameWhenBoth = Math.abs(both.dot - given.dot) <= SAME * size;
    const movesWhenOne = Math.abs(one.dot - given.dot) > SAME * size;
    const parts = this.parts(ctx);
    cases.forEach(([, pq, pk], n) => {
      const row = parts.rows[n];
      setText(row.positions, `${pq}, ${pk}`);
      setText(row.distance, String(pq - pk));
      setText(row.score, fmt(res[n].dot, 4));
    });
    // The two checks are set in place from one edit to the next. They are
    // not live (they change with every keystroke): the scores are said below.
    const [bothCheck, oneCheck] = parts.checks;
    setCheck(bothCheck.node, sameWhenBoth);
    setText(bothCheck.lead, sameWhenBoth ? '✓ Shifting both positions by ' : '✗ Shifting both positions by ');
    setText(bothCheck.shift, String(st.shift));
    setText(bothCheck.middle, sameWhenBoth ? ` keeps the score: ${fmt(given.dot, 4)} and ${fmt(both.dot, 4)} differ by `
      : ` moves the score here: ${fmt(given.dot, 4)} and ${fmt(both.dot, 4)} differ by `);
    setText(bothCheck.diff, fmtSci(Math.abs(both.dot - given.dot)));
    // In exact arithmetic the two scores are equal, so a gap beyond the
    // check's tolerance is float32 rounding (large entries that cancel).
    setText(bothCheck.tail, sameWhenBoth ? '.' : '. In exact arithmetic they would be equal: the gap is float32 rounding, large here because large products cancel in the dot product.');
    setCheck(oneCheck.node, movesWhenOne);
    setText(oneCheck.lead, movesWhenOne ? '✓ Shifting only the query changes the score, by ' : '✗ Shifting only the query leaves the score almost where it was: it moves by ');
    setText(oneCheck.diff, fmtSci(Math.abs(one.dot - given.dot)));
    setText(oneCheck.tail, movesWhenOne ? ': the distance changed.' : `. ${stillReason(st)}`);

    // The first pair (entries 1 and 1 + d/2) of q and k, before and after the rotation.
    const noArrow = drawPair(parts.picture, st, given);
    setText(parts.caption, `The first pair of entries (d1, d${1 + D / 2}) as arrows: q turns by its position ${st.pq} in radians, k by ${st.pk}. ${noArrow}`);
    setText(parts.qPair, fmtVec([given.rq.data[0], given.rq.data[D / 2]], 3));
    setText(parts.kPair, fmtVec([given.rk.data[0], given.rk.data[D / 2]], 3));
    if (!isEdit(detail)) return;
    // The three scores as the table shows them, each shifted one with its check's verdict.
    const [shownGiven, shownBoth, shownOne] = parts.rows.map((row) => row.score.textContent);
    this.said.say(`Score ${shownGiven} at positions ${st.pq}, ${st.pk}: `
      + `${sameWhenBoth ? `it stays ${shownBoth}` : `it moves to ${shownBoth}, by float32 rounding,`} when both shift by ${st.shift}, `
      + `and ${movesWhenOne ? `moves to ${shownOne}` : `is almost unchanged, ${shownOne},`} when only the query does.`);
  },

  /**
   * The score table, the two checks and the picture, built once per mount
   * (or when a host holds something else): an edit sets their texts and
   * the picture's coordinates in place.
   */
  parts(ctx) {
    const scoresHost = ctx.slot(this.id, 'scores');
    const pictureHost = ctx.slot(this.id, 'picture');
    const kept = this.built;
    if (kept && scoresHost.contains(kept.table) && pictureHost.contains(kept.picture.svg)) return kept;
    const rows = ['as given', 'both shifted', 'only the query shifted'].map((label, n) => {
      const row = { positions: h('td'), distance: h('td'), score: h('td', { 'data-out': `rope-${['given', 'both', 'one'][n]}` }) };
      row.node = h('tr', {}, h('th', { scope: 'row', text: label }), row.positions, row.distance, row.score);
      return row;
    });
    const table = h('table', { class: 'values', 'data-values': 'rope-scores' },
      h('caption', { text: 'Score rope(q)·rope(k) at three pairs of positions (counted from 0)' }),
      h('thead', {}, h('tr', {}, ...['', 'positions (q, k)', 'distance', 'score'].map((c, i) => (i ? h('th', { scope: 'col', text: c }) : h('td', { class: 'corner' }))))),
      h('tbody', {}, rows.map((row) => row.node)));
    const text = () => document.createTextNode('');
    const both = { lead: text(), shift: text(), middle: text(), diff: h('strong', { 'data-out': 'rope-diff-both' }), tail: text() };
    both.node = h('p', { class: 'check', 'data-check': 'rope-shift-both' }, both.lead, both.shift, both.middle, both.diff, both.tail);
    const one = { lead: text(), diff: h('strong', { 'data-out': 'rope-diff-one' }), tail: text() };
    one.node = h('p', { class: 'check', 'data-check': 'rope-shift-one' }, one.lead, one.diff, one.tail);
    scoresHost.replaceChildren(h('div', { class: 'grid-wrap' }, table), both.node, one.node);
    const picture = pairPicture();
    const caption = text();
    const qPair = h('span', { 'data-out': 'rope-q-pair' });
    const kPair = h('span', { 'data-out': 'rope-k-pair' });
    pictureHost.replaceChildren(h('figure', { class: 'rope-pic' }, picture.svg,
      h('figcaption', {}, caption, 'Faint: before; solid: after (q blue, k green). q at ', qPair, ', k at ', kPair, '.')));
    this.built = { table, rows, checks: [both, one], picture, caption, qPair, kPair };
    return this.built;
  },
};

/**
 * Why shifting only the query left the score where it was. A pair of
 * entries adds to the score only where both q and k have it non-zero; with
 * no such pair every score is 0 at every position. Otherwise the shift
 * happened to turn the pairs to almost the same score.
 */
function stillReason(st) {
  const q = st.q[0], k = st.k[0];
  const zero = (v) => v.every((x) => x === 0);
  if (zero(q) || zero(k)) {
    const which = zero(q) && zero(k) ? 'q and k are' : zero(q) ? 'q is' : 'k is';
    return `${which} all zeros, so the score is 0 at every position: there is nothing for the rotation to turn.`;
  }
  const shared = Array.from({ length: D / 2 }, (_, c) => (q[c] !== 0 || q[c + D / 2] !== 0) && (k[c] !== 0 || k[c + D / 2] !== 0));
  if (!shared.includes(true)) return 'No pair of entries is non-zero in both q and k, so the score is 0 at every position: there is nothing for the rotation to turn.';
  return 'The score still depends on the distance, but for this shift the turned pairs happen to give almost the same score again: the first pair turns by the shift in radians, and a shift near a multiple of 2π brings it back.';
}

const W = 220, C = W / 2; // the picture's size, and its centre

/** The SVG of the first pair of q and k, before (faint) and after rotation (solid); drawPair() places its arrows. */
function pairPicture() {
  const arrow = (cls) => s('line', { x1: C, y1: C, x2: C, y2: C, class: `rope-arrow ${cls}`, 'marker-end': 'url(#rope-head)' });
  const label = (name) => s('text', { x: C, y: C, class: `rope-label ${name}`, text: name });
  const title = s('title');
  const arrows = { qBefore: arrow('q faint'), kBefore: arrow('k faint'), q: arrow('q'), k: arrow('k') };
  const labels = { q: label('q'), k: label('k') };
  const svg = s('svg', { viewBox: `0 0 ${W} ${W}`, class: 'rope-svg', role: 'img' },
    title,
    s('defs', {}, s('marker', { id: 'rope-head', viewBox: '0 0 10 10', refX: '9', refY: '5', markerWidth: '6', markerHeight: '6', orient: 'auto-start-reverse' },
      s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'rope-head' }))),
    s('circle', { cx: C, cy: C, r: C - 14, class: 'rope-circle' }),
    s('line', { x1: 4, y1: C, x2: W - 4, y2: C, class: 'axis' }),
    s('line', { x1: C, y1: 4, x2: C, y2: W - 4, class: 'axis' }),
    arrows.qBefore, arrows.kBefore, arrows.q, arrows.k, labels.q, labels.k);
  return { svg, title, arrows, labels };
}

/**
 * Place the picture's arrows: the first pair of q and k before and after
 * RoPE, scaled to the circle. Returns the caption's sentence for a pair of
 * zeros, which has no arrow ('' when both have one).
 */
function drawPair(picture, st, given) {
  const before = { q: [st.q[0][0], st.q[0][D / 2]], k: [st.k[0][0], st.k[0][D / 2]] };
  const after = { q: [given.rq.data[0], given.rq.data[D / 2]], k: [given.rk.data[0], given.rk.data[D / 2]] };
  const reach = Math.max(1e-6, ...[...before.q, ...before.k].map(Math.abs), ...[...after.q, ...after.k].map(Math.abs));
  const scale = (C - 24) / reach;
  const set = (node, attrs) => { for (const [name, value] of Object.entries(attrs)) if (node.getAttribute(name) !== String(value)) node.setAttribute(name, value); };
  // A pair of zeros has no direction: its arrows and label are hidden (the caption says why).
  const tip = ([x, y], node) => set(node, { x2: C + x * scale, y2: C - y * scale, visibility: x === 0 && y === 0 ? 'hidden' : 'visible' });
  tip(before.q, picture.arrows.qBefore);
  tip(before.k, picture.arrows.kBefore);
  tip(after.q, picture.arrows.q);
  tip(after.k, picture.arrows.k);
  // a label just beyond the arrow's tip, along the arrow
  const label = ([x, y], node) => {
    const r = Math.hypot(x, y) * scale;
    const out = r > 0 ? (r + 11) / r : 1;
    set(node, { x: C + x * scale * out, y: C - y * scale * out, visibility: r > 0 ? 'visible' : 'hidden' });
  };
  label(after.q, picture.labels.q);
  label(after.k, picture.labels.k);
  const title = `The first pair of q and k before and after RoPE: q at position ${st.pq}, k at position ${st.pk}`;
  set(picture.svg, { 'aria-label': title });
  setText(picture.title, title);
  const none = ['q', 'k'].filter((name) => before[name][0] === 0 && before[name][1] === 0);
  if (none.length === 2) return 'The first pairs of q and k are both (0, 0), which has no direction, so neither has an arrow. ';
  return none.length === 1 ? `${none[0]}’s first pair is (0, 0), which has no direction, so it has no arrow. ` : '';
}

export default rotary;
