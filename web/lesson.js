// The lesson page's entry point: loads the wasm attention core, builds the
// live parts of every section, and keeps the whole state in the URL hash.
//
// Each section is an object (see lesson-basics.js, lesson-heads.js,
// lesson-masks.js) with:
//   id        the <section id> in index.html; its live parts go into
//             elements marked data-slot="..." inside it
//   prefix    the section's prefix in the URL hash ("ex" in "ex.q=...")
//   fields    [name, codec, init(state)] in order; init gives the default
//   dependsOn prefixes of other sections whose state this one reads
//   mount(ctx, state)          build controls from the state
//   update(ctx, state, detail) ask the core and redraw the results
// Sections find their elements through ctx (ctx.slot, ctx.node), never in
// `document` directly: lesson-context.js builds ctx for a root, which is the
// document here and a shadow root in the <attention-lab> element.
//
// The "Break it" section and the quiz plug in the same way: their <section>
// has a data-module attribute naming a module listed in PLUGINS below
// (data-module="breakit.js", "quiz.js") that exports either `section` or
// `makeSection({ HashError })`. Without the attribute (or without the
// section) nothing is loaded.

import { loadAttention } from './attention.js';
import { decodeHash, encodeHash, defaultSectionState, codec, HashError } from './lesson-state.js';
import { LESSON_SECTIONS, createLessonContext, instantiateSection, markScrollBoxes } from './lesson-context.js';

/** Modules a section may name in data-module. Literal imports, so that a bundler can inline them. */
const PLUGINS = {
  'breakit.js': () => import('./breakit.js'),
  'quiz.js': () => import('./quiz.js'),
};

/**
 * Open disclosures (the quiz answers, the warm-up, the long output table) are
 * part of the state too: one 0/1 per <details> in the lesson, in page order.
 */
const DISCLOSURES = [...document.querySelectorAll('main details')];
const disclosures = {
  id: 'lesson',
  prefix: 'ui',
  title: 'the open answers',
  fields: [['open', codec.bits(() => 1, () => DISCLOSURES.length), () => [new Array(DISCLOSURES.length).fill(false)]]],
  mount(ctx, st) {
    DISCLOSURES.forEach((details, i) => {
      details.open = Boolean(st.open[0][i]);
      if (details.dataset.bound) return;
      details.dataset.bound = '1';
      details.addEventListener('toggle', () => {
        const current = ctx.states.ui.open[0];
        if (current[i] === details.open) return;
        current[i] = details.open;
        ctx.commit('ui');
      });
    });
  },
  update() {},
};

const SECTIONS = [...LESSON_SECTIONS.map(instantiateSection), disclosures];

const notice = document.getElementById('notice');
const bootStatus = document.getElementById('boot-status');

function showNotice(text) {
  notice.querySelector('[data-notice-text]').textContent = text;
  notice.hidden = false;
}
notice.querySelector('button').addEventListener('click', () => { notice.hidden = true; });

// ---------------------------------------------------------------------------
// Start-up
// ---------------------------------------------------------------------------

