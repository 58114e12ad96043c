#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda-decode-run.sh - the cuda decode checks and figures in one run on the
# GPU machine, from a build made elsewhere.
#
#   bench/cuda-decode-run.sh prepare [BUILD] [DIR] [BASE [ALT [ALT2]]]   here: copies
#       what the run needs from BUILD (default build/) into DIR (default
#       .gpu-decode) and this script into it; BASE, ALT and ALT2, other builds'
#       rayo-cuda.so, go to DIR/base, DIR/alt and DIR/alt2 for a same-run comparison;
#       carry DIR and .gl (bench/gpu-run.sh prepare fetches .gl's packages);
#       BASE_LLAMA (a rayo-llama binary, e.g. main's) goes to DIR/base too, and
#       then the BASE runs use it (the model's own op list as well as the plugin)
#   DIR/cuda-decode-run.sh run                       there, repository root:
#       1. test-cuda, test-batch-replay, rayo-conform on cuda for gemv, rmsnorm,
#          rope and attention (fresh seed; the cancel group left out) and
#          compute-sanitizer memcheck on a quick one, side by side;
#       2. cuda-bench-infer: quantized gemv and attention against the read
#          bandwidth of rayo's sum, strict and relaxed, big and decode shapes
#          (with BASE and ALT too);
#       3. GGUF files made there by gguf-make (TinyLlama shape q4_0, q8_0,
#          q4_k_m; the 7B shape q4_0), each decoded by
#          `rayo-llama --backend cuda --ignore-eos --tokens --ctx 256 -n 64
#          --prompt-tokens <128 ids>` three times: cold (first run, empty JIT
#          cache: TinyLlama q4_0 only; once more with [backend.cuda]
#          embedded_code = no, the JIT), warm, warm with [backend.cuda]
#          pdl = no (its tokens compared with the warm run's; DECODE_ALTS, default
#          "nopdl", names these variants: nopdl, nofuse = fuse_norm = no,
#          norope = fuse_rope = no), warm with the
#          BASE, ALT and ALT2 plugins (when there are), all again, and once at --precision
#          strict, whose tokens the warm run's are compared with (and
#          BASE's at strict with this build's, BASE's warm with this one's);
#       4. one `profile = yes` breakdown of a TinyLlama q4_0 decode;
#       5. Nsight Compute (ncu) over the kernels of a few TinyLlama q4_0 and
#          7B q4_0 decode steps (replayed graphs: each kernel node alone),
#          bench/decode-step-kernels.py's table of the last whole step: per
#          kernel its time, DRAM bytes and rate, registers, achieved
#          occupancy and grid, and the step's kernel time in all.
#   DECODE_PARTS="checks bench llama cold profile ncu" (the default: all)
#   picks the parts (cold: the cold runs of part 3); DECODE_MODELS (default: all four) the models of part 3,
#   NCU_MODELS (default: tl-q4_0 7b-q4_0) those of part 5.
# Logs in $OUT/logs.tgz; a summary last.
set -u
mode=${1:-run}
. "$(dirname "$0")/gpu-common.sh"

prepare() {
    build=${1:-build} dir=${2:-.gpu-decode} base=${3:-} alt=${4:-} alt2=${5:-}
    make -C "$build" -j2 tests/test-cuda tests/test-batch-replay bench/cuda-bench-infer >/dev/null ||
        { echo "prepare: could not build the programs in $build" >&2; exit 1; }
    gpu_stage "$build" "$dir" core/.libs/librayo.so.0 plugins/cuda/.libs/rayo-cuda.so tools/.libs/rayo-conform \
        tests/.libs/test-cuda tests/.libs/test-batch-replay bench/.libs/cuda-bench-infer examples/llama/.libs/rayo-llama \
        examples/llama/.libs/gguf-make plugins/scalar/.libs/rayo-scalar.so plugins/avx2/.libs/rayo-avx2.so \
        plugins/avx512/.libs/rayo-avx512.so
    cp "$(dirname "$0")/decode-step-kernels.py" "$dir/"
    for v in base alt alt2; do
        eval "so=\$$v"
        [ -n "$so" ] || continue
        mkdir -p "$dir/$v" && cp -L "$so" "$dir/$v/rayo-cuda.so" && cp "$dir/rayo-scalar.so" "$dir/rayo-avx2.so" "$dir/$v/"
    done
    [ -z "${BASE_LLAMA:-}" ] || cp -L "$BASE_LLAMA" "$dir/base/rayo-llama"
    du -sh "$dir"
}

