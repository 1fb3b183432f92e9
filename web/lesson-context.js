// The machinery shared by the lesson page (lesson.js) and the embeddable
// element (attention-lab.js): the context object that the lesson's sections
// are mounted and updated with.
//
// A context works inside one root, a Document or a ShadowRoot. A section
// finds its live parts with ctx.slot(id, name): the element marked
// data-slot="name" inside the element with id="id", both looked up in that
// root and nowhere else. So the same section code draws into the page and
// into any number of widgets, each of which has its own copy of the section
// (instantiateSection) and its own state.

import {
  AttentionError, causalMask, paddingMask,
  blockedFromAllowed, allowedFromBlocked, additiveFromAllowed,
} from './attention.js';
import { h, uid, oneBased, refusalText, whenIdle, afterFrameIdle } from './lesson-ui.js';
import { linkHighlights } from './lesson-links.js';

/**
 * Create a context.
 * @param {object} options
 * @param {Document | ShadowRoot} options.root where the sections' elements are
 * @param options.lab a loaded lab (loadAttention())
 * @param {object[]} options.sections the sections drawn in this root
 * @param {(prefix: string, redrawn: Element[]) => void} [options.onCommit]
 *   called after a learner's change was redrawn
 * @param {(id: string) => string} [options.nameOf] how the text names a
 *   section ("section 5"); without it no section is named (a widget)
 */
export function createLessonContext({ root, lab, sections, onCommit = () => {}, nameOf = null }) {
  const ctx = {
    root,
    lab,
    api: { causalMask, paddingMask, blockedFromAllowed, allowedFromBlocked, additiveFromAllowed },
    /** prefix -> the section's state (the URL-hash fields) */
    states: {},
    view: null,
    sections,
    /** Tensors the sections published on their last update, by key ("ex.main", "mask.causal", ...). */
    results: {},

    /** The element with this id in the root (a section's container). */
    node(id) {
      return root.getElementById(id);
    },

    /** How the text names another section shown in this root ("section 5"); null where it is not shown. */
    sectionName(id) {
      return nameOf && root.getElementById(id) ? nameOf(id) : null;
    },

    slot(id, name) {
      const node = root.querySelector(`#${id} [data-slot="${name}"]`);
      if (!node) throw new Error(`no data-slot="${name}" in #${id}`);
      return node;
    },

    /**
     * Run a call to the core. An AttentionError is shown in `status` (the
     * last valid drawing stays, marked stale) and null is returned; any other
     * error is a bug in this page and is rethrown. The message is shown
     * counting from 1, in words first and its code after ("Query row has no
     * allowed key (query 2): … (ALL_MASKED_ROW)"), or in the section's own
     * words: explain(err) may return a text for the errors it knows (null for
     * the others). A stale host that holds nothing yet (a link the core
     * refused before any valid result was drawn) is not marked, and when none
     * of them holds anything the message promises no last valid result.
     * The field being edited when the core refuses (the focused input of the
     * status line's section) is marked invalid and described by the status
     * line until the section's next valid result. With no field being edited
     * (the input came from a link), fields(err) may name the inputs to mark.
     */
    core(status, fn, staleHosts = [], { keepNote = true, explain = null, fields = null } = {}) {
      try {
        const result = fn();
        status.clear();
        for (const node of staleHosts) markStale(node, false);
        return result;
      } catch (err) {
        if (!(err instanceof AttentionError)) throw err;
        const text = (explain && explain(err)) || refusalText(err.code, oneBased(err.message));
        const drawn = staleHosts.filter((node) => node.hasChildNodes());
        const field = editedField(status.node) ?? (fields && fields(err));
        if (keepNote && staleHosts.length > 0 && drawn.length === 0) status.show(text.endsWith('.') ? text : `${text}.`, field);
        else status.show(`${text}${keepNote ? '. The results shown are still those of the last valid input, marked “Last valid result”.' : ''}`, field);
        for (const node of drawn) markStale(node, true);
        return null;
      }
    },

    /**
     * A section reports what the core just returned, e.g.
     * ctx.publish('ex.main', { weights, output, scores }). The widget sends
     * the one its preset names in its attention-change event.
     */
    publish(key, tensors) {
      ctx.results[key] = tensors;
      ctx.results.last = tensors;
    },

    /**
     * Redraw one part of a section only when its inputs changed: draw() runs
     * when `inputs` (plain data) differ from the last time. When it does not
     * run, what the part published last time is published again.
     */
    part(section, name, inputs, draw) {
      const memo = section.drawnParts;
      const key = JSON.stringify(inputs);
      const last = memo.get(name);
      if (last && last.key === key) {
        for (const [k, v] of last.published) ctx.publish(k, v);
        return;
      }
      const published = [];
      const publish = ctx.publish;
      ctx.publish = (k, v) => { published.push([k, v]); publish(k, v); };
      try {
        draw();
      } finally {
        ctx.publish = publish;
      }
      memo.set(name, { key, published });
    },

    /** Mount every section from ctx.states, then draw it. */
    mountAll() {
      readers.clear();
      for (const section of sections) {
        section.drawnParts = new Map(); // a new mount draws every part
        section.mount(ctx, ctx.states[section.prefix]);
        // Links stay inside one <section>. An entry that stands for the whole
        // page (the open disclosures, whose node is <main>) has none.
        const node = ctx.node(section.id);
        if (node && node.localName === 'section') linkHighlights(node);
        if (node && section.dependsOn && section.dependsOn.length) readers.watch(node);
      }
      for (const section of sections) update(section);
    },

    /**
     * A section drew part of itself after its update returned (a measurement
     * that runs after the edit's frame): its new scroll boxes are watched too.
     */
    drewLater(node) {
      markScrollBoxes([node]);
    },

    /**
     * A section's state changed: redraw it and the sections that read it. A
     * reader far from the viewport is redrawn once the edit's frame is
     * painted and the page is idle, or as soon as it comes near: its work
     * would only delay the frame that shows the edit.
     */
    commit(prefix, detail) {
      const redrawn = [];
      for (const section of sections) {
        if (section.prefix === prefix) update(section, detail);
        else if (section.dependsOn && section.dependsOn.includes(prefix)) {
          const node = ctx.node(section.id);
          if (node && readers.isFar(node)) { readers.run(node, () => update(section)); continue; }
          update(section);
        } else continue;
        const node = ctx.node(section.id);
        if (node) redrawn.push(node);
      }
      markScrollBoxes(redrawn);
      onCommit(prefix, redrawn);
    },
  };

  /** The sections that read another's state, redrawn late while far from the viewport. */
  const readers = deferWhileFar();

  /** Redraw a section; what it published before is dropped, so a refused input leaves no stale result. */
  function update(section, detail) {
    const node = ctx.node(section.id);
    if (node) readers.cancel(node); // drawn now: a redraw still waiting is not needed

    for (const key of Object.keys(ctx.results)) if (key.startsWith(`${section.prefix}.`)) delete ctx.results[key];
    section.update(ctx, ctx.states[section.prefix], detail);
  }
  /** The input or select with the focus, when it belongs to the section of `node` (the field whose edit was just refused). */
  function editedField(node) {
    const field = root.activeElement;
    if (!field || !['INPUT', 'SELECT', 'TEXTAREA'].includes(field.tagName)) return null;
    const own = sections.map((section) => ctx.node(section.id)).find((container) => container?.contains(node));
    return own && own.contains(field) ? field : null;
  }
  return ctx;
}


