#!/bin/sh
# SPDX-License-Identifier: MIT
# llama-gpu-run.sh - the Llama decoder's GPU figures in one run on the GPU
# machine: cuda decode (cuda-decode-run.sh), cuda prompt (cuda-prompt-run.sh)
# and vulkan (vulkan-llama-run.sh), one after another, each with its own
# checks, kernel ratios and BASE comparison as its header says.
#
#   bench/llama-gpu-run.sh prepare [BUILD] [DIR] [BASE_DIR]   here: stages the
#       three scripts' folders from BUILD (default build/) and packs them into
#       DIR/bundle.tar.xz (default DIR .gpu-llama; the three unpacked are past
#       what a run may carry), with this script beside it; BASE_DIR (optional)
#       holds another build's rayo-cuda.so, rayo-vulkan.so and rayo-llama for
#       the same-run comparisons.  Carry DIR and .gl (bench/gpu-run.sh prepare
#       fetches .gl's packages).
#   DIR/llama-gpu-run.sh run   there, repository root: unpacks the bundle and
#       runs the three; their logs in $OUT/decode, $OUT/prompt and
#       $OUT/vulkan (logs.tgz each), their summaries on stdout.  The scripts'
#       own settings (DECODE_PARTS, PROMPT_RUNS, VARIANTS, ...) pass through;
#       LLAMA_GPU_PARTS (default "decode prompt vulkan") picks the scripts.
set -u
mode=${1:-run}

prepare() {
    build=${1:-build} dir=${2:-.gpu-llama} base=${3:-}
    here=$(dirname "$0")
    stage=$dir/stage
    rm -rf "$dir" && mkdir -p "$stage"
    if [ -n "$base" ]; then
        BASE_LLAMA=$base/rayo-llama sh "$here/cuda-decode-run.sh" prepare "$build" "$stage/decode" \
            "$base/rayo-cuda.so" || exit 1
        sh "$here/cuda-prompt-run.sh" prepare "$build" "$stage/prompt" "$base/rayo-cuda.so" || exit 1
        sh "$here/vulkan-llama-run.sh" prepare "$build" "$stage/vulkan" "$base/rayo-vulkan.so" || exit 1
    else
        sh "$here/cuda-decode-run.sh" prepare "$build" "$stage/decode" || exit 1
        sh "$here/cuda-prompt-run.sh" prepare "$build" "$stage/prompt" || exit 1
        sh "$here/vulkan-llama-run.sh" prepare "$build" "$stage/vulkan" || exit 1
    fi
    tar -C "$stage" -cJf "$dir/bundle.tar.xz" decode prompt vulkan && rm -rf "$stage"
    cp "$0" "$dir/llama-gpu-run.sh"
    du -sh "$dir"
}

run() {
    dir=$(dirname "$0") out=${OUT:-$PWD/gpu-out}
    rm -rf /tmp/llama-gpu && mkdir -p /tmp/llama-gpu
    tar -C /tmp/llama-gpu -xJf "$dir/bundle.tar.xz" 2>/dev/null ||
        python3 -c "import tarfile, sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
            "$dir/bundle.tar.xz" /tmp/llama-gpu || { echo "run: cannot unpack $dir/bundle.tar.xz"; exit 1; }
    # the scripts read .gl from the repository root: run them from here, staged under it
    rm -rf .gpu-llama-run && mv /tmp/llama-gpu .gpu-llama-run
    for p in ${LLAMA_GPU_PARTS:-decode prompt vulkan}; do
        case $p in
        decode) s=cuda-decode-run.sh ;;
        prompt) s=cuda-prompt-run.sh ;;
        vulkan) s=vulkan-llama-run.sh ;;
        *) echo "run: no part $p"; continue ;;
        esac
        echo "== $p ($(date -u +%T))"
        OUT=$out/$p sh ".gpu-llama-run/$p/$s" run
    done
    echo "== end ($(date -u +%T))"
}

case $mode in
prepare) shift; prepare "$@" ;;
run) run ;;
*) echo "usage: $0 prepare [BUILD] [DIR] [BASE_DIR] | run" >&2; exit 2 ;;
esac
