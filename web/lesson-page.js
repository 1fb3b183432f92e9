// The lesson page's frame around the sections: building them from the
// registry, the state in the URL hash, and the section in view.
// lesson.js puts these together.

import { readHash, encodeHash, defaultSectionState, HashError } from './lesson-state.js';
import { markScrollBoxes } from './lesson-context.js';
import { SECTIONS, VIEW_IDS, sectionNumber } from './sections/registry.js';
import { sectionElement, tocItem } from './sections/markup.js';

/**
 * The sections this page shows, in registry order: all of them, or those a
 * package lists in <main data-sections="masks,quiz"> (see dist.mjs).
 */
export function pageSections(doc) {
  const listed = doc.querySelector('main')?.dataset.sections;
  return listed ? SECTIONS.filter((def) => listed.split(',').includes(def.id)) : SECTIONS;
}

/**
 * Build the page's sections (pageSections) into <main>, and the table of
 * contents. Each entry shows its section's own number, as its heading does
 * (a page holding some sections keeps the lesson's numbers), and an
 * unnumbered section none; the list draws no numbers of its own.
 */
export function renderLesson(doc) {
  const shown = pageSections(doc);
  doc.querySelector('main').replaceChildren(...shown.map((def) => sectionElement(def, sectionNumber(def.id))));
  doc.querySelector('nav.toc ol').replaceChildren(...shown.map((def) => tocItem(def, sectionNumber(def.id))));
}

/**
 * Keep the state in the URL hash: read it at start and when the address bar
 * changes, write it after every change. The parts of a hash that cannot be
 * used are named through showNotice; a link opened at start still applies
 * its other parts, a hash typed into a page in use only moves to its section.
 *
 * Writing the address bar is slow (several ms) and rate-limited by browsers,
 * so changes are written once they pause (HASH_DELAY ms), after the edit's
 * frame is on screen, and at once when the page is left. Edits and scrolling
 * replace the current history entry; following a link of the contents adds
 * one (step), so Back and Forward move between the sections visited. Each
 * entry records its section in view ({ lessonView }): going back to it
 * returns there and keeps the values as they are now.
 */
const HASH_DELAY = 120;
/** At most this many problems of one link are listed in the notice. */
const PROBLEMS_SHOWN = 3;

/** The notice for a link whose parts listed in `problems` were left out; `rest` says what happened to the others. */
function problemsNotice(problems, rest) {
  const more = problems.length - PROBLEMS_SHOWN;
  const listed = problems.slice(0, PROBLEMS_SHOWN).join('; ') + (more > 0 ? `; and ${more} more` : '');
  return `Part of this link could not be used: ${listed}. ${rest}`;
}

