/**
 * attention.js: the public JS API of attention-lab.
 *
 * One ES module that runs unchanged in Node 20 and in the browser. It loads
 * the C attention core compiled to WebAssembly (a SIMD128 build and a scalar
 * build of the same sources) and wraps it:
 *
 *   import { loadAttention } from './attention.js';
 *   const lab = await loadAttention();               // SIMD build when supported
 *   const { output, weights } = lab.sdpa([[1, 0]], [[1, 0], [0, 1]], [[10, 0], [0, 20]]);
 *   // weights.data ≈ [0.670, 0.330], output.data ≈ [6.698, 6.605]
 *
 * Tensors going in are `{ data, shape }` (row-major; `data` any array-like of
 * numbers, for masks booleans or 0/1) or nested arrays. Tensors coming out
 * are `{ data: Float32Array, shape: number[] }`, copied out of wasm memory:
 * they stay valid after later calls.
 *
 * Masks are *allowed* masks everywhere: 1 (true) means "this query may attend
 * to this key", as in PyTorch's scaled_dot_product_attention. Use
 * allowedFromBlocked() for masks in nn.MultiheadAttention's convention.
 *
 * Every refusal is an AttentionError with a stable `.code`; after a refused
 * call the lab keeps working and gives the same results as before.
 *
 * The maths lives in the C core only: this file checks arguments, moves
 * bytes in and out, and turns status codes into errors.
 */

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/** Status codes of the C core, by number (see c_src/attention.h). */
const STATUS_CODES = ['OK', 'BAD_ARGUMENT', 'SHAPE_MISMATCH', 'NON_FINITE_INPUT',
  'ALL_MASKED_ROW', 'TOO_LARGE', 'OVERFLOW', 'HEADS_DO_NOT_DIVIDE', 'ROPE_ODD_HEAD_DIM', 'EMPTY_QUERY',
  'CACHE_MISMATCH', 'NEGATIVE_OFFSET', 'MODULE_FREED', 'NO_SAVED_FORWARD', 'BACKWARD_THROUGH_CACHE'];

/**
 * The error every refused call throws.
 * `code` is a short stable string: BAD_ARGUMENT, SHAPE_MISMATCH,
 * NON_FINITE_INPUT, ALL_MASKED_ROW, TOO_LARGE, OVERFLOW, UNSUPPORTED, and for
 * multi-head attention HEADS_DO_NOT_DIVIDE, ROPE_ODD_HEAD_DIM, EMPTY_QUERY,
 * CACHE_WITHOUT_USE_CACHE, CACHE_CROSS_ATTENTION, CACHE_POSITION,
 * CACHE_MISMATCH, NEGATIVE_OFFSET, MODULE_FREED, and for mha.backward
 * NO_SAVED_FORWARD, BACKWARD_THROUGH_CACHE. A failed load (UNSUPPORTED) keeps
 * the error that stopped it as `cause`.
 */
export class AttentionError extends Error {
  constructor(code, message, options) {
    super(message, options);
    this.name = 'AttentionError';
    this.code = code;
  }
}

/** The errors this module threw, told apart from anything a caller's getter throws. */
const ownErrors = new WeakSet();
const fail = (code, message, options) => {
  const err = new AttentionError(code, message, options);
  ownErrors.add(err);
  throw err;
};

// ---------------------------------------------------------------------------
// Break-it bugs: index = attn_bug in c_src/attention.h
// ---------------------------------------------------------------------------

/** Names of the deliberate bugs the core can switch on, in enum order. */
export const BUGS = Object.freeze([null, 'softmax-over-queries', 'mask-after-softmax', 'mask-output',
  'no-causal-mask', 'causal-upper', 'inverted-mask', 'padding-on-queries', 'no-scale',
  'scale-by-dk', 'heads-without-transpose', 'merge-without-transpose', 'no-all-masked-guard',
  'softmax-backward-no-rowsum', 'grad-through-blocked', 'no-rescale', 'stale-cache-offset']);
/** The bugs of the multi-head module, and what each one is about. */
const MHA_ONLY_BUGS = new Map([['heads-without-transpose', 'splitting heads'], ['merge-without-transpose', 'merging heads'],
  ['stale-cache-offset', 'decoding with a KV cache']]);

/**
 * The core's index of `bug` for a call of `where` (a Lab method's name:
 * sdpa, sdpaTiled, ...), or of mha.forward when `mha` is true.
 */
function bugIndex(bug, { mha, where }) {
  if (bug === undefined || bug === null || bug === 'none') return 0;
  const index = BUGS.indexOf(bug);
  if (typeof bug !== 'string' || index < 1) {
    fail('BAD_ARGUMENT', `unknown bug ${show(bug)}; known bugs: ${BUGS.slice(1).join(', ')}`);
  }
  if (mha && bug === 'no-rescale') {
    fail('BAD_ARGUMENT', 'bug "no-rescale" is about the tiled path: use it with lab.sdpaTiled, not mha.forward');
  }
  if (!mha && MHA_ONLY_BUGS.has(bug)) {
    fail('BAD_ARGUMENT', `bug "${bug}" is about ${MHA_ONLY_BUGS.get(bug)}: use it with mha.forward, not lab.${where}`);
  }
  return index;
}

// ---------------------------------------------------------------------------
// Tensors in
// ---------------------------------------------------------------------------
//
// Every argument is read once, into memory this module owns, before anything
// is laid out in wasm: a getter, a Proxy or a resized buffer cannot change a
// size after it was checked. The one exception is a genuine Float32Array,
// copied into wasm with one .set; Layout.put checks its length again, through
// the engine's own slot, right before that copy.

/** Largest request, in bytes, the core will try (ATTN_MAX_REQUEST_BYTES). */
const MAX_REQUEST_BYTES = 1536 * 2 ** 20;
/** Deepest nested array, and longest shape, a tensor may have. */
const MAX_RANK = 8;

// The engine's own readers of a typed array's kind and length: a Proxy, an
// own `length` property or a swapped prototype cannot fool them. The tag is
// undefined for anything that is not a genuine typed array.
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
const typedArrayTag = Object.getOwnPropertyDescriptor(TypedArrayPrototype, Symbol.toStringTag).get;
const typedArrayLength = Object.getOwnPropertyDescriptor(TypedArrayPrototype, 'length').get;

/** A short description of any value for a message; never throws. */
function show(value) {
  try {
    switch (typeof value) {
      case 'string': return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
      case 'symbol': return value.toString();
      case 'function': return 'a function';
      case 'object':
        if (value === null) return 'null';
        if (Array.isArray(value)) return 'an array';
        return typedArrayTag.call(value) ?? 'an object';
      case 'bigint': return `${value}n`;
      default: return String(value); // number, boolean, undefined
    }
  } catch {
    return 'a value that cannot be shown';
  }
}

const describe = (shape) => `[${Array.prototype.map.call(shape, show).join(', ')}]`;
const product = (shape) => shape.reduce((a, b) => a * b, 1);

/**
 * Whether x is a plain object: `{}`, `Object.create(null)`, or one from
 * another realm. Never throws (a revoked Proxy is not a plain object).
 */
function isPlainObject(x) {
  if (typeof x !== 'object' || x === null) return false;
  try {
    if (Array.isArray(x)) return false;
    const proto = Object.getPrototypeOf(x);
    return proto === null || Object.getPrototypeOf(proto) === null;
  } catch {
    return false;
  }
}

/**
 * Run `read`, which reads a caller's values; anything it throws that is not
 * an AttentionError (a throwing getter, a revoked Proxy) becomes BAD_ARGUMENT.
 */
function reading(what, read) {
  try {
    return read();
  } catch (err) {
    return foreign(err, what);
  }
}

/** Rethrow our own AttentionError; anything else becomes BAD_ARGUMENT about `what`. */
function foreign(err, what) {
  if (ownErrors.has(err)) throw err;
  let detail = err;
  try { if (err instanceof Error) detail = err.message; } catch { /* a hostile error: shown as a value */ }
  return fail('BAD_ARGUMENT', `${what} could not be read: ${show(detail)}`);
}

/**
 * Normalise an input tensor to `{ data, shape, n }` with n = the number of
 * values. kind 'float' for q/k/v and friends (data a Float32Array), 'mask'
 * for allowed masks (a Uint8Array), 'float64' for values kept as doubles (a
 * Float64Array: RoPE positions); allowEmpty lets dims be 0.
 */
function toTensor(x, name, kind = 'float', allowEmpty = false) {
  try {
    if (x === undefined || x === null) fail('BAD_ARGUMENT', `${name} is required`);
    if (Array.isArray(x)) return nestedTensor(x, name, kind, allowEmpty);
    const data = typeof x === 'object' ? x.data : undefined;
    if (data === undefined) fail('BAD_ARGUMENT', `${name} must be a tensor { data, shape } or a nested array (got ${show(x)})`);
    const shape = readShape(x.shape, `${name}.shape`);
    const n = countValues(shape, name, kind, allowEmpty);
    return { data: readValues(data, n, shape, name, kind), shape, n };
  } catch (err) {
    return foreign(err, name);
  }
}

/** A shape (array or typed array of at most MAX_RANK dims) copied to a plain array. */
function readShape(s, name) {
  const tag = Array.isArray(s) ? undefined : typedArrayTag.call(s);
  if (tag === undefined && !Array.isArray(s)) fail('BAD_ARGUMENT', `${name} must be an array of dims (got ${show(s)})`);
  const rank = tag === undefined ? s.length : typedArrayLength.call(s);
  if (!(rank <= MAX_RANK)) fail('BAD_ARGUMENT', `${name} has ${show(rank)} dims; at most ${MAX_RANK} are supported`);
  const shape = new Array(rank);
  for (let i = 0; i < rank; i++) shape[i] = s[i];
  return shape;
}

/** The number of values of `shape`, refused before anything is read when it cannot fit. */
function countValues(shape, name, kind, allowEmpty) {
  if (shape.length === 0) fail('BAD_ARGUMENT', `${name} must have at least one dim`);
  let n = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || (d === 0 && !allowEmpty)) {
      fail('BAD_ARGUMENT', `${name} dim ${i} must be a positive integer (shape ${describe(shape)})`);
    }
    n *= d;
  }
  if (n * VALUE_BYTES[kind] > MAX_REQUEST_BYTES) {
    fail('TOO_LARGE', `${name} has ${n} values: more than the ${MAX_REQUEST_BYTES} bytes the core can hold`);
  }
  return n;
}

/** Bytes per value of each kind of tensor, and a new array of n of them. */
const VALUE_BYTES = { float: 4, mask: 1, float64: 8 };
const newValues = (kind, n) => (kind === 'mask' ? new Uint8Array(n) : kind === 'float64' ? new Float64Array(n) : new Float32Array(n));

/**
 * data (n values) read once: a genuine Float32Array is kept as it is (one
 * .set into wasm later), anything else is copied value by value.
 */
function readValues(data, n, shape, name, kind) {
  const tag = typedArrayTag.call(data);
  if (tag === undefined && (typeof data !== 'object' || data === null)) {
    fail('BAD_ARGUMENT', `${name}.data must be an array or typed array of ${kind === 'mask' ? 'booleans or 0/1' : 'numbers'} (got ${show(data)})`);
  }
  const length = tag === undefined ? data.length : typedArrayLength.call(data);
  // A DataView, an ArrayBuffer or a plain object has no count of values.
  if (tag === undefined && !(Number.isInteger(length) && length >= 0)) {
    fail('BAD_ARGUMENT', `${name}.data must be an array or typed array of ${kind === 'mask' ? 'booleans or 0/1' : 'numbers'} (got ${show(data)} with length ${show(length)})`);
  }
  if (length !== n) fail('SHAPE_MISMATCH', `${name} has ${show(length)} values but its shape ${describe(shape)} needs ${n}`);
  if (kind === 'float' && tag === 'Float32Array') return data;
  const out = newValues(kind, n);
  if (tag === 'Uint8Array' || (tag !== undefined && kind !== 'mask' && !tag.startsWith('Big'))) out.set(data);
  else for (let i = 0; i < n; i++) storeValue(out, i, data[i], name, kind);
  if (kind === 'mask' && tag === 'Uint8Array') {
    for (let i = 0; i < n; i++) if (out[i] > 1) fail('BAD_ARGUMENT', `${name} value ${i} is ${out[i]}; mask values are 0/1 or booleans`);
  }
  return out;
}

/** out[i] <- value, checked: a number, or for masks 0/1/false/true. */
function storeValue(out, i, value, name, kind) {
  if (kind === 'mask') {
    if (value === true || value === 1) out[i] = 1;
    else if (value !== false && value !== 0) fail('BAD_ARGUMENT', `${name} value ${i} is ${show(value)}; mask values are 0/1 or booleans`);
  } else {
    if (typeof value !== 'number') fail('BAD_ARGUMENT', `${name} value ${i} is not a number (got ${show(value)})`);
    out[i] = value;
  }
}

/**
 * A nested array: its shape from the first entry at each level (at most
 * MAX_RANK deep, refusing an array that contains itself), its size checked,
 * then every entry read once by an iterative walk that checks the arrays
 * are rectangular.
 */
