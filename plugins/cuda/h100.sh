#!/bin/sh
# h100.sh - the cuda backend on a GPU machine, in one run:
#   1. build (configure + make in OUT/build), or use the build tree given;
#   2. test-cuda (the plugin's own checks) and rayo-conform for the cuda
#      plugin under compute-sanitizer memcheck (must be clean), then the
#      full rayo-conform without the sanitizer;
#   3. cuda-bench (rayo) and h100-torch.py (cuBLAS through PyTorch, device
#      copy bandwidth, PyTorch's host round trip) in the same run, and the
#      side-by-side table.
#
#   plugins/cuda/h100.sh [BUILD_DIR]
#
# OUT (default ./h100-out) receives the logs; the table is printed last.
# Exit status: 0 when every check passed (the figures are reported, not
# judged), 1 otherwise.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$PWD/h100-out}
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
LD_LIBRARY_PATH=$build/core/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
XDG_CACHE_HOME=$out/cache XDG_CONFIG_HOME=$out/config RAYO_PLUGIN_PATH=$build/plugins/cuda/.libs
export LD_LIBRARY_PATH XDG_CACHE_HOME XDG_CONFIG_HOME RAYO_PLUGIN_PATH
unset RAYO_CONFIG RAYO_BACKEND RAYO_DISABLE RAYO_FORCE_CPU
conform=$build/core/.libs/rayo-conform
bench=$build/plugins/cuda/.libs/cuda-bench
t=timeout

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee "$out/device.log"

step "test-cuda"
$t 300 "$build/tests/test-cuda" >"$out/test-cuda.log" 2>&1
rc=$?
tail -3 "$out/test-cuda.log"
[ $rc -eq 0 ] || { echo "test-cuda: exit $rc"; grep FAIL "$out/test-cuda.log" | head -20; status=1; }

step "rayo-conform under compute-sanitizer memcheck"
$t 420 compute-sanitizer --tool memcheck --error-exitcode 3 --print-limit 20 \
    "$conform" ${CONFORM_MEMCHECK_ARGS-} "$plugin" >"$out/conform-memcheck.log" 2>&1
rc=$?
grep -E "ERROR SUMMARY|^cuda|conform|FAIL" "$out/conform-memcheck.log" | tail -8
[ $rc -eq 0 ] || { echo "rayo-conform under memcheck: exit $rc"; tail -30 "$out/conform-memcheck.log"; status=1; }

step "rayo-conform (full, no sanitizer)"
$t 300 "$conform" "$plugin" >"$out/conform.log" 2>&1
rc=$?
tail -4 "$out/conform.log"
[ $rc -eq 0 ] || { echo "rayo-conform: exit $rc"; grep -B2 -A6 FAIL "$out/conform.log" | head -60; status=1; }

step "benchmarks: rayo cuda-bench, then cuBLAS through torch"
$t 400 "$bench" ${BENCH_ARGS-} >"$out/bench.log" 2>&1 || { echo "cuda-bench failed"; tail -20 "$out/bench.log"; status=1; }
grep -v "^csv," "$out/bench.log"
PYTHONUNBUFFERED=1 $t 300 python3 "$src/plugins/cuda/h100-torch.py" measure >"$out/torch.log" 2>&1 ||
    { echo "torch reference failed"; tail -20 "$out/torch.log"; status=1; }

step "side by side (same run)"
python3 "$src/plugins/cuda/h100-torch.py" summary "$out/bench.log" "$out/torch.log" | tee "$out/summary.txt"
exit $status
