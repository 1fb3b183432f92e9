// Property test of the JS API: thousands of random calls per build with odd
// types, Proxies, getters that throw, cycles, sparse and huge arrays, and
// random multi-head create/forward/backward/setWeights/free orders, and
// sdpaBackward. Properties:
//   - every refusal is an AttentionError whose code is one of ErrorCode in
//     web/attention.d.ts;
//   - a fixed sdpa call and a fixed multi-head forward give bit-identical
//     results throughout (no call corrupted the core's memory);
//   - lab.memoryBytes() stays bounded.
// The seed is printed on failure; rerun one with PROPERTY_SEED=<seed>.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadAttention, AttentionError, BUGS, causalMask, paddingMask, allowedFromBlocked, maskReader } from '../web/attention.js';

const CALLS = Number(process.env.PROPERTY_CALLS ?? 4000);
const SEED = Number(process.env.PROPERTY_SEED ?? (Date.now() % 2 ** 31));
const MEMORY_BOUND = 256 * 2 ** 20;

const dts = readFileSync(new URL('../web/attention.d.ts', import.meta.url), 'utf8');
const ERROR_CODES = new Set(dts.match(/export type ErrorCode =([^;]*);/)[1].match(/'[A-Z_]+'/g).map((c) => c.slice(1, -1)));

/** mulberry32: a small seeded generator. */
function generator(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = (list) => list[int(0, list.length - 1)];
  return { next, int, pick, chance: (p) => next() < p };
}

/** A value nobody should pass: each kind a way the wrapper could trip. */
const ODD_VALUES = [
  () => undefined, () => null, () => NaN, () => -1, () => 0, () => 1.5, () => 2 ** 31, () => 2 ** 53, () => -(2 ** 31) - 1,
  () => Infinity, () => 'text', () => '', () => true, () => 10n, () => Symbol('odd'), () => Object.create(null), () => () => 1,
  () => new Map(), () => new Date(0), () => [], () => [[]],
  () => { const cyclic = [1]; cyclic[0] = cyclic; return cyclic; },
  () => { let deep = [1]; for (let i = 0; i < 3000; i++) deep = [deep]; return deep; },
  () => { const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); return proxy; },
  () => new Float32Array(0), () => new Uint8Array(3), () => new BigInt64Array(2), () => new Array(2 ** 32 - 1),
  () => [new Array(2 ** 32 - 1)], () => ({ length: 2 ** 31 }), () => ({ data: [1], shape: [1] }),
  () => ({ get data() { throw new Error('getter'); }, shape: [1, 1] }),
  () => new Proxy([1, 2], { get() { throw Symbol('trap'); } }),
  () => new Proxy({}, { getPrototypeOf() { throw new Error('proto'); }, ownKeys() { throw new Error('keys'); } }),
];
const oddValue = (r) => r.pick(ODD_VALUES)();

/** A tensor of `shape` in one of the accepted forms, or now and then a broken one. */
function tensor(r, shape, kind = 'float') {
  const n = shape.reduce((a, b) => a * b, 1);
  const value = () => (kind === 'mask' ? (r.chance(0.8) ? 1 : 0) : r.chance(0.02) ? r.pick([NaN, Infinity, 1e39, -0, 5e-324]) : r.next() * 4 - 2);
  const flat = Array.from({ length: n }, value);
  const nest = (at, d) => (d === shape.length ? flat[at] : Array.from({ length: shape[d] }, (_, i) => nest(at * shape[d] + i, d + 1)));
  switch (r.int(0, 12)) {
    case 0: return nest(0, 0);
    case 1: return { data: flat, shape };
    case 2: return { data: kind === 'mask' ? Uint8Array.from(flat) : Float32Array.from(flat), shape: Int32Array.from(shape) };
    case 3: { // a Proxy around a typed array whose length lies after the first read
      let reads = 0;
      const real = kind === 'mask' ? Uint8Array.from(flat) : Float32Array.from(flat);
      const later = r.pick([0, n + 1, 2 ** 22, -1, NaN]);
      return { data: new Proxy(real, { get: (t, key) => (key === 'length' ? (reads++ ? later : n) : Reflect.get(t, key, t)) }), shape };
    }
    case 4: { // getters that throw now and then
      const data = new Proxy(flat, { get: (t, key) => { if (r.chance(0.01)) throw new Error('flaky'); return Reflect.get(t, key); } });
      return { data, shape };
    }
    case 5: return { data: flat.slice(0, Math.max(0, n - 1)), shape };
    case 6: return { data: flat, shape: [...shape.slice(0, -1), r.pick([0, -1, 1.5, NaN, Symbol('d'), 2 ** 40])] };
    case 7: { // a Float32Array with a shadowed length
      const real = Float32Array.from({ length: n + r.int(1, 1 << 10) }, value);
      Object.defineProperty(real, 'length', { value: n });
      return { data: real, shape };
    }
    case 8: { // a buffer that grows while another argument is read
      const buffer = new ArrayBuffer(4 * n, { maxByteLength: 4 * n + (1 << 12) });
      const data = new Float32Array(buffer);
      data.set(flat);
      resizers.push(() => buffer.resize(4 * n + (1 << 12)));
      return { data, shape };
    }
    case 9: return { get data() { resizers.splice(0).forEach((f) => f()); return flat; }, shape };
    case 10: return oddValue(r);
    default: return { data: kind === 'mask' ? Uint8Array.from(flat) : Float32Array.from(flat), shape };
  }
}
const resizers = [];

