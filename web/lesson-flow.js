// The flow view: one query row followed through the core's passes,
// q, Kᵀ → scores → ÷√d_k → (mask) → softmax → × V → output, with the numbers
// the core returned for that row, and under each step the C of the pass of
// attn_sdpa that produced them (extracted from c_src at build time).
//
// Nothing is computed here: every number is one the caller got from the core.

import { h, fmt, fmtVec, setText } from './lesson-ui.js';
import { SDPA_PASSES } from './generated/c-source.js';

const C_TOKENS = /(\/\*[\s\S]*?\*\/)|("(?:[^"\\]|\\.)*")|\b(for|while|do|if|else|switch|case|default|break|continue|return|goto|sizeof|struct|typedef|int|long|float|double|char|unsigned|const|static|void|uint8_t|uint64_t|SCALAR_PATH)\b|\b(\d+(?:\.\d+)?f?|INFINITY)\b/g;

/** C text as a <pre><code> with comments, strings, keywords and numbers in spans (no HTML parsing). */
export function cCode(text) {
  const code = h('code');
  let at = 0;
  for (const m of text.matchAll(C_TOKENS)) {
    if (m.index > at) code.append(text.slice(at, m.index));
    const cls = m[1] ? 'tok-com' : m[2] ? 'tok-str' : m[3] ? 'tok-kw' : 'tok-num';
    code.append(h('span', { class: cls, text: m[0] }));
    at = m.index + m[0].length;
  }
  if (at < text.length) code.append(text.slice(at));
  return h('pre', { class: 'c-src' }, code);
}

/**
 * A disclosure with the C of pass n of attn_sdpa. `where` ends the code
 * box's name ("step 3 (÷ √d_k) in “The 3×3 example”"), and the summary's
 * too, for screen readers only: one pass shows under several steps and in
 * more than one section, and each named region or control on a page needs
 * a name of its own.
 */
export function passSource(n, note = '', where = '') {
  const pass = SDPA_PASSES[n];
  return h('details', { class: 'c-pass' },
    h('summary', {}, `Read the C: pass ${n} of attn_sdpa (${pass.title})`, where ? h('span', { class: 'sr-only', text: ` for ${where}` }) : null),
    note ? h('p', { class: 'hint', text: note }) : null,
    labelled(cCode(pass.code), `C source of pass ${n} of attn_sdpa${where ? `, ${where}` : ''}`));
}

/**
 * The learner's name for the part of the page holding `host`: its section's
 * heading without the section number, or the label of the <attention-lab>
 * widget drawing it; '' if neither.
 */
export function placeName(host) {
  const heading = host.closest('section')?.querySelector('h2');
  if (heading) return heading.textContent.replace(/^\s*\d+\s*/, '').trim();
  return host.closest('[role="group"][aria-label]')?.getAttribute('aria-label') ?? '';
}

/** A code box scrolls sideways on a phone: give it a tab stop and a name. */
function labelled(pre, name) {
  pre.tabIndex = 0;
  pre.setAttribute('role', 'region');
  pre.setAttribute('aria-label', name);
  return pre;
}

/**
 * Draw (or update in place) the flow of one query row.
 * @param {Element} host
 * @param {object} o
 *   row: the query row shown (0-based); rowName: its label ("query 2")
 *   q: its query vector; keys: number of keys; keyName(j)
 *   raw: q·k_j for each key (the core with scale 1); scaled: the core's scores
 *   dk: the key width; blocked(j): true for a key the mask blocks (optional)
 *   weights: the row's weights; output: the row's output vector
 *   digits: the decimals shown, those of the section's tables (default 3)
 */
export function flowView(host, o) {
  const masked = Boolean(o.blocked);
  const key = JSON.stringify([o.keys, o.q.length, o.output.length, masked, o.dk]);
  let parts = host.flowParts;
  if (!parts || parts.key !== key || !host.contains(parts.list)) parts = buildFlow(host, key, o, masked);
  const { list, cells } = parts;
  const row = String(o.row);
  // Unchanged attributes are not written again: a write costs style work even when equal.
  const setRow = (node, name) => { if (node.dataset[name] !== row) node.dataset[name] = row; };
  setRow(list, 'row');
  setText(parts.title, `Follow ${o.rowName} through the core`);
  // The section's own decimals, so that a number reads the same here as in its tables.
  const digits = o.digits ?? 3;
  const vec = (values) => fmtVec(values, digits);
  setText(cells.q, vec(o.q));
  setRow(cells.q, 'linkQ');
  setRow(cells.output, 'linkQ');
  setText(cells.output, vec(o.output));
  for (let j = 0; j < o.keys; j++) {
    const blocked = masked && o.blocked(j);
    for (const [name, values] of [['raw', o.raw], ['scaled', o.scaled], ['weights', o.weights]]) {
      const node = cells[name][j];
      setRow(node, 'linkQ');
      setText(node, name === 'scaled' && blocked ? `${fmt(values[j], digits)} → −∞` : fmt(values[j], digits));
    }
  }
}

function buildFlow(host, key, o, masked) {
  const perKey = (name) => Array.from({ length: o.keys }, (_, j) => h('span', { class: `flow-num flow-${name}`, 'data-link-k': j, title: o.keyName(j) }));
  const cells = {
    q: h('span', { class: 'flow-num', 'data-out': 'flow-q' }),
    raw: perKey('raw'), scaled: perKey('scaled'), weights: perKey('weights'),
    output: h('span', { class: 'flow-num strong', 'data-out': 'flow-output' }),
  };
  const nums = (spans) => h('span', { class: 'flow-vec' }, '[', ...spans.flatMap((s, j) => (j ? [', ', s] : [s])), ']');
  // The name of each step's code box says which step, and where: pass 2 shows under steps 2 and 3.
  const place = placeName(host);
  let count = 0;
  const step = (op, label, what, body, pass, note) => {
    count += 1;
    const where = `step ${count} (${op})${place ? ` in “${place}”` : ''}`;
    return h('li', { class: 'flow-step' },
      h('span', { class: 'flow-op', text: label }), h('span', { class: 'flow-what', text: what }), body, passSource(pass, note, where));
  };
  const title = h('h3', { class: 'flow-title' });
  const list = h('ol', { class: 'flow' },
    step('q', 'q', 'the query row; it meets every key of K above', cells.q, 1),
    step('q · Kᵀ', 'q · Kᵀ', 'one dot product per key', nums(cells.raw), 2, 'The core folds the scale into this pass: the raw dot products shown here are the same pass run with scale 1.'),
    step('÷ √d_k', `÷ √d_k (d_k = ${o.dk})`, masked ? 'the scores; a blocked key becomes −∞' : 'the scores', nums(cells.scaled), masked ? 3 : 2),
    step('softmax', 'softmax', 'shares over the keys, adding up to 1', nums(cells.weights), 4),
    step('× V', '× V', 'the shares mix the value rows', cells.output, 5),
  );
  host.replaceChildren(h('div', { class: 'flow-box' }, title, list));
  host.flowParts = { key, list, cells, title };
  return host.flowParts;
}
