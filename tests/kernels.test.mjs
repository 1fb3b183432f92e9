// The wasm SIMD128 kernels against the scalar ones, on the same inputs: the
// native build is scalar only, so this is where the SIMD paths and their
// tails are checked. build.sh builds c_src/kernels.c with
// tests/c/kernel_exports.c both ways into build/wasm-test/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { rng } from './helpers/reference.mjs';

async function load(variant) {
  const bytes = await readFile(new URL(`../build/wasm-test/kernels-${variant}.wasm`, import.meta.url));
  const imports = { env: { emscripten_notify_memory_growth() {} }, wasi_snapshot_preview1: {} };
  const { instance } = await WebAssembly.instantiate(bytes, imports);
  instance.exports._initialize?.();
  const e = instance.exports;
  const base = e.kt_arena();
  const heap = () => new Float32Array(e.memory.buffer, base, e.kt_arena_floats());
  return { e, base, heap };
}

const [simd, scalar] = await Promise.all([load('simd'), load('scalar')]);

/** Lay `tensors` out one after the other in the arena; returns their addresses. */
function lay(k, tensors) {
  const heap = k.heap();
  let at = 0;
  return tensors.map((t) => {
    const ptr = k.base + 4 * at;
    heap.set(t, at);
    at += t.length;
    return ptr;
  });
}

/** Where a and b differ, as "first mismatches, max difference" (NaN and -0 count). */
function mismatches(a, b, tol, name) {
  let worst = 0;
  const shown = [];
  for (let i = 0; i < a.length; i++) {
    const diff = Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i]));
    const same = tol === 0 ? Object.is(a[i], b[i]) : diff <= tol;
    if (!same) {
      if (shown.length < 5) shown.push(`[${i}] simd ${a[i]} scalar ${b[i]}`);
      worst = Number.isNaN(diff) ? NaN : Math.max(worst, diff);
    }
  }
  return shown.length ? `${name}: ${shown.join(', ')}; max diff ${worst}` : null;
}

// Every N = 1..17, then widths that take the 16-column tile more than once
// and leave tails of 8, 4 and 1 to 3 columns.
const N_LIST = [...Array(17).keys()].map((i) => i + 1).concat([20, 23, 31, 32, 45]);

// (M, K) pairs: small ones for the tails, then more rows than one chunk of
// the SIMD matmul holds (2048 floats of a: 32 rows of K = 64, 2 of K = 1500).
const MK_LIST = [1, 3, 4, 5, 9].flatMap((M) => [1, 7, 8, 64].map((K) => [M, K])).concat([[70, 64], [5, 1500]]);

