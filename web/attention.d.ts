// Type declarations for web/attention.js, the public API of attention-lab.

/** A tensor going in: row-major data with its shape, or a nested array. */
export type TensorLike =
  | { data: ArrayLike<number>; shape: readonly number[] }
  | NestedArray<number>;
/** An allowed mask going in: 1 / true = may attend. */
export type MaskLike =
  | { data: ArrayLike<number | boolean>; shape: readonly number[] }
  | NestedArray<number | boolean>;
export type NestedArray<T> = T[] | NestedArray<T>[];
/** A flat list of numbers: an array or a typed array (not a BigInt one). */
export type NumberList =
  | readonly number[] | Float32Array | Float64Array | Int8Array | Uint8Array | Uint8ClampedArray
  | Int16Array | Uint16Array | Int32Array | Uint32Array;

/** A tensor coming out: a copy owned by JS. */
export interface Tensor { data: Float32Array; shape: number[] }
export interface MaskTensor { data: Uint8Array; shape: number[] }

export type ErrorCode =
  | 'BAD_ARGUMENT' | 'SHAPE_MISMATCH' | 'NON_FINITE_INPUT' | 'ALL_MASKED_ROW' | 'TOO_LARGE'
  | 'OVERFLOW' | 'UNSUPPORTED' | 'HEADS_DO_NOT_DIVIDE' | 'ROPE_ODD_HEAD_DIM' | 'EMPTY_QUERY'
  | 'CACHE_WITHOUT_USE_CACHE' | 'CACHE_CROSS_ATTENTION' | 'CACHE_POSITION' | 'CACHE_MISMATCH'
  | 'NEGATIVE_OFFSET' | 'MODULE_FREED' | 'NO_SAVED_FORWARD' | 'BACKWARD_THROUGH_CACHE';

export class AttentionError extends Error {
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown });
  readonly name: 'AttentionError';
  readonly code: ErrorCode;
  /** For a failed load (UNSUPPORTED): the error that stopped it. */
  readonly cause?: unknown;
}

export type BugName =
  | 'softmax-over-queries' | 'mask-after-softmax' | 'mask-output' | 'no-causal-mask'
  | 'causal-upper' | 'inverted-mask' | 'padding-on-queries' | 'no-scale' | 'scale-by-dk'
  | 'heads-without-transpose' | 'merge-without-transpose' | 'no-all-masked-guard'
  | 'softmax-backward-no-rowsum' | 'grad-through-blocked' | 'no-rescale' | 'stale-cache-offset';
/** Bug names in the core's enum order; index 0 (no bug) is null. */
export const BUGS: readonly (BugName | null)[];
/** The `bug` option: a bug's name, or null (or 'none') for no bug. */
export type BugOption = BugName | 'none' | null;

export interface SdpaOptions {
  /** Allowed mask, numpy-broadcastable to (batch…, Tq, Tk). */
  mask?: MaskLike | null;
  /** AND the lower triangle: key j allowed for query i iff j <= i. */
  causal?: boolean;
  /** Defaults to 1/sqrt(dk). */
  scale?: number;
  /** false: return only the output, without building (Tq, Tk) matrices
   * (the tiled online-softmax path when no bug is on). */
  needWeights?: boolean;
  /** A break-it bug to switch on in the core. Not a multi-head one (heads-without-transpose,
   * merge-without-transpose, stale-cache-offset), nor 'no-rescale' with weights (BAD_ARGUMENT). */
  bug?: BugOption;
  /** Inverted dropout on the weights after the softmax, 0 <= p < 1. */
  dropout?: number;
  /** Seed of the dropout mask (default 0); only with dropout. */
  seed?: number;
}

export interface SdpaBackwardOptions {
  mask?: MaskLike | null;
  causal?: boolean;
  scale?: number;
  /** false: return only dq, dk, dv, without building (Tq, Tk) matrices. */
  needWeights?: boolean;
  /** A forward bug (the gradient of that bugged forward) or a backward bug. Not a multi-head
   * one, nor the tiled path's 'no-rescale' (BAD_ARGUMENT). */
  bug?: BugOption;
  /** The weights sdpa returned for these inputs: not recomputed then (no bug or a backward bug only).
   * null: not given. */
  weights?: TensorLike | null;
}