# agree A B: how far runs A's and B's greedy tokens agree
agree() {
    tr ' ' '\n' <"$logs/$1.out" >/tmp/a.tok
    tr ' ' '\n' <"$logs/$2.out" >/tmp/b.tok
    echo "$1 / $2: tokens agree up to $(cmp /tmp/a.tok /tmp/b.tok 2>&1 | grep -o 'line [0-9]*' || echo '(all)') of $(wc -l </tmp/a.tok)"
}

# llama NAME FILE [CONFIG [PLUGINS [OPTIONS]]]: one decode run, its tokens and speed lines in $logs/NAME.log
# (PLUGINS' own rayo-llama where it has one)
llama() {
    name=$1 file=$2 bin=$d/rayo-llama
    [ ! -x "${4:-$d}/rayo-llama" ] || bin=${4:-$d}/rayo-llama
    # shellcheck disable=SC2086 # OPTIONS: words
    RAYO_PLUGIN_PATH=${4:-$d} RAYO_CONFIG=${3:-/tmp/empty.conf} timeout 120 "$bin" --backend cuda \
        --ignore-eos --tokens --ctx 256 -n 64 --prompt-tokens "$prompt" ${5:-} "$file" \
        >"$logs/$name.out" 2>"$logs/$name.log"
    echo "$name exit $?: $(grep -h -i 'tok/s' "$logs/$name.log" | tail -2 | tr '\n' ' ')"
}

# part NAME: whether DECODE_PARTS names it
part() {
    case " ${DECODE_PARTS:-checks bench llama cold profile ncu} " in *" $1 "*) return 0 ;; esac
    return 1
}

checks() {
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    RAYO_CONFORM_SEED=$seed timeout 200 "$d/test-cuda" >"$logs/test-cuda.log" 2>&1 &
    tc=$!
    sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
    timeout 200 "$sanitizer" --tool memcheck --error-exitcode 3 --print-limit 20 "$d/rayo-conform" --quick \
        --op gemv,rmsnorm,rope,attention --skip cancel "$d/rayo-cuda.so" >"$logs/memcheck-gemv.log" 2>&1 &
    mc=$!
    timeout 200 "$d/rayo-conform" --seed "$seed" --op gemv,rmsnorm,rope,attention --skip cancel "$d/rayo-cuda.so" \
        >"$logs/conform-gemv.log" 2>&1
    echo "conform gemv,rmsnorm,rope,attention --skip cancel (seed $seed) exit $?: $(grep -h '^Summary' "$logs/conform-gemv.log")"
    wait $mc
    echo "memcheck conform --quick gemv,rmsnorm,rope,attention exit $?: $(grep -h 'ERROR SUMMARY' "$logs/memcheck-gemv.log")"
    wait $tc
    echo "test-cuda exit $?: $(grep -c FAIL "$logs/test-cuda.log") FAIL lines"
    grep FAIL "$logs/test-cuda.log" | head -5
    timeout 100 "$d/test-batch-replay" >"$logs/test-batch-replay.log" 2>&1
    echo "test-batch-replay exit $?: $(grep -h 'cuda' "$logs/test-batch-replay.log" | head -2 | tr '\n' ' ')"
}

bench() {
    for v in "" base alt alt2; do
        [ -z "$v" ] || [ -f "$d/$v/rayo-cuda.so" ] || continue
        RAYO_PLUGIN_PATH=$d/$v timeout 150 "$d/cuda-bench-infer" >"$logs/bench-infer$v.log" 2>&1
        echo "bench ${v:-this build} exit $?"
        grep -E '^(ref|gemv|attention) ' "$logs/bench-infer$v.log" | grep -E 'sum|q4_0|q8_0|q4_k|q6_k|attention' |
            cut -c1-80
    done
}

