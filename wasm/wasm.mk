# SPDX-License-Identifier: MIT
# wasm.mk - GNU make rules of the WebAssembly variant of rayo (Emscripten).
#
# Not an automake fragment: `make wasm` (plugins/wasm/local.mk) runs this
# file with the source lists of the automake build, so one tree builds both
# variants from the same sources.  libtool cannot build wasm side modules;
# these rules call emcc directly.  Everything lands in $(out):
#
#   plugins/rayo-scalar.so  plugins/rayo-wasm.so   side modules (wasm SIMD128 for the second)
#   plugins/rayo-webgpu.so                           the WebGPU side module (plugins/webgpu)
#   rayo-info.js  rayo-conform.js (+ .wasm)          the tools, for node (real file system)
#   rayo-info  rayo-conform                          shell wrappers: node + RAYO_PLUGIN_PATH
#   rayo-bench.js, rayo-bench                        `make wasm-bench` (target bench) only
#   js/    rayo.mjs (the JS API), rayo-core.mjs + rayo-core.wasm (main module), plugins/
#   web/   the example page (examples/web) with js/ as web/rayo/
#   web/conform/  rayo-conform built for the page (the webgpu plugin needs a
#          browser), with tests/test-wasm-webgpu.html as its index.html
#   js/threads/, web/rayo/threads/  the threaded core (rayo-core.mjs, .wasm,
#          .worker.js) and plugins, built with THREADS=1 into threads/ (target
#          threads): rayo.mjs loads them in cross-origin isolated pages
#   web/llama/    the Llama decoder page: examples/llama's rayo-llama built as
#          a main module (rayo-llama.mjs + .wasm) with the JS API's glue;
#          web/llama/threads/ the same with THREADS=1 (and its plugins/)
#
# Variables given by `make wasm`: srcdir top_builddir out EMCC NODE
# WARN_CFLAGS CORE_SOURCES SCALAR_SOURCES WASM_SOURCES WEBGPU_SOURCES INFO_SOURCES
# CONFORM_SOURCES BENCH_SOURCES LLAMA_SOURCES JS_GLUE_SOURCES WEB_FILES LLAMA_WEB_FILES
# RAYO_ABI_MAJOR

EMCC ?= emcc
NODE ?= node
# Every node run here and in the wrappers goes without V8's background
# optimizing compiler: Node 20 can deadlock at exit when a background compile
# waits for a garbage collection the exiting main thread never runs (seen
# as a finished program that never exits, about one run in six on 2 busy
# CPUs).  The flag costs nothing measurable to these programs.
NODE_FLAGS := --no-concurrent-recompilation
# Debian's emcc needs its node modules (acorn) at -O1 and above.
export NODE_PATH := $(if $(NODE_PATH),$(NODE_PATH):,)/usr/share/nodejs

OBJ := $(out)/obj
# THREADS=1: the variant with wasm threads (-pthread: shared memory, a pool
# of Web Workers started with the module), for cross-origin isolated pages.
THREAD_FLAGS := $(if $(THREADS),-pthread)
CFLAGS_ALL := -std=c11 $(WARN_CFLAGS) $(THREAD_FLAGS) -fPIC -MMD -MP -I$(srcdir)/core -I$(top_builddir)
# The CPU plugins compile the shared glue of plugins/cpu-base in.
PLUGIN_INCLUDES := -I$(srcdir)/plugins/cpu-base
# The core has no inih (ini-min.c instead), no config files, and no
# secure_getenv in Emscripten's libc; its plugin directory is /plugins (in
# the browser, the JS API writes the side modules there).
CORE_CFLAGS := $(CFLAGS_ALL) -O2 -fvisibility=hidden -DRAYO_BUILDING_CORE -DRAYO_INI_MIN \
	-Dsecure_getenv=getenv -DRAYO_PLUGINDIR='"/plugins"' -DRAYO_SYSCONFDIR='"/etc/rayo"' \
	-DRAYO_BUILD_DIR='"$(top_builddir)"' -DRAYO_ABI_MAJOR_STR='"$(RAYO_ABI_MAJOR)"'
