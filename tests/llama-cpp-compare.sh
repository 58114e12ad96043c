#!/bin/sh
# SPDX-License-Identifier: MIT
# llama-cpp-compare.sh - the same GGUF file in llama.cpp and in rayo-llama:
# the prompt's tokenization, the next-token distributions of the first steps
# (max |logit difference| relative to the logit range), and the greedy tokens
# over 64 steps (where they diverge, if ever, and rayo's top-2 logit gap there).
#
# usage: tests/llama-cpp-compare.sh [MODEL.gguf ...]
#   With no file, it compares generated tiny models (every format, Q4_K_M-like)
#   and, with LLAMA_COMPARE_TINYLLAMA=1, TinyLlama-shaped Q4_0, Q8_0 and
#   Q4_K_M-like files (about 3 GB in a temporary folder, minutes to make).
# Needs Node >= 20 and the npm package node-llama-cpp (prebuilt llama.cpp) in
# NODE_LLAMA_CPP_MODULES (default: build-llamacpp/node_modules in the source
# tree; `mkdir -p build-llamacpp && cd build-llamacpp && npm install
# --ignore-scripts node-llama-cpp@3`).  Prints SKIP and exits 77 without them.
# Options for rayo-llama (a backend) go in RAYO_LLAMA_ARGS; llama.cpp's thread
# count in LLAMA_THREADS (default 1).
srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${abs_top_builddir:-$srcdir/build}
bin=$builddir/examples/llama
modules=${NODE_LLAMA_CPP_MODULES:-$srcdir/build-llamacpp/node_modules}
steps=64 show_steps=${SHOW_STEPS:-4}
prompt=${PROMPT:-"Once upon a time, there was a little"}

node_major=$(node --version 2>/dev/null | sed 's/^v\([0-9]*\).*/\1/')
if [ -z "$node_major" ] || [ "$node_major" -lt 20 ]; then
    echo "SKIP: node-llama-cpp needs Node >= 20 (found: ${node_major:-no node})"; exit 77
fi
if [ ! -f "$modules/node-llama-cpp/dist/index.js" ]; then
    echo "SKIP: node-llama-cpp is not installed in $modules"; exit 77
fi
[ -x "$bin/rayo-llama" ] || { echo "ERROR: $bin/rayo-llama not built"; exit 99; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

if [ $# -eq 0 ]; then
    for scheme in f32 mix q4_k_m q8_0 q4_0; do
        "$bin/gguf-make" --scheme $scheme --seed 3 -o "$tmp/tiny-$scheme.gguf" 2>/dev/null || exit 99
        set -- "$@" "$tmp/tiny-$scheme.gguf"
    done
    if [ "${LLAMA_COMPARE_TINYLLAMA:-0}" = 1 ]; then
        for scheme in q4_0 q8_0 q4_k_m; do
            "$bin/gguf-make" --preset tinyllama --scheme $scheme -o "$tmp/tl-$scheme.gguf" || exit 99
            set -- "$@" "$tmp/tl-$scheme.gguf"
        done
    fi
fi

status=0
for model in "$@"; do
    echo "==== $(basename "$model")"
    ids=$("$bin/rayo-llama" -q --tokenize -p "$prompt" "$model") || { status=1; continue; }
    # shellcheck disable=SC2086
    tokens=$("$bin/rayo-llama" $RAYO_LLAMA_ARGS --tokens -n $steps --prompt-tokens "$ids" \
        --logits "$tmp/logits" --logits-steps $steps "$model") || { status=1; continue; }
    node --no-concurrent-recompilation "$srcdir/tests/llama-cpp-compare.mjs" "$modules" "$model" "$prompt" "$steps" \
        "$show_steps" "$ids" "$tokens" "$tmp/logits" || status=1
done
exit $status
