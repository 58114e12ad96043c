/* SPDX-License-Identifier: MIT */
/* plugin.c - the WebAssembly SIMD128 backend: its device, op table and
 * descriptor (the glue is ../cpu-base).
 *
 * The core loads this plugin only where the engine validates SIMD128 code
 * (the descriptor's cpu_features); the base's probe says so again for
 * rayo-info. */
#include "plugin.h"

/* Ranges in chunks of whole vectors: only the last one has a tail.  The op
 * table is the decode path of inference (CPU_COMBO_*:
 * ../cpu-base/simd128-plugin.h). */
CPU_PLUGIN_SPEC("WebAssembly SIMD128 (4 x f32)", 4);
#define CPU_PLUGIN_ID "wasm", RAYO_ARCH_WASM32, RAYO_CPU_WASM_SIMD128, 50
#include "cpu-plugin_tmpl.c"
