// SPDX-License-Identifier: MIT
// llama.mjs - the Llama decoder page: the controls and the figures only.
// rayo-llama (examples/llama built as a main module) runs in a module worker
// (llama-worker.mjs): it loads the module (in a cross-origin isolated page
// its threaded build, the CPU backends on a thread per CPU), copies the GGUF
// file (picked, or fetched from a URL) into the module's file system and
// decodes; the page shows the load progress, the output, the backend the
// weight products ran on and the tokens/s rayo-llama printed, from the
// worker's messages.  So the page's main thread never waits for the
// decoder's threads.
//
// Query parameters (the headless Chromium test uses them): model=URL loads
// at once; prompt, n, backend (webgpu, wasm, scalar or auto) and args
// (more rayo-llama options, space-separated: --tokens prints token ids)
// set the run, and run=1 decodes as soon as the model is in; threads=N caps
// the CPU backends' threads (RAYO_THREADS) in the threaded build.  The page records its
// progress in <body data-state>: loading, ready, reading, decoding, done or
// error; data-worker is 1 once the module runs in a worker; when done,
// data-tokens holds the output, data-backend the
// backend of the weight products and data-threads the CPU threads it used.

const $ = (sel) => document.querySelector(sel);
const query = new URLSearchParams(location.search);
const worker = new Worker(new URL('llama-worker.mjs', import.meta.url), { type: 'module' });
let lines = { out: [], err: [] };

function setState(state, message) {
  document.body.dataset.state = state;
  if (message !== undefined) $('#load-status').textContent = message;
}

function fail(e) {
  const message = String(e && e.message ? e.message : e);
  $('#output').textContent = message;
  $('#output').className = 'error';
  setState('error');
}

// The worker's requests: each answered by one 'done' or 'error' message.
const pending = new Map();
let lastId = 0;
function request(type, payload = {}) {
  const id = ++lastId;
  return new Promise((ok, no) => {
    pending.set(id, { ok, no });
    worker.postMessage({ id, type, ...payload });
  });
}

function showProgress({ done, total }) {
  $('#progress').value = total ? done / total : 0;
  $('#load-status').textContent = `${(done / 1048576).toFixed(1)} MiB` +
    (total ? ` of ${(total / 1048576).toFixed(1)} MiB` : '');
}

function showLine({ kind, text }) {
  lines[kind].push(text);
  $('#log').textContent += `${text}\n`;
}

worker.onmessage = ({ data }) => {
  if (data.type === 'progress') showProgress(data);
  else if (data.type === 'line') showLine(data);
  else {
    const { ok, no } = pending.get(data.id);
    pending.delete(data.id);
    if (data.type === 'done') ok(data);
    else no(new Error(data.message));
  }
};
worker.onerror = (e) => fail(`the decoder's worker failed: ${e.message || 'its script did not load'}`);

async function loadModel(name, source) {
  $('#run').disabled = true;
  setState('reading', `reading ${name}\u2026`);
  const { size } = await request('load', source);
  $('#progress').value = 1;
  setState('ready', `${name}: ${(size / 1048576).toFixed(1)} MiB, ready`);
  $('#run').disabled = false;
}

// rayo-llama's options from the page's controls (and ?args); the worker
// adds the model's path
function argv() {
  const args = ['rayo-llama', '-n', String($('#n').value), '-p', $('#prompt').value];
  const backend = $('#backend').value;
  if (backend !== 'auto') args.push('--backend', backend);
  // the model in the GPU's buffers, each step one submission (rayo-llama's
  // auto leaves a software adapter such as SwiftShader out)
  if (backend === 'webgpu') args.push('--resident', 'on');
  const more = (query.get('args') || '').split(' ').filter(Boolean);
  return [...args, ...more];
}
// What rayo-llama printed on stderr: where the weight products ran, speeds.
function showSpeeds() {
  const speed = lines.err.find((l) => l.startsWith('rayo-llama: gemv '));
  if (!speed) return;
  const gemv = /^rayo-llama: gemv (\w+) on (\w+)/.exec(speed);
  const decode = /decode (\d+) tokens ([0-9.]+) tok\/s/.exec(speed);
  const threads = /(\d+) threads:/.exec(speed);
  if (threads) document.body.dataset.threads = $('#threads').textContent = threads[1];
  const prefill = /prefill (\d+) tokens ([0-9.]+) tok\/s/.exec(speed);
  if (gemv) {
    $('#used').textContent = `${gemv[2]} (${gemv[1]} weights)${speed.includes('(resident)') ? ', model resident' : ''}`;
    document.body.dataset.backend = gemv[2];
  }
  if (decode) $('#speed').textContent = `${decode[2]} tokens/s (${decode[1]} tokens)`;
  if (prefill) $('#prefill').textContent = `${prefill[2]} tokens/s (${prefill[1]} prompt tokens)`;
}

async function decode() {
  $('#run').disabled = true;
  lines = { out: [], err: [] };
  $('#output').textContent = '';
  $('#output').className = '';
  for (const id of ['#used', '#speed', '#prefill']) $(id).textContent = '\u2026';
  document.body.dataset.state = 'decoding';
  try {
    const { status } = await request('decode', { argv: argv() });
    $('#output').textContent = lines.out.join('\n');
    showSpeeds();
    if (status !== 0) throw new Error(`rayo-llama exited with status ${status}:\n${lines.err.join('\n')}`);
    document.body.dataset.tokens = lines.out.join('\n').trim();
    document.body.dataset.state = 'done';
  } finally {
    $('#run').disabled = false;
  }
}

function setupBackends({ backends, threads, webgpu }) {
  $('#threads').textContent = threads;
  const preferred = webgpu.device && backends.includes('webgpu') ? 'webgpu' : 'auto';
  for (const name of ['auto', ...backends]) $('#backend').add(new Option(name, name));
  $('#backend').value = backends.includes(query.get('backend')) ? query.get('backend') : preferred;
  $('#webgpu').textContent = webgpu.device
    ? `WebGPU: ${webgpu.device} (${webgpu.reason})`
    : `No WebGPU here (${webgpu.reason}): the CPU backends decode.`;
}

async function main() {
  const env = query.get('threads') ? { RAYO_THREADS: query.get('threads') } : undefined;
  const loaded = await request('init', { env });
  setupBackends(loaded);
  document.body.dataset.worker = loaded.inWorker ? '1' : '0';
  for (const key of ['prompt', 'n']) if (query.get(key)) $(`#${key}`).value = query.get(key);
  setState('ready', 'no model yet');
  const file = () => $('#file').files[0];
  $('#file').onchange = () => file() && loadModel(file().name, { file: file() }).catch(fail);
  $('#fetch').onclick = () => loadModel($('#url').value, { url: new URL($('#url').value, location.href).href }).catch(fail);
  $('#run').onclick = () => decode().catch(fail);
  if (query.get('model')) {
    $('#url').value = query.get('model');
    await loadModel(query.get('model'), { url: new URL(query.get('model'), location.href).href });
    if (query.get('run') === '1') await decode();
  }
}

main().catch(fail);
