// Attention as production runs it: the tiled online-softmax path (against
// the standard path, the float64 reference and onnxruntime-web; its trace;
// its memory), dropout on the attention weights, and RoPE as a function.
// Both wasm builds.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadAttention } from '../web/attention.js';
import { createOrtSdpa } from './bench/ort_peer.mjs';
import { rng, randomTensor, sdpaReference } from './helpers/reference.mjs';
import { assertClose, largestMagnitude, refuses } from './helpers/compare.mjs';

// A random allowed mask of `shape` with key 0 always allowed, so no row is empty.
function randomMask(shape, random, keep = 0.6) {
  const Tk = shape[shape.length - 1];
  const n = shape.reduce((a, b) => a * b, 1);
  return { data: Uint8Array.from({ length: n }, (_, i) => (i % Tk === 0 || random() < keep ? 1 : 0)), shape };
}

// Within 1e-6 of the largest magnitude: the agreement asked of the tiled path.
const sameNumbers = (got, want, shape, label) =>
  assertClose(got, want, { shape, label, atol: 1e-6 * Math.max(1, largestMagnitude(want)) });

const labs = { true: await loadAttention({ simd: true }), false: await loadAttention({ simd: false }) };

for (const simd of [true, false]) {
  describe(`${simd ? 'SIMD' : 'scalar'} build`, () => {
    const lab = labs[simd];

    describe('the tiled online-softmax path', () => {
      test('equals the standard path and the float64 reference: masks, causal, tails, every tile width', () => {
        const random = rng(simd ? 11 : 12);
        const sizes = [1, 2, 7, 13, 64, 130];
        const pick = (list) => list[Math.floor(random() * list.length)];
        for (let c = 0; c < 60; c++) {
          const batch = [[], [2], [2, 3]][c % 3];
          const Tq = pick(sizes), Tk = pick(sizes), dk = pick([1, 4, 5, 33]), dv = pick([1, 3, 8, 17]);
          const blockKeys = pick([1, 3, 8, 16, 128]);
          const causal = c % 2 === 1 && Tq <= Tk;
          const maskShape = [null, [Tq, Tk], [...batch, Tq, Tk], [Tk]][c % 4];
          const mask = maskShape ? randomMask(maskShape, random) : undefined;
          // large logits (scale 4) so that the running max really moves
          const scale = c % 5 === 0 ? 4 : undefined;
          const q = randomTensor([...batch, Tq, dk], random);
          const k = randomTensor([...batch, Tk, dk], random);
          const v = randomTensor([...batch, Tk, dv], random);
          const label = `batch [${batch}] Tq=${Tq} Tk=${Tk} dk=${dk} dv=${dv} blockKeys=${blockKeys} mask ${maskShape ? `[${maskShape}]` : 'none'} causal=${causal}`;
          const tiled = lab.sdpaTiled(q, k, v, { mask, causal, scale, blockKeys });
          assert.equal(tiled.tiles, Math.ceil(Tk / Math.min(blockKeys, Tk)), `${label}: tile count`);
          const standard = lab.sdpa(q, k, v, { mask, causal, scale });
          const lean = lab.sdpa(q, k, v, { mask, causal, scale, needWeights: false });
          const ref = sdpaReference(q, k, v, { mask, causal, scale });
          sameNumbers(tiled.output.data, standard.output.data, standard.output.shape, `${label}: tiled vs standard`);
          sameNumbers(lean.output.data, standard.output.data, standard.output.shape, `${label}: sdpa without weights vs with`);
          assertClose(tiled.output.data, ref.output, { shape: standard.output.shape, label: `${label}: tiled vs float64`, atol: 2e-6 * Math.max(1, largestMagnitude(ref.output)) });
        }
      });

      test('the core\'s memory figure: O(T·d) for the tiled path, O(T²) when the weights are kept', () => {
        const bytes = (T, options) => {
          const x = { data: new Float32Array(T * 64).fill(0.25), shape: [T, 64] };
          if (options === 'tiled') lab.sdpaTiled(x, x, x);
          else lab.sdpa(x, x, x, options);
          return lab.lastCallBytes();
        };
        const tiled = [512, 1024, 2048].map((T) => bytes(T, 'tiled'));
        const lean = [512, 1024, 2048].map((T) => bytes(T, { needWeights: false }));
        const full = [512, 1024, 2048].map((T) => bytes(T, {}));
        for (let i = 1; i < 3; i++) {
          const grow = tiled[i] / tiled[i - 1], growFull = full[i] / full[i - 1];
          assert.ok(grow > 1.8 && grow < 2.3, `tiled memory doubles with T: ${tiled}`);
          assert.ok(growFull > 3.5 && growFull < 4.2, `memory with weights grows as T²: ${full}`);
          assert.equal(lean[i], tiled[i], 'sdpa without weights runs the tiled path');
        }
        // inputs and output alone: 4 · 64 · T floats
        assert.ok(tiled[2] >= 4 * 4 * 64 * 2048 && tiled[2] < 1.6 * 4 * 4 * 64 * 2048, `tiled at T = 2048: ${tiled[2]} bytes`);
        assert.ok(full[2] >= 2 * 4 * 2048 * 2048, `weights and scores at T = 2048: ${full[2]} bytes`);
      });

      test('a query row with no allowed key is refused, as on the standard path, never NaN', () => {
        const random = rng(5);
        const q = randomTensor([2, 6, 4], random), k = randomTensor([2, 9, 4], random), v = randomTensor([2, 9, 3], random);
        const mask = randomMask([2, 6, 9], random);
        for (let j = 0; j < 9; j++) mask.data[(1 * 6 + 4) * 9 + j] = 0; // batch 1, query 4
        const want = /no allowed key \(batch 1, head 0, query 4\)/;
        for (const blockKeys of [1, 4, 128]) refuses(() => lab.sdpaTiled(q, k, v, { mask, blockKeys }), 'ALL_MASKED_ROW', want);
        refuses(() => lab.sdpa(q, k, v, { mask, needWeights: false }), 'ALL_MASKED_ROW', want);
        refuses(() => lab.sdpa(q, k, v, { mask }), 'ALL_MASKED_ROW', want);
        // a causal diagonal pushed below row 0 empties the first rows too
        refuses(() => lab.sdpaTiled([[1, 0]], [[1, 0], [0, 1]], [[1], [2]], { mask: [[0, 0]] }), 'ALL_MASKED_ROW');
        // and the lab still works afterwards
        const after = lab.sdpaTiled(q, k, v).output.data;
        const bad = after.findIndex((x) => !Number.isFinite(x));
        assert.equal(bad, -1, `after the refusals, sdpaTiled output[${bad}] is ${after[bad]}, not finite`);
      });

      test('the trace: m never falls, rescale = exp(m_old − m_new), l and the accumulator give the output', () => {
        const random = rng(21);
        const [Tq, Tk, d, dv, blockKeys] = [5, 11, 4, 3, 3];
        const q = randomTensor([Tq, d], random), k = randomTensor([Tk, d], random), v = randomTensor([Tk, dv], random);
        const mask = randomMask([Tq, Tk], random, 0.5);
        const { output, tiles, trace } = lab.sdpaTiled(q, k, v, { mask, blockKeys, trace: true, scale: 3 });
        assert.equal(tiles, 4);
        assert.deepEqual(trace.max.shape, [Tq, tiles]);
        assert.deepEqual(trace.accumulator.shape, [Tq, tiles, dv]);
        for (let i = 0; i < Tq; i++) {
          let mOld = -Infinity;
          for (let t = 0; t < tiles; t++) {
            const m = trace.max.data[i * tiles + t];
            assert.ok(m >= mOld, `row ${i} tile ${t}: m fell from ${mOld} to ${m}`);
            const want = mOld === -Infinity ? (m === -Infinity ? 1 : 0) : Math.exp(mOld - m);
            assert.ok(Math.abs(trace.rescale.data[i * tiles + t] - want) <= 1e-6, `row ${i} tile ${t}: rescale ${trace.rescale.data[i * tiles + t]}, want ${want}`);
            mOld = m;
          }
          const l = trace.sum.data[i * tiles + tiles - 1];
          const acc = trace.accumulator.data.subarray((i * tiles + tiles - 1) * dv, (i * tiles + tiles) * dv);
          sameNumbers(acc.map((x) => x / l), output.data.subarray(i * dv, (i + 1) * dv), [dv], `row ${i}: acc / l`);
        }
        refuses(() => lab.sdpaTiled(randomTensor([300, 4], random), randomTensor([300, 4], random), randomTensor([300, 4], random), { blockKeys: 1, trace: true }),
          'TOO_LARGE', /small sizes/);
      });

      test('bug no-rescale changes the output once the max moves, and only in the tiled path', () => {
        const q = [[1, 0]], k = [[0, 0], [4, 0], [8, 0]], v = [[1, 0], [0, 1], [1, 1]];
        const good = lab.sdpaTiled(q, k, v, { blockKeys: 1 }).output.data;
        const bad = lab.sdpaTiled(q, k, v, { blockKeys: 1, bug: 'no-rescale' }).output.data;
        assert.ok(Math.abs(bad[0] - good[0]) > 0.1, `no-rescale: ${bad} vs ${good}`);
        // one tile: nothing to rescale, so the bug cannot show
        sameNumbers(lab.sdpaTiled(q, k, v, { blockKeys: 3, bug: 'no-rescale' }).output.data, good, [1, 2], 'one tile');
        refuses(() => lab.sdpa(q, k, v, { bug: 'no-rescale' }), 'BAD_ARGUMENT', /sdpaTiled/);
        refuses(() => lab.sdpaTiled(q, k, v, { bug: 'no-scale' }), 'BAD_ARGUMENT', /no-rescale/);
        refuses(() => lab.sdpaTiled(q, k, v, { blockKeys: 0 }), 'BAD_ARGUMENT', /blockKeys/);
      });
    });

    describe('dropout on the attention weights', () => {
      const random = rng(41);
      const q = randomTensor([2, 6, 4], random), k = randomTensor([2, 9, 4], random), v = randomTensor([2, 9, 3], random);
      const mask = randomMask([6, 9], random);

      test('inverted dropout: kept weights are the softmax times 1/(1 − p), dropped ones 0, output = weights v', () => {
        const p = 0.4;
        const plain = lab.sdpa(q, k, v, { mask });
        const r = lab.sdpa(q, k, v, { mask, dropout: p, seed: 7 });
        assert.deepEqual(r.dropoutMask.shape, [2, 6, 9]);
        assert.ok(r.dropoutMask.data instanceof Uint8Array, `the dropout mask is a ${r.dropoutMask.data?.constructor?.name}, want Uint8Array`);
        const want = plain.weights.data.map((w, i) => (r.dropoutMask.data[i] ? w / (1 - p) : 0));
        assertClose(r.weights.data, want, { shape: r.weights.shape, label: 'weights after dropout', atol: 1e-6 });
        // the output is what the dropped-out weights make of v (float64 matmul)
        const out = new Float64Array(2 * 6 * 3);
        for (let b = 0; b < 2; b++) for (let i = 0; i < 6; i++) for (let j = 0; j < 9; j++) for (let c = 0; c < 3; c++) {
          out[(b * 6 + i) * 3 + c] += r.weights.data[(b * 6 + i) * 9 + j] * v.data[(b * 9 + j) * 3 + c];
        }
        assertClose(r.output.data, out, { shape: r.output.shape, label: 'output = weights v', atol: 1e-5 });
        assert.deepEqual(Array.from(r.scores.data), Array.from(plain.scores.data), 'scores are untouched');
        // without weights: the same output and mask
        const lean = lab.sdpa(q, k, v, { mask, dropout: p, seed: 7, needWeights: false });
        assert.deepEqual(Object.keys(lean).sort(), ['dropoutMask', 'output']);
        sameNumbers(lean.output.data, r.output.data, r.output.shape, 'dropout without weights');
        assert.deepEqual(lean.dropoutMask.data, r.dropoutMask.data);
        // p = 0 keeps everything and changes nothing
        const none = lab.sdpa(q, k, v, { mask, dropout: 0 });
        const dropped = none.dropoutMask.data.findIndex((x) => x !== 1);
        assert.equal(dropped, -1, `p = 0: dropout mask entry ${dropped} is ${none.dropoutMask.data[dropped]}, want 1`);
        assert.deepEqual(Array.from(none.weights.data), Array.from(plain.weights.data));
        // the row-sum check sees the difference
        assert.ok(r.stats.maxRowSumError > 0.05, `rows no longer sum to 1: ${r.stats.maxRowSumError}`);
      });

      test('the same seed gives the same mask, another seed another; about p of the entries are dropped', () => {
        const a = lab.sdpa(q, k, v, { dropout: 0.5, seed: 123 }).dropoutMask.data;
        const b = lab.sdpa(q, k, v, { dropout: 0.5, seed: 123 }).dropoutMask.data;
        const c = lab.sdpa(q, k, v, { dropout: 0.5, seed: 124 }).dropoutMask.data;
        assert.deepEqual(a, b);
        assert.notDeepEqual(a, c);
        const big = randomTensor([64, 64], random);
        const kept = lab.sdpa(big, big, big, { dropout: 0.25, seed: 5 }).dropoutMask.data;
        const rate = 1 - kept.reduce((s, x) => s + x, 0) / kept.length;
        assert.ok(Math.abs(rate - 0.25) < 0.02, `dropped fraction ${rate}, want about 0.25`);
      });

      test('the mean row sum over many seeds is close to 1', () => {
        const p = 0.3;
        const seeds = 400;
        let total = 0, rows = 0, sq = 0;
        for (let seed = 0; seed < seeds; seed++) {
          const w = lab.sdpa(q, k, v, { mask, dropout: p, seed }).weights.data;
          for (let r = 0; r < 12; r++) {
            let sum = 0;
            for (let j = 0; j < 9; j++) sum += w[r * 9 + j];
            total += sum;
            sq += sum * sum;
            rows++;
          }
        }
        const mean = total / rows;
        const sd = Math.sqrt(sq / rows - mean * mean);
        const stderr = sd / Math.sqrt(rows);
        assert.ok(Math.abs(mean - 1) < 4 * stderr + 1e-6, `mean row sum ${mean}, 4 standard errors = ${4 * stderr}`);
        assert.ok(sd > 0.05, `row sums do vary (sd ${sd})`);
      });

      test('p out of range, a seed without dropout and a bad seed are refused', () => {
        for (const bad of [1, 1.5, -0.1, NaN, Infinity, '0.5', null]) {
          refuses(() => lab.sdpa(q, k, v, { dropout: bad }), 'BAD_ARGUMENT', /dropout/);
        }
        refuses(() => lab.sdpa(q, k, v, { dropout: 0.999999999 }), 'BAD_ARGUMENT', /got 0\.999999999, which is 1 in float32/);
        refuses(() => lab.sdpa(q, k, v, { dropout: -0.1 }), 'BAD_ARGUMENT', /got -0\.1\)/);
        refuses(() => lab.sdpa(q, k, v, { seed: 3 }), 'BAD_ARGUMENT', /seed/);
        refuses(() => lab.sdpa(q, k, v, { dropout: 0.1, seed: -1 }), 'BAD_ARGUMENT', /seed/);
        refuses(() => lab.sdpa(q, k, v, { dropout: 0.1, seed: 1.5 }), 'BAD_ARGUMENT', /seed/);
      });
    });

    describe('RoPE as a function', () => {
      const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

      test('a score depends only on the distance between the two positions', () => {
        const random = rng(31);
        const q = randomTensor([1, 8], random), k = randomTensor([1, 8], random);
        const score = (pq, pk) => dot(lab.applyRope(q, { positions: [pq] }).data, lab.applyRope(k, { positions: [pk] }).data);
        for (const [pq, pk, shift] of [[5, 2, 7], [0, 0, 100], [3, 9, 1000]]) {
          const a = score(pq, pk), b = score(pq + shift, pk + shift);
          assert.ok(Math.abs(a - b) <= 1e-4 * Math.max(1, Math.abs(a)), `positions (${pq}, ${pk}) vs shifted by ${shift}: ${a} vs ${b}`);
        }
        const [before, moved] = [score(5, 2), score(6, 2)];
        assert.ok(Math.abs(before - moved) > 1e-3, `moving one position changes the score: (5, 2) ${before}, (6, 2) ${moved}, want a difference > 1e-3`);
        // position 0 is no rotation; a norm-preserving rotation otherwise
        assert.deepEqual(Array.from(lab.applyRope(q, { positions: [0] }).data), Array.from(q.data));
        const r = lab.applyRope(q, { positions: [7] }).data;
        const [rotated, plain] = [dot(r, r), dot(q.data, q.data)];
        assert.ok(Math.abs(rotated - plain) <= 1e-5 * plain,
          `position 7: |rope(q)|² ${rotated}, |q|² ${plain}, relative difference ${Math.abs(rotated - plain) / plain} (tolerance 1e-5)`);
      });

      test('equals the float64 rotation, split-halves pairing, any base and positions', () => {
        const random = rng(32);
        const x = randomTensor([2, 3, 5, 6], random);
        const positions = [0, 1, 4, 2.5, 40];
        const base = 500;
        const got = lab.applyRope(x, { positions, base });
        assert.deepEqual(got.shape, [2, 3, 5, 6]);
        const want = new Float64Array(x.data.length);
        for (let row = 0; row < 2 * 3 * 5; row++) {
          const t = row % 5;
          for (let c = 0; c < 3; c++) {
            const angle = positions[t] * base ** (-2 * c / 6);
            const x1 = x.data[row * 6 + c], x2 = x.data[row * 6 + c + 3];
            want[row * 6 + c] = x1 * Math.cos(angle) - x2 * Math.sin(angle);
            want[row * 6 + c + 3] = x2 * Math.cos(angle) + x1 * Math.sin(angle);
          }
        }
        assertClose(got.data, want, { shape: got.shape, label: 'applyRope vs float64', atol: 1e-6 });
        // a number is the first position
        assert.deepEqual(lab.applyRope(x, { positions: 3 }).data, lab.applyRope(x, { positions: [3, 4, 5, 6, 7] }).data);
      });

      test('agrees with the rotation inside the multi-head module (its cached keys)', () => {
        const random = rng(33);
        const [B, T, C, H] = [2, 5, 8, 2];
        const D = C / H;
        const mha = lab.createMultiHeadAttention({ dModel: C, numHeads: H, rope: true, seed: 3 });
        try {
          const eye = { data: Float32Array.from({ length: C * C }, (_, i) => (i % (C + 1) === 0 ? 1 : 0)), shape: [C, C] };
          const zero = { data: new Float32Array(C), shape: [C] };
          mha.setWeights({ kProj: { weight: eye, bias: zero } });
          const x = randomTensor([B, T, C], random);
          // (B, T, C) -> (B, H, T, D), as the module splits heads
          const heads = new Float32Array(B * H * T * D);
          for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let t = 0; t < T; t++)
            for (let d = 0; d < D; d++) heads[((b * H + h) * T + t) * D + d] = x.data[(b * T + t) * C + h * D + d];
          const first = mha.forward(x, { useCache: true, causal: true });
          const want = lab.applyRope({ data: heads, shape: [B, H, T, D] });
          assertClose(first.cache.key.data, want.data, { shape: want.shape, label: 'module keys vs applyRope', atol: 1e-6 });
          // a second step continues at position T
          const step = randomTensor([B, 1, C], random);
          const next = mha.forward(step, { cache: first.cache, useCache: true, causal: true });
          const stepHeads = new Float32Array(B * H * D);
          for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) for (let d = 0; d < D; d++) stepHeads[(b * H + h) * D + d] = step.data[b * C + h * D + d];
          const rotated = lab.applyRope({ data: stepHeads, shape: [B, H, 1, D] }, { positions: [T] });
          const got = new Float32Array(B * H * D);
          for (let bh = 0; bh < B * H; bh++) got.set(next.cache.key.data.subarray((bh * (T + 1) + T) * D, (bh * (T + 1) + T + 1) * D), bh * D);
          assertClose(got, rotated.data, { shape: [B, H, 1, D], label: 'the cached key at position T', atol: 1e-6 });
        } finally {
          mha.free();
        }
      });

      test('bad arguments are refused', () => {
        refuses(() => lab.applyRope([[1, 2, 3]]), 'BAD_ARGUMENT', /even/);
        refuses(() => lab.applyRope([1, 2]), 'BAD_ARGUMENT', /2 dims/);
        refuses(() => lab.applyRope([[1, 2]], { positions: [1, 2] }), 'SHAPE_MISMATCH', /positions/);
        refuses(() => lab.applyRope([[1, 2]], { positions: [NaN] }), 'NON_FINITE_INPUT', /positions/);
        refuses(() => lab.applyRope([[1, 2]], { base: 0 }), 'BAD_ARGUMENT', /base/);
        refuses(() => lab.applyRope([[1, NaN]]), 'NON_FINITE_INPUT', /x/);
        refuses(() => lab.applyRope([[1, 2]], { offset: 1 }), 'BAD_ARGUMENT', /unknown option/);
      });
    });
  });
}

