/* SPDX-License-Identifier: MIT */
/* plugin.c - the AArch64 Advanced SIMD backend: its device, op table and
 * descriptor (the glue is ../cpu-base).
 *
 * The descriptor says arch AArch64 and cpu_features ASIMD: the core checks
 * both (HWCAP) before any code of this plugin runs, so the kernels may use
 * Advanced SIMD unconditionally. */
#include "plugin.h"

const cpu_plugin_spec cpu_plugin = {
    .device_name = "CPU (AArch64 Advanced SIMD)",
    .state_size = sizeof(cpu_state),
    /* chunks of whole 16-float blocks: only the last one has a tail */
    .range_granule = 16,
};

/* The decode path of inference (CPU_COMBO_*: ../cpu-base/simd128-plugin.h). */
static const rayo_op_entry neon_ops[] = {
#include "cpu-op-table.h"
};

CPU_PLUGIN_DESCRIPTOR("neon", RAYO_ARCH_AARCH64, RAYO_CPU_ARM_ASIMD, 50, neon_ops);
