/**
 * breakit.js: the "Break it" section of the lesson.
 *
 *   import { makeSection } from './breakit.js';
 *   makeSection({ HashError, only: ['no-scale'] }) // a section (sections/registry.js)
 *
 * One card per bug (exercises.js). A card shows the mistake in PyTorch terms
 * and, under "Read the C", the core's own C that switches the bug on (taken
 * from c_src at build time by web/c-source.mjs), asks which check will fail,
 * has a switch that turns the bug on in the C core, a panel with the checks
 * (checks.js) and the weights, scores and output the core returned, with the
 * offending entry marked, and the repair.
 *
 * State: per card the predicted check, whether the bug is on, and whether it
 * was ever broken and repaired. It lives in a progress record (progress.js):
 * the page's own, kept in localStorage, or one the caller passes (the
 * <attention-lab> element gives each widget its own). It is also written
 * as a short string in the URL hash (a BreakIt's getState() / setState(text));
 * onChange(text) is called after every change a learner makes.
 * makeSection() adapts all this to the sections' interface (registry.js).
 *
 * A prediction is one of PREDICTION_CHECKS (exercises.js): every check but
 * the catch-all "Matches the reference", which every bug fails. An
 * exercise's outcome is decided the first time a learner turns its bug
 * on: onResult({ exercise, passed }) is called then, and only then; passed
 * is whether the predicted check failed (false without a prediction). A
 * card that a state (a link, a saved record) shows broken before any
 * outcome is decided then too, as no point: its checks could be seen before
 * a prediction was made here. From that moment the prediction is locked, so
 * that it cannot be changed after the checks have been seen. "Reset these
 * cards" ("Reset this card" when there is one) starts the cards again for
 * practice (progress.js), and so does a state that changes a decided card's
 * prediction: the prediction unlocks, but the outcome, and so the score,
 * stays the first one, and the verdict says so.
 *
 * The DOM is built with createElement and textContent only; styles are
 * classes from breakit.css; every number shown comes from the core.
 */
import { CHECKS, runChecks, intendedRule, fmt } from './checks.js';
import { EXERCISES, PREDICTION_CHECKS, caughtBy, predictionLetter, predictionName, quotedTitle } from './exercises.js';
import { h, oneBased, setText, setClass, uid, subscripted, showBlockedKey, anyBlocked } from './lesson-ui.js';
import { Progress, lessonProgress, BREAKIT_DEFAULT, isBreakItState } from './progress.js';
import { paintRamp, rampLegend } from './palette.js';
import { cCode, placeName } from './lesson-flow.js';
import { markScrollBoxes } from './lesson-context.js';
import { BUG_SOURCES } from './generated/c-source.js';

const ON = 1;
const BROKEN = 2;
const REPAIRED = 4;

/** ms between emptying a live region and writing it again, so that the same words are said again. */
const SAY_AGAIN_PAUSE = 100;

// ---------------------------------------------------------------------------
// State <-> string: two characters per card, in EXERCISES order.
//   1st: the predicted check, 'a' + its index in CHECKS, or '-' for none
//   2nd: flags, a digit 0-7: 1 = bug on now, 2 = broken once, 4 = repaired
// ---------------------------------------------------------------------------

function decodeState(text) {
  text = text.padEnd(BREAKIT_DEFAULT.length, '-0');
  return EXERCISES.map((_, i) => {
    const p = text[2 * i];
    const flags = Number(text[2 * i + 1]);
    return {
      prediction: predictionName(p),
      on: Boolean(flags & ON),
      broken: Boolean(flags & BROKEN),
      repaired: Boolean(flags & REPAIRED),
    };
  });
}

function encodeState(cards) {
  return cards.map((c) => {
    return predictionLetter(c.prediction) + String((c.on ? ON : 0) | (c.broken ? BROKEN : 0) | (c.repaired ? REPAIRED : 0));
  }).join('');
}

// ---------------------------------------------------------------------------
// Small DOM helpers: lesson-ui.js's, in this file's shorthand
// ---------------------------------------------------------------------------

const el = (tag, { cls, text, attrs } = {}, ...children) =>
  h(tag, { class: cls || null, text, ...attrs }, ...children.filter(Boolean));

/**
 * Write `text` into `node` with subscripts (subscripted in lesson-ui.js: the
 * card's texts keep d_k, d_v, T_k and d_model in plain form, as labels,
 * README text and test results), unless it already holds it.
 */
function setSubscripted(node, text) {
  if (node.bkText === text) return;
  node.bkText = text;
  node.replaceChildren(...subscripted(text));
}

// ---------------------------------------------------------------------------
// Tables: weights / scores (queries × keys) and output (tokens × features)
// ---------------------------------------------------------------------------

/**
 * A real <table> of numbers, with empty cells: drawNumberTable fills them.
 * A card keeps its tables from one draw to the next (a bug turned on or off,
 * another entry marked), so that only the cells' texts, classes and colours
 * change, not the whole panel.
 */
