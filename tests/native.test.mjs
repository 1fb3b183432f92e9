// Runs the native C tests (tests/c/test_core.c, built by build.sh with gcc
// under AddressSanitizer and UndefinedBehaviorSanitizer).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const binary = fileURLToPath(new URL('../build/native/test_core', import.meta.url));

test('native C tests pass under ASan and UBSan', () => {
  const run = spawnSync(binary, { encoding: 'utf8', env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1' } });
  assert.equal(run.error, undefined, `cannot run ${binary}: build it with 'bash build.sh'`);
  const output = `${run.stdout}${run.stderr}`;
  console.log(output.trim().split('\n').map((l) => `# ${l}`).join('\n'));
  assert.equal(run.status, 0, output);
  assert.match(run.stdout, /native C tests: \d+ checks, 0 failed/);
});
