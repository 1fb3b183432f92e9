// The static part of a lesson section: its prose, written once as HTML in the
// section's own file, and the frame around it (number, heading, table of
// contents), built from the registry (registry.js).
//
// Only fixed text written in this repository goes through the HTML parser
// here: `html` refuses ${...} substitutions, so nothing a learner types or a
// link carries can ever reach it. Live parts are empty elements marked
// data-slot="name"; a section fills them with createElement + textContent.

/**
 * Parse a fixed piece of markup into a DocumentFragment.
 * Use as a tag: html`<p>Text</p>`. Substitutions are refused.
 */
export function html(strings, ...values) {
  if (values.length > 0) throw new Error('html`...` takes fixed markup only, without ${...}');
  const template = document.createElement('template');
  template.innerHTML = strings.raw ? strings.raw.join('') : String(strings);
  return template.content;
}

/**
 * The <section> of one registry entry.
 * @param {object} def a section definition (see registry.js)
 * @param {number|null} number its number on the page, or null (not numbered)
 */
export function sectionElement(def, number) {
  const section = document.createElement('section');
  section.id = def.id;
  if (def.heading === undefined && def.title === undefined) return section;
  section.setAttribute('aria-labelledby', `h-${def.id}`);
  const h2 = document.createElement('h2');
  h2.id = `h-${def.id}`;
  h2.tabIndex = -1;
  if (number != null) {
    const num = document.createElement('span');
    num.className = 'sec-num';
    num.textContent = String(number);
    h2.append(num, ' ');
  }
  h2.append(headingContent(def));
  section.append(h2);
  if (def.body) section.append(html(def.body));
  return section;
}

/** The heading's content: its fixed markup (e.g. √d<sub>k</sub>), or the plain title. */
function headingContent(def) {
  return def.heading ? html(def.heading) : document.createTextNode(def.title);
}

/** One <li>number. <a href="#id">heading</a></li> of the table of contents (number: the section's own, or null). */
export function tocItem(def, number) {
  const a = document.createElement('a');
  a.href = `#${def.id}`;
  a.append(headingContent(def));
  const li = document.createElement('li');
  // The section's own number, as its heading shows it; an unnumbered section has none.
  if (number != null) {
    const num = document.createElement('span');
    num.className = 'toc-num';
    num.textContent = `${number}.`;
    li.append(num, ' ');
  }
  li.append(a);
  return li;
}

// ---------------------------------------------------------------------------
// Preset layouts for the <attention-lab> element: which of a section's slots
// a preset shows, grouped and labelled. A section lists its presets with these.
// ---------------------------------------------------------------------------

/** A slot of the section. panel: inputs, scores, weights, output, checks, or null (always shown). */
export const slot = (name, panel = null, { cls = '', label = null } = {}) => ({ slot: name, panel, cls, label });
/** Blocks side by side (or stacked) in one element with class `cls`. */
export const group = (cls, ...children) => ({ group: cls, children });
/** Slots the section draws into but this preset does not show. */
export const unused = (...names) => ({ unused: names.map((name) => slot(name)) });
/** Blocks inside a <details> with this summary. */
export const more = (summary, panel, ...children) => ({ details: summary, panel, children });
