// onnxruntime-web peer: runs the ONNX `Attention` op (opset 23) on the wasm
// backend, single thread, from models built in memory by onnx_graph.mjs.
//
// Loading in Node: the package's "node" export (dist/ort.node.min.mjs) imports
// ort-wasm-simd-threaded.mjs and reads ort-wasm-simd-threaded.wasm from the
// file system next to it. We still pin wasmPaths to that dist/ folder (as a
// file: URL) so the runtime can never fall back to fetching from a CDN.
import * as ort from 'onnxruntime-web';
import { buildSdpaModel, buildMhaModel } from './onnx_graph.mjs';

const wasmFile = import.meta.resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm');
ort.env.wasm.wasmPaths = new URL('./', wasmFile).href;
ort.env.wasm.numThreads = 1;
ort.env.wasm.proxy = false;
ort.env.logLevel = 'error';

export { ort };
export const ortVersion = ort.env.versions?.web ?? 'unknown';

const sessionOptions = {
  executionProviders: ['wasm'],
  graphOptimizationLevel: 'all',
  logSeverityLevel: 3, // errors only
};

const toF32 = (a) => (a instanceof Float32Array ? a : Float32Array.from(a));
const toBool = (a) => (a instanceof Uint8Array ? a : Uint8Array.from(a, (x) => (x ? 1 : 0)));

// numpy-style broadcast of a flat row-major array from `shape` to `target`.
export function broadcastTo(data, shape, target) {
  const pad = [...Array(target.length - shape.length).fill(1), ...shape];
  const n = target.reduce((a, b) => a * b, 1);
  const out = new data.constructor(n);
  // source strides (0 where the source dim is 1 and gets repeated)
  const strides = new Array(pad.length);
  for (let d = pad.length - 1, s = 1; d >= 0; d--) {
    if (pad[d] !== 1 && pad[d] !== target[d]) throw new Error(`cannot broadcast [${shape}] to [${target}]`);
    strides[d] = pad[d] === 1 ? 0 : s;
    s *= pad[d];
  }
  for (let i = 0; i < n; i++) {
    let rest = i, src = 0;
    for (let d = target.length - 1; d >= 0; d--) {
      src += (rest % target[d]) * strides[d];
      rest = Math.floor(rest / target[d]);
    }
    out[i] = data[src];
  }
  return out;
}

// ORT's CPU Attention kernel wants attn_mask of rank 2..4 whose last two dims
// are exactly (Tq, Tk); only the leading dims may broadcast. Widen e.g. a
// padding mask (B,1,1,Tk) to (B,1,Tq,Tk).
function ortMaskShape(shape, Tq, Tk) {
  const lead = shape.length > 2 ? shape.slice(0, -2) : [];
  return [...lead, Tq, Tk];
}

// SDPA on 4D tensors (B,H,T,d).
//   mask: optional boolean "allowed" mask, numpy-broadcastable to (B,H,Tq,Tk):
//         either its shape (e.g. [Tq,Tk]) or { data, shape } (data is then the
//         default for run()). True/1 = may attend, as in ONNX.
//   causal: is_causal=1 (top-left aligned, ANDed with the mask by ORT);
//   scale: optional float attribute (default 1/sqrt(dk)).
// run({ q, k, v, mask? }) -> Promise<Float32Array> of Y (B,H,Tq,dv).
export async function createOrtSdpa({ B, H, Tq, Tk, dk, dv = dk, mask = null, causal = false, scale }) {
  const userShape = mask ? (Array.isArray(mask) ? mask : mask.shape) : null;
  const maskShape = userShape ? ortMaskShape(userShape, Tq, Tk) : null;
  const prepMask = (data) => broadcastTo(toBool(data), userShape, maskShape);
  const defaultMask = mask && !Array.isArray(mask) && mask.data ? prepMask(mask.data) : null;
  const model = buildSdpaModel({ B, H, Tq, Tk, dk, dv, maskShape, causal, scale });
  const session = await ort.InferenceSession.create(model, sessionOptions);
  return {
    session,
    async run({ q, k, v, mask: m }) {
      // Tensors are created per call, as a user would.
      const feeds = {
        Q: new ort.Tensor('float32', toF32(q), [B, H, Tq, dk]),
        K: new ort.Tensor('float32', toF32(k), [B, H, Tk, dk]),
        V: new ort.Tensor('float32', toF32(v), [B, H, Tk, dv]),
      };
      if (maskShape) {
        const data = m !== undefined && m !== null ? prepMask(m.data ?? m) : defaultMask;
        if (!data) throw new Error('createOrtSdpa: this session needs a mask');
        feeds.attn_mask = new ort.Tensor('bool', data, maskShape);
      }
      const out = await session.run(feeds);
      return out.Y.data;
    },
    release: () => session.release(),
  };
}

// Flatten a tensor-ish value ({data}, typed array, or nested arrays) to a Float32Array.
function flat(x) {
  if (x && x.data) return toF32(x.data);
  if (ArrayBuffer.isView(x)) return toF32(x);
  return Float32Array.from(x.flat(Infinity));
}

// nn.Linear weight (out,in) row-major -> (in,out) row-major, as MatMul(X, W) wants.
export function linearToInOut(weight, n) {
  const w = flat(weight);
  if (w.length !== n * n) throw new Error(`expected a ${n}x${n} weight, got ${w.length} values`);
  const t = new Float32Array(n * n);
  for (let o = 0; o < n; o++) for (let i = 0; i < n; i++) t[i * n + o] = w[o * n + i];
  return t;
}

// Multi-head self-attention block (projections + Attention + output projection).
//   weights: the lab's mha.getWeights() structure
//            { qProj, kProj, vProj, outProj }, each { weight (out,in), bias? }.
// run(x (B,T,dModel) flat) -> Promise<Float32Array> (B,T,dModel).
export async function createOrtMha({ B, T, dModel, numHeads, weights, causal = false }) {
  const conv = ({ weight, bias }) => ({ w: linearToInOut(weight, dModel), b: bias ? flat(bias) : null });
  const w = { q: conv(weights.qProj), k: conv(weights.kProj), v: conv(weights.vProj), o: conv(weights.outProj) };
  const model = buildMhaModel({ B, T, dModel, numHeads, weights: w, causal });
  const session = await ort.InferenceSession.create(model, sessionOptions);
  return {
    session,
    async run(x) {
      const X = new ort.Tensor('float32', flat(x), [B, T, dModel]);
      const out = await session.run({ X });
      return out.Y.data;
    },
    release: () => session.release(),
  };
}
