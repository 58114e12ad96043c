/* SPDX-License-Identifier: MIT */
/* plugin.c - the AArch64 Advanced SIMD backend: its device, op table and
 * descriptor (the glue is ../cpu-base).
 *
 * The descriptor says arch AArch64 and cpu_features ASIMD: the core checks
 * both (HWCAP) before any code of this plugin runs, so the kernels may use
 * Advanced SIMD unconditionally. */
#include "plugin.h"

/* Ranges in chunks of whole 16-float blocks: only the last one has a tail.
 * The op table is the decode path of inference (CPU_COMBO_*:
 * ../cpu-base/simd128-plugin.h). */
CPU_PLUGIN_SPEC("CPU (AArch64 Advanced SIMD)", 16);
#define CPU_PLUGIN_ID "neon", RAYO_ARCH_AARCH64, RAYO_CPU_ARM_ASIMD, 50
#include "cpu-plugin_tmpl.c"