function nestedTensor(x, name, kind, allowEmpty) {
  const shape = [];
  const chain = [];
  for (let level = x; Array.isArray(level); level = level[0]) {
    if (chain.includes(level)) fail('BAD_ARGUMENT', `${name} contains itself: ${name}${'[0]'.repeat(chain.length)} is ${name}${'[0]'.repeat(chain.indexOf(level))}`);
    if (chain.length === MAX_RANK) fail('BAD_ARGUMENT', `${name} is nested deeper than ${MAX_RANK} levels`);
    chain.push(level);
    shape.push(level.length);
    if (level.length === 0) break;
  }
  const n = countValues(shape, name, kind, allowEmpty);
  const out = newValues(kind, n);
  const rank = shape.length;
  // Depth-first, children pushed last-first so that values come out row-major.
  const stack = [{ node: x, depth: 0, path: '' }];
  let at = 0;
  while (stack.length > 0) {
    const { node, depth, path } = stack.pop();
    const width = shape[depth];
    if (!Array.isArray(node) || node.length !== width) {
      fail('SHAPE_MISMATCH', `${name}${path} should be an array of ${width} entries, like ${name}${'[0]'.repeat(depth)} (the nested arrays are not rectangular)`);
    }
    if (depth === rank - 1) {
      for (let i = 0; i < width; i++, at++) storeValue(out, at, node[i], name, kind);
    } else {
      const children = new Array(width);
      for (let i = 0; i < width; i++) children[i] = node[i];
      for (let i = width - 1; i >= 0; i--) stack.push({ node: children[i], depth: depth + 1, path: `${path}[${i}]` });
    }
  }
  return { data: out, shape, n };
}

/**
 * Element strides that broadcast a mask of shape `maskShape` to `target`
 * (numpy rules, dims aligned from the right; extra leading dims must be 1).
 * Returns one stride per target dim (0 where the mask repeats).
 */
function broadcastStrides(maskShape, target, name) {
  const extra = maskShape.length - target.length;
  const complain = () => fail('SHAPE_MISMATCH',
    `${name} of shape ${describe(maskShape)} does not broadcast to ${describe(target)}: each dim must equal the target dim or be 1`);
  for (let i = 0; i < extra; i++) if (maskShape[i] !== 1) complain();
  const strides = new Array(target.length).fill(0);
  let stride = 1;
  for (let t = target.length - 1; t >= 0; t--) {
    const m = t + extra >= 0 ? maskShape[t + extra] : 1;
    if (m === target[t]) strides[t] = m === 1 ? 0 : stride;
    else if (m !== 1) complain();
    stride *= m;
  }
  return strides;
}

/**
 * A caller's options object, copied once into a plain object of the known
 * keys. Only plain objects are options (not arrays, typed arrays or class
 * instances); undefined and null mean none.
 */
function checkOptions(options, allowed, where) {
  if (options === undefined || options === null) return {};
  return reading(`${where} options`, () => {
    if (!isPlainObject(options)) fail('BAD_ARGUMENT', `${where} options must be an object, a plain { ... } (got ${show(options)})`);
    const copy = {};
    for (const key of Object.keys(options)) {
      if (!allowed.includes(key)) fail('BAD_ARGUMENT', `${where}: unknown option ${show(key)} (known: ${allowed.join(', ')})`);
      copy[key] = options[key];
    }
    return copy;
  });
}

function checkBoolean(value, name, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') fail('BAD_ARGUMENT', `${name} must be true or false (got ${show(value)})`);
  return value;
}

/**
 * The part of a refusal that explains why a number valid as given is not:
 * the core reads it in float32, where 0.999999999 is 1 and 1e-50 is 0.
 * `valid` says whether the number as given would pass the check.
 */
function asFloat32(x, valid) {
  return valid ? `, which is ${Math.fround(x)} in float32` : '';
}

function checkInteger(value, name, fallback, { min = 0, max = 2 ** 31 - 1, code = 'BAD_ARGUMENT' } = {}) {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value)) fail('BAD_ARGUMENT', `${name} must be an integer (got ${show(value)})`);
  if (value < min || value > max) fail(code, `${name} must be between ${min} and ${max} (got ${value})`);
  return value;
}

// ---------------------------------------------------------------------------
// Loading the wasm core
// ---------------------------------------------------------------------------

const isNode = typeof process !== 'undefined' && !!process.versions?.node;
const labs = new Map(); // 'simd' | 'scalar' -> Promise<Lab>
// The core imports one function: a note that memory grew. Views are rebuilt
// after every call that can grow memory, so there is nothing to do.
const CORE_IMPORTS = { env: { emscripten_notify_memory_growth() {} } };

// The smallest module that uses a SIMD instruction (i32x4.splat), to ask the
// engine whether it supports wasm SIMD128.
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3,
  2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);

/** Whether this engine runs wasm SIMD128. */
export function simdSupported() {
  try { return WebAssembly.validate(SIMD_PROBE); } catch { return false; }
}

/** Where the wasm files are; a page may point elsewhere before loading. */
export const wasmLocation = {
  /** @type {URL | string} folder holding attention-simd.wasm and attention-scalar.wasm (a relative path is relative to the page) */
  base: new URL('./wasm/', import.meta.url),
  /** @type {{ simd?: Uint8Array, scalar?: Uint8Array }} bytes given directly (single-file builds) */
  inline: {},
};

/**
 * Refuse a load that failed at step `what`: UNSUPPORTED, with the message of
 * `err` after `what` and `err` itself kept as the error's `cause`.
 */
function failLoad(what, err) {
  let detail;
  try { detail = err instanceof Error ? err.message : String(err); } catch { detail = show(err); }
  return fail('UNSUPPORTED', `${what}: ${detail}`, { cause: err });
}

async function wasmBytes(variant) {
  if (wasmLocation.inline[variant]) return wasmLocation.inline[variant];
  // A base given as a relative path is relative to the page.
  const url = new URL(`attention-${variant}.wasm`, new URL(wasmLocation.base, globalThis.location?.href));
  if (isNode && url.protocol === 'file:') {
    // Node only. The name is held in a variable, and the comments tell
    // webpack and Vite to leave it alone, so that a bundler building for the
    // browser does not try to resolve it.
    const fsModule = 'node:fs/promises';
    const { readFile } = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsModule);
    try {
      return await readFile(url);
    } catch (err) {
      fail('UNSUPPORTED', `cannot read ${url.pathname}: build it first with 'bash build.sh' (or 'npm run build')`, { cause: err });
    }
  }
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    failLoad(`cannot fetch ${url}`, err);
  }
  if (!response.ok) fail('UNSUPPORTED', `cannot load ${url} (HTTP ${response.status})`);
  try {
    return new Uint8Array(await response.arrayBuffer());
  } catch (err) {
    return failLoad(`cannot read the body of ${url}`, err);
  }
}

/**
 * Load the attention core. Calls with the same `simd` share one compiled
 * module and one instance.
 * @param {{ simd?: boolean }} [options] simd: true for the SIMD128 build,
 *   false for the scalar build; by default SIMD when the engine supports it.
 * @returns {Promise<Lab>} rejected with BAD_ARGUMENT for bad options, and
 *   with UNSUPPORTED when the wasm cannot be fetched, read or instantiated
 *   (the original error as `cause`).
 */
export function loadAttention(options) {
  let simd;
  try {
    simd = checkBoolean(checkOptions(options, ['simd'], 'loadAttention').simd, 'simd', undefined);
  } catch (err) {
    return Promise.reject(err);
  }
  if (simd === true && !simdSupported()) {
    return Promise.reject(new AttentionError('UNSUPPORTED', 'this engine does not support wasm SIMD128; use { simd: false }'));
  }
  const variant = (simd ?? simdSupported()) ? 'simd' : 'scalar';
  if (!labs.has(variant)) {
    const pending = (async () => {
      const bytes = await wasmBytes(variant);
      try {
        const { module, instance } = await WebAssembly.instantiate(bytes, CORE_IMPORTS);
        return new Lab(module, instance, variant === 'simd');
      } catch (err) {
        return failLoad(`cannot instantiate attention-${variant}.wasm`, err);
      }
    })();
    pending.catch(() => labs.delete(variant)); // a failed load may be retried
    labs.set(variant, pending);
  }
  return labs.get(variant);
}

// ---------------------------------------------------------------------------
// The lab
// ---------------------------------------------------------------------------

// In doubles, not 32-bit integers: a request of 2 GiB or more must stay that size, for the core to refuse.
const align = (bytes) => Math.ceil(bytes / 16) * 16;
const changed = (name) => fail('BAD_ARGUMENT', `${name} changed (its buffer was resized or detached) while the call was being prepared`);

/**
 * Lays out one call's buffers in the core's reusable workspace.
 * `add(name, bytes)` reserves space; `commit()` gets the memory (or throws
 * TOO_LARGE, before any allocation when the size is out of reach). After
 * commit, `ptr(name)` is a slot's address (0 for a slot never added),
 * `put(name, data)` copies a typed array in with one .set, `get(name, n)`
 * copies n values out, and `words(name, ...values)` writes a C struct of int32
 * words (attn_visibility, attn_dims, ...).
 */
class Layout {
  // slots: name, offset, bytes for each slot, flat. A call has a handful of
  // slots, so a scan is cheaper than building a keyed table per call.
  constructor(core) { this.core = core; this.slots = []; this.total = 0; this.base = 0; this.heap = null; }
  add(name, bytes) { this.slots.push(name, this.total, bytes); this.total += align(bytes); return this; }
  #find(name) {
    const { slots } = this;
    for (let i = slots.length - 3; i >= 0; i -= 3) if (slots[i] === name) return i; // the latest add wins
    return -1;
  }
  commit() {
    const base = this.core.exports.attn_workspace(this.total);
    if (!base) this.core.throwLastError();
    this.core.layoutBytes = this.total;
    this.base = base;
    this.heap = this.core.heap(); // valid until the next call into the core
    return this;
  }
  ptr(name) { const i = this.#find(name); return i < 0 ? 0 : this.base + this.slots[i + 1]; }
  #bytes(name) { const i = this.#find(name); return i < 0 ? undefined : this.slots[i + 2]; }
  /** Copy a Float32Array or Uint8Array of exactly the slot's size in, with one .set. */
  put(name, data) {
    // The length through the engine's slot: a caller's array whose buffer
    // was resized or detached after the checks is refused, never written.
    const length = typedArrayLength.call(data);
    if (data.BYTES_PER_ELEMENT === 4) { // a Float32Array: ours, or a caller's genuine one
      if (4 * length !== this.#bytes(name)) changed(name);
      this.heap.f32.set(data, this.ptr(name) >>> 2);
    } else {
      if (length !== this.#bytes(name)) changed(name);
      this.heap.u8.set(data, this.ptr(name));
    }
  }
  get(name, length) { const at = this.ptr(name) >>> 2; return this.core.heap().f32.slice(at, at + length); }
  getU8(name, length) { const at = this.ptr(name); return this.core.heap().u8.slice(at, at + length); }
  getI32(name, length) { const at = this.ptr(name) >>> 2; return this.core.heap().i32.subarray(at, at + length); }
  words(name, ...values) {
    const { i32 } = this.heap;
    const at = this.ptr(name) >>> 2;
    for (let w = 0; w < values.length; w++) i32[at + w] = values[w];
  }
}

/**
 * The visibility rule of one call, checked against the scores shape
 * (batch…, Tq, Tk) with 0 to 2 batch dims: the allowed mask broadcast to it,
 * the key padding (B, Tk), the causal flag and its offset. The C core
 * (attn_visibility) applies it; JS only checks shapes and lays it out.
 */
function resolveVisibility(batch, Tq, Tk, { mask, keyPaddingMask, causal, causalOffset }) {
  const nb = batch.length;
  const M = mask === undefined || mask === null ? null : toTensor(mask, 'mask', 'mask');
  let strides = NO_STRIDES;
  if (M) {
    const st = broadcastStrides(M.shape, nb === 0 ? [Tq, Tk] : nb === 1 ? [batch[0], Tq, Tk] : [batch[0], batch[1], Tq, Tk], 'mask');
    strides = [nb >= 1 ? st[0] : 0, nb === 2 ? st[1] : 0, st[nb], st[nb + 1]];
  }
  const B = nb >= 1 ? batch[0] : 1;
  const P = keyPaddingMask === undefined || keyPaddingMask === null ? null : toTensor(keyPaddingMask, 'keyPaddingMask', 'mask');
  if (P && (P.shape.length !== 2 || P.shape[0] !== B || P.shape[1] !== Tk)) {
    fail('SHAPE_MISMATCH', `keyPaddingMask must have shape (B=${B}, Tk=${Tk}); got ${describe(P.shape)}`);
  }
  return {
    M, strides, P,
    causal: checkBoolean(causal, 'causal', false),
    offset: checkInteger(causalOffset, 'causalOffset', 0, { min: -(2 ** 31) }),
  };
}
const NO_STRIDES = Object.freeze([0, 0, 0, 0]);

/** Reserve the slots of a resolved rule in `layout`. */
function addVisibility(layout, rule) {
  layout.add('vis', 4 * VISIBILITY_WORDS);
  if (rule.M) layout.add('mask', rule.M.n);
  if (rule.P) layout.add('keyPaddingMask', rule.P.n);
}

/** Copy a resolved rule into its committed slots, as attn_visibility. */
function putVisibility(layout, rule) {
  if (rule.M) layout.put('mask', rule.M.data);
  if (rule.P) layout.put('keyPaddingMask', rule.P.data);
  const [sb, sh, sq, sk] = rule.strides;
  layout.words('vis', layout.ptr('mask'), sb, sh, sq, sk, layout.ptr('keyPaddingMask'), rule.causal ? 1 : 0, rule.offset);
}

/** Words of C structs written by JS (see c_src/attention.h). */
const VISIBILITY_WORDS = 8; // attn_visibility
const DIMS_WORDS = 6; // attn_dims
const KV_CACHE_WORDS = 7; // attn_kv_cache
const DROPOUT_WORDS = 3; // attn_dropout
const MHA_VISIBILITY_WORDS = 10; // attn_mha_visibility

/**
 * Ranges of the lesson demos (c_src/lesson.c refuses the same), and, checked
 * here only, the most work one call may do, in random products drawn
 * (dk · count, dk · keys · count): about a second, so that a call never
 * blocks the page for long. At the default counts that allows dk up to 8192
 * for sampleDots and, with 16 keys, 4096 for softmaxPeak.
 */
const DEMO_LIMITS = Object.freeze({
  sampleDots: { dk: 65536, count: 1 << 20, defaultCount: 4096, work: 2 ** 25 },
  softmaxPeak: { dk: 4096, keys: 1024, count: 65536, defaultKeys: 16, defaultCount: 512, work: 2 ** 25 },
});
/** Most pairs allowedPairs computes in one call (8192 × 8192), well under a second. */
const MAX_ALLOWED_PAIRS = 2 ** 26;
/** Largest dModel and numHeads a multi-head module may have. */
const MHA_MAX_DIM = 8192;

/** Refuse tensor `a` unless it has the shape of `b` (SHAPE_MISMATCH). */
function sameShape(a, b, nameA, nameB) {
  if (a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i])) {
    fail('SHAPE_MISMATCH', `${nameA} must have the shape of ${nameB} ${describe(b.shape)}; got ${describe(a.shape)}`);
  }
}

