// Attention in float64, written for the tests and independent of the core:
// scaled dot-product attention with masks, causal rule and positions, and
// multi-head attention built on it (projections, split-halves RoPE, padding).
// Compare results with helpers/compare.mjs.

/** Seeded uniform numbers in [0, 1) (mulberry32). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A tensor { data: Float32Array, shape } of uniform values in [-1, 1). */
export function randomTensor(shape, random) {
  const n = shape.reduce((a, b) => a * b, 1);
  return { data: Float32Array.from({ length: n }, () => 2 * random() - 1), shape };
}

const product = (shape) => shape.reduce((a, b) => a * b, 1);

/** Value of a mask {data, shape} broadcast (numpy rules) to `target` at multi-index idx. */
export function maskAt(mask, target, idx) {
  const extra = mask.shape.length - target.length;
  let offset = 0;
  let stride = 1;
  for (let d = mask.shape.length - 1; d >= 0; d--) {
    const t = d - extra;
    const i = t >= 0 && mask.shape[d] !== 1 ? idx[t] : 0;
    offset += i * stride;
    stride *= mask.shape[d];
  }
  return Boolean(mask.data[offset]);
}

/**
 * Scaled dot-product attention in float64.
 * q (batch…, Tq, dk), k (batch…, Tk, dk), v (batch…, Tk, dv), each { data, shape }.
 * mask: an allowed mask { data, shape } broadcastable (numpy rules) to
 * (batch…, Tq, Tk), or a list of them that must all allow a key.
 * causal: query i (at position qOffset + i) sees key j (at kOffset + j)
 * iff kOffset + j <= qOffset + i. scale defaults to 1/sqrt(dk).
 * Returns { output, weights, scores } as flat row-major Float64Arrays.
 */
export function sdpaReference(q, k, v, { mask, causal = false, scale, qOffset = 0, kOffset = 0 } = {}) {
  const nb = q.shape.length - 2;
  const batch = q.shape.slice(0, nb);
  const [Tq, dk] = q.shape.slice(nb);
  const [Tk] = k.shape.slice(nb);
  const dv = v.shape[nb + 1];
  const s = scale ?? 1 / Math.sqrt(dk);
  const masks = mask ? [mask].flat() : [];
  const full = [...batch, Tq, Tk];
  const nBatch = product(batch);
  const output = new Float64Array(nBatch * Tq * dv);
  const weights = new Float64Array(nBatch * Tq * Tk);
  const scores = new Float64Array(nBatch * Tq * Tk);
  const logits = new Float64Array(Tk);
  for (let n = 0; n < nBatch; n++) {
    const bidx = [];
    for (let d = nb - 1, r = n; d >= 0; d--) { bidx.unshift(r % batch[d]); r = Math.floor(r / batch[d]); }
    for (let i = 0; i < Tq; i++) {
      const row = (n * Tq + i) * Tk;
      let max = -Infinity;
      for (let j = 0; j < Tk; j++) {
        let dot = 0;
        for (let d = 0; d < dk; d++) dot += q.data[(n * Tq + i) * dk + d] * k.data[(n * Tk + j) * dk + d];
        scores[row + j] = dot * s;
        const allowed = (!causal || kOffset + j <= qOffset + i) && masks.every((m) => maskAt(m, full, [...bidx, i, j]));
        logits[j] = allowed ? dot * s : -Infinity;
        max = Math.max(max, logits[j]);
      }
      if (max === -Infinity) throw new Error(`reference: query ${i} of batch [${bidx}] has no allowed key`);
      let sum = 0;
      for (let j = 0; j < Tk; j++) sum += (logits[j] = Math.exp(logits[j] - max));
      for (let j = 0; j < Tk; j++) weights[row + j] = logits[j] / sum;
      for (let c = 0; c < dv; c++) {
        let acc = 0;
        for (let j = 0; j < Tk; j++) acc += weights[row + j] * v.data[(n * Tk + j) * dv + c];
        output[(n * Tq + i) * dv + c] = acc;
      }
    }
  }
  return { output, weights, scores };
}

