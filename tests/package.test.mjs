// What the npm package and dist/ ship: every file a page, a module or a
// declaration refers to is in the file list, found by reading the sources
// (not from a list kept by hand), and web/dist.mjs refuses options it would
// otherwise ignore, or given twice, and a --out folder it must not empty.
// `npm pack --dry-run` gives the package's list, and distFiles() the list
// dist/ copies; one test builds, into build/dist-cli-test/ (--out, --title).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { unzipSync } from 'fflate';
import { distFiles, outputDir, packageChoice, packageScore, scormSummary, ChoiceError } from '../web/dist.mjs';
import { EXERCISES } from '../web/exercises.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
/** The pages a course site serves (paths relative to the repo root). */
const PAGES = ['web/index.html', 'web/embed.html'];

// ---------------------------------------------------------------------------
// References, read from the sources
// ---------------------------------------------------------------------------

/**
 * What one file refers to: { spec, kind } with kind 'module' (an import),
 * 'declaration' (an import in a .d.ts: the types of spec), 'file' (a URL or
 * a file name the code loads) or 'folder' (a URL ending in '/': the code
 * loads files from that folder by computed names; `names` matches those
 * names, from the template literals of the same file).
 */
function references(path) {
  const text = readFileSync(join(ROOT, path), 'utf8');
  if (path.endsWith('.html')) {
    const found = [...text.matchAll(/\s(?:src|href)="([^"]+)"/g)].map((m) => ({ spec: m[1], kind: 'file' }));
    for (const m of text.matchAll(/<script type="module">([\s\S]*?)<\/script>/g)) found.push(...scriptReferences(m[1], path));
    return found;
  }
  if (path.endsWith('.css')) {
    return [...text.matchAll(/url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]/g)]
      .map((m) => ({ spec: m[1] ?? m[2], kind: 'file' }));
  }
  if (/\.(m?js|d\.ts)$/.test(path)) return scriptReferences(text, path);
  return [];
}

/** Imports, `new URL('…', import.meta.url)` and file names in string literals (e.g. a list of stylesheets). */
function scriptReferences(text, path) {
  const declaration = path.endsWith('.d.ts');
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, declaration ? ts.ScriptKind.TS : ts.ScriptKind.JS);
  const found = [];
  const computed = []; // `attention-${variant}.wasm` as /^attention-.*\.wasm$/
  const literal = (node) => node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node));
  const importKind = declaration ? 'declaration' : 'module';
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && literal(node.moduleSpecifier)) {
      found.push({ spec: node.moduleSpecifier.text, kind: importKind });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && literal(node.arguments[0])) {
      found.push({ spec: node.arguments[0].text, kind: importKind });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && literal(node.argument.literal)) {
      found.push({ spec: node.argument.literal.text, kind: 'declaration' });
    } else if (ts.isNewExpression(node) && node.expression.getText(source) === 'URL' && literal(node.arguments?.[0])
      && node.arguments[1]?.getText(source) === 'import.meta.url') {
      const spec = node.arguments[0].text;
      found.push({ spec, kind: spec.endsWith('/') ? 'folder' : 'file' });
    } else if (ts.isTemplateExpression(node) && /\.[a-z]+$/.test(node.templateSpans.at(-1).literal.text)) {
      const parts = [node.head.text, ...node.templateSpans.map((span) => span.literal.text)];
      computed.push(new RegExp(`^${parts.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`));
    } else if (literal(node) && /^[\w-]+(\/[\w-]+)*\.(css|wasm|svg|png|json|html)$/.test(node.text)
      && existsSync(join(ROOT, dirname(path), node.text))) {
      // A bare file name next to this module (e.g. 'lesson.css', loaded with new URL(file, base)).
      found.push({ spec: node.text, kind: 'file' });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  for (const ref of found) if (ref.kind === 'folder') ref.names = computed;
  return found;
}

/**
 * Follow the references from `roots` (repo-relative paths). Returns the
 * problems: references that `shipped` (a Set of repo-relative paths) lacks,
 * and references to files that do not exist. `where` names the list ("the
 * package", "dist/").
 */
