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
// and every op it registers conforms (exit status 0).
// Exit 0 when all holds, 1 otherwise.
import { resolve } from 'node:path';
import { checker, launchChromium, serve } from './test-wasm-serve.mjs';

const [webDir] = process.argv.slice(2);
if (!webDir) {
  console.error('usage: node test-wasm-webgpu.mjs WEB_DIR');
  process.exit(2);
}
const { check, failures } = checker();
const WEBGPU_FLAGS = ['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader'];

const server = await serve(resolve(webDir));
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium(WEBGPU_FLAGS);
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const args = process.env.RAYO_CONFORM_ARGS || '--quick';
  await page.goto(`${base}conform/?args=${encodeURIComponent(args)}`);
  await page.waitForSelector('body[data-state="done"], body[data-state="error"]', { timeout: 1500000 });
  const log = await page.textContent('#log');
  console.log(`${await page.textContent('#device')}\n${log}`);
  const state = await page.getAttribute('body', 'data-state');
  check(state === 'done', `the page ran rayo-conform (state ${state})`);
  const device = await page.getAttribute('body', 'data-device');
  check(!!device, `the webgpu plugin has a device (${device || 'none'})`);
  check(/^\s+webgpu\s/m.test(log), 'the webgpu backend was checked');
  const status = await page.getAttribute('body', 'data-status');
  check(status === '0', `every op the webgpu plugin registers conforms (exit status ${status})`);
  check(errors.length === 0, `no errors in the page${errors.length ? ': ' + errors.join('; ') : ''}`);
} finally {
  await browser.close();
  server.close();
}
console.log(failures() ? `${failures()} check(s) failed` : 'all checks passed');
process.exit(failures() ? 1 : 0);
