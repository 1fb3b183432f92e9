// The "Copy as PyTorch" and "Copy as NumPy" scripts of the lesson's PyTorch
// section: each is built for several inputs, then read back as text. The
// Q, K, V and mask written into it must be the float32 numbers the core
// received (bit for bit), and the page's output and weights written into it
// must be what lab.sdpa gives on the numbers read back (within 1e-6) and
// agree with a float64 reference. When python3 can import NumPy, the NumPy
// script is run too and its printout compared with the core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { loadAttention } from '../web/attention.js';
import { pytorchScript, numpyScript, sdpaCheckScript, CHECK_SIZES, float32Text, transposeShapes,
  MHA_EXAMPLE, multiHeadExample, multiHeadScript, multiHeadNumpyScript } from '../web/pytorch-script.js';
import { rng, sdpaReference } from './helpers/reference.mjs';
import { assertClose, compare } from './helpers/compare.mjs';

const lab = await loadAttention();

/** The example's tensors: the section's defaults, awkward numbers, random ones. */
function cases() {
  const random = rng(12);
  const awkward = [0.1, 1 / 3, -2.5e-5, 123.456, -7, 1e-7, 0.7, -0.30000001, 999999, 3.14159265];
  const out = [{
    name: 'the section\'s defaults',
    q: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], k: [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]], v: [[10, 0], [0, 10], [5, 5]],
    allowed: [[true, false, false], [true, true, false], [true, true, true]],
  }, {
    name: 'awkward numbers, a key no query sees',
    q: [[0.1, 1 / 3, -2.5e-5, 123.456], [-7, 1e-7, 0.7, -0.30000001], [3.14159265, 0, -1, 2]].map((r) => r.map((x) => x / 50)),
    k: [awkward.slice(0, 4), awkward.slice(3, 7), awkward.slice(6, 10)].map((r) => r.map((x) => x / 1000)),
    v: [[999999, -0.1], [1 / 3, 2.5], [-123.456, 1e-7]],
    allowed: [[true, false, true], [false, false, true], [true, false, true]],
  }];
  for (let n = 0; n < 6; n++) {
    const Tq = 1 + Math.floor(random() * 4), Tk = 1 + Math.floor(random() * 4);
    const dk = 1 + Math.floor(random() * 5), dv = 1 + Math.floor(random() * dk); // the script needs d_v <= d_k
    const matrix = (r, c) => Array.from({ length: r }, () => Array.from({ length: c }, () => (random() * 2 - 1) * 10 ** Math.floor(random() * 5 - 2)));
    const allowed = Array.from({ length: Tq }, () => Array.from({ length: Tk }, () => random() < 0.6));
    for (const row of allowed) if (!row.includes(true)) row[Math.floor(random() * Tk)] = true;
    out.push({ name: `random ${n + 1} (Tq ${Tq}, Tk ${Tk}, d_k ${dk}, d_v ${dv})`, q: matrix(Tq, dk), k: matrix(Tk, dk), v: matrix(Tk, dv), allowed });
  }
  return out;
}

/** The core's result on an example, as the page passes it. */
function core(c) {
  const mask = { data: Uint8Array.from(c.allowed.flat(), Number), shape: [c.allowed.length, c.allowed[0].length] };
  return lab.sdpa(c.q, c.k, c.v, { mask });
}

/** `name = torch.tensor([...], ...)` or `name = np.array([...], ...)` -> the nested list. */
function literal(script, name) {
  const m = script.match(new RegExp(`^${name} = (?:torch\\.tensor|np\\.array)\\((\\[.*\\])(?:, dtype=[\\w.]+)?\\)`, 'm'));
  assert.ok(m, `the script assigns ${name} a literal`);
  assert.doesNotMatch(m[1], /\d_\d|\d,\d/, `${name}: digits are never grouped`);
  return JSON.parse(m[1].replace(/\bTrue\b/g, 'true').replace(/\bFalse\b/g, 'false'));
}