/** Split the scores shape (batch…, Tq, Tk) of allowedPairs and observe. */
function scoresShape(shape, name) {
  const dims = reading(name, () => readShape(shape, name));
  if (dims.length < 2 || dims.length > 4) fail('BAD_ARGUMENT', `${name} must have 2 to 4 dims (batch…, Tq, Tk); got ${describe(dims)}`);
  dims.forEach((d, i) => {
    if (!Number.isInteger(d) || d < 1) fail('BAD_ARGUMENT', `${name} dim ${i} must be a positive integer (shape ${describe(dims)})`);
  });
  const pairs = product(dims);
  if (pairs > MAX_REQUEST_BYTES) {
    fail('TOO_LARGE', `${name} ${describe(dims)} has ${pairs} pairs, a byte each at least: more than the ${MAX_REQUEST_BYTES} bytes the core can hold`);
  }
  const nb = dims.length - 2;
  return { dims, batch: dims.slice(0, nb), Tq: dims[nb], Tk: dims[nb + 1], B: nb >= 1 ? dims[0] : 1, H: nb === 2 ? dims[1] : 1 };
}

const SDPA_OPTIONS = ['mask', 'causal', 'scale', 'needWeights', 'bug'];

/** q, k and v of sdpa have 2 to 4 dims. */
function checkRank(t, name) {
  if (t.shape.length < 2 || t.shape.length > 4) {
    fail('BAD_ARGUMENT', `${name} must have 2 to 4 dims (batch…, T, d); got shape ${describe(t.shape)}`);
  }
}
const RULE_OPTIONS = ['mask', 'keyPaddingMask', 'causal', 'causalOffset'];
const SDPA_FORWARD_OPTIONS = [...SDPA_OPTIONS, 'dropout', 'seed'];
const SDPA_BACKWARD_OPTIONS = [...SDPA_OPTIONS, 'weights'];
const SDPA_TILED_OPTIONS = ['mask', 'causal', 'scale', 'blockKeys', 'trace', 'bug'];


const OBSERVE_OPTIONS = ['scores', ...RULE_OPTIONS];

/**
 * The checked arguments of sdpa and sdpaBackward: tensors, dims, batch dims
 * as (B, H), needWeights, the scale, the bug, the visibility rule, and opts:
 * the options copied once (the caller's object is not read again).
 */
function sdpaArguments(q, k, v, options, known, where) {
  const opts = checkOptions(options, known, where);
  const { mask, causal, scale, needWeights, bug } = opts;
  const Q = toTensor(q, 'q');
  const K = toTensor(k, 'k');
  const V = toTensor(v, 'v');
  const rank = Q.shape.length;
  checkRank(Q, 'q');
  checkRank(K, 'k');
  checkRank(V, 'v');
  if (rank !== K.shape.length || rank !== V.shape.length) {
    fail('SHAPE_MISMATCH', `q, k and v must have the same number of dims: q ${describe(Q.shape)}, k ${describe(K.shape)}, v ${describe(V.shape)}`);
  }
  const nb = rank - 2;
  const batch = Q.shape.slice(0, nb);
  for (let i = 0; i < nb; i++) {
    if (K.shape[i] !== batch[i]) fail('SHAPE_MISMATCH', `batch dim ${i} differs: q has ${batch[i]}, k has ${K.shape[i]}`);
    if (V.shape[i] !== batch[i]) fail('SHAPE_MISMATCH', `batch dim ${i} differs: q has ${batch[i]}, v has ${V.shape[i]}`);
  }
  const Tq = Q.shape[nb], dk = Q.shape[nb + 1];
  const Tk = K.shape[nb], dkK = K.shape[nb + 1];
  const TkV = V.shape[nb], dv = V.shape[nb + 1];
  if (dk !== dkK) fail('SHAPE_MISMATCH', `q and k must share the last dim dk: q has ${dk}, k has ${dkK}`);
  if (Tk !== TkV) fail('SHAPE_MISMATCH', `k and v must have the same number of keys Tk: k has ${Tk}, v has ${TkV}`);
  const keep = checkBoolean(needWeights, 'needWeights', true);
  if (scale !== undefined && typeof scale !== 'number') fail('BAD_ARGUMENT', `scale must be a number (got ${typeof scale})`);
  const s = scale === undefined ? 1 / Math.sqrt(dk) : scale;
  if (!Number.isFinite(Math.fround(s))) fail('NON_FINITE_INPUT', `scale must be finite in float32 (got ${s})`);
  const bugId = bugIndex(bug, { mha: false, where });
  const rule = resolveVisibility(batch, Tq, Tk, { mask, causal });

  // Batch dims become (B, H) inside the core: none -> (1, 1), one -> (B, 1).
  const B = nb >= 1 ? batch[0] : 1;
  const H = nb === 2 ? batch[1] : 1;
  return { Q, K, V, batch, B, H, Tq, Tk, dk, dv, keep, s, bugId, rule, opts };
}

/**
 * One instance of the core: its exports, views of its memory and its last
 * error. Only this file holds one (a lab, and the layouts, modules and
 * trainers it makes); a lab's reset() replaces its core by a fresh one.
 */
class Core {
  #heap = null;

  constructor(instance, generation) {
    instance.exports._initialize?.();
    this.exports = instance.exports;
    /** How many resets of its lab came before this instance. */
    this.generation = generation;
    this.errorBytes = this.exports.attn_error_bytes();
    /** The workspace bytes of the last call's layout (see lastCallBytes). */
    this.layoutBytes = 0;
  }

  /**
   * Views of the core's memory, rebuilt only after memory grew. Growing
   * detaches the old buffer, which leaves its views with length 0: that is
   * checked instead of asking the memory for its buffer on every call.
   */
  heap() {
    if (this.#heap === null || this.#heap.u8.length === 0) {
      const buffer = this.exports.memory.buffer;
      this.#heap = { u8: new Uint8Array(buffer), i32: new Int32Array(buffer), f32: new Float32Array(buffer) };
    }
    return this.#heap;
  }

  /** Throw the core's last error as an AttentionError. */
  throwLastError() {
    const { exports } = this;
    const status = exports.attn_last_status();
    const ptr = exports.attn_last_error();
    const bytes = this.heap().u8.subarray(ptr, ptr + this.errorBytes);
    const end = bytes.indexOf(0);
    const message = new TextDecoder().decode(end < 0 ? bytes : bytes.subarray(0, end));
    fail(STATUS_CODES[status] || 'BAD_ARGUMENT', message || 'the attention core refused the call');
  }

  check(status) { if (status !== 0) this.throwLastError(); }
}

/** The core a lab runs now; for the modules and trainers below, out of a caller's reach. */
let currentCore;

/**
 * The lab loadAttention resolves to. Its state is private: what a caller
 * reads (simd, exports, generation) are getters, so that no assignment can
 * change what a call uses.
 */
class Lab {
  #module;
  #simd;
  #core;

  static {
    currentCore = (lab) => lab.#core;
  }

  constructor(module, instance, simd) {
    this.#module = module;
    this.#simd = simd;
    this.#core = new Core(instance, 0);
  }

