// The quiz: eight questions, each with an answer form (quiz.js builds them
// from quiz-questions.js into each <li data-question>) and a model answer to
// open. Which answers are open is kept in the URL hash with the page's other
// disclosures (see lesson-disclosures.js); the learner's answers live in the
// progress record (progress.js). The first paragraph is for reading alone;
// once the answers can be checked, quiz.js shows the second, which says how
// they score.

import { makeSection } from '../quiz.js';

export const quiz = {
  id: 'quiz',
  title: 'Quiz',
  /** A new section object that makes the questions answerable (see quiz.js). */
  create: () => ({ ...makeSection(), title: 'Quiz' }),
  body: `
<p data-quiz-intro>Answer in your head first, then open each answer.</p>
<p data-quiz-rules hidden>Answer each question, then press Check. Only your first attempt scores; you may try again for practice. Under each question, “Show the answer” opens the model answer whenever you want it, but opening it before your first attempt gives up that question’s point: your attempts at it are then practice.</p>
<ol class="quiz">
  <li data-question="scale">
    <p>Why are the scores divided by √d<sub>k</sub>, and not by d<sub>k</sub> or by a number the model learns?</p>
    <details class="answer" data-disclosure="quiz-answer-1"><summary>Show the answer<span class="sr-only"> to question 1</span></summary>
      <p>With unit-variance entries, a dot product adds up about d<sub>k</sub> random terms, so its variance grows like d<sub>k</sub> and its spread like √d<sub>k</sub>. Dividing by √d<sub>k</sub> brings the spread back to about 1 and keeps the softmax from saturating. Dividing by d<sub>k</sub> would shrink the scores too much as d<sub>k</sub> grows. Training could in principle learn its own factor, but starting from the fixed one means the first steps already see softmax rows that are neither flat nor one-hot.</p>
    </details>
  </li>
  <li data-question="softmax-axis">
    <p>Scores have shape (B, H, T<sub>q</sub>, T<sub>k</sub>). Along which axis does softmax normalise, and why?</p>
    <details class="answer" data-disclosure="quiz-answer-2"><summary>Show the answer<span class="sr-only"> to question 2</span></summary>
      <p>The last one, T<sub>k</sub>: the keys. Each query, in each sequence and head, needs a set of shares over the keys, because those shares weight the values next. Normalising over T<sub>q</sub> would describe how each key spreads itself over the queries, which is a different question.</p>
    </details>
  </li>
  <li data-question="causal">
    <p>A decoder uses a causal mask instead of removing the future tokens for each position. For 5 positions, which (query, key) pairs does the mask block? And why not just remove the future tokens?</p>
    <details class="answer" data-disclosure="quiz-answer-3"><summary>Show the answer<span class="sr-only"> to question 3</span></summary>
      <p>Query <em>i</em> may read keys 1…<em>i</em>, so every pair with the key after the query is blocked: the triangle above the diagonal (10 of the 25 pairs for 5 positions). Removing the future tokens instead would give each position a different number of keys, and the tensors would no longer be rectangular, which is what lets all positions be computed together in one batched matrix product. The mask keeps the (B, H, T, T) shape and enforces the same rule by setting forbidden scores to −∞ before the softmax.</p>
    </details>
  </li>
  <li data-question="self-cross">
    <p>How do self-attention and cross-attention differ in where Q, K and V come from?</p>
    <details class="answer" data-disclosure="quiz-answer-4"><summary>Show the answer<span class="sr-only"> to question 4</span></summary>
      <p>Self-attention projects Q, K and V from one and the same sequence: its positions read each other. Cross-attention takes its queries from one sequence, the target being produced (a decoder’s states), and its keys and values from another, the source it consults (an encoder’s states). Nothing else changes: the formula is the same.</p>
    </details>
  </li>
  <li data-question="head-width">
    <p>With d<sub>model</sub> fixed at 512, what happens to d<sub>head</sub> when the number of heads goes from 8 to 16?</p>
    <details class="answer" data-disclosure="quiz-answer-5"><summary>Show the answer<span class="sr-only"> to question 5</span></summary>
      <p>It halves, from 512 / 8 = 64 to 512 / 16 = 32. The model width is shared out among the heads; no head gets its own 512-wide copy unless you deliberately build a wider, non-standard layer.</p>
    </details>
  </li>
  <li data-question="maps">
    <p>What can an attention map honestly tell you, and what can it not?</p>
    <details class="answer" data-disclosure="quiz-answer-6"><summary>Show the answer<span class="sr-only"> to question 6</span></summary>
      <p>A map is an exact record of one head’s mixing at one layer: how much of each value went into each query’s output. That makes it a good place to check a mask, the row sums, or a head that plainly copies the previous token. It is not evidence that a token caused the prediction: other heads, later layers, MLPs, residual paths and normalisation can all weaken or overturn that mixture. To claim a cause, test it with an intervention: switch the head off (an ablation), or change the input and watch the output. Gradients can suggest where to look, but they do not test a cause.</p>
    </details>
  </li>
  <li data-question="checks">
    <p>Your scores have shape (B, H, T<sub>q</sub>, T<sub>k</sub>). What two properties of the weights would you test first?</p>
    <details class="answer" data-disclosure="quiz-answer-7"><summary>Show the answer<span class="sr-only"> to question 7</span></summary>
      <p>First, with dropout off, the weights summed over the last axis are all 1, a tensor of shape (B, H, T<sub>q</sub>). Second, when there is a mask, every blocked position has weight exactly 0 after the softmax; for causal self-attention that is the triangle above the diagonal.</p>
    </details>
  </li>
  <li data-question="mask-flip">
    <p>Moving from a hand-written attention function to PyTorch’s built-in modules, why might the same boolean mask need flipping?</p>
    <details class="answer" data-disclosure="quiz-answer-8"><summary>Show the answer<span class="sr-only"> to question 8</span></summary>
      <p>This lesson and <code>scaled_dot_product_attention</code> read True as “allowed”, while <code>nn.MultiheadAttention</code> reads True as “blocked”. The attention rule is the same; the convention is not. So an allowed mask usually becomes <code>blocked = ~allowed</code> before it is passed to <code>nn.MultiheadAttention</code>.</p>
    </details>
  </li>
</ol>
`,
};

export default quiz;
