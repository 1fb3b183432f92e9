// The SDPA backward (lab.sdpaBackward) against three yardsticks: a float64
// reference backward, central differences of the float64 reference forward,
// and TensorFlow.js autograd over the same graph. Plus the exact zeros the
// mask promises, the two builds against each other, and the refusals.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import { loadAttention, AttentionError } from '../web/attention.js';
import { rng, randomTensor, maskAt, sdpaReference } from './helpers/reference.mjs';
import { compare, assertClose } from './helpers/compare.mjs';
import { sdpaBackwardReference, centralDifferences, dot, tfSdpaGrads } from './helpers/reference-backward.mjs';

await tf.setBackend('cpu');
const labs = { simd: await loadAttention({ simd: true }), scalar: await loadAttention({ simd: false }) };
const DIMS = [1, 3, 5, 8];
const GRADS = ['dq', 'dk', 'dv'];

/** Relative error within tol: |got - want| <= tol * max(1, |want|) for every entry. */
function close(got, want, shape, label, tol) {
  const e = compare(got, want, { shape, label, atol: tol, rtol: tol });
  return { ...e, rel: e.max * tol };
}

/** A random small case: batch dims, sizes from DIMS, and one kind of mask. */
function makeCase(seed, kind) {
  const random = rng(seed);
  const pick = () => DIMS[Math.floor(random() * DIMS.length)];
  const batch = [[], [2], [2, 2]][seed % 3];
  const Tq = pick();
  const Tk = kind === 'self-causal' ? Tq : pick();
  const dk = pick();
  const dv = pick();
  const q = randomTensor([...batch, Tq, dk], random);
  const k = randomTensor([...batch, Tk, dk], random);
  const v = randomTensor([...batch, Tk, dv], random);
  const dOutput = randomTensor([...batch, Tq, dv], random);
  const options = {};
  if (kind === 'causal' || kind === 'self-causal') options.causal = true;
  if (kind === 'mask') {
    // Random allowed pairs, at least one per query row.
    const data = Uint8Array.from({ length: Tq * Tk }, () => (random() < 0.6 ? 1 : 0));
    for (let i = 0; i < Tq; i++) data[i * Tk + Math.floor(random() * Tk)] = 1;
    options.mask = { data, shape: [Tq, Tk] };
  }
  if (kind === 'padding') {
    // Key padding per batch row: the last keys are padding, the first never.
    const B = batch[0] ?? 1;
    const data = new Uint8Array(B * Tk);
    for (let b = 0; b < B; b++) {
      const real = 1 + Math.floor(random() * Tk);
      for (let j = 0; j < real; j++) data[b * Tk + j] = 1;
    }
    options.mask = { data, shape: batch.length === 2 ? [B, 1, 1, Tk] : batch.length === 1 ? [B, 1, Tk] : [1, Tk] };
  }
  const label = `seed ${seed} ${kind}: batch [${batch}] Tq=${Tq} Tk=${Tk} dk=${dk} dv=${dv}`;
  return { q, k, v, dOutput, options, batch, Tq, Tk, label };
}

const KINDS = ['none', 'mask', 'causal', 'self-causal', 'padding'];
const CASES = [];
for (let seed = 1; CASES.length < 40; seed++) CASES.push(makeCase(seed, KINDS[seed % KINDS.length]));

/** L = sum(reference output * dOutput) with one of q, k, v replaced. */
function referenceLoss(c, which) {
  return (x) => {
    const inputs = { q: c.q, k: c.k, v: c.v, [which]: x };
    return dot(sdpaReference(inputs.q, inputs.k, inputs.v, c.options).output, c.dOutput.data);
  };
}

/** allowed(flat index into (batch…, Tq, Tk)) under the case's rule. */
function allowedAtFlat(c) {
  const target = [...c.batch, c.Tq, c.Tk];
  return (at) => {
    const idx = [];
    for (let d = target.length - 1, r = at; d >= 0; d--) { idx.unshift(r % target[d]); r = Math.floor(r / target[d]); }
    const [i, j] = idx.slice(-2);
    return (!c.options.causal || j <= i) && (!c.options.mask || maskAt(c.options.mask, target, idx));
  };
}

