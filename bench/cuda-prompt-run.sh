#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda-prompt-run.sh - the cuda prompt (prefill) checks and figures in one run
# on the GPU machine, from a build made elsewhere.
#
#   bench/cuda-prompt-run.sh prepare [BUILD] [DIR] [BASE]   here: copies what
#       the run needs from BUILD (default build/) into DIR (default
#       .gpu-prompt) and this script into it; BASE, another build's
#       rayo-cuda.so, goes to DIR/base for a same-run comparison; carry DIR
#       and .gl (bench/gpu-run.sh prepare fetches .gl's packages)
#   DIR/cuda-prompt-run.sh run                       there, repository root:
#       1. test-cuda (its second state checks the split-k prompt products)
#          beside rayo-conform --quick --op matmul on cuda, one fresh seed, as
#          configured by default and without the split along k
#          ([backend.cuda] prompt_split_k = no);
#       2. GGUF files made there by gguf-make (TinyLlama shape q4_0, q8_0,
#          q4_k_m; the 7B shape q4_0), each prefilled by `rayo-llama --backend
#          cuda --warmup --ignore-eos --tokens --ctx 640 -n 16 --prompt-tokens
#          <128 or 512 ids>` as configured by default, without the split
#          along k, without the half path (half_prompt = no), and with the
#          BASE plugin as configured by default (when there is one), the
#          greedy tokens after each prompt length compared; PROMPT_RUNS (words of "default nosplit
#          f32 base") picks fewer, PROMPT_MODELS (words of "tl-q4_0 tl-q8_0 tl-q4_k_m
#          7b-q4_0") fewer files (only those are made), PROMPT_CHECKS=no no step 1 (a
#          timing run of a build already checked);
#       3. `profile = yes` breakdowns of a TinyLlama q4_0 128-token prefill
#          and of 7B 128- and 512-token ones (PROMPT_PROFILES: MODEL:TOKENS
#          words, "" for none), of the BASE plugin too when there is one.
#   DIR/cuda-prompt-run.sh kernels                   there: the GPU time and
#       DRAM bytes of each kernel of a 7B-shape q4_0 128-token prompt's first
#       KERNELS_COUNT (default 28: the first layer's seven products, four
#       kernels each) half-path launches (half_*, wg_*), by Nsight Compute
#       (ncu; it fails where it cannot read the GPU's counters); of the BASE
#       plugin too, when there is one.
#   DIR/cuda-prompt-run.sh memcheck                  there: compute-sanitizer
#       --tool memcheck around a 128-token prefill (-n 1) of the TinyLlama
#       q4_0 and q8_0 files (made there unless /tmp/models holds them): the
#       half path's row copies, products and scale-back.
# Logs in $OUT/logs.tgz; a summary on stdout.
set -u
mode=${1:-run}
. "$(dirname "$0")/gpu-common.sh"

prepare() {
    build=${1:-build} dir=${2:-.gpu-prompt} base=${3:-}
    gpu_stage "$build" "$dir" core/.libs/librayo.so.0 plugins/cuda/.libs/rayo-cuda.so tools/.libs/rayo-conform \
        tests/.libs/test-cuda \
        examples/llama/.libs/rayo-llama examples/llama/.libs/gguf-make plugins/scalar/.libs/rayo-scalar.so \
        plugins/avx2/.libs/rayo-avx2.so plugins/avx512/.libs/rayo-avx512.so
    if [ -n "$base" ]; then
        mkdir -p "$dir/base" && cp -L "$base" "$dir/base/rayo-cuda.so" && cp "$dir/rayo-scalar.so" "$dir/rayo-avx2.so" "$dir/base/"
    fi
    du -sh "$dir"
}

# make_model NAME: /tmp/models/NAME.gguf (tl-<scheme>: the TinyLlama shape; 7b-q4_0), unless it is there
make_model() {
    mm=$1
    [ -s "/tmp/models/$mm.gguf" ] && return
    case $mm in
    7b-q4_0) set -- --layers 32 --embd 4096 --heads 32 --kv-heads 32 --ffn 11008 --vocab 32000 --ctx 4096 \
        --untied --scheme q4_0 ;;
    *) set -- --preset tinyllama --scheme "${mm#tl-}" ;;
    esac
    "$d/gguf-make" "$@" -o "/tmp/models/$mm.gguf" >/dev/null 2>&1
}

# conform NAME CONFIG ARGS...: one rayo-conform run on cuda, its summary and first failures
conform() {
    name=$1 conf=$2
    shift 2
    RAYO_CONFIG=$conf timeout 100 "$d/rayo-conform" --seed "$seed" "$@" "$d/rayo-cuda.so" >"$logs/$name.log" 2>&1
    echo "$name $* (seed $seed) exit $?: $(grep -h '^Summary' "$logs/$name.log")"
    grep -h -E 'cases failed|out of contract' "$logs/$name.log" | cut -c1-300 | head -5
}

