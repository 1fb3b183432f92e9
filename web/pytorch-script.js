// The text of the "Copy as PyTorch", "Copy as NumPy", "Copy the shape
// check" and "Copy the multi-head module" scripts of the lesson's PyTorch
// section (and of the module script's NumPy twin), and the shapes that `.T`
// and `transpose(-2, -1)` give. No DOM here, so that tests can build the
// scripts in Node.
//
// A script holds the learner's Q, K, V and allowed mask exactly as the core
// received them (float32), and the output and weights the page showed; when
// run, it computes attention with PyTorch's (or NumPy's) own functions and
// prints its numbers next to the page's, with the largest difference.

import { oneHot } from './sections/multi-head.js';

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

/**
 * The words every hand-written attention in these scripts refuses a query
 * with no allowed key in (the core refuses it too, ALL_MASKED_ROW).
 */
const ALL_MASKED = 'a query row has no allowed key: its softmax would divide 0 by 0';

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
# A query that may see no key would get 0 / 0 from the softmax: refuse it.
if not allowed.any(dim=-1).all():
    raise ValueError("${ALL_MASKED}")
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

torch.manual_seed(123)
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
assert torch.allclose(fused, by_hand, atol=1e-5, rtol=1e-4), "fused and hand-written attention differ"
print("fused and hand-written agree: allclose(atol=1e-5, rtol=1e-4)")

# Break it on purpose, one change at a time, and see which check stops it:
#  - softmax(dim=-2) instead of softmax(dim=-1) normalises over the queries:
#    "a row does not sum to 1".
#  - .triu() instead of .tril() lets each query see the later keys (the mask
#    check still passes: it only compares the weights with the mask built):
#    "a query reads a later key".
`;
}

/**
 * The multi-head module script's example: fixed small sizes, so that the
 * script stays readable. The weights are the ones the core draws from `seed`
 * (the multi-head section's default seed), the input is that section's toy
 * one-hot embedding (token id i: the value `size` in channel i mod d_model),
 * and sequence 2 ends in the padding id.
 */
export const MHA_EXAMPLE = Object.freeze({
  dModel: 8, numHeads: 2, seed: 7, size: 8, padId: 0,
  tokens: Object.freeze([Object.freeze([3, 1, 4, 1]), Object.freeze([5, 9, 2, 0])]),
});

/** The projections, in the core's names and nn.Linear's. */
const MHA_LAYERS = [['qProj', 'q_proj'], ['kProj', 'k_proj'], ['vProj', 'v_proj'], ['outProj', 'out_proj']];

/**
 * Run MHA_EXAMPLE through the core: a module from the seed, its parameters
 * (getWeights: each weight (out, in), as nn.Linear keeps it), and its output
 * (B, T, d_model) and per-head weights (B, H, T, T) under a causal mask and
 * a key padding mask. The module is freed before returning.
 */
export function multiHeadExample(lab, options = {}) {
  const { dModel, numHeads, seed, size, padId, tokens } = MHA_EXAMPLE;
  const B = tokens.length, T = tokens[0].length;
  const x = new Float32Array(B * T * dModel);
  tokens.forEach((row, b) => x.set(oneHot(row, dModel, size).data, b * T * dModel));
  const real = tokens.map((row) => row.map((id) => id !== padId));
  const mha = lab.createMultiHeadAttention({ dModel, numHeads, seed });
  try {
    const params = mha.getWeights();
    const res = mha.forward({ data: x, shape: [B, T, dModel] }, {
      causal: true, keyPaddingMask: { data: Uint8Array.from(real.flat(), Number), shape: [B, T] }, bug: options.bug ?? null,
    });
    return { dModel, numHeads, B, T, tokens, x, real, params, output: res.output.data, weights: res.weights.data };
  } finally {
    mha.free();
  }
}

/**
 * A Python list literal of a flat row-major array of the given shape, one
 * innermost row per line, continuation lines indented by `indent` spaces
 * plus one per level (as NumPy prints arrays).
 */
function nestedLiteral(flat, shape, indent, depth = 0) {
  if (shape.length === 1) return `[${Array.from(flat, float32Text).join(', ')}]`;
  const step = flat.length / shape[0];
  const parts = Array.from({ length: shape[0] }, (_, i) => nestedLiteral(flat.slice(i * step, (i + 1) * step), shape.slice(1), indent, depth + 1));
  return `[${parts.join(`,${'\n'.repeat(shape.length - 1)}${' '.repeat(indent + depth + 1)}`)}]`;
}

/**
 * The lines of both multi-head scripts that set the parameters, the input,
 * the padding mask and the core's numbers, with the library's array
 * constructor and float32 type.
 */
function multiHeadInputLines(e, array, float32) {
  const { B, T, dModel: C, numHeads: H } = e;
  const tensor = (name, flat, shape, note) => {
    const head = `${name} = ${array}(`;
    return `${note ? `# ${note}\n` : ''}${head}${nestedLiteral(Array.from(flat), shape, head.length)}, dtype=${float32})`;
  };
  const params = MHA_LAYERS.map(([core, py]) => {
    const p = e.params[core];
    return `${tensor(`${py}_weight`, p.weight.data, [C, C])}\n${tensor(`${py}_bias`, p.bias.data, [C])}`;
  }).join('\n');
  return `B, T, d_model, num_heads = ${B}, ${T}, ${C}, ${H}

