// mha.test.mjs: multi-head attention against the float64 reference
// (helpers/reference.mjs: project (x W^T + b), slice each head's columns,
// attend per head, concatenate, output projection).
//
// Every test runs twice, on the SIMD and on the scalar wasm build.
// Run: node --test tests/mha.test.mjs
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention, AttentionError } from '../web/attention.js';
import { rng as uniform, mhaReference } from './helpers/reference.mjs';
import { assertClose, largestMagnitude } from './helpers/compare.mjs';

// ---------------------------------------------------------------------------
// Helpers: random numbers, tensors, comparison (the float64 reference is
// helpers/reference.mjs)
// ---------------------------------------------------------------------------

/** The tests' seeded generator (helpers/reference.mjs), so every run sees the same inputs. */
function makeRng(seed) {
  const next = uniform(seed);
  next.int = (n) => Math.floor(next() * n);                 // 0..n-1
  next.pick = (list) => list[next.int(list.length)];
  next.normal = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  return next;
}

/** A random float tensor { data: Float32Array, shape }. */
function randomTensor(rng, shape, scale = 1) {
  const n = shape.reduce((a, b) => a * b, 1);
  return { data: Float32Array.from({ length: n }, () => scale * rng.normal()), shape };
}

/** A random 0/1 mask; entries on the last axis at index 0 are always allowed. */
function randomMask(rng, shape, pAllowed = 0.6) {
  const n = shape.reduce((a, b) => a * b, 1);
  const last = shape[shape.length - 1];
  return { data: Uint8Array.from({ length: n }, (_, i) => (i % last === 0 || rng() < pAllowed ? 1 : 0)), shape };
}

/** x (B, T, C) -> x[:, t0:t1, :]. */
function sliceTime(x, t0, t1) {
  const [B, T, C] = x.shape;
  const out = new Float32Array(B * (t1 - t0) * C);
  for (let b = 0; b < B; b++) out.set(x.data.subarray((b * T + t0) * C, (b * T + t1) * C), b * (t1 - t0) * C);
  return { data: out, shape: [B, t1 - t0, C] };
}

/** m (B, T) -> m[:, t0:t1]. */
function sliceMask(m, t0, t1) {
  const [B, T] = m.shape;
  const out = new Uint8Array(B * (t1 - t0));
  for (let b = 0; b < B; b++) out.set(m.data.subarray(b * T + t0, b * T + t1), b * (t1 - t0));
  return { data: out, shape: [B, t1 - t0] };
}

/** Join tensors (B, Ti, C) along time. */
function concatTime(parts) {
  const [B, , C] = parts[0].shape;
  const T = parts.reduce((sum, p) => sum + p.shape[1], 0);
  const out = new Float32Array(B * T * C);
  for (let b = 0; b < B; b++) {
    let t = 0;
    for (const p of parts) {
      const Ti = p.shape[1];
      out.set(p.data.subarray(b * Ti * C, (b + 1) * Ti * C), (b * T + t) * C);
      t += Ti;
    }
  }
  return { data: out, shape: [B, T, C] };
}

// The largest error of each kind seen, for the summary at the end.
const maxErrors = {};

/**
 * Check `actual` against `expected`: every |actual - expected| <= tol * max(1, largest |expected|),
 * an absolute tolerance scaled by the tensor's magnitude. A failure lists the
 * worst entries; `kind` groups the largest error for the summary.
 */
function assertNear(actual, expected, shape, tol, label, kind = label) {
  const atol = tol * Math.max(1, largestMagnitude(expected));
  const { max } = assertClose(actual, expected, { shape, label, atol });
  maxErrors[kind] = Math.max(maxErrors[kind] ?? 0, max * tol);
}

/** Run fn and check it throws an AttentionError with this code (and message). */
function assertCode(fn, code, message) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof AttentionError, `expected an AttentionError, got ${err}`);
    assert.equal(err.code, code, `wrong code; message: ${err.message}`);
    if (message) assert.match(err.message, message);
    return true;
  });
}

/** Random weights for every projection, larger than the default init. */
function randomWeights(rng, C, bias, scale) {
  return Object.fromEntries(['qProj', 'kProj', 'vProj', 'outProj'].map((name) => [name, {
    weight: randomTensor(rng, [C, C], scale),
    bias: bias ? randomTensor(rng, [C], scale) : null,
  }]));
}

/** Identity (C, C) and zero bias, as { weight, bias } for every projection. */
function identityWeights(C) {
  const weight = { data: new Float32Array(C * C), shape: [C, C] };
  for (let i = 0; i < C; i++) weight.data[i * C + i] = 1;
  return { qProj: { weight }, kProj: { weight }, vProj: { weight }, outProj: { weight } };
}

// ---------------------------------------------------------------------------
// The tests, for both builds
// ---------------------------------------------------------------------------

