#!/bin/sh
# SPDX-License-Identifier: MIT
# wasm-build.sh - rayo-llama for node from the WebAssembly build: links the
# example's sources with the core objects and the tool exports `make wasm`
# left in BUILD/wasm-build (run that first), with the flags wasm/wasm.mk gives
# its node tools, and a 4 GiB memory ceiling (a TinyLlama Q4_0 file is read
# into memory: Emscripten's mmap copies).  Writes BUILD/wasm-build/rayo-llama.js
# and a wrapper BUILD/wasm-build/rayo-llama that runs it under node with the
# build's scalar and wasm (SIMD128) plugins.  Single-threaded, as the build is.
#
# usage: examples/llama/wasm-build.sh [BUILD]   (default: build)
set -eu
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$srcdir/build}" && pwd)
out=$build/wasm-build
obj=$out/obj
EMCC=${EMCC:-emcc}
[ -f "$obj/exports-tool.json" ] || { echo "wasm-build.sh: run 'make -C $build wasm' first" >&2; exit 1; }
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs" # Debian's emcc needs acorn

mkdir -p "$obj/llama"
objs=""
for f in rayo-llama model lm-ops tokenizer gguf; do
    "$EMCC" -std=c11 -O2 -fPIC -Wall -Wextra -Werror -I"$srcdir/core" -I"$build" -I"$srcdir/examples/llama" \
        -c "$srcdir/examples/llama/$f.c" -o "$obj/llama/$f.o"
    objs="$objs $obj/llama/$f.o"
done
# shellcheck disable=SC2046,SC2086 # lists of object files
"$EMCC" -O2 -sMAIN_MODULE=2 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB \
    -sEXPORTED_FUNCTIONS=@"$obj/exports-tool.json" -sENVIRONMENT=node -sNODERAWFS=1 \
    -sWASM_ASYNC_COMPILATION=0 -sEXIT_RUNTIME=1 --pre-js "$srcdir/wasm/node-env.js" \
    $(find "$obj/core/core" -name '*.o' | sort) $objs -o "$out/rayo-llama.js"
# shellcheck disable=SC2016 # the wrapper's own expansions
printf '%s\n' '#!/bin/sh' '# rayo-llama of the WebAssembly build, under node (examples/llama/wasm-build.sh)' \
    'dir=$(dirname "$0")' \
    'RAYO_PLUGIN_PATH="${RAYO_PLUGIN_PATH:-$dir/plugins}" exec ${NODE:-node} --no-concurrent-recompilation "$dir/rayo-llama.js" "$@"' \
    > "$out/rayo-llama"
chmod +x "$out/rayo-llama"
echo "wasm-build.sh: $out/rayo-llama"
