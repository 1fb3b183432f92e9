// web/dist.mjs: `npm run dist` (after `bash build.sh`). Writes dist/:
//
//   dist/*.js, *.css, *.d.ts, index.html, embed.html, wasm/*.wasm
//       the ES modules, styles and wasm a course site copies next to its
//       pages: <attention-lab> (attention-lab.js), the iframe page
//       (embed.html), the lesson (index.html) and the API (attention.js).
//   dist/attention-lab.html
//       the whole lesson in one file: scripts, styles and both wasm builds
//       inlined. It opens offline by double-click (file://) and makes no
//       request at all.
//   dist/attention-lab-scorm12.zip
//       the lesson as a SCORM 1.2 package for an LMS (see scormPackage()):
//       imsmanifest.xml, the launch page index.html, one bundled module (the
//       lesson, its SCORM glue web/scorm/launch.js and the API wrapper
//       @gamestdio/scorm), the styles, the wasm builds, the wrapper's
//       licence. Every file is listed in the manifest; nothing is fetched
//       from outside the package.
//
// Options (npm run dist -- --sections masks,break-it --exercises no-scale):
//   --sections a,b    the lesson sections the package holds (ids of
//                     index.html's <section>s: one-query, …, quiz, break-it;
//                     default all). The score counts what is included.
//   --exercises a,b   the break-it cards it holds (bug names; default all);
//                     refused when --sections leaves break-it out
// A bad option stops the command with a one-line message and exit code 2.
//
// The module list is not kept by hand: esbuild follows the imports of the
// entry points, and every file it reads is copied. Bundling the single file
// is esbuild's job too (wasm through its binary loader, as base64).
import { build } from 'esbuild';
import { zipSync, strToU8 } from 'fflate';
import { parseArgs } from 'node:util';
import { masteryScore } from './progress.js';
import { QUESTIONS } from './quiz-questions.js';
import { EXERCISES } from './exercises.js';
import { VIEW_IDS } from './sections/registry.js';
import { cp, mkdir, readFile, rm, writeFile, stat } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = join(ROOT, 'web');
const DIST = join(ROOT, 'dist');

const ENTRIES = ['attention.js', 'attention-lab.js', 'lesson.js', 'embed.js'];
const STATIC = ['index.html', 'embed.html', 'favicon.svg', 'lesson.css', 'breakit.css', 'quiz.css', 'attention-lab.css', 'embed.css',
  'attention.d.ts', 'attention-lab.d.ts', 'progress.d.ts'];
const WASM = ['wasm/attention-simd.wasm', 'wasm/attention-scalar.wasm'];
// attention.js reads the wasm with node:fs only when it runs in Node.
const EXTERNAL = ['node:*'];

async function exists(path) {
  try { await stat(path); return true; } catch { return false; }
}

/** Every module the entry points import, as paths relative to web/. */
async function moduleFiles() {
  const result = await build({
    entryPoints: ENTRIES.map((f) => join(WEB, f)), bundle: true, write: false, metafile: true,
    format: 'esm', platform: 'browser', external: EXTERNAL, outdir: 'unused', logLevel: 'silent',
  });
  return Object.keys(result.metafile.inputs).map((p) => relative(WEB, join(ROOT, p))).sort();
}

/** The lesson as one module: wasm bytes set first, then the page's entry point. */
async function bundleLesson() {
  const inlineWasm = {
    name: 'inline-wasm',
    setup(b) {
      b.onResolve({ filter: /^attention-lab:inline-wasm$/ }, () => ({ path: 'inline-wasm', namespace: 'attention-lab' }));
      b.onLoad({ filter: /.*/, namespace: 'attention-lab' }, () => ({
        resolveDir: WEB,
        loader: 'js',
        contents: [
          "import { wasmLocation } from './attention.js';",
          "import simd from './wasm/attention-simd.wasm';",
          "import scalar from './wasm/attention-scalar.wasm';",
          'wasmLocation.inline = { simd, scalar };',
        ].join('\n'),
      }));
    },
  };
  const result = await build({
    stdin: { contents: "import 'attention-lab:inline-wasm';\nimport './lesson.js';\n", resolveDir: WEB, sourcefile: 'attention-lab.html' },
    bundle: true, write: false, format: 'esm', platform: 'browser', target: 'es2022',
    loader: { '.wasm': 'binary' }, external: EXTERNAL, plugins: [inlineWasm], legalComments: 'none', logLevel: 'warning',
  });
  return result.outputFiles[0].text;
}

/** Text that may sit inside a <script> or <style> element as it is. */
function inlineSafe(text, what) {
  const safe = text.replace(/<\/(script|style)/gi, '<\\/$1');
  if (/<!--/.test(safe)) throw new Error(`${what} contains "<!--", which cannot be inlined in HTML`);
  return safe;
}

