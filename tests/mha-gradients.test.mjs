// mha.backward against central differences of the float64 multi-head
// reference and against TensorFlow.js autograd of the same graph (with the
// projections); padded queries, the saved forward, and the refusals.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import { loadAttention, AttentionError } from '../web/attention.js';
import { rng, randomTensor, mhaReference } from './helpers/reference.mjs';
import { compare } from './helpers/compare.mjs';
import { centralDifferences, dot } from './helpers/reference-backward.mjs';

await tf.setBackend('cpu');
const labs = { simd: await loadAttention({ simd: true }), scalar: await loadAttention({ simd: false }) };
const PROJECTIONS = ['qProj', 'kProj', 'vProj', 'outProj'];

function close(got, want, shape, label, tol) {
  return compare(got, want, { shape, label, atol: tol, rtol: tol });
}

/**
 * The cases: module options, inputs, forward options, and the same for the
 * reference (positions resolved, masks as tensors).
 */
function makeCase(seed, { C = 4, H = 2, bias = true, rope = false, cross = false, causal = false,
  keyPadding = false, queryPadding = false, mask = false, B = 2, Tq = 3, Tk = 3 }) {
  const random = rng(seed);
  const query = randomTensor([B, Tq, C], random);
  const keyValue = cross ? randomTensor([B, Tk, C], random) : null;
  const T = cross ? Tk : Tq;
  const dOutput = randomTensor([B, Tq, C], random);
  const options = { causal };
  if (keyPadding) options.keyPaddingMask = { data: Uint8Array.from({ length: B * T }, (_, i) => (i % T === T - 1 ? 0 : 1)), shape: [B, T] };
  if (queryPadding) options.queryPaddingMask = { data: Uint8Array.from({ length: B * Tq }, (_, i) => (i % Tq === 1 ? 0 : 1)), shape: [B, Tq] };
  if (mask) {
    const data = Uint8Array.from({ length: Tq * T }, () => (random() < 0.6 ? 1 : 0));
    for (let i = 0; i < Tq; i++) data[i * T] = 1;
    options.attentionMask = { data, shape: [Tq, T] };
  }
  const module = { dModel: C, numHeads: H, bias, rope, seed };
  const label = `seed ${seed}: C=${C} H=${H} B=${B} Tq=${Tq} Tk=${T} ${JSON.stringify({ bias, rope, cross, causal, keyPadding, queryPadding, mask })}`;
  return { module, query, keyValue, dOutput, options, label, H, rope };
}

const CASES = [
  makeCase(1, {}),
  makeCase(2, { rope: true, causal: true }),
  makeCase(3, { bias: false, rope: true }),
  makeCase(4, { cross: true, Tq: 2, Tk: 5 }),
  makeCase(5, { cross: true, rope: true, bias: false, Tq: 4, Tk: 3, keyPadding: true }),
  makeCase(6, { causal: true, queryPadding: true, keyPadding: true }),
  makeCase(7, { mask: true, C: 6, H: 3, Tq: 5, Tk: 5, B: 1 }),
  makeCase(8, { C: 8, H: 2, rope: true, causal: true, B: 1, Tq: 5 }),
  makeCase(9, { C: 3, H: 1, Tq: 1, B: 1 }),
];

/** Reference loss sum(output * dOutput) for parameters and inputs given as float64 copies. */
function referenceLoss(c, params, query, keyValue) {
  const o = { H: c.H, rope: c.rope, causal: c.options.causal, attentionMask: c.options.attentionMask,
    keyPaddingMask: c.options.keyPaddingMask, queryPaddingMask: c.options.queryPaddingMask };
  return dot(mhaReference(params, query, keyValue, o).output, c.dOutput.data);
}

/** Central differences of the reference loss for every input and parameter. */
function referenceGradients(c, weights) {
  const params = Object.fromEntries(PROJECTIONS.map((name) => [name, {
    weight: { data: Float64Array.from(weights[name].weight.data), shape: weights[name].weight.shape },
    bias: weights[name].bias ? { data: Float64Array.from(weights[name].bias.data), shape: weights[name].bias.shape } : null,
  }]));
  const grads = {
    dQuery: centralDifferences((x) => referenceLoss(c, params, x, c.keyValue), c.query),
    dKeyValue: c.keyValue ? centralDifferences((x) => referenceLoss(c, params, c.query, x), c.keyValue) : null,
  };
  for (const name of PROJECTIONS) {
    grads[name] = {};
    for (const part of ['weight', 'bias']) {
      const t = params[name][part];
      if (!t) continue;
      grads[name][part] = centralDifferences((x) => {
        const swapped = { ...params, [name]: { ...params[name], [part]: x } };
        return referenceLoss(c, swapped, c.query, c.keyValue);
      }, t);
    }
  }
  return grads;
}