function buildNumberTable({ caption, rows, cols, rowLabel, colLabel, name, panel }, card) {
  const table = el('table', { cls: 'bk-table', attrs: { 'data-table': name } }, el('caption', { text: caption }));
  const colHeads = Array.from({ length: cols }, () => el('th', { attrs: { scope: 'col' } }));
  table.append(el('thead', {}, el('tr', {}, el('td', { cls: 'bk-corner' }), ...colHeads)));
  const body = el('tbody');
  const rowHeads = [];
  const cells = [];
  for (let i = 0; i < rows; i++) {
    const th = el('th', { attrs: { scope: 'row' } });
    const tr = el('tr', {}, th);
    rowHeads.push(th);
    for (let j = 0; j < cols; j++) {
      const td = el('td', { cls: 'bk-cell', attrs: { 'data-row': i, 'data-col': j } });
      cells.push(td);
      tr.append(td);
    }
    body.append(tr);
  }
  table.append(body);
  // On a narrow screen the table scrolls in its box, which then gets a tab
  // stop and the page's hint (markScrollBoxes); its name says which card's table it is.
  const node = el('div', { cls: 'bk-table-wrap', attrs: { 'data-panel': panel, 'data-scroll-label': `${caption}, card “${card}”` } }, table);
  return { node, rowLabel, colLabel, colHeads, rowHeads, cells };
}

/**
 * Fill a buildNumberTable(). `worst` (or null) is marked with an outline and
 * a ◆; its row and column headers get ▶ and ▼, so the mark does not rest on
 * colour. The glyphs are not read; a screen reader hears the mark once:
 * "marked by the check" on a blamed cell, "row marked by the check" on the
 * header of a blamed row (a `worst` whose column is null). A `worst` with a
 * `context` (a row shown because of an entry in another table) is outlined,
 * and its row header says why instead.
 * Weights are coloured with the page's one ramp (palette.js);
 * blocked(i, j) cells are hatched like everywhere else and say so in text.
 */
function drawNumberTable(table, { values, colour, blocked, worst }) {
  const { rowLabel, colLabel, colHeads, rowHeads, cells } = table;
  const cols = colHeads.length;
  colHeads.forEach((th, j) => {
    const marked = Boolean(worst) && worst.column === j;
    setClass(th, marked ? 'bk-mark-col' : '');
    const text = colLabel(j);
    if (th.bkText === text && th.bkMarked === marked) return;
    th.bkText = text;
    th.bkMarked = marked;
    th.replaceChildren(...(marked ? [el('span', { text: '▼ ', attrs: { 'aria-hidden': 'true' } })] : []), text);
  });
  rowHeads.forEach((th, i) => {
    const marked = Boolean(worst) && worst.row === i;
    setClass(th, marked ? 'bk-mark-row' : '');
    const text = rowLabel(i);
    const note = !marked ? '' : worst.context ? ` (${worst.context})` : worst.column === null ? ' (row marked by the check)' : '';
    if (th.bkText === text && th.bkMarked === marked && th.bkNote === note) return;
    th.bkText = text;
    th.bkMarked = marked;
    th.bkNote = note;
    th.replaceChildren(...(marked ? [el('span', { text: '▶ ', attrs: { 'aria-hidden': 'true' } })] : []), text,
      ...(note ? [el('span', { cls: 'bk-sr', text: note })] : []));
  });
  cells.forEach((td, k) => {
    const i = Math.floor(k / cols);
    const j = k % cols;
    const v = values[k];
    const isBlocked = Boolean(blocked && blocked(i, j));
    const isWorst = Boolean(worst) && worst.row === i && (worst.column === j || worst.column === null);
    const diamond = isWorst && worst.column === j;
    // A blamed row says so on its header, a blamed cell on the cell.
    const blamed = diamond && !worst.context;
    const classes = ['bk-cell'];
    if (Number.isNaN(v)) classes.push('bk-nan');
    if (isBlocked) classes.push('blocked');
    if (isWorst) classes.push(worst.column === null ? 'bk-worst-row' : 'bk-worst');
    const painted = colour && !isBlocked && !Number.isNaN(v);
    if (painted) {
      // The ramp's ink class is kept on the cell, so that an equal class list is not written again.
      const ink = [...td.classList].find((c) => c.startsWith('ink-'));
      setClass(td, [...classes, ...(ink ? [ink] : [])].join(' '));
      paintRamp(td, v);
    } else {
      setClass(td, classes.join(' '));
      if (td.style.backgroundColor) td.style.backgroundColor = '';
    }
    // The cell's text: a ◆ (not read), the number, and what a screen reader adds. Only
    // the number changes in place; a new mark or state rebuilds the cell.
    const marks = `${diamond}${isBlocked}${blamed}`;
    const number = fmt(v);
    if (td.bkMarks === marks) {
      if (td.bkNumber.data !== number) td.bkNumber.data = number;
      return;
    }
    td.bkMarks = marks;
    td.bkNumber = document.createTextNode(number);
    td.replaceChildren(
      ...(diamond ? [el('span', { cls: 'bk-diamond', text: '◆ ', attrs: { 'aria-hidden': 'true' } })] : []),
      td.bkNumber,
      ...(isBlocked ? [el('span', { cls: 'bk-sr', text: ' (blocked)' })] : []),
      ...(blamed ? [el('span', { cls: 'bk-sr', text: ' (marked by the check)' })] : []));
  });
}

/**
 * The tables for one core result, with `worst` marked where it lies, drawn
 * into `host`. The tables are built again only when their layout changes.
 */
