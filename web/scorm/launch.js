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
 *             Each graded item, once its first attempt is decided, is
 *             written once as a cmi.interactions entry (see decidedItems()),
 *             with its correct responses (correctResponses()) and its
 *             section's objective. No latency is sent: the record does not
 *             keep when an item was first shown, and a long page shows a
 *             question, or the card that holds an exercise, long before the
 *             learner turns to it, so the time to the first attempt is not
 *             known.
 *             Each section with graded items in the package (the quiz, the
 *             break-it cards) is a cmi.objectives entry, its id the
 *             section's: status and score over that section's items by the
 *             rules of the whole lesson, and, as for the lesson, a score
 *             only once the status is passed or failed (see
 *             sectionObjectives()). A section keeps its index across
 *             launches; a section new to the LMS goes past every index the
 *             LMS counts or the lesson has read or used, so that two
 *             sections never share one, even when cmi.objectives._count
 *             cannot be read. An LMS that refuses an objective's id keeps
 *             no objectives: none is written again in that session.
 *   leaving   cmi.core.session_time, cmi.core.exit ("suspend" while
 *             incomplete, so that the next launch resumes), LMSCommit,
 *             LMSFinish.
 *
 * An LMS that is found but refuses LMSInitialize (most often a session that
 * has ended: the lesson's frame was reloaded, and unloading called
 * LMSFinish) is not "no LMS": the page says that nothing more can be sent,
 * with the LMS's own error, and shows the record as last sent to the LMS
 * from this browser tab (a copy kept in sessionStorage for that case, see
 * COPY_KEY), or says that nothing is recorded when there is none.
 */
import { scorm } from '@gamestdio/scorm';
import { loadAttention } from '../attention.js';
import { runChecks } from '../checks.js';
import { EXERCISES, caughtBy, predictionLetter } from '../exercises.js';
import { lessonProgress, MAX_SERIALISED, ALL_QUESTIONS } from '../progress.js';
import { watchSections } from '../progress-panel.js';
import { questionById, choiceLetter, rightAnswer } from '../quiz-questions.js';
import { quiz } from '../sections/quiz.js';
import { breakIt } from '../sections/break-it.js';

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

/**
 * Where the record last sent to the LMS is copied, per package (its launch
 * page's path): sessionStorage lives as long as the browser tab, so a
 * reloaded frame can show it when the LMS will not start again, and it is
 * gone once the tab is closed (on a shared computer, localStorage could
 * show one learner's work to the next).
 */
const COPY_KEY = typeof location === 'undefined' ? '' : `attention-lab.lms-copy:${location.pathname}`;

function readCopy() {
  try {
    return globalThis.sessionStorage?.getItem(COPY_KEY) ?? null;
  } catch {
    return null; // refused (sandboxes, private modes)
  }
}

function writeCopy(text) {
  try {
    globalThis.sessionStorage?.setItem(COPY_KEY, text);
  } catch {
    // Full or refused: a reloaded frame then says that nothing is shown.
  }
}

/**
 * The SCORM 1.2 API object, looked for as the wrapper does (this window and
 * its parents, then the top window's opener and its parents), or null. A
 * window of another origin cannot be read: the search stops there.
 * The wrapper's own search cannot serve here: it keeps the API it found to
 * itself, its getLastError() answers 0 both with no API and for an LMS that
 * gives no error code, and it throws at a window of another origin.
 */
function findApi() {
  const search = (start) => {
    try {
      for (let win = start, n = 0; win && n <= 500; n++, win = win.parent) {
        if (win.API) return win.API;
        if (win.parent === win) break;
      }
    } catch {
      // Another origin.
    }
    return null;
  };
  let opener = null;
  try {
    opener = window.top.opener;
  } catch {
    opener = null;
  }
  return search(window) || (opener ? search(opener) : null);
}

/**
 * Why an LMS that was found refused to start, in its own words:
 * { code, text, diagnostic } from LMSGetLastError, LMSGetErrorString and
 * LMSGetDiagnostic, or null when there is no LMS to ask.
 */
function refusal() {
  const api = findApi();
  if (!api) return null;
  const ask = (name, ...args) => {
    try {
      return String(api[name](...args) ?? '').trim().slice(0, 200);
    } catch {
      return '';
    }
  };
  const code = ask('LMSGetLastError');
  return { code, text: ask('LMSGetErrorString', code), diagnostic: ask('LMSGetDiagnostic', code) };
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
  if (found || typeof window === 'undefined') return { connected: found, refused: null };
  const refused = refusal();
  if (!refused && (window.parent !== window || window.opener)) noLmsNotice();
  return { connected: false, refused };
}

