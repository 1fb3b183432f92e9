/**
 * exercises.js: one break-it exercise per bug in BUGS.
 *
 * Each exercise is a run description for checks.js (kind, inputs, options,
 * bug) plus what a card shows: the mistake as a few lines of code-like
 * pseudocode (its comment on a line of its own above it, one statement a
 * line, so that a narrow screen scrolls code but never hides the comment),
 * the repair, the checks meant to catch it, and a prompt.
 * The inputs are small (4 tokens, width 4) and picked by hand so that the
 * bug shows: v is one-hot per token, so output column c is the weight on
 * key c times c + 1.
 */
import { BUGS } from './attention.js';
import { CHECKS } from './checks.js';

/**
 * The checks a learner may predict. "Matches the reference" compares with
 * the bug-free core, so every bug fails it: as a prediction it would be
 * right on every card without telling one mistake from another. It still
 * runs and is shown on every card.
 */
export const PREDICTION_CHECKS = Object.freeze(CHECKS.filter((c) => c.name !== 'matchesReference'));

/**
 * The predictions that a card scores with: the names of the prediction
 * checks that fail in `results` (runChecks with the card's bug on).
 */
export function caughtBy(results) {
  const failed = new Set(results.filter((r) => !r.passed).map((r) => r.name));
  return PREDICTION_CHECKS.filter((c) => failed.has(c.name)).map((c) => c.name);
}

/** A prediction (a check's name, or null) as the progress record keeps it: a letter, a for the first check, or '-'. */
export function predictionLetter(name) {
  return name ? String.fromCharCode(97 + CHECKS.findIndex((k) => k.name === name)) : '-';
}

/** The prediction a letter of the progress record stands for (predictionLetter's inverse): a check's name, or null for '-'. */
export function predictionName(letter) {
  return letter === '-' ? null : CHECKS[letter.charCodeAt(0) - 97].name;
}

const Q = [[1, 0, 1, 0], [0, 2, 0, 1], [1, 1, 0, 0], [0, 0, 2, 1]];
const K = [[1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 2], [2, 0, 1, 0]];
const V = [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 4]];
const INPUTS = Object.freeze({ q: Q, k: K, v: V });

/** Each token sees itself and the one before it: causal, but not a full triangle. */
const LOCAL_WINDOW = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]];
/** The last token is padding: key 4 must never be read. */
const LAST_IS_PADDING = [[1, 1, 1, 0]];
/** Query 3 is given no key at all. */
const ROW_3_EMPTY = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]];

/** The multi-head module of the head exercises: 2 heads of width 2, fixed seed. */
const MODULE = Object.freeze({ dModel: 4, numHeads: 2, seed: 7, bias: true });

const sdpa = (options) => ({ kind: 'sdpa', inputs: INPUTS, options });
const tiled = (options) => ({ kind: 'tiled', inputs: INPUTS, options });
const mha = (options) => ({ kind: 'mha', module: MODULE, inputs: { x: Q }, options });

