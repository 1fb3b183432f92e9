/**
 * progress.js: the learner's progress, one record for the whole lesson.
 *
 *   import { lessonProgress, Progress } from './progress.js';
 *   const progress = lessonProgress();        // the page's, kept in localStorage
 *   const mine = new Progress();              // kept nowhere
 *   const widget = new Progress({ persist: true, key: 'attention-lab.widget.v1:/course/page:break-it' });
 *   progress.subscribe((event) => ...);       // after every change
 *
 * The record holds:
 *   quiz      per question: the first answer, whether it scored, and the
 *             latest answer (a learner may retry; the first attempt counts)
 *   revealed  the questions whose model answer was opened before their first
 *             attempt: that attempt scores nothing, even when right (it is
 *             practice), so reading the answer first earns no point
 *   breakIt   the break-it cards' state string (breakit.js: prediction, bug
 *             on, broken once, repaired, two characters per card)
 *   outcomes  per exercise: whether the prediction was right, decided the
 *             first time its bug was turned on (the prediction is then locked)
 *   practice  per exercise whose card was started again (a reset, the back
 *             button) after its outcome was decided: whether it had been
 *             finished (broken and repaired) by then. Its later rounds are
 *             practice: they change neither the outcome nor the completion,
 *             so a learner who has seen the checks cannot reset and predict
 *             again for a point.
 *   visited   the ids of the sections the learner has read: stayed with for
 *             a moment or worked in (progress-panel.js watchSections decides,
 *             and calls visit()); being scrolled past is not a visit
 *
 * Score: 1 point per quiz question answered right on the first attempt
 * (with its model answer not opened before), and
 * 1 point per break-it exercise whose prediction was right the first time
 * its bug was turned on. raw is the points, max the number of questions and
 * exercises in scope (those the page shows: include() sets them). The work
 * is complete when every question in scope is answered and every exercise
 * in scope has been broken and repaired (once is enough: a reset keeps it
 * finished); it is passed when raw ≥ masteryScore(max) = ⌈70 % of max⌉.
 * With nothing scored in scope (only reading sections) it is completed once
 * every section in scope has been visited.
 *
 * Serialised form (localStorage, SCORM's cmi.suspend_data): compact JSON,
 *   {"v":1,"q":{"id":[first,0|1,latest]},"r":["id"],"b":"-0c3…","o":{"bug":0|1},"p":{"bug":0|1},"s":["masks"]}
 * at most MAX_SERIALISED (4096) characters. restore() checks every part
 * (size, keys, answer forms, the break-it pattern) and takes nothing from a
 * text that fails: the record stays empty and `notice` says why. Nothing in
 * a saved text is ever evaluated or put into the page as markup.
 */
import { CHECKS } from './checks.js';
import { EXERCISES, quotedTitle } from './exercises.js';
import { QUESTIONS, questionById, validAnswer } from './quiz-questions.js';
import { wordList } from './lesson-ui.js';

export const STORAGE_KEY = 'attention-lab.progress.v1';
/** SCORM 1.2 caps cmi.suspend_data at 4096 characters. */
export const MAX_SERIALISED = 4096;
/** The share of the points needed to pass. */
export const MASTERY = 0.7;
const VERSION = 1;
const MAX_VISITED = 32;
const SECTION_ID = /^[a-z][a-z0-9-]{0,31}$/;

// ---------------------------------------------------------------------------
// The break-it state string: two characters per card, in EXERCISES order
//   1st: the predicted check, 'a' + its index in CHECKS, or '-' for none
//   2nd: flags, a digit 0-7: 1 = bug on now, 2 = broken once, 4 = repaired
// ---------------------------------------------------------------------------

// A state saved before the last cards were added is shorter: its missing
// cards count as untouched (breakItState() pads it).
const BREAKIT_PATTERN = new RegExp(`^(?:[a-${String.fromCharCode(96 + CHECKS.length)}-][0-7]){1,${EXERCISES.length}}$`);
/** The break-it state of a learner who has touched nothing. */
export const BREAKIT_DEFAULT = '-0'.repeat(EXERCISES.length);
/** Whether `text` is a valid break-it state string. */
export const isBreakItState = (text) => typeof text === 'string' && BREAKIT_PATTERN.test(text);
/** A valid state string at full length (a shorter one padded with untouched cards). */
const fullLength = (text) => text.padEnd(BREAKIT_DEFAULT.length, '-0');
const BUG_NAMES = EXERCISES.map((e) => e.bug);
const BROKEN = 2;
const REPAIRED = 4;
/** The flags digit of card `i` in a full-length state string. */
const cardFlags = (text, i) => Number(text[2 * i + 1]);

