#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda-half-matmul.sh - f16 x f16 and bf16 x bf16 matmul of the cuda backend on a
# GPU machine, in one run, from a build tree made elsewhere:
#   1. test-cuda (the plugin's own checks, the mma16 kernels among them);
#   2. cuda-bench --half (rayo) and torch-matmul.py measure-half (cuBLAS through PyTorch)
#      in the same run, then the side-by-side table;
#   3. rayo-conform --op matmul on the cuda plugin (fresh seed), then
#      rayo-conform --quick --op matmul under compute-sanitizer memcheck.
#
#   bench/cuda-half-matmul.sh BUILD_DIR
#
# OUT (default ./mma16-out) receives the logs.  Optional: SHAPES and
# STRICT_SHAPES (cuda-bench --mma16-shapes, --mma16-strict-shapes), SKIP
# (words: test bench conform memcheck).
# Exit status: 0 when every check passed, 1 otherwise.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$PWD/mma16-out}
build=$(cd "${1:?usage: cuda-half-matmul.sh BUILD_DIR}" && pwd)
skip=" ${SKIP:-} "
mkdir -p "$out"
status=0
plugin=$build/plugins/cuda/.libs/rayo-cuda.so
cache=$(mktemp -d)
LD_LIBRARY_PATH=$build/core/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
XDG_CACHE_HOME=$cache XDG_CONFIG_HOME=$cache/config RAYO_PLUGIN_PATH=$build/plugins/cuda/.libs
RAYO_CUDA_PLUGIN=$plugin
export LD_LIBRARY_PATH XDG_CACHE_HOME XDG_CONFIG_HOME RAYO_PLUGIN_PATH RAYO_CUDA_PLUGIN
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU
conform=$build/tools/.libs/rayo-conform
wants() { case $skip in *" $1 "*) return 1 ;; esac; return 0; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
if wants test; then
    echo "== test-cuda"
    timeout 200 "$build/tests/.libs/test-cuda" >"$out/test-cuda.log" 2>&1 || { status=1; grep FAIL "$out/test-cuda.log" | head -20; }
    tail -2 "$out/test-cuda.log"
fi
if wants bench; then
    echo "== cuda-bench --half, then cuBLAS"
    timeout 150 "$build/bench/.libs/cuda-bench" --half ${SHAPES:+--mma16-shapes "$SHAPES"} \
        ${STRICT_SHAPES:+--mma16-strict-shapes "$STRICT_SHAPES"} \
        >"$out/bench.log" 2>&1 || { status=1; tail -5 "$out/bench.log"; }
    PYTHONUNBUFFERED=1 timeout 100 python3 "$src/bench/torch-matmul.py" measure-half >"$out/torch.log" 2>&1 ||
        { status=1; tail -5 "$out/torch.log"; }
    grep -v "^csv," "$out/bench.log"
    python3 "$src/bench/torch-matmul.py" summary-half "$out/bench.log" "$out/torch.log" | tee "$out/summary.txt"
fi
if wants conform; then
    echo "== rayo-conform --op matmul"
    timeout 200 "$conform" --op matmul "$plugin" >"$out/conform.log" 2>&1 ||
        { status=1; grep -B2 -A6 FAIL "$out/conform.log" | head -40; }
    tail -2 "$out/conform.log"
fi
if wants memcheck; then
    echo "== rayo-conform --quick --op matmul under compute-sanitizer memcheck"
    sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    timeout 300 "$sanitizer" --tool memcheck --error-exitcode 3 --print-limit 20 \
        "$conform" --quick --op matmul "$plugin" >"$out/memcheck.log" 2>&1 ||
        { status=1; grep -A12 "=====" "$out/memcheck.log" | head -40; }
    grep "ERROR SUMMARY" "$out/memcheck.log"
    tail -2 "$out/memcheck.log"
fi
rm -rf "$cache"
exit $status
