/**
 * attention-lab.js: the <attention-lab> custom element.
 *
 *   <script type="module" src="attention-lab.js"></script>
 *   <attention-lab preset="causal" show="weights" seq-len="5"></attention-lab>
 *
 * One part of the lesson, live, inside any page. The element draws the
 * lesson's own section code (sections/*.js, listed in sections/registry.js)
 * into a shadow root, through a lesson context
 * whose root is that shadow root (lesson-context.js). Every number comes
 * from the wasm core via attention.js; all widgets on a page share one
 * loaded core, and each has its own state.
 *
 * Attributes (all optional; changing one updates the widget). The values of
 * preset, editable, show and theme are read in any case. A value the widget
 * cannot use is named in its status line (and once in the console, as a
 * warning), and ignored.
 *   preset    which part of the lesson: two-keys (alias one-query),
 *             three-by-three (the default), why-scale, shapes, masks, causal,
 *             padding, custom-mask, gradients, cross (alias self-cross), multi-head,
 *             observability, conventions, break-it, or break-it:<bug> for
 *             one exercise card (a name from BUGS in attention.js)
 *   editable  "false" (or off, no, 0) makes every control read-only;
 *             "true" (or on, yes, 1, empty) or no attribute: editable.
 *             Another value is named in the status line and ignored.
 *   heads     number of heads (multi-head, shapes); without d-model, a
 *             multi-head widget picks a d_model the heads split evenly
 *   d-model   the model width d_model (multi-head); without heads, a
 *             d-model the heads do not split takes the nearest head count
 *             that does (said in the status line); with heads that do not
 *             split it, heads wins and the nearest d_model they split is used
 *   seq-len   sequence length (multi-head, shapes, causal, masks,
 *             conventions; cross: the target length)
 *             A size on a preset without it is named in the status line.
 *   show      the panels to show, from scores, weights, output, checks
 *             (space- or comma-separated; default all). Inputs always show
 *             (so "inputs" may be listed, and changes nothing).
 *   state     a state string: the same text as the lesson page's URL hash
 *             (without "#"). heads, d-model and seq-len, when given, win over it.
 *             Fields for a section the preset does not show are kept, and
 *             named in the status line, as is a view= (the section a lesson
 *             link scrolls to), which is ignored. A d_model in the attribute's state that
 *             the heads do not split is replaced by the nearest one they do, and
 *             said, as for d-model (the state property applies it as it is).
 *   theme     light (default), dark, or auto (follows prefers-color-scheme);
 *             another value is named in the status line and ignored
 *   label     the accessible name of the widget (default from the preset)
 *
 * Properties: `state` (get: the current state string; set: apply one,
 * throwing an Error if it is not valid), `ready` (a Promise settled after
 * the first drawing; after a failed start, connecting the element again
 * tries again, with a new `ready`), `preset`, `progressKey` (see Progress
 * below). Method: resetProgress(). A page script may set state,
 * preset and progressKey before this module defines the element: the values are applied
 * when it does.
 *
 * Events (bubbling, composed):
 *   attention-change  after each recompute; detail { preset, state,
 *                     weights, output, scores }, tensors { data:
 *                     Float32Array, shape }, or null where the preset has
 *                     none or while the core refuses the input
 *   attention-result  an exercise's outcome (break-it presets), decided the
 *                     first time its bug is turned on, from the widget's
 *                     progress record (progress.js): detail { exercise,
 *                     passed, score: { raw, max, mastery }, saved }; saved
 *                     says whether the record reached localStorage (when
 *                     not, a reload may decide the card again)
 *
 * Progress: the widget keeps its record in localStorage under progressKey
 * (by default the page's path and the preset, see defaultProgressKey), so
 * a card decided before a reload opens decided, and fires no second
 * attention-result. Where localStorage is refused, the record lasts one
 * load. resetProgress() forgets it.
 *
 * Styling: only through the CSS custom properties --attention-lab-* and the
 * parts listed in attention-lab.css (::part(container), ::part(weights)...).
 * Nothing inside is styled by the page, and nothing here styles the page.
 * Styles are constructable stylesheets built from lesson.css, breakit.css
 * and attention-lab.css, fetched next to this module, so a strict CSP
 * (style-src 'self', no inline styles) is fine.
 */