for (const simd of [true, false]) {
  const build = simd ? 'simd' : 'scalar';

  describe(`multi-head attention (${build} build)`, () => {
    let lab;
    before(async () => { lab = await loadAttention({ simd }); });

    test('identity projections, no bias, H = 1: equals lab.sdpa', () => {
      const rng = makeRng(1);
      const C = 6;
      const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: 1, bias: false });
      mha.setWeights(identityWeights(C));
      const x = randomTensor(rng, [2, 5, C]);
      for (const causal of [false, true]) {
        const ours = mha.forward(x, { causal });
        const plain = lab.sdpa(x, x, x, { causal });
        assert.deepEqual(ours.output.shape, [2, 5, C]);
        assert.deepEqual(ours.weights.shape, [2, 1, 5, 5]);
        assertNear(ours.output.data, plain.output.data, [2, 5, C], 1e-6, `output, causal=${causal}`, 'identity vs sdpa');
        assertNear(ours.weights.data, plain.weights.data, [2, 1, 5, 5], 1e-6, `weights, causal=${causal}`, 'identity vs sdpa');
        // Both take the same path through the core, so they agree to the bit.
        assert.deepEqual(ours.output.data, plain.output.data);
      }
      mha.free();
    });

    test('random configurations match the float64 reference', () => {
      const rng = makeRng(simd ? 2024 : 2025);
      const maskForms = ['none', '2d', '3d', '4d 1,1', '4d B,1', '4d 1,H', '4d B,H'];
      const seen = new Set();
      for (let trial = 0; trial < 150; trial++) {
        // Head dims 1..8 (odd ones included) times 1..5 heads: dModel 1..40.
        const D = rng.pick([1, 2, 3, 4, 5, 6, 8]);
        const H = rng.pick([1, 2, 3, 4, 5]);
        const C = H * D;
        const B = 1 + rng.int(3);
        const Tq = 1 + rng.int(7);
        const cross = rng() < 0.4;
        const Tk = cross ? 1 + rng.int(9) : Tq;
        const bias = rng() < 0.7;
        const rope = D % 2 === 0 && rng() < 0.5;
        let causal = rng() < 0.5;
        const maskForm = rng.pick(maskForms);
        seen.add(maskForm);

        // Positions: the key offset, and a query offset given or inferred as
        // mha.forward does (self-attention: the key offset; cross: 0).
        const kOffset = rng() < 0.3 ? rng.int(6) : 0;
        const qGiven = rng() < 0.3 ? kOffset + rng.int(4) : undefined;
        const qOffset = qGiven ?? (cross ? 0 : kOffset);
        if (qOffset < kOffset) causal = false; // would leave all-masked rows

        const config = `trial ${trial}: B=${B} Tq=${Tq} Tk=${Tk} C=${C} H=${H} D=${D} ${cross ? 'cross' : 'self'} `
          + `bias=${bias} rope=${rope} causal=${causal} mask=${maskForm} offsets q=${qOffset} k=${kOffset}`;
        const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: H, bias, rope, seed: trial });
        if (rng() < 0.5) mha.setWeights(randomWeights(rng, C, bias, 0.5));
        const query = randomTensor(rng, [B, Tq, C], 1.5);
        const keyValue = cross ? randomTensor(rng, [B, Tk, C], 1.5) : null;

        const options = { causal };
        if (kOffset) options.keyPositionOffset = kOffset;
        if (qGiven !== undefined) options.queryPositionOffset = qGiven;
        const shapes = { '2d': [Tq, Tk], '3d': [B, Tq, Tk], '4d 1,1': [1, 1, Tq, Tk],
          '4d B,1': [B, 1, Tq, Tk], '4d 1,H': [1, H, Tq, Tk], '4d B,H': [B, H, Tq, Tk] };
        if (maskForm !== 'none') options.attentionMask = randomMask(rng, shapes[maskForm]);
        if (rng() < 0.5) options.keyPaddingMask = randomMask(rng, [B, Tk]);
        if (rng() < 0.4) options.queryPaddingMask = randomMask(rng, [B, Tq], 0.7);

        const got = cross ? mha.forward(query, keyValue, options) : mha.forward(query, options);
        const want = mhaReference(mha.getWeights(), query, keyValue, {
          H, rope, causal, qOffset, kOffset, attentionMask: options.attentionMask,
          keyPaddingMask: options.keyPaddingMask, queryPaddingMask: options.queryPaddingMask,
        });
        assert.deepEqual(got.output.shape, [B, Tq, C], config);
        assert.deepEqual(got.weights.shape, [B, H, Tq, Tk], config);
        assertNear(got.output.data, want.output, [B, Tq, C], 2e-5, `output, ${config}`, 'random configs: output');
        assertNear(got.weights.data, want.weights, [B, H, Tq, Tk], 2e-5, `weights, ${config}`, 'random configs: weights');

        // Without weights, the output is the same.
        const lean = cross ? mha.forward(query, keyValue, { ...options, needWeights: false })
          : mha.forward(query, { ...options, needWeights: false });
        assert.equal(lean.weights, undefined);
        assertNear(lean.output.data, got.output.data, [B, Tq, C], 1e-6, `needWeights: false, ${config}`, 'needWeights false vs true');
        mha.free();
      }
      assert.equal(seen.size, maskForms.length, 'every mask form was tried');
    });

    test('larger shapes (SIMD tails, many heads) match the reference', () => {
      const rng = makeRng(77);
      const cases = [
        { B: 2, Tq: 37, Tk: 37, C: 72, H: 6, rope: true, causal: true },
        { B: 1, Tq: 33, Tk: 45, C: 64, H: 8, rope: false, causal: false },
        { B: 3, Tq: 9, Tk: 13, C: 35, H: 7, rope: false, causal: true },
      ];
      for (const { B, Tq, Tk, C, H, rope, causal } of cases) {
        const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: H, rope, seed: C });
        const query = randomTensor(rng, [B, Tq, C]);
        const keyValue = Tk === Tq ? null : randomTensor(rng, [B, Tk, C]);
        const got = mha.forward(query, keyValue, { causal });
        const want = mhaReference(mha.getWeights(), query, keyValue, { H, rope, causal });
        const label = `B=${B} Tq=${Tq} Tk=${Tk} C=${C} H=${H}`;
        assertNear(got.output.data, want.output, [B, Tq, C], 2e-5, `output, ${label}`, 'random configs: output');
        assertNear(got.weights.data, want.weights, [B, H, Tq, Tk], 2e-5, `weights, ${label}`, 'random configs: weights');
        mha.free();
      }
    });

    test("the lesson's example: B=2, T=5, dModel=32, H=4, causal", () => {
      const mha = lab.createMultiHeadAttention({ dModel: 32, numHeads: 4, seed: 0 });
      const x = randomTensor(makeRng(5), [2, 5, 32]);
      const { output, weights } = mha.forward(x, { causal: true });
      assert.deepEqual(output.shape, [2, 5, 32]);
      assert.deepEqual(weights.shape, [2, 4, 5, 5]);
      for (let bh = 0; bh < 8; bh++) {
        for (let i = 0; i < 5; i++) {
          let sum = 0;
          for (let j = 0; j < 5; j++) {
            const w = weights.data[(bh * 5 + i) * 5 + j];
            if (j > i) assert.equal(w, 0, `weight above the diagonal at [${bh >> 2}, ${bh & 3}, ${i}, ${j}]`);
            sum += w;
          }
          assert.ok(Math.abs(sum - 1) < 1e-5, `row sum ${sum}`);
        }
      }
      const want = mhaReference(mha.getWeights(), x, null, { H: 4, causal: true });
      assertNear(output.data, want.output, output.shape, 2e-5, 'seed example output', 'random configs: output');
      mha.free();
    });

    test('cross-attention Tq=4, Tk=7 with a source padding mask', () => {
      const rng = makeRng(9);
      const C = 16;
      const H = 4;
      const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: H, seed: 3 });
      const query = randomTensor(rng, [2, 4, C]);
      const source = randomTensor(rng, [2, 7, C]);
      // batch 0: 5 real keys then 2 padded; batch 1: 3 real then 4 padded.
      const keyPaddingMask = { data: Uint8Array.from([1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0]), shape: [2, 7] };
      const { output, weights } = mha.forward(query, source, { keyPaddingMask });
      assert.deepEqual(output.shape, [2, 4, C]);
      assert.deepEqual(weights.shape, [2, H, 4, 7]);
      for (let b = 0; b < 2; b++) {
        for (let h = 0; h < H; h++) {
          for (let i = 0; i < 4; i++) {
            let sum = 0;
            for (let j = 0; j < 7; j++) {
              const w = weights.data[((b * H + h) * 4 + i) * 7 + j];
              if (!keyPaddingMask.data[b * 7 + j]) assert.equal(w, 0, `padded key got weight at [${b}, ${h}, ${i}, ${j}]`);
              else assert.ok(w > 0, `real key got weight ${w} at [${b}, ${h}, ${i}, ${j}], want > 0`);
              sum += w;
            }
            assert.ok(Math.abs(sum - 1) < 1e-5, `weights of row [${b}, ${h}, ${i}] sum to ${sum}, off 1 by ${Math.abs(sum - 1)} (tolerance 1e-5)`);
          }
        }
      }
      const want = mhaReference(mha.getWeights(), query, source, { H, keyPaddingMask });
      assertNear(output.data, want.output, output.shape, 2e-5, 'cross-attention output', 'random configs: output');
      mha.free();
    });

    test('RoPE: equal shifts of query and key positions leave the weights unchanged', () => {
      const rng = makeRng(11);
      const C = 24;
      const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: 3, rope: true, seed: 4 });
      const x = randomTensor(rng, [2, 6, C]);
      const kv = randomTensor(rng, [2, 9, C]);
      const pairs = [
        // self-attention: the query offset follows the key offset
        [[x, null, {}], [x, null, { keyPositionOffset: 13 }]],
        [[x, null, { causal: true }], [x, null, { causal: true, keyPositionOffset: 100 }]],
        [[x, null, { queryPositionOffset: 2, keyPositionOffset: 2 }], [x, null, { queryPositionOffset: 1000, keyPositionOffset: 1000 }]],
        // cross-attention with different offsets, shifted together
        [[x, kv, { queryPositionOffset: 3, keyPositionOffset: 1 }], [x, kv, { queryPositionOffset: 53, keyPositionOffset: 51 }]],
      ];
      for (const [[q1, kv1, o1], [q2, kv2, o2]] of pairs) {
        const a = mha.forward(q1, kv1, o1).weights;
        const b = mha.forward(q2, kv2, o2).weights;
        assertNear(b.data, a.data, a.shape, 1e-5, `shifted ${JSON.stringify(o1)} -> ${JSON.stringify(o2)}`, 'rope shift invariance');
      }
      // A relative shift does change them.
      const a = mha.forward(x, kv, { queryPositionOffset: 0 }).weights.data;
      const b = mha.forward(x, kv, { queryPositionOffset: 5 }).weights.data;
      const moved = a.reduce((m, w, i) => Math.max(m, Math.abs(w - b[i])), 0);
      assert.ok(moved > 1e-3, `a relative shift changes the weights: largest change ${moved}, want > 1e-3`);
      mha.free();
    });

    test('RoPE on and off give different weights; RoPE matches the reference', () => {
      const rng = makeRng(12);
      const C = 16;
      const H = 2;
      const on = lab.createMultiHeadAttention({ dModel: C, numHeads: H, rope: true, seed: 8 });
      const off = lab.createMultiHeadAttention({ dModel: C, numHeads: H, rope: false, seed: 8 });
      const x = randomTensor(rng, [1, 7, C]);
      const wOn = on.forward(x).weights.data;
      const wOff = off.forward(x).weights.data;
      let diff = 0;
      for (let i = 0; i < wOn.length; i++) diff = Math.max(diff, Math.abs(wOn[i] - wOff[i]));
      assert.ok(diff > 1e-3, `rope on vs off differ by only ${diff}`);

      // Against the float64 split-halves RoPE, self and cross, with offsets.
      const kv = randomTensor(rng, [1, 5, C]);
      const cases = [
        [x, null, { causal: true }, { qOffset: 0, kOffset: 0, causal: true }],
        [x, null, { keyPositionOffset: 4 }, { qOffset: 4, kOffset: 4 }],
        [x, kv, { queryPositionOffset: 7, keyPositionOffset: 2 }, { qOffset: 7, kOffset: 2 }],
        [x, kv, { queryPositionOffset: 300, keyPositionOffset: 290, causal: true }, { qOffset: 300, kOffset: 290, causal: true }],
      ];
      for (const [q, k, options, ref] of cases) {
        const got = on.forward(q, k, options);
        const want = mhaReference(on.getWeights(), q, k, { H, rope: true, ...ref });
        assertNear(got.output.data, want.output, got.output.shape, 2e-5, `rope output ${JSON.stringify(options)}`, 'rope vs reference');
        assertNear(got.weights.data, want.weights, got.weights.shape, 2e-5, `rope weights ${JSON.stringify(options)}`, 'rope vs reference');
      }
      on.free();
      off.free();
    });

    test('KV cache: token by token and in chunks equals one causal pass', () => {
      const rng = makeRng(13);
      const T = 9;
      for (const rope of [false, true]) {
        const mha = lab.createMultiHeadAttention({ dModel: 24, numHeads: 3, rope, seed: 5 });
        const x = randomTensor(rng, [2, T, 24]);
        // batch 1 has a padded token in the middle; the queries there still see earlier keys.
        const pad = { data: new Uint8Array(2 * T).fill(1), shape: [2, T] };
        pad.data[T + 4] = 0;
        for (const keyPaddingMask of [undefined, pad]) {
          const full = mha.forward(x, { causal: true, keyPaddingMask });
          for (const chunk of [1, 2, 4]) {
            let cache;
            const outputs = [];
            let lastWeights;
            for (let t = 0; t < T; t += chunk) {
              const end = Math.min(T, t + chunk);
              const step = mha.forward(sliceTime(x, t, end), {
                causal: true, useCache: true, cache,
                keyPaddingMask: keyPaddingMask && sliceMask(keyPaddingMask, t, end),
              });
              assert.equal(step.cache.length, end);
              assert.deepEqual(step.cache.key.shape, [2, 3, end, 8]);
              assert.deepEqual(step.weights.shape, [2, 3, end - t, end]);
              cache = step.cache;
              outputs.push(step.output);
              lastWeights = step.weights;
            }
            const label = `rope=${rope} chunk=${chunk} padded=${!!keyPaddingMask}`;
            const joined = concatTime(outputs);
            assertNear(joined.data, full.output.data, joined.shape, 1e-5, `cached output, ${label}`, 'kv cache vs full pass');
            // The last query's weights are the last row of the full pass.
            for (let bh = 0; bh < 6; bh++) {
              const rows = lastWeights.shape[2];
              const mine = lastWeights.data.subarray((bh * rows + rows - 1) * T, (bh * rows + rows) * T);
              const theirs = full.weights.data.subarray((bh * T + T - 1) * T, (bh * T + T) * T);
              assertNear(mine, theirs, [T], 1e-5, `last weights row, ${label}`, 'kv cache vs full pass');
            }
            assert.deepEqual([...cache.keyPaddingMask.data], [...(keyPaddingMask?.data ?? new Uint8Array(2 * T).fill(1))]);
          }
        }
        // Token by token, causal or not gives the same: the new token is last.
        let cache;
        const outputs = [];
        for (let t = 0; t < T; t++) {
          const step = mha.forward(sliceTime(x, t, t + 1), { useCache: true, cache, queryPositionOffset: t });
          cache = step.cache;
          outputs.push(step.output);
        }
        const joined = concatTime(outputs);
        assertNear(joined.data, mha.forward(x, { causal: true }).output.data, joined.shape, 1e-5,
          `cached output without causal, rope=${rope}`, 'kv cache vs full pass');
        // Bug stale-cache-offset: the core keeps the new queries at position 0
        // while the keys continue from the cache length. Causal then lets each
        // query see key 0 only, and the outputs leave the full pass; the same
        // calls without the bug stay on it.
        const fullPass = mha.forward(x, { causal: true }).output;
        const fullOut = fullPass.data;
        for (const bug of ['stale-cache-offset', null]) {
          let c;
          const stepOut = [];
          for (let t = 0; t < T; t++) {
            const step = mha.forward(sliceTime(x, t, t + 1), { useCache: true, cache: c, causal: true, bug });
            c = step.cache;
            stepOut.push(step.output);
            // The core says where it stood the query: the cache length, or 0 under the bug.
            assert.equal(step.queryPosition, bug && t > 0 ? 0 : t, `bug ${bug}, step ${t}: the query's position`);
            // The keys it could see from there, by the core's causal rule, are those its weights use.
            const allowed = Array.from(lab.allowedPairs([1, t + 1], { causal: true, causalOffset: step.queryPosition }).data);
            for (let bh = 0; bh < 6; bh++) {
              const used = Array.from(step.weights.data.subarray(bh * (t + 1), (bh + 1) * (t + 1)), (w) => Number(w > 0));
              assert.deepEqual(used, allowed, `bug ${bug}, step ${t}, batch-head ${bh}: keys weighted vs keys the rule allows from position ${step.queryPosition}`);
            }
            if (!bug) continue;
            for (let bh = 0; bh < 6; bh++) {
              const row = Array.from(step.weights.data.subarray(bh * (t + 1), (bh + 1) * (t + 1)));
              assert.deepEqual(row, [1, ...new Array(t).fill(0)], `stale offset, step ${t}, batch-head ${bh}: only key 0 is seen`);
            }
          }
          assert.equal(c.length, T);
          const joined = concatTime(stepOut);
          if (bug) {
            let worst = 0;
            for (let n = 0; n < fullOut.length; n++) worst = Math.max(worst, Math.abs(joined.data[n] - fullOut[n]));
            assert.ok(worst > 1e-2, `bug ${bug} changes the cached outputs (max difference ${worst}, rope=${rope})`);
            // Step 1 has an empty cache: position 0 is right there, so nothing changes.
            assertNear(stepOut[0].data, sliceTime(fullPass, 0, 1).data, stepOut[0].shape, 1e-6,
              `bug ${bug}, first step, rope=${rope}`, 'kv cache vs full pass');
          } else {
            assertNear(joined.data, fullOut, joined.shape, 1e-6, `cached decode without the bug, rope=${rope}`, 'kv cache vs full pass');
          }
        }
        // Without a cache the bug changes nothing, offsets included.
        for (const queryPositionOffset of [0, 3]) {
          const options = { causal: true, queryPositionOffset, keyPositionOffset: 0 };
          assert.deepEqual(mha.forward(x, { ...options, bug: 'stale-cache-offset' }), mha.forward(x, options),
            `bug stale-cache-offset without a cache, queryPositionOffset ${queryPositionOffset}`);
        }
        mha.free();
      }
    });

    test('KV cache with an attention mask over cached and new keys', () => {
      const rng = makeRng(22);
      const T = 7;
      const mha = lab.createMultiHeadAttention({ dModel: 16, numHeads: 4, rope: true, seed: 10 });
      const x = randomTensor(rng, [2, T, 16]);
      const mask = randomMask(rng, [T, T], 0.5);
      const full = mha.forward(x, { causal: true, attentionMask: mask });
      let cache;
      const outputs = [];
      for (let t = 0; t < T; t += 3) {
        const end = Math.min(T, t + 3);
        // rows t..end-1 of the mask, over all keys so far (0..end-1)
        const rows = { data: new Uint8Array((end - t) * end), shape: [end - t, end] };
        for (let i = t; i < end; i++) rows.data.set(mask.data.subarray(i * T, i * T + end), (i - t) * end);
        const step = mha.forward(sliceTime(x, t, end), { causal: true, useCache: true, cache, attentionMask: rows });
        cache = step.cache;
        outputs.push(step.output);
      }
      const joined = concatTime(outputs);
      assertNear(joined.data, full.output.data, joined.shape, 1e-5, 'cached output with a mask', 'kv cache vs full pass');
      mha.free();
    });

    test('nested arrays and boolean masks give the same result as typed arrays', () => {
      const rng = makeRng(23);
      const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2, seed: 11 });
      const x = randomTensor(rng, [1, 3, 4]);
      const nested = [[0, 1, 2].map((t) => Array.from(x.data.subarray(t * 4, t * 4 + 4)))];
      const keyPaddingMask = [[true, false, true]];
      const a = mha.forward(x, { keyPaddingMask: { data: Uint8Array.from([1, 0, 1]), shape: [1, 3] } });
      const b = mha.forward(nested, { keyPaddingMask });
      assert.deepEqual(b.output, a.output);
      assert.deepEqual(b.weights, a.weights);
      mha.free();
    });

    test('queryPaddingMask zeroes exactly the padded rows', () => {
      const rng = makeRng(14);
      const C = 12;
      const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: 3, seed: 6 });
      const x = randomTensor(rng, [2, 5, C]);
      const queryPaddingMask = { data: Uint8Array.from([1, 1, 1, 0, 0, 1, 0, 1, 1, 0]), shape: [2, 5] };
      const plain = mha.forward(x, { causal: true }).output.data;
      const padded = mha.forward(x, { causal: true, queryPaddingMask }).output.data;
      for (let r = 0; r < 10; r++) {
        const row = padded.subarray(r * C, (r + 1) * C);
        const before = plain.subarray(r * C, (r + 1) * C);
        if (queryPaddingMask.data[r]) {
          assert.deepEqual(row, before, `real row ${r} changed`);
          assert.ok(row.some((v) => v !== 0), `real row ${r} is zero`);
        } else {
          assert.ok(row.every((v) => v === 0), `padded row ${r} is not zero: ${row}`);
        }
      }
      mha.free();
    });

    test('every error rule has its code, and a refusal changes nothing', () => {
      const rng = makeRng(15);
      const C = 16;
      const H = 4;
      const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: H, rope: true, seed: 2 });
      const x = randomTensor(rng, [2, 5, C]);
      const kv = randomTensor(rng, [2, 7, C]);
      const baseline = mha.forward(x, { causal: true }).output.data;
      const { cache } = mha.forward(x, { useCache: true });
      const check = (fn, code, message) => {
        assertCode(fn, code, message);
        assert.deepEqual(mha.forward(x, { causal: true }).output.data, baseline, `result changed after a ${code} refusal`);
      };
      const nan = randomTensor(rng, [2, 5, C]);
      nan.data[2 * C + 3] = NaN;
      const inf = randomTensor(rng, [2, 7, C]);
      inf.data[1] = -Infinity;

      // module construction
      check(() => lab.createMultiHeadAttention({ dModel: 10, numHeads: 3 }), 'HEADS_DO_NOT_DIVIDE');
      check(() => lab.createMultiHeadAttention({ dModel: 12, numHeads: 4, rope: true }), 'ROPE_ODD_HEAD_DIM');
      check(() => lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, colour: 'red' }), 'BAD_ARGUMENT');
      check(() => lab.createMultiHeadAttention({ dModel: '8', numHeads: 2 }), 'BAD_ARGUMENT');
      check(() => lab.createMultiHeadAttention({ dModel: 8 }), 'BAD_ARGUMENT');
      check(() => lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, rope: 'yes' }), 'BAD_ARGUMENT');
      check(() => lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, seed: -1 }), 'BAD_ARGUMENT');

      // shapes
      check(() => mha.forward({ data: new Float32Array(0), shape: [2, 0, C] }), 'EMPTY_QUERY');
      check(() => mha.forward(randomTensor(rng, [2, 5, C + 1])), 'SHAPE_MISMATCH');
      check(() => mha.forward(randomTensor(rng, [5, C])), 'SHAPE_MISMATCH');
      check(() => mha.forward({ data: new Float32Array(7), shape: [2, 5, C] }), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, randomTensor(rng, [3, 7, C])), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, randomTensor(rng, [2, 7, C - 1])), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, { attentionMask: randomMask(rng, [5, 6]) }), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, kv, { attentionMask: randomMask(rng, [5, 5]) }), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, { attentionMask: randomMask(rng, [3, 5, 5]) }), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, { attentionMask: randomMask(rng, [2, 2, 5, 5]) }), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, { attentionMask: randomMask(rng, [1, 2, H, 5, 5]) }), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, { attentionMask: randomMask(rng, [5]) }), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, kv, { keyPaddingMask: randomMask(rng, [2, 5]) }), 'SHAPE_MISMATCH');
      check(() => mha.forward(x, { queryPaddingMask: randomMask(rng, [2, 4]) }), 'SHAPE_MISMATCH');

      // the cache and positions
      check(() => mha.forward(x, { cache }), 'CACHE_WITHOUT_USE_CACHE');
      check(() => mha.forward(x, kv, { useCache: true }), 'CACHE_CROSS_ATTENTION');
      check(() => mha.forward(x, kv, { useCache: true, cache }), 'CACHE_CROSS_ATTENTION');
      check(() => mha.forward(x, { useCache: true, keyPositionOffset: 1 }), 'CACHE_POSITION');
      check(() => mha.forward(x, { useCache: true, queryPositionOffset: 2 }), 'CACHE_POSITION');
      check(() => mha.forward(x, { useCache: true, cache, queryPositionOffset: 4 }), 'CACHE_POSITION');
      check(() => mha.forward(x, { useCache: true, cache, queryPositionOffset: 0 }), 'CACHE_POSITION');
      check(() => mha.forward(x, { useCache: true, cache, keyPositionOffset: 4 }), 'CACHE_POSITION');
      check(() => mha.forward(x, { queryPositionOffset: -1 }), 'NEGATIVE_OFFSET');
      check(() => mha.forward(x, kv, { keyPositionOffset: -3 }), 'NEGATIVE_OFFSET');
      const other = lab.createMultiHeadAttention({ dModel: C, numHeads: 2, seed: 2 });
      check(() => other.forward(x, { useCache: true, cache }), 'CACHE_MISMATCH');
      other.free();
      check(() => mha.forward(randomTensor(rng, [1, 1, C]), { useCache: true, cache }), 'CACHE_MISMATCH');
      check(() => mha.forward(x, { useCache: true, cache: { ...cache, length: 4 } }), 'CACHE_MISMATCH');
      const nanCache = { ...cache, value: { data: cache.value.data.map((v, i) => (i === 77 ? NaN : v)), shape: cache.value.shape } };
      check(() => mha.forward(x, { useCache: true, cache: nanCache }), 'NON_FINITE_INPUT', /cache/);
      // the cache continues from its length: this one is fine
      assert.equal(mha.forward(x, { useCache: true, cache, queryPositionOffset: 5 }).cache.length, 10);

      // all-masked rows, named by batch, head and query
      const rowMask = { data: new Uint8Array(2 * H * 5 * 5).fill(1), shape: [2, H, 5, 5] };
      rowMask.data.fill(0, ((1 * H + 2) * 5 + 3) * 5, ((1 * H + 2) * 5 + 4) * 5);
      check(() => mha.forward(x, { attentionMask: rowMask }), 'ALL_MASKED_ROW', /batch 1, head 2, query 3/);
      const noKeys = { data: Uint8Array.from([1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]), shape: [2, 7] };
      check(() => mha.forward(x, kv, { keyPaddingMask: noKeys }), 'ALL_MASKED_ROW', /batch 1, head 0, query 0/);
      check(() => mha.forward(x, { causal: true, queryPositionOffset: 0, keyPositionOffset: 2 }), 'ALL_MASKED_ROW', /batch 0, head 0, query 0/);

      // wrong types and unknown options
      check(() => mha.forward(x, { mask: rowMask }), 'BAD_ARGUMENT');
      check(() => mha.forward(x, { causal: 1 }), 'BAD_ARGUMENT');
      check(() => mha.forward(x, { needWeights: 'no' }), 'BAD_ARGUMENT');
      check(() => mha.forward(x, { queryPositionOffset: 1.5 }), 'BAD_ARGUMENT');
      check(() => mha.forward(x, { keyPaddingMask: { data: new Uint8Array(10).fill(2), shape: [2, 5] } }), 'BAD_ARGUMENT');
      check(() => mha.forward('hello'), 'BAD_ARGUMENT');
      check(() => mha.forward({ data: Array(2 * 5 * C).fill('1'), shape: [2, 5, C] }), 'BAD_ARGUMENT');
      check(() => mha.forward(x, 42), 'BAD_ARGUMENT');
      check(() => mha.setWeights({ qproj: {} }), 'BAD_ARGUMENT');
      check(() => mha.setWeights({ qProj: 5 }), 'BAD_ARGUMENT');
      check(() => mha.setWeights('weights'), 'BAD_ARGUMENT');

      // non-finite numbers
      check(() => mha.forward(nan), 'NON_FINITE_INPUT');
      check(() => mha.forward(x, inf), 'NON_FINITE_INPUT');
      check(() => mha.forward({ data: Array(2 * 5 * C).fill(1e39), shape: [2, 5, C] }), 'NON_FINITE_INPUT');

      // after free
      mha.free();
      assertCode(() => mha.forward(x), 'MODULE_FREED');
      assertCode(() => mha.getWeights(), 'MODULE_FREED');
      assertCode(() => mha.setWeights({}), 'MODULE_FREED');
      mha.free(); // a second free is harmless
    });

    test('huge but finite inputs are refused as OVERFLOW, not NON_FINITE_INPUT', () => {
      const mha = lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, seed: 1 });
      const x = randomTensor(makeRng(16), [1, 3, 8]);
      const baseline = mha.forward(x).output.data;
      const weights = mha.getWeights();
      const ones = { data: new Float32Array(24).fill(1), shape: [1, 3, 8] };
      const huge = { weight: { data: new Float32Array(64).fill(3e38), shape: [8, 8] } };
      // The query projection of finite inputs overflows float32 ...
      mha.setWeights({ qProj: huge });
      assertCode(() => mha.forward(ones), 'OVERFLOW', /query projection/);
      // ... or only the output projection, at the very end.
      mha.setWeights({ qProj: weights.qProj, outProj: huge });
      assertCode(() => mha.forward(ones), 'OVERFLOW', /output projection/);
      mha.setWeights(weights);
      assert.deepEqual(mha.forward(x).output.data, baseline);
      mha.free();
    });

    test('huge position offsets: the causal rule still compares positions', () => {
      const mha = lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, seed: 1 });
      const x = randomTensor(makeRng(20), [1, 4, 8]);
      const kv = randomTensor(makeRng(21), [1, 6, 8]);
      const last = 2 ** 31 - 1;
      // Every key lies before every query: causal changes nothing.
      const open = mha.forward(x, kv).weights.data;
      assert.deepEqual(mha.forward(x, kv, { causal: true, queryPositionOffset: last - 3 }).weights.data, open);
      // Equal huge offsets: the usual lower triangle.
      const tri = mha.forward(x, { causal: true }).weights.data;
      assert.deepEqual(mha.forward(x, { causal: true, keyPositionOffset: last - 3 }).weights.data, tri);
      // Every key lies after every query: refused, naming the first row.
      assertCode(() => mha.forward(x, kv, { causal: true, keyPositionOffset: last - 5 }), 'ALL_MASKED_ROW', /batch 0, head 0, query 0/);
      mha.free();
    });

    test('setWeights / getWeights: round trip, atomic, deterministic init', () => {
      const rng = makeRng(17);
      const C = 12;
      const bound = 1 / Math.sqrt(C);
      const a = lab.createMultiHeadAttention({ dModel: C, numHeads: 3, seed: 42 });
      const b = lab.createMultiHeadAttention({ dModel: C, numHeads: 3, seed: 42 });
      const c = lab.createMultiHeadAttention({ dModel: C, numHeads: 3, seed: 43 });
      const wa = a.getWeights();
      assert.deepEqual(b.getWeights(), wa, 'same seed, same weights');
      assert.notDeepEqual(c.getWeights().qProj.weight.data, wa.qProj.weight.data, 'different seed, different weights');
      for (const name of ['qProj', 'kProj', 'vProj', 'outProj']) {
        assert.deepEqual(wa[name].weight.shape, [C, C]);
        assert.deepEqual(wa[name].bias.shape, [C]);
        for (const v of [...wa[name].weight.data, ...wa[name].bias.data]) {
          assert.ok(v >= -bound && v <= bound, `${name} value ${v} outside ±1/sqrt(${C})`);
        }
      }
      // The four projections are not copies of each other.
      assert.notDeepEqual(wa.qProj.weight.data, wa.kProj.weight.data);

      // Round trip.
      const fresh = randomWeights(rng, C, true, 0.3);
      a.setWeights(fresh);
      const back = a.getWeights();
      for (const name of ['qProj', 'kProj', 'vProj', 'outProj']) {
        assert.deepEqual(back[name].weight.data, fresh[name].weight.data, `${name}.weight round trip`);
        assert.deepEqual(back[name].bias.data, fresh[name].bias.data, `${name}.bias round trip`);
      }
      // Nested arrays work as well.
      const nested = Array.from({ length: C }, (_, i) => Array.from({ length: C }, (_, j) => (i === j ? 1 : 0)));
      a.setWeights({ vProj: { weight: nested } });
      assert.equal(a.getWeights().vProj.weight.data[C + 1], 1);
      assert.deepEqual(a.getWeights().vProj.bias.data, fresh.vProj.bias.data, 'bias left alone when not given');
      a.setWeights(fresh);

      // Atomic: one bad entry, and nothing at all is written.
      const x = randomTensor(rng, [1, 4, C]);
      const before = a.forward(x).output.data;
      const good = randomWeights(rng, C, true, 0.3);
      const badNaN = { ...good, vProj: { weight: good.vProj.weight, bias: { data: new Float32Array(C).fill(NaN), shape: [C] } } };
      assertCode(() => a.setWeights(badNaN), 'NON_FINITE_INPUT');
      const badShape = { ...good, outProj: { weight: randomTensor(rng, [C, C + 1]) } };
      assertCode(() => a.setWeights(badShape), 'SHAPE_MISMATCH');
      const badType = { ...good, outProj: { weight: 'eye' } };
      assertCode(() => a.setWeights(badType), 'BAD_ARGUMENT');
      assert.deepEqual(a.getWeights(), back, 'a refused setWeights changed nothing');
      assert.deepEqual(a.forward(x).output.data, before);

      // Without bias: bias is null, and giving one is refused.
      const nb = lab.createMultiHeadAttention({ dModel: C, numHeads: 3, bias: false, seed: 42 });
      assert.equal(nb.getWeights().qProj.bias, null);
      assertCode(() => nb.setWeights({ qProj: { weight: fresh.qProj.weight, bias: fresh.qProj.bias } }), 'BAD_ARGUMENT');
      for (const m of [a, b, c, nb]) m.free();
    });

    test('memory: 2000 create/forward/free cycles do not grow memory', () => {
      const rng = makeRng(18);
      const x = randomTensor(rng, [2, 8, 32]);
      const kv = randomTensor(rng, [2, 11, 32]);
      const cycle = () => {
        const mha = lab.createMultiHeadAttention({ dModel: 32, numHeads: 4, rope: true, seed: 1 });
        const { cache } = mha.forward(x, { causal: true, useCache: true });
        mha.forward(sliceTime(x, 0, 1), { useCache: true, cache });
        mha.forward(x, kv);
        try { mha.forward(x, { queryPositionOffset: -1 }); } catch { /* refused */ }
        mha.free();
      };
      for (let i = 0; i < 50; i++) cycle();
      const start = lab.memoryBytes();
      for (let i = 0; i < 2000; i++) cycle();
      assert.equal(lab.memoryBytes(), start, 'memory grew');
    });
  });
}

