#!/bin/sh
# SPDX-License-Identifier: MIT
# gpu-run.sh - every GPU check and figure in one run per
# GPU machine, from a build tree made elsewhere (the GPU machine has no
# autotools, glslc or Vulkan headers).
#
#   bench/gpu-run.sh prepare [BUILD]   here: copies what the run needs from
#       BUILD (default build/) into .gpu/b and the Vulkan loader, inih and GL
#       dispatch packages into .gl (both ignored by git; carry both)
#   bench/gpu-run.sh run               on the GPU machine, repository root:
#       1. checks, side by side: test-cuda, test-vulkan, test-vulkan-infer,
#          rayo-conform (all ops, fresh seeds) on cuda and on vulkan, and
#          compute-sanitizer memcheck on a quick cuda conform;
#       2. then, one at a time on the idle GPU, each benchmark with its
#          reference in the same run: fp32/TF32/f16/bf16 matmul (cuBLAS
#          through torch), small and skinny matmuls, row ops / gemv /
#          transcendentals against copy bandwidth, inference kernels (gemv in
#          every weight dtype, attention) against read bandwidth and torch
#          sdpa, the vulkan benchmarks (typed matmuls against f32 in the
#          same process), and host-memory matmul.
# BUDGET (seconds, default 300): no benchmark starts later than this into
# the run, so the run fits the machine's time; the most wanted ones go first.
# Logs go to $OUT/logs.tgz (at most 8 files come back from the machine);
# the summary lines are printed last.  Exit status 0 when every check
# passed; the figures are reported, not judged.
set -u
mode=${1:-run}

prepare() {
    build=${1:-build}
    rm -rf .gpu/b && mkdir -p .gpu/b .gl
    # the test programs are check programs: `make` alone leaves them stale
    make -C "$build" -j2 tests/test-cuda tests/test-vulkan tests/test-vulkan-infer >/dev/null ||
        { echo "prepare: could not build the GPU tests in $build" >&2; exit 1; }
    for f in core/.libs/librayo.so.0 tools/.libs/rayo-conform tools/.libs/rayo-info \
        plugins/cuda/.libs/rayo-cuda.so bench/.libs/cuda-bench bench/.libs/cuda-bench-infer \
        plugins/cuda/.libs/cuda-host-bench plugins/vulkan/.libs/rayo-vulkan.so bench/.libs/vk-bench \
        plugins/scalar/.libs/rayo-scalar.so plugins/avx2/.libs/rayo-avx2.so plugins/avx512/.libs/rayo-avx512.so; do
        [ -f "$build/$f" ] || { echo "prepare: no $build/$f (build first)" >&2; exit 1; }
        mkdir -p ".gpu/b/$(dirname "$f")" && cp -L "$build/$f" ".gpu/b/$f"
    done
    for t in test-cuda test-vulkan test-vulkan-infer; do
        mkdir -p .gpu/b/tests && cp "$build/tests/.libs/$t" .gpu/b/tests/$t
    done
    (cd .gl && for p in libvulkan1 libinih1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2; do
        ls ${p}_*.deb >/dev/null 2>&1 || apt-get download $p; done) >/dev/null
    du -sh .gpu/b .gl
}

# check NAME SECONDS COMMAND...: a check that must pass; its log in $logs
check() {
    name=$1 secs=$2
    shift 2
    timeout "$secs" "$@" >"$logs/$name.log" 2>&1
    echo "$name exit $?" >"$logs/$name.rc"
}

# bench NAME SECONDS COMMAND...: a measurement; its output in $logs
bench() {
    name=$1 secs=$2
    shift 2
    if [ $(($(date +%s) - t0)) -gt "${BUDGET:-300}" ]; then
        echo "== $name: not run (past ${BUDGET:-300} s)"
        return
    fi
    echo "== $name ($(date -u +%T))"
    PYTHONUNBUFFERED=1 timeout "$secs" "$@" >"$logs/$name.log" 2>&1 || echo "$name: exit $?"
    save_logs
}

# the logs so far, in the one file that comes back (also if the run is cut short)
save_logs() { tar -C /tmp -czf "$out/logs.tgz" gpu-logs; }