/** Same float32 bits, entry by entry; names the first differences. */
function sameFloat32(got, want, label) {
  const g = got.flat(), w = want.flat().map(Math.fround);
  assert.equal(g.length, w.length, `${label}: ${g.length} numbers, want ${w.length}`);
  const bad = g.map((x, i) => [i, x, w[i]]).filter(([, x, y]) => !Object.is(Math.fround(x), y) && !(x === 0 && y === 0));
  assert.deepEqual(bad.slice(0, 5), [], `${label}: [index, read back, float32 given] differ`);
}

for (const [kind, build] of [['PyTorch', pytorchScript], ['NumPy', numpyScript]]) {
  test(`the ${kind} script holds the inputs bit for bit and the core's numbers on them`, () => {
    for (const c of cases()) {
      const res = core(c);
      const script = build({ ...c, output: res.output.data, weights: res.weights.data });
      const label = `${kind}, ${c.name}`;
      const q = literal(script, 'q'), k = literal(script, 'k'), v = literal(script, 'v'), allowed = literal(script, 'allowed');
      sameFloat32(q, c.q, `${label}: q`);
      sameFloat32(k, c.k, `${label}: k`);
      sameFloat32(v, c.v, `${label}: v`);
      assert.deepEqual(allowed, c.allowed, `${label}: allowed`);
      // The page's numbers, read back, against the core run on the inputs read back.
      const again = core({ q, k, v, allowed });
      const Tq = q.length, Tk = k.length, dv = v[0].length;
      assertClose(literal(script, 'page_output').flat(), Array.from(again.output.data), { shape: [Tq, dv], atol: 1e-6, rtol: 1e-6, label: `${label}: output` });
      assertClose(literal(script, 'page_weights').flat(), Array.from(again.weights.data), { shape: [Tq, Tk], atol: 1e-6, label: `${label}: weights` });
      // ... and against attention in float64 on the same float32 inputs.
      const t = (m) => ({ data: Float64Array.from(m.flat(), Math.fround), shape: [m.length, m[0].length] });
      const ref = sdpaReference(t(q), t(k), t(v), { mask: { data: Uint8Array.from(allowed.flat(), Number), shape: [Tq, Tk] } });
      assertClose(literal(script, 'page_output').flat(), Array.from(ref.output), { shape: [Tq, dv], atol: 1e-5, rtol: 1e-5, label: `${label}: output against float64` });
    }
  });
}

test('float32Text writes the shortest text that reads back as the same float32, never grouped', () => {
  const random = rng(3);
  const values = [0, 1, -1, 0.1, 1 / 3, 1e-7, -1e-30, 3.4028234663852886e38, 1.401298464324817e-45, 16777217, 123456.789];
  for (let n = 0; n < 2000; n++) values.push((random() * 2 - 1) * 10 ** Math.floor(random() * 20 - 10));
  for (const x of values) {
    const text = float32Text(x);
    assert.match(text, /^-?\d+(\.\d+)?(e[+-]?\d+)?$/, `${x} -> ${text}: a plain Python and JSON number`);
    assert.ok(Object.is(Math.fround(Number(text)), Math.fround(x)) || Math.fround(x) === 0, `${x} -> ${text} reads back as ${Math.fround(Number(text))}`);
    // significant digits written: the mantissa without sign, point, and leading or trailing zeros
    const digits = text.replace(/^-/, '').replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '').length;
    if (digits > 1) {
      const shorter = Number(Math.fround(x).toPrecision(digits - 1));
      assert.notEqual(Math.fround(shorter), Math.fround(x), `${x} -> ${text}: ${digits - 1} digits would do`);
    }
  }
  assert.throws(() => float32Text(NaN), RangeError);
  assert.throws(() => float32Text(1e39), RangeError, 'beyond float32');
});

test('.T reverses every dimension, transpose(-2, -1) swaps the last two; the scores shape is the core\'s', () => {
  for (const sizes of [[2, 4, 5, 8], [1, 1, 3, 3], [3, 8, 8, 8], [2, 1, 4, 1], [8, 3, 2, 3]]) {
    const [B, H, T, d] = sizes;
    const s = transposeShapes(sizes);
    assert.deepEqual(s.dotT, [d, T, H, B]);
    assert.deepEqual(s.swapped, [B, H, d, T]);
    const zeros = { data: new Float32Array(B * H * T * d), shape: sizes };
    assert.deepEqual(s.withSwapped.shape, lab.sdpa(zeros, zeros, zeros).scores.shape, `${sizes}: q @ k.transpose(-2, -1)`);
  }
  // q @ k.T: refused unless d equals H and the batch sizes broadcast; then it runs on the wrong axes.
  assert.match(transposeShapes([2, 4, 5, 8]).withDotT.error, /last size 8 .* size 4/);
  assert.match(transposeShapes([2, 8, 5, 8]).withDotT.error, /batch sizes 2 and 8/);
  assert.deepEqual(transposeShapes([1, 8, 1, 8]).withDotT.shape, [8, 8, 1, 1]);
});

