// SPDX-License-Identifier: MIT
// test-wasm-page.mjs - the example page (examples/web) in headless Chromium.
//
//   node tests/test-wasm-page.mjs WEB_DIR SCREENSHOT.png
// Env: PLAYWRIGHT_CORE_DIR (folder with node_modules/playwright-core),
//      CHROMIUM (default /usr/bin/chromium).
//
// Serves WEB_DIR (a `make wasm` build's web/ folder) on 127.0.0.1, opens the
// page in Chromium driven by playwright-core, and checks:
//   1. as the browser is: SIMD128 detected, scalar and wasm loaded, wasm the
//      backend chosen for every f32 op (scalar for the inference ops), a
//      benchmark row with a speed-up for each op of bench.mjs, no error;
//      saves a screenshot;
//   2. with WebAssembly.validate made to refuse SIMD code (an engine without
//      SIMD128, as the core's probe sees it): wasm refused with a reason that
//      names simd128, scalar chosen for every op;
//   3. served cross-origin isolated (COOP/COEP headers): the threaded core
//      (a thread per CPU in the backends' row; not isolated, 1 says why),
//      and a matmul on wasm and scalar over those threads checked against
//      float64 (fresh random inputs).
// Exit 0 when all holds, 1 otherwise (77: skipped, see test-wasm-page.sh).
import { resolve } from 'node:path';
import { checker, launchChromium, serve, watchdog, within } from './test-wasm-serve.mjs';

const [webDir, screenshot] = process.argv.slice(2);
if (!webDir || !screenshot) {
  console.error('usage: node test-wasm-page.mjs WEB_DIR SCREENSHOT.png');
  process.exit(2);
}
const { check, failures } = checker();

// An engine without SIMD128, as far as validate() tells: modules with the
// SIMD prefix byte 0xfd right after a v128.const-style opcode are refused.
const NO_SIMD_SCRIPT = `{
  const validate = WebAssembly.validate;
  WebAssembly.validate = (bytes) => {
    const b = new Uint8Array(bytes.buffer ? bytes.buffer : bytes);
    for (let i = 0; i + 1 < b.length; i++) if (b[i] === 0xfd && b[i + 1] === 0x0c) return false;
    return validate(bytes);
  };
}`;

async function openPage(browser, url, { noSimd = false } = {}) {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  if (noSimd) await page.addInitScript(NO_SIMD_SCRIPT);
  await page.goto(url);
  return { page, errors };
}

// matmul in the page on the threaded core (m, n, k above the pool's split),
// each backend checked against float64: elements off 1e-5 of the sum of |terms|.
function threadedMatmul(page) {
  return page.evaluate(async () => {
    const { loadRayo } = await import('./rayo/rayo.mjs');
    const rayo = await loadRayo({ webgpu: false });
    const ctx = rayo.open();
    const [m, n, k] = [301, 203, 257];
    const A = Float32Array.from({ length: m * k }, () => Math.random() * 2 - 1);
    const B = Float32Array.from({ length: k * n }, () => Math.random() * 2 - 1);
    const out = { threads: ctx.threads(), size: `${m}x${n}x${k}` };
    for (const be of ['wasm', 'scalar']) {
      const C = ctx.matmul(A, B, m, n, k, { backend: be });
      let off = 0;
      for (let i = 0; i < m; i++)
        for (let j = 0; j < n; j++) {
          let sum = 0, abs = 0;
          for (let p = 0; p < k; p++) {
            sum += A[i * k + p] * B[p * n + j];
            abs += Math.abs(A[i * k + p] * B[p * n + j]);
          }
          if (!(Math.abs(C[i * n + j] - sum) <= 1e-5 * abs)) off++;
        }
      out[be] = off;
    }
    ctx.close();
    return out;
  });
}