TOOL_CFLAGS := $(CFLAGS_ALL) -O2 -I$(srcdir)/tools/conform
# Plugins: the sources of the native build (with plugins/cpu-base), as they are.  Only the wasm
# plugin is compiled with SIMD128; the core and scalar run on any engine.
PLUGIN_CFLAGS := $(CFLAGS_ALL) $(PLUGIN_INCLUDES) -O3 -fvisibility=hidden -DHAVE_CONFIG_H
SIMD_CFLAGS := -msimd128

# Main modules: dynamic linking (side modules import libc from here), a
# growing heap (the conformance suite allocates 2^20-element vectors), and
# the webgpu plugin's JS side (its shaders and op list generated first).
WEBGPU_PRE_JS := $(OBJ)/webgpu/webgpu-wgsl.js $(srcdir)/plugins/webgpu/webgpu-host.js
MAIN_LDFLAGS := -O2 -sMAIN_MODULE=2 -sALLOW_MEMORY_GROWTH=1 $(WEBGPU_PRE_JS:%=--pre-js %) \
	$(if $(THREADS),-pthread -sPTHREAD_POOL_SIZE=navigator.hardwareConcurrency --pre-js $(srcdir)/wasm/threads-pre.js)
# Tools under node: the real file system, synchronous compilation (node's
# fetch cannot read a file path), RAYO_* variables passed in (node-env.js).
NODE_LDFLAGS := $(MAIN_LDFLAGS) -sEXPORTED_FUNCTIONS=@$(OBJ)/exports-tool.json -sENVIRONMENT=node -sNODERAWFS=1 -sWASM_ASYNC_COMPILATION=0 \
	-sEXIT_RUNTIME=1 --pre-js $(srcdir)/wasm/node-env.js
# The JS API's module: an ES module factory.  Built for web and worker only:
# Emscripten 3.1.6's node support uses require and __dirname, which an ES
# module does not have; under node, rayo.mjs hands it the .wasm bytes and it
# runs as it does in a worker (in-memory file system, no fetch).
# loadDynamicLibrary lets rayo.mjs compile the side modules asynchronously;
# ENV lets it set environment variables (options.env: RAYO_THREADS...).
ESM_COMMON := $(MAIN_LDFLAGS) -sMODULARIZE=1 -sEXPORT_ES6=1 -sENVIRONMENT=web,worker -sFORCE_FILESYSTEM=1 \
	-sEXPORTED_RUNTIME_METHODS=FS,ENV,UTF8ToString,stringToUTF8,lengthBytesUTF8,loadDynamicLibrary
ESM_LDFLAGS := $(ESM_COMMON) -sEXPORTED_FUNCTIONS=@$(OBJ)/exports.json -sEXPORT_NAME=createRayoCore
# rayo-conform for the page: its main is called by the page (through JSPI,
# so that the webgpu plugin can wait for the GPU), not at start.
CONFORM_WEB_LDFLAGS := $(ESM_COMMON) -sEXPORTED_FUNCTIONS=@$(OBJ)/exports-tool.json \
	-sEXPORT_NAME=createRayoConform -sINVOKE_RUN=0 -sEXIT_RUNTIME=0
# rayo-llama for the page: the JS API's module (loadRayo takes it in place of
# rayo-core.mjs) with main, which the page calls through JSPI as above; a
# 4 GiB ceiling, as examples/llama/wasm-build.sh (the GGUF file is copied in).
LLAMA_WEB_LDFLAGS := $(ESM_COMMON) -sEXPORTED_FUNCTIONS=@$(OBJ)/exports-llama.json \
	-sEXPORT_NAME=createRayoLlama -sINVOKE_RUN=0 -sEXIT_RUNTIME=0 -sMAXIMUM_MEMORY=4GB

sources_c = $(filter %.c,$(1))
objects = $(patsubst %.c,$(OBJ)/$(2)/%.o,$(call sources_c,$(1)))

