// The break-it lab: every bug in the core, on its default input,
// is caught by the checks meant to catch it, and with the bug off every
// check passes. Both wasm builds. What a card says about its bug agrees with
// the core's numbers, and every card can be won by a prediction that names
// a check telling bugs apart.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention, AttentionError, BUGS } from '../web/attention.js';
import { CHECKS, CHECK_NAMES, runChecks, runExercise, lossPattern } from '../web/checks.js';
import * as exercisesModule from '../web/exercises.js';
import { bugTable, readmeBlock } from '../web/bug-table.mjs';
import { compare } from './helpers/compare.mjs';

const { EXERCISES } = exercisesModule;

const describeFailures = (results) => results.filter((r) => !r.passed).map((r) => `${r.name}: ${r.reason}`).join('\n  ');

test('there is one exercise per bug, in BUGS order, naming only known checks', () => {
  assert.deepEqual(EXERCISES.map((e) => e.bug), BUGS.slice(1));
  for (const e of EXERCISES) {
    assert.ok(e.catchers.length > 0, `${e.bug} names the checks meant to catch it; it names [${e.catchers}]`);
    for (const name of e.catchers) assert.ok(CHECK_NAMES.includes(name), `${e.bug}: unknown check ${name}`);
    for (const field of ['title', 'setting', 'prompt']) {
      assert.equal(typeof e[field], 'string', `${e.bug}.${field}`);
      assert.ok(e[field].length > 0 && !e[field].includes('\n'), `${e.bug}.${field} is one non-empty line: ${JSON.stringify(e[field])}`);
    }
    // Code: lines of it, none empty; a comment is a line of its own, above the code it explains.
    for (const field of ['mistake', 'repair']) {
      const lines = String(e[field]).split('\n');
      assert.ok(lines.every((line) => line.trim().length > 0), `${e.bug}.${field} has no empty line: ${JSON.stringify(e[field])}`);
      assert.ok(lines.every((line) => line.startsWith('#') || !line.includes('#')), `${e.bug}.${field}: a comment after code: ${JSON.stringify(e[field])}`);
      assert.ok(lines.some((line) => !line.startsWith('#')), `${e.bug}.${field} has code, not only a comment`);
    }
  }
});

// Load both builds before declaring suites: node:test wants suites declared synchronously.
const labs = { true: await loadAttention({ simd: true }), false: await loadAttention({ simd: false }) };

