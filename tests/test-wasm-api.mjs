// SPDX-License-Identifier: MIT
// test-wasm-api.mjs - rayo's JS API (wasm/rayo.mjs) under node, on a
// `make wasm` build:  node tests/test-wasm-api.mjs WASM_BUILD_DIR
//
//   - the core loads both side modules; wasm (SIMD128) is chosen first;
//   - ops called through the API (plain arrays in, Float32Array or numbers
//     out) on fresh random inputs of sizes 0, 1, odd and large match float64
//     references within each op's contract, on scalar and on wasm;
//   - ctx.rope and ctx.attention on host memory (their parameters as
//     objects; positions and an f16 KV cache as typed arrays) match float64
//     references within their contracts on scalar, wasm and the chain;
//   - settings given through the JS setter reach the core: order, per-op
//     order, allow, deny, thresholds; a malformed line does not stop open;
//   - an engine whose WebAssembly.validate refuses SIMD code gets scalar for
//     every op and the reason for wasm names simd128.
// Exit 0 when all holds, 1 otherwise.
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node test-wasm-api.mjs WASM_BUILD_DIR');
  process.exit(2);
}
const { loadRayo, Settings, engineHasSimd128 } =
  await import(pathToFileURL(resolve(dir, 'js/rayo.mjs')).href);

let failures = 0;
function check(ok, what) {
  if (!ok || process.env.VERBOSE) console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}