CORE_OBJS := $(call objects,$(CORE_SOURCES) core/ini-min.c,core)
INFO_OBJS := $(call objects,$(INFO_SOURCES),tool)
CONFORM_OBJS := $(call objects,$(CONFORM_SOURCES),tool)
BENCH_OBJS := $(call objects,$(BENCH_SOURCES),tool)
LLAMA_OBJS := $(call objects,$(LLAMA_SOURCES),tool)
GLUE_OBJS := $(call objects,$(JS_GLUE_SOURCES),core)
SCALAR_OBJS := $(call objects,$(SCALAR_SOURCES),plugin)
WASM_OBJS := $(call objects,$(WASM_SOURCES),simd)
WEBGPU_OBJS := $(call objects,$(WEBGPU_SOURCES),plugin)
PLUGINS := $(out)/plugins/rayo-scalar.so $(out)/plugins/rayo-wasm.so $(out)/plugins/rayo-webgpu.so
JS_FILES := $(out)/js/rayo.mjs $(out)/js/rayo-core.mjs $(out)/js/rayo-core.wasm $(PLUGINS:$(out)/plugins/%=$(out)/js/plugins/%)

all: $(PLUGINS) $(out)/rayo-info $(out)/rayo-conform $(JS_FILES) \
	$(addprefix $(out)/web/,$(notdir $(WEB_FILES))) \
	$(JS_FILES:$(out)/js/%=$(out)/web/rayo/%) \
	$(out)/web/conform/index.html $(out)/web/conform/rayo-conform.mjs \
	$(out)/web/llama/rayo-llama.mjs $(addprefix $(out)/web/llama/,$(notdir $(LLAMA_WEB_FILES)))
	@echo "wasm: built in $(out)"

# rayo-bench under node (tools/rayo-bench.c as it is, single-threaded: the
# build has no pthreads), to compare with the native build's rayo-bench.
bench: $(out)/rayo-bench
	@echo "wasm: $(out)/rayo-bench built"

# THREADS=1, out=.../threads: the threaded core and plugins, copied beside
# the single-threaded ones of the folder above; the same for the Llama
# page's module (web/llama/threads/: rayo-llama.mjs, .wasm, .worker.js and
# plugins/, which its workers load from beside their script).
THREADS_DESTS := $(dir $(out))js/threads $(dir $(out))web/rayo/threads
LLAMA_THREADS_DEST := $(dir $(out))web/llama/threads
threads: $(THREADS_DESTS:%=%/rayo-core.mjs) $(LLAMA_THREADS_DEST)/rayo-llama.mjs
$(THREADS_DESTS:%=%/rayo-core.mjs): $(out)/js/rayo-core.mjs $(PLUGINS)
	@mkdir -p $(@D)/plugins
	cp $(out)/js/rayo-core.mjs $(out)/js/rayo-core.wasm $(out)/js/rayo-core.worker.js $(@D)/
	cp $(PLUGINS) $(@D)/plugins/
$(LLAMA_THREADS_DEST)/rayo-llama.mjs: $(out)/web/llama/rayo-llama.mjs $(PLUGINS)
	@mkdir -p $(@D)/plugins
	cp $(out)/web/llama/rayo-llama.mjs $(out)/web/llama/rayo-llama.wasm $(out)/web/llama/rayo-llama.worker.js $(@D)/
	cp $(PLUGINS) $(@D)/plugins/

.PHONY: all bench threads clean
.DELETE_ON_ERROR:

$(OBJ)/core/%.o: $(srcdir)/%.c
	@mkdir -p $(@D)
	$(EMCC) $(CORE_CFLAGS) -c $< -o $@
$(OBJ)/tool/%.o: $(srcdir)/%.c
	@mkdir -p $(@D)
	$(EMCC) $(TOOL_CFLAGS) -c $< -o $@
$(OBJ)/plugin/%.o: $(srcdir)/%.c
	@mkdir -p $(@D)
	$(EMCC) $(PLUGIN_CFLAGS) -c $< -o $@
