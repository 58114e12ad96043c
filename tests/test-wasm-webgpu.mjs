// SPDX-License-Identifier: MIT
// test-wasm-webgpu.mjs - the webgpu plugin in headless Chromium on a
// software adapter (SwiftShader: --enable-unsafe-webgpu
// --use-webgpu-adapter=swiftshader, no GPU needed).
//
//   node tests/test-wasm-webgpu.mjs WEB_DIR
// Env: PLAYWRIGHT_CORE_DIR, CHROMIUM (see test-wasm-serve.mjs);
//      RAYO_CONFORM_ARGS (rayo-conform's options, default --quick).
//
// Checks, in web/conform/ (tests/test-wasm-webgpu.html): WebGPU granted an
// adapter and the plugin has a device; rayo-conform, run in the page through
// JSPI so that the plugin can await the GPU, checked the webgpu backend
// and every op it registers conforms (exit status 0); then matmul, gemv
// and the row ops again with their tiled forms (workgroup memory and
// barriers), which the plugin leaves to real GPUs (on a software adapter it
// picks the barrier-free ones).  In both, layernorm answers every case
// itself (with beta too: its float pairs meet the contract where
// v gamma + beta cancels), none "unsupported".
// Then the JS API (web/rayo/rayo.mjs) in a page, against float64 references
// computed here on fresh random inputs: the webgpu backend loaded with its
// adapter, features and limits in ctx.backends(); matmulAsync and gemvAsync
// on webgpu; the synchronous form refused on webgpu (it cannot wait) and
// served by the chain; device buffers and a batch (matmul then relu) on
// webgpu, read back with await; a batch recorded once and replayed at m
// steps (its operands' offsets move a row per step); a decode loop (rope,
// then attention over a KV cache that grows with the step) recorded once
// and replayed, checked against float64.
// Last, the example page's WebGPU benchmark at its quick sizes
// (?webgpu=quick; the page's button runs matmul 1024^3 and a 4096 x 11008
// Q4_0 gemv): a row for each, with both times (printed; no speed is
// asserted).
// Exit 0 when all holds, 1 otherwise.
import { resolve } from 'node:path';
import { checker, launchChromium, serve, waitForState, watchdog, within } from './test-wasm-serve.mjs';

const [webDir] = process.argv.slice(2);
if (!webDir) {
  console.error('usage: node test-wasm-webgpu.mjs WEB_DIR');
  process.exit(2);
}
const { check, failures } = checker();
let seed = Number(process.env.RAYO_TEST_SEED || Date.now() % 2147483647);
console.log(`seed ${seed} (RAYO_TEST_SEED replays)`);
const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
const randoms = (n) => Array.from({ length: n }, () => 2 * random() - 1);

// C = A B (row-major, m x k times k x n) in float64, and the sum of |terms|
function matmulRef(A, B, m, n, k) {
  const C = new Float64Array(m * n), S = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++)
      for (let p = 0; p < k; p++) {
        C[i * n + j] += A[i * k + p] * B[p * n + j];
        S[i * n + j] += Math.abs(A[i * k + p] * B[p * n + j]);
      }
  return { C, S };
}

// elements off the matmul contract (1e-5 of the sum of |terms|)
function offContract(y, ref, f = (x) => x) {
  let off = 0;
  for (let i = 0; i < ref.C.length; i++)
    if (!(Math.abs(y[i] - f(ref.C[i])) <= 1e-5 * ref.S[i] + 1e-30)) off++;
  return y.length === ref.C.length ? off : -1;
}