function resultTables(host, exercise, result, worst, allowed) {
  const q = (i) => `q${i + 1}`;
  const k = (j) => `k${j + 1}`;
  const { weights, output, scores } = result;
  const [H, T, Tk] = weights.shape.length === 4 ? weights.shape.slice(1) : [1, ...weights.shape.slice(-2)];
  const tables = []; // [layout, fill]: the legend follows the weights
  for (let h = 0; h < H; h++) {
    const head = H > 1 ? ` of head ${h + 1}` : '';
    // The weights always show where the blame lies: the cell itself, or for
    // an output entry the row of the query that produced it (as context).
    const inHead = worst && (worst.head === null || worst.head === h);
    const mark = !inHead || !['weights', 'output'].includes(worst.tensor) ? null
      : worst.tensor === 'output' ? { row: worst.row, column: null, context: 'its output entry is marked by the check' } : worst;
    tables.push([{
      caption: `Weights${head} (rows: queries, columns: keys; hatched: blocked)`, rows: T, cols: Tk,
      rowLabel: q, colLabel: k, name: `weights${h}`, panel: 'weights',
    }, {
      values: weights.data.subarray(h * T * Tk, (h + 1) * T * Tk), colour: true, blocked: (i, j) => !allowed(0, h, i, j), worst: mark,
    }]);
  }
  if (scores) {
    tables.push([{ caption: 'Scores before masking', rows: T, cols: Tk, rowLabel: q, colLabel: k, name: 'scores', panel: 'scores' },
      { values: scores.data, worst: worst && worst.tensor === 'scores' ? worst : null }]);
  }
  const d = output.shape[output.shape.length - 1];
  tables.push([{
    caption: 'Output (rows: tokens, columns: features)', rows: T, cols: d,
    rowLabel: (i) => `token ${i + 1}`, colLabel: (c) => `f${c + 1}`, name: 'output', panel: 'output',
  }, { values: output.data, worst: worst && worst.tensor === 'output' ? worst : null }]);
  // The backward cards also show the gradients of the loss for q, k and v.
  for (const [name, rowLabel] of exercise.backward && result.gradients ? [['dq', q], ['dk', k], ['dv', k]] : []) {
    const g = result.gradients[name];
    tables.push([{
      caption: `Gradient ${name} (rows: ${name === 'dq' ? 'queries' : 'keys'}, columns: features)`,
      rows: g.shape[0], cols: g.shape[1], rowLabel, colLabel: (c) => `f${c + 1}`, name, panel: 'output',
    }, { values: g.data, worst: worst && worst.tensor === name ? worst : null }]);
  }
  const key = JSON.stringify(tables.map(([{ caption, rows, cols, name }]) => [caption, rows, cols, name]));
  let built = host.bkTables;
  if (!built || built.key !== key || !host.contains(built.wrap)) {
    const wrap = el('div', { cls: 'bk-maps' });
    const parts = tables.map(([layout]) => buildNumberTable(layout, exercise.title));
    // The legend belongs to the weight maps: show="checks" hides both.
    const legend = rampLegend(document);
    legend.dataset.panel = 'weights';
    parts.forEach((part, n) => {
      wrap.append(part.node);
      if (n === H - 1) wrap.append(legend);
    });
    host.replaceChildren(wrap);
    built = host.bkTables = { key, wrap, parts, legend };
  }
  tables.forEach(([, fill], n) => drawNumberTable(built.parts[n], fill));
  // Its key for the blocked look shows only while some weight is blocked.
  showBlockedKey(built.legend, tables.some(([{ panel, rows, cols }, { blocked }]) => panel === 'weights' && anyBlocked(rows, cols, blocked)));
  // New numbers can widen a table: its box is measured again once the page is idle.
  markScrollBoxes([built.wrap]);
}

// ---------------------------------------------------------------------------
// The C behind a bug
// ---------------------------------------------------------------------------

/**
 * "Read the C": a disclosure with the C that switches `bug` on in the core
 * (BUG_SOURCES: one excerpt per function, under its file and function name).
 * It is a button with aria-expanded, not a <details>: the card itself is a
 * <details>, and its <summary> stays the only one inside it. The code boxes
 * are built the first time it opens, so that a closed one costs three
 * elements. A box scrolls sideways on a phone, so it is a region with a tab
 * stop, named by bug, function and place on the page (the same card can
 * show in the lesson and in an <attention-lab> widget), and it shows the
 * page's "scroll sideways" hint when it overflows.
 */
function cSource(bug) {
  const parts = BUG_SOURCES[bug];
  if (!parts) return null;
  const body = el('div', { cls: 'bk-c-body', attrs: { id: uid('bk-c'), hidden: true } });
  const toggle = el('button', { cls: 'bk-c-toggle', text: 'Read the C: how the core switches this bug on',
    attrs: { type: 'button', 'aria-expanded': 'false', 'aria-controls': body.id } });
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    body.hidden = !open;
    if (!open || body.firstChild) return;
    const place = placeName(body);
    body.append(...parts.flatMap(({ file, where, code }) => {
      const pre = cCode(code);
      pre.tabIndex = 0;
      pre.setAttribute('role', 'region');
      pre.setAttribute('aria-label', `C source of bug ${bug}: ${file}, ${where}${place ? `, in “${place}”` : ''}`);
      return [el('p', { cls: 'bk-c-where' }, el('code', { text: file }), `, ${where}`), pre];
    }));
    markScrollBoxes([body]); // a box wider than the screen says so (lesson.css)
  });
  return el('div', { cls: 'bk-c-source' }, toggle, body);
}

// ---------------------------------------------------------------------------
// One card
// ---------------------------------------------------------------------------

