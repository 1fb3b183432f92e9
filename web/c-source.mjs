// web/c-source.mjs: run by build.sh. Writes web/generated/c-source.js, the
// numbered passes of attn_sdpa (c_src/attention.c; attn_sdpa runs them in
// attn_sdpa_dropout, its form with an optional dropout) as the page shows them
// under "Read the C", so that the snippets are always the code that ran.
//
// A pass is the lines from its comment "/* N. ... */" inside attn_sdpa_dropout up to
// its first blank line (or the end of its block). Some passes call
// a helper whose body is the real work: the helper follows the pass.
//
// It also writes, for each break-it bug, the C that switches it on (see
// bugSources below), shown on the bug's card in the "Break it" section.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { BUGS } from './attention.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (f) => readFileSync(join(ROOT, 'c_src', f), 'utf8').split('\n');

/** The lines of a top-level C function `name`, with the comment just above it. */
export function cFunction(lines, name) {
  const start = lines.findIndex((l) => /^[A-Za-z]/.test(l) && l.includes(` ${name}(`));
  if (start < 0) throw new Error(`c-source: no function ${name}`);
  let first = start;
  while (first > 0 && /^( \*|\/\*)/.test(lines[first - 1])) first -= 1;
  const end = lines.findIndex((l, i) => i > start && l === '}');
  return lines.slice(first, end + 1);
}

const dedent = (lines) => {
  const pad = Math.min(...lines.filter((l) => l.trim()).map((l) => l.match(/^ */)[0].length));
  return lines.map((l) => l.slice(pad)).join('\n').trimEnd();
};

/** { n: { title, code } } for every numbered pass of attn_sdpa. */
export function sdpaPasses() {
  const attention = read('attention.c'), kernels = read('kernels.c');
  const body = cFunction(attention, 'attn_sdpa_dropout');
  const marks = [];
  body.forEach((l, i) => {
    const m = l.match(/^(\s*)\/\* (\d)\. (.*) \*\/$/);
    if (m) marks.push({ at: i, indent: m[1].length, n: Number(m[2]), title: m[3] });
  });
  const helpers = { 3: [cFunction(attention, 'mask_rows')], 4: [cFunction(kernels, 'softmax_row_scalar')] };
  const passes = {};
  marks.forEach((mark, k) => {
    let end = k + 1 < marks.length ? marks[k + 1].at : body.length;
    // A pass ends at its first blank line, or where its block closes.
    for (let i = mark.at + 1; i < end; i++) {
      if (!body[i].trim() || body[i].match(/^ */)[0].length < mark.indent) { end = i; break; }
    }
    const lines = body.slice(mark.at, end);
    const code = [dedent(lines), ...(helpers[mark.n] || []).map((f) => f.join('\n'))].join('\n\n');
    passes[mark.n] = { title: mark.title, code };
  });
  for (const n of [1, 2, 3, 4, 5]) if (!passes[n]) throw new Error(`c-source: pass ${n} of attn_sdpa_dropout not found`);
  return passes;
}

// ---------------------------------------------------------------------------
// The break-it bugs: where the core switches each one on
// ---------------------------------------------------------------------------
//
// Each bug in BUGS (web/attention.js) is ATTN_BUG_<NAME> in c_src/attention.h
// ('mask-after-softmax' is ATTN_BUG_MASK_AFTER_SOFTMAX). Its C is found in the
// files of attn_sdpa and of the multi-head module by four rules:
//   1. the switch: every statement that tests ATTN_BUG_<NAME>, which is a
//      `case` of make_plan's switch or a line like make_mha_plan's
//      `if (bug == ...) p.split = reshape_only;`. A statement that only
//      refuses a call (attn_fail) or also tests ATTN_BUG_NONE (it picks the
//      path, for several bugs) says nothing about how the bug acts: left out.
//   2. a switch handed on: kept in a local (`const int through_blocked =
//      bug == ...`) or passed as a function's last argument (sdpa_tiled's
//      no_rescale), the `if` statements of that function that test it. For a
//      parameter these are where the bug acts (sdpa_tiled's `factor[r] =
//      1.0f`), while the call only passes it on: the callee's statements open
//      the card, and the calls follow, to show where the switch comes from.
//   3. what the C's comments tag with the bug ("bug mask-output: ...",
//      "bugs heads-without-transpose and ..."): a tagged function whole, with
//      its comment; a tagged statement; a tagged struct field, with every
//      statement that reads or sets it (causal_upper in is_allowed).
//   4. the plan fields a switch sets (`p->nan_expected = 1;`), each as its
//      struct declares it, with the comment that says what it does.
// A statement is shown with the comment lines right above it. A bug with no
// switch found stops the build, so that a renamed bug cannot lose its C.
const BUG_FILES = ['attention.c', 'mha.c'];