/** A random option value: mostly reasonable, sometimes odd. */
const optionValue = (r, good) => (r.chance(0.85) ? good() : oddValue(r));

function randomSdpa(r, lab) {
  const nb = r.int(0, 2);
  const batch = Array.from({ length: nb }, () => r.int(1, 2));
  const Tq = r.int(1, 4), Tk = r.int(1, 4), dk = r.int(1, 4), dv = r.int(1, 4);
  const options = {};
  if (r.chance(0.3)) options.mask = tensor(r, r.chance(0.7) ? [Tq, Tk] : [...batch, Tq, Tk], 'mask');
  if (r.chance(0.3)) options.causal = optionValue(r, () => r.chance(0.5));
  if (r.chance(0.2)) options.scale = optionValue(r, () => r.next() * 2);
  if (r.chance(0.3)) options.needWeights = optionValue(r, () => r.chance(0.5));
  if (r.chance(0.2)) options.bug = optionValue(r, () => r.pick(BUGS));
  if (r.chance(0.05)) options[r.pick(['casual', '__proto__', 'constructor'])] = 1;
  const opts = r.chance(0.1) ? oddValue(r) : options;
  const args = [tensor(r, [...batch, Tq, dk]), tensor(r, [...batch, Tk, dk]), tensor(r, [...batch, Tk, dv])];
  if (r.chance(0.3)) {
    // weights: random numbers (mostly refused), or those of a forward call on the same arguments
    if (opts === options && r.chance(0.3)) {
      const forward = () => {
        try { return lab.sdpa(...args, { ...options, needWeights: true }).weights; } catch { return oddValue(r); }
      };
      options.weights = r.chance(0.5) ? tensor(r, [...batch, Tq, Tk]) : forward();
    }
    return () => lab.sdpaBackward(...args, tensor(r, [...batch, Tq, dv]), opts);
  }
  return () => lab.sdpa(...args, opts);
}

function randomRule(r, lab) {
  const shape = [r.int(1, 2), r.int(1, 3), r.int(1, 4)];
  const options = {};
  if (r.chance(0.4)) options.mask = tensor(r, shape.slice(1), 'mask');
  if (r.chance(0.3)) options.keyPaddingMask = tensor(r, [shape[0], shape[2]], 'mask');
  if (r.chance(0.5)) options.causal = optionValue(r, () => true);
  if (r.chance(0.5)) options.causalOffset = optionValue(r, () => r.pick([0, -1, 3, 2 ** 31 - 1, -(2 ** 31)]));
  const target = r.chance(0.9) ? shape : oddValue(r);
  if (r.chance(0.5)) return () => lab.allowedPairs(target, options);
  return () => lab.observe(tensor(r, shape), r.chance(0.5) ? { ...options, scores: tensor(r, shape) } : options);
}

function randomHelper(r) {
  return r.pick([
    () => causalMask(optionValue(r, () => r.int(1, 5)), optionValue(r, () => r.pick([undefined, r.int(1, 5), 1e9]))),
    () => paddingMask(tensor(r, [2, 3]), r.chance(0.5) ? 0 : oddValue(r)),
    () => allowedFromBlocked(tensor(r, [2, 2], 'mask')),
    () => maskReader(tensor(r, [1, 3], 'mask'), r.chance(0.8) ? [2, 3] : oddValue(r)),
  ]);
}