for (const simd of [true, false]) {
  describe(`${simd ? 'SIMD' : 'scalar'} build`, () => {
    const lab = labs[simd];

    for (const exercise of EXERCISES) {
      describe(exercise.bug, () => {
        test('the bugged output differs from the correct one', () => {
          const bugged = runExercise(lab, exercise);
          const correct = runExercise(lab, exercise, { bug: null });
          assert.ok(!bugged.refused, `the bugged run was refused: ${bugged.refused?.message}`);
          if (correct.refused) {
            // The correct core refuses this input; the bug lets it through.
            assert.equal(correct.refused.code, 'ALL_MASKED_ROW');
            assert.ok(bugged.output.data.some(Number.isNaN), `the bug turns the empty row into NaN; the output is [${Array.from(bugged.output.data)}]`);
            return;
          }
          if (exercise.backward) {
            // A backward bug leaves the forward alone and changes the gradients.
            assert.deepEqual(bugged.output, correct.output);
            const d = compare(bugged.gradients.dk.data, correct.gradients.dk.data, { shape: correct.gradients.dk.shape, label: 'bugged vs correct dk', atol: 1e-3 });
            assert.ok(!d.ok, `the bug changes no dk entry by more than 1e-3: ${d.report}`);
            return;
          }
          const d = compare(bugged.output.data, correct.output.data, { shape: correct.output.shape, label: 'bugged vs correct output', atol: 1e-3 });
          assert.ok(!d.ok, `the bug changes no output entry by more than 1e-3: ${d.report}`);
        });

        test('the checks meant to catch it fail and name the offending entry', () => {
          const results = runChecks(lab, exercise);
          for (const name of exercise.catchers) {
            const r = results.find((x) => x.name === name);
            assert.equal(r.passed, false, `${name} should fail: ${r.reason}`);
            assert.equal(r.skipped, false, `${name} was skipped: ${r.reason}`);
            assert.ok(r.worst, `${name} names an entry`);
            const { batch, head, row, column } = r.worst;
            assert.ok(Number.isInteger(batch) && Number.isInteger(row), `${name}: ${JSON.stringify(r.worst)}`);
            assert.ok(head === null || Number.isInteger(head), `${name}: worst.head is ${head}, want null or an integer`);
            assert.ok(column === null || Number.isInteger(column), `${name}: worst.column is ${column}, want null or an integer`);
            assert.ok('value' in r.worst, `${name}: the worst entry has no value: ${JSON.stringify(r.worst)}`);
            assert.match(r.reason, new RegExp(`\\b${row + 1}\\b`), `${name}'s reason names row ${row + 1}: ${r.reason}`);
            assert.ok(!r.reason.includes('\n'), `${name}'s reason is one line: ${JSON.stringify(r.reason)}`);
          }
          // The catch-all agrees.
          const catchAll = results.find((x) => x.name === 'matchesReference');
          assert.equal(catchAll.passed, false, `matchesReference should fail: ${catchAll.reason}`);
        });

        test('with the bug off, every check passes', () => {
          const results = runChecks(lab, { ...exercise, bug: null });
          assert.deepEqual(results.map((r) => r.name), CHECK_NAMES);
          assert.ok(results.every((r) => r.passed), `failing:\n  ${describeFailures(results)}`);
          for (const r of results) {
            assert.equal(r.worst, null);
            assert.equal(typeof r.reason, 'string');
            assert.doesNotMatch(r.reason, /0\.0000\d/, `${r.name}: a tolerance is written as the cards write small numbers (1.0e−5), not 0.00001: "${r.reason}"`);
          }
        });
      });
    }

    test('needWeights: false computes the same bugged output (the blocked path)', () => {
      for (const exercise of EXERCISES.filter((e) => e.kind === 'sdpa')) {
        const { q, k, v } = exercise.inputs;
        const options = { ...exercise.options, bug: exercise.bug };
        const full = lab.sdpa(q, k, v, options).output;
        const lean = lab.sdpa(q, k, v, { ...options, needWeights: false }).output;
        full.data.forEach((want, at) => {
          const got = lean.data[at];
          const same = Number.isNaN(want) ? Number.isNaN(got) : Math.abs(got - want) <= 1e-6;
          assert.ok(same, `${exercise.bug}: output ${at} is ${got} without weights, ${want} with them`);
        });
      }
    });
  });
}

test('every failing reason reads as a sentence: an entry\'s head and batch come after its name, not inside "the …"', () => {
  const lab = labs.true;
  const garbled = [];
  for (const exercise of EXERCISES) {
    for (const r of runChecks(lab, exercise)) {
      // "the head 1, weight of …" is how a prefix reads once it lands after "the".
      if (!r.passed && /\bthe (head|batch) \d+,/i.test(r.reason)) garbled.push(`${exercise.bug} / ${r.name}: ${r.reason}`);
    }
  }
  assert.deepEqual(garbled, [], 'reasons with "the head N," or "the batch N,"');
  const stale = runChecks(lab, EXERCISES.find((e) => e.bug === 'stale-cache-offset')).find((r) => r.name === 'diagonalAllowed');
  assert.equal(stale.reason, 'Query 2 may see itself, yet the weight of query 2 on key 2 in head 1 is 0.000.');
});

test('a reason writes its numbers as the card\'s tables do: a negative with the sign −, not a hyphen', () => {
  const lab = labs.true;
  const hyphens = [];
  const negatives = [];
  for (const exercise of EXERCISES) {
    for (const r of runChecks(lab, exercise)) {
      if (/-\d/.test(r.reason)) hyphens.push(`${exercise.bug} / ${r.name}: ${r.reason}`);
      if (/−\d/.test(r.reason)) negatives.push(r.reason);
    }
  }
  assert.deepEqual(hyphens, [], 'reasons that write a negative number with a hyphen');
  assert.ok(negatives.length > 0, 'some reason names a negative number, so the sign is tested');
  const heads = runChecks(lab, EXERCISES.find((e) => e.bug === 'heads-without-transpose')).find((r) => r.name === 'matchesReference');
  assert.equal(heads.reason, 'The output row 4, column 4 is −0.381; the bug-free core gives −0.079.');
});

