/* SPDX-License-Identifier: MIT */
/* plugin.h - internals of the portable C backend (not installed).
 *
 * The plugin exports only its descriptor; everything declared here is
 * hidden (the plugin is built with -fvisibility=hidden).  The glue it
 * shares with the other CPU plugins is in ../cpu-base.  Kernels are grouped
 * by op class: elementwise.c, reduce.c, rows.c, matmul.c, gemv.c,
 * transpose.c; the inference ops in convert.c, quant.c (matmul and gemv with
 * f16, bf16 and quantized operands), infer.c (get_rows, rope, gated units)
 * and attention.c; scalar-math.h has the vectorisable exp/log/tanh/erfc.  All
 * code is portable C11: loops are written so that compilers vectorise them
 * (checked with gcc -O2 -fopt-info-vec), never with intrinsics.
 */
#ifndef RAYO_SCALAR_H
#define RAYO_SCALAR_H

#define CPU_KERNEL(NAME) scalar_##NAME
#include "cpu-base.h"
#include "cpu-gemm.h"

#include <string.h>

/* y[j] = EXPR for every j in [lo, hi), where EXPR reads index j of inputs
 * that y may be exactly (in-place ops).  The values go through a local block
 * and are then copied to y: the block cannot alias the inputs, so compilers
 * vectorise the loop without the run-time overlap check that gcc -O2 does
 * not emit (nor does it vectorise loops that need a scalar remainder: the
 * block has a constant length).  Reading a block before writing it is
 * right for y == input exactly. */
#define SCALAR_MAP_BLOCK 64
#define SCALAR_MAP(y, lo, hi, j, expr)                                     \
    do {                                                                   \
        float map_out_[SCALAR_MAP_BLOCK];                                  \
        size_t map_at_ = (lo);                                             \
        for (; map_at_ + SCALAR_MAP_BLOCK <= (hi); map_at_ += SCALAR_MAP_BLOCK) { \
            for (size_t map_l_ = 0; map_l_ < SCALAR_MAP_BLOCK; map_l_++) { \
                const size_t j = map_at_ + map_l_;                         \
                map_out_[map_l_] = (expr);                                 \
            }                                                              \
            memcpy((y) + map_at_, map_out_, sizeof map_out_);              \
        }                                                                  \
        for (size_t j = map_at_; j < (hi); j++)                            \
            (y)[j] = (expr);                                               \
    } while (0)

/* sum(x), dot(a, b) with blocked summation (float lanes within a block, double
 * across blocks: error near 3e-6 of sum|terms| for any n), and the sum of
 * squares in double (no overflow); from reduce.c, used by gemv and rows. */
double scalar_sum_f64(const float *x, size_t n);
double scalar_dot_f64(const float *a, const float *b, size_t n);
double scalar_sum_squares_f64(const float *x, size_t n);
/* max(x[0..n)), NaN if any element is NaN, -inf for n == 0. */
float scalar_max_f32(const float *x, size_t n);

/* Kernels are scalar_NAME (cpu-base.h declares one for every op). */
#define SCALAR_KERNEL(NAME) CPU_KERNEL_FN(NAME)

/* matmul and gemv with non-f32 operands (quant.c), and f32 calls with
 * strided operands, which the f32 kernels hand to them. */
SCALAR_KERNEL(matmul_typed);
SCALAR_KERNEL(gemv_typed);

/* gemv's kernels (gemv.c), also matmul's path for m == 1 or n == 1. */
extern const cpu_gemv_kernel scalar_gemv_kernels;

#endif
