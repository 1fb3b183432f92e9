// Bad input: every refusal is an AttentionError with a code and a message
// naming the argument, dimension or row; the lab keeps working afterwards.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention, AttentionError, paddingMask, maskReader } from '../web/attention.js';
import { rng, randomTensor } from './helpers/reference.mjs';
import { refuses, resultsUnchanged } from './helpers/compare.mjs';

// Load both builds before declaring suites: node:test wants suites declared synchronously.
const labs = { true: await loadAttention({ simd: true }), false: await loadAttention({ simd: false }) };

for (const simd of [true, false]) {
  describe(`${simd ? 'SIMD' : 'scalar'} build refuses bad input`, () => {
    const lab = labs[simd];
    const random = rng(11);
    const q = randomTensor([2, 3, 4], random);
    const k = randomTensor([2, 5, 4], random);
    const v = randomTensor([2, 5, 6], random);
    const sameAsBefore = resultsUnchanged(() => lab.sdpa(q, k, v, { causal: true }), 'a refused call');

    test('shape mismatches between q, k and v', () => {
      refuses(() => lab.sdpa(q, randomTensor([2, 5, 3], random), v), 'SHAPE_MISMATCH', /dk.*q has 4, k has 3/);
      refuses(() => lab.sdpa(q, k, randomTensor([2, 4, 6], random)), 'SHAPE_MISMATCH', /Tk.*k has 5, v has 4/);
      refuses(() => lab.sdpa(q, randomTensor([3, 5, 4], random), v), 'SHAPE_MISMATCH', /batch dim 0.*q has 2, k has 3/);
      refuses(() => lab.sdpa(q, randomTensor([1, 2, 5, 4], random), v), 'SHAPE_MISMATCH', /same number of dims/);
      refuses(() => lab.sdpa([1, 2], [1, 2], [1, 2]), 'BAD_ARGUMENT', /q must have 2 to 4 dims/);
      refuses(() => lab.sdpa(randomTensor([1, 1, 1, 2, 2], random), k, v), 'BAD_ARGUMENT', /2 to 4 dims/);
      sameAsBefore();
    });

    test('data length not matching shape, and ragged nested arrays', () => {
      refuses(() => lab.sdpa({ data: [1, 2, 3], shape: [2, 2] }, k, v), 'SHAPE_MISMATCH', /q has 3 values but its shape \[2, 2\] needs 4/);
      refuses(() => lab.sdpa([[1, 0], [1]], [[1, 0]], [[1, 0]]), 'SHAPE_MISMATCH', /q\[1\]/);
      sameAsBefore();
    });

    test('zero, negative and fractional dims', () => {
      refuses(() => lab.sdpa({ data: [], shape: [0, 4] }, k, v), 'BAD_ARGUMENT', /q dim 0 must be a positive integer/);
      refuses(() => lab.sdpa({ data: [1, 2], shape: [-1, -2] }, k, v), 'BAD_ARGUMENT', /dim 0/);
      refuses(() => lab.sdpa({ data: [1, 2], shape: [1.5, 2] }, k, v), 'BAD_ARGUMENT', /positive integer/);
      refuses(() => lab.sdpa([[]], [[1]], [[1]]), 'BAD_ARGUMENT', /dim 1/);
      sameAsBefore();
    });

    test('NaN and infinities in q, k, v or scale', () => {
      for (const [name, bad] of [['q', NaN], ['k', Infinity], ['v', -Infinity]]) {
        const t = { ...{ q, k, v }[name], data: Float32Array.from({ q, k, v }[name].data) };
        t.data[5] = bad;
        const args = { q, k, v, [name]: t };
        refuses(() => lab.sdpa(args.q, args.k, args.v), 'NON_FINITE_INPUT', new RegExp(`^${name} has a non-finite value`));
      }
      // A finite double beyond float32's range becomes Infinity: refused too.
      refuses(() => lab.sdpa([[1e39, 0]], [[1, 0]], [[1, 0]]), 'NON_FINITE_INPUT', /q .*Infinity/);
      refuses(() => lab.sdpa(q, k, v, { scale: NaN }), 'NON_FINITE_INPUT', /scale/);
      refuses(() => lab.sdpa(q, k, v, { scale: Infinity }), 'NON_FINITE_INPUT', /scale/);
      sameAsBefore();
    });

    test('masks that do not broadcast or hold bad values', () => {
      refuses(() => lab.sdpa(q, k, v, { mask: { data: new Uint8Array(4).fill(1), shape: [4] } }), 'SHAPE_MISMATCH', /does not broadcast to \[2, 3, 5\]/);
      refuses(() => lab.sdpa(q, k, v, { mask: { data: new Uint8Array(45).fill(1), shape: [3, 3, 5] } }), 'SHAPE_MISMATCH', /mask of shape \[3, 3, 5\]/);
      refuses(() => lab.sdpa(q, k, v, { mask: { data: new Uint8Array(10).fill(1), shape: [2, 1, 1, 5] } }), 'SHAPE_MISMATCH', /does not broadcast/);
      refuses(() => lab.sdpa(q, k, v, { mask: { data: [1, 1, 1], shape: [5] } }), 'SHAPE_MISMATCH', /mask has 3 values/);
      refuses(() => lab.sdpa(q, k, v, { mask: { data: [1, 1, 2, 1, 1], shape: [5] } }), 'BAD_ARGUMENT', /mask value 2 is 2/);
      refuses(() => lab.sdpa(q, k, v, { mask: { data: [1, 1, 'x', 1, 1], shape: [5] } }), 'BAD_ARGUMENT', /mask value 2/);
      sameAsBefore();
    });

    test('an all-masked row is refused, naming batch, head and query', () => {
      const mask = { data: Uint8Array.from({ length: 2 * 3 * 5 }, () => 1), shape: [2, 3, 5] };
      mask.data.fill(0, 1 * 15 + 2 * 5, 1 * 15 + 3 * 5); // batch 1, query 2: no key
      refuses(() => lab.sdpa(q, k, v, { mask }), 'ALL_MASKED_ROW', /batch 1, head 0, query 2/);
      const q4 = randomTensor([2, 2, 3, 4], random);
      const k4 = randomTensor([2, 2, 5, 4], random);
      const m4 = { data: new Uint8Array(2 * 2 * 3 * 5).fill(1), shape: [2, 2, 3, 5] };
      m4.data.fill(0, ((1 * 2 + 1) * 3 + 0) * 5, ((1 * 2 + 1) * 3 + 1) * 5);
      refuses(() => lab.sdpa(q4, k4, k4, { mask: m4 }), 'ALL_MASKED_ROW', /batch 1, head 1, query 0/);
      refuses(() => lab.sdpa(q4, k4, k4, { mask: m4, needWeights: false }), 'ALL_MASKED_ROW', /batch 1, head 1, query 0/);
      sameAsBefore();
    });

    test('sizes too large for memory are refused before allocating', () => {
      const before = lab.memoryBytes();
      const tall = { data: new Float32Array(200000 * 2), shape: [200000, 2] };
      refuses(() => lab.sdpa(tall, tall, tall), 'TOO_LARGE', /MiB/); // weights would be 160 GB
      // An array-like that claims 2^31 values is refused before it is copied.
      refuses(() => lab.sdpa({ data: { length: 2 ** 31 }, shape: [2 ** 16, 2 ** 15] }, k, v), 'TOO_LARGE', /q/);
      assert.equal(lab.memoryBytes(), before, 'memory did not grow for a refused request');
      sameAsBefore();
    });

    test('missing or wrong-typed arguments', () => {
      refuses(() => lab.sdpa(), 'BAD_ARGUMENT', /q is required/);
      refuses(() => lab.sdpa(q, k), 'BAD_ARGUMENT', /v is required/);
      refuses(() => lab.sdpa('q', k, v), 'BAD_ARGUMENT', /q must be a tensor/);
      refuses(() => lab.sdpa({ data: 'abcd', shape: [2, 2] }, k, v), 'BAD_ARGUMENT', /q.data/);
      refuses(() => lab.sdpa([['1', 0]], [[1, 0]], [[1, 0]]), 'BAD_ARGUMENT', /q value 0 is not a number/);
      refuses(() => lab.sdpa(q, k, v, 5), 'BAD_ARGUMENT', /options must be an object/);
      refuses(() => lab.sdpa(q, k, v, { causal: 'yes' }), 'BAD_ARGUMENT', /causal must be true or false/);
      refuses(() => lab.sdpa(q, k, v, { scale: '1' }), 'BAD_ARGUMENT', /scale must be a number/);
      refuses(() => lab.sdpa(q, k, v, { needWeights: 0 }), 'BAD_ARGUMENT', /needWeights/);
      refuses(() => lab.sdpa(q, k, v, { casual: true }), 'BAD_ARGUMENT', /unknown option "casual"/);
      refuses(() => lab.sdpa(q, k, v, { bug: 'nope' }), 'BAD_ARGUMENT', /unknown bug/);
      sameAsBefore();
    });

    test('huge finite inputs give finite weights or a clear overflow error, never NaN', () => {
      const big = lab.sdpa([[1e18, 0], [0, -1e18]], [[1e18, 0], [0, 1e18]], [[1e18, 1], [2, -1e18]]);
      for (const w of big.weights.data) assert.ok(Number.isFinite(w), `weight ${w}`);
      for (const o of big.output.data) assert.ok(Number.isFinite(o), `output ${o}`);
      assert.deepEqual(Array.from(big.weights.data), [1, 0, 1, 0], 'saturated, still exact rows');
      refuses(() => lab.sdpa([[1e20, 0]], [[1e20, 0]], [[1, 0]]), 'OVERFLOW', /scores overflow float32 at batch 0, head 0, query 0, key 0/);
      sameAsBefore();
    });

    test('descend and sdpaLossSlope name the argument at fault, as the JS API names it', () => {
      // Messages of the core (c_src/lesson.c): a build older than them fails here.
      refuses(() => lab.descend([[1, 2]], [[1, NaN]], 0.1), 'NON_FINITE_INPUT', /^dx has a non-finite value at entry 1/);
      refuses(() => lab.descend([[1, 2]], [[1, 2]], Infinity), 'NON_FINITE_INPUT', /^lr \(the step size\) is not finite/);
      refuses(() => lab.descend([[3e38]], [[-3e38]], 10), 'OVERFLOW', /step overflows float32 at entry 0: lr is too large/);
      refuses(() => lab.sdpaLossSlope([[1, 0]], [[1, 0]], [[1, 0]], [[0, NaN]]), 'NON_FINITE_INPUT',
        /^target has a non-finite value at entry 1/);
      sameAsBefore();
    });

    test('data that is not a list of values is refused as such, and BigInts are shown as BigInts', () => {
      for (const data of [new DataView(new ArrayBuffer(8)), new ArrayBuffer(8), {}]) {
        refuses(() => lab.sdpa({ data, shape: [1, 2] }, k, v), 'BAD_ARGUMENT', /^q\.data must be an array or typed array of numbers/);
      }
      refuses(() => lab.sdpa(q, k, v, { mask: { data: new ArrayBuffer(5), shape: [5] } }), 'BAD_ARGUMENT', /^mask\.data must be an array or typed array of booleans or 0\/1/);
      refuses(() => lab.sdpa({ data: new BigInt64Array([1n, 2n]), shape: [1, 2] }, [[1, 0]], [[1]]), 'BAD_ARGUMENT', /q value 0 is not a number \(got 1n\)/);
      sameAsBefore();
    });

    test('createTrainer names an lr that float32 turns into 0', () => {
      refuses(() => lab.createTrainer({ task: 'reverse', lr: 1e-50 }), 'BAD_ARGUMENT', /lr must be a number in \(0, 1\] \(got 1e-50, which is 0 in float32\)/);
    });

    test('a cache option that is not a cache is refused, not taken for none', () => {
      const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2 });
      const x = randomTensor([1, 2, 4], random);
      for (const cache of [false, 0, '', NaN]) {
        refuses(() => mha.forward(x, { cache, useCache: true }), 'CACHE_MISMATCH', /cache must be the cache object/);
      }
      assert.equal(mha.forward(x, { cache: null, useCache: true }).cache.length, 2, 'null means no cache');
      mha.free();
      sameAsBefore();
    });

    test('backward after setWeights is refused: the saved forward ran with other weights', () => {
      const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2, seed: 1 });
      const other = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2, seed: 2 });
      const x = randomTensor([1, 3, 4], random);
      const dOutput = randomTensor([1, 3, 4], random);
      mha.forward(x, { causal: true, saveForBackward: true });
      mha.setWeights(other.getWeights());
      refuses(() => mha.backward(dOutput), 'NO_SAVED_FORWARD', /weights changed/);
      mha.forward(x, { causal: true, saveForBackward: true });
      other.forward(x, { causal: true, saveForBackward: true });
      assert.deepEqual(mha.backward(dOutput), other.backward(dOutput), 'a new saving forward brings backward back');
      mha.free();
      other.free();
      sameAsBefore();
    });

    test('gradients that overflow in the multi-head backward are OVERFLOW, not a fault of dOutput', () => {
      const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2, seed: 1 });
      mha.setWeights({ outProj: { weight: { data: new Float32Array(16).fill(1e30), shape: [4, 4] } } });
      const x = randomTensor([1, 2, 4], random);
      mha.forward(x, { saveForBackward: true });
      refuses(() => mha.backward({ data: new Float32Array(8).fill(1e30), shape: [1, 2, 4] }), 'OVERFLOW', /gradients overflow float32/);
      mha.free();
      sameAsBefore();
    });

    test('sdpaLossSlope refuses a slope or a nudged q beyond float32', () => {
      // Each loss fits in float32, but with a key of 1000 the loss changes so fast with q that the slope does not.
      refuses(() => lab.sdpaLossSlope([[0, 0]], [[1000, 0], [0, 0]], [[1e18], [-1e18]], [[1e18]], { eps: 1e-4 }), 'OVERFLOW', /slope overflows float32/);
      refuses(() => lab.sdpaLossSlope([[0.1, 0.2]], [[0.2, 0.1], [0.3, 0.2]], [[3e38], [-3e38]], [[-3e38]]), 'OVERFLOW', /the loss overflows float32 at q \+ eps/);
      refuses(() => lab.sdpaLossSlope([[3e38, 0]], [[1, 0]], [[1]], [[0]], { eps: 1e38 }), 'OVERFLOW', /q \+ eps overflows float32 at entry 0/);
      refuses(() => lab.sdpaLossSlope([[0, -3e38]], [[1, 0]], [[1]], [[0]], { at: 1, eps: 1e38 }), 'OVERFLOW', /q - eps overflows float32 at entry 1/);
      sameAsBefore();
    });

    test('observe measures broken weights: a NaN or an infinity counts as the worst, and is located', () => {
      // The checks of "Break it" rely on this: the bug's NaN row is named, not refused.
      const nan = lab.observe([[1, 0], [NaN, 1]]);
      assert.ok(Number.isNaN(nan.maxRowSumError), `a NaN row's error is NaN: ${nan.maxRowSumError}`);
      assert.deepEqual(Array.from(nan.worstRowSumAt), [0, 0, 1], 'the NaN row, query 1 (0-based), is the worst');
      const blocked = lab.observe([[1, NaN]], { mask: [[1, 0]] });
      assert.deepEqual(Array.from(blocked.maxForbiddenAt), [0, 0, 0, 1], 'a NaN on a blocked pair is the forbidden weight named');
      assert.equal(lab.observe([[0.5, 0.5]], { scores: [[Infinity, 1]] }).maxAbsScore, Infinity);
      for (const scores of [[[NaN, 1]], [[1, NaN]], [[5, 1], [NaN, 2]]]) {
        const weights = scores.map(() => [0.5, 0.5]);
        const got = lab.observe(weights, { scores }).maxAbsScore;
        assert.ok(Number.isNaN(got), `a NaN score counts as the worst, wherever it is (${JSON.stringify(scores)}): got ${got}`);
      }
      assert.equal(lab.observe([[0.5, 0.5]], { scores: [[2, -3]] }).maxAbsScore, 3, 'finite input is observed as before');
      sameAsBefore();
    });

    test('sdpaLossSlope refuses an eps lost in float32 or too large for q, and a loss beyond float32', () => {
      const [q1, k1, v1] = [[[1, 0]], [[1, 0], [0, 1]], [[1], [2]]];
      refuses(() => lab.sdpaLossSlope(q1, k1, v1, [[0]], { eps: 1e-12 }), 'BAD_ARGUMENT', /eps \(1e-12\) is lost in float32: q entry 0 is 1, and 1 \+ eps rounds back to 1/);
      refuses(() => lab.sdpaLossSlope([[0, 3e38]], k1, v1, [[0]], { at: 1, eps: 1 }), 'BAD_ARGUMENT', /eps \(1\) is lost in float32: q entry 1 is 3(\.0+\d*)?e\+38/);
      // Below -1 float32's steps are twice as wide as above it: only -1 - eps rounds back.
      refuses(() => lab.sdpaLossSlope([[-1, 0]], k1, v1, [[0]], { eps: 4e-8 }), 'BAD_ARGUMENT', /q entry 0 is -1, and -1 - eps rounds back to -1/);
      refuses(() => lab.sdpaLossSlope(q1, k1, v1, [[0]], { eps: 1e30 }), 'BAD_ARGUMENT', /eps \(1e\+30\) is too large for a slope at q entry 0: at most max\(1, \|q\|\) = 1/);
      refuses(() => lab.sdpaLossSlope(q1, k1, v1, [[1e20]]), 'OVERFLOW', /the loss overflows float32 at q \+ eps/);
      const slope = lab.sdpaLossSlope(q1, k1, v1, [[0]], { eps: 1 });
      assert.ok(Number.isFinite(slope) && slope !== 0, `eps 1 at q = 1 still gives a slope (${slope})`);
      sameAsBefore();
    });

    test('createTrainer and ablate state the ranges they accept', () => {
      refuses(() => lab.createTrainer({ task: 'reverse', batch: 0 }), 'BAD_ARGUMENT', /^batch must be between 1 and 32 \(got 0\)/);
      refuses(() => lab.createTrainer({ task: 'reverse', batch: 33 }), 'BAD_ARGUMENT', /^batch must be between 1 and 32 \(got 33\)/);
      refuses(() => lab.createTrainer({ task: 'reverse', layers: 3 }), 'BAD_ARGUMENT', /^layers must be between 1 and 2 \(got 3\)/);
      refuses(() => lab.createTrainer({ task: 'reverse', heads: 0 }), 'BAD_ARGUMENT', /^heads must be between 1 and 4 \(got 0\)/);
      refuses(() => lab.createTrainer({ task: 'reverse', dModel: 65 }), 'BAD_ARGUMENT', /^dModel must be between 1 and 64 \(got 65\)/);
      refuses(() => lab.createTrainer({ task: 'reverse', seqLen: 3 }), 'BAD_ARGUMENT', /^seqLen must be between 4 and 32 \(got 3\)/);
      refuses(() => lab.createTrainer({ task: 'reverse', vocab: 1 }), 'BAD_ARGUMENT', /^vocab must be between 2 and 64 \(got 1\)/);
      const trainer = lab.createTrainer({ task: 'reverse' }); // 1 layer, 2 heads
      refuses(() => trainer.ablate(-1, 0), 'BAD_ARGUMENT', /^layer must be between 0 and 0 \(got -1\)/);
      refuses(() => trainer.ablate(5, 0), 'BAD_ARGUMENT', /^layer must be between 0 and 0 \(got 5\)/);
      refuses(() => trainer.ablate(0, -1), 'BAD_ARGUMENT', /^head must be between 0 and 1 \(got -1\)/);
      refuses(() => trainer.ablate(0, 2), 'BAD_ARGUMENT', /^head must be between 0 and 1 \(got 2\)/);
      trainer.ablate(0, 1);
      trainer.free();
      sameAsBefore();
    });

    test('a diverged trainer reports no non-finite loss, and step(0) keeps the last step taken', () => {
      const trainer = lab.createTrainer({ task: 'previous-token', lr: 1, seed: 2, dModel: 64, heads: 4, batch: 32 });
      refuses(() => trainer.step(100), 'OVERFLOW', /training diverged at step/);
      const { step, loss } = trainer.step(0);
      assert.ok(step > 0, `${step} steps were taken`);
      assert.ok(Number.isFinite(loss), `step(0) after ${step} steps gives loss ${loss}`);
      refuses(() => trainer.evaluate({ batches: 1 }), 'OVERFLOW', /held-out loss is not finite/);
      const { batch: B, seqLen: T } = trainer.config;
      const tokens = Array.from({ length: B }, (_, b) => Array.from({ length: T }, (_, i) => (b * 7 + i * 3) % 16));
      const targets = tokens.map((row) => row.map((_, i) => (i ? row[i - 1] : -1)));
      refuses(() => trainer.gradients(tokens, targets), 'OVERFLOW', /loss is not finite/);
      trainer.free();
      sameAsBefore();
    });

    test('memory does not grow over 100 000 calls', () => {
      const x = [[1, 0], [0, 1]];
      for (let i = 0; i < 1000; i++) lab.sdpa(x, x, x);
      const before = lab.memoryBytes();
      for (let i = 0; i < 100000; i++) {
        lab.sdpa(x, x, x, { needWeights: i % 2 === 0, causal: i % 3 === 0 });
        if (i % 1000 === 0) { try { lab.sdpa(x, x, x, { mask: [[0, 0], [1, 1]] }); } catch { /* refused on purpose */ } }
      }
      assert.equal(lab.memoryBytes(), before);
      sameAsBefore();
    });
  });
}

