// Tiny hand-written ONNX model builder (protobuf encoder, no dependencies).
//
// Field numbers follow onnx/onnx.proto (proto2):
//   ModelProto:   ir_version=1, producer_name=2, graph=7, opset_import=8
//   OperatorSetIdProto: domain=1, version=2
//   GraphProto:   node=1, name=2, initializer=5, input=11, output=12
//   NodeProto:    input=1, output=2, name=3, op_type=4, attribute=5, domain=7
//   AttributeProto: name=1, f=2, i=3, type=20   (AttributeType FLOAT=1, INT=2)
//   TensorProto:  dims=1, data_type=2, name=8, raw_data=9   (DataType FLOAT=1, BOOL=9)
//   ValueInfoProto: name=1, type=2;  TypeProto: tensor_type=1
//   TypeProto.Tensor: elem_type=1, shape=2;  TensorShapeProto: dim=1;  Dimension: dim_value=1
//
// The Attention op (ai.onnx, since opset 23): inputs Q, K, V, [attn_mask];
// output Y. A boolean attn_mask is True where a key MAY be attended (same
// convention as our "allowed" mask). is_causal=1 is top-left aligned
// (key j allowed for query i iff j <= i). scale defaults to 1/sqrt(head_size).
// The spec says attn_mask and is_causal should not both be given; ORT 1.30's
// CPU/wasm kernel accepts both and ANDs them (checked in tests/ort.test.mjs).
// ORT also wants the mask's last two dims to be exactly (Tq, Tk): only the
// leading dims broadcast (ort_peer.mjs widens other masks before feeding them).

export const DataType = { FLOAT: 1, BOOL: 9 };
const AttrType = { FLOAT: 1, INT: 2 };
const WIRE_VARINT = 0, WIRE_LEN = 2, WIRE_I32 = 5;

// ---------- wire-format helpers ----------

// Unsigned varint for a non-negative integer (safe up to 2^53).
function varint(n) {
  if (!Number.isInteger(n) || n < 0) throw new Error(`varint: bad value ${n}`);
  const out = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Uint8Array.from(out);
}

function concat(parts) {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let off = 0;
  for (const p of parts) { out.set(p, off); off += p.length; }
  return out;
}

const key = (field, wire) => varint(field * 8 + wire);
const fieldVarint = (field, n) => concat([key(field, WIRE_VARINT), varint(n)]);
const fieldBytes = (field, bytes) => concat([key(field, WIRE_LEN), varint(bytes.length), bytes]);
const fieldString = (field, s) => fieldBytes(field, new TextEncoder().encode(s));
function fieldFloat(field, x) {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setFloat32(0, x, true);
  return concat([key(field, WIRE_I32), b]);
}

// ---------- messages ----------

// raw: Float32Array (FLOAT) or Uint8Array of 0/1 (BOOL), row-major, little-endian.
export function tensorProto({ name, dims, dataType = DataType.FLOAT, raw }) {
  const bytes = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  return concat([
    ...dims.map((d) => fieldVarint(1, d)),
    fieldVarint(2, dataType),
    fieldString(8, name),
    fieldBytes(9, bytes),
  ]);
}

export const attrInt = (name, i) =>
  concat([fieldString(1, name), fieldVarint(20, AttrType.INT), fieldVarint(3, i)]);
export const attrFloat = (name, f) =>
  concat([fieldString(1, name), fieldVarint(20, AttrType.FLOAT), fieldFloat(2, f)]);

export function nodeProto({ opType, inputs, outputs, name = '', domain = '', attributes = [] }) {
  return concat([
    ...inputs.map((s) => fieldString(1, s)),
    ...outputs.map((s) => fieldString(2, s)),
    fieldString(3, name || opType),
    fieldString(4, opType),
    ...attributes.map((a) => fieldBytes(5, a)),
    fieldString(7, domain),
  ]);
}

// A graph input/output: name + tensor type with fixed dims.
export function valueInfoProto(name, elemType, dims) {
  const dimMsgs = dims.map((d) => fieldBytes(1, fieldVarint(1, d)));  // Dimension{dim_value}
  const shape = concat(dimMsgs);                                       // TensorShapeProto
  const tensorType = concat([fieldVarint(1, elemType), fieldBytes(2, shape)]);
  const typeProto = fieldBytes(1, tensorType);                         // TypeProto{tensor_type}
  return concat([fieldString(1, name), fieldBytes(2, typeProto)]);
}

