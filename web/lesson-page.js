// The lesson page's frame around the sections: building them from the
// registry, the state in the URL hash, and the section in view.
// lesson.js puts these together.

import { decodeHash, encodeHash, defaultSectionState, HashError } from './lesson-state.js';
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

/** Build the page's sections (pageSections) into <main>, and the table of contents. */
export function renderLesson(doc) {
  const shown = pageSections(doc);
  doc.querySelector('main').replaceChildren(...shown.map((def) => sectionElement(def, sectionNumber(def.id))));
  doc.querySelector('nav.toc ol').replaceChildren(...shown.map(tocItem));
}

/**
 * Keep the state in the URL hash: read it at start and when the address bar
 * changes, write it after every change. A hash that cannot be used is
 * reported through showNotice and the defaults (or the current state) stay.
 *
 * Writing the address bar is slow (several ms) and rate-limited by browsers,
 * so changes are written once they pause (HASH_DELAY ms), after the edit's
 * frame is on screen, and at once when the page is left.
 */
const HASH_DELAY = 120;

export function hashState({ ctx, sections, showNotice, onApplied }) {
  const lessonMain = document.querySelector('main');
  let timer = null;
  const writeNow = () => {
    clearTimeout(timer);
    timer = null;
    const text = encodeHash(ctx.view, sections, ctx.states);
    const url = `${location.pathname}${location.search}${text ? `#${text}` : ''}`;
    if (`${location.pathname}${location.search}${location.hash}` !== url) history.replaceState(null, '', url);
  };
  const write = () => {
    clearTimeout(timer);
    timer = setTimeout(writeNow, HASH_DELAY);
  };
  window.addEventListener('pagehide', () => { if (timer !== null) writeNow(); });
  const read = () => {
    try {
      return decodeHash(location.hash.replace(/^#/, ''), sections, VIEW_IDS);
    } catch (err) {
      if (!(err instanceof HashError)) throw err;
      showNotice(`The state in this link could not be used (${err.message}), so it was ignored and the page shows its defaults.`);
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
  apply(read());
  writeNow();

  // Someone edits the address bar or goes back: take the new state if it is valid.
  window.addEventListener('hashchange', () => {
    clearTimeout(timer); // a change typed into the address bar wins over one not yet written
    const next = read();
    if (next && next.anchorOnly) {
      // A plain in-page link such as "#masks": move there, keep everything else.
      ctx.view = next.view;
      onApplied({ scroll: false });
    } else if (next) {
      apply(next);
      onApplied({ scroll: true });
    }
    writeNow();
  });
  return { write };
}

/**
 * The section in view is part of the state: the table of contents marks it,
 * scrolling changes it, and its links move to it.
 */
export function viewTracking({ ctx, onChange }) {
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
  const scrollToView = () => {
    const target = ctx.view && document.getElementById(ctx.view);
    if (!target) return;
    target.scrollIntoView({ block: 'start' });
    target.querySelector('h2')?.focus({ preventScroll: true, focusVisible: false });
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
      target.scrollIntoView({ block: 'start' });
      const heading = target.querySelector('h2');
      if (heading) heading.focus({ preventScroll: true });
      ctx.view = id;
      mark();
      onChange();
    });
  }
  return { mark, scrollToView };
}
