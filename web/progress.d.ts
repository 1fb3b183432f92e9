// Types for web/progress.js: the learner's progress record (quiz answers,
// break-it cards and outcomes, sections visited) and its score rule.

/** One saved quiz answer: the first attempt (what scores) and the latest. */
export interface SavedAnswer {
  first: string;
  /** Whether the first attempt scores: right, and made before the model answer was opened. */
  right: boolean;
  latest: string;
}

export interface ProgressRecord {
  quiz: Record<string, SavedAnswer>;
  /** The questions whose model answer was opened before their first attempt: practice, no point. */
  revealed: string[];
  /** The break-it cards' state string (two characters per card). */
  breakIt: string;
  /** Per exercise (bug name): whether the locked prediction was right the first time its bug was turned on. */
  outcomes: Record<string, boolean>;
  /**
   * Per exercise whose card was started again after its outcome was decided:
   * whether it had been finished (broken and repaired) by then. Later rounds
   * are practice and change neither the outcome nor the completion.
   */
  practice: Record<string, boolean>;
  /** Ids of the sections seen. */
  visited: string[];
}

/** 1 point per first-try right answer and per right first prediction; mastery = ⌈70 % of max⌉. */
export interface Score {
  raw: number;
  max: number;
  mastery: number;
}

export type ProgressStatus = 'incomplete' | 'passed' | 'failed' | 'completed';

export type ProgressEvent =
  | { type: 'question'; question: string; passed: boolean; first: boolean }
  | { type: 'exercise'; exercise: string; passed: boolean }
  | { type: 'visit' | 'view'; section: string }
  | { type: 'break-it' | 'reset' | 'restore' | 'scope' };

export const STORAGE_KEY: string;
/** SCORM 1.2's cmi.suspend_data limit: 4096. */
export const MAX_SERIALISED: number;
/** The share of the points needed to pass: 0.7. */
export const MASTERY: number;
export const BREAKIT_DEFAULT: string;
export const ALL_QUESTIONS: readonly string[];
export const ALL_EXERCISES: readonly string[];
export function isBreakItState(text: unknown): boolean;
export function masteryScore(max: number): number;

export class ProgressError extends Error {}

/** Parse and check a serialised record; throws ProgressError. */
export function parseRecord(text: string): ProgressRecord;
export function serialiseRecord(record: ProgressRecord): string;

export class Progress {
  /**
   * persist: keep the record in localStorage and start from what is saved
   * there. graded: an LMS grades the record, so reset() does nothing.
   */
  constructor(options?: { persist?: boolean; graded?: boolean });
  /** Whether an LMS grades this record (first attempts are final). */
  readonly graded: boolean;
  readonly record: ProgressRecord;
  /** Why a saved record was not used, or null. */
  readonly notice: string | null;
  /** The section in view, or null. */
  readonly current: string | null;
  readonly scope: { questions: string[]; exercises: string[]; sections: string[] };
  /** Take a serialised record; false (with `notice` set, and a fresh record) if it is not valid. */
  restore(text: string): boolean;
  serialise(): string;
  /** Widen the scope to what the page shows; `sections` are the sections watched for visits. */
  include(scope: { questions?: string[]; exercises?: string[]; sections?: string[] }): void;
  subscribe(listener: (event: ProgressEvent, progress: Progress) => void): () => boolean;
  answer(question: string, answer: string, right: boolean): void;
  answerTo(question: string): SavedAnswer | null;
  /** The model answer was opened: before the first attempt, the question becomes practice (nothing once answered). */
  reveal(question: string): void;
  /** Whether the model answer was opened before the first attempt. */
  revealed(question: string): boolean;
  setBreakIt(state: string): void;
  /** Records the outcome the first time only; returns whether this call recorded it. */
  decide(exercise: string, right: boolean): boolean;
  /** The decided outcome, or null. */
  outcome(exercise: string): boolean | null;
  /** Whether the card was started again after its outcome was decided. */
  inPractice(exercise: string): boolean;
  /** The section in view now (the lesson location); being in view is not a visit. */
  view(section: string): void;
  /** The learner read or worked in the section: it counts as visited, once. */
  visit(section: string): void;
  /** Start these cards again, for practice: decided outcomes and finished cards stay. */
  resetExercises(exercises: string[]): void;
  reset(): void;
  exerciseDone(exercise: string): boolean;
  score(): Score;
  /** `visited` counts the scope's sections only (all visited ids when `sections` is 0). */
  summary(): { answered: number; questions: number; finished: number; exercises: number; visited: number; sections: number };
  status(): ProgressStatus;
}

/** The lesson page's record (one per page), kept in localStorage unless persist is false. */
export function lessonProgress(options?: { persist?: boolean; graded?: boolean }): Progress;
