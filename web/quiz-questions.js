/**
 * quiz-questions.js: how each of the lesson's eight quiz questions is
 * answered and checked. The question text and the model answer are the quiz
 * section's markup (web/sections/quiz.js, <li data-question="id">); this file
 * holds the answer forms, data only, with no DOM:
 *
 *   choice   pick one; every wrong choice is a common mistake and says why
 *            it is wrong (`why`); the right one says why it is right.
 *   grid     mark cells of a T × T grid (queries × keys); the core decides
 *            which cells are right: `expected(lab)` asks it (a causal run on
 *            equal scores: a cell is blocked exactly when its weight is 0).
 *   number   a whole number; `expected(lab)` asks the core's module.
 *
 * Answers travel as short text (progress.js keeps them): a choice id, a
 * string of T × T '0'/'1' in row order, or the digits of a number. `valid`
 * says whether a text is a well-formed answer to that question.
 */

const choice = (id, text, why, right = false) => ({ id, text, why, right });

/** T × T zeros, for a causal run whose weights show the visibility rule of the core. */
const zeros = (T) => Array.from({ length: T }, () => [0, 0]);

export const QUESTIONS = Object.freeze([
  {
    id: 'scale',
    kind: 'choice',
    choices: [
      choice('a', 'A dot product of d_k unit-variance terms spreads like √d_k; dividing by √d_k brings the spread back to about 1.',
        'Each product adds about 1 to the variance, so the sum’s variance is about d_k and its spread √d_k. Dividing by √d_k undoes exactly that.', true),
      choice('b', 'To average over the sequence: longer sequences give larger scores.',
        'The divisor is the width of a key (d_k), not the number of keys. A score compares one query with one key, whatever the sequence length.'),
      choice('c', 'Dividing by d_k would be more exact, √d_k is a cheaper approximation.',
        'Dividing by d_k shrinks the spread to about 1/√d_k, so for wide keys every row of weights tends to uniform. √d_k is the right amount, not an approximation.'),
      choice('d', 'So that each row of weights adds up to 1.',
        'Softmax makes the rows add up to 1 whatever the scale. The division only controls how peaked the softmax is.'),
    ],
  },
  {
    id: 'softmax-axis',
    kind: 'choice',
    choices: [
      choice('a', 'Over T_q (the queries), so that each key shares itself out.',
        'Then the columns add up to 1: each key says how it spreads over the queries. A query needs shares over the keys to blend their values.'),
      choice('b', 'Over the whole T_q × T_k map at once.',
        'Then all the weights of a head add up to 1 together, and one query’s shares no longer add up to 1: its output would shrink as the sequence grows.'),
      choice('c', 'Over T_k, the last axis: each query gets shares over the keys.',
        'Each query, in each sequence and head, needs a set of shares over the keys, because those shares weight the values next.', true),
      choice('d', 'Over H, so that the heads compete for each pair.',
        'Heads are independent: each runs its own softmax. Normalising across heads would tie together heads that should specialise.'),
    ],
  },
  {
    id: 'causal',
    kind: 'grid',
    T: 5,
    // A causal run of the core on equal scores (all inputs zero): blocked exactly where the weight is 0.
    expected(lab) {
      const T = this.T;
      const { weights } = lab.sdpa(zeros(T), zeros(T), zeros(T), { causal: true });
      return Array.from(weights.data, (w) => (w === 0 ? '1' : '0')).join('');
    },
  },
  {
    id: 'self-cross',
    kind: 'choice',
    choices: [
      choice('a', 'Self: Q, K and V from one sequence. Cross: Q from the target (decoder), K and V from the source (encoder).',
        'The formula is the same; only the origin of the keys and values changes.', true),
      choice('b', 'Cross: K from the target (decoder), Q and V from the source (encoder).',
        'Keys and values must come from the same sequence: a key says where to look and its value what is found there. The queries ask, so they come from the target.'),
      choice('c', 'Cross-attention uses a different formula, without the softmax.',
        'The formula is identical, softmax included. Only where K and V come from differs.'),
      choice('d', 'Self-attention needs a causal mask; cross-attention never uses a mask.',
        'Self-attention in an encoder has no causal mask, and cross-attention still masks the source’s padding.'),
    ],
  },
  {
    id: 'head-width',
    kind: 'number',
    dModel: 512,
    numHeads: 16,
    // The core's multi-head module knows its own head width.
    expected(lab) {
      const module = lab.createMultiHeadAttention({ dModel: this.dModel, numHeads: this.numHeads });
      try {
        return String(module.headDim);
      } finally {
        module.free();
      }
    },
    hints: {
      64: 'That is the width with 8 heads. Doubling the heads shares the same 512 among twice as many.',
      512: 'Each head does not get a full copy of the model width; the width is split among the heads.',
      1024: 'More heads do not make each head wider: the 512 numbers are shared out.',
      8192: 'That is 512 × 16. The width is divided among the heads, not multiplied.',
    },
  },
  {
    id: 'maps',
    kind: 'choice',
    choices: [
      choice('a', 'Which input tokens caused the prediction.',
        'A map shows one head’s blend at one layer. Later heads, MLPs, residual paths and normalisation can all change the signal, so it is not a cause.'),
      choice('b', 'How one head at one layer blended the values; useful for checking masks and row sums, not a proof of cause.',
        'It is an honest record of that blend, and a good place to check masks and row sums. Claims about cause need ablations or interventions.', true),
      choice('c', 'Nothing: attention maps are random.',
        'They are computed exactly from the scores; they are just not an explanation of the whole model.'),
      choice('d', 'How important each token is for the whole model.',
        'One head’s weights say nothing about the other heads and layers, which may ignore or overturn them.'),
    ],
  },
  {
    id: 'checks',
    kind: 'choice',
    choices: [
      choice('a', 'The columns of weights add up to 1, and the weights are symmetric.',
        'Softmax normalises rows (over keys), not columns, and attention weights are not symmetric in general: query i may look at key j without j looking at i.'),
      choice('b', 'All scores are positive, and every weight is at most 1/T_k.',
        'Scores may be negative, and a weight can be anything from 0 to 1: a peaked row puts almost everything on one key.'),
      choice('c', 'With dropout off, the weights add up to 1 over the last axis; and every blocked pair has weight exactly 0.',
        'The first holds for every softmax row, shape (B, H, T_q); the second catches masks applied too late or the wrong way round.', true),
      choice('d', 'The output equals V whenever the mask is causal.',
        'Only the first query’s output equals its own value (it sees one key); every later row is a blend.'),
    ],
  },
  {
    id: 'mask-flip',
    kind: 'choice',
    choices: [
      choice('a', 'nn.MultiheadAttention reads True as “blocked”, while this lesson and scaled_dot_product_attention read True as “allowed”.',
        'Same rule, opposite spelling: convert once, blocked = ~allowed, where you cross from one API to the other.', true),
      choice('b', 'PyTorch masks are transposed: keys on the rows, queries on the columns.',
        'Both APIs put queries on the rows and keys on the columns. The difference is what True means.'),
      choice('c', 'Built-in modules apply the mask after the softmax, so it must be inverted to compensate.',
        'Both mask before the softmax (−∞ on blocked scores). Inverting a mask never compensates for masking at the wrong time.'),
      choice('d', 'It does not: a boolean mask means the same everywhere.',
        'A mask can need flipping: nn.MultiheadAttention and scaled_dot_product_attention read True in opposite ways, and passing one for the other hides the past and opens the future.'),
    ],
  },
]);

/** The question with this id, or undefined. */
export const questionById = (id) => QUESTIONS.find((q) => q.id === id);

/** Whether `text` is a well-formed answer to question `q`. */
export function validAnswer(q, text) {
  if (typeof text !== 'string') return false;
  if (q.kind === 'choice') return q.choices.some((c) => c.id === text);
  if (q.kind === 'grid') return text.length === q.T * q.T && /^[01]+$/.test(text);
  return /^[0-9]{1,6}$/.test(text);
}

/** The longest well-formed answer to `q` (for sizing the saved progress). */
export function longestAnswer(q) {
  if (q.kind === 'choice') return q.choices.reduce((a, c) => (c.id.length > a.length ? c.id : a), '');
  if (q.kind === 'grid') return '1'.repeat(q.T * q.T);
  return '9'.repeat(6);
}
