// Training the tiny attention-only model: our C trainer (lab.createTrainer)
// against the same model and step written with TensorFlow.js (wasm backend,
// 1 thread), in the process that runs bench.mjs.
//
// Rows: optimiser steps per second at each task's default size, ours and
// TF.js's; then the wall time our trainer needs to reach 99 % held-out on
// previous-token and 90 % on induction (training time only: the held-out
// check every CHECK_EVERY steps is not counted).
//
// The TF.js model: onehot(tokens) wte + wpe, per layer q, k, v = x Wᵀ split into
// heads, softmax(q kᵀ / √D + causal) v, merged, Woᵀ, residual; LayerNorm;
// logits = ln Wuᵀ; softmax cross-entropy over the positions with a target;
// tf.train.adam (no weight decay: the decay is a few multiply-adds per
// parameter and does not change the timing). One step = one minimize() on a
// batch made once in JS; ours also makes a fresh batch each step.
import { TRAIN_TASKS, TRAIN_DEFAULTS } from '../../web/attention.js';
import { rng as uniform } from '../helpers/reference.mjs';
import { loadTf } from './backward.mjs';

const CHECK_EVERY = 25;
const TARGET = { 'previous-token': 0.99, induction: 0.9 };
const TARGET_SECONDS = { 'previous-token': 2, induction: 5 };

/** The model and one AdamW-like step in TF.js for config { layers, heads, dModel, seqLen, vocab, batch, lr }. */
function tfTrainer(tf, { layers: L, heads: H, dModel: C, seqLen: T, vocab: V, batch: B, lr }) {
  const D = C / H;
  const next = uniform(7);
  const normal = (shape, std) => tf.variable(tf.randomNormal(shape, 0, std, 'float32', 7));
  const p = { wte: normal([V, C], 0.1), wpe: normal([T, C], 0.1), wu: normal([V, C], 0.1),
    lnw: tf.variable(tf.ones([C])), lnb: tf.variable(tf.zeros([C])), layers: [] };
  for (let l = 0; l < L; l++) {
    p.layers.push(Object.fromEntries(['wq', 'wk', 'wv', 'wo'].map((n) => [n, normal([C, C], 1 / Math.sqrt(C))])));
  }
  // one-hot @ wte: tf.gather's gradient (UnsortedSegmentSum) has no wasm kernel
  const tokens = tf.oneHot(tf.tensor1d(Int32Array.from({ length: B * T }, () => Math.floor(next() * V)), 'int32'), V).toFloat();
  const targets = tf.oneHot(tf.tensor1d(Int32Array.from({ length: B * T }, () => Math.floor(next() * V)), 'int32'), V);
  const causal = tf.tensor2d(Float32Array.from({ length: T * T }, (_, i) => (i % T > Math.floor(i / T) ? -1e9 : 0)), [T, T]);
  const heads = (x) => tf.transpose(tf.reshape(x, [B, T, H, D]), [0, 2, 1, 3]);
  const loss = () => {
    let x = tf.add(tf.reshape(tf.matMul(tokens, p.wte), [B, T, C]), p.wpe); // (B, T, C)
    for (const w of p.layers) {
      const flat = tf.reshape(x, [B * T, C]);
      const proj = (W) => heads(tf.matMul(flat, W, false, true));
      const scores = tf.add(tf.mul(tf.matMul(proj(w.wq), proj(w.wk), false, true), 1 / Math.sqrt(D)), causal);
      const merged = tf.reshape(tf.transpose(tf.matMul(tf.softmax(scores), proj(w.wv)), [0, 2, 1, 3]), [B * T, C]);
      x = tf.add(x, tf.reshape(tf.matMul(merged, w.wo, false, true), [B, T, C]));
    }
    const { mean, variance } = tf.moments(x, -1, true);
    const ln = tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), p.lnw), p.lnb);
    const logits = tf.matMul(tf.reshape(ln, [B * T, C]), p.wu, false, true);
    return tf.losses.softmaxCrossEntropy(targets, logits);
  };
  const optimizer = tf.train.adam(lr, 0.9, 0.99, 1e-8);
  return { step: () => tf.tidy(() => optimizer.minimize(loss, true).dataSync()[0]) };
}

