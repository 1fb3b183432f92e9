// The SCORM 1.2 package (web/dist.mjs, web/scorm/launch.js): its manifest,
// valid against the SCORM 1.2 schemas it carries, and the lesson inside an
// LMS played by scorm-again's SCORM 1.2 runtime (tests/fixtures/scorm-host.html):
// what the LMS receives, resuming from suspend data, passed / failed, an LMS
// that sets the status from the score itself (mastery override), a reset of
// the cards (the LMS keeps the first outcomes), the package without an LMS
// (plain, framed without an API, opened from a disk), suspend data that
// must be refused, an LMS that refuses to start (a reloaded frame), the
// interactions written per graded item (with their correct responses and
// objective), the objectives written per graded section, and the suspend
// data of a full run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { unzipSync } from 'fflate';
import { validateXML } from 'xmllint-wasm';
import { launchBrowser, openPage, startServer, assertClean, shownText } from './helpers/browser.mjs';
import { dist, scormPackage } from '../web/dist.mjs';
import { QUESTIONS } from '../web/quiz-questions.js';
import { EXERCISES } from '../web/exercises.js';
import { masteryScore } from '../web/progress.js';
import { CHECKS, runChecks } from '../web/checks.js';
import { PREDICTION_CHECKS } from '../web/exercises.js';
import { loadAttention } from '../web/attention.js';

/** The full lesson's score max: the questions and the break-it cards. */
const MAX = QUESTIONS.length + EXERCISES.length;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'build', 'scorm-test');
/**
 * The package's control files: the manifest and the SCORM 1.2 schemas
 * (web/scorm/schemas/). They sit at the zip's root and are not resources:
 * the manifest does not list them as files.
 */
const CONTROL_FILES = ['imsmanifest.xml', 'adlcp_rootv1p2.xsd', 'ims_xml.xsd', 'imscp_rootv1p1p2.xsd', 'imsmd_rootv1p2p1.xsd'];

let server;
let browser;
const packages = {};

/** Build a package into build/scorm-test/<name>/ and unpack it next to the zip. */
async function makePackage(name, choice) {
  const dir = join(OUT, name);
  await rm(dir, { recursive: true, force: true });
  const info = await scormPackage(choice, dir);
  const zip = unzipSync(await readFile(join(dir, info.file)));
  for (const [file, bytes] of Object.entries(zip)) {
    await mkdir(dirname(join(dir, 'unpacked', file)), { recursive: true });
    await writeFile(join(dir, 'unpacked', file), bytes);
  }
  return { ...info, zip, launch: `../../build/scorm-test/${name}/unpacked/index.html` };
}

