// SPDX-License-Identifier: MIT
// test-wasm-llama.mjs - the Llama decoder page in headless Chromium with
// WebGPU on SwiftShader (no GPU needed).
//
//   node tests/test-wasm-llama.mjs WEB_DIR MODEL PROMPT N TOKENS
// MODEL: the GGUF file's URL relative to WEB_DIR/llama/; TOKENS: the native
// rayo-llama's greedy token ids (space-separated) on that file.
// Env: PLAYWRIGHT_CORE_DIR, CHROMIUM (see test-wasm-serve.mjs).
//
// Checks, for each backend of the page (webgpu, wasm, scalar): the page
// ran the decoder in its module worker (not on the page's main thread),
// loaded the model (its progress bar full), decoded N tokens at strict
// precision on one thread, names that backend as the one the weight products
// ran on (on webgpu: the model resident in its buffers) with a decode speed,
// and gives the native tokens exactly.  Then once on wasm in a cross-origin
// isolated page (COOP/COEP): the threaded module in the worker, on 2 threads
// (?threads=2; 1 on a machine of one CPU), with the same tokens.  Exit 0 when all holds, 1 otherwise.
import { resolve } from 'node:path';
import { checker, launchChromium, serve, waitForState, watchdog, within } from './test-wasm-serve.mjs';

const [webDir, model, prompt, n, tokens] = process.argv.slice(2);
if (!tokens) {
  console.error('usage: node test-wasm-llama.mjs WEB_DIR MODEL PROMPT N TOKENS');
  process.exit(2);
}
const { check, failures } = checker();
watchdog(800, 'test-wasm-llama');
const server = await serve(resolve(webDir));
const isolatedServer = await serve(resolve(webDir), { 'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp' });
const url = (s) => `http://127.0.0.1:${s.address().port}/llama/`;
const browser = await launchChromium(['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader']);

// Decodes on one backend in the page at base; checks what every run must show.
async function decode(base, backend, what, threads) {
  const page = await browser.newPage();
  const args = new URLSearchParams({ model, prompt, n, backend, args: '--precision strict --ignore-eos --tokens', run: '1' });
  if (threads) args.set('threads', String(threads));
  await page.goto(`${base}?${args}`);
  await waitForState(page, ['done', 'error'], 600, `the decode on ${what}`);
  const got = await within(page.evaluate(() => ({
    state: document.body.dataset.state, tokens: document.body.dataset.tokens || '',
    backend: document.body.dataset.backend || '', worker: document.body.dataset.worker, threads: Number(document.body.dataset.threads),
    used: document.querySelector('#used').textContent, isolated: crossOriginIsolated,
    cpus: navigator.hardwareConcurrency,
    speed: document.querySelector('#speed').textContent, progress: document.querySelector('#progress').value,
    output: document.querySelector('#output').textContent, log: document.querySelector('#log').textContent,
  })), 60, `the page of ${what}`);
  console.log(`${what}: ${got.tokens || got.output}; ${got.used}; ${got.threads} threads; ${got.speed}`);
  if (got.state !== 'done' || process.env.RAYO_TEST_VERBOSE) console.log(got.log);
  check(got.state === 'done', `${what}: the page decoded`);
  check(got.worker === '1', `${what}: the decoder ran in the page's worker`);
  check(got.progress === 1, `${what}: the progress bar is full`);
  check(got.backend === backend, `${what}: the weight products ran on ${backend} (page: '${got.backend}')`);
  if (backend === 'webgpu') check(got.used.includes('resident'), `${what}: the model is resident on the GPU`);
  check(/tokens\/s/.test(got.speed), `${what}: a decode speed is shown`);
  check(got.tokens.split(/\s+/).length === Number(n), `${what}: ${n} tokens`);
  check(got.tokens === tokens, `${what}: the native rayo-llama's tokens`);
  await page.close();
  return got;
}

try {
  for (const backend of ['webgpu', 'wasm', 'scalar']) {
    const got = await decode(url(server), backend, backend);
    check(got.threads === 1, `${backend}: one thread where the page is not isolated (${got.threads})`);
  }
  // cross-origin isolated: the threaded module in the worker, 2 threads
  const got = await decode(url(isolatedServer), 'wasm', 'wasm, isolated, 2 threads', 2);
  check(got.isolated, 'wasm, isolated: the page is cross-origin isolated');
  const want = Math.min(2, got.cpus);
  check(got.threads === want, `wasm, isolated: ${want} threads (${got.threads}; ${got.cpus} CPUs)`);
} finally {
  await browser.close();
  server.close();
  isolatedServer.close();
}
process.exit(failures() ? 1 : 0);
