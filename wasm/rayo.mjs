// SPDX-License-Identifier: MIT
// rayo.mjs - the JavaScript API of rayo's WebAssembly build (an ES module
// for browsers, workers and node).
//
//   import { loadRayo, Settings } from './rayo/rayo.mjs';
//   const rayo = await loadRayo();                 // the core + the backend side modules
//   const ctx = rayo.open();                       // or rayo.open(settings)
//   console.table(ctx.backends());                 // name, status, reason, device, rank, threads...
//   const y = ctx.add(a, b);                       // Float32Array in, Float32Array out
//   const s = ctx.dot(a, b);                       // reductions return numbers
//   const C = await ctx.matmulAsync(A, B, m, n, k); // may run on the GPU (webgpu)
//   const buf = ctx.buffer(values);                // device buffers (the GPU's where there is one)
//   const batch = ctx.batch();                     // ops on buffers, one submission
//   batch.record('relu', { a: buf, y: buf, n: values.length });
//   await batch.submit();  const y = await buf.read();
//   ctx.close();
//
// Settings are rayo.conf's (order, allow/deny, thresholds...) with no config
// file: build them with Settings#set (or pass INI text, or a plain object
// {section: {key: value}}) and give them to open().  Heap arrays
// (ctx.array) let benchmarks run ops without copying operands each call.
//
// The core (rayo-core.mjs/.wasm) is a main module built without SIMD; the
// backends are side modules in plugins/: the core's probe asks the engine
// whether it validates SIMD128 code and loads rayo-wasm.so only then;
// rayo-scalar.so runs everywhere.  rayo-webgpu.so runs ops on the GPU
// through WebGPU where the engine grants an adapter; its results are read
// back asynchronously, so it serves the async forms (ctx.NAMEAsync), which
// call the core through JSPI (WebAssembly.promising): the plugin suspends
// the WebAssembly stack while it awaits the GPU.  The synchronous forms
// never wait: there the webgpu plugin declines and the CPU backends run.

import createRayoCore from './rayo-core.mjs';

/** The side modules loaded by default, from `${base}plugins/`. */
export const DEFAULT_PLUGINS = ['rayo-scalar.so', 'rayo-wasm.so', 'rayo-webgpu.so'];

/** Where the core looks for plugins in its in-memory file system. */
const PLUGIN_DIR = '/plugins';

const isNode = typeof process === 'object' && !!(process.versions && process.versions.node);

/** Whether this engine validates a module using a SIMD128 instruction (the
 *  same check the core makes). */
export function engineHasSimd128() {
  const module = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 10, 23,
    1, 21, 0, 253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 26, 11]);
  try {
    return WebAssembly.validate(module);
  } catch (e) {
    return false;
  }
}

/** Why this page cannot run the threaded core (threads/: -pthread, shared
 *  memory), or null when it can: a page must be cross-origin isolated
 *  (COOP and COEP headers) to have SharedArrayBuffer. */
export function whyNoThreads() {
  if (isNode) return 'node: the JS API runs the single-threaded core there';
  if (typeof crossOriginIsolated !== 'undefined' && !crossOriginIsolated) return 'not cross-origin isolated';
  if (typeof SharedArrayBuffer === 'undefined') return 'no SharedArrayBuffer';
  return null;
}

// The threaded core ({factory, base}: base/threads/, or a program's
// threaded module, options.threadedCore: its folder then holds its .wasm,
// .worker.js and plugins/), or {why} not.
async function threadedCore(base, options) {
  const why = options.core && !options.threadedCore ? 'this program\'s module is single-threaded'
    : options.threads === false ? 'threads: false' : whyNoThreads();
  if (why) return { why };
  const url = options.threadedCore ? new URL(options.threadedCore) : new URL('threads/rayo-core.mjs', base);
  try {
    const { default: factory } = await import(url.href);
    return { factory, base: new URL('./', url) };
  } catch (e) {
    return { why: `no threaded core (${e && e.message ? e.message : e})` };
  }
}

