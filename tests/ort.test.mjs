// onnxruntime-web (ONNX `Attention`, opset 23, wasm backend) as an independent peer:
//   1. ORT vs a float64 reference written here (checks our ONNX graphs and
//      the mask / causal / scale conventions);
//   2. lab.sdpa (SIMD and scalar builds) and lab MHA vs ORT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createOrtSdpa, createOrtMha, broadcastTo } from './bench/ort_peer.mjs';
import { rng as uniform } from './helpers/reference.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const wasmSimd = `${root}web/wasm/attention-simd.wasm`;
const wasmScalar = `${root}web/wasm/attention-scalar.wasm`;
const RTOL = 2e-5;

// ---------- small helpers ----------

// Seeded uniform numbers in [-1, 1).
function rng(seed) {
  const next = uniform(seed);
  return () => 2 * next() - 1;
}
const randomF32 = (n, next) => Float32Array.from({ length: n }, next);
const prod = (shape) => shape.reduce((a, b) => a * b, 1);

// Compare two flat arrays: |ours - theirs| <= RTOL * max(1, max|theirs|).
// On failure, list the worst entries (index, ours, theirs, abs diff).
function assertClose(ours, theirs, label, rtol = RTOL) {
  assert.equal(ours.length, theirs.length, `${label}: length ${ours.length} vs ${theirs.length}`);
  let peak = 0;
  for (const x of theirs) peak = Math.max(peak, Math.abs(x));
  const tol = rtol * Math.max(1, peak);
  const bad = [];
  let maxDiff = 0;
  for (let i = 0; i < ours.length; i++) {
    const d = Math.abs(ours[i] - theirs[i]);
    if (!(d <= tol)) bad.push({ index: i, ours: ours[i], theirs: theirs[i], absDiff: d });
    if (d > maxDiff || Number.isNaN(d)) maxDiff = d;
  }
  if (bad.length) {
    bad.sort((a, b) => (Number.isNaN(b.absDiff) ? Infinity : b.absDiff) - a.absDiff);
    const lines = bad.slice(0, 8).map(
      (b) => `  [${b.index}] ours=${b.ours} theirs=${b.theirs} absDiff=${b.absDiff}`);
    assert.fail(`${label}: ${bad.length}/${ours.length} values differ by more than ${tol.toExponential(2)}\n${lines.join('\n')}`);
  }
  return maxDiff;
}

// ---------- float64 reference ----------

// SDPA on (B,H,Tq,dk)/(B,H,Tk,dk)/(B,H,Tk,dv). mask: {data, shape} "allowed"
// mask broadcastable to (B,H,Tq,Tk); causal: top-left (j <= i).
// Returns { out (B,H,Tq,dv), weights (B,H,Tq,Tk) } as Float64Arrays.
function refSdpa({ B, H, Tq, Tk, dk, dv }, q, k, v, { mask, causal = false, scale } = {}) {
  const s = scale ?? 1 / Math.sqrt(dk);
  const allowed = mask ? broadcastTo(Uint8Array.from(mask.data, (x) => (x ? 1 : 0)), mask.shape, [B, H, Tq, Tk]) : null;
  const out = new Float64Array(B * H * Tq * dv);
  const weights = new Float64Array(B * H * Tq * Tk);
  const row = new Float64Array(Tk);
  for (let bh = 0; bh < B * H; bh++) {
    for (let i = 0; i < Tq; i++) {
      let max = -Infinity;
      for (let j = 0; j < Tk; j++) {
        const ok = (!allowed || allowed[(bh * Tq + i) * Tk + j]) && (!causal || j <= i);
        let dot = 0;
        for (let c = 0; c < dk; c++) dot += q[(bh * Tq + i) * dk + c] * k[(bh * Tk + j) * dk + c];
        row[j] = ok ? dot * s : -Infinity;
        if (row[j] > max) max = row[j];
      }
      let sum = 0;
      for (let j = 0; j < Tk; j++) { row[j] = Math.exp(row[j] - max); sum += row[j]; }
      for (let j = 0; j < Tk; j++) weights[(bh * Tq + i) * Tk + j] = row[j] / sum;
      for (let c = 0; c < dv; c++) {
        let acc = 0;
        for (let j = 0; j < Tk; j++) acc += row[j] * v[(bh * Tk + j) * dv + c];
        out[(bh * Tq + i) * dv + c] = acc / sum;
      }
    }
  }
  return { out, weights };
}

// y = x·Wᵀ + b with W in nn.Linear (out,in) layout; x (rows, n).
function refLinear(x, rows, n, W, b) {
  const y = new Float64Array(rows * n);
  for (let r = 0; r < rows; r++)
    for (let o = 0; o < n; o++) {
      let acc = b ? b[o] : 0;
      for (let i = 0; i < n; i++) acc += x[r * n + i] * W[o * n + i];
      y[r * n + o] = acc;
    }
  return y;
}