// The NumPy scripts run where a python3 imports NumPy: the one on PATH, or
// Debian's (build.sh installs python3-numpy for the tests when it can).
const NUMPY_PYTHON = ['python3', '/usr/bin/python3'].find((py) => spawnSync(py, ['-c', 'import numpy'], { encoding: 'utf8' }).status === 0);
const noNumpy = NUMPY_PYTHON ? false : 'no python3 here imports numpy (python3-numpy)';

test('the NumPy script, run by python3, prints the core\'s numbers', { skip: noNumpy }, () => {
  for (const c of cases()) {
    const res = core(c);
    const run = spawnSync(NUMPY_PYTHON, ['-'], { input: numpyScript({ ...c, output: res.output.data, weights: res.weights.data }), encoding: 'utf8' });
    assert.equal(run.status, 0, `${c.name}: python3 failed:\n${run.stderr}`);
    const diffs = [...run.stdout.matchAll(/largest difference from the page: (\S+)/g)].map((m) => Number(m[1]));
    assert.equal(diffs.length, 2, `${c.name}: two comparisons printed:\n${run.stdout}`);
    for (const d of diffs) assert.ok(d <= 1e-5, `${c.name}: NumPy differs from the core by ${d}:\n${run.stdout}`);
  }
});

// Without NumPy or PyTorch, python3 can still check that both scripts are valid Python.
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
test('the scripts of the inputs and both multi-head scripts are valid Python', { skip: python.error ? `python3 not found (${python.error.code})` : false }, () => {
  const c = cases()[1];
  const res = core(c);
  const mha = multiHeadExample(lab);
  for (const script of [pytorchScript, numpyScript].map((build) => build({ ...c, output: res.output.data, weights: res.weights.data }))
    .concat([multiHeadScript(mha), multiHeadNumpyScript(mha)])) {
    const run = spawnSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], { input: script, encoding: 'utf8' });
    assert.equal(run.status, 0, `python3 cannot parse the script:\n${run.stderr}\n${script}`);
  }
});

