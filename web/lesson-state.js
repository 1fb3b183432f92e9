// The lesson's state lives in the URL hash so that a link reproduces what
// the learner sees (the TensorFlow Playground idea).
//
// Format:  #view=masks&ex.q=1,0,1,0;0,1,0,1;1,1,0,0&one.first=1
//   key    = "view" or "<section prefix>.<field>"
//   value  = numbers separated by "," (columns) and ";" (rows), 0/1 strings
//            for masks, or a short word from a fixed list.
// Only values that differ from the defaults are written.
//
// Reading is defensive: the hash is length-capped, every key must be known,
// and every value must match its field's exact grammar and size. A part that
// does not is left out and named in a problem (readHash): the field keeps its
// default, the rest of the link still applies. Nothing read here is ever
// inserted into the page as HTML.

import { parseNumberText, fmtPlain, fmtLimit, VALUE_LIMIT } from './lesson-ui.js';

export const MAX_HASH_LENGTH = 8000;
/** A key of the hash state: `view`, or a section's `prefix.field`. */
export const STATE_KEY = /^[a-z0-9]{1,12}(\.[a-z0-9]{1,12})?$/i;
const MAX_PAIRS = 120;

export class HashError extends Error {}

// ---------------------------------------------------------------------------
// Field codecs: encode(value) -> string, decode(text, sectionState) -> value
// ---------------------------------------------------------------------------

// String() gives the shortest text that reads back as the same double:
// "0.5", "2.5e-7", "0.3333333333333333". Numbers are read from what the
// learner typed, so a link keeps exactly the value the page used.
function encodeNumber(v) {
  return String(v);
}

/** "1 row of 2 numbers", "3 rows of 4 whole numbers". */
function rowsOf(R, C, integer) {
  return `${R} ${R === 1 ? 'row' : 'rows'} of ${C} ${integer ? 'whole ' : ''}${C === 1 ? 'number' : 'numbers'}`;
}

export const codec = {
  int(min, max) {
    return {
      encode: (v) => String(v),
      // Read as the page's own whole-number fields read a typed value (1e3 is 1000).
      decode(text) {
        const r = parseNumberText(text, { integer: true, min, max });
        if (!r.ok) throw new HashError(`a whole number from ${fmtLimit(min, true)} to ${fmtLimit(max, true)} was expected`);
        return r.value;
      },
    };
  },
  num(min = -VALUE_LIMIT, max = VALUE_LIMIT) {
    return {
      encode: encodeNumber,
      decode(text) {
        const r = parseNumberText(text, { min, max });
        if (!r.ok) throw new HashError(`a number from ${fmtPlain(min)} to ${fmtPlain(max)} was expected`);
        return r.value;
      },
    };
  },
  bool() {
    return {
      encode: (v) => (v ? '1' : '0'),
      decode(text) {
        if (text !== '0' && text !== '1') throw new HashError('0 or 1 was expected');
        return text === '1';
      },
    };
  },
  choice(options) {
    return {
      encode: (v) => v,
      decode(text) {
        if (!options.includes(text)) throw new HashError(`one of ${options.join(', ')} was expected`);
        return text;
      },
    };
  },
  /** rows(st), cols(st) give the expected size from already-decoded fields. */
  matrix(rows, cols, { integer = false, min = -VALUE_LIMIT, max = VALUE_LIMIT } = {}) {
    return {
      encode: (m) => m.map((row) => row.map(encodeNumber).join(',')).join(';'),
      decode(text, st) {
        const R = rows(st), C = cols(st);
        const shape = `${rowsOf(R, C, integer)} ${R === 1 ? 'was' : 'were'} expected (“,” between numbers, “;” between rows)`;
        if (!/^[0-9eE.+,;-]*$/.test(text)) throw new HashError(shape);
        const parts = text.split(';');
        if (parts.length !== R) throw new HashError(shape);
        return parts.map((part) => {
          const cells = part.split(',');
          if (cells.length !== C) throw new HashError(shape);
          return cells.map((cell) => {
            const r = parseNumberText(cell, { integer, min, max });
            if (!r.ok) throw new HashError(`${integer ? 'whole ' : ''}numbers from ${fmtLimit(min, integer)} to ${fmtLimit(max, integer)} were expected`);
            return r.value;
          });
        });
      },
    };
  },
  /** A 0/1 matrix (a mask): rows of 0/1 characters separated by ";". */
  bits(rows, cols) {
    return {
      encode: (m) => m.map((row) => row.map((b) => (b ? '1' : '0')).join('')).join(';'),
      decode(text, st) {
        const R = rows(st), C = cols(st);
        if (!/^[01;]*$/.test(text)) throw new HashError('a mask of 0 and 1 was expected');
        const parts = text.split(';');
        if (parts.length !== R || parts.some((p) => p.length !== C)) {
          throw new HashError(`a ${R} × ${C} mask was expected`);
        }
        return parts.map((p) => Array.from(p, (ch) => ch === '1'));
      },
    };
  },
};

