/* SPDX-License-Identifier: MIT */
/* rows.c - softmax, log_softmax, layernorm, rmsnorm (m independent rows of
 * n, spread over the pool by cpu-base's CPU_ROW_KERNELS) and transpose.
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

/* 1 / sqrt(var + eps), and 0 where var + eps = 0 (rayo-ops.h: the
 * normalised value of a constant row with eps = 0 is 0, not 0 * inf);
 * a NaN in the row stays NaN, so the whole row comes out NaN. */
static double inverse_std(double var_plus_eps)
{
    return var_plus_eps == 0 ? 0.0 : 1.0 / sqrt(var_plus_eps);
}

static void layernorm_row(const float *x, const float *gamma, const float *beta, float *y, size_t n,
                          float eps)
{
    double mean = row_sum_f64(x, n) / (double)n;
    double var = row_centered_squares_f64(x, n, mean) / (double)n;
    normalize_row(x, gamma, beta, y, n, mean, inverse_std(var + (double)eps));
}

static void rmsnorm_row(const float *x, const float *gamma, float *y, size_t n, float eps)
{
    double mean_square = avx512_sum_squares_f64(x, n) / (double)n;
    normalize_row(x, gamma, NULL, y, n, 0.0, inverse_std(mean_square + (double)eps));
}

/* softmax and log_softmax cost about 4 cheap ops per element, the norms 2. */
CPU_ROW_KERNELS(4, 2)

/* ---- transpose: y (n x m) = a (m x n)^T ------------------------------------- */

/* 16x16 block: rows of a (stride lda) become columns of y (stride ldy). */
static inline void transpose16x16(const float *a, size_t lda, float *y, size_t ldy)
{
    __m512 r[16];
    for (int k = 0; k < 16; k++)
        r[k] = _mm512_loadu_ps(a + k * lda);
    z_transpose16x16(r);
    for (int k = 0; k < 16; k++)
        _mm512_storeu_ps(y + k * ldy, r[k]);
}

#define TILE 64 /* 64x64 floats: 16 KiB read and 16 KiB written per tile */

static void transpose_tile(const float *a, float *y, size_t m, size_t n, size_t i0, size_t i1,
                           size_t j0, size_t j1)
{
    size_t i = i0;
    for (; i + 16 <= i1; i += 16) {
        size_t j = j0;
        for (; j + 16 <= j1; j += 16)
            transpose16x16(a + i * n + j, n, y + j * m + i, m);
        for (; j < j1; j++)
            for (size_t k = i; k < i + 16; k++)
                y[j * m + k] = a[k * n + j];
    }
    for (; i < i1; i++)
        for (size_t j = j0; j < j1; j++)
            y[j * m + i] = a[i * n + j];
}

/* Items are bands of TILE rows of a. */
static void transpose_bands(const cpu_state *st, const rayo_call *c, size_t begin, size_t end)
{
    (void)st;
    size_t m = c->m, n = c->n;
    for (size_t band = begin; band < end; band++) {
        size_t i0 = band * TILE, i1 = i0 + TILE < m ? i0 + TILE : m;
        for (size_t j0 = 0; j0 < n; j0 += TILE)
            transpose_tile(c->a, c->y, m, n, i0, i1, j0, j0 + TILE < n ? j0 + TILE : n);
    }
}

AVX512_KERNEL(transpose)
{
    cpu_run_ranges(state, call, (call->m + TILE - 1) / TILE, TILE * (call->n ? call->n : 1),
                   transpose_bands);
    return RAYO_OK;
}
