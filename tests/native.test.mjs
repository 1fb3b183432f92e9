// Runs the native C tests: build.sh compiles each tests/c/test_NAME.c with gcc
// under AddressSanitizer and UndefinedBehaviorSanitizer into
// build/native/test_NAME. Each program ends with "...: N checks, 0 failed".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const programs = readdirSync(`${root}tests/c`).filter((f) => /^test_\w+\.c$/.test(f)).map((f) => f.slice(0, -2)).sort();

test('every tests/c/test_*.c is a native test program', () => {
  assert.ok(programs.includes('test_core'), `found ${programs.join(', ') || 'none'}`);
});

for (const name of programs) {
  test(`native C tests pass under ASan and UBSan: ${name}`, () => {
    const binary = `${root}build/native/${name}`;
    const run = spawnSync(binary, { encoding: 'utf8', env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1' } });
    assert.equal(run.error, undefined, `cannot run ${binary}: build it with 'bash build.sh'`);
    const output = `${run.stdout}${run.stderr}`;
    console.log(output.trim().split('\n').map((l) => `# ${l}`).join('\n'));
    assert.equal(run.status, 0, output);
    assert.match(run.stdout, /: [1-9]\d* checks, 0 failed/);
  });
}
