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
 * Messages to the parent page (postMessage):
 *   { type: 'attention-lab:resize', height }   whenever the content height changes
 *   { subject: 'lti.frameResize', height }     the same, in Canvas's form
 *   { type: 'attention-lab:result', exercise, passed }   each exercise outcome
 * They go to any parent, or only to `origin` when the options name one
 * (embed.html?origin=https://lms.example.edu&preset=...).
 *
 * This page listens to no message at all: nothing the parent (or any other
 * window) posts can change it.
 */
import './attention-lab.js';

const OPTIONS = ['preset', 'editable', 'heads', 'd-model', 'seq-len', 'show', 'state', 'theme', 'label'];
const MAX_OPTION_LENGTH = 8000; // the lesson's own limit for a state string

const query = new URLSearchParams(location.search);
const hash = new URLSearchParams(location.hash.slice(1));
/** An option's text: from the query string, else from the hash, else null. */
const option = (name) => query.get(name) ?? hash.get(name);

const widget = document.createElement('attention-lab');
for (const name of OPTIONS) {
  const value = option(name);
  if (value !== null && value.length <= MAX_OPTION_LENGTH) widget.setAttribute(name, value);
}

/** The parent's origin if the page was told it, otherwise any ('*'): the messages hold no secrets. */
function targetOrigin() {
  const given = option('origin');
  if (!given) return '*';
  try {
    const { origin } = new URL(given);
    return origin === 'null' ? '*' : origin;
  } catch {
    return '*';
  }
}
const target = targetOrigin();

function post(message) {
  if (window.parent !== window) window.parent.postMessage(message, target);
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
  const { exercise, passed } = event.detail;
  post({ type: 'attention-lab:result', exercise: String(exercise), passed: passed === true });
});

document.getElementById('embed').append(widget);
new ResizeObserver(reportHeight).observe(document.documentElement);
