#!/bin/sh
# SPDX-License-Identifier: MIT
# test-wasm-conform.sh - the conformance suite of the WebAssembly build under
# node: rayo-conform (built by `make wasm`, in wasm-build/) checks the scalar
# and wasm (SIMD128) side modules against the float64 reference, all sizes.
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

# Both plugins, by path: a plugin the core refuses is a failure.
node "$out/rayo-conform.js" $RAYO_CONFORM_ARGS \
    "$out/plugins/rayo-scalar.so" "$out/plugins/rayo-wasm.so" > "$out/conform.log" 2>&1
status=$?
strip_progress < "$out/conform.log"
if [ $status -ne 0 ]; then
    echo "FAIL: rayo-conform under node exited with $status"
    exit 1
fi
# Both backends must have been checked (a silent skip is no pass).
for backend in scalar wasm; do
    if ! grep -q "^  $backend " "$out/conform.log"; then
        echo "FAIL: backend $backend was not checked"
        exit 1
    fi
done
exit 0
