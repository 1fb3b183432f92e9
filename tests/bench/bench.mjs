// attention-lab benchmark: SDPA forward, single thread, all in one Node process.
//   node tests/bench/bench.mjs      (npm run bench builds the wasm first)
//
// Columns: ours SIMD (needWeights:false), ours scalar, ours SIMD with weights,
// a plain-JS float32 implementation, and onnxruntime-web (Attention op,
// opset 23, wasm backend, 1 thread), plus the JS-side overhead of one
// lab.sdpa call: the full API call minus the bare attn_sdpa export called on
// the same workspace buffers. Prints Markdown tables for the README.
import os from 'node:os';
import { existsSync, mkdirSync, cpSync, readFileSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createOrtSdpa, createOrtMha, ortVersion } from './ort_peer.mjs';
import { rng as uniform } from '../helpers/reference.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const H = 8, D = 64;
const T_LIST = [8, 64, 256, 1024];
const TARGET_S = 0.5;    // measuring time per cell (after warm-up)
const MIN_SAMPLES = 3;   // median of at least this many samples
const MAX_SAMPLES = 200;

const flops = (T) => 4 * H * T * T * D;  // QKᵀ and PV, 2 flops per multiply-add, B=1

// ---------- timing ----------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// Median seconds per call for each function in `fns` ({ name: fn }, sync or
// async). Short calls are timed in batches of >= ~2 ms so the clock resolution
// does not matter. Samples of the columns are interleaved (round-robin) so a
// slow patch of a shared machine hits all columns alike.
async function timeColumns(fns) {
  const plan = {};
  for (const [name, fn] of Object.entries(fns)) {
    // warm-up: at least 2 calls and 0.1 s (a single call if it is slow)
    let calls = 0;
    const w0 = performance.now();
    do { await fn(); calls++; } while ((calls < 2 || performance.now() - w0 < 100) && performance.now() - w0 < 300);
    const perCall = (performance.now() - w0) / 1e3 / calls;
    const batch = Math.max(1, Math.ceil(0.002 / perCall));
    const samples = Math.min(MAX_SAMPLES, Math.max(MIN_SAMPLES, Math.round(TARGET_S / (perCall * batch))));
    plan[name] = { fn, batch, samples, times: [] };
  }
  for (let round = 0; Object.values(plan).some((p) => p.times.length < p.samples); round++) {
    for (const p of Object.values(plan)) {
      // spread each column's samples evenly over the rounds
      const due = Math.floor(((round + 1) * p.samples) / MAX_SAMPLES) > p.times.length || round >= MAX_SAMPLES;
      if (!due || p.times.length >= p.samples) continue;
      const t0 = performance.now();
      for (let b = 0; b < p.batch; b++) await p.fn();
      p.times.push((performance.now() - t0) / 1e3 / p.batch);
    }
  }
  return Object.fromEntries(Object.entries(plan).map(([name, p]) => [name, median(p.times)]));
}

// The JS overhead of a call: fastest per-call time of `full` minus that of
// `bare`, from batches of the two run alternately, so that both see the same
// machine. The fastest batch is the one least disturbed by other work; a
// median of two separate columns is too noisy for a difference of a few µs.
function overhead(full, bare) {
  let bestFull = Infinity, bestBare = Infinity;
  const w0 = performance.now();
  full();
  const batch = Math.max(1, Math.round(1 / (performance.now() - w0))); // about 1 ms per batch
  const t0 = performance.now();
  for (let round = 0; round < 400 && performance.now() - t0 < 1500; round++) {
    for (const [fn, isFull] of [[bare, false], [full, true]]) {
      const s0 = performance.now();
      for (let i = 0; i < batch; i++) fn();
      const perCall = (performance.now() - s0) / 1e3 / batch;
      if (isFull) bestFull = Math.min(bestFull, perCall);
      else bestBare = Math.min(bestBare, perCall);
    }
  }
  return bestFull - bestBare;
}

// ---------- plain-JS float32 SDPA (the "no wasm" peer) ----------