for (const [build, lab] of Object.entries(labs)) {
  describe(`${build} build`, () => {
    test('matches the float64 reference backward and central differences (rel err <= 1e-3)', (t) => {
      let worst = { max: 0, report: 'none' };
      for (const c of CASES) {
        const got = lab.sdpaBackward(c.q, c.k, c.v, c.dOutput, c.options);
        const want = sdpaBackwardReference(c.q, c.k, c.v, c.dOutput, c.options);
        for (const [name, which] of [['dq', 'q'], ['dk', 'k'], ['dv', 'v']]) {
          const fd = centralDifferences(referenceLoss(c, which), c[which]);
          // The reference backward is itself checked against the differences.
          const ref = close(want[name], fd, c[which].shape, `reference ${name} vs differences`, 1e-6);
          assert.ok(ref.ok, `${c.label}: ${ref.report}`);
          for (const [yardstick, label] of [[want[name], 'reference'], [fd, 'differences']]) {
            const e = close(got[name].data, yardstick, c[which].shape, `${name} vs ${label}`, 1e-3);
            assert.ok(e.ok, `${c.label}: ${e.report}`);
            if (e.rel >= worst.max) worst = { max: e.rel, report: `${c.label}: ${e.report}` };
          }
          assert.deepEqual(got[name].shape, c[which].shape);
        }
        for (const name of ['dScores', 'dProbs']) {
          const e = close(got[name].data, want[name], [...c.batch, c.Tq, c.Tk], name, 1e-3);
          assert.ok(e.ok, `${c.label}: ${e.report}`);
          assert.deepEqual(got[name].shape, [...c.batch, c.Tq, c.Tk]);
        }
      }
      t.diagnostic(`${CASES.length} cases; worst ${worst.report}`);
    });

    test('blocked pairs get exactly 0 in dScores and dProbs; unseen keys exactly 0 in dk and dv', () => {
      let blocked = 0;
      let unseen = 0;
      for (const c of CASES.filter((x) => x.options.mask || x.options.causal)) {
        const got = lab.sdpaBackward(c.q, c.k, c.v, c.dOutput, c.options);
        const allowed = allowedAtFlat(c);
        for (let at = 0; at < got.dScores.data.length; at++) {
          if (allowed(at)) continue;
          blocked++;
          assert.ok(Object.is(got.dScores.data[at], 0), `${c.label}: dScores[${at}] = ${got.dScores.data[at]}`);
          assert.ok(Object.is(got.dProbs.data[at], 0), `${c.label}: dProbs[${at}] = ${got.dProbs.data[at]}`);
        }
        // A key is unseen when no query of its batch row may attend to it.
        const nBatch = got.dScores.data.length / (c.Tq * c.Tk);
        for (let n = 0; n < nBatch; n++) {
          for (let j = 0; j < c.Tk; j++) {
            let seen = false;
            for (let i = 0; i < c.Tq && !seen; i++) seen = allowed((n * c.Tq + i) * c.Tk + j);
            if (seen) continue;
            unseen++;
            for (const [name, width] of [['dk', c.k.shape.at(-1)], ['dv', c.v.shape.at(-1)]]) {
              const row = got[name].data.subarray((n * c.Tk + j) * width, (n * c.Tk + j + 1) * width);
              assert.ok(row.every((x) => Object.is(x, 0)), `${c.label}: ${name} of unseen key ${j} in batch ${n} is [${row}]`);
            }
          }
        }
      }
      assert.ok(blocked > 100 && unseen > 5, `the cases block ${blocked} pairs and hide ${unseen} keys`);
    });
  });
}

