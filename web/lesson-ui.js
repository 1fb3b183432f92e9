// Small DOM helpers and widgets shared by the lesson sections.
//
// Rules kept throughout: nothing is ever inserted as HTML (only
// createElement + textContent), styles come from CSS classes or element.style
// set here (never a style attribute in the markup), and every widget is a
// native control (input, button, select) so the keyboard works everywhere.
// No attention maths lives here: numbers arrive from the wasm core and are
// only formatted and coloured.

import { paintRamp, rampLegend } from './palette.js';
import { rovingCells } from './lesson-links.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Create an element. attrs: class, text, on<Event> handlers, anything else as an attribute. */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  applyAttrs(node, attrs);
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/**
 * Redraw host's content as `children` (fresh nodes from h(), or strings),
 * keeping the live nodes where the structure is the same: then only the
 * texts and attributes that changed are written, which costs the browser far
 * less than new elements. A level whose node count or tags differ is
 * replaced. Kept nodes keep their listeners and properties, so content with
 * listeners or inputs is not redrawn this way, nor maps drawn by heatmap()
 * or maskGrid(), whose screen-reader tables are written later.
 */
export function redraw(host, ...children) {
  const next = children.flat().filter((c) => c != null && c !== false)
    .map((c) => (typeof c === 'string' ? document.createTextNode(c) : c));
  redrawChildren(host, next);
}

/** The same for one node: live takes fresh's attributes and content, or is replaced by it. */
export function redrawNode(live, fresh) {
  if (!sameKind(live, fresh)) live.replaceWith(fresh);
  else if (live.nodeType === 3) { if (live.data !== fresh.data) live.data = fresh.data; }
  else {
    for (const { name, value } of fresh.attributes) if (live.getAttribute(name) !== value) live.setAttribute(name, value);
    // A scroll box's marks (its tab stop, name and sideways hint) are the
    // page's (markScrollBoxes in lesson-context.js), not the section's.
    const kept = live.dataset?.autoScroll || live.dataset?.overflows ? SCROLL_MARKS : [];
    for (const { name } of [...live.attributes]) if (!fresh.hasAttribute(name) && !kept.includes(name)) live.removeAttribute(name);
    redrawChildren(live, [...fresh.childNodes]);
  }
}

function redrawChildren(host, next) {
  const live = host.childNodes;
  if (live.length !== next.length || next.some((n, k) => !sameKind(live[k], n))) host.replaceChildren(...next);
  else [...live].forEach((node, k) => redrawNode(node, next[k]));
}

/**
 * The `count` child boxes of host, kept from one redraw to the next so that
 * what is drawn into them (valueTable, maskGrid, redraw) is set in place;
 * make() builds them the first time, or when host holds something else.
 */
export function keptChildren(host, count, make) {
  if (host.children.length === count && host.childNodes.length === count) return [...host.children];
  const nodes = make();
  host.replaceChildren(...nodes);
  return nodes;
}

const SCROLL_MARKS = ['tabindex', 'role', 'aria-label', 'data-auto-scroll', 'data-overflows'];
const sameKind = (a, b) => a.nodeType === b.nodeType && (a.nodeType !== 1 || a.namespaceURI === b.namespaceURI && a.tagName === b.tagName);

/** Same as h() for SVG elements. */
export function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  applyAttrs(node, attrs);
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

function applyAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (key === 'text') node.textContent = String(value);
    else if (key === 'class') node.setAttribute('class', value);
    else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
}

let idCounter = 0;
/** A page-unique id for aria-describedby links. */
export function uid(prefix = 'id') {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

// ---------------------------------------------------------------------------
// Number text: parsing what a learner typed, formatting what the core returned
// ---------------------------------------------------------------------------

const NUMBER_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
export const VALUE_LIMIT = 1e6;

/**
 * Read a number a learner typed. Returns {ok:true, value} or {ok:false, short, message}.
 * opts: integer, min, max.
 */
export function parseNumberText(text, { integer = false, min = -VALUE_LIMIT, max = VALUE_LIMIT } = {}) {
  // A comma is read as the decimal point: it is the only one a phone's
  // number keypad offers in many locales, and the page never groups digits.
  // Pasted text may carry invisible characters (a zero-width space), and an
  // East Asian keyboard types full-width forms (２, ．, －): those are read as
  // the plain ones. Nothing else is changed: 10² is not 102.
  let t = String(text).replace(/\p{Cf}/gu, '').replace(/[\uFF0B-\uFF0E\uFF10-\uFF19\uFF25\uFF45]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0xFEE0))
    .trim().replace(/\u2212/g, '-');
  if (!t.includes('.') && (t.match(/,/g) || []).length === 1) t = t.replace(',', '.');
  if (t === '') return { ok: false, short: 'Empty', message: 'The cell is empty: type a number.' };
  if (!NUMBER_RE.test(t)) {
    // Digits of another script (١٢) are digits, but not the ones a number is written with here.
    if (/\p{Nd}/u.test(t.replace(/[0-9]/g, ''))) return { ok: false, short: 'Not a number (use the digits 0–9)', message: 'Write the number with the digits 0 to 9.' };
    return { ok: false, short: 'Not a number', message: 'That is not a number.' };
  }
  const value = Number(t);
  if (!Number.isFinite(value)) {
    return { ok: false, short: 'Too large', message: 'That number is too large to use.' };
  }
  if (integer && !Number.isInteger(value)) {
    return { ok: false, short: 'Not a whole number', message: 'Type a whole number.' };
  }
  if (value < min || value > max) {
    const range = `${fmtLimit(min, integer)} to ${fmtLimit(max, integer)}`;
    return { ok: false, short: `Out of range (${range})`, message: `Use a number from ${range}.` };
  }
  return { ok: true, value: Object.is(value, -0) ? 0 : value };
}

// Digits are never grouped ("12,345" would read as two numbers and could not
// be typed back). Magnitudes of a million and more, and non-zero ones too
// small for the decimals shown, are written in scientific notation, "1.0e12".
export const SCI_ABOVE = 1e6;

/** x.toExponential(d) without the "+" of a positive exponent: "1.0e12", "2.5e-7". */
function expo(x, d) {
  return x.toExponential(d).replace('e+', 'e');
}

/**
 * The significant digits a float32 holds (about 7): a large number is shown
 * with fewer decimals rather than with digits the core never computed.
 */
const FLOAT_DIGITS = 7;

/**
 * Scientific notation with up to FLOAT_DIGITS significant digits, trailing
 * zeros dropped but one decimal kept: "1.2345e6", "1.0e12".
 */
function expoFloat(x) {
  const [mantissa, exponent] = expo(x, FLOAT_DIGITS - 1).split('e');
  return `${mantissa.replace(/0+$/, '').replace(/\.$/, '.0')}e${exponent}`;
}

/**
 * A number with `digits` decimals (fewer for a large one: at most
 * FLOAT_DIGITS significant digits, 707106.8 rather than 707106.750), with no
 * "-0.000"; scientific for large or tiny magnitudes. A large number keeps
 * those significant digits in scientific notation too (1234567.5 is
 * 1.234568e6, next to 872923.3), except a whole count (digits 0): 1.7e7.
 */
