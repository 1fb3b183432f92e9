// The trainer's model in float64, written for the tests and independent of
// the core: embeddings, attention-only layers with residuals (projections
// without bias, causal softmax per head), a final LayerNorm, an unembedding
// and the mean cross-entropy over positions with a target.
// Parameters are the trainer's own: trainer.parameters() by name.

const LN_EPS = 1e-5;

/** y (N, O) = x (N, I) @ w^T, w { data, shape: [O, I] }. */
function linear(x, N, w) {
  const [O, I] = w.shape;
  const y = new Float64Array(N * O);
  for (let n = 0; n < N; n++) {
    for (let o = 0; o < O; o++) {
      let s = 0;
      for (let i = 0; i < I; i++) s += x[n * I + i] * w.data[o * I + i];
      y[n * O + o] = s;
    }
  }
  return y;
}

/**
 * The loss of the model with parameters `params` on tokens, targets
 * (B * T flat, target -1 = none). `causal`: key j is visible to query i only
 * if j <= i. Returns the mean cross-entropy in float64.
 */
export function trainLoss(params, tokens, targets, { B, T, heads: H, layers: L, causal = true }) {
  const [V, C] = params.wte.shape;
  const D = C / H;
  const N = B * T;
  let x = new Float64Array(N * C);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let c = 0; c < C; c++) {
        x[(b * T + t) * C + c] = params.wte.data[tokens[b * T + t] * C + c] + params.wpe.data[t * C + c];
      }
    }
  }
  for (let l = 1; l <= L; l++) {
    const q = linear(x, N, params[`l${l}.wq`]);
    const k = linear(x, N, params[`l${l}.wk`]);
    const v = linear(x, N, params[`l${l}.wv`]);
    const merged = new Float64Array(N * C);
    const scale = 1 / Math.sqrt(D);
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < T; i++) {
          const scores = [];
          for (let j = 0; j < T; j++) {
            if (causal && j > i) { scores.push(-Infinity); continue; }
            let s = 0;
            for (let d = 0; d < D; d++) s += q[(b * T + i) * C + h * D + d] * k[(b * T + j) * C + h * D + d];
            scores.push(s * scale);
          }
          const max = Math.max(...scores);
          const e = scores.map((s) => Math.exp(s - max));
          const sum = e.reduce((a, c) => a + c, 0);
          for (let d = 0; d < D; d++) {
            let o = 0;
            for (let j = 0; j < T; j++) o += (e[j] / sum) * v[(b * T + j) * C + h * D + d];
            merged[(b * T + i) * C + h * D + d] = o;
          }
        }
      }
    }
    const y = linear(merged, N, params[`l${l}.wo`]);
    x = x.map((value, i) => value + y[i]);
  }
  const ln = new Float64Array(N * C);
  for (let n = 0; n < N; n++) {
    let mean = 0;
    for (let c = 0; c < C; c++) mean += x[n * C + c];
    mean /= C;
    let variance = 0;
    for (let c = 0; c < C; c++) variance += (x[n * C + c] - mean) ** 2;
    const rstd = 1 / Math.sqrt(variance / C + LN_EPS);
    for (let c = 0; c < C; c++) {
      ln[n * C + c] = (x[n * C + c] - mean) * rstd * params['lnf.weight'].data[c] + params['lnf.bias'].data[c];
    }
  }
  const logits = linear(ln, N, params.wu);
  let loss = 0;
  let count = 0;
  for (let n = 0; n < N; n++) {
    if (targets[n] < 0) continue;
    const row = logits.subarray(n * V, (n + 1) * V);
    const max = Math.max(...row);
    let sum = 0;
    for (const z of row) sum += Math.exp(z - max);
    loss -= row[targets[n]] - max - Math.log(sum);
    count++;
  }
  return loss / count;
}

/**
 * Central differences of trainLoss with respect to every entry of every
 * parameter, in float64: { name: Float64Array } shaped like params.
 */
export function finiteDifferenceGradients(params, tokens, targets, sizes, eps = 1e-5) {
  const copy = Object.fromEntries(Object.entries(params).map(([name, p]) => [name, { data: Float64Array.from(p.data), shape: p.shape }]));
  const grads = {};
  for (const [name, p] of Object.entries(copy)) {
    grads[name] = new Float64Array(p.data.length);
    for (let i = 0; i < p.data.length; i++) {
      const keep = p.data[i];
      p.data[i] = keep + eps;
      const up = trainLoss(copy, tokens, targets, sizes);
      p.data[i] = keep - eps;
      const down = trainLoss(copy, tokens, targets, sizes);
      p.data[i] = keep;
      grads[name][i] = (up - down) / (2 * eps);
    }
  }
  return grads;
}
