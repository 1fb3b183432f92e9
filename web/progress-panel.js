/**
 * progress-panel.js: the learner's progress, shown on the page.
 *
 *   section.append(progressPanel(progress));   // score, counts, reset, notice
 *   watchSections(progress, sections);          // which sections were read
 *
 * The panel redraws after every change of the record (progress.js). A saved
 * record that could not be used is reported here, as plain text.
 */
import { h, uid, setText } from './lesson-ui.js';
import { remainingText } from './progress.js';

/**
 * A live panel: score (raw / max, and the pass mark), what is done, and a
 * reset. `pageNotice` (the page's #notice box, optional) also shows why a
 * saved record was not used, where the learner sees it first.
 */
export function progressPanel(progress, { pageNotice = null } = {}) {
  // The line reads "Score … · … finished. Not finished yet. Left: … k of N
  // sections visited.", as plain text. A screen reader hears only a change of score,
  // short ("Score 1 of 24"), from a live region of its own: the section that
  // took the answer says the rest. The score is not read out when the record
  // is restored or the page lists its questions and exercises (scope), nor
  // when a visit counts a section.
  const summary = h('span', { class: 'pg-summary' });
  const visits = h('span', { class: 'pg-visits' });
  const line = h('p', { class: 'pg-line' }, summary, ' ', visits);
  const said = h('p', { class: 'pg-said sr-only', role: 'status', 'aria-live': 'polite' });
  const notice = h('p', { class: 'pg-notice', role: 'alert', hidden: true });
  // In a graded course the first attempts are the grade: there is no reset.
  const reset = progress.graded
    ? h('p', { class: 'pg-graded', text: 'Your course grades first attempts, so this progress cannot be reset.' })
    : resetControl(progress);
  const panel = h('div', { class: 'pg-panel', 'data-progress': '' },
    h('h3', { class: 'pg-title', text: 'Your progress' }), line, said, notice, reset);
  let shownRaw = null; // the score last drawn
  const draw = (event = null) => {
    const { raw, max, mastery } = progress.score();
    const s = progress.summary();
    const parts = [`Score ${raw} of ${max} (${mastery} to pass)`];
    if (s.questions) parts.push(`${s.answered} of ${s.questions} questions answered`);
    if (s.exercises) parts.push(`${s.finished} of ${s.exercises} break-it exercises finished`);
    const status = progress.status();
    // Unfinished, the line says what is left (a card waiting for its repair is easy to miss).
    const text = `${parts.join(' · ')}. ${status === 'incomplete' ? `Not finished yet. ${remainingText(progress)}`.trim() : `Finished: ${status}.`}`;
    setText(summary, text);
    const quiet = !event || event.type === 'restore' || event.type === 'scope';
    if (!quiet && raw !== shownRaw) said.textContent = `Score ${raw} of ${max}`;
    shownRaw = raw;
    // Out of the sections this page watches (a package may show only a few).
    visits.textContent = s.sections
      ? `${s.visited} of ${s.sections} ${s.sections === 1 ? 'section' : 'sections'} visited.`
      : `${s.visited} ${s.visited === 1 ? 'section' : 'sections'} visited.`;
    line.dataset.status = status;
    notice.textContent = progress.notice || '';
    notice.hidden = !progress.notice;
    const pageText = pageNotice?.querySelector('[data-notice-text]');
    if (pageText && progress.notice && pageText.textContent !== progress.notice) {
      pageText.textContent = progress.notice;
      pageNotice.hidden = false;
    }
  };
  progress.subscribe((event) => { if (event.type !== 'view') draw(event); });
  draw();
  return panel;
}

/**
 * "Reset all progress", which asks before it erases: a reset cannot be
 * undone, and the button is one Tab away from the break-it cards' own
 * "Reset these cards", which keeps the score. The question offers "Keep my
 * progress" first (it takes the focus, and Escape answers it) and "Yes,
 * erase my progress"; either way the focus returns to the button.
 */