async function main() {
  for (const node of document.querySelectorAll('main > section[data-module]')) {
    if (!Object.hasOwn(PLUGINS, node.dataset.module)) continue;
    const mod = await PLUGINS[node.dataset.module]();
    const section = mod.section || (mod.makeSection && mod.makeSection({ HashError }));
    if (section) SECTIONS.push(section);
  }
  const navLinks = [...document.querySelectorAll('nav.toc a[href^="#"]')];
  const present = SECTIONS.filter((section) => document.getElementById(section.id));
  const viewIds = [...document.querySelectorAll('main > section[id]')].map((node) => node.id);

  let lab;
  try {
    lab = await loadAttention();
  } catch (err) {
    bootStatus.textContent = `The attention core could not be loaded (${err.message}). Build it with "bash build.sh", then reload.`;
    bootStatus.classList.add('core-error');
    return;
  }

  const lessonMain = document.querySelector('main');
  const ctx = createLessonContext({
    root: document,
    lab,
    sections: present,
    onCommit: () => writeHash(),
  });

  let resizePending = false;
  window.addEventListener('resize', () => {
    if (resizePending) return;
    resizePending = true;
    requestAnimationFrame(() => { resizePending = false; markScrollBoxes([lessonMain]); });
  });

  function writeHash() {
    const text = encodeHash(ctx.view, present, ctx.states);
    const url = `${location.pathname}${location.search}${text ? `#${text}` : ''}`;
    if (`${location.pathname}${location.search}${location.hash}` !== url) history.replaceState(null, '', url);
  }

  function readHash() {
    try {
      return decodeHash(location.hash.replace(/^#/, ''), present, viewIds);
    } catch (err) {
      if (!(err instanceof HashError)) throw err;
      showNotice(`The state in this link could not be used (${err.message}), so it was ignored and the page shows its defaults.`);
      return null;
    }
  }

  function applyState(decoded) {
    ctx.view = decoded ? decoded.view : null;
    // Every known section gets a state, shown or not: a section may read another's
    // (masks reads the 3×3 example's), and a package may leave that one out.
    for (const section of SECTIONS) {
      ctx.states[section.prefix] = (decoded && decoded.sections[section.prefix]) || defaultSectionState(section);
    }
    ctx.mountAll();
    markNav();
  }

  const decoded = readHash();
  applyState(decoded);
  writeHash();
  markScrollBoxes([lessonMain]);

  bootStatus.textContent = `Computed live by the attention core (${lab.simd ? 'WebAssembly SIMD' : 'WebAssembly, scalar'} build).`;
  document.getElementById('engine').textContent = lab.simd ? 'WebAssembly SIMD128 build' : 'scalar WebAssembly build';

  // -------------------------------------------------------------------------
  // The section in view is part of the state
  // -------------------------------------------------------------------------

  function markNav() {
    for (const a of navLinks) {
      if (a.getAttribute('href') === `#${ctx.view}`) a.setAttribute('aria-current', 'true');
      else a.removeAttribute('aria-current');
    }
  }

  function scrollToView() {
    const target = ctx.view && document.getElementById(ctx.view);
    if (target) target.scrollIntoView({ block: 'start' });
  }

  function sectionInView() {
    const line = window.innerHeight * 0.3;
    const atBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 2;
    if (atBottom && ctx.view) {
      const current = document.getElementById(ctx.view);
      if (current && current.getBoundingClientRect().bottom > 0) return ctx.view;
    }
    let found = null;
    for (const id of viewIds) {
      const node = document.getElementById(id);
      if (node.getBoundingClientRect().top <= line && node.offsetHeight > 0) found = id;
    }
    return found;
  }

  let scrollPending = false;
  window.addEventListener('scroll', () => {
    if (scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(() => {
      scrollPending = false;
      const view = sectionInView();
      if (view !== ctx.view) {
        ctx.view = view;
        markNav();
        writeHash();
      }
    });
  }, { passive: true });

  for (const a of [...navLinks, ...document.querySelectorAll('a.skip')]) {
    a.addEventListener('click', (event) => {
      event.preventDefault();
      const id = a.getAttribute('href').slice(1);
      const target = document.getElementById(id);
      if (!target) return;
      target.scrollIntoView({ block: 'start' });
      const heading = target.querySelector('h2');
      if (heading) heading.focus({ preventScroll: true });
      ctx.view = id;
      markNav();
      writeHash();
    });
  }

  // Someone edits the address bar or goes back: take the new state if it is valid.
  window.addEventListener('hashchange', () => {
    const next = readHash();
    if (!next) { writeHash(); return; }
    if (next.anchorOnly) {
      // A plain in-page link such as "#masks": move there, keep everything else.
      ctx.view = next.view;
      markNav();
      writeHash();
      return;
    }
    applyState(next);
    writeHash();
    markScrollBoxes([lessonMain]);
    scrollToView();
  });

  scrollToView();
  document.documentElement.dataset.ready = 'true';
}

main().catch((err) => {
  bootStatus.textContent = `Something went wrong while building the page: ${err.message}`;
  bootStatus.classList.add('core-error');
  throw err;
});
