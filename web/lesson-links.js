// Linked highlighting: pointing at (or keyboard-focusing) one number of a
// section lights up everything it came from and everything it feeds.
//
// Elements take part by naming their query row and/or their key:
//   data-link-q="i"  the query row i (a row of Q, of the scores, of the weights, of the output)
//   data-link-k="j"  the key j (a row of K, a row of V, a column of the scores and weights)
//   data-link-pos="p" position p of self-attention, which is query p and key p at once
//                    (a row of the one sequence that gives queries, keys and values)
// A weight (q = i, k = j) therefore links its query row, its key, its value,
// its score and its output row. Two elements are linked when they share at
// least one of the two names and agree on every name they share; a position
// is linked to whatever names it as its query or as its key.
// The links stay inside the nearest element marked data-link-scope (else the
// section). No number is computed here: only classes are set, and the links
// of a focused cell are said in words (see describeLinks below).

const NAMES = ['linkQ', 'linkK'];
const SELECTOR = '[data-link-q], [data-link-k], [data-link-pos]';

function linked(source, other) {
  const pos = source.dataset.linkPos ?? other.dataset.linkPos;
  if (pos !== undefined) {
    const rest = 'linkPos' in source.dataset ? other : source;
    return rest.dataset.linkQ === pos || rest.dataset.linkK === pos || rest.dataset.linkPos === pos;
  }
  let shared = 0;
  for (const name of NAMES) {
    if (!(name in source.dataset) || !(name in other.dataset)) continue;
    if (source.dataset[name] !== other.dataset[name]) return false;
    shared += 1;
  }
  return shared > 0;
}

/** `source` and the elements linked to it, in page order. */
function linkedTo(scope, source) {
  // A part of the section with its own queries and keys (one mask and its map) marks itself data-link-scope.
  const within = source.closest('[data-link-scope]') || scope;
  return [...within.querySelectorAll(SELECTOR)].filter((node) => node === source || linked(source, node));
}

/**
 * Listen in `scope` (a section): hover and focus highlight the linked
 * elements of the same scope. Safe to call more than once.
 * @param {Element} scope
 */
export function linkHighlights(scope) {
  if (!scope || scope.linkHighlights) return;
  scope.linkHighlights = true;
  let lit = [];
  let source = null;
  const clear = () => {
    for (const node of lit) node.classList.remove('linked', 'link-source');
    lit = [];
    source = null;
  };
  const light = (event) => lightFrom(event.target.closest?.(SELECTOR));
  const lightFrom = (from) => {
    if (!from || !scope.contains(from)) return;
    clear();
    source = from;
    lit = linkedTo(scope, source);
    for (const node of lit) node.classList.add(node === source ? 'link-source' : 'linked');
  };
  const leave = (event) => {
    // A finger lifted is not a pointer leaving: a tap keeps what it lit
    // until the next tap elsewhere (below). And focus leaving a cell clears
    // only what that focus lit, not what a tap lit since.
    if (event.pointerType === 'touch') return;
    if (event.type === 'focusout' && event.target.closest?.(SELECTOR) !== source) return;
    const to = event.relatedTarget;
    if (!to || !scope.contains(to) || !to.closest(SELECTOR)) clear();
  };
  scope.addEventListener('pointerover', light);
  scope.addEventListener('focusin', light);
  scope.addEventListener('pointerout', leave);
  scope.addEventListener('focusout', leave);
  describeLinks(scope);
  // A click may redraw what is lit (a mask cell switched: its grid is drawn
  // again, or its classes are set anew): light it again from the same cell,
  // or clear it when that cell is gone.
  scope.addEventListener('click', () => {
    if (!source) return;
    const from = source;
    clear();
    if (from.isConnected) lightFrom(from);
  });
  document.addEventListener('pointerdown', (event) => {
    if (event.pointerType !== 'touch' || !lit.length) return;
    const on = event.target.closest?.(SELECTOR);
    if (!on || !scope.contains(on)) clear();
  }, { passive: true });
}

// ---------------------------------------------------------------------------
// The links in words: what a screen reader hears on a focused cell
// ---------------------------------------------------------------------------

/** At most this many numbers of one row, and this many other heads, are said. */
const SAID_MAX = 8;

/**
 * A cell of a map that the keyboard can focus (a weight, a mask switch)
 * is described by its links, after its own number: "query 2, key 3; from
 * query 2: [0, 1, 0, 1], key 3: [1, 1, 0, 0], value 3: [5, 5], score: 0.5000;
 * feeds output 2: [4.2452, 5.7548], row sum: 1.0000". The words are built
 * from the linked elements as the page shows them (their headers and their
 * text, or an edit grid's typed values), when the cell gets the focus, into
 * one hidden node of the scope that the cell's aria-describedby names. While
 * the cell keeps the focus and its own text or state changes (a mask switch
 * pressed: the weights are drawn again), the words are built again once the
 * edit's frame is painted. Nothing is written during an edit, and nothing at
 * all while no such cell has the focus. A hidden node is read only through
 * aria-describedby: not by a screen reader reading the page in order.
 */