/** A notice at the top of the page, under the boot status. */
function topNotice(className, text) {
  const notice = document.createElement('p');
  notice.className = `notice ${className}`;
  notice.setAttribute('role', 'status');
  notice.textContent = text;
  const status = document.getElementById('boot-status');
  if (status) status.after(notice);
  else document.body.prepend(notice);
}

/** Framed or opened by another page, yet no LMS: say at the top of the page that nothing is sent. */
function noLmsNotice() {
  topNotice('no-lms', 'Your progress is not being sent to your course: no LMS connection was found.');
}

/** An LMS that refused to start: what happened, what the page shows, and what to do. */
function refusedNotice({ code, text, diagnostic }, shown) {
  const why = [text, diagnostic && diagnostic !== text ? diagnostic : ''].filter(Boolean).join(': ');
  const said = [code ? `LMS error ${code}` : 'no error code given', why].filter(Boolean).join(', ');
  topNotice('lms-refused', `Your course's LMS refused to start a session with this lesson (${said}). `
    + 'This session with your course has ended or was refused, so nothing more can be sent to it. '
    + (shown
      ? 'Shown here is your work as last sent to your course from this browser tab; anything you do now is not recorded. '
      : 'Your earlier work is not shown here, and nothing you do on this page is recorded. ')
    + 'To go on, close this activity and launch it again from your course.');
}

const { connected, refused } = connect();
// Refused by the LMS: neither the LMS nor localStorage keeps this record, and, as
// in the course, first attempts stay final.
const progress = lessonProgress({ persist: !connected && !refused, graded: connected || Boolean(refused) });
const started = Date.now();

if (refused) {
  const copy = readCopy();
  const shown = copy !== null && progress.restore(copy);
  refusedNotice(refused, shown);
}

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
  // In the same commit as the suspend data that holds their outcomes (see sent).
  sendInteractions();
  sendObjectives();
  const text = progress.serialise();
  if (text.length <= MAX_SERIALISED) {
    scorm.set('cmi.suspend_data', text);
    writeCopy(text);
  }
  scorm.commit();
}

