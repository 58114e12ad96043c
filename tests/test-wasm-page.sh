#!/bin/sh
# test-wasm-page.sh - the example page (examples/web) in headless Chromium,
# driven by playwright-core: backends found and why, wasm (SIMD128) chosen,
# the benchmark table filled; then the same page on an engine that refuses
# SIMD128 code: scalar chosen, the reason shown.  Saves a screenshot to
# wasm-build/page.png.  See test-wasm-page.mjs.
#
# Needs the `make wasm` build, node, Chromium (CHROMIUM, default
# /usr/bin/chromium) and playwright-core (PLAYWRIGHT_CORE_DIR: a folder with
# node_modules/playwright-core; default wasm-build/tools, where
# wasm-build-and-test.sh installs it).  SKIP (77) when one is missing.
builddir=${abs_top_builddir:-$(pwd)}
srcdir=${srcdir:-$(dirname "$0")/..}
out=$builddir/wasm-build
chromium=${CHROMIUM:-/usr/bin/chromium}
PLAYWRIGHT_CORE_DIR=${PLAYWRIGHT_CORE_DIR:-$out/tools}
export PLAYWRIGHT_CORE_DIR CHROMIUM

if [ ! -f "$out/web/index.html" ] || [ ! -f "$out/web/rayo/rayo-core.wasm" ]; then
    echo "SKIP: $out/web not built (needs emscripten: make wasm)"
    exit 77
fi
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node not found"
    exit 77
fi
if [ ! -x "$chromium" ]; then
    echo "SKIP: $chromium not found (Debian: apt-get install chromium)"
    exit 77
fi
if [ ! -f "$PLAYWRIGHT_CORE_DIR/node_modules/playwright-core/package.json" ]; then
    echo "SKIP: playwright-core not found in $PLAYWRIGHT_CORE_DIR (npm install --prefix DIR playwright-core)"
    exit 77
fi
CHROMIUM=$chromium exec node "$srcdir/tests/test-wasm-page.mjs" "$out/web" "$out/page.png"
