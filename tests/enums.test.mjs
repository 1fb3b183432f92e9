// The status codes and the break-it bug ids are defined twice: as C enums in
// c_src/attention.h (attn_status, attn_bug) and as tables indexed by number in
// web/attention.js (STATUS_CODES, BUGS). This test parses both sides and
// names every entry, by number and name, where they differ. The trainer's
// size limits are checked the same way (train.c against TRAIN_LIMITS).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BUGS } from '../web/attention.js';

const header = readFileSync(new URL('../c_src/attention.h', import.meta.url), 'utf8');
const api = readFileSync(new URL('../web/attention.js', import.meta.url), 'utf8');

/**
 * The entries of `typedef enum { ... } name;` in C source, comments removed,
 * as [{ name, value }]; an entry without "= value" follows the one before.
 */
function parseEnum(source, name) {
  const match = source.match(new RegExp(`typedef\\s+enum\\s*\\{([^}]*)\\}\\s*${name}\\s*;`));
  assert.ok(match, `c_src/attention.h has no "typedef enum { ... } ${name};"`);
  const body = match[1].replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  let next = 0;
  return body.split(',').map((s) => s.trim()).filter(Boolean).map((entry) => {
    const m = entry.match(/^([A-Za-z_]\w*)\s*(?:=\s*(-?\d+))?$/);
    assert.ok(m, `${name}: cannot read the entry "${entry}"`);
    const value = m[2] === undefined ? next : Number(m[2]);
    next = value + 1;
    return { name: m[1], value };
  });
}

/** The string (or null) entries of the array literal assigned to `name` in JS source. */
function parseTable(source, name) {
  const match = source.match(new RegExp(`\\b${name}\\s*=\\s*(?:Object\\.freeze\\(\\s*)?\\[([^\\]]*)\\]`));
  assert.ok(match, `web/attention.js has no "${name} = [...]" table`);
  return [...match[1].matchAll(/'([^']*)'|"([^"]*)"|\bnull\b/g)].map((m) => m[1] ?? m[2] ?? null);
}

/**
 * Every number where the C enum and the JS table disagree, one line each.
 * cName maps a C enumerator to the name the JS table uses (null for none).
 */
function differences(entries, table, tableName, cName) {
  const lines = [];
  const byValue = new Map();
  for (const e of entries) {
    if (byValue.has(e.value)) lines.push(`${e.value}: C has both ${byValue.get(e.value).name} and ${e.name}`);
    byValue.set(e.value, e);
  }
  const size = Math.max(table.length, ...entries.map((e) => e.value + 1));
  for (let n = 0; n < size; n++) {
    const c = byValue.get(n);
    const want = c ? cName(c.name) : undefined;
    const got = n < table.length ? table[n] : undefined;
    if (c && want === got) continue;
    const cSide = c ? `C ${c.name} = ${n} (${JSON.stringify(want)})` : `C has no entry = ${n}`;
    const jsSide = n < table.length ? `${tableName}[${n}] is ${JSON.stringify(got)}` : `${tableName} has no entry ${n}`;
    lines.push(`${cSide}, but ${jsSide}`);
  }
  return lines;
}

test('attn_status in attention.h and STATUS_CODES in attention.js agree', () => {
  const entries = parseEnum(header, 'attn_status');
  const table = parseTable(api, 'STATUS_CODES');
  assert.ok(entries.length >= 7 && table.length >= 7, `parsed ${entries.length} C entries and ${table.length} JS entries`);
  const lines = differences(entries, table, 'STATUS_CODES', (name) => name.replace(/^ATTN_/, ''));
  assert.equal(lines.length, 0, `status codes differ:\n  ${lines.join('\n  ')}`);
});

test('attn_bug in attention.h and BUGS in attention.js agree', () => {
  const all = parseEnum(header, 'attn_bug');
  const count = all.find((e) => e.name === 'ATTN_BUG_COUNT');
  const entries = all.filter((e) => e !== count);
  const table = parseTable(api, 'BUGS');
  assert.deepEqual(table, [...BUGS], 'the BUGS table read as text is the exported BUGS');
  assert.ok(entries.length >= 13, `parsed ${entries.length} C entries`);
  const lines = differences(entries, table, 'BUGS',
    (name) => (name === 'ATTN_BUG_NONE' ? null : name.replace(/^ATTN_BUG_/, '').toLowerCase().replaceAll('_', '-')));
  if (count && count.value !== table.length) lines.push(`ATTN_BUG_COUNT is ${count.value}, but BUGS has ${table.length} entries`);
  assert.equal(lines.length, 0, `bug ids differ:\n  ${lines.join('\n  ')}`);
});

test('the trainer\'s size limits in attention.js (TRAIN_LIMITS) and in train.c (check_options) agree', () => {
  const train = readFileSync(new URL('../c_src/train.c', import.meta.url), 'utf8');
  const defines = Object.fromEntries([...header.matchAll(/^#define\s+(\w+)\s+(-?\d+)\s*$/gm)].map((m) => [m[1], Number(m[2])]));
  const value = (text) => (/^-?\d+$/.test(text) ? Number(text) : defines[text]);
  // C: "if (name < MIN || name > MAX)" in check_options, a constant or a #define.
  const body = train.slice(train.indexOf('static int check_options('), train.indexOf('\n}\n', train.indexOf('static int check_options(')));
  const inC = Object.fromEntries([...body.matchAll(/if \((\w+) < (\w+) \|\| \1 > (\w+)\)/g)]
    .map(([, name, lo, hi]) => [name.replace(/_(\w)/g, (_, c) => c.toUpperCase()), [value(lo), value(hi)]]));
  const js = api.match(/const TRAIN_LIMITS = Object\.freeze\((\{[^)]*\})\);/);
  assert.ok(js, 'web/attention.js has no "const TRAIN_LIMITS = Object.freeze({ … });"');
  const inJs = JSON.parse(js[1].replace(/(\w+):/g, '"$1":'));
  assert.ok(Object.keys(inC).length >= 6, `read ${Object.keys(inC).length} limits in check_options: ${JSON.stringify(inC)}`);
  const lines = Object.keys({ ...inC, ...inJs }).filter((k) => JSON.stringify(inC[k]) !== JSON.stringify(inJs[k]))
    .map((k) => `${k}: train.c ${JSON.stringify(inC[k])}, attention.js ${JSON.stringify(inJs[k])}`);
  assert.equal(lines.length, 0, `the limits differ:\n  ${lines.join('\n  ')}`);
});
