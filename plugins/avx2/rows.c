/* SPDX-License-Identifier: MIT */
/* rows.c - softmax, log_softmax, layernorm, rmsnorm (m independent rows of
 * n) and transpose.
 *
 * Accuracy: row statistics are accumulated in double where float would not
 * do - the mean of a layernorm row must be right relative to the row's
 * spread, not to its magnitude (think 1000 + 1e-3 noise) - and the norms'
 * final expression is evaluated in double and rounded once.
 *
 * y may be x (in place): every row reads x completely, or element by
 * element just before writing it, before any write that could clobber an
 * element still needed.
 */
#include "plugin.h"
#include "x86-avx2-math.h"

#include <math.h>

/* Rows go parallel from calls of this many elements (avx2_run_items):
 * every row op is exp-heavy or two passes in double. */
#define ROWS_EXP_COST ((size_t)1 << 15)
#define ROWS_NORM_COST ROWS_EXP_COST

/* ---- softmax, log_softmax -------------------------------------------------- */

/* sum of exp(x[j] - mx), float lanes within blocks of 1024 elements, double
 * across blocks; with y, the terms are stored too (y may be x).  Inlined,
 * so log_softmax's call (y NULL: it needs x afterwards) has no stores. */
static inline __attribute__((always_inline)) double exp_shifted_sum(const float *x, float *y, size_t n,
                                                                    float mx)
{
    const __m256 shift = _mm256_set1_ps(mx);
    __m256d total = _mm256_setzero_pd();
    size_t j = 0;
    while (j < n) {
        size_t block_end = n - j > 1024 ? j + 1024 : n;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
        for (; j + 16 <= block_end; j += 16) {
            __m256 e0 = v_exp(_mm256_sub_ps(_mm256_loadu_ps(x + j), shift));
            __m256 e1 = v_exp(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), shift));
            if (y) {
                _mm256_storeu_ps(y + j, e0);
                _mm256_storeu_ps(y + j + 8, e1);
            }
            acc0 = _mm256_add_ps(acc0, e0);
            acc1 = _mm256_add_ps(acc1, e1);
        }
        for (; j < block_end; j += 8) {
            size_t count = block_end - j < 8 ? block_end - j : 8;
            __m256i m = v_lane_mask(count);
            __m256 e = v_exp(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), shift));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(m));    /* unused lanes add 0 */
            if (y)
                _mm256_maskstore_ps(y + j, m, e);
            acc0 = _mm256_add_ps(acc0, e);
        }
        total = v_widen_add(total, _mm256_add_ps(acc0, acc1));
    }
    return v_hsum_pd(total);
}

static void scale_in_place(float *y, size_t n, float factor)
{
    const __m256 f = _mm256_set1_ps(factor);
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(y + j), f));
    if (j < n) {
        __m256i m = v_lane_mask(n - j);
        _mm256_maskstore_ps(y + j, m, _mm256_mul_ps(_mm256_maskload_ps(y + j, m), f));
    }
}

/* Max-subtracted, so exp never overflows; a NaN in the row makes the max
 * NaN and the whole row NaN, as in the reference and the scalar backend. */
static void softmax_row(const float *x, float *y, size_t n)
{
    float mx = avx2_max_f32(x, n);
    double sum = exp_shifted_sum(x, y, n, mx);
    scale_in_place(y, n, (float)(1.0 / sum));
}

/* y = (x - max) - log(sum exp(x - max)), in that order: max + log(sum) as
 * one shift would lose log(sum) against a large max (a constant row of
 * 1e30).  x - max and y have the same sign and |x - max| <= |y|, so each
 * float rounding costs at most 2^-24 |y|. */
static void log_softmax_row(const float *x, float *y, size_t n)
{
    float mx = avx2_max_f32(x, n);
    const __m256 vmx = _mm256_set1_ps(mx);
    const __m256 vlog = _mm256_set1_ps((float)log(exp_shifted_sum(x, NULL, n, mx)));
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(y + j, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vmx), vlog));
    if (j < n) {
        __m256i m = v_lane_mask(n - j);
        __m256 v = _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), vmx), vlog);
        _mm256_maskstore_ps(y + j, m, v);
    }
}

/* ---- layernorm, rmsnorm ----------------------------------------------------- */

/* The double sums of layernorm (cpu-row-sums_tmpl.c), 8 floats a step. */
#define VD __m256d
#define ROW_SUMS_STEP 8
#define vd_zero _mm256_setzero_pd
#define vd_set _mm256_set1_pd
#define vd_add _mm256_add_pd
#define vd_sub _mm256_sub_pd
#define vd_fma _mm256_fmadd_pd
#define vd_hsum v_hsum_pd
static inline void row_sums_widen(const float *x, VD *lo, VD *hi)
{
    *lo = _mm256_cvtps_pd(_mm_loadu_ps(x));
    *hi = _mm256_cvtps_pd(_mm_loadu_ps(x + 4));
}
#include "cpu-row-sums_tmpl.c"

/* y = ((x - center) * rstd) * gamma + beta in double, rounded once:
 * in float, rstd overflows for subnormal rows (1 / sqrt(1e-78)), and
 * gamma ~ 100, beta ~ -100 cancel to outputs near 0 whose error is that of
 * 100 (v * gamma) in float, more than the contract's 4e-6.  gamma and beta
 * may be NULL (1, 0). */
static inline __m128 normalize4(__m128 x, __m128 g, __m128 b, __m256d center, __m256d rstd)
{
    __m256d v = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(x), center), rstd);
    return _mm256_cvtpd_ps(_mm256_fmadd_pd(v, _mm256_cvtps_pd(g), _mm256_cvtps_pd(b)));
}

static void normalize_row(const float *x, const float *gamma, const float *beta, float *y,
                          size_t n, double center, double rstd)
{
    const __m256d c = _mm256_set1_pd(center), r = _mm256_set1_pd(rstd);
    const __m128 one = _mm_set1_ps(1.0f), zero = _mm_setzero_ps();
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        __m128 g = gamma ? _mm_loadu_ps(gamma + j) : one;
        __m128 b = beta ? _mm_loadu_ps(beta + j) : zero;
        _mm_storeu_ps(y + j, normalize4(_mm_loadu_ps(x + j), g, b, c, r));
    }
    for (; j < n; j++)
        y[j] = (float)(((double)x[j] - center) * rstd * (gamma ? gamma[j] : 1.0) +
                       (beta ? beta[j] : 0.0));
}

#include "cpu-rows_tmpl.c"

/* ---- transpose: y (n x m) = a (m x n)^T ------------------------------------- */

/* 8x8 block: rows of a (stride lda) become columns of y (stride ldy); the
 * tiles (32x32 floats: 4 KiB read and 4 KiB written, in L1) and the bands
 * on the pool are cpu-transpose_tmpl.c's. */
#define TRANSPOSE_BLOCK 8
#define TRANSPOSE_COST ((size_t)1 << 18) /* elements from which bands go parallel */
static inline void transpose_block(const float *a, size_t lda, float *y, size_t ldy)
{
    __m256 r[8];
    for (int k = 0; k < 8; k++)
        r[k] = _mm256_loadu_ps(a + k * lda);
    v_transpose8x8(r);
    for (int k = 0; k < 8; k++)
        _mm256_storeu_ps(y + k * ldy, r[k]);
}

#include "cpu-transpose_tmpl.c"