/**
 * Mark a drawn result as the last valid one, or unmark it. The mark is real
 * text, the host's first child (drawn as lesson.css draws .stale-label), and
 * it names the host, a group, so a screen reader entering the old values
 * hears "Last valid result" first.
 */
function markStale(node, on) {
  const label = node.firstElementChild?.classList.contains('stale-label') ? node.firstElementChild : null;
  if (on) {
    node.classList.add('stale');
    if (label) return;
    const id = uid('stale');
    node.prepend(h('p', { class: 'stale-label', id, text: 'Last valid result' }));
    if (!node.hasAttribute('role')) {
      node.setAttribute('role', 'group');
      node.dataset.staleRole = '';
    }
    node.setAttribute('aria-labelledby', id);
  } else {
    if (!node.classList.contains('stale')) return;
    node.classList.remove('stale');
    label?.remove();
    node.removeAttribute('aria-labelledby');
    if ('staleRole' in node.dataset) {
      node.removeAttribute('role');
      delete node.dataset.staleRole;
    }
  }
}

/**
 * A box that scrolls sideways (a wide heatmap, table or C listing on a phone) must be
 * reachable by keyboard: give it a tab stop and a name, only while it
 * actually overflows and holds nothing focusable itself.
 *
 * Whether a box overflows is read when the page is next idle, after the
 * frame that drew the change: reading it in the edit itself would force an
 * extra layout. Three things change it, and each has the boxes measured
 * again: a redraw, which can widen a box's content (each call here, from a
 * section's redraw or a new part, measures the boxes of its roots); a new
 * width of the page or widget (see `watch` below); and a box that is shown
 * (a disclosure opened): a box found with no layout is watched by a
 * ResizeObserver until it has one. Boxes that are shown are not watched:
 * their size changes with nearly every edit, and the observer's callbacks
 * would make each edit's frame lay the page out twice.
 *
 * A section far from the viewport is not laid out (content-visibility in
 * lesson.css), and its boxes are not measured then: reading a width would
 * lay the whole section out. They are watched like hidden boxes, and marked
 * in the frame that first lays them out (the learner scrolling near, a
 * keyboard user tabbing into the section, a tool that renders every section).
 * A page or widget also passes its whole content once with `watch`: a new
 * width of that container (the window's, or a course page's column that
 * narrows while the window stays as it is) has its boxes measured again.
 * Only a change of width counts: its height changes with nearly every edit.
 * @param {ParentNode[]} roots the subtrees whose boxes to measure
 * @param {{ watch?: boolean }} [options]
 */