describe('the tiled path against onnxruntime-web', () => {
  const cases = [
    { name: 'T = 13, blockKeys 4 (a tail tile)', B: 1, H: 2, Tq: 13, Tk: 13, dk: 8, blockKeys: 4 },
    { name: 'causal, T = 70, blockKeys 16', B: 1, H: 1, Tq: 70, Tk: 70, dk: 16, causal: true, blockKeys: 16 },
    { name: 'mask (Tq, Tk), Tq != Tk, blockKeys 5', B: 2, H: 1, Tq: 9, Tk: 23, dk: 4, dv: 6, mask: true, blockKeys: 5 },
    { name: 'padding mask (B,1,1,Tk) and causal, default tiles', B: 2, H: 2, Tq: 40, Tk: 40, dk: 32, causal: true, padding: true },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const random = rng(c.Tq * 31 + c.Tk);
      const dv = c.dv ?? c.dk;
      const q = randomTensor([c.B, c.H, c.Tq, c.dk], random);
      const k = randomTensor([c.B, c.H, c.Tk, c.dk], random);
      const v = randomTensor([c.B, c.H, c.Tk, dv], random);
      let mask = null;
      if (c.mask) mask = randomMask([c.Tq, c.Tk], random);
      if (c.padding) mask = { data: Uint8Array.from({ length: c.B * c.Tk }, (_, i) => (i % c.Tk < (i < c.Tk ? c.Tk : 25) ? 1 : 0)), shape: [c.B, 1, 1, c.Tk] };
      const peer = await createOrtSdpa({ B: c.B, H: c.H, Tq: c.Tq, Tk: c.Tk, dk: c.dk, dv, mask, causal: !!c.causal });
      const theirs = await peer.run({ q: q.data, k: k.data, v: v.data, mask });
      await peer.release();
      for (const simd of [true, false]) {
        const ours = labs[simd].sdpaTiled(q, k, v, { mask, causal: c.causal, blockKeys: c.blockKeys }).output;
        assertClose(ours.data, theirs, { shape: ours.shape, label: `${simd ? 'SIMD' : 'scalar'} tiled vs ORT`, atol: 2e-5 * Math.max(1, largestMagnitude(theirs)) });
      }
    });
  }
});