/**
 * Seconds of training (steps only) until evaluate() reaches `target`, or null
 * within maxSteps: wall time, and the process's CPU time (user + system),
 * which a busy shared machine inflates less.
 */
function timeToAccuracy(lab, task, target, maxSteps) {
  const trainer = lab.createTrainer({ task, seed: 1 });
  let seconds = 0, cpu = 0;
  try {
    for (let steps = 0; steps < maxSteps; steps += CHECK_EVERY) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      trainer.step(CHECK_EVERY);
      const c = process.cpuUsage(c0);
      cpu += (c.user + c.system) / 1e6;
      seconds += (performance.now() - t0) / 1e3;
      if (trainer.evaluate().accuracy >= target) return { seconds, cpu, steps: steps + CHECK_EVERY };
    }
    return null;
  } finally {
    trainer.free();
  }
}

/** The report lines (Markdown) for bench.mjs; `timeColumns` is its timer. */
export async function benchTrain(lab, timeColumns) {
  const { tf, threads, version } = await loadTf();
  const rows = [];
  for (const task of TRAIN_TASKS) {
    const config = TRAIN_DEFAULTS[task];
    const trainer = lab.createTrainer({ task, seed: 1 });
    const peer = tfTrainer(tf, config);
    const times = await timeColumns({ ours: () => trainer.step(), theirs: () => peer.step() });
    trainer.free();
    rows.push({ task, config, ...times });
    console.log(`train ${task}: ours ${(1 / times.ours).toFixed(0)} steps/s, TF.js ${(1 / times.theirs).toFixed(1)} steps/s`);
  }
  const reach = {};
  for (const task of Object.keys(TARGET)) {
    reach[task] = timeToAccuracy(lab, task, TARGET[task], 3000);
    const r = reach[task];
    console.log(`train ${task}: ${r ? `${r.seconds.toFixed(2)} s (CPU ${r.cpu.toFixed(2)} s), ${r.steps} steps` : 'not reached'} to ${TARGET[task] * 100} %`);
  }
  const out = [];
  out.push('### Training a tiny attention-only model against TensorFlow.js');
  out.push('');
  out.push(`TensorFlow.js ${version}, wasm backend, ${threads} thread, same process: the same model and Adam step ` +
    '(tf.train.adam, optimizer.minimize). Sizes are each task\'s defaults (layers × heads, dModel, seqLen, vocab, batch).');
  out.push('');
  out.push('| task | size | ours steps/s | TF.js steps/s | ours / TF.js |');
  out.push('|---|---|---:|---:|---:|');
  for (const r of rows) {
    const c = r.config;
    out.push(`| ${r.task} | ${c.layers}×${c.heads}, ${c.dModel}, ${c.seqLen}, ${c.vocab}, ${c.batch} | ` +
      `${(1 / r.ours).toFixed(0)} | ${(1 / r.theirs).toFixed(1)} | ${(r.theirs / r.ours).toFixed(1)}x |`);
  }
  out.push('');
  const reachText = Object.keys(TARGET).map((task) => {
    const r = reach[task];
    const goal = `target ≤ ${TARGET_SECONDS[task]} s`;
    return r ? `${task} ${TARGET[task] * 100} % in ${r.seconds.toFixed(2)} s wall, ${r.cpu.toFixed(2)} s CPU (${r.steps} steps; ${goal}: ${r.seconds <= TARGET_SECONDS[task] ? 'met' : 'NOT met'} by wall time, ${r.cpu <= TARGET_SECONDS[task] ? 'met' : 'NOT met'} by CPU time)`
      : `${task} did not reach ${TARGET[task] * 100} % in 3000 steps`;
  });
  out.push(`Time to accuracy (seed 1, training time only, held-out check every ${CHECK_EVERY} steps): ${reachText.join('; ')}.`);
  const vsTf = rows.every((r) => r.theirs / r.ours >= 10);
  out.push(`Target: ≥ 10x TF.js's steps/s for every task. This run: ${vsTf ? 'met' : 'NOT met'}.`);
  out.push('');
  return out;
}
