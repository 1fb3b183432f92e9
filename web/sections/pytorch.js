// The PyTorch APIs: the learner's Q, K, V and mask beside the equivalent
// F.scaled_dot_product_attention and nn.MultiheadAttention calls, each with
// its own mask convention; scripts to copy that print the same numbers; and
// what `.T` does to a batched tensor. Every number shown comes from the core
// (lab.sdpa); the scripts' text is built by pytorch-script.js.

import { h, numberGrid, numberField, maskGrid, valueTable, statusLine, fmtVec, fmtShape, setText } from '../lesson-ui.js';
import { announcer, EDITED, isEdit } from '../lesson-announce.js';
import { codec } from '../lesson-state.js';
import { keyLabel, queryLabel, dimLabel, emptyRows, causalBits } from './common.js';
import { EX_DEFAULTS } from './three-by-three.js';
import { pytorchScript, numpyScript, sdpaCheckScript, multiHeadScript, multiHeadNumpyScript, multiHeadExample, transposeShapes } from '../pytorch-script.js';

const T = 3, DK = 4, DV = 2; // the 3×3 example's sizes
const SIZE_MAX = 16; // B, H, T, d of the shapes table: small enough for the core to run on zeros
const copy = (m) => m.map((row) => row.slice());
const pyBool = (b) => (b ? 'True' : 'False');

/** `name = torch.tensor([[...],` with one row per line, the rows lined up. */
function tensorLines(name, rows) {
  const head = `${name} = torch.tensor([`;
  const pad = ' '.repeat(head.length);
  return rows.map((row, i) => `${i ? pad : head}[${row.join(', ')}]${i === rows.length - 1 ? '])' : ','}`);
}