run() {
    out=${OUT:-$PWD/gpu-out}
    logs=/tmp/gpu-logs t0=$(date +%s)
    mkdir -p "$out" "$logs"
    trap save_logs EXIT
    for f in .gl/*.deb; do case $f in *libinih*) ;; *) dpkg -x "$f" / ;; esac; done
    ldconfig
    mkdir -p /tmp/rayo-deps && dpkg -x .gl/libinih1_*.deb /tmp/rayo-deps
    b=$PWD/.gpu/b
    export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
    export LD_LIBRARY_PATH=$b/core/.libs:/tmp/rayo-deps/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64
    export XDG_CACHE_HOME=/tmp/rayo-cache XDG_CONFIG_HOME=/tmp/rayo-config
    unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU
    cu=$b/plugins/cuda/.libs vk=$b/plugins/vulkan/.libs conform=$b/tools/.libs/rayo-conform
    progs=$b/bench/.libs
    export RAYO_CUDA_PLUGIN=$cu/rayo-cuda.so
    export RAYO_PLUGIN_PATH=$cu:$vk:$b/plugins/scalar/.libs:$b/plugins/avx2/.libs:$b/plugins/avx512/.libs
    { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
      python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
      "$b/tools/.libs/rayo-info"; } >"$logs/info.log" 2>&1
    head -3 "$logs/info.log"

    echo "== checks, side by side ($(date -u +%T))"
    sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
    s1=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ') s2=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    check test-cuda 150 "$b/tests/test-cuda" &
    check test-vulkan 150 "$b/tests/test-vulkan" &
    check test-vulkan-infer 150 "$b/tests/test-vulkan-infer" &
    check conform-cuda 150 "$conform" --seed "$s1" "$cu/rayo-cuda.so" &
    check conform-vulkan 150 "$conform" --seed "$s2" "$vk/rayo-vulkan.so" &
    check memcheck-cuda 150 "$sanitizer" --tool memcheck --error-exitcode 3 --print-limit 20 \
        "$conform" --quick --op matmul,gemv,attention,softmax,rmsnorm "$cu/rayo-cuda.so" &
    wait
    save_logs
    status=0
    for r in "$logs"/*.rc; do
        cat "$r"
        grep -q ' exit 0$' "$r" || status=1
    done
    grep -h -E '^Summary|ERROR SUMMARY|failures|passed' "$logs"/conform-*.log "$logs"/memcheck-cuda.log \
        "$logs"/test-*.log | head -20

    # Most wanted first; none is started past $BUDGET seconds of the run.
    echo "== benchmarks, one at a time"
    bench cuda-infer 60 "$progs/cuda-bench-infer"
    bench torch-infer-cuda 60 python3 bench/torch-infer-cuda.py
    bench cuda-bench-half 60 "$progs/cuda-bench" --half-wgmma
    bench torch-half 60 python3 bench/torch-matmul.py measure-half
    bench vk-gemv-4096x11008 40 "$progs/vk-bench" --gemv 4096x11008 --copies
    bench vk-attention 40 "$progs/vk-bench" --attention 4096
    bench cuda-bench 90 "$progs/cuda-bench" --sgemm-kernels sgemm_nn_k16_async \
        --tf32-kernels tf32_128x128_w2x2_r,wg_tf32_128x256
    bench torch-matmul 60 python3 bench/torch-matmul.py measure
    bench cuda-shapes 40 "$progs/cuda-bench" --shapes
    bench torch-shapes 40 python3 bench/torch-small-matmul.py "$logs/cuda-shapes.log"
    bench cuda-bandwidth 40 "$progs/cuda-bench" --bandwidth --backend cuda
    bench vulkan-bandwidth 40 "$progs/cuda-bench" --bandwidth --backend vulkan
    bench torch-bandwidth 40 python3 bench/torch-bandwidth.py
    bench vk-sgemm-1024 30 "$progs/vk-bench" --sgemm 1024
    bench vk-sgemm-4096 30 "$progs/vk-bench" --sgemm 4096
    bench vk-typed-matmul 40 "$progs/vk-bench" --quick --matmul 512x11008x4096
    bench cuda-host 40 "$cu/cuda-host-bench" 4096
    python3 bench/torch-matmul.py summary "$logs/cuda-bench.log" "$logs/torch-matmul.log" \
        >"$logs/summary-matmul.log" 2>&1
    python3 bench/torch-matmul.py summary-half "$logs/cuda-bench-half.log" "$logs/torch-half.log" \
        >"$logs/summary-half.log" 2>&1
    save_logs
    cat "$logs/summary-half.log"
    echo "== done ($(date -u +%T)); status $status"
    return $status
}

case $mode in
prepare) shift; prepare "$@" ;;
run) run ;;
*) echo "usage: $0 prepare [BUILD] | run" >&2; exit 2 ;;
esac
