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
import { pytorchScript, numpyScript, sdpaCheckScript, CHECK_SIZES, float32Text, transposeShapes } from '../web/pytorch-script.js';
import { rng, sdpaReference } from './helpers/reference.mjs';
import { assertClose } from './helpers/compare.mjs';

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

// NumPy is optional on a test machine: the script is run only where python3 imports it.
const numpy = spawnSync('python3', ['-c', 'import numpy'], { encoding: 'utf8' });
const noNumpy = numpy.error ? `python3 not found (${numpy.error.code})` : numpy.status !== 0 ? 'python3 cannot import numpy' : false;

test('the NumPy script, run by python3, prints the core\'s numbers', { skip: noNumpy }, () => {
  for (const c of cases()) {
    const res = core(c);
    const run = spawnSync('python3', ['-'], { input: numpyScript({ ...c, output: res.output.data, weights: res.weights.data }), encoding: 'utf8' });
    assert.equal(run.status, 0, `${c.name}: python3 failed:\n${run.stderr}`);
    const diffs = [...run.stdout.matchAll(/largest difference from the page: (\S+)/g)].map((m) => Number(m[1]));
    assert.equal(diffs.length, 2, `${c.name}: two comparisons printed:\n${run.stdout}`);
    for (const d of diffs) assert.ok(d <= 1e-5, `${c.name}: NumPy differs from the core by ${d}:\n${run.stdout}`);
  }
});

// Without NumPy or PyTorch, python3 can still check that both scripts are valid Python.
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
test('both scripts are valid Python', { skip: python.error ? `python3 not found (${python.error.code})` : false }, () => {
  const c = cases()[1];
  const res = core(c);
  for (const build of [pytorchScript, numpyScript]) {
    const script = build({ ...c, output: res.output.data, weights: res.weights.data });
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
  assert.match(script, /torch\.allclose\(fused, by_hand, atol=[\d.e-]+, rtol=[\d.e-]+\)/, 'compared with allclose and a tolerance, never ==');
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
