#!/bin/sh
# SPDX-License-Identifier: MIT
# web-speed.sh - the browser build's speed in headless Chromium, WebGPU on
# its software adapter (SwiftShader: the GPU is the CPU, a sanity figure):
# the example page's benchmark (webgpu vs SIMD128: matmul 1024^3, a
# 4096 x 11008 Q4_0 gemv) and TinyLlama-shape Q4_0 decode tokens/s in the
# Llama page on wasm with 1 and 2 threads (cross-origin isolated page) and
# on webgpu.  A benchmark, not a test: run it by hand on a quiet machine.
#
#   bench/web-speed.sh [--small] [BUILD_DIR]
# BUILD_DIR (default: build): a configured tree where `make wasm` and the
# native examples/llama (gguf-make) are built, and playwright-core is in
# BUILD_DIR/wasm-build/tools (tests/wasm-build-and-test.sh installs it).
# --small: the page benchmark's small sizes and a 2-layer, 256-wide model
# (a minute: to check that the script works, not a figure).
# The model is random (gguf-make --preset tinyllama --scheme q4_0: the
# shapes and bytes of TinyLlama 1.1B Q4_0, ~600 MiB), decoded 16 tokens after
# "Once upon a time" with --ignore-eos and --warmup.
set -eu
small=0
if [ "${1:-}" = --small ]; then small=1; shift; fi
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=$(cd "${1:-$srcdir/build}" && pwd)
out=$builddir/wasm-build
PLAYWRIGHT_CORE_DIR=${PLAYWRIGHT_CORE_DIR:-$out/tools}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export PLAYWRIGHT_CORE_DIR CHROMIUM
for f in "$out/web/llama/rayo-llama.mjs" "$out/web/llama/threads/rayo-llama.mjs" "$builddir/examples/llama/gguf-make" \
        "$PLAYWRIGHT_CORE_DIR/node_modules/playwright-core/package.json" "$CHROMIUM"; do
    [ -e "$f" ] || { echo "web-speed.sh: $f missing (make wasm examples/llama/gguf-make; tests/wasm-build-and-test.sh installs playwright-core)" >&2; exit 1; }
done
model=$out/web/llama/web-speed.gguf
trap 'rm -f "$model"' EXIT
if [ $small = 1 ]; then
    shape="--layers 2 --embd 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 320 --ctx 128"
else
    shape="--preset tinyllama"
fi
# shellcheck disable=SC2086 # one word per option
"$builddir/examples/llama/gguf-make" $shape --scheme q4_0 -o "$model" >/dev/null 2>&1 ||
    { echo "web-speed.sh: gguf-make failed" >&2; exit 1; }
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs"
node "$srcdir/bench/web-speed.mjs" "$out/web" web-speed.gguf 16 $small
