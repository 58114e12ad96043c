# SPDX-License-Identifier: MIT
# test-wasm-browser.sh - sourced by the page tests (test-wasm-page.sh,
# test-wasm-webgpu.sh): finds the `make wasm` build, node, Chromium
# (CHROMIUM, default /usr/bin/chromium) and playwright-core
# (PLAYWRIGHT_CORE_DIR: a folder with node_modules/playwright-core; default
# wasm-build/tools, where wasm-build-and-test.sh installs it), and exits
# with SKIP (77) when one is missing.  Sets builddir, srcdir, out, NODE_FLAGS.
builddir=${abs_top_builddir:-$(pwd)}
srcdir=${srcdir:-$(dirname "$0")/..}
out=$builddir/wasm-build
chromium=${CHROMIUM:-/usr/bin/chromium}
PLAYWRIGHT_CORE_DIR=${PLAYWRIGHT_CORE_DIR:-$out/tools}
CHROMIUM=$chromium
export PLAYWRIGHT_CORE_DIR CHROMIUM
# node's flags: without V8's background compiler, as the build runs node
# (Node 20 can hang at exit without it: wasm/wasm.mk, NODE_FLAGS)
NODE_FLAGS=--no-concurrent-recompilation

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
