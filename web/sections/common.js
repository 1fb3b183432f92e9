// Labels, example tensors and helpers that several sections use.

import { heatmap, h, legend, figures, emptyRowsOf } from '../lesson-ui.js';
import { headColour } from '../palette.js';

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

/**
 * One heatmap per head of weights (1, H, Tq, Tk) for batch 0. link: the
 * weights take part in linked highlighting (see lesson-links.js).
 */
export function headHeatmaps(host, { weights, blocked, name, queryLabel: rowLabel, keyLabel: colLabel, link = false }) {
  const [, H, Tq, Tk] = weights.shape;
  const hosts = figures(host, Array.from({ length: H }, (_, head) => ({
    key: `h${head}-of-${H}`, cls: 'head-map',
    caption: () => {
      const { colour, ink } = headColour(head, H);
      const swatch = h('span', { class: `head-swatch ${ink}`, text: String(head + 1) });
      swatch.style.backgroundColor = colour;
      return [swatch, ` Head ${head + 1}`];
    },
  })));
  hosts.forEach((mapHost, head) => heatmap(mapHost, {
    name: `${name}-h${head}`, values: weights.data.subarray(head * Tq * Tk, (head + 1) * Tq * Tk),
    rows: Tq, cols: Tk, blocked, digits: 2, legend: false,
    rowLabel, colLabel, caption: `Head ${head + 1} attention weights (rows: queries, columns: keys)`, link,
  }));
  if (!host.querySelector(':scope > .ramp-legend')) host.append(legend());
}