// The threaded core's side modules: Emscripten 3.1.6 loads a library
// dlopen'd after start in the calling thread only, so every thread loads them
// at start (Module.dynamicLibraries, by their paths in the in-memory file
// system, where the core's loader then finds them loaded: see
// wasm/threads-pre.js).  A module this engine cannot compile (no SIMD128)
// is left to dlopen, which records why.
function loadInEveryThread(moduleArgs, names, bytes) {
  moduleArgs.dynamicLibraries = names.filter((_, i) => WebAssembly.validate(bytes[i]))
    .map((name) => `${PLUGIN_DIR}/${name}`);
}

async function readBytes(url) {
  if (isNode && url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return new Uint8Array(await readFile(url));
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** The settings of a context: rayo.conf sections and keys, as a setter. */
export class Settings {
  constructor(init) {
    this.values = new Map(); // "section\0key" -> value
    if (typeof init === 'string') this.parse(init);
    else if (init instanceof Settings) init.values.forEach((v, k) => this.values.set(k, v));
    else if (init) {
      for (const [section, keys] of Object.entries(init))
        for (const [key, value] of Object.entries(keys)) this.set(section, key, value);
    }
  }

  /** set('dispatch', 'order', 'wasm, scalar'); arrays are joined with commas;
   *  null or undefined removes the key. */
  set(section, key, value) {
    const name = `${section}\0${key}`;
    if (value === null || value === undefined) this.values.delete(name);
    else this.values.set(name, Array.isArray(value) ? value.join(', ') : String(value));
    return this;
  }

  get(section, key) {
    return this.values.get(`${section}\0${key}`);
  }

  parse(ini) {
    let section = '';
    for (const raw of ini.split('\n')) {
      const line = raw.trim();
      if (!line || line[0] === '#' || line[0] === ';') continue;
      const header = /^\[(.+)\]$/.exec(line);
      if (header) section = header[1].trim();
      else if (line.includes('=')) {
        const at = line.indexOf('=');
        this.set(section, line.slice(0, at).trim(), line.slice(at + 1).trim());
      }
    }
    return this;
  }

  /** The INI text given to the core (rayo_options.settings). */
  toString() {
    const bySection = new Map();
    for (const [name, value] of this.values) {
      const [section, key] = name.split('\0');
      if (/[\n\r]/.test(value)) throw new Error(`setting ${section}.${key}: a value is one line`);
      if (!bySection.has(section)) bySection.set(section, []);
      bySection.get(section).push(`${key} = ${value}`);
    }
    return [...bySection].map(([s, lines]) => `[${s}]\n${lines.join('\n')}\n`).join('');
  }
}

/** A Float32Array in the core's heap: operands of run() without copies. */
class HeapArray {
  constructor(core, length) {
    this.core = core;
    this.length = length;
    // at least one float: an empty operand is still a valid pointer
    this.ptr = core._malloc(Math.max(length, 1) * 4);
    if (!this.ptr) throw new Error(`rayo: cannot allocate ${length} floats`);
  }

  /** A view of the floats (renew it after any call: the heap may grow). */
  view() {
    return new Float32Array(this.core.HEAPU8.buffer, this.ptr, this.length);
  }

  set(values) {
    this.view().set(values);
    return this;
  }

  toArray() {
    return this.view().slice();
  }

  free() {
    if (this.ptr) this.core._free(this.ptr);
    this.ptr = 0;
  }
}

const ACTIVATIONS = { none: 0, relu: 1, gelu: 2, silu: 3, tanh: 4, sigmoid: 5 };

/** Loads the core and the backend side modules.
 *  options.base: URL of the folder holding rayo-core.* and plugins/
 *  (default: this module's folder); options.plugins: file names;
 *  options.webgpu: false to leave WebGPU alone, or the options of
 *  navigator.gpu.requestAdapter (default {}); options.core: in a browser,
 *  the factory of another main module built with the core and this API's
 *  glue (a program: see runMain), its .wasm in options.coreBase, and
 *  options.threadedCore: the URL of that program's threaded module, taken
 *  where the page could run it; options.threads: false to keep to the
 *  single-threaded core where the page could run the threaded one (threads/);
 *  options.env: environment variables of the module ({RAYO_THREADS: '1'}). */
export async function loadRayo(options = {}) {
  const base = new URL(options.base || './', import.meta.url);
  const plugins = options.plugins || DEFAULT_PLUGINS;
  const threaded = await threadedCore(base, options);
  const variantBase = threaded.factory ? threaded.base : base;
  const coreBase = options.core && !threaded.factory ? new URL(options.coreBase) : variantBase;
  const moduleArgs = {
    print: options.print || ((s) => console.log(s)),
    printErr: options.printErr || ((s) => console.warn(s)),
    locateFile: (name) => new URL(name, coreBase).href,
  };
  // the environment the core reads (RAYO_THREADS...), set before its start
  if (options.env) moduleArgs.preRun = [() => Object.assign(moduleArgs.ENV, options.env)];
  // node: hand over the bytes (the module's own loader would try fetch)
  if (isNode) moduleArgs.wasmBinary = await readBytes(new URL('rayo-core.wasm', base));
  const pluginBytes = await Promise.all(plugins.map((name) => readBytes(new URL(`plugins/${name}`, variantBase))));
  if (threaded.factory) loadInEveryThread(moduleArgs, plugins, pluginBytes);
  const core = await (threaded.factory || options.core || createRayoCore)(moduleArgs);
  // the webgpu plugin's device, acquired now: its probe (in rayo_open) is synchronous
  if (options.webgpu !== false) await core.rayoWebgpu.init(options.webgpu || {});
  core.FS.mkdirTree(PLUGIN_DIR);
  const preload = {};
  for (let i = 0; i < plugins.length; i++) {
    const path = `${PLUGIN_DIR}/${plugins[i]}`;
    core.FS.writeFile(path, pluginBytes[i]);
    if (threaded.factory) {
      preload[plugins[i]] = moduleArgs.dynamicLibraries.includes(path) ? 'loaded in every thread' : 'not compiled';
      continue;
    }
    // Compile and instantiate now, asynchronously: browsers refuse to
    // compile a large module synchronously on the main thread, which the
    // core's dlopen would do.  dlopen then finds the module loaded.  A
    // module the engine refuses (no SIMD128) is left to dlopen, which
    // records the reason.
    try {
      await core.loadDynamicLibrary(path, { loadAsync: true, global: false, nodelete: true, fs: core.FS });
      preload[plugins[i]] = 'compiled';
    } catch (e) {
      preload[plugins[i]] = `not compiled: ${e && e.message ? e.message : e}`;
    }
  }
  return new Rayo(core, preload, threaded.why || null);
}

class Rayo {
  constructor(core, preload, whyOneThread) {
    this.core = core;
    this.preload = preload;
    this.whyOneThread = whyOneThread; // null: the threaded core
    this.version = core.UTF8ToString(core._rayo_js_version());
    this.ops = this.takeJson(core._rayo_js_ops_json());
    this.opByName = new Map(this.ops.map((op) => [op.name, op]));
    this.engineSimd128 = engineHasSimd128();
    this.webgpu = core.rayoWebgpu.info();
    this.queue = Promise.resolve(); // async calls, one at a time (one C stack)
    this.pending = 0;
  }

  /** Calls export `name` so that the webgpu plugin may await the GPU in it;
   *  calls run one after the other. */
  callAsync(name, ...args) {
    this.pending++;
    const result = this.queue.then(() => this.core.rayoWebgpu.callAsync(name, ...args));
    this.queue = result.catch(() => {}).finally(() => { this.pending--; });
    return result;
  }

  /** Runs the module's main (options.core of loadRayo) with argv (argv[0]
   *  the program's name) as an async call; resolves to its exit status. */
  async runMain(argv) {
    const ptrs = argv.map((s) => this.mallocString(s));
    const array = this.core._malloc(4 * (ptrs.length + 1));
    new Uint32Array(this.core.HEAPU8.buffer, array, ptrs.length + 1).set([...ptrs, 0]);
    try {
      return await this.callAsync('main', argv.length, array);
    } catch (e) {
      if (e && e.name === 'ExitStatus') return e.status;
      throw e;
    } finally {
      for (const p of ptrs) this.core._free(p);
      this.core._free(array);
    }
  }

  /** Throws where a synchronous call would enter the core while an async
   *  one is suspended in it. */
  checkIdle(what) {
    if (this.pending) throw new Error(`rayo ${what}: an async call is in progress: await it first`);
  }

  mallocString(s) {
    if (s === null || s === undefined) return 0;
    const size = this.core.lengthBytesUTF8(s) + 1;
    const ptr = this.core._malloc(size);
    this.core.stringToUTF8(s, ptr, size);
    return ptr;
  }

  takeJson(ptr) {
    if (!ptr) throw new Error('rayo: out of memory');
    const text = this.core.UTF8ToString(ptr);
    this.core._free(ptr);
    return JSON.parse(text);
  }

  withString(s, fn) {
    if (s === null || s === undefined) return fn(0);
    const size = this.core.lengthBytesUTF8(s) + 1;
    const ptr = this.core._malloc(size);
    this.core.stringToUTF8(s, ptr, size);
    try {
      return fn(ptr);
    } finally {
      this.core._free(ptr);
    }
  }

  lastError() {
    return this.core.UTF8ToString(this.core._rayo_js_last_error());
  }

  /** Opens a context.  settings: a Settings, INI text or {section: {key: value}}. */
  open(settings) {
    const text = settings === undefined ? '' : new Settings(settings).toString();
    const ctx = this.withString(text, (ptr) => this.core._rayo_js_open(ptr));
    if (!ctx) throw new Error(`rayo_open: ${this.lastError()}`);
    return new Context(this, ctx);
  }
}

class Context {
  constructor(rayo, handle) {
    this.rayo = rayo;
    this.core = rayo.core;
    this.handle = handle;
    for (const op of rayo.ops) {
      if (!(op.name in this)) this[op.name] = (...args) => this.call(op, args);
      if (!(`${op.name}Async` in this)) this[`${op.name}Async`] = (...args) => this.callAsync(op, args);
    }
  }

  close() {
    if (this.handle) this.core._rayo_js_close(this.handle);
    this.handle = 0;
  }

  /** Every plugin found, loaded or not, with the reason when not. */
  backends() {
    const list = this.rayo.takeJson(this.core._rayo_js_backends_json(this.handle));
    const threads = this.threads();
    for (const b of list) if (b.cpu && b.status === 'loaded') b.threads = threads;
    return list;
  }

  /** The CPU backends' threads: a number, or "1 (why)" on one thread. */
  threads() {
    const n = this.core._rayo_js_threads(this.handle);
    return n > 1 ? n : `${n} (${this.rayo.whyOneThread || 'one CPU'})`;
  }

  /** {op: backend} for calls of work size `size`. */
  dispatch(size = 4096) {
    return this.rayo.takeJson(this.core._rayo_js_dispatch_json(this.handle, size));
  }

  /** The effective value of a setting, or null. */
  config(section, key) {
    return this.rayo.withString(section, (s) => this.rayo.withString(key, (k) => {
      const ptr = this.core._rayo_js_config_get(this.handle, s, k);
      return ptr ? this.core.UTF8ToString(ptr) : null;
    }));
  }

  /** A device buffer of `length` floats (or holding `values`: numbers, or
   *  any typed array, copied byte for byte, e.g. quantized blocks) on
   *  options.backend, else where the core puts it (the first GPU backend
   *  with a device, else a CPU one). */
  buffer(lengthOrValues, options = {}) {
    this.rayo.checkIdle('buffer');
    const values = typeof lengthOrValues === 'number' ? null : asBytes(lengthOrValues);
    const length = values ? Math.ceil(values.length / 4) : lengthOrValues;
    const ptr = this.rayo.withString(options.backend || null,
      (be) => this.core._rayo_js_buffer_create(this.handle, be, Math.max(length, 1) * 4));
    if (!ptr) throw new Error(`rayo buffer: ${this.rayo.lastError()}`);
    const buf = new DeviceBuffer(this, ptr, length);
    if (values) buf.write(values);
    return buf;
  }

  /** A batch: ops on device buffers of one backend, run by one submission. */
  batch(options = {}) {
    this.rayo.checkIdle('batch');
    const ptr = this.rayo.withString(options.backend || null, (be) => this.core._rayo_js_batch_create(this.handle, be));
    if (!ptr) throw new Error(`rayo batch: ${this.rayo.lastError()}`);
    return new Batch(this, ptr);
  }

  /** A typed array's bytes in the heap (a HeapArray of whole floats). */
  bytes(typed) {
    const bytes = asBytes(typed);
    const h = new HeapArray(this.core, Math.ceil(bytes.length / 4));
    new Uint8Array(this.core.HEAPU8.buffer, h.ptr, bytes.length).set(bytes);
    return h;
  }

  /** A Float32Array of `length` floats in the heap (from `values` if given). */
  array(lengthOrValues) {
    const values = typeof lengthOrValues === 'number' ? null : lengthOrValues;
    const a = new HeapArray(this.core, values ? values.length : lengthOrValues);
    if (values) a.set(values);
    return a;
  }

  /** Runs one op on heap arrays: {a, b, c, y} (HeapArray or null), sizes
   *  {m, n, k}, {alpha, beta, flags, dtypes (RAYO_DTYPES, rayo.h; 0: all
   *  f32)}; backend: one backend only (no
   *  fallback), else the dispatch chain.  Throws on failure. */
  run(opName, call, backend) {
    this.rayo.checkIdle(opName);
    const op = this.opNamed(opName);
    const status = this.rayo.withString(backend || null, (be) => this.core._rayo_js_run(...runArgs(this.handle, be, op, call)));
    this.checkStatus(status, opName, backend);
  }

  /** run() as a Promise: the call may run on the GPU (webgpu). */
  async runAsync(opName, call, backend) {
    const op = this.opNamed(opName);
    const be = this.rayo.mallocString(backend || null);
    try {
      const status = await this.rayo.callAsync('rayo_js_run', ...runArgs(this.handle, be, op, call));
      this.checkStatus(status, opName, backend);
    } finally {
      if (be) this.core._free(be);
    }
  }

  opNamed(opName) {
    const op = this.rayo.opByName.get(opName);
    if (!op) throw new Error(`rayo: no op "${opName}"`);
    return op;
  }

  checkStatus(status, opName, backend) {
    if (status !== 0) {
      const why = this.core.UTF8ToString(this.core._rayo_js_strerror(status));
      throw new Error(`rayo ${opName}${backend ? ` on ${backend}` : ''}: ${why}: ${this.rayo.lastError()}`);
    }
  }

  /** ctx.NAME(...) for every op: plain arrays in, a new Float32Array (or a
   *  number for reductions) out.  The last argument may be an options object
   *  with {backend} (matmul and gemv read their own options from it too). */
  call(op, args) {
    this.rayo.checkIdle(op.name);
    const { call, backend, held, take } = this.prepare(op, args);
    try {
      this.run(op.name, call, backend);
      return take();
    } finally {
      held.forEach((h) => h.free());
    }
  }

  /** ctx.NAMEAsync(...): call() as a Promise, for every op; the call may
   *  run on the GPU (webgpu). */
  async callAsync(op, args) {
    const { call, backend, held, take } = this.prepare(op, args);
    try {
      await this.runAsync(op.name, call, backend);
      return take();
    } finally {
      held.forEach((h) => h.free());
    }
  }

  /** The heap operands of ctx.NAME(...args) and how to read the result. */
  prepare(op, args) {
    let backend;
    const last = args[args.length - 1];
    if (last && typeof last === 'object' && !ArrayBuffer.isView(last) && !Array.isArray(last)) {
      backend = last.backend;
      if (op.class !== 'matmul' && op.class !== 'gemv') args = args.slice(0, -1);
    }
    const held = [];
    const hold = (h) => {
      held.push(h);
      return h;
    };
    const arr = (x) => (x === null || x === undefined ? null : hold(this.array(x)));
    try {
      const { call, out, result } = buildCall(op, args, arr, (n) => arr(new Float32Array(n)));
      // typed arrays other than Float32Array go in as their bytes (int32
      // positions, f16 caches); rope's and attention's parameters as doubles
      for (const [key, x] of Object.entries(call.raw || {})) call[key] = hold(this.bytes(x));
      const params = paramValues(call);
      if (params) call.params = hold(this.bytes(Float64Array.from(params)));
      const take = () => {
        if (result === 'float') return out.view()[0];
        if (result === 'index') return new Uint32Array(this.core.HEAPU8.buffer, out.ptr, 1)[0];
        return out.toArray();
      };
      return { call, backend, held, take };
    } catch (e) {
      held.forEach((h) => h.free());
      throw e;
    }
  }
}

/** Floats in a backend's memory (rayo_buffer). */
class DeviceBuffer {
  constructor(ctx, ptr, length) {
    this.ctx = ctx;
    this.ptr = ptr;
    this.length = length;
    this.backend = ctx.core.UTF8ToString(ctx.core._rayo_js_buffer_backend(ptr));
  }

  /** Writes values (numbers: floats; a typed array: its bytes) at element
   *  `offset` (no waiting). */
  write(values, offset = 0) {
    this.ctx.rayo.checkIdle('buffer.write');
    const bytes = asBytes(values);
    const heap = this.ctx.array(Math.ceil(bytes.length / 4));
    try {
      new Uint8Array(this.ctx.core.HEAPU8.buffer, heap.ptr, bytes.length).set(bytes);
      this.ctx.checkStatus(this.ctx.core._rayo_js_buffer_write(this.ptr, offset * 4, heap.ptr, bytes.length), 'buffer.write');
    } finally {
      heap.free();
    }
  }

  /** Reads `length` floats from element `offset` (a Promise: a GPU answers later). */
  async read(length = this.length, offset = 0) {
    const heap = this.ctx.array(length);
    try {
      const status = await this.ctx.rayo.callAsync('rayo_js_buffer_read', this.ptr, offset * 4, heap.ptr, length * 4);
      this.ctx.checkStatus(status, 'buffer.read');
      return heap.toArray();
    } finally {
      heap.free();
    }
  }

  free() {
    if (this.ptr) this.ctx.core._rayo_js_buffer_destroy(this.ptr);
    this.ptr = 0;
  }
}

/** The bytes of a typed array (as they are), or of numbers as floats. */
function asBytes(values) {
  if (ArrayBuffer.isView(values)) return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  return new Uint8Array(Float32Array.from(values).buffer);
}

/** Ops recorded on device buffers, run by one submission (rayo_batch). */
// rope's and attention's parameters (rayo.h's structs, camelCase; absent
// values 0), in the order rayo-js.c reads them
const ROPE_KEYS = ['mode', 'rotDims', 'freqBase', 'freqScale', 'nHeads', 'headDim', 'headStrideX', 'headStrideY'];
const ATTENTION_KEYS = ['flags', 'kvDtype', 'nQ', 'nKv', 'nHeads', 'nKvHeads', 'headDim', 'scale', 'qToken', 'qHead',
  'kToken', 'kHead', 'vToken', 'vHead', 'oToken', 'oHead'];
const STEP_KV_LENGTH = 1;
const DTYPE_I32 = 3; // rayo_dtype
function paramValues(call) {
  const [p, keys] = call.rope ? [call.rope, ROPE_KEYS] : call.attention ? [call.attention, ATTENTION_KEYS] : [null, null];
  return p && keys.map((key) => Number(p[key] || 0));
}

class Batch {
  constructor(ctx, ptr) {
    this.ctx = ctx;
    this.ptr = ptr;
  }

  /** record(op, {a, b, c, y: DeviceBuffer or {buf, offset, step}
   *  (offset at step 0 and its move per unit of step, in 4-byte elements),
   *  m, n, k, alpha, beta, flags, dtypes, rope, attention, kvStep}): dtypes
   *  as RAYO_DTYPES (rayo.h), 0 or absent: all f32; rope, attention: their
   *  parameters ({mode, rotDims, freqBase, ...}: ROPE_KEYS, ATTENTION_KEYS);
   *  kvStep: attention's n_kv (and k) grow by the batch's step. */
  record(opName, call) {
    const { core, rayo } = this.ctx;
    rayo.checkIdle('batch.record');
    const op = this.ctx.opNamed(opName);
    const words = core._malloc(48 + 8 * ATTENTION_KEYS.length);
    try {
      const params = paramValues(call);
      if (params) new Float64Array(core.HEAPU8.buffer, words + 48, params.length).set(params);
      const u32 = new Uint32Array(core.HEAPU8.buffer, words, 12);
      ['a', 'b', 'c', 'y'].forEach((name, i) => {
        const x = call[name];
        u32[i] = x ? (x.buf || x).ptr : 0;
        u32[4 + i] = x && x.buf ? (x.offset || 0) * 4 : 0;
        u32[8 + i] = x && x.buf ? (x.step || 0) * 4 : 0;
      });
      const status = core._rayo_js_batch_record(this.ptr, op.id, call.flags || 0, call.dtypes || 0, call.m || 0, call.n || 0,
        call.k || 0, call.alpha || 0, call.beta || 0, words, words + 16, words + 32, params ? words + 48 : 0,
        call.kvStep ? STEP_KV_LENGTH : 0);
      this.ctx.checkStatus(status, `batch.record(${opName})`);
    } finally {
      core._free(words);
    }
    return this;
  }

  /** The step the next submits run at (replay: a batch is recorded once
   *  and submitted again at each step). */
  setStep(step) {
    this.ctx.rayo.checkIdle('batch.setStep');
    this.ctx.checkStatus(this.ctx.core._rayo_js_batch_set_step(this.ptr, step), 'batch.setStep');
    return this;
  }

  /** Runs the recorded ops; resolves when they are done (again after
   *  setStep: replay). */
  async submit() {
    this.ctx.checkStatus(await this.ctx.rayo.callAsync('rayo_js_batch_run', this.ptr), 'batch.submit');
  }

  free() {
    if (this.ptr) this.ctx.core._rayo_js_batch_destroy(this.ptr);
    this.ptr = 0;
  }
}

/** The arguments of rayo_js_run for a call on heap arrays. */
function runArgs(handle, be, op, call) {
  const ptr = (x) => (x ? x.ptr : 0);
  return [handle, be, op.id, call.flags || 0, call.dtypes || 0, call.m || 0, call.n || 0, call.k || 0,
    call.alpha || 0, call.beta || 0, ptr(call.a), ptr(call.b), ptr(call.c), ptr(call.y), ptr(call.params)];
}

/** The rayo_call of an op from the arguments of ctx.NAME(...). */
function buildCall(op, args, arr, zeros) {
  const len = (x) => x.length;
  switch (op.class) {
  case 'binary': {
    const [a, b] = args;
    const y = zeros(len(a));
    return { call: { a: arr(a), b: arr(b), y, n: len(a) }, out: y };
  }
  case 'unary': case 'unary_p': case 'unary_p2': {
    const [x, alpha = 0, beta = 0] = args;
    const y = zeros(len(x));
    return { call: { a: arr(x), y, n: len(x), alpha, beta }, out: y };
  }
  case 'axpy': {
    const [x, y0, alpha] = args;
    const y = arr(y0);
    return { call: { a: arr(x), y, n: len(x), alpha }, out: y };
  }
  case 'reduce': case 'reduce2': {
    const [a, b] = args;
    const y = zeros(1);
    return { call: { a: arr(a), b: op.class === 'reduce2' ? arr(b) : null, y, n: len(a) }, out: y, result: 'float' };
  }
  case 'argreduce': {
    const [x] = args;
    const y = zeros(2); // a size_t (4 bytes in wasm32)
    return { call: { a: arr(x), y, n: len(x) }, out: y, result: 'index' };
  }
  case 'rows': case 'transpose': {
    const [x, rows, cols] = args;
    const y = zeros(rows * cols);
    return { call: { a: arr(x), y, m: rows, n: cols }, out: y };
  }
  case 'norm': {
    const [x, gamma, beta, rows, cols, eps = 1e-5] = args;
    const y = zeros(rows * cols);
    return { call: { a: arr(x), b: arr(gamma), c: arr(beta), y, m: rows, n: cols, alpha: eps }, out: y };
  }
  case 'matmul': {
    const [A, B, m, n, k, o = {}] = args;
    const y = o.C ? arr(o.C) : zeros(m * n);
    const flags = (o.transA ? 1 : 0) | (o.transB ? 2 : 0);
    return { call: { a: arr(A), b: arr(B), y, m, n, k, alpha: o.alpha ?? 1, beta: o.beta ?? 0, flags }, out: y };
  }
  case 'gemv': {
    const [A, x, m, n, o = {}] = args;
    const y = o.y ? arr(o.y) : zeros(o.transA ? n : m);
    return { call: { a: arr(A), b: arr(x), y, m, n, alpha: o.alpha ?? 1, beta: o.beta ?? 0, flags: o.transA ? 1 : 0 }, out: y };
  }
  case 'bias_act': {
    const [x, bias, rows, cols, act = 'none'] = args;
    const y = zeros(rows * cols);
    const flags = typeof act === 'number' ? act : ACTIVATIONS[act];
    if (flags === undefined) throw new Error(`rayo bias_act: unknown activation ${act}`);
    return { call: { a: arr(x), b: arr(bias), y, m: rows, n: cols, flags }, out: y };
  }
  case 'glu': {
    const [gate, up, rows, cols] = args;
    const y = zeros(rows * cols);
    return { call: { a: arr(gate), b: arr(up), y, m: rows, n: cols }, out: y };
  }
  case 'rope': { // x: [tokens][nHeads][headDim] (dense), pos: a position per token
    const [x, pos, p] = args;
    const y = zeros(len(x));
    return { call: { a: arr(x), raw: { b: Int32Array.from(pos) }, y, m: len(pos), n: p.headDim,
      dtypes: DTYPE_I32 << 8, rope: p }, out: y };
  }
  case 'attention': { // q, out: [nQ][nHeads][headDim]; k, v: [nKv][nKvHeads][headDim] (kvDtype)
    const [q, k, v, p] = args;
    const y = zeros(p.nQ * p.nHeads * p.headDim);
    const isF32 = (x) => x instanceof Float32Array || Array.isArray(x);
    const raw = Object.fromEntries([['b', k], ['c', v]].filter(([, x]) => !isF32(x)));
    return { call: { a: arr(q), b: isF32(k) ? arr(k) : null, c: isF32(v) ? arr(v) : null, raw,
      y, m: p.nQ, n: p.headDim, k: p.nKv, dtypes: ((p.kvDtype || 0) << 8) | ((p.kvDtype || 0) << 16), attention: p }, out: y };
  }
  default: // convert and get_rows take dtypes: not in this API yet
    throw new Error(`rayo: op ${op.name} has class ${op.class}, which this API does not know`);
  }
}
