// Type declarations for web/attention-lab.js, the <attention-lab> custom element.
import type { BugName, Tensor } from './attention.js';

/** The parts of the lesson a widget can show. */
export type AttentionLabPreset =
  | 'two-keys' | 'one-query' | 'three-by-three' | 'why-scale' | 'shapes' | 'masks' | 'causal'
  | 'padding' | 'custom-mask' | 'gradients' | 'cross' | 'self-cross' | 'multi-head' | 'observability'
  | 'conventions' | 'break-it' | `break-it:${BugName}`;

/** The panels the `show` attribute chooses from. */
export type AttentionLabPanel = 'scores' | 'weights' | 'output' | 'checks';

/** The themes (the attribute is read in any case). */
export type AttentionLabTheme = 'light' | 'dark' | 'auto';

/** detail of the `attention-change` event, sent after each recompute. */
export interface AttentionChangeDetail {
  /** The preset in use, e.g. "causal" or "break-it:no-scale" (an alias is given by its full name: one-query as two-keys). */
  preset: AttentionLabPreset;
  /** The state string: the same text as the lesson page's URL hash. */
  state: string;
  /**
   * The weights the core returned for the preset's main result; null for why-scale, and while the core refuses the input
   * (in conventions, while a query has no key, as in its default state).
   */
  weights: Tensor | null;
  /** The output the core returned, or null as for weights. */
  output: Tensor | null;
  /** The scaled scores before masking, where the preset computes them with lab.sdpa; otherwise null. */
  scores: Tensor | null;
}

/** detail of the `attention-result` event: an exercise's outcome (break-it presets). */
export interface AttentionResultDetail {
  /** The exercise's bug name, e.g. "no-scale". */
  exercise: BugName;
  /** Whether the learner's predicted check was one that failed (decided once: the prediction is then locked). */
  passed: boolean;
  /** The widget's score after this outcome: 1 point per right prediction; max is the number of cards shown. */
  score: import('./progress.js').Score;
  /**
   * Whether the widget's record reached localStorage (under progressKey): when
   * false (storage refused or full), a reload could decide the card again, so
   * a course should keep the first result it receives.
   */
  saved: boolean;
}

/**
 * <attention-lab preset="causal" show="weights" seq-len="5" theme="auto"></attention-lab>
 *
 * Attributes: preset, editable ("false" for read-only), heads, d-model, seq-len,
 * show (space- or comma-separated panels), state, theme, label.
 */
export class AttentionLabElement extends HTMLElement {
  static readonly observedAttributes: string[];
  /** The current state string (as in the lesson page's URL hash). Setting an invalid one throws an Error. */
  state: string;
  /** The preset attribute ("three-by-three" when absent). */
  preset: AttentionLabPreset | string;
  /**
   * Settles after the first drawing; rejects when the core or the styles cannot be loaded.
   * Connecting the element again after such a failure tries again, with a new promise.
   */
  readonly ready: Promise<void>;
  /**
   * The localStorage key of the widget's record of break-it outcomes. By
   * default defaultProgressKey(preset): the page's path and the preset. A
   * page may set its own (before or after the element is defined); null or
   * "" puts back the default.
   */
  get progressKey(): string;
  set progressKey(key: string | null);
  /** Forget the widget's record (its stored outcomes) and draw the cards as given. */
  resetProgress(): void;

  addEventListener<K extends keyof AttentionLabEventMap>(
    type: K, listener: (this: AttentionLabElement, event: AttentionLabEventMap[K]) => unknown,
    options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof AttentionLabEventMap>(
    type: K, listener: (this: AttentionLabElement, event: AttentionLabEventMap[K]) => unknown,
    options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | EventListenerOptions): void;
}

export interface AttentionLabEventMap extends HTMLElementEventMap {
  'attention-change': CustomEvent<AttentionChangeDetail>;
  'attention-result': CustomEvent<AttentionResultDetail>;
}

/** Every preset name the element accepts. */
export const PRESET_NAMES: readonly string[];

/** The start of every widget's default progress key. */
export const PROGRESS_KEY_PREFIX: string;
/** A widget's default progress key: PROGRESS_KEY_PREFIX, the page's path, ":" and the preset name. */
export function defaultProgressKey(presetName: string): string;

/** Where the element's stylesheets are fetched from; set before the first widget connects (the body of a module that imports this one is early enough). */
export const styleLocation: {
  /** The folder; a relative path is relative to the page. */
  base: URL | string;
  /** CSS text by file name (lesson.css, breakit.css, attention-lab.css), for bundles that inline it. */
  inline: Record<string, string>;
};

/** The lesson's CSS adapted to a shadow root (rem → the widget's size, width media queries → container queries). */
export function adaptCss(text: string): string;

declare global {
  interface HTMLElementTagNameMap {
    'attention-lab': AttentionLabElement;
  }
  interface HTMLElementEventMap {
    'attention-change': CustomEvent<AttentionChangeDetail>;
    'attention-result': CustomEvent<AttentionResultDetail>;
  }
  // Both events bubble (and cross shadow roots), so a page may listen on document or window.
  interface DocumentEventMap {
    'attention-change': CustomEvent<AttentionChangeDetail>;
    'attention-result': CustomEvent<AttentionResultDetail>;
  }
  interface WindowEventMap {
    'attention-change': CustomEvent<AttentionChangeDetail>;
    'attention-result': CustomEvent<AttentionResultDetail>;
  }
}
