/* SPDX-License-Identifier: MIT */
/* rows.c - softmax, log_softmax, layernorm, rmsnorm (m independent rows of
 * n, spread over the pool by cpu-rows_tmpl.c) and transpose.
 *
 * Accuracy: row statistics are accumulated in double where float would not
 * do (the mean of a layernorm row must be right relative to the row's
 * spread, not to its magnitude: think 1000 + 1e-3 noise), and the norms'
 * final expression is evaluated in double and rounded once.
 *
 * y may be x (in place): every row reads x completely, or element by
 * element just before writing it, before any write that could clobber an
 * element still needed.
 */
#include "plugin.h"
#include "avx512-math.h"

#include <math.h>

/* ---- softmax, log_softmax -------------------------------------------------- */

/* sum of exp(x[j] - mx), float lanes within blocks of 1024 elements (64
 * terms per lane), double across blocks; with y, the terms are stored too
 * (y may be x). */
static double exp_shifted_sum(const float *x, float *y, size_t n, float mx)
{
    const __m512 shift = _mm512_set1_ps(mx);
    __m512d total = _mm512_setzero_pd();
    size_t j = 0;
    while (j < n) {
        size_t block_end = n - j > 1024 ? j + 1024 : n;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;
        for (; j + 32 <= block_end; j += 32) {
            __m512 e0 = z_exp(_mm512_sub_ps(_mm512_loadu_ps(x + j), shift));
            __m512 e1 = z_exp(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), shift));
            if (y) {
                _mm512_storeu_ps(y + j, e0);
                _mm512_storeu_ps(y + j + 16, e1);
            }
            acc0 = _mm512_add_ps(acc0, e0);
            acc1 = _mm512_add_ps(acc1, e1);
        }
        for (; j < block_end; j += 16) {
            __mmask16 m = z_lanes(block_end - j < 16 ? block_end - j : 16);
            __m512 e = _mm512_maskz_mov_ps(m, z_exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), shift)));
            if (y)
                z_store_lanes(y + j, m, e);
            acc0 = _mm512_add_ps(acc0, e);                 /* unused lanes add 0 */
        }
        total = z_widen_add(total, _mm512_add_ps(acc0, acc1));
    }
    return _mm512_reduce_add_pd(total);
}

/* Max-subtracted, so exp never overflows; a NaN in the row makes the max
 * NaN and the whole row NaN, as in the reference. */
static void softmax_row(const float *x, float *y, size_t n)
{
    float mx = avx512_max_f32(x, n);
    const __m512 f = _mm512_set1_ps((float)(1.0 / exp_shifted_sum(x, y, n, mx)));
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = z_lanes(n - j < 16 ? n - j : 16);
        z_store_lanes(y + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + j), f));
    }
}

/* y = (x - max) - log(sum exp(x - max)), in that order: max + log(sum) as
 * one shift would lose log(sum) against a large max (a constant row of
 * 1e30).  x - max and y have the same sign and |x - max| <= |y|, so each
 * float rounding costs at most 2^-24 |y|. */
static void log_softmax_row(const float *x, float *y, size_t n)
{
    float mx = avx512_max_f32(x, n);
    const __m512 vmx = _mm512_set1_ps(mx);
    const __m512 vlog = _mm512_set1_ps((float)log(exp_shifted_sum(x, NULL, n, mx)));
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = z_lanes(n - j < 16 ? n - j : 16);
        __m512 v = _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), vmx), vlog);
        z_store_lanes(y + j, m, v);
    }
}

/* ---- layernorm, rmsnorm ----------------------------------------------------- */

/* The 16 floats at x + j (fewer under mask m) as two vectors of 8 doubles. */
static inline void load_f64(const float *x, __mmask16 m, __m512d *lo, __m512d *hi)
{
    *lo = _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)m, x));
    *hi = _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)(m >> 8), x + 8));
}