export interface SdpaGradients {
  /** dL/dq, the shape of q */
  dq: Tensor;
  /** dL/dk, the shape of k; exactly 0 for a key no query may see */
  dk: Tensor;
  /** dL/dv, the shape of v; exactly 0 for a key no query may see */
  dv: Tensor;
  /** (batch…, Tq, Tk): dL/dscores, the scaled logits; exactly 0 where blocked */
  dScores: Tensor;
  /** (batch…, Tq, Tk): dL/dweights; exactly 0 where blocked */
  dProbs: Tensor;
}

export interface AttentionStats {
  maxAbsScore: number;
  maskedFraction: number;
  maxRowSumError: number;
  maxForbiddenWeight: number;
  /** [b, h, i] (0-based) of the row with the largest row-sum error; null when every row sums to exactly 1. */
  worstRowSumAt: [number, number, number] | null;
  /** [b, h, i, j] (0-based) of the largest weight on a blocked pair; null when every blocked weight is 0. */
  maxForbiddenAt: [number, number, number, number] | null;
}

/** The visibility rule: which key each query may see. */
export interface VisibilityOptions {
  /** Allowed mask, broadcastable to the scores shape. */
  mask?: MaskLike | null;
  /** (B, Tk), 1 = real key; B = 1 when the shape has no batch dims. */
  keyPaddingMask?: MaskLike | null;
  /** Key j allowed for query i only if j <= i + causalOffset. */
  causal?: boolean;
  /** Default 0 (top-left aligned). */
  causalOffset?: number;
}

export interface SdpaResult {
  /** (batch…, Tq, dv) */
  output: Tensor;
  /** (batch…, Tq, Tk) */
  weights: Tensor;
  /** (batch…, Tq, Tk), scaled logits before masking */
  scores: Tensor;
  /** Computed by the core on first read. */
  readonly stats: AttentionStats;
  /** (batch…, Tq, Tk) with dropout: 1 kept, 0 dropped */
  dropoutMask?: MaskTensor;
}

export interface SdpaTiledOptions {
  mask?: MaskLike | null;
  causal?: boolean;
  scale?: number;
  /** Keys per tile; default 128. */
  blockKeys?: number;
  /** Return the running values after each tile (at most 65536 (row, tile) pairs). */
  trace?: boolean;
  /** Only 'no-rescale': drop the exp(m_old - m_new) factor. */
  bug?: 'no-rescale' | 'none' | null;
}

export interface TiledTrace {
  /** (batch…, Tq, tiles): running max m after each tile; -Infinity until the row has met an allowed key */
  max: Tensor;
  /** (batch…, Tq, tiles): running sum l */
  sum: Tensor;
  /** (batch…, Tq, tiles): exp(m_old - m_new) applied at that tile */
  rescale: Tensor;
  /** (batch…, Tq, tiles, dv): the unnormalised output; output = accumulator / l at the last tile */
  accumulator: Tensor;
}

export interface SdpaTiledResult {
  /** (batch…, Tq, dv) */
  output: Tensor;
  /** number of key tiles */
  tiles: number;
  trace?: TiledTrace;
}

export interface MultiHeadOptions {
  dModel: number;
  numHeads: number;
  bias?: boolean;
  rope?: boolean;
  seed?: number;
}

export interface Projection { weight: Tensor; bias: Tensor | null }
export interface ProjectionLike { weight: TensorLike; bias?: TensorLike | null }
export interface Weights { qProj: Projection; kProj: Projection; vProj: Projection; outProj: Projection }
export interface WeightsLike {
  qProj?: ProjectionLike; kProj?: ProjectionLike; vProj?: ProjectionLike; outProj?: ProjectionLike;
}

export interface KVCache {
  /** (B, H, Tk, D), keys already rotated by RoPE */
  key: Tensor;
  /** (B, H, Tk, D) */
  value: Tensor;
  /** (B, Tk) */
  keyPaddingMask: MaskTensor;
  length: number;
}