// The third script of the section: shapes step by step and a comparison with
// F.scaled_dot_product_attention, on (B, H, T, d_head) from a fixed seed.
test('the shape-check script: the sizes the prose names, the core\'s shapes, a fixed seed, dropout off, allclose with a tolerance', async () => {
  const { pytorch } = await import('../web/sections/pytorch.js');
  const script = sdpaCheckScript(lab);
  const sizes = /^B, H, T, d_head = (\d+), (\d+), (\d+), (\d+)$/m.exec(script);
  assert.ok(sizes, `the script sets B, H, T, d_head:\n${script}`);
  const [B, H, T, D] = sizes.slice(1).map(Number);
  assert.deepEqual([B, H, T, D], [...CHECK_SIZES], 'the script uses the section\'s sizes');
  const prose = /\(B, H, T, d<sub>head<\/sub>\) = \((\d+), (\d+), (\d+), (\d+)\)/.exec(pytorch.body);
  assert.ok(prose, 'the prose names the sizes');
  assert.deepEqual(prose.slice(1).map(Number), [B, H, T, D], `the prose says (${prose.slice(1).join(', ')}); the script draws (${[B, H, T, D].join(', ')})`);
  // The shapes it asserts are the core's for those sizes.
  const z = { data: new Float32Array(B * H * T * D), shape: [B, H, T, D] };
  const r = lab.sdpa(z, z, z, { causal: true });
  const asserted = [...script.matchAll(/^assert tuple\((\w+)\.shape\) == \(([\d, ]+)\)/gm)].map((m) => [m[1], m[2].split(', ').map(Number)]);
  assert.deepEqual(asserted, [['scores', r.scores.shape], ['weights', r.weights.shape], ['by_hand', r.output.shape]],
    `the asserted shapes against the core's: ${JSON.stringify(asserted)}`);
  assert.deepEqual(r.scores.shape, [2, 3, 6, 6], 'scores (B, H, T, T)');
  assert.deepEqual(r.output.shape, [2, 3, 6, 4], 'output (B, H, T, d_head)');
  assert.match(script, /^torch\.manual_seed\(\d+\)$/m, 'a fixed seed');
  assert.match(script, /F\.scaled_dot_product_attention\(q, k, v, attn_mask=allowed, dropout_p=0\.0\)/, 'dropout off in the fused call');
  assert.match(script, /^assert torch\.allclose\(fused, by_hand, atol=[\d.e-]+, rtol=[\d.e-]+\), /m, 'asserted with allclose and a tolerance (never ==): a difference stops the script');
  assert.match(script, /dtype=torch\.bool, device=q\.device/, 'the mask is boolean and on the tensors\' device');
  assert.match(script, /k\.transpose\(-2, -1\)/, 'the last two dims swapped, not .T');
  assert.doesNotMatch(script, /\d_\d|\d,\d/, 'digits are never grouped');
  // The two edits it suggests each name an assertion the script makes.
  for (const [edit, message] of [['softmax(dim=-2)', 'a row does not sum to 1'], ['.triu()', 'a query reads a later key']]) {
    const said = script.split('\n').findIndex((line) => line.startsWith('#') && line.includes(edit));
    assert.ok(said > 0, `the script suggests the edit ${edit}`);
    assert.ok(script.split('\n').slice(said, said + 4).some((line) => line.includes(`"${message}"`)), `the edit ${edit} names the check "${message}"`);
    assert.ok(script.includes(`), "${message}"`), `the script asserts "${message}"`);
  }
  assert.match(script, /^assert bool\(\(weights\.triu\(diagonal=1\) == 0\)\.all\(\)\), "a query reads a later key"$/m, 'the causal rule is checked on the weights themselves');
  if (!python.error) {
    const run = spawnSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], { input: script, encoding: 'utf8' });
    assert.equal(run.status, 0, `python3 cannot parse the script:\n${run.stderr}\n${script}`);
  }
});

// The multi-head module script and its NumPy twin: the core's parameters,
// input and numbers written into them, read back and recomputed in float64.

/** `name = torch.tensor(...)` or `name = np.array(...)` over several lines -> the nested list. */
function multiLineLiteral(script, name) {
  const m = script.match(new RegExp(`^${name} = (?:torch\\.tensor|np\\.array)\\((\\[[\\s\\S]*?\\])(?:, dtype=[\\w.]+)?\\)`, 'm'));
  assert.ok(m, `the script assigns ${name} a literal`);
  assert.doesNotMatch(m[1], /\d_\d|\d,\d/, `${name}: digits are never grouped`);
  return JSON.parse(m[1].replace(/\bTrue\b/g, 'true').replace(/\bFalse\b/g, 'false'));
}

/** Everything a multi-head script holds, read back: sizes, parameters, x, real, the page's numbers. */
function readMultiHead(script) {
  const sizes = /^B, T, d_model, num_heads = (\d+), (\d+), (\d+), (\d+)$/m.exec(script);
  assert.ok(sizes, 'the script sets B, T, d_model, num_heads');
  const [B, T, C, H] = sizes.slice(1).map(Number);
  const params = {};
  for (const name of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) {
    params[name] = { weight: multiLineLiteral(script, `${name}_weight`), bias: multiLineLiteral(script, `${name}_bias`) };
  }
  return { B, T, C, H, params, x: multiLineLiteral(script, 'x'), real: multiLineLiteral(script, 'real'),
    output: multiLineLiteral(script, 'page_output'), weights: multiLineLiteral(script, 'page_weights') };
}

/**
 * Multi-head self-attention in float64, written out step by step: each
 * projection y = x W^T + b with W (out, in); head h of token t is channels
 * h*D .. h*D+D-1 of that token's projection; scores scaled by 1/sqrt(D);
 * allowed = causal and a real key; softmax over the keys; the heads' results
 * side by side; the output projection. Returns flat output (B, T, C) and
 * weights (B, H, T, T).
 */
