/**
 * checks.js: the break-it lab's automatic checks.
 *
 * One ES module, used by the page (breakit.js) and by the Node tests. A check
 * looks at what the attention core computed for an exercise and says whether
 * one property of correct attention holds:
 *
 *   import { runChecks } from './checks.js';
 *   const results = runChecks(lab, exercise);           // exercise.bug on
 *   const clean = runChecks(lab, { ...exercise, bug: null });
 *   // [{ name, passed, reason, worst, skipped }, ...] in CHECKS order
 *
 * `worst` names the offending entry, `{ tensor, batch, head, row, column,
 * value }` (tensor is 'weights', 'scores' or 'output'; head is null when
 * the tensor has no head axis; column is null for a whole row), or null when
 * the check passed or has no single entry to blame. A check that does not
 * apply to an exercise passes with `skipped: true` and says why.
 *
 * Every number judged here comes from the core: the checks rerun the
 * exercise through the lab (bug-free for the reference, with the last token
 * changed, with the tokens permuted) and compare what comes back. NaN fails
 * every comparison: each test is written as "value is within tolerance",
 * which NaN never is.
 *
 * An exercise describes one run:
 *   { kind: 'sdpa', inputs: { q, k, v }, options: { causal?, mask? }, bug }
 *     q, k, v nested arrays (T, d); mask an allowed mask broadcastable to
 *     (Tq, Tk).
 *   { kind: 'tiled', inputs: { q, k, v }, options: { causal?, mask?, blockKeys }, bug }
 *     the same run through the tiled online-softmax path (lab.sdpaTiled);
 *     its weights are its output for v = identity.
 *   { kind: 'mha', module: { dModel, numHeads, seed, bias? }, inputs: { x },
 *     options: { causal?, attentionMask?, keyPaddingMask? }, bug }
 *     x nested array (T, dModel): one sequence, self-attention;
 *     attentionMask (T, T); keyPaddingMask (1, T).
 *     With decode: true the tokens are decoded one at a time through the
 *     module's KV cache, causal; the steps are laid out as one pass.
 */
import { AttentionError } from './attention.js';
import { fmt as fmtNumber, wordList } from './lesson-ui.js';

/** The checks, in the order they run and are shown. */
export const CHECKS = Object.freeze([
  { name: 'rowSumsOne', title: 'Rows sum to 1', says: 'every row of weights adds up to 1 over the keys' },
  { name: 'blockedWeightsZero', title: 'Blocked weights are 0', says: 'every blocked query–key pair has weight exactly 0' },
  { name: 'noFutureLeak', title: 'No future leak', says: 'changing the last token leaves every earlier output unchanged' },
  { name: 'diagonalAllowed', title: 'Each query sees itself', says: 'in causal self-attention each query gives its own key some weight' },
  { name: 'finiteOutputs', title: 'Finite numbers', says: 'no NaN or Infinity in the weights or the output' },
  { name: 'matchesReference', title: 'Matches the reference', says: 'the result equals the bug-free computation of the core' },
  { name: 'permutationEquivariance', title: 'Permuting tokens permutes outputs', says: 'without a mask, reordering the tokens only reorders the outputs' },
  { name: 'scoresScaled', title: 'Scores scaled by 1/√d_k', says: 'the scores equal q·k/√d_k, as the bug-free core computes them' },
  { name: 'allMaskedRowsRefused', title: 'Empty rows are refused', says: 'a query with no allowed key is refused, not turned into numbers' },
  { name: 'gradientMatchesFiniteDifference', title: 'Gradient matches a nudge', says: 'each gradient entry equals the slope of the loss when that input is nudged by ±ε' },
]);

export const CHECK_NAMES = Object.freeze(CHECKS.map((c) => c.name));

// Tolerances. Weights are probabilities, so absolute; outputs scale with v.
// A central difference in float32 with a nudge of FD_STEP is good to about
// 1e-3 on these inputs; the backward bugs are off by more than 1e-1.
const ROW_SUM_TOL = 1e-5;
const relTol = (...tensors) => 1e-5 * Math.max(1, ...tensors.map(maxAbs));
const FD_STEP = 1e-2;
const FD_TOL = 1e-2;

function maxAbs(data) {
  let m = 0;
  for (const x of data) if (Math.abs(x) > m) m = Math.abs(x);
  return m;
}

