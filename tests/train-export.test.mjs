// train-export.test.mjs: a trained layer taken out of the trainer.
//
// trainer.weights(layer) gives a layer's q, k, v, out projections in the
// format lab.MultiHeadAttention's setWeights takes, and
// trainer.layerInput(layer, tokens) the residual stream entering that layer.
// Together they must reproduce the trainer's own attention maps in a
// separate multi-head module, on both wasm builds; the embedding is checked
// against a float64 sum of the trainer's own tables.
//
// Run: node --test tests/train-export.test.mjs
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { loadAttention } from '../web/attention.js';
import { assertClose, refuses } from './helpers/compare.mjs';

const PROJECTIONS = ['qProj', 'kProj', 'vProj', 'outProj'];

/** The maps (H, T, T) of layer `layer` computed by a multi-head module with the trainer's weights. */
function moduleMaps(lab, trainer, layer, tokens) {
  const { dModel, heads } = trainer.config;
  const mha = lab.createMultiHeadAttention({ dModel, numHeads: heads, bias: false });
  mha.setWeights(trainer.weights(layer));
  const { weights } = mha.forward(trainer.layerInput(layer, tokens), { causal: true });
  mha.free();
  return weights;
}

for (const simd of [true, false]) {
  describe(`a trained layer in a multi-head module (${simd ? 'SIMD' : 'scalar'} build)`, () => {
    let lab;
    before(async () => { lab = await loadAttention({ simd }); });

    test('weights(layer): four (dModel, dModel) projections without bias, copies of the parameters', () => {
      const trainer = lab.createTrainer({ task: 'induction', layers: 2, heads: 2, dModel: 16, seqLen: 12, vocab: 10, seed: 3 });
      trainer.step(10);
      const params = trainer.parameters();
      for (const layer of [0, 1]) {
        const w = trainer.weights(layer);
        assert.deepEqual(Object.keys(w), PROJECTIONS);
        PROJECTIONS.forEach((name, i) => {
          assert.deepEqual(w[name].weight.shape, [16, 16], `${name} shape`);
          assert.equal(w[name].bias, null, `${name} has no bias`);
          assert.deepEqual(w[name].weight.data, params[`l${layer + 1}.${['wq', 'wk', 'wv', 'wo'][i]}`].data, `layer ${layer} ${name}`);
        });
      }
      trainer.free();
    });

    test('layerInput(0, tokens) is wte[token] + wpe[position] (float64 sum of the parameters)', () => {
      const trainer = lab.createTrainer({ task: 'previous-token', seed: 2 });
      trainer.step(20);
      const { wte, wpe } = trainer.parameters();
      const C = trainer.config.dModel;
      const tokens = [5, 0, 15, 5, 7];
      const x = trainer.layerInput(0, tokens);
      assert.deepEqual(x.shape, [1, tokens.length, C]);
      const want = new Float64Array(tokens.length * C);
      tokens.forEach((id, t) => { for (let c = 0; c < C; c++) want[t * C + c] = wte.data[id * C + c] + wpe.data[t * C + c]; });
      assertClose(x.data, want, { shape: [tokens.length, C], label: 'layer 0 input', atol: 1e-6 });
      trainer.free();
    });

    const cases = [
      ['previous-token, trained 120 steps', { task: 'previous-token', seed: 1 }, 120],
      ['induction, 2 layers, trained 60 steps', { task: 'induction', seqLen: 16, batch: 8, seed: 5 }, 60],
      ['reverse, 2 heads, untrained', { task: 'reverse', seed: 9 }, 0],
    ];
    for (const [name, options, steps] of cases) {
      test(`the module reproduces every layer's maps to 1e-5: ${name}`, () => {
        const trainer = lab.createTrainer(options);
        trainer.step(steps);
        const { layers: L, heads: H, seqLen: T } = trainer.config;
        const { tokens, layers } = trainer.attention();
        for (let l = 0; l < L; l++) {
          const got = moduleMaps(lab, trainer, l, tokens);
          assert.deepEqual(got.shape, [1, H, T, T]);
          for (let h = 0; h < H; h++) {
            assertClose(got.data.subarray(h * T * T, (h + 1) * T * T), layers[l][h].data,
              { shape: [T, T], label: `layer ${l + 1} head ${h + 1}`, atol: 1e-5 });
          }
        }
        trainer.free();
      });
    }

    test('a prefix of the sequence gives the top-left block of the causal maps; ablation reaches the next layer', () => {
      const trainer = lab.createTrainer({ task: 'induction', seqLen: 16, batch: 8, seed: 5 });
      trainer.step(60);
      const T = trainer.config.seqLen, n = 6;
      const { tokens, layers } = trainer.attention();
      const got = moduleMaps(lab, trainer, 1, tokens.slice(0, n));
      for (let h = 0; h < 2; h++) {
        const want = new Float32Array(n * n);
        for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) want[i * n + j] = layers[1][h].data[i * T + j];
        assertClose(got.data.subarray(h * n * n, (h + 1) * n * n), want, { shape: [n, n], label: `prefix, layer 2 head ${h + 1}`, atol: 1e-5 });
      }
      const before = trainer.layerInput(1, tokens).data;
      trainer.ablate(0, 0);
      const after = trainer.layerInput(1, tokens);
      const changed = after.data.reduce((n, v, i) => n + (v !== before[i] ? 1 : 0), 0);
      assert.ok(changed > 0, `switching off a layer-1 head changes the input of layer 2: ${changed} of ${before.length} entries changed`);
      const ablated = trainer.attention(tokens).layers[1];
      const maps = moduleMaps(lab, trainer, 1, tokens);
      for (let h = 0; h < 2; h++) {
        assertClose(maps.data.subarray(h * T * T, (h + 1) * T * T), ablated[h].data, { shape: [T, T], label: `ablated, layer 2 head ${h + 1}`, atol: 1e-5 });
      }
      trainer.free();
    });

    test('bad layers and tokens are refused by name; after free() both are MODULE_FREED', () => {
      const trainer = lab.createTrainer({ task: 'previous-token', seed: 4 });
      const T = trainer.config.seqLen;
      for (const layer of [-1, 1, 0.5, '0', undefined, null]) {
        refuses(() => trainer.weights(layer), 'BAD_ARGUMENT', /layer must be an integer from 0 to 0/);
        refuses(() => trainer.layerInput(layer, [1, 2]), 'BAD_ARGUMENT', /layer must be an integer from 0 to 0/);
      }
      refuses(() => trainer.layerInput(0, [1, 16]), 'BAD_ARGUMENT', /tokens entry 1 is 16; ids must be integers from 0 to 15/);
      refuses(() => trainer.layerInput(0, [1, -1]), 'BAD_ARGUMENT', /tokens entry 1/);
      refuses(() => trainer.layerInput(0, [1.5]), 'BAD_ARGUMENT', /tokens entry 0/);
      refuses(() => trainer.layerInput(0, new Array(T + 1).fill(0)), 'SHAPE_MISMATCH', /1 to 16 ids/);
      refuses(() => trainer.layerInput(0, [[1, 2]]), 'SHAPE_MISMATCH', /1 to 16 ids/);
      refuses(() => trainer.layerInput(0), 'BAD_ARGUMENT', /tokens/);
      trainer.free();
      refuses(() => trainer.weights(0), 'MODULE_FREED', /freed/);
      refuses(() => trainer.layerInput(0, [1]), 'MODULE_FREED', /freed/);
    });
  });
}
