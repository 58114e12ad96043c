#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda-small-matmul.sh - small and skinny fp32 matmuls on the GPU
# machine, in one run, from binaries built elsewhere:
#   1. test-cuda;
#   2. rayo-conform of matmul and gemv on the cuda plugin, fresh seed;
#   3. a quick rayo-conform of matmul under compute-sanitizer memcheck;
#   4. cuda-bench --shapes with the plugin of an earlier build (B/before/rayo-cuda.so,
#      when there), with this build's plugin, then cuBLAS (torch) on the same
#      shapes, and the side-by-side table (bench/torch-small-matmul.py).
#
#   bench/cuda-small-matmul.sh B
#
# B holds core/.libs/librayo.so.0 (and libinih.so.1), tools/.libs/rayo-conform,
# plugins/cuda/.libs/rayo-cuda.so, bench/.libs/cuda-bench and tests/test-cuda, as
# doc/benchmarks-cuda.md puts them together.  OUT (default ./small-matmul-out)
# receives the logs.  Exit status 0 when every check passed (the figures are
# reported, not judged).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
b=$(cd "$1" && pwd)
out=${OUT:-$PWD/small-matmul-out}
mkdir -p "$out"
status=0
cache=$(mktemp -d)
LD_LIBRARY_PATH=$b/core/.libs XDG_CACHE_HOME=$cache XDG_CONFIG_HOME=$cache/config
RAYO_PLUGIN_PATH=$b/plugins/cuda/.libs RAYO_CUDA_PLUGIN=$b/plugins/cuda/.libs/rayo-cuda.so
export LD_LIBRARY_PATH XDG_CACHE_HOME XDG_CONFIG_HOME RAYO_PLUGIN_PATH RAYO_CUDA_PLUGIN
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU
plugin=$RAYO_CUDA_PLUGIN
conform=$b/tools/.libs/rayo-conform

check() { # NAME SECONDS COMMAND...
    name=$1 secs=$2
    shift 2
    echo "== $name"
    timeout "$secs" "$@" >"$out/$name.log" 2>&1
    rc=$?
    tail -3 "$out/$name.log"
    [ $rc -eq 0 ] || { echo "$name: exit $rc"; grep -B2 -A8 -E "FAIL|ERROR" "$out/$name.log" | head -40; status=1; }
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
check test-cuda 120 "$b/tests/test-cuda"
check conform 120 "$conform" --op matmul,gemv "$plugin"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
check memcheck 150 "$sanitizer" --tool memcheck --error-exitcode 3 --print-limit 20 \
    "$conform" --quick --op matmul "$plugin"
grep "ERROR SUMMARY" "$out/memcheck.log"
before=
if [ -f "$b/before/rayo-cuda.so" ]; then
    RAYO_PLUGIN_PATH=$b/before
    check before 90 "$b/bench/.libs/cuda-bench" --shapes
    RAYO_PLUGIN_PATH=$b/plugins/cuda/.libs
    before=$out/before.log
fi
check bench 90 "$b/bench/.libs/cuda-bench" --shapes
echo "== cuBLAS (torch) on the same shapes, same run"
PYTHONUNBUFFERED=1 timeout 90 python3 "$src/bench/torch-small-matmul.py" "$out/bench.log" $before \
    >"$out/torch.log" 2>&1 || { echo "torch reference failed"; status=1; }
grep -v "^csv," "$out/bench.log"
grep -v "^csv," "$out/torch.log"
rm -rf "$cache"
exit $status