/** The line that stands for lines left out between two excerpts of one function. */
export const ELISION = '…';

/**
 * The file's lines twice more, the same length: `code` with comments and
 * string literals blanked, `notes` with only the comments kept.
 */
function splitSource(text) {
  let code = '', notes = '', at = 0;
  const blank = (s) => s.replace(/[^\n]/g, ' ');
  for (const m of text.matchAll(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/g)) {
    const before = text.slice(at, m.index);
    code += before + blank(m[0]);
    notes += blank(before) + (m[0][0] === '/' ? m[0] : blank(m[0]));
    at = m.index + m[0].length;
  }
  code += text.slice(at);
  notes += blank(text.slice(at));
  return { lines: text.split('\n'), code: code.split('\n'), notes: notes.split('\n') };
}

const count = (s, re) => (s.match(re) || []).length;

/**
 * The top-level blocks of a C file: functions and structs, each as
 * { name, kind, first (its leading comment), start (its first line), end }.
 */
function cBlocks({ lines, code }) {
  const blocks = [];
  for (let i = 0; i < code.length; i++) {
    if (!/^[A-Za-z_]/.test(code[i])) continue;
    let open = i; // the line with the block's `{`, if it has one before a `;`
    while (open < code.length && !code[open].includes('{') && !/;\s*$/.test(code[open])) open++;
    if (open >= code.length || !code[open].includes('{')) continue;
    let end = open, depth = 0;
    for (; end < code.length; end++) {
      depth += count(code[end], /\{/g) - count(code[end], /\}/g);
      if (depth === 0) break;
    }
    const header = code.slice(i, open + 1).join(' ');
    const fn = header.match(/(\w+)\s*\(/);
    const name = fn ? fn[1] : (header.match(/\bstruct\s+(\w+)/) || code[end].match(/\}\s*(\w+)\s*;/) || [])[1];
    let first = i;
    while (first > 0 && /^( \*|\/\*)/.test(lines[first - 1])) first -= 1;
    if (name) blocks.push({ name, kind: fn ? 'function' : 'struct', first, start: i, end });
    i = end;
  }
  return blocks;
}

/**
 * [first, last] line of the statement on line i: a `case` up to its
 * `break;`, or a statement with its parentheses and braces closed (an
 * if/else chain whole) and the comment lines right above it.
 */
function statementAt({ lines, code }, i) {
  let s = i;
  while (s > 0 && code[s - 1].trim() && !/[;{}:]\s*$/.test(code[s - 1])) s--;
  let e = s;
  if (/^\s*case\b/.test(code[s])) {
    while (!/\bbreak;/.test(code[e]) && !/^\s*(case\b|default\b|\})/.test(code[e + 1])) e++;
    return [s, e];
  }
  for (let depth = 0; e < code.length; e++) {
    depth += count(code[e], /[({]/g) - count(code[e], /[)}]/g);
    if (depth <= 0 && /[;}]\s*$/.test(code[e]) && !/^\s*else\b/.test(code[e + 1] || '')) break;
  }
  while (s > 0 && !code[s - 1].trim() && lines[s - 1].trim()) s--;
  return [s, e];
}

