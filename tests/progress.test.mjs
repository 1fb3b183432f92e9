// The progress record (web/progress.js) in Node: the score rule, the status,
// a reset of the cards (practice: the first outcomes stay),
// the serialised form at its largest (it must fit SCORM 1.2's 4096-character
// cmi.suspend_data), and saved texts that must be refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Progress, parseRecord, serialiseRecord, MAX_SERIALISED, masteryScore, ALL_QUESTIONS, ALL_EXERCISES, BREAKIT_DEFAULT,
  remainingText, STORAGE_KEY,
} from '../web/progress.js';
import { QUESTIONS, longestAnswer } from '../web/quiz-questions.js';
import { CHECKS } from '../web/checks.js';

const full = () => {
  const p = new Progress();
  p.include({ questions: ALL_QUESTIONS, exercises: ALL_EXERCISES });
  return p;
};

test('score: 1 point per first-try right answer and per right prediction; status against ⌈70 %⌉', () => {
  const p = full();
  const max = QUESTIONS.length + ALL_EXERCISES.length;
  assert.deepEqual(p.score(), { raw: 0, max, mastery: Math.ceil(0.7 * max) });
  assert.equal(p.status(), 'incomplete');
  p.answer('scale', 'b', false);
  p.answer('scale', 'a', true); // a retry: marked, but the first attempt counts
  assert.deepEqual(p.answerTo('scale'), { first: 'b', right: false, latest: 'a' });
  assert.equal(p.score().raw, 0);
  p.answer('softmax-axis', 'c', true);
  assert.equal(p.score().raw, 1);
  p.decide('no-scale', true);
  p.decide('no-scale', false); // decided once
  assert.equal(p.score().raw, 2);
  assert.throws(() => p.answer('scale', 'z', true), /not an answer/);
  assert.equal(masteryScore(20), 14);
  assert.equal(masteryScore(22), 16);
  assert.equal(masteryScore(3), 3);
  assert.equal(masteryScore(1), 1);
});

test('complete only when every question is answered and every exercise broken and repaired; then passed or failed', () => {
  const finish = (rightExercises) => {
    const p = full();
    for (const q of QUESTIONS) p.answer(q.id, longestAnswer(q), true);
    let state = '';
    ALL_EXERCISES.forEach((bug, i) => {
      p.decide(bug, i < rightExercises);
      state += 'a6'; // predicted, broken once, repaired, bug off
    });
    assert.equal(p.status(), 'incomplete', 'outcomes alone do not finish the exercises');
    p.setBreakIt(state);
    return p;
  };
  const max = QUESTIONS.length + ALL_EXERCISES.length;
  const mastery = masteryScore(max);
  const passed = finish(mastery - QUESTIONS.length); // exactly the mastery score
  assert.deepEqual(passed.score(), { raw: mastery, max, mastery });
  assert.equal(passed.status(), 'passed');
  const failed = finish(mastery - QUESTIONS.length - 1);
  assert.equal(failed.score().raw, mastery - 1);
  assert.equal(failed.status(), 'failed');
});

test('a narrower scope (a package with some sections) changes max and what must be done', () => {
  assert.equal(new Progress().status(), 'completed', 'nothing scored in scope: reading only');
  const p = new Progress();
  p.include({ exercises: ['no-scale', 'mask-output'] });
  assert.deepEqual(p.score(), { raw: 0, max: 2, mastery: 2 });
  p.decide('no-scale', true);
  p.decide('mask-output', true);
  const i = ALL_EXERCISES.indexOf('no-scale');
  const j = ALL_EXERCISES.indexOf('mask-output');
  const chars = [...BREAKIT_DEFAULT];
  for (const k of [i, j]) { chars[2 * k] = 'a'; chars[2 * k + 1] = '6'; }
  p.setBreakIt(chars.join(''));
  assert.equal(p.status(), 'passed');
});

test('the serialised form at its largest fits in 4096 characters, and round-trips', () => {
  const record = {
    // Every answer opened before its first attempt (so none scored): the longest list of opened answers.
    quiz: Object.fromEntries(QUESTIONS.map((q) => [q.id, { first: longestAnswer(q), right: false, latest: longestAnswer(q) }])),
    revealed: [...ALL_QUESTIONS],
    breakIt: `${String.fromCharCode(96 + CHECKS.length)}7`.repeat(ALL_EXERCISES.length),
    outcomes: Object.fromEntries(ALL_EXERCISES.map((bug) => [bug, true])),
    practice: Object.fromEntries(ALL_EXERCISES.map((bug) => [bug, true])),
    // The most sections the parser accepts, each with the longest id it accepts.
    visited: Array.from({ length: 32 }, (_, i) => `s${String(i).padStart(2, '0')}${'x'.repeat(29)}`),
  };
  const text = serialiseRecord(record);
  console.log(`largest serialised progress: ${text.length} of ${MAX_SERIALISED} characters`);
  assert.ok(text.length <= MAX_SERIALISED, `${text.length} characters`);
  assert.deepEqual(parseRecord(text), record);
  // A real learner's full record, too.
  const p = full();
  for (const q of QUESTIONS) { p.answer(q.id, longestAnswer(q), false); p.answer(q.id, longestAnswer(q), true); }
  for (const bug of ALL_EXERCISES) p.decide(bug, true);
  const again = new Progress();
  assert.equal(again.restore(p.serialise()), true);
  assert.deepEqual(again.record, p.record);
});