class Card {
  constructor(exercise, index, owner, alone) {
    this.exercise = exercise;
    this.index = index;
    this.owner = owner;
    this.selected = null; // the check whose entry is marked; not saved
    this.results = null; // runChecks for the bug on (resultsOn true) or off
    this.resultsOn = null;
    this.checked = new Map(); // bug on -> its runChecks: the core's answer for a state is kept, so a toggle back costs no run
    this.drawn = false; // whether the checks and tables have been drawn: not before the card is first open (see render)
    const id = `bk-${exercise.bug}`;

    this.badges = el('span', { cls: 'bk-badges' });
    const summary = el('summary', {},
      // Alone (one card in a widget), it has no number: its place in the lesson's list means nothing to a learner who sees only this card.
      alone ? null : el('span', { cls: 'bk-num', text: String(index + 1) }),
      el('h3', { cls: 'bk-title' }, ...subscripted(exercise.title)),
      this.badges);

    // A box of PyTorch lines, in the page's code box (pre.c-src): on a phone
    // the code scrolls sideways, and the box then gets a tab stop and the
    // page's hint (markScrollBoxes), named by what it shows and the card. Its
    // comment lines ("# …") wrap at the box's width instead, so a narrow
    // screen never hides what the lines mean.
    const code = (cls, what, text) => el('pre', { cls: `c-src bk-code ${cls}`, attrs: { 'data-scroll-label': `The ${what}, card “${exercise.title}”` } },
      el('code', {}, ...text.split('\n').map((line, k, lines) => {
        const end = k < lines.length - 1 ? '\n' : '';
        return line.startsWith('#') ? el('span', { cls: 'tok-com bk-code-note', text: line + end }) : document.createTextNode(line + end);
      })));
    const mistake = code('bk-mistake', 'mistake', exercise.mistake);

    this.options = PREDICTION_CHECKS.map((check) => {
      const input = el('input', { attrs: { type: 'radio', name: `${id}-predict`, value: check.name, id: `${id}-p-${check.name}` } });
      input.addEventListener('change', () => { if (input.checked) owner.change(index, { prediction: check.name }); });
      // The text is a box of its own, so that its second line starts under its first, not under the radio.
      return { input, label: el('label', { cls: 'bk-option', attrs: { for: input.id } }, input, el('span', { cls: 'bk-option-text' }, ...subscripted(check.title))) };
    });
    const predict = el('fieldset', { cls: 'bk-predict' },
      el('legend', {}, ...subscripted(`Predict: ${exercise.prompt}`)),
      el('div', { cls: 'bk-option-list' }, ...this.options.map((o) => o.label)));

    // A toggle keeps one accessible name; aria-pressed says whether it is on.
    // The visible state ("bug off" / "bug on", and ○ / ● from the CSS) is
    // hidden from assistive technology, which reads aria-pressed instead.
    this.switchState = el('span', { cls: 'bk-switch-state', attrs: { 'aria-hidden': 'true' } });
    this.toggle = el('button', { cls: 'bk-switch', attrs: { type: 'button', 'aria-pressed': 'false' } }, 'Break it', this.switchState);
    this.toggle.addEventListener('click', () => {
      const on = this.toggle.getAttribute('aria-pressed') !== 'true';
      owner.change(index, on ? { on: true, broken: true } : { on: false });
      if (on) this.revealMark();
    });
    this.repairButton = el('button', { cls: 'bk-repair-button', text: 'Apply the repair', attrs: { type: 'button' } });
    // Once applied, the button gives way to a line that says so, which the
    // live status line announces too. Focus goes back to the card's switch
    // (not to the page), from where Tab moves on through the card.
    this.repairedNote = el('p', { cls: 'bk-repaired', text: '✓ Repair applied: the bug is off.', attrs: { hidden: true } });
    this.repairButton.addEventListener('click', () => {
      owner.change(index, { on: false, repaired: true });
      if (!this.repairedNote.hidden) this.toggle.focus();
    });

    this.status = el('p', { cls: 'bk-status' });
    this.verdict = el('p', { cls: 'bk-verdict' });
    // A screen reader hears the status line and the verdict (the exercise's
    // point) together, once, when either changes: one live region holds both.
    // A reset made elsewhere (the quiz's "Reset all progress") rewrites it
    // quietly: see announce().
    this.said = el('div', { cls: 'bk-said', attrs: { role: 'status', 'aria-atomic': 'true' } }, this.status, this.verdict);
    // One item per check, in CHECKS order (as runChecks returns them), kept from one draw to the next.
    this.checkItems = CHECKS.map((check) => this.checkItem(check));
    this.checkList = el('ul', { cls: 'bk-checks', attrs: { 'aria-label': 'Checks', 'data-panel': 'checks' } },
      ...this.checkItems.map((item) => item.li));
    this.maps = el('div');
    this.repairBox = el('div', { cls: 'bk-repair' },
      el('h4', { text: 'The repair, in PyTorch terms' }),
      code('bk-fix', 'repair', exercise.repair),
      this.repairButton, this.repairedNote);

    // A card that opens for the first time draws its checks and tables: on a
    // press of its summary before it opens (so it never shows an empty panel,
    // and its live region, still hidden, says nothing), else (opened by a
    // link to it, or by a script) once it has opened.
    const drawOnOpen = () => {
      if (this.drawn) return;
      this.drawn = true;
      this.render(owner.state[index]);
    };
    summary.addEventListener('click', () => { if (!this.node.open) drawOnOpen(); });
    this.node = el('details', { cls: 'bk-card', attrs: { id, 'data-bug': exercise.bug } }, summary,
      el('div', { cls: 'bk-body' },
        el('p', { cls: 'bk-setting' }, ...subscripted(`Input: ${exercise.setting}`)),
        el('h4', { text: 'The mistake, in PyTorch terms' }), mistake, cSource(exercise.bug),
        predict,
        el('div', { cls: 'bk-actions' }, this.toggle),
        el('div', { cls: 'bk-panel' }, this.said, this.checkList, this.maps),
        this.repairBox));
    this.node.addEventListener('toggle', () => { if (this.node.open) drawOnOpen(); });
  }