before(async () => {
  packages.full = await makePackage('full', {});
  packages.small = await makePackage('small', { sections: 'masks,quiz,break-it', exercises: 'no-scale,mask-output' });
  packages.reading = await makePackage('reading', { sections: 'three-by-three,masks' });
  // The whole of dist/, for its index.html opened from a disk.
  await dist({}, { out: join(OUT, 'dist') });
  server = await startServer({ root: ROOT });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('the manifest is well-formed SCORM 1.2 and lists exactly the files in the zip', async () => {
  const { page, context } = await openPage(browser, server.url);
  await page.goto(`${server.url}tests/fixtures/scorm-host.html`);
  for (const [name, pkg] of Object.entries(packages)) {
    const xml = new TextDecoder().decode(pkg.zip['imsmanifest.xml']);
    const m = await page.evaluate((text) => {
      const doc = new DOMParser().parseFromString(text, 'application/xml');
      if (doc.getElementsByTagName('parsererror').length) return { error: doc.getElementsByTagName('parsererror')[0].textContent };
      const CP = 'http://www.imsproject.org/xsd/imscp_rootv1p1p2';
      const ADL = 'http://www.adlnet.org/xsd/adlcp_rootv1p2';
      const all = (tag) => [...doc.getElementsByTagNameNS(CP, tag)];
      const orgs = doc.getElementsByTagNameNS(CP, 'organizations')[0];
      const item = all('item')[0];
      const resource = all('resource')[0];
      return {
        root: doc.documentElement.localName,
        schemaversion: all('schemaversion')[0]?.textContent,
        defaultOrg: orgs.getAttribute('default'),
        orgIds: all('organization').map((o) => o.getAttribute('identifier')),
        items: all('item').length,
        identifierref: item.getAttribute('identifierref'),
        mastery: item.getElementsByTagNameNS(ADL, 'masteryscore')[0]?.textContent,
        resources: all('resource').map((r) => r.getAttribute('identifier')),
        scormtype: resource.getAttributeNS(ADL, 'scormtype'),
        href: resource.getAttribute('href'),
        files: all('file').map((f) => f.getAttribute('href')),
      };
    }, xml);
    assert.equal(m.error, undefined, `${name}: ${m.error}`);
    assert.equal(m.root, 'manifest');
    assert.equal(m.schemaversion, '1.2');
    assert.ok(m.orgIds.includes(m.defaultOrg), `${name}: the default organization exists`);
    assert.equal(m.items, 1, 'one SCO');
    assert.deepEqual(m.resources, [m.identifierref]);
    assert.equal(m.scormtype, 'sco');
    const missing = CONTROL_FILES.filter((f) => !pkg.zip[f]);
    assert.deepEqual(missing, [], `${name}: control files missing from the zip's root: ${missing.join(', ')}`);
    const resources = Object.keys(pkg.zip).filter((f) => !CONTROL_FILES.includes(f)).sort();
    assert.deepEqual([...m.files].sort(), resources, `${name}: the manifest lists exactly the zip's files but the control files (${CONTROL_FILES.join(', ')})`);
    assert.ok(m.files.includes(m.href), 'the launch page is listed');
    if (pkg.max) assert.equal(Number(m.mastery), pkg.mastery);
    else assert.equal(m.mastery, undefined, `${name}: nothing scored, no mastery score`);
  }
  assert.deepEqual([packages.full.max, packages.full.mastery], [MAX, masteryScore(MAX)]);
  assert.deepEqual([packages.small.max, packages.small.mastery], [QUESTIONS.length + 2, 7]);
  // The chosen sections only, and the wasm the core needs.
  const small = new TextDecoder().decode(packages.small.zip['index.html']);
  assert.match(small, /<main id="lesson" data-sections="masks,quiz,break-it" data-exercises="(mask-output,no-scale|no-scale,mask-output)">/);
  for (const f of ['wasm/attention-simd.wasm', 'wasm/attention-scalar.wasm', 'index.html']) assert.ok(packages.small.zip[f], f);
  await context.close();
});

/**
 * The IMS metadata schema is named in the manifest and carried, but libxml2
 * cannot compile it: its content models end in a wildcard of any namespace
 * after optional elements of its own, which XML Schema's Unique Particle
 * Attribution rule forbids ("The content model is not determinist"). The
 * manifest uses no element of it, and an element of it would still be
 * refused: imscp's strict wildcards find no declaration for it.
 */
const NOT_COMPILED = ['http://www.imsglobal.org/xsd/imsmd_rootv1p2p1'];

/** The manifest's xsi:schemaLocation as [{ namespace, file }]. */
function schemaLocations(xml) {
  const words = (xml.match(/\sxsi:schemaLocation="([^"]*)"/)?.[1] ?? '').trim().split(/\s+/).filter(Boolean);
  const named = [];
  for (let i = 0; i + 1 < words.length; i += 2) named.push({ namespace: words[i], file: words[i + 1] });
  return named;
}

/**
 * Validate manifest text `xml` as a validator that follows
 * xsi:schemaLocation does: against the schemas the manifest names (but
 * NOT_COMPILED), read from `zip`'s root, where the manifest sits. libxml2
 * validates against the schema it is given, so it is given one that imports
 * each named namespace from its named file. Returns xmllint's
 * { valid, rawOutput }.
 */
async function validateManifest(xml, zip) {
  const imports = schemaLocations(xml).filter(({ namespace }) => !NOT_COMPILED.includes(namespace))
    .map(({ namespace, file }) => `  <xsd:import namespace="${namespace}" schemaLocation="${file}"/>`).join('\n');
  const schema = `<?xml version="1.0"?>\n<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema">\n${imports}\n</xsd:schema>\n`;
  const preload = Object.keys(zip).filter((f) => f.endsWith('.xsd') && !f.includes('/')).map((f) => ({ fileName: f, contents: zip[f] }));
  return validateXML({ xml: { fileName: 'imsmanifest.xml', contents: xml }, schema: { fileName: 'named-schemas.xsd', contents: schema }, preload });
}

test('the manifest validates against the SCORM 1.2 schemas it names, which the zip carries; a broken one does not', async () => {
  const schemas = join(ROOT, 'web', 'scorm', 'schemas');
  for (const [name, pkg] of Object.entries(packages)) {
    const xml = new TextDecoder().decode(pkg.zip['imsmanifest.xml']);
    const result = await validateManifest(xml, pkg.zip);
    assert.equal(result.valid, true, `${name}: imsmanifest.xml does not validate against the schemas it names:\n${result.rawOutput}`);
    const named = schemaLocations(xml).map(({ namespace, file }) => `${namespace} ${file}`);
    assert.deepEqual(named, [
      'http://www.imsproject.org/xsd/imscp_rootv1p1p2 imscp_rootv1p1p2.xsd',
      'http://www.imsglobal.org/xsd/imsmd_rootv1p2p1 imsmd_rootv1p2p1.xsd',
      'http://www.adlnet.org/xsd/adlcp_rootv1p2 adlcp_rootv1p2.xsd',
    ], `${name}: the schemas xsi:schemaLocation names`);
    for (const file of CONTROL_FILES.filter((f) => f.endsWith('.xsd'))) {
      assert.deepEqual(Buffer.from(pkg.zip[file]), await readFile(join(schemas, file)), `${name}: ${file} is web/scorm/schemas/${file} as it is`);
    }
  }
  // Broken copies are rejected, each for its own fault: the validation above can fail.
  const xml = new TextDecoder().decode(packages.full.zip['imsmanifest.xml']);
  const broken = [
    ['<schemaversion> moved out of <metadata>', (x) => x.replace('    <schemaversion>1.2</schemaversion>\n', '').replace('  <organizations ', '  <schemaversion>1.2</schemaversion>\n  <organizations '), /schemaversion': This element is not expected/],
    ['an element the schema does not have', (x) => x.replace('</organization>', '  <duration>PT1H</duration>\n    </organization>'), /duration': This element is not expected/],
    ['an adlcp:scormtype that is neither sco nor asset', (x) => x.replace('adlcp:scormtype="sco"', 'adlcp:scormtype="lesson"'), /scormtype': \[facet 'enumeration'\]/],
    ['an IMS metadata element (see NOT_COMPILED)', (x) => x.replace('  </metadata>', '    <imsmd:lom xmlns:imsmd="http://www.imsglobal.org/xsd/imsmd_rootv1p2p1"/>\n  </metadata>'), /lom': No matching global element declaration available, but demanded by the strict wildcard/],
    ['no xsi:schemaLocation (the schemas are not named)', (x) => x.replace(/\s+xsi:schemaLocation="[^"]*"/, ''), /No matching global declaration available for the validation root/],
  ];
  for (const [fault, change, message] of broken) {
    const copy = change(xml);
    assert.notEqual(copy, xml, `${fault}: the manifest no longer has what this copy changes`);
    const result = await validateManifest(copy, packages.full.zip);
    assert.equal(result.valid, false, `${fault}: the broken copy validated`);
    assert.match(result.rawOutput, message, `${fault}: rejected for another reason:\n${result.rawOutput}`);
  }
});

test('the launch page\'s footer does not send the learner to an address bar (an LMS frame has none)', async () => {
  const web = await readFile(join(ROOT, 'web', 'index.html'), 'utf8');
  assert.match(web, /address bar/, 'web/index.html, the plain lesson, still points to the address bar');
  const launch = new TextDecoder().decode(packages.full.zip['index.html']);
  const footer = launch.match(/<footer[\s\S]*?<\/footer>/)?.[0] ?? '';
  assert.match(footer, /The page itself only draws them\./, 'the rest of the footer stays');
  assert.doesNotMatch(footer, /address bar|copy the link/i, `the launch page's footer: ${footer}`);
});

/**
 * The LMS stand-in with the package loaded; resolves once the lesson has
 * drawn itself. `settings` are more settings for scorm-again's runtime.
 * `refuse` makes it an LMS that does not implement some elements:
 * { set, get }, each a RegExp source; an element that matches is refused
 * as such an LMS does (LMSSetValue "false", LMSGetValue "", both with error
 * 401, "not implemented"). The refused LMSSetValue calls are still recorded.
 */
async function inLms(pkg, cmi = null, settings = null, refuse = null) {
  const session = await openPage(browser, server.url);
  await session.page.goto(`${server.url}tests/fixtures/scorm-host.html`);
  if (settings) {
    await session.page.evaluate((more) => {
      const Runtime = window.Scorm12API;
      window.Scorm12API = class extends Runtime { constructor(given) { super({ ...given, ...more }); } };
    }, settings);
  }
  if (refuse) {
    await session.page.evaluate(({ set, get }) => {
      const Runtime = window.Scorm12API;
      window.Scorm12API = class extends Runtime {
        constructor(given) {
          super(given);
          const refusing = (name, pattern, answer) => {
            const original = this[name];
            this[name] = (element, ...rest) => {
              if (!pattern || !new RegExp(pattern).test(element)) return original.call(this, element, ...rest);
              this.lastErrorCode = '401';
              return answer;
            };
          };
          refusing('LMSSetValue', set, 'false');
          refusing('LMSGetValue', get, '');
        }
      };
    }, { set: null, get: null, ...refuse });
  }
  await session.page.evaluate((args) => window.startLms(args), { launch: pkg.launch, cmi });
  const frame = session.page.frameLocator('#sco');
  await frame.locator('html[data-ready="true"]').waitFor({ timeout: 20000 });
  const lms = (name) => session.page.evaluate((n) => window.lmsValue(n), name);
  const calls = () => session.page.evaluate(() => window.lmsCalls);
  return { ...session, frame, lms, calls };
}

async function answerQuiz(frame, id, choiceId) {
  const form = frame.locator(`form[data-quiz="${id}"]`);
  if (/^[0-9]+$/.test(choiceId)) await form.locator('input.qz-number').fill(choiceId);
  else await form.locator(`input[value="${choiceId}"]`).check();
  await form.locator('button[type="submit"]').click();
}

async function doExercise(frame, bug, check) {
  const card = frame.locator(`#bk-${bug}`);
  if (!(await card.evaluate((d) => d.open))) await card.locator('summary').click();
  await card.getByLabel(check, { exact: true }).check();
  await card.locator('button.bk-switch').click();
  await card.locator('button.bk-repair-button').click();
}

/** Answer `questions` (from QUESTIONS), right or wrong as `right(index)` says. */
async function answerQuestions(frame, questions, right) {
  for (const [k, q] of questions.entries()) {
    const good = right(k);
    if (q.kind === 'choice') await answerQuiz(frame, q.id, q.choices.find((c) => c.right === good).id);
    else if (q.kind === 'number') await answerQuiz(frame, q.id, good ? '32' : '64');
    else {
      const form = frame.locator(`form[data-quiz="${q.id}"]`);
      // Right: every key after its query blocked, the upper triangle of the question's T × T grid.
      const upper = Array.from({ length: q.T }, (_, i) => Array.from({ length: q.T - 1 - i }, (_, k) => [i, i + 1 + k])).flat();
      const cells = good ? upper : [[1, 0]];
      for (const [i, j] of cells) await form.locator(`button[data-row="${i}"][data-col="${j}"]`).click();
      await form.locator('button[type="submit"]').click();
    }
  }
}

/** The learner leaves: the frame is emptied, and the lesson finishes its session. */
async function leave(session) {
  await session.page.evaluate(() => { document.getElementById('sco').src = 'about:blank'; });
  await session.page.waitForFunction(() => window.lmsCalls.some((c) => c.name === 'LMSFinish'));
}

/** The last value the lesson set for `name` in this session (cmi.core.exit is write-only: the LMS cannot be asked). */
async function lastSet(session, name) {
  return (await session.calls()).filter((c) => c.name === 'LMSSetValue' && c.args[0] === name).at(-1)?.args[1];
}

/** The score elements the lesson has set in this session. */
async function scoreSets(session) {
  return (await session.calls()).filter((c) => c.name === 'LMSSetValue' && c.args[0].startsWith('cmi.core.score.')).map((c) => c.args.join(' = '));
}

test('in an LMS: two answers and one exercise are reported; a relaunch with the suspend data resumes', async () => {
  const first = await inLms(packages.full);
  assert.equal((await first.calls())[0].name, 'LMSInitialize');
  assert.equal(await first.frame.locator('.no-lms').count(), 0, 'an LMS answered: no notice');
  await answerQuiz(first.frame, 'scale', 'a'); // right
  await answerQuiz(first.frame, 'maps', 'a'); // wrong
  await doExercise(first.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
  await first.page.waitForFunction(() => /"o":\{"no-scale":1\}/.test(window.lmsValue('cmi.suspend_data')));
  assert.equal(await first.lms('cmi.core.lesson_status'), 'incomplete');
  // The score waits for the end: unfinished, the LMS is sent none (see the mastery override test).
  assert.deepEqual(await scoreSets(first), [], 'no score while incomplete');
  assert.equal(await first.lms('cmi.core.score.raw'), '');
  const suspend = await first.lms('cmi.suspend_data');
  const record = JSON.parse(suspend);
  assert.deepEqual(record.q, { scale: ['a', 1, 'a'], maps: ['a', 0, 'a'] });
  assert.deepEqual(record.o, { 'no-scale': 1 });
  assert.ok(suspend.length <= 4096);
  const names = new Set((await first.calls()).map((c) => c.name));
  assert.ok(names.has('LMSCommit'), 'committed');
  // The learner scrolls to the quiz, then leaves: session time, exit, commit and finish.
  await first.frame.locator('#quiz').scrollIntoViewIfNeeded();
  await first.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_location') === 'quiz', null, { timeout: 30000 });
  await leave(first);
  assert.deepEqual(await scoreSets(first), [], 'no score on leaving unfinished either');
  const sets = Object.fromEntries((await first.calls()).filter((c) => c.name === 'LMSSetValue').map((c) => c.args));
  assert.match(sets['cmi.core.session_time'], /^\d{4}:\d{2}:\d{2}(\.\d{1,2})?$/);
  assert.equal(sets['cmi.core.exit'], 'suspend');
  assertClean(first.problems, 'first launch');
  await first.context.close();

  // Relaunch: the LMS hands back the suspend data and the location.
  const again = await inLms(packages.full, { suspend_data: suspend, core: { lesson_location: 'quiz', entry: 'resume' } });
  // Where the relaunch scrolled to is read first: reading drawn text below scrolls.
  const top = await again.frame.locator('#quiz').evaluate((n) => n.getBoundingClientRect().top);
  assert.ok(Math.abs(top) < 80, `scrolled back to the quiz (top ${top})`);
  const form = again.frame.locator('form[data-quiz="scale"]');
  assert.equal(await form.locator('input[value="a"]').isChecked(), true, 'the answer is back');
  assert.match(await shownText(form.locator('.qz-feedback')), /Right/);
  assert.match(await shownText(again.frame.locator('form[data-quiz="maps"] .qz-first')), /First attempt: wrong/);
  const card = again.frame.locator('#bk-no-scale');
  assert.match(await shownText(card.locator('.bk-verdict')), /prediction was right/, 'the finished exercise shows its outcome');
  assert.match(await shownText(card.locator('summary .bk-badges')), /repaired/);
  assert.match(await shownText(again.frame.locator('.pg-line')), new RegExp(`Score 2 of ${MAX}`));
  await again.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') === 'incomplete');
  assert.deepEqual(await scoreSets(again), [], 'still unfinished: no score');
  // Graded first attempts are final in an LMS: the panel offers no reset, and says why.
  assert.equal(await again.frame.locator('button.pg-reset').count(), 0, 'no "Reset all progress" while an LMS grades');
  assert.match(await shownText(again.frame.locator('.pg-graded')), /first attempts/);
  assertClean(again.problems, 'relaunch');
  await again.context.close();
});

test('finishing everything reports passed or failed against the mastery score', async () => {
  for (const [label, rightAnswers, expected] of [['passed', 7, 'passed'], ['failed', 2, 'failed']]) {
    const s = await inLms(packages.small);
    await answerQuestions(s.frame, QUESTIONS, (k) => k < rightAnswers);
    assert.equal(await s.lms('cmi.core.lesson_status'), 'incomplete', `${label}: exercises still to do`);
    assert.equal(await s.lms('cmi.core.score.raw'), '', `${label}: no score yet`);
    await doExercise(s.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
    await doExercise(s.frame, 'mask-output', 'Rows sum to 1'); // wrong
    const raw = rightAnswers + 1;
    await s.page.waitForFunction((r) => window.lmsValue('cmi.core.score.raw') === String(r), raw);
    assert.equal(await s.lms('cmi.core.score.max'), '10');
    assert.deepEqual(await s.frame.locator('main > section').evaluateAll((ns) => ns.map((n) => n.id)), ['masks', 'quiz', 'break-it']);
    assert.equal(await s.frame.locator('#break-it .bk-card').count(), 2);
    assert.equal(await s.lms('cmi.core.score.min'), '0');
    assert.equal(await s.lms('cmi.core.lesson_status'), expected, `${label}: ${raw} of 10, mastery 7`);
    assertClean(s.problems, label);
    await s.context.close();
  }
});

test('an LMS that sets the status from the score (mastery override): a paused learner stays incomplete, a finished one passes or fails', async () => {
  // What the LMS holds for this learner: the manifest's mastery score, for credit.
  const lmsData = { core: { credit: 'credit', lesson_mode: 'normal' }, student_data: { mastery_score: String(packages.small.mastery) } };
  const withData = (more) => ({ ...lmsData, ...more, core: { ...lmsData.core, ...more.core } });
  const override = { mastery_override: true };

  // A first session: two questions, right, then the learner leaves (2 points of 10, mastery 7).
  const first = await inLms(packages.small, lmsData, override);
  assert.equal(await first.page.evaluate(() => window.API.settings.mastery_override), true, 'scorm-again applies the mastery score');
  await answerQuestions(first.frame, QUESTIONS.slice(0, 2), () => true);
  await first.page.waitForFunction(() => Object.keys(JSON.parse(window.lmsValue('cmi.suspend_data') || '{}').q || {}).length === 2);
  await leave(first);
  const paused = { status: await first.lms('cmi.core.lesson_status'), raw: await first.lms('cmi.core.score.raw'), exit: await lastSet(first, 'cmi.core.exit') };
  assert.deepEqual(paused, { status: 'incomplete', raw: '', exit: 'suspend' }, `after a paused session the LMS holds ${JSON.stringify(paused)}`);
  const suspend = await first.lms('cmi.suspend_data');
  assertClean(first.problems, 'paused');
  await first.context.close();

  // The next session resumes and finishes: 7 questions right of 8, one card of two: 8 of 10, passed.
  const second = await inLms(packages.small, withData({ suspend_data: suspend, core: { entry: 'resume', lesson_status: 'incomplete' } }), override);
  await answerQuestions(second.frame, QUESTIONS.slice(2), (k) => k < 5);
  await doExercise(second.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
  await doExercise(second.frame, 'mask-output', 'Rows sum to 1'); // wrong
  await second.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') === 'passed');
  assert.equal(await second.lms('cmi.core.score.raw'), '8');
  await leave(second);
  const done = { status: await second.lms('cmi.core.lesson_status'), raw: await second.lms('cmi.core.score.raw'), max: await second.lms('cmi.core.score.max'), exit: await lastSet(second, 'cmi.core.exit') };
  assert.deepEqual(done, { status: 'passed', raw: '8', max: '10', exit: '' });
  const finished = await second.lms('cmi.suspend_data');
  assertClean(second.problems, 'finished');
  await second.context.close();

  // A relaunch after the end reports the score again, from the suspend data alone.
  const again = await inLms(packages.small, withData({ suspend_data: finished, core: { entry: 'resume' } }), override);
  await again.page.waitForFunction(() => window.lmsValue('cmi.core.score.raw') === '8');
  assert.equal(await again.lms('cmi.core.lesson_status'), 'passed');
  await leave(again);
  assert.equal(await again.lms('cmi.core.lesson_status'), 'passed', 'still passed after LMSFinish');
  assertClean(again.problems, 'relaunch after the end');
  await again.context.close();

  // Finished in one session below the mastery score (3 of 10): failed, as the lesson says too.
  const low = await inLms(packages.small, lmsData, override);
  await answerQuestions(low.frame, QUESTIONS, (k) => k < 2);
  await doExercise(low.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
  await doExercise(low.frame, 'mask-output', 'Rows sum to 1'); // wrong
  await low.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') === 'failed');
  await leave(low);
  const failed = { status: await low.lms('cmi.core.lesson_status'), raw: await low.lms('cmi.core.score.raw') };
  assert.deepEqual(failed, { status: 'failed', raw: '3' });
  assertClean(low.problems, 'failed');
  await low.context.close();
});

test('a package with nothing to score sends no score; it is incomplete until every section it holds is visited, then completed', async () => {
  const s = await inLms(packages.reading);
  assert.equal(await s.frame.locator('main > section').count(), 2);
  // The first report, before the learner has read anything.
  await s.page.waitForFunction(() => window.lmsCalls.some((c) => c.name === 'LMSCommit'));
  const statuses = async () => (await s.calls()).filter((c) => c.name === 'LMSSetValue' && c.args[0] === 'cmi.core.lesson_status').map((c) => c.args[1]);
  assert.equal((await statuses())[0], 'incomplete', `the first status sent, on launch: ${(await statuses()).join(', ')}`);
  // One section read (working in it counts at once): still incomplete.
  await s.frame.locator('#masks input').first().focus();
  await s.page.waitForFunction(() => (JSON.parse(window.lmsValue('cmi.suspend_data') || '{}').s || []).includes('masks'));
  const visited = JSON.parse(await s.lms('cmi.suspend_data')).s;
  if (!visited.includes('three-by-three')) {
    assert.equal(await s.lms('cmi.core.lesson_status'), 'incomplete', `visited ${visited.join(', ')} of three-by-three, masks`);
  }
  // Both read: completed.
  await s.frame.locator('#three-by-three input').first().focus();
  await s.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') === 'completed');
  await leave(s);
  assert.equal(await lastSet(s, 'cmi.core.exit'), '', 'completed: the next launch does not resume');
  // An unscored activity must not show up in a gradebook as 0: no score element is ever set.
  assert.deepEqual(await scoreSets(s), [], 'nothing to score, yet the lesson set a score');
  assert.equal(await s.lms('cmi.core.score.raw'), '');
  const suspend = await s.lms('cmi.suspend_data');
  assertClean(s.problems, 'reading only');
  await s.context.close();

  // A relaunch with the sections already visited is completed at once, still without a score.
  const again = await inLms(packages.reading, { suspend_data: suspend, core: { entry: 'resume' } });
  await again.page.waitForFunction(() => window.lmsCalls.some((c) => c.name === 'LMSCommit'));
  assert.equal(await again.lms('cmi.core.lesson_status'), 'completed');
  assert.deepEqual(await scoreSets(again), []);
  assertClean(again.problems, 'reading only, relaunched');
  await again.context.close();
});

/** Record every text #boot-status shows, from the start (window.bootTexts). */
function recordBootStatus() {
  window.bootTexts = [];
  new MutationObserver(() => {
    const text = document.getElementById('boot-status')?.textContent;
    if (text && window.bootTexts.at(-1) !== text) window.bootTexts.push(text);
  }).observe(document, { subtree: true, childList: true, characterData: true });
}

test('without an LMS the package is the plain lesson: it works, with no console errors and no outside request', async () => {
  const { page, problems, context } = await openPage(browser, server.url);
  await page.addInitScript(recordBootStatus);
  await page.goto(`${server.url}build/scorm-test/full/unpacked/index.html`);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 20000 });
  assert.match(await page.locator('#boot-status').textContent(), /Computed live by the attention core/);
  const shown = await page.evaluate(() => window.bootTexts);
  assert.deepEqual(shown.filter((t) => /could not be loaded|cannot run/.test(t)), [], `#boot-status showed: ${shown.join(' | ')}`);
  // Not framed and not opened by another page: just the lesson, with no word about an LMS.
  assert.equal(await page.locator('.no-lms').count(), 0, 'no "not sent to your course" notice');
  await answerQuiz(page, 'scale', 'a');
  assert.match(await shownText(page.locator('form[data-quiz="scale"] .qz-feedback')), /Right/);
  await doExercise(page, 'causal-upper', 'Blocked weights are 0');
  // Without an LMS nothing is graded: the learner may start again.
  assert.equal(await page.locator('button.pg-reset').count(), 1, '"Reset all progress" without an LMS');
  // Progress is kept in localStorage, as in the lesson.
  assert.match(await page.evaluate(() => localStorage.getItem('attention-lab.progress.v1')), /"scale":\["a",1,"a"\]/);
  assertClean(problems, 'no LMS');
  await context.close();
});

test('framed or opened by another page, but with no SCORM API: a notice says that progress is not sent', async () => {
  const notice = /Your progress is not being sent to your course: no LMS connection was found/;
  const launch = `${server.url}build/scorm-test/full/unpacked/index.html`;
  const check = async (frame, where) => {
    await frame.locator('html[data-ready="true"]').waitFor({ timeout: 20000 });
    const shown = frame.locator('[role="status"].no-lms');
    assert.equal(await shown.count(), 1, `${where}: one notice`);
    assert.equal(await shown.isVisible(), true, `${where}: the notice is visible`);
    assert.match(await shownText(shown), notice, where);
    // Nothing is graded: the learner may start again.
    assert.equal(await frame.locator('button.pg-reset').count(), 1, `${where}: "Reset all progress" stays`);
  };

  // Framed by a page of the same origin that has no API.
  const same = await openPage(browser, server.url);
  await same.page.goto(`${server.url}tests/fixtures/scorm-host.html`);
  await same.page.evaluate((src) => { document.getElementById('sco').src = src; }, packages.full.launch);
  await check(same.page.frameLocator('#sco'), 'framed, no API');
  assertClean(same.problems, 'framed, no API');

  // Opened by that page (a popup launch), still without an API.
  const [popup] = await Promise.all([same.context.waitForEvent('page'), same.page.evaluate((url) => { window.open(url); }, launch)]);
  await check(popup, 'opened by another page');
  await same.context.close();

  // Framed by a page of another origin (here about:blank's opaque one): the search cannot look up.
  const other = await openPage(browser, server.url);
  await other.page.setContent(`<iframe id="sco" title="The lesson" width="1200" height="800" src="${launch}"></iframe>`);
  await check(other.page.frameLocator('#sco'), 'framed by another origin');
  assertClean(other.problems, 'framed by another origin');
  await other.context.close();
});

test('opened from a disk (file://), the package, dist/index.html and web/index.html say why they cannot run, instead of loading for ever', async () => {
  for (const [what, file] of [['the unzipped package', join(OUT, 'full', 'unpacked', 'index.html')], ['dist/index.html', join(OUT, 'dist', 'index.html')]]) {
    const { page, context } = await openPage(browser, 'file://');
    await page.goto(pathToFileURL(file).href);
    const status = page.locator('#boot-status');
    await page.waitForFunction(() => document.getElementById('boot-status').classList.contains('core-error'), null, { timeout: 10000 })
      .catch(() => {});
    const text = await status.textContent();
    assert.match(text, /cannot run from a file opened on a disk: it must be served over http or https/, `${what}: #boot-status says "${text}"`);
    assert.match(text, /attention-lab\.html/, `${what}: it names the file that opens from a disk`);
    assert.equal(await status.isVisible(), true);
    assert.equal(await page.locator('html[data-ready]').count(), 0, `${what}: the lesson did not start`);
    await context.close();
  }
  // The repository's own page, double-clicked, says how to serve it.
  const { page: repoPage, context: repoContext } = await openPage(browser, 'file://');
  await repoPage.goto(pathToFileURL(join(ROOT, 'web', 'index.html')).href);
  await repoPage.waitForFunction(() => document.getElementById('boot-status').classList.contains('core-error'), null, { timeout: 10000 })
    .catch(() => {});
  const repoText = await repoPage.locator('#boot-status').textContent();
  assert.match(repoText, /cannot run from a file opened on a disk: it must be served over http or https\. In the attention-lab folder, run npm start/,
    `web/index.html: #boot-status says "${repoText}"`);
  assert.match(repoText, /dist\/attention-lab\.html/, 'web/index.html: it names the single file that opens from a disk');
  await repoContext.close();
  // Served, but the lesson's module is missing: the page says so too.
  const { page, context } = await openPage(browser, server.url);
  await page.route('**/attention-lab-scorm.js', (route) => route.fulfill({ status: 404, body: '' }));
  await page.goto(`${server.url}build/scorm-test/full/unpacked/index.html`);
  await page.waitForFunction(() => document.getElementById('boot-status').classList.contains('core-error'), null, { timeout: 10000 }).catch(() => {});
  assert.match(await page.locator('#boot-status').textContent(), /The lesson's scripts could not be loaded/);
  await context.close();
});

test('hostile or corrupted suspend data is ignored with a notice; the lesson starts fresh and nothing runs', async () => {
  const texts = {
    'script text': '<script>window.parent.pwned = 1</script><img src=x onerror="window.parent.pwned=2">',
    'broken JSON': '{"v":1,"q":{"scale":["a",1',
    'huge': `{"v":1,"s":[${'"aaaaaaaaaa",'.repeat(300)}"a"]}`,
    'a prototype key': '{"v":1,"q":{"__proto__":["a",1,"a"]}}',
  };
  for (const [what, text] of Object.entries(texts)) {
    const s = await inLms(packages.full, { suspend_data: text });
    const notice = s.frame.locator('.pg-notice');
    assert.equal(await notice.isVisible(), true, `${what}: a notice`);
    assert.match(await shownText(notice), /could not be used .* starts fresh/, what);
    assert.match(await shownText(s.frame.locator('#notice')), /Saved progress could not be used/, `${what}: also at the top of the page`);
    assert.match(await shownText(s.frame.locator('.pg-line')), new RegExp(`Score 0 of ${MAX} .* 0 of 8 questions answered`), what);
    assert.equal(await s.page.evaluate(() => window.pwned), undefined, `${what}: nothing ran`);
    assert.equal(await s.frame.locator('main img').count(), 0);
    // The lesson works from a fresh record, and the LMS gets the fresh one.
    await answerQuiz(s.frame, 'scale', 'a');
    await s.page.waitForFunction(() => {
      try { return JSON.parse(window.lmsValue('cmi.suspend_data')).q?.scale; } catch { return false; }
    });
    assert.deepEqual(JSON.parse(await s.lms('cmi.suspend_data')).q, { scale: ['a', 1, 'a'] });
    assertClean(s.problems, what);
    await s.context.close();
  }
});

test('session time is a SCORM 1.2 timespan, HHHH:MM:SS.SS, rounded before it is split (never 60 s or 60 min)', async () => {
  const { timespan } = await import('../web/scorm/launch.js');
  const cases = [
    [0, '0000:00:00.00'], [-5, '0000:00:00.00'], [NaN, '0000:00:00.00'],
    [12345, '0000:00:12.35'], [59994, '0000:00:59.99'], [59995, '0000:01:00.00'], [59999, '0000:01:00.00'],
    [119996, '0000:02:00.00'], [3599994, '0000:59:59.99'], [3599999, '0001:00:00.00'],
    [9999 * 3600_000, '9999:00:00.00'], [9999 * 3600_000 + 3599_994, '9999:59:59.99'],
    // Past what four hour digits hold: the largest timespan, not a wrapped or inconsistent one.
    [9999 * 3600_000 + 3599_999, '9999:59:59.99'], [1e12, '9999:59:59.99'], [Infinity, '9999:59:59.99'],
  ];
  const wrong = cases.map(([ms, want]) => [ms, want, timespan(ms)]).filter(([, want, got]) => got !== want)
    .map(([ms, want, got]) => `timespan(${ms}) = ${got}, expected ${want}`);
  assert.deepEqual(wrong, [], `${wrong.length} of ${cases.length} cases wrong:\n  ${wrong.join('\n  ')}`);
  // Every millisecond through the first two minutes and around the first hour: the form, and the value within 5 ms.
  const bad = [];
  let worst = 0;
  for (const start of [0, 3_540_000]) {
    for (let ms = start; ms <= start + 120_000; ms++) {
      const text = timespan(ms);
      const m = /^(\d{4}):([0-5]\d):([0-5]\d)\.(\d\d)$/.exec(text);
      const back = m ? ((Number(m[1]) * 60 + Number(m[2])) * 60 + Number(m[3])) * 1000 + Number(m[4]) * 10 : NaN;
      const diff = Math.abs(back - ms);
      if (!(diff <= 5)) bad.push(`${ms} ms -> ${text}${m ? ` (${back} ms, off by ${diff})` : ' (not HHHH:MM:SS.SS)'}`);
      else worst = Math.max(worst, diff);
    }
  }
  assert.deepEqual(bad.slice(0, 8), [], `${bad.length} values wrong (first 8 shown; the good ones are within ${worst} ms)`);
});

test('"Reset these cards" is practice: the LMS keeps the first outcomes, the score and the status', async () => {
  const s = await inLms(packages.small);
  // Every question right (8 points), both cards wrong: 8 of 10, mastery 7, passed.
  await answerQuestions(s.frame, QUESTIONS, () => true);
  await doExercise(s.frame, 'no-scale', 'Rows sum to 1'); // wrong
  await doExercise(s.frame, 'mask-output', 'Rows sum to 1'); // wrong
  await s.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') === 'passed');
  const first = { raw: await s.lms('cmi.core.score.raw'), status: await s.lms('cmi.core.lesson_status'), o: JSON.parse(await s.lms('cmi.suspend_data')).o };
  assert.deepEqual(first, { raw: '8', status: 'passed', o: { 'no-scale': 0, 'mask-output': 0 } });

  // Reset the cards: the LMS hears the cleared cards, and nothing else changes.
  await s.frame.locator('button.bk-reset').click();
  await s.page.waitForFunction(() => !JSON.parse(window.lmsValue('cmi.suspend_data')).b);
  const reset = { raw: await s.lms('cmi.core.score.raw'), status: await s.lms('cmi.core.lesson_status'), o: JSON.parse(await s.lms('cmi.suspend_data')).o };
  assert.deepEqual(reset, first, `after "Reset these cards" the LMS was told ${JSON.stringify(reset)}`);

  // Practise with the checks already seen: the right predictions now score nothing.
  await doExercise(s.frame, 'no-scale', 'Scores scaled by 1/√dk');
  await doExercise(s.frame, 'mask-output', 'Blocked weights are 0');
  await s.page.waitForFunction(() => (JSON.parse(window.lmsValue('cmi.suspend_data')).b || '').includes('h6'));
  const practised = { raw: await s.lms('cmi.core.score.raw'), status: await s.lms('cmi.core.lesson_status'), o: JSON.parse(await s.lms('cmi.suspend_data')).o };
  assert.deepEqual(practised, first, `after a practice round the LMS was told ${JSON.stringify(practised)}`);
  assertClean(s.problems, 'reset in an LMS');
  await s.context.close();
});

test('a frame reloaded in an LMS session: the LMS refuses to start again, and the page says so with its error and shows the work as last sent', async () => {
  const s = await inLms(packages.full);
  await answerQuiz(s.frame, 'scale', 'a'); // right
  await s.page.waitForFunction(() => /"scale":\["a",1,"a"\]/.test(window.lmsValue('cmi.suspend_data')));
  const suspend = await s.lms('cmi.suspend_data');
  // Only the lesson's frame reloads: unloading finishes the session, which scorm-again then will not start again.
  await s.page.evaluate(() => document.getElementById('sco').contentWindow.location.reload());
  await s.page.waitForFunction(() => window.lmsCalls.filter((c) => c.name === 'LMSInitialize').length === 2);
  await s.frame.locator('html[data-ready="true"]').waitFor({ timeout: 20000 });
  const inits = (await s.calls()).filter((c) => c.name === 'LMSInitialize').map((c) => c.result);
  assert.deepEqual(inits, ['true', 'false'], 'the second LMSInitialize is refused');
  const error = await s.page.evaluate(() => ({ code: window.API.LMSGetLastError(), text: window.API.LMSGetErrorString('101') }));
  assert.equal(error.code, '101');

  // Not "no LMS": the LMS's refusal, its error, and what to do.
  assert.equal(await s.frame.locator('.no-lms').count(), 0, 'no "no LMS connection was found" notice');
  assert.doesNotMatch(await s.frame.locator('body').textContent(), /no LMS connection was found/);
  const notice = s.frame.locator('[role="status"].lms-refused');
  assert.equal(await notice.count(), 1);
  assert.equal(await notice.isVisible(), true);
  const said = await shownText(notice);
  assert.match(said, /ended or was refused, so nothing more can be sent/, said);
  assert.ok(said.includes(`LMS error 101, ${error.text}`), `the LMS's error code and text: ${said}`);
  assert.match(said, /as last sent to your course/, said);
  assert.match(said, /close this activity and launch it again from your course/, said);

  // The work as the LMS holds it, not a blank record.
  assert.match(await shownText(s.frame.locator('.pg-line')), new RegExp(`Score 1 of ${MAX} .* 1 of 8 questions answered`));
  const form = s.frame.locator('form[data-quiz="scale"]');
  assert.equal(await form.locator('input[value="a"]').isChecked(), true, 'the earlier answer is shown');
  assert.equal(await s.frame.locator('button.pg-reset').count(), 0, 'first attempts stay final, as in the course');

  // What the learner does now goes nowhere: not to the ended session, not to localStorage.
  const callsBefore = (await s.calls()).length;
  await answerQuiz(s.frame, 'maps', 'a');
  assert.match(await shownText(s.frame.locator('form[data-quiz="maps"] .qz-feedback')), /./);
  assert.equal((await s.calls()).length, callsBefore, 'nothing is sent to the LMS');
  assert.equal(await s.lms('cmi.suspend_data'), suspend);
  assert.equal(await s.frame.locator('html').evaluate(() => localStorage.getItem('attention-lab.progress.v1')), null, 'nothing in localStorage');
  assertClean(s.problems, 'reloaded frame');
  await s.context.close();

  // Refused with no copy of the record in this tab (a session ended before the lesson was ever loaded here).
  const t = await openPage(browser, server.url);
  await t.page.goto(`${server.url}tests/fixtures/scorm-host.html`);
  await t.page.evaluate(() => {
    window.startLms({ launch: 'about:blank' });
    window.API.LMSInitialize('');
    window.API.LMSFinish('');
  });
  await t.page.evaluate((src) => { document.getElementById('sco').src = src; }, packages.full.launch);
  const frame = t.page.frameLocator('#sco');
  await frame.locator('html[data-ready="true"]').waitFor({ timeout: 20000 });
  assert.equal(await frame.locator('.no-lms').count(), 0);
  const bare = await shownText(frame.locator('.lms-refused'));
  assert.match(bare, /LMS error 101/, bare);
  assert.match(bare, /Your earlier work is not shown here, and nothing you do on this page is recorded/, bare);
  assertClean(t.problems, 'refused, no copy');
  await t.context.close();
});

/**
 * The interactions the LMS holds, in order: id, type, student_response,
 * result, weighting, objective (the ids of its objectives, joined), correct
 * (its correct_responses' patterns), latency and time.
 */
async function interactionsOf(session) {
  // Write-only elements are read through scorm-again's JSON form of its data model.
  return session.page.evaluate(() => Object.values(JSON.parse(JSON.stringify(window.API.cmi.interactions))).map((i) => ({
    id: i.id, type: i.type, response: i.student_response, result: i.result, weighting: String(i.weighting),
    objective: Object.values(i.objectives ?? {}).map((o) => o.id).join(','),
    correct: Object.values(i.correct_responses ?? {}).map((c) => c.pattern), latency: i.latency, time: i.time,
  })));
}

/**
 * Where interactions break SCORM 1.2's forms (scorm-again accepts any
 * pattern): a choice's pattern is one letter, a numeric one a CMIDecimal, a
 * fill-in one a CMIString255; the one objective's id is a CMIIdentifier.
 */
function malformedInteractions(held) {
  const forms = { choice: /^[0-9a-z]$/, numeric: /^-?\d+(\.\d+)?$/, 'fill-in': /^.{0,255}$/ };
  return held.flatMap((i) => [
    ...i.correct.filter((p) => !forms[i.type].test(p)).map((p) => `${i.id}: pattern ${JSON.stringify(p)} is not a ${i.type} pattern`),
    ...(/^[a-z0-9-]{1,255}$/.test(i.objective) ? [] : [`${i.id}: objective id ${JSON.stringify(i.objective)}`]),
  ]);
}

/** The break-it cards' correct responses: the letters of the prediction checks the core's run of the bug fails. */
let caughtLetters = null;
async function correctPredictions(bug) {
  if (!caughtLetters) {
    const lab = await loadAttention();
    caughtLetters = new Map(EXERCISES.map((e) => {
      const failed = runChecks(lab, e).filter((r) => !r.passed).map((r) => r.name);
      return [e.bug, PREDICTION_CHECKS.filter((c) => failed.includes(c.name)).map((c) => checkLetter(c.name))];
    }));
  }
  return caughtLetters.get(bug);
}

/** The interaction ids the lesson wrote in this session (each `cmi.interactions.n.id` set). */
async function interactionIdsSet(session) {
  return (await session.calls()).filter((c) => c.name === 'LMSSetValue' && /^cmi\.interactions\.\d+\.id$/.test(c.args[0])).map((c) => c.args[1]);
}

/** What answerQuestions() answers to question `q`, as the LMS is told it (student_response). */
function answerText(q, good) {
  // A choice is reported by the letter the page shows for it (its place in the list), not by its id.
  if (q.kind === 'choice') return 'abcd'[q.choices.findIndex((c) => c.right === good)];
  if (q.kind === 'number') return good ? '32' : '64';
  const cells = good ? Array.from({ length: q.T }, (_, i) => Array.from({ length: q.T - 1 - i }, (_, k) => [i, i + 1 + k])).flat() : [[1, 0]];
  const grid = Array(q.T * q.T).fill('0');
  for (const [i, j] of cells) grid[i * q.T + j] = '1';
  return grid.join('');
}

const checkLetter = (name) => String.fromCharCode(97 + CHECKS.findIndex((c) => c.name === name));

test('each graded item is one SCORM 1.2 interaction, written once when its first attempt is decided, never again on a resume', async () => {
  const kinds = { choice: 'choice', number: 'numeric', grid: 'fill-in' };
  // Its correct response is the answer answerQuestions() gives when right; its objective, the quiz section; no latency (not known).
  const expect = (q, good) => ({ id: `quiz-${q.id}`, type: kinds[q.kind], response: answerText(q, good), result: good ? 'correct' : 'wrong', weighting: '1',
    objective: 'quiz', correct: [answerText(q, true)], latency: '' });
  const card = async (bug, check, result) => ({ id: `breakit-${bug}`, type: 'choice', response: checkLetter(check), result, weighting: '1',
    objective: 'break-it', correct: await correctPredictions(bug), latency: '' });
  const first = await inLms(packages.small);
  // The first five questions (choices, the grid, the number), right and wrong, then a retry, which is not a first attempt.
  const some = QUESTIONS.slice(0, 5);
  await answerQuestions(first.frame, some, (k) => k % 2 === 0);
  await doExercise(first.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
  await first.page.waitForFunction(() => /"o":\{"no-scale":1\}/.test(window.lmsValue('cmi.suspend_data')));
  const retry = QUESTIONS[1].choices.find((c) => c.right).id;
  await answerQuiz(first.frame, 'softmax-axis', retry);
  await first.page.waitForFunction((r) => JSON.parse(window.lmsValue('cmi.suspend_data')).q['softmax-axis'][2] === r, retry);
  const want = [...some.map((q, k) => expect(q, k % 2 === 0)), await card('no-scale', 'scoresScaled', 'correct')];
  const held = await interactionsOf(first);
  assert.ok(held.every((i) => /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d$/.test(i.time)), 'each has its CMITime');
  assert.deepEqual(held.map(({ time, ...i }) => i), want, `the LMS holds ${JSON.stringify(held, null, 1)}`);
  assert.deepEqual(malformedInteractions(held), [], 'SCORM 1.2 forms');
  assert.ok(held.every((i) => /^[a-z0-9-]{1,255}$/.test(i.id)), 'CMIIdentifier ids');
  assert.deepEqual(await interactionIdsSet(first), want.map((i) => i.id), 'each written once');
  await leave(first);
  const suspend = await first.lms('cmi.suspend_data');
  assertClean(first.problems, 'interactions, first session');
  await first.context.close();

  // Resumed: the items decided before are not written again; the rest are, once each.
  const again = await inLms(packages.small, { suspend_data: suspend, core: { entry: 'resume', lesson_status: 'incomplete' } });
  const rest = QUESTIONS.slice(5);
  // The first of them answered right after its model answer was opened: practice, so neutral, not correct.
  await again.frame.locator(`li[data-question="${rest[0].id}"] details.answer summary`).click();
  await again.page.waitForFunction((id) => JSON.parse(window.lmsValue('cmi.suspend_data')).r?.includes(id), rest[0].id);
  await answerQuestions(again.frame, rest, (k) => k === 0);
  await doExercise(again.frame, 'mask-output', 'Rows sum to 1'); // wrong
  await again.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') !== 'incomplete');
  await leave(again);
  const more = [{ ...expect(rest[0], true), result: 'neutral' }, ...rest.slice(1).map((q) => expect(q, false)),
    await card('mask-output', 'rowSumsOne', 'wrong')];
  const resumed = await interactionsOf(again);
  assert.deepEqual(resumed.map(({ time, ...i }) => i), more);
  assert.deepEqual(malformedInteractions(resumed), [], 'SCORM 1.2 forms');
  // The correct responses agree with the grading: a response scored wrong is not among them, any other is.
  const disagree = [...held, ...resumed].filter((i) => (i.result === 'wrong') === i.correct.includes(i.response))
    .map((i) => `${i.id}: ${i.result}, response ${i.response}, correct ${i.correct.join(' | ')}`);
  assert.deepEqual(disagree, [], 'result against correct responses');
  assert.deepEqual(await interactionIdsSet(again), more.map((i) => i.id), 'nothing written twice over the two sessions');
  assertClean(again.problems, 'interactions, resumed');
  await again.context.close();
});

/** The objectives the LMS holds, in order: { id, status, raw, min, max }. */
async function objectivesOf(session) {
  return session.page.evaluate(() => Object.values(JSON.parse(JSON.stringify(window.API.cmi.objectives)))
    .map((o) => ({ id: o.id, status: o.status, raw: String(o.score.raw), min: String(o.score.min), max: String(o.score.max) })));
}

/** The objective elements the lesson set in this session, as "element = value". */
async function objectiveSets(session) {
  return (await session.calls()).filter((c) => c.name === 'LMSSetValue' && c.args[0].startsWith('cmi.objectives.')).map((c) => c.args.join(' = '));
}

test('each section with graded items is one SCORM 1.2 objective: its status and, once final, its score; the same index on a resume', async () => {
  // The LMS already holds an objective of its own: the lesson's come after it and leave it alone.
  // (No score set: scorm-again gives an objective's score.max 100 until one is.)
  const none = { raw: '', min: '', max: '100' };
  const theirs = { id: 'course-intro', status: 'completed', ...none };
  const first = await inLms(packages.small, { objectives: [{ id: theirs.id, status: theirs.status }] });
  await first.page.waitForFunction(() => window.lmsCalls.some((c) => c.name === 'LMSCommit'));
  assert.deepEqual(await objectivesOf(first), [theirs, { id: 'quiz', status: 'incomplete', ...none }, { id: 'break-it', status: 'incomplete', ...none }],
    'on launch: one objective per graded section, incomplete, no score');
  // Five questions answered, all right: the quiz is still incomplete, so its score is not sent yet.
  await answerQuestions(first.frame, QUESTIONS.slice(0, 5), () => true);
  await first.page.waitForFunction(() => Object.keys(JSON.parse(window.lmsValue('cmi.suspend_data') || '{}').q || {}).length === 5);
  const partial = (await objectiveSets(first)).filter((set) => /^cmi\.objectives\.\d+\.score/.test(set));
  assert.deepEqual(partial, [], 'no score for a section still incomplete');
  assert.equal((await objectivesOf(first))[1].status, 'incomplete');
  // Every question answered, 6 of 8 right (mastery 6): the quiz is passed, while the lesson is still incomplete.
  await answerQuestions(first.frame, QUESTIONS.slice(5), (k) => k < 1);
  await doExercise(first.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
  await first.page.waitForFunction(() => /"o":\{"no-scale":1\}/.test(window.lmsValue('cmi.suspend_data')));
  await leave(first);
  const paused = await objectivesOf(first);
  assert.deepEqual(paused, [theirs, { id: 'quiz', status: 'passed', raw: '6', min: '0', max: '8' }, { id: 'break-it', status: 'incomplete', ...none }],
    `after the quiz, one card of two: ${JSON.stringify(paused)}`);
  assert.equal(await first.lms('cmi.core.lesson_status'), 'incomplete');
  // A section's score waits for its status to be final, as the lesson's does.
  const early = (await objectiveSets(first)).filter((set) => /^cmi\.objectives\.2\.score/.test(set));
  assert.deepEqual(early, [], 'no score for the unfinished break-it section');
  const suspend = await first.lms('cmi.suspend_data');
  assertClean(first.problems, 'objectives, first session');
  await first.context.close();

  // Resumed with what the LMS kept: the same indices, no objective added, no id written again.
  const kept = paused.map(({ id, status, raw, min, max }) => ({ id, status, score: { raw, min, max } }));
  const again = await inLms(packages.small, { suspend_data: suspend, objectives: kept, core: { entry: 'resume', lesson_status: 'incomplete' } });
  await doExercise(again.frame, 'mask-output', 'Rows sum to 1'); // wrong: 1 of 2 (mastery 2), failed
  await again.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') === 'passed'); // 7 of 10
  await leave(again);
  const done = await objectivesOf(again);
  assert.deepEqual(done, [theirs, { id: 'quiz', status: 'passed', raw: '6', min: '0', max: '8' }, { id: 'break-it', status: 'failed', raw: '1', min: '0', max: '2' }],
    `after the last card: ${JSON.stringify(done)}`);
  const sets = await objectiveSets(again);
  assert.deepEqual(sets.filter((set) => /\.id = /.test(set) || /^cmi\.objectives\.0\./.test(set)), [], `no id written again, and the LMS's own left alone: ${sets.join('; ')}`);
  assertClean(again.problems, 'objectives, resumed');
  await again.context.close();

  // A package with nothing to score has no objective.
  const reading = await inLms(packages.reading);
  await reading.page.waitForFunction(() => window.lmsCalls.some((c) => c.name === 'LMSCommit'));
  assert.deepEqual(await objectiveSets(reading), [], 'reading sections only: no objective');
  await reading.context.close();
});

test('an LMS that refuses objectives is asked once: no more objective writes in that session, and the rest is reported as usual', async () => {
  const s = await inLms(packages.small, null, null, { set: '^cmi\\.objectives\\.' });
  await s.page.waitForFunction(() => window.lmsCalls.some((c) => c.name === 'LMSCommit'));
  // Several progress changes, each a report: every question, then both cards, to the end.
  await answerQuestions(s.frame, QUESTIONS, (k) => k < 7);
  await doExercise(s.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
  await doExercise(s.frame, 'mask-output', 'Rows sum to 1'); // wrong
  await s.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') === 'passed');
  await leave(s);
  const calls = await s.calls();
  const commits = calls.filter((c) => c.name === 'LMSCommit').length;
  const objectiveCalls = calls.filter((c) => c.name === 'LMSSetValue' && c.args[0].startsWith('cmi.objectives.'))
    .map((c) => `${c.args.join(' = ')} -> ${c.result}`);
  assert.ok(commits >= 10, `several reports were sent: ${commits} commits`);
  assert.deepEqual(objectiveCalls, ['cmi.objectives.0.id = quiz -> false'],
    `objective writes over ${commits} commits (only the first, refused, is expected)`);
  // The rest of the reporting: status and score, suspend data, interactions.
  const held = { status: await s.lms('cmi.core.lesson_status'), raw: await s.lms('cmi.core.score.raw'), max: await s.lms('cmi.core.score.max') };
  assert.deepEqual(held, { status: 'passed', raw: '8', max: '10' });
  const record = JSON.parse(await s.lms('cmi.suspend_data'));
  assert.deepEqual([Object.keys(record.q).length, record.o], [QUESTIONS.length, { 'no-scale': 1, 'mask-output': 0 }]);
  assert.equal((await interactionsOf(s)).length, QUESTIONS.length + 2, 'one interaction per graded item');
  assert.deepEqual(await objectivesOf(s), [], 'the LMS holds no objective');
  assertClean(s.problems, 'objectives refused');
  await s.context.close();
});

test('an LMS whose cmi.objectives._count cannot be read still gets each section at an index of its own', async () => {
  const s = await inLms(packages.small, null, null, { get: '^cmi\\.objectives\\._count$' });
  await s.page.waitForFunction(() => window.lmsCalls.some((c) => c.name === 'LMSCommit'));
  // A question, then a card: two more reports, with the objectives already placed.
  await answerQuestions(s.frame, QUESTIONS.slice(0, 1), () => true);
  await doExercise(s.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
  await s.page.waitForFunction(() => /"o":\{"no-scale":1\}/.test(window.lmsValue('cmi.suspend_data')));
  const sets = await objectiveSets(s);
  // Each section's elements, by the index they were written at.
  const byIndex = {};
  for (const set of sets) {
    const [, n, element, value] = set.match(/^cmi\.objectives\.(\d+)\.(\w+) = (.*)$/);
    if (element === 'id') (byIndex[n] ??= []).push(value);
  }
  assert.deepEqual(byIndex, { 0: ['quiz'], 1: ['break-it'] }, `the ids written, by index: ${sets.join('; ')}`);
  const none = { raw: '', min: '', max: '100' };
  const held = await objectivesOf(s);
  assert.deepEqual(held, [{ id: 'quiz', status: 'incomplete', ...none }, { id: 'break-it', status: 'incomplete', ...none }],
    `the LMS holds ${JSON.stringify(held)}`);
  assertClean(s.problems, '_count unreadable');
  await s.context.close();
});

test('a full run of the whole lesson: its suspend data stays well under SCORM 1.2\'s 4096 characters', async () => {
  const s = await inLms(packages.full);
  await answerQuestions(s.frame, QUESTIONS, (k) => k % 2 === 0);
  for (const e of EXERCISES) await doExercise(s.frame, e.bug, 'Rows sum to 1');
  // Every section worked in: each is visited.
  for (const id of await s.frame.locator('main > section[id]').evaluateAll((ns) => ns.map((n) => n.id))) {
    await s.frame.locator(`#${id}`).locator('input, button, summary, a[href], select, textarea').first().focus();
  }
  await s.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') !== 'incomplete', null, { timeout: 20000 });
  await leave(s);
  const text = await s.lms('cmi.suspend_data');
  const record = JSON.parse(text);
  console.log(`suspend_data after a full run: ${text.length} characters (${Object.keys(record.q).length} questions, ${Object.keys(record.o).length} exercises, ${record.s?.length ?? 0} sections)`);
  assert.equal(Object.keys(record.q).length, QUESTIONS.length);
  assert.equal(Object.keys(record.o).length, EXERCISES.length);
  assert.ok(text.length < 4096, `${text.length} characters`);
  assert.ok(text.length < 2048, `well under the limit: ${text.length} characters`);
  assert.equal((await interactionsOf(s)).length, QUESTIONS.length + EXERCISES.length, 'one interaction per graded item');
  assertClean(s.problems, 'full run');
  await s.context.close();
});