/** A predicate for assert.rejects: an AttentionError with `code` and a message matching `pattern`. */
const rejection = (code, pattern, Type = AttentionError) => (err) => {
  assert.ok(err instanceof Type, `expected AttentionError, got ${err?.constructor?.name}: ${err?.message}`);
  assert.equal(err.code, code, `code for: ${err.message}`);
  assert.match(err.message, pattern);
  return true;
};

test('loadAttention checks its options as every other call does', async () => {
  await assert.rejects(loadAttention({ simd: 'yes' }), rejection('BAD_ARGUMENT', /simd must be true or false/));
  await assert.rejects(loadAttention({ simD: false }), rejection('BAD_ARGUMENT', /loadAttention: unknown option "simD" \(known: simd\)/));
  await assert.rejects(loadAttention(5), rejection('BAD_ARGUMENT', /loadAttention options must be an object/));
  // null means no options, as everywhere else.
  assert.equal(await loadAttention(null), await loadAttention());
});

test('a failed fetch or instantiate rejects with UNSUPPORTED, the original error as cause', async () => {
  // A module instance of its own, so that the labs loaded above stay as they are.
  const fresh = await import('../web/attention.js?load-failures');
  fresh.wasmLocation.base = 'http://127.0.0.1:9/wasm/'; // a port fetch refuses to use
  await assert.rejects(fresh.loadAttention({ simd: false }), (err) => {
    rejection('UNSUPPORTED', /^cannot fetch http:\/\/127\.0\.0\.1:9\/wasm\/attention-scalar\.wasm: /, fresh.AttentionError)(err);
    assert.ok(err.cause instanceof TypeError, `cause: ${err.cause}`);
    return true;
  });
  fresh.wasmLocation.inline.scalar = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 255]); // a header, then junk
  await assert.rejects(fresh.loadAttention({ simd: false }), (err) => {
    rejection('UNSUPPORTED', /^cannot instantiate attention-scalar\.wasm: /, fresh.AttentionError)(err);
    assert.ok(err.cause instanceof WebAssembly.CompileError, `cause: ${err.cause}`);
    return true;
  });
});

