#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/sanitize.sh - the sanitizer stages of CI, each in its own build tree:
#   1. ASan + UBSan: `make check` (core tests, scalar, avx2 and avx512, the
#      conformance runs on them); vulkan and cuda are left out (their drivers
#      are not built with sanitizers and would drown the report).
#      Work the sanitizers add nothing to is left to the plain `make check`
#      that CI runs just before, which covers it in full:
#      - rayo-conform runs --quick, as in distcheck: every op, every dtype,
#        edge values, unaligned pointers, guard zones, all four transposes
#        of matmul still run sanitized; --quick leaves out the largest sizes
#        (2^20-element vectors, 256 x 4096 and 1024 x 1024 rows, 500^3,
#        256 x 384 x 1024 and the skinny matmuls with one operand
#        transposed), the same loops over more elements at 2-4x the time;
#      - test-conform.sh leaves avx512 to test-avx512-conform.sh, which
#        checks it --quick as well (RAYO_CONFORM_COVERED);
#      - test-local-plugindir.sh, which runs only the configure script
#        (RAYO_CONFIGURE_CHECKED);
#      - test-conform-engine, the engine against a fake backend with planted
#        mistakes (RAYO_ENGINE_CHECKED; 194 s of CPU under ASan, 96 s plain,
#        on an AMD EPYC, 2 vCPUs): the engine's code still runs sanitized in
#        test-conform.sh (every op, right answers) and test-conform-wrong.sh
#        (planted wrong answers and a write past the end, through the real
#        loader); the fake backend's own writes land in the engine's guard
#        zones, inside its allocations, where ASan sees nothing anyway.
#   2. TSan: tests/test-stress (one context from many threads: ops, buffers,
#      batches, contexts opened and closed alongside) and tests/test-pool
#      (the thread pool's jobs back to back).
# Prints each stage's time.  Run after ./build.sh (packages installed).
set -eu
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi >/dev/null
jobs=$(nproc)
# No --enable-werror: -O1 with sanitizers changes what GCC's flow warnings
# see (false format-truncation reports); the normal build keeps -Werror.
common="--enable-vulkan=no --enable-cuda=no --enable-neon=no --enable-wasm=no"

stage_asan() {
    flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
    mkdir -p build-asan
    [ -f build-asan/Makefile ] || (cd build-asan && ../configure $common CFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined" >/dev/null)
    make -s -C build-asan -j"$jobs" >/dev/null
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        RAYO_CONFORM_ARGS=--quick RAYO_CONFORM_COVERED=avx512 \
        RAYO_CONFIGURE_CHECKED="make check ran the configure script's test" \
        RAYO_ENGINE_CHECKED="make check checked the conformance engine" \
        make -s -C build-asan -j"$jobs" check || { cat build-asan/test-suite.log; return 1; }
}

stage_tsan() {
    flags="-O1 -g -fsanitize=thread"
    mkdir -p build-tsan
    [ -f build-tsan/Makefile ] || (cd build-tsan && ../configure $common CFLAGS="$flags" LDFLAGS="-fsanitize=thread" >/dev/null)
    make -s -C build-tsan -j"$jobs" core/librayo.la plugins/scalar/rayo-scalar.la plugins/avx2/rayo-avx2.la \
        tests/test-stress tests/test-pool >/dev/null
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/test-stress
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/test-pool
}

for stage in asan tsan; do
    t0=$(date +%s)
    echo "==== sanitize: $stage ===="
    "stage_$stage"
    echo "sanitize $stage: $(( $(date +%s) - t0 )) s"
done
