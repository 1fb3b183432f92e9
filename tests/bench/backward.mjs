// Forward + backward SDPA against TensorFlow.js (wasm backend, 1 thread),
// in the process that runs bench.mjs. Ours: lab.sdpa (needWeights:false) then
// lab.sdpaBackward (needWeights:false); theirs: tf.grads of
// sum(softmax(q kᵀ · scale) v ⊙ dOut) for q, k, v. Workload H=8, d=64, B=1,
// no mask. Backward GFLOP/s counts 8·H·T²·d (dP, dV, dQ, dK; our backward
// also recomputes q kᵀ, which is not counted).
import { fileURLToPath } from 'node:url';
import { rng as uniform } from '../helpers/reference.mjs';

const H = 8, D = 64;
const T_LIST = [64, 256, 1024];
const backwardFlops = (T) => 8 * H * T * T * D;

async function loadTf() {
  const tf = await import('@tensorflow/tfjs');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  const dist = fileURLToPath(new URL('../../node_modules/@tensorflow/tfjs-backend-wasm/dist/', import.meta.url));
  wasm.setWasmPaths(dist);
  wasm.setThreadsCount(1);
  await tf.setBackend('wasm');
  await tf.ready();
  return { tf, threads: wasm.getThreadsCount(), version: tf.version.tfjs };
}

/**
 * Time ours and TF.js for each T with `timeColumns` (bench.mjs's timer).
 * `peak` is the measured wasm SIMD peak in GFLOP/s or undefined.
 * Returns the report lines (Markdown).
 */
export async function benchBackward(lab, timeColumns, peak) {
  const { tf, threads, version } = await loadTf();
  const rows = [];
  for (const T of T_LIST) {
    const next = uniform(1000 + T);
    const n = H * T * D;
    const make = () => Float32Array.from({ length: n }, () => 2 * next() - 1);
    const shape = [H, T, D];
    const [q, k, v, g] = [make(), make(), make(), make()];
    const tq = { data: q, shape }, tk = { data: k, shape }, tv = { data: v, shape }, tg = { data: g, shape };
    const scale = 1 / Math.sqrt(D);
    const ours = () => {
      lab.sdpa(tq, tk, tv, { needWeights: false });
      return lab.sdpaBackward(tq, tk, tv, tg, { needWeights: false });
    };
    const oursBackward = () => lab.sdpaBackward(tq, tk, tv, tg, { needWeights: false });
    const G = tf.tensor(g, shape);
    const f = (Q, K, V) => tf.sum(tf.mul(tf.matMul(tf.softmax(tf.mul(tf.matMul(Q, K, false, true), scale)), V), G));
    const grads = tf.grads(f);
    const theirs = () => tf.tidy(() => {
      // creates the input tensors each call, as a user would, and reads the gradients back
      const out = grads([tf.tensor(q, shape), tf.tensor(k, shape), tf.tensor(v, shape)]);
      return out.map((t) => t.dataSync());
    });
    const mine = ours();
    const ref = theirs();
    let diff = 0;
    ['dq', 'dk', 'dv'].forEach((name, i) => {
      for (let j = 0; j < n; j++) diff = Math.max(diff, Math.abs(mine[name].data[j] - ref[i][j]));
    });
    // CPU time of this process: everything here runs on this thread, and on
    // a shared machine the wall clock mostly measures the other jobs.
    const times = await timeColumns({ ours, oursBackward, theirs }, { clock: 'cpu' });
    G.dispose();
    rows.push({ T, diff, ...times });
    console.log(`T=${T} forward+backward: ours ${(times.ours * 1e3).toFixed(2)} ms, TF.js ${(times.theirs * 1e3).toFixed(2)} ms`);
  }
  const fmtMs = (s) => (s >= 0.1 ? (s * 1e3).toFixed(0) : (s * 1e3).toPrecision(3));
  const out = [];
  out.push(`### SDPA forward + backward against TensorFlow.js`);
  out.push('');
  out.push(`TensorFlow.js ${version}, wasm backend, ${threads} thread; tf.grads of matMul → mul(scale) → softmax → matMul, ` +
    `same process. Workload: B=1, H=${H}, d=${D}, Tq=Tk=T, no mask. Times are medians of this process's CPU time. ` +
    `Backward GFLOP/s counts 8·H·T²·d.`);
  out.push('');
  out.push('| T | ours fwd+bwd ms | TF.js fwd+bwd ms | TF.js / ours | ours bwd ms (GFLOP/s) | bwd % of SIMD peak | max abs diff dq, dk, dv |');
  out.push('|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const gflops = backwardFlops(r.T) / r.oursBackward / 1e9;
    const pct = peak ? `${((gflops / peak) * 100).toFixed(1)}%` : 'n/a';
    out.push(`| ${r.T} | ${fmtMs(r.ours)} | ${fmtMs(r.theirs)} | ${(r.theirs / r.ours).toFixed(2)}x | ` +
      `${fmtMs(r.oursBackward)} (${gflops.toFixed(2)}) | ${pct} | ${r.diff.toExponential(1)} |`);
  }
  out.push('');
  const all10 = rows.every((r) => r.theirs / r.ours >= 10);
  const r256 = rows.find((r) => r.T === 256);
  const half = peak && r256 ? backwardFlops(256) / r256.oursBackward / 1e9 >= 0.5 * peak : false;
  out.push(`Targets: ours >= 10x TF.js at every T (this run: ${all10 ? 'met' : 'NOT met'}); ` +
    `backward >= 50% of the SIMD peak at T=256 (this run: ${half ? 'met' : 'NOT met'}).`);
  return out;
}