/** The points needed to pass out of `max`. */
export const masteryScore = (max) => Math.ceil(MASTERY * max);

export class ProgressError extends Error {}

const emptyRecord = () => ({ quiz: {}, revealed: [], breakIt: BREAKIT_DEFAULT, outcomes: {}, practice: {}, visited: [] });

/** Parse and check a serialised record; throws ProgressError with a short reason (never echoing the text). */
export function parseRecord(text) {
  if (typeof text !== 'string') throw new ProgressError('it is not text');
  if (text.length > MAX_SERIALISED) throw new ProgressError('it is too long');
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw new ProgressError('it is not valid JSON');
  }
  const isObject = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
  if (!isObject(data) || data.v !== VERSION) throw new ProgressError('it is not a progress record of this version');
  for (const key of Object.keys(data)) if (!['v', 'q', 'r', 'b', 'o', 'p', 's'].includes(key)) throw new ProgressError('it has an unknown part');
  const record = emptyRecord();
  if (data.q !== undefined) {
    if (!isObject(data.q)) throw new ProgressError('its quiz part has the wrong form');
    for (const [id, entry] of Object.entries(data.q)) {
      const q = questionById(id);
      if (!q) throw new ProgressError('it names an unknown question');
      if (!Array.isArray(entry) || entry.length !== 3 || !validAnswer(q, entry[0]) || (entry[1] !== 0 && entry[1] !== 1)
        || !validAnswer(q, entry[2])) throw new ProgressError('an answer has the wrong form');
      record.quiz[id] = { first: entry[0], right: entry[1] === 1, latest: entry[2] };
    }
  }
  // A record saved before answers could be revealed has no "r": nothing was.
  if (data.r !== undefined) {
    // An answer opened before the first attempt cannot have scored.
    if (!Array.isArray(data.r) || !data.r.every((id) => typeof id === 'string' && questionById(id) && !record.quiz[id]?.right)) {
      throw new ProgressError('its list of opened answers has the wrong form');
    }
    record.revealed = [...new Set(data.r)];
  }
  if (data.b !== undefined) {
    if (!isBreakItState(data.b)) throw new ProgressError('its break-it part has the wrong form');
    record.breakIt = fullLength(data.b);
  }
  if (data.o !== undefined) {
    if (!isObject(data.o)) throw new ProgressError('its outcomes have the wrong form');
    for (const [bug, right] of Object.entries(data.o)) {
      if (!BUG_NAMES.includes(bug) || (right !== 0 && right !== 1)) throw new ProgressError('an outcome has the wrong form');
      record.outcomes[bug] = right === 1;
    }
  }
  if (data.p !== undefined) {
    if (!isObject(data.p)) throw new ProgressError('its practice part has the wrong form');
    for (const [bug, finished] of Object.entries(data.p)) {
      if (!Object.hasOwn(record.outcomes, bug) || (finished !== 0 && finished !== 1)) throw new ProgressError('a practice entry has the wrong form');
      record.practice[bug] = finished === 1;
    }
  }
  if (data.s !== undefined) {
    if (!Array.isArray(data.s) || data.s.length > MAX_VISITED || !data.s.every((id) => typeof id === 'string' && SECTION_ID.test(id))) {
      throw new ProgressError('its list of sections has the wrong form');
    }
    record.visited = [...new Set(data.s)];
  }
  return record;
}

/** The compact text of a record (see the top of this file). */
export function serialiseRecord(record) {
  const data = { v: VERSION };
  const quiz = Object.entries(record.quiz);
  if (quiz.length) data.q = Object.fromEntries(quiz.map(([id, a]) => [id, [a.first, a.right ? 1 : 0, a.latest]]));
  if (record.revealed.length) data.r = record.revealed;
  if (record.breakIt !== BREAKIT_DEFAULT) data.b = record.breakIt;
  const outcomes = Object.entries(record.outcomes);
  if (outcomes.length) data.o = Object.fromEntries(outcomes.map(([bug, right]) => [bug, right ? 1 : 0]));
  const practice = Object.entries(record.practice);
  if (practice.length) data.p = Object.fromEntries(practice.map(([bug, finished]) => [bug, finished ? 1 : 0]));
  if (record.visited.length) data.s = record.visited;
  return JSON.stringify(data);
}

