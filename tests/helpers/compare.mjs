// One comparison for every numeric test: entry i of `got` is close to `want`
// when |got - want| <= max(atol, rtol * |want|), or when both are the same
// value (equal infinities). NaN is never close. On failure the message lists
// the worst entries by multi-dimensional index with got, want, the absolute
// and the relative error, the way llm.c's check_tensor prints a tensor.
// Below it, the checks of a refused call: refuses() and resultsUnchanged().
import assert from 'node:assert/strict';
import { AttentionError } from '../../web/attention.js';

const SHOWN = 5; // worst entries listed in a failure message

/** The largest |x| in a list of numbers: scales a tolerance to a tensor's magnitude. */
export function largestMagnitude(values) {
  let m = 0;
  for (const x of values) m = Math.max(m, Math.abs(x));
  return m;
}

/** Flat index -> multi-dimensional index for a row-major shape. */
export function unravel(flat, shape) {
  const index = [];
  for (let d = shape.length - 1; d >= 0; d--) {
    index.unshift(flat % shape[d]);
    flat = Math.floor(flat / shape[d]);
  }
  return index;
}

/**
 * Compare two flat arrays. Returns { ok, max, maxAbs, bad, report }:
 * max is the largest ratio |got - want| / max(atol, rtol * |want|) (above 1
 * means out of tolerance, Infinity for NaN), maxAbs the largest absolute
 * error, bad how many entries are out of tolerance, report the text to print.
 */
export function compare(got, want, { shape = [want.length], label = 'tensor', atol = 0, rtol = 0 } = {}) {
  if (got.length !== want.length) {
    return { ok: false, max: Infinity, maxAbs: Infinity, bad: Math.max(got.length, want.length),
      report: `${label}: ${got.length} values, want ${want.length}` };
  }
  let max = 0;
  let maxAbs = 0;
  const errors = [];
  for (let i = 0; i < want.length; i++) {
    const g = got[i];
    const w = want[i];
    const abs = g === w ? 0 : Math.abs(g - w);
    const allowed = Math.max(atol, rtol * Math.abs(w));
    const ratio = abs === 0 ? 0 : Number.isNaN(abs) ? Infinity : abs / allowed;
    if (ratio > max) max = ratio;
    if (!(abs <= maxAbs)) maxAbs = Number.isNaN(abs) ? Infinity : abs;
    if (ratio > 1) errors.push({ i, abs: Number.isNaN(abs) ? Infinity : abs, ratio });
  }
  const ok = errors.length === 0;
  const tolerance = rtol === 0 ? `|got - want| <= ${atol.toExponential(2)}`
    : atol === 0 ? `|got - want| <= ${rtol.toExponential(2)} * |want|`
      : `|got - want| <= max(${atol.toExponential(2)}, ${rtol.toExponential(2)} * |want|)`;
  if (ok) return { ok, max, maxAbs, bad: 0, report: `${label}: OK, ${want.length} entries within ${tolerance}, largest abs error ${maxAbs.toExponential(2)}` };
  errors.sort((a, b) => b.ratio - a.ratio || a.i - b.i);
  const lines = errors.slice(0, SHOWN).map(({ i, abs }) => {
    const rel = abs / Math.abs(want[i]);
    return `  [${unravel(i, shape).join(', ')}] got ${got[i]} want ${want[i]} abs ${abs.toExponential(2)} rel ${rel.toExponential(2)}`;
  });
  return { ok, max, maxAbs, bad: errors.length,
    report: `${label}: NOT OK, ${errors.length} of ${want.length} entries outside ${tolerance}; worst:\n${lines.join('\n')}` };
}

/** Assert that `got` is close to `want` (see compare); returns the comparison. */
export function assertClose(got, want, options) {
  const result = compare(got, want, options);
  assert.ok(result.ok, result.report);
  return result;
}

// ---------------------------------------------------------------------------
// Refusals: the lab's errors and what a refused call leaves behind
// ---------------------------------------------------------------------------

/**
 * Assert that fn() throws an AttentionError with `code` and, when `pattern`
 * is given, a message matching it. A failure names the call (its source
 * text), the code wanted and what was thrown instead, or that nothing was.
 * Returns the error, for further checks.
 */
export function refuses(fn, code, pattern = null) {
  const call = String(fn).replace(/\s+/g, ' ');
  let thrown;
  let threw = false;
  try { fn(); } catch (err) { thrown = err; threw = true; }
  assert.ok(threw, `${call}: expected AttentionError ${code}, got no error`);
  assert.ok(thrown instanceof AttentionError,
    `${call}: expected AttentionError ${code}, got ${thrown?.constructor?.name ?? typeof thrown}: ${thrown?.message ?? thrown}`);
  assert.equal(thrown.code, code, `${call}: code for: ${thrown.message}`);
  if (pattern) assert.match(thrown.message, pattern, `${call}: message "${thrown.message}" does not match ${pattern}`);
  return thrown;
}

/**
 * Run `run` (a call returning { output, weights }) once now and return a
 * check that runs it again and asserts the same output and weights: that a
 * refused or hostile call in between (`after` names it) changed nothing.
 */
export function resultsUnchanged(run, after = 'a refused call') {
  const baseline = run();
  return () => {
    const again = run();
    assert.deepEqual(again.output.data, baseline.output.data, `output changed after ${after}`);
    assert.deepEqual(again.weights.data, baseline.weights.data, `weights changed after ${after}`);
  };
}
