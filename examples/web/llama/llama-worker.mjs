// SPDX-License-Identifier: MIT
// llama-worker.mjs - the Llama decoder page's module worker: it loads
// rayo-llama (examples/llama built as a main module with the core and the JS
// API's glue) with the backend side modules, copies the GGUF file into the
// module's in-memory file system and runs rayo-llama's main through JSPI
// (rayo.runMain, so the webgpu plugin can await the GPU).  In a cross-origin
// isolated page it loads the threaded build (threads/rayo-llama.mjs: the CPU
// backends' pool on a nested Web Worker per CPU).  Running here rather than
// on the page's main thread, the pool's waits block (Atomics.wait) instead
// of spinning, and the page stays responsive while it decodes.
//
// Messages from the page: {id, type, ...}; each is answered by one
// {id, type: 'done', ...result} or {id, type: 'error', message}:
//   init {env}           loads the module; result: {backends, threads, webgpu, inWorker}
//   load {url} / {file}  copies the model in; result: {size}; sends
//                        {type: 'progress', done, total} on the way
//   decode {argv}        runs rayo-llama; result: {status}
// Meanwhile each line rayo-llama prints comes as {type: 'line', kind: 'out' | 'err', text}.

import { loadRayo } from '../rayo/rayo.mjs';
import createRayoLlama from './rayo-llama.mjs';

const MODEL_PATH = '/model.gguf';
let rayo = null;

const line = (kind) => (text) => postMessage({ type: 'line', kind, text });

async function init({ env }) {
  rayo = await loadRayo({ core: createRayoLlama, coreBase: new URL('./', import.meta.url),
    threadedCore: new URL('./threads/rayo-llama.mjs', import.meta.url), env,
    print: line('out'), printErr: line('err') });
  const ctx = rayo.open();
  const backends = ctx.backends().filter((b) => b.status === 'loaded').map((b) => b.name);
  const threads = String(ctx.threads());
  ctx.close();
  const inWorker = typeof WorkerGlobalScope === 'function' && self instanceof WorkerGlobalScope;
  return { backends, threads, webgpu: rayo.webgpu, inWorker };
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
      postMessage({ type: 'progress', done, total });
    }
  } finally {
    fs.close(file);
  }
  return done;
}

async function load({ url, file }) {
  if (file) return { size: await copyIntoFs(file.stream(), file.size, MODEL_PATH) };
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const total = Number(response.headers.get('Content-Length')) || 0;
  return { size: await copyIntoFs(response.body, total, MODEL_PATH) };
}

async function decode({ argv }) {
  return { status: await rayo.runMain([...argv, MODEL_PATH]) };
}

const HANDLERS = { init, load, decode };
const unknown = ({ type }) => { throw new Error(`llama-worker: no request '${type}'`); };

// One request at a time, in the order they come (they share the module).
let queue = Promise.resolve();
self.onmessage = ({ data }) => {
  queue = queue.then(() => (Object.hasOwn(HANDLERS, data.type) ? HANDLERS[data.type] : unknown)(data))
    .then((result) => postMessage({ id: data.id, type: 'done', ...result }))
    .catch((e) => postMessage({ id: data.id, type: 'error', message: String(e && e.message ? e.message : e) }));
};
