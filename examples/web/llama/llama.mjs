// SPDX-License-Identifier: MIT
// llama.mjs - the Llama decoder page: rayo-llama (examples/llama) built as a
// main module with the core and the JS API's glue (rayo-llama.mjs), loaded
// by loadRayo with the backend side modules; in a cross-origin isolated page
// its threaded build (threads/rayo-llama.mjs: the CPU backends on a Web
// Worker per CPU), as loadRayo does for the core.  The GGUF file (picked, or
// fetched from a URL) is copied chunk by chunk into the module's in-memory
// file system under a progress bar; Decode runs rayo-llama's main through
// JSPI (rayo.runMain), so the webgpu plugin can await the GPU, and shows its
// output, the backend its weight products ran on and the tokens/s it printed.
//
// Query parameters (the headless Chromium test uses them): model=URL loads
// at once; prompt, n, backend (webgpu, wasm, scalar or auto) and args
// (more rayo-llama options, space-separated: --tokens prints token ids)
// set the run, and run=1 decodes as soon as the model is in; threads=N caps
// the CPU backends' threads (RAYO_THREADS) in the threaded build.  The page records its
// progress in <body data-state>: loading, ready, reading, decoding, done or
// error; when done, data-tokens holds the output, data-backend the
// backend of the weight products and data-threads the CPU threads it used.

import { loadRayo } from '../rayo/rayo.mjs';
import createRayoLlama from './rayo-llama.mjs';

const $ = (sel) => document.querySelector(sel);
const query = new URLSearchParams(location.search);
const MODEL_PATH = '/model.gguf';
let rayo = null;
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

// Copies a stream of `total` bytes into the module's file system at path.
async function copyIntoFs(stream, total, path) {
  const fs = rayo.core.FS;
  const file = fs.open(path, 'w');
  const reader = stream.getReader();
  let done = 0;
  try {
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      fs.write(file, value, 0, value.length);
      done += value.length;
      $('#progress').value = total ? done / total : 0;
      $('#load-status').textContent = `${(done / 1048576).toFixed(1)} MiB` +
        (total ? ` of ${(total / 1048576).toFixed(1)} MiB` : '');
    }
  } finally {
    fs.close(file);
  }
  return done;
}

async function loadModel(name, open) {
  $('#run').disabled = true;
  setState('reading', `reading ${name}\u2026`);
  const { stream, total } = await open();
  const size = await copyIntoFs(stream, total, MODEL_PATH);
  $('#progress').value = 1;
  setState('ready', `${name}: ${(size / 1048576).toFixed(1)} MiB, ready`);
  $('#run').disabled = false;
}

function loadUrl(url) {
  return loadModel(url, async () => {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return { stream: response.body, total: Number(response.headers.get('Content-Length')) || 0 };
  });
}

function loadFile(file) {
  return loadModel(file.name, async () => ({ stream: file.stream(), total: file.size }));
}

// rayo-llama's options from the page's controls (and ?args)
function argv() {
  const args = ['rayo-llama', '-n', String($('#n').value), '-p', $('#prompt').value];
  const backend = $('#backend').value;
  if (backend !== 'auto') args.push('--backend', backend);
  // the model in the GPU's buffers, each step one submission (rayo-llama's
  // auto leaves a software adapter such as SwiftShader out)
  if (backend === 'webgpu') args.push('--resident', 'on');
  const more = (query.get('args') || '').split(' ').filter(Boolean);
  return [...args, ...more, MODEL_PATH];
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
    const status = await rayo.runMain(argv());
    $('#output').textContent = lines.out.join('\n');
    showSpeeds();
    if (status !== 0) throw new Error(`rayo-llama exited with status ${status}:\n${lines.err.join('\n')}`);
    document.body.dataset.tokens = lines.out.join('\n').trim();
    document.body.dataset.state = 'done';
  } finally {
    $('#run').disabled = false;
  }
}

function setupBackends() {
  const ctx = rayo.open();
  const loaded = ctx.backends().filter((b) => b.status === 'loaded').map((b) => b.name);
  $('#threads').textContent = String(ctx.threads());
  ctx.close();
  const preferred = rayo.webgpu.device && loaded.includes('webgpu') ? 'webgpu' : 'auto';
  for (const name of ['auto', ...loaded]) $('#backend').add(new Option(name, name));
  $('#backend').value = loaded.includes(query.get('backend')) ? query.get('backend') : preferred;
  $('#webgpu').textContent = rayo.webgpu.device
    ? `WebGPU: ${rayo.webgpu.device} (${rayo.webgpu.reason})`
    : `No WebGPU here (${rayo.webgpu.reason}): the CPU backends decode.`;
}

async function main() {
  const log = (kind) => (s) => {
    lines[kind].push(s);
    $('#log').textContent += `${s}\n`;
  };
  const env = query.get('threads') ? { RAYO_THREADS: query.get('threads') } : undefined;
  rayo = await loadRayo({ core: createRayoLlama, coreBase: new URL('./', import.meta.url),
    threadedCore: new URL('./threads/rayo-llama.mjs', import.meta.url), env,
    print: log('out'), printErr: log('err') });
  setupBackends();
  for (const key of ['prompt', 'n']) if (query.get(key)) $(`#${key}`).value = query.get(key);
  setState('ready', 'no model yet');
  $('#file').onchange = () => $('#file').files[0] && loadFile($('#file').files[0]).catch(fail);
  $('#fetch').onclick = () => loadUrl($('#url').value).catch(fail);
  $('#run').onclick = () => decode().catch(fail);
  if (query.get('model')) {
    $('#url').value = query.get('model');
    await loadUrl(query.get('model'));
    if (query.get('run') === '1') await decode();
  }
}

main().catch(fail);