/** The exercises, in BUGS order. */
export const EXERCISES = Object.freeze([
  {
    bug: 'softmax-over-queries',
    title: 'Softmax over the wrong axis',
    ...sdpa({}),
    setting: '4 tokens, no mask.',
    mistake: '# down each column: over queries\nweights = softmax(scores, dim=-2)',
    repair: '# along each row: over keys\nweights = softmax(scores, dim=-1)',
    catchers: ['rowSumsOne'],
    prompt: 'Softmax now normalises down each column, over the queries, instead of along each row. Which check turns red?',
  },
  {
    bug: 'mask-after-softmax',
    title: 'Masking after the softmax',
    ...sdpa({ causal: true }),
    setting: '4 tokens, causal.',
    mistake: 'weights = softmax(scores)\nweights[~allowed] = 0',
    repair: 'scores[~allowed] = -inf\nweights = softmax(scores)',
    catchers: ['rowSumsOne', 'noFutureLeak'],
    prompt: 'The future keys still sit in every denominator before their weights are wiped. Which check turns red?',
  },
  {
    bug: 'mask-output',
    title: 'Masking the output',
    ...sdpa({ causal: true }),
    setting: '4 tokens, causal; d_v = T_k = 4, so the mask fits the output’s shape.',
    mistake: 'out = softmax(scores) @ v\nout[~allowed] = 0',
    repair: 'scores[~allowed] = -inf\nout = softmax(scores) @ v',
    catchers: ['blockedWeightsZero', 'noFutureLeak'],
    prompt: 'Zeros appear where the mask says, but after the values were already mixed. Which check catches it?',
  },
  {
    bug: 'no-causal-mask',
    title: 'The causal mask is dropped',
    ...sdpa({ causal: true }),
    setting: '4 tokens, causal.',
    mistake: '# causal=True is ignored\nallowed = mask',
    repair: '# key j only if j <= i\nallowed = mask & tril(ones(T, T))',
    catchers: ['blockedWeightsZero', 'noFutureLeak'],
    prompt: 'Every query can now read every key. Which check turns red?',
  },
  {
    bug: 'causal-upper',
    title: 'The wrong triangle',
    ...sdpa({ causal: true }),
    setting: '4 tokens, causal.',
    mistake: '# keys j >= i\nallowed = mask & triu(ones(T, T))',
    repair: '# keys j <= i\nallowed = mask & tril(ones(T, T))',
    catchers: ['blockedWeightsZero', 'noFutureLeak'],
    prompt: 'The diagonal is still visible, but the triangle points the other way. Which check fails?',
  },
  {
    bug: 'inverted-mask',
    title: 'Allowed read as blocked',
    ...sdpa({ mask: LOCAL_WINDOW }),
    setting: '4 tokens; an allowed mask where each token sees itself and the token before it.',
    mistake: '# a blocked-mask API was handed an allowed mask\nscores[allowed] = -inf',
    repair: '# or convert once: blocked = ~allowed\nscores[~allowed] = -inf',
    catchers: ['diagonalAllowed', 'blockedWeightsZero'],
    prompt: 'Every 1 in the mask now hides a key and every 0 opens one. Which check fails?',
  },
  {
    bug: 'padding-on-queries',
    title: 'Padding on the wrong axis',
    ...sdpa({ mask: LAST_IS_PADDING }),
    setting: '4 tokens, the last one padding: key 4 must not be read.',
    mistake: '# (B, 1, T, 1): blanks the padded query row\nallowed = pad[:, None, :, None]',
    repair: '# (B, 1, 1, T): blocks the padded key column\nallowed = pad[:, None, None, :]',
    catchers: ['blockedWeightsZero', 'rowSumsOne'],
    prompt: 'The padded token loses its row, while its key stays readable. Which check fails?',
  },
  {
    bug: 'no-scale',
    title: 'No 1/√d_k',
    ...sdpa({}),
    setting: '4 tokens, no mask, d_k = 4.',
    mistake: 'scores = q @ k.transpose(-2, -1)',
    repair: 'scores = q @ k.transpose(-2, -1) / sqrt(dk)',
    catchers: ['scoresScaled'],
    prompt: 'The weights still sum to 1 and nothing is blocked. Which check can tell?',
  },
  {
    bug: 'scale-by-dk',
    title: 'Dividing by d_k',
    ...sdpa({}),
    setting: '4 tokens, no mask, d_k = 4.',
    mistake: 'scores = q @ k.transpose(-2, -1) / dk',
    repair: 'scores = q @ k.transpose(-2, -1) / sqrt(dk)',
    catchers: ['scoresScaled'],
    prompt: 'The scores shrink by another √d_k = 2. Which check notices?',
  },
  {
    bug: 'heads-without-transpose',
    title: 'Splitting heads without the transpose',
    ...mha({}),
    setting: 'Multi-head attention, d_model = 4, 2 heads of width 2, seed 7; 4 tokens, no mask.',
    mistake: 'q = x.reshape(B, H, T, D)',
    repair: 'q = x.reshape(B, T, H, D).transpose(1, 2)',
    catchers: ['permutationEquivariance'],
    prompt: 'Each head now holds pieces of other tokens. Every row still sums to 1: which check fails?',
  },
  {
    bug: 'merge-without-transpose',
    title: 'Merging heads without the transpose',
    ...mha({ causal: true }),
    setting: 'Multi-head attention, d_model = 4, 2 heads of width 2, seed 7; 4 tokens, causal.',
    mistake: 'out = heads.reshape(B, T, C)',
    repair: 'out = heads.transpose(1, 2).reshape(B, T, C)',
    catchers: ['noFutureLeak'],
    prompt: 'Inside each head the weights are perfect. Which check still finds the damage?',
  },
  {
    bug: 'no-all-masked-guard',
    title: 'No guard for an empty row',
    ...sdpa({ mask: ROW_3_EMPTY }),
    setting: '4 tokens; the mask gives query 3 no key at all.',
    mistake: '# no row check\nweights = softmax(scores.masked_fill(~allowed, -inf))',
    repair: '# refuse a query with no key first\nassert allowed.any(dim=-1).all()',
    catchers: ['finiteOutputs', 'allMaskedRowsRefused'],
    prompt: 'Softmax over a row of nothing but −∞ has no answer. Which check turns red?',
  },
  {
    bug: 'softmax-backward-no-rowsum',
    title: 'Softmax backward without the row sum',
    ...sdpa({}),
    backward: true,
    setting: '4 tokens, no mask; the loss is sum(output × a fixed pattern).',
    mistake: '# the row sum is missing\ndscores = weights * dweights',
    repair: 'dscores = weights * (dweights - (dweights * weights).sum(-1, keepdim=True))',
    catchers: ['gradientMatchesFiniteDifference'],
    prompt: 'The forward pass is untouched, so every output is right. Which check still finds the mistake?',
  },
  {
    bug: 'grad-through-blocked',
    title: 'Gradient through blocked edges',
    ...sdpa({ causal: true }),
    backward: true,
    setting: '4 tokens, causal; the loss is sum(output × a fixed pattern).',
    mistake: '# blocked pairs kept: 1 / Tk in dv and in dscores, which is never zeroed\np = where(allowed, weights, 1 / Tk)\ndv = p.transpose(-2, -1) @ dout\ndscores = softmax_backward(p, dout @ v.transpose(-2, -1))',
    repair: '# a blocked weight is a constant 0\np = weights\ndv = p.transpose(-2, -1) @ dout\ndscores = softmax_backward(p, dout @ v.transpose(-2, -1))\ndscores[~allowed] = 0',
    catchers: ['gradientMatchesFiniteDifference'],
    prompt: 'Key 4 is in the past of query 4 only, yet it now gets gradient from every query, and the blocked scores pass gradient on to q and k. Which check notices?',
  },
  {
    bug: 'no-rescale',
    title: 'Online softmax without the rescale',
    ...tiled({ blockKeys: 1 }),
    setting: '4 tokens, no mask; the tiled path, one key per tile.',
    mistake: '# m grew, old terms kept their old max\nl = l + p.sum()\nacc = acc + p @ v_tile',
    repair: 'f = exp(m_old - m_new)\nl = l * f + p.sum()\nacc = acc * f + p @ v_tile',
    catchers: ['permutationEquivariance'],
    prompt: 'Rows still sum to 1, yet a key that came before a larger score keeps its exponential against the old, smaller maximum and counts for too much, so the order of the keys now matters. Which check notices?',
  },
  {
    bug: 'stale-cache-offset',
    title: 'Decoding with a stale position offset',
    ...mha({ causal: true }),
    module: { ...MODULE, rope: true },
    decode: true,
    setting: 'Multi-head attention with RoPE, d_model = 4, 2 heads of width 2, seed 7; 4 tokens decoded one at a time through the KV cache, causal.',
    mistake: '# the query offset never advances\nq = rope(q, pos=0)\nk_cache.append(rope(k, pos=len(k_cache)))',
    repair: '# queries continue from the cache length\npos = len(k_cache)\nq = rope(q, pos)\nk_cache.append(rope(k, pos))',
    catchers: ['diagonalAllowed'],
    prompt: 'Each new query stands at position 0, which is token 1’s position, so the causal rule lets it see token 1 only. Which check notices?',
  },
].map((exercise) => Object.freeze(exercise)));

if (EXERCISES.map((e) => e.bug).join() !== BUGS.slice(1).join()) {
  throw new Error('exercises.js: EXERCISES must follow the order of BUGS in attention.js');
}

/** An exercise's title as the page quotes it in a sentence: “Forgot 1/√dk”. */
export function quotedTitle(bug) {
  return `“${EXERCISES.find((e) => e.bug === bug).title}”`;
}
