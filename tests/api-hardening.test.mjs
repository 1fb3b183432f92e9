// The public API's documented read-only values stay what the wrapper uses,
// and its refusals say the same thing on every path: reassigning a module's
// sizes, a trainer's config or an object's pointer and generation cannot
// make a call read or write the wrong memory; every bug and option is
// refused or accepted alike by sdpa, sdpaTiled and sdpaBackward.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention } from '../web/attention.js';
import { rng, randomTensor } from './helpers/reference.mjs';
import { refuses, assertClose } from './helpers/compare.mjs';

const labs = { true: await loadAttention({ simd: true }), false: await loadAttention({ simd: false }) };

/**
 * obj[key] = value, as a caller's script might write it. A read-only
 * property throws TypeError in this strict-mode module, which is a fine
 * answer: anything else thrown fails the test.
 */
function tryAssign(obj, key, value) {
  try {
    obj[key] = value;
  } catch (err) {
    assert.ok(err instanceof TypeError, `assigning ${key} threw ${err?.constructor?.name}: ${err?.message}`);
  }
}

for (const simd of [true, false]) {
  describe(`${simd ? 'SIMD' : 'scalar'} build: read-only values stay read-only`, () => {
    const lab = labs[simd];
    const random = rng(33);

    test('reassigning a multi-head module\'s sizes changes neither its results nor the memory it reads', () => {
      const m = lab.createMultiHeadAttention({ dModel: 64, numHeads: 1, seed: 2 });
      const x = randomTensor([1, 3, 64], random);
      const before = m.forward(x).output.data;
      const weights = m.getWeights();
      for (const [key, value] of [['dModel', 1], ['numHeads', 1], ['headDim', 1], ['bias', false], ['rope', true]]) tryAssign(m, key, value);
      refuses(() => m.forward({ data: new Float32Array(2000).fill(0.5), shape: [1, 2000, 1] }, { needWeights: false }), 'SHAPE_MISMATCH', /dModel=64/);
      assert.deepEqual([m.dModel, m.numHeads, m.headDim, m.bias, m.rope], [64, 1, 64, true, false], 'the documented values after the assignments');
      assertClose(m.forward(x).output.data, before, { shape: [1, 3, 64], label: 'output after the assignments' });
      tryAssign(m, 'dModel', 128);
      tryAssign(m, 'headDim', 128);
      assert.deepEqual(m.getWeights().qProj.weight.shape, [64, 64], 'getWeights sized by the module, not by an assigned dModel');
      assert.deepEqual(m.getWeights(), weights, 'getWeights reads the module\'s own weights');
      m.setWeights(weights);
      refuses(() => m.setWeights({ qProj: { weight: randomTensor([128, 128], random) } }), 'SHAPE_MISMATCH', /\[64, 64\]/);
      assertClose(m.forward(x).output.data, before, { shape: [1, 3, 64], label: 'output after an assigned dModel of 128' });
      // An own property over the getter is the caller's to read; the wrapper keeps its own copy.
      Object.defineProperty(m, 'dModel', { value: 1 });
      refuses(() => m.forward({ data: new Float32Array(2000).fill(0.5), shape: [1, 2000, 1] }), 'SHAPE_MISMATCH', /dModel=64/);
      assertClose(m.forward(x).output.data, before, { shape: [1, 3, 64], label: 'output with dModel defined over the getter' });
      m.free();
    });

    test('reassigning a trainer\'s config does not change the sizes it accepts', () => {
      const trainer = lab.createTrainer({ task: 'previous-token', seqLen: 16, batch: 2, seed: 1 });
      const config = trainer.config;
      tryAssign(trainer, 'config', { ...config, seqLen: 32, batch: 32 });
      tryAssign(trainer.config, 'seqLen', 32);
      assert.deepEqual(trainer.config, config, 'the config after the assignments');
      assert.ok(Object.isFrozen(trainer.config), 'the config is frozen');
      const big = { data: new Float64Array(32 * 32).fill(1), shape: [32, 32] };
      refuses(() => trainer.gradients(big, big), 'SHAPE_MISMATCH', /\[2, 16\]/);
      refuses(() => trainer.attention({ data: new Float64Array(32).fill(1), shape: [32] }), 'SHAPE_MISMATCH', /\[16\]/);
      const ids = { data: new Float64Array(2 * 16).fill(1), shape: [2, 16] };
      const { gradients } = trainer.gradients(ids, ids);
      assert.deepEqual(gradients.wpe.shape, [16, config.dModel], 'position embeddings for the trainer\'s own seqLen');
      trainer.free();
    });

    test('another object\'s pointer cannot be assigned to a module or a trainer', () => {
      const a = lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, seed: 1 });
      const b = lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, seed: 2 });
      const x = randomTensor([1, 2, 8], random);
      const aOut = a.forward(x).output.data;
      // A module's pointer is private: a public "ptr" set on it (here the null pointer) is not what it uses.
      const bOut = b.forward(x).output.data;
      tryAssign(b, 'ptr', 0);
      assert.deepEqual(b.forward(x).output.data, bOut, 'module b works on after a ptr was set on it');
      b.setWeights({ qProj: { weight: randomTensor([8, 8], random) } });
      assert.deepEqual(a.forward(x).output.data, aOut, 'module a unchanged by b.setWeights');
      b.free();
      assert.deepEqual(a.forward(x).output.data, aOut, 'module a still alive after b.free()');
      a.free();

      const t1 = lab.createTrainer({ task: 'previous-token', seed: 1 });
      const t2 = lab.createTrainer({ task: 'previous-token', seed: 2 });
      const ptr = t1.ptr;
      tryAssign(t2, 'ptr', ptr);
      t2.step(3);
      assert.equal(t1.step(0).step, 0, 'trainer 1 took no step when trainer 2 did');
      t2.free();
      assert.equal(t1.ptr, ptr, 'trainer 1 keeps its pointer');
      t1.free();
      assert.equal(t1.ptr, 0, 'a freed trainer\'s pointer is 0');
    });
  });
}