test('TensorFlow.js autograd agrees on unmasked cases (rel err <= 2e-5)', (t) => {
  let worst = 0;
  let n = 0;
  for (const c of CASES.filter((x) => !x.options.mask && !x.options.causal)) {
    const got = labs.simd.sdpaBackward(c.q, c.k, c.v, c.dOutput, c.options);
    const want = tfSdpaGrads(tf, c.q, c.k, c.v, c.dOutput);
    for (const name of GRADS) {
      const e = close(got[name].data, want[name], got[name].shape, `${name} vs tf.grads`, 2e-5);
      assert.ok(e.ok, `${c.label}: ${e.report}`);
      worst = Math.max(worst, e.rel);
    }
    n++;
  }
  assert.ok(n >= 5, `unmasked cases compared with tf.grads: ${n}, want at least 5`);
  t.diagnostic(`${n} cases; worst relative error ${worst.toExponential(2)}`);
});

test('TensorFlow.js autograd agrees with a causal mask added as -1e9 (rel err <= 2e-5)', () => {
  for (const c of CASES.filter((x) => x.options.causal).slice(0, 4)) {
    const data = new Float32Array(c.Tq * c.Tk);
    for (let i = 0; i < c.Tq; i++) for (let j = i + 1; j < c.Tk; j++) data[i * c.Tk + j] = -1e9;
    const got = labs.simd.sdpaBackward(c.q, c.k, c.v, c.dOutput, c.options);
    const want = tfSdpaGrads(tf, c.q, c.k, c.v, c.dOutput, { additiveMask: { data, shape: [c.Tq, c.Tk] } });
    for (const name of GRADS) {
      const e = close(got[name].data, want[name], got[name].shape, `${name} vs tf.grads`, 2e-5);
      assert.ok(e.ok, `${c.label}: ${e.report}`);
    }
  }
});

test('the SIMD and scalar builds agree within float32 rounding', () => {
  for (const c of CASES) {
    const a = labs.simd.sdpaBackward(c.q, c.k, c.v, c.dOutput, c.options);
    const b = labs.scalar.sdpaBackward(c.q, c.k, c.v, c.dOutput, c.options);
    for (const name of [...GRADS, 'dScores', 'dProbs']) {
      const e = close(a[name].data, b[name].data, a[name].shape, `${name} simd vs scalar`, 1e-5);
      assert.ok(e.ok, `${c.label}: ${e.report}`);
    }
  }
});

test('needWeights: false gives the same dq, dk, dv and no (Tq, Tk) matrices', () => {
  for (const c of CASES.slice(0, 10)) {
    const full = labs.simd.sdpaBackward(c.q, c.k, c.v, c.dOutput, c.options);
    const lean = labs.simd.sdpaBackward(c.q, c.k, c.v, c.dOutput, { ...c.options, needWeights: false });
    assert.deepEqual(Object.keys(lean), GRADS);
    for (const name of GRADS) assert.deepEqual(lean[name], full[name], c.label);
  }
});

test('given the forward\'s weights, the backward returns what it returns when it recomputes them, bit for bit', (t) => {
  let n = 0;
  for (const c of CASES) {
    if (c.options.bug) continue;
    for (const lab of Object.values(labs)) {
      const { weights } = lab.sdpa(c.q, c.k, c.v, c.options);
      const recomputed = lab.sdpaBackward(c.q, c.k, c.v, c.dOutput, c.options);
      const saved = lab.sdpaBackward(c.q, c.k, c.v, c.dOutput, { ...c.options, weights });
      for (const name of [...GRADS, 'dScores', 'dProbs']) {
        const at = saved[name].data.findIndex((x, i) => !Object.is(x, recomputed[name].data[i]));
        assert.equal(at, -1, `${c.label} (${lab.simd ? 'simd' : 'scalar'}): ${name}[${at}] is ${saved[name].data[at]} from the weights, ${recomputed[name].data[at]} recomputed`);
      }
      n++;
    }
  }
  // The two backward bugs take the weights too.
  const c = CASES.find((x) => x.options.causal && !x.options.bug);
  for (const bug of ['softmax-backward-no-rowsum', 'grad-through-blocked']) {
    const { weights } = labs.simd.sdpa(c.q, c.k, c.v, c.options);
    const recomputed = labs.simd.sdpaBackward(c.q, c.k, c.v, c.dOutput, { ...c.options, bug });
    const saved = labs.simd.sdpaBackward(c.q, c.k, c.v, c.dOutput, { ...c.options, bug, weights });
    for (const name of GRADS) assert.deepEqual(saved[name], recomputed[name], `${bug}: ${name}`);
  }
  assert.ok(n >= 20, `cases × builds compared, saved against recomputed weights: ${n}, want at least 20`);
  t.diagnostic(`${n} cases`);
});

