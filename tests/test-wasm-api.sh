#!/bin/sh
# SPDX-License-Identifier: MIT
# test-wasm-api.sh - runs test-wasm-api.mjs (the JS API under node) on the
# `make wasm` build.  SKIP (77) when it is not built or node is missing.
builddir=${abs_top_builddir:-$(pwd)}
srcdir=${srcdir:-$(dirname "$0")/..}
out=$builddir/wasm-build
if [ ! -f "$out/js/rayo-core.mjs" ]; then
    echo "SKIP: $out/js/rayo-core.mjs not built (needs emscripten: make wasm)"
    exit 77
fi
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node not found"
    exit 77
fi
# --no-concurrent-recompilation: Node 20 can hang at exit without it (wasm/wasm.mk, NODE_FLAGS)
exec node --no-concurrent-recompilation "$srcdir/tests/test-wasm-api.mjs" "$out"
