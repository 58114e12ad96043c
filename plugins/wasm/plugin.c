/* SPDX-License-Identifier: MIT */
/* plugin.c - the WebAssembly SIMD128 backend: its device, op table and
 * descriptor (the glue is ../cpu-base).
 *
 * The core loads this plugin only where the engine validates SIMD128 code
 * (the descriptor's cpu_features); the base's probe says so again for
 * rayo-info. */
#include "plugin.h"

const cpu_plugin_spec cpu_plugin = {
    .device_name = "WebAssembly SIMD128 (4 x f32)",
    .state_size = sizeof(cpu_state),
    /* chunks of whole vectors: only the last one has a tail */
    .range_granule = 4,
};

/* The decode path of inference (CPU_COMBO_*: ../cpu-base/simd128-plugin.h). */
static const rayo_op_entry wasm_ops[] = {
#include "cpu-op-table.h"
};

CPU_PLUGIN_DESCRIPTOR("wasm", RAYO_ARCH_WASM32, RAYO_CPU_WASM_SIMD128, 50, wasm_ops);
