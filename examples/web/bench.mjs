// SPDX-License-Identifier: MIT
// bench.mjs - scalar vs SIMD128 for a few ops, with rayo's JS API.
//
// Three ways to use it, one code path:
//   - imported: runBenchmark(ctx, {onRow}) (app.mjs does, in a worker);
//   - as a module Web Worker: post 'run', receive {row} messages then {done};
//   - under node, from a `make wasm` build:  node wasm-build/web/bench.mjs
//     (prints a table; --json for JSON).
// Every case calls each backend directly (rayo_run_on: no fallback) on heap
// arrays, so only the kernel is timed, never copies.  The time of a call is
// the best of SAMPLES samples, each repeating the call for >= SAMPLE_MS: on
// a shared machine the fastest sample is the one nothing else interrupted.

import { loadRayo } from './rayo/rayo.mjs';

const SAMPLES = 15;
const SAMPLE_MS = 10;

/** The cases: op, size label, operands, work (flop) per call. */
export const CASES = [
  { op: 'add', size: '2^20', n: 1 << 20, inputs: 2, flop: 1 << 20 },
  { op: 'dot', size: '2^20', n: 1 << 20, inputs: 2, result: 1, flop: 2 << 20 },
  { op: 'exp', size: '2^20', n: 1 << 20, inputs: 1 },
  { op: 'gelu', size: '2^20', n: 1 << 20, inputs: 1 },
  { op: 'softmax', size: '256x1024', m: 256, n: 1024, inputs: 1 },
  { op: 'matmul', size: '256^3', m: 256, n: 256, k: 256, flop: 2 * 256 ** 3 },
];

const now = () => performance.now();

/** Best time in ms of one call of fn. */
function bestMs(fn) {
  fn(); // warm up: compilation tiers, page faults
  const times = [];
  for (let s = 0; s < SAMPLES; s++) {
    let calls = 0;
    const start = now();
    let elapsed = 0;
    do {
      fn();
      calls++;
      elapsed = now() - start;
    } while (elapsed < SAMPLE_MS);
    times.push(elapsed / calls);
  }
  return Math.min(...times);
}

/** Inputs in [-2, 2): a fixed pattern, the same for every backend. */
function fill(array, seed) {
  const view = array.view();
  let s = seed >>> 0;
  for (let i = 0; i < view.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    view[i] = (s / 4294967296) * 4 - 2;
  }
  return array;
}

/** The heap arrays and the call of a case. */
function prepare(ctx, c) {
  if (c.op === 'matmul') {
    const A = fill(ctx.array(c.m * c.k), 1), B = fill(ctx.array(c.k * c.n), 2);
    const C = ctx.array(c.m * c.n);
    return { arrays: [A, B, C], call: { a: A, b: B, y: C, m: c.m, n: c.n, k: c.k, alpha: 1, beta: 0 } };
  }
  const count = (c.m || 1) * c.n;
  const a = fill(ctx.array(count), 3);
  const b = c.inputs === 2 ? fill(ctx.array(count), 4) : null;
  const y = ctx.array(c.result ? 1 : count);
  const arrays = [a, y].concat(b ? [b] : []);
  return { arrays, call: { a, b, y, m: c.m || 0, n: c.n } };
}

/** Runs every case on the backends given (default: scalar and wasm, those
 *  loaded); onRow({op, size, times: {backend: ms}, ratio}) after each case. */
export function runBenchmark(ctx, { backends = ['scalar', 'wasm'], onRow = () => {} } = {}) {
  const loaded = new Set(ctx.backends().filter((b) => b.status === 'loaded').map((b) => b.name));
  const use = backends.filter((b) => loaded.has(b));
  const rows = [];
  for (const c of CASES) {
    const { arrays, call } = prepare(ctx, c);
    const times = {};
    try {
      for (const backend of use) times[backend] = bestMs(() => ctx.run(c.op, call, backend));
    } finally {
      arrays.forEach((a) => a.free());
    }
    const ratio = times.scalar && times.wasm ? times.scalar / times.wasm : null;
    const row = { op: c.op, size: c.size, times, ratio };
    rows.push(row);
    onRow(row);
  }
  return rows;
}

/** The environment, for the record. */
export function describeEngine() {
  if (typeof navigator === 'object' && navigator.userAgent) return navigator.userAgent;
  if (typeof process === 'object') return `node ${process.version} (V8 ${process.versions.v8})`;
  return 'unknown';
}

// ---- as a module worker ----
const isWorker = typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope;
if (isWorker) {
  self.onmessage = async (event) => {
    if (event.data !== 'run') return;
    try {
      const rayo = await loadRayo();
      const ctx = rayo.open();
      runBenchmark(ctx, { onRow: (row) => self.postMessage({ row }) });
      ctx.close();
      self.postMessage({ done: true, engine: describeEngine() });
    } catch (e) {
      self.postMessage({ error: String(e && e.stack ? e.stack : e) });
    }
  };
}

// ---- under node, as a program ----
const isNodeMain = typeof process === 'object' && process.argv && process.argv[1] &&
  import.meta.url === (await import('node:url')).pathToFileURL(process.argv[1]).href;
if (isNodeMain) {
  const rayo = await loadRayo();
  const ctx = rayo.open();
  const fmt = (ms) => (ms === undefined ? '-' : ms < 1 ? `${(ms * 1000).toFixed(1)} us` : `${ms.toFixed(3)} ms`);
  if (!process.argv.includes('--json'))
    console.log(`rayo ${rayo.version} JS benchmark, ${describeEngine()}, ${new Date().toISOString()}\n` +
      'op        size        scalar        wasm          speed-up');
  const rows = runBenchmark(ctx, {
    onRow: (r) => {
      if (!process.argv.includes('--json'))
        console.log(`${r.op.padEnd(10)}${r.size.padEnd(12)}${fmt(r.times.scalar).padEnd(14)}` +
          `${fmt(r.times.wasm).padEnd(14)}${r.ratio ? r.ratio.toFixed(2) + 'x' : '-'}`);
    },
  });
  if (process.argv.includes('--json')) console.log(JSON.stringify({ engine: describeEngine(), rows }, null, 1));
  ctx.close();
}