test('paddingMask checks padId', () => {
  refuses(() => paddingMask([[0, 0, 1]], '0'), 'BAD_ARGUMENT', /padId must be an integer \(got "0"\)/);
  refuses(() => paddingMask([[0, 0, 1]], 0.5), 'BAD_ARGUMENT', /padId must be an integer/);
  refuses(() => paddingMask([[0, 0, 1]], null), 'BAD_ARGUMENT', /padId must be an integer/);
  assert.deepEqual(Array.from(paddingMask([[0, 0, 1]]).data), [0, 0, 1]);
  assert.deepEqual(Array.from(paddingMask([[-1, 2, -1]], -1).data), [0, 1, 0]);
});

test('paddingMask refuses token ids that are not integers, naming the entry', () => {
  refuses(() => paddingMask([[1, NaN, 0]]), 'BAD_ARGUMENT', /tokenIds entry \[0, 1\] is NaN; token ids must be integers/);
  refuses(() => paddingMask([[1, 2], [0, 0.5]]), 'BAD_ARGUMENT', /tokenIds entry \[1, 1\] is 0\.5/);
  refuses(() => paddingMask([[Infinity, 0]]), 'BAD_ARGUMENT', /tokenIds entry \[0, 0\] is Infinity/);
  assert.deepEqual(Array.from(paddingMask([[2 ** 40, 0]]).data), [1, 0]);
});

test('the lookup of maskReader checks its indices', () => {
  const allowed = maskReader([[1, 0, 1]], [2, 3]);
  assert.deepEqual([allowed(0, 0), allowed(1, 1), allowed(1, 2)], [true, false, true]);
  refuses(() => allowed(0), 'BAD_ARGUMENT', /mask needs one index per dim of \[2, 3\] \(2\); got 1/);
  refuses(() => allowed(0, 1, 0), 'BAD_ARGUMENT', /mask needs one index per dim.*got 3/);
  refuses(() => allowed(0, 3), 'BAD_ARGUMENT', /mask index 1 is 3; it must be an integer from 0 to 2/);
  refuses(() => allowed(-1, 0), 'BAD_ARGUMENT', /mask index 0 is -1/);
  refuses(() => allowed(0, 1.5), 'BAD_ARGUMENT', /mask index 1 is 1\.5/);
  refuses(() => maskReader([[1, 1]], [2], 'keep')(0, '1'), 'BAD_ARGUMENT', /keep needs one index per dim of \[2\] \(1\); got 2/);
  refuses(() => maskReader([1, 1], [2], 'keep')('1'), 'BAD_ARGUMENT', /keep index 0 is "1"/);
});
