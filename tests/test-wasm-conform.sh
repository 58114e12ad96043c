#!/bin/sh
# SPDX-License-Identifier: MIT
# test-wasm-conform.sh - the conformance suite of the WebAssembly build under
# node: rayo-conform (built by `make wasm`, in wasm-build/) checks the wasm
# (SIMD128) side module against the float64 reference, all sizes, then the
# scalar side module --quick: every op and class of case, without the
# largest sizes, which the native `make check` runs on the same C code (at
# all sizes the scalar module took most of this test's time).
# RAYO_CONFORM_ARGS adds options (--quick), RAYO_CONFORM_SEED replays a run.
# SKIP (77) when the wasm variant is not built or node is missing.
builddir=${abs_top_builddir:-$(pwd)}
out=$builddir/wasm-build
if [ ! -f "$out/rayo-conform.js" ]; then
    echo "SKIP: $out/rayo-conform.js not built (needs emscripten: make wasm)"
    exit 77
fi
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node not found"
    exit 77
fi
# Emscripten's stderr is always a terminal (isatty), so rayo-conform draws
# its progress line ("checking OP on B: case i of n", blanks, carriage
# returns); it is cut out of the log shown here.
strip_progress() { perl -pe 's/  checking [^\r\n]*//g; s/\r +(?=\r|$)//g; s/\r//g'; }

# conform PLUGIN [OPTION]...: one side module, by path (a plugin the core
# refuses is a failure), checked and its log shown.
conform() {
    plugin=$1
    shift
    log=$out/conform-$plugin.log
    # --no-concurrent-recompilation: as wasm/wasm.mk runs node (NODE_FLAGS)
    # shellcheck disable=SC2086 # RAYO_CONFORM_ARGS: options, one word each
    node --no-concurrent-recompilation "$out/rayo-conform.js" "$@" $RAYO_CONFORM_ARGS "$out/plugins/rayo-$plugin.so" >"$log" 2>&1
    status=$?
    strip_progress <"$log"
    if [ $status -ne 0 ]; then
        echo "FAIL: rayo-conform under node exited with $status ($plugin)"
        return 1
    fi
    # The backend must have been checked (a silent skip is no pass).
    if ! grep -q "^  $plugin " "$log"; then
        echo "FAIL: backend $plugin was not checked"
        return 1
    fi
}
failed=0
conform wasm || failed=1
conform scalar --quick || failed=1
exit $failed