async function singleFile() {
  let html = await readFile(join(WEB, 'index.html'), 'utf8');
  const script = inlineSafe(await bundleLesson(), 'the lesson bundle');
  html = html.replace(/<link rel="stylesheet" href="([a-z-]+\.css)">/g, (_, file) => `\u0000css:${file}\u0000`);
  for (const file of [...html.matchAll(/\u0000css:([a-z-]+\.css)\u0000/g)].map((m) => m[1])) {
    const css = inlineSafe(await readFile(join(WEB, file), 'utf8'), file);
    html = html.replace(`\u0000css:${file}\u0000`, () => `<style>\n${css}</style>`);
  }
  const tag = '<script type="module" src="lesson.js"></script>';
  if (!html.includes(tag)) throw new Error(`index.html no longer has ${tag}`);
  html = html.replace(tag, () => `<script type="module">\n${script}</script>`);
  const icon = await readFile(join(WEB, 'favicon.svg'), 'utf8');
  html = html.replace('<link rel="icon" href="favicon.svg">', () => `<link rel="icon" href="data:image/svg+xml,${encodeURIComponent(icon.trim())}">`);
  html = html.replace('<head>\n', () => '<head>\n<!-- attention-lab in one file, built by web/dist.mjs from web/: scripts, styles and the wasm core are inlined. Opens offline. -->\n');
  if (/<(script|link)[^>]+(src|href)="(?!data:)/.test(html)) throw new Error('attention-lab.html still refers to another file');
  return html;
}

// ---------------------------------------------------------------------------
// The SCORM 1.2 package
// ---------------------------------------------------------------------------

const SCORM_ZIP = 'attention-lab-scorm12.zip';
const SCORM_BUNDLE = 'attention-lab-scorm.js';
const MANIFEST_TITLE = 'Attention, by hand and live';
const WRAPPER_LICENSE = join(ROOT, 'node_modules', '@gamestdio', 'scorm', 'LICENSE');
/** A fixed time for every zip entry, so that the same input gives the same bytes. */
const ZIP_TIME = new Date('2024-01-01T00:00:00Z');

/** A --sections / --exercises choice that cannot be packaged; the command line prints its message alone. */
export class ChoiceError extends Error {}

/**
 * Check a --sections / --exercises choice. Returns { sections, exercises }
 * (ids in page order; exercises [] when break-it is left out). Exercise
 * names are checked even when they would not be used, and --exercises
 * without the break-it section is refused: both would otherwise be ignored
 * without a word.
 */
export function packageChoice({ sections = null, exercises = null } = {}) {
  const allSections = VIEW_IDS;
  const allBugs = EXERCISES.map((e) => e.bug);
  const pick = (given, all, what) => {
    if (given === null) return all;
    const list = given.split(',').map((x) => x.trim()).filter(Boolean);
    const unknown = list.filter((x) => !all.includes(x));
    if (unknown.length) throw new ChoiceError(`--${what}: unknown ${unknown.join(', ')} (choose from ${all.join(', ')})`);
    if (!list.length) throw new ChoiceError(`--${what} needs at least one name`);
    return all.filter((x) => list.includes(x));
  };
  const chosen = pick(sections, allSections, 'sections');
  const bugs = pick(exercises, allBugs, 'exercises');
  if (!chosen.includes('break-it')) {
    if (exercises !== null) throw new ChoiceError(`--exercises needs the break-it section, and --sections leaves it out (add break-it, or drop --exercises)`);
    return { sections: chosen, exercises: [] };
  }
  return { sections: chosen, exercises: bugs };
}

/**
 * The launch page: index.html running the SCORM bundle, its <main> naming
 * the chosen sections and cards (lesson-page.js and breakit.js read them).
 */
function launchPage(html, { sections, exercises }) {
  const all = sections.length === VIEW_IDS.length;
  const cards = exercises.length && exercises.length < EXERCISES.length ? ` data-exercises="${exercises.join(',')}"` : '';
  const main = '<main id="lesson">';
  if (!html.includes(main)) throw new Error(`index.html no longer has ${main}`);
  html = html.replace(main, `<main id="lesson"${all ? '' : ` data-sections="${sections.join(',')}"`}${cards}>`);
  const skip = sections[0];
  html = html.replace(/<a class="skip" href="#[a-z0-9-]+">/, `<a class="skip" href="#${skip}">`);
  const tag = '<script type="module" src="lesson.js"></script>';
  if (!html.includes(tag)) throw new Error(`index.html no longer has ${tag}`);
  return html.replace(tag, `<script type="module" src="${SCORM_BUNDLE}"></script>`);
}

/** The lesson and its SCORM glue as one module (the glue first: it sets up the progress record). */
async function bundleScorm() {
  const result = await build({
    stdin: { contents: "import './scorm/launch.js';\nimport './lesson.js';\n", resolveDir: WEB, sourcefile: SCORM_BUNDLE },
    bundle: true, write: false, format: 'esm', platform: 'browser', target: 'es2022',
    external: EXTERNAL, legalComments: 'eof', logLevel: 'warning',
  });
  return result.outputFiles[0].text;
}

const xmlText = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** imsmanifest.xml (SCORM 1.2 CAM): one organization, one item, one SCO resource listing `files`; `mastery` null for none. */
export function manifest({ files, mastery, title = MANIFEST_TITLE }) {
  const list = files.map((f) => `      <file href="${xmlText(f)}"/>`).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<manifest identifier="attention-lab-scorm12" version="1.0"
  xmlns="http://www.imsproject.org/xsd/imscp_rootv1p1p2"
  xmlns:adlcp="http://www.adlnet.org/xsd/adlcp_rootv1p2">
  <metadata>
    <schema>ADL SCORM</schema>
    <schemaversion>1.2</schemaversion>
  </metadata>
  <organizations default="attention-lab">
    <organization identifier="attention-lab">
      <title>${xmlText(title)}</title>
      <item identifier="lesson" identifierref="lesson-sco" isvisible="true">
        <title>${xmlText(title)}</title>
${mastery === null ? '' : `        <adlcp:masteryscore>${mastery}</adlcp:masteryscore>\n`}      </item>
    </organization>
  </organizations>
  <resources>
    <resource identifier="lesson-sco" type="webcontent" adlcp:scormtype="sco" href="index.html">
${list}
    </resource>
  </resources>
</manifest>
`;
}

/**
 * The score of a package holding `picked` (from packageChoice): max is one
 * point per quiz question (when the quiz is in) plus one per exercise;
 * mastery is progress.js's rule applied to it, or null when nothing is
 * scored (reading sections only: the lesson then reports "completed").
 */
export function packageScore({ sections, exercises }) {
  const max = (sections.includes('quiz') ? QUESTIONS.length : 0) + exercises.length;
  return { max, mastery: max > 0 ? masteryScore(max) : null };
}

/** Write dist/attention-lab-scorm12.zip (or into `outDir`), scored as packageScore() says. */
export async function scormPackage(choice = {}, outDir = DIST) {
  const index = await readFile(join(WEB, 'index.html'), 'utf8');
  const picked = packageChoice(choice);
  const { max, mastery } = packageScore(picked);
  const entries = {
    'index.html': strToU8(launchPage(index, picked)),
    [SCORM_BUNDLE]: strToU8(await bundleScorm()),
    'licenses/gamestdio-scorm.txt': await readFile(WRAPPER_LICENSE),
  };
  for (const file of ['favicon.svg', ...STATIC.filter((f) => f.endsWith('.css') && index.includes(`href="${f}"`)), ...WASM]) {
    entries[file] = await readFile(join(WEB, file));
  }
  const files = Object.keys(entries).sort();
  const zip = { 'imsmanifest.xml': strToU8(manifest({ files, mastery })) };
  for (const file of files) zip[file] = entries[file];
  const bytes = zipSync(zip, { level: 9, mtime: ZIP_TIME });
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, SCORM_ZIP), bytes);
  return { file: SCORM_ZIP, files: ['imsmanifest.xml', ...files], max, mastery, ...picked, bytes: bytes.length };
}

/** The files dist/ copies from web/ as they are (paths relative to web/); nothing is written. */
export async function distFiles() {
  return [...await moduleFiles(), ...STATIC, ...WASM];
}

export async function dist(choice = {}) {
  packageChoice(choice); // a bad choice stops here, before dist/ is emptied
  for (const file of WASM) {
    if (!(await exists(join(WEB, file)))) throw new Error(`web/${file} is missing: run 'bash build.sh' first`);
  }
  await rm(DIST, { recursive: true, force: true });
  await mkdir(join(DIST, 'wasm'), { recursive: true });
  const files = await distFiles();
  for (const file of files) {
    await mkdir(dirname(join(DIST, file)), { recursive: true });
    await cp(join(WEB, file), join(DIST, file));
  }
  const html = await singleFile();
  await writeFile(join(DIST, 'attention-lab.html'), html);
  const scorm = await scormPackage(choice);
  return { files: [...files, 'attention-lab.html', scorm.file], singleFileBytes: Buffer.byteLength(html), scorm };
}

/** The command line's options; a bad one (unknown, misspelt, a bad name) is said in one line, exit code 2. */
function commandLine() {
  try {
    const { values } = parseArgs({ options: { sections: { type: 'string' }, exercises: { type: 'string' } } });
    const choice = { sections: values.sections ?? null, exercises: values.exercises ?? null };
    packageChoice(choice);
    return choice;
  } catch (e) {
    if (!(e instanceof ChoiceError) && !String(e.code).startsWith('ERR_PARSE_ARGS')) throw e;
    console.error(`[attention-lab] dist: ${e.message}`);
    process.exit(2);
  }
}

if (process.argv[1] && basename(fileURLToPath(import.meta.url)) === basename(process.argv[1])) {
  const { files, singleFileBytes, scorm } = await dist(commandLine());
  console.log(`[attention-lab] dist/: ${files.length} files; attention-lab.html is ${(singleFileBytes / 1024).toFixed(0)} KiB`);
  console.log(`[attention-lab] dist/${scorm.file}: ${scorm.files.length} files, ${(scorm.bytes / 1024).toFixed(0)} KiB; `
    + `sections ${scorm.sections.join(', ')}; score max ${scorm.max}, mastery ${scorm.mastery}`);
}
