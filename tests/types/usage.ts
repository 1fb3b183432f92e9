// Type-checked by tests/types.test.mjs (tsc --strict --noEmit): a small
// program written against the declarations, as a course author would.
import { loadAttention, AttentionError, causalMask, type SdpaResult, type SdpaGradients } from '../../web/attention.js';
import { type AttentionLabElement, defaultProgressKey, PROGRESS_KEY_PREFIX } from '../../web/attention-lab.js';
const storedUnder: string = defaultProgressKey('break-it:no-scale');
void storedUnder.startsWith(PROGRESS_KEY_PREFIX);

async function main(): Promise<number> {
  const lab = await loadAttention({ simd: true });
  const full: SdpaResult = lab.sdpa([[1, 0]], [[1, 0], [0, 1]], [[10, 0], [0, 20]], { mask: causalMask(1, 2) });
  const fast = lab.sdpa([[1, 0]], [[1, 0]], [[1, 0]], { needWeights: false });
  const mha = lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, rope: true });
  const step = mha.forward({ data: new Float32Array(8), shape: [1, 1, 8] }, { useCache: true, causal: true });
  mha.forward({ data: new Float32Array(8), shape: [1, 1, 8] }, { cache: step.cache, useCache: true });
  const saved = mha.forward({ data: new Float32Array(16), shape: [1, 2, 8] }, { causal: true, saveForBackward: true });
  const grads = mha.backward(saved.output);
  const g: SdpaGradients = lab.sdpaBackward([[1, 0]], [[1, 0]], [[1, 0]], [[1, 1]], { bug: 'grad-through-blocked' });
  // 'none' is no bug, as null is; weights: null is weights not given.
  lab.sdpaBackward([[1, 0]], [[1, 0]], [[1, 0]], [[1, 1]], { bug: 'none', weights: null });
  const width: number = mha.dModel + mha.headDim;
  // @ts-expect-error a module's sizes are read-only
  mha.dModel = 4;
  mha.free();
  const trainer = lab.createTrainer({ task: 'induction', seed: 1, bug: 'no-causal-mask' });
  const trained = (trainer.step(2).loss ?? 0) + trainer.evaluate({ batches: 1 }).accuracy + trainer.attention().layers[0][0].data[0];
  trainer.ablate(0, 0, true);
  // @ts-expect-error a trainer's config is read-only
  trainer.config = { ...trainer.config, seqLen: 32 };
  // The raw exports, for measurements: allocations made by the core so far.
  const allocations: number = lab.exports.attn_heap_allocations();
  trainer.free();
  try {
    lab.sdpa([[1]], [[1]], [[1]], { bug: 'no-scale' });
  } catch (err) {
    if (err instanceof AttentionError) return err.code.length;
  }
  const widget = document.querySelector('attention-lab') as AttentionLabElement | null;
  widget?.addEventListener('attention-change', () => {});
  // The events bubble: a page may listen on document or window, and still read detail.
  document.addEventListener('attention-result', (e) => console.log(e.detail.exercise, e.detail.score.raw, e.detail.saved ? 'kept' : 'this load only'));
  if (widget) {
    widget.progressKey = `course-7:${widget.progressKey}`;
    widget.progressKey = null; // the default again
    widget.resetProgress();
  }
  window.addEventListener('attention-change', (e) => console.log(e.detail.preset, e.detail.weights?.shape));
  await lab.reset();
  return trained + width + allocations + full.weights.data[0] + fast.output.data[0] + g.dScores.data[0] + grads.qProj.weight.data[0] + (grads.dKeyValue ? 1 : 0) + full.stats.maxAbsScore + lab.memoryBytes() + lab.lastCallBytes() + lab.lastCallMadds();
}

void main();

// The progress record and its score.
import { Progress, masteryScore, type Score } from '../../web/progress.js';
const progress = new Progress();
progress.include({ questions: ['scale'], exercises: ['no-scale'] });
progress.answer('scale', 'a', true);
const score: Score = progress.score();
const needed: number = masteryScore(score.max);
const status: 'incomplete' | 'passed' | 'failed' | 'completed' = progress.status();
progress.subscribe((event) => { if (event.type === 'exercise') console.log(event.exercise, event.passed, needed, status); });

// Trainer token ids and sdpaLossSlope's mask take the forms every other call takes.
async function tokenForms(): Promise<number> {
  const lab = await loadAttention({ simd: false });
  const trainer = lab.createTrainer({ task: 'previous-token', seqLen: 4 });
  const x = trainer.layerInput(0, { data: [1, 2, 3], shape: [3] });
  const maps = trainer.attention({ data: new Int32Array(4), shape: [4] });
  const slope = lab.sdpaLossSlope([[1, 0]], [[1, 0]], [[1, 0]], [[0, 1]], { mask: [[true]] });
  trainer.free();
  return x.data[0] + maps.layers[0][0].data[0] + slope;
}
void tokenForms();
