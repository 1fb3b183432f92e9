// Batches, heads and shapes: the shape table of multi-head attention and the split/merge picture.
// Every number shown comes from the wasm core.

import { h, numberField, checkbox, statusLine, fmtShape, fmtPlain, setText, sizedCanvas, pixelRatio, onPixelRatioChange, keptChildren } from '../lesson-ui.js';
import { headColour } from '../palette.js';
import { codec } from '../lesson-state.js';
import { mhaCache } from './common.js';
import { slot } from './markup.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';

// Modules kept for the sizes tried last (up to 1 MiB of weights each).
const SHAPE_MODULES = 8;
const PIC_MAX = 4; // the split/merge picture shows at most 4 positions, heads and channels per head

export const shapes = {
  id: 'shapes',
  prefix: 'shape',
  title: 'Batches, heads and shapes',
  body: `
<p>Real models run many sequences (a batch of B) and several heads (H) at once. Nothing about the idea changes: the extra axes simply ride along. Each head works in its own slice of the model width, so C = H × D. (Elsewhere on this page C is d<sub>model</sub>, D is d<sub>head</sub>, the d<sub>k</sub> of each head, and S, in step 3, is T<sub>k</sub>.) Three learned projections (each a weighted sum plus an optional bias) turn the input into Q, K and V; a fourth mixes the heads at the end.</p>
<ol>
  <li>Project and reshape (B, T, C) into (B, T, H, D).</li>
  <li>Swap the position and head axes to get (B, H, T, D).</li>
  <li>Run attention inside each head separately. Its keys and values have S source positions, so the weights are (B, H, T, S). Here x supplies queries, keys and values alike (self-attention), so S = T; in cross-attention S is the length of the other sequence.</li>
  <li>Swap back, and reshape to join the heads into (B, T, C). After a transpose the tensor’s memory is no longer in row order, so PyTorch’s <code>view</code> refuses it: call <code>.contiguous()</code> first, or use <code>reshape</code>, which copies when it must.</li>
  <li>Apply the output projection.</li>
</ol>
<p>Step 1 projects every head at once: Q, K and V each come from one C × C weight matrix, and the reshape cuts its C outputs into H slices of D. You could instead write H separate projections of C × D and loop over the heads. With the matching slices of the same weights it gives the same numbers, but as H small matrix products instead of one large one, and it hides that a head is just a slice of one wide projection: there are no extra parameters per head (the multi-head section counts them).</p>
<p>Try H = 2 with the other starting sizes: a batch of two sequences of 5 positions, split into two heads of 8 numbers. The context per head is then <span class="keep">(2, 2, 5, 8)</span> and the weights <span class="keep">(2, 2, 5, 5)</span>. Then a drill worth doing in your own code too, printing every shape on the way: with B = 2, H = 3, T = 5 and D = 4, say before you look what the scores must be; the table gives <span class="keep">(2, 3, 5, 5)</span>.</p>
<div class="controls" data-slot="controls"></div>
<div data-slot="status"></div>
<div class="result" data-slot="table"></div>
<h3>Splitting and merging, drawn</h3>
<p>Each square is one number of one sequence. The digit is its position and the letter the head it belongs to (a is head 1, b head 2, …); the colour repeats the letter. The picture uses at most four positions, heads and channels per head.</p>
<div data-slot="toggle"></div>
<div class="result" data-slot="picture"></div>
<p class="aside"><strong>Common mistake.</strong> Reshaping straight from (T, C) to (H, T, D) without the transpose gives a tensor of the right shape with the wrong contents: with more than one head and more than one position, a “head” then holds pieces of several heads from too few positions. Tick the box above to see it.</p>
`,
  presets: {
    shapes: {
      title: 'Batches, heads and shapes', result: 'shape.main', heads: ['shape', 'h'], seqLen: ['shape', 't'],
      blocks: [
        slot('controls', 'inputs', { cls: 'controls' }), slot('status'), slot('table', null, { cls: 'result' }),
        slot('toggle', 'inputs'), slot('picture', null, { cls: 'result' }),
      ],
    },
  },
  fields: [
    ['b', codec.int(1, 8), () => 2],
    ['h', codec.int(1, 8), () => 4],
    ['t', codec.int(1, 32), () => 5],
    ['d', codec.int(1, 32), () => 8],
    ['wrong', codec.bool(), () => false],
  ],

  mount(ctx, st) {
    const commit = (detail = EDITED) => ctx.commit(this.prefix, detail);
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
      onToggle: (on) => { st.wrong = on; commit({ edited: 'wrong' }); },
    }));
    this.said = announcer(ctx.node(this.id), 'shapes');
    this.status = statusLine(this.said);
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);
    this.mha?.free(); // mounted again (a new state): give back the old module
    this.mha = mhaCache(SHAPE_MODULES);
    // The picture's canvases are drawn at the device's pixel ratio: a new ratio draws them again.
    this.stopRatio?.();
    this.stopRatio = onPixelRatioChange(() => this.redrawPicture(ctx));
  },

  update(ctx, st, detail) {
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
      ['scores and weights', res.weights.shape, 'one distribution over the S keys per query, per head; (B, H, T, S) with S = T here (from the core)', true],
      ['context per head: weights × V', [B, H, T, D], 'each head mixes its own D-wide values', false],
      ['merge: transpose back, join heads', [B, T, Cout], 'C = H × D again', false],
      ['output after the output projection', res.output.shape, 'mixes the heads together (from the core)', true],
    ];
    // The table's rows never change, only their shapes: built once, then its texts are set.
    const host = ctx.slot(this.id, 'table');
    if (!host.shapeParts || !host.contains(host.shapeParts.caption)) {
      const caption = h('caption');
      const cells = rows.map(([name]) => h('td', { class: 'mono', 'data-shape': name }));
      const count = h('strong', { 'data-out': 'shape-count' });
      const unit = document.createTextNode('');
      host.replaceChildren(
        h('div', { class: 'grid-wrap' }, h('table', { class: 'shape-table', 'data-values': 'shape-table' },
          caption,
          h('thead', {}, h('tr', {}, ...['Tensor', 'Shape', 'Meaning'].map((t) => h('th', { scope: 'col', text: t })))),
          h('tbody', {}, rows.map(([name, , meaning, fromCore], k) => h('tr', { class: fromCore ? 'from-core' : '' },
            h('th', { scope: 'row', text: name }), cells[k], h('td', { text: meaning })))))),
        h('p', { class: 'readout' }, 'The weights hold ', count, unit,
          ' (B × H × T × S, and S = T here). Double T and this grows four times; D does not appear in it at all.'),
      );
      host.shapeParts = { caption, cells, count, unit };
    }
    const parts = host.shapeParts;
    setText(parts.caption, `Tensor shapes for B = ${B}, H = ${H}, T = ${T}, D = ${D}`);
    rows.forEach(([, shape], k) => setText(parts.cells[k], fmtShape(shape)));
    setText(parts.count, fmtPlain(res.weights.data.length));
    const unit = res.weights.data.length === 1 ? ' number' : ' numbers';
    if (parts.unit.data !== unit) parts.unit.data = unit;
    // The picture caps every size at PIC_MAX, so most edits leave it as it is.
    const pic = [Math.min(T, PIC_MAX), Math.min(H, PIC_MAX), Math.min(D, PIC_MAX), st.wrong, Math.max(T, H, D) > PIC_MAX];
    ctx.part(this, 'picture', pic, () => this.drawPicture(ctx, ...pic));
    this.picture = pic;
    if (!isEdit(detail)) return;
    // The switch is said as the picture's verdict and its first head; a size
    // as the weights' shape and count, and the output's shape.
    const { titles, notes } = ctx.slot(this.id, 'picture').picParts;
    const verdict = titles[1].textContent;
    this.said.say(detail.edited === 'wrong' ? `${verdict[0].toUpperCase()}${verdict.slice(1)}. ${notes.firstChild?.textContent ?? ''}`.trim()
      : `Weights ${parts.cells[4].textContent}: ${parts.count.textContent} numbers. Output ${parts.cells[7].textContent}.`);
  },

  /**
   * The split/merge picture for one sequence, with small sizes. Its squares
   * are drawn on canvases (the picture is hidden from screen readers: its
   * notes and the table say what it shows): up to 200 squares as elements
   * made every redraw's style, layout and paint several times slower. The
   * three canvases are kept from one draw to the next, and one is drawn
   * again only when its squares change. Each carries its squares' labels in
   * data-cells, block by block and row by row.
   */
  drawPicture(ctx, T, H, D, wrong, capped) {
    const C = H * D;
    const head = (c) => Math.floor(c / D);
    // Where cell (head hh, position t, channel d) of the per-head tensor comes from in x (T × C).
    const source = (hh, t, d) => {
      if (!wrong) return [t, hh * D + d];
      const flat = hh * T * D + t * D + d; // reshaping (T, C) straight to (H, T, D)
      return [Math.floor(flat / C), flat % C];
    };
    const host = ctx.slot(this.id, 'picture');
    if (!host.picParts || !host.contains(host.picParts.x)) {
      const step = (canvas) => h('div', { class: 'pic-step' }, h('p', { class: 'pic-title' }), canvas);
      const [x, blocks, merged] = [0, 1, 2].map(() => h('canvas', { class: 'pic-canvas' }));
      const steps = [step(x), step(blocks), step(merged)];
      const notes = h('ul', { class: 'pic-notes', 'data-out': 'shape-notes' });
      host.replaceChildren(h('div', { class: 'picture', 'aria-hidden': 'true' }, ...steps), notes);
      // Sizes follow the page's font size, and the fonts are the page's, read once here.
      const style = getComputedStyle(host);
      const rem = parseFloat(getComputedStyle(host.ownerDocument.documentElement).fontSize) || 16;
      host.picParts = {
        x, blocks, merged, titles: steps.map((n) => n.firstChild), notes, images: new Map(),
        square: Math.round(1.3 * rem), gap: 2, blockGap: Math.round(0.8 * rem), labelHeight: Math.round(1.2 * rem),
        font: `700 ${Math.round(0.7 * rem)}px ${style.getPropertyValue('--mono').trim() || 'monospace'}`,
        labelFont: `${Math.round(0.75 * rem)}px ${style.fontFamily}`,
        width: Infinity, // the picture's width, as last observed: blocks that do not fit in it wrap
      };
      // Observed, not read: its size arrives after a layout, and a new width
      // draws the picture again (only the blocks change, when fewer or more fit).
      host.picObserver?.disconnect(); // the picture's earlier elements, now replaced
      if (typeof ResizeObserver === 'function') {
        host.picObserver = new ResizeObserver(([entry]) => {
          const { width } = entry.contentRect;
          if (width === host.picParts.width) return; // only taller or shorter
          host.picParts.width = width;
          this.redrawPicture(ctx);
        });
        host.picObserver.observe(host);
      }
    }
    const parts = host.picParts;
    const { x, blocks, merged, titles, notes, square, gap } = parts;
    const colours = Array.from({ length: H }, (_, hh) => headColour(hh, H));
    /**
     * Draw `count` blocks of rows × cols squares side by side on `canvas`,
     * each named name(b) above it when given, in as many lines of blocks as
     * the picture's width needs. Square (row r, column k) of block b shows
     * the position and head of at(b, r, k), on the head's colour.
     */
    const fill = (canvas, count, rows, cols, at, name = null) => {
      const step = square + gap;
      const g = canvas.getContext('2d');
      g.font = parts.labelFont;
      const names = Array.from({ length: name ? count : 0 }, (_, b) => name(b));
      const width = Math.max(cols * step - gap, ...names.map((text) => Math.ceil(g.measureText(text).width)));
      const top = name ? parts.labelHeight : 0;
      const labels = [];
      const images = [];
      for (let b = 0; b < count; b++) {
        for (let r = 0; r < rows; r++) {
          for (let k = 0; k < cols; k++) {
            const [t, c] = at(b, r, k);
            const label = `${t + 1}${'abcdefgh'[head(c)]}`;
            labels.push(label);
            images.push(this.squareImage(parts, label, colours[head(c)]));
          }
        }
      }
      // The names are in the page's secondary ink (the canvas's CSS colour), which a theme may change.
      const nameInk = name ? getComputedStyle(canvas).color : '';
      const perLine = Math.max(1, Math.min(count, Math.floor((parts.width + parts.blockGap) / (width + parts.blockGap))));
      const cells = `${labels.join(' ')} / ${names.join(' ')} / ${nameInk} / ${H} / ${pixelRatio()} / ${perLine}`;
      if (canvas.dataset.drawn === cells) return; // the model's size changed, the picture's did not
      const blockHeight = top + rows * step - gap;
      const lines = Math.ceil(count / perLine);
      const pen = sizedCanvas(canvas, perLine * (width + parts.blockGap) - parts.blockGap, lines * (blockHeight + parts.blockGap) - parts.blockGap);
      // Where block b starts: its place in its line, and its line.
      const left = (b) => (b % perLine) * (width + parts.blockGap);
      const above = (b) => Math.floor(b / perLine) * (blockHeight + parts.blockGap);
      pen.font = parts.labelFont;
      pen.fillStyle = nameInk;
      pen.textBaseline = 'top';
      names.forEach((text, b) => pen.fillText(text, left(b), above(b)));
      images.forEach((image, n) => {
        const b = Math.floor(n / (rows * cols)), r = Math.floor(n / cols) % rows, k = n % cols;
        pen.drawImage(image, left(b) + k * step, above(b) + top + r * step, square, square);
      });
      canvas.dataset.drawn = cells;
      canvas.dataset.cells = labels.join(' ');
    };
    // Capped sizes are the picture's own, not the model's: they are named as such.
    const count = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
    setText(titles[0], capped ? `x for one sequence, drawn small: ${count(T, 'position')} × ${count(C, 'channel')} (${count(H, 'head')} × ${D})`
      : `x for one sequence: ${count(T, 'position')} × C = ${C}`);
    setText(titles[2], 'merge: transpose back, join heads');
    fill(x, 1, T, C, (b, t, c) => [t, c]);
    fill(blocks, H, T, D, (hh, t, d) => source(hh, t, d), (hh) => `head ${hh + 1}`);
    const texts = [];
    let anyMixed = false;
    for (let hh = 0; hh < H; hh++) {
      const positions = new Set(), heads = new Set();
      for (let t = 0; t < T; t++) for (let d = 0; d < D; d++) {
        const [st, sc] = source(hh, t, d);
        positions.add(st + 1);
        heads.add(head(sc) + 1);
      }
      const mixed = heads.size > 1 || positions.size < T;
      anyMixed ||= mixed;
      const list = (word, set) => { const xs = [...set].sort((a, b) => a - b); return `${word}${xs.length > 1 ? 's' : ''} ${xs.join(', ')}`; };
      texts.push(`Head ${hh + 1} holds ${list('position', positions)} and channels belonging to ${list('head', heads)}${mixed ? ': mixed up.' : '.'}`);
    }
    // With one head or one position the straight reshape gives the same
    // tensor as the split: the title says so rather than calling it wrong.
    setText(titles[1], !wrong ? 'split into heads, then transpose: (H, T, D)'
      : anyMixed ? 'reshape straight to (H, T, D): wrong' : 'reshape straight to (H, T, D): here the same as the split');
    // Merging reads each block back with the inverse of the correct split.
    fill(merged, 1, T, C, (b, t, c) => source(head(c), t, c % D));
    keptChildren(notes, texts.length, () => texts.map(() => h('li'))).forEach((li, k) => setText(li, texts[k]));
  },

  /** The picture drawn last, drawn again for a new pixel ratio or width (only what changed is redrawn). */
  redrawPicture(ctx) {
    if (this.picture && ctx.node(this.id)?.isConnected) this.drawPicture(ctx, ...this.picture);
  },

  /**
   * One square of the picture (its label on its colour), drawn once at the
   * device's pixel density and then copied wherever it appears.
   */
  squareImage(parts, label, { colour, ink }) {
    const key = `${label} ${colour} ${ink} ${pixelRatio()}`;
    let image = parts.images.get(key);
    if (!image) {
      image = document.createElement('canvas');
      const g = sizedCanvas(image, parts.square, parts.square);
      g.fillStyle = colour;
      g.beginPath();
      if (typeof g.roundRect === 'function') g.roundRect(0, 0, parts.square, parts.square, 2);
      else g.rect(0, 0, parts.square, parts.square);
      g.fill();
      g.font = parts.font;
      g.textAlign = 'center';
      g.textBaseline = 'middle';
      g.fillStyle = ink === 'ink-dark' ? '#000' : '#fff';
      g.fillText(label, parts.square / 2, parts.square / 2 + 0.5);
      parts.images.set(key, image);
    }
    return image;
  },
};

export default shapes;