/** localStorage, or null where it is missing or refused (private modes, sandboxes). */
function storage() {
  try {
    const s = globalThis.localStorage;
    if (!s) return null;
    s.getItem(STORAGE_KEY);
    return s;
  } catch {
    return null;
  }
}

export class Progress {
  /**
   * @param {{ persist?: boolean, graded?: boolean, key?: string }} [options]
   *   persist: keep the record in localStorage under `key` (STORAGE_KEY, the
   *   lesson page's, unless given: an <attention-lab> widget keeps its own)
   *   and start from what is saved there
   */
  constructor({ persist = false, graded = false, key = STORAGE_KEY } = {}) {
    this.persist = persist;
    this.key = key;
    /**
     * Whether the last change was written to localStorage, so that a reload
     * starts from it: false when the record is kept nowhere, or where storage
     * is refused or full (the record then lasts as long as the page).
     */
    this.saved = false;
    /** Whether an LMS grades this record: then first attempts are final and reset() is refused. */
    this.graded = graded;
    this.record = emptyRecord();
    this.notice = null; // why a saved record was not used, or null
    this.current = null; // the section in view, see view()
    this.scope = { questions: [], exercises: [], sections: [] };
    this.listeners = new Set();
    if (persist) {
      let saved = null;
      try {
        saved = storage()?.getItem(key) ?? null;
      } catch {
        saved = null;
      }
      if (saved !== null) this.restore(saved);
    }
  }

  /** Take a serialised record (localStorage, an LMS). False, with `notice` set and a fresh start, if it is not valid. */
  restore(text) {
    try {
      this.record = parseRecord(text);
      this.notice = null;
      this.emit({ type: 'restore' });
      return true;
    } catch (err) {
      if (!(err instanceof ProgressError)) throw err;
      this.record = emptyRecord();
      this.notice = `Saved progress could not be used (${err.message}), so the lesson starts fresh.`;
      this.emit({ type: 'restore' });
      return false;
    }
  }

  serialise() {
    return serialiseRecord(this.record);
  }

  /**
   * Widen the scope to these question ids, exercise bug names and section ids
   * (what the page shows; the sections are those watched for visits).
   */
  include({ questions = [], exercises = [], sections = [] }) {
    const add = (list, more) => [...new Set([...list, ...more])];
    this.scope = {
      questions: add(this.scope.questions, questions),
      exercises: add(this.scope.exercises, exercises),
      sections: add(this.scope.sections, sections.filter((id) => SECTION_ID.test(id))),
    };
    this.emit({ type: 'scope' });
  }