export function fmt(x, digits = 3) {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return '∞';
  if (x === -Infinity) return '−∞';
  const a = Math.abs(x);
  if (a > 0 && a < 0.5 * 10 ** -digits) return expo(x, Math.max(1, digits - 2));
  const whole = a >= 1 ? Math.floor(Math.log10(a)) + 1 : 0; // digits before the point
  const text = Number(x).toFixed(Math.min(digits, Math.max(0, FLOAT_DIGITS - whole)));
  // A million and more, rounded there too (999999.96), is written in scientific notation.
  if (Math.abs(Number(text)) >= SCI_ABOVE) return digits > 0 ? expoFloat(x) : expo(x, 1);
  return /^-0(\.0*)?$/.test(text) ? text.slice(1) : text;
}

/** "1, 2, 5 or 10" (word "or"), "a and b" (word "and") */
export const wordList = (items, word) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} ${word} ${items.at(-1)}`);

/**
 * A value the learner typed, or a limit, written so that it can be typed
 * back: its shortest exact text (0.0001234, -98765.4321), or, when that is
 * longer than a typed number would be (a computed 1/3), FLOAT_DIGITS
 * significant digits.
 */
export function fmtPlain(x) {
  if (!Number.isFinite(x)) return fmt(x);
  const a = Math.abs(x);
  if (a >= SCI_ABOVE || (a > 0 && a < 1e-4)) return expo(x);
  const exact = String(x);
  return exact.length <= 12 ? exact : String(Number(x.toPrecision(FLOAT_DIGITS)));
}

/**
 * A field's limit as its refusals and hints write it: a whole number in full
 * (a seed's 2147483647, which is typed as such), any other as fmtPlain.
 */
export function fmtLimit(x, integer = false) {
  return integer && Number.isSafeInteger(x) ? String(x) : fmtPlain(x);
}

/** Scientific notation for tiny diagnostics such as a row-sum error. */
export function fmtSci(x, digits = 2) {
  if (!Number.isFinite(x)) return fmt(x);
  if (x === 0) return '0';
  return Math.abs(x) >= 0.01 && Math.abs(x) < 1e4 ? fmt(x, 4) : expo(x, digits);
}

/**
 * A vector as "[a, b, c]" ("[6.698, 6.605]"), each entry as fmt writes it, except that its large
 * entries in scientific notation show as many decimals as the longest of
 * them: [1.000000e6, 1.0000, 1.000001e6], where 1.0e6 beside 1.000001e6
 * would look less exact than it is.
 */
export function fmtVec(values, digits = 3) {
  const texts = Array.from(values, (v) => fmt(v, digits));
  const decimals = (text) => /^[-−]?\d\.(\d+)e\d/.exec(text)?.[1].length ?? -1; // -1: not large and scientific
  const most = Math.max(-1, ...texts.map(decimals));
  return `[${texts.map((text) => {
    const d = decimals(text);
    return d >= 0 && d < most ? text.replace('e', `${'0'.repeat(most - d)}e`) : text;
  }).join(', ')}]`;
}

export function fmtShape(shape) {
  return `(${Array.from(shape).join(', ')})`;
}

// ---------------------------------------------------------------------------
// Editable number fields and grids
// ---------------------------------------------------------------------------

/**
 * The longest gap between two keystrokes of one number being typed (ms): a
 * typed value that stands this long is the learner's, not a step on the way
 * (see bindNumberInput), and a result is said once edits pause this long
 * (lesson-announce.js).
 */
export const TYPING_PAUSE = 500;

/**
 * Wire one <input> to a value: valid text calls onValue(value); invalid text
 * marks the input (aria-invalid + an inline message linked by
 * aria-describedby) and keeps, or puts back, the last value the learner
 * settled on (see `before` below). The message says why and what is
 * allowed, on screen ("Out of range (1 to 8): still 5"); `msg` is a
 * live region (messageNode()), so a screen reader hears it as it appears.
 * Typing commits on every 'input' event; 'change' (fired when the input
 * loses the focus) then finds the value already committed. A value equal to
 * the committed one calls nothing, so nothing is redrawn: the focus moving
 * to a control the input's last edit drew (a mousedown on a new cell) never
 * rebuilds that control under the pointer. A decimal comma ("0,5") is
 * taken as a point, and written as one when the input loses the focus.
 * `where` starts the message when it is shown away from its input (a grid
 * cell's, under the grid: "query 1, d2: "). Escape in an invalid input puts
 * the last valid value back. `show(value)` writes a value as the field does.
 */
function bindNumberInput(input, msg, { parse, current, onValue, show, where = '' }) {
  const describedBy = input.getAttribute('aria-describedby') || '';
  fitWidth(input);
  // The last value the learner settled on: the one the field had when it got
  // the focus or when an edit was done (Enter, leaving the field), or a typed
  // one that stood for TYPING_PAUSE. An invalid text puts it back: typing 12
  // into a field of 1 to 10 passes through a valid 1, which the learner never
  // meant to keep.
  let before = current();
  let typedAt = 0; // when the value now committed was typed (0: not typed, settled)
  const settle = () => {
    if (Date.now() - typedAt >= TYPING_PAUSE) before = current();
  };
  const settled = () => {
    before = current();
    typedAt = 0;
  };
  input.addEventListener('focus', settled);
  const handle = () => {
    fitWidth(input);
    const result = parse(input.value);
    settle();
    if (result.ok) {
      clearInvalid(input, msg, describedBy);
      if (result.value !== current()) {
        onValue(result.value);
        typedAt = Date.now();
      }
    } else {
      if (current() !== before) onValue(before);
      typedAt = 0;
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', `${describedBy} ${msg.id}`.trim());
      // The same text again (one more wrong keystroke) is not written: it would be announced again.
      setText(msg, `${where}${result.short}: still ${show(current())}`);
    }
  };
  input.addEventListener('input', handle);
  // Escape puts back the last valid value, the one the message names.
  input.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || !input.hasAttribute('aria-invalid')) return;
    event.preventDefault();
    input.value = show(current());
    fitWidth(input);
    clearInvalid(input, msg, describedBy);
  });
  input.addEventListener('change', () => {
    handle();
    settled();
    // A decimal comma is shown as the page writes numbers once the edit is done.
    if (input.value.includes(',') && parse(input.value).ok) {
      input.value = show(current());
      fitWidth(input);
    }
  });
}

/**
 * The length of an input's text as its --chars, which lesson.css makes it
 * wide enough for; written only when the length changes (most keystrokes
 * replace a digit, and change no style).
 */
function fitWidth(input) {
  const chars = input.value.length;
  if (input.fitChars === chars) return;
  input.fitChars = chars;
  input.style.setProperty('--chars', String(chars));
}

/** Undo what an invalid text marked; a valid edit over a valid one writes nothing. */
function clearInvalid(input, msg, describedBy) {
  if (!input.hasAttribute('aria-invalid')) return;
  input.removeAttribute('aria-invalid');
  if (describedBy) input.setAttribute('aria-describedby', describedBy);
  else input.removeAttribute('aria-describedby');
  msg.textContent = '';
}

/**
 * The message node of one number input: an empty live region (role=status),
 * in the page from the start, for a screen reader only announces changes to
 * a live region it already knew. Empty, it takes no space (lesson.css).
 */
function messageNode() {
  return h('span', { id: uid('msg'), class: 'cell-msg', role: 'status' });
}

/**
 * The on-screen keyboard for a number input: a number keypad when the
 * number cannot be negative, else the full keyboard (null), because some
 * phones' number keypads (iOS) have no minus sign.
 */
function keypad(integer, min) {
  if (min == null || min < 0) return null;
  return integer ? 'numeric' : 'decimal';
}

/**
 * "◀ Previous noun" and "Next noun ▶" buttons (data-field name-prev and
 * name-next; the arrows are drawn, not read) that step a position counted
 * from 1 through 1…count(): at() reads it, go(n) sets it. A press at either
 * end changes nothing and says so through say(text), in a few words, instead
 * of the whole step again. The caller marks the ends (aria-disabled, which
 * keeps the focus) when it draws.
 */
export function stepButtons({ noun, name, count, at, go, say }) {
  const prev = h('button', { type: 'button', 'data-field': `${name}-prev` }, h('span', { 'aria-hidden': 'true', text: '◀' }), ` Previous ${noun}`);
  const next = h('button', { type: 'button', 'data-field': `${name}-next` }, `Next ${noun} `, h('span', { 'aria-hidden': 'true', text: '▶' }));
  const step = (delta) => {
    const to = Math.max(1, Math.min(count(), at() + delta));
    if (to === at()) say(delta > 0 ? `Already at the last ${noun}.` : `Already at the first ${noun}.`);
    else go(to);
  };
  prev.addEventListener('click', () => step(-1));
  next.addEventListener('click', () => step(1));
  return { prev, next };
}

/**
 * A labelled single number input.
 * opts: label, value, onValue(v), integer, min, max, hint, name (for tests), size
 */
export function numberField({ label, value, onValue, integer = false, min, max, hint, name, size = 'md' }) {
  const id = uid('num');
  let current = value;
  const input = h('input', {
    id, type: 'text', inputmode: keypad(integer, min), enterkeyhint: 'done', autocomplete: 'off',
    spellcheck: 'false', class: `num num-${size}`, 'data-field': name,
  });
  const show = (v) => fmtLimit(v, integer); // a whole number in full: a seed of 2147483647
  input.value = show(value);
  const msg = messageNode();
  const hintNode = hint ? h('span', { class: 'hint', id: uid('hint'), text: hint }) : null;
  // What the field takes is said before anything is typed, not only in a
  // refusal: a screen reader reads it with the label ("Whole number from 1 to 8.").
  const rangeNode = min != null && max != null ? h('span', { class: 'sr-only', id: uid('range'), text: rangeText(integer, min, max) }) : null;
  const describedBy = [hintNode, rangeNode].filter(Boolean).map((node) => node.id).join(' ');
  if (describedBy) input.setAttribute('aria-describedby', describedBy);
  const parseOpts = { integer };
  if (min != null) parseOpts.min = min;
  if (max != null) parseOpts.max = max;
  bindNumberInput(input, msg, {
    parse: (t) => parseNumberText(t, parseOpts),
    current: () => current,
    onValue: (v) => { current = v; onValue(v); },
    show,
  });
  const wrapper = h('div', { class: 'field' }, h('label', { for: id, text: label }), input, hintNode, rangeNode, msg);
  /** Set the value from code (e.g. a "draw new weights" button). */
  wrapper.setValue = (v) => {
    current = v;
    input.value = show(v);
    fitWidth(input);
    clearInvalid(input, msg, describedBy);
  };
  return wrapper;
}

/** The values a field takes, in the words of its refusals: "Whole number from 1 to 8." */
function rangeText(integer, min, max) {
  return `${integer ? 'Whole number' : 'Number'} from ${fmtLimit(min, integer)} to ${fmtLimit(max, integer)}.`;
}

/**
 * An editable matrix of <input>s inside a real <table>.
 * opts: label (caption), matrix (array of rows, edited in place), rowLabel(i), colLabel(j),
 *       onChange(), integer, min, max, name (data-grid for tests)
 */
export function numberGrid({ label, matrix, rowLabel, colLabel, onChange, integer = false, min, max, name, link = null }) {
  const show = (v) => fmtLimit(v, integer);
  const table = h('table', { class: 'grid-edit', 'data-grid': name });
  table.append(h('caption', { text: label }));
  if (colLabel) {
    const tr = h('tr', {}, rowLabel ? h('td', { class: 'corner' }) : null);
    matrix[0].forEach((_, j) => tr.append(h('th', { scope: 'col', text: colLabel(j) })));
    table.append(h('thead', {}, tr));
  }
  const tbody = h('tbody');
  const parseOpts = { integer };
  if (min != null) parseOpts.min = min;
  if (max != null) parseOpts.max = max;
  // A cell's message is written under the grid, naming the cell: beside its
  // input it would widen the column and move the rest of the row.
  const notes = h('div', { class: 'grid-msgs' });
  // A cell is named by its row's and column's headings ("query 1, d2"), as
  // the grid shows them. Its input's name starts with the caption; in a grid
  // of one row the caption names the row already ("Query q, d1", not "Query q, q, d1").
  const colName = (j) => (colLabel ? colLabel(j) : `column ${j + 1}`);
  const cellName = (i, j) => `${rowLabel ? rowLabel(i) : `row ${i + 1}`}, ${colName(j)}`;
  const inputName = (i, j) => `${label}, ${matrix.length === 1 ? colName(j) : cellName(i, j)}`;
  matrix.forEach((row, i) => {
    // link 'q': row i is query i; 'k': row i belongs to key i (a key or its value);
    // 'pos': row i is position i of self-attention, query and key at once. See lesson-links.js.
    const tr = h('tr', { 'data-link-q': link === 'q' ? i : null, 'data-link-k': link === 'k' ? i : null, 'data-link-pos': link === 'pos' ? i : null });
    if (rowLabel) tr.append(h('th', { scope: 'row', text: rowLabel(i) }));
    row.forEach((value, j) => {
      const input = h('input', {
        type: 'text', inputmode: keypad(integer, min), enterkeyhint: 'done', autocomplete: 'off', spellcheck: 'false',
        class: `num num-cell${integer ? ' num-int' : ''}`, 'aria-label': inputName(i, j),
        'data-row': i, 'data-col': j,
      });
      input.value = show(value);
      const msg = messageNode();
      msg.dataset.msgFor = `${i},${j}`;
      notes.append(msg);
      bindNumberInput(input, msg, {
        parse: (t) => parseNumberText(t, parseOpts),
        current: () => matrix[i][j],
        onValue: (v) => { matrix[i][j] = v; onChange(); },
        show,
        where: `${cellName(i, j)}: `,
      });
      tr.append(h('td', {}, input));
    });
    tbody.append(tr);
  });
  table.append(tbody);
  return h('div', { class: 'grid-wrap' }, table, notes);
}

/** A labelled checkbox. */
export function checkbox({ label, checked, onToggle, name, hint }) {
  const id = uid('chk');
  const input = h('input', { id, type: 'checkbox', 'data-field': name });
  input.checked = checked;
  input.addEventListener('change', () => onToggle(input.checked));
  return h('div', { class: 'field field-check' }, input, h('label', { for: id, text: label }),
    hint ? h('span', { class: 'hint', text: hint }) : null);
}

/** A labelled <select>. options: [[value, text], ...] */
export function select({ label, value, options, onValue, name }) {
  const id = uid('sel');
  const node = h('select', { id, 'data-field': name });
  for (const [v, text] of options) {
    const opt = h('option', { value: v, text });
    if (v === value) opt.selected = true;
    node.append(opt);
  }
  node.addEventListener('change', () => onValue(node.value));
  return h('div', { class: 'field' }, h('label', { for: id, text: label }), node);
}

/** A group of radio buttons in a fieldset. */
export function radios({ legend, value, options, onValue, name }) {
  const group = uid('radio');
  const fs = h('fieldset', { class: 'field radios', 'data-field': name }, h('legend', { text: legend }));
  for (const [v, text] of options) {
    const id = uid('r');
    const input = h('input', { id, type: 'radio', name: group, value: v });
    input.checked = v === value;
    input.addEventListener('change', () => { if (input.checked) onValue(v); });
    fs.append(h('span', { class: 'radio' }, input, h('label', { for: id, text })));
  }
  return fs;
}

// ---------------------------------------------------------------------------
// Heatmap: a visual grid (hidden from assistive tech) plus a real table for
// screen readers; a linked map's grid is itself a grid for screen readers,
// with no table. Blocked cells carry a hatch pattern and a corner mark.
// ---------------------------------------------------------------------------

/**
 * Draw a heatmap into `host` (its children are replaced).
 * opts:
 *   values: Float32Array|number[] row-major, rows, cols
 *   blocked(i, j) -> bool (optional)
 *   rowLabel(i), colLabel(j), caption, digits
 *   extra: { label, values } an extra numeric column (e.g. row sums), not coloured
 *   name: data-heatmap attribute for tests
 *   domain: [lo, hi] for the colour ramp (default [0, 1])
 *   legend: draw the colour legend under the map (default true; off when
 *           several maps share one, see legend())
 *   keyBlocked: whether the legend names the blocked look (default: whether
 *           this map has a blocked cell; a legend shared with other maps
 *           names it when any of them has one)
 *   refusedRows: Set of rows the core refused to compute (no weights): their
 *           cells show "—" and their heading is flagged
 */
export function heatmap(host, { values, rows, cols, blocked, rowLabel, colLabel, caption, digits = 3, extra, name, domain = [0, 1], legend = true, keyBlocked = null, refusedRows = null, link = false }) {
  const refused = (i) => Boolean(refusedRows && refusedRows.has(i));
  const rowNames = Array.from({ length: rows }, (_, i) => rowLabel(i));
  const colNames = Array.from({ length: cols }, (_, j) => colLabel(j));
  // The same layout as last time (a new value, not a new shape): only the cells change.
  // (New labels alone are set in place too: a token's word on an axis.)
  const key = JSON.stringify([name, rows, cols, extra ? extra.label : null, caption, legend, domain,
    rowNames.map((_, i) => refused(i)), link]);
  let built = host.heatmapParts;
  if (!built || built.key !== key || !host.contains(built.visual)) built = buildHeatmap(host, { key, rows, cols, rowNames, colNames, refused, extra, caption, name, legend, domain, link });
  built.rowHeads.forEach(([visual, th], i) => { setText(visual, refused(i) ? `${rowNames[i]} ⚠` : rowNames[i]); if (th) setTextLater(th, rowNames[i]); });
  built.colHeads.forEach(([visual, th], j) => { setText(visual, colNames[j]); if (th) setTextLater(th, colNames[j]); });
  const [lo, hi] = domain;
  let someBlocked = false; // for the legend's key, below
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const { cell, td } = built.cells[i * cols + j];
      const isBlocked = blocked ? Boolean(blocked(i, j)) : false;
      someBlocked ||= isBlocked;
      if (refused(i)) {
        setClass(cell, `hm-cell refused${isBlocked ? ' blocked' : ''}`);
        continue;
      }
      const v = values[i * cols + j];
      // A blocked key's weight is exactly 0, and shows as "0"; anything else leaked past the mask.
      const shown = isBlocked && v === 0 ? '0' : fmt(v, digits);
      setText(cell, shown);
      if (td) setTextLater(td, isBlocked ? `${shown} (blocked)` : shown);
      if (isBlocked) {
        setClass(cell, `hm-cell blocked ink-dark${v !== 0 ? ' leak' : ''}`);
        // A linked map's cell is named by its text, and a blocked one says so too.
        if (link) setLabel(cell, `${shown} (blocked)`);
        if (cell.style.backgroundColor) cell.style.backgroundColor = '';
      } else {
        if (cell.classList.contains('blocked') || cell.classList.contains('leak')) {
          cell.className = 'hm-cell';
          cell.removeAttribute('aria-label');
        }
        paintRamp(cell, (v - lo) / (hi - lo || 1));
      }
    }
    if (extra) {
      const { cell, td } = built.extras[i];
      setText(cell, fmt(extra.values[i], digits));
      if (td) setTextLater(td, fmt(extra.values[i], digits));
    }
  }
  if (built.legend) showBlockedKey(built.legend, keyBlocked ?? someBlocked);
}

/**
 * Show a map legend's key for the blocked look only while some cell has it
 * (a key shown or hidden in place: the map is not drawn again).
 */
export function showBlockedKey(legendNode, shown) {
  const key = legendNode.querySelector('.ramp-blocked-key');
  if (key && key.hidden === shown) key.hidden = !shown;
}

/** Whether blocked(i, j) holds for some cell of a rows × cols map (false without a rule). */
export function anyBlocked(rows, cols, blocked) {
  if (!blocked) return false;
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) if (blocked(i, j)) return true;
  return false;
}

/** The device's pixels per CSS pixel (1 where unknown). */
export function pixelRatio() {
  return (typeof devicePixelRatio === 'number' && devicePixelRatio) || 1;
}

/**
 * Call fn each time the device's pixel ratio changes (the page is zoomed,
 * or its window moves to another screen): a canvas drawn at the old ratio
 * would look blurred. Returns a function that stops listening.
 */
export function onPixelRatioChange(fn) {
  if (typeof matchMedia !== 'function') return () => {};
  let query = null;
  const changed = () => {
    listen();
    fn();
  };
  const listen = () => {
    query = matchMedia(`(resolution: ${pixelRatio()}dppx)`);
    query.addEventListener('change', changed, { once: true });
  };
  listen();
  return () => query.removeEventListener('change', changed);
}

/**
 * A cleared canvas drawn at the device's pixel density, its CSS size w × h
 * (narrowed to its box's width, keeping its proportions). Returns its 2D
 * context, in CSS pixels. A canvas already of that size is only cleared:
 * sizing it again would allocate it anew and lay the page out again.
 */
export function sizedCanvas(canvas, w, hgt) {
  const ratio = pixelRatio();
  const width = Math.round(w * ratio);
  const height = Math.round(hgt * ratio);
  const g = canvas.getContext('2d');
  if (canvas.width !== width || canvas.height !== height || canvas.style.width !== `${w}px`) {
    canvas.width = width;
    canvas.height = height;
    canvas.style.width = `${w}px`;
    canvas.style.maxWidth = '100%';
  } else {
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.clearRect(0, 0, width, height);
  }
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  return g;
}

/**
 * Set text only when it differs (an equal write still costs a redraw). A
 * lone text node is changed in place, which is cheaper than replacing it.
 */
export function setText(node, text) {
  const only = node.firstChild;
  if (only && only.nodeType === 3 && !only.nextSibling) {
    if (only.data !== text) only.data = text;
  } else if (node.textContent !== text) {
    node.textContent = text;
  }
}

/**
 * Nodes for `text` with d_k, T_q, d_model and the like drawn as subscripts
 * ("d", then <sub>k</sub>): built node by node, never parsed as markup. The
 * plain form stays the text of labels, results and the README.
 */
export function subscripted(text) {
  const nodes = [];
  let at = 0;
  for (const m of text.matchAll(/\b([A-Za-z])_([a-z]+)\b/g)) {
    nodes.push(text.slice(at, m.index), m[1], h('sub', { text: m[2] }));
    at = m.index + m[0].length;
  }
  nodes.push(text.slice(at));
  return nodes.filter((n) => n !== '');
}

/**
 * The screen-reader tables beside the maps are written once edits pause:
 * they are read on demand, and writing every hidden cell in the edit's own
 * frame would double its layout work. The last text given for a node wins.
 */
const TABLE_DELAY = 150;
const laterTexts = new Map();
const writeLater = afterPause(TABLE_DELAY, () => {
  for (const [node, text] of laterTexts) setText(node, text);
  laterTexts.clear();
});
function setTextLater(node, text) {
  laterTexts.set(node, text);
  writeLater();
}

/**
 * A function that runs fn once `delay` ms have passed since it was last
 * called: edits that keep coming push the run back, and a pause runs it once.
 */
export function afterPause(delay, fn) {
  let due = 0;
  let timer = null;
  const check = () => {
    const wait = due - Date.now();
    if (wait > 0) {
      timer = setTimeout(check, wait); // more edits came: wait for the pause
      return;
    }
    timer = null;
    fn();
  };
  return () => {
    due = Date.now() + delay;
    timer ??= setTimeout(check, delay);
  };
}

function setLabel(node, text) {
  if (node.getAttribute('aria-label') !== text) node.setAttribute('aria-label', text);
}

export function setClass(node, cls) {
  if (node.className !== cls) node.className = cls;
}

/** A check's line (class "check pass" or "check fail", data-passed) set in place, writing only what changed. */
export function setCheck(node, ok) {
  setClass(node, `check ${ok ? 'pass' : 'fail'}`);
  if (node.dataset.passed !== String(ok)) node.dataset.passed = String(ok);
}

/** Run fn() when the page is idle, within a second at the latest (a timer where requestIdleCallback is missing). */
export function whenIdle(fn) {
  if (globalThis.requestIdleCallback) requestIdleCallback(() => fn(), { timeout: 1000 });
  else setTimeout(fn, 50);
}

/**
 * Run fn once the edit's frame is painted and the page is idle: for work the
 * frame does not need (a timing measured live), which would otherwise delay
 * the edit's frame or the tasks right after it. A hidden page paints no
 * frame: then fn only waits for the idle time. Returns nothing; a caller
 * that may be overtaken by a newer edit checks that itself when fn runs.
 */
export function afterFrameIdle(fn) {
  if (typeof document === 'undefined' || document.hidden || typeof requestAnimationFrame !== 'function') whenIdle(fn);
  else requestAnimationFrame(() => whenIdle(fn));
}

/**
 * The heatmap's elements (a visual grid, a table for screen readers, a
 * legend), with empty cells. A linked map's cells can be
 * focused (one tab stop, arrows move; see lesson-links.js), so that the
 * keyboard can point at a weight too: its grid is then the screen readers'
 * grid (role grid, each row of the map a role row box that the layout
 * ignores, see lesson.css), and it has no table.
 */
function buildHeatmap(host, { key, rows, cols, rowNames, colNames, refused, extra, caption, name, legend, domain, link }) {
  const visual = h('div', { class: 'heatmap', 'aria-hidden': link ? null : 'true', role: link ? 'grid' : null, 'aria-label': link ? caption : null, 'data-heatmap': name });
  visual.style.setProperty('--cols', String(cols + (extra ? 1 : 0)));
  // Where a row of the map goes: a row box of a linked map, else the map itself.
  const mapRow = () => (link ? visual.appendChild(h('div', { class: 'hm-row', role: 'row' })) : visual);
  const role = (r) => (link ? r : null);
  const headRow = mapRow();
  headRow.append(h('div', { class: 'hm-corner', role: role('gridcell') }));
  const colHeads = colNames.map((label, j) => [h('div', { class: 'hm-head', text: label, role: role('columnheader'), 'data-link-k': link ? j : null })]);
  headRow.append(...colHeads.map(([node]) => node));
  if (extra) headRow.append(h('div', { class: 'hm-head hm-extra', text: extra.label, role: role('columnheader') }));

  const table = link ? null : h('table', {}, h('caption', { text: caption }));
  const tbody = table ? h('tbody') : null;
  if (table) {
    const tr = h('tr', {}, h('td'));
    colNames.forEach((label, j) => {
      const th = h('th', { scope: 'col', text: label });
      colHeads[j].push(th);
      tr.append(th);
    });
    if (extra) tr.append(h('th', { scope: 'col', text: extra.label }));
    table.append(h('thead', {}, tr), tbody);
  }

  const cells = [], extras = [], rowHeads = [];
  for (let i = 0; i < rows; i++) {
    const row = mapRow();
    const rowHead = h('div', { class: `hm-head hm-rowhead${refused(i) ? ' bad-row' : ''}`, text: refused(i) ? `${rowNames[i]} ⚠` : rowNames[i], role: role('rowheader'), 'data-link-q': link ? i : null });
    const th = table ? h('th', { scope: 'row', text: rowNames[i] }) : null;
    rowHeads.push([rowHead, th]);
    row.append(rowHead);
    const tr = table ? h('tr', {}, th) : null;
    for (let j = 0; j < cols; j++) {
      const cell = h('div', { class: 'hm-cell', 'data-row': i, 'data-col': j, text: refused(i) ? '—' : '' });
      if (link) {
        Object.assign(cell.dataset, { linkQ: i, linkK: j });
        cell.setAttribute('role', 'gridcell');
        if (refused(i)) cell.setAttribute('aria-label', 'refused: no key allowed');
        cell.tabIndex = i === 0 && j === 0 ? 0 : -1;
      }
      const td = table ? h('td', { text: refused(i) ? 'refused: no key allowed' : '' }) : null;
      row.append(cell);
      tr?.append(td);
      cells.push({ cell, td });
    }
    if (extra) {
      const cell = h('div', { class: 'hm-cell hm-extra', 'data-row': i, 'data-extra': '1', role: role('gridcell'), 'data-link-q': link ? i : null });
      const td = table ? h('td') : null;
      row.append(cell);
      tr?.append(td);
      extras.push({ cell, td });
    }
    tbody?.append(tr);
  }
  const [lo, hi] = domain;
  const legendNode = legend ? rampLegend(document, { lo, hi }) : null;
  host.replaceChildren(h('div', { class: 'heatmap-wrap' }, visual), ...(table ? [srOnly(table)] : []), ...(legendNode ? [legendNode] : []));
  if (link) rovingCells(visual);
  host.heatmapParts = { key, visual, cells, extras, rowHeads, colHeads, legend: legendNode };
  return host.heatmapParts;
}

/**
 * Figures in `parent`, one per spec { key, caption, cls }, kept from one
 * redraw to the next (so the maps inside them are updated in place, not
 * rebuilt). caption: a string, or a function returning nodes, called when
 * the figure is made. Returns each figure's host element for its content.
 * Other children of `parent` (a shared legend) stay after the figures.
 */
export function figures(parent, specs) {
  const figs = [...parent.children].filter((n) => n.dataset.fig);
  const old = new Map(figs.map((n) => [n.dataset.fig, n]));
  const nodes = specs.map(({ key, caption, cls }) => {
    let fig = old.get(key);
    if (!fig) {
      fig = h('figure', { class: cls || null, 'data-fig': key }, h('figcaption', {}, typeof caption === 'function' ? caption() : caption), h('div'));
    } else if (typeof caption === 'string') {
      setText(fig.firstChild, caption);
    }
    return fig;
  });
  const same = nodes.length === figs.length && nodes.every((n, i) => figs[i] === n);
  if (!same) parent.replaceChildren(...nodes, ...[...parent.children].filter((n) => !n.dataset.fig));
  return nodes.map((fig) => fig.lastChild);
}

/** The colour legend on its own, for a group of maps that share it. */
export function legend(opts) {
  return rampLegend(document, opts);
}

/**
 * Wrap a screen-reader-only table: a table ignores width and overflow, so the
 * visually hidden box must be a block around it.
 */
export function srOnly(table) {
  return h('div', { class: 'sr-only' }, table);
}

/** A read-only numeric table (outputs), real <table> with the numbers as text. */
export function valueTable(host, { values, rows, cols, rowLabel, colLabel, caption, digits = 3, name, scrollable = false, link = null }) {
  const rowNames = Array.from({ length: rows }, (_, i) => rowLabel(i));
  const colNames = Array.from({ length: cols }, (_, j) => colLabel(j));
  const key = JSON.stringify([name, rowNames, colNames, caption, scrollable, link]);
  // link: 'q' (a row per query: the output) or 'qk' (query rows, key columns: the scores); see lesson-links.js.
  const linkQ = (i) => (link ? i : null);
  const linkK = (j) => (link === 'qk' ? j : null);
  let built = host.valueTableParts;
  if (!built || built.key !== key || !host.contains(built.table)) {
    const table = h('table', { class: 'values', 'data-values': name }, h('caption', { text: caption }));
    const headRow = h('tr', {}, h('td', { class: 'corner' }));
    colNames.forEach((label, j) => headRow.append(h('th', { scope: 'col', text: label, 'data-link-k': linkK(j) })));
    table.append(h('thead', {}, headRow));
    const tbody = h('tbody');
    const tds = [];
    for (let i = 0; i < rows; i++) {
      const tr = h('tr', {}, h('th', { scope: 'row', text: rowNames[i], 'data-link-q': linkQ(i) }));
      for (let j = 0; j < cols; j++) {
        const td = h('td', { 'data-row': i, 'data-col': j, 'data-link-q': linkQ(i), 'data-link-k': linkK(j) });
        tds.push(td);
        tr.append(td);
      }
      tbody.append(tr);
    }
    table.append(tbody);
    // A wide table scrolls sideways; make its scroll box reachable by keyboard.
    const wrap = scrollable ? h('div', { class: 'grid-wrap', tabindex: 0, role: 'group', 'aria-label': caption }, table) : h('div', { class: 'grid-wrap' }, table);
    host.replaceChildren(wrap);
    built = host.valueTableParts = { key, table, tds };
  }
  built.tds.forEach((td, k) => setText(td, fmt(values[k], digits)));
}

/**
 * A grid of mask cells. With onToggle the cells are <button aria-pressed>
 * (pressed = allowed); without it they are display-only with a table for
 * screen readers.
 * opts: rows, cols, get(i,j) -> truthy, onToggle(i,j), label, rowLabel, colLabel,
 *       text(on) -> cell text, badRows: Set of row indexes to flag, name
 */
export function maskGrid(host, { rows, cols, get, onToggle, label, rowLabel, colLabel, text, badRows, name, pressedMeans = 'allowed', link = false }) {
  const interactive = typeof onToggle === 'function';
  const rowNames = Array.from({ length: rows }, (_, i) => rowLabel(i));
  const colNames = Array.from({ length: cols }, (_, j) => colLabel(j));
  // The same layout as last time (a toggled cell, not a new size): the cells
  // are updated in place, so a clicked button keeps its focus.
  const key = JSON.stringify([name, label, rowNames, colNames, interactive, pressedMeans, link]);
  let built = host.maskParts;
  if (!built || built.key !== key || !host.contains(built.grid)) built = buildMaskGrid(host, { key, rows, cols, rowNames, colNames, interactive, label, name, link });
  built.onToggle = onToggle;
  for (let i = 0; i < rows; i++) {
    const bad = Boolean(badRows && badRows.has(i));
    const head = built.rowHeads[i];
    setClass(head, `hm-head hm-rowhead${bad ? ' bad-row' : ''}`);
    setText(head, bad ? `${rowNames[i]} ⚠` : rowNames[i]);
    for (let j = 0; j < cols; j++) {
      const on = Boolean(get(i, j));
      const cellText = text ? text(on) : (on ? '1' : '0');
      const open = pressedMeans === 'allowed' ? on : !on; // visual: allowed cells are plain, blocked hatched
      const { cell, td } = built.cells[i * cols + j];
      setClass(cell, `mask-cell ${open ? 'allowed' : 'blocked'}${bad ? ' bad-row' : ''}`);
      setText(cell, cellText);
      if (interactive) {
        const pressed = on ? 'true' : 'false';
        if (cell.getAttribute('aria-pressed') !== pressed) cell.setAttribute('aria-pressed', pressed);
        // Said in words (a screen reader reads ✓ as "check mark"); a 0/1 cell also gives its number.
        const aria = `${rowNames[i]}, ${colNames[j]}: ${/^[01]$/.test(cellText) ? `${cellText}, ` : ''}${open ? 'allowed' : 'blocked'}`;
        if (cell.getAttribute('aria-label') !== aria) cell.setAttribute('aria-label', aria);
      } else {
        setTextLater(td, open ? `${cellText} (allowed)` : `${cellText} (blocked)`);
      }
    }
  }
  return built.grid;
}

/**
 * A mask grid's elements with empty cells; buttons call the latest onToggle.
 * An editable grid is one tab stop: the arrow keys move between its buttons
 * (rovingCells), and the last button focused, by key or pointer, is where
 * Tab comes back to.
 */
function buildMaskGrid(host, { key, rows, cols, rowNames, colNames, interactive, label, name, link }) {
  const linkQ = (i) => (link ? i : null);
  const grid = h('div', { class: 'maskgrid', 'data-mask': name });
  grid.style.setProperty('--cols', String(cols));
  if (interactive) {
    grid.setAttribute('role', 'group');
    grid.setAttribute('aria-label', label);
  } else {
    grid.setAttribute('aria-hidden', 'true');
  }
  grid.append(h('div', { class: 'hm-corner' }));
  colNames.forEach((c, j) => grid.append(h('div', { class: 'hm-head', text: c, 'data-link-k': linkQ(j) })));
  const table = interactive ? null : h('table', {}, h('caption', { text: label }));
  if (table) {
    const headRow = h('tr', {}, h('td'));
    for (const c of colNames) headRow.append(h('th', { scope: 'col', text: c }));
    table.append(h('thead', {}, headRow));
  }
  const tbody = table ? h('tbody') : null;
  const built = { key, grid, cells: [], rowHeads: [], onToggle: null };
  for (let i = 0; i < rows; i++) {
    const head = h('div', { class: 'hm-head hm-rowhead', 'data-link-q': linkQ(i) });
    built.rowHeads.push(head);
    grid.append(head);
    const tr = tbody ? h('tr', {}, h('th', { scope: 'row', text: rowNames[i] })) : null;
    for (let j = 0; j < cols; j++) {
      if (interactive) {
        const cell = h('button', { type: 'button', class: 'mask-cell', 'data-row': i, 'data-col': j, 'data-link-q': linkQ(i), 'data-link-k': linkQ(j) });
        cell.tabIndex = i === 0 && j === 0 ? 0 : -1;
        cell.addEventListener('click', () => built.onToggle(i, j));
        grid.append(cell);
        built.cells.push({ cell, td: null });
      } else {
        const cell = h('div', { class: 'mask-cell', 'data-row': i, 'data-col': j, 'data-link-q': linkQ(i), 'data-link-k': linkQ(j) });
        const td = h('td');
        grid.append(cell);
        tr.append(td);
        built.cells.push({ cell, td });
      }
    }
    if (tbody) tbody.append(tr);
  }
  if (table) table.append(tbody);
  if (interactive) rovingCells(grid);
  host.replaceChildren(h('div', { class: 'heatmap-wrap' }, grid), ...(table ? [srOnly(table)] : []));
  host.maskParts = built;
  return built;
}

/** Put keyboard focus back on the mask button at (i, j) after a redraw. */
export function refocusMaskCell(host, i, j) {
  const btn = host.querySelector(`button[data-row="${i}"][data-col="${j}"]`);
  if (btn) btn.focus();
}

// ---------------------------------------------------------------------------
// Section status line: the core's error message, shown inline
// ---------------------------------------------------------------------------

const INDEXED = /\b(batch|head|query|key|row|column|token|feature|position|dim|value) (\d+)\b/g;

/**
 * A message of the core or the JS API as the page shows it: the API counts
 * from 0 (as documented), the page from 1, so "query 1" there is "query 2"
 * here, like the grid row the learner sees. Only the page's display changes.
 */
export function oneBased(message) {
  return String(message).replace(INDEXED, (_, noun, i) => `${noun} ${Number(i) + 1}`);
}

/**
 * A refusal of the core in words first, its code after: "query row has no
 * allowed key (query 2): …" with ALL_MASKED_ROW reads "Query row has no
 * allowed key (query 2): … (ALL_MASKED_ROW)". The first word is capitalised
 * only when it is a plain word (not a name such as q, dk or keyPaddingMask);
 * a message that already ends in parentheses takes the code after a dash.
 */
export function refusalText(code, message) {
  let text = String(message).trim().replace(/\.$/, '');
  if (/^[a-z]{3,}(?![\w.[])/.test(text)) text = text[0].toUpperCase() + text.slice(1);
  return text.endsWith(')') ? `${text} — ${code}` : `${text} (${code})`;
}

/**
 * The line where a section says why the core refused its input. show(message,
 * field): field, if given, is the input whose edit was refused (or a list of
 * the inputs refused together); it is marked invalid and described by this
 * line until clear() (the next valid result).
 * said: the announcer of the results this line stands for (lesson-announce.js).
 * A refusal takes its last sentence away: the message speaks instead, and no
 * stale number waits to be read out.
 */
export function statusLine(said = null) {
  const node = h('p', { class: 'core-error', role: 'status', 'aria-live': 'polite', hidden: true, id: uid('status') });
  const marked = new Set();
  return {
    node,
    show(message, field = null) {
      node.textContent = message;
      node.hidden = false;
      said?.refused();
      for (const one of [field].flat()) {
        if (!one) continue;
        marked.add(one);
        const ids = one.getAttribute('aria-describedby') || '';
        if (one.getAttribute('aria-invalid') !== 'true') one.setAttribute('aria-invalid', 'true');
        if (!ids.split(/\s+/).includes(node.id)) one.setAttribute('aria-describedby', `${ids} ${node.id}`.trim());
      }
    },
    // Called after every valid edit: an equal write would still restyle the line.
    clear() {
      if (!node.hidden) { node.textContent = ''; node.hidden = true; }
      for (const field of marked) {
        // The field's own check may have replaced the marks since (a text that is not a number).
        const ids = (field.getAttribute('aria-describedby') || '').split(/\s+/).filter(Boolean);
        if (ids.includes(node.id)) {
          field.removeAttribute('aria-invalid');
          const rest = ids.filter((id) => id !== node.id).join(' ');
          if (rest) field.setAttribute('aria-describedby', rest);
          else field.removeAttribute('aria-describedby');
        }
      }
      marked.clear();
    },
  };
}

// ---------------------------------------------------------------------------
// Tiny SVG charts (histogram, line chart). Counting samples into bins is
// display work; the samples themselves come from the core.
// ---------------------------------------------------------------------------

/** Count values into `bins` equal bins over [lo, hi]. */
export function binCounts(values, lo, hi, bins) {
  const counts = new Array(bins).fill(0);
  const width = (hi - lo) / bins;
  for (const v of values) {
    const k = Math.floor((v - lo) / width);
    if (k >= 0 && k < bins) counts[k] += 1;
    else if (v === hi) counts[bins - 1] += 1;
  }
  return counts;
}

/**
 * A histogram as an SVG image with a text title; returns the <svg>.
 * The axes are the caller's: x from lo to hi, y from 0 to yMax, so that
 * histograms drawn with the same ranges can be compared by eye. Counts above
 * yMax are cut at the top. xLabel and yLabel name the axes.
 */
export function histogramSvg({ counts, lo, hi, yMax, xLabel, yLabel, title, cls }) {
  const W = 320, H = 170, padL = 50, padR = 10, padT = 10, padB = 38;
  const bw = (W - padL - padR) / counts.length;
  const x = (v) => padL + ((v - lo) / (hi - lo)) * (W - padL - padR);
  const y = (c) => H - padB - ((H - padT - padB) * Math.min(c, yMax)) / yMax;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: `chart ${cls || ''}`, role: 'img', 'aria-label': title });
  svg.append(s('title', { text: title }));
  for (const c of [yMax / 2, yMax]) svg.append(s('line', { x1: padL, x2: W - padR, y1: y(c), y2: y(c), class: 'gridline' }));
  // The bars are one path, one "M x,base V top H x+w V base Z" per non-empty
  // bin: new counts on the same axes change that path and the title only
  // (see updateHistogram), one attribute instead of a hundred elements.
  const base = H - padB, width = Math.max(0.5, bw - 0.5);
  const bars = s('path', { class: 'bar' });
  svg.append(bars);
  svg.histogram = {
    bars, title: svg.firstChild,
    d: (cs) => cs.map((c, k) => (c > 0 ? `M${r2(padL + k * bw)},${base}V${r2(y(c))}H${r2(padL + k * bw + width)}V${base}Z` : '')).join(''),
  };
  bars.setAttribute('d', svg.histogram.d(counts));
  svg.append(s('line', { x1: padL, x2: W - padR, y1: H - padB, y2: H - padB, class: 'axis' }));
  svg.append(s('line', { x1: padL, x2: padL, y1: padT, y2: H - padB, class: 'axis' }));
  svg.append(s('line', { x1: x(0), x2: x(0), y1: padT, y2: H - padB, class: 'axis zero' }));
  for (const v of [lo, lo / 2, 0, hi / 2, hi]) {
    svg.append(s('text', { x: x(v), y: H - padB + 13, class: 'tick mid', text: fmtPlain(v) }));
  }
  for (const c of [0, yMax / 2, yMax]) svg.append(s('text', { x: padL - 4, y: y(c) + 4, class: 'tick end', text: fmtPlain(c) }));
  svg.append(s('text', { x: (padL + W - padR) / 2, y: H - 4, class: 'axis-label mid', text: xLabel }));
  svg.append(s('text', { x: 12, y: (padT + H - padB) / 2, class: 'axis-label mid', transform: `rotate(-90 12 ${(padT + H - padB) / 2})`, text: yLabel }));
  return svg;
}

/** A coordinate with at most 2 decimals, for path data. */
const r2 = (v) => String(Math.round(v * 100) / 100);

/** Put new counts (as many as before) and a new title into a histogramSvg(), in place. */
export function updateHistogram(svg, { counts, title }) {
  const { bars, d, title: titleNode } = svg.histogram;
  const path = d(counts);
  if (bars.getAttribute('d') !== path) bars.setAttribute('d', path);
  setText(titleNode, title);
  if (svg.getAttribute('aria-label') !== title) svg.setAttribute('aria-label', title);
}

/**
 * A line chart of several series over the same x points.
 * series: [{ label, values, cls }], xs: labels for each point, yRange [lo, hi]
 */
export function lineChartSvg({ xs, series, yRange, title, marker }) {
  const W = 340, H = 180, padL = 42, padR = 16, padT = 12, padB = 30;
  const [lo, hi] = yRange;
  const x = (k) => padL + (k * (W - padL - padR)) / Math.max(1, xs.length - 1);
  const y = (v) => padT + (1 - (v - lo) / (hi - lo)) * (H - padT - padB);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title });
  svg.append(s('title', { text: title }));
  svg.append(s('line', { x1: padL, x2: W - padR, y1: H - padB, y2: H - padB, class: 'axis' }));
  svg.append(s('line', { x1: padL, x2: padL, y1: padT, y2: H - padB, class: 'axis' }));
  for (const v of [lo, (lo + hi) / 2, hi]) {
    svg.append(s('text', { x: padL - 4, y: y(v) + 4, class: 'tick end', text: fmt(v, 2) }));
    svg.append(s('line', { x1: padL, x2: W - padR, y1: y(v), y2: y(v), class: 'gridline' }));
  }
  xs.forEach((label, k) => svg.append(s('text', { x: x(k), y: H - padB + 14, class: 'tick mid', text: label })));
  // The marker line is always there, hidden while marker is null: moveMarker() moves it in place.
  svg.marker = { line: s('line', { y1: padT, y2: H - padB, class: 'marker' }), x };
  svg.append(svg.marker.line);
  moveMarker(svg, marker);
  for (const { values, cls } of series) {
    const d = Array.from(values, (v, k) => `${k ? 'L' : 'M'}${x(k).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    svg.append(s('path', { d, class: `series ${cls}` }));
    values.forEach((v, k) => svg.append(s('circle', { cx: x(k), cy: y(v), r: 3, class: `dot ${cls}` })));
  }
  return svg;
}