test('the cards\' texts write d_k, d_v, T_k and d_model in plain form, and count tokens from 1', () => {
  // "gradient dk" is the gradient of k, a tensor's name, not the width d_k.
  const old = /(?<!gradient )\b(dk|dv|Tk|dModel)\b/i;
  const texts = [
    ...EXERCISES.flatMap((e) => ['title', 'setting', 'prompt'].map((field) => [`${e.bug}.${field}`, e[field]])),
    ...CHECKS.flatMap((c) => ['title', 'says'].map((field) => [`${c.name}.${field}`, c[field]])),
    ...EXERCISES.flatMap((e) => runChecks(labs.true, e).map((r) => [`${e.bug} / ${r.name} reason`, r.reason])),
  ];
  const unsubscripted = texts.filter(([, text]) => old.test(text)).map(([where, text]) => `${where}: ${text}`);
  assert.deepEqual(unsubscripted, [], 'texts with dk, dv, Tk or dModel where d_k, d_v, T_k or d_model is meant');
  assert.equal(CHECKS.find((c) => c.name === 'scoresScaled').title, 'Scores scaled by 1/√d_k');
  // A position counts from 0 and a token from 1: a text that names position 0 says which token stands there.
  const positions = texts.filter(([, text]) => /position 0/.test(text) && !/position 0[^.]*token 1/.test(text)).map(([where, text]) => `${where}: ${text}`);
  assert.deepEqual(positions, [], 'texts naming position 0 without saying it is token 1');
});

