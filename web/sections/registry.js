// The lesson's sections, in page order: the one list that gives each its
// number, its heading in the table of contents, its place in the URL hash and
// its presets in the <attention-lab> element. Adding a section means writing
// one file in this folder, importing it here and putting it in SECTIONS (the
// README's "Adding a section" says what else).
//
// A section file exports an object with:
//   id        the <section id>; its live parts are elements marked
//             data-slot="..." inside its markup
//   title     plain-text title (the widget's accessible name, messages)
//   heading   optional fixed markup for the heading (e.g. √d<sub>k</sub>)
//   body      fixed markup (see markup.js): prose and empty data-slot elements
//   numbered  false for a section without a number (default: numbered)
// and, when it has live parts computed by the core:
//   prefix    its prefix in the URL hash ("ex" in "ex.q=...")
//   fields    [name, codec, init(state)] in order; init gives the default
//   dependsOn prefixes of other sections whose state it reads
//   mount(ctx, state)          build the controls from the state
//   update(ctx, state, detail) ask the core and redraw the results
//   presets   { name: { title, result, blocks, heads?, seqLen?, aliases? } }
//             for the <attention-lab> element (see attention-lab.js)
//   create(options)            optional: a fresh section object (break-it)
// Sections find their elements through ctx (ctx.slot, ctx.node), never in
// `document` directly, so the same code draws into the page and into widgets.

import oneQuery from './one-query.js';
import threeByThree from './three-by-three.js';
import whyScale from './why-scale.js';
import shapes from './shapes.js';
import masks from './masks.js';
import gradients from './gradients.js';
import selfCross from './self-cross.js';
import multiHead from './multi-head.js';
import watchLearn from './watch-learn.js';
import observability from './observability.js';
import conventions from './conventions.js';
import rotary from './rotary.js';
import kvCache from './kv-cache.js';
import onlineSoftmax from './online-softmax.js';
import tSquared from './t-squared.js';
import dropout from './dropout.js';
import pytorch from './pytorch.js';
import quiz from './quiz.js';
import breakIt from './break-it.js';

export const SECTIONS = Object.freeze([
  oneQuery,
  threeByThree,
  whyScale,
  shapes,
  masks,
  gradients,
  selfCross,
  multiHead,
  watchLearn,
  observability,
  conventions,
  rotary,
  kvCache,
  onlineSoftmax,
  tSquared,
  dropout,
  pytorch,
  quiz,
  breakIt,
]);

/** Every section id, in page order: the views a link may name ("#masks", "view=masks"). */
export const VIEW_IDS = Object.freeze(SECTIONS.map((s) => s.id));

/** The sections computed by the core from fields of their own (not the quiz, not "Break it"). */
export const LESSON_SECTIONS = Object.freeze(SECTIONS.filter((s) => s.fields && !s.create));

const numbers = new Map();
for (const s of SECTIONS) if (s.numbered !== false) numbers.set(s.id, numbers.size + 1);

/** The number a section shows on the page, or null for an unnumbered one. */
export function sectionNumber(id) {
  return numbers.get(id) ?? null;
}

/** "section 2": how the page refers to a section in its text. */
export function sectionName(id) {
  const n = sectionNumber(id);
  return n == null ? `the “${SECTIONS.find((s) => s.id === id).title}” section` : `section ${n}`;
}

/**
 * A section object of its own, to mount. Sections keep per-instance things
 * (status lines, cached multi-head modules...) on `this`, so a copy that
 * inherits the methods is enough; never mount the exported objects themselves.
 * options go to a section's create() (break-it).
 */
export function instantiateSection(def, options) {
  return def.create ? def.create(options) : Object.create(def);
}

/** The <attention-lab> presets of every section: name -> { section id, title, result, blocks, ... }. */
export const PRESETS = Object.freeze(Object.fromEntries(SECTIONS.flatMap((s) =>
  Object.entries(s.presets || {}).map(([name, preset]) => [name, { ...preset, section: s.id }]))));

/** Other names a preset answers to: alias -> preset name. */
export const PRESET_ALIASES = Object.freeze(Object.fromEntries(Object.entries(PRESETS).flatMap(([name, preset]) =>
  (preset.aliases || []).map((alias) => [alias, name]))));