// ---------------------------------------------------------------------------
// The multiply-adds the core counts (lab.lastCallMadds), against hand counts:
// M·N·K per matrix product, the scores (Tq, dk) @ (dk, Tk), the mix
// (Tq, Tk) @ (Tk, dv), and a module's four projections (N, C) @ (C, C).
// ---------------------------------------------------------------------------

/** Assert the core's count of the last call, naming the call and both numbers. */
function assertMadds(lab, want, label) {
  const got = lab.lastCallMadds();
  assert.ok(got === want, `${label}: expected ${want} multiply-adds, got ${got} (off by ${got - want})`);
}

/** Mix multiply-adds the tiled path skips under causal, Tq = Tk = T: for each
 * block of 16 query rows, each tile of 128 keys wholly after its diagonal. */
function skippedCausalMix(T, dv) {
  let pairs = 0;
  for (let i0 = 0; i0 < T; i0 += 16) {
    const last = Math.min(T, i0 + 16) - 1;
    for (let j0 = 0; j0 < T; j0 += 128) if (j0 > last) pairs += Math.min(16, T - i0) * Math.min(128, T - j0);
  }
  return pairs * dv;
}

for (const simd of [true, false]) {
  const build = simd ? 'simd' : 'scalar';
  describe(`multiply-adds counted by the core (${build} build)`, () => {
    let lab;
    before(async () => { lab = await loadAttention({ simd }); });

    test('sdpa: B·H·Tq·Tk·dk for the scores plus B·H·Tq·Tk·dv for the mix, on both paths', () => {
      const rng = makeRng(41);
      for (const [B, H, Tq, Tk, dk, dv] of [[1, 1, 1, 1, 1, 1], [2, 3, 5, 7, 4, 6], [1, 2, 33, 200, 8, 3], [2, 1, 17, 129, 5, 16]]) {
        const q = randomTensor(rng, [B, H, Tq, dk]), k = randomTensor(rng, [B, H, Tk, dk]), v = randomTensor(rng, [B, H, Tk, dv]);
        const want = B * H * Tq * Tk * dk + B * H * Tq * Tk * dv;
        const shape = `(${B}, ${H}, ${Tq}, ${dk}) x Tk ${Tk}, dv ${dv}`;
        lab.sdpa(q, k, v);
        assertMadds(lab, want, `sdpa with weights ${shape}`);
        lab.sdpa(q, k, v, { needWeights: false });
        assertMadds(lab, want, `sdpa tiled ${shape}`);
        lab.sdpaTiled(q, k, v, { blockKeys: 32 });
        assertMadds(lab, want, `sdpaTiled blockKeys 32 ${shape}`);
        lab.sdpa(q, k, v, { mask: randomMask(rng, [Tq, Tk]) });
        assertMadds(lab, want, `sdpa with a mask ${shape}`);
      }
    });

    test('causal sdpa: every pair on the path with weights; the tiled path skips the mix of hidden tiles', () => {
      const rng = makeRng(42);
      for (const [T, d] of [[5, 4], [200, 8], [256, 16]]) {
        const q = randomTensor(rng, [1, 2, T, d]), k = randomTensor(rng, [1, 2, T, d]), v = randomTensor(rng, [1, 2, T, d]);
        const every = 2 * T * T * d * 2;
        lab.sdpa(q, k, v, { causal: true });
        assertMadds(lab, every, `causal sdpa with weights, T ${T}, d ${d}`);
        lab.sdpa(q, k, v, { causal: true, needWeights: false });
        assertMadds(lab, every - 2 * skippedCausalMix(T, d), `causal sdpa tiled, T ${T}, d ${d}`);
      }
    });

    test('mha forward: four projections, scores and mix; with a cache only the new tokens are projected', () => {
      const rng = makeRng(43);
      const [B, C, H] = [2, 12, 3], D = C / H;
      const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: H, rope: true, seed: 4 });
      try {
        const T = 9;
        const x = randomTensor(rng, [B, T, C]);
        const attend = (Tq, Tk) => 2 * B * H * Tq * Tk * D;
        mha.forward(x);
        assertMadds(lab, 4 * B * T * C * C + attend(T, T), `self-attention B ${B}, T ${T}, C ${C}`);
        mha.forward(x, { causal: true, needWeights: false });
        assertMadds(lab, 4 * B * T * C * C + attend(T, T), `causal, tiled, B ${B}, T ${T}, C ${C}`);
        const kv = randomTensor(rng, [B, 4, C]);
        mha.forward(x, kv);
        assertMadds(lab, 2 * B * T * C * C + 2 * B * 4 * C * C + attend(T, 4), `cross-attention Tq ${T}, Tk 4`);
        // Decoding: step t projects one token and attends to the t keys so far.
        let cache = null;
        for (let t = 1; t <= T; t++) {
          for (const needWeights of [true, false]) {
            const r = mha.forward(sliceTime(x, t - 1, t), { cache, useCache: true, causal: true, queryPositionOffset: t - 1, needWeights });
            assertMadds(lab, 4 * B * C * C + attend(1, t), `cached step ${t}${needWeights ? '' : ', tiled'}`);
            if (!needWeights) cache = r.cache;
          }
        }
        // A cache of 5 tokens and 4 new ones at once.
        const prefix = mha.forward(sliceTime(x, 0, 5), { useCache: true, causal: true });
        mha.forward(sliceTime(x, 5, 9), { cache: prefix.cache, useCache: true, causal: true, queryPositionOffset: 5 });
        assertMadds(lab, 4 * B * 4 * C * C + attend(4, 9), 'four new tokens after a cache of five');
      } finally {
        mha.free();
      }
    });

    test('each call reports its own count, not a running total', () => {
      const rng = makeRng(44);
      const big = randomTensor(rng, [1, 1, 64, 32]);
      lab.sdpa(big, big, big);
      const small = randomTensor(rng, [1, 1, 2, 3]);
      lab.sdpa(small, small, small);
      assertMadds(lab, 2 * 2 * 3 * 2, 'a small call after a large one');
      lab.sdpa(small, small, small);
      assertMadds(lab, 2 * 2 * 3 * 2, 'the same call again');
    });
  });
}

