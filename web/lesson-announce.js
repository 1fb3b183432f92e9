// What a section says to a screen reader after a learner's edit: one short
// sentence with the edit's result ("Weights [0.330, 0.670]; output
// [3.300, 13.400]."), in a visually hidden live region, written once the
// edits pause.
//
// Only a learner's edit speaks. A section passes EDITED (or its own detail
// with `edited` set) to ctx.commit; ctx.commit hands that detail to the
// section's own update only. The other redraws pass none and say nothing:
// the page loading, a state restored from the link (both mount the sections
// afresh), and a section redrawn because it reads another section's state.
//
// The sentence is written after the edit's frame, never in it: the frame
// that shows an edit is kept as short as the page can make it, and a typed
// number would otherwise be read out at every keystroke.

import { h, afterPause, TYPING_PAUSE } from './lesson-ui.js';

/** The ctx.commit detail of a learner's edit. */
export const EDITED = Object.freeze({ edited: true });

/** Whether an update's detail comes from a learner's edit. */
export const isEdit = (detail) => Boolean(detail && detail.edited);

/**
 * How long the edits must pause before the result is said (ms): longer than
 * the gap between two keystrokes of a number being typed, so that "0.25" is
 * read once, not as 0, 0.2 and 0.25.
 */
export const ANNOUNCE_DELAY = TYPING_PAUSE;

/**
 * A section's announcer. `scope` is the section's element; `name` marks the
 * region for tests (data-said). Put `node` in the section (it is empty, and
 * live, from the start: a screen reader only reads changes to a region it
 * already knew), then after an edit:
 *   say(text)  the result, said once the edits pause (the last text wins);
 *   refused()  the core refused the edit, whose message speaks for itself:
 *              nothing is said, and the last result's sentence is taken
 *              away, so that no stale number waits in the region (the
 *              section's status line calls it, see statusLine in lesson-ui.js).
 * A result still waiting when the learner's field turns invalid (a text that
 * is not a number, whose message is read out) is not said either, and the
 * last sentence is taken away then too.
 */
export function announcer(scope, name) {
  const node = h('p', { class: 'sr-only', role: 'status', 'aria-live': 'polite', 'data-said': name });
  let next = null;
  const write = afterPause(ANNOUNCE_DELAY, () => {
    const text = next;
    next = null;
    if (!node.isConnected) return;
    if (text === '') {
      if (node.firstChild) node.textContent = '';
      return;
    }
    // The learner's field turned invalid meanwhile: its message is read out
    // instead, and the last sentence goes, for it may name a value the field
    // has put back since (see bindNumberInput in lesson-ui.js).
    const field = node.getRootNode().activeElement;
    if (field && scope?.contains(field) && field.getAttribute('aria-invalid') === 'true') {
      if (node.firstChild) node.textContent = '';
      return;
    }
    // Written even when equal to the last sentence: the same result after a
    // refused edit is news again, and a new text node is read as such.
    node.textContent = text;
  });
  const later = (text) => {
    next = text;
    write();
  };
  return {
    node,
    say: (text) => later(text),
    refused: () => later(''),
  };
}

/**
 * The grid cell a learner is editing in `root` (a Document or ShadowRoot):
 * { grid, row, col } from the focused input's data-grid, data-row and
 * data-col (0-based, as numberGrid writes them), or null.
 */
export function editedCell(root) {
  const input = root.activeElement;
  const grid = input?.closest?.('[data-grid]');
  if (!grid || input.dataset.row === undefined) return null;
  return { grid: grid.dataset.grid, row: Number(input.dataset.row), col: Number(input.dataset.col) };
}
