/* SPDX-License-Identifier: MIT */
/* simd128-plugin.h - what the 128-bit SIMD plugins (neon, wasm) share in
 * their plugin.h, after CPU_KERNEL names their kernels: the base headers,
 * the helpers of reduce.c that other files use, the gemv kernels, and the
 * op table's kernels (cpu-op-table.h) of the decode path of inference.
 * Matmul with other dtypes, convert and get_rows fall through to the
 * scalar backend. */
#ifndef RAYO_SIMD128_PLUGIN_H
#define RAYO_SIMD128_PLUGIN_H

#include "cpu-base.h"
#include "cpu-gemm.h"

/* Blocked sums (float lanes inside a block, double across blocks), so the
 * error stays near 1e-6 (neon) or 3e-6 (wasm) of sum|terms| for any n: for the reductions, gemv
 * and the row ops (reduce.c). */
double CPU_KERNEL(sum_f64)(const float *x, size_t n);
double CPU_KERNEL(dot_f64)(const float *a, const float *b, size_t n);
/* Sum of x^2 in double lanes (no overflow for any float). */
double CPU_KERNEL(sum_squares_f64)(const float *x, size_t n);
/* Maximum of x[0..n), -inf for n == 0; NaN if any element is NaN. */
float CPU_KERNEL(max_f32)(const float *x, size_t n);

/* gemv's kernels (gemv.c), also matmul's path for m == 1 or n == 1. */
extern const cpu_gemv_kernel CPU_KERNEL(gemv_kernels);
/* gemv with f16, bf16 or block-quantized weights (quant.c). */
rayo_status CPU_KERNEL(gemv_quant)(void *state, const rayo_call *call);

#define CPU_COMBO_MATMUL(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_GEMV(OP, DT) CPU_COMBO_TYPED(OP, DT, CPU_KERNEL(gemv_quant))
#define CPU_COMBO_CONVERT(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_GET_ROWS(OP, DT) CPU_COMBO_NONE(OP, DT)
#define CPU_COMBO_ROPE(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(rope))
#define CPU_COMBO_ATTENTION(OP, DT) CPU_COMBO_KERNEL(OP, DT, CPU_KERNEL(attention))

#endif
