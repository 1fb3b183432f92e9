// Numbers the lesson's prose states in words, against the core that computes
// them on the page: if the core's answer changed, the sentence would be wrong.
// (Numbers the prose quotes from a live state are checked by the page tests.)
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention } from '../web/attention.js';
import { SECTIONS } from '../web/sections/registry.js';
import { EX_DEFAULTS } from '../web/sections/three-by-three.js';
import { questionById } from '../web/quiz-questions.js';

let lab;
before(async () => { lab = await loadAttention(); });
const prose = (id) => SECTIONS.find((s) => s.id === id).body.replace(/<[^>]+>/g, '');
const row = (t, i) => Array.from(t.data.subarray(i * t.shape[1], (i + 1) * t.shape[1]));

test('3×3 example: √4 = 2, query 3\'s scores 2 and 1, output row 3 [5, 5] with equal weights on values 1 and 2', () => {
  const text = prose('three-by-three');
  const { q, k, v } = EX_DEFAULTS;
  const scaled = lab.sdpa(q, k, v);
  const raw = lab.sdpa(q, k, v, { scale: 1 });
  assert.match(text, /divided by √4 = 2\b/);
  const ratio = raw.scores.data[8] / scaled.scores.data[8];
  assert.ok(Math.abs(ratio - 2) < 1e-6, `the core divides query 3's score for key 3 by ${ratio}, not 2`);
  assert.match(text, /query 3 scores 2 against key 3 and 1 against the other two keys/);
  assert.deepEqual(row(raw.scores, 2), [1, 1, 2], 'query 3\'s scores before the division, as the core computes them');
  assert.match(text, /output row 3 is \[5, 5\]: its weights on values 1 and 2 are equal, and it leans most on value 3/);
  const out = row(scaled.output, 2);
  assert.ok(out.every((x) => Math.abs(x - 5) < 1e-5), `output row 3 from the core: [${out.join(', ')}]`);
  const [w1, w2, w3] = row(scaled.weights, 2);
  assert.ok(w1 === w2 && w3 > w1, `query 3's weights from the core: ${w1}, ${w2}, ${w3}`);
});

test('one query: the scores are divided by √2 ≈ 1.414 (two entries per key)', () => {
  const q = [[1, 0]], k = [[1, 0], [0, 1]], v = [[1, 0], [0, 1]];
  const divisor = lab.sdpa(q, k, v, { scale: 1 }).scores.data[0] / lab.sdpa(q, k, v).scores.data[0];
  assert.equal(divisor.toFixed(3), '1.414', `the core divides by ${divisor}`);
  assert.match(SECTIONS.find((s) => s.id === 'one-query').mount.toString(), / = √2 ≈ 1\.414 \(each key has two entries\)/, 'the scale step says √2 ≈ 1.414');
});

test('quiz: the model answer on head width (512 / 16 = 32) is the core\'s answer', () => {
  const q = questionById('head-width');
  const expected = q.expected(lab);
  assert.equal(expected, '32', 'the core\'s head width for 512 over 16 heads');
  assert.match(prose('quiz'), new RegExp(`from 512 / 8 = 64 to 512 / 16 = ${expected}\\b`));
});
