# SPDX-License-Identifier: MIT
# tests of the WebAssembly build (plugins/wasm, wasm/, examples/web).
#
# test-wasm-ini: the wasm build's INI parser (core/ini-min.c) against inih,
# natively: runs everywhere.  The others need `make wasm` (Emscripten) and
# node, and the page tests Chromium and playwright-core (test-wasm-webgpu:
# the webgpu plugin on Chromium's software adapter; test-wasm-llama: the
# Llama decoder page against the native rayo-llama, which it also needs);
# each prints SKIP and
# exits 77 when what it needs is absent.  tests/wasm-build-and-test.sh
# installs all of it, builds the wasm variant and runs them.
check_PROGRAMS += tests/test-wasm-ini
TESTS += tests/test-wasm-ini
tests_test_wasm_ini_SOURCES = tests/test-wasm-ini.c
tests_test_wasm_ini_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
tests_test_wasm_ini_LDADD = $(INIH_LIBS)

dist_noinst_SCRIPTS += tests/test-wasm-conform.sh tests/test-wasm-api.sh \
	tests/test-wasm-page.sh tests/test-wasm-webgpu.sh tests/test-wasm-llama.sh \
	tests/wasm-build-and-test.sh
TESTS += tests/test-wasm-conform.sh tests/test-wasm-api.sh tests/test-wasm-page.sh \
	tests/test-wasm-webgpu.sh tests/test-wasm-llama.sh
EXTRA_DIST += tests/test-wasm-api.mjs tests/test-wasm-page.mjs tests/test-wasm-webgpu.mjs \
	tests/test-wasm-llama.mjs \
	tests/test-wasm-webgpu.html tests/test-wasm-serve.mjs tests/test-wasm-browser.sh