  /**
   * Redraw from the card's state. Once the card has been open, this runs the
   * exercise through the core and draws its checks and tables; a card that
   * was never open shows only its summary, so it keeps just its switch,
   * prediction and verdict up to date (the page loads without running
   * every card's checks).
   */
  render(state) {
    const { exercise } = this;
    for (const o of this.options) {
      o.input.checked = o.input.value === state.prediction;
      o.input.disabled = state.broken;
    }
    this.toggle.setAttribute('aria-pressed', String(state.on));
    setText(this.switchState, state.on ? ': bug on' : ': bug off');
    setText(this.badges, [
      state.prediction ? 'predicted' : '', state.broken ? 'broken' : '', state.repaired ? 'repaired' : '',
    ].filter(Boolean).join(' · '));
    this.node.classList.toggle('bk-is-on', state.on);
    this.repairBox.hidden = !state.broken;
    const repaired = state.repaired && !state.on;
    this.repairButton.hidden = repaired;
    this.repairedNote.hidden = !repaired;
    setSubscripted(this.verdict, this.verdictText(state));
    if (!this.node.open && !this.drawn) return;
    this.drawn = true;

    // The checks depend only on whether the bug is on: a new prediction or mark reuses them.
    if (this.resultsOn !== state.on) {
      if (!this.checked.has(state.on)) this.checked.set(state.on, runChecks(this.owner.lab, { ...exercise, bug: state.on ? exercise.bug : null }));
      this.results = this.checked.get(state.on);
      this.resultsOn = state.on;
    }
    const { results } = this;
    const failed = results.filter((r) => !r.passed);
    if (this.selected && !failed.some((r) => r.name === this.selected)) this.selected = null;
    if (!this.selected && failed.length) {
      const first = failed.find((r) => r.name === state.prediction && r.worst)
        || failed.find((r) => exercise.catchers.includes(r.name) && r.worst) || failed.find((r) => r.worst);
      this.selected = first ? first.name : null;
    }

    // A check that does not apply to this card's input (– n/a) is neither passed nor failed.
    const applied = results.filter((r) => !r.skipped).length;
    const skipped = results.length - applied;
    const notApplied = skipped ? `; ${skipped} ${skipped === 1 ? 'does' : 'do'} not apply` : '';
    setText(this.status, state.on
      ? `Bug “${exercise.bug}” is on: ${failed.length} of ${applied} checks fail${notApplied}.`
      : `Bug off: ${failed.length === 0 ? `all ${applied} checks pass` : `${failed.length} of ${applied} checks fail`}${notApplied}${state.repaired ? ' (repaired)' : ''}.`);

    results.forEach((r, n) => this.drawCheck(this.checkItems[n], r));
    const run = results.run;
    this.owner.ran(exercise.bug, run);
    const worst = failed.find((r) => r.name === this.selected)?.worst || null;
    if (run.refused) {
      this.maps.replaceChildren(el('p', { cls: 'bk-refused', text: `The core refused the call: ${run.refused.code}, ${oneBased(run.refused.message)}.` }));
    } else {
      resultTables(this.maps, exercise, run, worst, this.allowedFor(run.weights.shape));
    }
  }

  /**
   * Bring the marked cell (◆) into view in its table's box, which scrolls
   * sideways on a phone; with scrollPage, into the window too. A blamed row
   * has its header brought into view instead. It is done in the next frame:
   * the cell's place is read after the redraw's writes, in the layout that
   * frame needs anyway. No smooth scrolling, so there is no motion to reduce.
   */
  revealMark({ scrollPage = false } = {}) {
    requestAnimationFrame(() => {
      const cells = [...this.maps.querySelectorAll('td.bk-worst')];
      const target = cells[0] || this.maps.querySelector('th.bk-mark-row');
      if (!target) return;
      // Every place is read before any box is scrolled.
      const moves = cells.map((cell) => {
        const box = cell.closest('.bk-table-wrap');
        const left = box.getBoundingClientRect().left + box.clientLeft;
        const { left: cellLeft, right: cellRight } = cell.getBoundingClientRect();
        const shift = cellLeft < left ? cellLeft - left : Math.max(0, cellRight - (left + box.clientWidth));
        return [box, box.scrollLeft + shift];
      });
      for (const [box, x] of moves) if (box.scrollLeft !== x) box.scrollLeft = x;
      if (scrollPage) target.scrollIntoView({ block: 'center', inline: 'nearest' }); // with the rows around it in view
    });
  }

  /**
   * Whether the card's live region speaks when its text changes. It is off
   * while a reset that the learner made elsewhere rewrites the card (a
   * status with no card name, out of context), and on again as soon as the
   * learner acts on the card, before that action's text is written.
   */
  announce(on) {
    if (on) this.said.removeAttribute('aria-live');
    else if (this.said.getAttribute('aria-live') !== 'off') this.said.setAttribute('aria-live', 'off');
  }

  /** The prediction choices that fail with this card's bug on (the core runs it once). */
  caughtBy() {
    if (!this.caught) {
      if (!this.checked.has(true)) this.checked.set(true, runChecks(this.owner.lab, this.exercise));
      this.caught = caughtBy(this.checked.get(true));
    }
    return this.caught;
  }

