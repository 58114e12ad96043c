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
#include "cpu-base.h"
#include "cpu-gemm.h"
#include "simd128-plugin.h"

/* Blocked sums (float lanes inside a block, double across blocks), so the
 * error stays near 1e-6 * sum|terms| for any n.  Used by the reductions,
 * gemv and the row ops. */
double neon_sum_f64(const float *x, size_t n);
double neon_dot_f64(const float *a, const float *b, size_t n);
double neon_sum_abs_f64(const float *x, size_t n);
/* Sum of x^2 in double lanes (no overflow for any float). */
double neon_sum_squares_f64(const float *x, size_t n);
/* Maximum of x[0..n), n >= 1; NaN if any element is NaN. */
float neon_max_f32(const float *x, size_t n);

/* Kernels are neon_NAME (cpu-base.h declares one for every op). */
#define NEON_KERNEL(NAME) CPU_KERNEL_FN(NAME)

/* gemv's kernels (gemv.c), also matmul's path for m == 1 or n == 1. */
extern const cpu_gemv_kernel neon_gemv_kernels;

/* gemv with f16, bf16 or block-quantized weights (quant.c). */
rayo_status neon_gemv_quant(void *state, const rayo_call *call);

#endif
