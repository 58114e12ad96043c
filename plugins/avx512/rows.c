/* SPDX-License-Identifier: MIT */
/* rows.c - softmax, log_softmax, layernorm, rmsnorm (m independent rows of
 * n) and transpose of the AVX-512 backend: ../cpu-base/x86-rows_tmpl.c at 16
 * floats a vector, on the norms' double arithmetic defined here.
 *
 * Accuracy: row statistics are accumulated in double where float would not
 * do (the mean of a layernorm row must be right relative to the row's
 * spread, not to its magnitude: think 1000 + 1e-3 noise), and the norms'
 * final expression is evaluated in double and rounded once.
 */
#include "plugin.h"
#include "avx512-vector.h"

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

/* softmax and log_softmax cost about 4 cheap ops per element, the norms 2;
 * 16x16 transpose blocks in tiles of 64x64 floats (16 KiB read and 16 KiB
 * written per tile). */
#define ROWS_EXP_COST 4
#define ROWS_NORM_COST 2
#define TRANSPOSE_TILE 64
#include "x86-rows_tmpl.c"
