/**
 * embed.js: one <attention-lab> widget in an iframe (embed.html).
 *
 *   <iframe src="embed.html?preset=causal&show=weights" title="..."></iframe>
 *
 * The query string takes the element's attributes: preset, editable, heads,
 * d-model, seq-len, show, state, theme, label. Each is handed to the element
 * as text; the element checks it. The same options after "#" work too
 * (embed.html#preset=causal); an option in both places is taken from the
 * query string.
 *
 * The state is the lesson page's URL-hash text, whose fields are joined with
 * "&": written as it is (state=mha.heads=2&mha.dmodel=8), its fields after
 * the first arrive as options of their own. So every option named like a
 * state field (prefix.field, or view) is part of the state too; the state
 * may also be percent-encoded (state=mha.heads%3D2%26mha.dmodel%3D8).
 * Any other option is named in the status line above the widget (and in
 * the console), and ignored.
 *
 * Messages to the parent page (postMessage):
 *   { type: 'attention-lab:resize', height }   whenever the content height changes
 *   { subject: 'lti.frameResize', height }     the same, in Canvas's form
 *   { type: 'attention-lab:result', exercise, passed, saved }   each exercise
 *       outcome; saved: whether it is kept in this frame's localStorage
 *       (then a reload of the frame shows the card decided, and posts no
 *       second result for it)
 * They go to any parent, or only to `origin` when the options name one
 * (embed.html?origin=https://lms.example.edu&preset=...). An origin that is
 * not one (no scheme, as in origin=lms.example.edu) is named in the status
 * line, and then nothing is posted at all: the page was asked to restrict
 * its messages, and cannot tell to what.
 *
 * This page listens to no message at all: nothing the parent (or any other
 * window) posts can change it.
 */
import './attention-lab.js';
import { STATE_KEY, MAX_HASH_LENGTH } from './lesson-state.js';

const OPTIONS = ['preset', 'editable', 'heads', 'd-model', 'seq-len', 'show', 'state', 'theme', 'label'];
const ORIGIN = 'origin'; // read by this page itself (see targetOrigin)
/** A key of a state string: view, or prefix.field (a bare word other than view is an option). */
const isStateField = (name) => name === 'view' || (name.includes('.') && STATE_KEY.test(name));
const MAX_OPTION_LENGTH = MAX_HASH_LENGTH; // the lesson's own limit for a state string

const query = new URLSearchParams(location.search);
const hash = new URLSearchParams(location.hash.slice(1));
/** An option's text: from the query string, else from the hash, else null. */
const option = (name) => query.get(name) ?? hash.get(name);
const names = [...new Set([...query.keys(), ...hash.keys()])];

/** The state option, with the state fields given as options of their own after it; null if none. */
function stateText() {
  const fields = names.filter(isStateField).map((name) => `${name}=${encodeURIComponent(option(name))}`);
  const given = option('state');
  if (given === null && fields.length === 0) return null;
  return [given, ...fields].filter(Boolean).join('&');
}

const problems = [];
const widget = document.createElement('attention-lab');
for (const name of OPTIONS) {
  const value = name === 'state' ? stateText() : option(name);
  if (value === null) continue;
  if (value.length > MAX_OPTION_LENGTH) problems.push(`the option ${name} is longer than ${MAX_OPTION_LENGTH} characters, so it was ignored.`);
  else widget.setAttribute(name, value);
}
// The widget's progress (its break-it cards' outcomes) is kept under a key
// made of this page's path and its options, sorted, so that a reload of the
// same frame finds its cards decided, and frames with other options (another
// card, another course's origin) keep their own.
widget.progressKey = `attention-lab.embed.v1:${location.pathname}?${[...names].sort()
  .map((name) => `${encodeURIComponent(name)}=${encodeURIComponent(option(name))}`).join('&')}`;
const unknown = names.filter((name) => !OPTIONS.includes(name) && name !== ORIGIN && !isStateField(name));
if (unknown.length > 0) {
  problems.push(`${unknown.map((name) => `"${name}"`).join(', ')} ${unknown.length > 1 ? 'are not options' : 'is not an option'} of this page, `
    + `so ${unknown.length > 1 ? 'they were' : 'it was'} ignored (use ${[...OPTIONS, ORIGIN].join(', ')}, or the fields of a state such as mha.heads).`);
}

/**
 * Where the messages go: the origin the options name, '*' (any parent) when
 * they name none, or null (post nothing) when what they name is not an
 * origin, which is then added to the problems.
 */
function targetOrigin() {
  const given = option(ORIGIN);
  if (given === null) return '*';
  let origin = 'null';
  try {
    origin = new URL(given).origin;
  } catch {
    // not a URL at all (no scheme): not an origin either
  }
  if (origin !== 'null') return origin;
  problems.push(`the option origin="${given}" is not an origin (write one as https://lms.example.edu: a scheme, a host, and a port if any), `
    + 'so no message is posted to the parent page.');
  return null;
}
const target = targetOrigin();

if (problems.length > 0) {
  const status = document.getElementById('embed-status');
  status.textContent = `embed.html: ${problems.join(' ')}`;
  status.hidden = false;
  for (const problem of problems) console.warn(`embed.html: ${problem}`);
}

/** Post to the parent page (any parent when no origin was given: the messages hold no secrets). */
function post(message) {
  if (target !== null && window.parent !== window) window.parent.postMessage(message, target);
}

let lastHeight = -1;
function reportHeight() {
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  if (height === lastHeight) return;
  lastHeight = height;
  post({ type: 'attention-lab:resize', height });
  post({ subject: 'lti.frameResize', height });
}

widget.addEventListener('attention-result', (event) => {
  const { exercise, passed, saved } = event.detail;
  post({ type: 'attention-lab:result', exercise: String(exercise), passed: passed === true, saved: saved === true });
});

// The frame's <main> is named as the widget is, so that two frames of a
// course page (and the page's own <main>) are told apart as landmarks.
const main = document.getElementById('embed');
main.append(widget);
widget.ready.then(() => {
  const name = widget.shadowRoot?.querySelector('[part~="container"]')?.getAttribute('aria-label');
  if (name) main.setAttribute('aria-label', name);
}, () => {}); // a widget that fails to start says so itself
new ResizeObserver(reportHeight).observe(document.documentElement);
