// The README's JS examples run as written, from the repo root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);

test('the README has JS examples', () => assert.ok(blocks.length >= 2, `found ${blocks.length}`));

test('the README API and multi-head examples run together without error', () => {
  // The multi-head example uses `lab` from the first one, as a reader would.
  const api = blocks.filter((b) => /loadAttention|createMultiHeadAttention|createTrainer|sdpaTiled/.test(b));
  const script = api.join('\n{\n') + '\n}'.repeat(api.length - 1);
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /0\.669|0\.670/);
  assert.match(run.stdout, /true ALL_MASKED_ROW/);
  assert.match(run.stdout, /\[ 2, 5, 32 \] \[ 2, 4, 5, 5 \]/);
  assert.match(run.stdout, /150 1\ntrue/);
  assert.match(run.stdout, /^3 Float32Array/m);
  assert.match(run.stdout, /^true$/m);
  assert.match(run.stdout, /^same dv: true$/m);
});
