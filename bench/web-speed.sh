#!/bin/sh
# SPDX-License-Identifier: MIT
# web-speed.sh - the browser build's speed in headless Chromium, WebGPU on
# its software adapter (SwiftShader: the GPU is the CPU, a sanity figure):
# the example page's benchmark (webgpu vs SIMD128: matmul 1024^3, a
# 4096 x 11008 Q4_0 gemv) and TinyLlama-shape Q4_0 decode tokens/s in the
# Llama page on wasm with 1 and 2 threads (cross-origin isolated page) and
# on webgpu.  A benchmark, not a test: run it by hand on a quiet machine.
# Each row is printed as it is measured (bench/web-speed.mjs says more).
#
#   bench/web-speed.sh [--small] [--only PARTS] [--tokens N] [--repeat R]
#                      [--gpu-tokens N] [--gpu-layers L] [BUILD_DIR]
# BUILD_DIR (default: build): a configured tree where `make wasm` and the
# native examples/llama (gguf-make) are built, and playwright-core is in
# BUILD_DIR/wasm-build/tools (tests/wasm-build-and-test.sh installs it).
# --only: some of matmul,gemv,decode-cpu,threads,decode-webgpu (comma-separated;
# default all).  --tokens: tokens decoded on wasm (default 16), each thread
# count --repeat times (default 3, alternately); --gpu-tokens: on webgpu
# (default 3, after the prompt "Once"), with a model of TinyLlama's widths
# and vocabulary but --gpu-layers of its 22 layers (default 2): SwiftShader
# takes tens of seconds a token at TinyLlama's full shape.
# --small: the page benchmark's small sizes and a 2-layer, 256-wide model
# (a minute: to check that the script works, not a figure).
# The models are random (gguf-make --preset tinyllama --scheme q4_0: the
# shapes and bytes of TinyLlama 1.1B Q4_0, ~600 MiB), decoded with
# --ignore-eos and --warmup; each is made only when its part runs.
set -eu
small=0
only=matmul,gemv,decode-cpu,threads,decode-webgpu
tokens=16
gpu_tokens=3
gpu_layers=2
repeat=3
while [ $# -gt 0 ]; do
    case $1 in
        --small) small=1; shift ;;
        --only|--tokens|--gpu-tokens|--gpu-layers|--repeat)
            [ $# -ge 2 ] || { echo "web-speed.sh: $1 needs a value" >&2; exit 2; }
            case $1 in
                --only) only=$2 ;; --tokens) tokens=$2 ;; --repeat) repeat=$2 ;;
                --gpu-tokens) gpu_tokens=$2 ;; --gpu-layers) gpu_layers=$2 ;;
            esac
            shift 2 ;;
        -*) echo "web-speed.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
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
gpu_model=$out/web/llama/web-speed-gpu.gguf
trap 'rm -f "$model" "$gpu_model"' EXIT
if [ $small = 1 ]; then
    shape="--layers 2 --embd 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 320 --ctx 128"
    gpu_shape=$shape
else
    shape="--preset tinyllama"
    gpu_shape="--preset tinyllama --layers $gpu_layers"
fi
make_model() { # make_model FILE SHAPE
    # shellcheck disable=SC2086 # one word per option
    "$builddir/examples/llama/gguf-make" $2 --scheme q4_0 -o "$1" >/dev/null 2>&1 ||
        { echo "web-speed.sh: gguf-make $2 failed" >&2; exit 1; }
}
case ,$only, in *,decode-cpu,*) make_model "$model" "$shape" ;; esac
case ,$only, in *,decode-webgpu,*) make_model "$gpu_model" "$gpu_shape" ;; esac
case ,$only, in *,decode-*)
    echo "models: web-speed.gguf: gguf-make $shape --scheme q4_0; web-speed-gpu.gguf: gguf-make $gpu_shape --scheme q4_0" ;;
esac
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs"
quick=
[ $small = 0 ] || quick=--quick
# shellcheck disable=SC2086 # empty or one word
node --no-concurrent-recompilation "$srcdir/bench/web-speed.mjs" --web "$out/web" --model web-speed.gguf --gpu-model web-speed-gpu.gguf \
    --only "$only" --tokens "$tokens" --gpu-tokens "$gpu_tokens" --repeat "$repeat" $quick
