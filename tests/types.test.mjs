// The TypeScript declarations (web/*.d.ts) compile under --strict, and a
// small program written against them type-checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

test('the declarations and a program using them type-check with tsc --strict', () => {
  const run = spawnSync(process.execPath, [tsc, '--strict', '--noEmit', '--target', 'es2022', '--module', 'es2022',
    '--moduleResolution', 'bundler', '--lib', 'es2022,dom', '--allowJs', 'false', 'tests/types/usage.ts'],
  { cwd: root, encoding: 'utf8' });
  assert.equal(run.status, 0, `tsc reported:\n${run.stdout}${run.stderr}`);
});
