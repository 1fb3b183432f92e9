/**
 * quiz.js: the lesson's quiz, answerable and checked.
 *
 *   <section id="quiz" data-module="quiz.js"> … <li data-question="scale"> …
 *   export const section = makeSection();   // a section (see sections/registry.js)
 *
 * Each <li data-question="id"> keeps its question text and its model answer
 * (<details class="answer">); this module puts an answer form between them,
 * built from quiz-questions.js: choices, a mask grid or a number. "Check"
 * marks the answer and explains it; a wrong choice says why it is wrong.
 * A learner may try again; the first attempt is what counts, and the form
 * says so. Opening the model answer before the first attempt gives up the
 * question's point (progress.reveal): every attempt there is then practice,
 * and the feedback says so. Grid and number answers are checked against the
 * core (a causal run, the multi-head module), never against maths redone here.
 *
 * Answers live in the page's progress record (progress.js): on load each
 * answered question shows the latest answer and its feedback. A progress
 * panel at the end of the section shows the score and offers a reset.
 */
import { h, maskGrid, refocusMaskCell, subscripted } from './lesson-ui.js';
import { questionById, validAnswer, rightAnswer, CHOICE_LETTERS } from './quiz-questions.js';
import { lessonProgress } from './progress.js';
import { progressPanel, watchSections } from './progress-panel.js';


class Question {
  #expected = null;

