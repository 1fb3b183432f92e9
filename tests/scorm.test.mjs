// The SCORM 1.2 package (web/dist.mjs, web/scorm/launch.js): its manifest,
// and the lesson inside an LMS played by scorm-again's SCORM 1.2 runtime
// (tests/fixtures/scorm-host.html): what the LMS receives, resuming from
// suspend data, passed / failed, a reset of the cards (the LMS keeps the
// first outcomes), the package without an LMS, and suspend data that must
// be refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unzipSync } from 'fflate';
import { launchBrowser, openPage, startServer, assertClean, shownText } from './helpers/browser.mjs';
import { scormPackage } from '../web/dist.mjs';
import { QUESTIONS } from '../web/quiz-questions.js';
import { EXERCISES } from '../web/exercises.js';
import { masteryScore } from '../web/progress.js';

/** The full lesson's score max: the questions and the break-it cards. */
const MAX = QUESTIONS.length + EXERCISES.length;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'build', 'scorm-test');

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
    const inZip = Object.keys(pkg.zip).filter((f) => f !== 'imsmanifest.xml').sort();
    assert.deepEqual([...m.files].sort(), inZip, `${name}: the manifest lists exactly the zip's files`);
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

/** The LMS stand-in with the package loaded; resolves once the lesson has drawn itself. */
async function inLms(pkg, cmi = null) {
  const session = await openPage(browser, server.url);
  await session.page.goto(`${server.url}tests/fixtures/scorm-host.html`);
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

test('in an LMS: two answers and one exercise are reported; a relaunch with the suspend data resumes', async () => {
  const first = await inLms(packages.full);
  assert.equal((await first.calls())[0].name, 'LMSInitialize');
  await answerQuiz(first.frame, 'scale', 'a'); // right
  await answerQuiz(first.frame, 'maps', 'a'); // wrong
  await doExercise(first.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
  await first.page.waitForFunction(() => window.lmsValue('cmi.core.score.raw') === '2');
  assert.equal(await first.lms('cmi.core.score.min'), '0');
  assert.equal(await first.lms('cmi.core.score.max'), String(MAX));
  assert.equal(await first.lms('cmi.core.lesson_status'), 'incomplete');
  const suspend = await first.lms('cmi.suspend_data');
  const record = JSON.parse(suspend);
  assert.deepEqual(record.q, { scale: ['a', 1, 'a'], maps: ['a', 0, 'a'] });
  assert.deepEqual(record.o, { 'no-scale': 1 });
  assert.ok(suspend.length <= 4096);
  const names = new Set((await first.calls()).map((c) => c.name));
  assert.ok(names.has('LMSCommit'), 'committed');
  // The learner scrolls to the quiz, then leaves: session time, exit, commit and finish.
  await first.frame.locator('#quiz').scrollIntoViewIfNeeded();
  await first.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_location') === 'quiz', null, { timeout: 5000 });
  await first.page.evaluate(() => { document.getElementById('sco').src = 'about:blank'; });
  await first.page.waitForFunction(() => window.lmsCalls.some((c) => c.name === 'LMSFinish'));
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
  await again.page.waitForFunction(() => window.lmsValue('cmi.core.score.raw') === '2');
  // Graded first attempts are final in an LMS: the panel offers no reset, and says why.
  assert.equal(await again.frame.locator('button.pg-reset').count(), 0, 'no "Reset all progress" while an LMS grades');
  assert.match(await shownText(again.frame.locator('.pg-graded')), /first attempts/);
  assertClean(again.problems, 'relaunch');
  await again.context.close();
});

test('finishing everything reports passed or failed against the mastery score', async () => {
  for (const [label, rightAnswers, expected] of [['passed', 7, 'passed'], ['failed', 2, 'failed']]) {
    const s = await inLms(packages.small);
    let k = 0;
    for (const q of QUESTIONS) {
      const right = k++ < rightAnswers;
      if (q.kind === 'choice') await answerQuiz(s.frame, q.id, q.choices.find((c) => c.right === right).id);
      else if (q.kind === 'number') await answerQuiz(s.frame, q.id, right ? '32' : '64');
      else {
        const form = s.frame.locator(`form[data-quiz="${q.id}"]`);
        const cells = right ? [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]] : [[1, 0]];
        for (const [i, j] of cells) await form.locator(`button[data-row="${i}"][data-col="${j}"]`).click();
        await form.locator('button[type="submit"]').click();
      }
    }
    assert.equal(await s.lms('cmi.core.lesson_status'), 'incomplete', `${label}: exercises still to do`);
    await doExercise(s.frame, 'no-scale', 'Scores scaled by 1/√dk'); // right
    await doExercise(s.frame, 'mask-output', 'Rows sum to 1'); // wrong
    const raw = rightAnswers + 1;
    await s.page.waitForFunction((r) => window.lmsValue('cmi.core.score.raw') === String(r), raw);
    assert.equal(await s.lms('cmi.core.score.max'), '10');
    assert.deepEqual(await s.frame.locator('main > section').evaluateAll((ns) => ns.map((n) => n.id)), ['masks', 'quiz', 'break-it']);
    assert.equal(await s.frame.locator('#break-it .bk-card').count(), 2);
    assert.equal(await s.lms('cmi.core.lesson_status'), expected, `${label}: ${raw} of 10, mastery 7`);
    assertClean(s.problems, label);
    await s.context.close();
  }
});

test('a package with nothing to score reports completed, with a max of 0', async () => {
  const s = await inLms(packages.reading);
  await s.page.waitForFunction(() => window.lmsValue('cmi.core.lesson_status') === 'completed');
  assert.equal(await s.lms('cmi.core.score.max'), '0');
  assert.equal(await s.frame.locator('main > section').count(), 2);
  assertClean(s.problems, 'reading only');
  await s.context.close();
});

test('without an LMS the package is the plain lesson: it works, with no console errors and no outside request', async () => {
  const { page, problems, context } = await openPage(browser, server.url);
  await page.goto(`${server.url}build/scorm-test/full/unpacked/index.html`);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 20000 });
  assert.match(await page.locator('#boot-status').textContent(), /Computed live by the attention core/);
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
    await s.page.waitForFunction(() => window.lmsValue('cmi.core.score.raw') === '1');
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
  for (const q of QUESTIONS) {
    if (q.kind === 'choice') await answerQuiz(s.frame, q.id, q.choices.find((c) => c.right).id);
    else if (q.kind === 'number') await answerQuiz(s.frame, q.id, '32');
    else {
      const form = s.frame.locator(`form[data-quiz="${q.id}"]`);
      for (const [i, j] of [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]) await form.locator(`button[data-row="${i}"][data-col="${j}"]`).click();
      await form.locator('button[type="submit"]').click();
    }
  }
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