/** SCORM 1.2 CMITime, HH:MM:SS, of the clock now. */
function clockTime() {
  const now = new Date();
  return [now.getHours(), now.getMinutes(), now.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/**
 * The graded items whose first attempt is decided, as SCORM 1.2
 * interactions: { id, type, response, result, section } (section: the id of
 * the page section that holds the item, its objective's), with the
 * question or the exercise it is.
 *   quiz-<question id>   choice (the letter the page shows for the chosen
 *                        answer, a–d, as a report should name it; the record
 *                        keeps the choice's own id), numeric (the number) or
 *                        fill-in (a grid: its T × T cells in row order,
 *                        1 = blocked)
 *   breakit-<bug>        choice: the predicted check, a letter for its place
 *                        in CHECKS (checks.js: a = rowSumsOne …), empty when
 *                        the card was first seen already broken
 * The result is the graded outcome: correct when it scored its point,
 * wrong when it did not, and neutral for a question that was practice (its
 * model answer opened before the first attempt).
 */
function decidedItems() {
  const items = [];
  for (const id of ALL_QUESTIONS) {
    const answer = progress.answerTo(id);
    if (!answer) continue;
    const q = questionById(id);
    const type = q.kind === 'choice' ? 'choice' : q.kind === 'number' ? 'numeric' : 'fill-in';
    const response = reported(q, answer.first);
    // A question whose model answer was opened first is practice: it scores nothing either way.
    const result = progress.revealed(id) ? 'neutral' : answer.right ? 'correct' : 'wrong';
    items.push({ id: `quiz-${id}`, type, response, result, section: quiz.id, question: q });
  }
  EXERCISES.forEach((exercise, i) => {
    const outcome = progress.outcome(exercise.bug);
    if (outcome === null) return;
    // The card's prediction, kept in the record's break-it state (progress.js): '-' for none.
    const predicted = progress.record.breakIt[2 * i];
    items.push({ id: `breakit-${exercise.bug}`, type: 'choice', response: predicted === '-' ? '' : predicted,
      result: outcome ? 'correct' : 'wrong', section: breakIt.id, exercise });
  });
  return items;
}

/**
 * Answer text to question `q` (progress.js) as an interaction reports it: a
 * choice by the letter the page shows for it (quiz.js letters the choices
 * a, b, c… in the order they are listed; the record keeps the choice's own
 * id), any other answer as it is.
 */
function reported(q, text) {
  return q.kind === 'choice' ? choiceLetter(q, text) : text;
}

/** The attention core the lesson runs on, once it has drawn itself: it answers correctResponses(). */
let lab = null;

/**
 * The correct responses to a decided item, in the form of its response (see
 * decidedItems()), from the same source as the page's grading: a question's
 * right answer (rightAnswer(), as quiz.js grades it); for a break-it card,
 * every check that a prediction may name that fails with its bug on, in the
 * core's run (as breakit.js's cards decide), any one of which scores, so
 * each is a correct response of its own.
 */
function correctResponses({ question: q, exercise }) {
  if (q) return [reported(q, rightAnswer(q, lab))];
  return caughtBy(runChecks(lab, exercise)).map(predictionLetter);
}

/**
 * The interactions already in the LMS: those of the items decided in the
 * restored suspend data (each was written in the commit that saved its
 * outcome), and those written since. SCORM 1.2 interactions are a journal:
 * an entry is never written twice, nor rewritten.
 */
const sent = new Set();

function sendInteractions() {
  for (const item of decidedItems()) {
    if (sent.has(item.id)) continue;
    sent.add(item.id);
    const n = Number(scorm.get('cmi.interactions._count')) || 0;
    const set = (name, value) => scorm.set(`cmi.interactions.${n}.${name}`, value);
    if (!set('id', item.id)) continue; // an LMS that keeps no interactions
    set('objectives.0.id', item.section);
    set('time', clockTime());
    set('type', item.type);
    correctResponses(item).forEach((pattern, k) => set(`correct_responses.${k}.pattern`, pattern));
    set('weighting', '1');
    if (item.response) set('student_response', item.response);
    set('result', item.result);
  }
}

/**
 * The sections with graded items in the package, as SCORM 1.2 objectives:
 * { id, status, score: { raw, max } }. Each is scored as the whole lesson
 * is (progress.js status() and score()), over that section's items alone:
 * incomplete until every one is done, then passed or failed against the
 * mastery score of its own points.
 */
function sectionObjectives() {
  const { questions, exercises } = progress.scope;
  const sections = [];
  if (questions.length) sections.push({ id: quiz.id, items: { questions } });
  if (exercises.length) sections.push({ id: breakIt.id, items: { exercises } });
  return sections.map(({ id, items }) => {
    const part = progress.scoped(items);
    return { id, status: part.status(), score: part.score() };
  });
}

/**
 * The index of each section's objective in cmi.objectives, by section id:
 * those the LMS already holds (read on launch), then those added, so that a
 * section is written at the same index in every launch.
 */
const objectiveIndex = new Map();

/** One past the highest index in cmi.objectives read on launch or used since. */
let objectivesEnd = 0;

/** Set when the LMS refuses an objective's id: it keeps no objectives, and none is written again. */
let objectivesRefused = false;

/**
 * Where a section new to the LMS is added: past the objectives the LMS
 * counts and past every index read or used, so that an LMS whose
 * cmi.objectives._count cannot be read (an empty answer, an error) still
 * gets each section at an index of its own.
 */
function newObjectiveIndex() {
  return Math.max(Number(scorm.get('cmi.objectives._count')) || 0, objectivesEnd);
}

/** Write sectionObjectives(): no score while a section is incomplete (see the top of this file). */
function sendObjectives() {
  if (objectivesRefused) return;
  for (const { id, status, score } of sectionObjectives()) {
    let n = objectiveIndex.get(id);
    if (n === undefined) {
      n = newObjectiveIndex();
      if (!scorm.set(`cmi.objectives.${n}.id`, id)) {
        objectivesRefused = true;
        return;
      }
      objectiveIndex.set(id, n);
      objectivesEnd = n + 1;
    }
    if (status !== 'incomplete') {
      scorm.set(`cmi.objectives.${n}.score.min`, '0');
      scorm.set(`cmi.objectives.${n}.score.max`, String(score.max));
      scorm.set(`cmi.objectives.${n}.score.raw`, String(score.raw));
    }
    scorm.set(`cmi.objectives.${n}.status`, status);
  }
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
  for (const item of decidedItems()) sent.add(item.id);
  objectivesEnd = Number(scorm.get('cmi.objectives._count')) || 0;
  // Last to first, so that an id the LMS holds twice keeps its first index.
  for (let n = objectivesEnd - 1; n >= 0; n--) objectiveIndex.set(scorm.get(`cmi.objectives.${n}.id`), n);
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
  const ready = new MutationObserver(async () => {
    if (document.documentElement.dataset.ready !== 'true') return;
    ready.disconnect();
    // The core the lesson has loaded (loadAttention keeps each build's).
    lab = await loadAttention();
    if (finished) return; // left while it was asked
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

/** For tests and the page: whether an LMS answered (or why it refused), and the record it fills. */
export const lms = { connected, refused, progress, finish };