// q,k,v: Float32Array (H,T,D) row-major, D a multiple of 4; returns out (H,T,D).
function sdpaJs(q, k, v, H, T, D) {
  const out = new Float32Array(H * T * D);
  const p = new Float32Array(T);
  const scale = 1 / Math.sqrt(D);
  for (let h = 0; h < H; h++) {
    const base = h * T * D;
    for (let i = 0; i < T; i++) {
      const qi = base + i * D;
      // scores and running max
      let max = -Infinity;
      for (let j = 0; j < T; j++) {
        const kj = base + j * D;
        // four partial sums break the add dependency chain (D is a multiple of 4 here)
        let d0 = 0, d1 = 0, d2 = 0, d3 = 0;
        for (let c = 0; c < D; c += 4) {
          d0 += q[qi + c] * k[kj + c];
          d1 += q[qi + c + 1] * k[kj + c + 1];
          d2 += q[qi + c + 2] * k[kj + c + 2];
          d3 += q[qi + c + 3] * k[kj + c + 3];
        }
        const s = (d0 + d1 + (d2 + d3)) * scale;
        p[j] = s;
        if (s > max) max = s;
      }
      // softmax numerators
      let sum = 0;
      for (let j = 0; j < T; j++) { const e = Math.exp(p[j] - max); p[j] = e; sum += e; }
      // out_i = Σ_j p_j v_j / sum (row-wise so v is read contiguously)
      const oi = base + i * D;
      for (let j = 0; j < T; j++) {
        const w = p[j] / sum, vj = base + j * D;
        for (let c = 0; c < D; c++) out[oi + c] += w * v[vj + c];
      }
    }
  }
  return out;
}

// ---------- wasm SIMD peak ----------

// Build tests/bench/peak.c with Debian's emcc (if stale) and measure the best
// GFLOP/s of independent f32x4 mul+add chains.
function measurePeak() {
  const src = `${root}/tests/bench/peak.c`;
  const out = `${root}/build/bench/peak.wasm`;
  if (!existsSync(out) || statSync(out).mtimeMs < statSync(src).mtimeMs) {
    mkdirSync(`${root}/build/bench`, { recursive: true });
    if (!existsSync(`${root}/build/emcache`)) cpSync('/usr/share/emscripten/cache', `${root}/build/emcache`, { recursive: true });
    execFileSync('emcc', ['-O3', '-msimd128', '-sSTANDALONE_WASM', '--no-entry', src, '-o', out], {
      env: { ...process.env, EM_CONFIG: `${root}/emscripten.cfg`, ATTENTION_LAB_ROOT: root, NODE_PATH: '/usr/share/nodejs' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  }
  const { exports } = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(out)), {});
  const perIter = exports.peak_flops_per_iter();
  exports.peak_run(100000, 1.5); // warm-up (tier-up)
  let best = 0;
  for (let r = 0; r < 7; r++) {
    const iters = 1_000_000;
    const t0 = performance.now();
    exports.peak_run(iters, 1.5);
    best = Math.max(best, (iters * perIter) / ((performance.now() - t0) / 1e3) / 1e9);
  }
  return best;
}

// ---------- helpers ----------

// Seeded uniform numbers in [-1, 1).
function rng(seed) {
  const next = uniform(seed);
  return () => 2 * next() - 1;
}
const maxAbsDiff = (a, b) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};
const fmtMs = (s) => (s === undefined ? 'n/a' : s >= 0.1 ? (s * 1e3).toFixed(0) : (s * 1e3).toPrecision(3));
const fmtG = (T, s) => (s === undefined ? 'n/a' : (flops(T) / s / 1e9).toFixed(2));
const fmtUs = (s) => (s === undefined || Number.isNaN(s) ? 'n/a' : (s * 1e6).toFixed(1));
const fmtRatio = (peer, ours) => (peer === undefined || ours === undefined ? 'n/a' : `${(peer / ours).toFixed(2)}x`);

// The bare kernel of lab.simd.sdpa(q, k, v, { needWeights: false }) for
// (1, H, T, D) inputs: attn_sdpa called directly on copies of the same
// tensors, laid out in the workspace past everything the API columns use
// (q, k, v, out, weights, scores and two small structs), so that their calls
// neither move nor overwrite them. The structs are attn_dims (6 int32) and
// attn_visibility (8 int32, all 0: no mask, not causal).
function bareKernel(simd, tq, tk, tv) {
  const e = simd.exports;
  const n = tq.data.length;
  const T = tq.shape[2];
  const used = 4 * (4 * n + 2 * H * T * T) + 1024; // the API's largest layout, with room for alignment
  const base = e.attn_workspace(used + 4 * (4 * n) + 64) + used;
  const [q, k, v, out] = [0, 1, 2, 3].map((slot) => base + slot * 4 * n);
  const dims = out + 4 * n, vis = dims + 32;
  const f32 = new Float32Array(e.memory.buffer);
  f32.set(tq.data, q >> 2);
  f32.set(tk.data, k >> 2);
  f32.set(tv.data, v >> 2);
  new Int32Array(e.memory.buffer, dims, 6).set([1, H, T, T, D, D]);
  new Int32Array(e.memory.buffer, vis, 8).fill(0);
  const scale = 1 / Math.sqrt(D);
  const call = () => e.attn_sdpa(out, 0, 0, q, k, v, vis, dims, scale, 0);
  if (call() !== 0) throw new Error('bare attn_sdpa call failed');
  return call;
}