  /** Whether this lab runs the SIMD128 build. */
  get simd() { return this.#simd; }

  /** The raw exports of the core's instance (attn_* functions, memory), for tests and measurements. */
  get exports() { return this.#core.exports; }

  /** Counts resets: a multi-head module or a trainer belongs to the instance it was made in. */
  get generation() { return this.#core.generation; }

  /**
   * Replace the core's instance by a fresh one of the same compiled module.
   * Wasm memory only grows: after a large call the instance keeps its peak
   * size (up to the 2 GiB maximum) for its lifetime, and this is the way to
   * give that memory back without reloading the page. Multi-head modules
   * and trainers created before are refused (MODULE_FREED) afterwards, and
   * so are the modules' caches; results of calls are unchanged.
   * @returns {Promise<void>}
   */
  async reset() {
    const instance = await WebAssembly.instantiate(this.#module, CORE_IMPORTS);
    this.#core = new Core(instance, this.#core.generation + 1);
  }

  /** Current size of the core's linear memory, in bytes. */
  memoryBytes() { return this.#core.exports.memory.buffer.byteLength; }

  /**
   * The memory the last call needed, in bytes, as the core counts it: its
   * tensors in the workspace (inputs, outputs, weights when kept) plus the
   * most scratch the core held at once during the call.
   */
  lastCallBytes() { return this.#core.layoutBytes + this.#core.exports.attn_scratch_peak_bytes(); }

  /**
   * The multiply-adds of the matrix products the last call did, as the core
   * counts them: M·N·K for each product (M, K) @ (K, N) its kernels computed,
   * the scores Q·Kᵀ, the weighted sum of V, and a multi-head module's four
   * projections. Softmax, biases, masks and RoPE are not counted.
   */
  lastCallMadds() { return this.#core.exports.attn_last_call_madds(); }

  /**
   * Scaled dot-product attention.
   * @param q (batch…, Tq, dk) with 0, 1 or 2 batch dims
   * @param k (batch…, Tk, dk)
   * @param v (batch…, Tk, dv)
   * @param [options]
   *   mask: allowed mask broadcastable to (batch…, Tq, Tk);
   *   causal: AND the lower triangle (key j allowed for query i iff j <= i);
   *   scale: defaults to 1/sqrt(dk);
   *   needWeights: false returns only { output } (and dropoutMask with
   *     dropout) and never builds the (Tq, Tk) matrices;
   *   bug: a break-it bug name (see BUGS), for the lab's exercises;
   *   dropout: p, 0 <= p < 1: inverted dropout on the weights after the
   *     softmax (kept weights times 1/(1 − p)), drawn from `seed` (default
   *     0); weights are then the dropped-out ones, the ones that multiply v.
   *   Without weights and without a bug or dropout, the tiled online-softmax
   *   path runs (see sdpaTiled).
   * @returns {{ output, weights?, scores?, stats?, dropoutMask? }} output (batch…, Tq, dv),
   *   weights (batch…, Tq, Tk), scores: the scaled logits before masking,
   *   stats (computed by the core when first read): { maxAbsScore,
   *   maskedFraction, maxRowSumError, maxForbiddenWeight, worstRowSumAt,
   *   maxForbiddenAt }, dropoutMask (batch…, Tq, Tk) Uint8 with dropout:
   *   1 kept, 0 dropped.
   */
  sdpa(q, k, v, options) {
    const call = sdpaArguments(q, k, v, options, SDPA_FORWARD_OPTIONS, 'sdpa');
    const { batch, B, H, Tq, Tk, dv, keep, s, bugId, rule } = call;
    const { bug, dropout, seed } = call.opts;
    if (keep && bug === 'no-rescale') {
      fail('BAD_ARGUMENT', 'bug "no-rescale" is in the tiled path, which keeps no weights: use lab.sdpaTiled or needWeights: false');
    }
    if (dropout !== undefined && (typeof dropout !== 'number' || !(dropout >= 0 && Math.fround(dropout) < 1))) {
      fail('BAD_ARGUMENT', `dropout must be a number at least 0 and below 1 (got ${show(dropout)}${asFloat32(dropout, typeof dropout === 'number' && dropout >= 0 && dropout < 1)})`);
    }
    if (seed !== undefined && dropout === undefined) fail('BAD_ARGUMENT', 'seed is the seed of dropout: give dropout too');
    const dropSeed = checkInteger(seed, 'seed', 0, { max: 2 ** 32 - 1 });
    const drop = dropout !== undefined;
    const nOut = B * H * Tq * dv;
    const nW = B * H * Tq * Tk;
    const layout = this.#sdpaLayout(call, nOut, (l) => {
      if (keep) l.add('weights', 4 * nW).add('scores', 4 * nW);
      if (drop) l.add('dropout', 4 * DROPOUT_WORDS).add('keep', nW);
      return l;
    });
    if (drop) {
      layout.words('dropout', 0, dropSeed >>> 0 | 0, layout.ptr('keep'));
      new Float32Array(this.#core.exports.memory.buffer, layout.ptr('dropout'), 1)[0] = dropout;
    }

    this.#core.check(this.#core.exports.attn_sdpa_dropout(layout.ptr('out'), layout.ptr('weights'), layout.ptr('scores'),
      layout.ptr('q'), layout.ptr('k'), layout.ptr('v'), layout.ptr('vis'), layout.ptr('dims'), s,
      layout.ptr('dropout'), bugId));

    const output = { data: layout.get('out', nOut), shape: [...batch, Tq, dv] };
    const wShape = [...batch, Tq, Tk];
    const dropoutMask = drop ? { data: layout.getU8('keep', nW), shape: wShape.slice() } : undefined;
    if (!keep) return drop ? { output, dropoutMask } : { output };
    const weights = { data: layout.get('weights', nW), shape: wShape };
    const scores = { data: layout.get('scores', nW), shape: wShape.slice() };
    const lab = this;
    let stats;
    const result = {
      output, weights, scores,
      get stats() {
        stats ??= lab.#observeRule(weights.data, scores.data, [B, H, Tq, Tk], rule);
        return stats;
      },
    };
    if (drop) result.dropoutMask = dropoutMask;
    return result;
  }

  /**
   * The tiled online-softmax path (FlashAttention's recurrence), which
   * lab.sdpa runs itself when it keeps no weights and no bug or dropout is on.
   * @param q (batch…, Tq, dk), k (batch…, Tk, dk), v (batch…, Tk, dv)
   * @param [options] mask, causal, scale as in sdpa; blockKeys: keys per
   *   tile (default 128); trace: true to return the running values after
   *   each tile (at most 65536 (row, tile) pairs); bug: 'no-rescale'.
   * @returns {{ output, tiles, trace? }} output (batch…, Tq, dv); tiles: the
   *   number of key tiles; trace: { max, sum, rescale } each
   *   (batch…, Tq, tiles) and accumulator (batch…, Tq, tiles, dv), the
   *   running m, l, exp(m_old − m_new) and the unnormalised output. Until
   *   a row has met an allowed key, its m is -Infinity, l and the
   *   accumulator 0 and its rescale 1: nothing has been summed yet.
   */
  sdpaTiled(q, k, v, options) {
    const call = sdpaArguments(q, k, v, options, SDPA_TILED_OPTIONS, 'sdpaTiled');
    const { batch, B, H, Tq, Tk, dv, s, bugId } = call;
    const { blockKeys, trace, bug } = call.opts;
    const bk = checkInteger(blockKeys, 'blockKeys', 128, { min: 1 });
    const wantTrace = checkBoolean(trace, 'trace', false);
    if (bugId !== 0 && bug !== 'no-rescale') fail('BAD_ARGUMENT', `the tiled path knows only the bug "no-rescale" (got "${bug}")`);
    const tiles = Math.ceil(Tk / Math.min(bk, Tk));
    const pairs = B * H * Tq * tiles;
    if (wantTrace && pairs > 65536) {
      fail('TOO_LARGE', `trace is for small sizes: ${pairs} (query row, key tile) pairs, at most 65536; raise blockKeys or shrink T`);
    }
    const nOut = B * H * Tq * dv;
    const nTrace = pairs * (3 + dv);
    const layout = this.#sdpaLayout(call, nOut, (l) => (wantTrace ? l.add('trace', 4 * nTrace) : l));
    this.#core.check(this.#core.exports.attn_sdpa_tiled(layout.ptr('out'), layout.ptr('trace'),
      layout.ptr('q'), layout.ptr('k'), layout.ptr('v'), layout.ptr('vis'), layout.ptr('dims'), s, bk, bugId));
    const result = { output: { data: layout.get('out', nOut), shape: [...batch, Tq, dv] }, tiles };
    if (!wantTrace) return result;
    const raw = layout.get('trace', nTrace);
    const rowShape = [...batch, Tq, tiles];
    const [max, sum, rescale] = [0, 1, 2].map(() => new Float32Array(pairs));
    const accumulator = new Float32Array(pairs * dv);
    for (let p = 0; p < pairs; p++) {
      const at = p * (3 + dv);
      max[p] = raw[at];
      sum[p] = raw[at + 1];
      rescale[p] = raw[at + 2];
      accumulator.set(raw.subarray(at + 3, at + 3 + dv), p * dv);
    }
    result.trace = {
      max: { data: max, shape: rowShape },
      sum: { data: sum, shape: rowShape.slice() },
      rescale: { data: rescale, shape: rowShape.slice() },
      accumulator: { data: accumulator, shape: [...rowShape, dv] },
    };
    return result;
  }

  /**
   * Lay out one SDPA call: q, k, v, out, dims and the visibility rule, plus
   * what `extra(layout)` adds; commits and copies the inputs in.
   */
  #sdpaLayout({ Q, K, V, B, H, Tq, Tk, dk, dv, rule }, nOut, extra) {
    const layout = new Layout(this.#core)
      .add('q', 4 * Q.n).add('k', 4 * K.n).add('v', 4 * V.n)
      .add('out', 4 * nOut).add('dims', 4 * DIMS_WORDS);
    extra(layout);
    addVisibility(layout, rule);
    layout.commit();
    layout.put('q', Q.data);
    layout.put('k', K.data);
    layout.put('v', V.data);
    putVisibility(layout, rule);
    layout.words('dims', B, H, Tq, Tk, dk, dv);
    return layout;
  }

  /**
   * The backward of sdpa: gradients of a loss L given dOutput = dL/doutput.
   * @param q, k, v as for sdpa
   * @param dOutput (batch…, Tq, dv), the shape of sdpa's output
   * @param [options] mask, causal, scale as for sdpa; bug: a forward bug
   *   (the gradient of that bugged forward) or a backward bug
   *   ('softmax-backward-no-rowsum', 'grad-through-blocked'); needWeights:
   *   false returns only { dq, dk, dv }; weights: the weights sdpa returned
   *   for these inputs and options, which spares recomputing them (q·kᵀ and
   *   the softmax, about a fifth of the backward's time). They are checked
   *   (finite, in [0, 1], 0 on blocked pairs, rows summing to 1) and work
   *   with no bug or a backward bug only.
   * @returns {{ dq, dk, dv, dScores?, dProbs? }} with the shapes of q, k, v
   *   and (batch…, Tq, Tk): dScores is dL/dscores (sdpa's scaled logits),
   *   dProbs is dL/dweights. Blocked pairs are exactly 0 in both; a key no
   *   query may see gets exactly 0 in dk and dv.
   */
  sdpaBackward(q, k, v, dOutput, options) {
    const { Q, K, V, batch, B, H, Tq, Tk, dk, dv, keep, s, bugId, rule, opts } =
      sdpaArguments(q, k, v, options, SDPA_BACKWARD_OPTIONS, 'sdpaBackward');
    if (opts.bug === 'no-rescale') {
      fail('BAD_ARGUMENT', 'bug "no-rescale" is in the tiled forward path, which sdpaBackward does not run: use lab.sdpaTiled, or lab.sdpa with needWeights: false');
    }
    const G = toTensor(dOutput, 'dOutput');
    const outShape = [...batch, Tq, dv];
    sameShape(G, { shape: outShape }, 'dOutput', 'the output');
    const nW = B * H * Tq * Tk;
    const wShape = [...batch, Tq, Tk];
    const P = opts.weights === undefined || opts.weights === null ? null : toTensor(opts.weights, 'weights');
    if (P) sameShape(P, { shape: wShape }, 'weights', "sdpa's weights (batch…, Tq, Tk)");
    const layout = new Layout(this.#core)
      .add('q', 4 * Q.n).add('k', 4 * K.n).add('v', 4 * V.n)
      .add('dout', 4 * G.n).add('dims', 4 * DIMS_WORDS)
      .add('dq', 4 * Q.n).add('dk', 4 * K.n).add('dv', 4 * V.n);
    if (keep) layout.add('dscores', 4 * nW).add('dprobs', 4 * nW);
    if (P) layout.add('probs', 4 * nW);
    addVisibility(layout, rule);
    layout.commit();
    layout.put('q', Q.data);
    layout.put('k', K.data);
    layout.put('v', V.data);
    layout.put('dout', G.data);
    if (P) layout.put('probs', P.data);
    putVisibility(layout, rule);
    layout.words('dims', B, H, Tq, Tk, dk, dv);
    const p = (name) => layout.ptr(name);
    this.#core.check(this.#core.exports.attn_sdpa_backward(p('dq'), p('dk'), p('dv'), p('dscores'), p('dprobs'),
      p('dout'), p('probs'), p('q'), p('k'), p('v'), p('vis'), p('dims'), s, bugId));
    const out = (name, n, shape) => ({ data: layout.get(name, n), shape: shape.slice() });
    const grads = { dq: out('dq', Q.n, Q.shape), dk: out('dk', K.n, K.shape), dv: out('dv', V.n, V.shape) };
    if (!keep) return grads;
    return Object.assign(grads, { dScores: out('dscores', nW, wShape), dProbs: out('dprobs', nW, wShape) });
  }

  /**
   * Which query–key pairs the visibility rule allows, computed by the core:
   * the mask (broadcast as lab.sdpa broadcasts it), the key padding and the
   * causal triangle, ANDed.
   * @param shape the scores shape (batch…, Tq, Tk), 0 to 2 batch dims
   * @param [options] mask: allowed mask; keyPaddingMask (B, Tk): 1 = real
   *   key (B = 1 without batch dims); causal: key j allowed for query i only
   *   if j <= i + causalOffset (default 0).
   *   At most MAX_ALLOWED_PAIRS pairs in one call (TOO_LARGE).
   * @returns {{ data: Uint8Array, shape: number[] }} 1 = allowed
   */
  allowedPairs(shape, options) {
    const { dims, batch, Tq, Tk, B, H } = scoresShape(shape, 'shape');
    const pairs = product(dims);
    if (pairs > MAX_ALLOWED_PAIRS) fail('TOO_LARGE', `shape ${describe(dims)} has ${pairs} pairs; at most ${MAX_ALLOWED_PAIRS} in one call`);
    const rule = resolveVisibility(batch, Tq, Tk, checkOptions(options, RULE_OPTIONS, 'allowedPairs'));
    const n = B * H * Tq * Tk;
    const layout = new Layout(this.#core).add('allowed', n);
    addVisibility(layout, rule);
    layout.commit();
    putVisibility(layout, rule);
    this.#core.check(this.#core.exports.attn_allowed_pairs(layout.ptr('allowed'), layout.ptr('vis'), B, H, Tq, Tk));
    return { data: layout.getU8('allowed', n), shape: dims };
  }

  /**
   * Observability numbers for attention weights under a visibility rule,
   * computed by the core (lab.sdpa's `stats` are these for its call).
   * @param weights (batch…, Tq, Tk), 0 to 2 batch dims
   * @param [options] scores: the same shape (maxAbsScore is 0 without);
   *   mask, keyPaddingMask, causal, causalOffset: as for allowedPairs.
   *   Broken weights are measured too: a NaN counts as the worst, and is located.
   */
  observe(weights, options) {
    const opts = checkOptions(options, OBSERVE_OPTIONS, 'observe');
    const W = toTensor(weights, 'weights');
    const { batch, Tq, Tk, B, H } = scoresShape(W.shape, 'weights.shape');
    const S = opts.scores === undefined || opts.scores === null ? null : toTensor(opts.scores, 'scores');
    if (S && (S.shape.length !== W.shape.length || S.shape.some((d, i) => d !== W.shape[i]))) {
      fail('SHAPE_MISMATCH', `scores ${describe(S.shape)} must have the shape of weights ${describe(W.shape)}`);
    }
    return this.#observeRule(W.data, S ? S.data : null, [B, H, Tq, Tk], resolveVisibility(batch, Tq, Tk, opts));
  }

  /** attn_observe on (B, H, Tq, Tk) weights and scores (or null), for a resolved rule. */
  #observeRule(weights, scores, [B, H, Tq, Tk], rule) {
    const n = weights.length;
    const layout = new Layout(this.#core).add('weights', 4 * n).add('stats', 16).add('where', 28);
    if (scores) layout.add('scores', 4 * n);
    addVisibility(layout, rule);
    layout.commit();
    layout.put('weights', weights);
    if (scores) layout.put('scores', scores);
    putVisibility(layout, rule);
    this.#core.check(this.#core.exports.attn_observe(layout.ptr('stats'), layout.ptr('where'), layout.ptr('scores'),
      layout.ptr('weights'), layout.ptr('vis'), B, H, Tq, Tk));
    const [maxAbsScore, maskedFraction, maxRowSumError, maxForbiddenWeight] = layout.get('stats', 4);
    const where = Array.from(layout.getI32('where', 7));
    return {
      maxAbsScore, maskedFraction, maxRowSumError, maxForbiddenWeight,
      worstRowSumAt: where[0] < 0 ? null : where.slice(0, 3),
      maxForbiddenAt: where[3] < 0 ? null : where.slice(3, 7),
    };
  }