test('a larger case exercises the SIMD tiles and tails (T = 37, d = 19)', () => {
  const random = rng(99);
  const q = randomTensor([2, 37, 19], random);
  const k = randomTensor([2, 41, 19], random);
  const v = randomTensor([2, 41, 13], random);
  const g = randomTensor([2, 37, 13], random);
  const options = { causal: true };
  const want = sdpaBackwardReference(q, k, v, g, options);
  for (const lab of Object.values(labs)) {
    const got = lab.sdpaBackward(q, k, v, g, options);
    for (const name of GRADS) {
      const e = close(got[name].data, want[name], got[name].shape, name, 1e-4);
      assert.ok(e.ok, `${lab.simd ? 'simd' : 'scalar'}: ${e.report}`);
    }
    const saved = lab.sdpaBackward(q, k, v, g, { ...options, weights: lab.sdpa(q, k, v, options).weights });
    for (const name of GRADS) assert.deepEqual(saved[name], got[name], `${lab.simd ? 'simd' : 'scalar'}: ${name} from the saved weights`);
  }
});

test('the backward refuses a call whose forward output overflows, with the forward\'s message', () => {
  // Two weights that round to a sum just above 1 times v at FLT_MAX: the
  // forward's output overflows float32. The gradients alone would be finite
  // with a small dOutput, but they are the gradients of a refused forward.
  const FLT_MAX = 3.4028234663852886e38;
  const q = [[1]], k = [[0], [0.09375]], v = [[FLT_MAX], [FLT_MAX]], dOutput = [[1e-30]];
  for (const [build, lab] of Object.entries(labs)) {
    let forward;
    assert.throws(() => lab.sdpa(q, k, v), (err) => { forward = err; return err.code === 'OVERFLOW'; },
      `${build}: the forward refuses`);
    assert.match(forward.message, /output overflows float32 at batch 0, head 0, query 0, column 0: v is too large/);
    const weights = lab.sdpa(q, k, [[1], [1]]).weights; // the same weights, with a v that fits
    for (const options of [{}, { weights }]) {
      assert.throws(() => lab.sdpaBackward(q, k, v, dOutput, options),
        (err) => err instanceof AttentionError && err.code === 'OVERFLOW' && err.message === forward.message,
        `${build} ${JSON.stringify(options)}: the backward refuses as the forward does (${forward.message})`);
    }
  }
});

