// The C each break-it card shows under "Read the C" (web/c-source.mjs,
// written by build.sh into web/generated/c-source.js): every bug in BUGS has
// some, it names the bug's ATTN_BUG_ constant, each excerpt stands word for
// word (less its indent) in the c_src file it names, and a bug without C
// stops the build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BUGS } from '../web/attention.js';
import { BUG_SOURCES } from '../web/generated/c-source.js';
import { bugSources, ELISION } from '../web/c-source.mjs';

const constant = (bug) => `ATTN_BUG_${bug.toUpperCase().replace(/-/g, '_')}`;
const fileLines = (file) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8').split('\n');

/** lines less their common indent, as one string. */
function dedent(lines) {
  const pad = Math.min(...lines.filter((l) => l.trim()).map((l) => l.match(/^ */)[0].length));
  return lines.map((l) => l.slice(pad)).join('\n').trimEnd();
}

/** Whether `excerpt` is some run of `lines` with its indent taken off. */
function standsIn(lines, excerpt) {
  const n = excerpt.split('\n').length;
  for (let i = 0; i + n <= lines.length; i++) if (dedent(lines.slice(i, i + n)) === excerpt) return true;
  return false;
}

test('every bug in BUGS has the C that switches it on, word for word from the c_src file it names', () => {
  const bugs = BUGS.filter(Boolean);
  assert.ok(BUG_SOURCES, 'web/generated/c-source.js exports BUG_SOURCES (run bash build.sh)');
  assert.deepEqual(Object.keys(BUG_SOURCES), bugs, 'one entry per bug, in BUGS order');
  for (const bug of bugs) {
    const parts = BUG_SOURCES[bug];
    assert.ok(Array.isArray(parts) && parts.length > 0, `${bug}: no C`);
    const all = parts.map((p) => p.code).join('\n');
    assert.match(all, new RegExp(`\\b${constant(bug)}\\b`), `${bug}: its C names ${constant(bug)}`);
    for (const { file, where, code } of parts) {
      assert.match(file, /^c_src\/\w+\.c$/, `${bug}: ${file}`);
      const lines = fileLines(file);
      const name = where.replace(/^the fields of /, '');
      assert.ok(lines.some((l) => new RegExp(`\\b${name}\\b`).test(l)), `${bug}: ${file} has no ${name}`);
      for (const excerpt of code.split(`\n${ELISION}\n`)) {
        assert.ok(standsIn(lines, excerpt), `${bug}: this excerpt is not in ${file} (${where}):\n${excerpt}`);
      }
    }
  }
});

test('a card shows the switch first, and the helper it selects', () => {
  const where = (bug) => BUG_SOURCES[bug].map((p) => p.where);
  const code = (bug) => BUG_SOURCES[bug].map((p) => p.code).join('\n');
  // make_plan's case, then the function it selects, whole with its comment.
  assert.equal(where('mask-after-softmax')[0], 'make_plan');
  assert.match(code('mask-after-softmax'), /^case ATTN_BUG_MASK_AFTER_SOFTMAX:\n {4}p->mask_logits = 0;/);
  assert.match(code('mask-after-softmax'), /\/\* bug mask-after-softmax: [^]*static void zero_blocked\([^]*\n\}/);
  for (const bug of ['softmax-over-queries', 'mask-output', 'no-causal-mask', 'causal-upper', 'inverted-mask',
    'padding-on-queries', 'no-scale', 'scale-by-dk']) assert.equal(where(bug)[0], 'make_plan', bug);
  // The multi-head module: the line of make_mha_plan, and reshape_only.
  assert.deepEqual(where('heads-without-transpose'), ['make_mha_plan', 'reshape_only']);
  assert.match(code('merge-without-transpose'), /if \(bug == ATTN_BUG_MERGE_WITHOUT_TRANSPOSE\) p\.merge = reshape_only;/);
  // The backward and the tiled path: the statements that test the switch, and their helper.
  assert.match(code('softmax-backward-no-rowsum'), /static void softmax_backward_no_rowsum\(/);
  assert.match(code('grad-through-blocked'), /if \(through_blocked\) uniform_blocked\(/);
  assert.match(code('grad-through-blocked'), /static void uniform_blocked\(/);
  assert.match(code('no-rescale'), /if \(no_rescale\)[^\n]*\n {4}for \(int r = 0; r < n; r\+\+\) factor\[r\] = 1\.0f;/);
  // How a flag acts: causal-upper's test in is_allowed.
  assert.match(code('causal-upper'), /vis->causal_upper && j < diagonal/);
});

test('a switch passed on to a function opens its card where that function acts on it, not at the call', () => {
  // no-rescale is the last argument of sdpa_tiled: the card opens with the
  // line that forces the rescale factor to 1, with its comment, and only then
  // shows the calls that pass the switch in.
  const parts = BUG_SOURCES['no-rescale'];
  const code = parts.map((p) => p.code).join('\n');
  assert.equal(parts[0].where, 'sdpa_tiled', `no-rescale opens in ${parts.map((p) => p.where).join(', ')}`);
  assert.match(parts[0].code, /^if \(no_rescale\) \/\* bug: [^\n]*\*\/\n {4}for \(int r = 0; r < n; r\+\+\) factor\[r\] = 1\.0f;/,
    `no-rescale opens with:\n${parts[0].code}`);
  const factor = code.indexOf('factor[r] = 1.0f'), call = code.indexOf('bug == ATTN_BUG_NO_RESCALE');
  assert.ok(factor >= 0 && call > factor, `the factor line comes before the call site:\n${code}`);
  // No card opens with a bare call that only hands its switch on.
  for (const [bug, [first]] of Object.entries(BUG_SOURCES)) {
    assert.doesNotMatch(first.code.split('\n')[0], /\w+\(.*\bbug == ATTN_BUG_\w+\);$/, `${bug} opens with a call:\n${first.code}`);
  }
});

test('the generated module is what web/c-source.mjs makes of c_src now', () => {
  assert.deepEqual(BUG_SOURCES, bugSources(), 'web/generated/c-source.js is stale: run bash build.sh');
});

test('a bug with no C in c_src stops the build, and says which', () => {
  assert.throws(() => bugSources(['no-such-bug']), /bug "no-such-bug".*ATTN_BUG_NO_SUCH_BUG/);
});

test('a plan field the switch sets is shown as its struct declares it, with the comment that says what it does', () => {
  const sources = bugSources();
  // p->nan_expected = 1 alone would leave a learner guessing; the field's comment says it is the bug's point.
  for (const bug of ['softmax-over-queries', 'no-all-masked-guard']) {
    const fields = sources[bug].find((part) => part.where === 'the fields of sdpa_plan');
    assert.ok(fields, `${bug}: no excerpt of sdpa_plan's fields; parts: ${sources[bug].map((p) => p.where).join(', ')}`);
    assert.match(fields.code, /int nan_expected;\s*\/\* the output may hold NaN/, `${bug}: ${fields.code}`);
  }
  const mask = sources['mask-after-softmax'].find((part) => part.where === 'the fields of sdpa_plan');
  assert.match(mask?.code ?? '', /int mask_logits;\s*\/\* blocked logits -> -INFINITY before the softmax \*\//, `mask-after-softmax: ${mask?.code}`);
});
