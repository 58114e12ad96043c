// SPDX-License-Identifier: MIT
// web-speed.mjs - the browser build's speed in headless Chromium (driven by
// bench/web-speed.sh, which makes the model and finds the browser).
//
//   node bench/web-speed.mjs --web WEB_DIR --model MODEL [--gpu-model MODEL]
//        [--tokens N] [--gpu-tokens N] [--repeat R] [--only PARTS] [--quick]
// WEB_DIR: a `make wasm` build's web/; MODEL: a GGUF file's URL relative to
// WEB_DIR/llama/ (--gpu-model: the one decode-webgpu decodes; default MODEL).  Env: PLAYWRIGHT_CORE_DIR, CHROMIUM (tests/test-wasm-serve.mjs).
//
// The parts (--only: a comma-separated list of them; default all):
//   matmul, gemv   the example page's WebGPU benchmark (webgpu vs SIMD128,
//                  same page): matmul 1024^3, a 4096 x 11008 Q4_0 gemv
//                  (--quick: 256^3, 1024 x 2752);
//   decode-cpu     the Llama page decoding MODEL (--tokens, default 16) on
//                  wasm with 1 and 2 threads (the threaded module in a
//                  cross-origin isolated page, RAYO_THREADS through
//                  ?threads=), alternately, --repeat times (default 3),
//                  then the 2-thread / 1-thread ratio of the bests;
//   decode-webgpu  the same page on webgpu (the model resident in its
//                  buffers) for --gpu-tokens (default 3) after the prompt
//                  "Once" (the CPU decodes follow "Once upon a time"): a
//                  software adapter takes tens of seconds a token at
//                  TinyLlama's shape (web-speed.sh gives it fewer layers).
// Each row is printed as soon as it is measured, with the load average then.
// A measurement, not a test: it asserts nothing beyond the runs finishing
// (exit 1 when one does not; a decode is given DECODE_LIMIT_MS).
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { launchChromium, serve } from '../tests/test-wasm-serve.mjs';

const PARTS = ['matmul', 'gemv', 'decode-cpu', 'decode-webgpu'];
const DECODE_LIMIT_MS = 10 * 60 * 1000;
const { values: opt } = parseArgs({
  options: {
    web: { type: 'string' }, model: { type: 'string' }, 'gpu-model': { type: 'string' }, tokens: { type: 'string', default: '16' },
    'gpu-tokens': { type: 'string', default: '3' }, repeat: { type: 'string', default: '3' },
    only: { type: 'string', default: PARTS.join(',') }, quick: { type: 'boolean', default: false },
  },
});
const parts = opt.only.split(',');
const unknown = parts.filter((p) => !PARTS.includes(p));
if (!opt.web || !opt.model || unknown.length) {
  console.error(`usage: node web-speed.mjs --web WEB_DIR --model MODEL [--tokens N] [--gpu-tokens N] [--repeat R]
       [--only ${PARTS.join(',')}] [--quick]${unknown.length ? `\nunknown part: ${unknown.join(', ')}` : ''}`);
  process.exit(2);
}
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const row = (...cells) => console.log(`| ${cells.join(' | ')} | load ${load()} |`);
let failed = 0;