function missingReferences(roots, shipped, where) {
  const problems = [];
  const seen = new Set();
  const queue = [...roots];
  const need = (from, spec, target) => {
    if (!existsSync(join(ROOT, target))) problems.push(`${from} refers to '${spec}': ${target} does not exist`);
    else if (!shipped.has(target)) problems.push(`${from} refers to '${spec}': ${target} is not in ${where}`);
    else queue.push(target);
  };
  while (queue.length) {
    const path = queue.shift();
    if (seen.has(path)) continue;
    seen.add(path);
    for (const { spec, kind, names } of references(path)) {
      if (/^([a-z][a-z0-9+.-]*:|\/\/|#)/i.test(spec)) continue; // https:, data:, node:, in-page anchors
      if (!/^\.{0,2}\//.test(spec) && (kind === 'module' || kind === 'declaration')) {
        // A bare module name: it must be a dependency the package declares.
        const name = spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');
        if (!pkg.dependencies?.[name]) problems.push(`${path} imports '${spec}', which is not in package.json "dependencies"`);
        continue;
      }
      const target = posix.normalize(posix.join(posix.dirname(path), spec));
      if (kind === 'declaration') {
        // TypeScript takes the types of './x.js' from './x.d.ts'.
        need(path, spec, target.replace(/\.js$/, '.d.ts'));
      } else if (kind === 'folder') {
        // The module's own folder ('./') holds the files it names literally, found above.
        if (target.replace(/\/$/, '') === posix.dirname(path)) continue;
        const dir = join(ROOT, target);
        const files = existsSync(dir) ? readdirSync(dir).filter((f) => statSync(join(dir, f)).isFile()
          && (names.length ? names.some((re) => re.test(f)) : !f.startsWith('.'))) : [];
        if (!files.length) problems.push(`${path} loads files from '${spec}' (${names.join(', ') || 'any name'}): none in ${target} (run 'bash build.sh')`);
        for (const f of files) need(path, `${spec}${f}`, posix.join(target, f));
      } else {
        need(path, spec, target);
      }
    }
  }
  return { problems, seen };
}

/** package.json's "types" and the targets of "exports" (wildcards left out), repo-relative. */
function exportTargets() {
  const targets = [pkg.types];
  const walk = (value) => {
    if (typeof value === 'string') targets.push(value);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(pkg.exports);
  return [...new Set(targets.filter((t) => t && !t.includes('*')).map((t) => posix.normalize(t)))];
}

// ---------------------------------------------------------------------------
// The npm package
// ---------------------------------------------------------------------------

test('the npm package holds every file its pages, modules and declarations refer to', () => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const shipped = new Set(JSON.parse(out)[0].files.map((f) => f.path));
  const roots = [...PAGES, ...exportTargets()];
  const problems = roots.filter((r) => !shipped.has(r)).map((r) => `${r} (a page or a package.json export) is not in the package`);
  const fromRoots = missingReferences(roots, shipped, 'the package');
  const expected = ['web/lesson.js', 'web/sections/registry.js', 'web/lesson.css', 'web/wasm/attention-simd.wasm', 'web/wasm/attention-scalar.wasm'];
  const unseen = expected.filter((f) => !fromRoots.seen.has(f));
  assert.deepEqual(unseen, [], `the scan from ${roots.join(', ')} did not reach ${unseen.join(', ')}; it saw ${[...fromRoots.seen].join(', ')}`);
  // Everything shipped is followed too: a shipped module (web/scorm/launch.js) must not import a file left out.
  const others = [...shipped].filter((p) => /\.(html|m?js|d\.ts|css)$/.test(p) && !fromRoots.seen.has(p));
  problems.push(...new Set([...fromRoots.problems, ...missingReferences(others, shipped, 'the package').problems]));
  assert.deepEqual(problems, [], `${problems.length} file(s) missing from package.json "files":\n  ${problems.join('\n  ')}`);
});

// ---------------------------------------------------------------------------
// dist/
// ---------------------------------------------------------------------------

test('dist/ holds every file its pages, modules and declarations (.d.ts imports) refer to', async () => {
  const files = await distFiles();
  const shipped = new Set(files.map((f) => `web/${f}`));
  const roots = files.filter((f) => /\.(html|js|d\.ts|css)$/.test(f)).map((f) => `web/${f}`);
  assert.ok(roots.includes('web/attention-lab.d.ts'), `dist copies no attention-lab.d.ts: ${files.join(', ')}`);
  const { problems } = missingReferences(roots, shipped, 'dist/');
  assert.deepEqual(problems, [], `${problems.length} file(s) missing from dist/ (web/dist.mjs):\n  ${problems.join('\n  ')}`);
});

// ---------------------------------------------------------------------------
// dist.mjs options
// ---------------------------------------------------------------------------

test('--exercises is refused without break-it in --sections, and its names are always checked', () => {
  const bug = EXERCISES[0].bug;
  const cases = [
    [{ sections: 'masks', exercises: bug }, /--exercises.*break-it/],
    [{ sections: 'masks,quiz', exercises: 'bogus' }, /--exercises.*bogus/],
    [{ sections: 'masks,break-it', exercises: 'bogus' }, /--exercises.*bogus/],
    [{ exercises: `${bug},bogus` }, /--exercises.*bogus/],
    [{ exercises: ',' }, /--exercises needs at least one name/],
    [{ sections: 'masks,nope' }, /--sections.*nope/],
  ];
  const wrong = [];
  for (const [choice, message] of cases) {
    try {
      const picked = packageChoice(choice);
      wrong.push(`${JSON.stringify(choice)} was accepted, giving ${JSON.stringify(picked)}`);
    } catch (e) {
      if (!message.test(e.message)) wrong.push(`${JSON.stringify(choice)} was refused, but the message does not match ${message}: ${e.message}`);
    }
  }
  assert.deepEqual(wrong, [], `${wrong.length} of ${cases.length} bad choices not refused clearly:\n  ${wrong.join('\n  ')}`);
  // What is fine stays fine.
  assert.deepEqual(packageChoice({ sections: 'masks,break-it', exercises: bug }), { sections: ['masks', 'break-it'], exercises: [bug] });
  assert.deepEqual(packageChoice({ sections: 'masks' }), { sections: ['masks'], exercises: [] });
});

/**
 * Run `node web/dist.mjs args` from the repo root. With `guarded`, removing
 * a folder throws instead (fs/promises' rm is replaced before dist.mjs
 * loads): a test of a refused --out cannot empty the repo if the refusal
 * breaks.
 */
function runDist(args, { guarded = false } = {}) {
  const guard = "import fsp from 'node:fs/promises'; import { syncBuiltinESMExports } from 'node:module';"
    + " fsp.rm = async (path) => { throw new Error(`dist removed ${path}`); }; syncBuiltinESMExports();";
  const node = guarded ? [`--import=data:text/javascript,${encodeURIComponent(guard)}`] : [];
  return spawnSync(process.execPath, [...node, join(ROOT, 'web', 'dist.mjs'), ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
}

test('npm run dist with a bad option stops with a message naming it, and builds nothing', () => {
  const cases = [
    [['--sections', 'masks', '--exercises', 'no-scale'], /--exercises.*break-it/],
    [['--sections', 'masks', '--exercises', 'bogus'], /--exercises.*bogus/],
    [['--exercise', 'no-scale'], /--exercise\b/],
    // An option given twice would otherwise keep its last value without a word.
    [['--sections', 'masks', '--sections', 'quiz'], /--sections is given twice/],
    [['--exercises=no-scale', '--sections', 'break-it', '--exercises', 'mask-output'], /--exercises is given twice/],
    [['--title', 'A', '--title', 'B'], /--title is given twice/],
    [['--out', 'build/a', '--out', 'build/b'], /--out is given twice/],
    [['--help', '--help'], /--help is given twice/],
    [['--title', ''], /--title needs some text/],
    [['--title', 'two\nlines'], /--title holds a control character/],
    [['--title', 'x'.repeat(201)], /--title is 201 characters long; SCORM 1.2 allows 200/],
    [['--out', ''], /--out needs a folder/],
  ];
  for (const [args, message] of cases) {
    const run = runDist(args, { guarded: true });
    const said = `${run.stdout}${run.stderr}`.trim();
    assert.equal(run.status, 2, `node web/dist.mjs ${args.join(' ')} exited ${run.status}, not 2; it printed:\n${said}`);
    assert.match(run.stderr, message, `node web/dist.mjs ${args.join(' ')}: stderr does not say what is wrong:\n${run.stderr}`);
    assert.equal(run.stderr.trim().split('\n').length, 1, `node web/dist.mjs ${args.join(' ')}: not one line:\n${run.stderr}`);
    assert.doesNotMatch(run.stderr, /^\s+at /m, `node web/dist.mjs ${args.join(' ')}: a stack trace instead of a message:\n${run.stderr}`);
    assert.doesNotMatch(run.stdout, /dist\//, `node web/dist.mjs ${args.join(' ')} refused, but built:\n${run.stdout}`);
  }
});

test('npm run dist says how the SCORM package is graded: its score max and mastery, or that it has nothing to score', () => {
  const line = (sections) => {
    const choice = packageChoice({ sections });
    return scormSummary({ file: 'attention-lab-scorm12.zip', files: ['a', 'b'], bytes: 2048, ...choice, ...packageScore(choice) });
  };
  const graded = line('masks,quiz');
  const { max, mastery } = packageScore(packageChoice({ sections: 'masks,quiz' }));
  assert.ok(max > 0 && mastery > 0, `masks and the quiz are scored (max ${max}, mastery ${mastery})`);
  assert.equal(graded, `attention-lab-scorm12.zip: 2 files, 2 KiB; sections masks, quiz; score max ${max}, mastery ${mastery}`);
  // A reading-only package has no mastery score: the line says so in words, not "null".
  const reading = line('masks');
  assert.match(reading, /; sections masks; nothing to score: no mastery score and no score \(the LMS is told incomplete until every section is visited, then completed; never passed or failed\)$/, reading);
  assert.doesNotMatch(reading, /null|score max 0/, reading);
});

test('npm run dist -- --help prints the usage, exit code 0, and builds nothing', () => {
  const run = runDist(['--help'], { guarded: true });
  assert.equal(run.status, 0, `exit code ${run.status}:\n${run.stdout}${run.stderr}`);
  assert.equal(run.stderr, '');
  assert.match(run.stdout, /^Usage: node web\/dist\.mjs \[options\]/);
  for (const option of ['--sections', '--exercises', '--title', '--out', '--help']) assert.match(run.stdout, new RegExp(`^  ${option} `, 'm'), `the usage names ${option}`);
  assert.doesNotMatch(run.stdout, /\[attention-lab\]/, `--help built:\n${run.stdout}`);
});

test('--out refuses a folder dist must not empty: the repo, a folder above it, web/ or one in it, a folder of other files', async () => {
  const scratch = join(ROOT, 'build', 'dist-out-test');
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(join(scratch, 'notes'), { recursive: true });
  writeFileSync(join(scratch, 'notes', 'mine.txt'), 'not made by dist');
  writeFileSync(join(scratch, 'a-file'), '');
  mkdirSync(join(scratch, 'earlier'));
  writeFileSync(join(scratch, 'earlier', 'attention-lab.html'), '');
  const refused = [
    [ROOT, /holds the repo/], ['.', /holds the repo/], ['..', /holds the repo/], ['/', /holds the repo/],
    [join(ROOT, 'web'), /is in web\//], ['web/wasm', /is in web\//], [join(ROOT, 'web', 'new-folder'), /is in web\//],
    ['tests', /holds other files/], [join(scratch, 'notes'), /holds other files/], [join(scratch, 'a-file'), /is a file/],
  ];
  const wrong = [];
  for (const [out, message] of refused) {
    try {
      wrong.push(`${out} was accepted, as ${await outputDir(out)}`);
    } catch (e) {
      if (!(e instanceof ChoiceError) || !message.test(e.message)) wrong.push(`${out}: ${e.message} (expected ${message})`);
    }
  }
  assert.deepEqual(wrong, [], `${wrong.length} of ${refused.length} folders not refused clearly:\n  ${wrong.join('\n  ')}`);
  // What may be emptied: dist/, a new folder, an empty one, an earlier output.
  assert.equal(await outputDir('dist'), join(ROOT, 'dist'));
  for (const out of [join(scratch, 'new'), scratch + '/empty', join(scratch, 'earlier')]) {
    if (out.endsWith('empty')) mkdirSync(out);
    assert.equal(await outputDir(out), resolve(out));
  }
  // The command line says so in one line, exit code 2, and removes nothing (removing would throw here).
  for (const out of ['.', '..', 'web', 'web/wasm']) {
    const run = runDist(['--out', out], { guarded: true });
    assert.equal(run.status, 2, `--out ${out}: exit code ${run.status}:\n${run.stdout}${run.stderr}`);
    assert.match(run.stderr, /^\[attention-lab\] dist: --out .*dist empties the folder it writes\n$/, `--out ${out}`);
  }
  rmSync(scratch, { recursive: true, force: true });
});

test('npm run dist -- --out DIR --title TEXT writes there and titles the SCORM package', () => {
  const out = join(ROOT, 'build', 'dist-cli-test');
  rmSync(out, { recursive: true, force: true });
  const title = 'Attention & masks: "week 3"';
  const run = runDist(['--out', 'build/dist-cli-test', '--title', title, '--sections', 'masks,quiz']);
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
  assert.match(run.stdout, /\[attention-lab\] build\/dist-cli-test\/: \d+ files/);
  for (const file of ['index.html', 'attention-lab.html', 'attention-lab-scorm12.zip', 'load-failure.js', 'wasm/attention-simd.wasm']) {
    assert.ok(existsSync(join(out, file)), `${file} is in build/dist-cli-test/`);
  }
  // The copies' pages explain a failed load as a packaged copy does, not as the repository's (see load-failure.js).
  for (const page of ['index.html', 'embed.html']) {
    const html = readFileSync(join(out, page), 'utf8');
    assert.match(html, /<script src="load-failure\.js"><\/script>/, `build/dist-cli-test/${page} runs load-failure.js`);
    assert.doesNotMatch(html, /data-copy="repository"/, `build/dist-cli-test/${page} is marked as the repository's copy`);
  }
  const manifest = new TextDecoder().decode(unzipSync(readFileSync(join(out, 'attention-lab-scorm12.zip')))['imsmanifest.xml']);
  const titles = [...manifest.matchAll(/<title>([^<]*)<\/title>/g)].map((m) => m[1]);
  assert.deepEqual(titles, ['Attention &amp; masks: &quot;week 3&quot;', 'Attention &amp; masks: &quot;week 3&quot;']);
  // Run again into the same folder: an earlier output is replaced.
  const again = runDist(['--out', 'build/dist-cli-test']);
  assert.equal(again.status, 0, `${again.stdout}${again.stderr}`);
  assert.match(new TextDecoder().decode(unzipSync(readFileSync(join(out, 'attention-lab-scorm12.zip')))['imsmanifest.xml']), /<title>Attention, by hand and live<\/title>/);
  rmSync(out, { recursive: true, force: true });
  // A folder outside the repository is named by its absolute path, not as ../../tmp/…
  const outside = mkdtempSync(join(tmpdir(), 'attention-lab-dist-'));
  const far = runDist(['--out', outside, '--sections', 'masks']);
  assert.equal(far.status, 0, `${far.stdout}${far.stderr}`);
  assert.ok(far.stdout.includes(`[attention-lab] ${outside}/: `), `the folder is named as given:\n${far.stdout}`);
  rmSync(outside, { recursive: true, force: true });
});