// What the page does with the JS API; returns what the checks look at.
async function apiInPage(page, A, B, x, m, n, k) {
  return page.evaluate(async ({ A, B, x, m, n, k }) => {
    const { loadRayo } = await import('./rayo/rayo.mjs');
    const rayo = await loadRayo();
    const ctx = rayo.open();
    const out = { backends: ctx.backends(), webgpu: rayo.webgpu };
    out.matmul = Array.from(await ctx.matmulAsync(A, B, m, n, k, { backend: 'webgpu' }));
    out.gemv = Array.from(await ctx.gemvAsync(A, x, m, k, { backend: 'webgpu' }));
    try {
      ctx.matmul(A, B, m, n, k, { backend: 'webgpu' });
      out.syncOnWebgpu = 'ran';
    } catch (e) {
      out.syncOnWebgpu = String(e.message);
    }
    out.syncChain = Array.from(ctx.matmul(A, B, m, n, k));
    const [bufA, bufB, bufC] = [ctx.buffer(A, { backend: 'webgpu' }), ctx.buffer(B, { backend: 'webgpu' }),
      ctx.buffer(m * n, { backend: 'webgpu' })];
    out.bufferBackend = bufC.backend;
    const batch = ctx.batch({ backend: 'webgpu' });
    batch.record('matmul', { a: bufA, b: bufB, y: bufC, m, n, k, alpha: 1 });
    batch.record('relu', { a: bufC, y: bufC, n: m * n });
    await batch.submit();
    out.batch = Array.from(await bufC.read());
    // replay: one recorded relu of a row of n, submitted at steps 0..m-1
    const bufY = ctx.buffer(m * n, { backend: 'webgpu' });
    const replay = ctx.batch({ backend: 'webgpu' });
    replay.record('scale', { a: { buf: bufC, offset: 0, step: n }, y: { buf: bufY, offset: 0, step: n }, n, alpha: -2 });
    for (let step = 0; step < m; step++) {
      replay.setStep(step);
      await replay.submit();
    }
    out.replay = Array.from(await bufY.read());
    [batch, replay, bufA, bufB, bufC, bufY].forEach((o) => o.free());
    ctx.close();
    return out;
  }, { A, B, x, m, n, k });
}
// A decode loop as a decoder runs it on the GPU: one batch recorded once
// (rope of the step's query at its position, then attention over the KV
// cache, whose length grows with the step: kvStep), replayed at S steps.
// Returns the roped queries and the outputs, read back.
async function decodeInPage(page, d) {
  return page.evaluate(async ({ Q, K, V, pos, S, H, KVH, D, P0 }) => {
    const { loadRayo } = await import('./rayo/rayo.mjs');
    const rayo = await loadRayo();
    const ctx = rayo.open();
    const opt = { backend: 'webgpu' };
    const [q, k, v, p, qr, o] = [ctx.buffer(new Float32Array(Q), opt), ctx.buffer(new Float32Array(K), opt),
      ctx.buffer(new Float32Array(V), opt), ctx.buffer(new Int32Array(pos), opt), ctx.buffer(S * H * D, opt),
      ctx.buffer(S * H * D, opt)];
    const row = H * D, I32 = 3;
    const batch = ctx.batch(opt);
    batch.record('rope', { a: { buf: q, offset: 0, step: row }, b: { buf: p, offset: 0, step: 1 },
      y: { buf: qr, offset: 0, step: row }, m: 1, n: D, dtypes: I32 << 8,
      rope: { mode: 0, freqBase: 10000, freqScale: 1, nHeads: H, headDim: D } });
    batch.record('attention', { a: { buf: qr, offset: 0, step: row }, b: k, c: v, y: { buf: o, offset: 0, step: row },
      m: 1, n: D, k: P0 + 1, kvStep: true,
      attention: { flags: 1, nQ: 1, nKv: P0 + 1, nHeads: H, nKvHeads: KVH, headDim: D, scale: 1 / Math.sqrt(D) } });
    for (let step = 0; step < S; step++) {
      batch.setStep(step);
      await batch.submit();
    }
    const out = { roped: Array.from(await qr.read()), out: Array.from(await o.read()) };
    [batch, q, k, v, p, qr, o].forEach((x) => x.free());
    ctx.close();
    return out;
  }, d);
}

