// The lesson page's entry point: builds the sections listed in
// sections/registry.js, loads the wasm attention core, draws every section
// and keeps the whole state in the URL hash (lesson-page.js).

import { loadAttention } from './attention.js';
import { paletteSheet } from './palette.js';
import { createLessonContext } from './lesson-context.js';
import { SECTIONS, instantiateSection, sectionName } from './sections/registry.js';
import { renderLesson, hashState, viewTracking, pageSections } from './lesson-page.js';
import { defaultSectionState } from './lesson-state.js';
import { disclosureSection } from './lesson-disclosures.js';

const bootStatus = document.getElementById('boot-status');
const notice = document.getElementById('notice');

let noticeView = null; // the section named by the link that raised the notice, if any
function showNotice(text, view = null) {
  noticeView = view;
  notice.querySelector('[data-notice-text]').textContent = text;
  notice.hidden = false;
}
/**
 * Hide the notice. Focus inside it moves on to the lesson, to the heading of
 * the section the link named (reaching the notice scrolled the page to its
 * top), else of the section in view (the table of contents marks it), else
 * of the first one, instead of falling back to the top of the page.
 */
function dismissNotice() {
  const hadFocus = notice.contains(document.activeElement);
  notice.hidden = true;
  if (!hadFocus) return;
  const current = noticeView ? `#${noticeView}` : document.querySelector('nav.toc a[aria-current]')?.getAttribute('href');
  const heading = (current && document.querySelector(`${current} > h2`)) || document.querySelector('main h2');
  heading?.focus();
}
notice.querySelector('button').addEventListener('click', dismissNotice);
notice.addEventListener('keydown', (event) => { if (event.key === 'Escape') dismissNotice(); });

async function main() {
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, paletteSheet()];
  renderLesson(document);
  let lab;
  try {
    lab = await loadAttention();
  } catch (err) {
    bootStatus.textContent = `The attention core could not be loaded (${err.message}). Build it with "bash build.sh", then reload.`;
    bootStatus.classList.add('core-error');
    return;
  }
  const shown = pageSections(document);
  const sections = [...shown.filter((def) => def.fields || def.create).map((def) => instantiateSection(def)), disclosureSection(document)];
  const ctx = createLessonContext({ root: document, lab, sections, onCommit: () => hash.write(), nameOf: sectionName });
  // A section may read another's state (masks reads the 3×3 example's), and a
  // package may leave that one out: it then keeps its defaults.
  for (const def of SECTIONS) if (def.fields && !shown.includes(def)) ctx.states[def.prefix] = defaultSectionState(def);
  const view = viewTracking({ ctx, onChange: () => hash.write(), onStep: () => hash.step() });
  const hash = hashState({
    ctx, sections, showNotice,
    onApplied: ({ scroll = false, focus = false } = {}) => {
      view.mark();
      if (scroll) view.scrollToView();
      else if (focus) view.focusView();
    },
  });

  bootStatus.textContent = `Computed live by the attention core (${lab.simd ? 'WebAssembly SIMD128' : 'scalar WebAssembly'} build).`;
  document.getElementById('engine').textContent = lab.simd ? 'WebAssembly SIMD128 build' : 'scalar WebAssembly build';
  view.scrollToView();
  document.documentElement.dataset.ready = 'true';
}

main().catch((err) => {
  bootStatus.textContent = `Something went wrong while building the page: ${err.message}`;
  bootStatus.classList.add('core-error');
  throw err;
});
