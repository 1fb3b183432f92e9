/**
 * quiz-questions.js: how each of the lesson's eight quiz questions is
 * answered and checked. The question text and the model answer are the quiz
 * section's markup (web/sections/quiz.js, <li data-question="id">); this file
 * holds the answer forms, data only, with no DOM:
 *
 *   choice   pick one; every wrong choice is a common mistake and says why
 *            it is wrong (`why`); the right one says why it is right. The
 *            page letters the choices a, b, c… in the order listed here; a
 *            choice's id is what a saved answer holds, so it stays with its
 *            idea wherever the choice is listed. The choices are written so
 *            that neither the longest text nor one position marks the
 *            right one.
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
      choice('a', 'A sum of d_k unit-variance products spreads like √d_k; dividing by √d_k brings the spread back to about 1.',
        'Each product adds about 1 to the variance, so the sum’s variance is about d_k and its spread √d_k. Dividing by √d_k undoes exactly that.', true),
      choice('b', 'To average over the sequence: a longer sequence gives larger scores, and the divisor makes up for its length.',
        'The divisor is the width of a key (d_k), not the number of keys. A score compares one query with one key, whatever the sequence length.'),
      choice('c', 'Dividing by d_k would be the exact correction; √d_k is a cheaper approximation that is close enough in practice.',
        'Dividing by d_k shrinks the spread to about 1/√d_k, so for wide keys every row of weights tends to uniform. √d_k is the right amount, not an approximation.'),
      choice('d', 'So that each row of weights adds up to 1 before the values are mixed, however wide the keys are.',
        'Softmax makes the rows add up to 1 whatever the scale. The division only controls how peaked the softmax is.'),
    ],
  },
  {
    id: 'softmax-axis',
    kind: 'choice',
    choices: [
      choice('a', 'Over T_q, the queries: each key shares itself out among the queries that read it.',
        'Then the columns add up to 1: each key says how it spreads over the queries. A query needs shares over the keys to blend their values.'),
      choice('b', 'Over the whole T_q × T_k map at once, so that all the weights of a head add up to 1.',
        'Then one query’s shares no longer add up to 1 on their own, and its output would shrink as the sequence grows.'),
      choice('c', 'Over T_k, the last axis: each query gets its own set of shares over the keys.',
        'Each query, in each sequence and head, needs a set of shares over the keys, because those shares weight the values next.', true),
      choice('d', 'Over H, the heads: for each (query, key) pair the heads compete for the weight.',
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
      choice('b', 'Self: Q, K and V from one sequence. Cross: K from the target (decoder), Q and V from the source (encoder).',
        'Keys and values must come from the same sequence: a key says where to look and its value what is found there. The queries ask, so they come from the target.'),
      choice('a', 'Self: Q, K and V from one sequence. Cross: Q from the target (decoder), K and V from the source (encoder).',
        'The formula is the same; only the origin of the keys and values changes.', true),
      choice('c', 'Both take Q, K and V from one sequence; cross-attention differs by its formula, which has no softmax.',
        'The formula is identical, softmax included. What differs is the source: in cross-attention, K and V come from another sequence than Q.'),
      choice('d', 'Self-attention always needs a causal mask over its sequence; cross-attention never uses any mask.',
        'An encoder’s self-attention has no causal mask, and cross-attention still masks the source’s padding. The masks do not tell them apart; the origin of K and V does.'),
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
      choice('a', 'Which input tokens caused the prediction: the output depends most on the key with the most weight.',
        'A map shows one head’s blend at one layer. Later heads, MLPs, residual paths and normalisation can all change the signal, so it is not a cause.'),
      choice('c', 'Nothing useful: attention maps are noise, patterns with no fixed relation to the tokens they are drawn for.',
        'They are computed exactly from the queries and keys, so they are no noise; they are just not an explanation of the whole model.'),
      choice('d', 'How much each token matters to the whole model’s prediction, read off one head’s weights at one layer.',
        'One head’s weights say nothing about the other heads and layers, which may ignore or overturn them.'),
      choice('b', 'How one head at one layer blended the values: good for checking masks and row sums, not proof of cause.',
        'It is an honest record of that blend, and a good place to check masks and row sums. Claims about cause need ablations or interventions.', true),
    ],
  },
  {
    id: 'checks',
    kind: 'choice',
    choices: [
      choice('a', 'The columns of weights add up to 1 over the queries, and the matrix of weights is symmetric in i and j.',
        'Softmax normalises rows (over keys), not columns, and attention weights are not symmetric in general: query i may look at key j without j looking at i.'),
      choice('c', 'With dropout off, the weights add up to 1 over the last axis, and each blocked pair has weight 0.',
        'The first holds for every softmax row, shape (B, H, T_q); the second catches masks applied too late or the wrong way round.', true),
      choice('b', 'All scores are positive, and no weight is above 1/T_k, so that no single key can take the whole row.',
        'Scores may be negative, and a weight can be anything from 0 to 1: a peaked row puts almost everything on one key.'),
      choice('d', 'With a causal mask, each row of the output equals the same row of V, since a query sees itself.',
        'Only the first query’s output equals its own value (it sees one key); every later row is a blend of several values.'),
    ],
  },
  {
    id: 'mask-flip',
    kind: 'choice',
    choices: [
      choice('b', 'PyTorch’s built-in masks are transposed: keys go on the rows and queries on the columns, so flip them.',
        'Both APIs put queries on the rows and keys on the columns. The difference is what True means.'),
      choice('c', 'The built-in modules apply the mask after the softmax, so it must be inverted to make up for the order.',
        'Both mask before the softmax (−∞ on blocked scores). Inverting a mask never compensates for masking at the wrong time.'),
      choice('a', 'nn.MultiheadAttention reads True as “blocked”; scaled_dot_product_attention and this lesson, “allowed”.',
        'Same rule, opposite spelling: convert once, blocked = ~allowed, where you cross from one API to the other.', true),
      choice('d', 'It never needs flipping: a boolean mask means the same in every PyTorch API, True being “allowed”.',
        'A mask can need flipping: nn.MultiheadAttention and scaled_dot_product_attention read True in opposite ways, and passing one for the other hides the past and opens the future.'),
    ],
  },
]);

/** The question with this id, or undefined. */
export const questionById = (id) => QUESTIONS.find((q) => q.id === id);

/** The letters the page gives a question's choices, in the order listed. */
export const CHOICE_LETTERS = 'abcdefgh';

/** The letter the page shows for choice `id` of question `q`. */
export const choiceLetter = (q, id) => CHOICE_LETTERS[q.choices.findIndex((c) => c.id === id)];

/**
 * The right answer to question `q`, as an answer's text (see the top of this
 * file): the right choice's id, or what the core `lab` answers for a grid or
 * a number. The page grades against it (quiz.js); a SCORM report names a
 * choice by its letter instead (scorm/launch.js).
 */
export function rightAnswer(q, lab) {
  return q.kind === 'choice' ? q.choices.find((c) => c.right).id : q.expected(lab);
}

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