describe('the bug switches in the core', () => {
  const lab = labs.true;
  const q = [[1, 0], [0, 1], [1, 1]];
  const v = [[1, 2], [3, 4], [5, 6]];

  test('an unknown bug name is a BAD_ARGUMENT AttentionError', () => {
    const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2, seed: 1 });
    try {
      for (const bug of ['nope', 'No-Scale', 3, true, '']) {
        for (const call of [() => lab.sdpa(q, q, v, { bug }), () => mha.forward([[[1, 2, 3, 4]]], { bug })]) {
          assert.throws(call, (err) => err instanceof AttentionError && err.code === 'BAD_ARGUMENT', `bug ${JSON.stringify(bug)}`);
        }
      }
    } finally {
      mha.free();
    }
  });

  test('a head bug is refused by sdpa, which has no heads to split', () => {
    assert.throws(() => lab.sdpa(q, q, v, { bug: 'heads-without-transpose' }),
      (err) => err instanceof AttentionError && err.code === 'BAD_ARGUMENT' && /mha\.forward/.test(err.message));
  });

  test('stale-cache-offset is refused by sdpa, which has no KV cache', () => {
    assert.throws(() => lab.sdpa(q, q, v, { bug: 'stale-cache-offset' }),
      (err) => err instanceof AttentionError && err.code === 'BAD_ARGUMENT' && /KV cache/.test(err.message) && /mha\.forward/.test(err.message));
  });

  test('mask-output needs dv == Tk, as out.masked_fill(~allowed, 0) does', () => {
    assert.throws(() => lab.sdpa(q, q, v, { causal: true, bug: 'mask-output' }),
      (err) => err.code === 'SHAPE_MISMATCH' && /dv == Tk/.test(err.message));
    const { output, weights } = lab.sdpa([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[10, 0], [0, 20]], { causal: true, bug: 'mask-output' });
    // The weights were never masked, and only the output entry (0, 1) was zeroed.
    assert.ok(weights.data[1] > 0, `weight (0, 1) is ${weights.data[1]}: the bug should leave it unmasked, > 0`);
    assert.equal(output.data[1], 0, 'output entry (0, 1)');
    assert.ok(Math.abs(output.data[0] - 10 * weights.data[0]) < 1e-5,
      `output entry (0, 0) is ${output.data[0]}, want 10 × weight (0, 0) = ${10 * weights.data[0]} (difference ${Math.abs(output.data[0] - 10 * weights.data[0])}, tolerance 1e-5)`);
  });

  test('padding-on-queries blanks the padded query row and leaves its key readable', () => {
    const x = [[1, 0], [0, 1], [1, 1]];
    const { weights, output } = lab.sdpa(x, x, v, { mask: [[1, 1, 0]], bug: 'padding-on-queries' });
    assert.deepEqual(Array.from(weights.data.slice(6)), [0, 0, 0]);
    assert.deepEqual(Array.from(output.data.slice(4)), [0, 0]);
    assert.ok(weights.data[2] > 0, `query 1 reads the padded key: its weight is ${weights.data[2]}, want > 0`);
  });

  test('bugs that make NaN by design return it instead of an OVERFLOW error', () => {
    const mask = [[1, 0, 0], [0, 0, 0], [1, 1, 1]];
    const guardless = lab.sdpa(q, q, v, { mask, bug: 'no-all-masked-guard' });
    assert.ok(Number.isNaN(guardless.output.data[2]) && Number.isFinite(guardless.output.data[0]),
      `no-all-masked-guard: output [${Array.from(guardless.output.data)}], want entry 2 (the empty row 1) NaN and entry 0 finite`);
    // A key that no query may read is a column of -inf: normalising it over queries gives NaN.
    const columns = lab.sdpa(q, q, v, { mask: [[1, 1, 0]], bug: 'softmax-over-queries' });
    assert.ok(Number.isNaN(columns.weights.data[2]), `softmax-over-queries: weight (0, 2) of the unread key is ${columns.weights.data[2]}, want NaN`);
    assert.throws(() => lab.sdpa(q, q, v, { mask }), (err) => err.code === 'ALL_MASKED_ROW' && /query 1/.test(err.message));
  });

  test('the other bugs keep the empty-row guard of the correct path', () => {
    const mask = [[1, 0, 0], [0, 0, 0], [1, 1, 1]];
    for (const bug of ['mask-after-softmax', 'no-scale', 'inverted-mask', 'softmax-over-queries']) {
      const m = bug === 'inverted-mask' ? mask.map((r) => r.map((b) => 1 - b)) : mask;
      assert.throws(() => lab.sdpa(q, q, v, { mask: m, bug }), (err) => err.code === 'ALL_MASKED_ROW', bug);
    }
  });
});

describe('the README bug table', () => {
  const lab = labs.true;
  const scalar = labs.false;
  const table = bugTable(lab);

  test('is the same for both builds and lists every bug', () => {
    assert.equal(bugTable(scalar), table);
    for (const bug of BUGS.slice(1)) assert.ok(table.includes(`| \`${bug}\` |`), `the table has no row for bug ${bug}:\n${table}`);
    for (const { name } of CHECKS) assert.ok(table.includes(`\`${name}\``), `the table does not name check ${name}:\n${table}`);
  });

  test('in README.md equals the generated one', (t) => {
    let block;
    try {
      block = readmeBlock();
    } catch {
      block = null;
    }
    if (block === null) return t.skip('README.md has no bug-table markers');
    if (block === '') return t.skip('the bug-table block is empty: run npm run bug-table');
    assert.equal(block, table, 'README.md is stale: run npm run bug-table');
  });
});

