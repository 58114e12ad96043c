// SPDX-License-Identifier: MIT
// webgpu-host.js - the JavaScript side of the webgpu plugin, linked into
// every main module of the WebAssembly build (--pre-js, after the generated
// webgpu-wgsl.js that defines RAYO_WEBGPU_WGSL, the shaders, and
// RAYO_WEBGPU_OPS, the op list: [id, ENUM, SIG] of every op).
//
// The plugin (a side module) imports rayo_webgpu_js_* from "env"
// (webgpu-js.h).  Before any side module loads (preRun), these functions
// are put into the main module's import object, which the dynamic linker
// reads first: the imports are bound directly, with no JS stub in between,
// which JSPI needs (a Suspending import may only have WebAssembly frames
// under it up to the promising export).
//
// The device is acquired before rayo_open, asynchronously:
//   await Module.rayoWebgpu.init()            // navigator.gpu, adapter, device
// and the async API wraps its calls:
//   Module.rayoWebgpu.callAsync(exportName, ...args)   // -> Promise of the result
// Where the engine has no WebGPU, probe says why and the plugin has no device.

var rayoWebgpu = (function () {
  var OK = 0, E_NOMEM = 3, E_UNSUPPORTED = 4, E_BACKEND = 5, E_DEVICE_LOST = 6, E_NOT_FOUND = 7;
  var DEVICE_GPU = 1, DEVICE_SOFTWARE = 2, DEVICE_FLUSHES_DENORMALS = 2;
  var FEATURES = ['shader-f16', 'subgroups', 'timestamp-query'];
  var HAS_B = 1, HAS_C = 2, Y_INDEX64 = 4;   // Params.has (rows.wgsl)
  var OP_IDS = {}, OP_SIGS = {};
  RAYO_WEBGPU_OPS.forEach(function (op) { OP_IDS[op[1]] = op[0]; OP_SIGS[op[0]] = op[2].toLowerCase(); });
  var st = {
    device: null, name: '',
    reason: typeof navigator === 'object' && navigator.gpu ? 'WebGPU not initialised (the JS API acquires the device)'
      : 'no navigator.gpu (this engine has no WebGPU)',
    limit: 0, type: DEVICE_GPU, flags: 0, features: [], canWait: false, lost: false,
    layout: null, pipelineLayout: null, module: null, pipelines: new Map(), dummy: null,
    buffers: new Map(), batches: new Map(), nextHandle: 1,
  };

  function jspi() {
    return typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function';
  }

  // ---- device ----------------------------------------------------------------
  async function requestDevice(options) {
    var gpu = typeof navigator === 'object' && navigator.gpu;
    if (!gpu) throw new Error('no navigator.gpu (this engine has no WebGPU)');
    if (!jspi()) throw new Error('this engine lacks JSPI (WebAssembly.Suspending): GPU results cannot be awaited');
    var adapter = await gpu.requestAdapter(options || {});
    if (!adapter) throw new Error('navigator.gpu.requestAdapter() granted no adapter');
    var features = FEATURES.filter(function (f) { return adapter.features.has(f); });
    var limits = adapter.limits;
    var device = await adapter.requestDevice({
      requiredFeatures: features,
      requiredLimits: {
        maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
        maxBufferSize: limits.maxBufferSize,
      },
    });
    return { adapter: adapter, device: device, features: features };
  }

  function describe(adapter, features) {
    var info = adapter.info || {};
    var name = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ') || 'WebGPU adapter';
    var soft = info.isFallbackAdapter || /swiftshader|llvmpipe|lavapipe/i.test(name);
    var missing = FEATURES.filter(function (f) { return features.indexOf(f) < 0; });
    // the device's name carries what rayo-info and ctx.backends() should show
    st.name = 'WebGPU: ' + name + ' [' + (features.join(' ') || 'no optional features') +
      (missing.length ? '; no ' + missing.join(' ') : '') + '; binding ' +
      Math.floor(adapter.limits.maxStorageBufferBindingSize / 1048576) + ' MiB, workgroup storage ' +
      Math.floor(adapter.limits.maxComputeWorkgroupStorageSize / 1024) + ' KiB]';
    st.limit = Math.min(adapter.limits.maxStorageBufferBindingSize, 0x7ffffffc);
    st.type = soft ? DEVICE_SOFTWARE : DEVICE_GPU;
    st.features = features;
    st.reason = 'features: ' + (features.join(', ') || 'none') + ' (missing: ' + (missing.join(', ') || 'none') +
      '); maxStorageBufferBindingSize ' + adapter.limits.maxStorageBufferBindingSize +
      ', maxComputeWorkgroupStorageSize ' + adapter.limits.maxComputeWorkgroupStorageSize;
  }

  function createLayout(device) {
    var entries = [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform' } }];
    for (var i = 1; i <= 3; i++)
      entries.push({ binding: i, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage' } });
    entries.push({ binding: 4, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } });
    st.layout = device.createBindGroupLayout({ entries: entries });
    st.pipelineLayout = device.createPipelineLayout({ bindGroupLayouts: [st.layout] });
    st.dummy = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
  }

  // Acquires the device and compiles the shaders; never throws: where it
  // fails, the probe gives the reason.  Returns whether a device is ready.
  // options: requestAdapter's; choice.kernels: 'auto' (default), 'tiled' or
  // 'direct' (the barrier-free forms; auto: on software adapters), so that
  // a test can check both on one adapter.
  async function init(options, choice) {
    st.kernels = (choice && choice.kernels) || 'auto';
    try {
      var got = await requestDevice(options);
      st.device = got.device;
      describe(got.adapter, got.features);
      st.device.lost.then(function (info) { st.lost = true; st.reason = 'device lost: ' + info.message; });
      createLayout(st.device);
      st.module = st.device.createShaderModule({ code: RAYO_WEBGPU_WGSL });
      var messages = (await st.module.getCompilationInfo()).messages.filter(function (m) { return m.type === 'error'; });
      if (messages.length) throw new Error('WGSL: ' + messages.map(function (m) { return m.lineNum + ': ' + m.message; }).join('; '));
      if (await flushesDenormals()) st.flags |= DEVICE_FLUSHES_DENORMALS;
      return true;
    } catch (e) {
      st.device = null;
      st.reason = String(e && e.message ? e.message : e);
      return false;
    }
  }

  // Whether the device reads a float32 denormal as 0 (rayo.h's documented
  // exception): scale the smallest denormal by 1 and look.
  async function flushesDenormals() {
    var x = new Float32Array([1.4e-45]);
    var y = await runOn(OP_IDS.SCALE, 0, { m: 0, n: 1, k: 0 }, 1, 0, [x, null, null], 4, null);
    return !(y && y[0] !== 0);
  }

  // ---- pipelines -------------------------------------------------------------
  // A software adapter gets the barrier-free forms (kernels.wgsl says why).
  function entryPoint(op, flags) {
    var sig = OP_SIGS[op];
    var soft = st.kernels === 'direct' || (st.kernels === 'auto' && st.type === DEVICE_SOFTWARE);
    if (sig === 'matmul') return soft ? 'matmul_direct' : 'matmul';
    if (sig === 'gemv') return (flags & 1) ? 'gemv_cols' : soft ? 'gemv_direct' : 'gemv_rows';
    if (sig === 'rows' || sig === 'norm') return soft ? 'rows_direct' : 'rows';
    if (sig === 'reduce' || sig === 'reduce2' || sig === 'argreduce') return 'reduce';
    if (sig === 'transpose' || sig === 'glu' || sig === 'get_rows' || sig === 'convert' || sig === 'rope' ||
        sig === 'attention' || sig === 'bias_act') return sig;
    return 'elementwise';
  }

  function pipeline(op, flags) {
    var entry = entryPoint(op, flags);
    var key = entry + ':' + op;
    var p = st.pipelines.get(key);
    if (!p) {
      p = st.device.createComputePipeline({
        layout: st.pipelineLayout,
        compute: { module: st.module, entryPoint: entry, constants: { OP: op } },
      });
      st.pipelines.set(key, p);
    }
    return { pipeline: p, entry: entry };
  }

  // call: encodeOp's (m, n, ext)
  function groupsFor(entry, call) {
    var cap = 4096, m = call.m, n = call.n, e = call.ext || [];
    if (entry === 'rope') return [Math.max(1, Math.min(cap, Math.ceil(m * e[2] * (e[3] - e[1] / 2) / 64))), 1];
    // attention: a workgroup per (query, head) pair (infer.wgsl says why)
    if (entry === 'attention') return [Math.max(1, Math.min(cap, e[0] * e[2])), 1];
    if (entry === 'matmul_direct') return [Math.max(1, Math.min(65535, Math.ceil(m * n / 64))), 1];
    if (/_direct$/.test(entry)) return [Math.max(1, Math.min(65535, Math.ceil(m / 64))), 1];
    if (entry === 'matmul') return [Math.ceil(n / 16), Math.ceil(m / 16)];
    if (entry === 'gemv_rows') return [Math.min(m, 65535), 1];
    if (entry === 'reduce') return [1, 1];
    if (entry === 'rows') return [Math.max(1, Math.min(m, 65535)), 1];
    if (entry === 'transpose' || entry === 'glu' || entry === 'get_rows' || entry === 'bias_act')
      return [Math.max(1, Math.min(cap, Math.ceil(m * n / 256))), 1];
    return [Math.max(1, Math.min(cap, Math.ceil(n / 256))), 1];
  }

  // ---- encoding one op -------------------------------------------------------
  // lda, ldb, ldy with 0 (dense) replaced by the row length (n but for matmul)
  function denseStrides(call) {
    var ta = call.flags & 1, tb = call.flags & 2, matmul = OP_SIGS[call.op] === 'matmul';
    var rowA = matmul ? (ta ? call.m : call.k) : call.n, rowB = matmul && tb ? call.k : call.n;
    return [call.lda || rowA, call.ldb || rowB, call.ldy || call.n];
  }

  // sizes[]: webgpu-js.h (7 words, then 16 of rope's or attention's parameters)
  function readSizes(ptr) {
    var s = HEAPU32.subarray(ptr >>> 2, (ptr >>> 2) + 23);
    return { m: s[0], n: s[1], k: s[2], lda: s[3], ldb: s[4], ldy: s[5], dta: s[6], ext: Array.from(s.subarray(7)) };
  }

  // call: {op, flags, m, n, k, alpha, beta, bufs: [a, b, c, y] GPUBuffers or
  // null, offsets: element offsets}.  In-place inputs (the buffer of y) are
  // copied first: WebGPU refuses a buffer bound writable and read-only at once.
  // call.device: y is a device buffer (argmax writes a 64-bit index there).
  function encodeOp(encoder, call, temps) {
    var dev = st.device;
    var bufs = call.bufs.slice(), off = call.offsets.slice();
    var has = (bufs[1] ? HAS_B : 0) | (bufs[2] ? HAS_C : 0) | (call.device ? Y_INDEX64 : 0);
    for (var i = 0; i < 3; i++) {
      if (bufs[i] && bufs[i] === bufs[3]) {
        var copy = dev.createBuffer({ size: Math.max(16, bufs[i].size), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
        encoder.copyBufferToBuffer(bufs[i], 0, copy, 0, bufs[i].size);
        temps.push(copy);
        bufs[i] = copy;
      }
    }
    var params = new ArrayBuffer(128), u = new Uint32Array(params), f = new Float32Array(params);
    u[0] = call.m; u[1] = call.n; u[2] = call.k; u[3] = call.flags;
    f[4] = call.alpha; f[5] = call.beta;
    u[6] = off[0]; u[7] = off[1]; u[8] = off[2]; u[9] = off[3]; u[11] = has;
    u.set(denseStrides(call), 12);
    u[15] = call.dta || 0;
    if (call.ext) u.set(call.ext, 16);
    var ubuf = dev.createBuffer({ size: 128, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
    new Uint8Array(ubuf.getMappedRange()).set(new Uint8Array(params));
    ubuf.unmap();
    temps.push(ubuf);
    var entries = [{ binding: 0, resource: { buffer: ubuf } }];
    for (var j = 0; j < 4; j++) entries.push({ binding: j + 1, resource: { buffer: bufs[j] || st.dummy } });
    var pl = pipeline(call.op, call.flags);
    var pass = encoder.beginComputePass();
    pass.setPipeline(pl.pipeline);
    pass.setBindGroup(0, dev.createBindGroup({ layout: st.layout, entries: entries }));
    var g = groupsFor(pl.entry, call);
    pass.dispatchWorkgroups(g[0], g[1]);
    pass.end();
  }

  // writeBuffer takes whole words: block dtypes may end mid-word
  function padded(bytes) {
    if (bytes.byteLength % 4 === 0) return bytes;
    var out = new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4);
    out.set(bytes);
    return out;
  }

  function storageBuffer(bytes) {
    return st.device.createBuffer({
      size: Math.max(16, Math.ceil(bytes / 4) * 4),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
    });
  }

  // Copies `bytes` from src (at offset) to a mappable buffer and returns them.
  async function readBack(encoder, src, offset, bytes, temps) {
    var rb = st.device.createBuffer({ size: Math.max(16, bytes), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    temps.push(rb);
    encoder.copyBufferToBuffer(src, offset, rb, 0, bytes);
    st.device.queue.submit([encoder.finish()]);
    await rb.mapAsync(GPUMapMode.READ, 0, bytes);
    var out = new Uint8Array(rb.getMappedRange(0, bytes)).slice();
    rb.unmap();
    return out;
  }

  // One op on host arrays (sizes: readSizes; inputs: typed arrays or null;
  // y0: y's old value when the op reads it); returns y as a Float32Array.
  async function runOn(op, flags, sizes, alpha, beta, inputs, yBytes, y0) {
    var temps = [], bufs = [null, null, null, null];
    st.device.pushErrorScope('validation');
    st.device.pushErrorScope('out-of-memory');
    try {
      for (var i = 0; i < 3; i++) {
        if (!inputs[i]) continue;
        bufs[i] = storageBuffer(inputs[i].byteLength);
        temps.push(bufs[i]);
        st.device.queue.writeBuffer(bufs[i], 0, padded(inputs[i]));
      }
      bufs[3] = storageBuffer(yBytes);
      temps.push(bufs[3]);
      if (y0) st.device.queue.writeBuffer(bufs[3], 0, y0);
      var encoder = st.device.createCommandEncoder();
      encodeOp(encoder, { op: op, flags: flags, m: sizes.m, n: sizes.n, k: sizes.k, lda: sizes.lda,
        ldb: sizes.ldb, ldy: sizes.ldy, dta: sizes.dta, ext: sizes.ext, alpha: alpha, beta: beta, bufs: bufs,
        offsets: [0, 0, 0, 0] }, temps);
      var bytes = await readBack(encoder, bufs[3], 0, yBytes, temps);
      return new Float32Array(bytes.buffer);
    } finally {
      var oom = await st.device.popErrorScope();
      var invalid = await st.device.popErrorScope();
      temps.forEach(function (b) { b.destroy(); });
      if (oom || invalid) throw new Error('webgpu: ' + (oom || invalid).message);
    }
  }

  // ---- the imports -------------------------------------------------------------
  function heapBytes(ptr, bytes) {
    return HEAPU8.subarray(ptr >>> 0, (ptr >>> 0) + bytes);
  }

  function writeString(s, ptr, size) {
    if (size > 0) stringToUTF8(s, ptr, size);
  }

  function probe(name, nameSize, reason, reasonSize, info) {
    var ok = !!st.device && !st.lost;
    writeString(ok ? st.name : '', name, nameSize);
    writeString(st.reason, reason, reasonSize);
    HEAPU32[(info >>> 2)] = st.limit;
    HEAPU32[(info >>> 2) + 1] = st.type;
    HEAPU32[(info >>> 2) + 2] = st.flags;
    return ok ? 1 : 0;
  }

  async function run(op, flags, sizesPtr, alpha, beta, a, na, b, nb, c, nc, y, ny, yIn) {
    if (st.lost) return E_DEVICE_LOST;
    var sizes = readSizes(sizesPtr);
    // copies: the heap may grow (and move) while the GPU works
    var inputs = [na ? heapBytes(a, na).slice() : null, nb ? heapBytes(b, nb).slice() : null,
      nc ? heapBytes(c, nc).slice() : null];
    var y0 = yIn ? heapBytes(y, ny).slice() : null;
    var out = await runOn(op, flags, sizes, alpha, beta, inputs, ny, y0);
    heapBytes(y, ny).set(new Uint8Array(out.buffer, 0, ny));
    return OK;
  }

  function bufferAlloc(bytes) {
    if (!st.device || bytes > st.limit) return 0;
    try {
      var h = st.nextHandle++;
      st.buffers.set(h, storageBuffer(bytes));
      return h;
    } catch (e) {
      return 0;
    }
  }

  function bufferFree(h) {
    var b = st.buffers.get(h);
    if (b) b.destroy();
    st.buffers.delete(h);
  }

  // writeBuffer takes multiples of 4 bytes: a ragged tail is merged with
  // the bytes already there (read back), which only the sync path cannot do.
  function bufferWrite(h, offset, src, bytes) {
    var b = st.buffers.get(h);
    if (!b) return E_NOT_FOUND;
    if (offset % 4 || bytes % 4) return E_UNSUPPORTED;
    st.device.queue.writeBuffer(b, offset, heapBytes(src, bytes).slice());
    return OK;
  }

  async function bufferRead(h, offset, dst, bytes) {
    var b = st.buffers.get(h);
    if (!b) return E_NOT_FOUND;
    if (st.lost) return E_DEVICE_LOST;
    if (offset % 4 || bytes % 4) return E_UNSUPPORTED;
    if (bytes === 0) return OK;
    var data = await readBack(st.device.createCommandEncoder(), b, offset, bytes, []);
    heapBytes(dst, bytes).set(data);
    return OK;
  }

  function batchBegin() {
    var h = st.nextHandle++;
    st.batches.set(h, { calls: [], temps: [], aux: [], done: null, status: OK, step: 0 });
    return h;
  }

  function batchRecord(batch, op, flags, sizesPtr, alpha, beta, bufsPtr, offsPtr, stepsPtr) {
    var bt = st.batches.get(batch);
    if (!bt) return E_NOT_FOUND;
    var s = readSizes(sizesPtr), bp = bufsPtr >>> 2, op2 = offsPtr >>> 2, sp = stepsPtr >>> 2;
    var bufs = [], offsets = [], steps = [];
    for (var i = 0; i < 4; i++) {
      var h = HEAPU32[bp + i];
      if (h && !st.buffers.get(h)) return E_NOT_FOUND;
      bufs.push(h ? st.buffers.get(h) : null);
      offsets.push(HEAPU32[op2 + i] / 4);
      steps.push(HEAPU32[sp + i] / 4);
    }
    bt.calls.push({ op: op, flags: flags, m: s.m, n: s.n, k: s.k, lda: s.lda, ldb: s.ldb, ldy: s.ldy, dta: s.dta, ext0: s.ext,
      alpha: alpha, beta: beta, bufs: bufs, offsets0: offsets, steps: steps, device: true });
    return OK;
  }

  function batchSetStep(batch, step) {
    var bt = st.batches.get(batch);
    if (!bt) return E_NOT_FOUND;
    bt.step = step;
    return OK;
  }

  // a recorded call with its offsets at the batch's step (elements), and
  // attention's n_kv grown by the step where it was recorded so (ext[15])
  function atStep(call, step) {
    call.offsets = call.offsets0.map(function (o, i) { return o + step * call.steps[i]; });
    call.ext = call.ext0.slice();
    if (call.ext[15]) call.ext[1] += step;
    return call;
  }

  function batchSubmit(batch) {
    var bt = st.batches.get(batch);
    if (!bt) return E_NOT_FOUND;
    if (st.lost) return E_DEVICE_LOST;
    // a replay: the previous submit is done (the core waited for it)
    bt.temps.forEach(function (b) { b.destroy(); });
    bt.temps = [];
    bt.status = OK;
    st.device.pushErrorScope('validation');
    var encoder = st.device.createCommandEncoder();
    bt.calls.forEach(function (call) { encodeOp(encoder, atStep(call, bt.step), bt.temps); });
    st.device.queue.submit([encoder.finish()]);
    bt.done = Promise.all([st.device.popErrorScope(), st.device.queue.onSubmittedWorkDone()])
      .then(function (r) { if (r[0]) { bt.status = E_BACKEND; console.warn('webgpu: ' + r[0].message); } });
    return OK;
  }

  async function batchWait(batch) {
    var bt = st.batches.get(batch);
    if (!bt) return E_NOT_FOUND;
    if (bt.done) await bt.done;
    return st.lost ? E_DEVICE_LOST : bt.status;
  }

  // a buffer that lives as long as the batch (rope's frequencies): a handle
  function batchAux(batch, src, bytes) {
    var bt = st.batches.get(batch);
    var h = bt ? bufferAlloc(Math.ceil(bytes / 4) * 4) : 0;
    if (!h) return 0;
    st.device.queue.writeBuffer(st.buffers.get(h), 0, padded(heapBytes(src, bytes).slice()));
    bt.aux.push(h);
    return h;
  }

  function batchFree(batch) {
    var bt = st.batches.get(batch);
    if (bt) bt.temps.forEach(function (b) { b.destroy(); });
    if (bt) bt.aux.forEach(bufferFree);
    st.batches.delete(batch);
  }

  // A waiting import: a Suspending function where JSPI exists.  While it
  // waits, other JS may run: canWait is off until the WebAssembly resumes.
  function waiting(fn) {
    var wrapped = async function () {
      st.canWait = false;
      try {
        return await fn.apply(null, arguments);
      } catch (e) {
        console.warn('webgpu: ' + (e && e.message ? e.message : e));
        return st.lost ? E_DEVICE_LOST : E_BACKEND;
      } finally {
        st.canWait = true;
      }
    };
    if (jspi()) return new WebAssembly.Suspending(wrapped);
    return function () { return E_UNSUPPORTED; };
  }

  function imports() {
    return {
      rayo_webgpu_js_probe: probe,
      rayo_webgpu_js_can_wait: function () { return st.canWait && !!st.device ? 1 : 0; },
      rayo_webgpu_js_run: waiting(run),
      rayo_webgpu_js_buffer_alloc: bufferAlloc,
      rayo_webgpu_js_buffer_free: bufferFree,
      rayo_webgpu_js_buffer_write: bufferWrite,
      rayo_webgpu_js_buffer_read: waiting(bufferRead),
      rayo_webgpu_js_batch_begin: batchBegin,
      rayo_webgpu_js_batch_record: batchRecord,
      rayo_webgpu_js_batch_submit: batchSubmit,
      rayo_webgpu_js_batch_set_step: batchSetStep,
      rayo_webgpu_js_batch_aux: batchAux,
      rayo_webgpu_js_batch_wait: waiting(batchWait),
      rayo_webgpu_js_batch_free: batchFree,
    };
  }

  // Calls a WebAssembly export so that the webgpu plugin may wait inside it
  // (JSPI); without JSPI, a plain call (the plugin then falls through).
  var promisingExports = new Map();
  async function callAsync(name) {
    var args = Array.prototype.slice.call(arguments, 1);
    var fn = Module['asm'][name];
    if (!jspi()) return fn.apply(null, args);
    var p = promisingExports.get(name);
    if (!p) promisingExports.set(name, p = WebAssembly.promising(fn));
    st.canWait = true;
    var pending;
    try {
      pending = p.apply(null, args);
    } finally {
      st.canWait = false;
    }
    try {
      return await pending;
    } finally {
      st.canWait = false;
    }
  }

  function info() {
    return { device: st.device ? st.name : null, reason: st.reason, features: st.features.slice(),
      limit: st.limit, flushesDenormals: !!(st.flags & DEVICE_FLUSHES_DENORMALS), jspi: jspi() };
  }

  return { init: init, imports: imports, callAsync: callAsync, info: info, state: st };
})();

Module['rayoWebgpu'] = rayoWebgpu;
Module['preRun'] = Module['preRun'] || [];
Module['preRun'].push(function () {
  var imports = rayoWebgpu.imports();
  for (var name in imports) asmLibraryArg[name] = imports[name];
});
