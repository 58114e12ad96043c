#!/bin/sh
# SPDX-License-Identifier: MIT
# wasm-build-and-test.sh - builds rayo's WebAssembly variant and runs its
# tests, from a clean machine: what CI (.ci/run) calls.
#
#   tests/wasm-build-and-test.sh [BUILD_DIR]
#
# 1. installs what is missing: autotools and inih (for the native configure
#    that `make wasm` runs from), emscripten, node, chromium (Debian
#    packages), playwright-core (npm, into BUILD_DIR/wasm-build/tools);
# 2. configures BUILD_DIR (default: build-wasm in the source tree) if it is
#    not configured yet, and runs `make wasm` there;
# 3. runs the wasm tests: the INI parser against inih (native), rayo-conform
#    for scalar and wasm under node (all sizes unless RAYO_CONFORM_ARGS says
#    --quick), the JS API under node, the page in headless Chromium,
#    which saves BUILD_DIR/wasm-build/page.png, and the webgpu plugin's
#    conformance in Chromium on its software WebGPU adapter (SwiftShader),
#    and the Llama decoder page against the native rayo-llama (built here
#    with the scalar plugin: the test compares tokens at strict precision).
# Here a skipped test is a failure: this script installed what they need.
# Exit status: 0 when everything passed.
set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-$srcdir/build-wasm}
mkdir -p "$builddir"
builddir=$(cd "$builddir" && pwd)
out=$builddir/wasm-build

say() { printf '\n=== %s\n' "$*"; }

# ---- 1. tools ----
. "$srcdir/apt-install.sh"
missing=""
need() { # need COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}
need autoreconf autoconf
need automake automake
need libtoolize libtool
need pkg-config pkg-config
need emcc emscripten
need node nodejs
need npm npm
need chromium chromium
[ -f /usr/include/ini.h ] || missing="$missing libinih-dev"
[ -d /usr/share/aclocal ] && ls /usr/share/aclocal/ax_pthread.m4 >/dev/null 2>&1 ||
    missing="$missing autoconf-archive"
if [ -n "$missing" ]; then
    # shellcheck disable=SC2086 # one word per package
    apt_install tests/wasm-build-and-test.sh $missing
fi
# playwright-core 1.62 and later need Node 20; Debian 12's nodejs is 18.
node_major=$(node --version | sed 's/^v\([0-9]*\).*/\1/')
if [ "${node_major:-0}" -ge 20 ]; then playwright_default=1; else playwright_default=1.61; fi
playwright=${PLAYWRIGHT_CORE_VERSION:-$playwright_default}
if [ ! -f "$out/tools/node_modules/playwright-core/package.json" ]; then
    say "installing playwright-core@$playwright (npm; node $(node --version)) into $out/tools"
    mkdir -p "$out/tools"
    npm install --prefix "$out/tools" --no-audit --no-fund --loglevel=error \
        "playwright-core@$playwright"
fi

# ---- 2. build ----
if [ ! -f "$builddir/Makefile" ]; then
    if [ ! -x "$srcdir/configure" ]; then
        say "autoreconf -fi"
        (cd "$srcdir" && autoreconf -fi)
    fi
    say "configure in $builddir"
    (cd "$builddir" && "$srcdir/configure" --enable-werror)
fi
say "make wasm"
make -C "$builddir" -j2 wasm

# ---- 3. tests ----
failed=""
# Each test gets at most RAYO_WASM_TEST_LIMIT seconds (default 900; the
# slowest takes a few minutes here): a hung browser fails its test.
limit=${RAYO_WASM_TEST_LIMIT:-900}
run_test() { # run_test NAME COMMAND...
    name=$1
    shift
    say "$name"
    status=0
    t0=$(date +%s)
    (cd "$builddir" && srcdir=$srcdir abs_top_builddir=$builddir \
        timeout -k 30 "$limit" "$@") || status=$?
    took="$(($(date +%s) - t0)) s"
    case $status in
    0) result=PASS; echo "PASS: $name ($took)" ;;
    77) result=FAIL; echo "FAIL: $name was skipped"; failed="$failed $name" ;;
    124|137) result=FAIL; echo "FAIL: $name still ran after $limit s, stopped"; failed="$failed $name" ;;
    *) result=FAIL; echo "FAIL: $name (exit $status, $took)"; failed="$failed $name" ;;
    esac
    # The same result file automake writes, so .ci/run can count every suite.
    echo ":test-result: $result" >"$out/$name.trs"
}
make -C "$builddir" tests/test-wasm-ini >/dev/null
make -C "$builddir" -j2 examples/llama/rayo-llama examples/llama/gguf-make plugins/scalar/rayo-scalar.la >/dev/null
run_test test-wasm-ini "$builddir/tests/test-wasm-ini"
run_test test-wasm-conform sh "$srcdir/tests/test-wasm-conform.sh"
run_test test-wasm-api sh "$srcdir/tests/test-wasm-api.sh"
run_test test-wasm-page env PLAYWRIGHT_CORE_DIR="$out/tools" sh "$srcdir/tests/test-wasm-page.sh"
run_test test-wasm-webgpu env PLAYWRIGHT_CORE_DIR="$out/tools" sh "$srcdir/tests/test-wasm-webgpu.sh"
run_test test-wasm-llama env PLAYWRIGHT_CORE_DIR="$out/tools" sh "$srcdir/tests/test-wasm-llama.sh"

if [ -n "$failed" ]; then
    say "wasm: FAILED:$failed"
    exit 1
fi
say "wasm: all passed (screenshot: $out/page.png)"
