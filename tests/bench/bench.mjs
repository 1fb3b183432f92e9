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
// clock 'cpu': this process's CPU time instead of the wall clock, for cells
// where the machine is shared (ORT runs in this thread too, numThreads = 1).
const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
async function timeColumns(fns, { minSamples = MIN_SAMPLES, clock = 'wall' } = {}) {
  const now = clock === 'cpu' ? cpuMs : () => performance.now();
  const plan = {};
  for (const [name, fn] of Object.entries(fns)) {
    // warm-up: at least 2 calls and 0.1 s (a single call if it is slow)
    let calls = 0;
    const w0 = performance.now();
    do { await fn(); calls++; } while ((calls < 2 || performance.now() - w0 < 100) && performance.now() - w0 < 300);
    const perCall = (performance.now() - w0) / 1e3 / calls;
    const batch = Math.max(1, Math.ceil(0.002 / perCall));
    const samples = Math.min(MAX_SAMPLES, Math.max(minSamples, Math.round(TARGET_S / (perCall * batch))));
    plan[name] = { fn, batch, samples, times: [] };
  }
  for (let round = 0; Object.values(plan).some((p) => p.times.length < p.samples); round++) {
    for (const p of Object.values(plan)) {
      // spread each column's samples evenly over the rounds
      const due = Math.floor(((round + 1) * p.samples) / MAX_SAMPLES) > p.times.length || round >= MAX_SAMPLES;
      if (!due || p.times.length >= p.samples) continue;
      const t0 = now();
      for (let b = 0; b < p.batch; b++) await p.fn();
      p.times.push((now() - t0) / 1e3 / p.batch);
    }
  }
  return Object.fromEntries(Object.entries(plan).map(([name, p]) => [name, median(p.times)]));
}