describe('refusals that read the same on every path', () => {
  const lab = labs.true;
  const random = rng(34);
  const q = randomTensor([3, 4], random);
  const k = randomTensor([5, 4], random);
  const v = randomTensor([5, 2], random);
  const dOut = randomTensor([3, 2], random);

  test('sdpaBackward refuses the tiled path\'s bug "no-rescale", as sdpa and mha.forward do', () => {
    refuses(() => lab.sdpaBackward(q, k, v, dOut, { bug: 'no-rescale' }), 'BAD_ARGUMENT', /no-rescale.*tiled/);
    refuses(() => lab.sdpaBackward(q, k, v, dOut, { bug: 'no-rescale', needWeights: false }), 'BAD_ARGUMENT', /no-rescale.*tiled/);
  });

  test('a multi-head-only bug is refused naming the call that was made', () => {
    for (const bug of ['heads-without-transpose', 'stale-cache-offset']) {
      refuses(() => lab.sdpa(q, k, v, { bug }), 'BAD_ARGUMENT', /use it with mha\.forward, not lab\.sdpa$/);
      refuses(() => lab.sdpaTiled(q, k, v, { bug }), 'BAD_ARGUMENT', /use it with mha\.forward, not lab\.sdpaTiled$/);
      refuses(() => lab.sdpaBackward(q, k, v, dOut, { bug }), 'BAD_ARGUMENT', /use it with mha\.forward, not lab\.sdpaBackward$/);
    }
  });

  test('sdpaBackward takes weights: null as weights not given', () => {
    const without = lab.sdpaBackward(q, k, v, dOut);
    const withNull = lab.sdpaBackward(q, k, v, dOut, { weights: null });
    for (const name of ['dq', 'dk', 'dv', 'dScores', 'dProbs']) {
      assert.deepEqual(withNull[name], without[name], `${name} with weights: null`);
    }
  });

  test('bug "none" is no bug, on every call that takes a bug', () => {
    assert.deepEqual(lab.sdpa(q, k, v, { bug: 'none' }).output, lab.sdpa(q, k, v).output);
    assert.deepEqual(lab.sdpaTiled(q, k, v, { bug: 'none' }).output, lab.sdpaTiled(q, k, v).output);
    assert.deepEqual(lab.sdpaBackward(q, k, v, dOut, { bug: 'none' }).dq, lab.sdpaBackward(q, k, v, dOut).dq);
    const trainer = lab.createTrainer({ task: 'previous-token', bug: 'none' });
    assert.equal(trainer.config.bug, null);
    trainer.free();
  });
});

test('after lab.reset, assigning the lab\'s generation to an old module or trainer does not revive it', async () => {
  const lab = labs.false;
  const m = lab.createMultiHeadAttention({ dModel: 8, numHeads: 2 });
  const trainer = lab.createTrainer({ task: 'previous-token' });
  const generation = lab.generation;
  await lab.reset();
  assert.equal(lab.generation, generation + 1, 'a reset counts one generation');
  tryAssign(m, 'generation', lab.generation);
  tryAssign(trainer, 'generation', lab.generation);
  refuses(() => m.forward(randomTensor([1, 2, 8], rng(1))), 'MODULE_FREED', /reset/);
  refuses(() => trainer.step(1), 'MODULE_FREED', /reset/);
  tryAssign(lab, 'generation', generation);
  assert.equal(lab.generation, generation + 1, 'the lab\'s generation after an assignment');
  m.free();
  trainer.free();
});