# llama NAME FILE CONFIG IDS [PLUGINS]: one run after a warm-up in the same process, its tokens and speed line in
# $logs/NAME.*; other PLUGINS keep their own code cache
llama() {
    RAYO_PLUGIN_PATH=${5:-$d} XDG_CACHE_HOME=$XDG_CACHE_HOME${5:+-$(basename "$5")} RAYO_CONFIG=$3 timeout 90 "$d/rayo-llama" --backend cuda --warmup --ignore-eos --tokens --ctx 640 -n 16 \
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

# tokens_differ MODEL A B WHAT: how many of run A's greedy tokens differ from run B's, after the 128-
# and the 512-token prompts
tokens_differ() {
    for n in 128 512; do
        tr ' ' '\n' <"$logs/$1-$2-$n.out" >/tmp/a.tok
        tr ' ' '\n' <"$logs/$1-$3-$n.out" >/tmp/b.tok
        echo "$1, $n: $(diff /tmp/a.tok /tmp/b.tok | grep -c '^<') of $(wc -l </tmp/a.tok) tokens differ ($4)"
    done
}

run() {
    d=$PWD/$(dirname "$0")
    gpu_env "$d" /tmp/prompt-logs
    models=${PROMPT_MODELS:-tl-q4_0 tl-q8_0 tl-q4_k_m 7b-q4_0}
    for m in $models; do make_model "$m" & done
    : >/tmp/default.conf
    printf '[backend.cuda]\nhalf_prompt = no\n' >/tmp/f32.conf
    printf '[backend.cuda]\nprompt_split_k = no\n' >/tmp/nosplit.conf
    printf '[backend.cuda]\nprofile = yes\n' >/tmp/profile.conf
    runs=${PROMPT_RUNS:-default nosplit f32 base}
    [ -f "$d/base/rayo-cuda.so" ] || runs=$(echo "$runs" | sed 's/base//')
    if [ "${PROMPT_CHECKS:-yes}" != no ]; then
        test_cuda &
        seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
        conform conform-default /tmp/default.conf --quick --op matmul &
        conform conform-nosplit /tmp/nosplit.conf --quick --op matmul &
    fi
    wait
    echo "models: $(ls -s /tmp/models | tr '\n' ' ') load: $(cat /proc/loadavg)"
    p128=$(seq 100 227 | paste -sd, -) p512=$(seq 100 611 | paste -sd, -)
    for m in $models; do
        for n in 128 512; do
            eval "ids=\$p$n"
            for c in $runs; do
                if [ "$c" = base ]; then
                    llama "$m-$c-$n" "/tmp/models/$m.gguf" /tmp/default.conf "$ids" "$d/base"
                else
                    llama "$m-$c-$n" "/tmp/models/$m.gguf" /tmp/$c.conf "$ids"
                fi
            done
        done
        for c in $runs; do
            [ "$c" = default ] || tokens_differ "$m" default "$c" "default vs $c"
        done
    done
    for run in ${PROMPT_PROFILES-tl-q4_0:128 7b-q4_0:128 7b-q4_0:512}; do
        m=${run%:*} n=${run#*:}
        make_model "$m"
        eval "ids=\$p$n"
        for v in "" base; do
            [ -z "$v" ] || [ -f "$d/$v/rayo-cuda.so" ] || continue
            RAYO_LOG=info llama "$m-profile$v-$n" "/tmp/models/$m.gguf" /tmp/profile.conf "$ids" "$d/$v"
            echo "profile ${v:-this build}:"
            grep 'profile' "$logs/$m-profile$v-$n.log" | grep -v 'm      1 n' | head -12
        done
    done
    echo "done $(date -u)"
}

# ncu_layer NAME PLUGINS: Nsight Compute over the first KERNELS_COUNT half-path launches of a 7B-shape
# 128-token prompt with the plugin in PLUGINS, one line a launch: kernel, grid, each metric's value and unit
ncu_layer() {
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    RAYO_PLUGIN_PATH=$2 timeout 120 "$ncu" --clock-control none -k 'regex:^(half_|wg_)' -c "${KERNELS_COUNT:-28}" \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
        "$d/rayo-llama" --backend cuda --ignore-eos --tokens --ctx 640 -n 1 \
        --prompt-tokens "$(seq 100 227 | paste -sd, -)" /tmp/models/7b-q4_0.gguf >"$logs/$1.csv" 2>"$logs/$1.log"
    echo "$1 exit $?: $(grep -c '^"' "$logs/$1.csv") rows"
    tail -3 "$logs/$1.log"
    python3 -c 'import csv, sys
rows = {}
for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith("\"")):
    rows.setdefault((int(r["ID"]), r["Kernel Name"], r["Grid Size"]), []).append(r["Metric Name"] + " " + r["Metric Value"] + " " + r["Metric Unit"])
for (i, name, grid), v in sorted(rows.items()):
    print(i, name, grid, " | ".join(v))' "$logs/$1.csv"
}

kernels() {
    d=$PWD/$(dirname "$0")
    gpu_env "$d" /tmp/prompt-logs
    make_model 7b-q4_0
    ncu_layer ncu "$d"
    [ ! -f "$d/base/rayo-cuda.so" ] || ncu_layer ncu-base "$d/base"
}

memcheck() {
    d=$PWD/$(dirname "$0")
    gpu_env "$d" /tmp/prompt-logs
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    for s in q4_0 q8_0; do
        make_model tl-$s
        timeout 60 "$cs" --tool memcheck "$d/rayo-llama" --backend cuda --ignore-eos --tokens --ctx 640 -n 1 \
            --prompt-tokens "$(seq 100 227 | paste -sd, -)" /tmp/models/tl-$s.gguf >"$logs/memcheck-$s.log" 2>&1
        echo "memcheck tl-$s exit $?: $(grep -h 'ERROR SUMMARY' "$logs/memcheck-$s.log")"
    done
}

case $mode in
prepare) shift; prepare "$@" ;;
run) run ;;
kernels) kernels ;;
memcheck) memcheck ;;
*) echo "usage: $0 prepare [BUILD] [DIR] [BASE] | run | kernels | memcheck" >&2; exit 2 ;;
esac
