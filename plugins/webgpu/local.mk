# SPDX-License-Identifier: MIT
# plugins/webgpu: the WebGPU backend of the WebAssembly build (a side
# module, built by `make wasm` through wasm/wasm.mk; nothing here is built
# natively).  The C side checks calls; webgpu-host.js (linked into the main
# modules) runs them on navigator.gpu with the WGSL of kernels.wgsl.
# wgsl-ops.h and embed-wgsl.mjs make the op ids of the shaders and of the JS
# side from core/rayo-ops.h at build time.
WEBGPU_PLUGIN_FILES = plugins/webgpu/webgpu-plugin.c plugins/webgpu/webgpu-js.h
WEBGPU_JS_FILES = plugins/webgpu/webgpu-host.js plugins/webgpu/wgsl-ops.h \
	plugins/webgpu/embed-wgsl.mjs plugins/webgpu/rmath.wgsl plugins/webgpu/kernels.wgsl \
	plugins/webgpu/rows.wgsl plugins/webgpu/infer.wgsl

EXTRA_DIST += $(WEBGPU_PLUGIN_FILES) $(WEBGPU_JS_FILES)