// ---------------------------------------------------------------------------
// Whole-state helpers
// ---------------------------------------------------------------------------

/** Default state of one section: each field's init(st) in order. */
export function defaultSectionState(section) {
  const st = {};
  for (const [name, , init] of section.fields) st[name] = init(st);
  return st;
}

/**
 * What a link gave, quoted for a message: at most 24 characters of it. A
 * control or formatting character (a right-to-left override, a NUL) is
 * written as its code, U+202E, so that it cannot reorder or hide the words
 * around it.
 */
function given(text) {
  const shown = text.length > 24 ? `${text.slice(0, 24)}…` : text;
  return `“${shown.replace(/[\p{Cc}\p{Cf}]/gu, (c) => `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`)}”`;
}

/**
 * Read a hash (without "#") into { view, sections: {prefix: {field: value}},
 * problems }. A part that cannot be used is left out (its field keeps its
 * default) and `problems` says, for each, what was given and what is
 * allowed. Throws HashError only when the whole hash is refused.
 */
export function readHash(hash, sections, viewIds) {
  if (hash.length > MAX_HASH_LENGTH) throw new HashError(`it is too long: ${hash.length} characters, at most ${MAX_HASH_LENGTH} are read`);
  const result = { view: null, sections: {}, problems: [] };
  if (hash === '') return result;
  // A plain anchor such as "#masks" just names the section to show.
  if (viewIds.includes(hash)) return { ...result, view: hash, anchorOnly: true };

  const raw = new Map();
  const twice = new Set();
  const pairs = hash.split('&');
  if (pairs.length > MAX_PAIRS) throw new HashError(`it has too many parts: ${pairs.length}, at most ${MAX_PAIRS} are read`);
  for (const pair of pairs) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      result.problems.push(`${given(pair)} is neither a section of this page nor a part written key=value`);
      continue;
    }
    const key = pair.slice(0, eq);
    if (!STATE_KEY.test(key)) {
      result.problems.push(`${given(key)} is not a key this page knows`);
      continue;
    }
    let value;
    try {
      value = decodeURIComponent(pair.slice(eq + 1));
    } catch {
      result.problems.push(`the value of ${key} is badly encoded`);
      continue;
    }
    if (raw.has(key)) twice.add(key);
    raw.set(key, value);
  }
  for (const key of twice) {
    result.problems.push(`${key} is given twice`);
    raw.delete(key);
  }

  if (raw.has('view')) {
    const view = raw.get('view');
    if (viewIds.includes(view)) result.view = view;
    else result.problems.push(`view is ${given(view)}, which is not a section of this page`);
    raw.delete('view');
  }

  for (const section of sections) {
    const st = {};
    let touched = false;
    for (const [name, fieldCodec, init] of section.fields) {
      const key = `${section.prefix}.${name}`;
      st[name] = init(st);
      if (!raw.has(key)) continue;
      const text = raw.get(key);
      raw.delete(key);
      try {
        st[name] = fieldCodec.decode(text, st);
        touched = true;
      } catch (err) {
        if (!(err instanceof HashError)) throw err;
        result.problems.push(`${key} (“${section.title}”) is ${given(text)}, but ${err.message}`);
      }
    }
    if (touched) result.sections[section.prefix] = st;
  }
  for (const key of raw.keys()) result.problems.push(`${key} is not a key this page knows`);
  return result;
}

/**
 * Parse a hash (without "#") into { view, sections: {prefix: {field: value}} }.
 * Throws HashError naming the first part that cannot be used.
 */
export function decodeHash(hash, sections, viewIds) {
  const { problems, ...decoded } = readHash(hash, sections, viewIds);
  if (problems.length > 0) throw new HashError(problems[0]);
  return decoded;
}

/** Serialise the state; fields equal to their default (for the current sizes) are left out. */
export function encodeHash(view, sections, states) {
  const parts = [];
  if (view) parts.push(`view=${view}`);
  for (const section of sections) {
    const st = states[section.prefix];
    for (const [name, fieldCodec, init] of section.fields) {
      // The default for this field given the current values of the fields before it (sizes).
      const def = init(st);
      const text = fieldCodec.encode(st[name]);
      if (text !== fieldCodec.encode(def)) parts.push(`${section.prefix}.${name}=${text}`);
    }
  }
  return parts.join('&');
}
