// SPDX-License-Identifier: MIT
// bench-webgpu.mjs - the webgpu backend against SIMD128 (wasm) in the same
// page: matmul 1024^3 and a 4096 x 11008 Q4_0 gemv (a Llama-7B FFN shape).
//
//   import { runWebgpuBenchmark } from './bench-webgpu.mjs';
//   const rows = await runWebgpuBenchmark(ctx, { onRow });   // needs rayo.webgpu.device
//   { quick: true }: matmul 256^3 and a 1024 x 2752 Q4_0 gemv (what the test runs)
//   { ops: ['gemv'] }: only these ops' cases
//
// webgpu keeps its operands in device buffers (uploaded once, as a decoder
// keeps its weights) and each timed call is one batch of the op, submitted
// and awaited; wasm runs the same op on heap arrays (ctx.run, no copies).
// A time is the best of up to three calls after a warm-up call, fewer when
// they take long (none is started after TIME_BUDGET_MS); when the warm-up
// alone takes longer than that, its time is the figure (first: true, the
// pipelines' set-up included): matmul 1024^3 takes a minute or more a call
// on a software adapter.  On a software adapter (SwiftShader) the GPU is
// the CPU: a sanity figure, not a GPU's speed.

const RAYO_DTYPE_Q4_0 = 9;
const Q4_0_BLOCK = { elems: 32, bytes: 18 };
const CALLS = 3;
const TIME_BUDGET_MS = 10000;

const matmulCase = (s) => ({ op: 'matmul', size: `${s}^3`, m: s, n: s, k: s, flop: 2 * s ** 3 });
const q4Case = (m, n) => ({ op: 'gemv', size: `${m}x${n} Q4_0`, m, n, dtypes: RAYO_DTYPE_Q4_0, flop: 2 * m * n });
export const WEBGPU_CASES = [matmulCase(1024), q4Case(4096, 11008)];
export const WEBGPU_QUICK_CASES = [matmulCase(256), q4Case(1024, 2752)];

/** A fixed pattern of bytes. */
function patternBytes(count, seed) {
  const bytes = new Uint8Array(count);
  let s = seed >>> 0;
  for (let i = 0; i < count; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    bytes[i] = s >>> 24;
  }
  return bytes;
}

/** Floats in [-1, 1) from the pattern. */
const patternFloats = (count, seed) => Float32Array.from(patternBytes(count, seed), (b) => b / 128 - 1);

/** Q4_0 rows: every block's f16 scale set to 1/64, nibbles from the pattern. */
function q4_0Rows(m, n) {
  const bytes = patternBytes(m * (n / Q4_0_BLOCK.elems) * Q4_0_BLOCK.bytes, 7);
  for (let o = 0; o < bytes.length; o += Q4_0_BLOCK.bytes) {
    bytes[o] = 0x00;
    bytes[o + 1] = 0x24; // f16 0x2400 = 2^-6
  }
  return bytes;
}

/** The operands of a case: a (bytes or floats), b, and y's length. */
function operands(c) {
  if (c.op === 'matmul') return { a: patternFloats(c.m * c.k, 1), b: patternFloats(c.k * c.n, 2), y: c.m * c.n };
  return { a: q4_0Rows(c.m, c.n), b: patternFloats(c.n, 3), y: c.m };
}

/** A heap array holding these bytes (floats or blocks). */
function heapBytes(ctx, bytes) {
  const array = ctx.array(Math.ceil(bytes.byteLength / 4));
  new Uint8Array(ctx.core.HEAPU8.buffer, array.ptr, bytes.byteLength)
    .set(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  return array;
}

/** {ms, first}: the best call's time; first when only the warm-up ran. */
async function bestMs(fn) {
  const begin = performance.now();
  await fn(); // warm up: pipelines, compilation tiers
  const warmUp = performance.now() - begin;
  if (warmUp > TIME_BUDGET_MS) return { ms: warmUp, first: true };
  let best = Infinity;
  for (let i = 0; i < CALLS && performance.now() - begin < TIME_BUDGET_MS; i++) {
    const start = performance.now();
    await fn();
    best = Math.min(best, performance.now() - start);
  }
  return { ms: best, first: false };
}

async function timeWebgpu(ctx, c, ops) {
  const a = ctx.buffer(ops.a, { backend: 'webgpu' });
  const b = ctx.buffer(ops.b, { backend: 'webgpu' });
  const y = ctx.buffer(ops.y, { backend: 'webgpu' });
  try {
    return await bestMs(async () => {
      const batch = ctx.batch({ backend: 'webgpu' });
      try {
        batch.record(c.op, { a, b, y, m: c.m, n: c.n, k: c.k || 0, alpha: 1, dtypes: c.dtypes || 0 });
        await batch.submit();
      } finally {
        batch.free();
      }
    });
  } finally {
    [a, b, y].forEach((x) => x.free());
  }
}

async function timeWasm(ctx, c, ops) {
  const a = heapBytes(ctx, ops.a), b = ctx.array(ops.b), y = ctx.array(ops.y);
  try {
    const call = { a, b, y, m: c.m, n: c.n, k: c.k || 0, alpha: 1, dtypes: c.dtypes || 0 };
    return await bestMs(async () => ctx.run(c.op, call, 'wasm'));
  } finally {
    [a, b, y].forEach((x) => x.free());
  }
}

/** Times every case on webgpu and wasm; onRow({op, size, times, first,
 *  gflops, ratio}) after each (ratio: wasm time / webgpu time; first: per
 *  backend, whether its time is the warm-up call's). */
export async function runWebgpuBenchmark(ctx, { onRow = () => {}, quick = false, ops = null } = {}) {
  const rows = [];
  const cases = (quick ? WEBGPU_QUICK_CASES : WEBGPU_CASES).filter((c) => !ops || ops.includes(c.op));
  for (const c of cases) {
    const ops = operands(c);
    const timed = { webgpu: await timeWebgpu(ctx, c, ops), wasm: await timeWasm(ctx, c, ops) };
    const times = { webgpu: timed.webgpu.ms, wasm: timed.wasm.ms };
    const first = { webgpu: timed.webgpu.first, wasm: timed.wasm.first };
    const gflops = Object.fromEntries(Object.entries(times).map(([k, ms]) => [k, c.flop / ms / 1e6]));
    const row = { op: c.op, size: c.size, times, first, gflops, ratio: times.wasm / times.webgpu };
    rows.push(row);
    onRow(row);
  }
  return rows;
}
