#!/bin/sh
# SPDX-License-Identifier: MIT
# test-wasm-webgpu.sh - the webgpu plugin in headless Chromium on a software
# adapter (SwiftShader): rayo-conform in the page must pass every op the
# plugin registers.  RAYO_CONFORM_ARGS: rayo-conform's options (default
# --quick).  See test-wasm-webgpu.mjs; what it needs and when it skips
# (77): test-wasm-browser.sh.
. "${srcdir:-$(dirname "$0")/..}/tests/test-wasm-browser.sh"
if [ ! -f "$out/web/conform/rayo-conform.mjs" ]; then
    echo "SKIP: $out/web/conform not built (make wasm)"
    exit 77
fi
exec node $NODE_FLAGS "$srcdir/tests/test-wasm-webgpu.mjs" "$out/web"
