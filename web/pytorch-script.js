// The text of the "Copy as PyTorch", "Copy as NumPy" and "Copy the shape
// check" scripts of the lesson's PyTorch section, and the shapes that `.T`
// and `transpose(-2, -1)` give. No DOM here, so that tests can build the
// scripts in Node.
//
// A script holds the learner's Q, K, V and allowed mask exactly as the core
// received them (float32), and the output and weights the page showed; when
// run, it computes attention with PyTorch's (or NumPy's) own functions and
// prints its numbers next to the page's, with the largest difference.

/**
 * The shortest decimal text that reads back as the same float32: "0.1",
 * "-2.5", "1e-7". Plain digits, never grouped; valid in Python and JSON.
 */
export function float32Text(x) {
  const f = Math.fround(x);
  if (!Number.isFinite(f)) throw new RangeError(`float32Text: ${x} is not a finite number`);
  if (f === 0) return '0';
  for (let digits = 1; digits <= 9; digits++) {
    const text = f.toPrecision(digits);
    if (Math.fround(Number(text)) === f) return String(Number(text));
  }
  return String(f); // 9 significant digits always suffice; never reached
}

/** A Python list literal of a matrix (array of rows) of float32 numbers. */
function floatRows(rows) {
  return `[${rows.map((row) => `[${Array.from(row, float32Text).join(', ')}]`).join(', ')}]`;
}

/** A Python list literal of a matrix of booleans. */
function boolRows(rows) {
  return `[${rows.map((row) => `[${row.map((b) => (b ? 'True' : 'False')).join(', ')}]`).join(', ')}]`;
}

/** Rows of a flat row-major array. */
function rowsOf(flat, rows, cols) {
  return Array.from({ length: rows }, (_, i) => Array.from(flat).slice(i * cols, (i + 1) * cols));
}

/**
 * Check and unpack the example: q (Tq, dk), k (Tk, dk), v (Tk, dv) as
 * arrays of rows, allowed (Tq, Tk) booleans, and the core's output
 * (Tq * dv) and weights (Tq * Tk), flat.
 */
function example({ q, k, v, allowed, output, weights }) {
  const Tq = q.length, Tk = k.length, dk = q[0].length, dv = v[0].length;
  if (allowed.length !== Tq || allowed.some((row) => row.length !== Tk)) throw new RangeError('allowed must be (Tq, Tk)');
  if (output.length !== Tq * dv || weights.length !== Tq * Tk) throw new RangeError('output must be (Tq, dv) and weights (Tq, Tk)');
  // nn.MultiheadAttention's output has embed_dim = d_k columns: V is padded up to them.
  if (dv > dk) throw new RangeError('the script needs d_v <= d_k');
  return {
    Tq, Tk, dk, dv,
    q: floatRows(q), k: floatRows(k), v: floatRows(v), allowed: boolRows(allowed),
    output: floatRows(rowsOf(output, Tq, dv)), weights: floatRows(rowsOf(weights, Tq, Tk)),
  };
}

/**
 * The lines of both scripts that set q, k, v, the allowed mask and the
 * page's numbers, with the library's array constructor and float32 type.
 */
function inputLines(e, array, float32) {
  return `q = ${array}(${e.q}, dtype=${float32})  # (Tq=${e.Tq}, d_k=${e.dk})
k = ${array}(${e.k}, dtype=${float32})  # (Tk=${e.Tk}, d_k=${e.dk})
v = ${array}(${e.v}, dtype=${float32})  # (Tk=${e.Tk}, d_v=${e.dv})
allowed = ${array}(${e.allowed})  # (Tq, Tk): True = may attend

# What the page showed, computed by attention-lab's core
page_output = ${array}(${e.output}, dtype=${float32})
page_weights = ${array}(${e.weights}, dtype=${float32})`;
}