test('corrupted or hostile saved texts are refused with a notice, and the record starts fresh', () => {
  const good = '{"v":1,"q":{"scale":["a",1,"a"]}}';
  const bad = {
    'not JSON': '{"v":1,',
    'huge': `{"v":1,"s":["${'a'.repeat(5000)}"]}`,
    'script text': '<script>window.ran = 1</script>',
    'a script in an answer': '{"v":1,"q":{"scale":["<img src=x onerror=alert(1)>",1,"a"]}}',
    'an unknown question': '{"v":1,"q":{"constructor":["a",1,"a"]}}',
    '__proto__': '{"v":1,"q":{"__proto__":["a",1,"a"]}}',
    'an unknown part': '{"v":1,"x":1}',
    'another version': '{"v":2}',
    'a bad break-it state': '{"v":1,"b":"zz"}',
    'a bad outcome': '{"v":1,"o":{"no-scale":"yes"}}',
    'an unknown exercise': '{"v":1,"o":{"toString":1}}',
    'practice without an outcome': '{"v":1,"p":{"no-scale":1}}',
    'a bad practice entry': '{"v":1,"o":{"no-scale":1},"p":{"no-scale":true}}',
    'a bad section id': '{"v":1,"s":["<b>"]}',
    'a grid answer of the wrong size': '{"v":1,"q":{"causal":["0101",0,"0101"]}}',
    'opened answers not in a list': '{"v":1,"r":"scale"}',
    'an unknown opened answer': '{"v":1,"r":["toString"]}',
    'an opened answer that scored': '{"v":1,"q":{"scale":["a",1,"a"]},"r":["scale"]}',
    'null': 'null',
    'an array': '[1,2]',
  };
  for (const [what, text] of Object.entries(bad)) {
    const p = new Progress();
    p.answer('maps', 'b', true);
    assert.equal(p.restore(text), false, what);
    assert.match(p.notice, /could not be used .* starts fresh/, what);
    assert.deepEqual(p.record, { quiz: {}, revealed: [], breakIt: BREAKIT_DEFAULT, outcomes: {}, practice: {}, visited: [] }, `${what}: fresh`);
    assert.ok(!p.notice.includes(text.slice(0, 12)) || text.length < 6, `${what}: the notice does not echo the text`);
  }
  assert.equal(globalThis.ran, undefined);
  const p = new Progress();
  assert.equal(p.restore(good), true);
  assert.equal(p.notice, null);
});

test('opening the model answer before the first attempt: that attempt scores nothing, even right; after it, opening costs nothing', () => {
  const p = full();
  const events = [];
  p.subscribe((event) => events.push(event.type));
  p.reveal('scale');
  p.reveal('scale'); // once
  assert.deepEqual(events, ['reveal'], `events after reveal(): ${events.join(', ')}`);
  assert.equal(p.revealed('scale'), true);
  p.answer('scale', 'a', true);
  assert.deepEqual(p.answerTo('scale'), { first: 'a', right: false, latest: 'a' }, 'a right first attempt made with the answer open scores nothing');
  assert.equal(p.score().raw, 0, 'no point for a question whose answer was opened first');
  // Answered first, then opened: the point stays, and the answer is not marked revealed.
  p.answer('maps', 'b', true);
  p.reveal('maps');
  assert.equal(p.revealed('maps'), false, 'opening the answer after the first attempt changes nothing');
  assert.equal(p.score().raw, 1);
  // The record keeps it, and so does a reload (or an LMS's suspend data).
  const text = p.serialise();
  assert.match(text, /"r":\["scale"\]/, text);
  const again = full();
  assert.equal(again.restore(text), true, again.notice);
  assert.equal(again.revealed('scale'), true);
  assert.deepEqual(again.score(), p.score());
  again.answer('scale', 'a', true); // a retry is practice too
  assert.equal(again.score().raw, 1);
  // A record saved before answers could be opened first still loads, as it was scored.
  const old = full();
  assert.equal(old.restore('{"v":1,"q":{"scale":["a",1,"a"],"maps":["a",0,"b"]}}'), true, old.notice);
  assert.deepEqual([old.revealed('scale'), old.score().raw], [false, 1]);
  // A reset (outside an LMS) forgets which answers were opened.
  again.reset();
  assert.equal(again.revealed('scale'), false);
});

