// A short run of every libFuzzer harness of the C core (tests/fuzz/fuzz_*.c)
// on its corpus, under ASan and UBSan, with the invariants each harness
// checks. Longer runs: npm run fuzz -- SECONDS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const harnesses = readdirSync(`${root}tests/fuzz`).filter((f) => /^fuzz_\w+\.c$/.test(f)).map((f) => f.slice(5, -2)).sort();
const SECONDS_EACH = 3;

test('every harness has a committed seed corpus', () => {
  for (const name of harnesses) {
    const seeds = readdirSync(`${root}tests/fuzz/corpus/${name}`, { withFileTypes: true }).filter((e) => e.isFile());
    assert.ok(seeds.length > 0, `tests/fuzz/corpus/${name} is empty`);
  }
});

test(`each fuzz harness runs ${SECONDS_EACH} s clean: ${harnesses.join(', ')}`, { timeout: 600_000 }, () => {
  const run = spawnSync('bash', [`${root}tests/fuzz/fuzz.sh`, String(SECONDS_EACH)], { encoding: 'utf8' });
  const output = `${run.stdout}${run.stderr}`;
  console.log(output.trim().split('\n').filter((l) => /fuzz_\w+:|FAILED|invariant|ERROR/.test(l)).map((l) => `# ${l}`).join('\n'));
  assert.equal(run.status, 0, output.split('\n').slice(-60).join('\n'));
  for (const name of harnesses) assert.match(run.stdout, new RegExp(`fuzz_${name}: \\d+ executions`), `no summary for fuzz_${name}`);
});
