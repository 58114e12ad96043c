#!/bin/sh
# SPDX-License-Identifier: MIT
# test-wasm-page.sh - the example page (examples/web) in headless Chromium,
# driven by playwright-core: backends found and why, wasm (SIMD128) chosen,
# the benchmark table filled; then the same page on an engine that refuses
# SIMD128 code: scalar chosen, the reason shown.  Saves a screenshot to
# wasm-build/page.png.  See test-wasm-page.mjs; what it needs and when it
# skips (77): test-wasm-browser.sh.
. "${srcdir:-$(dirname "$0")/..}/tests/test-wasm-browser.sh"
exec node $NODE_FLAGS "$srcdir/tests/test-wasm-page.mjs" "$out/web" "$out/page.png"