import { loadAttention, BUGS } from './attention.js';
import { h, wordList } from './lesson-ui.js';
import { decodeHash, encodeHash, defaultSectionState, HashError } from './lesson-state.js';
import { createLessonContext, markScrollBoxes } from './lesson-context.js';
import { Progress } from './progress.js';
import { disclosureSection } from './lesson-disclosures.js';
import { paletteSheet } from './palette.js';
import {
  SECTIONS, LESSON_SECTIONS, VIEW_IDS, PRESETS, PRESET_ALIASES as ALIASES, instantiateSection,
} from './sections/registry.js';

// Presets come from the sections themselves (their `presets`, see
// sections/registry.js): which section, which of its slots, how they are laid out.
const DEFAULT_PRESET = 'three-by-three';

/** Every preset name the element accepts (break-it:<bug> for each bug). */
export const PRESET_NAMES = Object.freeze([
  ...Object.keys(PRESETS), ...Object.keys(ALIASES), ...BUGS.filter(Boolean).map((bug) => `break-it:${bug}`),
]);

/** The presets as the message for an unknown one lists them: the break-it cards as one pattern. */
const PRESET_HINT = [...Object.keys(PRESETS), ...Object.keys(ALIASES)].join(', ')
  + `, or break-it:<bug> with <bug> one of ${BUGS.filter(Boolean).join(', ')}`;

/** The preset for an attribute value (any case), or null when it is unknown. */
function resolvePreset(text) {
  const name = (text ?? '').trim().toLowerCase();
  const key = ALIASES[name] || name || DEFAULT_PRESET;
  if (Object.hasOwn(PRESETS, key)) return { name: key, ...PRESETS[key] };
  const m = /^break-it:([a-z-]+)$/.exec(key);
  if (m && BUGS.includes(m[1])) {
    return { ...PRESETS['break-it'], name: key, bug: m[1], title: `Break it: ${m[1]}`, result: `brk.${m[1]}` };
  }
  return null;
}

// ---------------------------------------------------------------------------
// State: the same text as the lesson page's URL hash
// ---------------------------------------------------------------------------

/** The page's open disclosures ("ui.open"): accepted and kept, never shown in a widget. */
const DISCLOSURE_STATE = disclosureSection();
const STATE_SECTIONS = [...LESSON_SECTIONS, instantiateSection(SECTIONS.find((s) => s.id === 'break-it')), DISCLOSURE_STATE];

function defaultStates() {
  return Object.fromEntries(STATE_SECTIONS.map((s) => [s.prefix, defaultSectionState(s)]));
}