describe('refusals', () => {
  const lab = labs.simd;
  const q = [[1, 0], [0, 1], [1, 1]];
  const k = [[1, 2], [0, 1]];
  const v = [[1, 2, 3], [4, 5, 6]];
  const g = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
  const baseline = lab.sdpaBackward(q, k, v, g);

  const cases = [
    ['dOutput of the wrong shape', () => lab.sdpaBackward(q, k, v, [[1, 0, 0], [0, 1, 0]]), 'SHAPE_MISMATCH', /dOutput/],
    ['dOutput with NaN', () => lab.sdpaBackward(q, k, v, [[1, 0, 0], [0, NaN, 0], [0, 0, 1]]), 'NON_FINITE_INPUT', /dOutput.*NaN.*row 1, column 1/],
    ['dOutput with Infinity', () => lab.sdpaBackward(q, k, v, [[1, 0, 0], [0, 0, 0], [0, 0, -Infinity]]), 'NON_FINITE_INPUT', /dOutput.*-Infinity/],
    ['no dOutput', () => lab.sdpaBackward(q, k, v), 'BAD_ARGUMENT', /dOutput is required/],
    ['an unknown option', () => lab.sdpaBackward(q, k, v, g, { probs: true }), 'BAD_ARGUMENT', /unknown option "probs"/],
    ['weights not a tensor', () => lab.sdpaBackward(q, k, v, g, { weights: true }), 'BAD_ARGUMENT', /weights must be a tensor/],
    ['weights of the wrong shape', () => lab.sdpaBackward(q, k, v, g, { weights: [[1, 0], [0, 1]] }), 'SHAPE_MISMATCH', /weights must have the shape of sdpa's weights \(batch…, Tq, Tk\) \[3, 2\]; got \[2, 2\]/],
    ['weights with NaN', () => lab.sdpaBackward(q, k, v, g, { weights: [[1, 0], [NaN, 1], [0.5, 0.5]] }), 'NON_FINITE_INPUT', /weights \(saved probabilities\) have a non-finite value \(NaN\) at batch 0, head 0, query 1, key 0/],
    ['weights above 1', () => lab.sdpaBackward(q, k, v, g, { weights: [[1, 0], [0, 1], [1.5, -0.5]] }), 'BAD_ARGUMENT', /weights .*hold 1\.5 at batch 0, head 0, query 2, key 0: a probability is in \[0, 1\]/],
    ['weights whose row does not sum to 1', () => lab.sdpaBackward(q, k, v, g, { weights: [[1, 0], [0.25, 0.25], [0.5, 0.5]] }), 'BAD_ARGUMENT', /query 1 sum to 0\.5, not 1/],
    ['weights on a blocked pair', () => lab.sdpaBackward(q, k, v, g, { causal: true, weights: [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]] }), 'BAD_ARGUMENT', /query 0, key 1, a pair the rule blocks/],
    ['weights with a forward bug', () => lab.sdpaBackward(q, k, v, g, { bug: 'no-scale', weights: lab.sdpa(q, k, v).weights }), 'BAD_ARGUMENT', /no bug or a backward bug only/],
    ['needWeights not a boolean', () => lab.sdpaBackward(q, k, v, g, { needWeights: 0 }), 'BAD_ARGUMENT', /needWeights must be true or false/],
    ['an unknown bug', () => lab.sdpaBackward(q, k, v, g, { bug: 'forgot-everything' }), 'BAD_ARGUMENT', /forgot-everything/],
    ['a head bug', () => lab.sdpaBackward(q, k, v, g, { bug: 'heads-without-transpose' }), 'BAD_ARGUMENT', /mha\.forward/],
    ['a query with no key', () => lab.sdpaBackward(q, k, v, g, { mask: [[1, 1], [0, 0], [1, 0]] }), 'ALL_MASKED_ROW', /query 1/],
    ['overflowing scores', () => lab.sdpaBackward([[3e38, 3e38]], k, v, [[1, 1, 1]]), 'OVERFLOW', /scores overflow/],
  ];
  for (const [what, call, code, message] of cases) {
    test(`${what}: ${code}, and later results are unchanged`, () => {
      assert.throws(call, (err) => err instanceof AttentionError && err.code === code && message.test(err.message),
        `expected ${code} matching ${message}`);
      const after = lab.sdpaBackward(q, k, v, g);
      for (const name of [...GRADS, 'dScores', 'dProbs']) assert.deepEqual(after[name], baseline[name]);
    });
  }
});

