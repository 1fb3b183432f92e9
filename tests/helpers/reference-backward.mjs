// The backward of the float64 reference attention, written for the tests,
// and the other gradient yardsticks: central differences in float64 and
// TensorFlow.js autograd over the same graph.
import { sdpaReference, maskAt } from './reference.mjs';

const product = (shape) => shape.reduce((a, b) => a * b, 1);

/** Whether key j is allowed for query i of batch index bidx, as sdpaReference decides. */
function allowedAt({ mask, causal = false, qOffset = 0, kOffset = 0 }, target, bidx, i, j) {
  const masks = mask ? [mask].flat() : [];
  return (!causal || kOffset + j <= qOffset + i) && masks.every((m) => maskAt(m, target, [...bidx, i, j]));
}

/**
 * Gradients of L = sum(output * dOutput) for the float64 reference sdpa.
 * q, k, v, dOutput: { data, shape }; options as sdpaReference takes them.
 * Returns { dq, dk, dv, dScores, dProbs } as flat Float64Arrays.
 */
export function sdpaBackwardReference(q, k, v, dOutput, options = {}) {
  const nb = q.shape.length - 2;
  const batch = q.shape.slice(0, nb);
  const [Tq, dk] = q.shape.slice(nb);
  const Tk = k.shape[nb];
  const dv = v.shape[nb + 1];
  const s = options.scale ?? 1 / Math.sqrt(dk);
  const { weights: P } = sdpaReference(q, k, v, options);
  const nBatch = product(batch);
  const g = dOutput.data;
  const dq = new Float64Array(nBatch * Tq * dk);
  const dK = new Float64Array(nBatch * Tk * dk);
  const dV = new Float64Array(nBatch * Tk * dv);
  const dScores = new Float64Array(nBatch * Tq * Tk);
  const dProbs = new Float64Array(nBatch * Tq * Tk);
  for (let n = 0; n < nBatch; n++) {
    const bidx = [];
    for (let d = nb - 1, r = n; d >= 0; d--) { bidx.unshift(r % batch[d]); r = Math.floor(r / batch[d]); }
    for (let i = 0; i < Tq; i++) {
      const row = (n * Tq + i) * Tk;
      // mix: dP = dOut v^T (blocked weights are constants: 0), dV += P^T dOut
      let dot = 0;
      for (let j = 0; j < Tk; j++) {
        if (!allowedAt(options, [...batch, Tq, Tk], bidx, i, j)) continue;
        let acc = 0;
        for (let c = 0; c < dv; c++) {
          acc += g[(n * Tq + i) * dv + c] * v.data[(n * Tk + j) * dv + c];
          dV[(n * Tk + j) * dv + c] += P[row + j] * g[(n * Tq + i) * dv + c];
        }
        dProbs[row + j] = acc;
        dot += acc * P[row + j];
      }
      // softmax: dS = P (dP - sum(dP P)); blocked entries stay 0
      for (let j = 0; j < Tk; j++) dScores[row + j] = P[row + j] * (dProbs[row + j] - dot);
      // scores = s q k^T
      for (let j = 0; j < Tk; j++) {
        const ds = dScores[row + j];
        for (let d = 0; d < dk; d++) {
          dq[(n * Tq + i) * dk + d] += s * ds * k.data[(n * Tk + j) * dk + d];
          dK[(n * Tk + j) * dk + d] += s * ds * q.data[(n * Tq + i) * dk + d];
        }
      }
    }
  }
  return { dq, dk: dK, dv: dV, dScores, dProbs };
}

/**
 * Central differences of f at x, in float64: for each entry of x.data,
 * (f(x + h e) - f(x - h e)) / 2h. f reads x.data (a Float64Array copy).
 */
export function centralDifferences(f, x, h = 1e-5) {
  const data = Float64Array.from(x.data);
  const probe = { data, shape: x.shape };
  const out = new Float64Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const keep = data[i];
    data[i] = keep + h;
    const up = f(probe);
    data[i] = keep - h;
    const down = f(probe);
    data[i] = keep;
    out[i] = (up - down) / (2 * h);
  }
  return out;
}

/** sum(a * b) in float64. */
export function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/**
 * TensorFlow.js autograd of sum(attention(q, k, v) * dOutput) for the graph
 * matMul -> mul(scale) -> add(mask as -1e9) -> softmax -> matMul.
 * tf: the @tensorflow/tfjs namespace. Returns { dq, dk, dv } as Float32Arrays.
 */
export function tfSdpaGrads(tf, q, k, v, dOutput, { additiveMask = null, scale } = {}) {
  const dk = q.shape[q.shape.length - 1];
  const s = scale ?? 1 / Math.sqrt(dk);
  return tf.tidy(() => {
    const G = tf.tensor(dOutput.data, dOutput.shape);
    const f = (Q, K, V) => {
      let logits = tf.mul(tf.matMul(Q, K, false, true), s);
      if (additiveMask) logits = tf.add(logits, tf.tensor(additiveMask.data, additiveMask.shape));
      return tf.sum(tf.mul(tf.matMul(tf.softmax(logits), V), G));
    };
    const [dq, dK, dV] = tf.grads(f)([tf.tensor(q.data, q.shape), tf.tensor(k.data, k.shape), tf.tensor(v.data, v.shape)]);
    return { dq: dq.dataSync().slice(), dk: dK.dataSync().slice(), dv: dV.dataSync().slice() };
  });
}