$(OBJ)/simd/%.o: $(srcdir)/%.c
	@mkdir -p $(@D)
	$(EMCC) $(PLUGIN_CFLAGS) $(SIMD_CFLAGS) -c $< -o $@

# Side modules export only rayo_plugin (hidden visibility for the rest).
$(out)/plugins/rayo-scalar.so: $(SCALAR_OBJS)
	@mkdir -p $(@D)
	$(EMCC) -O3 $(THREAD_FLAGS) -sSIDE_MODULE=1 $^ -o $@
$(out)/plugins/rayo-wasm.so: $(WASM_OBJS)
	@mkdir -p $(@D)
	$(EMCC) -O3 $(THREAD_FLAGS) -sSIDE_MODULE=1 $^ -o $@
$(out)/plugins/rayo-webgpu.so: $(WEBGPU_OBJS)
	@mkdir -p $(@D)
	$(EMCC) -O3 $(THREAD_FLAGS) -sSIDE_MODULE=1 $^ -o $@

# The webgpu plugin's shaders and op list, from core/rayo-ops.h (wgsl-ops.h
# through the preprocessor), embedded in a --pre-js of the main modules.
WEBGPU_DIR := $(srcdir)/plugins/webgpu
$(OBJ)/webgpu/ops.rows $(OBJ)/webgpu/webgpu-ops.wgsl: $(OBJ)/webgpu/%: $(WEBGPU_DIR)/wgsl-ops.h $(srcdir)/core/rayo-ops.h
	@mkdir -p $(@D)
	$(EMCC) -E -P -x c -I$(srcdir)/core $(if $(filter %.wgsl,$@),-DRAYO_WGSL) $< -o $@
$(OBJ)/webgpu/webgpu-wgsl.js: $(WEBGPU_DIR)/embed-wgsl.mjs $(OBJ)/webgpu/ops.rows $(OBJ)/webgpu/webgpu-ops.wgsl \
		$(WEBGPU_DIR)/rmath.wgsl $(WEBGPU_DIR)/kernels.wgsl \
		$(WEBGPU_DIR)/rows.wgsl $(WEBGPU_DIR)/infer.wgsl
	$(NODE) $(NODE_FLAGS) $^ > $@

# MAIN_MODULE=2 links only what is used: the libc functions the side
# modules import are read off the side modules themselves (but for the
# webgpu plugin's JS functions, which webgpu-host.js provides).
SIDE_IMPORTS_JS := --js-provides rayo_webgpu_js_
# The tools add main; the JS API's module adds malloc and free.
$(OBJ)/exports.json: $(PLUGINS) $(srcdir)/wasm/side-imports.mjs
	@mkdir -p $(@D)
	$(NODE) $(NODE_FLAGS) $(srcdir)/wasm/side-imports.mjs --add _malloc,_free $(SIDE_IMPORTS_JS) $(PLUGINS) > $@
$(OBJ)/exports-tool.json: $(PLUGINS) $(srcdir)/wasm/side-imports.mjs
	@mkdir -p $(@D)
	$(NODE) $(NODE_FLAGS) $(srcdir)/wasm/side-imports.mjs --add _main $(SIDE_IMPORTS_JS) $(PLUGINS) > $@
$(OBJ)/exports-llama.json: $(PLUGINS) $(srcdir)/wasm/side-imports.mjs
	@mkdir -p $(@D)
	$(NODE) $(NODE_FLAGS) $(srcdir)/wasm/side-imports.mjs --add _malloc,_free,_main $(SIDE_IMPORTS_JS) $(PLUGINS) > $@

$(out)/rayo-info.js: $(CORE_OBJS) $(INFO_OBJS) $(OBJ)/exports-tool.json $(srcdir)/wasm/node-env.js $(WEBGPU_PRE_JS)
	$(EMCC) $(NODE_LDFLAGS) $(CORE_OBJS) $(INFO_OBJS) -o $@