export interface ForwardOptions {
  /** (Tq, Tk), (B, Tq, Tk) or (B|1, H|1, Tq, Tk); allowed. */
  attentionMask?: MaskLike | null;
  /** (B, Tk new keys): real keys. */
  keyPaddingMask?: MaskLike | null;
  /** (B, Tq): real queries; padded ones get zero output. */
  queryPaddingMask?: MaskLike | null;
  causal?: boolean;
  cache?: KVCache | null;
  useCache?: boolean;
  /** Position of the first query; with a cache it must be the cache length, the default (CACHE_POSITION). */
  queryPositionOffset?: number;
  /** Position of the first key; must be 0 with a cache (CACHE_POSITION). */
  keyPositionOffset?: number;
  needWeights?: boolean;
  /** A break-it bug, not 'no-rescale'; 'stale-cache-offset' places the new queries at 0 when a cache holds keys (no effect without one). */
  bug?: BugOption;
  /** Keep what backward() needs; the module holds it until the next forward that asks. */
  saveForBackward?: boolean;
}

export interface ProjectionGradient { weight: Tensor; bias: Tensor | null }

export interface MultiHeadGradients {
  /** (B, Tq, dModel) */
  dQuery: Tensor;
  /** (B, Tk, dModel) for cross-attention, null for self-attention */
  dKeyValue: Tensor | null;
  /** weight (dModel, dModel) as (out, in); bias (dModel) or null */
  qProj: ProjectionGradient;
  kProj: ProjectionGradient;
  vProj: ProjectionGradient;
  outProj: ProjectionGradient;
}

export interface ForwardResult {
  /** (B, Tq, dModel) */
  output: Tensor;
  /** (B, H, Tq, Tk), unless needWeights is false */
  weights?: Tensor;
  /** with useCache */
  cache?: KVCache;
  /** The position the core gave the first query: queryPositionOffset (or its default), or 0 under the bug stale-cache-offset with cached keys. */
  queryPosition: number;
}

/** Its sizes are fixed at creation: read-only (assigning one throws TypeError in strict mode). */
export interface MultiHeadAttention {
  /** The model width C: query, keyValue and output are (B, T, dModel). */
  readonly dModel: number;
  readonly numHeads: number;
  /** dModel / numHeads */
  readonly headDim: number;
  readonly bias: boolean;
  readonly rope: boolean;
  forward(query: TensorLike, keyValue?: TensorLike | null, options?: ForwardOptions): ForwardResult;
  forward(query: TensorLike, options?: ForwardOptions): ForwardResult;
  /** Gradients for dOutput = dL/doutput (B, Tq, dModel) of the last forward with saveForBackward. */
  backward(dOutput: TensorLike): MultiHeadGradients;
  getWeights(): Weights;
  setWeights(weights: WeightsLike): void;
  free(): void;
}

/**
 * previous-token: position i predicts token i − 1. induction: a filler, n tokens, the same n
 * again; the second copy predicts its next token. reverse: seqLen/2 tokens, then the same
 * reversed, the second half predicted; with an odd seqLen the last token is a random filler
 * with no target.
 */
