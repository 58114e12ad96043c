// SPDX-License-Identifier: MIT
// llama-cpp-compare.mjs - the llama.cpp side of tests/llama-cpp-compare.sh.
// usage: node llama-cpp-compare.mjs MODULE_DIR MODEL PROMPT STEPS SHOW_STEPS RAYO_PROMPT_IDS
//        RAYO_TOKENS RAYO_LOGITS
// Loads MODEL in llama.cpp (node-llama-cpp from MODULE_DIR, CPU), tokenizes PROMPT
// and compares the ids with rayo's, decodes STEPS greedy tokens from rayo's prompt ids
// with each step's full next-token distribution, and compares with rayo's tokens and
// logits (f32, one row per step rayo made).  llama.cpp gives probabilities, not logits:
// log p = logit - logsumexp(logits), so log-probabilities differ exactly as logits do
// up to one constant per step, which is removed.  Exit 0 when the greedy tokens
// match, or diverge where rayo's top-2 logit gap is within the step's measured logit
// difference (a near tie the two sides' rounding decides); 1 otherwise.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [moduleDir, modelPath, prompt, stepsArg, logitStepsArg, rayoPromptIds, rayoTokensArg,
    rayoLogitsPath] = process.argv.slice(2);
const steps = Number(stepsArg), showSteps = Number(logitStepsArg);
const entry = path.join(moduleDir, "node-llama-cpp", "dist", "index.js");
const { getLlama } = await import(pathToFileURL(entry).href);

const llama = await getLlama({ gpu: false, logLevel: "error" });
const model = await llama.loadModel({ modelPath });
// One thread unless LLAMA_THREADS says otherwise: ggml's spinning worker threads
// crawl on a shared, loaded machine (a 64-step run did not end in 15 minutes).
const threads = Number(process.env.LLAMA_THREADS ?? 1);
const context = await model.createContext({ contextSize: 512, threads });
const sequence = context.getSequence();

// Tokenization: llama.cpp's own (with BOS) against rayo's.
const bos = model.tokens.bos;
const cppPrompt = [...(bos != null ? [bos] : []), ...model.tokenize(prompt)];
const rayoPrompt = rayoPromptIds.split(",").map(Number);
const sameTokenization = cppPrompt.join(",") === rayoPrompt.join(",");
console.log(`tokenization: ${sameTokenization ? "same" : "DIFFERENT"} ` +
    `(llama.cpp ${cppPrompt.length} tokens, rayo ${rayoPrompt.length})`);
if (!sameTokenization)
    console.log(`  llama.cpp: ${cppPrompt.join(",")}\n  rayo:      ${rayoPrompt.join(",")}`);

// Greedy decoding from rayo's prompt ids, with the full distribution each step.
const cppTokens = [], cppProbs = [];
let tFirst = 0;
const gen = sequence.evaluateWithMetadata(rayoPrompt, { probabilities: true },
    { temperature: 0, yieldEogToken: true });
const tStart = performance.now();
for await (const out of gen) {
    if (!cppTokens.length) tFirst = performance.now();
    cppTokens.push(out.token);
    cppProbs.push(out.probabilities);
    if (cppTokens.length >= steps)
        break;
}

const tEnd = performance.now();
console.log(`llama.cpp (CPU, ${llama.cpuMathCores ?? "?"} math cores): prefill ${rayoPrompt.length} ` +
    `tokens ${(rayoPrompt.length / ((tFirst - tStart) / 1000)).toFixed(1)} tok/s, decode ` +
    `${cppTokens.length - 1} tokens ${((cppTokens.length - 1) / ((tEnd - tFirst) / 1000)).toFixed(2)} ` +
    "tok/s (with the full distribution each step)");
const rayoTokens = rayoTokensArg.trim().split(/\s+/).map(Number);
const vocab = fs.statSync(rayoLogitsPath).size / 4 / Math.max(1, rayoTokens.length);
const logits = new Float32Array(fs.readFileSync(rayoLogitsPath).buffer.slice(0));

function stepReport(step) {
    const l = logits.subarray(step * vocab, (step + 1) * vocab);
    let max = -Infinity, min = Infinity;
    for (const v of l) { max = Math.max(max, v); min = Math.min(min, v); }
    let sum = 0;
    for (const v of l) sum += Math.exp(v - max);
    const lse = max + Math.log(sum);
    // Differences of log-probabilities where llama.cpp's p is not negligible, less
    // their mean (the per-step constant).
    const diffs = [];
    for (const [tok, p] of cppProbs[step])
        if (p > 1e-6) diffs.push((l[tok] - lse) - Math.log(p));
    const mean = diffs.reduce((a, b) => a + b, 0) / Math.max(1, diffs.length);
    const maxDiff = Math.max(0, ...diffs.map((d) => Math.abs(d - mean)));
    return { range: max - min, maxDiff, count: diffs.length };
}

let worst = 0;
// Until the sequences part, both sides saw the same tokens: compare every step.
const n = Math.min(cppTokens.length, rayoTokens.length);
let diverge = -1;
for (let i = 0; i < n && diverge < 0; i++)
    if (cppTokens[i] !== rayoTokens[i]) diverge = i;
const compared = diverge < 0 ? n : diverge + 1;
for (let s = 0; s < compared; s++) {
    const r = stepReport(s);
    worst = Math.max(worst, r.maxDiff / r.range);
    if (s < showSteps) console.log(`step ${s}: max |logit diff| ${r.maxDiff.toExponential(3)} over ${r.count} ` +
        `tokens, logit range ${r.range.toFixed(3)}, relative ${(r.maxDiff / r.range).toExponential(3)}`);
}

function top2Gap(step) {
    const l = logits.subarray(step * vocab, (step + 1) * vocab);
    let a = -Infinity, b = -Infinity;
    for (const v of l) { if (v > a) { b = a; a = v; } else if (v > b) b = v; }
    return a - b;
}

let ok = true;
if (diverge < 0 && cppTokens.length === rayoTokens.length) {
    console.log(`greedy tokens: all ${n} the same`);
} else if (diverge < 0) {
    console.log(`greedy tokens: the same for ${n}; lengths ${cppTokens.length} (llama.cpp) ` +
        `and ${rayoTokens.length} (rayo), an end-of-sequence token on one side`);
} else {
    const gap = top2Gap(diverge), r = stepReport(diverge);
    const nearTie = gap <= 2 * r.maxDiff;
    console.log(`greedy tokens: the same for ${diverge} steps, then llama.cpp ${cppTokens[diverge]}, ` +
        `rayo ${rayoTokens[diverge]}; rayo's top-2 logit gap there ${gap.toExponential(3)}, ` +
        `the logit difference ${r.maxDiff.toExponential(3)}: ` +
        (nearTie ? "a near tie that the two sides' rounding decides" : "NOT explained by rounding"));
    ok = nearTie;
}
console.log(`worst relative logit difference over ${compared} steps: ${worst.toExponential(3)}`);
await llama.dispose();
process.exit(ok && sameTokenization ? 0 : 1);