function multiHeadReference({ B, T, C, H, params, x, real }) {
  const D = C / H;
  const linear = (rows, { weight, bias }) => rows.map((row) => weight.map((w, o) => bias[o] + w.reduce((s, wi, i) => s + wi * row[i], 0)));
  const output = [], weights = [];
  for (let b = 0; b < B; b++) {
    const [q, k, v] = ['q_proj', 'k_proj', 'v_proj'].map((name) => linear(x[b], params[name]));
    const merged = Array.from({ length: T }, () => new Array(C).fill(0));
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < T; i++) {
        const scores = Array.from({ length: T }, (_, j) => {
          if (j > i || !real[b][j]) return -Infinity;
          let s = 0;
          for (let d = 0; d < D; d++) s += q[i][h * D + d] * k[j][h * D + d];
          return s / Math.sqrt(D);
        });
        const top = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - top));
        const sum = e.reduce((a, z) => a + z, 0);
        const w = e.map((z) => z / sum);
        weights.push(...w);
        for (let d = 0; d < D; d++) merged[i][h * D + d] = w.reduce((s, wj, j) => s + wj * v[j][h * D + d], 0);
      }
    }
    // weights were pushed per (h, i): already in (B, H, T, T) order for this b
    output.push(...linear(merged, params.out_proj).flat());
  }
  return { output, weights };
}

test('the multi-head scripts hold the core\'s parameters, input and numbers bit for bit', () => {
  const e = multiHeadExample(lab);
  const { dModel: C, numHeads: H, seed, size, padId, tokens } = MHA_EXAMPLE;
  const B = tokens.length, T = tokens[0].length;
  const fresh = lab.createMultiHeadAttention({ dModel: C, numHeads: H, seed });
  const held = fresh.getWeights();
  fresh.free();
  const rows = (flat, cols) => Array.from({ length: flat.length / cols }, (_, i) => Array.from(flat.slice(i * cols, (i + 1) * cols)));
  for (const [kind, build] of [['PyTorch', multiHeadScript], ['NumPy', multiHeadNumpyScript]]) {
    const s = readMultiHead(build(e));
    assert.deepEqual([s.B, s.T, s.C, s.H], [B, T, C, H], `${kind}: the sizes of MHA_EXAMPLE`);
    for (const [core, py] of [['qProj', 'q_proj'], ['kProj', 'k_proj'], ['vProj', 'v_proj'], ['outProj', 'out_proj']]) {
      // nn.Linear's weight is (out, in), as getWeights gives it: row o of the literal is output channel o.
      sameFloat32(s.params[py].weight, rows(held[core].weight.data, C), `${kind}: ${py}.weight, against the core's seed-${seed} module`);
      sameFloat32(s.params[py].bias, Array.from(held[core].bias.data), `${kind}: ${py}.bias`);
    }
    const x = tokens.flatMap((row) => row.map((id) => Array.from({ length: C }, (_, c) => (c === id % C ? size : 0))));
    sameFloat32(s.x.flat(), x, `${kind}: x, the one-hot embedding of the tokens`);
    assert.deepEqual(s.real, tokens.map((row) => row.map((id) => id !== padId)), `${kind}: real`);
    sameFloat32(s.output.flat(2), Array.from(e.output), `${kind}: page_output`);
    sameFloat32(s.weights.flat(3), Array.from(e.weights), `${kind}: page_weights`);
  }
});

test('a float64 multi-head forward pass on the parameters read back from the script gives the numbers written in it', () => {
  const e = multiHeadExample(lab);
  for (const [kind, build] of [['PyTorch', multiHeadScript], ['NumPy', multiHeadNumpyScript]]) {
    const s = readMultiHead(build(e));
    const ref = multiHeadReference(s);
    assertClose(s.output.flat(2), ref.output, { shape: [s.B, s.T, s.C], atol: 1e-5, rtol: 1e-5, label: `${kind}: page_output against float64` });
    assertClose(s.weights.flat(3), ref.weights, { shape: [s.B, s.H, s.T, s.T], atol: 1e-6, label: `${kind}: page_weights against float64` });
  }
  // The comparison can fail: numbers from a core that splits the heads
  // without the transpose, or merges them without it, are told apart.
  for (const bug of ['heads-without-transpose', 'merge-without-transpose']) {
    const s = readMultiHead(multiHeadScript(multiHeadExample(lab, { bug })));
    const ref = multiHeadReference(s);
    const out = compare(s.output.flat(2), ref.output, { shape: [s.B, s.T, s.C], atol: 1e-5, rtol: 1e-5 });
    assert.ok(!out.ok, `a core with the bug ${bug} passes the float64 check: ${out.report}`);
  }
});

