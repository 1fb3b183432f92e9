// Which disclosures of the lesson are open (the warm-up, the quiz answers,
// the long output table) is part of the URL-hash state, by the id in each
// <details data-disclosure="...">: "ui.open=warm-up,quiz-answer-2". Adding,
// moving or removing a disclosure never changes what another one in an old
// link opens; an id the page no longer has is skipped.

import { HashError } from './lesson-state.js';

const ID = /^[a-z][a-z0-9-]{0,39}$/;
const MAX_IDS = 64;

/**
 * Links made before disclosures had ids wrote one 0/1 per <details> in page
 * order ("ui.open=1101000000"). These were the page's disclosures then, in
 * that order; such links still open the same ones.
 */
export const POSITIONAL_ORDER = Object.freeze([
  'warm-up', 'mha-output',
  'quiz-answer-1', 'quiz-answer-2', 'quiz-answer-3', 'quiz-answer-4',
  'quiz-answer-5', 'quiz-answer-6', 'quiz-answer-7', 'quiz-answer-8',
]);

/** The field's codec: a list of ids, separated by ",", or the old 0/1 form. */
export const openCodec = {
  encode: (ids) => ids.join(','),
  decode(text) {
    if (/^[01]+$/.test(text)) {
      if (text.length !== POSITIONAL_ORDER.length) throw new HashError(`${POSITIONAL_ORDER.length} digits 0 or 1 were expected`);
      return POSITIONAL_ORDER.filter((_, i) => text[i] === '1');
    }
    const ids = text === '' ? [] : text.split(',');
    if (ids.length > MAX_IDS || !ids.every((id) => ID.test(id))) throw new HashError('a list of names was expected');
    return [...new Set(ids)];
  },
};

/** The state "section" of the page's disclosures (prefix "ui"). Without a document, it only reads and keeps the list. */
export function disclosureSection(root = null) {
  const all = root ? [...root.querySelectorAll('main details[data-disclosure]')] : [];
  return {
    id: 'lesson',
    prefix: 'ui',
    title: 'the open answers',
    fields: [['open', openCodec, () => []]],
    mount(ctx, st) {
      const open = new Set(st.open);
      st.open = all.filter((d) => open.has(d.dataset.disclosure)).map((d) => d.dataset.disclosure);
      for (const details of all) {
        details.open = open.has(details.dataset.disclosure);
        if (details.dataset.bound) continue;
        details.dataset.bound = '1';
        details.addEventListener('toggle', () => {
          const now = all.filter((d) => d.open).map((d) => d.dataset.disclosure);
          if (now.join(',') === ctx.states.ui.open.join(',')) return;
          ctx.states.ui.open = now;
          ctx.commit('ui');
        });
      }
    },
    update() {},
  };
}