$(out)/rayo-conform.js: $(CORE_OBJS) $(CONFORM_OBJS) $(OBJ)/exports-tool.json $(srcdir)/wasm/node-env.js $(WEBGPU_PRE_JS)
	$(EMCC) $(NODE_LDFLAGS) $(CORE_OBJS) $(CONFORM_OBJS) -o $@

$(out)/rayo-bench.js: $(CORE_OBJS) $(CONFORM_OBJS) $(BENCH_OBJS) $(OBJ)/exports-tool.json $(srcdir)/wasm/node-env.js $(WEBGPU_PRE_JS)
	$(EMCC) $(NODE_LDFLAGS) $(CORE_OBJS) $(filter-out %/rayo-conform.o,$(CONFORM_OBJS)) $(BENCH_OBJS) -o $@

# rayo-info / rayo-conform / rayo-bench: run the node build with this build's plugins
$(out)/rayo-info $(out)/rayo-conform $(out)/rayo-bench: $(out)/%: $(out)/%.js $(srcdir)/wasm/wasm.mk
	printf '%s\n' '#!/bin/sh' '# $* of the WebAssembly build, under node (generated by wasm.mk)' \
	  'dir=$$(dirname "$$0")' \
	  'RAYO_PLUGIN_PATH="$${RAYO_PLUGIN_PATH:-$$dir/plugins}" exec $${NODE:-$(NODE)} $(NODE_FLAGS) "$$dir/$*.js" "$$@"' > $@
	chmod +x $@

$(out)/js/rayo-core.mjs: $(CORE_OBJS) $(GLUE_OBJS) $(OBJ)/exports.json $(WEBGPU_PRE_JS) $(if $(THREADS),$(srcdir)/wasm/threads-pre.js)
	@mkdir -p $(@D)
	$(EMCC) $(ESM_LDFLAGS) $(CORE_OBJS) $(GLUE_OBJS) -o $@
$(out)/web/conform/rayo-conform.mjs: $(CORE_OBJS) $(CONFORM_OBJS) $(OBJ)/exports-tool.json $(WEBGPU_PRE_JS)
	@mkdir -p $(@D)
	$(EMCC) $(CONFORM_WEB_LDFLAGS) $(CORE_OBJS) $(CONFORM_OBJS) -o $@
$(out)/web/llama/rayo-llama.mjs: $(CORE_OBJS) $(GLUE_OBJS) $(LLAMA_OBJS) $(OBJ)/exports-llama.json $(WEBGPU_PRE_JS) $(if $(THREADS),$(srcdir)/wasm/threads-pre.js)
	@mkdir -p $(@D)
	$(EMCC) $(LLAMA_WEB_LDFLAGS) $(CORE_OBJS) $(GLUE_OBJS) $(LLAMA_OBJS) -o $@
$(out)/web/conform/index.html: $(srcdir)/tests/test-wasm-webgpu.html
	@mkdir -p $(@D)
	cp $< $@
$(out)/js/rayo-core.wasm: $(out)/js/rayo-core.mjs
	@test -f $@
$(out)/js/rayo.mjs: $(srcdir)/wasm/rayo.mjs
	@mkdir -p $(@D)
	cp $< $@
$(out)/js/plugins/%.so: $(out)/plugins/%.so
	@mkdir -p $(@D)
	cp $< $@

# the page: examples/web with the JS API under rayo/
$(out)/web/rayo/%: $(out)/js/%
	@mkdir -p $(@D)
	cp $< $@
$(out)/web/%: $(srcdir)/examples/web/%
	@mkdir -p $(@D)
	cp $< $@

clean:
	rm -rf $(out)

-include $(CORE_OBJS:.o=.d) $(INFO_OBJS:.o=.d) $(CONFORM_OBJS:.o=.d) $(BENCH_OBJS:.o=.d) $(GLUE_OBJS:.o=.d) \
	$(LLAMA_OBJS:.o=.d) \
	$(SCALAR_OBJS:.o=.d) $(WASM_OBJS:.o=.d) $(WEBGPU_OBJS:.o=.d)
