// Multi-head attention on a toy one-hot embedding of token ids.
// Every number shown comes from the wasm core.

import { h, numberGrid, numberField, checkbox, radios, valueTable, statusLine, fmt, fmtShape, blockedFrom, setText } from '../lesson-ui.js';
import { codec } from '../lesson-state.js';
import { resizedKeeping, mhaCache, headHeatmaps, explainHeads } from './common.js';
import { slot, more } from './markup.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';
import { TRAINED, trainedModel } from './trained-weights.js';

const TOKEN_FILL = [3, 1, 4, 1, 5, 9, 2, 6];
/** A toy vocabulary for the axes: token id i reads as VOCAB[i mod 10]. */
export const VOCAB = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'saw', 'dog', 'ran'];
const word = (id) => VOCAB[id % VOCAB.length];

/** The toy embedding: token id i becomes a vector whose only non-zero entry, `size`, is in channel i mod d_model. */
export function oneHot(tokens, dModel, size) {
  const data = new Float32Array(tokens.length * dModel);
  tokens.forEach((id, t) => { data[t * dModel + (id % dModel)] = size; });
  return { data, shape: [1, tokens.length, dModel] };
}

/** A token the trained model does not know, in the words of the page (t1, its ten words). */
function explainTrained(err) {
  const m = /^tokens entry (\d+) is (\S+);/.exec(err.message);
  if (!m) return null;
  const { vocab } = TRAINED.options;
  return `The trained model knows ${vocab} words only, the ids 0 (“${word(0)}”) to ${vocab - 1} (“${word(vocab - 1)}”): t${Number(m[1]) + 1} = ${m[2]} is not one of them`;
}

/**
 * In words, one thing new weights changed in the maps: the first query (head
 * by head) whose strongest key moved, else the query whose largest weight
 * moved most. `before` and `weights` are (1, H, T, T) as the core returned
 * them; `allowed` (T, T), 1 = visible, is the core's: a query that sees one
 * key only has no choice to report. Null when there is nothing to compare.
 */
function changedLook(before, weights, allowed) {
  const [, H, T] = weights.shape;
  if (!before || before.shape.join() !== weights.shape.join()) return null;
  // The strongest visible key of row r (head r / T, query r % T) of `data`.
  const strongest = (data, r) => {
    let top = -1;
    for (let j = 0; j < T; j++) {
      if (allowed[(r % T) * T + j] && (top < 0 || data[r * T + j] > data[r * T + top])) top = j;
    }
    return top;
  };
  let moved = null;
  for (let r = 0; r < H * T; r++) {
    if (allowed.subarray((r % T) * T, (r % T + 1) * T).reduce((n, a) => n + a, 0) < 2) continue;
    const [was, now] = [strongest(before.data, r), strongest(weights.data, r)];
    const shift = Math.abs(weights.data[r * T + now] - before.data[r * T + was]);
    if (was !== now) { moved = { r, was, now, shift: Infinity }; break; }
    if (!moved || shift > moved.shift) moved = { r, was, now, shift };
  }
  if (!moved) return null;
  // Heads, queries and keys are 1-based on the page, as the maps' t1, t2, ….
  const { r, was, now } = moved;
  const where = `in head ${Math.floor(r / T) + 1}, query t${(r % T) + 1}`;
  const weight = fmt(weights.data[r * T + now], 2);
  return was !== now ? `${where} now looks most at t${now + 1} (${weight}), no longer at t${was + 1}`
    : `${where} still looks most at t${now + 1}, now with ${weight} (was ${fmt(before.data[r * T + was], 2)})`;
}