/** Decode a state string into states for every section; throws HashError. */
function decodeStates(text) {
  const decoded = decodeHash(String(text).replace(/^#/, ''), STATE_SECTIONS, VIEW_IDS);
  const states = defaultStates();
  Object.assign(states, decoded.sections);
  return states;
}

/** The field keys ("mha.heads") a state string that decodes names, and its view too when asked; none for null. */
function stateKeys(text, withView = false) {
  if (!text) return [];
  return String(text).replace(/^#/, '').split('&').map((pair) => pair.split('=')[0]).filter((key) => key.includes('.') || (withView && key === 'view'));
}

/**
 * Set one field from an attribute's text, checked by the field's own codec
 * (so its range too). The fields after it that depend on its value (sizes)
 * keep their values when these still fit, and take their defaults otherwise.
 */
function setField(states, [prefix, name], text) {
  const section = STATE_SECTIONS.find((s) => s.prefix === prefix);
  const st = states[prefix];
  const at = section.fields.findIndex(([n]) => n === name);
  const next = { ...st, [name]: section.fields[at][1].decode(String(text).trim(), st) };
  for (const [n, fieldCodec, init] of section.fields.slice(at + 1)) {
    try {
      next[n] = fieldCodec.decode(fieldCodec.encode(st[n]), next);
    } catch (err) {
      if (!(err instanceof HashError)) throw err;
      next[n] = init(next);
    }
  }
  states[prefix] = next;
}

/** Whether a field's codec takes this value (whether it is in the field's range). */
function accepts(states, [prefix, name], value) {
  const section = STATE_SECTIONS.find((s) => s.prefix === prefix);
  try {
    section.fields.find(([n]) => n === name)[1].decode(String(value), states[prefix]);
    return true;
  } catch (err) {
    if (!(err instanceof HashError)) throw err;
    return false;
  }
}

/** The entry of an ascending list nearest `to` (the smaller one on a tie). */
const nearest = (list, to) => list.reduce((best, n) => (Math.abs(n - to) < Math.abs(best - to) ? n : best));

// ---------------------------------------------------------------------------
// Styles: one set of constructable stylesheets for every widget
// ---------------------------------------------------------------------------

const STYLE_FILES = ['lesson.css', 'breakit.css', 'attention-lab.css'];

/**
 * Where the stylesheets come from: the folder of this module, or CSS text
 * given directly (a bundle that inlines them).
 */
export const styleLocation = {
  /** @type {URL | string} the folder (a relative path is relative to the page) */
  base: new URL('./', import.meta.url),
  /** @type {Record<string, string>} file name -> CSS text */
  inline: {},
};

let sheetsPromise = null;

/**
 * The lesson's stylesheets, adapted to a shadow root:
 *  - rem means the page's root font size; inside the widget it means the
 *    widget's own base size (--al-rem), so a page with html { font-size: 10px }
 *    does not shrink the widget;
 *  - width media queries become container queries on the widget's box, so
 *    a widget in a narrow column gets the narrow layout.
 */
export function adaptCss(text) {
  return text
    .replace(/(-?\d*\.?\d+)rem\b/g, 'calc($1 * var(--al-rem))')
    .replace(/@media\s*\(\s*(max|min)-width\s*:\s*([\d.]+px)\s*\)/g, '@container ($1-width: $2)');
}

function loadSheets() {
  if (!sheetsPromise) {
    sheetsPromise = Promise.all(STYLE_FILES.map(async (file) => {
      let text = styleLocation.inline[file];
      if (text === undefined) {
        const url = new URL(file, new URL(styleLocation.base, document.baseURI)); // relative: to the page
        const response = await fetch(url);
        if (!response.ok) throw new Error(`cannot load ${url} (HTTP ${response.status})`);
        text = await response.text();
      }
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(adaptCss(text));
      return sheet;
    }));
    sheetsPromise.catch(() => { sheetsPromise = null; }); // a failed load may be retried
  }
  return sheetsPromise;
}

// ---------------------------------------------------------------------------
// The element
// ---------------------------------------------------------------------------

const PANELS = ['scores', 'weights', 'output', 'checks'];
// The inputs always show: show="inputs ..." is accepted, and changes nothing.
const ALWAYS_SHOWN = 'inputs';
// The size attributes, and the key of the field each sets in a preset (see sections/registry.js).
const SIZES = [['d-model', 'dModel'], ['heads', 'heads'], ['seq-len', 'seqLen']];
// Enumerated attributes (preset, editable, show, theme) are read in any case.
// editable: these words lock the widget, these leave it editable;
// anything else is named in the status line, and the widget stays editable.
const OFF = new Set(['false', 'off', 'no', '0']);
const ON = new Set(['', 'true', 'on', 'yes', '1']);
const THEMES = new Set(['light', 'dark', 'auto']);
const LOCKED = 'data-al-locked';
// The properties a page may set, in this order, before the element is defined (see #upgradeProperties).
const SETTABLE = ['preset', 'state', 'progressKey'];

/** The start of every widget's progress key (see defaultProgressKey). */
export const PROGRESS_KEY_PREFIX = 'attention-lab.widget.v1:';

// The break-it widgets drawn on this page, by the key of their progress
// record: two that share a key would overwrite each other's record.
const KEY_HOLDERS = new Map();

/**
 * Where a widget keeps its progress by default: one record per page path
 * and preset, so two courses (or two pages) that show the same card keep
 * separate outcomes, and a reload of the page finds its own.
 */
export function defaultProgressKey(presetName) {
  return `${PROGRESS_KEY_PREFIX}${globalThis.location?.pathname ?? ''}:${presetName}`;
}

// In Node (server-side rendering, a test runner) there is no HTMLElement:
// the module still loads, and defines nothing.
const ElementBase = globalThis.HTMLElement ?? class {};

export class AttentionLabElement extends ElementBase {
  static observedAttributes = ['preset', 'editable', 'heads', 'd-model', 'seq-len', 'show', 'state', 'theme', 'label'];

  #shadow;
  #container;   // .al-root: theme, show and lock classes live here
  #status;      // loading and configuration messages
  #body;        // the preset's blocks
  #states = defaultStates();
  #given = null;         // the state string the states come from (attribute or property), null for the defaults
  #overridesDue = true;  // heads / seq-len still to apply to #states
  #messages = { // what the status line says, by source
    state: [], stateSections: [], overrides: [], preset: [], show: [], showAbsent: [], theme: [], editable: [],
  };
  #warned = new Set(); // the messages already written to the console
  #preset = null;
  #section = null;
  #ctx = null;
  #lab = null;
  #booted = null;
  #failed = false;       // the last start failed: connecting again tries again
  #rendered = false;
  #observer = null;
  #darkQuery = null;
  #onDarkChange = () => this.#applyTheme();
  #resolveReady;
  #rejectReady;
  #record = null; // this widget's progress record (progress.js); its outcomes become attention-result events
  #recordKey = null; // the localStorage key it is kept under
  #progressKey = null; // the key a page set (see progressKey), or null for the default
  #heldKey = null; // the key this drawn break-it widget holds among the page's (see #holdKey)

  /**
   * The widget's progress record for `presetName`, made on first use and
   * kept in localStorage (progressKey), so that a reload shows a decided
   * card as decided and decides it no second time. A new preset or key
   * starts another. Each exercise outcome in it is dispatched as
   * attention-result.
   */
  #progress(presetName) {
    const key = this.#progressKey ?? defaultProgressKey(presetName);
    if (!this.#record || this.#recordKey !== key) {
      // Another record (a new key or preset): the cards start as given and
      // take what that record holds, not what the learner did under the last.
      if (this.#record) this.#states.brk = this.#givenStates().brk;
      this.#recordKey = key;
      this.#record = new Progress({ persist: true, key });
      this.#record.subscribe((event, progress) => {
        if (event.type !== 'exercise') return;
        const detail = { exercise: event.exercise, passed: event.passed, score: progress.score(), saved: progress.saved };
        this.dispatchEvent(new CustomEvent('attention-result', { detail, bubbles: true, composed: true }));
      });
    }
    return this.#record;
  }

  /**
   * The localStorage key of the widget's progress record: by default
   * "attention-lab.widget.v1:" + the page's path + ":" + the preset
   * (defaultProgressKey). A page may set its own (embed.html does); the
   * widget then draws again from the record kept under it.
   */
  get progressKey() {
    return this.#progressKey ?? defaultProgressKey(resolvePreset(this.getAttribute('preset'))?.name ?? this.preset);
  }

  set progressKey(key) {
    const next = key === null || key === undefined || key === '' ? null : String(key);
    if (next === this.#progressKey) return;
    this.#progressKey = next;
    if (this.#rendered) this.#render();
  }

  /**
   * Forget this widget's saved progress (its break-it cards' predictions and
   * outcomes) and draw it again from the start, as its attributes give it.
   * A card decided after this fires attention-result again.
   */
  resetProgress() {
    this.#record?.forget();
    if (!this.#record) {
      new Progress({ persist: true, key: this.progressKey }).forget();
    }
    this.#record = null;
    this.#states.brk = this.#givenStates().brk; // the cards as given, not as the learner left them
    if (this.#rendered) this.#render();
  }

  constructor() {
    super();
    this.#shadow = this.attachShadow({ mode: 'open' });
    this.#status = h('p', { class: 'al-status', part: 'status', role: 'status', text: 'Loading the attention core…' });
    this.#body = h('div', { class: 'al-body' });
    this.#container = h('div', { class: 'al-root', part: 'container', role: 'group' }, this.#status, this.#body);
    this.#shadow.append(this.#container);
    this.#newReady();
  }

  /** A new `ready`: settles after the first drawing (rejects if the core or the styles cannot be loaded). */
  #newReady() {
    this.ready = new Promise((resolve, reject) => { this.#resolveReady = resolve; this.#rejectReady = reject; });
    this.ready.catch(() => {});
  }

  // ---- lifecycle -----------------------------------------------------------

  connectedCallback() {
    this.#upgradeProperties();
    if (!this.#booted) this.#booted = this.#boot();
    this.#booted.then(() => {
      if (this.isConnected && !this.#rendered) this.#render();
    }, () => {});
    this.#applyLabel();
    this.#applyTheme();
    this.#applyShow();
    this.#applyEditable();
  }

  /**
   * Load the core and the stylesheets. They are asked for once the module
   * scripts being run have run (a microtask later): defining the element
   * connects the widgets already in the page at once, and a page's module
   * that imports this one may still set wasmLocation.base and
   * styleLocation.base in its body. After a failure, the next connection
   * tries again.
   */
  #boot() {
    if (this.#failed) {
      this.#failed = false;
      this.#newReady();
      this.#status.textContent = 'Loading the attention core…';
      this.#status.classList.remove('core-error');
    }
    // Both loads settle before a failure is reported, so that a retry starts
    // afresh from the bases set by then, and does not join a load still
    // running from the old ones.
    const booted = Promise.resolve().then(() => Promise.allSettled([loadAttention(), loadSheets()])).then((results) => {
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
      const [lab, sheets] = results.map((r) => r.value);
      this.#lab = lab;
      this.#shadow.adoptedStyleSheets = [paletteSheet(), ...sheets];
    });
    booted.catch((err) => {
      this.#booted = null;
      this.#failed = true;
      this.#status.textContent = `attention-lab could not start: ${err.message}.`;
      this.#status.classList.add('core-error');
      this.#rejectReady(err);
    });
    return booted;
  }

  /**
   * A property set on the element before it was defined is an own property
   * of the element, hiding the class's accessor: take it off, and set it
   * through the accessor. A value the setter refuses is reported as an
   * uncaught error would be.
   */
  #upgradeProperties() {
    for (const name of SETTABLE) {
      if (!Object.hasOwn(this, name)) continue;
      const value = this[name];
      delete this[name];
      try {
        this[name] = value;
      } catch (err) {
        reportError(err);
      }
    }
  }

  disconnectedCallback() {
    // Give back what this widget holds: its multi-head modules in the core's
    // memory, and its listeners. It draws itself again if it comes back.
    this.#dispose();
    this.#holdKey(null);
    this.#rendered = false;
    this.#darkQuery?.removeEventListener('change', this.#onDarkChange);
    this.#darkQuery = null;
    this.#observer?.disconnect();
    this.#observer = null;
  }

  attributeChangedCallback(name, oldValue, value) {
    if (oldValue === value) return;
    switch (name) {
      case 'state':
        this.#readStateAttribute();
        this.#overridesDue = true;
        if (this.#rendered) this.#remount();
        break;
      case 'heads':
      case 'd-model':
      case 'seq-len':
        // Removed: back to the state as given (attribute or property, as a new
        // state attribute does), and the size attributes left apply again.
        if (value === null) this.#states = this.#givenStates();
        this.#overridesDue = true;
        if (this.#rendered) this.#remount();
        break;
      case 'preset':
        this.#overridesDue = true;
        if (this.#rendered) this.#render();
        break;
      case 'show': this.#applyShow(); break;
      case 'theme': this.#applyTheme(); break;
      case 'editable': this.#applyEditable(); break;
      case 'label': this.#applyLabel(); break;
      default:
    }
  }

  // ---- public properties ---------------------------------------------------

  /** The current state, as the lesson page writes it in its URL hash. */
  get state() {
    return encodeHash(null, STATE_SECTIONS, this.#states);
  }

  /** Apply a state string. Throws an Error saying why when it is not valid; nothing changes then. */
  set state(text) {
    let states;
    try {
      states = decodeStates(text ?? '');
    } catch (err) {
      if (err instanceof HashError) throw new Error(`attention-lab: this state cannot be used (${err.message})`);
      throw err;
    }
    this.#states = states;
    this.#given = String(text ?? '');
    this.#overridesDue = false;
    this.#notice('state', '');
    if (this.#rendered) this.#remount();
  }

  get preset() {
    return this.getAttribute('preset') || DEFAULT_PRESET;
  }

  set preset(name) {
    this.setAttribute('preset', name);
  }

  // ---- drawing -------------------------------------------------------------

  #readStateAttribute() {
    const text = this.getAttribute('state');
    try {
      this.#states = text ? decodeStates(text) : defaultStates();
      this.#given = text;
      this.#notice('state', '');
    } catch (err) {
      if (!(err instanceof HashError)) throw err;
      this.#states = defaultStates();
      this.#given = null;
      this.#notice('state', `The state given to this widget could not be used (${err.message}), so it shows its defaults.`);
    }
  }

  /** The states of the last state string given (attribute or property), before any size attribute. */
  #givenStates() {
    return this.#given ? decodeStates(this.#given) : defaultStates();
  }

  /**
   * Set the messages from one source (none, or only '', clears them); the
   * status line shows them all. Each is also written to the console once, as
   * a warning, for an author looking at the page in the developer tools.
   */
  #notice(source, ...texts) {
    this.#messages[source] = texts.filter(Boolean);
    for (const text of this.#messages[source]) {
      if (this.#warned.has(text)) continue;
      this.#warned.add(text);
      console.warn(`<attention-lab>: ${text}`);
    }
    if (!this.#rendered) return; // "Loading…" stays until the first drawing
    const all = Object.values(this.#messages).flat().join(' ');
    this.#status.textContent = all;
    this.#status.hidden = all === '';
    this.#status.classList.toggle('core-error', all !== '');
  }

  /**
   * Fields of the state given for a section this preset does not show (nor
   * read) are kept in the state, but change nothing the widget shows: name
   * them. The page's open disclosures (ui.open) are kept silently.
   */
  #checkStateSections() {
    const used = [this.#section.prefix, ...(this.#section.dependsOn ?? [])];
    const unused = stateKeys(this.#given).filter((key) => {
      const prefix = key.split('.')[0];
      return !used.includes(prefix) && prefix !== DISCLOSURE_STATE.prefix;
    });
    // view= in a lesson link says which section the page scrolls to; a widget shows its preset.
    const view = stateKeys(this.#given, true).includes('view')
      ? `The state's view (the section a lesson link scrolls to) does not apply to a widget, which shows its preset "${this.#preset.name}", so it was ignored.` : '';
    this.#notice('stateSections', unused.length === 0 ? ''
      : `The state sets ${wordList(unused, 'and')}, which the preset "${this.#preset.name}" does not show, so ${unused.length > 1 ? 'they change' : 'it changes'} nothing here `
        + `(its state fields start with ${wordList(used.map((prefix) => `${prefix}.`), 'or')}).`, view);
  }

  /**
   * d-model, heads and seq-len, where the preset has such a field; a size the
   * preset has no field for is named in the status line, as is a value out
   * of range. Then d_model and the heads must split evenly (a widget never
   * opens on that error): see #splitHeads.
   */
  #applyOverrides() {
    if (!this.#overridesDue || !this.#preset) return;
    this.#overridesDue = false;
    const problems = [];
    const applied = new Set();
    for (const [attr, key] of SIZES) {
      const text = this.getAttribute(attr);
      if (text === null) continue;
      const field = this.#preset[key];
      if (!field) {
        problems.push(`${attr}="${text}" was ignored: ${attr} does not apply to the ${this.preset.trim().toLowerCase()} preset.`);
        continue;
      }
      try {
        setField(this.#states, field, text);
        applied.add(attr);
      } catch (err) {
        if (!(err instanceof HashError)) throw err;
        problems.push(`${attr}="${text}" was ignored: ${err.message}.`);
      }
    }
    if (this.#preset.dModel && this.#preset.heads) problems.push(this.#splitHeads(applied.has('d-model'), applied.has('heads')));
    this.#notice('overrides', ...problems);
  }

  /**
   * Make d_model split evenly over the heads, when it does not:
   *  - d-model given alone: the heads nearest the current count that split it
   *    (said in the status line: the widget would otherwise show another count);
   *  - heads given (alone or with d-model), or neither (a state string): the
   *    nearest d_model that the heads split. A d_model given too (as d-model,
   *    or in the state) is said not used.
   * Returns the message for the status line, or ''.
   */
  #splitHeads(dModelGiven, headsGiven) {
    const { dModel, heads } = this.#preset;
    const C = this.#states[dModel[0]][dModel[1]], H = this.#states[heads[0]][heads[1]];
    if (C % H === 0) return '';
    if (dModelGiven && !headsGiven) {
      const divisors = [];
      for (let n = 1; n <= C; n++) if (C % n === 0 && accepts(this.#states, heads, n)) divisors.push(n);
      const fit = nearest(divisors, H);
      setField(this.#states, heads, String(fit));
      return `d-model="${this.getAttribute('d-model')}" cannot be split evenly over the preset's ${H} heads, so heads = ${fit} was used `
        + `(with this d-model, heads may be ${wordList(divisors, 'or')}).`;
    }
    const multiples = [];
    for (let n = H; accepts(this.#states, dModel, n); n += H) multiples.push(n);
    const fit = nearest(multiples, C);
    setField(this.#states, dModel, String(fit));
    const dModelKey = dModel.join('.');
    const given = dModelGiven ? `d-model="${this.getAttribute('d-model')}"`
      : stateKeys(this.#given).includes(dModelKey) ? `${dModelKey}=${C} (from the state)` : null;
    if (!given) return ''; // the heads alone were given: d_model follows them, as documented
    const over = headsGiven ? `heads="${this.getAttribute('heads')}"` : `${H} heads`;
    return `${given} was not used: it cannot be split evenly over ${over}, so d-model = ${fit} was used.`;
  }

  /**
   * Hold `key` (a break-it widget's progress key; null for none) among the
   * page's widgets: while another drawn widget holds the same key, both say
   * so in their status lines, since each saves its whole record there.
   */
  #holdKey(key) {
    const tell = (holders) => {
      for (const widget of holders) {
        widget.#notice('sharedKey', holders.size > 1
          ? `Another attention-lab widget on this page keeps its progress under the same key ("${widget.#heldKey}"), and whichever saves last overwrites the other's record. Give each widget its own progressKey.`
          : '');
      }
    };
    if (this.#heldKey === key) return;
    const before = KEY_HOLDERS.get(this.#heldKey);
    if (before) {
      before.delete(this);
      this.#notice('sharedKey', '');
      if (before.size === 0) KEY_HOLDERS.delete(this.#heldKey);
      else tell(before);
    }
    this.#heldKey = key;
    if (key === null) return;
    if (!KEY_HOLDERS.has(key)) KEY_HOLDERS.set(key, new Set());
    KEY_HOLDERS.get(key).add(this);
    tell(KEY_HOLDERS.get(key));
  }

  /** Build the preset's blocks and draw the section into them. */
  #render() {
    this.#dispose();
    this.#rendered = true;
    const preset = resolvePreset(this.getAttribute('preset'));
    if (!preset) {
      this.#holdKey(null);
      this.#preset = null;
      this.#section = null;
      this.#applyLabel(); // the group keeps a name (its label, or a generic one), not the last preset's
      this.#body.replaceChildren();
      this.#notice('overrides'); // the sizes and the state's sections are checked against a known preset only
      this.#notice('stateSections');
      this.#notice('preset', `Unknown preset "${this.getAttribute('preset')}". Use one of: ${PRESET_HINT}.`);
      this.#resolveReady();
      return;
    }
    this.#notice('preset', '');
    this.#preset = preset;
    this.#applyLabel();
    this.#holdKey(preset.section === 'break-it' ? this.progressKey : null);
    const def = SECTIONS.find((s) => s.id === preset.section);
    const section = instantiateSection(def, {
      persist: false, compact: true, only: preset.bug ? [preset.bug] : null, progress: this.#progress(preset.name),
    });
    this.#section = section;
    this.#body.replaceChildren(h('div', { id: section.id, class: 'al-section' }, ...preset.blocks.map(buildBlock)));
    this.#ctx = createLessonContext({
      root: this.#shadow,
      lab: this.#lab,
      sections: [section],
      // Notes on the author's attributes and state describe the opening
      // values: once the learner edits, they would contradict what is shown.
      onCommit: () => {
        this.#notice('overrides');
        this.#notice('state');
        this.#changed();
      },
    });
    this.#remount();
    this.#resolveReady();
  }

  /** Mount the section again from #states (after a new state, heads or seq-len). */
  #remount() {
    if (!this.#preset) return;
    this.#checkStateSections();
    this.#applyOverrides();
    this.#dispose();
    this.#ctx.states = this.#states;
    this.#ctx.mountAll();
    markScrollBoxes([this.#body], { watch: true });
    this.#applyShow(); // which panels are drawn is known now
    this.#changed();
  }

  /** Free what the mounted section holds in the core (its multi-head modules). */
  #dispose() {
    if (this.#section && Object.hasOwn(this.#section, 'mha')) this.#section.mha.free();
  }

  #changed() {
    this.#lockControls();
    const result = (this.#preset.result && this.#ctx.results[this.#preset.result]) || {};
    this.dispatchEvent(new CustomEvent('attention-change', {
      bubbles: true,
      composed: true,
      detail: {
        preset: this.#preset.name,
        state: this.state,
        weights: result.weights ?? null,
        output: result.output ?? null,
        scores: result.scores ?? null,
      },
    }));
  }

  // ---- presentation attributes ----------------------------------------------

  #applyLabel() {
    const label = this.getAttribute('label');
    const title = this.#preset ? this.#preset.title : 'attention lesson';
    this.#container.setAttribute('aria-label', label || `attention-lab: ${title}`);
  }

  #applyShow() {
    const text = this.getAttribute('show');
    const words = (text || '').toLowerCase().split(/[\s,]+/).filter((p) => p && p !== ALWAYS_SHOWN);
    const unknown = words.filter((p) => !PANELS.includes(p));
    this.#notice('show', unknown.length === 0 ? ''
      : `show="${text}": ${unknown.map((p) => `"${p}"`).join(', ')} ${unknown.length > 1 ? 'are not panels' : 'is not a panel'} (use ${PANELS.join(', ')}), so ${unknown.length > 1 ? 'they were' : 'it was'} ignored.`);
    const asked = new Set(words.filter((p) => PANELS.includes(p)));
    for (const panel of PANELS) this.#container.classList.toggle(`al-hide-${panel}`, asked.size > 0 && !asked.has(panel));
    // A panel asked for that this preset does not draw (once it is drawn) shows nothing:
    // say so, and which of the panels asked for are shown.
    const drawn = this.#preset ? PANELS.filter((p) => this.#body.querySelector(`[data-panel="${p}"]`)) : PANELS;
    const absent = [...asked].filter((p) => !drawn.includes(p));
    const shown = [...asked].filter((p) => drawn.includes(p));
    this.#notice('showAbsent', absent.length === 0 ? ''
      : `show="${text}": the preset "${this.#preset.name}" has no ${absent.join(' or ')} panel (it has ${drawn.join(', ') || 'only its inputs'}), `
        + (shown.length > 0 ? `so it shows only its ${wordList(shown, 'and')} ${shown.length > 1 ? 'panels' : 'panel'}.` : 'so it shows none of its panels.'));
  }

  #applyTheme() {
    const text = this.getAttribute('theme');
    const value = (text ?? '').trim().toLowerCase();
    const theme = THEMES.has(value) ? value : 'light';
    this.#notice('theme', text === null || theme === value ? '' : `theme="${text}" was ignored: light, dark or auto was expected.`);
    if (theme === 'auto' && this.isConnected && !this.#darkQuery && typeof matchMedia === 'function') {
      this.#darkQuery = matchMedia('(prefers-color-scheme: dark)');
      this.#darkQuery.addEventListener('change', this.#onDarkChange);
    } else if (theme !== 'auto' && this.#darkQuery) {
      this.#darkQuery.removeEventListener('change', this.#onDarkChange);
      this.#darkQuery = null;
    }
    const dark = theme === 'dark' || (theme === 'auto' && Boolean(this.#darkQuery?.matches));
    this.#container.classList.toggle('al-dark', dark);
  }

  get #editable() {
    const value = this.getAttribute('editable');
    return value === null || !OFF.has(value.trim().toLowerCase());
  }

  #applyEditable() {
    const text = this.getAttribute('editable');
    const known = text === null || OFF.has(text.trim().toLowerCase()) || ON.has(text.trim().toLowerCase());
    this.#notice('editable', known ? '' : `editable="${text}" was ignored: true or false was expected.`);
    if (!this.#editable && !this.#observer && this.isConnected) {
      // Sections redraw their controls (a mask grid after a click, a card after
      // a change): lock whatever appears.
      this.#observer = new MutationObserver(() => this.#lockControls());
      this.#observer.observe(this.#body, { childList: true, subtree: true });
    } else if (this.#editable && this.#observer) {
      this.#observer.disconnect();
      this.#observer = null;
    }
    this.#container.classList.toggle('al-readonly', !this.#editable);
    this.#lockControls();
  }

  /** Read-only: text fields become readonly (still focusable and read out), other controls disabled. */
  #lockControls() {
    const lock = !this.#editable;
    for (const control of this.#body.querySelectorAll('input, select, button, textarea')) {
      const text = control.tagName === 'INPUT' && (control.type === 'text' || control.type === 'number');
      if (lock && !control.hasAttribute(LOCKED)) {
        control.setAttribute(LOCKED, '');
        if (text) control.readOnly = true;
        else control.disabled = true;
      } else if (!lock && control.hasAttribute(LOCKED)) {
        control.removeAttribute(LOCKED);
        if (text) control.readOnly = false;
        else control.disabled = false;
      }
    }
  }
}

/** One block of a preset's layout. */
function buildBlock(block) {
  if (block.unused) return h('div', { class: 'al-unused', hidden: true }, ...block.unused.map(buildBlock));
  if (block.group !== undefined) return h('div', { class: block.group || null }, ...block.children.map(buildBlock));
  if (block.details) {
    return h('details', { class: 'more', 'data-panel': block.panel }, h('summary', { text: block.details }), ...block.children.map(buildBlock));
  }
  const parts = ['panel', block.panel].filter(Boolean).join(' ');
  const node = h('div', { class: block.cls || null, 'data-slot': block.slot, 'data-panel': block.panel, part: block.panel ? parts : null });
  if (!block.label) return node;
  return h('div', { 'data-panel': block.panel }, h('p', { class: 'al-label', text: block.label }), node);
}

if (globalThis.customElements && !customElements.get('attention-lab')) customElements.define('attention-lab', AttentionLabElement);
