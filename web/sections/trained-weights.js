// Trained weights for the multi-head section: a one-layer attention-only
// model trained in the core (lab.createTrainer) to copy the previous token,
// sized like the section (d_model 32, 4 heads, 8 positions, its ten words).
// Training is short (a few hundred milliseconds) and deterministic: the same
// seed and step count give the same weights on a given build. It runs in
// small slices between frames, only once a learner asks for the weights, so
// the first paint never waits for it; the model is kept for the page's life.

/** The run: createTrainer's options and the number of optimiser steps. */
export const TRAINED = Object.freeze({
  options: Object.freeze({ task: 'previous-token', layers: 1, heads: 4, dModel: 32, seqLen: 8, vocab: 10, batch: 16, lr: 0.01, seed: 5 }),
  steps: 120,
});

const SLICE_MS = 6; // training time per slice; a step takes about a millisecond

/** One run per lab (a page and its widgets share it). */
const runs = new WeakMap();

/**
 * The trained model of `lab`, training it in slices if needed.
 * Returns { trainer, done, step, weights } at once: while done is false, the
 * run goes on between frames, and onProgress() is called after each slice
 * and once at the end (then done is true and weights is trainer.weights(0)).
 */
export function trainedModel(lab, onProgress) {
  let run = runs.get(lab);
  if (run && run.generation !== lab.generation) run = null; // the lab was reset: its memory is gone
  if (!run) {
    run = { trainer: lab.createTrainer(TRAINED.options), generation: lab.generation, done: false, step: 0, weights: null, listeners: new Set() };
    runs.set(lab, run);
    const slice = () => {
      if (run.trainer.ptr === 0 || run.generation !== lab.generation) return;
      const start = performance.now();
      while (run.step < TRAINED.steps && performance.now() - start < SLICE_MS) run.step = run.trainer.step(1).step;
      if (run.step >= TRAINED.steps) {
        run.done = true;
        run.weights = run.trainer.weights(0);
      } else {
        setTimeout(slice, 0);
      }
      for (const listener of run.listeners) listener(run);
    };
    setTimeout(slice, 0);
  }
  if (onProgress && !run.done) run.listeners.add(onProgress);
  return run;
}