test('a graded record (an LMS grades it) refuses reset(): first attempts stay final; an ungraded one starts over', () => {
  for (const graded of [true, false]) {
    const p = new Progress({ graded });
    p.include({ exercises: ['no-scale'] });
    p.decide('no-scale', true);
    p.reset();
    assert.deepEqual(p.record.outcomes, graded ? { 'no-scale': true } : {}, `graded ${graded}: outcomes after reset()`);
  }
});

test('a reset of the cards lets the learner practise, but each decided outcome stays: score, status and completion do not move', () => {
  const p = new Progress();
  p.include({ exercises: ['no-scale', 'mask-output'] });
  const at = (bug) => 2 * ALL_EXERCISES.indexOf(bug);
  const state = (cards) => {
    const chars = [...BREAKIT_DEFAULT];
    for (const [bug, text] of Object.entries(cards)) { chars[at(bug)] = text[0]; chars[at(bug) + 1] = text[1]; }
    return chars.join('');
  };
  // no-scale: predicted wrong, broken, repaired. mask-output: predicted right, broken, not yet repaired.
  p.decide('no-scale', false);
  p.decide('mask-output', true);
  p.setBreakIt(state({ 'no-scale': 'a6', 'mask-output': 'b3' }));
  const before = { score: p.score(), finished: p.summary().finished, outcomes: { ...p.record.outcomes } };
  assert.deepEqual(before, { score: { raw: 1, max: 2, mastery: 2 }, finished: 1, outcomes: { 'no-scale': false, 'mask-output': true } });

  p.resetExercises(['no-scale', 'mask-output']);
  assert.equal(p.record.breakIt, BREAKIT_DEFAULT, 'the cards start again');
  const kept = { score: p.score(), finished: p.summary().finished, outcomes: { ...p.record.outcomes } };
  assert.deepEqual(kept, before, `after "Reset these cards" the score, the finished cards and the outcomes must stay; seen ${JSON.stringify(kept)}`);
  assert.equal(p.inPractice('no-scale'), true, 'a reset card is in practice');

  // The practice round: the right check now, which must not change the first outcome.
  assert.equal(p.decide('no-scale', true), false, 'a practice round decides nothing');
  assert.equal(p.record.outcomes['no-scale'], false);
  assert.deepEqual(p.score(), before.score);
  p.setBreakIt(state({ 'no-scale': 'h6', 'mask-output': 'b6' }));
  assert.equal(p.status(), 'failed', 'both cards finished, 1 of 2 points');

  // All of it survives a save and a restore (localStorage, an LMS).
  const again = new Progress();
  again.include({ exercises: ['no-scale', 'mask-output'] });
  assert.equal(again.restore(p.serialise()), true, again.notice);
  assert.deepEqual(again.record, p.record);
  assert.equal(again.inPractice('no-scale'), true);
  assert.equal(again.status(), 'failed');
});

test('an outcome whose card lost its "broken" flag (the back button, a state in the URL) makes that card practice', () => {
  const p = new Progress();
  p.include({ exercises: ['no-scale'] });
  p.decide('no-scale', false);
  const i = 2 * ALL_EXERCISES.indexOf('no-scale');
  const chars = [...BREAKIT_DEFAULT];
  chars[i] = 'a';
  chars[i + 1] = '6';
  p.setBreakIt(chars.join(''));
  assert.equal(p.inPractice('no-scale'), false, 'the scored round');
  p.setBreakIt(BREAKIT_DEFAULT);
  assert.equal(p.inPractice('no-scale'), true, 'unbroken with an outcome: a practice round');
  assert.equal(p.exerciseDone('no-scale'), true, 'and it stays finished');
});

test('view() only says which section is in view (the LMS location); a section is visited through visit() alone', () => {
  const p = new Progress();
  const events = [];
  p.subscribe((event) => events.push(event.type));
  p.view('masks');
  assert.equal(p.current, 'masks');
  assert.deepEqual(p.record.visited, [], `view() alone marked sections visited: ${JSON.stringify(p.record.visited)}`);
  assert.deepEqual(events, ['view'], `events after view(): ${events.join(', ')}`);
  p.visit('masks');
  p.visit('masks'); // once
  assert.deepEqual(p.record.visited, ['masks']);
  assert.deepEqual(events, ['view', 'visit']);
});

