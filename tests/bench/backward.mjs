// Forward + backward SDPA against TensorFlow.js (wasm backend, 1 thread),
// in the process that runs bench.mjs. Ours: lab.sdpa, then lab.sdpaBackward
// given the forward's weights (needWeights:false: no dScores, dProbs), as
// TF.js keeps the softmax's output for its gradient; theirs: tf.grads of
// sum(softmax(q kᵀ · scale) v ⊙ dOut) for q, k, v. Workload H=8, d=64, B=1,
// no mask. Backward GFLOP/s counts 8·H·T²·d (dP, dV, dQ, dK). A column also
// times our backward without the weights, which then recomputes q kᵀ and
// the softmax (not counted in its GFLOP/s).
import { fileURLToPath } from 'node:url';
import { rng as uniform } from '../helpers/reference.mjs';

const H = 8, D = 64;
const T_LIST = [64, 256, 1024];
const backwardFlops = (T) => 8 * H * T * T * D;
const cpuSeconds = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

// The fastest backward by CPU time and the best peak, from rounds that run
// the peak kernel (about 5 ms) and then a batch of backward calls (at least
// 5 ms), so that both see the same machine: on a shared one, the fastest
// round is the one least disturbed by other work, for the backward and the
// peak alike. Returns { seconds, peak } (seconds per backward call).
function bestAgainstPeak(backward, peakRun, rounds) {
  const w0 = performance.now();
  backward();
  const batch = Math.max(1, Math.ceil(0.005 / ((performance.now() - w0) / 1e3)));
  let seconds = Infinity, peak = 0;
  for (let r = 0; r < rounds; r++) {
    peak = Math.max(peak, peakRun(100_000, 'cpu'));
    const t0 = cpuSeconds();
    for (let b = 0; b < batch; b++) backward();
    seconds = Math.min(seconds, (cpuSeconds() - t0) / batch);
  }
  return { seconds, peak };
}

let tfLoaded = null;

/**
 * TensorFlow.js on its wasm backend with 1 thread, set up once per process:
 * the backward rows and the training rows (train.mjs) share it, and the
 * wasm paths and thread count must be set before the backend starts.
 * Returns { tf, threads, version }.
 */
export function loadTf() {
  tfLoaded ??= (async () => {
    const tf = await import('@tensorflow/tfjs');
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    const dist = fileURLToPath(new URL('../../node_modules/@tensorflow/tfjs-backend-wasm/dist/', import.meta.url));
    wasm.setWasmPaths(dist);
    wasm.setThreadsCount(1);
    await tf.setBackend('wasm');
    await tf.ready();
    return { tf, threads: wasm.getThreadsCount(), version: tf.version.tfjs };
  })();
  return tfLoaded;
}

/**
 * Time ours and TF.js for each T with `timeColumns` (bench.mjs's timer).
 * `peak` is the measured wasm SIMD peak in GFLOP/s or undefined; `peakRun`
 * (iters, clock) runs the peak kernel once and returns its GFLOP/s.
 * Returns the report lines (Markdown).
 */
export async function benchBackward(lab, timeColumns, peak, peakRun) {
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
      const { weights } = lab.sdpa(tq, tk, tv);
      return lab.sdpaBackward(tq, tk, tv, tg, { needWeights: false, weights });
    };
    const { weights } = lab.sdpa(tq, tk, tv);
    const oursBackward = () => lab.sdpaBackward(tq, tk, tv, tg, { needWeights: false, weights });
    const oursRecompute = () => lab.sdpaBackward(tq, tk, tv, tg, { needWeights: false });
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
    const times = await timeColumns({ ours, oursBackward, oursRecompute, theirs }, { clock: 'cpu' });
    const best = peakRun ? bestAgainstPeak(oursBackward, peakRun, T >= 1024 ? 10 : 40) : undefined;
    G.dispose();
    rows.push({ T, diff, best, ...times });
    console.log(`T=${T} forward+backward: ours ${(times.ours * 1e3).toFixed(2)} ms, TF.js ${(times.theirs * 1e3).toFixed(2)} ms`);
  }
  const fmtMs = (s) => (s >= 0.1 ? (s * 1e3).toFixed(0) : (s * 1e3).toPrecision(3));
  const out = [];
  out.push(`### SDPA forward + backward against TensorFlow.js`);
  out.push('');
  out.push(`TensorFlow.js ${version}, wasm backend, ${threads} thread; tf.grads of matMul → mul(scale) → softmax → matMul, ` +
    `same process. Workload: B=1, H=${H}, d=${D}, Tq=Tk=T, no mask. Ours: lab.sdpa, then lab.sdpaBackward given its weights. ` +
    `Times are medians of this process's CPU time. Backward GFLOP/s counts 8·H·T²·d.`);
  out.push('');
  out.push('Fastest bwd: the fastest round by CPU time, each round a run of the peak kernel then backward calls; ' +
    '"same-run peak" is the best of those peak runs.');
  out.push('');
  out.push('| T | ours fwd+bwd ms | TF.js fwd+bwd ms | TF.js / ours | ours bwd ms (GFLOP/s) | bwd % of SIMD peak | ' +
    'fastest bwd ms (GFLOP/s) | same-run peak GFLOP/s | fastest bwd % of it | bwd recomputing the weights ms | max abs diff dq, dk, dv |');
  out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const rate = (T, seconds) => backwardFlops(T) / seconds / 1e9;
  for (const r of rows) {
    const gflops = rate(r.T, r.oursBackward);
    const pct = peak ? `${((gflops / peak) * 100).toFixed(1)}%` : 'n/a';
    const best = r.best ? [`${fmtMs(r.best.seconds)} (${rate(r.T, r.best.seconds).toFixed(2)})`, r.best.peak.toFixed(1),
      `${((rate(r.T, r.best.seconds) / r.best.peak) * 100).toFixed(1)}%`] : ['n/a', 'n/a', 'n/a'];
    out.push(`| ${r.T} | ${fmtMs(r.ours)} | ${fmtMs(r.theirs)} | ${(r.theirs / r.ours).toFixed(2)}x | ` +
      `${fmtMs(r.oursBackward)} (${gflops.toFixed(2)}) | ${pct} | ${best.join(' | ')} | ${fmtMs(r.oursRecompute)} | ${r.diff.toExponential(1)} |`);
  }
  out.push('');
  const all10 = rows.every((r) => r.theirs / r.ours >= 10);
  const r256 = rows.find((r) => r.T === 256);
  const half = peak && r256 ? rate(256, r256.oursBackward) >= 0.5 * peak : false;
  const halfBest = r256?.best ? rate(256, r256.best.seconds) >= 0.5 * r256.best.peak : false;
  out.push(`Targets: ours >= 10x TF.js at every T (this run: ${all10 ? 'met' : 'NOT met'}); ` +
    `backward >= 50% of the SIMD peak at T=256 (this run: median against the bench's peak ${half ? 'met' : 'NOT met'}, ` +
    `fastest against the same-run peak ${halfBest ? 'met' : 'NOT met'}).`);
  return out;
}
