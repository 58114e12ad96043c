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
// loaded the model (its progress bar full), decoded N tokens at strict
// precision, names that backend as the one the weight products ran on (on
// webgpu: the model resident in its buffers) with a decode speed, and gives
// the native tokens exactly.  Exit 0 when all holds, 1 otherwise.
import { resolve } from 'node:path';
import { checker, launchChromium, serve } from './test-wasm-serve.mjs';

const [webDir, model, prompt, n, tokens] = process.argv.slice(2);
if (!tokens) {
  console.error('usage: node test-wasm-llama.mjs WEB_DIR MODEL PROMPT N TOKENS');
  process.exit(2);
}
const { check, failures } = checker();
const server = await serve(resolve(webDir));
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium(['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader']);
try {
  for (const backend of ['webgpu', 'wasm', 'scalar']) {
    const page = await browser.newPage();
    const args = new URLSearchParams({ model, prompt, n, backend, args: '--precision strict --ignore-eos --tokens', run: '1' });
    await page.goto(`${base}llama/?${args}`);
    await page.waitForSelector('body[data-state="done"], body[data-state="error"]', { timeout: 600000 });
    const got = await page.evaluate(() => ({
      state: document.body.dataset.state, tokens: document.body.dataset.tokens || '',
      backend: document.body.dataset.backend || '', used: document.querySelector('#used').textContent,
      speed: document.querySelector('#speed').textContent, progress: document.querySelector('#progress').value,
      output: document.querySelector('#output').textContent, log: document.querySelector('#log').textContent,
    }));
    console.log(`${backend}: ${got.tokens || got.output}; ${got.used}; ${got.speed}`);
    if (got.state !== 'done' || process.env.RAYO_TEST_VERBOSE) console.log(got.log);
    check(got.state === 'done', `${backend}: the page decoded`);
    check(got.progress === 1, `${backend}: the progress bar is full`);
    check(got.backend === backend, `${backend}: the weight products ran on ${backend} (page: '${got.backend}')`);
    if (backend === 'webgpu') check(got.used.includes('resident'), `${backend}: the model is resident on the GPU`);
    check(/tokens\/s/.test(got.speed), `${backend}: a decode speed is shown`);
    check(got.tokens.split(/\s+/).length === Number(n), `${backend}: ${n} tokens`);
    check(got.tokens === tokens, `${backend}: the native rayo-llama's tokens`);
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
process.exit(failures() ? 1 : 0);
