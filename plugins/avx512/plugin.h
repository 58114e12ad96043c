/* SPDX-License-Identifier: MIT */
/* plugin.h - internals of the AVX-512 backend (not installed).
 *
 * Everything here is hidden: the plugin is built with -fvisibility=hidden
 * and exports only its descriptor.  The glue it shares with the other CPU
 * plugins (threads, probe/init/fini, descriptor, row kernels) is ../cpu-base,
 * with avx2's state, cache detection and sgemm drivers (x86-*).  Files, by op class:
 *   plugin.c       device name, sgemm blocking rule, op table, descriptor
 *   avx512-math.h  exp, expm1, log, tanh, sigmoid, normal CDF, silu, gelu, 16
 *                  floats at a time
 *   avx512-vector.h  the vector interface (VF, VD, VM) of the x86 templates
 *   elementwise.c  binary, unary and activation ops, axpy, bias_act
 *   reduce.c       sum, dot, max, min, argmax, norms (../cpu-base/x86-reduce_tmpl.c)
 *   rows.c         softmax, log_softmax, layernorm, rmsnorm, transpose
 *                  (../cpu-base/x86-rows_tmpl.c)
 *   matmul.c       matmul: packing, the 12x32 FMA microkernel, blocking
 *   gemv.c         gemv, and matmul with m = 1 or n = 1
 *   quant.c        gemv with half or block-quantized weights, decoded in registers
 *   infer.c        convert, get_rows, rope, attention, swiglu/geglu: the vector
 *                  operations for ../cpu-base/x86-infer_tmpl.c, shared with avx2
 */
#ifndef RAYO_AVX512_H
#define RAYO_AVX512_H

#define CPU_KERNEL(NAME) avx512_##NAME
#include "x86-plugin.h"

#include <stdbool.h>

/* The sgemm microkernel's tile: MR rows x NR columns of C (matmul.c):
 * 24 of the 32 zmm registers hold it. */
#define AVX512_GEMM_MR 12
#define AVX512_GEMM_NR 32

/* The state: the x86 plugins' (caches, blocking, stream_min_bytes, packing
 * buffers; ../cpu-base/x86-plugin.h). */
typedef x86_state avx512_state;

/* Vector ranges handed to cpu_run_ranges are cut at multiples of this many
 * elements (whole cache lines; the two-vector loop has no tail inside). */
#define AVX512_VECTOR_GRANULE 64

/* ---- reduce.c: helpers shared with rows.c ------------------------------ */
/* max of x[0..n): NaN if any element is NaN, -inf for n == 0. */
float avx512_max_f32(const float *x, size_t n);
/* sum of x[i]^2 in double (no overflow for any float). */
double avx512_sum_squares_f64(const float *x, size_t n);

/* ---- matmul.c / gemv.c ------------------------------------------------- */
/* y = alpha op(A) x + beta y with A rows x cols (row-major); trans: op(A) = A^T. */
void avx512_gemv_run(const avx512_state *st, int trans, size_t rows, size_t cols, float alpha,
                     const float *A, const float *x, float beta, float *y);

/* sgemm on dense row-major operands (any m, n, k; beta == 0 never reads C):
 * the f32 matmul kernel, and x86-typed-matmul.c's on dequantized panels. */
rayo_status avx512_sgemm(void *state, const x86_gemm_args *g);

/* ---- quant.c ----------------------------------------------------------- */
/* gemv with f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K weights (listed per dtype
 * in plugin.c). */
rayo_status avx512_gemv_quant(void *state, const rayo_call *call);
/* The same A into several x's (typed_gemv_run_many): a short prompt's products. */
rayo_status avx512_gemv_quant_many(void *state, const rayo_call *call, size_t count, size_t ldx, size_t ldy);
/* Whether those gemvs decode a block once for several x's (typed_gemv_has_many). */
bool avx512_gemv_quant_shares_decoding(void *state, rayo_dtype dt);
/* matmul with f16, bf16 or block-quantized B, or f16/bf16 A and B
 * (x86-typed-matmul.h). */
rayo_status avx512_matmul_typed(void *state, const rayo_call *call);

#define AVX512_KERNEL(NAME) CPU_KERNEL_FN(NAME)

#endif