export type TrainTask = 'previous-token' | 'induction' | 'reverse';
export interface TrainerOptions {
  task: TrainTask;
  /** 1 or 2 */
  layers?: number;
  /** 1 to 4; divides dModel */
  heads?: number;
  /** 1 to 64 */
  dModel?: number;
  /** 4..32 */
  seqLen?: number;
  /** 2..64 */
  vocab?: number;
  /** 1 to 32 */
  batch?: number;
  /** in (0, 1] */
  lr?: number;
  seed?: number;
  causal?: boolean;
  bug?: 'no-causal-mask' | 'none' | null;
}
export interface TrainerConfig {
  readonly task: TrainTask; readonly layers: number; readonly heads: number; readonly dModel: number;
  readonly seqLen: number; readonly vocab: number; readonly batch: number; readonly lr: number;
  readonly seed: number; readonly causal: boolean; readonly bug: 'no-causal-mask' | null;
}
export interface Trainer {
  /** The options it was made with, unset ones filled in; frozen, and read-only. */
  readonly config: TrainerConfig;
  /** @internal The trainer's struct in the core; 0 once freed. */
  readonly ptr: number;
  /**
   * n optimiser steps (default 1, 0 to 100000, else BAD_ARGUMENT); the step count so far and
   * the last step's loss. With n = 0 the loss is an earlier call's, or null before any step.
   */
  step(n?: number): { step: number; loss: number | null };
  /** Held-out loss and accuracy on `batches` batches (default 4, 1 to 1000), each position from
   * its prefix alone, with the trainer's causal flag, no bug. */
  evaluate(options?: { batches?: number }): { loss: number; accuracy: number };
  /**
   * layers[l][h]: (seqLen, seqLen) probabilities on a fixed sample sequence
   * (tokens omitted or null) or on `tokens`, exactly seqLen ids from 0 to
   * vocab − 1 (SHAPE_MISMATCH, BAD_ARGUMENT); allowed (seqLen, seqLen): 1 where
   * that run's rule let query i see key j. as: 'evaluation' (default) runs the
   * model as evaluate() does, with the trainer's causal flag and no bug;
   * 'training' as its training steps did, with the trainer's own rule and bug.
   */
  attention(tokens?: TensorLike | null, options?: { as?: 'evaluation' | 'training' }): {
    tokens: number[]; layers: Tensor[][]; allowed: MaskTensor;
  };
  /** Zero (on = true) or restore head `head` of layer `layer`, 0-based (below layers, heads), in evaluate and attention. */
  ablate(layer: number, head: number, on?: boolean): void;
  /** Layer `layer`'s (0-based) q, k, v, out projections in setWeights' format, bias null. */
  weights(layer: number): Weights;
  /** The residual stream (1, T, dModel) entering layer `layer` (0-based) for 1 to seqLen token ids. */
  layerInput(layer: number, tokens: TensorLike): Tensor;
  /** wte (vocab, dModel), wpe (seqLen, dModel), l1.wq … l2.wo (dModel, dModel) as (out, in), lnf.weight, lnf.bias (1, dModel), wu (vocab, dModel). */
  parameters(): Record<string, Tensor>;
  /** Loss and every parameter's gradient on tokens, targets (batch, seqLen), target -1 = none; no update. */
  gradients(tokens: TensorLike, targets: TensorLike): { loss: number; gradients: Record<string, Tensor> };
  free(): void;
}
export const TRAIN_TASKS: readonly TrainTask[];
export const TRAIN_DEFAULTS: Readonly<Record<TrainTask, Readonly<{
  layers: number; heads: number; dModel: number; seqLen: number; vocab: number; batch: number; lr: number;
}>>>;

