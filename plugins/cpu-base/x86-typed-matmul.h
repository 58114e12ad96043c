/* SPDX-License-Identifier: MIT */
/* x86-typed-matmul.h - matmul with f16, bf16 or block-quantized weights on the
 * x86 plugins' sgemm (avx2, avx512): C (m x n) = alpha op(A) op(B) + beta C
 * with A f32, f16 or bf16 and B f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K (the
 * MATMUL combinations of rayo-ops.h), C f32, row strides lda, ldb, ldy.
 *
 * Prefill (m = hundreds of tokens) is compute-bound: each weight is used m
 * times.  So B is dequantized once, in panels of columns of op(B) that
 * each fit a few MiB of f32, and every panel goes through the plugin's
 * packed sgemm with the whole of op(A); the dequantizing costs about 1/m
 * of the products.  op(A) is used in place when it is dense f32, else
 * converted to f32 once per call.  Both paths (strict and relaxed) are
 * this one: f32 products and sums, the strict contract.  A few rows of A
 * (a short prompt) go as gemvs instead (typed_matmul_as_gemvs).
 */
#ifndef RAYO_TYPED_MATMUL_H
#define RAYO_TYPED_MATMUL_H

#include "x86-gemm.h"

#include <stdbool.h>

/* The plugin's sgemm on dense operands (its f32 matmul without the checks). */
typedef rayo_status x86_sgemm_fn(void *state, const x86_gemm_args *g);

/* The matmul kernel for the typed combinations; RAYO_E_UNSUPPORTED for all-f32
 * calls (the f32 kernel's) and for block-quantized B without RAYO_TRANS_B. */
rayo_status typed_matmul_run(void *state, const rayo_call *call, x86_sgemm_fn *sgemm);

/* The plugin's gemv with half or block-quantized weights, of one A into
 * `count` x's (cpu-typed-gemv_tmpl.c, typed_gemv_run_many). */
typedef rayo_status x86_typed_gemvs_fn(void *state, const rayo_call *call, size_t count, size_t ldx, size_t ldy);

/* A few rows of f32 A against typed B stored n x k (RAYO_TRANS_B, the
 * weights of a short prompt): the gemv of B into every row of A at once,
 * B read from memory once, where that costs less than typed_matmul_run
 * (the counts in x86-typed-matmul.c; more where shares_decoding says the
 * plugin's relaxed gemvs decode a block once for several x's).
 * RAYO_E_UNSUPPORTED, C untouched, for other calls. */
typedef bool x86_gemvs_share_fn(void *state, rayo_dtype dt);
rayo_status typed_matmul_as_gemvs(void *state, const rayo_call *call, x86_typed_gemvs_fn *gemvs,
                                  x86_gemvs_share_fn *shares_decoding);

#endif