// Multi-head self-attention block in float64 (weights as for createOrtMha).
function refMha({ B, T, dModel, numHeads }, x, w, { causal = false } = {}) {
  const dh = dModel / numHeads;
  const rows = B * T;
  const q = refLinear(x, rows, dModel, w.qProj.weight, w.qProj.bias);
  const k = refLinear(x, rows, dModel, w.kProj.weight, w.kProj.bias);
  const v = refLinear(x, rows, dModel, w.vProj.weight, w.vProj.bias);
  // (B,T,H*dh) -> (B,H,T,dh)
  const split = (a) => {
    const o = new Float64Array(a.length);
    for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) for (let h = 0; h < numHeads; h++)
      for (let c = 0; c < dh; c++) o[((b * numHeads + h) * T + t) * dh + c] = a[(b * T + t) * dModel + h * dh + c];
    return o;
  };
  const { out } = refSdpa({ B, H: numHeads, Tq: T, Tk: T, dk: dh, dv: dh }, split(q), split(k), split(v), { causal });
  // (B,H,T,dh) -> (B,T,H*dh)
  const merged = new Float64Array(out.length);
  for (let b = 0; b < B; b++) for (let h = 0; h < numHeads; h++) for (let t = 0; t < T; t++)
    for (let c = 0; c < dh; c++) merged[(b * T + t) * dModel + h * dh + c] = out[((b * numHeads + h) * T + t) * dh + c];
  return refLinear(merged, rows, dModel, w.outProj.weight, w.outProj.bias);
}

// ---------- cases ----------

function makeCase({ B, H, Tq, Tk, dk, dv = dk }, seed) {
  const next = rng(seed);
  return {
    dims: { B, H, Tq, Tk, dk, dv },
    q: randomF32(B * H * Tq * dk, next),
    k: randomF32(B * H * Tk * dk, next),
    v: randomF32(B * H * Tk * dv, next),
  };
}

// A (Tq,Tk) mask with a few blocked entries; key 0 always allowed so no row is empty.
function scatterMask(Tq, Tk) {
  return { data: Uint8Array.from({ length: Tq * Tk }, (_, x) => (x % Tk === 0 || (x * 7) % 3 !== 0 ? 1 : 0)), shape: [Tq, Tk] };
}
// Padding mask (B,1,1,Tk): batch b keeps its first lengths[b] keys.
function padMask(lengths, Tk) {
  return { data: Uint8Array.from({ length: lengths.length * Tk }, (_, x) => (x % Tk < lengths[Math.floor(x / Tk)] ? 1 : 0)), shape: [lengths.length, 1, 1, Tk] };
}

const CASES = [
  { name: 'self-attention, no mask', dims: { B: 1, H: 2, Tq: 16, Tk: 16, dk: 32 } },
  { name: 'cross-attention, dk != dv, 2D mask', dims: { B: 2, H: 3, Tq: 5, Tk: 7, dk: 8, dv: 6 }, mask: scatterMask(5, 7) },
  { name: 'causal, square', dims: { B: 1, H: 2, Tq: 9, Tk: 9, dk: 16 }, causal: true },
  { name: 'causal, Tq < Tk (top-left aligned)', dims: { B: 1, H: 1, Tq: 4, Tk: 6, dk: 8 }, causal: true },
  { name: 'padding mask (B,1,1,Tk) AND causal', dims: { B: 2, H: 2, Tq: 6, Tk: 6, dk: 8 }, mask: padMask([6, 3], 6), causal: true },
  { name: 'explicit scale', dims: { B: 1, H: 2, Tq: 5, Tk: 5, dk: 8 }, scale: 0.3 },
  { name: 'odd sizes (d not a multiple of 4)', dims: { B: 1, H: 3, Tq: 13, Tk: 11, dk: 7, dv: 5 } },
];

// ORT output per case, filled by the first test group and reused by the lab tests.
const ortOut = new Map();

async function runOrt(c, data) {
  const peer = await createOrtSdpa({ ...data.dims, mask: c.mask ?? null, causal: !!c.causal, scale: c.scale });
  const y = await peer.run({ q: data.q, k: data.k, v: data.v, mask: c.mask });
  await peer.release();
  return y;
}

CASES.forEach((c, i) => {
  test(`ORT Attention vs float64 reference: ${c.name}`, async () => {
    const data = makeCase(c.dims, 100 + i);
    const y = await runOrt(c, data);
    ortOut.set(c.name, y);
    const { out } = refSdpa(data.dims, data.q, data.k, data.v, c);
    assertClose(y, out, `ORT vs reference (${c.name})`);
  });
});

