// Labels, example tensors and helpers that several sections use.

import { heatmap, h, legend, figures, emptyRowsOf, anyBlocked, showBlockedKey } from '../lesson-ui.js';
import { headColour } from '../palette.js';
import { deferWhileFar } from '../lesson-context.js';

export const keyLabel = (j) => `key ${j + 1}`;
export const queryLabel = (i) => `query ${i + 1}`;
export const dimLabel = (j) => `d${j + 1}`;

/** q = k = v = 0 of shape (...lead, T, 1): every score is equal, so weights spread evenly over allowed keys. */
export function zeros(lead, T) {
  const shape = [...lead, T, 1];
  return { data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape };
}

/** Rows of a T × T allowed mask (nested booleans) that allow no key at all, by the core's rule. */
export function emptyRows(lab, mask) {
  return emptyRowsOf(lab.allowedPairs([mask.length, mask.length], { mask }));
}

/** A T × T causal mask as nested booleans: query i sees keys 1…i. */
export const causalBits = (T) => Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => j <= i));

/** Copy m into a rows × cols matrix, filling new cells with fill(i, j). */
export function resized(m, rows, cols, fill) {
  return Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) =>
    (m && i < m.length && j < m[i].length ? m[i][j] : fill(i, j))));
}

/**
 * resized(), for a size the learner types: the cells a smaller size cuts
 * off are kept in `memory` (an object of the section's, {} at mount) and
 * come back when the size grows again. Typing 10 passes through a size of
 * 1, and a field given an invalid size goes back to its last one: neither
 * loses what the learner had typed in the matrix.
 */
export function resizedKeeping(memory, m, rows, cols, fill) {
  const kept = memory.cells || [];
  memory.cells = Array.from({ length: Math.max(m.length, kept.length) }, (_, i) => {
    const now = m[i] || [], old = kept[i] || [];
    return Array.from({ length: Math.max(now.length, old.length) }, (_, j) => (j < now.length ? now[j] : old[j]));
  });
  return resized(memory.cells, rows, cols, fill);
}

/**
 * Keep the multi-head modules of the last `keep` configurations (1 by
 * default), freeing the oldest: going back to a size seen a moment ago
 * reuses its module instead of drawing its weights again.
 * cache.free() releases them all (a widget leaving the page).
 */
export function mhaCache(keep = 1) {
  const modules = new Map(); // JSON of the config -> module, oldest first
  const cache = (lab, config) => {
    const k = JSON.stringify(config);
    let mha = modules.get(k);
    if (mha) modules.delete(k); // moved to the newest place below
    else {
      mha = lab.createMultiHeadAttention(config); // may throw: the others stay
      if (modules.size >= keep) {
        const [oldest, old] = modules.entries().next().value;
        old.free();
        modules.delete(oldest);
      }
    }
    modules.set(k, mha);
    return mha;
  };
  cache.free = () => {
    for (const mha of modules.values()) mha.free();
    modules.clear();
  };
  return cache;
}

/**
 * The multi-head module's refusals in the words of the lesson's fields
 * (d_model, H); null for the others (the page then shows the core's message).
 */
export function explainHeads(err, dModel, heads) {
  if (err.code !== 'HEADS_DO_NOT_DIVIDE') return null;
  const fits = [];
  for (let H = 1; H <= Math.min(dModel, 16); H++) if (dModel % H === 0) fits.push(H);
  return `d_model = ${dModel} cannot be split evenly over H = ${heads} heads: each head gets d_model / H channels, `
    + `and ${dModel} / ${heads} is not a whole number. With d_model = ${dModel}, try H = ${fits.join(', ')}`;
}

/** Above this many weights in all, maps far from the viewport are written after the edit's frame. */
const LAZY_WEIGHTS = 256;

/**
 * One heatmap per head of weights (1, H, Tq, Tk) for batch 0. link: the
 * weights take part in linked highlighting (see lesson-links.js).
 * With many weights (16 heads of 8 × 8), the maps far from the viewport are
 * written once the edit's frame is painted, or as soon as they come near it:
 * the frame then only pays for the maps a learner can see.
 */
export function headHeatmaps(host, { weights, blocked, name, queryLabel: rowLabel, keyLabel: colLabel, link = false }) {
  const [, H, Tq, Tk] = weights.shape;
  const hosts = figures(host, Array.from({ length: H }, (_, head) => ({
    key: `h${head}-of-${H}`, cls: 'head-map',
    caption: () => {
      const { colour, ink } = headColour(head, H);
      // The swatch's digit repeats the caption's: it is not read.
      const swatch = h('span', { class: `head-swatch ${ink}`, text: String(head + 1), 'aria-hidden': 'true' });
      swatch.style.backgroundColor = colour;
      return [swatch, ` Head ${head + 1}`];
    },
  })));
  // A figure far from the viewport is not laid out (lesson.css): it keeps
  // the place its map will take, estimated from the map's size.
  for (const mapHost of hosts) {
    const { style } = mapHost.parentNode;
    if (style.getPropertyValue('--map-rows') !== String(Tq)) style.setProperty('--map-rows', String(Tq));
    if (style.getPropertyValue('--map-cols') !== String(Tk)) style.setProperty('--map-cols', String(Tk));
  }
  const lazy = H * Tq * Tk > LAZY_WEIGHTS;
  const far = lazy || host.farMaps ? farMaps(host, hosts) : null;
  hosts.forEach((mapHost, head) => {
    const draw = () => heatmap(mapHost, {
      name: `${name}-h${head}`, values: weights.data.subarray(head * Tq * Tk, (head + 1) * Tq * Tk),
      rows: Tq, cols: Tk, blocked, digits: 2, legend: false,
      rowLabel, colLabel, caption: `Head ${head + 1} attention weights (rows: queries, columns: keys)`, link,
    });
    if (far) far.draw(mapHost, draw, lazy);
    else draw();
  });
  // One legend for all the heads, naming the blocked look only while some cell has it.
  let shared = host.querySelector(':scope > .ramp-legend');
  if (!shared) {
    shared = legend();
    // The maps round to 2 decimals (digits above), which the row sums then show.
    host.append(shared, h('p', { class: 'hint', 'data-out': 'rounded-weights',
      text: 'Weights are rounded to 2 decimals (a very small one is shown as, say, 4.4e-3), so the numbers of a row may add up to a little more or less than 1 on screen (0.98, 1.01); unrounded, every row adds up to 1.' }));
  }
  showBlockedKey(shared, anyBlocked(Tq, Tk, blocked));
}

/**
 * The maps of `host` drawn late while their figures are far from the
 * viewport (deferWhileFar), and the figures watched. draw(mapHost, fn, lazy)
 * runs fn now for a near map (or any map, lazy false); for a far one, once
 * the page is idle after the frame or the figure comes near.
 */
function farMaps(host, hosts) {
  let state = host.farMaps;
  if (!state) {
    const defer = deferWhileFar();
    state = host.farMaps = { defer, observed: new Set() };
    state.draw = (mapHost, fn, lazy) => {
      if (lazy) defer.run(mapHost.parentNode, fn);
      else {
        defer.cancel(mapHost.parentNode);
        fn();
      }
    };
  }
  // Watch the figures shown now, and only those.
  const figs = new Set(hosts.map((mapHost) => mapHost.parentNode));
  for (const fig of state.observed) {
    if (figs.has(fig)) continue;
    state.defer.unwatch(fig);
    state.observed.delete(fig);
  }
  for (const fig of figs) {
    if (state.observed.has(fig)) continue;
    state.defer.watch(fig);
    state.observed.add(fig);
  }
  return state;
}