export function graphProto({ name, nodes, initializers = [], inputs, outputs }) {
  return concat([
    ...nodes.map((n) => fieldBytes(1, n)),
    fieldString(2, name),
    ...initializers.map((t) => fieldBytes(5, t)),
    ...inputs.map((v) => fieldBytes(11, v)),
    ...outputs.map((v) => fieldBytes(12, v)),
  ]);
}

// IR version 11 goes with opset 23 (ONNX 1.18).
export function modelProto({ graph, opset = 23, irVersion = 11, producer = 'attention-lab-bench' }) {
  const opsetImport = concat([fieldString(1, ''), fieldVarint(2, opset)]);
  return concat([
    fieldVarint(1, irVersion),
    fieldString(2, producer),
    fieldBytes(7, graph),
    fieldBytes(8, opsetImport),
  ]);
}

// ---------- the two models used by tests and bench ----------

// One Attention node on 4D tensors: Q (B,H,Tq,dk), K (B,H,Tk,dk), V (B,H,Tk,dv) -> Y (B,H,Tq,dv).
// maskShape: optional shape of a boolean attn_mask input (e.g. [Tq,Tk] or [B,1,Tq,Tk]).
export function buildSdpaModel({ B, H, Tq, Tk, dk, dv = dk, maskShape = null, causal = false, scale }) {
  const F = DataType.FLOAT;
  const inputs = [
    valueInfoProto('Q', F, [B, H, Tq, dk]),
    valueInfoProto('K', F, [B, H, Tk, dk]),
    valueInfoProto('V', F, [B, H, Tk, dv]),
  ];
  const nodeInputs = ['Q', 'K', 'V'];
  if (maskShape) {
    inputs.push(valueInfoProto('attn_mask', DataType.BOOL, maskShape));
    nodeInputs.push('attn_mask');
  }
  const attributes = [];
  if (causal) attributes.push(attrInt('is_causal', 1));
  if (scale !== undefined) attributes.push(attrFloat('scale', scale));
  const node = nodeProto({ opType: 'Attention', inputs: nodeInputs, outputs: ['Y'], attributes });
  const graph = graphProto({
    name: 'sdpa',
    nodes: [node],
    inputs,
    outputs: [valueInfoProto('Y', F, [B, H, Tq, dv])],
  });
  return modelProto({ graph });
}

// Multi-head self-attention block on X (B,T,dModel):
//   Q = X·Wq + bq, K = X·Wk + bk, V = X·Wv + bv   (MatMul + Add, W in (in,out) layout)
//   A = Attention(Q, K, V) with q_num_heads = kv_num_heads = numHeads (3D inputs)
//   out = A·Wo + bo
// weights: { q, k, v, o }, each { w: Float32Array (dModel*dModel, (in,out) row-major), b?: Float32Array (dModel) }.
export function buildMhaModel({ B, T, dModel, numHeads, weights, causal = false }) {
  const F = DataType.FLOAT;
  const nodes = [];
  const initializers = [];
  // y = x·W (+ b): emits MatMul (+ Add) and returns the output name.
  const linear = (prefix, x, { w, b }, outName = prefix) => {
    initializers.push(tensorProto({ name: `${prefix}_W`, dims: [dModel, dModel], raw: w }));
    const mm = b ? `${prefix}_mm` : outName;
    nodes.push(nodeProto({ opType: 'MatMul', name: `${prefix}_MatMul`, inputs: [x, `${prefix}_W`], outputs: [mm] }));
    if (b) {
      initializers.push(tensorProto({ name: `${prefix}_b`, dims: [dModel], raw: b }));
      nodes.push(nodeProto({ opType: 'Add', name: `${prefix}_Add`, inputs: [mm, `${prefix}_b`], outputs: [outName] }));
    }
    return outName;
  };
  const q = linear('q', 'X', weights.q);
  const k = linear('k', 'X', weights.k);
  const v = linear('v', 'X', weights.v);
  const attributes = [attrInt('q_num_heads', numHeads), attrInt('kv_num_heads', numHeads)];
  if (causal) attributes.push(attrInt('is_causal', 1));
  nodes.push(nodeProto({ opType: 'Attention', inputs: [q, k, v], outputs: ['attn'], attributes }));
  linear('o', 'attn', weights.o, 'Y');
  const graph = graphProto({
    name: 'mha',
    nodes,
    initializers,
    inputs: [valueInfoProto('X', F, [B, T, dModel])],
    outputs: [valueInfoProto('Y', F, [B, T, dModel])],
  });
  return modelProto({ graph });
}
