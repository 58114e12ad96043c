/* SPDX-License-Identifier: MIT */
/* plugin.h - internals of the AArch64 Advanced SIMD backend (not installed).
 *
 * The plugin exports only its descriptor (rayo_plugin); everything declared
 * here is hidden (the plugin is built with -fvisibility=hidden).  The glue it
 * shares with the other CPU plugins is in ../cpu-base.  Kernels are grouped
 * by op class: elementwise.c, reduce.c, rows.c, matmul.c, gemv.c,
 * transpose.c, quant.c (typed gemv), infer.c (rope, attention, gated units).  Vector math shared by several files lives in neon-math.h.
 */
#ifndef RAYO_NEON_H
#define RAYO_NEON_H

#define CPU_KERNEL(NAME) neon_##NAME
#include "simd128-plugin.h"

/* Kernels are neon_NAME (cpu-base.h declares one for every op). */
#define NEON_KERNEL(NAME) CPU_KERNEL_FN(NAME)

#endif