  /** Whether the (locked) prediction names a check that the bug makes fail. */
  predictedRight(state) {
    return Boolean(state.prediction) && this.caughtBy().includes(state.prediction);
  }

  /**
   * What this round showed, then what the card scores: the outcome in the
   * record, decided in the card's first round, or as no point when the card
   * was first shown broken (BreakIt.decideSeen). After a reset a round is
   * practice, and says so rather than claim it was scored.
   */
  verdictText(state) {
    return `${this.roundText(state)}${this.leftText(state)}`;
  }

  /**
   * What is left of the card once its bug has been on: the repair. Turning
   * the bug off with the switch is not it: the repair step shows the correct
   * code against the mistake, and applying it is what finishes the card.
   * (The state passed in may be newer than the record's, hence its own flag.)
   */
  leftText(state) {
    const { record } = this.owner;
    if (!state.broken || state.repaired || record.exerciseDone(this.exercise.bug)) return '';
    return ' The card is not finished yet: read the repair below and press “Apply the repair” to finish it.';
  }

  /** The verdict without what is left: see verdictText. */
  roundText(state) {
    const { record } = this.owner;
    const { bug } = this.exercise;
    const practice = record.inPractice(bug);
    const outcome = record.outcome(bug);
    const points = outcome ? '1 point' : 'no point';
    const kept = practice ? ` This is practice: the score keeps the card’s first outcome, ${points}.` : '';
    if (!state.broken) return `${state.prediction ? 'Prediction saved. Now turn the bug on.' : 'Choose a check, then turn the bug on.'}${kept}`;
    if (!state.prediction) {
      return practice ? `The bug was turned on before a prediction was made.${kept}`
        : 'The bug was turned on before a prediction was made, so this card scores no point.';
    }
    const check = CHECKS.find((c) => c.name === state.prediction);
    const names = this.caughtBy().map((name) => `“${CHECKS.find((c) => c.name === name).title}”`).join(', ');
    const right = this.predictedRight(state);
    // With the bug off again every check passes: the verdict speaks of the bug's round.
    const withBug = state.on ? '' : ' with the bug on';
    const round = right ? `Your prediction was right: “${check.title}” fails${withBug}.`
      : PREDICTION_CHECKS.includes(check) ? `“${check.title}” still passes${withBug}. This bug is caught by ${names}.`
        : `“${check.title}” fails for every bug, so it does not count as a prediction. This bug is caught by ${names}.`;
    if (practice) return `${round}${kept}`;
    if (outcome) return `${round} Your prediction is locked: it was made before the checks were seen, so this card scores 1 point.`;
    // A right prediction without its point came with the bug already on (a link):
    // this card's checks were shown before a prediction was made here.
    if (right) return `${round} The card opened with its bug already on, before a prediction was made here, so this card scores no point.`;
    return `${round} Your prediction is locked now that the checks have been seen, and this card scores no point.`;
  }

  /** The intended rule (which key each query may see) for weights of this shape, from the core, asked once per shape. */
  allowedFor(shape) {
    const [H, T, Tk] = shape.length === 4 ? shape.slice(1) : [1, ...shape.slice(-2)];
    const key = `${H},${T},${Tk}`;
    if (this.allowedKey !== key) {
      this.allowed = intendedRule(this.owner.lab, this.exercise, { B: 1, H, Tq: T, Tk });
      this.allowedKey = key;
    }
    return this.allowed;
  }

  /** The list item of one check, empty until drawCheck. */
  checkItem(check) {
    const mark = el('span', { cls: 'bk-check-mark' });
    const reason = el('span', { cls: 'bk-check-reason' });
    const li = el('li', { cls: 'bk-check', attrs: { 'data-check': check.name } },
      mark, el('span', { cls: 'bk-check-title' }, ...subscripted(check.title)), reason);
    // Shown on a failed check that blames one entry.
    const show = el('button', { cls: 'bk-show', text: 'Mark it below', attrs: { type: 'button', 'aria-label': `Mark it below: ${check.title}` } });
    show.addEventListener('click', () => {
      this.announce(true);
      this.selected = check.name;
      this.owner.redraw(this.index);
      show.focus();
      this.revealMark({ scrollPage: true });
    });
    return { li, mark, reason, show };
  }

  drawCheck({ li, mark, reason, show }, result) {
    const state = result.skipped ? 'skip' : result.passed ? 'pass' : 'fail';
    setClass(li, `bk-check is-${state}`);
    if (li.dataset.state !== state) li.dataset.state = state;
    setText(mark, { pass: '✓ pass', fail: '✗ fail', skip: '– n/a' }[state]);
    setSubscripted(reason, result.reason);
    if (!result.passed && result.worst) {
      const pressed = String(this.selected === result.name);
      if (show.getAttribute('aria-pressed') !== pressed) show.setAttribute('aria-pressed', pressed);
      if (!show.isConnected || show.parentNode !== li) li.append(show);
    } else if (show.parentNode === li) {
      show.remove();
    }
  }
}

// ---------------------------------------------------------------------------
// The section
// ---------------------------------------------------------------------------