// The JS overhead of a call: fastest per-call time of `full` minus that of
// `bare`, from batches of the two run alternately, so that both see the same
// machine. The fastest batch is the one least disturbed by other work; a
// median of two separate columns is too noisy for a difference of a few µs.
// Batches are timed in this process's CPU time: on a shared machine a wall
// clock batch of a millisecond is seldom free of a preemption.
// `copies` (timed the same way) is the part of that overhead no API can
// skip: q, k and v copied into wasm memory and the output copied out into a
// new Float32Array.
function overhead(full, bare, copies) {
  const fns = { full, bare, copies };
  const best = { full: Infinity, bare: Infinity, copies: Infinity };
  const w0 = performance.now();
  for (let i = 0; i < 20; i++) full();
  const batch = Math.max(1, Math.round(2 / ((performance.now() - w0) / 20))); // about 2 ms per batch
  const t0 = performance.now();
  for (let round = 0; round < 400 && performance.now() - t0 < 3000; round++) {
    for (const name of ['bare', 'full', 'copies']) {
      const fn = fns[name];
      const s0 = cpuMs();
      for (let i = 0; i < batch; i++) fn();
      best[name] = Math.min(best[name], (cpuMs() - s0) / 1e3 / batch);
    }
  }
  return { overhead: best.full - best.bare, copies: best.copies };
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

// Build tests/bench/peak.c with Debian's emcc (if stale) and load it:
// run(iters) returns the GFLOP/s of one run of independent f32x4 mul+add
// chains, timed on `clock` ('wall' or 'cpu', this process's CPU time).
function loadPeak() {
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
  return (iters, clock = 'wall') => {
    const now = clock === 'cpu' ? cpuMs : () => performance.now();
    const t0 = now();
    exports.peak_run(iters, 1.5);
    return (iters * perIter) / ((now() - t0) / 1e3) / 1e9;
  };
}

// The best GFLOP/s of 7 runs on the wall clock.
function measurePeak(peakRun) {
  let best = 0;
  for (let r = 0; r < 7; r++) best = Math.max(best, peakRun(1_000_000));
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
  let view = f32;
  const copies = () => {
    if (view.length === 0) view = new Float32Array(e.memory.buffer); // memory grew
    view.set(tq.data, q >> 2);
    view.set(tk.data, k >> 2);
    view.set(tv.data, v >> 2);
    return view.slice(out >> 2, (out >> 2) + n);
  };
  return { call, copies };
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
let peak, peakRun;
try {
  peakRun = loadPeak();
  peak = measurePeak(peakRun);
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
    if (T <= 64) {
      const bare = bareKernel(lab.simd, tq, tk, tv);
      ({ overhead: row.overhead, copies: row.copies } = overhead(fns.simd, bare.call, bare.copies));
    }
    row.diffSimd = maxAbsDiff(fns.simd().output.data, ortY);
    row.diffScalar = maxAbsDiff(fns.scalar().output.data, ortY);
  }
  Object.assign(row, await timeColumns(fns));
  await ort.release();
  rows.push(row);
  console.log(`T=${T}: ORT ${fmtMs(row.ort)} ms, JS ${fmtMs(row.js)} ms` +
    (lab ? `, SIMD ${fmtMs(row.simd)} ms, scalar ${fmtMs(row.scalar)} ms, SIMD+weights ${fmtMs(row.simdW)} ms, ` +
      `JS overhead ${fmtUs(row.overhead)} µs (copies ${fmtUs(row.copies)} µs)` : ''));
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

// ---------- the tiled online-softmax path ----------
//
// Three columns at T = 1024 … 16384, H = 1 and 8, d = 64, no mask:
//   tiled: this core's attn_sdpa_tiled (what lab.sdpa runs without weights);
//   rows:  the no-weights path as it was before the tiled path existed (the
//          core built from the parent of the commit that added attn_sdpa_tiled):
//          query rows 4 at a time, each row's scores over all keys at once;
//   ORT:   onnxruntime-web's Attention op. Its failures are its result.
// Each of ours runs in a fresh wasm instance per cell, so its memory figure
// (the instance's linear memory after the call, inputs included) is the peak
// of that call alone. ORT keeps its heap to itself: no figure for it.
// BENCH_TILED_T=256,512 and BENCH_TILED_H=1 narrow the table for a quick look.
const listFromEnv = (name, fallback) => (process.env[name] ? process.env[name].split(',').map(Number) : fallback);
const TILED_T = listFromEnv('BENCH_TILED_T', [1024, 2048, 4096, 16384]);
const TILED_H = listFromEnv('BENCH_TILED_H', [1, 8]);
const MiB = 1024 * 1024;

// The wasm bytes of the core before the tiled path, built once into build/bench/.
function rowsPathWasm() {
  const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  const added = git('log', '--format=%H', '-S', 'attn_sdpa_tiled', '--reverse', '--', 'c_src/attention.h').split('\n')[0];
  if (!added) throw new Error('no commit adds attn_sdpa_tiled');
  const base = git('rev-parse', `${added}^`);
  const dir = `${root}/build/bench/rows-${base.slice(0, 12)}`;
  const out = `${dir}/attention-simd.wasm`;
  if (!existsSync(out)) {
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git -C "${root}" archive ${base} c_src | tar -x -C "${dir}"`]);
    execFileSync('sh', ['-c', `emcc -O3 -std=c11 -msimd128 -sSTANDALONE_WASM --no-entry -sALLOW_MEMORY_GROWTH=1 ` +
      `-sINITIAL_MEMORY=16MB -sMAXIMUM_MEMORY=2GB -sABORTING_MALLOC=0 "${dir}"/c_src/*.c -o "${out}"`], {
      env: { ...process.env, EM_CONFIG: `${root}/emscripten.cfg`, ATTENTION_LAB_ROOT: root, NODE_PATH: '/usr/share/nodejs' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  }
  return { bytes: readFileSync(out), base };
}

// A fresh instance of a core; run() calls one no-weights SDPA on q, k, v
// (H, T, D) copied in once. Returns { run, memory }.
async function rawCore(bytes, q, k, v, H, T, D, entry) {
  const { instance } = await WebAssembly.instantiate(bytes, { env: { emscripten_notify_memory_growth() {} } });
  const e = instance.exports;
  e._initialize?.();
  const n = H * T * D;
  const base = e.attn_workspace(16 * n + 64);
  if (!base) throw new Error('workspace refused');
  const f32 = () => new Float32Array(e.memory.buffer);
  f32().set(q, base / 4);
  f32().set(k, base / 4 + n);
  f32().set(v, base / 4 + 2 * n);
  const [pq, pk, pv, pout, pdims] = [0, 1, 2, 3, 4].map((i) => base + 4 * i * n);
  new Int32Array(e.memory.buffer).set([1, H, T, T, D, D], pdims / 4); // attn_dims
  const scale = 1 / Math.sqrt(D);
  // tiled: attn_sdpa_tiled with no rule (every key visible); rows: the
  // older core's attn_sdpa_js, with its mask spelled out as arguments
  const run = entry === 'tiled'
    ? () => e.attn_sdpa_tiled(pout, 0, pq, pk, pv, 0, pdims, scale, 128, 0)
    : () => e.attn_sdpa_js(pout, 0, 0, pq, pk, pv, 0, 0, 0, 0, 0, 1, H, T, T, D, D, scale, 0, 0);
  const check = () => {
    const status = run();
    if (status !== 0) {
      const at = e.attn_last_error();
      const bytes = new Uint8Array(e.memory.buffer, at, 512);
      throw new Error(new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0))) || `status ${status}`);
    }
    return new Float32Array(e.memory.buffer, pout, n).slice();
  };
  return { run: check, memory: () => e.memory.buffer.byteLength };
}

const tiledRows = [];
let rowsBase = null;
if (lab) {
  let rowsBytes = null;
  try {
    const built = rowsPathWasm();
    rowsBytes = built.bytes;
    rowsBase = built.base.slice(0, 10);
  } catch (err) {
    console.log(`note: the rows path (before the tiled path) was not built (${String(err.stderr ?? err.message).trim().split('\n')[0]})`);
  }
  const tiledBytes = readFileSync(`${root}/web/wasm/attention-simd.wasm`);
  for (const T of TILED_T) {
    for (const Hh of TILED_H) {
      const next = rng(T + Hh);
      const n = Hh * T * D;
      const q = Float32Array.from({ length: n }, next);
      const k = Float32Array.from({ length: n }, next);
      const v = Float32Array.from({ length: n }, next);
      const row = { T, H: Hh };
      const fns = {};
      const tiled = await rawCore(tiledBytes, q, k, v, Hh, T, D, 'tiled');
      const yTiled = tiled.run();
      row.memTiled = tiled.memory();
      fns.tiled = tiled.run;
      if (rowsBytes) {
        try {
          const rows = await rawCore(rowsBytes, q, k, v, Hh, T, D, 'rows');
          row.diffRows = maxAbsDiff(rows.run(), yTiled);
          row.memRows = rows.memory();
          fns.rows = rows.run;
        } catch (err) {
          row.rowsError = String(err.message ?? err).slice(0, 100); // its size check counts the (Tq, Tk) matrix
        }
      }
      let ort = null;
      try {
        ort = await createOrtSdpa({ B: 1, H: Hh, Tq: T, Tk: T, dk: D });
        const y = await ort.run({ q, k, v });
        row.diffOrt = maxAbsDiff(y, yTiled);
        fns.ort = () => ort.run({ q, k, v });
      } catch (err) {
        // ORT's message carries its build path; keep what it says
        const text = String(err.message ?? err).replace(/\s+/g, ' ');
        row.ortError = /SafeInt/.test(text) && /overflow/i.test(text)
          ? `integer overflow (SafeInt, ${text.match(/safeint\.h:\d+/)?.[0] ?? 'safeint.h'})` : text.slice(0, 120);
      }
      // one sample is enough where a call takes seconds
      Object.assign(row, await timeColumns(fns, { minSamples: T >= 4096 ? 1 : MIN_SAMPLES, clock: 'cpu' }));
      if (ort) await ort.release();
      tiledRows.push(row);
      console.log(`tiled T=${T} H=${Hh}: tiled ${fmtMs(row.tiled)} ms, rows ${row.rowsError ? 'refused' : `${fmtMs(row.rows)} ms`}, ORT ${row.ortError ? 'failed' : `${fmtMs(row.ort)} ms`}`);
    }
  }
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
out.push('| T | ours SIMD ms (GFLOP/s) | JS overhead µs (of which copies) | ours scalar ms (GFLOP/s) | ours SIMD + weights ms | plain JS f32 ms (GFLOP/s) | ORT wasm ms (GFLOP/s) |');
out.push('|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const over = r.overhead === undefined ? 'n/a' : `${fmtUs(r.overhead)} (${fmtUs(r.copies)})`;
  out.push(`| ${r.T} | ${fmtMs(r.simd)} (${fmtG(r.T, r.simd)}) | ${over} | ${fmtMs(r.scalar)} (${fmtG(r.T, r.scalar)}) | ` +
    `${fmtMs(r.simdW)} | ${fmtMs(r.js)} (${fmtG(r.T, r.js)}) | ${fmtMs(r.ort)} (${fmtG(r.T, r.ort)}) |`);
}
out.push('');
out.push('JS overhead = one lab.sdpa call (needWeights:false) minus the bare attn_sdpa export on the same inputs, ' +
  'fastest batch of each (T <= 64): option checks, tensor checks, layout, copying q, k, v in and the output out. ' +
  'In brackets, the copies alone (q, k, v into wasm memory, the output into a new Float32Array), timed the same way: ' +
  'the floor of any API that takes and returns fresh arrays.');
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
if (tiledRows.length) {
  const mib = (b) => (b === undefined ? 'n/a' : (b / MiB).toFixed(1));
  out.push(`#### The tiled online-softmax path (d = ${D}, no mask, B = 1)`);
  out.push('');
  out.push(`tiled: attn_sdpa_tiled, 128 keys per tile (what lab.sdpa runs with needWeights: false); ` +
    `rows: the no-weights path before the tiled path (core at ${rowsBase ?? 'n/a'}); ORT: onnxruntime-web ${ortVersion}. ` +
    'Times are medians of this process\'s CPU time per call (the machine may be shared). ' +
    'Memory: wasm linear memory of a fresh instance after one call (inputs included; q, k, v and out alone are 16·H·T·d bytes).');
  out.push('');
  out.push('| T | H | tiled ms | rows ms | ORT ms | rows / tiled | ORT / tiled | tiled MiB | rows MiB | max abs diff rows / ORT |');
  out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of tiledRows) {
    const ortCell = r.ortError ? `fails: ${r.ortError}` : fmtMs(r.ort);
    const rowsCell = r.rowsError ? `refused: ${r.rowsError}` : fmtMs(r.rows);
    const d = (x) => (x === undefined ? 'n/a' : x.toExponential(1));
    out.push(`| ${r.T} | ${r.H} | ${fmtMs(r.tiled)} | ${rowsCell} | ${ortCell} | ${fmtRatio(r.rows, r.tiled)} | ` +
      `${r.ortError ? 'n/a' : fmtRatio(r.ort, r.tiled)} | ${mib(r.memTiled)} | ${mib(r.memRows)} | ${d(r.diffRows)} / ${d(r.diffOrt)} |`);
  }
  out.push('');
  const big = tiledRows.filter((r) => r.rows !== undefined);
  const notSlower = big.every((r) => r.rows / r.tiled >= 1.0);
  const at2048 = tiledRows.filter((r) => r.T === 2048 && !r.ortError);
  const vsOrt = at2048.length > 0 && at2048.every((r) => r.ort / r.tiled >= 1.25);
  out.push(`Targets: tiled not slower than rows at T >= 1024 (${notSlower ? 'met' : 'NOT met'}); ` +
    `tiled >= 1.25x ORT at T = 2048 (${vsOrt ? 'met' : 'NOT met'}); memory O(T·d).`);
  out.push('');
}
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
// BENCH_SKIP=backward,train leaves those parts out, for a quick look.
const SKIP = (process.env.BENCH_SKIP || '').split(',');
if (lab && !SKIP.includes('backward')) {
  const { benchBackward } = await import('./backward.mjs');
  out.push('', ...(await benchBackward(lab.simd, timeColumns, peak, peakRun)));
}
if (lab && !SKIP.includes('train')) {
  const { benchTrain } = await import('./train.mjs');
  out.push('', ...(await benchTrain(lab.simd, timeColumns)));
}
console.log(`\n${out.join('\n')}`);