function runBackward(lab, c) {
  const mha = lab.createMultiHeadAttention(c.module);
  try {
    mha.forward(c.query, c.keyValue, { ...c.options, saveForBackward: true });
    return { grads: mha.backward(c.dOutput), weights: mha.getWeights() };
  } finally {
    mha.free();
  }
}

/** Every gradient tensor of a backward result as [label, got, shape]. */
function tensorsOf(g) {
  const list = [['dQuery', g.dQuery], ['dKeyValue', g.dKeyValue]];
  for (const name of PROJECTIONS) list.push([`${name}.weight`, g[name].weight], [`${name}.bias`, g[name].bias]);
  return list.filter(([, t]) => t);
}

for (const [build, lab] of Object.entries(labs)) {
  test(`${build} build: every gradient matches central differences of the float64 reference (rel err <= 1e-3)`, (t) => {
    let worst = 0;
    for (const c of CASES) {
      const { grads, weights } = runBackward(lab, c);
      const want = referenceGradients(c, weights);
      assert.equal(grads.dKeyValue === null, c.keyValue === null, `${c.label}: dKeyValue is null exactly for self-attention`);
      assert.equal(grads.qProj.bias === null, !c.module.bias);
      for (const [label, got] of tensorsOf(grads)) {
        const [name, part] = label.split('.');
        const fd = part ? want[name][part] : want[name];
        const e = close(got.data, fd, got.shape, label, 1e-3);
        assert.ok(e.ok, `${c.label}: ${e.report}`);
        worst = Math.max(worst, e.maxAbs);
      }
    }
    t.diagnostic(`${CASES.length} cases; largest absolute error ${worst.toExponential(2)}`);
  });
}

/** The module's graph in TensorFlow.js, without RoPE or masks: tf.grads of sum(output * dOutput). */
function tfMhaGrads(c, weights) {
  const { H } = c;
  const [B, Tq, C] = c.query.shape;
  const D = C / H;
  return tf.tidy(() => {
    const G = tf.tensor(c.dOutput.data, c.dOutput.shape);
    const source = c.keyValue ?? c.query;
    const Tk = source.shape[1];
    const inputs = [tf.tensor(c.query.data, c.query.shape)];
    if (c.keyValue) inputs.push(tf.tensor(c.keyValue.data, c.keyValue.shape));
    const names = [];
    for (const name of PROJECTIONS) {
      inputs.push(tf.tensor(weights[name].weight.data, [C, C]));
      names.push(`${name}.weight`);
      if (weights[name].bias) {
        inputs.push(tf.tensor(weights[name].bias.data, [C]));
        names.push(`${name}.bias`);
      }
    }
    const f = (...args) => {
      const x = args[0];
      const kv = c.keyValue ? args[1] : x;
      const params = {};
      names.forEach((n, i) => { params[n] = args[(c.keyValue ? 2 : 1) + i]; });
      const linear = (input, name, T) => {
        let y = tf.matMul(tf.reshape(input, [B * T, C]), params[`${name}.weight`], false, true);
        if (params[`${name}.bias`]) y = tf.add(y, params[`${name}.bias`]);
        return y;
      };
      const split = (y, T) => tf.transpose(tf.reshape(y, [B, T, H, D]), [0, 2, 1, 3]);
      const q = split(linear(x, 'qProj', Tq), Tq);
      const k = split(linear(kv, 'kProj', Tk), Tk);
      const v = split(linear(kv, 'vProj', Tk), Tk);
      const probs = tf.softmax(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(D)));
      const merged = tf.reshape(tf.transpose(tf.matMul(probs, v), [0, 2, 1, 3]), [B, Tq, C]);
      return tf.sum(tf.mul(tf.reshape(linear(merged, 'outProj', Tq), [B, Tq, C]), G));
    };
    const grads = tf.grads(f)(inputs).map((g) => g.dataSync().slice());
    const out = { dQuery: grads[0], dKeyValue: c.keyValue ? grads[1] : null };
    names.forEach((n, i) => { out[n] = grads[(c.keyValue ? 2 : 1) + i]; });
    return out;
  });
}

test('TensorFlow.js autograd agrees for MHA with projections, no mask (rel err <= 2e-5)', (t) => {
  let worst = 0;
  const unmasked = CASES.filter((c) => !c.rope && !c.options.causal && !c.options.attentionMask
    && !c.options.keyPaddingMask && !c.options.queryPaddingMask);
  assert.ok(unmasked.length >= 3, `unmasked MHA cases to compare with tf.grads: ${unmasked.length}, want at least 3`);
  for (const c of unmasked) {
    const { grads, weights } = runBackward(labs.simd, c);
    const want = tfMhaGrads(c, weights);
    for (const [label, got] of tensorsOf(grads)) {
      const e = close(got.data, want[label], got.shape, `${label} vs tf.grads`, 2e-5);
      assert.ok(e.ok, `${c.label}: ${e.report}`);
      worst = Math.max(worst, e.maxAbs);
    }
  }
  t.diagnostic(`${unmasked.length} cases; largest absolute error ${worst.toExponential(2)}`);
});