  constructor(q, number, item, lab, progress) {
    this.q = q;
    this.lab = lab;
    this.progress = progress;
    this.draft = q.kind === 'grid' ? '0'.repeat(q.T * q.T) : '';
    const id = `qz-${q.id}`;
    // The question's text describes the answer's controls (describe()).
    this.question = item.querySelector(':scope > p');
    if (this.question && !this.question.id) this.question.id = `${id}-question`;
    this.invalid = false;
    this.feedback = h('p', { id: `${id}-feedback`, class: 'qz-feedback', role: 'status', 'aria-live': 'polite' });
    this.first = h('p', { class: 'qz-first' });
    this.form = h('form', { class: 'qz-form', 'data-quiz': q.id, novalidate: true, 'aria-label': `Your answer to question ${number}` });
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.check();
    });
    let input;
    if (q.kind === 'choice') input = this.choices(id, number);
    else if (q.kind === 'grid') input = this.grid(number);
    else input = this.number(id);
    // Eight buttons read "Check": each one's name says which answer it checks.
    const checkButton = h('button', { type: 'submit', class: 'action', text: 'Check', 'aria-label': `Check your answer to question ${number}` });
    this.form.append(input, h('div', { class: 'qz-actions' }, checkButton, this.first), this.feedback);
    this.describe();
    this.answer = item.querySelector('details.answer');
    item.insertBefore(this.form, this.answer);
    // Opened by the learner or by a link (the page's open answers are in its URL).
    this.answer?.addEventListener('toggle', () => this.noteOpen());
    this.noteOpen();
  }

  /**
   * The right answer, asked of the core the first time it is needed (a
   * grade, a restored answer): one question builds a 512-wide module for it,
   * which a page that is only opened never needs.
   */
  get expected() {
    this.#expected ??= rightAnswer(this.q, this.lab);
    return this.#expected;
  }

  /** An open model answer, before the first attempt, makes the question practice. */
  noteOpen() {
    if (this.answer?.open) this.progress.reveal(this.q.id);
  }

  choices(id, number) {
    const fs = this.fieldset = h('fieldset', { class: 'qz-choices' }, h('legend', { class: 'qz-legend', text: `Choose one answer to question ${number}` }));
    this.inputs = this.q.choices.map((c, k) => {
      const input = h('input', { type: 'radio', name: id, value: c.id, id: `${id}-${c.id}` });
      input.addEventListener('change', () => { if (input.checked) this.draft = c.id; });
      fs.append(h('label', { class: 'qz-choice', for: input.id }, input, h('span', { class: 'qz-letter', text: `${CHOICE_LETTERS[k]}.` }),
        h('span', { class: 'qz-text' }, ...subscripted(c.text))));
      return input;
    });
    return fs;
  }

  grid(number) {
    this.gridHost = h('div', { class: 'qz-grid' });
    const wrap = h('div', { class: 'qz-grid-wrap' },
      h('p', { class: 'qz-legend', text: `Mark each blocked (query, key) pair for question ${number}: press a cell to mark it ✕ blocked, press again to clear it. Rows are queries, columns keys.` }),
      this.gridHost);
    this.drawGrid();
    return wrap;
  }

  drawGrid(focus = null) {
    const { T } = this.q;
    maskGrid(this.gridHost, {
      rows: T, cols: T, name: `quiz-${this.q.id}`, pressedMeans: 'blocked',
      label: `Your causal mask, ${T} positions (pressed = blocked)`,
      rowLabel: (i) => `query ${i + 1}`, colLabel: (j) => `key ${j + 1}`,
      get: (i, j) => this.draft[i * T + j] === '1',
      text: (on) => (on ? '✕' : '✓'),
      onToggle: (i, j) => {
        const at = i * T + j;
        this.draft = this.draft.slice(0, at) + (this.draft[at] === '1' ? '0' : '1') + this.draft.slice(at + 1);
        this.drawGrid([i, j]);
      },
    });
    this.describe(); // the grid's group may be new
    if (focus) refocusMaskCell(this.gridHost, ...focus);
  }

  number(id) {
    this.numberInput = h('input', { id: `${id}-n`, type: 'text', inputmode: 'numeric', autocomplete: 'off', size: '6', class: 'qz-number' });
    this.numberInput.addEventListener('input', () => { this.draft = this.numberInput.value.trim(); });
    return h('p', { class: 'qz-number-row' }, h('label', { for: this.numberInput.id }, ...subscripted('d_head = ')), this.numberInput);
  }

  /** Put an answer (text form) back into the controls. */
  show(answer) {
    this.draft = answer;
    if (this.q.kind === 'choice') for (const input of this.inputs) input.checked = input.value === answer;
    else if (this.q.kind === 'grid') this.drawGrid();
    else this.numberInput.value = answer;
  }

  check() {
    // A number is judged by its value: "032" is 32, and is kept as "32".
    const answer = this.q.kind === 'number' ? this.draft.replace(/^0+(?=[0-9])/, '') : this.draft;
    // A grid with no cell marked is not an answer yet, as no choice or an
    // empty number is not: Check then asks for one and scores nothing.
    const unmarked = this.q.kind === 'grid' && !answer.includes('1');
    if (unmarked || !validAnswer(this.q, answer)) {
      this.feedback.className = 'qz-feedback qz-invalid';
      this.feedback.textContent = {
        choice: 'Choose one of the answers first.',
        grid: 'Mark the blocked pairs first: press a cell to mark it ✕. No cell is marked yet.',
        number: 'Type a whole number (digits only), then check.',
      }[this.q.kind];
      this.markInvalid(true);
      return;
    }
    this.markInvalid(false);
    this.progress.answer(this.q.id, answer, answer === this.expected);
  }

  /**
   * Mark the answer invalid (or not): its controls are then described by the
   * feedback that says why, after the question. Only the number input is
   * marked aria-invalid: only a number can be typed wrong.
   */
  markInvalid(on) {
    this.invalid = on;
    this.describe();
    const input = this.numberInput;
    if (!input) return;
    if (on) input.setAttribute('aria-invalid', 'true');
    else if (input.hasAttribute('aria-invalid')) input.removeAttribute('aria-invalid');
  }

  /**
   * Link the answer's controls (the choices' fieldset, the grid's group or
   * the number input) to the question's text, and to the feedback while the
   * answer is invalid.
   */
  describe() {
    const control = this.fieldset || this.numberInput || this.gridHost?.querySelector('[role="group"]');
    if (!control) return;
    const ids = [this.question?.id, this.invalid ? this.feedback.id : null].filter(Boolean).join(' ');
    if (control.getAttribute('aria-describedby') !== ids) control.setAttribute('aria-describedby', ids);
  }

  /** Feedback for the saved answer, or nothing when unanswered. */
  render() {
    this.markInvalid(false); // what is shown next is a checked answer, or nothing
    const saved = this.progress.answerTo(this.q.id);
    const revealed = this.progress.revealed(this.q.id);
    if (!saved) {
      this.show(this.q.kind === 'grid' ? '0'.repeat(this.q.T * this.q.T) : '');
      this.feedback.className = 'qz-feedback';
      this.feedback.textContent = revealed ? 'The answer was opened before your first attempt: this question is practice now, with no point.' : '';
      this.first.textContent = '';
      return;
    }
    this.show(saved.latest);
    const right = saved.latest === this.expected;
    const practice = revealed ? ' The answer was open before your first attempt: practice, no point.' : '';
    this.feedback.className = `qz-feedback ${right ? 'qz-right' : 'qz-wrong'}`;
    this.feedback.replaceChildren(...subscripted(`${right ? 'Right. ' : 'Not quite. '}${this.explain(saved.latest, right)}${practice}${right ? '' : ' Try again, or open the answer below.'}`));
    // A revealed question scored nothing (saved.right is false): its first attempt is judged again only to be shown.
    this.first.textContent = revealed
      ? `First attempt: ${saved.first === this.expected ? 'right ✓' : 'wrong ✗'}, made after the answer was opened (practice, no point).`
      : `First attempt: ${saved.right ? 'right ✓ (1 point)' : 'wrong ✗ (no point)'}. Only the first attempt counts.`;
  }

  explain(answer, right) {
    const { q } = this;
    if (q.kind === 'choice') return q.choices.find((c) => c.id === answer).why;
    if (q.kind === 'number') {
      if (right) return `${q.dModel} numbers shared by ${q.numHeads} heads: each head gets ${this.expected}.`;
      return q.hints[answer] || `Each head gets d_model / H numbers; with d_model = ${q.dModel} and H = ${q.numHeads} that is not ${answer}.`;
    }
    // The grid: name the cells that differ from the core's causal run.
    if (right) return 'Those are exactly the pairs the core gives weight 0 in a causal run: every key after its query.';
    const cell = (k) => `query ${Math.floor(k / q.T) + 1}, key ${(k % q.T) + 1}`;
    const missed = [];
    const extra = [];
    for (let k = 0; k < answer.length; k++) {
      if (answer[k] === '0' && this.expected[k] === '1') missed.push(cell(k));
      if (answer[k] === '1' && this.expected[k] === '0') extra.push(cell(k));
    }
    const parts = [];
    if (extra.length) parts.push(`the core lets ${extra.slice(0, 3).join('; ')}${extra.length > 3 ? ` and ${extra.length - 3} more` : ''} through: a query may always read itself and earlier keys`);
    if (missed.length) parts.push(`${missed.slice(0, 3).join('; ')}${missed.length > 3 ? ` and ${missed.length - 3} more` : ''} should be blocked: those keys come after their query`);
    return `${parts.join('. Also, ')}.`.replace(/^./, (c) => c.toUpperCase());
  }
}