class BreakIt {
  /**
   * options: onChange(text), onResult({ exercise, passed }), onRun(bug, run)
   * (each core result drawn), only (bug names of the cards to show; all by
   * default), progress (the record to keep the cards in; default: the
   * page's, lessonProgress(), or a fresh one when persist is false),
   * persist (default true), compact (no heading and introduction; default
   * false).
   */
  constructor(container, lab, { onChange, onResult, onRun, only = null, persist = true, progress = null, compact = false } = {}) {
    this.lab = lab;
    this.onChange = onChange;
    this.onResult = onResult;
    this.onRun = onRun;
    this.runs = new Map(); // bug -> the core's last result drawn on its card (null if refused), last drawn last
    this.ownReset = false; // true while this section's own reset button resets its cards
    this.record = progress || (persist ? lessonProgress() : new Progress());
    this.state = decodeState(this.record.record.breakIt);
    this.progress = el('p', { cls: 'bk-progress' });
    // Cards by exercise index; null for an exercise not shown here.
    const alone = Boolean(only) && only.length === 1;
    this.cards = EXERCISES.map((exercise, i) => (!only || only.includes(exercise.bug) ? new Card(exercise, i, this, alone) : null));
    const shown = this.cards.filter(Boolean);
    const noteId = uid('bk-reset-note');
    const reset = el('button', { cls: 'bk-reset', text: shown.length > 1 ? 'Reset these cards' : 'Reset this card', attrs: { type: 'button', 'aria-describedby': noteId } });
    const resetNote = el('p', { cls: 'bk-reset-note', attrs: { id: noteId },
      text: 'Each card scores once, the first time its bug is turned on. A reset lets you practise again and keeps that score.' });
    // What the reset did, said once: each card it rewrites stays quiet, or
    // a screen reader would read one card's status after another.
    const resetSaid = el('p', { cls: 'bk-sr', attrs: { role: 'status', 'data-out': 'bk-reset-said' } });
    reset.addEventListener('click', () => {
      const touched = shown.filter((c) => this.isTouched(c.index)).length;
      this.announceCards(false);
      this.ownReset = true;
      this.record.resetExercises(shown.map((c) => c.exercise.bug));
      this.ownReset = false;
      const said = touched === 0 ? 'Nothing to reset: no card was changed since its last reset.'
        : `${touched === 1 ? 'One card' : `${touched} cards`} reset: bug off, prediction open again. Scores stay.`;
      // Emptied first, so that a second reset with the same words is said
      // again; a reset that follows within the pause replaces the first's words.
      resetSaid.textContent = '';
      clearTimeout(this.resetTimer);
      this.resetTimer = setTimeout(() => { resetSaid.textContent = said; }, SAY_AGAIN_PAUSE);
    });
    this.record.include({ exercises: shown.map((c) => c.exercise.bug) });
    // A reset or a restored record (another tab, an LMS) redraws the cards.
    // The verdicts and the progress line read the record's outcomes too, so
    // they are written again even when the cards' states did not change.
    // Unless the reset is this section's own button, the learner was not at
    // the cards: they are rewritten without being announced.
    this.record.subscribe((event) => {
      if (event.type !== 'reset' && event.type !== 'restore') return;
      if (!this.ownReset) this.announceCards(false);
      if (this.record.record.breakIt !== this.getState()) {
        this.setState(this.record.record.breakIt);
        if (this.onChange) this.onChange(this.getState());
      }
      this.decideSeen();
      this.cards.forEach((card, i) => { if (card) setSubscripted(card.verdict, card.verdictText(this.state[i])); });
      this.showProgress();
    });

    // Draw the cards before they join the page, so that their status lines
    // do not all announce themselves at once.
    this.decideSeen();
    this.cards.forEach((c, i) => {
      if (!c) return;
      c.node.open = i === 0 || shown.length === 1 || this.isTouched(i);
      c.render(this.state[i]);
    });
    container.classList.add('bk-section');
    const intro = [];
    if (!compact) {
      container.setAttribute('aria-labelledby', 'h-break-it');
      intro.push(
        el('h2', { text: 'Break it', attrs: { id: 'h-break-it', tabindex: '-1' } }),
        el('p', { text: 'Each card below is one classic attention mistake, built into the C core as a switch. '
          + 'Read the mistake, guess which automatic check will catch it, then turn the bug on and watch the checks. '
          + 'The marked cell (◆, with ▶ on its row and ▼ on its column) is the entry the check blames. '
          + 'Finish by applying the repair.' }));
    }
    // A single card has the reset too (its prediction is locked once the bug
    // has been on), without the progress line, which would only repeat it.
    const toolbar = [el('div', { cls: 'bk-toolbar' }, ...(shown.length > 1 ? [this.progress] : []), reset, resetNote, resetSaid)];
    container.replaceChildren(...intro, ...toolbar, ...shown.map((c) => c.node));
    this.showProgress();
  }

  /**
   * A card shown broken with no outcome had its bug turned on by a state
   * (a link, a saved record), not by a learner's round: its checks can be
   * seen before any prediction made here. Its outcome is decided now, as no
   * point, so that a prediction made after a reset is practice.
   */
  decideSeen() {
    this.cards.forEach((card, i) => {
      const { bug } = card?.exercise ?? {};
      if (!card || !this.state[i].broken || !this.record.decide(bug, false)) return;
      if (this.onResult) this.onResult({ exercise: bug, passed: false });
    });
  }

  /** A card drew a new result from the core. */
  ran(bug, run) {
    this.runs.delete(bug);
    this.runs.set(bug, run.refused ? null : run);
    if (!run.refused) this.onRun?.(bug, run);
  }

  isTouched(i) {
    const s = this.state[i];
    return Boolean(s.prediction || s.on || s.broken || s.repaired);
  }

