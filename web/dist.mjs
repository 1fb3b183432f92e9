// web/dist.mjs: `npm run dist` (after `bash build.sh`). Writes dist/:
//
//   dist/*.js, *.css, *.d.ts, index.html, embed.html, wasm/*.wasm
//       the ES modules, styles and wasm a course site copies next to its
//       pages: <attention-lab> (attention-lab.js), the iframe page
//       (embed.html), the lesson (index.html) and the API (attention.js).
//       index.html runs load-failure.js (web/load-failure.js), as web/index.html does:
//       opened from a disk, where its modules cannot load, it says so.
//   dist/attention-lab.html
//       the whole lesson in one file: scripts, styles and both wasm builds
//       inlined. It opens offline by double-click (file://) and makes no
//       request at all.
//   dist/attention-lab-scorm12.zip
//       the lesson as a SCORM 1.2 package for an LMS (see scormPackage()):
//       imsmanifest.xml, the launch page index.html, one bundled module (the
//       lesson, its SCORM glue web/scorm/launch.js and the API wrapper
//       @gamestdio/scorm), load-failure.js, the styles, the wasm builds,
//       the wrapper's licence, all listed in the manifest as the SCO's
//       files. Next to imsmanifest.xml, at the zip's root, sit the SCORM 1.2
//       schema files it names (web/scorm/schemas/): control files, not
//       resources, so they are not listed. Nothing is fetched from outside
//       the package.
//
// Options (npm run dist -- --sections masks,break-it --exercises no-scale):
//   --sections a,b    the lesson sections the package holds (ids of
//                     index.html's <section>s: one-query, …, quiz, break-it;
//                     default all). The score counts what is included.
//   --exercises a,b   the break-it cards it holds (bug names; default all);
//                     refused when --sections leaves break-it out
//   --title TEXT      the package's title in imsmanifest.xml
//   --out DIR         the folder to write instead of dist/ (see outputDir())
//   --help            the usage, and nothing is built
// A bad option, or one given twice, stops the command with a one-line
// message and exit code 2.
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
import { cp, mkdir, readdir, readFile, realpath, rm, writeFile, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = join(ROOT, 'web');
const DIST = join(ROOT, 'dist');

const ENTRIES = ['attention.js', 'attention-lab.js', 'lesson.js', 'embed.js'];
const STATIC = ['index.html', 'load-failure.js', 'embed.html', 'favicon.svg', 'lesson.css', 'breakit.css', 'quiz.css', 'attention-lab.css', 'embed.css',
  'attention.d.ts', 'attention-lab.d.ts', 'progress.d.ts'];
const WASM = ['wasm/attention-simd.wasm', 'wasm/attention-scalar.wasm'];
/** The classic script that explains a page whose modules cannot load; it sits next to that page. */
const LOAD_FAILURE = 'load-failure.js';
const MODULE_TAG = '<script type="module" src="lesson.js"></script>';
/** load-failure.js's tag in the repository's pages, marked as theirs (see load-failure.js); copies drop the mark. */
const REPOSITORY_LOAD_FAILURE = `<script src="${LOAD_FAILURE}" data-copy="repository"></script>`;
/** index.html's two scripts: load-failure.js, marked as the repository's copy, then the lesson. */
const BOOT_TAGS = `${REPOSITORY_LOAD_FAILURE}\n${MODULE_TAG}`;
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
  // Inlined, the lesson's module always loads: load-failure.js has nothing to explain.
  if (!html.includes(BOOT_TAGS)) throw new Error(`index.html no longer has ${BOOT_TAGS}`);
  html = html.replace(BOOT_TAGS, () => `<script type="module">\n${script}</script>`);
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
/** SCORM 1.2's smallest permitted maximum for a title. */
const MAX_TITLE = 200;
const WRAPPER_LICENSE = join(ROOT, 'node_modules', '@gamestdio', 'scorm', 'LICENSE');
/**
 * The SCORM 1.2 schemas the manifest is written against, by target
 * namespace: IMS content packaging 1.1.2, IMS metadata 1.2.1 and ADL's
 * SCORM 1.2 extensions (adlcp:). imsmanifest.xml names them in
 * xsi:schemaLocation, and they sit next to it at the zip's root.
 */
const SCHEMAS = {
  'http://www.imsproject.org/xsd/imscp_rootv1p1p2': 'imscp_rootv1p1p2.xsd',
  'http://www.imsglobal.org/xsd/imsmd_rootv1p2p1': 'imsmd_rootv1p2p1.xsd',
  'http://www.adlnet.org/xsd/adlcp_rootv1p2': 'adlcp_rootv1p2.xsd',
};
/** The schema files the package carries: those above, and ims_xml.xsd (the xml: attributes), which two of them import. */
const SCHEMA_FILES = [...Object.values(SCHEMAS), 'ims_xml.xsd'];
const SCHEMA_DIR = join(WEB, 'scorm', 'schemas');
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

/** A --title for the manifest: some text, at most MAX_TITLE characters, no control characters. */
export function checkTitle(title) {
  if (!title.trim()) throw new ChoiceError('--title needs some text');
  if (title.length > MAX_TITLE) throw new ChoiceError(`--title is ${title.length} characters long; SCORM 1.2 allows ${MAX_TITLE}`);
  if (/[\u0000-\u001f\u007f]/.test(title)) throw new ChoiceError('--title holds a control character (a line break, a tab…)');
  return title;
}

/** embed.html as a packaged copy: load-failure.js without the repository's mark (see load-failure.js). */
function packagedEmbed(html) {
  if (!html.includes(REPOSITORY_LOAD_FAILURE)) throw new Error(`embed.html no longer has ${REPOSITORY_LOAD_FAILURE}`);
  return html.replace(REPOSITORY_LOAD_FAILURE, `<script src="${LOAD_FAILURE}"></script>`);
}

/** index.html running `moduleTag`, the lesson's module, after load-failure.js as a packaged copy's (not the repository's). */
function withLoadFailure(html, moduleTag) {
  if (!html.includes(BOOT_TAGS)) throw new Error(`index.html no longer has ${BOOT_TAGS}`);
  return html.replace(BOOT_TAGS, () => `<script src="${LOAD_FAILURE}"></script>\n${moduleTag}`);
}

const ADDRESS_BAR = ' Your edits live in the address bar: copy the link to share the sections exactly as you see them. Your quiz answers and progress stay in this browser.';

/**
 * The launch page: index.html running the SCORM bundle, its <main> naming
 * the chosen sections and cards (lesson-page.js and breakit.js read them).
 * In an LMS's frame there is no address bar to copy, so the footer does not
 * point to one.
 */
function launchPage(html, { sections, exercises }) {
  const all = sections.length === VIEW_IDS.length;
  const cards = exercises.length && exercises.length < EXERCISES.length ? ` data-exercises="${exercises.join(',')}"` : '';
  const main = '<main id="lesson">';
  if (!html.includes(main)) throw new Error(`index.html no longer has ${main}`);
  html = html.replace(main, `<main id="lesson"${all ? '' : ` data-sections="${sections.join(',')}"`}${cards}>`);
  const skip = sections[0];
  html = html.replace(/<a class="skip" href="#[a-z0-9-]+">/, `<a class="skip" href="#${skip}">`);
  if (!html.includes(ADDRESS_BAR)) throw new Error(`index.html's footer no longer says "${ADDRESS_BAR.trim()}"`);
  html = html.replace(ADDRESS_BAR, '');
  return withLoadFailure(html, `<script type="module" src="${SCORM_BUNDLE}"></script>`);
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

/**
 * imsmanifest.xml (SCORM 1.2 CAM): one organization, one item, one SCO
 * resource listing `files`; `mastery` null for none. xsi:schemaLocation
 * names the schema files the package carries (SCHEMAS).
 */
export function manifest({ files, mastery, title = MANIFEST_TITLE }) {
  const list = files.map((f) => `      <file href="${xmlText(f)}"/>`).join('\n');
  const locations = Object.entries(SCHEMAS).map(([ns, file]) => `${ns} ${file}`).join('\n                      ');
  return `<?xml version="1.0" encoding="UTF-8"?>
<manifest identifier="attention-lab-scorm12" version="1.0"
  xmlns="http://www.imsproject.org/xsd/imscp_rootv1p1p2"
  xmlns:adlcp="http://www.adlnet.org/xsd/adlcp_rootv1p2"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="${locations}">
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

/**
 * Write dist/attention-lab-scorm12.zip (or into `outDir`), scored as
 * packageScore() says; `title` names it in the manifest.
 */
export async function scormPackage(choice = {}, outDir = DIST, { title = MANIFEST_TITLE } = {}) {
  const index = await readFile(join(WEB, 'index.html'), 'utf8');
  const picked = packageChoice(choice);
  checkTitle(title);
  const { max, mastery } = packageScore(picked);
  const entries = {
    'index.html': strToU8(launchPage(index, picked)),
    [SCORM_BUNDLE]: strToU8(await bundleScorm()),
    [LOAD_FAILURE]: await readFile(join(WEB, LOAD_FAILURE)),
    'licenses/gamestdio-scorm.txt': await readFile(WRAPPER_LICENSE),
  };
  for (const file of ['favicon.svg', ...STATIC.filter((f) => f.endsWith('.css') && index.includes(`href="${f}"`)), ...WASM]) {
    entries[file] = await readFile(join(WEB, file));
  }
  const files = Object.keys(entries).sort();
  // The control files first, at the root: the manifest and the schemas it names. The SCO's files follow.
  const zip = { 'imsmanifest.xml': strToU8(manifest({ files, mastery, title })) };
  for (const file of SCHEMA_FILES) zip[file] = await readFile(join(SCHEMA_DIR, file));
  for (const file of files) zip[file] = entries[file];
  const bytes = zipSync(zip, { level: 9, mtime: ZIP_TIME });
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, SCORM_ZIP), bytes);
  return { file: SCORM_ZIP, files: Object.keys(zip), max, mastery, ...picked, bytes: bytes.length };
}

/** The files dist/ copies from web/ as they are (paths relative to web/); nothing is written. */
export async function distFiles() {
  return [...await moduleFiles(), ...STATIC, ...WASM];
}

/** Whether folder `inner` is `outer` or inside it. */
function within(outer, inner) {
  const path = relative(outer, inner);
  return path === '' || (path !== '..' && !path.startsWith(`..${sep}`) && !isAbsolute(path));
}

/**
 * The folder dist writes (a --out value), resolved; a ChoiceError when it
 * may not be used. dist empties that folder first, so it refuses the repo,
 * a folder above it, web/ or a folder in it (the sources and the built
 * wasm), and a folder that already holds files but no earlier output (no
 * attention-lab.html): only dist/ or such a folder is ever removed.
 */
export async function outputDir(out) {
  if (!out) throw new ChoiceError('--out needs a folder');
  const dir = resolve(out);
  if (dir === DIST) return DIST;
  const real = await realpath(dir).catch(() => dir);
  const [root, web] = [await realpath(ROOT), await realpath(WEB)];
  if (within(real, root)) throw new ChoiceError(`--out ${out}: that folder holds the repo, and dist empties the folder it writes`);
  if (within(web, real)) throw new ChoiceError(`--out ${out}: that folder is in web/ (the sources), and dist empties the folder it writes`);
  let names = null;
  try {
    names = await readdir(dir);
  } catch (e) {
    if (e.code === 'ENOTDIR') throw new ChoiceError(`--out ${out}: that is a file, not a folder`);
    if (e.code !== 'ENOENT') throw e;
  }
  if (names?.length && !names.includes('attention-lab.html')) {
    throw new ChoiceError(`--out ${out}: that folder holds other files, and dist empties the folder it writes (give a new or empty folder, or an earlier output)`);
  }
  return dir;
}

/**
 * Write dist/ (or the folder `out`, see outputDir()) with the content
 * `choice` picks; `title` names the SCORM package.
 */
export async function dist(choice = {}, { out = DIST, title = MANIFEST_TITLE } = {}) {
  // A bad choice stops here, before the folder is emptied.
  packageChoice(choice);
  checkTitle(title);
  const dir = await outputDir(out);
  for (const file of WASM) {
    if (!(await exists(join(WEB, file)))) throw new Error(`web/${file} is missing: run 'bash build.sh' first`);
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'wasm'), { recursive: true });
  const files = await distFiles();
  for (const file of files) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await cp(join(WEB, file), join(dir, file));
  }
  await writeFile(join(dir, 'index.html'), withLoadFailure(await readFile(join(WEB, 'index.html'), 'utf8'), MODULE_TAG));
  await writeFile(join(dir, 'embed.html'), packagedEmbed(await readFile(join(WEB, 'embed.html'), 'utf8')));
  const html = await singleFile();
  await writeFile(join(dir, 'attention-lab.html'), html);
  const scorm = await scormPackage(choice, dir, { title });
  return { dir, files: [...files, 'attention-lab.html', scorm.file], singleFileBytes: Buffer.byteLength(html), scorm };
}

/** `names` joined by commas, in lines of at most 78 characters, each after `indent` spaces. */
function wrapped(names, indent) {
  const lines = [''];
  for (const name of names) {
    const line = lines.at(-1);
    if (line && indent + line.length + name.length + 2 > 78) lines.push(name);
    else lines[lines.length - 1] = line ? `${line}, ${name}` : name;
  }
  return lines.join(`,\n${' '.repeat(indent)}`);
}

const USAGE = `Usage: node web/dist.mjs [options]      (or: npm run dist -- [options])

Writes the lesson for course sites into dist/: its modules, styles and wasm,
attention-lab.html (the lesson in one file) and ${SCORM_ZIP}.

  --sections a,b    the sections the SCORM package holds (default all):
                    ${wrapped(VIEW_IDS, 20)}
  --exercises a,b   the break-it cards it holds (default all; needs break-it
                    in --sections):
                    ${wrapped(EXERCISES.map((e) => e.bug), 20)}
  --title TEXT      the package's title in imsmanifest.xml
                    (default "${MANIFEST_TITLE}")
  --out DIR         write into DIR instead of dist/. DIR is emptied first: it
                    must be new, empty, or an earlier output
  --help            print this and build nothing

Each option is given at most once.`;

const OPTIONS = {
  sections: { type: 'string' }, exercises: { type: 'string' }, title: { type: 'string' }, out: { type: 'string' },
  help: { type: 'boolean' },
};

/** The command line's line about the SCORM package: its files, sections and grading. */
export function scormSummary({ file, files, bytes, sections, max, mastery }) {
  const grading = mastery === null ? 'nothing to score: no mastery score and no score (the LMS is told incomplete until every section is visited, then completed; never passed or failed)'
    : `score max ${max}, mastery ${mastery}`;
  return `${file}: ${files.length} files, ${(bytes / 1024).toFixed(0)} KiB; sections ${sections.join(', ')}; ${grading}`;
}

/**
 * The command line's options: { help } or { choice, out, title }. A bad
 * one (unknown, misspelt, given twice, a bad name, a folder that may not be
 * emptied) is said in one line, exit code 2.
 */
async function commandLine() {
  try {
    const { values, tokens } = parseArgs({ options: OPTIONS, tokens: true });
    const given = new Set();
    for (const { kind, name } of tokens) {
      if (kind !== 'option') continue;
      if (given.has(name)) throw new ChoiceError(`--${name} is given twice; give it once${['sections', 'exercises'].includes(name) ? ', with the names separated by commas' : ''}`);
      given.add(name);
    }
    if (values.help) return { help: true };
    const choice = { sections: values.sections ?? null, exercises: values.exercises ?? null };
    packageChoice(choice);
    const title = checkTitle(values.title ?? MANIFEST_TITLE);
    const out = await outputDir(values.out ?? DIST);
    return { choice, out, title };
  } catch (e) {
    if (!(e instanceof ChoiceError) && !String(e.code).startsWith('ERR_PARSE_ARGS')) throw e;
    console.error(`[attention-lab] dist: ${e.message}`);
    process.exit(2);
  }
}

if (process.argv[1] && basename(fileURLToPath(import.meta.url)) === basename(process.argv[1])) {
  const { help, choice, out, title } = await commandLine();
  if (help) {
    console.log(USAGE);
  } else {
    const { dir, files, singleFileBytes, scorm } = await dist(choice, { out, title });
    // A folder inside the working directory is named from it; any other by its absolute path.
    const inside = relative(process.cwd(), dir);
    const shown = `${inside === '' ? '.' : inside.startsWith('..') || isAbsolute(inside) ? dir : inside}/`;
    console.log(`[attention-lab] ${shown}: ${files.length} files; attention-lab.html is ${(singleFileBytes / 1024).toFixed(0)} KiB`);
    console.log(`[attention-lab] ${shown}${scormSummary(scorm)}`);
  }
}
