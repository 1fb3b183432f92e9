// The colours of attention-lab, in one place: the lesson page, the "Break it"
// cards and the <attention-lab> element all take them from here.
//
//  - One sequential ramp for every value drawn as a colour (weights in
//    [0, 1]): viridis, dark = 0 and bright = 1. It is perceptually ordered and
//    stays readable with the common colour-vision deficiencies. Every map
//    that uses it has a legend (rampLegend).
//  - Blocked query–key pairs are not on the ramp: they are hatched and marked
//    ×, the same everywhere (the .blocked class, with --hatch-a/--hatch-b).
//  - Chart series (scaled, unscaled) are two points of the same ramp, told
//    apart by their line style too.
//  - Heads in the split/merge picture are categories, not values: each
//    carries its own letter, on a colour of the ramp spread over the heads.

import { fmt } from './lesson-ui.js';

/** Viridis, sampled at 11 evenly spaced points (0, 0.1, ..., 1). */
export const RAMP = Object.freeze([
  [68, 1, 84], [72, 36, 117], [65, 68, 135], [53, 95, 141], [42, 120, 142], [33, 145, 140],
  [34, 168, 132], [68, 191, 112], [122, 209, 81], [189, 223, 38], [253, 231, 37],
].map(Object.freeze));

/** The ramp's colour at t in [0, 1] (clamped; NaN reads as 0) as [r, g, b]. */
export function rampRgb(t) {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  return RAMP[i].map((a, k) => Math.round(a + (RAMP[i + 1][k] - a) * f));
}

/** The ramp's colour at t as CSS text, "rgb(r, g, b)" (the form getComputedStyle gives back). */
export function rampColour(t) {
  return `rgb(${rampRgb(t).join(', ')})`;
}

function luminance([r, g, b]) {
  const lin = (c) => { const v = c / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** Whether black text reads better than white on this colour. */
function darkInkOn(rgb) {
  const L = luminance(rgb);
  return (L + 0.05) / 0.05 >= 1.05 / (L + 0.05);
}

/** Each ramp colour met so far (keyed by its packed r, g, b): its CSS text and whether its ink is dark. */
const painted = new Map();

/** Paint a cell for value t in [0, 1]: background from the ramp, ink by contrast. */
export function paintRamp(node, t) {
  const [r, g, b] = rampRgb(t);
  const key = (r << 16) | (g << 8) | b;
  let paint = painted.get(key);
  if (!paint) {
    paint = { css: `rgb(${r}, ${g}, ${b})`, dark: darkInkOn([r, g, b]) };
    painted.set(key, paint);
  }
  node.style.backgroundColor = paint.css;
  node.classList.toggle('ink-dark', paint.dark);
  node.classList.toggle('ink-light', !paint.dark);
}

/** The colour of head `index` of `count` (a category), and its ink class. */
export function headColour(index, count) {
  const t = count <= 1 ? 0.55 : 0.15 + (0.85 * index) / (count - 1);
  return { colour: rampColour(t), ink: darkInkOn(rampRgb(t)) ? 'ink-dark' : 'ink-light' };
}

/** Chart series, as points of the ramp. */
export const SERIES = Object.freeze({ unscaled: rampColour(0.2), scaled: rampColour(0.7) });

const gradient = `linear-gradient(to right, ${RAMP.map((rgb, i) => `rgb(${rgb.join(', ')}) ${i * 10}%`).join(', ')})`;

/**
 * The custom properties the stylesheets use for these colours, for the page
 * (:root) and for the element (.al-root, light and dark).
 */
export const PALETTE_CSS = `
:root, .al-root {
  --series-unscaled: ${SERIES.unscaled};
  --series-scaled: ${SERIES.scaled};
  --ramp-gradient: ${gradient};
  --hatch-a: #dedcd5;
  --hatch-b: #ffffff;
  --hatch-ink: #222222;
}
.al-root.al-dark {
  --hatch-a: #62636e;
  --hatch-b: #2a2b31;
  --hatch-ink: #ececf1;
}
`;

let sheet = null;
/** PALETTE_CSS as one shared constructable stylesheet (null where there is none, e.g. in Node). */
export function paletteSheet() {
  if (!sheet && typeof CSSStyleSheet === 'function') {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(PALETTE_CSS);
  }
  return sheet;
}

/** A legend end as the page writes numbers: "1", or "1.133" for a value that is not whole. */
const endText = (x) => fmt(x, Number.isInteger(x) ? 0 : 3);

/**
 * The legend of the ramp: "0 [dark … bright] 1", and the blocked mark.
 * @param {Document} doc the document to build in
 * @param {{ lo?: number, hi?: number, what?: string, blocked?: boolean }} [opts]
 */
export function rampLegend(doc, { lo = 0, hi = 1, what = 'weight', blocked = true } = {}) {
  const span = (cls, text) => {
    const node = doc.createElement('span');
    node.className = cls;
    if (text) node.textContent = text;
    return node;
  };
  const legend = doc.createElement('p');
  legend.className = 'ramp-legend';
  const bar = span('ramp-bar');
  bar.setAttribute('aria-hidden', 'true');
  legend.append(span('ramp-what', `Colour = ${what}:`), ' ', span('ramp-end', endText(lo)), ' ', bar, ' ', span('ramp-end', endText(hi)));
  if (blocked) {
    const swatch = span('blocked ramp-blocked', '×');
    swatch.setAttribute('aria-hidden', 'true');
    // The swatch and its words wrap to a new line together.
    const key = span('ramp-blocked-key');
    key.append(swatch, ' blocked (never coloured)');
    legend.append(' ', key);
  }
  return legend;
}