// ---------- main ----------

async function loadLab() {
  try {
    const { loadAttention } = await import('../../web/attention.js');
    const simd = await loadAttention({ simd: true });
    const scalar = await loadAttention({ simd: false });
    return { simd, scalar };
  } catch (err) {
    console.log(`note: lab not available (${err.code ?? err.message}); timing only the JS, ORT and peak columns.`);
    return null;
  }
}

const lab = await loadLab();
let peak;
try {
  peak = measurePeak();
} catch (err) {
  console.log(`note: wasm SIMD peak not measured (${String(err.stderr ?? err.message).trim().split('\n')[0]})`);
}

const rows = [];
for (const T of T_LIST) {
  const next = rng(T);
  const n = H * T * D;
  const q = Float32Array.from({ length: n }, next);
  const k = Float32Array.from({ length: n }, next);
  const v = Float32Array.from({ length: n }, next);
  const shape = [1, H, T, D];
  const tq = { data: q, shape }, tk = { data: k, shape }, tv = { data: v, shape };
  const row = { T };

  const ort = await createOrtSdpa({ B: 1, H, Tq: T, Tk: T, dk: D });
  const ortY = await ort.run({ q, k, v });
  const fns = {
    ort: () => ort.run({ q, k, v }), // creates the input tensors each call, as a user would
    js: () => sdpaJs(q, k, v, H, T, D),
  };
  row.diffJs = maxAbsDiff(sdpaJs(q, k, v, H, T, D), ortY);
  if (lab) {
    fns.simd = () => lab.simd.sdpa(tq, tk, tv, { needWeights: false });
    fns.scalar = () => lab.scalar.sdpa(tq, tk, tv, { needWeights: false });
    fns.simdW = () => lab.simd.sdpa(tq, tk, tv, { needWeights: true });
    if (T <= 64) row.overhead = overhead(fns.simd, bareKernel(lab.simd, tq, tk, tv));
    row.diffSimd = maxAbsDiff(fns.simd().output.data, ortY);
    row.diffScalar = maxAbsDiff(fns.scalar().output.data, ortY);
  }
  Object.assign(row, await timeColumns(fns));
  await ort.release();
  rows.push(row);
  console.log(`T=${T}: ORT ${fmtMs(row.ort)} ms, JS ${fmtMs(row.js)} ms` +
    (lab ? `, SIMD ${fmtMs(row.simd)} ms, scalar ${fmtMs(row.scalar)} ms, SIMD+weights ${fmtMs(row.simdW)} ms, ` +
      `JS overhead ${fmtUs(row.overhead)} µs` : ''));
}

// MHA block: B=1, T=128, dModel=256, H=8.
let mhaLine;
if (lab && typeof lab.simd.createMultiHeadAttention === 'function') {
  const B = 1, T = 128, dModel = 256, numHeads = 8;
  const mha = lab.simd.createMultiHeadAttention({ dModel, numHeads, seed: 1 });
  try {
    const next = rng(42);
    const x = { data: Float32Array.from({ length: B * T * dModel }, next), shape: [B, T, dModel] };
    const ort = await createOrtMha({ B, T, dModel, numHeads, weights: mha.getWeights() });
    // ORT's graph returns only the output, so ours skips the weights too.
    const forward = () => mha.forward(x, undefined, { needWeights: false });
    const diff = maxAbsDiff(forward().output.data, await ort.run(x.data));
    const { ours, theirs } = await timeColumns({ ours: forward, theirs: () => ort.run(x.data) });
    await ort.release();
    const ok = theirs / ours >= 1.0;
    mhaLine = `MHA block (B=1, T=128, dModel=256, H=8, projections + attention, needWeights:false): ours ${fmtMs(ours)} ms, ` +
      `ORT ${fmtMs(theirs)} ms, ORT/ours = ${fmtRatio(theirs, ours)} (target >= 1.0x: ${ok ? 'met' : 'NOT met'}), ` +
      `max abs diff ${diff.toExponential(1)}`;
  } finally {
    mha.free();
  }
} else {
  mhaLine = 'MHA: not available yet';
}