/** Put a lineChartSvg()'s marker at point k of its x axis, or hide it (k null). */
export function moveMarker(svg, k) {
  const { line, x } = svg.marker;
  const hidden = k == null;
  if (line.hasAttribute('visibility') !== hidden) {
    if (hidden) line.setAttribute('visibility', 'hidden');
    else line.removeAttribute('visibility');
  }
  if (hidden || line.getAttribute('x1') === String(x(k))) return;
  line.setAttribute('x1', String(x(k)));
  line.setAttribute('x2', String(x(k)));
}

/**
 * blocked(i, j) over one (Tq, Tk) block of the core's allowed pairs
 * (lab.allowedPairs): block n of the batch, 0 by default.
 */
export function blockedFrom(pairs, block = 0) {
  const [Tq, Tk] = pairs.shape.slice(-2);
  const base = block * Tq * Tk;
  return (i, j) => pairs.data[base + i * Tk + j] === 0;
}

/** Query rows (as a Set) in which the core's allowed pairs (Tq, Tk) hold no key. */
export function emptyRowsOf(pairs) {
  const [Tq, Tk] = pairs.shape.slice(-2);
  const rows = new Set();
  for (let i = 0; i < Tq; i++) if (!pairs.data.subarray(i * Tk, (i + 1) * Tk).includes(1)) rows.add(i);
  return rows;
}
