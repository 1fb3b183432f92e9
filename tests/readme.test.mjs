// The README's JS examples run as written, from the repo root, and the facts
// it states that the code decides (scores, section ids, fuzz run length)
// match the code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);

test('the README has JS examples', () => assert.ok(blocks.length >= 2, `found ${blocks.length}`));

test('the README API and multi-head examples run together without error', () => {
  // The multi-head example uses `lab` from the first one, as a reader would.
  const api = blocks.filter((b) => /loadAttention|createMultiHeadAttention|createTrainer|sdpaTiled/.test(b));
  const script = api.join('\n{\n') + '\n}'.repeat(api.length - 1);
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /0\.669|0\.670/);
  assert.match(run.stdout, /true ALL_MASKED_ROW/);
  assert.match(run.stdout, /\[ 2, 5, 32 \] \[ 2, 4, 5, 5 \]/);
  assert.match(run.stdout, /150 1\ntrue/);
  assert.match(run.stdout, /^3 Float32Array/m);
  assert.match(run.stdout, /^true$/m);
  assert.match(run.stdout, /^same dv: true$/m);
});

// ---------------------------------------------------------------------------
// Facts the README states that the code decides: checked against the code
// ---------------------------------------------------------------------------

/** The README's line number at a character offset, for messages. */
const lineAt = (index) => readme.slice(0, index).split('\n').length;

/** Every match of `re` (global), with its line; fails when there is none. */
function found(re, what) {
  const matches = [...readme.matchAll(re)];
  assert.ok(matches.length > 0, `the README no longer says ${what} (looked for ${re})`);
  return matches.map((m) => ({ m, line: lineAt(m.index) }));
}

test('the README\'s SCORM score max and mastery are what npm run dist computes', async () => {
  const { packageChoice, packageScore } = await import('../web/dist.mjs');
  const score = (choice) => packageScore(packageChoice(choice));
  const full = score({});
  const wrong = [];
  const expect = (line, what, seen, want) => {
    if (Number(seen) !== want) wrong.push(`README.md:${line}: ${what} is ${seen}, dist computes ${want}`);
  };
  for (const { m, line } of found(/score max \((\d+) for the full lesson/g, 'the full lesson\'s score max')) {
    expect(line, 'the full lesson\'s score max', m[1], full.max);
  }
  for (const { m, line } of found(/\((\d+) of (\d+) for the\s+full lesson\)/g, 'the full lesson\'s mastery score')) {
    expect(line, 'the full lesson\'s mastery score', m[1], full.mastery);
    expect(line, 'the full lesson\'s score max (mastery "of")', m[2], full.max);
  }
  // The example command and the numbers given for it.
  for (const { m, line } of found(/npm run dist -- --sections (\S+) --exercises (\S+)\n```\n\nThe score's max follows: (\d+) for the quiz[^(]*\((\d+) here, mastery (\d+)\)/g,
    'the example package\'s score')) {
    const example = score({ sections: m[1], exercises: m[2] });
    expect(line, 'the quiz\'s points', m[3], score({ sections: 'quiz' }).max);
    expect(line, `the score max of --sections ${m[1]} --exercises ${m[2]}`, m[4], example.max);
    expect(line, `the mastery score of --sections ${m[1]} --exercises ${m[2]}`, m[5], example.mastery);
  }
  assert.deepEqual(wrong, [], `${wrong.length} stale number(s):\n  ${wrong.join('\n  ')}`);
});

test('the README lists every section id --sections accepts, in page order', async () => {
  const { VIEW_IDS } = await import('../web/sections/registry.js');
  const [{ m, line }] = found(/Pass the sections \(the ids of the lesson's\s+`<section>`s: ([^)]*)\)/g, 'which ids --sections takes');
  const listed = [...m[1].matchAll(/`([^`]+)`/g)].map((x) => x[1]);
  const missing = VIEW_IDS.filter((id) => !listed.includes(id));
  const unknown = listed.filter((id) => !VIEW_IDS.includes(id));
  assert.deepEqual({ missing, unknown }, { missing: [], unknown: [] },
    `README.md:${line} lists ${listed.length} ids; VIEW_IDS has ${VIEW_IDS.length}. Missing: ${missing.join(', ') || 'none'}; not a section: ${unknown.join(', ') || 'none'}`);
  assert.deepEqual(listed, [...VIEW_IDS], `README.md:${line}: the ids are not in page order`);
});

test('the README gives the fuzz tests\' run length', () => {
  const fuzzTest = readFileSync(new URL('./fuzz.test.mjs', import.meta.url), 'utf8');
  const seconds = Number(fuzzTest.match(/const SECONDS_EACH = (\d+);/)?.[1]);
  assert.ok(seconds > 0, 'tests/fuzz.test.mjs no longer has const SECONDS_EACH = N');
  const [{ m, line }] = found(/a (\d+) s run of each libFuzzer harness/g, 'how long the tests fuzz each harness');
  assert.equal(Number(m[1]), seconds, `README.md:${line} says ${m[1]} s; tests/fuzz.test.mjs runs ${seconds} s (SECONDS_EACH)`);
});