test('the SIMD and scalar builds agree within float32 rounding', () => {
  for (const c of CASES) {
    const a = tensorsOf(runBackward(labs.simd, c).grads);
    const b = tensorsOf(runBackward(labs.scalar, c).grads);
    a.forEach(([label, got], i) => {
      const e = close(got.data, b[i][1].data, got.shape, `${label} simd vs scalar`, 1e-5);
      assert.ok(e.ok, `${c.label}: ${e.report}`);
    });
  }
});

describe('the saved forward', () => {
  const lab = labs.simd;
  const c = CASES[5]; // causal, query and key padding

  test('a padded query passes no gradient: its dOutput rows change nothing', () => {
    const mha = lab.createMultiHeadAttention(c.module);
    mha.forward(c.query, { ...c.options, saveForBackward: true });
    const base = mha.backward(c.dOutput);
    const changed = { data: c.dOutput.data.slice(), shape: c.dOutput.shape };
    const [B, Tq, C] = c.query.shape;
    for (let r = 0; r < B * Tq; r++) if (!c.options.queryPaddingMask.data[r]) changed.data.fill(7, r * C, (r + 1) * C);
    assert.deepEqual(mha.backward(changed), base);
    mha.free();
  });

  test('backward uses the last forward that asked, not later ones', () => {
    const mha = lab.createMultiHeadAttention(c.module);
    mha.forward(c.query, { ...c.options, saveForBackward: true });
    const first = mha.backward(c.dOutput);
    mha.forward(randomTensor(c.query.shape, rng(77)), { causal: true });
    assert.deepEqual(mha.backward(c.dOutput), first);
    mha.forward(randomTensor(c.query.shape, rng(78)), { causal: true, saveForBackward: true });
    assert.notDeepEqual(mha.backward(c.dOutput), first);
    mha.free();
  });
});

describe('refusals', () => {
  const lab = labs.simd;
  const c = CASES[1];
  const [B, Tq, C] = c.query.shape;
  const fresh = () => lab.createMultiHeadAttention(c.module);

  test('backward with no saved forward: NO_SAVED_FORWARD', () => {
    const mha = fresh();
    mha.forward(c.query, c.options); // did not ask
    assert.throws(() => mha.backward(c.dOutput), (e) => e instanceof AttentionError && e.code === 'NO_SAVED_FORWARD' && /saveForBackward/.test(e.message));
    mha.free();
  });

  const refusals = [
    ['dOutput of the wrong shape', (m) => m.backward({ data: new Float32Array(B * (Tq + 1) * C), shape: [B, Tq + 1, C] }), 'SHAPE_MISMATCH', /dOutput must have the output's shape/],
    ['dOutput with NaN', (m) => m.backward({ data: c.dOutput.data.map((x, i) => (i === 5 ? NaN : x)), shape: c.dOutput.shape }), 'NON_FINITE_INPUT', /dOutput.*token 1, feature 1/],
    ['a saved forward that used the KV cache', (m) => {
      m.forward(c.query, { causal: true, useCache: true, saveForBackward: true });
      return m.backward(c.dOutput);
    }, 'BACKWARD_THROUGH_CACHE', /KV cache/],
    ['an unknown forward option', (m) => m.forward(c.query, { saveForBackward: 1 }), 'BAD_ARGUMENT', /saveForBackward must be true or false/],
  ];
  for (const [what, call, code, message] of refusals) {
    test(`${what}: ${code}, and nothing changes`, () => {
      const mha = fresh();
      mha.forward(c.query, { ...c.options, saveForBackward: true });
      const before = mha.backward(c.dOutput);
      const weights = mha.getWeights();
      assert.throws(() => call(mha), (e) => e instanceof AttentionError && e.code === code && message.test(e.message), `expected ${code}`);
      assert.deepEqual(mha.getWeights(), weights);
      if (code !== 'BACKWARD_THROUGH_CACHE') assert.deepEqual(mha.backward(c.dOutput), before);
      else {
        // The cached forward replaced the saved one; a plain saving forward brings backward back.
        mha.forward(c.query, { ...c.options, saveForBackward: true });
        assert.deepEqual(mha.backward(c.dOutput), before);
      }
      mha.free();
    });
  }

  test('backward on a freed module: MODULE_FREED', () => {
    const mha = fresh();
    mha.forward(c.query, { ...c.options, saveForBackward: true });
    mha.free();
    assert.throws(() => mha.backward(c.dOutput), (e) => e.code === 'MODULE_FREED');
  });
});