// ---------------------------------------------------------------------------
// Running an exercise through the lab
// ---------------------------------------------------------------------------

/**
 * The fixed dOutput of the gradient check: the loss is sum(output * G), a
 * pattern of positive and negative entries (rows, cols).
 */
export function lossPattern(rows, cols) {
  return Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, c) => (((3 * i + 5 * c) % 7) - 3) / 3));
}

/**
 * Run an exercise (or a variant of its inputs) through the core.
 * @returns {{ output, weights, scores?, gradients? } | { refused: AttentionError }}
 *   the core's tensors; scores and gradients only for sdpa. gradients is
 *   sdpaBackward's { dq, dk, dv, ... } for dOutput = lossPattern, or null
 *   when `gradients` is false. A refusal is a result too.
 */
export function runExercise(lab, exercise, { bug = exercise.bug, inputs = exercise.inputs, gradients = true } = {}) {
  const options = { ...exercise.options, bug: bug ?? undefined };
  try {
    if (exercise.kind === 'mha') {
      const module = lab.createMultiHeadAttention(exercise.module);
      try {
        if (exercise.decode) return decodeWithCache(module, inputs.x, options);
        const { output, weights } = module.forward([inputs.x], options);
        return { output, weights };
      } finally {
        module.free();
      }
    }
    if (exercise.kind === 'tiled') {
      // The tiled path keeps no weights; its weights are what it makes of
      // v = identity (row i of the output is then query i's weights).
      const { blockKeys, ...plain } = options;
      const Tk = inputs.k.length;
      const identity = Array.from({ length: Tk }, (_, j) => Array.from({ length: Tk }, (__, c) => (c === j ? 1 : 0)));
      const { output } = lab.sdpaTiled(inputs.q, inputs.k, inputs.v, options);
      const weights = lab.sdpaTiled(inputs.q, inputs.k, identity, options).output;
      const { scores } = lab.sdpa(inputs.q, inputs.k, inputs.v, { ...plain, bug: undefined });
      return { output, weights, scores };
    }
    const { output, weights, scores } = lab.sdpa(inputs.q, inputs.k, inputs.v, options);
    const [rows, cols] = output.shape.slice(-2);
    const grads = gradients ? lab.sdpaBackward(inputs.q, inputs.k, inputs.v, lossPattern(rows, cols), options) : null;
    return { output, weights, scores, gradients: grads };
  } catch (err) {
    if (err instanceof AttentionError) return { refused: err };
    throw err;
  }
}

/**
 * Decode x (T, dModel) one token at a time through the module's KV cache,
 * each step causal, and lay the steps out as one pass would: output
 * (1, T, dModel) and weights (1, H, T, T), step t's row of weights followed
 * by zeros for the keys not yet decoded. Done right, this is exactly one
 * full causal pass.
 */
function decodeWithCache(module, x, options) {
  const T = x.length;
  const C = x[0].length;
  const H = module.numHeads;
  const output = { data: new Float32Array(T * C), shape: [1, T, C] };
  const weights = { data: new Float32Array(H * T * T), shape: [1, H, T, T] };
  let cache = null;
  for (let t = 0; t < T; t++) {
    const step = module.forward([[x[t]]], { ...options, causal: true, cache, useCache: true });
    cache = step.cache;
    output.data.set(step.output.data, t * C);
    for (let h = 0; h < H; h++) {
      weights.data.set(step.weights.data.subarray(h * (t + 1), (h + 1) * (t + 1)), (h * T + t) * T);
    }
  }
  return { output, weights };
}

/**
 * Where flat index `at` of a tensor lies, as a `worst` entry. head is null
 * when the tensor has no head axis (2-D or 3-D sdpa, multi-head output).
 */
function locate(tensor, kind, at, value, isMhaOutput = false) {
  const shape = tensor.shape;
  const cols = shape[shape.length - 1];
  const rows = shape[shape.length - 2];
  const row = Math.floor(at / cols) % rows;
  const column = at % cols;
  const outer = Math.floor(at / (cols * rows));
  if (isMhaOutput || shape.length < 4) return { tensor: kind, batch: outer, head: null, row, column, value };
  return { tensor: kind, batch: Math.floor(outer / shape[1]), head: outer % shape[1], row, column, value };
}

