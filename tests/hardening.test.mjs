// Hostile values: Proxies, cycles, huge sparse arrays, Symbols, caches from
// other modules, memory that never shrank. Every refusal is an
// AttentionError with a documented code, and nothing a caller does can
// write outside the slots of a call or change a module it did not touch.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention, AttentionError, causalMask, paddingMask, maskReader } from '../web/attention.js';
import { rng, randomTensor } from './helpers/reference.mjs';
import { refuses, resultsUnchanged } from './helpers/compare.mjs';

/** A Proxy around a typed array that reports `first` as its length once, then `later`. */
function lyingLength(array, first, later) {
  let reads = 0;
  return new Proxy(array, {
    get(target, key) {
      if (key === 'length') return reads++ === 0 ? first : later;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const labs = { true: await loadAttention({ simd: true }), false: await loadAttention({ simd: false }) };

for (const simd of [true, false]) {
  describe(`${simd ? 'SIMD' : 'scalar'} build against hostile values`, () => {
    const lab = labs[simd];
    const random = rng(21);
    const q = randomTensor([2, 3, 4], random);
    const k = randomTensor([2, 5, 4], random);
    const v = randomTensor([2, 5, 6], random);
    const reference = () => lab.sdpa(q, k, v, { causal: true });
    const baseline = reference();
    const sameAsBefore = resultsUnchanged(reference, 'a hostile call');

    test('a Proxy whose length grows after the check cannot write past its slot', () => {
      const mha = lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, seed: 3 });
      const x = randomTensor([1, 3, 8], random);
      const weights = mha.getWeights();
      const out = mha.forward(x).output.data;
      const huge = 1 << 22;
      const inputs = [
        () => lab.sdpa({ data: lyingLength(new Float32Array(12).fill(0.5), 12, huge), shape: [3, 4] }, [[1, 0, 0, 0]], [[1]]),
        () => lab.sdpa([[1, 0]], [[1, 0]], [[1]], { mask: { data: lyingLength(new Uint8Array(1).fill(1), 1, huge), shape: [1, 1] } }),
        () => mha.forward({ data: lyingLength(new Float32Array(24).fill(0.25), 24, huge), shape: [1, 3, 8] }),
        () => mha.setWeights({ qProj: { weight: { data: lyingLength(weights.qProj.weight.data, 64, huge), shape: [8, 8] } } }),
      ];
      for (const call of inputs) {
        try { call(); } catch (err) { assert.ok(err instanceof AttentionError, `${err}`); }
      }
      assert.deepEqual(mha.getWeights(), weights, 'the module\'s weights changed');
      assert.deepEqual(mha.forward(x).output.data, out, 'the module\'s results changed');
      mha.free();
      sameAsBefore();
    });

    test('a typed array with a shadowed length, or a buffer resized mid-call, is refused', () => {
      const long = new Float32Array(1 << 20).fill(1);
      Object.defineProperty(long, 'length', { value: 4 });
      refuses(() => lab.sdpa({ data: long, shape: [1, 4] }, [[1, 0, 0, 0]], [[1]]), 'SHAPE_MISMATCH', /q has 1048576 values/);
      const buffer = new ArrayBuffer(16, { maxByteLength: 1 << 22 });
      const tracking = new Float32Array(buffer).fill(1); // follows the buffer's length
      const grower = { get data() { buffer.resize(1 << 22); return [1, 0, 0, 0]; }, shape: [1, 4] };
      refuses(() => lab.sdpa({ data: tracking, shape: [1, 4] }, grower, [[1]]), 'BAD_ARGUMENT', /q changed/);
      const victim = new Float32Array(4).fill(1);
      const detachVictim = { get data() { structuredClone(victim.buffer, { transfer: [victim.buffer] }); return [1, 0, 0, 0]; }, shape: [1, 4] };
      refuses(() => lab.sdpa({ data: victim, shape: [1, 4] }, detachVictim, [[1]]), 'BAD_ARGUMENT', /q changed/);
      sameAsBefore();
    });

    test('self-referencing and very deep nested arrays are refused, not fatal', () => {
      const a = [1];
      a[0] = a;
      refuses(() => lab.sdpa(a, k, v), 'BAD_ARGUMENT', /q contains itself/);
      const b = [[1, 2]];
      b[0][0] = b;
      refuses(() => lab.sdpa(b, k, v), 'BAD_ARGUMENT', /q contains itself/);
      let deep = [1];
      for (let i = 0; i < 20000; i++) deep = [deep];
      refuses(() => lab.sdpa(deep, k, v), 'BAD_ARGUMENT', /q is nested deeper than/);
      refuses(() => lab.sdpa(q, k, v, { mask: deep }), 'BAD_ARGUMENT', /mask is nested deeper than/);
      sameAsBefore();
    });

    test('huge sparse arrays are refused from their lengths alone', () => {
      let reads = 0;
      const sparse = new Proxy(new Array(2 ** 32 - 1), { get(t, key) { reads++; return Reflect.get(t, key); } });
      refuses(() => lab.sdpa([sparse], k, v), 'TOO_LARGE', /q/);
      assert.ok(reads < 16, `the refusal read ${reads} properties`);
      reads = 0;
      refuses(() => lab.sdpa({ data: sparse, shape: [2 ** 16, 2 ** 16 - 1] }, k, v), 'TOO_LARGE', /q/);
      assert.ok(reads < 16, `the refusal read ${reads} properties`);
      const hugeShape = new Array(2 ** 32 - 1);
      refuses(() => lab.sdpa({ data: [1], shape: hugeShape }, k, v), 'BAD_ARGUMENT', /q.shape/);
      refuses(() => lab.allowedPairs(hugeShape), 'BAD_ARGUMENT', /shape/);
      sameAsBefore();
    });

    test('Symbols, null-prototype objects and throwing getters give AttentionErrors', () => {
      const sym = Symbol('s');
      const bare = Object.create(null);
      const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2 });
      const x = randomTensor([1, 2, 4], random);
      refuses(() => lab.sdpa({ data: [1], shape: [sym] }, k, v), 'BAD_ARGUMENT', /Symbol\(s\)/);
      refuses(() => lab.sdpa({ data: [1], shape: [bare] }, k, v), 'BAD_ARGUMENT', /dim 0/);
      refuses(() => lab.sdpa(q, k, v, { bug: sym }), 'BAD_ARGUMENT', /unknown bug/);
      refuses(() => lab.sdpa(q, k, v, { bug: bare }), 'BAD_ARGUMENT', /unknown bug/);
      refuses(() => lab.sdpa(q, k, v, { mask: [1, sym, 1, 1, 1] }), 'BAD_ARGUMENT', /mask value 1 is Symbol\(s\)/);
      refuses(() => lab.sdpa(q, k, v, { mask: [1, bare, 1, 1, 1] }), 'BAD_ARGUMENT', /mask value 1/);
      refuses(() => lab.sdpa([[sym]], [[1]], [[1]]), 'BAD_ARGUMENT', /q value 0 is not a number/);
      refuses(() => lab.sdpa(q, k, v, { scale: sym }), 'BAD_ARGUMENT', /scale/);
      refuses(() => lab.allowedPairs([2, 2], { causal: true, causalOffset: sym }), 'BAD_ARGUMENT', /causalOffset/);
      refuses(() => lab.allowedPairs([2, 2], { causal: true, causalOffset: bare }), 'BAD_ARGUMENT', /causalOffset/);
      refuses(() => lab.createMultiHeadAttention({ dModel: sym, numHeads: 1 }), 'BAD_ARGUMENT', /dModel/);
      refuses(() => lab.createMultiHeadAttention({ dModel: 4, numHeads: 1, seed: bare }), 'BAD_ARGUMENT', /seed/);
      refuses(() => mha.forward(x, { queryPositionOffset: sym }), 'BAD_ARGUMENT', /queryPositionOffset/);
      refuses(() => mha.forward(x, { keyPositionOffset: bare }), 'BAD_ARGUMENT', /keyPositionOffset/);
      refuses(() => lab.sampleDotProducts({ dk: 4, seed: sym }), 'BAD_ARGUMENT', /seed/);
      const throwing = { get data() { throw new Error('no'); }, shape: [1, 1] };
      refuses(() => lab.sdpa(throwing, k, v), 'BAD_ARGUMENT', /q/);
      refuses(() => lab.sdpa(q, k, v, { get mask() { throw sym; } }), 'BAD_ARGUMENT', /sdpa/);
      const { proxy, revoke } = Proxy.revocable([], {});
      revoke();
      refuses(() => lab.sdpa(proxy, k, v), 'BAD_ARGUMENT', /q/);
      refuses(() => lab.sdpa(q, k, v, proxy), 'BAD_ARGUMENT', /options/);
      refuses(() => mha.forward(x, { cache: { get key() { throw bare; } }, useCache: true }), 'BAD_ARGUMENT', /cache/);
      mha.free();
      sameAsBefore();
    });

    test('applyRope reads its positions once, as doubles', () => {
      const x = randomTensor([2, 4], random);
      let reads = 0;
      // A getter that answers differently the second time it is asked.
      const positions = { shape: [2], get data() { reads++; return reads === 1 ? [3, 4] : [100, 200]; } };
      const got = lab.applyRope(x, { positions });
      assert.equal(reads, 1, `positions.data was read ${reads} times`);
      assert.deepEqual(got.data, lab.applyRope(x, { positions: [3, 4] }).data, 'rotated by the positions that were checked');
      // 2^24 + 1 has no float32: the positions stay doubles, as the number form is.
      const row = randomTensor([1, 4], random);
      assert.deepEqual(lab.applyRope(row, { positions: [2 ** 24 + 1] }).data, lab.applyRope(row, { positions: 2 ** 24 + 1 }).data);
      sameAsBefore();
    });

    test('options that cannot be turned into text still give AttentionErrors naming the option', () => {
      const bare = Object.create(null);
      const throwing = { toString() { throw new Error('no text'); } };
      for (const odd of [bare, throwing]) {
        refuses(() => lab.sdpa(q, k, v, { dropout: odd }), 'BAD_ARGUMENT', /dropout must be a number/);
        refuses(() => lab.applyRope([[1, 2]], { base: odd }), 'BAD_ARGUMENT', /base must be a positive finite number/);
        refuses(() => lab.sdpaLossSlope([[1, 0]], [[1, 0]], [[1]], [[0]], { eps: odd }), 'BAD_ARGUMENT', /eps must be a positive number/);
        refuses(() => lab.createTrainer({ task: odd }), 'BAD_ARGUMENT', /task must be one of/);
        refuses(() => lab.createTrainer({ task: 'reverse', lr: odd }), 'BAD_ARGUMENT', /lr must be a number/);
        refuses(() => lab.createTrainer({ task: 'reverse', bug: odd }), 'BAD_ARGUMENT', /a trainer takes only the bug/);
      }
      sameAsBefore();
    });

    test('applyRope takes its positions as a typed array, as the types promise', () => {
      const x = randomTensor([3, 4], random);
      const want = lab.applyRope(x, { positions: [2, 5, 7] }).data;
      for (const Type of [Float64Array, Float32Array, Int32Array, Uint8Array]) {
        assert.deepEqual(lab.applyRope(x, { positions: new Type([2, 5, 7]) }).data, want, Type.name);
      }
      refuses(() => lab.applyRope(x, { positions: new Float64Array([2, 5]) }), 'SHAPE_MISMATCH', /positions must hold T = 3 numbers/);
      refuses(() => lab.applyRope(x, { positions: new Float64Array([2, NaN, 7]) }), 'NON_FINITE_INPUT', /positions/);
      refuses(() => lab.applyRope(x, { positions: new BigInt64Array(3) }), 'BAD_ARGUMENT', /positions value 0 is not a number/);
      sameAsBefore();
    });

    test('token ids are read as doubles: a value near an id is not that id', () => {
      const trainer = lab.createTrainer({ task: 'previous-token', seed: 4 });
      const { batch: B, seqLen: T } = trainer.config;
      const near = 1 + 1e-8; // 1 in float32
      refuses(() => trainer.attention(new Array(T).fill(near)), 'BAD_ARGUMENT', /tokens entry 0 is 1\.00000001/);
      refuses(() => trainer.layerInput(0, [near]), 'BAD_ARGUMENT', /tokens entry 0 is 1\.00000001/);
      const ones = Array.from({ length: B }, () => new Array(T).fill(1));
      refuses(() => trainer.gradients(ones.map((row) => row.map(() => near)), ones), 'BAD_ARGUMENT', /tokens entry 0/);
      refuses(() => trainer.gradients(ones, ones.map((row) => row.map(() => near))), 'BAD_ARGUMENT', /targets entry 0/);
      trainer.free();
    });

    test('setWeights needs an object of projections', () => {
      const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2 });
      refuses(() => mha.setWeights(), 'BAD_ARGUMENT', /setWeights/);
      refuses(() => mha.setWeights(null), 'BAD_ARGUMENT', /setWeights/);
      refuses(() => mha.setWeights(7), 'BAD_ARGUMENT', /setWeights/);
      refuses(() => mha.setWeights(new Float32Array(16)), 'BAD_ARGUMENT', /setWeights/);
      mha.free();
    });

    test('allowedPairs beyond memory is TOO_LARGE, at 2^31 pairs as well as beyond', () => {
      refuses(() => lab.allowedPairs([65536, 32768]), 'TOO_LARGE', /^shape \[65536, 32768\] has 2147483648 pairs/);
      refuses(() => lab.allowedPairs([46341, 46341]), 'TOO_LARGE', /^shape \[46341, 46341\]/);
      refuses(() => lab.allowedPairs([2, 2, 32768, 32768]), 'TOO_LARGE', /^shape \[2, 2, 32768, 32768\]/);
      // Weights of 23171 × 23171 floats take just over 2^31 bytes: counted as such, not wrapped to a negative size.
      const x = { data: new Float32Array(23171), shape: [23171, 1] };
      refuses(() => lab.sdpa(x, x, x), 'TOO_LARGE', /this needs 4295532768 bytes/);
      sameAsBefore();
    });

    test('the lesson demos and allowedPairs refuse work that would block the thread for long', async () => {
      const quick = (name, call) => {
        const start = performance.now();
        call();
        const ms = performance.now() - start;
        assert.ok(ms < 10000, `${name} took ${ms.toFixed(0)} ms`);
      };
      quick('the refusals', () => {
        refuses(() => lab.sampleDotProducts({ dk: 65536, count: 2 ** 14 }), 'TOO_LARGE', /^dk × count is 1073741824; at most 33554432/);
        refuses(() => lab.sampleDotProducts({ dk: 65536 }), 'TOO_LARGE', /dk × count/); // the default count, 4096
        refuses(() => lab.softmaxPeak({ dk: 4096, keys: 1024, count: 64 }), 'TOO_LARGE', /^dk × keys × count is 268435456; at most 33554432/);
        refuses(() => lab.allowedPairs([40000, 40000]), 'TOO_LARGE', /^shape \[40000, 40000\] has 1600000000 pairs; at most 67108864/);
        refuses(() => lab.allowedPairs([2, 4, 4096, 4096], { causal: true }), 'TOO_LARGE', /at most 67108864/);
      });
      // At the limits, and at the lesson page's largest settings (why-scale.js: dk up to 257 with
      // 4096 samples, softmaxPeak at dk 256, 64 keys, 256 queries), they run.
      quick('sampleDotProducts at the limit', () => lab.sampleDotProducts({ dk: 65536, count: 512 }));
      quick('softmaxPeak at the limit', () => lab.softmaxPeak({ dk: 4096, keys: 1024, count: 8 }));
      quick('allowedPairs at the limit', () => lab.allowedPairs([8192, 8192], { causal: true }));
      assert.equal(lab.sampleDotProducts({ dk: 257, count: 4096 }).scaled.length, 4096);
      assert.ok(lab.softmaxPeak({ dk: 256, keys: 64, count: 256 }).meanMaxWeightScaled > 0);
      sameAsBefore();
      await lab.reset(); // gives back the 64 MiB of the pairs at the limit
    });

    test('causalMask beyond memory is TOO_LARGE', () => {
      refuses(() => causalMask(70000), 'TOO_LARGE', /causal mask/);
      refuses(() => causalMask(1e9), 'TOO_LARGE', /causal mask/);
      refuses(() => causalMask(4, 1e9), 'TOO_LARGE', /causal mask/);
    });

    test('a cache works only with the module that made it, as it was', () => {
      const make = (options) => lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, ...options });
      const a = make({ seed: 1 }), b = make({ seed: 2 }), roped = make({ seed: 1, rope: true });
      const x = randomTensor([1, 2, 8], random), next = randomTensor([1, 1, 8], random);
      const { cache } = a.forward(x, { useCache: true, causal: true });
      assert.equal(a.forward(next, { useCache: true, cache }).cache.length, 3);
      assert.equal(a.forward(next, { useCache: true, cache: { ...cache } }).cache.length, 3, 'a spread copy still works');
      refuses(() => b.forward(next, { useCache: true, cache }), 'CACHE_MISMATCH', /another multi-head module/);
      refuses(() => roped.forward(next, { useCache: true, cache }), 'CACHE_MISMATCH', /another multi-head module/);
      const forged = { key: cache.key, value: cache.value, keyPaddingMask: cache.keyPaddingMask, length: 2 };
      refuses(() => a.forward(next, { useCache: true, cache: forged }), 'CACHE_MISMATCH', /returned/);
      a.setWeights({ qProj: a.getWeights().qProj });
      refuses(() => a.forward(next, { useCache: true, cache }), 'CACHE_MISMATCH', /weights/);
      const fresh = a.forward(x, { useCache: true }).cache;
      a.free();
      refuses(() => b.forward(next, { useCache: true, cache: fresh }), 'CACHE_MISMATCH', /freed/);
      b.free();
      roped.free();
    });

    test('only plain objects are options', () => {
      const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2 });
      const x = randomTensor([1, 2, 4], random);
      refuses(() => mha.forward(x, new Float32Array(0)), 'BAD_ARGUMENT', /keyValue/);
      refuses(() => mha.forward(x, new Map()), 'BAD_ARGUMENT', /keyValue/);
      refuses(() => lab.sdpa(q, k, v, new Float32Array(0)), 'BAD_ARGUMENT', /options/);
      refuses(() => lab.sdpa(q, k, v, new Date()), 'BAD_ARGUMENT', /options/);
      const bare = Object.assign(Object.create(null), { causal: true });
      assert.deepEqual(lab.sdpa(q, k, v, bare).output.data, baseline.output.data, 'a null-prototype object is a plain object');
      mha.free();
    });

    test('lab.reset gives a fresh instance: memory back to its start, old modules refused', async () => {
      const start = lab.memoryBytes();
      const mha = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2 });
      const big = { data: new Float32Array(1 << 23), shape: [1 << 21, 4] };
      lab.sdpa(big, [[0, 0, 0, 0]], [[1]], { needWeights: false });
      assert.ok(lab.memoryBytes() > start + (1 << 24), `memory grew to ${lab.memoryBytes()}`);
      await lab.reset();
      assert.ok(lab.memoryBytes() <= 16 * 2 ** 20, `after reset: ${lab.memoryBytes()} bytes`);
      refuses(() => mha.forward(randomTensor([1, 2, 4], random)), 'MODULE_FREED', /reset/);
      mha.free(); // harmless after a reset
      sameAsBefore();
      const again = lab.createMultiHeadAttention({ dModel: 4, numHeads: 2 });
      assert.equal(again.forward(randomTensor([1, 2, 4], random)).output.shape.length, 3);
      again.free();
    });

    test('lab.reset refuses old trainers, which must not reach a new trainer at the same address', async () => {
      const options = { task: 'previous-token', seed: 1 };
      const old = lab.createTrainer(options);
      old.step(2);
      await lab.reset();
      const fresh = lab.createTrainer(options);
      const control = lab.createTrainer(options);
      refuses(() => old.step(3), 'MODULE_FREED', /reset/);
      refuses(() => old.evaluate(), 'MODULE_FREED', /reset/);
      refuses(() => old.parameters(), 'MODULE_FREED', /reset/);
      old.free(); // harmless after a reset: it must not free the new trainer's block
      const third = lab.createTrainer(options);
      const a = fresh.step(5);
      const b = control.step(5);
      assert.deepEqual(a, b, `a trainer made after the reset stepped like its twin: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      assert.deepEqual(third.step(5), b, 'a trainer made after old.free() has memory of its own');
      for (const t of [fresh, control, third]) t.free();
      sameAsBefore();
    });
  });
}

test('paddingMask compares token ids exactly, beyond float32\'s integers', () => {
  assert.deepEqual(Array.from(paddingMask([[2 ** 24 + 1, 2 ** 24]], 2 ** 24 + 1).data), [0, 1]);
  assert.deepEqual(Array.from(paddingMask([[1e9 + 1, 1e9]], 1e9).data), [1, 0]);
  assert.deepEqual(Array.from(paddingMask({ data: new Int32Array([2 ** 30 + 1, 2 ** 30]), shape: [1, 2] }, 2 ** 30).data), [1, 0]);
});

test('maskReader needs its name to be a string', () => {
  for (const name of [Object.create(null), { toString() { throw new Error('no text'); } }, 5, Symbol('m')]) {
    refuses(() => maskReader([[1, 0]], [3], name), 'BAD_ARGUMENT', /name must be a string/);
  }
  assert.equal(maskReader([[1, 0]], [2, 2], 'keep')(1, 0), true);
});

// The big calls run on the SIMD build only: the point is the size check and
// the memory, not the arithmetic.
describe('sizes counted from what a path allocates', () => {
  const lab = labs.true;
  test('sdpa at T = 20100, dk = 1 without weights runs', () => {
    const T = 20100;
    const x = { data: new Float32Array(T).fill(0.5), shape: [T, 1] };
    const { output } = lab.sdpa(x, x, x, { needWeights: false, causal: true });
    assert.equal(output.data.length, T);
    let worst = 0;
    for (const value of output.data) worst = Math.max(worst, Math.abs(value - 0.5));
    assert.ok(worst < 1e-3, `constant v gives constant output: off by ${worst}`);
  });

  test('multi-head forward at T = 20100 grows memory by far less than a (B, H, Tq, Tk) mask', async () => {
    await lab.reset();
    const start = lab.memoryBytes();
    const T = 20100;
    const mha = lab.createMultiHeadAttention({ dModel: 2, numHeads: 1 });
    const { output } = mha.forward({ data: new Float32Array(2 * T).fill(0.1), shape: [1, T, 2] }, { causal: true, needWeights: false });
    assert.equal(output.data.length, 2 * T);
    const grown = lab.memoryBytes() - start;
    assert.ok(grown < 32 * 2 ** 20, `memory grew by ${grown} bytes; a (1, 1, T, T) byte mask alone is ${T * T}`);
    mha.free();
    await lab.reset();
  });
});
