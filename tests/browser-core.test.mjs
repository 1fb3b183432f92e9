// The API in a real browser: Debian's Chromium loads web/attention.js from
// http://127.0.0.1 and runs the one-query, two-keys example on the SIMD build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browserSuite } from './helpers/browser.mjs';

const suite = browserSuite();

test('Chromium runs the two-keys example on the SIMD build', async () => {
  const { page, problems, context } = await suite.open('serve.mjs', { ready: false }); // any same-origin page works as a host
  const result = await page.evaluate(async () => {
    const { loadAttention } = await import('/attention.js');
    const lab = await loadAttention();
    const { weights, output } = lab.sdpa([[1, 0]], [[1, 0], [0, 1]], [[10, 0], [0, 20]]);
    return { simd: lab.simd, weights: Array.from(weights.data), output: Array.from(output.data) };
  });
  assert.equal(result.simd, true, 'the SIMD build was used');
  assert.ok(Math.abs(result.weights[0] - 0.670) < 5e-4 && Math.abs(result.weights[1] - 0.330) < 5e-4, `weights ${result.weights}`);
  assert.ok(Math.abs(result.output[0] - 6.698) < 5e-4 && Math.abs(result.output[1] - 6.605) < 5e-4, `output ${result.output}`);
  assert.deepEqual(problems.pageErrors, []);
  assert.deepEqual(problems.foreignRequests, []);
  await context.close();
});