function resetControl(progress) {
  const button = h('button', { type: 'button', class: 'action pg-reset', text: 'Reset all progress', 'aria-expanded': 'false' });
  const keep = h('button', { type: 'button', class: 'pg-keep', text: 'Keep my progress' });
  const erase = h('button', { type: 'button', class: 'action pg-erase', text: 'Yes, erase my progress' });
  // The question's text describes the group: a screen reader says what would
  // be erased as the focus enters it on "Keep my progress".
  const textId = uid('pg-confirm');
  const ask = h('div', { class: 'pg-confirm', role: 'group', 'aria-label': 'Reset all progress?', 'aria-describedby': textId, hidden: true },
    h('p', { class: 'pg-confirm-text', id: textId, text: 'Erase every quiz answer, every break-it outcome and the list of sections visited? This cannot be undone.' }),
    keep, erase);
  const close = () => {
    ask.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    button.focus();
  };
  button.addEventListener('click', () => {
    ask.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    keep.focus();
  });
  keep.addEventListener('click', close);
  erase.addEventListener('click', () => {
    progress.reset();
    close();
  });
  ask.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      close();
    }
  });
  return h('div', { class: 'pg-reset-row' }, button, ask);
}

const watched = new WeakSet();

/**
 * How long (ms) a section must stay in the reading band before it counts as
 * visited: 1.5 s, long enough to read a sentence or two, while a fling of the
 * mouse wheel, a scrollbar drag or End carries each section through the band
 * in well under that. Within the band the dwell only needs the page shown:
 * time in a hidden tab does not count.
 */
export const DWELL_MS = 1500;

/**
 * The reading band: 30–40 % down the window (IntersectionObserver's
 * rootMargin). The section in it is the one being read (progress.view,
 * which an LMS keeps as the lesson location).
 */
const BAND = '-30% 0px -60% 0px';

/**
 * Watch the page's sections (once per record) and tell `progress`:
 *   view(id)   as soon as a section enters the reading band;
 *   visit(id)  once it has stayed in the band for DWELL_MS, or at once when
 *              the learner focuses or edits something inside it (focusin,
 *              input): a keyboard user, or one who prefers reduced motion
 *              and jumps between fields, is counted without scrolling.
 * A section scrolled past (in and out of the band within DWELL_MS) is not
 * visited. The sections watched are the page's total (progress.include).
 */
export function watchSections(progress, sections, { dwellMs = DWELL_MS } = {}) {
  if (watched.has(progress)) return;
  watched.add(progress);
  const list = [...sections].filter((section) => section.id);
  progress.include({ sections: list.map((section) => section.id) });
  for (const section of list) {
    const count = () => progress.visit(section.id);
    section.addEventListener('focusin', count);
    section.addEventListener('input', count);
  }
  if (typeof IntersectionObserver === 'undefined') return;
  const doc = list[0]?.ownerDocument;
  const timers = new Map(); // section id → the dwell timer of a section in the band
  const hidden = () => doc?.visibilityState === 'hidden';
  const start = (id) => {
    clearTimeout(timers.get(id));
    timers.set(id, setTimeout(() => {
      timers.delete(id);
      progress.visit(id);
    }, dwellMs));
  };
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const { id } = entry.target;
      if (entry.isIntersecting) {
        progress.view(id);
        if (!hidden()) start(id);
        else timers.set(id, null); // in the band, its dwell starts when the page is shown
      } else {
        clearTimeout(timers.get(id));
        timers.delete(id);
      }
    }
  }, { rootMargin: BAND });
  for (const section of list) observer.observe(section);
  // A hidden tab stops the dwell; shown again, the sections in the band start it afresh.
  doc?.addEventListener('visibilitychange', () => {
    for (const id of [...timers.keys()]) {
      clearTimeout(timers.get(id));
      if (hidden()) timers.set(id, null);
      else start(id);
    }
  });
}