// rope (pairs 2i, 2i + 1, base 1e4) of the queries, float64; and the
// elements of `roped` off its contract (4e-6 relative + 4e-6)
function ropeOff(d, roped) {
  let off = 0;
  for (let s = 0; s < d.S; s++)
    for (let h = 0; h < d.H; h++)
      for (let i = 0; i < d.D / 2; i++) {
        const at = (s * d.H + h) * d.D + 2 * i, th = d.pos[s] * 10000 ** (-2 * i / d.D);
        const [u, w] = [d.Q[at], d.Q[at + 1]];
        const ref = [u * Math.cos(th) - w * Math.sin(th), u * Math.sin(th) + w * Math.cos(th)];
        ref.forEach((r, j) => { if (!(Math.abs(roped[at + j] - r) <= 4e-6 * Math.abs(r) + 4e-6)) off++; });
      }
  return off;
}

// attention of step s's roped query over keys 0..P0+s, float64; the
// elements off its contract (1e-5 of sum p|v|, + 1e-6)
function attentionOff(d, roped, out) {
  let off = 0;
  for (let s = 0; s < d.S; s++)
    for (let h = 0; h < d.H; h++) {
      const kvh = Math.floor(h / (d.H / d.KVH)), n = d.P0 + s + 1, q0 = (s * d.H + h) * d.D;
      const sc = Array.from({ length: n }, (_, j) => {
        let t = 0;
        for (let e = 0; e < d.D; e++) t += roped[q0 + e] * d.K[(j * d.KVH + kvh) * d.D + e];
        return t / Math.sqrt(d.D);
      });
      const mx = Math.max(...sc), w = sc.map((x) => Math.exp(x - mx)), sum = w.reduce((a, b) => a + b, 0);
      for (let e = 0; e < d.D; e++) {
        let ref = 0, mag = 0;
        w.forEach((x, j) => { const vv = d.V[(j * d.KVH + kvh) * d.D + e]; ref += x * vv / sum; mag += x * Math.abs(vv) / sum; });
        if (!(Math.abs(out[q0 + e] - ref) <= 1e-5 * mag + 1e-6)) off++;
      }
    }
  return off;
}

const WEBGPU_FLAGS = ['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader'];

