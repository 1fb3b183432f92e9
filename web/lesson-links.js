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
// section). No number is computed here: only classes are set.

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
    // A part of the section with its own queries and keys (one mask and its map) marks itself data-link-scope.
    const within = source.closest('[data-link-scope]') || scope;
    for (const node of within.querySelectorAll(SELECTOR)) {
      if (node === source || linked(source, node)) {
        node.classList.add(node === source ? 'link-source' : 'linked');
        lit.push(node);
      }
    }
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
