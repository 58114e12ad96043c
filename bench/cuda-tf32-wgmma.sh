#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda-tf32-wgmma.sh - TF32 through wgmma on an sm_90 GPU
# machine, in one run:
#   1. build the cuda plugin and the programs below (OUT/build; the source
#      tree must have its configure script);
#   2. test-cuda (its TF32 part checks the wgmma path against float64);
#   3. cuda-bench: the mma.sync TF32 kernel (wgmma off), then each wgmma
#      kernel on C = A B and on C = A B^T, then cuBLAS TF32 through torch
#      (allow_tf32) on the same shapes, in the same run;
#   4. rayo-conform --op matmul (fp32: the strict path must be unchanged),
#      then a quick matmul conform with precision = tf32 under
#      compute-sanitizer memcheck (TF32 misses the strict contract by design:
#      only the memcheck verdict counts there).
#
#   bench/cuda-tf32-wgmma.sh [STEPS]    STEPS: any of build test bench conform memcheck
#                                          (default: all)
# OUT (default ./wgmma-out) receives the logs.  Optional: TF32_KERNELS
# (cuda-bench --tf32-kernels), CONFORM_ARGS (e.g. --quick), MEMCHECK_TIMEOUT,
# MEMCHECK_WGMMA_KERNEL (the wgmma_kernel of the memcheck run).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$PWD/wgmma-out}
steps=${1:-build test bench conform memcheck}
mkdir -p "$out"
build=$out/build
status=0
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

if has build; then
    echo "== build"
    mkdir -p "$build"
    (cd "$build" && "$src/configure" --enable-werror >/dev/null &&
        make -j"$(nproc)" plugins/cuda/rayo-cuda.la bench/cuda-bench tests/test-cuda tools/rayo-conform) \
        >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
fi
plugin=$build/plugins/cuda/.libs/rayo-cuda.so
cache=$(mktemp -d)
LD_LIBRARY_PATH=$build/core/.libs:$build/tools/conform/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
XDG_CACHE_HOME=$cache XDG_CONFIG_HOME=$cache/config RAYO_PLUGIN_PATH=$build/plugins/cuda/.libs
export LD_LIBRARY_PATH XDG_CACHE_HOME XDG_CONFIG_HOME RAYO_PLUGIN_PATH
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader

if has test; then
    echo "== test-cuda"
    timeout 200 "$build/tests/.libs/test-cuda" >"$out/test-cuda.log" 2>&1 ||
        { echo "test-cuda failed"; grep -E "FAIL|error" "$out/test-cuda.log" | head -20; status=1; }
    tail -2 "$out/test-cuda.log"
fi

if has bench; then
    echo "== cuda-bench (TF32) and torch"
    timeout 240 "$build/bench/.libs/cuda-bench" --sgemm-kernels none \
        --tf32-kernels "${TF32_KERNELS:-tf32_128x128_w2x2_r,wg_tf32_128x256,wg_tf32_128x128}" \
        >"$out/bench.log" 2>&1 || { echo "cuda-bench failed"; status=1; }
    grep -E "^tf32" "$out/bench.log"
    timeout 120 python3 - >"$out/torch.log" 2>&1 <<'EOF' || { echo "torch failed"; status=1; }
import statistics, torch
torch.backends.cuda.matmul.allow_tf32 = True
dev = torch.device("cuda")
for n in (1024, 2048, 4096, 8192):
    a = torch.rand(n, n, device=dev) * 2 - 1
    b = torch.rand(n, n, device=dev) * 2 - 1
    c = torch.empty(n, n, device=dev)
    for name, fn in (("A B", lambda: torch.mm(a, b, out=c)), ("A B^T", lambda: torch.mm(a, b.t(), out=c))):
        reps = 3 if n >= 8192 else 10 if n >= 2048 else 40
        fn(); torch.cuda.synchronize()
        ts = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(reps):
                fn()
            e1.record(); e1.synchronize()
            ts.append(e0.elapsed_time(e1) / 1e3 / reps)
        print("torch tf32 %-6s %5d %8.2f TFLOP/s" % (name, n, 2.0 * n ** 3 / statistics.median(ts) * 1e-12), flush=True)
EOF
    cat "$out/torch.log"
fi

if has conform; then
    echo "== rayo-conform --op matmul (fp32)"
    timeout 200 "$build/tools/.libs/rayo-conform" ${CONFORM_ARGS-} --op matmul "$plugin" >"$out/conform.log" 2>&1 ||
        { echo "rayo-conform failed"; grep -B2 -A6 FAIL "$out/conform.log" | head -30; status=1; }
    tail -2 "$out/conform.log"
fi

if has memcheck; then
    echo "== memcheck: quick matmul conform with precision = tf32"
    printf '[backend.cuda]\nprecision = tf32\nwgmma_kernel = %s\n' "${MEMCHECK_WGMMA_KERNEL:-auto}" >"$cache/tf32.conf"
    RAYO_CONFIG=$cache/tf32.conf timeout ${MEMCHECK_TIMEOUT:-300} compute-sanitizer --tool memcheck --error-exitcode 3 --print-limit 20 \
        "$build/tools/.libs/rayo-conform" --quick --op matmul "$plugin" >"$out/memcheck.log" 2>&1
    rc=$?
    grep -E "ERROR SUMMARY" "$out/memcheck.log" | tail -1
    [ $rc -eq 3 ] || [ $rc -eq 124 ] && { echo "memcheck: exit $rc"; grep -A12 "=====" "$out/memcheck.log" | head -40; status=1; }
fi
rm -rf "$cache"
exit $status