describe('what the cards say agrees with the core', () => {
  const lab = labs.true;
  const row = (t, i, n) => Array.from(t.data.subarray(i * n, (i + 1) * n));
  const show = (xs) => xs.map((x) => x.toFixed(3)).join(', ');

  test('no-rescale: keys that came before a larger score keep their old exponentials and count for too much', () => {
    const exercise = EXERCISES.find((e) => e.bug === 'no-rescale');
    const bugged = runExercise(lab, exercise);
    const correct = runExercise(lab, exercise, { bug: null });
    const [T, Tk] = correct.weights.shape.slice(-2);
    const wrong = [];
    let early = 0;
    for (let i = 0; i < T; i++) {
      const scores = row(correct.scores, i, Tk);
      const b = row(bugged.weights, i, Tk);
      const c = row(correct.weights, i, Tk);
      const top = Math.max(...scores);
      let runningMax = -Infinity;
      scores.forEach((s, j) => {
        runningMax = Math.max(runningMax, s);
        // Key j came before a larger score when the row's maximum had not been reached yet.
        const before = runningMax < top;
        if (before) early++;
        const ok = before ? b[j] > c[j] + 1e-3 : b[j] <= c[j] + 1e-6;
        if (!ok) wrong.push(`query ${i + 1}, key ${j + 1} (${before ? 'before' : 'at or after'} the row's largest score): bugged ${b[j].toFixed(3)}, correct ${c[j].toFixed(3)}`);
      });
      if (i === 0) {
        assert.deepEqual(scores.map((s) => Math.round(s * 10) / 10), [0.5, 0.5, 0.5, 1.5], `query 1's scores: ${show(scores)}`);
      }
    }
    assert.ok(early > 0, `some key comes before a larger score on this input: ${early} such keys`);
    assert.deepEqual(wrong, [], 'the core disagrees with "earlier keys count for too much"');
    // The card says the same thing.
    const text = `${exercise.prompt} ${exercise.mistake}`;
    assert.match(exercise.prompt, /before a larger score/, `the prompt should say that keys before a larger score count for too much; it says: "${exercise.prompt}"`);
    assert.doesNotMatch(text, /after a larger score/, `the card blames keys after a larger score, the opposite of the core's numbers (query 1 bugged ${show(row(bugged.weights, 0, Tk))}, correct ${show(row(correct.weights, 0, Tk))}): "${text}"`);
  });

  test('grad-through-blocked: the mistake line names every gradient the bug changes at its source', () => {
    const exercise = EXERCISES.find((e) => e.bug === 'grad-through-blocked');
    const { q, k, v } = exercise.inputs;
    const dOut = lossPattern(q.length, v[0].length);
    const bugged = lab.sdpaBackward(q, k, v, dOut, { ...exercise.options, bug: exercise.bug });
    const correct = lab.sdpaBackward(q, k, v, dOut, exercise.options);
    const changed = ['dq', 'dk', 'dv', 'dScores'].filter((name) =>
      bugged[name].data.some((x, at) => Math.abs(x - correct[name].data[at]) > 1e-4));
    const blocked = (at) => { const Tk = k.length; return at % Tk > Math.floor(at / Tk); }; // causal: key j > query i
    const leaked = Array.from(bugged.dScores.data).filter((x, at) => blocked(at) && x !== 0).length;
    assert.deepEqual(changed, ['dq', 'dk', 'dv', 'dScores'], 'the bug changes dv, and dq and dk through dscores');
    assert.ok(leaked > 0, `the bug leaves blocked dscores non-zero: ${leaked} non-zero, dScores [${Array.from(bugged.dScores.data).map((x) => x.toFixed(4))}]`);
    // dq and dk follow from dscores, so the line must show both sources: dv and dscores.
    const missing = [[/\bdv\b/, 'dv'], [/\bdscores\b/, 'dscores'], [/1 \/ Tk/, 'the 1 / Tk taken for a blocked weight']]
      .filter(([re]) => !re.test(exercise.mistake)).map(([, what]) => what);
    assert.deepEqual(missing, [], `the core changes ${changed.join(', ')} (${leaked} blocked dscores are non-zero), but the mistake line "${exercise.mistake}" does not name: ${missing.join(', ')}`);
    assert.match(exercise.repair, /dscores\[~allowed\] = 0/, `the repair zeroes the blocked dscores: "${exercise.repair}"`);
    assert.match(exercise.repair, /\bdv\b/, `the repair says how dv is computed: "${exercise.repair}"`);
  });

  test('a prediction can only name a check that tells bugs apart: no choice fails on every card, and every card has a right choice', () => {
    // PREDICTION_CHECKS is what a card offers; before it existed, every check was offered.
    const offered = exercisesModule.PREDICTION_CHECKS ?? CHECKS;
    const failing = new Map(EXERCISES.map((e) => [e.bug, runChecks(lab, e).filter((r) => !r.passed).map((r) => r.name)]));
    const everywhere = offered.filter((c) => EXERCISES.every((e) => failing.get(e.bug).includes(c.name)))
      .map((c) => `"${c.title}" (fails on ${EXERCISES.length} of ${EXERCISES.length} cards)`);
    assert.deepEqual(everywhere, [], 'a check offered as a prediction fails for every bug, so always choosing it scores every card');
    const unwinnable = EXERCISES.filter((e) => !offered.some((c) => failing.get(e.bug).includes(c.name))).map((e) => e.bug);
    assert.deepEqual(unwinnable, [], 'cards with no right prediction');
    for (const e of EXERCISES) {
      const notOffered = e.catchers.filter((name) => !offered.some((c) => c.name === name));
      assert.deepEqual(notOffered, [], `${e.bug}: its catchers are all choices`);
    }
  });
});