  /**
   * The same record seen through a narrower scope, some of this scope's
   * questions and exercises: its status() and score() count those alone. A
   * view for one reading; it does not follow later changes to this one.
   */
  scoped({ questions = [], exercises = [] }) {
    const part = new Progress({ graded: this.graded });
    part.record = this.record;
    part.scope = { questions, exercises, sections: [] };
    return part;
  }

  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event) {
    for (const listener of [...this.listeners]) listener(event, this);
  }

  changed(event) {
    if (this.persist) {
      try {
        const s = storage();
        s?.setItem(this.key, this.serialise());
        this.saved = Boolean(s);
      } catch {
        // Full or refused: progress simply is not kept.
        this.saved = false;
      }
    }
    this.emit(event);
  }

  /**
   * Remove the saved record from localStorage (this record itself is left
   * as it is): the next record made with the same key starts empty.
   */
  forget() {
    if (!this.persist) return;
    try {
      storage()?.removeItem(this.key);
    } catch {
      // Refused: there was nothing kept to remove.
    }
    this.saved = false;
  }

  /**
   * A learner answered question `id` with `answer` (its text form); `right`
   * as checked. The first answer counts, unless the model answer was opened
   * before it (revealed): then it scores nothing.
   */
  answer(id, answer, right) {
    const q = questionById(id);
    if (!q || !validAnswer(q, answer)) throw new ProgressError(`not an answer to question ${id}`);
    const before = this.record.quiz[id];
    const first = !before;
    const scores = Boolean(right) && !this.revealed(id);
    this.record.quiz[id] = first ? { first: answer, right: scores, latest: answer } : { ...before, latest: answer };
    this.changed({ type: 'question', question: id, passed: Boolean(right), first });
  }

  /**
   * The model answer to question `id` was opened. Before the first attempt,
   * that attempt becomes practice (it scores nothing); after it, nothing
   * changes.
   */
  reveal(id) {
    if (!questionById(id) || this.record.quiz[id] || this.revealed(id)) return;
    this.record.revealed.push(id);
    this.changed({ type: 'reveal', question: id });
  }

  /** Whether question `id`'s model answer was opened before its first attempt. */
  revealed(id) {
    return this.record.revealed.includes(id);
  }

  /** The saved answer to question `id`, or null. */
  answerTo(id) {
    return this.record.quiz[id] || null;
  }

  /**
   * The break-it cards' state string changed. A card whose outcome is
   * decided and that is no longer marked broken (the back button, a state
   * from the URL) was started again: it goes to practice.
   */
  setBreakIt(text) {
    if (!isBreakItState(text) || fullLength(text) === this.record.breakIt) return;
    const next = fullLength(text);
    for (const bug of Object.keys(this.record.outcomes)) {
      if (!(cardFlags(next, BUG_NAMES.indexOf(bug)) & BROKEN)) this.startPractice(bug);
    }
    this.record.breakIt = next;
    this.changed({ type: 'break-it' });
  }

  /**
   * An exercise's outcome, decided when its bug is first turned on; later
   * calls (another round after a reset) change nothing. Returns whether this
   * call decided it.
   */
  decide(bug, right) {
    if (!BUG_NAMES.includes(bug) || Object.hasOwn(this.record.outcomes, bug)) return false;
    this.record.outcomes[bug] = Boolean(right);
    this.changed({ type: 'exercise', exercise: bug, passed: Boolean(right) });
    return true;
  }

  /** The outcome of exercise `bug`: true or false once decided, else null. */
  outcome(bug) {
    return Object.hasOwn(this.record.outcomes, bug) ? this.record.outcomes[bug] : null;
  }

  /** Whether exercise `bug`'s card has been started again since its outcome was decided. */
  inPractice(bug) {
    return Object.hasOwn(this.record.practice, bug);
  }

  /** Card `bug` starts again after its outcome was decided: it keeps whether it was finished. */
  startPractice(bug) {
    if (!Object.hasOwn(this.record.outcomes, bug)) return;
    this.record.practice[bug] = this.exerciseDone(bug);
  }

  /**
   * Section `sectionId` is the one in view now (not saved: an LMS keeps it as
   * the lesson location). Being in view is not a visit: see visit().
   */
  view(sectionId) {
    if (!SECTION_ID.test(sectionId) || sectionId === this.current) return;
    this.current = sectionId;
    this.emit({ type: 'view', section: sectionId });
  }

  /** The learner has read or worked in section `sectionId`: it counts as visited, once. */
  visit(sectionId) {
    if (!SECTION_ID.test(sectionId) || this.record.visited.includes(sectionId) || this.record.visited.length >= MAX_VISITED) return;
    this.record.visited.push(sectionId);
    this.changed({ type: 'visit', section: sectionId });
  }

  /**
   * Start these exercises' cards again (the cards' own reset), for practice:
   * a decided outcome stays, and so does a finished card.
   */
  resetExercises(bugs) {
    const chars = [...this.record.breakIt];
    for (const bug of bugs) {
      const i = BUG_NAMES.indexOf(bug);
      if (i < 0) continue;
      this.startPractice(bug);
      chars[2 * i] = '-';
      chars[2 * i + 1] = '0';
    }
    this.record.breakIt = chars.join('');
    this.changed({ type: 'reset' });
  }

  /**
   * Forget everything (the scope stays). Refused while an LMS grades the
   * record: a reset would turn graded first attempts into retries.
   */
  reset() {
    if (this.graded) return;
    this.record = emptyRecord();
    this.notice = null;
    this.changed({ type: 'reset' });
  }

  /** Whether exercise `bug` has been broken and repaired, with its outcome decided; a reset keeps it so. */
  exerciseDone(bug) {
    const i = BUG_NAMES.indexOf(bug);
    if (i < 0 || !Object.hasOwn(this.record.outcomes, bug)) return false;
    return this.record.practice[bug] === true || Boolean(cardFlags(this.record.breakIt, i) & REPAIRED);
  }

  /** { raw, max, mastery } over the scope: see the top of this file. */
  score() {
    const { questions, exercises } = this.scope;
    const raw = questions.filter((id) => this.record.quiz[id]?.right).length
      + exercises.filter((bug) => this.record.outcomes[bug] === true).length;
    const max = questions.length + exercises.length;
    return { raw, max, mastery: masteryScore(max) };
  }

  /**
   * Counts for a progress line. visited: of the page's watched sections
   * (scope.sections, out of `sections`) those visited; the record may also
   * list sections of another page (a fuller lesson), which are kept but not
   * counted here. With no sections watched, every visited id counts.
   */
  summary() {
    const { questions, exercises, sections } = this.scope;
    const { visited } = this.record;
    return {
      answered: questions.filter((id) => this.record.quiz[id]).length,
      questions: questions.length,
      finished: exercises.filter((bug) => this.exerciseDone(bug)).length,
      exercises: exercises.length,
      visited: sections.length ? sections.filter((id) => visited.includes(id)).length : visited.length,
      sections: sections.length,
    };
  }

  /**
   * What is left before the work in scope is complete: the questions not
   * answered yet, the exercises whose bug has been turned on (their outcome
   * is decided) but whose repair has not been applied, and the exercises not
   * started (their bug never turned on). Empty lists when it is complete.
   */
  remaining() {
    const { questions, exercises } = this.scope;
    const decided = (bug) => Object.hasOwn(this.record.outcomes, bug);
    // A decided card not yet done waits for its repair while its bug has been
    // on since the card (re)started; after a card's reset it must be broken again first.
    const broken = (bug) => Boolean(cardFlags(this.record.breakIt, BUG_NAMES.indexOf(bug)) & BROKEN);
    const waiting = exercises.filter((bug) => decided(bug) && !this.exerciseDone(bug));
    return {
      questions: questions.filter((id) => !this.record.quiz[id]),
      repairs: waiting.filter(broken),
      rebreaks: waiting.filter((bug) => !broken(bug)),
      untried: exercises.filter((bug) => !decided(bug)),
    };
  }

  /**
   * 'incomplete' until everything in scope is done, then 'passed' or 'failed'
   * against the mastery score. When nothing in scope is scored (a package of
   * reading sections only), 'completed' once every section in scope has
   * been visited.
   */
  status() {
    const { answered, questions, finished, exercises, visited, sections } = this.summary();
    if (questions + exercises === 0) return visited < sections ? 'incomplete' : 'completed';
    if (answered < questions || finished < exercises) return 'incomplete';
    const { raw, mastery } = this.score();
    return raw >= mastery ? 'passed' : 'failed';
  }
}

