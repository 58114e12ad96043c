#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda-matmul.sh - the cuda backend on a GPU machine, in one run:
#   1. build (configure + make in OUT/build), or use the build tree given;
#   2. test-cuda (the plugin's own checks);
#   3. cuda-bench (rayo) and torch-matmul.py (cuBLAS through PyTorch, device
#      copy bandwidth, PyTorch's host round trip) in the same run;
#   4. rayo-conform for the cuda plugin, then again under compute-sanitizer
#      memcheck (must be clean);
#   5. the side-by-side table of step 3.
#
#   bench/cuda-matmul.sh [BUILD_DIR]
#
# OUT (default ./gpu-out) receives the logs; the table is printed last.
# Optional: BENCH_ARGS (cuda-bench options), CONFORM_ARGS and
# CONFORM_MEMCHECK_ARGS (rayo-conform options, e.g. --quick),
# MEMCHECK_TIMEOUT (seconds, default 300).
# Exit status: 0 when every check passed (the figures are reported, not
# judged), 1 otherwise.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
build=${1:-}
status=0

step() { echo "== $*"; }

if [ -z "$build" ]; then
    build=$out/build
    step "build in $build"
    mkdir -p "$build"
    (cd "$build" && "$src/configure" --enable-werror && make -j"$(nproc)") >"$out/build.log" 2>&1 ||
        { tail -40 "$out/build.log"; exit 1; }
fi
build=$(cd "$build" && pwd)
plugin=$build/plugins/cuda/.libs/rayo-cuda.so
[ -f "$plugin" ] || { echo "no $plugin: build failed?"; exit 1; }

# Programs linked with librayo: run the real binaries in .libs with the
# build tree's library (libtool wrappers hold this machine's paths).
cache=$(mktemp -d)
LD_LIBRARY_PATH=$build/core/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
XDG_CACHE_HOME=$cache XDG_CONFIG_HOME=$cache/config RAYO_PLUGIN_PATH=$build/plugins/cuda/.libs
RAYO_CUDA_PLUGIN=$plugin
export LD_LIBRARY_PATH XDG_CACHE_HOME XDG_CONFIG_HOME RAYO_PLUGIN_PATH RAYO_CUDA_PLUGIN
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU
conform=$build/tools/.libs/rayo-conform
bench=$build/bench/.libs/cuda-bench
t=timeout

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee "$out/device.log"

step "test-cuda"
$t 150 "$build/tests/test-cuda" >"$out/test-cuda.log" 2>&1
rc=$?
tail -3 "$out/test-cuda.log"
[ $rc -eq 0 ] || { echo "test-cuda: exit $rc"; grep FAIL "$out/test-cuda.log" | head -20; status=1; }

step "benchmarks: rayo cuda-bench, then cuBLAS through torch"
$t 200 "$bench" ${BENCH_ARGS-} >"$out/bench.log" 2>&1 || { echo "cuda-bench failed"; tail -20 "$out/bench.log"; status=1; }
grep -v "^csv," "$out/bench.log"
PYTHONUNBUFFERED=1 $t 150 python3 "$src/bench/torch-matmul.py" measure >"$out/torch.log" 2>&1 ||
    { echo "torch reference failed"; tail -20 "$out/torch.log"; status=1; }
python3 "$src/bench/torch-matmul.py" summary "$out/bench.log" "$out/torch.log" >"$out/summary.txt"

step "rayo-conform (no sanitizer)"
$t 150 "$conform" ${CONFORM_ARGS-} "$plugin" >"$out/conform.log" 2>&1
rc=$?
tail -4 "$out/conform.log"
[ $rc -eq 0 ] || { echo "rayo-conform: exit $rc"; grep -B2 -A6 FAIL "$out/conform.log" | head -60; status=1; }

step "rayo-conform under compute-sanitizer memcheck"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
$t ${MEMCHECK_TIMEOUT:-300} "$sanitizer" --tool memcheck --error-exitcode 3 --print-limit 20 \
    "$conform" ${CONFORM_MEMCHECK_ARGS-} "$plugin" >"$out/conform-memcheck.log" 2>&1
rc=$?
grep -E "ERROR SUMMARY" "$out/conform-memcheck.log" | tail -2
tail -3 "$out/conform-memcheck.log"
[ $rc -eq 0 ] || { echo "rayo-conform under memcheck: exit $rc"; grep -A12 "=====" "$out/conform-memcheck.log" | head -40; status=1; }

step "side by side (same run)"
cat "$out/summary.txt"
rm -rf "$cache"
exit $status
