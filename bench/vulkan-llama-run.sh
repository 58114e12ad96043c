#!/bin/sh
# SPDX-License-Identifier: MIT
# vulkan-llama-run.sh - the vulkan inference checks and figures in one run on
# the GPU machine, from a build made elsewhere.
#
#   bench/vulkan-llama-run.sh prepare [BUILD] [DIR] [BASE]   here: copies what
#       the run needs from BUILD (default build/) into DIR (default
#       .gpu-vulkan) and this script into it; BASE, another build's
#       rayo-vulkan.so, goes to DIR/base for a same-run comparison; carry
#       DIR and .gl (bench/gpu-run.sh prepare fetches .gl's packages)
#   DIR/vulkan-llama-run.sh run                      there, repository root:
#       1. test-vulkan, test-vulkan-infer, test-batch-replay,
#          test-vulkan-copies and rayo-conform on vulkan for the ops of a
#          decoder (fresh seed), side by side;
#       2. vk-bench --quick --copies --gemv 4096x11008 and 11008x4096 in the
#          quantized dtypes, at the default precision and --relaxed (and
#          with BASE, relaxed): gemv against the copy bandwidth of the
#          same process;
#       3. GGUF files made there by gguf-make (TinyLlama shape q4_0, q8_0,
#          q4_k_m; the 7B shape q4_0), each run by
#          `rayo-llama --backend vulkan --ignore-eos --tokens --ctx 256 -n 64
#          --prompt-tokens <128 ids> --step-times` (the host time of a
#          replayed step's parts after the speed): TinyLlama q4_0 cold (pipeline
#          caches emptied; rayo-llama's default warm-up at load) first, cold again with
#          --no-warmup (the driver's compiling inside the timed prompt and
#          decode), then each file warm, with BASE (twice, --warmup,
#          with a pipeline cache of its own: its pipelines differ; the
#          second run is the figure), warm again
#          with --warmup too (the figure to compare with BASE's), and at
#          --precision strict, whose tokens the warm run's are compared with;
#       4. `profile = yes` breakdowns of a TinyLlama q4_0 and q4_k_m and a 7B decode
#          (and with BASE, --warmup), and both decoded without replay
#          (RAYO_LLAMA_REPLAY=0);
#       5. TinyLlama q4_0 under other [backend.vulkan] settings (VARIANTS:
#          lines of `key = value`, `;` between the settings of one run;
#          --warmup, as new settings make new pipelines;
#          default: push_descriptors = no, gemv_rows = 1, gemv_wg = 128
#          with the profile; for the prompt typed_matmul_transpose = yes,
#          precision = f16 and two matmul tiles).
# A shorter run: PARTS (default "checks gemv llama profile noreplay
# variants") names the parts to run; MODELS (default "tl-q4_0 tl-q8_0
# tl-q4_k_m 7b-q4_0") the files of part 3; CONFORM_OPS the ops rayo-conform
# checks in part 1 (default those of a decoder).
# Logs in $OUT/logs.tgz; a summary last.
set -u
mode=${1:-run}
. "$(dirname "$0")/gpu-common.sh"

prepare() {
    build=${1:-build} dir=${2:-.gpu-vulkan} base=${3:-}
    make -C "$build" -j2 tests/test-vulkan tests/test-vulkan-infer tests/test-batch-replay tests/test-vulkan-copies \
        bench/vk-bench >/dev/null ||
        { echo "prepare: could not build the programs in $build" >&2; exit 1; }
    gpu_stage "$build" "$dir" core/.libs/librayo.so.0 plugins/vulkan/.libs/rayo-vulkan.so tools/.libs/rayo-conform \
        tests/.libs/test-vulkan tests/.libs/test-vulkan-infer tests/.libs/test-batch-replay \
        tests/.libs/test-vulkan-copies bench/.libs/vk-bench \
        examples/llama/.libs/rayo-llama \
        examples/llama/.libs/gguf-make plugins/scalar/.libs/rayo-scalar.so plugins/avx2/.libs/rayo-avx2.so \
        plugins/avx512/.libs/rayo-avx512.so
    if [ -n "$base" ]; then
        mkdir -p "$dir/base" && cp -L "$base" "$dir/base/rayo-vulkan.so" &&
            cp "$dir/rayo-scalar.so" "$dir/rayo-avx2.so" "$dir/rayo-avx512.so" "$dir/base/"
    fi
    du -sh "$dir"
}

