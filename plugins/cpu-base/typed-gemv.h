/* typed-gemv.h - what the x86 plugins' gemv with half or block-quantized
 * weights (avx2/quant.c, avx512/quant.c) share: the call's checks, the
 * weight rows' stride, the loop over rows and the choice of row dot.  Each
 * of them defines the six row dots declared below (its SIMD dot of one
 * weight row with x, returned in double). */
#ifndef RAYO_CPU_TYPED_GEMV_H
#define RAYO_CPU_TYPED_GEMV_H

#include "cpu-base.h"

typedef double row_dot_fn(const uint8_t *row, const float *x, size_t n);
static row_dot_fn dot_f16, dot_bf16, dot_q8_0, dot_q4_0, dot_q4_k, dot_q6_k;
/* The dots of four rows (row, row + stride, ...) with x, which they read
 * once: every row reading x (larger than L1 at inference sizes) again from
 * L2 costs more than the weights themselves. */
typedef void row_dot4_fn(const uint8_t *row, size_t stride, const float *x, size_t n, double out[4]);
static row_dot4_fn dot4_q8_0, dot4_q4_0;

static inline row_dot4_fn *row_dot4_for(rayo_dtype dt)
{
    return dt == RAYO_DTYPE_Q8_0 ? dot4_q8_0 : dt == RAYO_DTYPE_Q4_0 ? dot4_q4_0 : NULL;
}

/* The row dot for A's dtype; NULL where there is none. */
static inline row_dot_fn *row_dot_for(rayo_dtype dt)
{
    switch (dt) {
    case RAYO_DTYPE_F16: return dot_f16;
    case RAYO_DTYPE_BF16: return dot_bf16;
    case RAYO_DTYPE_Q8_0: return dot_q8_0;
    case RAYO_DTYPE_Q4_0: return dot_q4_0;
    case RAYO_DTYPE_Q4_K: return dot_q4_k;
    case RAYO_DTYPE_Q6_K: return dot_q6_k;
    default: return NULL;
    }
}

/* sum of w[i] x[i] over i in [begin, n), w f16 or bf16, one by one in
 * double: the end of a half row that no whole vector covers. */
static inline double typed_gemv_half_tail(const uint8_t *w, const float *x, size_t begin, size_t n,
                                          int is_f16)
{
    double sum = 0.0;
    for (size_t i = begin; i < n; i++) {
        uint16_t h = rayo__le16(w + 2 * i);
        sum += (double)(is_f16 ? rayo_f16_to_f32(h) : rayo_bf16_to_f32(h)) * (double)x[i];
    }
    return sum;
}

/* Bytes from one row of A to the next (lda elements, else n). */
static inline size_t typed_gemv_row_bytes(const rayo_call *c)
{
    size_t bytes = 0;
    rayo_dtype_row_bytes(RAYO_DTYPE_OF(c->dtypes, 0), c->lda ? c->lda : c->n, &bytes); /* validated by the core */
    return bytes;
}

/* Whether these kernels take the call: no flags (A not transposed), no
 * strides but lda, and a dtype of A with a row dot. */
static inline int typed_gemv_takes(const rayo_call *c)
{
    return !c->flags && !(c->ldb | c->ldc | c->ldy) && row_dot_for(RAYO_DTYPE_OF(c->dtypes, 0));
}

static inline void typed_gemv_store(const rayo_call *c, size_t i, double dot)
{
    float *y = c->y;
    double v = (double)c->alpha * dot;
    y[i] = (float)(c->beta == 0.0f ? v : v + (double)c->beta * y[i]);
}

/* y[begin..end) = alpha (A x)[i] + beta y[i]; beta == 0 never reads y.
 * Four rows at a time where the dtype has a four-row dot. */
static inline void typed_gemv_rows(const rayo_call *c, size_t begin, size_t end)
{
    rayo_dtype dt = RAYO_DTYPE_OF(c->dtypes, 0);
    row_dot_fn *dot = row_dot_for(dt);
    row_dot4_fn *dot4 = row_dot4_for(dt);
    size_t stride = typed_gemv_row_bytes(c), i = begin;
    const uint8_t *a = (const uint8_t *)c->a;
    if (dot4)
        for (; i + 4 <= end; i += 4) {
            double sums[4];
            dot4(a + i * stride, stride, c->b, c->n, sums);
            for (size_t r = 0; r < 4; r++)
                typed_gemv_store(c, i + r, sums[r]);
        }
    for (; i < end; i++)
        typed_gemv_store(c, i, dot(a + i * stride, c->b, c->n));
}

#endif
