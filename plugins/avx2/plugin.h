/* SPDX-License-Identifier: MIT */
/* plugin.h - internals of the AVX2+FMA backend (not installed).
 *
 * Everything here is hidden: the plugin is built with -fvisibility=hidden
 * and exports only its descriptor.  The glue it shares with the other CPU
 * plugins (threads, probe/init/fini, descriptor) is in ../cpu-base.
 * Files, by op class:
 *   plugin.c       device name, sgemm blocking rule, op table
 *   elementwise.c  binary, unary and activation ops, axpy, bias_act
 *   avx2-vector.h  the vector interface (VF, VD, VM) of the x86 templates
 *   reduce.c       sum, dot, max, min, argmax, norms (../cpu-base/x86-reduce_tmpl.c)
 *   rows.c         softmax, log_softmax, layernorm, rmsnorm, transpose
 *                  (../cpu-base/x86-rows_tmpl.c)
 *   matmul.c       matmul (packing, 4x24 FMA microkernel, blocking) and gemv
 *   quant.c        gemv with half or block-quantized weights, decoded in registers
 *   infer.c        convert, get_rows, rope, attention, swiglu/geglu: the vector
 *                  operations for ../cpu-base/x86-infer_tmpl.c, shared with avx512
 *   ../cpu-base/x86-avx2-math.h exp, log, tanh, sigmoid, normal CDF approximations, the
 *                  silu and gelu activations
 */
#ifndef RAYO_AVX2_H
#define RAYO_AVX2_H

#define CPU_KERNEL(NAME) avx2_##NAME
#include "x86-plugin.h"

#include <stdbool.h>

/* The sgemm microkernel's tile: MR rows x NR columns of C (gemm.c). */
#define AVX2_GEMM_MR 4
#define AVX2_GEMM_NR 24

/* The state: the x86 plugins' (caches, blocking, stream_min_bytes, packing
 * buffers; ../cpu-base/x86-plugin.h). */
typedef x86_state avx2_state;

/* ---- threads ----------------------------------------------------------- */
/* Runs fn(st, call, begin, end) over [0, n) split in one chunk per thread
 * when n >= min_parallel, else in one piece on the calling thread (avx2's
 * thresholds are measured per op class, elementwise.c and rows.c).  Chunk
 * bounds are multiples of granule (64 elements for vectors: whole cache
 * lines; 1 for rows).  The range functions get the state as a cpu_state
 * (x86_state's first member). */
typedef cpu_range_fn avx2_range_fn;
static inline void avx2_run_ranges(const void *state, const rayo_call *call, size_t n,
                                   size_t min_parallel, size_t granule, avx2_range_fn *fn)
{
    cpu_run_per_thread(state, call, n, min_parallel, granule, fn);
}
#define AVX2_VECTOR_GRANULE 64

/* The templates' threading (CPU_RUN_ITEMS, cpu-base.h): avx2's thresholds
 * are measured per op class in elements, so cost is the call size in
 * elements from which count items of per_item elements go one chunk per
 * thread. */
static inline void avx2_run_items(const void *state, const rayo_call *call, size_t count,
                                  size_t per_item, size_t cost, cpu_range_fn *fn)
{
    size_t min_items = (cost + per_item - 1) / per_item;
    size_t granule = per_item == 1 ? AVX2_VECTOR_GRANULE : 1;
    avx2_run_ranges(state, call, count, min_items < 2 ? 2 : min_items, granule, fn);
}
#define CPU_RUN_ITEMS avx2_run_items

/* ---- reduce.c: helpers shared with rows.c ------------------------------ */
/* max of x[0..n): NaN if any element is NaN, -inf for n == 0. */
float avx2_max_f32(const float *x, size_t n);
/* sum of x[i]^2 in double (no overflow for any float). */
double avx2_sum_squares_f64(const float *x, size_t n);

/* ---- matmul.c ---------------------------------------------------------- */
/* sgemm on dense row-major operands (any m, n, k; beta == 0 never reads C):
 * the f32 matmul kernel, and x86-typed-matmul.c's on dequantized panels. */
rayo_status avx2_sgemm(void *state, const x86_gemm_args *g);
/* y = alpha op(A) x + beta y, A rows x cols (trans: op(A) = A^T): gemv and
 * matmul's m = 1 or n = 1 (x86-gemv_tmpl.c). */
void avx2_gemv_run(const avx2_state *st, int trans, size_t rows, size_t cols, float alpha, const float *A,
                   const float *x, float beta, float *y);

/* ---- quant.c ----------------------------------------------------------- */
/* gemv with f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K weights (listed per dtype
 * in plugin.c). */
rayo_status avx2_gemv_quant(void *state, const rayo_call *call);
/* The same A into several x's (typed_gemv_run_many): a short prompt's products. */
rayo_status avx2_gemv_quant_many(void *state, const rayo_call *call, size_t count, size_t ldx, size_t ldy);
/* Whether those gemvs decode a block once for several x's (typed_gemv_has_many). */
bool avx2_gemv_quant_shares_decoding(void *state, rayo_dtype dt);
/* matmul with f16, bf16 or block-quantized B, or f16/bf16 A and B
 * (x86-typed-matmul.h). */
rayo_status avx2_matmul_typed(void *state, const rayo_call *call);

/* Kernels are avx2_NAME (cpu-base.h declares one for every op). */
#define AVX2_KERNEL(NAME) CPU_KERNEL_FN(NAME)

#endif