  /**
   * Rotary position embeddings, as the multi-head module applies them:
   * split-halves pairing, entry c < d/2 turns with entry c + d/2 by the
   * angle position · base^(−2c/d).
   * @param x (…, T, d), d even
   * @param [options] positions: T numbers (an array, a typed array or a
   *   tensor of shape [T]), or one number p (positions p, p + 1, …);
   *   default 0, 1, …, T − 1. base: default 10000.
   * @returns {{ data: Float32Array, shape: number[] }} x rotated, same shape
   */
  applyRope(x, options) {
    const { positions, base } = checkOptions(options, ['positions', 'base'], 'applyRope');
    const X = toTensor(x, 'x');
    if (X.shape.length < 2) fail('BAD_ARGUMENT', `x must have at least 2 dims (…, T, d); got shape ${describe(X.shape)}`);
    const [T, d] = X.shape.slice(-2);
    if (d % 2 !== 0) fail('BAD_ARGUMENT', `RoPE pairs entries, so the last dim d must be even (got ${d})`);
    if (base !== undefined && (typeof base !== 'number' || !Number.isFinite(base) || base <= 0)) {
      fail('BAD_ARGUMENT', `base must be a positive finite number (got ${show(base)})`);
    }
    const pos = new Float64Array(T);
    if (positions === undefined || typeof positions === 'number') {
      const first = positions ?? 0;
      if (!Number.isFinite(first)) fail('NON_FINITE_INPUT', `positions must be finite (got ${first})`);
      for (let t = 0; t < T; t++) pos[t] = first + t;
    } else {
      // Read once, as doubles: a position past 2^24 keeps its exact value.
      // A typed array is a list of T numbers, as a plain array is.
      const list = typedArrayTag.call(positions) === undefined ? positions
        : { data: positions, shape: [typedArrayLength.call(positions)] };
      const P = toTensor(list, 'positions', 'float64');
      if (P.shape.length !== 1 || P.shape[0] !== T) fail('SHAPE_MISMATCH', `positions must hold T = ${T} numbers; got shape ${describe(P.shape)}`);
      pos.set(P.data);
    }
    const n = X.data.length;
    const layout = new Layout(this.#core).add('x', 4 * n).add('pos', 8 * T).commit();
    layout.put('x', X.data);
    new Float64Array(this.#core.exports.memory.buffer, layout.ptr('pos'), T).set(pos);
    this.#core.check(this.#core.exports.attn_rope(layout.ptr('x'), layout.ptr('pos'), n / (T * d), T, d, base ?? 10000));
    return { data: layout.get('x', n), shape: X.shape.slice() };
  }

  /**
   * Multi-head attention with its own projections (see MultiHeadAttention).
   * @param {{ dModel: number, numHeads: number, bias?: boolean, rope?: boolean, seed?: number }} options
   */
  createMultiHeadAttention(options) {
    return new MultiHeadAttention(this, options);
  }

  /**
   * A tiny attention-only model that trains on a toy task (see Trainer).
   * @param {{ task: 'previous-token'|'induction'|'reverse', layers?, heads?, dModel?, seqLen?,
   *   vocab?, batch?, lr?, seed?, causal?: boolean, bug?: 'no-causal-mask' }} options
   *   unset sizes take TRAIN_DEFAULTS[task].
   */
  createTrainer(options) {
    return new Trainer(this, options);
  }

  /**
   * The "why divide by √dk" demo: `count` dot products of seeded random q, k
   * of width dk with unit-variance entries, raw and scaled by 1/√dk.
   * dk · count is at most DEMO_LIMITS.sampleDots.work (TOO_LARGE).
   * @returns {{ unscaled: Float32Array, scaled: Float32Array, varianceUnscaled: number, varianceScaled: number }}
   */
  sampleDotProducts(options) {
    const { dk, count, seed } = checkOptions(options, ['dk', 'count', 'seed'], 'sampleDotProducts');
    const limits = DEMO_LIMITS.sampleDots;
    const d = checkInteger(dk, 'dk', undefined, { min: 1, max: limits.dk });
    if (d === undefined) fail('BAD_ARGUMENT', 'dk is required');
    const n = checkInteger(count, 'count', limits.defaultCount, { min: 1, max: limits.count });
    if (d * n > limits.work) fail('TOO_LARGE', `dk × count is ${d * n}; at most ${limits.work} in one call (dk ${d}, count ${n})`);
    const sd = checkInteger(seed, 'seed', 0, { max: 2 ** 32 - 1 });
    const layout = new Layout(this.#core).add('raw', 4 * n).add('scaled', 4 * n).add('var', 8).commit();
    this.#core.check(this.#core.exports.attn_sample_dots(layout.ptr('raw'), layout.ptr('scaled'), layout.ptr('var'), d, n, sd));
    const [varianceUnscaled, varianceScaled] = layout.get('var', 2);
    return { unscaled: layout.get('raw', n), scaled: layout.get('scaled', n), varianceUnscaled, varianceScaled };
  }

  /**
   * How peaked softmax gets: the mean largest weight of a softmax over `keys`
   * random logits q·k, with and without the 1/√dk scale.
   * dk · keys · count is at most DEMO_LIMITS.softmaxPeak.work (TOO_LARGE).
   * @returns {{ meanMaxWeightScaled: number, meanMaxWeightUnscaled: number }}
   */
  softmaxPeak(options) {
    const { dk, keys, count, seed } = checkOptions(options, ['dk', 'keys', 'count', 'seed'], 'softmaxPeak');
    const limits = DEMO_LIMITS.softmaxPeak;
    const d = checkInteger(dk, 'dk', undefined, { min: 1, max: limits.dk });
    if (d === undefined) fail('BAD_ARGUMENT', 'dk is required');
    const nk = checkInteger(keys, 'keys', limits.defaultKeys, { min: 1, max: limits.keys });
    const n = checkInteger(count, 'count', limits.defaultCount, { min: 1, max: limits.count });
    if (d * nk * n > limits.work) {
      fail('TOO_LARGE', `dk × keys × count is ${d * nk * n}; at most ${limits.work} in one call (dk ${d}, keys ${nk}, count ${n})`);
    }
    const sd = checkInteger(seed, 'seed', 0, { max: 2 ** 32 - 1 });
    const layout = new Layout(this.#core).add('peak', 8).commit();
    this.#core.check(this.#core.exports.attn_softmax_peak(layout.ptr('peak'), d, nk, n, sd));
    const [meanMaxWeightScaled, meanMaxWeightUnscaled] = layout.get('peak', 2);
    return { meanMaxWeightScaled, meanMaxWeightUnscaled };
  }

  /**
   * The gradient lesson's loss, computed by the core:
   * L = ½‖output − target‖² and its gradient dL/doutput = output − target.
   * @param output, target tensors of one shape
   * @returns {{ loss: number, dOutput: { data: Float32Array, shape: number[] } }}
   */
  squaredError(output, target) {
    const O = toTensor(output, 'output');
    const T = toTensor(target, 'target');
    sameShape(T, O, 'target', 'output');
    const n = O.data.length;
    const layout = new Layout(this.#core).add('out', 4 * n).add('target', 4 * n).add('dout', 4 * n).add('loss', 4).commit();
    layout.put('out', O.data);
    layout.put('target', T.data);
    this.#core.check(this.#core.exports.attn_squared_error(layout.ptr('loss'), layout.ptr('dout'), layout.ptr('out'), layout.ptr('target'), n));
    return { loss: layout.get('loss', 1)[0], dOutput: { data: layout.get('dout', n), shape: O.shape.slice() } };
  }

  /**
   * One step of gradient descent, computed by the core: x − lr · dx.
   * @returns {{ data: Float32Array, shape: number[] }} with x's shape
   */
  descend(x, dx, lr) {
    const X = toTensor(x, 'x');
    const G = toTensor(dx, 'dx');
    sameShape(G, X, 'dx', 'x');
    if (typeof lr !== 'number') fail('BAD_ARGUMENT', `lr must be a number (got ${typeof lr})`);
    const n = X.data.length;
    const layout = new Layout(this.#core).add('x', 4 * n).add('dx', 4 * n).add('next', 4 * n).commit();
    layout.put('x', X.data);
    layout.put('dx', G.data);
    this.#core.check(this.#core.exports.attn_descend(layout.ptr('next'), layout.ptr('x'), layout.ptr('dx'), lr, n));
    return { data: layout.get('next', n), shape: X.shape.slice() };
  }

  /**
   * A finite-difference slope, computed by the core: the change of
   * L = ½‖sdpa(q, k, v) − target‖² when entry `at` of q (flat, row-major)
   * moves by ±eps, divided by 2·eps. Compare it with sdpaBackward's dq.
   * @param [options] at (default 0), eps (default 1e-2), and mask, causal,
   *   scale as for sdpa. eps must change q[at] in float32 both ways and be
   *   at most max(1, |q[at]|); a loss at q ± eps beyond float32 is OVERFLOW.
   * @returns {number}
   */
  sdpaLossSlope(q, k, v, target, options) {
    const { at, eps, ...rest } = checkOptions(options, ['at', 'eps', 'mask', 'causal', 'scale'], 'sdpaLossSlope');
    const { Q, K, V, batch, B, H, Tq, Tk, dk, dv, s, rule } = sdpaArguments(q, k, v, rest, SDPA_OPTIONS, 'sdpaLossSlope');
    const T = toTensor(target, 'target');
    sameShape(T, { shape: [...batch, Tq, dv] }, 'target', 'the output');
    const index = checkInteger(at, 'at', 0, { max: Q.data.length - 1 });
    const step = eps === undefined ? 1e-2 : eps;
    if (typeof step !== 'number' || !(Math.fround(step) > 0) || !Number.isFinite(Math.fround(step))) {
      fail('BAD_ARGUMENT', `eps must be a positive number (got ${show(step)}${asFloat32(step, typeof step === 'number' && step > 0 && Number.isFinite(step))})`);
    }
    const nOut = T.data.length;
    const layout = new Layout(this.#core)
      .add('q', 4 * Q.data.length).add('k', 4 * K.data.length).add('v', 4 * V.data.length)
      .add('target', 4 * nOut).add('dims', 4 * DIMS_WORDS).add('slope', 4);
    addVisibility(layout, rule);
    layout.commit();
    layout.put('q', Q.data);
    layout.put('k', K.data);
    layout.put('v', V.data);
    layout.put('target', T.data);
    putVisibility(layout, rule);
    layout.words('dims', B, H, Tq, Tk, dk, dv);
    const p = (name) => layout.ptr(name);
    this.#core.check(this.#core.exports.attn_sdpa_loss_slope(p('slope'), p('q'), p('k'), p('v'), p('target'), p('vis'), p('dims'), s, index, step));
    return layout.get('slope', 1)[0];
  }
}

// ---------------------------------------------------------------------------
// Multi-head attention
// ---------------------------------------------------------------------------

const PROJECTIONS = ['qProj', 'kProj', 'vProj', 'outProj'];

/**
 * Where a KV cache came from: { module, version of its weights }, under a
 * symbol key that a spread copy of the cache keeps. Only records made here
 * count, so the key cannot be forged.
 */
const CACHE_ORIGIN = Symbol('attention-lab cache origin');
const cacheOrigins = new WeakSet();
function origin(module, version) {
  const record = Object.freeze({ module, version });
  cacheOrigins.add(record);
  return record;
}

/**
 * Refuse a call on an object that holds memory in the core (a multi-head
 * module or a trainer: its struct `ptr`, made by `lab` in its instance
 * `generation`) once that memory is gone: freed by the object's free()
 * (ptr 0), or left behind in the old instance by lab.reset(), where its
 * pointer could now name another object's memory.
 */
function refuseIfGone(ptr, generation, lab, what, remedy) {
  if (!ptr) fail('MODULE_FREED', `this ${what} was freed; ${remedy}`);
  if (generation !== currentCore(lab).generation) fail('MODULE_FREED', `the lab was reset after this ${what} was created; ${remedy}`);
}

/**
 * Multi-head attention, written out step by step:
 * project q, k, v (one full-width matmul each), split (B, T, C) into
 * (B, H, T, D) by reshape + transpose, attend per head, merge back and
 * apply the output projection. Computed by the C core (c_src/mha.c).
 *
 * Weights start uniform in [-1/√dModel, 1/√dModel) from `seed` (nn.Linear's
 * default bound), drawn for q, k, v, out in turn: weight rows, then bias.
 * RoPE, when on, rotates entry d with entry d + D/2 of each head (split
 * halves) by the angle position · 10000^(-2d/D).
 */
class MultiHeadAttention {
  /** Counts setWeights calls: a cache is valid only for the weights that made it. */
  #version = 0;
  // The sizes the wrapper lays memory out by: private, so that no assignment
  // can make a call read or write past the module's buffers.
  #dModel;
  #numHeads;
  #headDim;
  #bias;
  #rope;
  #lab;
  #generation; // the lab's instance the module lives in
  #ptr; // its struct in the core; 0 once freed
  #saved = null; // what the last forward with saveForBackward kept, for backward

  constructor(lab, options) {
    const { dModel, numHeads, bias, rope, seed } = checkOptions(options,
      ['dModel', 'numHeads', 'bias', 'rope', 'seed'], 'createMultiHeadAttention');
    const C = checkInteger(dModel, 'dModel', undefined, { min: 1, max: MHA_MAX_DIM });
    const H = checkInteger(numHeads, 'numHeads', undefined, { min: 1, max: MHA_MAX_DIM });
    if (C === undefined || H === undefined) fail('BAD_ARGUMENT', 'dModel and numHeads are required');
    if (C % H !== 0) fail('HEADS_DO_NOT_DIVIDE', `dModel (${C}) must be divisible by numHeads (${H})`);
    const useRope = checkBoolean(rope, 'rope', false);
    if (useRope && (C / H) % 2 !== 0) fail('ROPE_ODD_HEAD_DIM', `RoPE needs an even head dim; dModel / numHeads = ${C / H}`);
    this.#lab = lab;
    this.#generation = currentCore(lab).generation;
    this.#dModel = C;
    this.#numHeads = H;
    this.#headDim = C / H;
    this.#bias = checkBoolean(bias, 'bias', true);
    this.#rope = useRope;
    this.#ptr = this.#core.exports.attn_mha_create(C, H, this.#bias ? 1 : 0, useRope ? 1 : 0,
      checkInteger(seed, 'seed', 0, { max: 2 ** 32 - 1 }));
    if (!this.#ptr) this.#core.throwLastError();
  }

  /** The model width C: query, keyValue and output are (B, T, dModel). */
  get dModel() { return this.#dModel; }
  /** The number of heads H. */
  get numHeads() { return this.#numHeads; }
  /** Each head's width D = dModel / numHeads. */
  get headDim() { return this.#headDim; }
  /** Whether the projections have biases. */
  get bias() { return this.#bias; }
  /** Whether RoPE rotates queries and keys. */
  get rope() { return this.#rope; }

  #alive() {
    refuseIfGone(this.#ptr, this.#generation, this.#lab, 'multi-head attention module', 'create a new one');
  }

  /** The lab's core: the module's own instance while #alive() passes. */
  get #core() { return currentCore(this.#lab); }

  /** Release the module's memory in the core. Safe to call twice, and after lab.reset(). */
  free() {
    if (this.#ptr && this.#generation === this.#core.generation) this.#core.exports.attn_mha_free(this.#ptr);
    this.#ptr = 0;
  }

  /**
   * The projections' parameters, nn.Linear layout: weight (dModel, dModel)
   * as (out, in), bias (dModel) or null without bias.
   */
  getWeights() {
    this.#alive();
    const { exports } = this.#core;
    const C = this.#dModel;
    const read = (ptr, n) => this.#core.heap().f32.slice(ptr >>> 2, (ptr >>> 2) + n);
    return Object.fromEntries(PROJECTIONS.map((name, i) => [name, {
      weight: { data: read(exports.attn_mha_weight(this.#ptr, i), C * C), shape: [C, C] },
      bias: this.#bias ? { data: read(exports.attn_mha_bias(this.#ptr, i), C), shape: [C] } : null,
    }]));
  }

  /**
   * Replace some or all parameters: `{ qProj, kProj, vProj, outProj }`, each
   * `{ weight, bias }` as getWeights returns them. All are checked before any
   * is written.
   */
  setWeights(params) {
    this.#alive();
    if (!isPlainObject(params)) fail('BAD_ARGUMENT', `setWeights needs an object { qProj, kProj, vProj, outProj } (got ${show(params)})`);
    const projections = checkOptions(params, PROJECTIONS, 'setWeights');
    const C = this.#dModel;
    const staged = [];
    PROJECTIONS.forEach((name, i) => {
      const p = projections[name];
      if (p === undefined) return;
      if (!isPlainObject(p)) fail('BAD_ARGUMENT', `${name} must be { weight, bias }`);
      const { weight, bias } = checkOptions(p, ['weight', 'bias'], name);
      const W = toTensor(weight, `${name}.weight`);
      if (W.shape.length !== 2 || W.shape[0] !== C || W.shape[1] !== C) {
        fail('SHAPE_MISMATCH', `${name}.weight must have shape [${C}, ${C}] (out, in); got ${describe(W.shape)}`);
      }
      let b = null;
      if (bias !== undefined && bias !== null) {
        if (!this.#bias) fail('BAD_ARGUMENT', `${name}.bias given but this module was created with bias: false`);
        b = toTensor(bias, `${name}.bias`);
        if (b.shape.length !== 1 || b.shape[0] !== C) fail('SHAPE_MISMATCH', `${name}.bias must have shape [${C}]; got ${describe(b.shape)}`);
      }
      for (const [t, label] of [[W, 'weight'], [b, 'bias']]) {
        for (let at = 0; t && at < t.n; at++) {
          if (!Number.isFinite(t.data[at])) fail('NON_FINITE_INPUT', `${name}.${label} value ${at} is ${t.data[at]}`);
        }
      }
      staged.push([i, W, b]);
    });
    this.#version++;
    // What a saved forward kept belongs to the old weights: backward would mix them.
    if (staged.length > 0 && this.#saved) this.#saved = { stale: true };
    for (const [i, W, b] of staged) {
      const layout = new Layout(this.#core).add('w', 4 * C * C).add('b', 4 * C).commit();
      layout.put('w', W.data);
      if (b) layout.put('b', b.data);
      this.#core.check(this.#core.exports.attn_mha_set(this.#ptr, i, layout.ptr('w'), b ? layout.ptr('b') : 0));
    }
  }

  /**
   * @param query (B, Tq, dModel)
   * @param [keyValue] (B, Tk, dModel); omitted (or the same object as query)
   *   for self-attention. `forward(query, options)` is accepted too.
   * @param [options] attentionMask: allowed, (Tq, Tk), (B, Tq, Tk) or
   *   (B|1, H|1, Tq, Tk), over all keys including cached ones;
   *   keyPaddingMask (B, Tk): real keys, only the new ones when there is a
   *   cache (it keeps its own); queryPaddingMask (B, Tq): real
   *   queries (padded ones get zero output); causal: compares positions;
   *   cache + useCache: incremental decoding (self-attention only);
   *   queryPositionOffset, keyPositionOffset: positions of the first query
   *   and key (with a cache: keys from 0, queries at the cache length; other
   *   values are refused); needWeights (default true); bug: a bug from BUGS
   *   (stale-cache-offset: with cached keys, queries at position 0);
   *   saveForBackward: keep what backward() needs (see backward).
   * @returns {{ output, weights?, cache?, queryPosition }} output (B, Tq,
   *   dModel), weights (B, H, Tq, Tk), cache { key, value, keyPaddingMask,
   *   length } with useCache, queryPosition: the position the core gave the
   *   first query (the offset asked for, or 0 under stale-cache-offset with
   *   cached keys).
   */
  forward(query, keyValue, options) {
    return this.#run(this.#checkForward(query, keyValue, options));
  }

  /** Check forward's arguments; returns the call, every tensor normalised. */
  #checkForward(query, keyValue, options) {
    this.#alive();
    if (options === undefined && reading('keyValue', () => isPlainObject(keyValue) && !('data' in keyValue))) {
      options = keyValue;
      keyValue = undefined;
    }
    const opts = checkOptions(options, FORWARD_OPTIONS, 'forward');
    const save = checkBoolean(opts.saveForBackward, 'saveForBackward', false);
    const C = this.#dModel, H = this.#numHeads, D = this.#headDim;
    const X = toTensor(query, 'query', 'float', true);
    if (X.shape.length !== 3 || X.shape[2] !== C) {
      fail('SHAPE_MISMATCH', `query must have shape (B, Tq, dModel=${C}); got ${describe(X.shape)}`);
    }
    const [B, Tq] = X.shape;
    if (B === 0) fail('BAD_ARGUMENT', 'query needs a batch of at least one sequence');
    if (Tq === 0) fail('EMPTY_QUERY', 'query needs at least one token (Tq = 0)');
    const selfAttention = keyValue === undefined || keyValue === null || keyValue === query;
    const KV = selfAttention ? null : toTensor(keyValue, 'keyValue');
    if (KV && (KV.shape.length !== 3 || KV.shape[0] !== B || KV.shape[2] !== C)) {
      fail('SHAPE_MISMATCH', `keyValue must have shape (B=${B}, Tk, dModel=${C}); got ${describe(KV.shape)}`);
    }
    const Tkn = KV ? KV.shape[1] : Tq;
    const causal = checkBoolean(opts.causal, 'causal', false);
    const useCache = checkBoolean(opts.useCache, 'useCache', false);
    const needWeights = checkBoolean(opts.needWeights, 'needWeights', true);
    // Only undefined and null mean no cache: false or 0 is refused below, not taken for none.
    const cache = opts.cache ?? null;
    const cached = cache !== null;
    if (cached && !useCache) fail('CACHE_WITHOUT_USE_CACHE', 'a cache was passed without useCache: true, so the updated cache would be lost');
    if ((cached || useCache) && !selfAttention) fail('CACHE_CROSS_ATTENTION', 'the KV cache is for self-attention only; omit keyValue');
    for (const name of ['queryPositionOffset', 'keyPositionOffset']) {
      const value = opts[name];
      if (value !== undefined && value !== null && typeof value === 'number' && Number.isInteger(value) && value < 0) {
        fail('NEGATIVE_OFFSET', `${name} must be non-negative (got ${value})`);
      }
    }
    const kOffset = checkInteger(opts.keyPositionOffset, 'keyPositionOffset', 0);
    const qOffsetGiven = opts.queryPositionOffset ?? undefined;
    checkInteger(qOffsetGiven, 'queryPositionOffset', 0);

    // The cache: { key, value (B, H, Tp, D), keyPaddingMask (B, Tp), length }.
    let Tp = 0;
    let past = null;
    if (cached) {
      const fields = reading('cache', () => {
        if (typeof cache !== 'object') fail('CACHE_MISMATCH', 'cache must be the cache object a previous forward returned');
        return { key: cache.key, value: cache.value, keyPaddingMask: cache.keyPaddingMask, length: cache.length, origin: cache[CACHE_ORIGIN] };
      });
      this.#checkOrigin(fields.origin);
      const key = toTensor(fields.key, 'cache.key');
      const value = toTensor(fields.value, 'cache.value');
      const keyPaddingMask = toTensor(fields.keyPaddingMask, 'cache.keyPaddingMask', 'mask');
      Tp = key.shape[2];
      const want = `(B=${B}, H=${H}, Tp, D=${D})`;
      for (const [t, name] of [[key, 'cache.key'], [value, 'cache.value']]) {
        if (t.shape.length !== 4 || t.shape[0] !== B || t.shape[1] !== H || t.shape[2] !== Tp || t.shape[3] !== D) {
          fail('CACHE_MISMATCH', `${name} must have shape ${want}; got ${describe(t.shape)}`);
        }
      }
      if (keyPaddingMask.shape.length !== 2 || keyPaddingMask.shape[0] !== B || keyPaddingMask.shape[1] !== Tp) {
        fail('CACHE_MISMATCH', `cache.keyPaddingMask must have shape (${B}, ${Tp}); got ${describe(keyPaddingMask.shape)}`);
      }
      if (fields.length !== undefined && fields.length !== Tp) fail('CACHE_MISMATCH', `cache.length ${show(fields.length)} does not match its keys (${Tp})`);
      past = { key, value, keyPaddingMask };
    }
    if (useCache) {
      if (kOffset !== 0 || (qOffsetGiven !== undefined && qOffsetGiven !== Tp)) {
        fail('CACHE_POSITION', `with a cache, keys start at position 0 and queries continue from the cache length ${Tp} (got queryPositionOffset ${qOffsetGiven}, keyPositionOffset ${kOffset})`);
      }
    }
    // Positions: query i at qOffset + i; key j (of all keys) at firstKey + j.
    const qOffset = qOffsetGiven ?? (cached ? Tp : selfAttention ? kOffset : 0);
    const firstKey = useCache ? 0 : kOffset;
    const Tk = Tp + Tkn;

    const keyPad = opts.keyPaddingMask == null ? null : toTensor(opts.keyPaddingMask, 'keyPaddingMask', 'mask');
    if (keyPad && (keyPad.shape.length !== 2 || keyPad.shape[0] !== B || keyPad.shape[1] !== Tkn)) {
      fail('SHAPE_MISMATCH', `keyPaddingMask must have shape (B=${B}, Tk=${Tkn}); got ${describe(keyPad.shape)}`);
    }
    const queryPad = opts.queryPaddingMask == null ? null : toTensor(opts.queryPaddingMask, 'queryPaddingMask', 'mask');
    if (queryPad && (queryPad.shape.length !== 2 || queryPad.shape[0] !== B || queryPad.shape[1] !== Tq)) {
      fail('SHAPE_MISMATCH', `queryPaddingMask must have shape (B=${B}, Tq=${Tq}); got ${describe(queryPad.shape)}`);
    }
    const M = opts.attentionMask == null ? null : toTensor(opts.attentionMask, 'attentionMask', 'mask');
    let strides = NO_STRIDES;
    if (M) {
      const s = M.shape;
      const fits = (s.length === 2 && s[0] === Tq && s[1] === Tk)
        || (s.length === 3 && s[0] === B && s[1] === Tq && s[2] === Tk)
        || (s.length === 4 && (s[0] === 1 || s[0] === B) && (s[1] === 1 || s[1] === H) && s[2] === Tq && s[3] === Tk);
      if (!fits) {
        fail('SHAPE_MISMATCH', `attentionMask must be (Tq, Tk) = (${Tq}, ${Tk}), (B, Tq, Tk) or (B|1, H|1, Tq, Tk); got ${describe(s)}`);
      }
      const full = s.length === 2 ? [1, 1, ...s] : s.length === 3 ? [s[0], 1, s[1], s[2]] : s;
      strides = broadcastStrides(full, [B, H, Tq, Tk], 'attentionMask');
    }
    const bug = bugIndex(opts.bug, { mha: true });
    return { X, KV, B, Tq, Tkn, Tk, past, useCache, needWeights, keyPad, queryPad, M, strides, causal, qOffset, firstKey, bug, save };
  }

  /**
   * Refuse a cache that this module, with its current weights, did not
   * make: its keys and values would mean nothing here.
   */
  #checkOrigin(origin) {
    if (!cacheOrigins.has(origin)) {
      fail('CACHE_MISMATCH', 'cache must be the cache object a previous forward of this module returned (or a spread copy of it)');
    }
    const { module, version } = origin;
    if (module !== this) {
      const gone = !module.#ptr || module.#generation !== module.#core.generation;
      fail('CACHE_MISMATCH', gone ? 'this cache came from a multi-head module that was freed; a cache works only with the module that made it'
        : 'this cache came from another multi-head module; a cache works only with the module that made it');
    }
    if (version !== this.#version) fail('CACHE_MISMATCH', 'this module\'s weights changed since the cache was made; start a new cache');
  }

  /** Run a checked forward call in the core and copy its results out. */
  #run({ X, KV, B, Tq, Tkn, Tk, past, useCache, needWeights, keyPad, queryPad, M, strides, causal, qOffset, firstKey, bug, save }) {
    const C = this.#dModel, H = this.#numHeads, D = this.#headDim;
    const nOut = B * Tq * C;
    const nW = B * H * Tq * Tk;
    const nCache = B * H * Tk * D;
    const layout = new Layout(this.#core).add('query', 4 * X.n).add('out', 4 * nOut)
      .add('cache', 4 * KV_CACHE_WORDS).add('vis', 4 * MHA_VISIBILITY_WORDS);
    if (KV) layout.add('kv', 4 * KV.n);
    if (needWeights) layout.add('probs', 4 * nW);
    if (past) layout.add('pastK', 4 * past.key.n).add('pastV', 4 * past.value.n).add('pastKeyPaddingMask', past.keyPaddingMask.n);
    if (useCache) layout.add('newK', 4 * nCache).add('newV', 4 * nCache).add('newKeyPaddingMask', B * Tk);
    if (keyPad) layout.add('keyPaddingMask', keyPad.n);
    if (queryPad) layout.add('queryPaddingMask', queryPad.n);
    if (M) layout.add('mask', M.n);
    layout.commit();
    layout.put('query', X.data);
    if (KV) layout.put('kv', KV.data);
    if (past) {
      layout.put('pastK', past.key.data);
      layout.put('pastV', past.value.data);
      layout.put('pastKeyPaddingMask', past.keyPaddingMask.data);
    }
    if (keyPad) layout.put('keyPaddingMask', keyPad.data);
    if (queryPad) layout.put('queryPaddingMask', queryPad.data);
    if (M) layout.put('mask', M.data);
    const p = (name) => layout.ptr(name);
    layout.words('cache', p('pastK'), p('pastV'), p('pastKeyPaddingMask'), past ? past.key.shape[2] : 0,
      p('newK'), p('newV'), p('newKeyPaddingMask'));
    layout.words('vis', p('mask'), ...strides, p('keyPaddingMask'), p('queryPaddingMask'), causal ? 1 : 0, qOffset, firstKey);
    this.#core.exports.attn_mha_save_next(this.#ptr, save ? 1 : 0);

    this.#core.check(this.#core.exports.attn_mha_forward(p('out'), p('probs'), this.#ptr, p('query'), p('kv'),
      B, Tq, Tkn, p('cache'), p('vis'), bug));
    if (save) this.#saved = { B, Tq, Tk: Tkn, cross: Boolean(KV), usedCache: useCache };

    const Tp = past ? past.key.shape[2] : 0;
    const result = { output: { data: layout.get('out', nOut), shape: [B, Tq, C] },
      queryPosition: this.#core.exports.attn_mha_query_position(qOffset, Tp, bug) };
    if (needWeights) result.weights = { data: layout.get('probs', nW), shape: [B, H, Tq, Tk] };
    if (useCache) {
      result.cache = {
        key: { data: layout.get('newK', nCache), shape: [B, H, Tk, D] },
        value: { data: layout.get('newV', nCache), shape: [B, H, Tk, D] },
        keyPaddingMask: { data: layout.getU8('newKeyPaddingMask', B * Tk), shape: [B, Tk] },
        length: Tk,
        [CACHE_ORIGIN]: origin(this, this.#version),
      };
    }
    return result;
  }

  /**
   * Gradients of a loss L for dOutput = dL/doutput (B, Tq, dModel), through
   * the last forward called with saveForBackward: true (the module keeps what
   * it needs until the next forward that asks).
   * @returns {{ dQuery, dKeyValue, qProj, kProj, vProj, outProj }} dQuery
   *   (B, Tq, dModel); dKeyValue (B, Tk, dModel) for cross-attention, null
   *   for self-attention; each projection { weight (dModel, dModel) as
   *   (out, in), bias (dModel) or null }. Padded queries pass no gradient.
   */
  backward(dOutput) {
    this.#alive();
    const saved = this.#saved;
    if (!saved) fail('NO_SAVED_FORWARD', 'backward needs a forward called with saveForBackward: true first');
    if (saved.stale) {
      fail('NO_SAVED_FORWARD', 'the weights changed (setWeights) since the saved forward; run forward with saveForBackward: true again');
    }
    if (saved.usedCache) {
      fail('BACKWARD_THROUGH_CACHE', 'the saved forward used the KV cache; backward does not go through the cache (run forward without useCache)');
    }
    const { B, Tq, Tk, cross } = saved;
    const C = this.#dModel;
    const G = toTensor(dOutput, 'dOutput');
    if (G.shape.length !== 3 || G.shape[0] !== B || G.shape[1] !== Tq || G.shape[2] !== C) {
      fail('SHAPE_MISMATCH', `dOutput must have the output's shape (B=${B}, Tq=${Tq}, dModel=${C}); got ${describe(G.shape)}`);
    }
    const nQ = B * Tq * C;
    const nKV = B * Tk * C;
    const layout = new Layout(this.#core).add('dout', 4 * nQ).add('dquery', 4 * nQ).add('dw', 16 * C * C);
    if (cross) layout.add('dkv', 4 * nKV);
    if (this.#bias) layout.add('db', 16 * C);
    layout.commit();
    layout.put('dout', G.data);
    const p = (name) => layout.ptr(name);
    this.#core.check(this.#core.exports.attn_mha_backward(this.#ptr, p('dquery'), p('dkv'), p('dw'), p('db'), p('dout')));
    const dw = layout.get('dw', 4 * C * C);
    const db = this.#bias ? layout.get('db', 4 * C) : null;
    const result = {
      dQuery: { data: layout.get('dquery', nQ), shape: [B, Tq, C] },
      dKeyValue: cross ? { data: layout.get('dkv', nKV), shape: [B, Tk, C] } : null,
    };
    PROJECTIONS.forEach((name, i) => {
      result[name] = {
        weight: { data: dw.slice(i * C * C, (i + 1) * C * C), shape: [C, C] },
        bias: db ? { data: db.slice(i * C, (i + 1) * C), shape: [C] } : null,
      };
    });
    return result;
  }
}

const FORWARD_OPTIONS = ['attentionMask', 'keyPaddingMask', 'queryPaddingMask', 'causal',
  'cache', 'useCache', 'queryPositionOffset', 'keyPositionOffset', 'needWeights', 'bug', 'saveForBackward'];

// ---------------------------------------------------------------------------
// Training a tiny attention-only model (c_src/train.c)
// ---------------------------------------------------------------------------

/** Tasks a trainer can learn, in attn_task order (c_src/attention.h). */
export const TRAIN_TASKS = Object.freeze(['previous-token', 'induction', 'reverse']);

/** Per task, the sizes and rate that train well; createTrainer's defaults. */
export const TRAIN_DEFAULTS = Object.freeze({
  'previous-token': Object.freeze({ layers: 1, heads: 1, dModel: 32, seqLen: 16, vocab: 16, batch: 16, lr: 0.01 }),
  induction: Object.freeze({ layers: 2, heads: 2, dModel: 32, seqLen: 32, vocab: 28, batch: 16, lr: 0.01 }),
  reverse: Object.freeze({ layers: 1, heads: 2, dModel: 32, seqLen: 16, vocab: 16, batch: 16, lr: 0.01 }),
});

/** The sizes a trainer accepts, [min, max] (c_src/train.c refuses the same). */
const TRAIN_LIMITS = Object.freeze({ layers: [1, 2], heads: [1, 4], dModel: [1, 64], seqLen: [4, 32], vocab: [2, 64], batch: [1, 32] });

const TRAINER_OPTIONS = ['task', 'layers', 'heads', 'dModel', 'seqLen', 'vocab', 'batch', 'lr', 'seed', 'causal', 'bug'];

/**
 * A tiny attention-only transformer and its optimiser, in the C core:
 * token and learned position embeddings, `layers` layers of multi-head
 * attention with residuals, a final LayerNorm, an unembedding, cross-entropy
 * on the positions the task can answer, AdamW. Data come from `seed`; the
 * same seed gives the same losses, bit for bit, on a given build.
 */
class Trainer {
  // Private, so that no assignment can change the sizes the wrapper lays
  // memory out by, nor the struct a call works on.
  #config; // frozen
  #lab;
  #generation; // the lab's instance the trainer lives in
  #ptr; // its struct in the core; 0 once freed
  #lastLoss = null; // the loss of the last step taken

  constructor(lab, options) {
    const opts = checkOptions(options, TRAINER_OPTIONS, 'createTrainer');
    const taskIndex = TRAIN_TASKS.indexOf(opts.task);
    if (typeof opts.task !== 'string' || taskIndex < 0) {
      fail('BAD_ARGUMENT', `task must be one of ${TRAIN_TASKS.join(', ')} (got ${show(opts.task)})`);
    }
    const config = { task: opts.task, ...TRAIN_DEFAULTS[opts.task] };
    for (const [name, [min, max]] of Object.entries(TRAIN_LIMITS)) {
      config[name] = checkInteger(opts[name], name, config[name], { min, max });
    }
    // The core reads lr in float32, where 1e-50 is 0.
    if (opts.lr !== undefined && (typeof opts.lr !== 'number' || !(Math.fround(opts.lr) > 0) || !Number.isFinite(opts.lr) || opts.lr > 1)) {
      const valid = typeof opts.lr === 'number' && opts.lr > 0 && opts.lr <= 1;
      fail('BAD_ARGUMENT', `lr must be a number in (0, 1] (got ${show(opts.lr)}${asFloat32(opts.lr, valid)})`);
    }
    config.lr = opts.lr ?? config.lr;
    config.seed = checkInteger(opts.seed, 'seed', 0, { max: 2 ** 32 - 1 });
    config.causal = checkBoolean(opts.causal, 'causal', true);
    config.bug = opts.bug === undefined || opts.bug === null || opts.bug === 'none' ? null : opts.bug;
    if (config.bug !== null && config.bug !== 'no-causal-mask') {
      fail('BAD_ARGUMENT', `a trainer takes only the bug "no-causal-mask" (got ${show(config.bug)})`);
    }
    this.#lab = lab;
    this.#config = Object.freeze(config);
    this.#generation = currentCore(lab).generation;
    this.#ptr = this.#core.exports.attn_train_create(taskIndex, config.layers, config.heads, config.dModel, config.seqLen,
      config.vocab, config.batch, config.lr, config.seed, config.causal ? 1 : 0, config.bug ? BUGS.indexOf(config.bug) : 0);
    if (!this.#ptr) this.#core.throwLastError();
  }

  /** The options it was made with, unset ones filled in: { task, layers, heads, dModel, seqLen, vocab, batch, lr, seed, causal, bug }. */
  get config() { return this.#config; }

  /** The trainer's struct in the core, 0 once freed: a page may test it to stop a training loop. */
  get ptr() { return this.#ptr; }

  #alive() {
    refuseIfGone(this.#ptr, this.#generation, this.#lab, 'trainer', 'create a new one with lab.createTrainer');
  }

  /** The lab's core: the trainer's own instance while #alive() passes. */
  get #core() { return currentCore(this.#lab); }

  /** Release the trainer's memory in the core. Safe to call twice, and after lab.reset(). */
  free() {
    if (this.#ptr && this.#generation === this.#core.generation) this.#core.exports.attn_train_free(this.#ptr);
    this.#ptr = 0;
  }

  /**
   * Take n optimiser steps (default 1), each on a fresh batch.
   * @returns {{ step: number, loss: number | null }} the step count so far
   *   and the training loss of the last step taken: with n = 0, the loss of
   *   an earlier call's last step, or null before the first step.
   */
  step(n = 1) {
    this.#alive();
    const count = checkInteger(n, 'n', 1, { min: 0, max: 100000 });
    if (count > 0) {
      const { exports } = this.#core;
      const before = exports.attn_train_step_count(this.#ptr);
      const layout = new Layout(this.#core).add('loss', 4).commit();
      const status = exports.attn_train_step(this.#ptr, layout.ptr('loss'), count);
      // A call stopped by a diverged step still took the steps before it;
      // the core leaves the loss of the last one taken.
      if (exports.attn_train_step_count(this.#ptr) > before) this.#lastLoss = this.#view(Float32Array, layout.ptr('loss'), 1)[0];
      this.#core.check(status);
    }
    return { step: this.#core.exports.attn_train_step_count(this.#ptr), loss: this.#lastLoss };
  }

  /**
   * Loss and accuracy on held-out batches (a seed of their own, the same
   * sequences on every call). Each position is predicted from its prefix
   * alone, as in generation, with the trainer's causal flag and without the
   * bug; ablated heads stay off. Only positions the task can answer count: for
   * induction, the repeated half.
   * @param [options] batches (default 4)
   * @returns {{ loss: number, accuracy: number }}
   */
  evaluate(options) {
    this.#alive();
    const { batches } = checkOptions(options, ['batches'], 'evaluate');
    const n = checkInteger(batches, 'batches', 4, { min: 1, max: 1000 });
    const layout = new Layout(this.#core).add('result', 8).commit();
    this.#core.check(this.#core.exports.attn_train_evaluate(this.#ptr, layout.ptr('result'), n));
    const [loss, accuracy] = this.#view(Float32Array, layout.ptr('result'), 2);
    return { loss, accuracy };
  }

  /**
   * Every head's attention probabilities on one sequence of seqLen tokens:
   * a fixed sample of the task when `tokens` is omitted (undefined or null),
   * and which keys each query was allowed to see in that run, both from the
   * core. Ablated heads' outputs are zeroed either way (their own maps are
   * still shown; the layers after them no longer see them).
   * @param [tokens] seqLen token ids
   * @param [options] as: 'evaluation' (default), the model as evaluate()
   *   runs it, with the trainer's causal flag and no bug; or 'training', as
   *   its training steps ran it, with the trainer's own rule and bug: with
   *   the bug 'no-causal-mask' every query sees every key, the token it
   *   must predict included.
   * @returns {{ tokens: number[], layers: { data: Float32Array, shape: [T, T] }[][],
   *   allowed: { data: Uint8Array, shape: [T, T] } }} layers[l][h] is head h
   *   of layer l (0-based), rows = queries; allowed: 1 where the run's rule
   *   let query i see key j.
   */
  attention(tokens, options) {
    this.#alive();
    const { as = 'evaluation' } = checkOptions(options, ['as'], 'attention');
    if (as !== 'evaluation' && as !== 'training') {
      fail('BAD_ARGUMENT', `as must be "evaluation" or "training" (got ${show(as)})`);
    }
    const { layers: L, heads: H, seqLen: T } = this.#config;
    const given = tokens !== undefined && tokens !== null;
    const ids = given ? this.#checkTokens(tokens, 'tokens') : null;
    const layout = new Layout(this.#core).add('weights', 4 * L * H * T * T).add('allowed', T * T).add('tokens', 4 * T).commit();
    if (given) this.#view(Int32Array, layout.ptr('tokens'), T).set(ids);
    this.#core.check(this.#core.exports.attn_train_attention_as(this.#ptr, layout.ptr('weights'), layout.ptr('allowed'),
      layout.ptr('tokens'), given ? 1 : 0, as === 'training' ? 1 : 0));
    const all = this.#view(Float32Array, layout.ptr('weights'), L * H * T * T);
    const layers = [];
    for (let l = 0; l < L; l++) {
      layers.push([]);
      for (let h = 0; h < H; h++) {
        const at = (l * H + h) * T * T;
        layers[l].push({ data: all.slice(at, at + T * T), shape: [T, T] });
      }
    }
    const allowed = { data: layout.getU8('allowed', T * T), shape: [T, T] };
    return { tokens: Array.from(this.#view(Int32Array, layout.ptr('tokens'), T)), layers, allowed };
  }

  /** Zero (on = true) or restore head `head` of layer `layer` (0-based) in evaluate and attention. */
  ablate(layer, head, on = true) {
    this.#alive();
    const l = checkInteger(layer, 'layer', undefined, { max: this.#config.layers - 1 });
    const h = checkInteger(head, 'head', undefined, { max: this.#config.heads - 1 });
    if (l === undefined || h === undefined) fail('BAD_ARGUMENT', 'ablate needs a layer and a head');
    this.#core.check(this.#core.exports.attn_train_ablate(this.#ptr, l, h, checkBoolean(on, 'on', true) ? 1 : 0));
  }

  /**
   * Layer `layer`'s attention (0-based) in setWeights' format: { qProj,
   * kProj, vProj, outProj }, each { weight (dModel, dModel) as (out, in),
   * bias: null } (the trainer's projections have no bias). A module from
   * createMultiHeadAttention({ dModel, numHeads: heads, bias: false }) with
   * these weights, run on layerInput(layer, tokens) with causal set as the
   * trainer's, gives the layer's maps from attention(tokens).
   */
  weights(layer) {
    const l = this.#checkLayer(layer);
    const params = this.parameters();
    return Object.fromEntries(PROJECTIONS.map((name, i) => [name,
      { weight: params[`l${l + 1}.${['wq', 'wk', 'wv', 'wo'][i]}`], bias: null }]));
  }

  /**
   * The residual stream entering attention layer `layer` (0-based) for
   * `tokens` (1 to seqLen ids): the embedding, token plus position, for
   * layer 0; after the earlier layers for layer 1 (the trainer's causal
   * flag, no bug, ablated heads off, as in attention()). Computed by the core.
   * @returns {{ data: Float32Array, shape: [1, number, number] }} (1, T, dModel)
   */
  layerInput(layer, tokens) {
    const l = this.#checkLayer(layer);
    const { seqLen, vocab: V, dModel: C } = this.#config;
    const t = toTensor(tokens, 'tokens', 'float64'); // as doubles: 1 + 1e-8 is not the id 1
    if (t.shape.length !== 1 || t.shape[0] < 1 || t.shape[0] > seqLen) {
      fail('SHAPE_MISMATCH', `tokens must be a list of 1 to ${seqLen} ids; got shape ${describe(t.shape)}`);
    }
    const bad = t.data.findIndex((v) => !Number.isInteger(v) || v < 0 || v >= V);
    if (bad >= 0) fail('BAD_ARGUMENT', `tokens entry ${bad} is ${t.data[bad]}; ids must be integers from 0 to ${V - 1}`);
    const T = t.shape[0];
    const layout = new Layout(this.#core).add('x', 4 * T * C).add('tokens', 4 * T).commit();
    this.#view(Int32Array, layout.ptr('tokens'), T).set(t.data);
    this.#core.check(this.#core.exports.attn_train_layer_input(this.#ptr, layout.ptr('x'), layout.ptr('tokens'), T, l));
    return { data: this.#view(Float32Array, layout.ptr('x'), T * C).slice(), shape: [1, T, C] };
  }

  /** A layer index, 0-based, of this trainer. */
  #checkLayer(layer) {
    this.#alive();
    const L = this.#config.layers;
    if (typeof layer !== 'number' || !Number.isInteger(layer) || layer < 0 || layer >= L) {
      fail('BAD_ARGUMENT', `layer must be an integer from 0 to ${L - 1} (got ${show(layer)})`);
    }
    return layer;
  }

  /** The parameters by name: { wte, wpe, 'l1.wq', …, 'lnf.weight', 'lnf.bias', wu }, each { data, shape }. */
  parameters() {
    this.#alive();
    return this.#readTensors(this.#core.exports.attn_train_params(this.#ptr));
  }

  /**
   * For checking the backward pass: the loss on one batch and the gradient
   * of every parameter, without an update.
   * @param tokens (batch, seqLen) token ids
   * @param targets (batch, seqLen) token ids, -1 where a position has none
   * @returns {{ loss: number, gradients: Object<string, { data, shape }> }}
   */
  gradients(tokens, targets) {
    this.#alive();
    const { batch: B, seqLen: T } = this.#config;
    const ids = this.#checkTokens(tokens, 'tokens', B);
    const want = this.#checkTokens(targets, 'targets', B, -1);
    const layout = new Layout(this.#core).add('loss', 4).add('tokens', 4 * B * T).add('targets', 4 * B * T).commit();
    this.#view(Int32Array, layout.ptr('tokens'), B * T).set(ids);
    this.#view(Int32Array, layout.ptr('targets'), B * T).set(want);
    this.#core.check(this.#core.exports.attn_train_gradients(this.#ptr, layout.ptr('loss'), layout.ptr('tokens'), layout.ptr('targets')));
    const loss = this.#view(Float32Array, layout.ptr('loss'), 1)[0];
    // A target whose probability underflowed to 0 in float32 gives an infinite loss.
    if (!Number.isFinite(loss)) fail('OVERFLOW', 'the loss is not finite on this batch: the model diverged; lower lr and start again');
    return { loss, gradients: this.#readTensors(this.#core.exports.attn_train_grads(this.#ptr)) };
  }

  /** A view of the core's memory, made after the last call (memory may have grown). */
  #view(Type, ptr, length) {
    return new Type(this.#core.exports.memory.buffer, ptr, length);
  }

  /** ids (rows?, seqLen) as a flat array of integers in [min, vocab). */
  #checkTokens(x, name, rows = 0, min = 0) {
    const { seqLen: T, vocab: V } = this.#config;
    const t = toTensor(x, name, 'float64'); // as doubles: 1 + 1e-8 is not the id 1
    const shape = rows ? [rows, T] : [T];
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      fail('SHAPE_MISMATCH', `${name} must have shape ${describe(shape)}; got ${describe(t.shape)}`);
    }
    const bad = t.data.findIndex((v) => !Number.isInteger(v) || v < min || v >= V);
    if (bad >= 0) fail('BAD_ARGUMENT', `${name} entry ${bad} is ${t.data[bad]}; ids must be integers from ${min} to ${V - 1}`);
    return Int32Array.from(t.data);
  }

  /** Named copies of the tensors in a parameter-shaped block at ptr. */
  #readTensors(ptr) {
    const { exports } = this.#core;
    const layout = new Layout(this.#core).add('info', 12).commit();
    const out = {};
    for (let i = 0; exports.attn_train_tensor(this.#ptr, i, layout.ptr('info')) === 0; i++) {
      const [offset, rows, cols] = this.#view(Int32Array, layout.ptr('info'), 3);
      const namePtr = exports.attn_train_tensor_name(this.#ptr, i);
      const bytes = this.#view(Uint8Array, namePtr, 32);
      const name = new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0)));
      out[name] = { data: this.#view(Float32Array, ptr + 4 * offset, rows * cols).slice(), shape: [rows, cols] };
    }
    return out;
  }
}

// ---------------------------------------------------------------------------
// Mask helpers: building masks and converting conventions (input only)
// ---------------------------------------------------------------------------

/** Allowed causal mask (Tq, Tk): query i may see keys j <= i. */
export function causalMask(Tq, Tk = Tq) {
  if (checkInteger(Tq, 'Tq', undefined, { min: 1 }) === undefined) fail('BAD_ARGUMENT', 'Tq is required');
  checkInteger(Tk, 'Tk', undefined, { min: 1 });
  if (Tq * Tk > MAX_REQUEST_BYTES) fail('TOO_LARGE', `a causal mask of ${Tq} x ${Tk} needs ${Tq * Tk} bytes; the limit is ${MAX_REQUEST_BYTES}`);
  const data = new Uint8Array(Tq * Tk);
  for (let i = 0; i < Tq; i++) for (let j = 0; j <= Math.min(i, Tk - 1); j++) data[i * Tk + j] = 1;
  return { data, shape: [Tq, Tk] };
}

/** Allowed padding mask (B, 1, 1, T) from integer token ids (B, T): keys that are not padId (an integer, default 0). */
export function paddingMask(tokenIds, padId = 0) {
  // Read as doubles: ids past 2^24 are compared exactly, as padId is.
  const ids = toTensor(tokenIds, 'tokenIds', 'float64');
  if (ids.shape.length !== 2) fail('BAD_ARGUMENT', `tokenIds must be (B, T); got ${describe(ids.shape)}`);
  const pad = checkInteger(padId, 'padId', 0, { min: -(2 ** 31) });
  const [B, T] = ids.shape;
  const bad = ids.data.findIndex((id) => !Number.isInteger(id));
  if (bad >= 0) fail('BAD_ARGUMENT', `tokenIds entry [${Math.floor(bad / T)}, ${bad % T}] is ${ids.data[bad]}; token ids must be integers`);
  return { data: Uint8Array.from(ids.data, (id) => (id === pad ? 0 : 1)), shape: [B, 1, 1, T] };
}

/**
 * The one place masks change convention. Blocked masks (True = ignore) are
 * what nn.MultiheadAttention's masks use; allowed masks (True = attend) are
 * what this lab and PyTorch's scaled_dot_product_attention use.
 */
export function allowedFromBlocked(blocked) {
  const m = toTensor(blocked, 'blocked', 'mask');
  return { data: m.data.map((b) => 1 - b), shape: m.shape };
}

/** Blocked mask (1 = ignore) from an allowed mask (1 = attend). */
export function blockedFromAllowed(allowed) {
  const m = toTensor(allowed, 'allowed', 'mask');
  return { data: m.data.map((b) => 1 - b), shape: m.shape };
}

/** Additive mask from an allowed mask: 0 where allowed, -Infinity where blocked. */
export function additiveFromAllowed(allowed) {
  const m = toTensor(allowed, 'allowed', 'mask');
  return { data: Float32Array.from(m.data, (b) => (b ? 0 : -Infinity)), shape: m.shape };
}

/**
 * A lookup `allowed(...index)` into an allowed mask (nested array or
 * `{ data, shape }`) broadcast to `target`, with the checks and numpy rules
 * lab.sdpa applies to its mask. Throws an AttentionError where sdpa would,
 * and the lookup throws BAD_ARGUMENT for an index that is not one integer
 * per target dim, within it.
 */
export function maskReader(mask, target, name = 'mask') {
  if (typeof name !== 'string') fail('BAD_ARGUMENT', `maskReader's name must be a string (got ${show(name)})`);
  const m = toTensor(mask, name, 'mask');
  const dims = reading('target', () => readShape(target, 'target'));
  dims.forEach((d, i) => {
    if (!Number.isInteger(d) || d < 1) fail('BAD_ARGUMENT', `target dim ${i} must be a positive integer (shape ${describe(dims)})`);
  });
  const strides = broadcastStrides(m.shape, dims, name);
  return (...index) => {
    if (index.length !== dims.length) {
      fail('BAD_ARGUMENT', `${name} needs one index per dim of ${describe(dims)} (${dims.length}); got ${index.length}`);
    }
    let at = 0;
    for (let d = 0; d < dims.length; d++) {
      const i = index[d];
      if (!Number.isInteger(i) || i < 0 || i >= dims[d]) {
        fail('BAD_ARGUMENT', `${name} index ${d} is ${show(i)}; it must be an integer from 0 to ${dims[d] - 1}`);
      }
      at += i * strides[d];
    }
    return m.data[at] === 1;
  };
}