/** The PyTorch script (F.scaled_dot_product_attention, by hand, nn.MultiheadAttention). */
export function pytorchScript(input) {
  const e = example(input);
  return `# attention-lab: the page's example in PyTorch. Run: python3 example.py
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_printoptions(precision=6, sci_mode=False)

${inputLines(e, 'torch.tensor', 'torch.float32')}

# (B, H, T, d) = (1, 1, T, d): the layout these functions work on
qb, kb, vb = q[None, None], k[None, None], v[None, None]

# 1. F.scaled_dot_product_attention: a boolean attn_mask means True = may attend
out_bool = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=allowed)[0, 0]
# ... or a float attn_mask, added to the scores: 0 keeps a score, -inf removes it
additive = torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
out_additive = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=additive)[0, 0]

# 2. By hand: transpose(-2, -1) swaps the last two dims (kb.T would reverse all four)
scores = qb @ kb.transpose(-2, -1) / math.sqrt(${e.dk})
weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)[0, 0]

# 3. nn.MultiheadAttention: its masks mean True = NOT allowed. One head and
# identity projections make it plain attention (V padded with zero columns to d_k).
${e.dv === e.dk ? `mha = nn.MultiheadAttention(embed_dim=${e.dk}, num_heads=1, bias=False, batch_first=True)
with torch.no_grad():
    mha.in_proj_weight.copy_(torch.eye(${e.dk}).repeat(3, 1))  # q, k, v projections in one weight
    mha.out_proj.weight.copy_(torch.eye(${e.dk}))` : `mha = nn.MultiheadAttention(embed_dim=${e.dk}, num_heads=1, bias=False, vdim=${e.dv}, batch_first=True)
with torch.no_grad():
    mha.q_proj_weight.copy_(torch.eye(${e.dk}))
    mha.k_proj_weight.copy_(torch.eye(${e.dk}))
    mha.v_proj_weight.copy_(torch.eye(${e.dk}, ${e.dv}))
    mha.out_proj.weight.copy_(torch.eye(${e.dk}))`}
blocked = ~allowed  # (Tq, Tk): True = this query may NOT see this key
key_padding_mask = ~allowed.any(dim=0)[None]  # (B=1, Tk): True = no query may see this key
out_mha, weights_mha = mha(q[None], k[None], v[None], attn_mask=blocked, key_padding_mask=key_padding_mask)
out_mha, weights_mha = out_mha[0, :, :${e.dv}], weights_mha[0]

for name, mine, page in [
    ("output, F.scaled_dot_product_attention with a boolean mask", out_bool, page_output),
    ("output, F.scaled_dot_product_attention with an additive mask", out_additive, page_output),
    ("output, nn.MultiheadAttention", out_mha.detach(), page_output),
    ("weights, by hand", weights, page_weights),
    ("weights, nn.MultiheadAttention", weights_mha.detach(), page_weights),
]:
    print(name)
    print(mine)
    print("largest difference from the page:", (mine - page).abs().max().item())
`;
}

/** The NumPy script: the same attention written out with NumPy. */
export function numpyScript(input) {
  const e = example(input);
  return `# attention-lab: the page's example in NumPy. Run: python3 example.py
import numpy as np

np.set_printoptions(precision=6, suppress=True)

${inputLines(e, 'np.array', 'np.float32')}

# swapaxes(-2, -1) is transpose(-2, -1): on a batched k, k.T would reverse every axis
scores = q @ k.swapaxes(-2, -1) / np.sqrt(np.float32(${e.dk}))
scores = np.where(allowed, scores, np.float32(-np.inf))
weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
weights = weights / weights.sum(axis=-1, keepdims=True)
output = weights @ v

for name, mine, page in [("output", output, page_output), ("weights", weights, page_weights)]:
    print(name)
    print(mine)
    print("largest difference from the page:", float(np.abs(mine - page).max()))
`;
}

/**
 * What `.T`, `transpose(-2, -1)` and the two products do to tensors q and k
 * of shape (B, H, T, d): `.T` reverses every dimension, transpose(-2, -1)
 * swaps the last two. matmul treats all but the last two dimensions as a
 * batch, broadcast like NumPy, and needs q's last size to equal the other's
 * second-to-last. Returns shapes as arrays; a product that PyTorch refuses
 * has `error` (a sentence) instead of `shape`.
 */