function describeLinks(scope) {
  const said = document.createElement('p');
  said.hidden = true;
  said.id = `links-said-${++saidCount}`;
  let cell = null;
  let again = 0;
  const watch = new MutationObserver(() => {
    if (again) return;
    // The edit's frame first: rebuilt after it is painted.
    again = requestAnimationFrame(() => setTimeout(() => { again = 0; if (cell?.isConnected) say(); }));
  });
  const say = () => {
    // Beside the cell's grid (outside it: a grid holds rows only), drawn anew with its map.
    const grid = cell.closest('[role="grid"], [role="group"]') || cell.parentElement;
    if (grid.nextElementSibling !== said) grid.after(said);
    setWords(said, linksInWords(cell, linkedTo(scope, cell)));
  };
  scope.addEventListener('focusin', (event) => {
    const from = event.target;
    // Only a cell that is itself linked by a query and a key: a weight or a mask switch.
    if (!from.matches?.(SELECTOR) || !('linkQ' in from.dataset) || !('linkK' in from.dataset)) return;
    watch.disconnect(); // a cell removed with the focus had no focusout
    cell = from;
    say();
    const ids = (cell.getAttribute('aria-describedby') || '').split(/\s+/).filter(Boolean);
    if (!ids.includes(said.id)) cell.setAttribute('aria-describedby', [...ids, said.id].join(' '));
    watch.observe(cell, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['aria-label', 'aria-pressed'] });
  });
  scope.addEventListener('focusout', (event) => {
    if (event.target !== cell) return;
    watch.disconnect();
    const ids = (cell.getAttribute('aria-describedby') || '').split(/\s+/).filter((id) => id && id !== said.id);
    if (ids.length) cell.setAttribute('aria-describedby', ids.join(' '));
    else cell.removeAttribute('aria-describedby');
    cell = null;
  });
}
let saidCount = 0;