describe('the gradient lesson in the core: loss, descent step, finite-difference slope', () => {
  for (const [build, lab] of Object.entries(labs)) {
    test(`${build}: squaredError, descend and sdpaLossSlope agree with float64 and with sdpaBackward`, () => {
      const random = rng(2024);
      const q = randomTensor([3, 4], random);
      const k = randomTensor([5, 4], random);
      const v = randomTensor([5, 2], random);
      const target = randomTensor([3, 2], random);
      const options = { causal: true };
      const { output } = lab.sdpa(q, k, v, options);

      // The loss and its gradient against float64.
      const { loss, dOutput } = lab.squaredError(output, target);
      let want = 0;
      const wantGrad = Array.from(output.data, (o, i) => o - target.data[i]);
      for (const d of wantGrad) want += 0.5 * d * d;
      assert.ok(Math.abs(loss - want) <= 1e-6 * Math.max(1, want), `loss ${loss}, float64 ${want}`);
      assertClose(dOutput.data, wantGrad, { shape: [3, 2], label: 'dOutput', atol: 1e-7, rtol: 1e-7 });

      // One descent step is x - lr dx.
      const grads = lab.sdpaBackward(q, k, v, dOutput, options);
      const next = lab.descend(q, grads.dq, 0.5);
      assertClose(next.data, Array.from(q.data, (x, i) => x - 0.5 * grads.dq.data[i]), { shape: q.shape, label: 'q - lr dq', atol: 1e-6, rtol: 1e-6 });
      const stepped = lab.squaredError(lab.sdpa(next, k, v, options).output, target).loss;
      assert.ok(stepped < loss, `a small step lowers the loss: ${loss} before, ${stepped} after`);

      // The slope of every entry of q matches the analytic gradient.
      for (let at = 0; at < q.data.length; at++) {
        const slope = lab.sdpaLossSlope(q, k, v, target, { ...options, at, eps: 1e-2 });
        const analytic = grads.dq.data[at];
        assert.ok(Math.abs(slope - analytic) <= 2e-3 * Math.max(1, Math.abs(analytic)),
          `q entry ${at}: slope ${slope}, dq ${analytic}, difference ${Math.abs(slope - analytic)}`);
      }
    });
  }

  const lab = labs.simd;
  const out = [[1, 2], [3, 4]];
  const cases = [
    ['squaredError with a target of another shape', () => lab.squaredError(out, [[1, 2]]), 'SHAPE_MISMATCH', /target must have the shape/],
    ['squaredError with a NaN target', () => lab.squaredError(out, [[1, NaN], [0, 0]]), 'NON_FINITE_INPUT', /target/],
    ['squaredError whose loss overflows', () => lab.squaredError([[3e38]], [[-3e38]]), 'OVERFLOW', /loss overflows/],
    ['descend with an Infinity step', () => lab.descend(out, out, Infinity), 'NON_FINITE_INPUT', /step size/],
    ['descend with a string step', () => lab.descend(out, out, '0.1'), 'BAD_ARGUMENT', /lr must be a number/],
    ['descend that overflows', () => lab.descend([[3e38]], [[-3e38]], 10), 'OVERFLOW', /step overflows/],
    ['sdpaLossSlope outside q', () => lab.sdpaLossSlope(out, out, out, out, { at: 4 }), 'BAD_ARGUMENT', /at must be between 0 and 3/],
    ['sdpaLossSlope with eps 0', () => lab.sdpaLossSlope(out, out, out, out, { eps: 0 }), 'BAD_ARGUMENT', /eps must be a positive number/],
    ['sdpaLossSlope with an eps that is 0 in float32', () => lab.sdpaLossSlope(out, out, out, out, { eps: 1e-50 }), 'BAD_ARGUMENT', /got 1e-50, which is 0 in float32/],
    ['sdpaLossSlope with a wrong target', () => lab.sdpaLossSlope(out, out, out, [[1]]), 'SHAPE_MISMATCH', /target/],
    ['sdpaLossSlope with a query that sees no key', () => lab.sdpaLossSlope(out, out, out, out, { mask: [[1, 1], [0, 0]] }), 'ALL_MASKED_ROW', /query 1/],
  ];
  const baseline = lab.squaredError(out, [[0, 0], [0, 0]]);
  for (const [what, call, code, message] of cases) {
    test(`${what}: ${code}, and later results are unchanged`, () => {
      assert.throws(call, (err) => err instanceof AttentionError && err.code === code && message.test(err.message),
        `expected ${code} matching ${message}`);
      assert.deepEqual(lab.squaredError(out, [[0, 0], [0, 0]]), baseline);
    });
  }
});