export const pytorch = {
  id: 'pytorch',
  prefix: 'pt',
  title: 'The PyTorch APIs',
  body: `
<p>In PyTorch, the attention of this lesson is one call: <code>F.scaled_dot_product_attention(q, k, v, attn_mask=…)</code>. The multi-head layer <code>nn.MultiheadAttention</code> wraps the same computation in projections. Both take masks, and they read them differently: for <code>scaled_dot_product_attention</code> a boolean True means “may attend” (as on this page), and a float mask is added to the scores (0 keeps a score, −∞ removes it); for <code>nn.MultiheadAttention</code>, in both <code>attn_mask</code> and <code>key_padding_mask</code>, True means “may <em>not</em> attend”.</p>
<p>Two more habits of these calls. <code>scaled_dot_product_attention</code> takes <code>dropout_p</code>, and it drops weights whenever it is not 0, even at evaluation: pass <code>dropout_p=0.0</code> unless you are training. And instead of building a causal mask by hand you will often see <code>is_causal=True</code>, which applies the same rule as the causal switches on this page. On a GPU the call may pick a fused kernel (FlashAttention-2 or a memory-efficient one), and where none fits, or on other hardware, it falls back to a plain implementation of the same formula. A fused kernel orders its sums differently, so its numbers differ from a plain computation in the last digits: compare them with <code>torch.allclose</code> and a tolerance, never with <code>==</code>. If <code>allclose</code> fails by far on a tiny float32 example on the CPU, suspect your own code first: a mask of the wrong polarity (True meaning “blocked” where the call reads “may attend”) or a missing or doubled 1/√d<sub>k</sub>, long before PyTorch.</p>
<p>Here are the 3×3 example’s numbers with a mask you can edit (pressed = may attend). The two calls under them, with the masks spelled out in each convention, both return the output the core computes here; <code>nn.MultiheadAttention</code> returns the weights too.</p>
<div class="inputs" data-slot="inputs"></div>
<div data-slot="status"></div>
<div class="result two-col" data-slot="calls"></div>
<div class="result two-col"><div data-slot="output"></div><div data-slot="weights"></div></div>
<p>Four details of the multi-head layer and of masks:</p>
<ul class="pt-notes" data-notes="pt-api">
  <li><code>nn.MultiheadAttention</code> reads its inputs as (T, B, d) unless you pass <code>batch_first=True</code>; with it, inputs and outputs are (B, T, d), the order of this page.</li>
  <li>The weights it returns are averaged over the heads: one (B, T<sub>q</sub>, T<sub>k</sub>) map. Pass <code>average_attn_weights=False</code> to get one map per head, (B, H, T<sub>q</sub>, T<sub>k</sub>).</li>
  <li>A mask that says who may see whom should be a boolean tensor and live on the same device as the scores: build it with <code>device=q.device</code>, or a mask made on the CPU meets tensors on the GPU and the call fails.</li>
  <li>For <code>scaled_dot_product_attention</code>, the mask only has to broadcast to the scores, (B, H, T<sub>q</sub>, T<sub>k</sub>). A (T<sub>q</sub>, T<sub>k</sub>) mask, such as the causal one, is read as (1, 1, T<sub>q</sub>, T<sub>k</sub>): the same for every sequence and head. A 4-D mask (1 or B, 1 or H, T<sub>q</sub>, T<sub>k</sub>) is repeated along each axis where it has size 1: (B, 1, T<sub>q</sub>, T<sub>k</sub>) gives each sequence its own pattern, shared by its heads, and the padding mask (B, 1, 1, T<sub>k</sub>) is also repeated over the queries. A per-sequence mask (B, T<sub>q</sub>, T<sub>k</sub>) is accepted by hand-written layers that insert the head axis for you; plain broadcasting aligns shapes from the right and would match its B against the heads, so give <code>scaled_dot_product_attention</code> <code>mask.unsqueeze(1)</code>, of shape (B, 1, T<sub>q</sub>, T<sub>k</sub>). <code>nn.MultiheadAttention</code> is stricter: its <code>attn_mask</code> is (T<sub>q</sub>, T<sub>k</sub>) or (B·H, T<sub>q</sub>, T<sub>k</sub>), one slice per sequence and head, and padding goes separately in <code>key_padding_mask</code>, (B, T<sub>k</sub>).</li>
</ul>
<h3>Copy as a script</h3>
<p>The first two buttons copy a short script that holds these Q, K, V and mask (each number written with enough digits to give back the same float32) and the numbers shown above. Run it with Python: it computes the same attention with PyTorch’s (or NumPy’s) own functions and prints how far its numbers are from the page’s.</p>
<p>The third script does not use the numbers above. From a fixed seed it draws q, k and v of shape (B, H, T, d<sub>head</sub>) = (2, 3, 6, 4), asserts the shape of every step (the expected shapes in it come from this page’s core), writes the causal attention out by hand, and asserts that it agrees with <code>F.scaled_dot_product_attention</code> at <code>dropout_p=0.0</code> by <code>torch.allclose</code> with a tolerance, since the two may round differently. It ends with two edits to try, one at a time: take the softmax over <code>dim=-2</code>, or build the mask with <code>.triu()</code> instead of <code>.tril()</code>. Each one is caught by a different assertion, which the comments name; then put the line back.</p>
<p data-prose="pt-mha-script">The fourth script is the multi-head layer written as a PyTorch module: four <code>nn.Linear</code> projections, a check that H divides d<sub>model</sub>, <code>split_heads</code> and <code>merge_heads</code>, a mask of shape (T<sub>q</sub>, T<sub>k</sub>), (B, T<sub>q</sub>, T<sub>k</sub>) or (1 or B, 1 or H, T<sub>q</sub>, T<sub>k</sub>) brought to the scores’ shape, and a refusal of any query left with no key. Its sizes are small and fixed, not those of the multi-head section: d<sub>model</sub> = 8 and H = 2, with the weights and biases this page’s core draws from seed 7, and two sequences of 4 tokens in that section’s one-hot embedding (s = 8), the last token of sequence 2 being padding. Under a causal mask and that padding mask it compares its output and each head’s weights with the core’s numbers, written into it, prints the largest differences and asserts <code>torch.allclose</code> with a tolerance. Sequence 1 is what the multi-head section shows with d<sub>model</sub> = 8, H = 2, Positions T = 4 and Causal ticked. Without PyTorch, the fifth button copies the same forward pass written with NumPy alone, which checks itself against the same numbers.</p>
<div class="controls" data-slot="copy"></div>
<div data-slot="scripts"></div>
<h3><code>.T</code> against <code>transpose(-2, -1)</code></h3>
<p>For a matrix, <code>k.T</code> is its transpose. But the tensors of a batched, multi-head model have shape (B, H, T, d), and on those <code>.T</code> reverses <em>every</em> dimension: the batch ends up last. The scores need only the last two swapped, which is <code>k.transpose(-2, -1)</code> (or <code>k.mT</code>). Newer PyTorch versions warn about <code>.T</code> on more than two dimensions; older ones do it silently.</p>
<div class="controls" data-slot="sizes"></div>
<div class="result" data-slot="shapes"></div>
`,
  fields: [
    ['q', codec.matrix(() => T, () => DK), () => copy(EX_DEFAULTS.q)],
    ['k', codec.matrix(() => T, () => DK), () => copy(EX_DEFAULTS.k)],
    ['v', codec.matrix(() => T, () => DV), () => copy(EX_DEFAULTS.v)],
    ['allowed', codec.bits(() => T, () => T), () => causalBits(T)],
    ['b', codec.int(1, SIZE_MAX), () => 2],
    ['h', codec.int(1, SIZE_MAX), () => 4],
    ['t', codec.int(1, SIZE_MAX), () => 5],
    ['d', codec.int(1, SIZE_MAX), () => 8],
  ],

  mount(ctx, st) {
    const commit = () => ctx.commit(this.prefix, EDITED);
    this.maskHost = h('div');
    ctx.slot(this.id, 'inputs').replaceChildren(
      numberGrid({ label: 'Q (3 queries × d_k = 4)', name: 'pt-q', matrix: st.q, rowLabel: queryLabel, colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'K (3 keys × d_k = 4)', name: 'pt-k', matrix: st.k, rowLabel: keyLabel, colLabel: dimLabel, onChange: commit }),
      numberGrid({ label: 'V (3 values × d_v = 2)', name: 'pt-v', matrix: st.v, rowLabel: (i) => `value ${i + 1}`, colLabel: dimLabel, onChange: commit }),
      h('figure', { class: 'pt-mask' }, h('figcaption', { text: 'Mask (pressed = may attend)' }), this.maskHost),
    );
    this.said = announcer(ctx.node(this.id), 'pytorch');
    this.status = statusLine(this.said);
    ctx.slot(this.id, 'status').replaceChildren(this.status.node, this.said.node);

    // The scripts: shown on the page, and copied by the buttons.
    this.scripts = {};
    this.shownOnce = false; // mounted again (a new link): its boxes start empty
    const buttons = [];
    this.copyNote = h('p', { class: 'readout', 'data-out': 'pt-copy-note', 'aria-live': 'polite' });
    for (const [key, label, text] of [['pytorch', 'PyTorch', 'Copy as PyTorch'], ['numpy', 'NumPy', 'Copy as NumPy'], ['check', 'shape check', 'Copy the shape check'], ['mha', 'multi-head module', 'Copy the multi-head module'], ['mhaNumpy', 'multi-head NumPy', 'Copy the module’s NumPy twin']]) {
      const pre = h('pre', { class: 'c-src pt-script', tabindex: 0, role: 'region', 'aria-label': `The ${label} script`, 'data-script': key });
      this.scripts[key] = pre;
      const button = h('button', { type: 'button', class: 'action', 'data-action': `pt-copy-${key}`, 'data-script': key, text });
      button.addEventListener('click', () => this.copyScript(key, label));
      // A script that is not written yet (no valid input so far) cannot be copied.
      button.disabled = true;
      buttons.push(button);
    }
    this.copyButtons = buttons;
    ctx.slot(this.id, 'copy').replaceChildren(h('div', { class: 'controls-row' }, ...buttons), this.copyNote);
    ctx.slot(this.id, 'scripts').replaceChildren(
      h('details', { open: true }, h('summary', { text: 'The PyTorch script' }), this.scripts.pytorch),
      h('details', {}, h('summary', { text: 'The NumPy script' }), this.scripts.numpy),
      h('details', {}, h('summary', { text: 'The shape check against scaled_dot_product_attention' }), this.scripts.check),
      h('details', {}, h('summary', { text: 'The multi-head module, checked against the core' }), this.scripts.mha),
      h('details', {}, h('summary', { text: 'The same multi-head forward pass in NumPy' }), this.scripts.mhaNumpy));

    const size = (label, key) => numberField({ label, name: `pt-${key}`, value: st[key], integer: true, min: 1, max: SIZE_MAX, size: 'sm',
      onValue: (value) => { st[key] = value; ctx.commit(this.prefix, { edited: 'sizes' }); } });
    ctx.slot(this.id, 'sizes').replaceChildren(h('div', { class: 'controls-row' },
      size('B (batch)', 'b'), size('H (heads)', 'h'), size('T (tokens)', 't'), size('d (head width)', 'd')));
  },

  /** Each copy button works once its script is written. */
  enableCopies() {
    for (const button of this.copyButtons) button.disabled = !this.scripts[button.dataset.script].textContent;
  },

  /** Copy a script with the clipboard API; where that is refused, select its text for Ctrl+C. */
  async copyScript(key, label) {
    const pre = this.scripts[key];
    const text = pre.textContent;
    try {
      await navigator.clipboard.writeText(text);
      this.copyNote.textContent = `The ${label} script is on the clipboard (${text.split('\n').length} lines).`;
    } catch {
      // No clipboard API here (or no permission): select the script, try the
      // old copy command, and otherwise leave the selection to the learner.
      pre.closest('details').open = true;
      pre.focus();
      pre.ownerDocument.getSelection().selectAllChildren(pre);
      let copied = false;
      try { copied = pre.ownerDocument.execCommand('copy'); } catch { copied = false; }
      this.copyNote.textContent = copied ? `The ${label} script is selected below and copied.`
        : `This browser did not let the page copy, so the ${label} script is selected below: press Ctrl+C (⌘C on a Mac) to copy it.`;
    }
  },

  update(ctx, st, detail) {
    const allowed = { data: Uint8Array.from(st.allowed.flat(), Number), shape: [T, T] };
    maskGrid(this.maskHost, {
      name: 'pt-mask', rows: T, cols: T, get: (i, j) => st.allowed[i][j], label: 'Mask: pressed means may attend',
      rowLabel: queryLabel, colLabel: keyLabel, text: (on) => (on ? '1' : '0'), badRows: emptyRows(ctx.lab, st.allowed),
      onToggle: (i, j) => {
        st.allowed[i][j] = !st.allowed[i][j];
        ctx.commit(this.prefix, EDITED);
      },
    });

    const shapes = this.drawShapes(ctx, st);
    // A size is said as the two products' shapes; any other edit as the output.
    if (detail?.edited === 'sizes') {
      if (shapes) this.said.say(shapes);
    }
    // The shape check does not depend on the inputs: written once.
    if (!this.scripts.check.textContent) {
      const script = ctx.core(this.status, () => sdpaCheckScript(ctx.lab), [], { keepNote: false });
      if (script) setText(this.scripts.check, script);
    }
    // Nor do the multi-head module script and its NumPy twin: their example is fixed (MHA_EXAMPLE).
    if (!this.scripts.mha.textContent) {
      const example = ctx.core(this.status, () => multiHeadExample(ctx.lab), [], { keepNote: false });
      if (example) {
        setText(this.scripts.mha, multiHeadScript(example));
        setText(this.scripts.mhaNumpy, multiHeadNumpyScript(example));
      }
    }
    // Before the first valid result there is nothing to keep (the script boxes
    // are there from the start, but empty): the message says only why.
    const hosts = this.shownOnce ? ['calls', 'output', 'weights', 'scripts'].map((name) => ctx.slot(this.id, name)) : [];
    const res = ctx.core(this.status, () => ctx.lab.sdpa(st.q, st.k, st.v, { mask: allowed }), hosts, { keepNote: hosts.length > 0 });
    const edited = isEdit(detail) && detail.edited !== 'sizes';
    if (!res) {
      this.enableCopies();
      return;
    }
    this.shownOnce = true;
    ctx.publish(`${this.prefix}.main`, res);
    const { blockedFromAllowed, additiveFromAllowed } = ctx.api;
    const blocked = blockedFromAllowed(allowed);
    const additive = additiveFromAllowed(allowed);
    const rows = (m, cell) => Array.from({ length: T }, (_, i) => Array.from(m.data.subarray(i * T, (i + 1) * T), cell));
    // Keys that no query may see: what nn.MultiheadAttention's key_padding_mask says.
    const pairs = ctx.lab.allowedPairs([T, T], { mask: allowed });
    const padding = Array.from({ length: T }, (_, j) => !Array.from({ length: T }, (_, i) => pairs.data[i * T + j]).includes(1));

    const card = (title, convention, lines) => h('figure', { class: 'pt-call' },
      h('figcaption', {}, h('strong', { text: title }), h('br'), convention),
      h('pre', { class: 'c-src', tabindex: 0, role: 'region', 'aria-label': title }, lines.join('\n')));
    ctx.slot(this.id, 'calls').replaceChildren(
      card('F.scaled_dot_product_attention', 'Boolean mask: True = may attend. Float mask: added to the scores.', [
        ...tensorLines('allowed', st.allowed.map((row) => row.map((b) => pyBool(b).padStart(5)))),
        'out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)',
        '# the same with a float mask, 0 or -inf:',
        'inf = float("inf")',
        ...tensorLines('additive', rows(additive, (x) => (x === 0 ? '  0.' : '-inf'))),
        'out = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)',
      ]),
      card('nn.MultiheadAttention', 'Both masks: True = NOT allowed.', [
        ...tensorLines('blocked', rows(blocked, (x) => pyBool(x).padStart(5))),
        ...tensorLines('key_padding_mask', [padding.map(pyBool)]),
        '# batch_first=True: inputs and out are (B, T, d), not (T, B, d)',
        'mha = nn.MultiheadAttention(embed_dim=4, num_heads=1, bias=False,',
        '                            vdim=2, batch_first=True)',
        'out, weights = mha(q[None], k[None], v[None],',
        '                   attn_mask=blocked, key_padding_mask=key_padding_mask)',
        '# weights: averaged over the heads, (B, T, T); pass',
        '# average_attn_weights=False for one map per head, (B, H, T, T)',
        '# with identity projections, out[0, :, :2] is the output below',
      ]),
    );
    valueTable(ctx.slot(this.id, 'output'), {
      name: 'pt-output', values: res.output.data, rows: T, cols: DV, digits: 4,
      rowLabel: (i) => `output ${i + 1}`, colLabel: dimLabel, caption: 'Output (3 × d_v), computed by the core',
    });
    valueTable(ctx.slot(this.id, 'weights'), {
      name: 'pt-weights', values: res.weights.data, rows: T, cols: T, digits: 4,
      rowLabel: queryLabel, colLabel: keyLabel, caption: 'Weights (3 × 3), computed by the core',
    });

    const input = { q: st.q, k: st.k, v: st.v, allowed: st.allowed, output: res.output.data, weights: res.weights.data };
    setText(this.scripts.pytorch, pytorchScript(input));
    setText(this.scripts.numpy, numpyScript(input));
    this.enableCopies();
    if (edited) this.said.say(`Output ${[0, 1, 2].map((i) => fmtVec(res.output.data.subarray(i * DV, (i + 1) * DV), 4)).join(', ')}.`);
  },

  /**
   * The shapes of k, k.T, k.transpose(-2, -1), and of the scores from the
   * core. Returns the two products' shapes in a sentence, or null when the
   * core refused these sizes (its message is shown, and said).
   */
  drawShapes(ctx, st) {
    const sizes = [st.b, st.h, st.t, st.d];
    const s = transposeShapes(sizes);
    const n = sizes.reduce((a, b) => a * b, 1);
    const zeros = { data: new Float32Array(n), shape: sizes };
    // The scores of q and k of these shapes, as the core computes them.
    const scores = ctx.core(this.status, () => ctx.lab.sdpa(zeros, zeros, zeros).scores.shape, [], { keepNote: false });
    const item = (code, shape, note, out) => h('li', {},
      h('code', { text: code }), ' → ', h('strong', { 'data-out': out, text: shape }), `: ${note}`);
    // With a single number in k, reversing every dimension and swapping the
    // last two give the same tensor: only then is q @ k.T the scores.
    const wrong = s.withDotT.error ?? (n === 1 ? 'the same as the line below, because k holds a single number: with any size above 1 it is not'
      : 'it runs, but on the wrong axes: these are not scores');
    ctx.slot(this.id, 'shapes').replaceChildren(
      h('p', { class: 'readout', text: `q and k of shape (B, H, T, d) = ${fmtShape(sizes)}:` }),
      h('ul', { class: 'pt-shapes', 'data-values': 'pt-shapes' },
        item('k', fmtShape(s.k), '(batch, heads, tokens, head width)', 'pt-shape-k'),
        item('k.T', fmtShape(s.dotT), 'every dimension reversed, (d, T, H, B)', 'pt-shape-dot-t'),
        item('k.transpose(-2, -1)', fmtShape(s.swapped), 'the last two swapped, (B, H, d, T)', 'pt-shape-swapped'),
        item('q @ k.T', s.withDotT.error ? 'error' : fmtShape(s.withDotT.shape), wrong, 'pt-shape-wrong'),
        item('q @ k.transpose(-2, -1)', scores ? fmtShape(scores) : '—', 'the scores, one T × T matrix per batch and head (this shape from the core)', 'pt-shape-scores')));
    if (!scores) return null;
    return `q @ k.transpose(-2, -1) gives the scores, ${fmtShape(scores)}; q @ k.T gives ${s.withDotT.error ? 'an error' : fmtShape(s.withDotT.shape)}.`;
  },
};

export default pytorch;