test('SIMD matmul (a b, and c += a b) equals the scalar one bit for bit, at every tail', () => {
  const next = rng(3);
  const problems = [];
  for (const [M, K] of MK_LIST) for (const N of N_LIST) {
    const a = Float32Array.from({ length: M * K }, () => 2 * next() - 1);
    const b = Float32Array.from({ length: K * N }, () => 2 * next() - 1);
    const c = new Float32Array(M * N);
    const run = (k) => {
      const [pc, pa, pb] = lay(k, [c, a, b]);
      k.e.kt_gemm(pc, pa, pb, M, N, K, 0.375);
      return k.heap().slice(0, M * N);
    };
    const got = run(simd);
    const bad = mismatches(got, run(scalar), 0, `gemm M=${M} N=${N} K=${K}`);
    if (bad) problems.push(bad);
    // The accumulating form: c + (the same scaled sums), rounded once more.
    const c0 = Float32Array.from({ length: M * N }, () => 2 * next() - 1);
    const runAdd = (k) => {
      const [pc, pa, pb] = lay(k, [c0, a, b]);
      k.e.kt_gemm_add(pc, pa, pb, M, N, K, 0.375);
      return k.heap().slice(0, M * N);
    };
    const added = runAdd(simd);
    const badAdd = mismatches(added, runAdd(scalar), 0, `gemm_add M=${M} N=${N} K=${K}`);
    if (badAdd) problems.push(badAdd);
    const badSum = mismatches(added, c0.map((x, i) => Math.fround(x + got[i])), 0, `gemm_add vs c + gemm M=${M} N=${N} K=${K}`);
    if (badSum) problems.push(badSum);
    // packed: bt (N, K) in strips, the layout of the scores pass
    const runPacked = (k) => {
      const [pc, pp, pa, pbt] = lay(k, [c, new Float32Array(N * K), a, b]); // b read as bt (N, K)
      k.e.kt_gemm_packed(pc, pp, pa, pbt, M, N, K, 0.375);
      return k.heap().slice(0, M * N);
    };
    const badPacked = mismatches(runPacked(simd), runPacked(scalar), 0, `gemm_packed M=${M} N=${N} K=${K}`);
    if (badPacked) problems.push(badPacked);
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('SIMD softmax agrees with the scalar one: -Infinity gives exactly 0, wide ranges stay finite', () => {
  const next = rng(8);
  const problems = [];
  const rows = {
    'U(90,100)': (n) => Float32Array.from({ length: n }, () => 90 + 10 * next()),
    'with -Infinity': (n) => Float32Array.from({ length: n }, (_, j) => (j % 3 === 1 ? -Infinity : 4 * next() - 2)),
    'wide range': (n) => Float32Array.from({ length: n }, (_, j) => (j === n - 1 ? 3e38 : (j % 2 ? -1e30 : 1e30) * next())),
    'steps of -80': (n) => Float32Array.from({ length: n }, (_, j) => -80 * j),
    'N(0, 1)': (n) => Float32Array.from({ length: n }, () => 2 * next() - 1),
  };
  for (const [label, make] of Object.entries(rows)) for (let n = 1; n <= 17; n++) {
    const x = Float32Array.from({ length: 3 * n }, (_, i) => make(n)[i % n]);
    const run = (k) => {
      const [px] = lay(k, [x]);
      k.e.kt_softmax(px, 3, n);
      return k.heap().slice(0, 3 * n);
    };
    const a = run(simd);
    const b = run(scalar);
    const bad = mismatches(a, b, 2e-6, `softmax ${label} n=${n}`);
    if (bad) problems.push(bad);
    x.forEach((v, i) => {
      if (v === -Infinity && !Object.is(a[i], 0)) problems.push(`softmax ${label} n=${n}: SIMD gives ${a[i]} for -Infinity at ${i}`);
      if (!Number.isFinite(a[i])) problems.push(`softmax ${label} n=${n}: SIMD gives ${a[i]} at ${i}`);
    });
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('SIMD transposed matmul (a^T b) equals the scalar one bit for bit, and the plain matmul of a^T', () => {
  const next = rng(11);
  const problems = [];
  for (const [M, K] of MK_LIST) for (const N of N_LIST) {
    const a = Float32Array.from({ length: K * M }, () => 2 * next() - 1); // (K, M)
    const b = Float32Array.from({ length: K * N }, () => 2 * next() - 1);
    const c = new Float32Array(M * N);
    const run = (k) => {
      const [pc, pa, pb] = lay(k, [c, a, b]);
      k.e.kt_gemm_tn(pc, pa, pb, M, N, K, 0.375);
      return k.heap().slice(0, M * N);
    };
    const got = run(simd);
    const bad = mismatches(got, run(scalar), 0, `gemm_tn M=${M} N=${N} K=${K}`);
    if (bad) problems.push(bad);
    // The same sums in the same order as gemm on the transposed a.
    const at = new Float32Array(M * K);
    for (let kk = 0; kk < K; kk++) for (let i = 0; i < M; i++) at[i * K + kk] = a[kk * M + i];
    const [pc, pa, pb] = lay(scalar, [c, at, b]);
    scalar.e.kt_gemm(pc, pa, pb, M, N, K, 0.375);
    const viaGemm = mismatches(got, scalar.heap().slice(0, M * N), 0, `gemm_tn vs gemm(a^T) M=${M} N=${N} K=${K}`);
    if (viaGemm) problems.push(viaGemm);
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('SIMD transpose moves every entry to its place, at every row and column tail', () => {
  const problems = [];
  for (const rows of [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 32]) for (const cols of [1, 3, 4, 5, 8, 13, 64, 67]) {
    const src = Float32Array.from({ length: rows * cols }, (_, i) => i + 0.5);
    const expected = new Float32Array(rows * cols);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) expected[c * rows + r] = src[r * cols + c];
    for (const k of [simd, scalar]) {
      const [pdst, psrc] = lay(k, [new Float32Array(rows * cols).fill(NaN), src]);
      k.e.kt_transpose(pdst, psrc, rows, cols);
      const bad = mismatches(k.heap().slice(0, rows * cols), expected, 0, `transpose ${k === simd ? 'simd' : 'scalar'} rows=${rows} cols=${cols}`);
      if (bad) problems.push(bad);
    }
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('SIMD softmax backward agrees with the scalar one; p = 0 gives dx = 0; in place works', () => {
  const next = rng(12);
  const problems = [];
  for (let n = 1; n <= 17; n++) {
    const rows = 3;
    // p: softmax-like rows with some exact zeros (blocked keys)
    const p = Float32Array.from({ length: rows * n }, (_, i) => (i % 3 === 1 ? 0 : next()));
    const dp = Float32Array.from({ length: rows * n }, () => 4 * next() - 2);
    const run = (k, inPlace) => {
      const [pdx, pp, pdp] = lay(k, [new Float32Array(rows * n), p, dp]);
      k.e.kt_softmax_backward(inPlace ? pdp : pdx, pp, pdp, rows, n);
      const h = k.heap();
      return h.slice(inPlace ? 2 * rows * n : 0, (inPlace ? 2 * rows * n : 0) + rows * n);
    };
    const a = run(simd, false);
    const bad = mismatches(a, run(scalar, false), 2e-6, `softmax backward n=${n}`);
    if (bad) problems.push(bad);
    const inPlace = mismatches(run(simd, true), a, 0, `softmax backward in place n=${n}`);
    if (inPlace) problems.push(inPlace);
    p.forEach((x, i) => { if (x === 0 && a[i] !== 0) problems.push(`n=${n}: p = 0 at ${i} but dx = ${a[i]}`); });
    // against the formula in float64
    for (let r = 0; r < rows; r++) {
      let dot = 0;
      for (let j = 0; j < n; j++) dot += dp[r * n + j] * p[r * n + j];
      for (let j = 0; j < n; j++) {
        const want = p[r * n + j] * (dp[r * n + j] - dot);
        if (!(Math.abs(a[r * n + j] - want) <= 1e-5)) problems.push(`n=${n} [${r}, ${j}]: ${a[r * n + j]} vs ${want}`);
      }
    }
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('SIMD online-softmax tile, rescale-add and finiteness agree with the scalar ones at every tail', () => {
  const next = rng(13);
  const problems = [];
  for (let n = 1; n <= 17; n++) {
    const rows = 3;
    // row 0: new max above the running one; row 1: all -Infinity (nothing yet); row 2: below the running max
    const s = Float32Array.from({ length: rows * n }, (_, i) => (Math.floor(i / n) === 1 ? -Infinity : 8 * next() - 4));
    const m = Float32Array.from([-1, -Infinity, 50]);
    const run = (k) => {
      const [ps, pm, pf, psum] = lay(k, [s, m, new Float32Array(rows), new Float32Array(rows)]);
      k.e.kt_softmax_tile_online(ps, pm, pf, psum, rows, n);
      const h = k.heap();
      return Float32Array.from([...h.slice(0, rows * n), ...h.slice(rows * n, rows * n + 3 * rows)]);
    };
    const a = run(simd);
    const b = run(scalar);
    // the empty row's m stays -Infinity on both sides (checked below); compare the rest
    const finitePart = (t) => t.map((x) => (x === -Infinity ? 0 : x));
    const bad = mismatches(finitePart(a), finitePart(b), 2e-6, `softmax tile n=${n}`);
    if (!Object.is(b[rows * n + 1], -Infinity)) problems.push(`n=${n}: scalar m of the empty row is ${b[rows * n + 1]}`);
    if (bad) problems.push(bad);
    const [mRow1, fRow1, sumRow1] = [a[rows * n + 1], a[rows * n + rows + 1], a[rows * n + 2 * rows + 1]];
    if (mRow1 !== -Infinity || fRow1 !== 1 || sumRow1 !== 0) problems.push(`n=${n}: an all -Infinity row gives m ${mRow1}, factor ${fRow1}, sum ${sumRow1}`);
    if (!a.every((x) => !Number.isNaN(x))) problems.push(`n=${n}: NaN in the tile`);

    const acc = Float32Array.from({ length: rows * n }, () => 2 * next() - 1);
    const x = Float32Array.from({ length: rows * n }, () => 2 * next() - 1);
    const factor = Float32Array.from([0.5, 1, 0]);
    const runAdd = (k) => {
      const [pa, px, pf] = lay(k, [acc, x, factor]);
      k.e.kt_rescale_add(pa, px, pf, rows, n);
      return k.heap().slice(0, rows * n);
    };
    const badAdd = mismatches(runAdd(simd), runAdd(scalar), 0, `rescale_add n=${n}`);
    if (badAdd) problems.push(badAdd);

    for (const special of [NaN, Infinity, -Infinity, null]) for (let at = 0; at < n; at++) {
      const row = Float32Array.from({ length: n }, () => 1e30 * (2 * next() - 1));
      if (special !== null) row[at] = special;
      const finite = (k) => k.e.kt_all_finite(lay(k, [row])[0], n);
      const want = special === null ? 1 : 0;
      if (finite(simd) !== want || finite(scalar) !== want) problems.push(`all_finite n=${n} ${special} at ${at}: simd ${finite(simd)} scalar ${finite(scalar)}`);
    }
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});