/** Keeps the entry with the largest badness; NaN counts as the worst of all. */
function tracker() {
  let score = -1;
  return {
    entry: null,
    add(badness, make) {
      const s = Number.isNaN(badness) ? Infinity : badness;
      if (s > score) {
        score = s;
        this.entry = make();
      }
    },
  };
}

// ---------------------------------------------------------------------------
// The intended rule: which keys each query may see, from the core
// ---------------------------------------------------------------------------

/**
 * The visibility rule of the exercise as written (no bug), as options for
 * lab.allowedPairs and lab.observe: the mask, the key padding and the causal
 * flag. Multi-head attention reads a 3-D mask as (B, Tq, Tk), the same for
 * every head, so it gets a head axis of 1 here.
 */
function ruleOptions(exercise) {
  const o = exercise.options || {};
  if (exercise.kind !== 'mha') return { mask: o.mask, causal: o.causal };
  let mask = o.attentionMask;
  if (Array.isArray(mask) && maskRank(mask) === 3) {
    mask = { data: mask.flat(2), shape: [mask.length, 1, mask[0].length, mask[0][0].length] };
  } else if (mask && !Array.isArray(mask) && mask.shape.length === 3) {
    mask = { data: mask.data, shape: [mask.shape[0], 1, ...mask.shape.slice(1)] };
  }
  return { mask, keyPaddingMask: o.keyPaddingMask, causal: o.causal };
}

/** Number of dims of a nested-array mask. */
function maskRank(mask) {
  let rank = 0;
  for (let level = mask; Array.isArray(level); level = level[0]) rank++;
  return rank;
}

/**
 * allowed(b, h, i, j) for the exercise as written (no bug), read from the
 * core's lab.allowedPairs over the exercise's (B, H, Tq, Tk).
 */
export function intendedRule(lab, exercise, { B, H, Tq, Tk }) {
  const { data } = lab.allowedPairs([B, H, Tq, Tk], ruleOptions(exercise));
  return (b, h, i, j) => data[((b * H + h) * Tq + i) * Tk + j] === 1;
}

/**
 * Whether the rule blocks every key the core's causal rule blocks, that is
 * every key after the query (self-attention only).
 */
function ruleIsCausal(lab, allowed, { B, H, Tq, Tk }) {
  if (Tq !== Tk) return false;
  const causal = lab.allowedPairs([Tq, Tk], { causal: true }).data;
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++)
    for (let i = 0; i < Tq; i++) for (let j = 0; j < Tk; j++) if (causal[i * Tk + j] === 0 && allowed(b, h, i, j)) return false;
  return true;
}

function hasMask(exercise) {
  const o = exercise.options || {};
  return Boolean(o.causal || o.mask || o.attentionMask || o.keyPaddingMask);
}

/** Rows (b, h, i) in which the core's allowed pairs hold no key. */
function emptyRows(allowed, { B, H, Tq, Tk }) {
  const rows = [];
  for (let b = 0; b < B; b++) for (let h = 0; h < H; h++)
    for (let i = 0; i < Tq; i++) {
      let any = false;
      for (let j = 0; j < Tk && !any; j++) any = allowed(b, h, i, j);
      if (!any) rows.push({ batch: b, head: h, row: i });
    }
  return rows;
}

// ---------------------------------------------------------------------------
// Input variants for the checks that rerun the core
// ---------------------------------------------------------------------------

/** The last row of a (T, d) nested array replaced by a clearly different one. */
function changeLastRow(rows) {
  const last = rows[rows.length - 1];
  return [...rows.slice(0, -1), last.map((x, c) => 1.5 - 2 * x + (c % 2 ? 1 : -1))];
}

function changeLastToken(exercise) {
  const { inputs } = exercise;
  if (exercise.kind === 'mha') return { x: changeLastRow(inputs.x) };
  return { q: changeLastRow(inputs.q), k: changeLastRow(inputs.k), v: changeLastRow(inputs.v) };
}

/** Token order reversed: position i holds token T-1-i. */
function reverseTokens(exercise) {
  const { inputs } = exercise;
  const rev = (rows) => rows.slice().reverse();
  if (exercise.kind === 'mha') return { x: rev(inputs.x) };
  return { q: rev(inputs.q), k: rev(inputs.k), v: rev(inputs.v) };
}