watchdog(600, 'test-wasm-page');
const server = await serve(resolve(webDir));
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium(['--disable-gpu']);
try {
  // 1. the browser as it is
  const { page, errors } = await openPage(browser, base);
  await page.waitForSelector('body[data-state="done"], body[data-state="error"]', { timeout: 180000 });
  const state = await page.getAttribute('body', 'data-state');
  check(state === 'done', `page finished (state ${state}${state === 'error' ? ': ' + await page.textContent('#status') : ''})`);
  check(await page.getAttribute('body', 'data-simd128') === 'true', 'engine validates SIMD128');
  const status = async (name) => page.textContent(`#backends tr[data-backend="${name}"] td:nth-child(2)`).catch(() => null);
  check((await status('scalar') || '').startsWith('loaded'), 'scalar backend loaded');
  check((await status('wasm') || '').startsWith('loaded'), 'wasm backend loaded');
  const device = async (p, name) => p.textContent(`#backends tr[data-backend="${name}"] td:nth-child(3)`).catch(() => '');
  const threadsNotIsolated = await device(page, 'wasm');
  check(/threads: 1 \(not cross-origin isolated\)/.test(threadsNotIsolated), `not isolated: one thread, says why (${threadsNotIsolated})`);
  const chosen = await page.getAttribute('body', 'data-chosen');
  // wasm runs every f32 op; the inference ops fall through to
  // scalar until wasm has kernels for them (test-wasm-api checks op by op).
  check(chosen === 'wasm,scalar', `wasm (SIMD128) chosen first, scalar for the rest (chosen: ${chosen})`);
  const rows = await page.$$eval('#bench tbody tr', (trs) => trs.map((tr) => ({
    op: tr.dataset.op, ratio: Number(tr.dataset.ratio), cells: [...tr.cells].map((c) => c.textContent) })));
  for (const op of ['add', 'dot', 'exp', 'gelu', 'softmax', 'matmul']) {
    const row = rows.find((r) => r.op === op);
    check(row && row.ratio > 0, `benchmark row for ${op}${row ? ': ' + row.cells.join(' | ') : ''}`);
  }
  check(errors.length === 0, `no errors in the console${errors.length ? ': ' + errors.join('; ') : ''}`);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`screenshot: ${screenshot}`);
  await page.close();

  // 2. an engine without SIMD128: scalar runs, the reason is shown
  const noSimd = await openPage(browser, `${base}?bench=0`, { noSimd: true });
  await noSimd.page.waitForSelector('body[data-state="ready"], body[data-state="done"], body[data-state="error"]', { timeout: 60000 });
  check(await noSimd.page.getAttribute('body', 'data-simd128') === 'false', 'without SIMD128: the page says so');
  // The row's cells, each trimmed, joined with " | " (the row's textContent
  // runs them together: "wasmrejected-0this ...").
  const wasmRow = await noSimd.page.$eval('#backends tr[data-backend="wasm"]',
    (tr) => [...tr.cells].map((c) => c.textContent.replace(/\s+/g, ' ').trim()).join(' | ')).catch(() => '');
  check(/rejected|unavailable/.test(wasmRow) && /simd128/i.test(wasmRow),
    `without SIMD128: wasm refused with its reason (${wasmRow})`);
  const chosenNoSimd = await noSimd.page.getAttribute('body', 'data-chosen');
  check(chosenNoSimd === 'scalar', `without SIMD128: scalar chosen (chosen: ${chosenNoSimd})`);
  await noSimd.page.close();

  // 3. cross-origin isolated: the threaded core, a thread per CPU
  const isolatedServer = await serve(resolve(webDir), { 'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp' });
  const isolated = await openPage(browser, `http://127.0.0.1:${isolatedServer.address().port}/?bench=0`);
  await isolated.page.waitForSelector('body[data-state="ready"], body[data-state="error"]', { timeout: 60000 });
  check(await isolated.page.evaluate(() => crossOriginIsolated), 'COOP/COEP: the page is cross-origin isolated');
  const cpus = await isolated.page.evaluate(() => navigator.hardwareConcurrency);
  const threadsIsolated = await device(isolated.page, 'scalar');
  check(threadsIsolated.includes(`threads: ${cpus > 1 ? cpus : '1 (one CPU)'}`), `isolated: a thread per CPU (${cpus}: ${threadsIsolated})`);
  const threaded = await within(threadedMatmul(isolated.page), 300, 'the threaded matmul in the page');
  check(threaded.threads === cpus, `threaded core: ${threaded.threads} threads`);
  for (const be of ['wasm', 'scalar'])
    check(threaded[be] === 0, `threaded core: matmul ${threaded.size} on ${be} within its contract (${threaded[be]} off)`);
  check(isolated.errors.length === 0, `isolated: no errors in the console${isolated.errors.length ? ': ' + isolated.errors.join('; ') : ''}`);
  await isolated.page.close();
  isolatedServer.close();
} finally {
  await browser.close();
  server.close();
}
console.log(failures() ? `${failures()} check(s) failed` : 'all checks passed');
process.exit(failures() ? 1 : 0);