let seed = (Date.now() ^ 0x5eed) >>> 0;
if (process.env.RAYO_TEST_SEED) seed = Number(process.env.RAYO_TEST_SEED) >>> 0;
console.log(`seed ${seed} (RAYO_TEST_SEED replays)`);
function random() { // xorshift32 in [0, 1)
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const randoms = (n, lo = -3, hi = 3) => Float32Array.from({ length: n }, () => lo + (hi - lo) * random());

/** Within contract: |y - ref| <= rel * scale + abs, or y is ref rounded to float. */
function within(op, y, ref, scale = Math.abs(ref)) {
  if (Number.isNaN(ref)) return Number.isNaN(y);
  if (Math.fround(ref) === y) return true;
  return Math.abs(y - ref) <= op.tol_rel * scale + op.tol_abs;
}

const erf = (x) => { // float64 erf: Taylor series near 0, continued fraction for erfc beyond
  const ax = Math.abs(x);
  if (ax < 2.5) {
    let sum = 0, term = ax;
    for (let k = 0; k < 60; k++) {
      sum += term / (2 * k + 1);
      term *= -ax * ax / (k + 1);
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  let f = 0;
  for (let k = 60; k >= 1; k--) f = (k / 2) / (ax + f);
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / (ax + f);
  return Math.sign(x) * (1 - erfc);
};

const REFERENCES = {
  add: (a, b) => a + b,
  mul: (a, b) => a * b,
  exp: (x) => Math.exp(x),
  tanh: (x) => Math.tanh(x),
  sigmoid: (x) => 1 / (1 + Math.exp(-x)),
  gelu: (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)),
  relu: (x) => (x < 0 ? 0 : x),
};

const rayo = await loadRayo();
const opInfo = (name) => rayo.ops.find((o) => o.name === name);
check(rayo.ops.length >= 39, `op list from the core (${rayo.ops.length} ops)`);
check(engineHasSimd128(), 'node validates SIMD128');

// ---- default context ----
const ctx = rayo.open();
const backends = ctx.backends();
const byName = Object.fromEntries(backends.map((b) => [b.name, b]));
check(byName.scalar && byName.scalar.status === 'loaded', 'scalar loaded');
check(byName.wasm && byName.wasm.status === 'loaded', 'wasm loaded');
// (a device backend such as webgpu, started at first use, may hold rank 0)
check(byName.wasm && byName.scalar && byName.wasm.rank < byName.scalar.rank, 'wasm ranks before scalar');
check(byName.wasm && byName.wasm.ops >= 39, `wasm implements every op (${byName.wasm && byName.wasm.ops})`);
const dispatch = ctx.dispatch(1 << 16);
// wasm has the f32 ops and the decode path (rope, attention, the gated
// units); convert and get_rows fall through to scalar.
const SCALAR_CLASSES = ['convert', 'get_rows'];
const isScalarOnly = (name) => SCALAR_CLASSES.includes(opInfo(name).class);
check(Object.entries(dispatch).every(([name, b]) => b === (isScalarOnly(name) ? 'scalar' : 'wasm')),
  `wasm chosen for every op but convert and get_rows, which go to scalar: ${JSON.stringify(dispatch)}`);
check(Object.keys(dispatch).filter(isScalarOnly).length === 2, 'convert and get_rows are listed with their classes');

// swiglu through the chain (wasm runs it): y = silu(gate) * up
{
  const rows = 3, cols = 19, gate = randoms(rows * cols, -6, 6), up = randoms(rows * cols);
  const y = ctx.swiglu(gate, up, rows, cols);
  let off = 0;
  for (let i = 0; i < rows * cols; i++)
    if (!within(opInfo('swiglu'), y[i], (gate[i] / (1 + Math.exp(-gate[i]))) * up[i])) off++;
  check(y.length === rows * cols && off === 0, `swiglu ${rows}x${cols} through the chain (${off} elements off)`);
}

// rope (NORM and NEOX pairs, a partial rotation) against float64: the
// contract's scale is the norm of the rotated pair
function ropeRef(x, pos, p) {
  const y = Float64Array.from(x), rot = p.rotDims || p.headDim, half = rot / 2, scale = new Float64Array(x.length);
  for (let t = 0; t < pos.length; t++)
    for (let h = 0; h < p.nHeads; h++) {
      const at = (t * p.nHeads + h) * p.headDim;
      for (let i = 0; i < half; i++) {
        const [u, w] = p.mode === 1 ? [at + i, at + i + half] : [at + 2 * i, at + 2 * i + 1];
        const th = pos[t] * p.freqScale * p.freqBase ** (-2 * i / rot);
        y[u] = x[u] * Math.cos(th) - x[w] * Math.sin(th);
        y[w] = x[u] * Math.sin(th) + x[w] * Math.cos(th);
        scale[u] = scale[w] = Math.hypot(x[u], x[w]);
      }
      for (let d = rot; d < p.headDim; d++) scale[at + d] = Math.abs(x[at + d]);
    }
  return { y, scale };
}
// attention (causal, grouped-query) against float64: the contract's scale
// is sum_j p_j |v_j| per output
function attentionRef(q, k, v, p) {
  const D = p.headDim, y = new Float64Array(p.nQ * p.nHeads * D), scale = new Float64Array(y.length);
  for (let i = 0; i < p.nQ; i++)
    for (let h = 0; h < p.nHeads; h++) {
      const kh = Math.floor(h / (p.nHeads / p.nKvHeads)), last = p.nKv - p.nQ + i;
      const s = [];
      for (let j = 0; j <= last; j++) {
        let dot = 0;
        for (let d = 0; d < D; d++) dot += q[(i * p.nHeads + h) * D + d] * k[(j * p.nKvHeads + kh) * D + d];
        s.push(dot * p.scale);
      }
      const mx = Math.max(...s), e = s.map((z) => Math.exp(z - mx)), sum = e.reduce((a, b) => a + b, 0);
      for (let d = 0; d < D; d++)
        for (let j = 0; j <= last; j++) {
          const vj = v[(j * p.nKvHeads + kh) * D + d];
          y[(i * p.nHeads + h) * D + d] += (e[j] / sum) * vj;
          scale[(i * p.nHeads + h) * D + d] += (e[j] / sum) * Math.abs(vj);
        }
    }
  return { y, scale };
}
const offCount = (op, y, ref) => y.reduce((off, v, i) => off + (within(op, v, ref.y[i], ref.scale[i]) ? 0 : 1), 0);
const toF16 = (x) => { // float32 -> IEEE half (round to nearest even), for the f16 cache
  const f = new Float32Array([x]), u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000, e = ((u >>> 23) & 0xff) - 127 + 15, m = u & 0x7fffff;
  if (e <= 0 || e >= 31) return sign; // the test's values are in the normal range
  let h = sign | (e << 10) | (m >>> 13);
  const rest = m & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;
  return h;
};
const fromF16 = (h) => (h & 0x8000 ? -1 : 1) * 2 ** (((h >>> 10) & 31) - 15) * (1 + (h & 1023) / 1024);
for (const backend of [undefined, 'scalar', 'wasm']) {
  const on = backend ? { backend } : {};
  const where = backend || 'the chain';
  for (const [mode, rotDims] of [[0, 0], [1, 0], [0, 32]]) {
    const p = { mode, rotDims, freqBase: 10000, freqScale: 1, nHeads: 3, headDim: 48 };
    const pos = Int32Array.from({ length: 5 }, () => Math.floor(random() * 4096));
    const x = randoms(pos.length * p.nHeads * p.headDim);
    const y = ctx.rope(x, pos, p, on);
    check(y.length === x.length && offCount(opInfo('rope'), y, ropeRef(x, pos, p)) === 0,
      `rope mode ${mode} rot ${rotDims || p.headDim} on ${where}, positions ${pos.join(',')}`);
  }
  for (const [nQ, nKv, f16] of [[1, 37, false], [7, 7, false], [3, 20, true]]) {
    const p = { flags: 1, kvDtype: f16 ? 1 : 0, nQ, nKv, nHeads: 4, nKvHeads: 2, headDim: 32, scale: 1 / Math.sqrt(32) };
    const q = randoms(nQ * p.nHeads * p.headDim, -1, 1);
    let k = randoms(nKv * p.nKvHeads * p.headDim, -1, 1), v = randoms(nKv * p.nKvHeads * p.headDim);
    let ref;
    if (f16) {
      const [k16, v16] = [Uint16Array.from(k, toF16), Uint16Array.from(v, toF16)];
      ref = attentionRef(q, Array.from(k16, fromF16), Array.from(v16, fromF16), p);
      [k, v] = [k16, v16];
    } else ref = attentionRef(q, k, v, p);
    const y = ctx.attention(q, k, v, p, on);
    check(y.length === ref.y.length && offCount(opInfo('attention'), y, ref) === 0,
      `attention nQ ${nQ} nKv ${nKv}${f16 ? ' (f16 cache)' : ''} on ${where}`);
  }
}

// ---- ops against float64 references ----
const SIZES = [0, 1, 3, 17, 1000, 65537];
for (const backend of ['scalar', 'wasm']) {
  for (const n of SIZES) {
    const a = randoms(n), b = randoms(n);
    for (const [name, ref] of Object.entries(REFERENCES)) {
      const op = opInfo(name);
      const y = ref.length === 2 ? ctx[name](a, b, { backend }) : ctx[name](a, { backend });
      let bad = -1;
      for (let i = 0; i < n && bad < 0; i++)
        if (!within(op, y[i], ref.length === 2 ? ref(a[i], b[i]) : ref(a[i]))) bad = i;
      check(y.length === n && bad < 0, `${name} on ${backend}, n = ${n}` +
        (bad >= 0 ? `: element ${bad}: ${y[bad]} for input ${a[bad]}` : ''));
    }
    // reductions
    let dot = 0, terms = 0, best = -Infinity, at = 0;
    for (let i = 0; i < n; i++) {
      dot += a[i] * b[i];
      terms += Math.abs(a[i] * b[i]);
      if (a[i] > best) { best = a[i]; at = i; }
    }
    const d = ctx.dot(a, b, { backend });
    check(within(opInfo('dot'), d, dot, terms), `dot on ${backend}, n = ${n}: ${d} vs ${dot}`);
    if (n > 0) check(ctx.argmax(a, { backend }) === at, `argmax on ${backend}, n = ${n}`);
  }
  // rows and matrices
  const rows = 5, cols = 37;
  const x = randoms(rows * cols, -10, 10);
  const sm = ctx.softmax(x, rows, cols, { backend });
  let worst = 0;
  for (let r = 0; r < rows; r++) {
    const row = x.subarray(r * cols, (r + 1) * cols);
    const mx = Math.max(...row);
    const sum = row.reduce((s, v) => s + Math.exp(v - mx), 0);
    for (let c = 0; c < cols; c++) {
      const ref = Math.exp(row[c] - mx) / sum;
      if (!within(opInfo('softmax'), sm[r * cols + c], ref)) worst++;
    }
  }
  check(worst === 0, `softmax ${rows}x${cols} on ${backend} (${worst} elements off)`);
  for (const [m, n, k, transA, transB] of [[7, 5, 3, false, false], [33, 17, 65, true, false], [16, 9, 8, false, true]]) {
    const A = randoms(m * k), B = randoms(k * n);
    const C = ctx.matmul(A, B, m, n, k, { transA, transB, backend });
    let off = 0;
    for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
      let s = 0, t = 0;
      for (let p = 0; p < k; p++) {
        const av = transA ? A[p * m + i] : A[i * k + p];
        const bv = transB ? B[j * k + p] : B[p * n + j];
        s += av * bv;
        t += Math.abs(av * bv);
      }
      if (!within(opInfo('matmul'), C[i * n + j], s, t)) off++;
    }
    check(C.length === m * n && off === 0,
      `matmul ${m}x${n}x${k}${transA ? ' A^T' : ''}${transB ? ' B^T' : ''} on ${backend} (${off} elements off)`);
  }
  const bias = randoms(cols);
  const ba = ctx.bias_act(x, bias, rows, cols, 'relu', { backend });
  check(ba.every((v, i) => v === Math.max(Math.fround(x[i] + bias[i % cols]), 0)),
    `bias_act relu on ${backend}`);
}
ctx.close();

// ---- settings through the JS setter ----
function withContext(settings, fn) {
  const c = rayo.open(settings);
  try { fn(c, Object.fromEntries(c.backends().map((b) => [b.name, b]))); } finally { c.close(); }
}
withContext(new Settings().set('dispatch', 'order', ['scalar', 'wasm']), (c) => {
  check(c.dispatch().add === 'scalar', 'dispatch.order = scalar, wasm puts scalar first');
  check(c.config('dispatch', 'order') === 'scalar, wasm', 'the setting reads back');
});
withContext({ plugins: { deny: 'wasm' } }, (c, b) => {
  check(b.wasm.status === 'disabled' && /denied/.test(b.wasm.reason), `plugins.deny = wasm (${b.wasm.reason})`);
  check(c.dispatch().exp === 'scalar', 'with wasm denied, scalar runs');
});
withContext(new Settings().set('plugins', 'allow', 'scalar'), (c, b) => {
  check(b.wasm.status === 'disabled' && /allow/.test(b.wasm.reason), `plugins.allow = scalar (${b.wasm.reason})`);
});
withContext('[op.exp]\norder = scalar\n[dispatch]\noffload_threshold = 4096\n', (c) => {
  const d = c.dispatch();
  check(d.exp === 'scalar' && d.add === 'wasm', 'op.exp.order = scalar: exp on scalar, add still on wasm');
  check(c.config('dispatch', 'offload_threshold') === '4096', 'dispatch.offload_threshold reads back');
});
withContext('[dispatch]\nthis line is malformed\norder = scalar\n', (c) => {
  check(c.dispatch().add === 'scalar', 'a malformed line is skipped, the rest applies');
});
const roundTrip = new Settings('[dispatch]\norder = wasm\n[plugins]\ndeny = x\n');
check(roundTrip.get('dispatch', 'order') === 'wasm' && roundTrip.get('plugins', 'deny') === 'x',
  'Settings parses INI text');

// ---- an engine without SIMD128 (as the core's probe sees it) ----
const validate = WebAssembly.validate;
WebAssembly.validate = (bytes) => {
  const u = new Uint8Array(bytes.buffer ? bytes.buffer : bytes);
  for (let i = 0; i + 1 < u.length; i++) if (u[i] === 0xfd && u[i + 1] === 0x0c) return false;
  return validate(bytes);
};
try {
  withContext(undefined, (c, b) => {
    check(b.wasm.status !== 'loaded' && /simd128/i.test(b.wasm.reason),
      `without SIMD128: wasm not loaded, reason "${b.wasm.reason}"`);
    check(b.scalar.status === 'loaded', 'without SIMD128: scalar loaded');
    check(Object.values(c.dispatch()).every((x) => x === 'scalar'), 'without SIMD128: scalar for every op');
    const y = c.add([1, 2], [3, 4]);
    check(y[0] === 4 && y[1] === 6, 'without SIMD128: ops run');
  });
} finally {
  WebAssembly.validate = validate;
}

console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
