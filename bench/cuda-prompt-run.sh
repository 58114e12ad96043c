#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda-prompt-run.sh - the cuda prompt (prefill) checks and figures in one run
# on the GPU machine, from a build made elsewhere.
#
#   bench/cuda-prompt-run.sh prepare [BUILD] [DIR]   here: copies what the run
#       needs from BUILD (default build/) into DIR (default .gpu-prompt) and
#       this script into it; carry DIR and .gl (bench/gpu-run.sh prepare
#       fetches .gl's packages)
#   DIR/cuda-prompt-run.sh run                       there, repository root:
#       1. test-cuda (its second state checks the split-k prompt products)
#          beside rayo-conform --quick --op matmul on cuda, one fresh seed, with and
#          without the half path ([backend.cuda] half_prompt = no), with it
#          skipping the group "cancel", and with prompt_split_k = yes;
#       2. GGUF files made there by gguf-make (TinyLlama shape q4_0, q8_0,
#          q4_k_m; the 7B shape q4_0), each prefilled by
#          `rayo-llama --backend cuda --ignore-eos --tokens --ctx 640 -n 16
#          --prompt-tokens <128 or 512 ids>` after one warm-up run: 128 ids
#          with and without the half path and with it split along k
#          (prompt_split_k = yes; the greedy tokens compared with the half
#          path's), 512 ids with the half path, split and not;
#       3. `profile = yes` breakdowns of a TinyLlama q4_0 128-token run,
#          half path and split.
# Logs in $OUT/logs.tgz; a summary on stdout.
set -u
mode=${1:-run}
. "$(dirname "$0")/gpu-common.sh"

prepare() {
    build=${1:-build} dir=${2:-.gpu-prompt}
    gpu_stage "$build" "$dir" core/.libs/librayo.so.0 plugins/cuda/.libs/rayo-cuda.so tools/.libs/rayo-conform \
        tests/.libs/test-cuda \
        examples/llama/.libs/rayo-llama examples/llama/.libs/gguf-make plugins/scalar/.libs/rayo-scalar.so \
        plugins/avx2/.libs/rayo-avx2.so plugins/avx512/.libs/rayo-avx512.so
    du -sh "$dir"
}

# conform NAME CONFIG ARGS...: one rayo-conform run on cuda, its summary and first failures
conform() {
    name=$1 conf=$2
    shift 2
    RAYO_CONFIG=$conf timeout 100 "$d/rayo-conform" --seed "$seed" "$@" "$d/rayo-cuda.so" >"$logs/$name.log" 2>&1
    echo "$name $* (seed $seed) exit $?: $(grep -h '^Summary' "$logs/$name.log")"
    grep -h -E 'cases failed|out of contract' "$logs/$name.log" | cut -c1-300 | head -5
}

# llama NAME FILE CONFIG IDS: one run, its tokens and speed line in $logs/NAME.*
llama() {
    RAYO_CONFIG=$3 timeout 90 "$d/rayo-llama" --backend cuda --ignore-eos --tokens --ctx 640 -n 16 \
        --prompt-tokens "$4" "$2" >"$logs/$1.out" 2>"$logs/$1.log"
    echo "$1 exit $?: $(grep -h -i 'tok/s' "$logs/$1.log" | tail -1 | sed 's/.*prefill/prefill/')"
}

# test_cuda: the plugin's own test (its summary and first failures), beside
# the conformance runs and before the timings
test_cuda() {
    timeout 300 "$d/test-cuda" >"$logs/test-cuda.log" 2>&1
    echo "test-cuda exit $?: $(tail -1 "$logs/test-cuda.log")"
    grep -h -i 'fail' "$logs/test-cuda.log" | cut -c1-300 | head -5
}

# tokens_differ MODEL A B WHAT: how many of run A's 128-id greedy tokens differ from run B's
tokens_differ() {
    tr ' ' '\n' <"$logs/$1-$2-128.out" >/tmp/a.tok
    tr ' ' '\n' <"$logs/$1-$3-128.out" >/tmp/b.tok
    echo "$1: $(diff /tmp/a.tok /tmp/b.tok | grep -c '^<') of $(wc -l </tmp/a.tok) tokens differ ($4)"
}

run() {
    d=$PWD/$(dirname "$0")
    gpu_env "$d" /tmp/prompt-logs
    gpu_make_models "$d"
    : >/tmp/half.conf
    printf '[backend.cuda]\nhalf_prompt = no\n' >/tmp/f32.conf
    printf '[backend.cuda]\nprofile = yes\n' >/tmp/profile.conf
    printf '[backend.cuda]\nprompt_split_k = yes\n' >/tmp/split.conf
    printf '[backend.cuda]\nprompt_split_k = yes\nprofile = yes\n' >/tmp/split-profile.conf
    test_cuda &
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    conform conform-half /tmp/half.conf --quick --op matmul &
    conform conform-f32 /tmp/f32.conf --quick --op matmul &
    conform conform-half-nocancel /tmp/half.conf --quick --skip cancel --op matmul &
    conform conform-split /tmp/split.conf --quick --op matmul &
    wait
    echo "models: $(ls -s /tmp/models | tr '\n' ' ') load: $(cat /proc/loadavg)"
    p128=$(seq 100 227 | paste -sd, -) p512=$(seq 100 611 | paste -sd, -)
    llama warmup /tmp/models/tl-q4_0.gguf /tmp/half.conf "$p128"
    for m in tl-q4_0 tl-q8_0 tl-q4_k_m 7b-q4_0; do
        llama "$m-f32-128" "/tmp/models/$m.gguf" /tmp/f32.conf "$p128"
        llama "$m-half-128" "/tmp/models/$m.gguf" /tmp/half.conf "$p128"
        llama "$m-split-128" "/tmp/models/$m.gguf" /tmp/split.conf "$p128"
        llama "$m-half-512" "/tmp/models/$m.gguf" /tmp/half.conf "$p512"
        llama "$m-split-512" "/tmp/models/$m.gguf" /tmp/split.conf "$p512"
        tokens_differ "$m" half f32 "half vs f32 copies"
        tokens_differ "$m" split half "split k vs half"
    done
    for c in profile split-profile; do
        RAYO_LOG=info llama $c /tmp/models/tl-q4_0.gguf /tmp/$c.conf "$p128"
        grep 'profile' "$logs/$c.log" | grep -v 'm      1 n' | head -16
    done
    echo "done $(date -u)"
}

case $mode in
prepare) shift; prepare "$@" ;;
run) run ;;
*) echo "usage: $0 prepare [BUILD] [DIR] | run" >&2; exit 2 ;;
esac