/** The C of one bug: [{ file, where, code }], the function where it acts first (see rule 2). */
function bugSource(bug, files) {
  const constant = `ATTN_BUG_${bug.toUpperCase().replace(/-/g, '_')}`;
  const mentions = (text, name) => new RegExp(`\\b${name}\\b`).test(text);
  const tag = new RegExp(`\\bbugs? (?:[a-z-]+(?:,| and| or) )*${bug}(?![\\w-])`);
  const shown = []; // { file, src, block, range: [first, last], isSwitch, acts }
  let switches = 0;
  for (const { file, src, blocks } of files) {
    const blockOf = (i) => blocks.find((b) => b.first <= i && i <= b.end);
    const show = (block, range, isSwitch = false, acts = false) => shown.push({ file, src, block, range, isSwitch, acts });
    const statement = (i) => {
      const range = statementAt(src, i);
      return { range, text: src.code.slice(range[0], range[1] + 1).join('\n') };
    };
    src.code.forEach((line, i) => {
      const block = blockOf(i);
      if (!block) return;
      // 1. the switch
      if (mentions(line, constant)) {
        const { range, text } = statement(i);
        if (!/^\s*case\b/.test(line) && (text.includes('attn_fail') || mentions(text, 'ATTN_BUG_NONE'))) return;
        show(block, range, true);
        switches += 1;
        // 4. the plan fields the switch sets, each with the comment that says what it does
        for (const [, field] of text.matchAll(/\bp(?:->|\.)(\w+)\s*=[^=]/g)) {
          for (const struct of blocks.filter((b) => b.kind === 'struct')) {
            for (let j = struct.start + 1; j < struct.end; j++) {
              if (new RegExp(`\\b${field}\\s*;`).test(src.code[j])) show(struct, [j, j]);
            }
          }
        }
        // 2. handed on: to a local, or to a function's last parameter
        const local = text.match(new RegExp(`\\bconst int (\\w+) = [^;]*\\b${constant}\\b`));
        const call = text.match(new RegExp(`(\\w+)\\([^;]*,\\s*bug == ${constant}\\s*\\)`));
        const callee = call && blocks.find((b) => b.name === call[1] && b.kind === 'function');
        const param = callee && src.code.slice(callee.start, callee.end + 1).join(' ').match(/(\w+)\s*\)\s*\{/);
        const [name, where] = local ? [local[1], block] : param ? [param[1], callee] : [];
        if (!name) return;
        for (let j = where.start; j <= where.end; j++) {
          if (j !== i && new RegExp(`^\\s*(\\}\\s*else\\s+)?if\\s*\\(.*\\b${name}\\b`).test(src.code[j])) {
            const handed = statement(j);
            if (!handed.text.includes('attn_fail')) show(where, handed.range, false, !local);
          }
        }
        return;
      }
      // 3. tagged by a comment
      if (!tag.test(src.notes[i])) return;
      if (i < block.start) { // the leading comment of a function (or struct)
        if (block.kind === 'function') show(block, [block.first, block.end]);
        return;
      }
      if (!src.code[i].trim()) return;
      show(block, statementAt(src, i));
      const field = block.kind === 'struct' && src.code[i].match(/(\w+)\s*;\s*$/);
      if (field) {
        src.code.forEach((l, j) => {
          const other = blockOf(j);
          if (other && other !== block && new RegExp(`(\\.|->)${field[1]}\\b`).test(l)) show(other, statementAt(src, j));
        });
      }
    });
  }
  if (!switches) {
    throw new Error(`c-source: bug "${bug}" (web/attention.js BUGS) has no C: no statement in c_src/${BUG_FILES.join(' or c_src/')} `
      + `tests ${constant}. Was the bug renamed on one side only?`);
  }
  // One part per block: its excerpts in file order, each dedented on its own.
  const parts = [];
  for (const s of shown) {
    let part = parts.find((p) => p.file === s.file && p.block === s.block);
    if (!part) parts.push(part = { file: s.file, src: s.src, block: s.block, ranges: [] });
    part.ranges.push(s.range);
  }
  // The card opens where the bug acts: the function a switch is passed to,
  // else the switch's own function.
  const lead = (shown.find((s) => s.acts) || shown.find((s) => s.isSwitch)).block;
  const order = (p) => (p.block === lead ? -1 : BUG_FILES.indexOf(p.file) * 1e6 + p.block.first);
  return parts.sort((a, b) => order(a) - order(b)).map(({ file, src, block, ranges }) => {
    ranges.sort((a, b) => a[0] - b[0]);
    const runs = [];
    for (const [s, e] of ranges) {
      const last = runs[runs.length - 1];
      if (last && s <= last[1] + 1) last[1] = Math.max(last[1], e);
      else runs.push([s, e]);
    }
    const code = runs.map(([s, e]) => dedent(src.lines.slice(s, e + 1))).join(`\n${ELISION}\n`);
    return { file: `c_src/${file}`, where: block.kind === 'struct' ? `the fields of ${block.name}` : block.name, code };
  });
}

/**
 * { bug: [{ file, where, code }] } for every bug in `bugs` (default BUGS):
 * the C that switches it on, by the rules above. file is
 * 'c_src/attention.c'; where names the function (or 'the fields of
 * <struct>'); code holds its excerpts, dedented, in file order, separated by
 * a line ELISION where lines are left out. Throws for a bug with no switch.
 */
export function bugSources(bugs = BUGS.filter(Boolean)) {
  const files = BUG_FILES.map((file) => {
    const src = splitSource(readFileSync(join(ROOT, 'c_src', file), 'utf8'));
    return { file, src, blocks: cBlocks(src) };
  });
  return Object.fromEntries(bugs.map((bug) => [bug, bugSource(bug, files)]));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = join(ROOT, 'web', 'generated');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'c-source.js'), `// Generated by web/c-source.mjs from c_src at build time. Do not edit.\n`
    + `export const SDPA_PASSES = ${JSON.stringify(sdpaPasses(), null, 1)};\n`
    + `export const BUG_SOURCES = ${JSON.stringify(bugSources(), null, 1)};\n`);
}