// The page benchmark's rows (ops: matmul and/or gemv), each printed as the page adds it.
async function pageBenchmark(browser, base, ops) {
  const page = await browser.newPage();
  await page.goto(`${base}index.html?bench=0&webgpu=${opt.quick ? 'quick' : '1'}&ops=${ops.join(',')}`);
  const done = 'body[data-webgpu-bench="done"], body[data-webgpu-bench="error"]';
  for (let shown = 0; ;) {
    await page.waitForFunction(([n, sel]) => document.querySelectorAll('#bench-webgpu tbody tr').length > n ||
      document.querySelector(sel), [shown, done], { timeout: 0, polling: 500 });
    const cells = await page.$$eval('#bench-webgpu tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
    for (const [op, size, webgpu, wasm, ratio] of cells.slice(shown))
      row(`${op} ${size}`, `webgpu ${webgpu}`, `SIMD128 ${wasm}`, `SIMD128/webgpu ${ratio}`);
    shown = cells.length;
    if (await page.$(done)) break;
  }
  const status = await page.textContent('#webgpu-status');
  if (await page.$('body[data-webgpu-bench="error"]') || !(await page.$('#bench-webgpu tbody tr'))) {
    console.log(`page benchmark failed: ${status}`);
    failed++;
  } else console.log(`WebGPU: ${status}`);
  await page.close();
}

// One decode in the Llama page: {state, threads, used, speed, prefill, tokS}
async function decode(browser, base, { backend, n, threads, model = opt.model, prompt = 'Once upon a time' }) {
  const page = await browser.newPage();
  const query = new URLSearchParams({ model, prompt, n, backend,
    args: '--ignore-eos --warmup', run: '1' });
  if (threads) query.set('threads', String(threads));
  await page.goto(`${base}llama/?${query}`);
  let got;
  try {
    await page.waitForSelector('body[data-state="done"], body[data-state="error"]', { timeout: DECODE_LIMIT_MS });
    got = await page.evaluate(() => ({
      state: document.body.dataset.state, threads: document.body.dataset.threads,
      used: document.querySelector('#used').textContent, speed: document.querySelector('#speed').textContent,
      prefill: document.querySelector('#prefill').textContent, output: document.querySelector('#output').textContent,
      webgpu: document.querySelector('#webgpu').textContent,
    }));
  } catch {
    const log = await page.textContent('#log');
    got = { state: 'timeout', output: `did not finish in ${DECODE_LIMIT_MS / 1000} s; its log:\n${log}` };
  }
  await page.close();
  if (got.state !== 'done') {
    console.log(`decode on ${backend} failed: ${got.output}`);
    failed++;
  }
  got.tokS = Number((/([0-9.]+) tokens\/s/.exec(got.speed || '') || [])[1]);
  return got;
}

const decodeRow = (n, what, r) => r.state === 'done' &&
  row(`decode ${n} tokens`, what, `threads ${r.threads}, ${r.used}`, `decode ${r.speed}; prefill ${r.prefill}`);

// 1 and 2 threads alternately (the load changes over a run: each pair is
// measured close together), then the ratio of the bests and each pair's.
async function decodeCpu(browser, base) {
  const best = { 1: 0, 2: 0 };
  const pairs = [];
  for (let i = 0; i < Number(opt.repeat); i++) {
    const pair = {};
    for (const threads of [1, 2]) {
      const r = await decode(browser, base, { backend: 'wasm', n: opt.tokens, threads });
      decodeRow(opt.tokens, `wasm, ${threads} thread${threads > 1 ? 's' : ''} (isolated page), run ${i + 1}`, r);
      pair[threads] = r.tokS;
      best[threads] = Math.max(best[threads], r.tokS || 0);
    }
    pairs.push((pair[2] / pair[1]).toFixed(2));
  }
  row('decode 2 threads / 1 thread', `${(best[2] / best[1]).toFixed(2)}x best/best`, `pairs ${pairs.join(', ')}`, '');
}

const webDir = resolve(opt.web);
console.log(`model ${opt.model}; parts ${parts.join(', ')}; load average at start: ${load()}`);
const server = await serve(webDir);
const isolatedServer = await serve(webDir,
  { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
const root = (s) => `http://127.0.0.1:${s.address().port}/`;
const browser = await launchChromium(['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader']);
try {
  console.log(`headless Chromium ${browser.version()}`);
  const ops = parts.filter((p) => p === 'matmul' || p === 'gemv');
  if (ops.length) await pageBenchmark(browser, root(server), ops);
  if (parts.includes('decode-cpu')) await decodeCpu(browser, root(isolatedServer));
  if (parts.includes('decode-webgpu')) {
    const model = opt['gpu-model'] || opt.model;
    const r = await decode(browser, root(server), { backend: 'webgpu', n: opt['gpu-tokens'], model, prompt: 'Once' });
    decodeRow(opt['gpu-tokens'], `webgpu (SwiftShader), ${model}`, r);
    if (r.webgpu) console.log(r.webgpu);
  }
} finally {
  await browser.close();
  server.close();
  isolatedServer.close();
}
console.log(`load average at the end: ${load()}`);
process.exit(failed ? 1 : 0);
