// "Break it": one card per bug of the core, built by breakit.js. The section
// has no fixed markup and no number; its cards bring their own heading.

import { makeSection } from '../breakit.js';
import { HashError } from '../lesson-state.js';

export const breakIt = {
  id: 'break-it',
  title: 'Break it',
  numbered: false,
  /** A new section object with its own cards; options as for makeSection (only, persist, compact, onResult). */
  create: (options = {}) => ({ ...makeSection({ HashError, ...options }), title: 'Break it' }),
  presets: {
    'break-it': { title: 'Break it', result: 'last', blocks: [] },
  },
};

export default breakIt;