decode() {
    ! part cold || XDG_CACHE_HOME=/tmp/rayo-cache-jit llama tl-q4_0-cold-jit /tmp/models/tl-q4_0.gguf /tmp/jit.conf
    for m in ${DECODE_MODELS:-tl-q4_0 tl-q8_0 tl-q4_k_m 7b-q4_0}; do
        [ "$m" = tl-q4_0 ] && part cold && llama "$m-cold" "/tmp/models/$m.gguf"
        llama "$m-warm" "/tmp/models/$m.gguf"
        for r in "" -2; do
            [ -z "$r" ] || llama "$m-warm$r" "/tmp/models/$m.gguf"
            for a in ${DECODE_ALTS:-nopdl}; do llama "$m-$a$r" "/tmp/models/$m.gguf" "/tmp/$a.conf"; done
            for v in base alt alt2; do
                [ -f "$d/$v/rayo-cuda.so" ] && llama "$m-$v$r" "/tmp/models/$m.gguf" /tmp/empty.conf "$d/$v"
            done
        done
        llama "$m-strict" "/tmp/models/$m.gguf" /tmp/empty.conf "$d" "--precision strict"
        agree "$m-warm" "$m-strict"
        for a in ${DECODE_ALTS:-nopdl}; do agree "$m-warm" "$m-$a"; done
        [ -f "$d/base/rayo-cuda.so" ] || continue
        llama "$m-base-strict" "/tmp/models/$m.gguf" /tmp/empty.conf "$d/base" "--precision strict"
        agree "$m-warm" "$m-base"
        agree "$m-strict" "$m-base-strict"
    done
}

# ncu over the kernels of a short prompt and three decode steps of model $1
step_kernels() {
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    timeout 150 "$ncu" --clock-control none -c 1500 --metrics gpu__time_duration.sum,dram__bytes_read.sum,\
dram__bytes_write.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__grid_size,launch__block_size --csv "$d/rayo-llama" --backend cuda --ignore-eos --tokens --ctx 256 -n 3 \
        --prompt-tokens "$(seq 100 227 | paste -sd, -)" "/tmp/models/$1.gguf" >"$logs/ncu-$1.csv" 2>"$logs/ncu-$1.log"
    echo "ncu $1 exit $?: $(grep -c '^"' "$logs/ncu-$1.csv") rows"
    python3 "$d/decode-step-kernels.py" "$logs/ncu-$1.csv"
}

run() {
    d=$PWD/$(dirname "$0")
    gpu_env "$d" /tmp/decode-logs
    gpu_make_models "$d" # the models, made while the checks run (CPU only)
    models=$!
    ! part checks || checks
    ! part bench || bench
    wait $models
    wait
    echo "models: $(ls -s /tmp/models | tr '\n' ' ')"
    prompt=$(seq 100 227 | paste -sd, -)
    : >/tmp/empty.conf
    printf '[backend.cuda]\nprofile = yes\n' >/tmp/profile.conf
    printf '[backend.cuda]\nembedded_code = no\n' >/tmp/jit.conf
    printf '[backend.cuda]\npdl = no\n' >/tmp/nopdl.conf
    printf '[backend.cuda]\nfuse_norm = no\n' >/tmp/nofuse.conf
    printf '[backend.cuda]\nfuse_rope = no\n' >/tmp/norope.conf
    ! part llama || decode
    if part profile; then
        RAYO_LOG=info llama tl-q4_0-profile /tmp/models/tl-q4_0.gguf /tmp/profile.conf
        grep 'profile:' "$logs/tl-q4_0-profile.log" | head -24
    fi
    if part ncu; then
        for m in ${NCU_MODELS:-tl-q4_0 7b-q4_0}; do step_kernels "$m"; done
    fi
    echo "done $(date -u)"
}

case $mode in
prepare) shift; prepare "$@" ;;
run) run ;;
*) echo "usage: $0 prepare [BUILD] [DIR] | run" >&2; exit 2 ;;
esac