/* sum of x in double: exact for any row a float could hold the mean of. */
static double row_sum_f64(const float *x, size_t n)
{
    __m512d acc0 = _mm512_setzero_pd(), acc1 = acc0;
    for (size_t j = 0; j < n; j += 16) {
        __m512d lo, hi;
        load_f64(x + j, z_lanes(n - j < 16 ? n - j : 16), &lo, &hi);
        acc0 = _mm512_add_pd(acc0, lo);
        acc1 = _mm512_add_pd(acc1, hi);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
}

/* sum of (x - mean)^2 in double: the second pass of a two-pass variance
 * (masked-off lanes are 0 - mean: masked out of the sum). */
static double row_centered_squares_f64(const float *x, size_t n, double mean)
{
    const __m512d mu = _mm512_set1_pd(mean);
    __m512d acc0 = _mm512_setzero_pd(), acc1 = acc0;
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = z_lanes(n - j < 16 ? n - j : 16);
        __m512d lo, hi;
        load_f64(x + j, m, &lo, &hi);
        __m512d d0 = _mm512_maskz_sub_pd((__mmask8)m, lo, mu);
        __m512d d1 = _mm512_maskz_sub_pd((__mmask8)(m >> 8), hi, mu);
        acc0 = _mm512_fmadd_pd(d0, d0, acc0);
        acc1 = _mm512_fmadd_pd(d1, d1, acc1);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
}

/* 8 outputs ((x - center) * rstd) * gamma + beta in double, rounded once: in
 * float, rstd overflows for subnormal rows (1 / sqrt(1e-78)), and gamma ~
 * 100, beta ~ -100 cancel to outputs whose float error would exceed the
 * contract. */
static inline __m256 normalize8(__m512d x, __m512d g, __m512d b, __m512d center, __m512d rstd)
{
    return _mm512_cvtpd_ps(_mm512_fmadd_pd(_mm512_mul_pd(_mm512_sub_pd(x, center), rstd), g, b));
}

/* gamma and beta may be NULL (1 and 0). */
static void normalize_row(const float *x, const float *gamma, const float *beta, float *y, size_t n,
                          double center, double rstd)
{
    const __m512d c = _mm512_set1_pd(center), r = _mm512_set1_pd(rstd);
    const __m512d one = _mm512_set1_pd(1.0), zero = _mm512_setzero_pd();
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = z_lanes(n - j < 16 ? n - j : 16);
        __m512d x0, x1, g0 = one, g1 = one, b0 = zero, b1 = zero;
        load_f64(x + j, m, &x0, &x1);
        if (gamma)
            load_f64(gamma + j, m, &g0, &g1);
        if (beta)
            load_f64(beta + j, m, &b0, &b1);
        __m256 lo = normalize8(x0, g0, b0, c, r), hi = normalize8(x1, g1, b1, c, r);
        z_store_lanes(y + j, m, _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1));
    }
}

/* softmax and log_softmax cost about 4 cheap ops per element, the norms 2. */
#define ROWS_EXP_COST 4
#define ROWS_NORM_COST 2
#include "cpu-rows_tmpl.c"

/* ---- transpose: y (n x m) = a (m x n)^T ------------------------------------- */

/* 16x16 block: rows of a (stride lda) become columns of y (stride ldy), in
 * tiles of 64x64 floats (16 KiB read and 16 KiB written per tile) and bands
 * on the pool: cpu-transpose_tmpl.c. */
#define TRANSPOSE_BLOCK 16
#define TRANSPOSE_TILE 64
static inline void transpose_block(const float *a, size_t lda, float *y, size_t ldy)
{
    __m512 r[16];
    for (int k = 0; k < 16; k++)
        r[k] = _mm512_loadu_ps(a + k * lda);
    z_transpose16x16(r);
    for (int k = 0; k < 16; k++)
        _mm512_storeu_ps(y + k * ldy, r[k]);
}

#include "cpu-transpose_tmpl.c"
