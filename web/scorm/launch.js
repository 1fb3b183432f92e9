/**
 * scorm/launch.js: the lesson as a SCORM 1.2 SCO. The package's launch page
 * runs this module first, then the lesson (lesson.js); see dist.mjs.
 *
 * The LMS's API object is found by @gamestdio/scorm, a port of the pipwerks
 * SCORM API wrapper: it looks in this window, then up the parent chain and
 * in the opener (a bounded search). With no LMS (the package opened as plain
 * files) nothing here runs past that search, and the lesson keeps its
 * progress in localStorage as usual. A page in a frame or opened by another
 * page was most likely launched by an LMS: finding no API there, it says so
 * at the top of the page, since nothing the learner does reaches the course.
 *
 * With an LMS:
 *   start     LMSInitialize; cmi.suspend_data, when there is one, becomes the
 *             progress record (a text that is not a valid record is ignored
 *             with a notice, and the lesson starts fresh); once the lesson
 *             has drawn itself (and so knows what it scores), a valid
 *             cmi.core.lesson_location (a section id) is scrolled to and
 *             the first report is sent.
 *             localStorage is not used: on a shared computer it may hold
 *             another learner's work.
 *   progress  after each change: cmi.core.lesson_status (incomplete until
 *             every question and exercise is done, then passed or failed
 *             against the mastery score, also the manifest's
 *             adlcp:masteryscore), cmi.suspend_data, then LMSCommit. The
 *             section in view goes to cmi.core.lesson_location.
 *             cmi.core.score.raw / min / max (points, see progress.js) are
 *             sent only once the status is final: an LMS that applies the
 *             mastery score itself (SCORM 1.2 lets it) sets lesson_status
 *             from raw at LMSFinish, and would turn a partial score into
 *             "failed" for a learner who only paused.
 *             A package with nothing to score (reading sections only) never
 *             sends a score, which an LMS could file as a grade of 0: it is
 *             incomplete until the learner has visited every section it
 *             holds (progress-panel.js watchSections), then completed.
 *   leaving   cmi.core.session_time, cmi.core.exit ("suspend" while
 *             incomplete, so that the next launch resumes), LMSCommit,
 *             LMSFinish.
 */
import { scorm } from '@gamestdio/scorm';
import { lessonProgress, MAX_SERIALISED } from '../progress.js';
import { watchSections } from '../progress-panel.js';

const SECTION_ID = /^[a-z][a-z0-9-]{0,31}$/;

/** The longest CMITimespan, 9999:59:59.99, in centiseconds. */
const MAX_CENTISECONDS = 9999 * 360000 + 359999;

/**
 * SCORM 1.2 CMITimespan, HHHH:MM:SS.SS, of `ms` milliseconds. The time is
 * rounded to whole centiseconds first and then split, so 59.999 s is
 * 0000:01:00.00 (never 0000:00:60.00); past 9999 hours it stays at the
 * longest timespan.
 */
export function timespan(ms) {
  const cs = Math.min(MAX_CENTISECONDS, Math.round(Math.max(0, ms || 0) / 10));
  const hours = Math.floor(cs / 360000);
  const minutes = Math.floor(cs / 6000) % 60;
  const seconds = Math.floor(cs / 100) % 60;
  const two = (n) => String(n).padStart(2, '0');
  return `${String(hours).padStart(4, '0')}:${two(minutes)}:${two(seconds)}.${two(cs % 100)}`;
}

function connect() {
  scorm.configure({ version: '1.2' });
  // The wrapper logs each step to the console unless told not to; configure() cannot say so.
  scorm.isDebugActive = false;
  scorm.handleExitMode = false; // cmi.core.exit is set below, from the lesson's status
  scorm.handleCompletionStatus = false; // so is cmi.core.lesson_status
  let found = false;
  try {
    found = scorm.initialize();
  } catch {
    // A parent on another origin cannot be searched: no LMS here.
  }
  // (No window: Node, a test importing timespan().)
  if (!found && typeof window !== 'undefined' && (window.parent !== window || window.opener)) noLmsNotice();
  return found;
}

/** Framed or opened by another page, yet no LMS: say at the top of the page that nothing is sent. */
function noLmsNotice() {
  const notice = document.createElement('p');
  notice.className = 'notice no-lms';
  notice.setAttribute('role', 'status');
  notice.textContent = 'Your progress is not being sent to your course: no LMS connection was found.';
  const status = document.getElementById('boot-status');
  if (status) status.after(notice);
  else document.body.prepend(notice);
}

const connected = connect();
const progress = lessonProgress({ persist: !connected, graded: connected });
const started = Date.now();

/** Whether the package holds anything scored (questions or exercises). */
function scored() {
  const { questions, exercises } = progress.summary();
  return questions + exercises > 0;
}

function report() {
  const status = progress.status();
  // No score while incomplete (see the top of this file), nor ever with nothing to score;
  // a relaunch after the end sends it again.
  if (status !== 'incomplete' && scored()) {
    const { raw, max } = progress.score();
    scorm.set('cmi.core.score.min', '0');
    scorm.set('cmi.core.score.max', String(max));
    scorm.set('cmi.core.score.raw', String(raw));
  }
  scorm.set('cmi.core.lesson_status', status);
  const text = progress.serialise();
  if (text.length <= MAX_SERIALISED) scorm.set('cmi.suspend_data', text);
  scorm.commit();
}

let finished = false;
let drawn = false; // until the lesson has drawn itself, the scope (and so the score's max) is not known
function finish() {
  if (finished) return;
  finished = true;
  scorm.set('cmi.core.session_time', timespan(Date.now() - started));
  // Leaving before the lesson was drawn: score, status and suspend data stay as the LMS has them.
  const done = drawn && progress.status() !== 'incomplete';
  scorm.set('cmi.core.exit', done ? '' : 'suspend');
  if (drawn) report();
  else scorm.commit();
  scorm.terminate();
}

if (connected) {
  const saved = scorm.get('cmi.suspend_data');
  if (saved) progress.restore(saved);
  const place = scorm.get('cmi.core.lesson_location');
  // Changes that come together (a redraw, a reset) are sent as one report and one commit.
  let due = false;
  progress.subscribe((event) => {
    if (finished || !drawn) return;
    if (event.type === 'view') {
      scorm.set('cmi.core.lesson_location', event.section);
      return;
    }
    if (due) return;
    due = true;
    queueMicrotask(() => {
      due = false;
      if (!finished) report();
    });
  });
  const ready = new MutationObserver(() => {
    if (document.documentElement.dataset.ready !== 'true') return;
    ready.disconnect();
    // The sections read count towards completion (the quiz, when the package
    // has it, is already watching them: this call then does nothing).
    watchSections(progress, document.querySelectorAll('main > section[id]'));
    drawn = true;
    // Back to where the learner was, then the first report.
    if (SECTION_ID.test(place || '')) document.getElementById(place)?.scrollIntoView({ block: 'start' });
    report();
  });
  ready.observe(document.documentElement, { attributes: true, attributeFilter: ['data-ready'] });
  window.addEventListener('pagehide', finish);
  window.addEventListener('beforeunload', finish);
}

/** For tests and the page: whether an LMS answered, and the record it fills. */
export const lms = { connected, progress, finish };
