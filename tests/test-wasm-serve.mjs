// SPDX-License-Identifier: MIT
// test-wasm-serve.mjs - what the page tests share: a static file server on
// 127.0.0.1 for a `make wasm` build's web/ folder, and headless Chromium
// (CHROMIUM, default /usr/bin/chromium) driven by playwright-core
// (PLAYWRIGHT_CORE_DIR: a folder with node_modules/playwright-core).
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { extname, join, normalize, resolve } from 'node:path';

const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript',
  '.css': 'text/css', '.wasm': 'application/wasm', '.so': 'application/octet-stream' };

/** Serves root; headers: extra response headers (COOP/COEP...). */
export function serve(root, headers = {}) {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(resolve(root))) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'Content-Type': TYPES[extname(file)] || 'application/octet-stream', ...headers });
      res.end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

/** Headless Chromium with these extra command-line flags. */
export function launchChromium(flags = []) {
  const require = createRequire(join(resolve(process.env.PLAYWRIGHT_CORE_DIR || '.'), 'package.json'));
  const { chromium } = require('playwright-core');
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', ...flags],
  });
}

/** A checker: check(ok, what) prints ok/FAIL; failures() counts. */
export function checker() {
  let failed = 0;
  const check = (ok, what) => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failed++;
  };
  return { check, failures: () => failed };
}

/**
 * Ends the test with a failure when it still runs after `seconds`: a page or
 * a GPU read-back that never settles must fail the test, not stall the run.
 */
export function watchdog(seconds, name) {
  setTimeout(() => {
    console.log(`FAIL ${name}: still running after ${seconds} s, stopped (a page or a read-back never settled)`);
    process.exit(1);
  }, seconds * 1000).unref();
}

/** `promise`, or an error naming `what` once `seconds` have passed. */
export function within(promise, seconds, what) {
  let timer;
  const late = new Promise((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what}: no answer in ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Waits until body[data-state] is one of `states` (at most `seconds`), and
 * every minute prints how long it has waited and the last line of the page's
 * #log, so a slow or stuck page shows where it is.  Returns the state.
 */
export async function waitForState(page, states, seconds, what) {
  const t0 = Date.now();
  let told = t0;
  for (;;) {
    const now = await within(page.evaluate(() => ({ state: document.body.dataset.state,
      log: (document.querySelector('#log') || {}).textContent || '' })), 60, `${what}: the page`);
    if (states.includes(now.state)) return now.state;
    const waited = (Date.now() - t0) / 1000;
    if (waited > seconds)
      throw new Error(`${what}: state '${now.state}' after ${Math.round(waited)} s; the log ends: ${now.log.trim().split('\n').pop()}`);
    if (Date.now() - told >= 60000) {
      told = Date.now();
      console.log(`  ... ${what}: ${Math.round(waited)} s, state '${now.state}': ${now.log.trim().split('\n').pop() || '(no log yet)'}`);
    }
    await new Promise((ok) => setTimeout(ok, 1000));
  }
}