/**
 * Make the quiz live inside `section` (the <section id="quiz"> element).
 * Returns { questions } (Question objects by id).
 */
export function mountQuiz(section, lab, progress = lessonProgress()) {
  const items = [...section.querySelectorAll('li[data-question]')];
  const questions = new Map();
  items.forEach((item, k) => {
    const q = questionById(item.dataset.question);
    if (!q || questions.has(q.id)) return;
    questions.set(q.id, new Question(q, k + 1, item, lab, progress));
  });
  progress.include({ questions: [...questions.keys()] });
  const renderAll = () => { for (const question of questions.values()) question.render(); };
  progress.subscribe((event) => {
    if (event.type === 'question' || event.type === 'reveal') questions.get(event.question)?.render();
    else if (event.type === 'reset' || event.type === 'restore') {
      renderAll();
      // A model answer still open counts against the record now in place.
      for (const question of questions.values()) question.noteOpen();
    }
  });
  renderAll();
  // The intro for answers that are checked and scored replaces the one for reading alone.
  const intro = section.querySelector('[data-quiz-intro]');
  const rules = section.querySelector('[data-quiz-rules]');
  if (intro && rules) {
    intro.hidden = true;
    rules.hidden = false;
  }
  section.append(progressPanel(progress, { pageNotice: section.ownerDocument.getElementById('notice') }));
  watchSections(progress, section.ownerDocument.querySelectorAll('main > section[id]'));
  return { questions };
}

/** The section for the sections' interface (sections/registry.js): no state in the URL, answers live in the progress record. */
export function makeSection() {
  return {
    id: 'quiz',
    prefix: 'quiz',
    title: 'the quiz',
    fields: [],
    mount(ctx) {
      const node = ctx.node(this.id);
      if (!this.quiz || !node.contains(this.quiz.node)) {
        this.quiz = mountQuiz(node, ctx.lab);
        this.quiz.node = node.querySelector('form.qz-form');
      }
    },
    update() {},
  };
}
