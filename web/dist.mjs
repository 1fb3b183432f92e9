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
//
// The module list is not kept by hand: esbuild follows the imports of the
// entry points, and every file it reads is copied. Bundling the single file
// is esbuild's job too (wasm through its binary loader, as base64).
import { build } from 'esbuild';
import { cp, mkdir, readFile, rm, writeFile, stat } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = join(ROOT, 'web');
const DIST = join(ROOT, 'dist');

const ENTRIES = ['attention.js', 'attention-lab.js', 'lesson.js', 'embed.js'];
const STATIC = ['index.html', 'embed.html', 'favicon.svg', 'lesson.css', 'breakit.css', 'attention-lab.css', 'embed.css',
  'attention.d.ts', 'attention-lab.d.ts'];
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

export async function dist() {
  for (const file of WASM) {
    if (!(await exists(join(WEB, file)))) throw new Error(`web/${file} is missing: run 'bash build.sh' first`);
  }
  await rm(DIST, { recursive: true, force: true });
  await mkdir(join(DIST, 'wasm'), { recursive: true });
  const files = [...await moduleFiles(), ...STATIC, ...WASM];
  for (const file of files) {
    await mkdir(dirname(join(DIST, file)), { recursive: true });
    await cp(join(WEB, file), join(DIST, file));
  }
  const html = await singleFile();
  await writeFile(join(DIST, 'attention-lab.html'), html);
  return { files: [...files, 'attention-lab.html'], singleFileBytes: Buffer.byteLength(html) };
}

if (process.argv[1] && basename(fileURLToPath(import.meta.url)) === basename(process.argv[1])) {
  const { files, singleFileBytes } = await dist();
  console.log(`[attention-lab] dist/: ${files.length} files; attention-lab.html is ${(singleFileBytes / 1024).toFixed(0)} KiB`);
}
