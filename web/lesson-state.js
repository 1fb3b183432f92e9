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
// every value must match its field's exact grammar and size, and a single bad
// part rejects the whole hash (the caller shows a notice and keeps the
// defaults). Nothing read here is ever inserted into the page as HTML.

import { parseNumberText, VALUE_LIMIT } from './lesson-ui.js';

export const MAX_HASH_LENGTH = 8000;
/** A key of the hash state: `view`, or a section's `prefix.field`. */
export const STATE_KEY = /^[a-z0-9]{1,12}(\.[a-z0-9]{1,12})?$/i;
const MAX_PAIRS = 120;

export class HashError extends Error {}

// ---------------------------------------------------------------------------
// Field codecs: encode(value) -> string, decode(text, sectionState) -> value
// ---------------------------------------------------------------------------

function encodeNumber(v) {
  return String(Math.round(v * 1e6) / 1e6);
}

export const codec = {
  int(min, max) {
    return {
      encode: (v) => String(v),
      decode(text) {
        if (!/^-?\d{1,10}$/.test(text)) throw new HashError('a whole number was expected');
        const v = Number(text);
        if (v < min || v > max) throw new HashError(`a number from ${min} to ${max} was expected`);
        return v;
      },
    };
  },
  num(min = -VALUE_LIMIT, max = VALUE_LIMIT) {
    return {
      encode: encodeNumber,
      decode(text) {
        const r = parseNumberText(text, { min, max });
        if (!r.ok) throw new HashError('a usable number was expected');
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
        if (!options.includes(text)) throw new HashError('an unknown option was given');
        return text;
      },
    };
  },
  /** rows(st), cols(st) give the expected size from already-decoded fields. */
  matrix(rows, cols, { integer = false, min = -VALUE_LIMIT, max = VALUE_LIMIT } = {}) {
    return {
      encode: (m) => m.map((row) => row.map(encodeNumber).join(',')).join(';'),
      decode(text, st) {
        if (!/^[0-9eE.+,;-]*$/.test(text)) throw new HashError('only numbers were expected');
        const R = rows(st), C = cols(st);
        const parts = text.split(';');
        if (parts.length !== R) throw new HashError(`${R} rows were expected`);
        return parts.map((part) => {
          const cells = part.split(',');
          if (cells.length !== C) throw new HashError(`${C} columns were expected`);
          return cells.map((cell) => {
            const r = parseNumberText(cell, { integer, min, max });
            if (!r.ok) throw new HashError('a value is not a usable number');
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
 * Parse a hash (without "#") into { view, sections: {prefix: {field: value}} }.
 * Throws HashError with a short, fixed reason (never echoing the input).
 */
export function decodeHash(hash, sections, viewIds) {
  if (hash.length > MAX_HASH_LENGTH) throw new HashError('it is too long');
  const result = { view: null, sections: {} };
  if (hash === '') return result;
  // A plain anchor such as "#masks" just names the section to show.
  if (viewIds.includes(hash)) return { ...result, view: hash, anchorOnly: true };

  const raw = new Map();
  const pairs = hash.split('&');
  if (pairs.length > MAX_PAIRS) throw new HashError('it has too many parts');
  for (const pair of pairs) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new HashError('a part has no value');
    const key = pair.slice(0, eq);
    let value;
    try {
      value = decodeURIComponent(pair.slice(eq + 1));
    } catch {
      throw new HashError('a part is badly encoded');
    }
    if (!STATE_KEY.test(key)) throw new HashError('a key is not recognised');
    if (raw.has(key)) throw new HashError('a key appears twice');
    raw.set(key, value);
  }

  if (raw.has('view')) {
    const view = raw.get('view');
    if (!viewIds.includes(view)) throw new HashError('it names an unknown section');
    result.view = view;
    raw.delete('view');
  }

  for (const section of sections) {
    const st = {};
    let touched = false;
    for (const [name, fieldCodec, init] of section.fields) {
      const key = `${section.prefix}.${name}`;
      if (raw.has(key)) {
        try {
          st[name] = fieldCodec.decode(raw.get(key), st);
        } catch (err) {
          if (err instanceof HashError) throw new HashError(`the value for “${section.title}” (${name}) is not valid: ${err.message}`);
          throw err;
        }
        raw.delete(key);
        touched = true;
      } else {
        st[name] = init(st);
      }
    }
    if (touched) result.sections[section.prefix] = st;
  }
  if (raw.size > 0) throw new HashError('it contains a key this page does not know');
  return result;
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