export function markScrollBoxes(roots, { watch = false } = {}) {
  if (typeof ResizeObserver !== 'function') return;
  for (const root of roots) pendingRoots.add(root);
  if (watch) for (const root of roots) watchWidth(root);
  measureWhenIdle();
}

const widths = new WeakMap(); // a watched container -> its last width
let widthObserver = null;

/** Measure the boxes inside `root` again whenever its width changes. */
function watchWidth(root) {
  widthObserver ??= new ResizeObserver((entries) => {
    let changed = false;
    for (const { target, contentRect } of entries) {
      // A container taken out of the page (a widget removed) is let go.
      if (!target.isConnected) {
        widthObserver.unobserve(target);
        continue;
      }
      const was = widths.get(target);
      widths.set(target, contentRect.width);
      if (was === undefined || was === contentRect.width) continue;
      pendingRoots.add(target);
      changed = true;
    }
    if (changed) measureWhenIdle();
  });
  widthObserver.observe(root);
}

/** Near the viewport: within half the viewport's height above or below it (deferWhileFar, whenNear). */
const NEAR = { rootMargin: '50% 0px' };

/**
 * Work that waits while its element is far from the viewport (an
 * IntersectionObserver's last word; an element it has not reported on yet
 * counts as near). run(node, fn) runs fn now for a near node; for a far one
 * it keeps fn, the newest only, until the page is idle after the edit's frame
 * or the node comes near, and then measures the node's scroll boxes (the
 * edit's own measuring did not see what fn draws). cancel(node) drops the
 * work waiting for node; clear() drops all of it.
 */
export function deferWhileFar() {
  const far = new Set();
  const waiting = new Map(); // node -> fn
  let scheduled = false;
  const flush = (only) => {
    const drawn = [];
    for (const [node, fn] of waiting) {
      if (only && !only.has(node)) continue;
      waiting.delete(node);
      fn();
      drawn.push(node);
    }
    if (drawn.length) markScrollBoxes(drawn);
  };
  const observer = typeof IntersectionObserver === 'function' ? new IntersectionObserver((entries) => {
    const near = new Set();
    for (const { target, isIntersecting } of entries) {
      if (isIntersecting) { far.delete(target); near.add(target); } else far.add(target);
    }
    flush(near);
  }, NEAR) : null;
  return {
    watch(node) { observer?.observe(node); },
    unwatch(node) {
      observer?.unobserve(node);
      far.delete(node);
      waiting.delete(node);
    },
    isFar: (node) => far.has(node),
    run(node, fn) {
      if (!far.has(node)) {
        waiting.delete(node);
        fn();
        return;
      }
      waiting.set(node, fn);
      if (scheduled) return;
      scheduled = true;
      afterFrameIdle(() => { scheduled = false; flush(null); });
    },
    cancel(node) { waiting.delete(node); },
    clear() { waiting.clear(); },
  };
}

/**
 * Run fn once `node` comes near the viewport (NEAR), or soon after the
 * call when it is near already. For work a learner only sees there, such as
 * timing this browser: a learner who never scrolls to it spends nothing on
 * it. Returns a function that cancels the wait.
 */
export function whenNear(node, fn) {
  if (typeof IntersectionObserver !== 'function') {
    fn();
    return () => {};
  }
  const observer = new IntersectionObserver((entries) => {
    if (!entries.some((entry) => entry.isIntersecting)) return;
    observer.disconnect();
    fn();
  }, NEAR);
  observer.observe(node);
  return () => observer.disconnect();
}