function setWords(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** The text of `node` as read: without its parts hidden from screen readers (a swatch's digit). */
function readText(node) {
  let text = '';
  for (const child of node.childNodes) {
    if (child.nodeType === 3) text += child.data;
    else if (child.nodeType === 1 && child.getAttribute('aria-hidden') !== 'true') text += readText(child);
  }
  return text.replace(/\s+/g, ' ').trim();
}

/** A caption's first word as a name: "Target states t" → "target"; "Q" stays. */
function firstWord(caption) {
  const word = readText(caption).split(' ')[0] || '';
  return word === word.toUpperCase() ? word : word.toLowerCase();
}

/** A row of numbers as said: "[0.5, 1.2]", the first SAID_MAX of a longer one and how many more. */
function row(texts) {
  const more = texts.length - SAID_MAX;
  return more > 0 ? `[${texts.slice(0, SAID_MAX).join(', ')}] and ${more} more` : `[${texts.join(', ')}]`;
}

/** A mask cell's state as its grid says it: "1, allowed", or "allowed" for a ✓. */
function maskWords(node) {
  const text = node.textContent.trim();
  const state = node.classList.contains('blocked') ? 'blocked' : 'allowed';
  return /^[01]$/.test(text) ? `${text}, ${state}` : state;
}

/**
 * The links of the focused `cell` in words, from `nodes` (the cell and the
 * elements linked to it). Each kind of linked element is said by what it is:
 *   a row of an edit grid (Q, K, V, states): its row header and typed values;
 *   a position of an edit grid (a token id): its column header and value;
 *   a cell of a value table linked by query and key: the score;
 *   a row of a value table linked by query: the output row;
 *   a map's extra column (the row sum); a weight of another map (another head);
 *   a weight, when the cell is a mask switch; a mask cell, when it is a weight.
 * A row header that is a bare symbol ("t2") gets its table's first word
 * ("target t2"). Headers of the cell's own map open the words; the flow
 * view (which repeats the followed row) and the padding switches (which
 * repeat a key's header) are left out.
 */
function linksInWords(cell, nodes) {
  const from = [], feeds = [], totals = [], heads = [];
  const ownMap = cell.closest('[role="grid"], .maskgrid');
  const isWeight = cell.classList.contains('hm-cell');
  const lead = []; // [row header, column header] of the cell's own map
  const rows = new Map(); // a value table's row -> its linked cells
  const named = (header, table) => (/\s/.test(header) ? header : `${firstWord(table.caption)} ${header}`);
  for (const node of nodes) {
    if (node === cell || node.closest('.flow')) continue;
    const map = node.closest('[role="grid"], .maskgrid, table');
    if (node.classList.contains('hm-head')) {
      // The query's row header, then the key's column header.
      if (map === ownMap) lead[node.classList.contains('hm-rowhead') ? 0 : 1] = readText(node).replace(/ ⚠$/, '');
    } else if (node.localName === 'tr' && map?.classList.contains('grid-edit')) {
      from.push(`${named(readText(node.cells[0]), map)}: ${row([...node.querySelectorAll('input')].map((input) => input.value))}`);
    } else if (node.localName === 'td' && map?.classList.contains('grid-edit')) {
      const input = node.querySelector('input');
      const header = map.tHead?.rows[0]?.cells[node.cellIndex];
      if (input && header) from.push(`${named(readText(header), map)}: ${input.value}`);
    } else if (node.localName === 'td' && map?.classList.contains('values')) {
      if (!rows.has(node.parentElement)) rows.set(node.parentElement, []);
      rows.get(node.parentElement).push(node);
    } else if (node.classList.contains('hm-extra')) {
      const header = map.querySelector('.hm-head.hm-extra');
      totals.push(`${header ? readText(header) : 'total'}: ${readText(node)}`);
    } else if (node.classList.contains('hm-cell')) {
      // Another head's weight for the same pair; or, from a mask switch, its weight.
      const figure = node.closest('figure')?.querySelector('figcaption');
      if (isWeight) heads.push(`${figure ? readText(figure) : map.getAttribute('aria-label')}: ${readText(node)}`);
      else feeds.push(`weight: ${readText(node)}`);
    } else if (node.classList.contains('mask-cell') && node.closest('.maskgrid') && isWeight) {
      from.push(`mask: ${maskWords(node)}`);
    }
  }
  for (const [tr, tds] of rows) {
    const table = tr.closest('table');
    if ('linkK' in tds[0].dataset) from.push(`score: ${tds.map(readText).join(', ')}`);
    else feeds.push(`${named(readText(tr.cells[0]), table)}: ${row(tds.map(readText))}`);
  }
  const lowered = heads.map((text) => text.replace(/^Head /, 'head '));
  const parts = [];
  // A mask switch's name already gives its query and key.
  const own = lead.filter(Boolean);
  if (own.length && !(cell.getAttribute('aria-label') || '').startsWith(own[0])) parts.push(own.join(', '));
  if (from.length) parts.push(`from ${from.join(', ')}`);
  feeds.push(...totals); // the output first, the row sum after it
  if (feeds.length) parts.push(`feeds ${feeds.join(', ')}`);
  if (lowered.length) {
    const more = lowered.length - SAID_MAX;
    parts.push(`same pair in ${lowered.slice(0, SAID_MAX).join(', ')}${more > 0 ? ` and ${more} more heads` : ''}`);
  }
  return parts.join('; ');
}

/**
 * Arrow keys move the focus between the focusable cells of a map (one tab
 * stop per map: the focused cell keeps tabindex 0, the others -1). Home and
 * End go to the first and last cell of the row, Ctrl+Home and Ctrl+End to
 * those of the map, PageUp and PageDown to the top and bottom of the column.
 * Space on a cell that is not a button (a weight) does not scroll the page.
 * @param {Element} grid the map's element, its cells marked [data-row][data-col]
 */
export function rovingCells(grid) {
  if (grid.rovingCells) return;
  grid.rovingCells = true;
  const CELL = '[data-row][data-col][tabindex]';
  grid.addEventListener('keydown', (event) => {
    const cell = event.target.closest('[data-row][data-col]');
    if (!cell) return;
    if (event.key === ' ' && cell.localName !== 'button') {
      event.preventDefault();
      return;
    }
    const { row, col } = cell.dataset;
    const step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[event.key];
    let next = null;
    if (step) next = grid.querySelector(`[data-row="${Number(row) + step[0]}"][data-col="${Number(col) + step[1]}"][tabindex]`);
    else if (event.key === 'Home' || event.key === 'End') {
      const cells = grid.querySelectorAll(event.ctrlKey ? CELL : `[data-row="${row}"]${CELL}`);
      next = event.key === 'Home' ? cells[0] : cells[cells.length - 1];
    } else if (event.key === 'PageUp' || event.key === 'PageDown') {
      const cells = grid.querySelectorAll(`[data-col="${col}"]${CELL}`);
      next = event.key === 'PageUp' ? cells[0] : cells[cells.length - 1];
    }
    if (!next) return;
    event.preventDefault();
    next.focus();
  });
  // Whichever way a cell gets the focus (a key above, a click, a redraw
  // giving it back), it becomes the map's one tab stop.
  grid.addEventListener('focusin', (event) => {
    const cell = event.target.closest(CELL);
    if (!cell || cell.tabIndex === 0) return;
    for (const other of grid.querySelectorAll(`${CELL}[tabindex="0"]`)) other.tabIndex = -1;
    cell.tabIndex = 0;
  });
}