test('"Each query sees itself" passes only for the queries allowed to see themselves, and names the others', () => {
  // The card with no guard for an empty row: query 3 may see no key at all, itself included.
  const empty = runChecks(labs.true, EXERCISES.find((e) => e.bug === 'no-all-masked-guard')).find((r) => r.name === 'diagonalAllowed');
  assert.ok(empty.passed, empty.reason);
  assert.equal(empty.reason, 'Every query allowed to see itself gives its own key some weight; query 3 may not see itself, so it is not checked.');
  const causal = runChecks(labs.true, { ...EXERCISES.find((e) => e.bug === 'no-causal-mask'), bug: null }).find((r) => r.name === 'diagonalAllowed');
  assert.equal(causal.reason, 'Every query gives its own key some weight.');
});

/** `lab` with some of its methods replaced; its other methods are its own. */
function labWith(lab, replaced) {
  return new Proxy(lab, {
    get: (target, key) => (key in replaced ? replaced[key] : typeof target[key] === 'function' ? target[key].bind(target) : target[key]),
  });
}

test('whether a rule is causal is asked of the core\'s causal rule', () => {
  const lab = labs.true;
  const exercise = { ...EXERCISES.find((e) => e.bug === 'no-causal-mask'), bug: null };
  const leak = (l) => runChecks(l, exercise).find((r) => r.name === 'noFutureLeak');
  assert.ok(leak(lab).passed && !leak(lab).skipped, `with the core's rule the causal card is checked: ${leak(lab).reason}`);
  // A lab whose causal flag blocks nothing: the exercise's rule then allows
  // every pair, and so does this lab's causal rule, so the rule is causal by it.
  const flagIgnored = labWith(lab, { allowedPairs: (shape, options = {}) => lab.allowedPairs(shape, { ...options, causal: false }) });
  const judged = leak(flagIgnored);
  assert.ok(!judged.skipped, `by a lab whose causal rule allows every pair, a rule allowing every pair is causal; the check said "${judged.reason}"`);
});

test('the √d_k a scoresScaled failure names is the core\'s scale', () => {
  const lab = labs.true;
  const exercise = EXERCISES.find((e) => e.bug === 'scale-by-dk');
  const reason = (l) => runChecks(l, exercise).find((r) => r.name === 'scoresScaled').reason;
  assert.match(reason(lab), /: √d_k = 2\.000 times too small, so it was divided by d_k\.$/, 'd_k = 4');
  // A lab that scales scores by 1/8 unless told otherwise: its √d_k is 4/8,
  // and the bug's scores (divided by d_k = 4) are 1/0.5 times its own.
  const eighth = labWith(lab, { sdpa: (q, k, v, options) => lab.sdpa(q, k, v, { scale: 1 / 8, ...options }) });
  assert.match(reason(eighth), /: √d_k = 0\.500 times too small, so it was divided by d_k\.$/, 'a lab that scales by 1/8');
});
