// SPDX-License-Identifier: MIT
// llama-speed-llamacpp.mjs - the llama.cpp side of bench/llama-speed.sh: prefill and decode
// speed of one GGUF file in llama.cpp through node-llama-cpp.
// usage: node llama-speed-llamacpp.mjs MODULE_DIR MODEL PROMPT_IDS N_DECODE THREADS GPU [MMAP]
//   PROMPT_IDS: comma-separated token ids (the same ones rayo-llama gets);
//   GPU: "false" (CPU), "vulkan" or "cuda";
//   MMAP: "mmap" (default: the weights read through the file's mapping, llama.cpp's
//   default) or "no-mmap" (read into memory llama.cpp allocates).
// Prints one line: "llama.cpp: prefill N tok/s P cpu C decode M tok/s D cpu E", speeds by
// wall clock and the process's CPU seconds (every thread) for each phase.
// The prompt goes in as one batch; the decode is greedy, past any end-of-sequence
// token, as rayo-llama --ignore-eos does.  The time to the first generated token is
// the prefill (with the last position's logits and one greedy pick, as rayo's).
import path from "node:path";
import { pathToFileURL } from "node:url";

const [moduleDir, modelPath, promptArg, decodeArg, threadsArg, gpuArg, mmapArg] = process.argv.slice(2);
const entry = path.join(moduleDir, "node-llama-cpp", "dist", "index.js");
const { getLlama } = await import(pathToFileURL(entry).href);

const gpu = gpuArg === "false" ? false : gpuArg;
const prompt = promptArg.split(",").map(Number);
const nDecode = Number(decodeArg), threads = Number(threadsArg);
const llama = await getLlama({ gpu, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath, gpuLayers: gpu ? "max" : 0, useMmap: mmapArg !== "no-mmap" });
const context = await model.createContext({
    contextSize: prompt.length + nDecode + 16, batchSize: prompt.length, threads });
const sequence = context.getSequence();

function cpuSeconds() {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
}

let n = 0, tFirst = 0, cFirst = 0;
const t0 = performance.now(), c0 = cpuSeconds();
for await (const token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
    void token;
    if (n++ === 0) {
        tFirst = performance.now();
        cFirst = cpuSeconds();
    }
    if (n > nDecode)
        break;
}
const tEnd = performance.now(), cEnd = cpuSeconds();
const decoded = n - 1;
console.log(`llama.cpp: prefill ${prompt.length} ` +
    `${(prompt.length / ((tFirst - t0) / 1000)).toFixed(2)} cpu ${(cFirst - c0).toFixed(3)} ` +
    `decode ${decoded} ${(decoded / ((tEnd - tFirst) / 1000)).toFixed(2)} cpu ${(cEnd - cFirst).toFixed(3)} ` +
    `(${gpu ? gpu : "CPU"}, ${threads} threads)`);
await llama.dispose();