/**
 * What is left, in a sentence for a progress line (remaining() in words),
 * or '' when nothing is: "Left: the repair of “Forgot 1/√dk” (press “Apply
 * the repair” on its card); 1 break-it card to try; 3 questions to answer."
 */
export function remainingText(progress) {
  const { questions, repairs, rebreaks, untried } = progress.remaining();
  const parts = [];
  if (repairs.length) {
    parts.push(`the repair of ${wordList(repairs.map(quotedTitle), 'and')} (press “Apply the repair” on ${repairs.length === 1 ? 'its card' : 'each card'})`);
  }
  if (rebreaks.length) {
    parts.push(`${wordList(rebreaks.map(quotedTitle), 'and')}, started again: switch ${rebreaks.length === 1 ? 'its bug' : 'each bug'} on again, then press “Apply the repair”`);
  }
  if (untried.length) parts.push(`${untried.length} break-it ${untried.length === 1 ? 'card' : 'cards'} to try`);
  if (questions.length) parts.push(`${questions.length} ${questions.length === 1 ? 'question' : 'questions'} to answer`);
  return parts.length ? `Left: ${parts.join('; ')}.` : '';
}

let shared = null;

/**
 * The lesson page's record: one per page. The first call makes it, kept in
 * localStorage unless `options.persist` is false (an LMS keeps it instead);
 * `options.graded` says an LMS grades it (see Progress.reset).
 */
export function lessonProgress(options = { persist: true }) {
  if (!shared) shared = new Progress(options);
  return shared;
}

/** Every question id and exercise bug name (the full lesson's scope). */
export const ALL_QUESTIONS = QUESTIONS.map((q) => q.id);
export const ALL_EXERCISES = BUG_NAMES;
