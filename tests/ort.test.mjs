// onnxruntime-web (ONNX `Attention`, opset 23, wasm backend) as an independent peer:
//   1. ORT vs the tests' float64 reference (checks our ONNX graphs and
//      the mask / causal / scale conventions);
//   2. lab.sdpa (SIMD and scalar builds) and lab MHA vs ORT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createOrtSdpa, createOrtMha } from './bench/ort_peer.mjs';
import { rng as uniform, sdpaReference, mhaReference } from './helpers/reference.mjs';
import { assertClose, largestMagnitude } from './helpers/compare.mjs';

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

const tensor = (data, dims, which) => ({ data, shape: [dims.B, dims.H, which === 'q' ? dims.Tq : dims.Tk, which === 'v' ? dims.dv : dims.dk] });

// |ours - theirs| <= RTOL * max(1, largest |theirs|); a failure lists the worst entries.
const assertNear = (ours, theirs, shape, label) =>
  assertClose(ours, theirs, { shape, label, atol: RTOL * Math.max(1, largestMagnitude(theirs)) });

// The float64 reference on one case's flat (B,H,T,d) arrays.
const reference = ({ dims, q, k, v }, c) =>
  sdpaReference(tensor(q, dims, 'q'), tensor(k, dims, 'k'), tensor(v, dims, 'v'), c);

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
    const { B, H, Tq, dv } = data.dims;
    assertNear(y, reference(data, c).output, [B, H, Tq, dv], `ORT vs reference (${c.name})`);
  });
});

// Random nn.Linear-layout weights for the MHA graph test.
function randomMhaWeights(dModel, seed) {
  const next = rng(seed);
  const s = 1 / Math.sqrt(dModel);
  const lin = () => ({
    weight: { data: Float32Array.from({ length: dModel * dModel }, () => next() * s), shape: [dModel, dModel] },
    bias: { data: Float32Array.from({ length: dModel }, () => next() * 0.1), shape: [dModel] },
  });
  return { qProj: lin(), kProj: lin(), vProj: lin(), outProj: lin() };
}

for (const causal of [false, true]) {
  test(`ORT MHA graph (MatMul+Add, Attention 3D, MatMul+Add) vs float64 reference${causal ? ', causal' : ''}`, async () => {
    const dims = { B: 2, T: 6, dModel: 16, numHeads: 4 };
    const weights = randomMhaWeights(dims.dModel, 7);
    const shape = [dims.B, dims.T, dims.dModel];
    const x = randomF32(dims.B * dims.T * dims.dModel, rng(8));
    const peer = await createOrtMha({ ...dims, weights, causal });
    const y = await peer.run(x);
    await peer.release();
    const want = mhaReference(weights, { data: x, shape }, null, { H: dims.numHeads, causal });
    assertNear(y, want.output, shape, 'ORT MHA vs reference');
  });
}

// ---------- the lab vs ORT (needs web/attention.js and the wasm builds) ----------

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
        assertNear(full.output.data, theirs, full.output.shape, `lab ${kind} output vs ORT (${c.name})`);
        // ORT does not hand out the weights; check them against the float64 reference.
        assert.deepEqual(full.weights.shape, [B, H, Tq, Tk]);
        assertNear(full.weights.data, reference(data, c).weights, full.weights.shape, `lab ${kind} weights vs reference (${c.name})`);

        const fast = lab.sdpa(q, k, v, { ...opts, needWeights: false });
        assertNear(fast.output.data, theirs, fast.output.shape, `lab ${kind} output (needWeights:false) vs ORT (${c.name})`);
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
      assertNear(ours.output.data, theirs, ours.output.shape, `lab MHA vs ORT MHA${causal ? ' (causal)' : ''}`);
    }
  } finally {
    mha.free();
  }
});