test('the multi-head module script: the module\'s parts, its guard, allclose with a tolerance; the NumPy twin\'s steps', () => {
  const e = multiHeadExample(lab);
  const script = multiHeadScript(e);
  for (const [what, re] of [
    ['an nn.Module', /^class MultiHeadAttention\(nn\.Module\):$/m],
    ['four nn.Linear projections', /(self\.(q|k|v|out)_proj = nn\.Linear\(d_model, d_model, bias=bias\)\n\s*){4}/],
    ['the divisibility check', /if d_model % num_heads != 0:\n\s+raise ValueError/],
    ['split_heads as view then transpose(1, 2)', /return x\.view\(B, T, self\.num_heads, self\.d_head\)\.transpose\(1, 2\)/],
    ['merge_heads with .contiguous() before .view', /return x\.transpose\(1, 2\)\.contiguous\(\)\.view\(B, T, self\.d_model\)/],
    ['2-D, 3-D and 4-D masks', /mask\.dim\(\) == 2:\n\s+mask = mask\[None, None\]\n\s+elif mask\.dim\(\) == 3:\n\s+mask = mask\[:, None\]\n\s+elif mask\.dim\(\) != 4:/],
    ['the mask expanded to the scores', /\.expand_as\(scores\)/],
    ['the all-masked-row guard', /if not allowed\.any\(dim=-1\)\.all\(\):\n\s+raise ValueError\("[^"]+"\)/],
    ['scores scaled by sqrt(d_head)', /q @ k\.transpose\(-2, -1\) \/ math\.sqrt\(self\.d_head\)/],
    ['allclose with a tolerance', /torch\.allclose\(mine, page, atol=[\d.e-]+, rtol=[\d.e-]+\)/],
    ['a causal and a padding mask, 4-D', /^mask = causal\[None, None\] & real\[:, None, None, :\]$/m],
    ['the 3-D form of the same mask', /mha\(x, mask\[:, 0\]\)/],
    ['the comments name the page\'s sections', /# Shapes:[\s\S]*# Masks:[\s\S]*# Multi-head:|# Multi-head:[\s\S]*# Shapes:[\s\S]*# Masks:/],
    ['the (out, in) layout said', /weight\n# \(out, in\)|\(out, in\) = \(d_model, d_model\)/],
  ]) assert.match(script, re, `the module script has ${what}`);
  // The guard in the same words in the module, its NumPy twin and the hand-written attention of the PyTorch script.
  const guard = (text) => /^ *if not allowed\.any\((?:dim|axis)=-1\)\.all\(\):\n *raise ValueError\(("[^"]+")\)$/m.exec(text)?.[1];
  const c = cases()[0];
  const res = core(c);
  const byHand = pytorchScript({ ...c, output: res.output.data, weights: res.weights.data });
  assert.ok(guard(script), 'the module has the guard');
  assert.equal(guard(byHand), guard(script), 'the PyTorch script\'s hand-written attention refuses an all-masked row in the module\'s words');
  assert.ok(byHand.indexOf('allowed.any(dim=-1)') < byHand.indexOf('weights = torch.softmax('), 'the guard comes before the softmax');
  const twin = multiHeadNumpyScript(e);
  assert.equal(guard(twin), guard(script), 'the NumPy twin refuses in the same words');
  for (const [what, re] of [
    ['split: reshape then transpose(0, 2, 1, 3)', /return x\.reshape\(B, T, num_heads, d_head\)\.transpose\(0, 2, 1, 3\)/],
    ['merge: transpose(0, 2, 1, 3) then reshape', /return x\.transpose\(0, 2, 1, 3\)\.reshape\(B, T, d_model\)/],
    ['scaled scores', /q @ k\.swapaxes\(-2, -1\) \/ np\.sqrt\(np\.float32\(d_head\)\)/],
    ['the mask', /np\.where\(allowed, scores, np\.float32\(-np\.inf\)\)/],
    ['the softmax over the keys', /weights \/ weights\.sum\(axis=-1, keepdims=True\)/],
    ['the output projection', /output = linear\(merge_heads\(weights @ v\), out_proj_weight, out_proj_bias\)/],
    ['allclose with a tolerance', /np\.allclose\(mine, page, atol=[\d.e-]+, rtol=[\d.e-]+\)/],
  ]) assert.match(twin, re, `the NumPy twin has ${what}`);
  assert.doesNotMatch(twin, /torch/, 'the NumPy twin needs no PyTorch');
});

test('the multi-head module script: the prose names its example, and sequence 1 is what the multi-head section shows at those sizes', async () => {
  const { pytorch } = await import('../web/sections/pytorch.js');
  const { multiHead, oneHot } = await import('../web/sections/multi-head.js');
  const prose = /<p data-prose="pt-mha-script">([\s\S]*?)<\/p>/.exec(pytorch.body)?.[1];
  assert.ok(prose, 'a paragraph on the module script');
  const { dModel, numHeads, seed, size, tokens } = MHA_EXAMPLE;
  for (const [what, text] of [['d_model', `d<sub>model</sub> = ${dModel} and H = ${numHeads}`], ['the seed', `seed ${seed}`],
    ['the tokens', `${tokens.length === 2 ? 'two' : tokens.length} sequences of ${tokens[0].length} tokens`], ['s', `(s = ${size})`],
    ['the padding', `the last token of sequence ${tokens.length} being padding`],
    ['the section\'s settings', `d<sub>model</sub> = ${dModel}, H = ${numHeads}, Positions T = ${tokens[0].length} and Causal ticked`]]) {
    assert.ok(prose.includes(text), `the prose names ${what} as "${text}": ${prose}`);
  }
  assert.equal(tokens.at(-1).at(-1), MHA_EXAMPLE.padId, 'sequence 2 does end in the padding id');
  // The multi-head section's defaults (seed, s, first tokens), at d_model 8, H 2, T 4, causal.
  const st = Object.fromEntries(multiHead.fields.map(([key, , init]) => [key, undefined]));
  for (const [key, , init] of multiHead.fields) st[key] = init(st);
  Object.assign(st, { dmodel: dModel, heads: numHeads, t: tokens[0].length });
  st.tokens = multiHead.fields.find(([key]) => key === 'tokens')[2](st);
  assert.deepEqual([st.seed, st.size, st.tokens[0]], [seed, size, tokens[0]], 'the section starts from the same seed, s and tokens');
  const mha = lab.createMultiHeadAttention({ dModel: st.dmodel, numHeads: st.heads, seed: st.seed });
  const shown = mha.forward(oneHot(st.tokens[0], st.dmodel, st.size), undefined, { causal: true });
  mha.free();
  const e = multiHeadExample(lab);
  const T = tokens[0].length;
  sameFloat32([Array.from(e.output.slice(0, T * dModel))], [Array.from(shown.output.data)], 'sequence 1\'s output against the section');
  sameFloat32([Array.from(e.weights.slice(0, numHeads * T * T))], [Array.from(shown.weights.data)], 'sequence 1\'s weights against the section');
});

test('the multi-head NumPy twin, run by python3, prints the core\'s numbers', { skip: noNumpy }, () => {
  const run = spawnSync(NUMPY_PYTHON, ['-'], { input: multiHeadNumpyScript(multiHeadExample(lab)), encoding: 'utf8' });
  assert.equal(run.status, 0, `python3 failed:\n${run.stderr}\n${run.stdout}`);
  const diffs = [...run.stdout.matchAll(/largest difference from the page: (\S+)/g)].map((m) => Number(m[1]));
  assert.equal(diffs.length, 2, `output and weights compared:\n${run.stdout}`);
  diffs.forEach((d, i) => assert.ok(d <= 1e-5, `${['output', 'weights'][i]}: NumPy differs from the core by ${d}:\n${run.stdout}`));
});
