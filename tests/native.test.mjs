// Runs the native C tests (tests/c/test_core.c and tests/c/test_kernels.c,
// built by build.sh with gcc under AddressSanitizer and
// UndefinedBehaviorSanitizer).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

for (const [name, summary] of [['test_core', 'native C tests'], ['test_kernels', 'native kernel tests']]) {
  const binary = fileURLToPath(new URL(`../build/native/${name}`, import.meta.url));
  test(`${summary} pass under ASan and UBSan`, () => {
    const run = spawnSync(binary, { encoding: 'utf8', env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1' } });
    assert.equal(run.error, undefined, `cannot run ${binary}: build it with 'bash build.sh'`);
    const output = `${run.stdout}${run.stderr}`;
    console.log(output.trim().split('\n').map((l) => `# ${l}`).join('\n'));
    assert.equal(run.status, 0, output);
    assert.match(run.stdout, new RegExp(`${summary}: \\d+ checks, 0 failed`));
  });
}