  /** A learner changed card i. */
  change(i, patch) {
    this.cards[i].announce(true);
    const before = this.state[i];
    // Once the bug has been on, the prediction is final.
    if (before.broken && patch.prediction !== undefined) {
      this.redraw(i);
      return;
    }
    this.state[i] = { ...before, ...patch };
    this.redraw(i);
    this.changed();
    const s = this.state[i];
    const bug = EXERCISES[i].bug;
    // The first round that turns the bug on decides the outcome; a round
    // after a reset is practice, and decide() keeps the first outcome.
    if (s.broken && !before.broken && this.record.decide(bug, this.cards[i].predictedRight(s))) {
      this.redraw(i); // the verdict now says what the card scored
      if (this.onResult) this.onResult({ exercise: bug, passed: this.record.outcome(bug) });
    }
  }

  /** Draw card i again; the progress line is written by changed(), where every change of state goes. */
  redraw(i) {
    this.cards[i]?.render(this.state[i]);
  }

  changed() {
    const text = this.getState();
    this.record.setBreakIt(text);
    this.showProgress(); // after the record holds the state: a card counts as finished once its repair is there
    if (this.onChange) this.onChange(text);
  }

  /**
   * The cards' progress: how many are finished (broken, then repaired), as
   * the record keeps it, which a reset does not undo; then where the cards
   * stand now. Only the cards shown count.
   */
  showProgress() {
    const shown = this.cards.flatMap((card, i) => (card ? [[card.exercise.bug, this.state[i]]] : []));
    const count = (key) => shown.filter(([, s]) => s[key]).length;
    const finished = shown.filter(([bug]) => this.record.exerciseDone(bug)).length;
    // The cards shown that wait for their repair (the record decides: Progress.remaining), by title.
    const shownBugs = new Set(shown.map(([bug]) => bug));
    const waiting = this.record.remaining().repairs.filter((bug) => shownBugs.has(bug)).map(quotedTitle);
    setText(this.progress, `Progress: ${finished} of ${shown.length} cards finished (broken, then repaired; a reset keeps them). `
      + `Now: ${count('prediction')} predicted, ${count('broken')} broken, ${count('repaired')} repaired.`
      + (waiting.length ? ` Waiting for “Apply the repair”: ${waiting.join(', ')}.` : ''));
  }

  getState() {
    return encodeState(this.state);
  }

  /** Whether every card's live region speaks (see Card.announce). */
  announceCards(on) {
    this.cards.forEach((card) => card?.announce(on));
  }

  /** Take a state string (e.g. from the URL hash). Returns false, changing nothing, if it is not valid. */
  setState(text) {
    if (!isBreakItState(text)) return false;
    if (text === this.getState()) return true;
    const next = decodeState(text);
    // A decided card whose prediction the new state changes (a link, the
    // back button) is started again: the verdict speaks of the learner's own
    // round only.
    next.forEach((s, i) => {
      const bug = EXERCISES[i].bug;
      if (this.record.outcome(bug) !== null && s.prediction !== this.state[i].prediction) this.record.startPractice(bug);
    });
    const changed = next.map((s, i) => JSON.stringify(s) !== JSON.stringify(this.state[i]));
    this.state = next;
    this.record.setBreakIt(text);
    this.decideSeen();
    this.cards.forEach((card, i) => {
      if (!card || !changed[i]) return;
      if (this.isTouched(i)) card.node.open = true;
      card.render(this.state[i]);
    });
    this.showProgress();
    return true;
  }
}

/**
 * The section for the sections' interface (see the top of sections/registry.js).
 * lesson-state.js's error class is passed in so that a bad hash is reported
 * like any other, and so that this file stays independent of the page.
 *   export const section = makeSection({ HashError });
 * Each call gives a new section with its own cards. The <attention-lab>
 * element passes the BreakIt options too: only (the bug names of the cards
 * to show), persist (keep progress in localStorage, default true), compact
 * (leave out the heading and the introduction), onResult (see the top).
 */
export function makeSection({ HashError, ...options }) {
  return {
    id: 'break-it',
    prefix: 'brk',
    title: 'the “Break it” section',
    fields: [['s', {
      encode: (text) => text,
      decode(text) {
        if (!isBreakItState(text)) throw new HashError('the break-it progress has an unexpected form');
        return text;
      },
    }, () => BREAKIT_DEFAULT]],
    mount(ctx, st) {
      const container = ctx.node(this.id);
      if (!this.breakIt || !container.contains(this.breakIt.cards.find(Boolean).node)) {
        // A package may limit the cards: <main data-exercises="bug,bug"> (see dist.mjs).
        const holder = container.closest('[data-exercises]');
        const listed = holder ? holder.dataset.exercises.split(',') : null;
        this.breakIt = new BreakIt(container, ctx.lab, {
          ...options,
          only: options.only || listed,
          onRun: (bug, run) => ctx.publish(`brk.${bug}`, run),
          onChange: (text) => {
            ctx.states.brk.s = text;
            ctx.commit('brk');
          },
        });
      }
      if (st.s !== BREAKIT_DEFAULT) this.breakIt.setState(st.s);
      else st.s = this.breakIt.getState();
    },
    update(ctx, st) {
      if (!this.breakIt) return;
      if (st.s !== this.breakIt.getState()) {
        // A new state from the address (a link, Back): the learner's own step, so it is said.
        this.breakIt.announceCards(true);
        this.breakIt.setState(st.s);
      }
      // The cards keep their results; publish them again (the one drawn last, last).
      for (const [bug, run] of this.breakIt.runs) if (run) ctx.publish(`brk.${bug}`, run);
    },
  };
}