# The Vulkan loader and the GL dispatch libraries the NVIDIA ICD needs, from .gl.
vulkan_env() {
    for f in .gl/*.deb; do case $f in *libinih*) ;; *) dpkg -x "$f" / ;; esac; done
    ldconfig
    export VK_DRIVER_FILES="${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}"
}

# llama NAME FILE [CONFIG [PLUGINS [OPTIONS]]]: one run, its tokens and speed lines in $logs/NAME.log
llama() {
    name=$1 file=$2 envs=""
    # BASE's pipelines differ from this build's: a pipeline cache of its own,
    # so that neither build's runs evict or rebuild the other's
    [ "${4:-$d}" != "$d/base" ] || envs="XDG_CACHE_HOME=/tmp/base-pipeline-cache"
    # shellcheck disable=SC2086 # OPTIONS, envs: words
    env $envs RAYO_PLUGIN_PATH=${4:-$d} RAYO_CONFIG=${3:-/tmp/empty.conf} timeout 90 "$d/rayo-llama" --backend vulkan \
        --ignore-eos --tokens --ctx 256 -n 64 --prompt-tokens "$prompt" --step-times ${5:-} "$file" \
        >"$logs/$name.out" 2>"$logs/$name.log"
    echo "$name exit $?: $(grep -h -i 'tok/s' "$logs/$name.log" | tail -1 | sed 's/.*precision, //')"
    grep -h 'time:' "$logs/$name.log" | sed 's/^rayo-llama: /  /'
    grep -h 'step times' "$logs/$name.log" | sed 's/^rayo-llama: /  /'
}

# The tests take their plugins from beside librayo in a build tree's layout.
test_tree() {
    t=/tmp/vulkan-tree
    mkdir -p $t/core/.libs $t/plugins/vulkan/.libs $t/plugins/scalar/.libs
    cp "$d/librayo.so.0" $t/core/.libs/ && cp "$d/rayo-vulkan.so" $t/plugins/vulkan/.libs/ &&
        cp "$d/rayo-scalar.so" $t/plugins/scalar/.libs/
}

checks() {
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    test_tree
    LD_LIBRARY_PATH=$t/core/.libs:$LD_LIBRARY_PATH timeout 150 "$d/test-vulkan" >"$logs/test-vulkan.log" 2>&1 &
    tv=$!
    LD_LIBRARY_PATH=$t/core/.libs:$LD_LIBRARY_PATH RAYO_CONFORM_SEED=$seed timeout 150 "$d/test-vulkan-infer" \
        >"$logs/test-vulkan-infer.log" 2>&1 &
    ti=$!
    timeout 150 "$d/rayo-conform" --seed "$seed" --op "${CONFORM_OPS:-gemv,attention,rope,get_rows,rmsnorm,swiglu,add,mul,convert}" \
        "$d/rayo-vulkan.so" >"$logs/conform.log" 2>&1
    echo "conform on vulkan (seed $seed) exit $?: $(grep -h '^Summary' "$logs/conform.log")"
    wait $tv
    echo "test-vulkan exit $?: $(tail -1 "$logs/test-vulkan.log")"
    wait $ti
    echo "test-vulkan-infer exit $?: $(tail -1 "$logs/test-vulkan-infer.log")"
    LD_LIBRARY_PATH=$t/core/.libs:$LD_LIBRARY_PATH timeout 60 "$d/test-batch-replay" >"$logs/test-batch-replay.log" 2>&1
    echo "test-batch-replay exit $?: $(grep -h 'vulkan' "$logs/test-batch-replay.log" | tail -1); $(tail -1 "$logs/test-batch-replay.log")"
    LD_LIBRARY_PATH=$t/core/.libs:$LD_LIBRARY_PATH RAYO_CONFORM_SEED=$seed timeout 60 "$d/test-vulkan-copies" \
        >"$logs/test-vulkan-copies.log" 2>&1
    echo "test-vulkan-copies exit $?: $(tail -1 "$logs/test-vulkan-copies.log")"
}

# vk-bench's gemv table: this build at the default (strict) and at relaxed
# precision (the decode's calls), BASE at relaxed.
gemv_bench() {
    for v in "" relaxed base; do
        dir=$d/${v#relaxed} flags=--relaxed
        [ "$v" != "" ] || flags=
        [ -f "$dir/rayo-vulkan.so" ] || continue
        for shape in 4096x11008 11008x4096; do
            RAYO_PLUGIN_PATH=$dir timeout 60 "$d/vk-bench" --quick --copies --gemv $shape $flags \
                --dtype f16,q8_0,q4_0,q4_k,q6_k >"$logs/gemv-$shape$v.log" 2>&1
            echo "vk-bench gemv $shape ${v:-this build} exit $?"
            grep -E '^(q|f16|dtype)|references' "$logs/gemv-$shape$v.log" | cut -c1-120
        done
    done
}

# part NAME: whether PARTS includes it
part() {
    case " ${PARTS:-checks gemv llama profile noreplay variants} " in *" $1 "*) return 0 ;; esac
    return 1
}

run() {
    d=$PWD/$(dirname "$0")
    gpu_env "$d" /tmp/vulkan-logs
    vulkan_env
    gpu_make_models "$d" # the models, made while the checks run (CPU only)
    ! part checks || checks
    wait
    ! part gemv || gemv_bench
    echo "models: $(ls -s /tmp/models | tr '\n' ' ')"
    prompt=$(seq 100 227 | paste -sd, -)
    : >/tmp/empty.conf
    printf '[backend.vulkan]\nprofile = yes\n' >/tmp/profile.conf
    ! part llama || llama_runs
    if part profile; then
        for m in tl-q4_0 tl-q4_k_m 7b-q4_0; do
            for v in "" base; do
                [ -z "$v" ] || [ -f "$d/$v/rayo-vulkan.so" ] || continue
                RAYO_LOG=info llama "$m-profile$v" "/tmp/models/$m.gguf" /tmp/profile.conf "$d/$v" ${v:+--warmup}
                grep 'profile:' "$logs/$m-profile$v.log" | cut -c1-150 >/tmp/profile.txt
                head -16 /tmp/profile.txt
                tail -1 /tmp/profile.txt
            done
        done
    fi
    if part noreplay; then
        # the same build without replay (the example records each step anew)
        export RAYO_LLAMA_REPLAY=0
        for m in tl-q4_0 7b-q4_0; do
            llama "$m-noreplay" "/tmp/models/$m.gguf"
        done
        unset RAYO_LLAMA_REPLAY
    fi
    ! part variants || variants
    echo "done $(date -u)"
}

llama_runs() {
    rm -rf "$XDG_CACHE_HOME" # rayo's pipeline cache and the driver's own (the checks filled them)
    llama tl-q4_0-cold /tmp/models/tl-q4_0.gguf
    rm -rf "$XDG_CACHE_HOME"
    llama tl-q4_0-cold-no-warmup /tmp/models/tl-q4_0.gguf /tmp/empty.conf "$d" --no-warmup
    for m in ${MODELS:-tl-q4_0 tl-q8_0 tl-q4_k_m 7b-q4_0}; do
        llama "$m-warm" "/tmp/models/$m.gguf"
        if [ -f "$d/base/rayo-vulkan.so" ]; then # the first run fills BASE's pipeline cache
            llama "$m-base-first" "/tmp/models/$m.gguf" /tmp/empty.conf "$d/base" --warmup
            llama "$m-base" "/tmp/models/$m.gguf" /tmp/empty.conf "$d/base" --warmup
        fi
        llama "$m-warm2" "/tmp/models/$m.gguf" /tmp/empty.conf "$d" --warmup
        llama "$m-strict" "/tmp/models/$m.gguf" /tmp/empty.conf "$d" "--precision strict"
        tr ' ' '\n' <"$logs/$m-warm.out" >/tmp/a.tok
        tr ' ' '\n' <"$logs/$m-strict.out" >/tmp/b.tok
        echo "$m: tokens agree with the strict run up to line $(cmp /tmp/a.tok /tmp/b.tok 2>&1 | grep -o 'line [0-9]*' || echo '(all)') of $(wc -l </tmp/a.tok)"
    done
}

variants() {
    printf '%s\n' "${VARIANTS:-push_descriptors = no;profile = yes
typed_matmul_transpose = yes
precision = f16
matmul_tile = 64x64x16x4x4
matmul_tile = 32x32x16x4x4
gemv_rows = 1;profile = yes
gemv_wg = 128;profile = yes}" | while IFS= read -r v; do
        printf '[backend.vulkan]\n%s\n' "$v" | tr ';' '\n' >/tmp/variant.conf
        RAYO_LOG=info llama "tl-q4_0-variant" /tmp/models/tl-q4_0.gguf /tmp/variant.conf "$d" --warmup
        echo "  ($v) $(grep -h 'GPU time' "$logs/tl-q4_0-variant.log" | sed 's/.*profile: //')"
        mv "$logs/tl-q4_0-variant.log" "$logs/tl-q4_0-variant-$(echo "$v" | tr -c 'a-z0-9' _).log"
    done
}

case $mode in
prepare) shift; prepare "$@" ;;
run) run ;;
*) echo "usage: $0 prepare [BUILD] [DIR] [BASE] | run" >&2; exit 2 ;;
esac