watchdog(800, 'test-wasm-webgpu');
const server = await serve(resolve(webDir));
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium(WEBGPU_FLAGS);
// rayo-conform in the page with these options and kernel forms
async function conformInPage(args, kernels, what) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${base}conform/?args=${encodeURIComponent(args)}&kernels=${kernels}`);
  await waitForState(page, ['done', 'error'], 900, `rayo-conform (kernels: ${kernels})`);
  const log = await page.textContent('#log');
  console.log(`${await page.textContent('#device')} (kernels: ${kernels})\n${log}`);
  const state = await page.getAttribute('body', 'data-state');
  check(state === 'done', `the page ran rayo-conform (state ${state})`);
  const device = await page.getAttribute('body', 'data-device');
  check(!!device, `the webgpu plugin has a device (${device || 'none'})`);
  check(/^\s+webgpu\s/m.test(log), 'the webgpu backend was checked');
  const status = await page.getAttribute('body', 'data-status');
  check(status === '0', `${what} conforms (exit status ${status})`);
  check(errors.length === 0, `no errors in the page${errors.length ? ': ' + errors.join('; ') : ''}`);
  await page.close();
  return log;
}

try {
  const args = process.env.RAYO_CONFORM_ARGS || '--quick';
  const all = await conformInPage(args, 'auto', 'every op the webgpu plugin registers');
  const tiled = await conformInPage(`${args} --op matmul,gemv,softmax,log_softmax,layernorm,rmsnorm`, 'tiled',
    'matmul, gemv and the row ops in their workgroup forms');
  for (const log of [all, tiled])
    check(!/layernorm on webgpu: \d+ of \d+ cases answered "unsupported"/.test(log),
      'layernorm runs every case on webgpu (with beta too: gamma ~ 100, beta ~ -+100)');

  // the JS API
  const [m, n, k] = [37 + Math.floor(random() * 40), 29 + Math.floor(random() * 40), 3 + Math.floor(random() * 300)];
  const A = randoms(m * k), B = randoms(k * n), x = randoms(k);
  const api = await browser.newPage();
  await api.goto(`${base}index.html?bench=0`);
  const r = await within(apiInPage(api, A, B, x, m, n, k), 300, 'the JS API in the page');
  const wg = r.backends.find((b) => b.name === 'webgpu') || {};
  check(wg.status === 'loaded' && /swiftshader/i.test(wg.device),
    `webgpu loaded on the software adapter (${wg.status}: ${wg.device})`);
  check(/binding \d+ MiB, workgroup storage \d+ KiB/.test(wg.device) && /subgroups|shader-f16/.test(wg.device),
    `its features and limits are shown (${wg.device})`);
  check(/maxStorageBufferBindingSize \d+/.test(r.webgpu.reason), `rayo.webgpu says the same (${r.webgpu.reason})`);
  const ref = matmulRef(A, B, m, n, k);
  check(offContract(r.matmul, ref) === 0, `matmulAsync ${m}x${n}x${k} on webgpu within the contract`);
  const gref = matmulRef(A, x, m, 1, k);
  check(offContract(r.gemv, gref) === 0, `gemvAsync ${m}x${k} on webgpu within the contract`);
  check(/not supported|unsupported/i.test(r.syncOnWebgpu) && /async/.test(r.syncOnWebgpu),
    `the sync form is refused on webgpu, with the reason (${r.syncOnWebgpu})`);
  check(offContract(r.syncChain, ref) === 0, 'the sync form runs on the chain (CPU) within the contract');
  check(r.bufferBackend === 'webgpu', `device buffers on webgpu (${r.bufferBackend})`);
  check(offContract(r.batch, ref, (v) => Math.max(v, 0)) === 0, 'a batch (matmul, relu) on webgpu, read back');
  check(r.replay.length === m * n && r.replay.every((v, i) => v === -2 * r.batch[i]),
    `a batch replayed at ${m} steps (scale of row step), read back`);
  // a decode loop on the GPU: rope and attention, replayed with a growing KV cache
  const dec = { S: 5, H: 4, KVH: 2, D: 16, P0: 3 + Math.floor(random() * 20) };
  dec.Q = randoms(dec.S * dec.H * dec.D);
  dec.K = randoms((dec.P0 + dec.S) * dec.KVH * dec.D);
  dec.V = randoms((dec.P0 + dec.S) * dec.KVH * dec.D);
  dec.pos = Array.from({ length: dec.S }, (_, s) => dec.P0 + s);
  const got = await within(decodeInPage(api, dec), 300, 'the decode loop in the page');
  check(ropeOff(dec, got.roped) === 0, `rope in a replayed batch on webgpu (${dec.S} steps) within its contract`);
  check(attentionOff(dec, got.roped, got.out) === 0,
    `attention over a KV cache growing with the step (${dec.P0 + 1}..${dec.P0 + dec.S} keys, GQA ${dec.H}/${dec.KVH}) within its contract`);
  await api.close();

  // the example page's WebGPU benchmark
  const bench = await browser.newPage({ viewport: { width: 1100, height: 1100 } });
  await bench.goto(`${base}index.html?bench=0&webgpu=quick`);
  await bench.waitForSelector('body[data-webgpu-bench="done"], body[data-webgpu-bench="error"]', { timeout: 300000 });
  console.log(`webgpu benchmark: ${await bench.textContent('#webgpu-status')}`);
  const rows = await bench.$$eval('#bench-webgpu tbody tr', (trs) => trs.map((tr) => ({
    op: tr.dataset.op, ratio: Number(tr.dataset.ratio), cells: [...tr.cells].map((c) => c.textContent) })));
  for (const op of ['matmul', 'gemv']) {
    const row = rows.find((x) => x.op === op);
    check(row && row.ratio > 0, `WebGPU benchmark row for ${op}${row ? ': ' + row.cells.join(' | ') : ''}`);
  }
  await bench.close();
} finally {
  await browser.close();
  server.close();
}
console.log(failures() ? `${failures()} check(s) failed` : 'all checks passed');
process.exit(failures() ? 1 : 0);
