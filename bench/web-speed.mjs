// SPDX-License-Identifier: MIT
// web-speed.mjs - the browser build's speed in headless Chromium (driven by
// bench/web-speed.sh, which makes the model and finds the browser).
//
//   node bench/web-speed.mjs WEB_DIR MODEL N QUICK
// WEB_DIR: a `make wasm` build's web/; MODEL: a GGUF file's URL relative to
// WEB_DIR/llama/; N: tokens to decode; QUICK: 1 for the page benchmark's
// small sizes.  Env: PLAYWRIGHT_CORE_DIR, CHROMIUM (tests/test-wasm-serve.mjs).
//
// (a) the example page's WebGPU benchmark (webgpu vs SIMD128, same page):
//     matmul 1024^3 and a 4096 x 11008 Q4_0 gemv (QUICK: 256^3, 1024 x 2752);
// (b) the Llama page decoding MODEL: wasm on 1 and on 2 threads (the
//     threaded module in a cross-origin isolated page, RAYO_THREADS through
//     ?threads=), and webgpu (the model resident in its buffers).
// Prints a table with the adapter, the CPUs and the load average before and
// after.  A measurement, not a test: it asserts nothing beyond the runs
// finishing (exit 1 when one does not).
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { launchChromium, serve } from '../tests/test-wasm-serve.mjs';

const [webDir, model, n, quick] = process.argv.slice(2);
if (!n) {
  console.error('usage: node web-speed.mjs WEB_DIR MODEL N QUICK');
  process.exit(2);
}
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const loadBefore = load();
const ISOLATED = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
const server = await serve(resolve(webDir));
const isolatedServer = await serve(resolve(webDir), ISOLATED);
const root = (s) => `http://127.0.0.1:${s.address().port}/`;
const browser = await launchChromium(['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader']);
const version = browser.version();
const rows = [];
let failed = 0;

// (a) the page benchmark: its rows as the page shows them
async function pageBenchmark() {
  const page = await browser.newPage();
  await page.goto(`${root(server)}index.html?bench=0&webgpu=${quick === '1' ? 'quick' : '1'}`);
  await page.waitForSelector('body[data-webgpu-bench="done"], body[data-webgpu-bench="error"]', { timeout: 0 });
  const status = await page.textContent('#webgpu-status');
  const cells = await page.$$eval('#bench-webgpu tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  await page.close();
  if (!cells.length) {
    console.log(`page benchmark failed: ${status}`);
    failed++;
  }
  for (const [op, size, webgpu, wasm, ratio] of cells)
    rows.push([`${op} ${size}`, `webgpu ${webgpu}`, `SIMD128 ${wasm}`, `SIMD128/webgpu ${ratio}`]);
  return status;
}

// (b) one decode in the Llama page: {tokS, prefill, threads, used}
async function decode(base, backend, threads) {
  const page = await browser.newPage();
  const query = new URLSearchParams({ model, prompt: 'Once upon a time', n, backend, args: '--ignore-eos --warmup', run: '1' });
  if (threads) query.set('threads', String(threads));
  await page.goto(`${base}llama/?${query}`);
  await page.waitForSelector('body[data-state="done"], body[data-state="error"]', { timeout: 0 });
  const got = await page.evaluate(() => ({
    state: document.body.dataset.state, threads: document.body.dataset.threads,
    used: document.querySelector('#used').textContent, speed: document.querySelector('#speed').textContent,
    prefill: document.querySelector('#prefill').textContent, output: document.querySelector('#output').textContent,
  }));
  await page.close();
  if (got.state !== 'done') {
    console.log(`decode on ${backend} failed: ${got.output}`);
    failed++;
  }
  got.tokS = Number((/([0-9.]+) tokens\/s/.exec(got.speed) || [])[1]);
  return got;
}

async function decodes() {
  const one = await decode(root(isolatedServer), 'wasm', 1);
  const two = await decode(root(isolatedServer), 'wasm', 2);
  const gpu = await decode(root(server), 'webgpu');
  for (const [what, r] of [['wasm, 1 thread (isolated page)', one], ['wasm, 2 threads (isolated page)', two],
    ['webgpu (SwiftShader)', gpu]])
    rows.push([`decode ${n} tokens`, what, `${r.threads} threads, ${r.used}`, `decode ${r.speed}; prefill ${r.prefill}`]);
  rows.push(['decode 2 threads / 1 thread', `${(two.tokS / one.tokS).toFixed(2)}x`, '', '']);
}

let adapter = '';
try {
  adapter = await pageBenchmark();
  await decodes();
} finally {
  await browser.close();
  server.close();
  isolatedServer.close();
}
console.log(`\nheadless Chromium ${version}; WebGPU: ${adapter}; model ${model}`);
console.log(`load average before: ${loadBefore}; after: ${load()}\n`);
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
process.exit(failed ? 1 : 0);