// ---------- report ----------

const date = new Date().toISOString().slice(0, 10);
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown CPU';
const out = [];
out.push(`### SDPA forward benchmark (${date})`);
out.push('');
out.push(`${cpu}, Node ${process.version}, onnxruntime-web ${ortVersion} (Attention op, opset 23, wasm backend, numThreads=1). ` +
  `Workload: B=1, H=${H}, dk=dv=${D}, Tq=Tk=T, no mask, single thread. Median time per call; ` +
  `GFLOP/s counts 4·H·T²·d.` + (peak ? ` Wasm SIMD peak on this machine (f32x4 mul+add): ${peak.toFixed(1)} GFLOP/s.` : ''));
out.push('');
out.push('| T | ours SIMD ms (GFLOP/s) | JS overhead µs | ours scalar ms (GFLOP/s) | ours SIMD + weights ms | plain JS f32 ms (GFLOP/s) | ORT wasm ms (GFLOP/s) |');
out.push('|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  out.push(`| ${r.T} | ${fmtMs(r.simd)} (${fmtG(r.T, r.simd)}) | ${fmtUs(r.overhead)} | ${fmtMs(r.scalar)} (${fmtG(r.T, r.scalar)}) | ` +
    `${fmtMs(r.simdW)} | ${fmtMs(r.js)} (${fmtG(r.T, r.js)}) | ${fmtMs(r.ort)} (${fmtG(r.T, r.ort)}) |`);
}
out.push('');
out.push('JS overhead = one lab.sdpa call (needWeights:false) minus the bare attn_sdpa export on the same inputs, ' +
  'fastest batch of each (T <= 64): option checks, tensor checks, layout, copying q, k, v in and the output out.');
out.push('');
out.push('Speed-up of ours SIMD = peer time / our time (> 1 means we are faster); max abs diff of outputs vs ORT.');
out.push('');
out.push('| T | vs scalar | vs SIMD + weights | vs plain JS | vs ORT | SIMD % of peak | max abs diff SIMD / scalar / JS vs ORT |');
out.push('|---:|---:|---:|---:|---:|---:|---|');
for (const r of rows) {
  const pct = peak && r.simd ? `${((flops(r.T) / r.simd / 1e9 / peak) * 100).toFixed(1)}%` : 'n/a';
  const d = (x) => (x === undefined ? 'n/a' : x.toExponential(1));
  out.push(`| ${r.T} | ${fmtRatio(r.scalar, r.simd)} | ${fmtRatio(r.simdW, r.simd)} | ${fmtRatio(r.js, r.simd)} | ` +
    `${fmtRatio(r.ort, r.simd)} | ${pct} | ${d(r.diffSimd)} / ${d(r.diffScalar)} / ${d(r.diffJs)} |`);
}
out.push('');
out.push(mhaLine);
out.push('');
// Targets and whether this run met them.
let targets = 'Targets: ours SIMD >= 1.0x ORT at every T and >= 3x at T = 8; ours SIMD >= 3x ours scalar at T >= 64; ' +
  'JS overhead <= 3 µs at T = 8.';
if (lab) {
  const vsOrt = rows.every((r) => r.ort / r.simd >= 1.0);
  const r8 = rows.find((r) => r.T === 8);
  const vsOrt8 = r8 && r8.ort / r8.simd >= 3.0;
  const vsScalar = rows.filter((r) => r.T >= 64).every((r) => r.scalar / r.simd >= 3.0);
  const overheadMet = r8 && r8.overhead <= 3e-6;
  targets += ` This run: vs ORT ${vsOrt ? 'met' : 'NOT met'}; at T = 8 ORT/ours = ${r8 ? fmtRatio(r8.ort, r8.simd) : 'n/a'} ` +
    `(${vsOrt8 ? 'met' : 'NOT met'}); vs scalar ${vsScalar ? 'met' : 'NOT met'}; ` +
    `JS overhead at T = 8 ${r8 ? fmtUs(r8.overhead) : 'n/a'} µs (${overheadMet ? 'met' : 'NOT met'}).`;
}
out.push(targets);
if (lab) {
  const { benchBackward } = await import('./backward.mjs');
  out.push('', ...(await benchBackward(lab.simd, timeColumns, peak)));
}
console.log(`\n${out.join('\n')}`);