/** Random multi-head orders over a few slots; caches travel between modules. */
function randomMha(r, lab, slots, caches) {
  const s = r.int(0, slots.length - 1);
  const m = slots[s];
  switch (r.int(0, 6)) {
    case 0: return () => {
      slots[s]?.free();
      slots[s] = null;
      const options = { dModel: r.pick([4, 8, 6]), numHeads: r.pick([1, 2, 3]), rope: r.chance(0.4), bias: r.chance(0.7) };
      if (r.chance(0.1)) options.seed = oddValue(r);
      slots[s] = lab.createMultiHeadAttention(r.chance(0.95) ? options : oddValue(r));
    };
    case 1: return () => { m?.free(); if (r.chance(0.5)) slots[s] = null; };
    case 2: return () => m?.setWeights(r.chance(0.7) ? { qProj: { weight: tensor(r, [m.dModel, m.dModel]) } } : oddValue(r));
    case 3: return () => m?.backward(r.chance(0.8) ? tensor(r, [r.int(1, 2), r.int(1, 3), m.dModel]) : oddValue(r));
    default: return () => {
      if (!m) return;
      const B = r.int(1, 2), T = r.int(1, 3);
      const options = {};
      if (r.chance(0.4) && caches.length) { options.cache = r.pick(caches); options.useCache = true; }
      if (r.chance(0.3)) options.useCache = optionValue(r, () => true);
      if (r.chance(0.3)) options.causal = true;
      if (r.chance(0.2)) options.keyPaddingMask = tensor(r, [B, T], 'mask');
      if (r.chance(0.1)) options.queryPositionOffset = optionValue(r, () => r.int(0, 5));
      if (r.chance(0.2)) options.needWeights = optionValue(r, () => r.chance(0.5));
      if (r.chance(0.3)) options.saveForBackward = optionValue(r, () => true);
      const x = tensor(r, [B, T, m.dModel]);
      const result = r.chance(0.1) ? m.forward(x, oddValue(r)) : m.forward(x, options);
      if (result.cache) caches.push(result.cache);
      if (caches.length > 6) caches.shift();
    };
  }
}

const labs = { true: await loadAttention({ simd: true }), false: await loadAttention({ simd: false }) };

for (const simd of [true, false]) {
  describe(`${simd ? 'SIMD' : 'scalar'} build: random hostile calls`, () => {
    const lab = labs[simd];
    test(`${CALLS} random calls: AttentionErrors only, reference results unchanged, memory bounded (seed ${SEED})`, () => {
      const seed = SEED + (simd ? 0 : 1);
      const r = generator(seed);
      const q = { data: Float32Array.from({ length: 24 }, (_, i) => Math.sin(i)), shape: [2, 3, 4] };
      const kv = { data: Float32Array.from({ length: 40 }, (_, i) => Math.cos(i)), shape: [2, 5, 4] };
      const reference = () => lab.sdpa(q, kv, kv, { causal: true });
      const witness = lab.createMultiHeadAttention({ dModel: 8, numHeads: 2, seed: 9 });
      const x = { data: Float32Array.from({ length: 24 }, (_, i) => Math.cos(3 * i)), shape: [1, 3, 8] };
      const want = reference();
      const wantMha = witness.forward(x, { causal: true }).output.data;
      const slots = [null, null, null];
      const caches = [];
      const counts = { ok: 0, refused: 0 };
      const where = (i, what) => `seed ${seed} (PROPERTY_SEED=${SEED}), call ${i}: ${what}`;
      try {
        for (let i = 0; i < CALLS; i++) {
          const kind = r.int(0, 9);
          const call = kind < 4 ? randomSdpa(r, lab) : kind < 6 ? randomRule(r, lab) : kind < 7 ? randomHelper(r) : randomMha(r, lab, slots, caches);
          resizers.length = 0;
          try {
            call();
            counts.ok++;
          } catch (err) {
            counts.refused++;
            assert.ok(err instanceof AttentionError, where(i, `threw ${err?.constructor?.name}: ${err?.stack ?? String(err)}`));
            assert.ok(ERROR_CODES.has(err.code), where(i, `undocumented code ${err.code}: ${err.message}`));
            assert.ok(typeof err.message === 'string' && err.message.length > 0, where(i, 'empty message'));
          }
          if (i % 100 === 99 || i === CALLS - 1) {
            const again = reference();
            assert.deepEqual(again.output.data, want.output.data, where(i, 'the reference sdpa output changed'));
            assert.deepEqual(again.weights.data, want.weights.data, where(i, 'the reference weights changed'));
            assert.deepEqual(witness.forward(x, { causal: true }).output.data, wantMha, where(i, 'the witness module changed'));
            assert.ok(lab.memoryBytes() <= MEMORY_BOUND, where(i, `memory grew to ${lab.memoryBytes()} bytes`));
          }
        }
      } finally {
        for (const m of slots) m?.free();
        witness.free();
      }
      console.log(`# ${simd ? 'SIMD' : 'scalar'}: ${counts.ok} calls ran, ${counts.refused} refused (seed ${seed})`);
      assert.ok(counts.ok > CALLS / 20 && counts.refused > CALLS / 20, `a useful mix: ${JSON.stringify(counts)}`);
    });
  });
}
