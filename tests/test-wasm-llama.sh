#!/bin/sh
# SPDX-License-Identifier: MIT
# test-wasm-llama.sh - the Llama decoder page (examples/web/llama) in
# headless Chromium: a tiny random-weight model made by the native gguf-make
# (a new seed each run), decoded greedily in the page on webgpu (SwiftShader)
# and on the CPU plugins (wasm, scalar), must give the native rayo-llama's
# tokens on the same file, and so must the page's threaded module on wasm in
# a cross-origin isolated page (2 threads).  The decoder runs in the page's
# module worker each time.  All at strict precision (and past the
# end-of-sequence token), where every backend
# meets the same contracts (tests/test-llama.sh asserts the same natively).
# RAYO_TEST_SEED replays a seed.  See test-wasm-llama.mjs; what it needs and
# when it skips (77): test-wasm-browser.sh, and the native examples/llama.
. "${srcdir:-$(dirname "$0")/..}/tests/test-wasm-browser.sh"
bin=$builddir/examples/llama
if [ ! -f "$out/web/llama/rayo-llama.mjs" ]; then
    echo "SKIP: $out/web/llama not built (make wasm)"
    exit 77
fi
if [ ! -x "$bin/rayo-llama" ] || [ ! -x "$bin/gguf-make" ]; then
    echo "SKIP: native examples/llama not built (make examples/llama/rayo-llama examples/llama/gguf-make)"
    exit 77
fi
seed=${RAYO_TEST_SEED:-$(($(date +%s) % 100000 + 1))}
echo "seed $seed (RAYO_TEST_SEED replays)"
model=$out/web/llama/test-tiny.gguf
trap 'rm -f "$model"' EXIT
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_PLUGIN_PATH RAYO_FORCE_CPU
# Small enough for SwiftShader, big enough to wander: every weight format of
# the mix (Q4_K, Q6_K, Q8_0...), grouped-query attention.
"$bin/gguf-make" --scheme mix --layers 2 --embd 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 320 \
    --ctx 128 --seed "$seed" -o "$model" >/dev/null 2>&1 || { echo "FAIL: gguf-make"; exit 1; }
n=16
prompt="Once upon a time"
ref=$("$bin/rayo-llama" -q --precision strict --ignore-eos --tokens -n $n -p "$prompt" "$model") ||
    { echo "FAIL: native rayo-llama"; exit 1; }
echo "native: $ref"
node $NODE_FLAGS "$srcdir/tests/test-wasm-llama.mjs" "$out/web" test-tiny.gguf "$prompt" $n "$ref"