test('memory: the tiled path at T = 16384, H = 1, d = 64 stays within 64 MiB (a fresh lab)', () => {
  // A fresh process: a lab's memory only grows, so earlier tests must not count.
  const script = `
    import { loadAttention } from ${JSON.stringify(new URL('../web/attention.js', import.meta.url).href)};
    const T = 16384, d = 64;
    const lab = await loadAttention({ simd: ${labs.true.simd} });
    const t = () => ({ data: Float32Array.from({ length: T * d }, (_, i) => Math.sin(i * 0.37)), shape: [1, T, d] });
    const q = t(), k = t(), v = t();
    const before = lab.memoryBytes();
    const a = lab.sdpaTiled(q, k, v, { causal: true }).output;
    const tiled = lab.memoryBytes();
    const b = lab.sdpa(q, k, v, { causal: true, needWeights: false }).output;
    console.log(JSON.stringify({ before, tiled, after: lab.memoryBytes(), finite: { sdpaTiled: a.data.every(Number.isFinite), sdpa: b.data.every(Number.isFinite) } }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: fileURLToPath(new URL('..', import.meta.url)) });
  const { tiled, after, finite } = JSON.parse(out.trim().split('\n').pop());
  const MiB = 1024 * 1024;
  assert.deepEqual(finite, { sdpaTiled: true, sdpa: true }, 'which outputs are all finite at T = 16384');
  assert.ok(tiled <= 64 * MiB, `memory after sdpaTiled: ${(tiled / MiB).toFixed(1)} MiB > 64 MiB`);
  assert.ok(after <= 64 * MiB, `memory after sdpa without weights: ${(after / MiB).toFixed(1)} MiB > 64 MiB`);
});

test('values near the float32 limit: the no-weights path gives what the weights path gives, not OVERFLOW', async () => {
  // Two equal scores: the output is the mean of the values, 3e38, which fits
  // in float32, while the tiled path's unnormalised sum (6e38) would not.
  for (const simd of [true, false]) {
    const lab = await loadAttention({ simd });
    const q = [[0, 0]], k = [[1, 0], [0, 1]], v = [[3e38], [3e38]];
    const withWeights = lab.sdpa(q, k, v).output.data;
    const without = lab.sdpa(q, k, v, { needWeights: false }).output.data;
    assert.ok(Number.isFinite(without[0]), `${simd ? 'SIMD' : 'scalar'}: ${without[0]}`);
    assert.deepEqual(Array.from(without), Array.from(withWeights));
  }
});