export function hashState({ ctx, sections, showNotice, onApplied }) {
  const lessonMain = document.querySelector('main');
  let timer = null;
  const stateUrl = () => {
    const text = encodeHash(ctx.view, sections, ctx.states);
    return `${location.pathname}${location.search}${text ? `#${text}` : ''}`;
  };
  const isEntry = (state) => state !== null && typeof state === 'object' && 'lessonView' in state;
  const writeNow = () => {
    clearTimeout(timer);
    timer = null;
    const url = stateUrl();
    const changed = `${location.pathname}${location.search}${location.hash}` !== url;
    if (changed || !isEntry(history.state) || history.state.lessonView !== ctx.view) history.replaceState({ lessonView: ctx.view }, '', url);
  };
  const write = () => {
    clearTimeout(timer);
    timer = setTimeout(writeNow, HASH_DELAY);
  };
  /** A new history entry for the section now in view; the entry left keeps the section it had. */
  const step = () => {
    clearTimeout(timer);
    timer = null;
    const url = stateUrl();
    if (`${location.pathname}${location.search}${location.hash}` === url) writeNow();
    else history.pushState({ lessonView: ctx.view }, '', url);
  };
  window.addEventListener('pagehide', () => { if (timer !== null) writeNow(); });
  /** The hash read (readHash), or null when it is refused whole (the notice says why and what stays: `kept`). */
  const read = (kept) => {
    try {
      return readHash(location.hash.replace(/^#/, ''), sections, VIEW_IDS);
    } catch (err) {
      if (!(err instanceof HashError)) throw err;
      showNotice(`The state in this link could not be used (${err.message}), so it was ignored and ${kept}.`);
      return null;
    }
  };
  const apply = (decoded) => {
    ctx.view = decoded ? decoded.view : null;
    for (const section of sections) {
      ctx.states[section.prefix] = (decoded && decoded.sections[section.prefix]) || defaultSectionState(section);
    }
    ctx.mountAll();
    markScrollBoxes([lessonMain], { watch: true });
    onApplied();
  };
  const opened = read('the page shows its defaults');
  apply(opened);
  if (opened && opened.problems.length > 0) {
    const used = opened.view !== null || Object.keys(opened.sections).length > 0;
    showNotice(problemsNotice(opened.problems, used ? 'The rest of the link was applied.' : 'The page shows its defaults.'), opened.view);
  }
  writeNow();

  // Back or Forward to an entry this page wrote: its section is the one in
  // view again. The browser puts back the scroll position the entry had.
  window.addEventListener('popstate', (event) => {
    if (!isEntry(event.state)) return; // a new address: hashchange reads it
    clearTimeout(timer);
    ctx.view = event.state.lessonView;
    onApplied({ focus: true });
    writeNow();
  });

  // Someone edits the address bar: take the new state if it is valid.
  window.addEventListener('hashchange', () => {
    if (isEntry(history.state)) return; // Back or Forward, handled by popstate
    clearTimeout(timer); // a change typed into the address bar wins over one not yet written
    const next = read('the page keeps its current values');
    if (next && next.anchorOnly) {
      // A plain in-page link such as "#masks": move there, keep everything else.
      ctx.view = next.view;
      onApplied({ scroll: false });
    } else if (next && next.problems.length > 0) {
      // Some parts cannot be used: the values in use stay; the section named is shown.
      showNotice(problemsNotice(next.problems, 'The page keeps its current values.'), next.view);
      if (next.view) {
        ctx.view = next.view;
        onApplied({ scroll: true });
      }
    } else if (next) {
      apply(next);
      onApplied({ scroll: true });
    }
    writeNow();
  });
  return { write, step };
}

/**
 * The section in view is part of the state: the table of contents marks it,
 * scrolling changes it (onChange), and its links move to it (onStep: a step
 * in the browser's history).
 */
export function viewTracking({ ctx, onChange, onStep }) {
  const navLinks = [...document.querySelectorAll('nav.toc a[href^="#"]')];
  const mark = () => {
    for (const a of navLinks) {
      if (a.getAttribute('href') === `#${ctx.view}`) a.setAttribute('aria-current', 'true');
      else a.removeAttribute('aria-current');
    }
  };
  // As a table-of-contents link does, the section's heading takes the
  // focus too: the next Tab goes on inside the section, not from the top.
  // No focus ring is drawn for it: the learner did not move the focus.
  const focusView = () => {
    const target = ctx.view && document.getElementById(ctx.view);
    target?.querySelector('h2')?.focus({ preventScroll: true, focusVisible: false });
  };
  const scrollToView = () => {
    const target = ctx.view && document.getElementById(ctx.view);
    if (!target) return;
    target.scrollIntoView({ block: 'start' });
    focusView();
  };
  const inView = () => {
    const line = window.innerHeight * 0.3;
    const atBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 2;
    if (atBottom && ctx.view) {
      const current = document.getElementById(ctx.view);
      if (current && current.getBoundingClientRect().bottom > 0) return ctx.view;
    }
    let found = null;
    for (const id of VIEW_IDS) {
      const node = document.getElementById(id);
      if (node && node.getBoundingClientRect().top <= line && node.offsetHeight > 0) found = id;
    }
    return found;
  };

  let scrollPending = false;
  window.addEventListener('scroll', () => {
    if (scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(() => {
      scrollPending = false;
      const view = inView();
      if (view !== ctx.view) {
        ctx.view = view;
        mark();
        onChange();
      }
    });
  }, { passive: true });

  for (const a of [...navLinks, ...document.querySelectorAll('a.skip')]) {
    a.addEventListener('click', (event) => {
      event.preventDefault();
      const id = a.getAttribute('href').slice(1);
      const target = document.getElementById(id);
      if (!target) return;
      ctx.view = id;
      mark();
      onStep(); // before scrolling: the entry left keeps the place the learner was at
      target.scrollIntoView({ block: 'start' });
      const heading = target.querySelector('h2');
      if (heading) heading.focus({ preventScroll: true });
    });
  }
  return { mark, scrollToView, focusView };
}