export const multiHead = {
  id: 'multi-head',
  prefix: 'mha',
  title: 'Multi-head attention',
  body: `
<p>Several heads do not each get a full copy of the model width. The width is <em>split</em>: with d<sub>model</sub> = 512, going from 8 to 16 heads shrinks each head from 64 to 32 numbers. Each head has its own slice of the projections and its own softmax, so heads can specialise: in a trained model one head may follow position (the word just before), another which earlier name a word refers to, another a separator such as a full stop. Those are tendencies found after training, not roles anyone assigns, and a head need not have a clean one. The output projection then lets their results interact again. Splitting adds no parameters either: the four projections (query, key, value and output) each hold one d<sub>model</sub> × d<sub>model</sub> weight matrix, 4 · d<sub>model</sub>² weights in all (biases aside), however many heads share them. The line above the maps counts the weights the core’s module holds: change H and the count stays.</p>
<p>At the start d<sub>model</sub> = 32 and H = 4, with weights drawn from a seed; the line above the maps gives the sizes in use. As a toy embedding, token id <em>i</em> becomes a vector of zeros except for one entry, the embedding size <em>s</em>, in channel <em>i</em> mod d<sub>model</sub>. A larger <em>s</em> gives larger scores and sharper maps. The maps’ axes read each id as a word of a toy ten-word vocabulary (id 0 is “the”, id 1 “cat”, …, id 9 “ran”, then again from id 10). At the start, tokens 2 and 4 are both id 1 (“cat”), so without the causal mask their rows are identical in every head; with it, they differ.</p>
<p><strong>Random or trained.</strong> Random heads look at nothing in particular. Pick “trained” to load instead the first layer of a small model that the core trained, in a fraction of a second, to predict each word’s <em>previous</em> word (as in “Watch a head learn” below). Its heads then show a real pattern: each query after the first puts most of its weight one place back, a bright line just below the diagonal. The first query has no earlier position, so it can only look at itself.</p>
<div class="controls" data-slot="controls"></div>
<div class="inputs" data-slot="tokens"></div>
<div data-slot="status"></div>
<p><strong>The leak test, by hand.</strong> Tick “Causal”, then change the <em>last</em> token id. A causal model must not let any earlier position see it: the check below compares every output row with the one before your edit and names any that moved.</p>
<div data-slot="leak"></div>
<div data-slot="summary"></div>
<div class="result heads" data-slot="weights"></div>
<details class="more" data-disclosure="mha-output">
  <summary>Show the output (T × d<sub>model</sub>)</summary>
  <div data-slot="output"></div>
</details>
<p class="aside"><strong>Reading attention maps.</strong> A bright cell says that this head, at this layer, blended in a lot of that position’s value. That is handy for checking masks and row sums. It does not prove that the position caused the final prediction: other heads, later layers, MLPs and residual paths can change or override it. To claim an explanation, test it with ablations or other interventions.</p>
`,
  presets: {
    'multi-head': {
      title: 'Multi-head attention', result: 'mha.main', heads: ['mha', 'heads'], dModel: ['mha', 'dmodel'], seqLen: ['mha', 't'],
      blocks: [
        slot('controls', 'inputs', { cls: 'controls' }), slot('tokens', 'inputs', { cls: 'inputs' }), slot('status'),
        slot('leak', 'checks'), slot('summary'), slot('weights', 'weights', { cls: 'result heads' }),
        more('Show the output (T × d_model)', 'output', slot('output', 'output')),
      ],
    },
  },
  fields: [
    ['dmodel', codec.int(1, 64), () => 32],
    ['heads', codec.int(1, 16), () => 4],
    ['t', codec.int(1, 8), () => 5],
    ['tokens', codec.matrix(() => 1, (st) => st.t, { integer: true, min: 0, max: 9999 }),
      (st) => [Array.from({ length: st.t }, (_, j) => TOKEN_FILL[j % TOKEN_FILL.length])]],
    ['size', codec.num(0, 100), () => 8],
    ['causal', codec.bool(), () => false],
    ['seed', codec.int(0, 999999), () => 7],
    ['weights', codec.choice(['random', 'trained']), () => 'random'],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    this.mha?.free(); // mounted again (a new state): give back the old module
    this.mha = mhaCache();
    this.keptTokens = {}; // the tokens a smaller T cuts off, kept until T grows again
    this.trainedModule = null;
    if (st.weights === 'trained') this.fitTrained(st);
    const seedField = numberField({ label: 'Weight seed', name: 'mha-seed', value: st.seed, integer: true, min: 0, max: 999999, size: 'sm',
      onValue: (v) => { st.seed = v; commit(); } });
    const draw = h('button', { type: 'button', class: 'action', 'data-action': 'mha-draw', text: 'Draw new weights' });
    draw.addEventListener('click', () => {
      st.seed = (st.seed + 1) % 1000000;
      seedField.setValue(st.seed);
      ctx.commit(this.prefix, { edited: 'draw' });
    });
    const dmodelField = numberField({ label: 'd_model', name: 'mha-dmodel', value: st.dmodel, integer: true, min: 1, max: 64, size: 'sm',
      onValue: (v) => { st.dmodel = v; commit(); } });
    const headsField = numberField({ label: 'Heads H', name: 'mha-heads', value: st.heads, integer: true, min: 1, max: 16, size: 'sm',
      onValue: (v) => { st.heads = v; commit(); } });
    const sizeField = numberField({ label: 'Embedding size s', name: 'mha-size', value: st.size, min: 0, max: 100, size: 'sm',
      onValue: (v) => { st.size = v; commit(); } });
    const causalBox = checkbox({ label: 'Causal: each position sees only itself and earlier ones', name: 'mha-causal', checked: st.causal,
      onToggle: (on) => { st.causal = on; commit(); } });
    this.note = h('p', { class: 'hint', 'data-out': 'mha-trained-note', hidden: true });
    // Trained weights fix what the trained model fixed: its sizes, its own embedding, the causal rule.
    this.locked = [dmodelField, headsField, sizeField, seedField, draw, causalBox].map((n) => n.matches('button') ? n : n.querySelector('input'));
    this.showFixed = () => {
      dmodelField.setValue(st.dmodel);
      headsField.setValue(st.heads);
      causalBox.querySelector('input').checked = st.causal;
    };
    ctx.slot(this.id, 'controls').replaceChildren(
      radios({ legend: 'Weights', name: 'mha-weights', value: st.weights,
        options: [['random', 'random, drawn from the seed'], ['trained', `trained to copy the previous word (${TRAINED.steps} steps)`]],
        onValue: (v) => {
          st.weights = v;
          if (v === 'trained') this.fitTrained(st);
          commit();
        } }),
      h('div', { class: 'controls-row' },
        dmodelField, headsField,
        numberField({ label: 'Positions T', name: 'mha-t', value: st.t, integer: true, min: 1, max: 8, size: 'sm',
          onValue: (v) => {
            st.t = v;
            st.tokens = resizedKeeping(this.keptTokens, st.tokens, 1, v, (i, j) => TOKEN_FILL[j % TOKEN_FILL.length]);
            this.drawTokens(ctx, st);
            commit();
          } }),
        sizeField, seedField, draw),
      causalBox, this.note,
    );
    this.said = announcer(ctx.node(this.id), 'multi-head');
    this.status = statusLine(this.said);
    // Training shows its step in a plain line; a screen reader hears only its
    // start and its end, from a live region of their own (trainingSaid).
    this.trainingLine = h('p', { class: 'readout', 'data-out': 'mha-training', hidden: true });
    this.trainingSaid = h('p', { class: 'sr-only', 'data-out': 'mha-training-said', role: 'status', 'aria-live': 'polite' });
    // Any other edit's result is said once the edits pause (the end of
    // training, which is no edit, is said by trainingSaid alone).
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.trainingLine, this.trainingSaid, this.said.node);
    this.drawn = false;
    this.drawTokens(ctx, st);
    this.showMode(st);
    const details = ctx.slot(this.id, 'output').closest('details');
    if (details && !details.outputHooked) {
      details.outputHooked = true;
      details.addEventListener('toggle', () => this.drawOutput(ctx));
    }
  },

  /**
   * Trained weights on: take the trained model's sizes and causal rule,
   * saying which of the learner's values they replace.
   */
  fitTrained(st) {
    const { dModel, heads } = TRAINED.options;
    const replaced = [['d_model', st.dmodel, dModel], ['H', st.heads, heads]].filter(([, was, now]) => was !== now);
    this.replaced = replaced.length ? ` (${replaced.map(([name, was, now]) => `${name} was ${was}, now ${now}`).join('; ')})` : '';
    Object.assign(st, { dmodel: dModel, heads, causal: true });
    this.showFixed?.();
  },

  /** The fields trained weights fix are disabled while they are on, and the note says why. */
  showMode(st) {
    const trained = st.weights === 'trained';
    for (const input of this.locked) input.disabled = trained;
    this.note.hidden = !trained;
    if (trained) {
      this.showFixed();
      const { dModel, heads, vocab, seqLen } = TRAINED.options;
      setText(this.note, `The trained model has d_model = ${dModel} and H = ${heads} heads, so these fields are fixed while its weights are on${this.replaced || ''}. `
        + `It was trained causally, so Causal stays on. It learned its own embedding (a vector per word plus one per position, up to ${seqLen}), so the embedding size s and the weight seed do not apply. `
        + `It knows ${vocab} words, the token ids 0 to ${vocab - 1}.`);
    }
  },

  drawTokens(ctx, st) {
    const grid = numberGrid({
      label: 'Token ids', name: 'mha-tokens', matrix: st.tokens, integer: true, min: 0, max: 9999,
      colLabel: (j) => `t${j + 1}`, onChange: () => ctx.commit(this.prefix, { edited: 'tokens' }),
    });
    // Linked highlighting: token j is position j, the query of row j and the key of column j in every map.
    grid.querySelectorAll('thead th').forEach((th, j) => { th.dataset.linkPos = j; });
    for (const input of grid.querySelectorAll('input[data-col]')) input.closest('td').dataset.linkPos = input.dataset.col;
    ctx.slot(this.id, 'tokens').replaceChildren(grid);
  },

  update(ctx, st, detail) {
    const trained = st.weights === 'trained';
    this.showMode(st);
    const hosts = ['summary', 'weights', 'output'].map((name) => ctx.slot(this.id, name));
    let run = null;
    // Training started as the page loads (trained weights in the link) is
    // not announced: the learner is reading another part of the page then.
    const edited = this.drawn;
    this.drawn = true;
    if (trained) {
      this.onTrainingStep ??= (r) => (r.done ? ctx.commit(this.prefix) : this.showTraining(r));
      run = trainedModel(ctx.lab, this.onTrainingStep);
      if (!run.done) {
        if (edited && this.trainingLine.hidden) {
          setText(this.trainingSaid, `Training the model in the core: ${TRAINED.steps} steps. The maps below appear when it is done.`);
        }
        this.status.clear(); // an error of the last input is not this one's
        this.showTraining(run);
        return;
      }
    }
    if (!this.trainingLine.hidden) {
      this.trainingLine.hidden = true;
      if (trained && this.trainingSaid.textContent) setText(this.trainingSaid, 'The model is trained: the maps below show its heads.');
    }
    // Before the first valid result there is nothing to keep: no "Last valid
    // result" boxes, and the message says only why the input is refused.
    const kept = this.shownOutput ? hosts : [];
    const explain = (err) => {
      const text = trained ? explainTrained(err) : explainHeads(err, st.dmodel, st.heads);
      return text && (kept.length ? text : `${text}.`);
    };
    // From a link, a d_model the heads do not split marks both its fields.
    const fields = (err) => (err.code === 'HEADS_DO_NOT_DIVIDE'
      ? ['mha-dmodel', 'mha-heads'].map((name) => ctx.node(this.id).querySelector(`input[data-field="${name}"]`)) : null);
    const res = ctx.core(this.status, () => (trained ? this.forwardTrained(ctx, st, run) : this.forwardRandom(ctx, st)), kept,
      { explain, keepNote: kept.length > 0, fields });
    if (!res) return;
    ctx.publish(`${this.prefix}.main`, res);
    const [, H, T] = res.weights.shape;
    const C = res.output.shape[2];
    this.drawSummary(ctx, { C, H, res, trained });
    const weightsHost = ctx.slot(this.id, 'weights');
    if (weightsHost.dataset.weights !== st.weights) weightsHost.dataset.weights = st.weights;
    const allowed = st.causal ? ctx.lab.allowedPairs([T, T], { causal: true }) : null;
    headHeatmaps(weightsHost, {
      weights: res.weights, name: 'mha-weights',
      blocked: allowed ? blockedFrom(allowed) : null,
      queryLabel: (i) => `t${i + 1} ${word(st.tokens[0][i])}`, keyLabel: (j) => `t${j + 1} ${word(st.tokens[0][j])}`, link: true,
    });
    this.leakCheck(ctx, st, res.output);
    this.shownOutput = res.output;
    this.drawOutput(ctx);
    const before = this.shownWeights;
    this.shownWeights = res.weights;
    if (!isEdit(detail)) return;
    // New weights are said by their seed and one look they changed.
    if (detail.edited === 'draw') {
      const look = changedLook(before, res.weights, (allowed ?? ctx.lab.allowedPairs([T, T], { causal: false })).data);
      this.said.say(`New weights from seed ${st.seed}${look ? `: ${look}` : ''}.`);
      return;
    }
    // A token's edit is said as the leak test's line; any other as the sizes.
    const leak = detail.edited === 'tokens' ? ctx.slot(this.id, 'leak').textContent : '';
    const { lead, dhead, wshape, oshape } = this.summary;
    this.said.say(leak || `${lead.textContent}${dhead.textContent}. Weights ${wshape.textContent}, output ${oshape.textContent}.`);
  },

  /** Random weights from the seed, on the toy one-hot embedding. */
  forwardRandom(ctx, st) {
    const mha = this.mha(ctx.lab, { dModel: st.dmodel, numHeads: st.heads, seed: st.seed });
    this.module = mha;
    return mha.forward(oneHot(st.tokens[0], st.dmodel, st.size), undefined, { causal: st.causal });
  },

  /** The trained layer, on the trained model's own embedding of the tokens (computed by the core). */
  forwardTrained(ctx, st, run) {
    const { dModel, heads } = TRAINED.options;
    const mha = this.mha(ctx.lab, { dModel, numHeads: heads, bias: false });
    if (this.trainedModule !== mha) {
      mha.setWeights(run.weights);
      this.trainedModule = mha;
    }
    this.module = mha;
    return mha.forward(run.trainer.layerInput(0, st.tokens[0]), undefined, { causal: true });
  },

  /** While the model trains, the maps keep what they show and a plain line (not read out) says how far it got. */
  showTraining(run) {
    setText(this.trainingLine, `Training the model in the core: step ${run.step} of ${TRAINED.steps}. The maps below appear when it is done.`);
    this.trainingLine.hidden = false;
  },

  /** The sizes line, written in place. */
  drawSummary(ctx, { C, H, res, trained }) {
    const host = ctx.slot(this.id, 'summary');
    if (!this.summary || !host.contains(this.summary.node)) {
      const part = (name, tag) => h(tag, { 'data-out': name });
      this.summary = { dhead: part('mha-dhead', 'strong'), wshape: part('mha-wshape', 'code'), oshape: part('mha-oshape', 'code'), lead: h('span'), tail: h('span'),
        params: part('mha-params', 'strong'), paramsTail: h('span') };
      const { dhead, wshape, oshape, lead, tail, params, paramsTail } = this.summary;
      this.summary.node = h('p', { class: 'readout' }, lead, dhead, '. Weights ', wshape, ', output ', oshape, '.',
        ' The four projections hold ', params, paramsTail, tail);
      host.replaceChildren(this.summary.node);
    }
    const { dhead, wshape, oshape, lead, tail } = this.summary;
    setText(lead, `d_model = ${C} split over ${H} ${H === 1 ? 'head' : 'heads'} gives d_head = `);
    setText(dhead, String(this.module.headDim));
    setText(wshape, fmtShape(res.weights.shape));
    setText(oshape, fmtShape(res.output.shape));
    // Counted in the arrays the core's module holds, not from the formula;
    // once per module (an edit of the tokens keeps the module and its count).
    if (this.summary.counted !== this.module) {
      const held = Object.values(this.module.getWeights());
      const weights = held.reduce((n, p) => n + p.weight.data.length, 0);
      const biases = held.reduce((n, p) => n + (p.bias ? p.bias.data.length : 0), 0);
      setText(this.summary.params, String(weights));
      setText(this.summary.paramsTail, ` weights (4 · ${C}², for any H)${biases ? ` and ${biases} biases` : ', no biases'}.`);
      this.summary.counted = this.module;
    }
    setText(tail, trained ? ` Trained weights: ${TRAINED.steps} steps of the ${TRAINED.options.task.replace('-', ' ')} task, seed ${TRAINED.options.seed}.` : '');
  },

  /**
   * Say what the latest edit of the tokens shows (same weights, same length).
   * After an edit of the last token only, name the earlier output rows the
   * core changed: none, if the causal mask keeps the future out. The rows are
   * compared as the core returned them. An edit of an earlier token is not
   * the test, and the line says so; any other change empties it, and a
   * redraw that changed nothing keeps it.
   */
  leakCheck(ctx, st, output) {
    const host = ctx.slot(this.id, 'leak');
    const now = { tokens: st.tokens[0].slice(), config: JSON.stringify([st.weights, st.dmodel, st.heads, st.size, st.seed, st.causal]), output };
    const before = this.leakBase;
    this.leakBase = now;
    const T = now.tokens.length;
    const comparable = before && before.config === now.config && before.tokens.length === T;
    const edited = comparable ? now.tokens.flatMap((id, t) => (id === before.tokens[t] ? [] : [t])) : [];
    if (comparable && edited.length === 0) return;
    if (edited.length !== 1) {
      host.replaceChildren();
      return;
    }
    const [pos] = edited;
    const last = `t${T}`;
    const change = `You changed t${pos + 1} (${before.tokens[pos]} → ${now.tokens[pos]})`;
    if (T === 1) {
      // One position: no earlier output exists, so the test has nothing to watch.
      host.replaceChildren(h('p', { class: 'readout', 'data-out': 'mha-leak' },
        `${change}, the only token: there is no earlier position whose output could move. Raise Positions T to 2 or more to run the leak test.`));
      return;
    }
    if (pos < T - 1) {
      const readers = st.causal ? `Under the causal mask t${pos + 1} and every later position read it` : 'Without the causal mask every position reads it';
      host.replaceChildren(h('p', { class: 'readout', 'data-out': 'mha-leak' },
        `${change}, not the last token ${last}. ${readers}, so their outputs may rightly move: the leak test needs an edit of ${last} only.`));
      return;
    }
    const C = output.shape[2];
    const moved = [];
    for (let t = 0; t < T - 1; t++) {
      for (let c = 0; c < C; c++) {
        if (!Object.is(before.output.data[t * C + c], output.data[t * C + c])) { moved.push(t); break; }
      }
    }
    const earlier = Array.from({ length: T - 1 }, (_, t) => `t${t + 1}`).join(', ');
    host.replaceChildren(h('p', { class: 'readout', 'data-out': 'mha-leak' }, moved.length === 0
      ? `✓ ${change}. The outputs of ${earlier} did not move: ${st.causal ? 'the causal mask keeps the future out' : 'yet without the causal mask they could have'}.`
      : `⚠ ${change}, and the outputs of ${moved.map((t) => `t${t + 1}`).join(', ')} moved: ${st.causal ? 'the future leaked into the past' : 'without the causal mask, every position reads the last one'}.`));
  },

  /** The output table (up to 8 × 64 numbers), drawn only while its disclosure is open. */
  drawOutput(ctx) {
    const host = ctx.slot(this.id, 'output');
    const details = host.closest('details');
    if (!this.shownOutput || (details && !details.open)) return;
    const [, T, C] = this.shownOutput.shape;
    valueTable(host, {
      name: 'mha-output', values: this.shownOutput.data, rows: T, cols: C, digits: 2, scrollable: true, link: 'q',
      rowLabel: (i) => `t${i + 1}`, colLabel: (j) => String(j + 1), caption: 'Output after the output projection (one row per position)',
    });
  },
};

export default multiHead;