// Random nn.Linear-layout weights for the MHA graph test.
function randomMhaWeights(dModel, seed) {
  const next = rng(seed);
  const s = 1 / Math.sqrt(dModel);
  const lin = () => ({
    weight: Float32Array.from({ length: dModel * dModel }, () => next() * s),
    bias: Float32Array.from({ length: dModel }, () => next() * 0.1),
  });
  return { qProj: lin(), kProj: lin(), vProj: lin(), outProj: lin() };
}

for (const causal of [false, true]) {
  test(`ORT MHA graph (MatMul+Add, Attention 3D, MatMul+Add) vs float64 reference${causal ? ', causal' : ''}`, async () => {
    const dims = { B: 2, T: 6, dModel: 16, numHeads: 4 };
    const weights = randomMhaWeights(dims.dModel, 7);
    const x = randomF32(dims.B * dims.T * dims.dModel, rng(8));
    const peer = await createOrtMha({ ...dims, weights, causal });
    const y = await peer.run(x);
    await peer.release();
    assertClose(y, refMha(dims, x, weights, { causal }), 'ORT MHA vs reference');
  });
}

// ---------- the lab vs ORT (needs web/attention.js and the wasm builds) ----------

const tensor = (data, dims, which) => ({ data, shape: [dims.B, dims.H, which === 'q' ? dims.Tq : dims.Tk, which === 'v' ? dims.dv : dims.dk] });

for (const simd of [true, false]) {
  const wasm = simd ? wasmSimd : wasmScalar;
  const kind = simd ? 'SIMD' : 'scalar';
  test(`lab.sdpa (${kind}) vs ORT`, { skip: !existsSync(wasm) && 'wasm not built' }, async (t) => {
    const { loadAttention } = await import('../web/attention.js');
    const lab = await loadAttention({ simd });
    assert.equal(lab.simd, simd, `loadAttention({simd:${simd}}) should report lab.simd === ${simd}`);
    for (const [i, c] of CASES.entries()) {
      await t.test(c.name, async () => {
        const data = makeCase(c.dims, 100 + i);
        const theirs = ortOut.get(c.name) ?? (await runOrt(c, data));
        const opts = { causal: !!c.causal };
        if (c.mask) opts.mask = c.mask;
        if (c.scale !== undefined) opts.scale = c.scale;
        const q = tensor(data.q, data.dims, 'q'), k = tensor(data.k, data.dims, 'k'), v = tensor(data.v, data.dims, 'v');

        const full = lab.sdpa(q, k, v, { ...opts, needWeights: true });
        const { B, H, Tq, Tk, dv } = data.dims;
        assert.deepEqual(full.output.shape, [B, H, Tq, dv]);
        assertClose(full.output.data, theirs, `lab ${kind} output vs ORT (${c.name})`);
        // ORT does not hand out the weights; check them against the float64 reference.
        assert.deepEqual(full.weights.shape, [B, H, Tq, Tk]);
        const ref = refSdpa(data.dims, data.q, data.k, data.v, c);
        assertClose(full.weights.data, ref.weights, `lab ${kind} weights vs reference (${c.name})`);

        const fast = lab.sdpa(q, k, v, { ...opts, needWeights: false });
        assertClose(fast.output.data, theirs, `lab ${kind} output (needWeights:false) vs ORT (${c.name})`);
      });
    }
  });
}

test('lab MHA forward vs ORT MHA graph', { skip: !existsSync(wasmSimd) && 'wasm not built' }, async (t) => {
  const { loadAttention } = await import('../web/attention.js');
  const lab = await loadAttention({ simd: true });
  if (typeof lab.createMultiHeadAttention !== 'function') {
    t.skip('lab.createMultiHeadAttention not available yet');
    return;
  }
  const dims = { B: 2, T: 5, dModel: 16, numHeads: 4 };
  const mha = lab.createMultiHeadAttention({ dModel: dims.dModel, numHeads: dims.numHeads, seed: 3 });
  try {
    const x = { data: randomF32(dims.B * dims.T * dims.dModel, rng(9)), shape: [dims.B, dims.T, dims.dModel] };
    for (const causal of [false, true]) {
      const peer = await createOrtMha({ ...dims, weights: mha.getWeights(), causal });
      const theirs = await peer.run(x.data);
      await peer.release();
      const ours = mha.forward(x, undefined, { causal });
      assert.deepEqual(ours.output.shape, [dims.B, dims.T, dims.dModel]);
      assertClose(ours.output.data, theirs, `lab MHA vs ORT MHA${causal ? ' (causal)' : ''}`);
    }
  } finally {
    mha.free();
  }
});
