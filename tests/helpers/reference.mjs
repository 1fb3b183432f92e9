// A float64 attention written for the tests, independent of the core, and
// comparison helpers that say where and by how much two tensors differ.

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
 * q (batch…, Tq, dk), k (batch…, Tk, dk), v (batch…, Tk, dv); mask: allowed,
 * broadcastable to (batch…, Tq, Tk); causal: key j allowed iff j <= i.
 * Returns { output, weights, scores } as Float64Arrays (flat, row-major).
 */
export function sdpaReference(q, k, v, { mask, causal = false, scale } = {}) {
  const nb = q.shape.length - 2;
  const batch = q.shape.slice(0, nb);
  const [Tq, dk] = q.shape.slice(nb);
  const [Tk] = k.shape.slice(nb);
  const dv = v.shape[nb + 1];
  const s = scale ?? 1 / Math.sqrt(dk);
  const nBatch = product(batch);
  const output = new Float64Array(nBatch * Tq * dv);
  const weights = new Float64Array(nBatch * Tq * Tk);
  const scores = new Float64Array(nBatch * Tq * Tk);
  for (let n = 0; n < nBatch; n++) {
    const bidx = [];
    for (let d = nb - 1, r = n; d >= 0; d--) { bidx.unshift(r % batch[d]); r = Math.floor(r / batch[d]); }
    for (let i = 0; i < Tq; i++) {
      const row = (n * Tq + i) * Tk;
      let max = -Infinity;
      const logits = new Float64Array(Tk);
      for (let j = 0; j < Tk; j++) {
        let dot = 0;
        for (let d = 0; d < dk; d++) dot += q.data[(n * Tq + i) * dk + d] * k.data[(n * Tk + j) * dk + d];
        scores[row + j] = dot * s;
        const allowed = (!causal || j <= i) && (!mask || maskAt(mask, [...batch, Tq, Tk], [...bidx, i, j]));
        logits[j] = allowed ? dot * s : -Infinity;
        max = Math.max(max, logits[j]);
      }
      if (max === -Infinity) throw new Error(`reference: row ${i} of batch ${n} has no allowed key`);
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

/**
 * Largest error of `got` against `want`, relative to max(|want|, 1), with
 * where it happened. Used as: const e = compare(...); assert.ok(e.max <= tol, e.report).
 */
export function compare(got, want, shape, label = 'tensor') {
  let max = 0;
  let at = -1;
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i] - want[i]) / Math.max(Math.abs(want[i]), 1);
    if (!(err <= max)) { max = Number.isNaN(err) ? Infinity : err; at = i; }
  }
  const index = [];
  for (let d = shape.length - 1, r = at; d >= 0 && at >= 0; d--) { index.unshift(r % shape[d]); r = Math.floor(r / shape[d]); }
  const report = at < 0 ? `${label}: exact`
    : `${label}: max relative error ${max.toExponential(2)} at [${index.join(', ')}]: got ${got[at]}, want ${want[at]}`;
  return { max, at, index, report };
}