# The core's parameters. It keeps each projection as nn.Linear does: weight
# (out, in) = (d_model, d_model), so that y = x @ weight.T + bias; the weights
# copy straight into nn.Linear, no transpose.
${params}

# Token ids ${e.tokens.map((row) => `[${row.join(', ')}]`).join(' and ')}, in the one-hot embedding of the
# multi-head section: id i becomes ${float32Text(e.x.find((value) => value !== 0) ?? 0)} in channel i mod d_model, zeros elsewhere.
${tensor('x', e.x, [B, T, C], null)}  # (B, T, d_model)
# (B, T): True = a real token; False = padding, a key that no query may see
real = ${array}(${boolRows(e.real)})

# What the core computed on this input under a causal mask and that padding mask
${tensor('page_output', e.output, [B, T, C], null)}  # (B, T, d_model)
${tensor('page_weights', e.weights, [B, H, T, T], null)}  # (B, H, Tq, Tk): one map per head`;
}

/**
 * The multi-head module script: a MultiHeadAttention nn.Module written out
 * (projections, split_heads, scaled scores, a 2-D, 3-D or 4-D mask, the
 * all-masked-row guard, softmax, merge_heads, output projection), loaded
 * with the core's parameters of multiHeadExample and checked against the
 * core's output and per-head weights with torch.allclose.
 */
export function multiHeadScript(e) {
  return `# attention-lab: multi-head attention as a PyTorch module, checked against the
# page's core. Run: python3 multi_head.py
import math
import torch
import torch.nn as nn

torch.set_printoptions(precision=6, sci_mode=False)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention on x (B, T, d_model); returns the output
    (B, T, d_model) and the weights (B, H, T, T), one map per head."""

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        # Multi-head: the heads share the width d_model, each taking a slice of
        # d_head = d_model / num_heads channels, so the division must be exact.
        if d_model % num_heads != 0:
            raise ValueError(f"d_model = {d_model} cannot be split into {num_heads} heads")
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, d_model // num_heads
        # Four projections of d_model x d_model weights, however many heads there are
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        # Shapes: (B, T, d_model) -> (B, T, H, d_head) -> (B, H, T, d_head).
        # Channel c belongs to head c // d_head; the transpose brings the heads
        # before the tokens, so that each head's scores are one (T, T) matrix.
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_head).transpose(1, 2)

    def merge_heads(self, x):
        # Shapes: (B, H, T, d_head) -> (B, T, H, d_head) -> (B, T, d_model): the
        # heads side by side again. After the transpose the memory is no longer
        # in that order, so .contiguous() must come before .view.
        B, _, T, _ = x.shape
        return x.transpose(1, 2).contiguous().view(B, T, self.d_model)

    def forward(self, x, mask=None):
        q = self.split_heads(self.q_proj(x))  # (B, H, T, d_head)
        k = self.split_heads(self.k_proj(x))
        v = self.split_heads(self.v_proj(x))
        # Shapes: transpose(-2, -1) swaps only the last two dims (k.T would reverse all four)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, Tq, Tk)
        if mask is not None:
            # Masks: True = may attend. (Tq, Tk) is shared by every sequence and
            # head; (B, Tq, Tk) gets a head axis here (plain broadcasting would
            # match its B against H); (B or 1, H or 1, Tq, Tk) is taken as it is.
            if mask.dim() == 2:
                mask = mask[None, None]
            elif mask.dim() == 3:
                mask = mask[:, None]
            elif mask.dim() != 4:
                raise ValueError(f"mask must be 2-D, 3-D or 4-D, not {mask.dim()}-D")
            allowed = mask.to(device=scores.device, dtype=torch.bool).expand_as(scores)
            # A query that may see no key would get 0 / 0 from the softmax: refuse it.
            if not allowed.any(dim=-1).all():
                raise ValueError("${ALL_MASKED}")
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = scores.softmax(dim=-1)  # over the keys: each row sums to 1
        output = self.out_proj(self.merge_heads(weights @ v))  # (B, T, d_model)
        return output, weights


${multiHeadInputLines(e, 'torch.tensor', 'torch.float32')}

mha = MultiHeadAttention(d_model, num_heads)
with torch.no_grad():
    for layer, weight, bias in [(mha.q_proj, q_proj_weight, q_proj_bias), (mha.k_proj, k_proj_weight, k_proj_bias),
                                (mha.v_proj, v_proj_weight, v_proj_bias), (mha.out_proj, out_proj_weight, out_proj_bias)]:
        layer.weight.copy_(weight)
        layer.bias.copy_(bias)

# Masks: causal (T, T) and padding (B, T) combined into one (B, 1, T, T) mask
causal = torch.ones(T, T, dtype=torch.bool).tril()
mask = causal[None, None] & real[:, None, None, :]

with torch.no_grad():
    output, weights = mha(x, mask)
    output_3d, _ = mha(x, mask[:, 0])  # the same mask given as (B, Tq, Tk)

for name, mine, page in [("output", output, page_output), ("weights, per head", weights, page_weights),
                         ("output, mask given as (B, Tq, Tk)", output_3d, page_output)]:
    print(name)
    print(mine)
    print("largest difference from the page:", (mine - page).abs().max().item())
    assert torch.allclose(mine, page, atol=1e-5, rtol=1e-4), f"{name} differs from the page"

# The guard: a mask that leaves query 1 no key at all is refused.
try:
    mha(x, torch.zeros(T, T, dtype=torch.bool))
except ValueError as refusal:
    print("all-masked row refused:", refusal)
else:
    raise AssertionError("a query with no allowed key was not refused")
print("the module agrees with the page")
`;
}

