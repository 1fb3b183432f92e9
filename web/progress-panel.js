/**
 * progress-panel.js: the learner's progress, shown on the page.
 *
 *   section.append(progressPanel(progress));   // score, counts, reset, notice
 *   watchSections(progress, sections);          // which sections were seen
 *
 * The panel redraws after every change of the record (progress.js). A saved
 * record that could not be used is reported here, as plain text.
 */
import { h } from './lesson-ui.js';

/**
 * A live panel: score (raw / max, and the pass mark), what is done, and a
 * reset. `pageNotice` (the page's #notice box, optional) also shows why a
 * saved record was not used, where the learner sees it first.
 */
export function progressPanel(progress, { pageNotice = null } = {}) {
  const line = h('p', { class: 'pg-line', role: 'status', 'aria-live': 'polite' });
  const notice = h('p', { class: 'pg-notice', role: 'alert', hidden: true });
  // In a graded course the first attempts are the grade: there is no reset.
  const reset = progress.graded
    ? h('p', { class: 'pg-graded', text: 'Your course grades first attempts, so this progress cannot be reset.' })
    : h('button', { type: 'button', class: 'action pg-reset', text: 'Reset all progress' });
  if (!progress.graded) reset.addEventListener('click', () => progress.reset());
  const panel = h('div', { class: 'pg-panel', 'data-progress': '' },
    h('h3', { class: 'pg-title', text: 'Your progress' }), line, notice, reset);
  const draw = () => {
    const { raw, max, mastery } = progress.score();
    const s = progress.summary();
    const parts = [`Score ${raw} of ${max} (${mastery} to pass)`];
    if (s.questions) parts.push(`${s.answered} of ${s.questions} questions answered`);
    if (s.exercises) parts.push(`${s.finished} of ${s.exercises} break-it exercises finished`);
    parts.push(`${s.visited} ${s.visited === 1 ? 'section' : 'sections'} visited`);
    const status = progress.status();
    line.textContent = `${parts.join(' · ')}. ${status === 'incomplete' ? 'Not finished yet.' : `Finished: ${status}.`}`;
    line.dataset.status = status;
    notice.textContent = progress.notice || '';
    notice.hidden = !progress.notice;
    const pageText = pageNotice?.querySelector('[data-notice-text]');
    if (pageText && progress.notice && pageText.textContent !== progress.notice) {
      pageText.textContent = progress.notice;
      pageNotice.hidden = false;
    }
  };
  progress.subscribe((event) => { if (event.type !== 'view') draw(); });
  draw();
  return panel;
}

const watched = new WeakSet();

/** Mark each section visited once a quarter of it (or of the window) has been on screen; once per record. */
export function watchSections(progress, sections) {
  if (watched.has(progress) || typeof IntersectionObserver === 'undefined') return;
  watched.add(progress);
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) if (entry.isIntersecting) progress.view(entry.target.id);
  }, { rootMargin: '-30% 0px -60% 0px' });
  for (const section of sections) if (section.id) observer.observe(section);
}