/** y = x W^T + b in float64, x (rows, C), W (C, C) in nn.Linear (out, in) layout. */
function linear(x, rows, C, { weight, bias }) {
  const y = new Float64Array(rows * C);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < C; o++) {
      let acc = bias ? bias.data[o] : 0;
      for (let i = 0; i < C; i++) acc += x[r * C + i] * weight.data[o * C + i];
      y[r * C + o] = acc;
    }
  }
  return y;
}

/**
 * RoPE in place on each head's columns h*D .. h*D+D-1 of X (B, T, H*D),
 * split halves: entry d turns with entry d + D/2 by the angle
 * position * 10000^(-2d/D), positions first, first + 1, ...
 */
function rope(X, B, T, H, D, first) {
  const C = H * D;
  const half = D / 2;
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < H; h++) {
        const base = (b * T + t) * C + h * D;
        for (let d = 0; d < half; d++) {
          const angle = (first + t) * 10000 ** (-2 * d / D);
          const x1 = X[base + d];
          const x2 = X[base + d + half];
          X[base + d] = x1 * Math.cos(angle) - x2 * Math.sin(angle);
          X[base + d + half] = x2 * Math.cos(angle) + x1 * Math.sin(angle);
        }
      }
    }
  }
}

/** (B, T, H*D) -> (B, H, T, D), or back with `merge`. */
function heads(X, B, T, H, D, merge = false) {
  const Y = new Float64Array(X.length);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < H; h++) {
        for (let d = 0; d < D; d++) {
          const joined = (b * T + t) * H * D + h * D + d;
          const split = ((b * H + h) * T + t) * D + d;
          if (merge) Y[joined] = X[split];
          else Y[split] = X[joined];
        }
      }
    }
  }
  return Y;
}

/**
 * Multi-head attention in float64, one head at a time, as the module defines it:
 * project (x W^T + b), RoPE on each head's slice, attend per head, join the
 * heads, output projection; padded queries give zero rows.
 * params: { qProj, kProj, vProj, outProj }, each { weight: { data } (C, C), bias: { data } | null }
 * (the module's getWeights()). query (B, Tq, C); keyValue (B, Tk, C) or null for self-attention.
 * o: { H, rope, causal, qOffset, kOffset, attentionMask ((Tq, Tk), (B, Tq, Tk) or
 * (B|1, H|1, Tq, Tk)), keyPaddingMask (B, Tk), queryPaddingMask (B, Tq) }, positions resolved.
 * Returns { output (B, Tq, C), weights (B, H, Tq, Tk) } as Float64Arrays.
 */
export function mhaReference(params, query, keyValue, o) {
  const [B, Tq, C] = query.shape;
  const source = keyValue ?? query;
  const Tk = source.shape[1];
  const { H } = o;
  const D = C / H;
  const qOffset = o.qOffset ?? 0;
  const kOffset = o.kOffset ?? 0;

  const Q = linear(query.data, B * Tq, C, params.qProj);
  const K = linear(source.data, B * Tk, C, params.kProj);
  const V = linear(source.data, B * Tk, C, params.vProj);
  if (o.rope) {
    rope(Q, B, Tq, H, D, qOffset);
    rope(K, B, Tk, H, D, kOffset);
  }
  const masks = [];
  const m = o.attentionMask;
  if (m) masks.push(m.shape.length === 3 ? { data: m.data, shape: [B, 1, Tq, Tk] } : m);
  if (o.keyPaddingMask) masks.push({ data: o.keyPaddingMask.data, shape: [B, 1, 1, Tk] });
  const { output: attended, weights } = sdpaReference(
    { data: heads(Q, B, Tq, H, D), shape: [B, H, Tq, D] },
    { data: heads(K, B, Tk, H, D), shape: [B, H, Tk, D] },
    { data: heads(V, B, Tk, H, D), shape: [B, H, Tk, D] },
    { mask: masks, causal: o.causal, qOffset, kOffset });
  const output = linear(heads(attended, B, Tq, H, D, true), B * Tq, C, params.outProj);
  if (o.queryPaddingMask) {
    for (let r = 0; r < B * Tq; r++) if (!o.queryPaddingMask.data[r]) output.fill(0, r * C, (r + 1) * C);
  }
  return { output, weights };
}