export function transposeShapes([B, H, T, d]) {
  const k = [B, H, T, d];
  const dotT = [...k].reverse();
  const swapped = [B, H, d, T];
  return { k, dotT, swapped, withDotT: matmulShape(k, dotT), withSwapped: matmulShape(k, swapped) };
}

/** torch.matmul's result shape for 4-D a and b, or { error }. */
function matmulShape(a, b) {
  if (a[3] !== b[2]) {
    return { error: `q’s last size ${a[3]} must equal the second-to-last size ${b[2]} of the other: a shape error` };
  }
  const batch = [];
  for (let n = 0; n < 2; n++) {
    if (a[n] !== b[n] && a[n] !== 1 && b[n] !== 1) {
      return { error: `batch sizes ${a[n]} and ${b[n]} cannot be broadcast together: a shape error` };
    }
    batch.push(a[n] === 1 ? b[n] : a[n]);
  }
  return { shape: [...batch, a[2], b[3]] };
}

/** The sizes of the shape-check script: (B, H, T, d_head). */
export const CHECK_SIZES = Object.freeze([2, 3, 6, 4]);

/**
 * A PyTorch script that asserts the shapes of attention step by step and
 * compares a hand-written causal attention with F.scaled_dot_product_attention.
 * The shapes it expects are the core's, for q, k, v of CHECK_SIZES under a
 * causal mask.
 */
export function sdpaCheckScript(lab) {
  const [B, H, T, D] = CHECK_SIZES;
  const zeros = { data: new Float32Array(B * H * T * D), shape: [B, H, T, D] };
  const r = lab.sdpa(zeros, zeros, zeros, { causal: true });
  const py = (shape) => `(${shape.join(', ')})`;
  return `# attention-lab: shapes step by step, and hand-written attention against
# F.scaled_dot_product_attention. Run: python3 check_sdpa.py
import math
import torch
import torch.nn.functional as F

torch.manual_seed(0)
B, H, T, d_head = ${B}, ${H}, ${T}, ${D}
q = torch.randn(B, H, T, d_head)  # (B, H, T, d_head)
k = torch.randn(B, H, T, d_head)
v = torch.randn(B, H, T, d_head)
# (T, T), True = may attend; read as (1, 1, T, T) by every sequence and head
allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()

scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
assert tuple(scores.shape) == ${py(r.scores.shape)}, f"scores {tuple(scores.shape)}"
weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
assert tuple(weights.shape) == ${py(r.weights.shape)}, f"weights {tuple(weights.shape)}"
assert bool((weights[..., ~allowed] == 0).all()), "a blocked key got weight"
# The causal rule itself, not only the mask built above: no query reads a later key.
assert bool((weights.triu(diagonal=1) == 0).all()), "a query reads a later key"
assert torch.allclose(weights.sum(dim=-1), torch.ones(B, H, T)), "a row does not sum to 1"
by_hand = weights @ v
assert tuple(by_hand.shape) == ${py(r.output.shape)}, f"output {tuple(by_hand.shape)}"

fused = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=0.0)
assert fused.shape == by_hand.shape, f"{tuple(fused.shape)} vs {tuple(by_hand.shape)}"
print("shapes: scores and weights", tuple(weights.shape), "output", tuple(fused.shape))
print("largest difference:", (fused - by_hand).abs().max().item())
print("allclose(atol=1e-5, rtol=1e-4):", torch.allclose(fused, by_hand, atol=1e-5, rtol=1e-4))

# Break it on purpose, one change at a time, and see which check stops it:
#  - softmax(dim=-2) instead of softmax(dim=-1) normalises over the queries:
#    "a row does not sum to 1".
#  - .triu() instead of .tril() lets each query see the later keys (the mask
#    check still passes: it only compares the weights with the mask built):
#    "a query reads a later key".
`;
}
