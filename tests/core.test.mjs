// Core correctness: the lesson's worked examples, random shapes against a
// float64 reference, and the invariants, for both wasm builds.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention, causalMask, paddingMask } from '../web/attention.js';
import { rng, randomTensor, sdpaReference, maskAt } from './helpers/reference.mjs';
import { assertClose, largestMagnitude } from './helpers/compare.mjs';

const near = (got, want, decimals, label) => {
  got = Array.from(got);
  const tol = 0.5 * 10 ** -decimals;
  got.forEach((g, i) => {
    assert.ok(Math.abs(g - want[i]) <= tol,
      `${label}[${i}]: got ${g.toFixed(decimals + 2)}, seed says ${want[i]} (to ${decimals} decimals)`);
  });
};

// Load both builds before declaring suites: node:test wants suites declared synchronously.
const labs = { true: await loadAttention({ simd: true }), false: await loadAttention({ simd: false }) };

for (const simd of [true, false]) {
  describe(`${simd ? 'SIMD' : 'scalar'} build`, () => {
    const lab = labs[simd];

    test('reports which build runs', () => assert.equal(lab.simd, simd));

    test('seed: one query, two keys', () => {
      const { weights, output, scores } = lab.sdpa([[1, 0]], [[1, 0], [0, 1]], [[10, 0], [0, 20]]);
      near(scores.data, [0.707, 0], 3, 'scores');
      near(weights.data, [0.670, 0.330], 3, 'weights');
      near(output.data, [6.698, 6.605], 3, 'output');
      assert.deepEqual(output.shape, [1, 2]);
      assert.deepEqual(weights.shape, [1, 2]);
    });

    test('seed: only the first key allowed gives exactly [1, 0] and [10, 0]', () => {
      const { weights, output } = lab.sdpa([[1, 0]], [[1, 0], [0, 1]], [[10, 0], [0, 20]], { mask: [[true, false]] });
      assert.deepEqual(Array.from(weights.data), [1, 0]);
      assert.deepEqual(Array.from(output.data), [10, 0]);
    });

    test('seed: the 3x3 example (T = 3, dk = 4, dv = 2)', () => {
      const q = [[[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]];
      const k = [[[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]]];
      const v = [[[10, 0], [0, 10], [5, 5]]];
      const { weights, output } = lab.sdpa(q, k, v);
      assert.deepEqual(weights.shape, [1, 3, 3]);
      assert.deepEqual(output.shape, [1, 3, 2]);
      near(weights.data, [0.3837, 0.2327, 0.3837, 0.2327, 0.3837, 0.3837, 0.2741, 0.2741, 0.4519], 4, 'weights');
      near(output.data, [5.7548, 4.2452, 4.2452, 5.7548, 5.0, 5.0], 4, 'output');
    });

    test('seed: the T = 4 causal mask is the lower triangle', () => {
      const random = rng(4);
      const x = randomTensor([4, 8], random);
      const { weights } = lab.sdpa(x, x, x, { causal: true });
      const pattern = Array.from(weights.data, (w) => (w > 0 ? 1 : 0));
      assert.deepEqual(pattern, [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1]);
      assert.deepEqual(Array.from(causalMask(4).data), [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1]);
      // The same with the mask instead of the flag, and with both.
      const viaMask = lab.sdpa(x, x, x, { mask: causalMask(4) }).weights.data;
      const both = lab.sdpa(x, x, x, { mask: causalMask(4), causal: true }).weights.data;
      assert.deepEqual(viaMask, weights.data);
      assert.deepEqual(both, weights.data);
    });

    test('causalMask, the input helper, builds what the core\'s causal rule allows, at every size', () => {
      // The rule lives in the core; the helper only writes it down as a mask a learner can pass.
      for (const [Tq, Tk] of [[1, 1], [1, 5], [5, 1], [3, 7], [7, 3], [16, 16]]) {
        const want = lab.allowedPairs([Tq, Tk], { causal: true });
        const got = causalMask(Tq, Tk);
        assert.deepEqual(got.shape, want.shape, `causalMask(${Tq}, ${Tk}) shape`);
        const at = got.data.findIndex((v, n) => v !== want.data[n]);
        assert.equal(at, -1, `causalMask(${Tq}, ${Tk}) differs from the core at query ${Math.floor(at / Tk) + 1}, key ${at % Tk + 1}`);
      }
    });

    test('seed: padding mask from token ids (pad 0), and causal AND padding', () => {
      const ids = [[12, 91, 33, 0, 0], [44, 17, 29, 81, 5]];
      const pad = paddingMask(ids, 0);
      assert.deepEqual(pad.shape, [2, 1, 1, 5]);
      assert.deepEqual(Array.from(pad.data), [1, 1, 1, 0, 0, 1, 1, 1, 1, 1]);
      const random = rng(5);
      const q = randomTensor([2, 2, 5, 8], random);
      const k = randomTensor([2, 2, 5, 8], random);
      const v = randomTensor([2, 2, 5, 8], random);
      const padded = lab.sdpa(q, k, v, { mask: pad });
      assert.deepEqual(padded.output.shape, [2, 2, 5, 8]);
      assert.deepEqual(padded.weights.shape, [2, 2, 5, 5]);
      for (let h = 0; h < 2; h++) {
        for (let i = 0; i < 5; i++) {
          for (const j of [3, 4]) assert.equal(padded.weights.data[(h * 5 + i) * 5 + j], 0, `pad key ${j} of sequence 0`);
        }
      }
      const combined = lab.sdpa(q, k, v, { mask: pad, causal: true });
      const ref = sdpaReference(q, k, v, { mask: pad, causal: true });
      assertClose(combined.weights.data, ref.weights,
        { shape: combined.weights.shape, label: 'causal AND padding weights', atol: 2e-5, rtol: 2e-5 });
      for (let b = 0; b < 2; b++) {
        for (let h = 0; h < 2; h++) {
          for (let i = 0; i < 5; i++) {
            for (let j = 0; j < 5; j++) {
              const allowed = j <= i && pad.data[b * 5 + j] === 1;
              const w = combined.weights.data[((b * 2 + h) * 5 + i) * 5 + j];
              if (!allowed) assert.equal(w, 0, `blocked weight at [${b}, ${h}, ${i}, ${j}] is ${w}`);
            }
          }
        }
      }
    });

    test('seed: B = 2, H = 2 shapes and cross-attention Tq = 4, Tk = 7', () => {
      const random = rng(6);
      const multi = lab.sdpa(randomTensor([2, 2, 5, 8], random), randomTensor([2, 2, 5, 8], random),
        randomTensor([2, 2, 5, 8], random));
      assert.deepEqual(multi.output.shape, [2, 2, 5, 8]);
      assert.deepEqual(multi.weights.shape, [2, 2, 5, 5]);
      const source = paddingMask([[3, 4, 5, 6, 7, 0, 0]], 0);
      const q = randomTensor([1, 4, 6], random);
      const k = randomTensor([1, 7, 6], random);
      const v = randomTensor([1, 7, 3], random);
      const cross = lab.sdpa(q, k, v, { mask: { data: source.data, shape: [1, 1, 7] } });
      assert.deepEqual(cross.output.shape, [1, 4, 3]);
      assert.deepEqual(cross.weights.shape, [1, 4, 7]);
      assert.deepEqual(cross.scores.shape, [1, 4, 7]);
      for (let i = 0; i < 4; i++) assert.equal(cross.weights.data[i * 7 + 5] + cross.weights.data[i * 7 + 6], 0);
    });

    test('random shapes and every mask shape match the float64 reference', () => {
      const random = rng(simd ? 100 : 200);
      const dims = [1, 3, 5, 17, 33];
      const pick = (list) => list[Math.floor(random() * list.length)];
      let worst = { max: 0, report: 'none' }; // the closest call, as a fraction of the tolerance
      let cases = 0;
      for (let c = 0; c < 160; c++) {
        const batch = [[], [2], [2, 3]][c % 3];
        const Tq = pick(dims);
        const Tk = pick(dims);
        const dk = pick(dims);
        const dv = pick(dims);
        const full = [...batch, Tq, Tk];
        const maskShapes = [null, [Tq, Tk], [Tk], [1, Tk], [Tq, 1], full,
          batch.length ? [batch[0], ...batch.slice(1).map(() => 1), 1, Tk] : [1, 1, Tq, Tk],
          batch.length === 2 ? [1, batch[1], Tq, Tk] : [1, Tq, Tk]];
        const maskShape = maskShapes[c % maskShapes.length];
        const causal = c % 4 === 1;
        let mask;
        if (maskShape) {
          mask = { data: Uint8Array.from({ length: maskShape.reduce((a, b) => a * b, 1) }, () => (random() < 0.7 ? 1 : 0)), shape: maskShape };
          // Key 0 is always allowed (where the mask has a key axis) so no row is all-masked.
          const last = maskShape[maskShape.length - 1];
          for (let i = 0; i < mask.data.length; i++) if (last === 1 || i % last === 0) mask.data[i] = 1;
        }
        const q = randomTensor([...batch, Tq, dk], random);
        const k = randomTensor([...batch, Tk, dk], random);
        const v = randomTensor([...batch, Tk, dv], random);
        const got = lab.sdpa(q, k, v, { mask, causal });
        const fast = lab.sdpa(q, k, v, { mask, causal, needWeights: false });
        const ref = sdpaReference(q, k, v, { mask, causal });
        const label = `batch [${batch}] Tq=${Tq} Tk=${Tk} dk=${dk} dv=${dv} mask ${maskShape ? `[${maskShape}]` : 'none'} causal=${causal}`;
        for (const [name, data, want, shape] of [
          ['output', got.output.data, ref.output, got.output.shape],
          ['output (needWeights false)', fast.output.data, ref.output, fast.output.shape],
          ['weights', got.weights.data, ref.weights, got.weights.shape],
          ['scores', got.scores.data, ref.scores, got.scores.shape]]) {
          const e = assertClose(data, want, { shape, label: `${label} ${name}`, atol: 2e-5, rtol: 2e-5 });
          if (e.max > worst.max) worst = e;
        }
        // Without weights the tiled path runs: the same numbers to 1e-6 relative.
        assertClose(fast.output.data, got.output.data, { shape: got.output.shape, label: `${label}: tiled (no weights) vs standard`,
          atol: 1e-6 * Math.max(1, largestMagnitude(got.output.data)) });
        assert.deepEqual(Object.keys(fast), ['output']);
        // Invariants: rows sum to 1, blocked weights are exactly 0.
        const n = Tq * Tk;
        for (let r = 0; r < got.weights.data.length / Tk; r++) {
          let sum = 0;
          for (let j = 0; j < Tk; j++) {
            const w = got.weights.data[r * Tk + j];
            sum += w;
            const idx = [];
            for (let d = full.length - 1, rest = r * Tk + j; d >= 0; d--) { idx.unshift(rest % full[d]); rest = Math.floor(rest / full[d]); }
            const allowed = (!causal || idx.at(-1) <= idx.at(-2)) && (!mask || maskAt(mask, full, idx));
            if (!allowed) assert.equal(w, 0, `${label}: blocked weight at [${idx}] is ${w}`);
          }
          assert.ok(Math.abs(sum - 1) <= 1e-5, `${label}: row ${r} sums to ${sum}`);
        }
        cases += n > 0 ? 1 : 0;
      }
      console.log(`# ${simd ? 'SIMD' : 'scalar'}: ${cases} random cases, closest ${worst.max.toFixed(3)} of the tolerance: ${worst.report}`);
    });

    test('stats come from the core and describe the call', () => {
      const { stats } = lab.sdpa([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 2], [3, 4]], { causal: true });
      assert.equal(stats.maskedFraction, 0.25);
      assert.ok(stats.maxRowSumError <= 1e-6, `maxRowSumError ${stats.maxRowSumError}, want <= 1e-6`);
      assert.equal(stats.maxForbiddenWeight, 0);
      assert.ok(Math.abs(stats.maxAbsScore - Math.SQRT1_2) < 1e-6, `maxAbsScore ${stats.maxAbsScore}`);
    });

    test('stats say where the worst row sum and the largest blocked weight are', () => {
      const clean = lab.sdpa([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 2], [3, 4]], { causal: true }).stats;
      assert.equal(clean.maxForbiddenAt, null);
      // Softmax first, then zero the blocked weights: query 1 loses its weight on key 2.
      const q = [[[1, 0], [0, 1], [1, 1]], [[0, 1], [2, 0], [1, 0]]];
      const late = lab.sdpa(q, q, q, { causal: true, bug: 'mask-after-softmax' }).stats;
      assert.ok(late.maxRowSumError > 0.1, `row-sum error ${late.maxRowSumError}`);
      assert.equal(late.maxForbiddenAt, null, 'the blocked weights were zeroed, late');
      const { weights } = lab.sdpa(q, q, q, { causal: true, bug: 'mask-after-softmax' });
      let worst = -1;
      let at = null;
      for (let b = 0; b < 2; b++) for (let i = 0; i < 3; i++) {
        let sum = 0;
        for (let j = 0; j < 3; j++) sum += weights.data[(b * 3 + i) * 3 + j];
        if (Math.abs(sum - 1) > worst) { worst = Math.abs(sum - 1); at = [b, 0, i]; }
      }
      assert.deepEqual(late.worstRowSumAt, at);
      // Skip the causal mask: the largest weight above the diagonal is the blocked one.
      const leak = lab.sdpa(q, q, q, { causal: true, bug: 'no-causal-mask' });
      let big = 0;
      let where = null;
      for (let b = 0; b < 2; b++) for (let i = 0; i < 3; i++) for (let j = i + 1; j < 3; j++) {
        const w = leak.weights.data[(b * 3 + i) * 3 + j];
        if (w > big) { big = w; where = [b, 0, i, j]; }
      }
      assert.deepEqual(leak.stats.maxForbiddenAt, where);
      assert.equal(leak.stats.maxForbiddenWeight, big);
    });

    test('allowedPairs is the rule sdpa applies', () => {
      const causal = lab.allowedPairs([3, 4], { causal: true });
      assert.deepEqual(causal.shape, [3, 4]);
      assert.deepEqual(Array.from(causal.data), [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0]);
      const shifted = lab.allowedPairs([2, 3], { causal: true, causalOffset: 1 });
      assert.deepEqual(Array.from(shifted.data), [1, 1, 0, 1, 1, 1]);
      const padded = lab.allowedPairs([2, 1, 2, 3], { keyPaddingMask: [[1, 1, 0], [1, 0, 0]] });
      assert.deepEqual(Array.from(padded.data), [1, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0]);
      // A random broadcast mask, causal: blocked pairs are exactly the zero weights.
      const random = rng(21);
      const mask = { data: Uint8Array.from({ length: 2 * 5 * 5 }, (_, n) => (n % 5 === 0 || random() < 0.6 ? 1 : 0)), shape: [2, 1, 5, 5] };
      const x = randomTensor([2, 3, 5, 4], random);
      const { weights } = lab.sdpa(x, x, x, { mask, causal: true });
      const pairs = lab.allowedPairs(weights.shape, { mask, causal: true });
      assert.deepEqual(pairs.shape, [2, 3, 5, 5]);
      weights.data.forEach((w, n) => assert.equal(w === 0, pairs.data[n] === 0, `pair ${n}: weight ${w}, allowed ${pairs.data[n]}`));
      assert.throws(() => lab.allowedPairs([2, 3], { mask: [[1, 0]] }), (err) => err.code === 'SHAPE_MISMATCH');
      assert.throws(() => lab.allowedPairs([3], {}), (err) => err.code === 'BAD_ARGUMENT');
      assert.throws(() => lab.allowedPairs([2, 3], { keyPaddingMask: [[1, 1]] }), (err) => err.code === 'SHAPE_MISMATCH');
    });

    test('returned tensors stay valid after later calls and memory growth', () => {
      const first = lab.sdpa([[1, 0]], [[1, 0], [0, 1]], [[10, 0], [0, 20]]);
      const copy = Array.from(first.output.data);
      const random = rng(7);
      const big = randomTensor([1, 1024, 64], random);
      lab.sdpa(big, big, big, { needWeights: true }); // grows the workspace
      assert.deepEqual(Array.from(first.output.data), copy);
      assert.ok(first.output.data.buffer !== undefined, 'the first output still has a buffer');
      assert.equal(first.output.data.byteLength, 8, 'bytes of the first output (2 float32 values) after the workspace grew');
    });
  });
}