export interface Lab {
  /** Whether the SIMD128 build runs. */
  readonly simd: boolean;
  /** The raw exports of the core's wasm instance (attn_* functions, memory), for tests and
   * measurements such as attn_heap_allocations(); not a stable API. A reset() replaces them. */
  readonly exports: { readonly memory: { readonly buffer: ArrayBuffer } } & Readonly<Record<string, (...args: number[]) => number>>;
  /** @internal Counts reset() calls: a module or trainer belongs to the instance it was made in. */
  readonly generation: number;
  sdpa(q: TensorLike, k: TensorLike, v: TensorLike, options: SdpaOptions & { needWeights: false }): { output: Tensor; dropoutMask?: MaskTensor };
  sdpa(q: TensorLike, k: TensorLike, v: TensorLike, options?: SdpaOptions): SdpaResult;
  /** The backward of sdpa for dOutput = dL/doutput (batch…, Tq, dv). */
  sdpaBackward(q: TensorLike, k: TensorLike, v: TensorLike, dOutput: TensorLike,
    options: SdpaBackwardOptions & { needWeights: false }): { dq: Tensor; dk: Tensor; dv: Tensor };
  sdpaBackward(q: TensorLike, k: TensorLike, v: TensorLike, dOutput: TensorLike, options?: SdpaBackwardOptions): SdpaGradients;
  /** The gradient lesson's loss ½‖output − target‖² and dL/doutput = output − target, from the core. */
  squaredError(output: TensorLike, target: TensorLike): { loss: number; dOutput: Tensor };
  /** One step of gradient descent, x − lr · dx, from the core. */
  descend(x: TensorLike, dx: TensorLike, lr: number): Tensor;
  /** Central difference of ½‖sdpa(q, k, v) − target‖² along entry `at` (flat) of q, from the core.
   * eps (default 1e-2) must change q[at] in float32 both ways and be at most max(1, |q[at]|)
   * (BAD_ARGUMENT); a loss at q ± eps beyond float32 is OVERFLOW, as in squaredError. */
  sdpaLossSlope(q: TensorLike, k: TensorLike, v: TensorLike, target: TensorLike,
    options?: { at?: number; eps?: number; mask?: MaskLike | null; causal?: boolean; scale?: number }): number;
  /** The tiled online-softmax path: O(T·d) memory, no weights. */
  sdpaTiled(q: TensorLike, k: TensorLike, v: TensorLike, options?: SdpaTiledOptions): SdpaTiledResult;
  /** RoPE on x (…, T, d), d even, split-halves pairing as the multi-head module;
   * positions: T numbers or the first position (default 0); base default 10000. */
  applyRope(x: TensorLike, options?: { positions?: number | NumberList | TensorLike; base?: number }): Tensor;
  /** 1 where the rule allows the pair, for the scores shape (batch…, Tq, Tk) with 0 to 2 batch dims;
   * at most 2^26 (67108864) pairs in one call (TOO_LARGE). */
  allowedPairs(shape: readonly number[], options?: VisibilityOptions): MaskTensor;
  /** The core's observability numbers for weights (batch…, Tq, Tk) under a rule. It measures broken
   * weights too: a NaN counts as the worst, and is located (worstRowSumAt, maxForbiddenAt).
   * With scores (the same shape), maxAbsScore is their largest magnitude: NaN if one is NaN. */
  observe(weights: TensorLike, options?: VisibilityOptions & { scores?: TensorLike | null }): AttentionStats;
  createMultiHeadAttention(options: MultiHeadOptions): MultiHeadAttention;
  /** A tiny attention-only model in the core that trains on a toy task. */
  createTrainer(options: TrainerOptions): Trainer;
  /** `count` (default 4096) dot products of random q, k of width dk, raw and scaled by 1/√dk.
   * dk ≤ 65536, count ≤ 2^20, and dk · count ≤ 2^25 (33554432), about a second (TOO_LARGE):
   * at the default count, dk ≤ 8192. */
  sampleDotProducts(options: { dk: number; count?: number; seed?: number }): {
    unscaled: Float32Array; scaled: Float32Array; varianceUnscaled: number; varianceScaled: number;
  };
  /** The mean largest softmax weight over `keys` (default 16) random logits, averaged over `count`
   * (default 512) queries, with and without the scale. dk ≤ 4096, keys ≤ 1024, count ≤ 65536,
   * and dk · keys · count ≤ 2^25 (33554432), about a second (TOO_LARGE). */
  softmaxPeak(options: { dk: number; keys?: number; count?: number; seed?: number }): {
    meanMaxWeightScaled: number; meanMaxWeightUnscaled: number;
  };
  /** Size of the core's linear memory in bytes. It only grows (see reset). */
  memoryBytes(): number;
  /** Bytes the last call needed: its tensors in the workspace plus the core's peak scratch. */
  lastCallBytes(): number;
  /** Multiply-adds of the matrix products the last call did (scores, mix, projections), as the core counts them. */
  lastCallMadds(): number;
  /**
   * Replace the core's instance by a fresh one (memory back to its start).
   * Multi-head modules, trainers and caches made before are refused
   * afterwards (MODULE_FREED, CACHE_MISMATCH).
   */
  reset(): Promise<void>;
}

/**
 * Load the core; calls with the same `simd` share one module and instance.
 * Rejects with BAD_ARGUMENT for bad options, UNSUPPORTED (the original error
 * as `cause`) when the wasm cannot be fetched, read or instantiated.
 */
export function loadAttention(options?: { simd?: boolean }): Promise<Lab>;
/** Whether this engine runs wasm SIMD128. */
export function simdSupported(): boolean;
/** Where the wasm files are loaded from; set before the first loadAttention. */
export const wasmLocation: {
  /** The folder; a relative path is relative to the page. */
  base: URL | string;
  inline: { simd?: Uint8Array; scalar?: Uint8Array };
};

export function causalMask(Tq: number, Tk?: number): MaskTensor;
/** Allowed mask (B, 1, 1, T) from integer token ids (B, T): 0 where the id is padId (an integer, default 0). */
export function paddingMask(tokenIds: TensorLike, padId?: number): MaskTensor;
export function allowedFromBlocked(blocked: MaskLike): MaskTensor;
export function blockedFromAllowed(allowed: MaskLike): MaskTensor;
export function additiveFromAllowed(allowed: MaskLike): Tensor;
/** Lookup into an allowed mask broadcast (as lab.sdpa does) to `target`: allowed(...index), one integer index per target dim. */
export function maskReader(mask: MaskLike, target: readonly number[], name?: string): (...index: number[]) => boolean;
