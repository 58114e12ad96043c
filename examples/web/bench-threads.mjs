// SPDX-License-Identifier: MIT
// bench-threads.mjs - a module Web Worker timing the Llama decoder's ops at
// TinyLlama's shapes on the wasm backend with the CPU threads asked for, to
// see which of them gain from a second thread (bench/web-speed.mjs's
// `threads` part starts it in a cross-origin isolated page, once per count).
//
//   worker.postMessage({ threads: 2 });   // answers { threads, rows: [{what, ms}] } or { error }
//
// The gemvs are the decoder's weight products (Q4_0, relaxed precision as
// rayo-llama runs them); add of 2^17 and 2^18 floats is the smallest job
// the CPU backends hand to the pool, so its time at 2 threads against 1
// shows what waking the pool and waiting for it costs.  A time is the best
// of SAMPLES samples of repeated calls, each at least SAMPLE_MS long, after
// WARM_MS of calls of every gemv (the engine compiles a module's functions
// in a fast tier first and optimizes the hot ones later, in each thread
// that runs them; a decoder's first tokens do the same).

import { loadRayo, Settings } from './rayo/rayo.mjs';

const SAMPLES = 25;
const SAMPLE_MS = 20;
const WARM_MS = 1000;
const RAYO_DTYPE_Q4_0 = 9;
const Q4_0_BLOCK = { elems: 32, bytes: 18 };
// TinyLlama 1.1B: embedding 2048, 256-wide K and V (4 KV heads), FFN 5632, vocabulary 32000
const GEMVS = [['q, o', 2048, 2048], ['k, v', 256, 2048], ['gate, up', 5632, 2048], ['down', 2048, 5632],
  ['output', 32000, 2048]];

function bestMs(fn) {
  fn();
  let best = Infinity;
  for (let s = 0; s < SAMPLES; s++) {
    let calls = 0, elapsed = 0;
    const start = performance.now();
    do {
      fn();
      calls++;
      elapsed = performance.now() - start;
    } while (elapsed < SAMPLE_MS);
    best = Math.min(best, elapsed / calls);
  }
  return best;
}

/** m rows of Q4_0 blocks in the heap: every scale 1/64, nibbles from a pattern. */
function q4_0Rows(ctx, m, n) {
  const count = m * (n / Q4_0_BLOCK.elems) * Q4_0_BLOCK.bytes;
  const array = ctx.array(Math.ceil(count / 4));
  const bytes = new Uint8Array(ctx.core.HEAPU8.buffer, array.ptr, count);
  for (let i = 0, s = 7; i < count; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    bytes[i] = s >>> 24;
  }
  for (let o = 0; o < count; o += Q4_0_BLOCK.bytes) bytes.set([0x00, 0x24], o); // f16 2^-6
  return array;
}

/** fn(call) with call() running a gemv of m x n Q4_0 weights. */
function withGemv(ctx, m, n, fn) {
  const a = q4_0Rows(ctx, m, n), b = ctx.array(Float32Array.from({ length: n }, (_, i) => Math.sin(i))), y = ctx.array(m);
  try {
    return fn(() => ctx.run('gemv', { a, b, y, m, n, alpha: 1, dtypes: RAYO_DTYPE_Q4_0 }, 'wasm'));
  } finally {
    [a, b, y].forEach((x) => x.free());
  }
}

function warmUp(ctx) {
  for (const [, m, n] of GEMVS)
    withGemv(ctx, m, n, (call) => {
      const start = performance.now();
      while (performance.now() - start < WARM_MS / GEMVS.length) call();
    });
}

function timeAdd(ctx, n) {
  const a = ctx.array(n), b = ctx.array(n), y = ctx.array(n);
  try {
    return bestMs(() => ctx.run('add', { a, b, y, n }, 'wasm'));
  } finally {
    [a, b, y].forEach((x) => x.free());
  }
}

async function measure(threads) {
  const rayo = await loadRayo();
  const ctx = rayo.open(new Settings({ rayo: { threads: String(threads) }, 'op.gemv': { precision: 'relaxed' } }));
  try {
    warmUp(ctx);
    const rows = GEMVS.map(([what, m, n]) => ({ what: `gemv ${m}x${n} Q4_0 (${what})`, ms: withGemv(ctx, m, n, bestMs) }));
    for (const n of [1 << 17, 1 << 18]) rows.push({ what: `add ${n}`, ms: timeAdd(ctx, n) });
    return { threads: String(ctx.threads()), rows };
  } finally {
    ctx.close();
  }
}

self.onmessage = ({ data }) => measure(data.threads).then(postMessage,
  (e) => postMessage({ error: String(e && e.message ? e.message : e) }));