test('both builds agree within float32 rounding', async () => {
  const [simd, scalar] = await Promise.all([loadAttention({ simd: true }), loadAttention({ simd: false })]);
  const random = rng(9);
  for (const [Tq, Tk, d] of [[7, 9, 5], [64, 64, 64], [33, 17, 3]]) {
    const q = randomTensor([2, Tq, d], random);
    const k = randomTensor([2, Tk, d], random);
    const v = randomTensor([2, Tk, d], random);
    const a = simd.sdpa(q, k, v, { causal: true });
    const b = scalar.sdpa(q, k, v, { causal: true });
    assert.deepEqual(a.scores.data, b.scores.data, 'the matmuls are bit-identical');
    assertClose(a.output.data, b.output.data, { shape: a.output.shape, label: `simd vs scalar ${Tq}x${Tk}x${d}`, atol: 1e-6, rtol: 1e-6 });
  }
});

test('several loads share one module and instance', async () => {
  const [a, b] = await Promise.all([loadAttention({ simd: true }), loadAttention({ simd: true })]);
  assert.equal(a, b);
  assert.notEqual(a, await loadAttention({ simd: false }));
  assert.equal(await loadAttention(), a, 'SIMD is the default where supported');
});

// ---------------------------------------------------------------------------
// Static numbers in the lesson's prose, checked against the core
// ---------------------------------------------------------------------------