/**
 * The NumPy twin of multiHeadScript: the same forward pass (projections,
 * split, scaled scores, mask, softmax, merge, output projection) with NumPy
 * only, on the same parameters and input, compared with the same numbers.
 */
export function multiHeadNumpyScript(e) {
  return `# attention-lab: the multi-head forward pass in NumPy, checked against the
# page's core. Run: python3 multi_head_numpy.py
import numpy as np

np.set_printoptions(precision=6, suppress=True)

${multiHeadInputLines(e, 'np.array', 'np.float32')}
d_head = d_model // num_heads


def linear(x, weight, bias):
    # nn.Linear's rule, with weight stored (out, in)
    return x @ weight.T + bias


def split_heads(x):
    # (B, T, d_model) -> (B, T, H, d_head) -> (B, H, T, d_head)
    B, T, _ = x.shape
    return x.reshape(B, T, num_heads, d_head).transpose(0, 2, 1, 3)


def merge_heads(x):
    # (B, H, T, d_head) -> (B, T, H, d_head) -> (B, T, d_model); NumPy's reshape
    # copies when it must, where PyTorch's view needs .contiguous() first
    B, _, T, _ = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, d_model)


# Masks: causal (T, T) and padding (B, T) combined into one (B, 1, T, T) mask
causal = np.tril(np.ones((T, T), dtype=bool))
mask = causal[None, None] & real[:, None, None, :]

q = split_heads(linear(x, q_proj_weight, q_proj_bias))  # (B, H, T, d_head)
k = split_heads(linear(x, k_proj_weight, k_proj_bias))
v = split_heads(linear(x, v_proj_weight, v_proj_bias))
scores = q @ k.swapaxes(-2, -1) / np.sqrt(np.float32(d_head))  # (B, H, Tq, Tk)
allowed = np.broadcast_to(mask, scores.shape)
if not allowed.any(axis=-1).all():
    raise ValueError("${ALL_MASKED}")
scores = np.where(allowed, scores, np.float32(-np.inf))
weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
weights = weights / weights.sum(axis=-1, keepdims=True)
output = linear(merge_heads(weights @ v), out_proj_weight, out_proj_bias)  # (B, T, d_model)

for name, mine, page in [("output", output, page_output), ("weights, per head", weights, page_weights)]:
    print(name)
    print(mine)
    print("largest difference from the page:", float(np.abs(mine - page).max()))
    assert np.allclose(mine, page, atol=1e-5, rtol=1e-4), f"{name} differs from the page"
print("NumPy agrees with the page")
`;
}