test('summary(): visited counts the page\'s watched sections only, out of their total; an old record of visited ids still loads', () => {
  const p = new Progress();
  // A record saved by the full page (or an older version): five ids, one of them not on this page.
  assert.equal(p.restore('{"v":1,"s":["masks","quiz","break-it","why-scale","kv-cache"]}'), true, p.notice);
  assert.deepEqual(p.record.visited, ['masks', 'quiz', 'break-it', 'why-scale', 'kv-cache']);
  assert.equal(p.summary().visited, 5, 'no sections watched yet: every saved id counts');
  // A package showing three sections watches those three.
  p.include({ sections: ['masks', 'quiz', 'break-it'] });
  const s = p.summary();
  assert.deepEqual([s.visited, s.sections], [3, 3], `a three-section page: ${s.visited} of ${s.sections} visited`);
  p.include({ sections: ['masks', 'dropout'] }); // widening keeps each id once
  assert.deepEqual([p.summary().visited, p.summary().sections], [3, 4]);
  // The saved form is unchanged: the ids, all of them (the other page's too).
  assert.equal(p.serialise(), '{"v":1,"s":["masks","quiz","break-it","why-scale","kv-cache"]}');
  // Visiting is not scored; with nothing scored in scope it decides when the work is complete.
  assert.equal(p.status(), 'incomplete', 'nothing scored, 3 of 4 sections visited');
  p.visit('dropout');
  assert.equal(p.status(), 'completed', 'nothing scored, every section visited');
  assert.deepEqual([p.score().raw, p.score().max], [0, 0], 'and nothing scored');
});

test('what is left: unanswered questions, cards waiting for their repair (by title), cards not tried', () => {
  const p = new Progress();
  p.include({ questions: ['scale', 'softmax-axis'], exercises: ['no-scale', 'no-causal-mask'] });
  p.answer('scale', 'a', true);
  // no-scale: predicted, broken, then switched off (flags 2): decided, not repaired.
  const i = ALL_EXERCISES.indexOf('no-scale');
  const state = [...BREAKIT_DEFAULT];
  state[2 * i] = 'a';
  state[2 * i + 1] = '2';
  p.setBreakIt(state.join(''));
  p.decide('no-scale', true);
  assert.deepEqual(p.remaining(), { questions: ['softmax-axis'], repairs: ['no-scale'], rebreaks: [], untried: ['no-causal-mask'] });
  assert.equal(remainingText(p),
    'Left: the repair of “No 1/√d_k” (press “Apply the repair” on its card); 1 break-it card to try; 1 question to answer.');
  // The card's reset (prediction and flags cleared): its repair button is gone, so the bug must go on again first.
  state[2 * i] = '-';
  state[2 * i + 1] = '0';
  p.setBreakIt(state.join(''));
  assert.deepEqual(p.remaining(), { questions: ['softmax-axis'], repairs: [], rebreaks: ['no-scale'], untried: ['no-causal-mask'] });
  assert.equal(remainingText(p),
    'Left: “No 1/√d_k”, started again: switch its bug on again, then press “Apply the repair”; 1 break-it card to try; 1 question to answer.');
  state[2 * i + 1] = '6'; // broken again, then repaired
  p.setBreakIt(state.join(''));
  assert.deepEqual([p.remaining().repairs, p.remaining().rebreaks], [[], []]);
});

test('a record kept under its own key: saved says whether it reached storage; forget() removes it', () => {
  const store = new Map();
  const fake = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, String(v)), removeItem: (k) => store.delete(k) };
  const before = Object.getOwnPropertyDescriptor(globalThis, 'localStorage');
  Object.defineProperty(globalThis, 'localStorage', { value: fake, configurable: true });
  try {
    const key = 'attention-lab.widget.v1:/a/page.html:break-it:no-scale';
    const p = new Progress({ persist: true, key });
    assert.equal(p.decide('no-scale', false), true);
    assert.equal(p.saved, true);
    assert.ok(store.has(key) && !store.has(STORAGE_KEY), 'kept under its key, not the lesson page\'s');
    const again = new Progress({ persist: true, key });
    assert.equal(again.outcome('no-scale'), false, 'a reload finds the outcome');
    assert.equal(again.decide('no-scale', true), false, 'and decides it no second time');
    again.forget();
    assert.equal(new Progress({ persist: true, key }).outcome('no-scale'), null);
    Object.defineProperty(globalThis, 'localStorage', { get() { throw new Error('denied'); }, configurable: true });
    const refused = new Progress({ persist: true, key });
    assert.equal(refused.decide('no-scale', true), true);
    assert.equal(refused.saved, false);
  } finally {
    if (before) Object.defineProperty(globalThis, 'localStorage', before);
    else delete globalThis.localStorage;
  }
});
