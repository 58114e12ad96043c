// SPDX-License-Identifier: MIT
// app.mjs - the example page: loads rayo's WebAssembly build on the main
// thread, shows the engine's SIMD128 support and every backend found with
// its status and reason, then runs bench.mjs in a Web Worker (the page
// stays responsive) and fills the table as results come.
//
// The page records its progress in <body data-state>: loading, ready,
// benchmarking, done or error; data-chosen holds the backend chosen for
// every op (the headless Chromium test reads both).  ?bench=0 leaves the
// benchmark to the button.
//
// Where WebGPU granted a device, the second benchmark (bench-webgpu.mjs)
// times the webgpu backend against SIMD128 on the main thread (the GPU's
// answers are awaited: the page stays responsive while it works);
// ?webgpu=1 starts it at once (?webgpu=quick: at smaller sizes; &ops=gemv:
// only the gemv, ops comma-separated), else its button does.  Its progress is in
// <body data-webgpu-bench>: idle, running, done or error.

import { loadRayo, engineHasSimd128 } from './rayo/rayo.mjs';
import { runWebgpuBenchmark } from './bench-webgpu.mjs';

const $ = (sel) => document.querySelector(sel);

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function showBackends(ctx) {
  const body = $('#backends tbody');
  body.textContent = '';
  for (const b of ctx.backends()) {
    const row = body.insertRow();
    row.className = b.status;
    row.dataset.backend = b.name;
    cell(row, b.name);
    cell(row, b.status + (b.rank !== null ? ` (rank ${b.rank})` : ''));
    cell(row, (b.device || '-') + (b.threads ? `, threads: ${b.threads}` : ''));
    cell(row, String(b.ops), 'num');
    cell(row, b.reason || (b.status === 'loaded' ? 'loaded' : ''));
  }
  // The backend each op goes to first; one name when all agree.
  const chosen = [...new Set(Object.values(ctx.dispatch(1 << 16)))];
  const label = (name) => (name === 'wasm' ? 'wasm (SIMD128)' : name);
  $('#chosen').textContent = chosen.map(label).join(', ');
  document.body.dataset.chosen = chosen.join(',');
}

const fmt = (ms) => (ms === undefined ? '-' : ms < 1 ? `${(ms * 1000).toFixed(1)} \u00b5s` : `${ms.toFixed(2)} ms`);

function benchmark() {
  const body = $('#bench tbody');
  body.textContent = '';
  $('#rerun').disabled = true;
  $('#status').textContent = 'benchmarking\u2026';
  document.body.dataset.state = 'benchmarking';
  const worker = new Worker(new URL('./bench.mjs', import.meta.url), { type: 'module' });
  worker.onmessage = ({ data }) => {
    if (data.row) {
      const r = data.row;
      const row = body.insertRow();
      row.dataset.op = r.op;
      cell(row, r.op);
      cell(row, r.size);
      cell(row, fmt(r.times.scalar), 'num');
      cell(row, fmt(r.times.wasm), 'num');
      cell(row, r.ratio ? `${r.ratio.toFixed(1)}\u00d7` : '-', 'num');
      if (r.ratio) row.dataset.ratio = r.ratio.toFixed(3);
    } else if (data.done) {
      $('#status').textContent = `done (${data.engine})`;
      document.body.dataset.state = 'done';
      $('#rerun').disabled = false;
      worker.terminate();
    } else if (data.error) {
      fail(data.error);
      worker.terminate();
    }
  };
  worker.onerror = (e) => fail(e.message || 'the benchmark worker failed');
  worker.postMessage('run');
}

async function benchmarkWebgpu(rayo, quick = false, ops = null) {
  const body = $('#bench-webgpu tbody');
  body.textContent = '';
  $('#run-webgpu').disabled = true;
  document.body.dataset.webgpuBench = 'running';
  $('#webgpu-status').textContent = 'running…';
  const ctx = rayo.open();
  try {
    await runWebgpuBenchmark(ctx, {
      quick,
      ops,
      onRow: (r) => {
        const row = body.insertRow();
        row.dataset.op = r.op;
        row.dataset.ratio = r.ratio.toFixed(3);
        cell(row, r.op);
        cell(row, r.size);
        for (const be of ['webgpu', 'wasm'])
          cell(row, `${fmt(r.times[be])} (${r.gflops[be].toFixed(1)} GFLOP/s${r.first[be] ? ', first call' : ''})`, 'num');
        cell(row, `${r.ratio.toFixed(2)}×`, 'num');
      },
    });
    document.body.dataset.webgpuBench = 'done';
    $('#webgpu-status').textContent = `done (${rayo.webgpu.device})`;
  } catch (e) {
    document.body.dataset.webgpuBench = 'error';
    $('#webgpu-status').textContent = String(e && e.message ? e.message : e);
  } finally {
    ctx.close();
    $('#run-webgpu').disabled = false;
  }
}

function setupWebgpu(rayo) {
  document.body.dataset.webgpuBench = 'idle';
  if (!rayo.webgpu.device) {
    $('#webgpu-status').textContent = `no WebGPU device here: ${rayo.webgpu.reason}`;
    return;
  }
  $('#webgpu-status').textContent = `${rayo.webgpu.device}; ${rayo.webgpu.reason}`;
  $('#run-webgpu').onclick = () => benchmarkWebgpu(rayo);
  $('#run-webgpu').disabled = false;
  const query = new URLSearchParams(location.search);
  const start = query.get('webgpu');
  const ops = query.get('ops') ? query.get('ops').split(',') : null;
  if (start === '1' || start === 'quick') benchmarkWebgpu(rayo, start === 'quick', ops);
}

function fail(message) {
  $('#status').textContent = message;
  $('#status').className = 'error';
  document.body.dataset.state = 'error';
  $('#rerun').disabled = false;
}

async function main() {
  const simd = engineHasSimd128();
  $('#engine').textContent = simd
    ? 'This engine validates WebAssembly SIMD128 code: the wasm backend can load.'
    : 'This engine does not validate WebAssembly SIMD128 code: only scalar can run.';
  document.body.dataset.simd128 = String(simd);
  const rayo = await loadRayo();
  const ctx = rayo.open();
  showBackends(ctx);
  ctx.close();
  setupWebgpu(rayo);
  document.body.dataset.state = 'ready';
  $('#rerun').onclick = benchmark;
  $('#rerun').disabled = false;
  // ?bench=0: only the backends (the button still runs the benchmark)
  if (new URLSearchParams(location.search).get('bench') === '0') $('#status').textContent = 'ready';
  else benchmark();
}

main().catch((e) => fail(String(e && e.stack ? e.stack : e)));