// Both builds agree with each other.
test('the SIMD and scalar builds agree', async () => {
  const [simd, scalar] = await Promise.all([loadAttention({ simd: true }), loadAttention({ simd: false })]);
  const x = randomTensor(makeRng(19), [2, 13, 40]);
  const run = (lab) => {
    const mha = lab.createMultiHeadAttention({ dModel: 40, numHeads: 5, rope: true, seed: 9 });
    const result = mha.forward(x, { causal: true });
    mha.free();
    return result;
  };
  const a = run(simd);
  const b = run(scalar);
  assertNear(a.output.data, b.output.data, a.output.shape, 1e-5, 'simd vs scalar output', 'simd vs scalar');
  assertNear(a.weights.data, b.weights.data, a.weights.shape, 1e-5, 'simd vs scalar weights', 'simd vs scalar');
});

// The multi-head section's static numbers, against the core's module.
test('the lesson\'s "d_model = 512, 8 to 16 heads, each head 64 to 32" is what the core\'s module splits', async () => {
  const { readFileSync } = await import('node:fs');
  const body = readFileSync(new URL('../web/sections/multi-head.js', import.meta.url), 'utf8');
  const m = /d<sub>model<\/sub> = (\d+), going from (\d+) to (\d+) heads shrinks each head from (\d+) to (\d+) numbers/.exec(body);
  assert.ok(m, 'the multi-head prose states d_model, the two head counts and the two head widths');
  const [C, h1, h2, w1, w2] = m.slice(1).map(Number);
  const lab = await loadAttention();
  for (const [H, width] of [[h1, w1], [h2, w2]]) {
    const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: H, bias: false, seed: 1 });
    const x = { data: new Float32Array(2 * C).fill(0.5), shape: [1, 2, C] };
    const r = mha.forward(x);
    const held = Object.values(mha.getWeights()).reduce((n, p) => n + p.weight.data.length, 0);
    mha.free();
    assert.equal(mha.headDim, width, `d_model ${C} over ${H} heads: the module's head width is ${mha.headDim}; the prose says ${width}`);
    assert.equal(r.weights.shape[1], H, `d_model ${C}, ${H} heads: the weights have ${r.weights.shape[1]} heads`);
    assert.equal(r.output.shape[2], C, `d_model ${C}, ${H} heads: the output is ${r.output.shape[2]} wide, not d_model`);
    assert.equal(held, 4 * C * C, `d_model ${C}, ${H} heads: the four projections hold ${held} weights, want 4 · d_model² = ${4 * C * C}`);
  }
});

after(() => {
  const lines = Object.entries(maxErrors).map(([kind, e]) => `  ${kind}: ${e.toExponential(2)}`);
  console.log(`max errors measured (abs, scaled by max(1, largest |expected|)):\n${lines.join('\n')}`);
});