const sectionSource = async (name) => (await import('node:fs')).readFileSync(new URL(`../web/sections/${name}.js`, import.meta.url), 'utf8');

test('one query\'s warm-up: the blend it states is the core\'s output for those shares and values', async () => {
  const body = await sectionSource('one-query');
  const m = /shares are already known, ([\d.]+) and ([\d.]+), and the two values are the plain numbers ([\d.]+) and ([\d.]+)\. The blend is ([\d.]+) × ([\d.]+) \+ ([\d.]+) × ([\d.]+) = ([\d.]+) \+ ([\d.]+) = <strong>([\d.]+)<\/strong>/.exec(body);
  assert.ok(m, 'the warm-up states its shares, values, products and blend');
  const [a, b, x, y, a2, x2, b2, y2, p1, p2, blend] = m.slice(1).map(Number);
  assert.deepEqual([a2, x2, b2, y2], [a, x, b, y], 'the sum uses the shares and values it names');
  // Scores ln(share) with scale 1: the core's softmax gives back the shares, and its mix the blend.
  const lab = labs.true;
  const r = lab.sdpa([[1]], [[Math.log(a)], [Math.log(b)]], [[x], [y]], { scale: 1 });
  assert.ok(Math.abs(r.weights.data[0] - a) < 1e-6 && Math.abs(r.weights.data[1] - b) < 1e-6, `the core's shares ${Array.from(r.weights.data)} vs ${a}, ${b}`);
  assert.ok(Math.abs(r.output.data[0] - blend) < 1e-5, `the core blends to ${r.output.data[0]}; the warm-up says ${blend} (off by ${Math.abs(r.output.data[0] - blend)})`);
  const lab1 = lab.sdpa([[1]], [[0]], [[x]], { scale: 1 }).output.data[0] * a;
  const lab2 = lab.sdpa([[1]], [[0]], [[y]], { scale: 1 }).output.data[0] * b;
  assert.ok(Math.abs(lab1 - p1) < 1e-5 && Math.abs(lab2 - p2) < 1e-5, `the two parts: ${lab1}, ${lab2}; the warm-up says ${p1}, ${p2}`);
});

test('why scale: the "±8 at d_k = 64" of the prose is the core\'s unscaled spread there', async () => {
  const body = await sectionSource('why-scale');
  const m = /At d<sub>k<\/sub> = (\d+) typical scores are around ±(\d+)/.exec(body);
  assert.ok(m, 'the prose states a d_k and a typical score');
  const [dk, shown] = m.slice(1).map(Number);
  const s = labs.true.sampleDotProducts({ dk, count: 4096, seed: 0 });
  const sd = Math.sqrt(s.varianceUnscaled);
  assert.ok(sd >= 7 && sd <= 9, `at d_k = ${dk} the core's unscaled standard deviation is ${sd}, outside 7–9`);
  assert.ok(Math.abs(sd - shown) <= 1, `the prose says ±${shown}; the core's spread at d_k = ${dk} is ${sd.toFixed(3)} (off by ${Math.abs(sd - shown).toFixed(3)})`);
});
