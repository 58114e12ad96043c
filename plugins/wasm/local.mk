# SPDX-License-Identifier: MIT
# plugins/wasm: the WebAssembly SIMD128 backend, and `make wasm`, which
# builds the WebAssembly variant of rayo from this same source tree with
# Emscripten (emcc on PATH, or EMCC=...): the core as a main module, the
# scalar and wasm backends as side modules, rayo-info and rayo-conform for
# node, the JS API (wasm/rayo.mjs) and the example page (examples/web).
# libtool cannot build side modules, so the rules are in wasm/wasm.mk (GNU
# make); the source lists below and in the other local.mk files are the
# only lists, shared by both variants.
WASM_PLUGIN_FILES = \
	plugins/wasm/plugin.h plugins/wasm/wasm-math.h plugins/wasm/plugin.c \
	plugins/wasm/elementwise.c plugins/wasm/reduce.c plugins/wasm/rows.c \
	plugins/wasm/matmul.c plugins/wasm/gemv.c plugins/wasm/transpose.c \
	plugins/wasm/quant.c plugins/wasm/infer.c \
	$(CPU_BASE_FILES) $(CPU_GEMM_FILES) $(SIMD128_BASE_FILES)
WASM_GLUE_FILES = wasm/rayo-js.h wasm/rayo-js.c
WASM_WEB_FILES = examples/web/index.html examples/web/app.mjs examples/web/bench.mjs \
	examples/web/bench-webgpu.mjs examples/web/bench-threads.mjs examples/web/style.css
WASM_LLAMA_WEB_FILES = examples/web/llama/index.html examples/web/llama/llama.mjs \
	examples/web/llama/llama-worker.mjs

EMCC = emcc
NODE = node
WASM_OUT = wasm-build

# Builds the WebAssembly variant into $(WASM_OUT)/ (see wasm/wasm.mk);
# wasm-bench adds rayo-bench for node.
WASM_MAKE_ARGS = -f $(abs_top_srcdir)/wasm/wasm.mk \
	  srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' \
	  out='$(abs_top_builddir)/$(WASM_OUT)' EMCC='$(EMCC)' NODE='$(NODE)' \
	  WARN_CFLAGS='$(WARN_CFLAGS)' RAYO_ABI_MAJOR='$(RAYO_ABI_MAJOR)' \
	  CORE_SOURCES='$(core_librayo_la_SOURCES)' \
	  INFO_SOURCES='$(tools_rayo_info_SOURCES)' \
	  CONFORM_SOURCES='$(tools_conform_libconform_la_SOURCES) $(tools_rayo_conform_SOURCES)' \
	  SCALAR_SOURCES='$(plugins_scalar_rayo_scalar_la_SOURCES)' \
	  WASM_SOURCES='$(WASM_PLUGIN_FILES)' \
	  WEBGPU_SOURCES='$(WEBGPU_PLUGIN_FILES)' \
	  BENCH_SOURCES='$(tools_rayo_bench_SOURCES)' \
	  LLAMA_SOURCES='$(examples_llama_rayo_llama_SOURCES)' \
	  JS_GLUE_SOURCES='$(WASM_GLUE_FILES)' \
	  WEB_FILES='$(WASM_WEB_FILES)' LLAMA_WEB_FILES='$(WASM_LLAMA_WEB_FILES)'
WASM_CHECK_EMCC = if ! command -v $(EMCC) >/dev/null 2>&1; then \
	  echo "make wasm: $(EMCC) not found: install emscripten (Debian: apt-get install emscripten) or pass EMCC=/path/to/emcc" >&2; \
	  exit 1; fi

# The threaded core and plugins first (wasm/wasm.mk: target threads).
wasm:
	@$(WASM_CHECK_EMCC)
	$(MAKE) $(WASM_MAKE_ARGS) out='$(abs_top_builddir)/$(WASM_OUT)/threads' THREADS=1 threads
	$(MAKE) $(WASM_MAKE_ARGS) all

wasm-bench:
	@$(WASM_CHECK_EMCC)
	$(MAKE) $(WASM_MAKE_ARGS) bench

clean-wasm:
	rm -rf $(WASM_OUT)

clean-local: clean-wasm
.PHONY: wasm wasm-bench clean-wasm

EXTRA_DIST += $(WASM_PLUGIN_FILES) plugins/wasm/fit-coefficients.py \
	$(WASM_GLUE_FILES) wasm/wasm.mk wasm/node-env.js wasm/side-imports.mjs \
	wasm/rayo.mjs wasm/threads-pre.js wasm/README.md $(WASM_WEB_FILES) $(WASM_LLAMA_WEB_FILES) core/ini-min.c core/ini-min.h