/** An output's last two dims: rows (tokens) and cols (features). */
function outputDims(output) {
  const shape = output.shape;
  return { rows: shape[shape.length - 2], cols: shape[shape.length - 1] };
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

const pass = (name, reason) => ({ name, passed: true, reason, worst: null, skipped: false });
const skip = (name, reason) => ({ name, passed: true, reason: `Not applicable: ${reason}.`, worst: null, skipped: true });
const failWith = (name, reason, worst) => ({ name, passed: false, reason, worst, skipped: false });

/**
 * A number as a break-it card shows it, in its reasons and in its tables
 * (breakit.js): the page's number form (lesson-ui.js) with a typographic
 * minus, so that an entry a reason names reads the same in the table below.
 */
export const fmt = (x) => fmtNumber(x).replaceAll('-', '−');

/**
 * "weight of query 2 on key 3 in head 1" style name of an entry, 1-based for
 * people. The batch and head come last, so the name reads on after "the".
 */
function where(w) {
  const place = [w.batch ? `batch ${w.batch + 1}` : '', w.head === null ? '' : `head ${w.head + 1}`].filter(Boolean).join(', ');
  const inPlace = place ? ` in ${place}` : '';
  if (w.tensor === 'output') return `output row ${w.row + 1}, column ${w.column + 1}${inPlace}`;
  if (GRADIENTS.includes(w.tensor)) return `gradient ${w.tensor} row ${w.row + 1}, column ${w.column + 1}${inPlace}`;
  const noun = w.tensor === 'scores' ? 'score' : 'weight';
  return `${noun} of query ${w.row + 1} on key ${w.column + 1}${inPlace}`;
}

/**
 * Run every check on an exercise.
 * @param lab a loaded lab (loadAttention())
 * @param exercise see the top of this file; exercise.bug is switched on
 *   (null or undefined: no bug)
 * @returns {Array<{ name, passed, reason, worst, skipped }>} in CHECKS order,
 *   plus (non-enumerable) `.run` and `.reference`: the two core results.
 */
export function runChecks(lab, exercise) {
  const run = runExercise(lab, exercise);
  // Without a bug the run is the bug-free computation already.
  const reference = exercise.bug == null ? run : runExercise(lab, exercise, { bug: null });
  let allowed = null;
  let stats = null;
  const ctx = {
    lab, exercise, run, reference,
    /** The intended rule, from the core, asked once. */
    get allowed() { return (allowed ??= intendedRule(lab, exercise, exerciseDims(exercise))); },
    /** The core's observability numbers for this run's weights under the intended rule. */
    get stats() {
      return (stats ??= lab.observe(run.weights, { scores: run.scores, ...ruleOptions(exercise) }));
    },
  };
  const results = CHECKS.map(({ name }) => CHECK_FUNCTIONS[name](ctx));
  Object.defineProperty(results, 'run', { value: run });
  Object.defineProperty(results, 'reference', { value: reference });
  return results;
}

const GRADIENTS = ['dq', 'dk', 'dv'];

/**
 * √d_k as the core scales by it: the core's score of q = k = (1, …, 1),
 * d_k entries, is d_k · 1/√d_k.
 */
function coreRootDk(lab, dk) {
  const ones = [Array(dk).fill(1)];
  return lab.sdpa(ones, ones, [[0]]).scores.data[0];
}

const refusedReason = (run) => `the core refused the call (${run.refused.code})`;
const isMha = (exercise) => exercise.kind === 'mha';

/**
 * The entry of tensor `a` that differs most from `b` by more than `tol` (a
 * NaN on either side counts as the largest difference), as a `worst` entry
 * with `other` = b's value, or null. `only(at)` limits the entries looked at;
 * `mapIndex(at)` picks the entry of b that a's entry `at` should equal.
 */
function largestDifference(a, b, kind, exercise, { tol, only = () => true, mapIndex = (at) => at } = {}) {
  const worst = tracker();
  a.data.forEach((x, at) => {
    if (!only(at)) return;
    const y = b.data[mapIndex(at)];
    const diff = Math.abs(x - y);
    if (diff <= tol) return;
    worst.add(diff, () => ({ ...locate(a, kind, at, x, kind === 'output' && isMha(exercise)), other: y }));
  });
  return worst.entry;
}

const CHECK_FUNCTIONS = {
  rowSumsOne(ctx) {
    const name = 'rowSumsOne';
    const { run, exercise } = ctx;
    if (run.refused) return skip(name, refusedReason(run));
    const { maxRowSumError, worstRowSumAt } = ctx.stats;
    if (maxRowSumError <= ROW_SUM_TOL) return pass(name, `Every row of weights sums to 1 (within ${fmt(ROW_SUM_TOL)}).`);
    // The core names the row; its sum is shown as the learner would add it up.
    const { weights } = run;
    const { H, Tq, Tk } = exerciseDims(exercise);
    const [b, h, i] = worstRowSumAt;
    const start = ((b * H + h) * Tq + i) * Tk;
    let sum = 0;
    for (let j = 0; j < Tk; j++) sum += weights.data[start + j];
    const w = { ...locate(weights, 'weights', start, sum), column: null };
    const head = w.head === null ? '' : `head ${w.head + 1}, `;
    return failWith(name, `The weights of ${head}query ${w.row + 1} sum to ${fmt(w.value)}, not 1.`, w);
  },

  blockedWeightsZero(ctx) {
    const name = 'blockedWeightsZero';
    const { run, exercise } = ctx;
    if (!hasMask(exercise)) return skip(name, 'this input has no mask, so no key is blocked');
    if (run.refused) return skip(name, refusedReason(run));
    const at = ctx.stats.maxForbiddenAt;
    if (!at) return pass(name, 'Every blocked pair has weight exactly 0.');
    const { weights } = run;
    const { H, Tq, Tk } = exerciseDims(exercise);
    const index = ((at[0] * H + at[1]) * Tq + at[2]) * Tk + at[3];
    const worst = locate(weights, 'weights', index, weights.data[index]);
    return failWith(name, `The ${where(worst)} should be blocked, yet it is ${fmt(worst.value)}.`, worst);
  },

  noFutureLeak(ctx) {
    const name = 'noFutureLeak';
    const { lab, exercise, run } = ctx;
    const dims = exerciseDims(exercise);
    if (!ruleIsCausal(lab, ctx.allowed, dims)) return skip(name, 'the mask is not causal');
    if (run.refused) return skip(name, refusedReason(run));
    const changed = runExercise(lab, exercise, { inputs: changeLastToken(exercise) });
    if (changed.refused) {
      return failWith(name, `With the last token changed the core refused the call (${changed.refused.code}).`, null);
    }
    const a = run.output;
    const { rows, cols } = outputDims(a);
    const earlier = (at) => Math.floor(at / cols) % rows < rows - 1;
    const w = largestDifference(a, changed.output, 'output', exercise, { tol: relTol(a.data, changed.output.data), only: earlier });
    if (!w) return pass(name, `Changing the last token left outputs 1 to ${rows - 1} unchanged.`);
    if (Number.isNaN(w.value - w.other)) {
      return failWith(name, `The ${where(w)} is NaN, so it cannot be shown to ignore the last token.`, w);
    }
    return failWith(name, `Only the last token changed, yet the ${where(w)} moved from ${fmt(w.value)} to ${fmt(w.other)}: the future leaked in.`, w);
  },

  diagonalAllowed(ctx) {
    const name = 'diagonalAllowed';
    const { lab, exercise, run, allowed } = ctx;
    const dims = exerciseDims(exercise);
    if (!ruleIsCausal(lab, allowed, dims)) return skip(name, 'this is not causal self-attention');
    if (run.refused) return skip(name, refusedReason(run));
    const unseen = new Set(); // queries the rule keeps from their own key: nothing to check there
    for (let b = 0; b < dims.B; b++) for (let h = 0; h < dims.H; h++)
      for (let i = 0; i < dims.Tq; i++) {
        if (!allowed(b, h, i, i)) {
          unseen.add(i + 1);
          continue;
        }
        const at = ((b * dims.H + h) * dims.Tq + i) * dims.Tk + i;
        const w = run.weights.data[at];
        if (!(w > 0)) {
          const worst = locate(run.weights, 'weights', at, w);
          return failWith(name, `Query ${i + 1} may see itself, yet the ${where(worst)} is ${fmt(w)}.`, worst);
        }
      }
    if (unseen.size === 0) return pass(name, 'Every query gives its own key some weight.');
    const left = [...unseen].sort((a, b) => a - b);
    const named = left.length === 1 ? `query ${left[0]} may not see itself, so it is not checked`
      : `queries ${wordList(left, 'and')} may not see themselves, so they are not checked`;
    return pass(name, `Every query allowed to see itself gives its own key some weight; ${named}.`);
  },

  finiteOutputs({ run, exercise }) {
    const name = 'finiteOutputs';
    if (run.refused) return skip(name, refusedReason(run));
    for (const [kind, t] of [['output', run.output], ['weights', run.weights]]) {
      const at = t.data.findIndex((x) => !Number.isFinite(x));
      if (at >= 0) {
        const worst = locate(t, kind, at, t.data[at], kind === 'output' && isMha(exercise));
        return failWith(name, `The ${where(worst)} is ${fmt(worst.value)}.`, worst);
      }
    }
    return pass(name, 'Every weight and output is a finite number.');
  },

  matchesReference({ run, reference, exercise }) {
    const name = 'matchesReference';
    if (reference.refused && run.refused) {
      return reference.refused.code === run.refused.code
        ? pass(name, `Like the bug-free core, this run refuses the input (${run.refused.code}).`)
        : failWith(name, `The bug-free core refuses with ${reference.refused.code}, this run with ${run.refused.code}.`, null);
    }
    if (reference.refused) {
      const at = run.output.data.findIndex((x) => !Number.isFinite(x));
      const worst = at < 0 ? null : locate(run.output, 'output', at, run.output.data[at], isMha(exercise));
      return failWith(name, `The bug-free core refuses this input (${reference.refused.code}), but this run returned numbers.`, worst);
    }
    if (run.refused) return failWith(name, `The bug-free core computes this input, but this run was refused (${run.refused.code}).`, null);
    for (const kind of ['output', 'weights']) {
      const w = largestDifference(run[kind], reference[kind], kind, exercise, { tol: relTol(reference[kind].data) });
      if (w) return failWith(name, `The ${where(w)} is ${fmt(w.value)}; the bug-free core gives ${fmt(w.other)}.`, w);
    }
    for (const kind of run.gradients && reference.gradients ? GRADIENTS : []) {
      const a = run.gradients[kind];
      const b = reference.gradients[kind];
      const w = largestDifference(a, b, kind, exercise, { tol: relTol(b.data) });
      if (w) return failWith(name, `The ${where(w)} is ${fmt(w.value)}; the bug-free core gives ${fmt(w.other)}.`, w);
    }
    return pass(name, run.gradients ? 'Output, weights and gradients equal the bug-free computation.'
      : 'Output and weights equal the bug-free computation.');
  },

  permutationEquivariance({ lab, exercise, run }) {
    const name = 'permutationEquivariance';
    const dims = exerciseDims(exercise);
    if (hasMask(exercise)) return skip(name, 'a mask ties positions to their order');
    if (dims.Tq !== dims.Tk) return skip(name, 'queries and keys differ in number');
    if (run.refused) return skip(name, refusedReason(run));
    const reversed = runExercise(lab, exercise, { inputs: reverseTokens(exercise) });
    if (reversed.refused) return failWith(name, `With the tokens reversed the core refused the call (${reversed.refused.code}).`, null);
    const a = run.output;
    const { rows, cols } = outputDims(a);
    const mirror = (at) => {
      const block = Math.floor(at / (rows * cols));
      const i = Math.floor(at / cols) % rows;
      return (block * rows + (rows - 1 - i)) * cols + (at % cols);
    };
    const w = largestDifference(a, reversed.output, 'output', exercise, { tol: relTol(a.data, reversed.output.data), mapIndex: mirror });
    if (!w) return pass(name, 'Reversing the tokens reversed the outputs and changed nothing else.');
    return failWith(name, `The ${where(w)} is ${fmt(w.value)}, but with the tokens reversed the same token gets ${fmt(w.other)}.`, w);
  },

  scoresScaled({ lab, run, reference, exercise }) {
    const name = 'scoresScaled';
    if (isMha(exercise)) return skip(name, 'multi-head attention does not return its scores');
    if (run.refused) return skip(name, refusedReason(run));
    if (reference.refused) return skip(name, `the bug-free core refuses this input (${reference.refused.code})`);
    const w = largestDifference(run.scores, reference.scores, 'scores', exercise, { tol: relTol(reference.scores.data) });
    if (!w) return pass(name, 'Every score equals q·k/√d_k.');
    const root = coreRootDk(lab, exercise.inputs.q[0].length);
    const ratio = w.value / w.other;
    const hint = Math.abs(ratio - root) < 1e-3 * root ? `: √d_k = ${fmt(root)} times too large, so the 1/√d_k is missing`
      : Math.abs(ratio * root - 1) < 1e-3 ? `: √d_k = ${fmt(root)} times too small, so it was divided by d_k`
        : Number.isFinite(ratio) ? ` (${fmt(ratio)} times the right value)` : '';
    return failWith(name, `The ${where(w)} is ${fmt(w.value)}; q·k/√d_k is ${fmt(w.other)}${hint}.`, w);
  },

  allMaskedRowsRefused(ctx) {
    const name = 'allMaskedRowsRefused';
    const { exercise, run } = ctx;
    const dims = exerciseDims(exercise);
    const rows = emptyRows(ctx.allowed, dims);
    if (rows.length === 0) return skip(name, 'every query has an allowed key');
    const r = rows[0];
    if (run.refused) {
      return run.refused.code === 'ALL_MASKED_ROW'
        ? pass(name, `Query ${r.row + 1} has no allowed key, and the core refused the call.`)
        : failWith(name, `Query ${r.row + 1} has no allowed key, but the refusal was ${run.refused.code}.`, null);
    }
    const at = ((r.batch * dims.H + r.head) * dims.Tq + r.row) * dims.Tk;
    const worst = { ...locate(run.weights, 'weights', at, run.weights.data[at]), column: null };
    return failWith(name, `Query ${r.row + 1} has no allowed key, yet the call returned numbers (its first weight is ${fmt(worst.value)}).`, worst);
  },

  /**
   * The gradient check: for every entry of q, k and v, the slope of the loss
   * sum(output * G) under a nudge of ±FD_STEP (two more forward runs of the
   * core, bug on) against the backward's gradient for that entry.
   */
  gradientMatchesFiniteDifference({ lab, exercise, run }) {
    const name = 'gradientMatchesFiniteDifference';
    if (isMha(exercise)) return skip(name, 'the multi-head exercises do not run the backward pass here');
    if (exercise.kind === 'tiled') return skip(name, 'the tiled path has no backward pass here');
    if (run.refused) return skip(name, refusedReason(run));
    if (!run.output.data.every(Number.isFinite)) return skip(name, 'the output is not finite, so it has no slope');
    const [rows, cols] = run.output.shape.slice(-2);
    const G = lossPattern(rows, cols).flat();
    const loss = (inputs) => {
      const r = runExercise(lab, exercise, { inputs, gradients: false });
      return r.refused ? NaN : r.output.data.reduce((sum, x, at) => sum + x * G[at], 0);
    };
    const worst = tracker();
    for (const [key, grad] of [['q', 'dq'], ['k', 'dk'], ['v', 'dv']]) {
      const analytic = run.gradients[grad];
      const width = exercise.inputs[key][0].length;
      analytic.data.forEach((value, at) => {
        const nudged = (delta) => {
          const x = exercise.inputs[key].map((row) => row.slice());
          x[Math.floor(at / width)][at % width] += delta;
          return loss({ ...exercise.inputs, [key]: x });
        };
        const slope = (nudged(FD_STEP) - nudged(-FD_STEP)) / (2 * FD_STEP);
        const diff = Math.abs(value - slope);
        if (!(diff <= FD_TOL * Math.max(1, Math.abs(slope)))) {
          worst.add(diff, () => ({ ...locate(analytic, grad, at, value), other: slope }));
        }
      });
    }
    const w = worst.entry;
    if (!w) return pass(name, `Every gradient entry of q, k and v matches the slope of a ±${FD_STEP} nudge.`);
    return failWith(name, `The ${where(w)} is ${fmt(w.value)} by the backward pass, but nudging that entry by ±${FD_STEP} gives a slope of ${fmt(w.other)}.`, w);
  },
};

/** (B, H, Tq, Tk) of an exercise's weights. */
function exerciseDims(exercise) {
  if (isMha(exercise)) {
    const T = exercise.inputs.x.length;
    return { B: 1, H: exercise.module.numHeads, Tq: T, Tk: T };
  }
  return { B: 1, H: 1, Tq: exercise.inputs.q.length, Tk: exercise.inputs.k.length };
}