const SCROLL_BOXES = '.grid-wrap, .heatmap-wrap, pre.c-src, .bk-table-wrap, .formula';
const pendingRoots = new Set();
let idlePending = false;
let scrollObserver = null;

function measureWhenIdle() {
  if (idlePending) return;
  idlePending = true;
  whenIdle(() => {
    idlePending = false;
    if (!scrollObserver) {
      scrollObserver = new ResizeObserver((entries) => markScrollBoxList(entries.map((e) => e.target)));
    }
    const boxes = new Set();
    for (const root of pendingRoots) {
      if (!root.isConnected) continue;
      if (root.matches?.(SCROLL_BOXES)) boxes.add(root);
      for (const box of root.querySelectorAll(SCROLL_BOXES)) boxes.add(box);
    }
    pendingRoots.clear();
    markScrollBoxList(boxes);
  });
}

/**
 * Every box's layout is read first, then the marks are written: a write
 * between two reads would make the browser lay the page out again. Every box
 * that overflows is marked data-overflows (for the hint that it scrolls);
 * one with nothing focusable inside also gets a tab stop and a name.
 */
function markScrollBoxList(boxes) {
  const list = [...boxes];
  // null: the box has no layout now (hidden, not laid out yet, or in a
  // section far from the viewport that content-visibility skips), so whether
  // it overflows is unknown and its mark stays as it is. A skipped box is
  // not measured: reading its width would lay its whole section out.
  const overflows = list.map((box) => (!shown(box) || box.clientWidth === 0 ? null : box.scrollWidth > box.clientWidth + 1));
  // A box with no layout is watched until it has one; a measured one is not.
  list.forEach((box, i) => {
    if (overflows[i] === null) scrollObserver.observe(box);
    else scrollObserver.unobserve(box);
  });
  // A box wider than its content by a rounding sliver (at most 1 px) is not
  // marked, but the browser still counts it as a scroller.
  const sliver = list.map((box, i) => overflows[i] === false && box.scrollWidth > box.clientWidth);
  list.forEach((box, i) => {
    if (overflows[i] === null) return;
    // A map's weights hold a tab stop of their own ([tabindex="0"], moved by
    // the arrow keys): focusing one scrolls the box, which needs no stop.
    const stop = overflows[i] && box.querySelector('input, button, select, a[href], [tabindex="0"]') === null;
    markScrollBox(box, stop ? 'stop' : sliver[i] ? 'sliver' : null);
    // The visible hint (lesson.css) that more columns wait to the right.
    if (overflows[i] !== (box.dataset.overflows === '1')) {
      if (overflows[i]) box.dataset.overflows = '1';
      else delete box.dataset.overflows;
    }
  });
}

/** Whether a box is rendered: not hidden, and not in a subtree that content-visibility skips (no layout is needed to tell). */
function shown(box) {
  return typeof box.checkVisibility !== 'function' || box.checkVisibility({ contentVisibilityAuto: true });
}

/**
 * mode 'stop': give a box its own tab stop and a name. 'sliver': keep it out
 * of the tab order (the browser would make a box that scrolls by a rounding
 * sliver a tab stop with no name). null: undo either. A tabindex the page
 * set itself (a code box) is left alone.
 */
function markScrollBox(box, mode) {
  const was = box.dataset.autoScroll ?? null;
  if (mode === was || (was === null && box.hasAttribute('tabindex'))) return;
  box.removeAttribute('role');
  box.removeAttribute('aria-label');
  if (mode === 'stop') {
    // A box that its maker named (data-scroll-label) keeps that name; else
    // the caption or heading of its figure, slot or section names it.
    const label = box.dataset.scrollLabel
      ?? box.closest('figure, [data-slot], section')?.querySelector('figcaption, caption, h2, h3')?.textContent.trim();
    box.setAttribute('tabindex', '0');
    // A group, not a region: a region is a landmark, and two widgets of one
    // course page showing the same map would give two landmarks of one name.
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', `${label || 'Table'} (scrolls sideways)`);
    box.dataset.autoScroll = mode;
  } else if (mode === 'sliver') {
    box.setAttribute('tabindex', '-1');
    box.dataset.autoScroll = mode;
  } else {
    box.removeAttribute('tabindex');
    delete box.dataset.autoScroll;
  }
}
