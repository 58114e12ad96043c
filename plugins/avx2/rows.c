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

#define ROWS_PARALLEL_WORK ((size_t)1 << 15) /* elements of exp-heavy work */

/* Rows are parallel once rows * cols * cost is large enough, and there are rows to share. */
static void run_rows(const avx2_state *st, const rayo_call *call, size_t cost, avx2_range_fn *fn)
{
    size_t per_row = call->n * cost;
    if (per_row == 0)
        per_row = 1;
    size_t min_rows = (ROWS_PARALLEL_WORK + per_row - 1) / per_row;
    avx2_run_ranges(st, call, call->m, min_rows < 2 ? 2 : min_rows, 1, fn);
}

/* ---- softmax, log_softmax -------------------------------------------------- */

/* y[j] = exp(x[j] - mx) (y may be x); returns sum of y in double (float lanes
 * within blocks of 1024 elements, double across blocks). */
static double exp_shifted_store(const float *x, float *y, size_t n, float mx)
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
            _mm256_storeu_ps(y + j, e0);
            _mm256_storeu_ps(y + j + 8, e1);
            acc0 = _mm256_add_ps(acc0, e0);
            acc1 = _mm256_add_ps(acc1, e1);
        }
        for (; j < block_end; j += 8) {
            size_t count = block_end - j < 8 ? block_end - j : 8;
            __m256i m = v_lane_mask(count);
            __m256 e = v_exp(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), shift));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(m));    /* unused lanes add 0 */
            _mm256_maskstore_ps(y + j, m, e);
            acc0 = _mm256_add_ps(acc0, e);
        }
        total = v_widen_add(total, _mm256_add_ps(acc0, acc1));
    }
    return v_hsum_pd(total);
}

/* The same sum without storing the terms (log_softmax needs x afterwards). */
static double exp_shifted_sum(const float *x, size_t n, float mx)
{
    const __m256 shift = _mm256_set1_ps(mx);
    __m256d total = _mm256_setzero_pd();
    size_t j = 0;
    while (j < n) {
        size_t block_end = n - j > 1024 ? j + 1024 : n;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
        for (; j + 16 <= block_end; j += 16) {
            acc0 = _mm256_add_ps(acc0, v_exp(_mm256_sub_ps(_mm256_loadu_ps(x + j), shift)));
            acc1 = _mm256_add_ps(acc1, v_exp(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), shift)));
        }
        for (; j < block_end; j += 8) {
            size_t count = block_end - j < 8 ? block_end - j : 8;
            __m256i m = v_lane_mask(count);
            __m256 e = v_exp(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), shift));
            acc0 = _mm256_add_ps(acc0, _mm256_and_ps(e, _mm256_castsi256_ps(m)));
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
    double sum = exp_shifted_store(x, y, n, mx);
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
    const __m256 vlog = _mm256_set1_ps((float)log(exp_shifted_sum(x, n, mx)));
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(y + j, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vmx), vlog));
    if (j < n) {
        __m256i m = v_lane_mask(n - j);
        __m256 v = _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), vmx), vlog);
        _mm256_maskstore_ps(y + j, m, v);
    }
}

static void softmax_range(const cpu_state *st, const rayo_call *c, size_t begin, size_t end)
{
    (void)st;
    for (size_t i = begin; i < end; i++)
        softmax_row((const float *)c->a + i * c->n, (float *)c->y + i * c->n, c->n);
}

static void log_softmax_range(const cpu_state *st, const rayo_call *c, size_t begin, size_t end)
{
    (void)st;
    for (size_t i = begin; i < end; i++)
        log_softmax_row((const float *)c->a + i * c->n, (float *)c->y + i * c->n, c->n);
}

AVX2_KERNEL(softmax)
{
    run_rows(state, call, 1, softmax_range);
    return RAYO_OK;
}

AVX2_KERNEL(log_softmax)
{
    run_rows(state, call, 1, log_softmax_range);
    return RAYO_OK;
}

/* ---- layernorm, rmsnorm ----------------------------------------------------- */

/* sum of x in double: exact for any row a float could hold the mean of. */
static double row_sum_f64(const float *x, size_t n)
{
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0;
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm_loadu_ps(x + j)));
        acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm_loadu_ps(x + j + 4)));
    }
    double s = v_hsum_pd(_mm256_add_pd(acc0, acc1));
    for (; j < n; j++)
        s += x[j];
    return s;
}

/* sum of (x - mean)^2 in double: the second pass of a two-pass variance. */
static double row_centered_squares_f64(const float *x, size_t n, double mean)
{
    const __m256d mu = _mm256_set1_pd(mean);
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0;
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), mu);
        __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j + 4)), mu);
        acc0 = _mm256_fmadd_pd(d0, d0, acc0);
        acc1 = _mm256_fmadd_pd(d1, d1, acc1);
    }
    double s = v_hsum_pd(_mm256_add_pd(acc0, acc1));
    for (; j < n; j++)
        s += ((double)x[j] - mean) * ((double)x[j] - mean);
    return s;
}

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

/* 1 / sqrt(var + eps), and 0 where var + eps = 0 (rayo-ops.h: the
 * normalised value of a constant row with eps = 0 is 0, not 0 * inf);
 * a NaN in the row stays NaN, so the whole row comes out NaN. */
static double inverse_std(double var_plus_eps)
{
    return var_plus_eps == 0 ? 0.0 : 1.0 / sqrt(var_plus_eps);
}

static void layernorm_range(const cpu_state *st, const rayo_call *c, size_t begin, size_t end)
{
    (void)st;
    size_t n = c->n;
    for (size_t i = begin; i < end; i++) {
        const float *x = (const float *)c->a + i * n;
        double mean = row_sum_f64(x, n) / (double)n;
        double var = row_centered_squares_f64(x, n, mean) / (double)n;
        normalize_row(x, c->b, c->c, (float *)c->y + i * n, n, mean, inverse_std(var + (double)c->alpha));
    }
}

static void rmsnorm_range(const cpu_state *st, const rayo_call *c, size_t begin, size_t end)
{
    (void)st;
    size_t n = c->n;
    for (size_t i = begin; i < end; i++) {
        const float *x = (const float *)c->a + i * n;
        double mean_square = avx2_sum_squares_f64(x, n) / (double)n;
        normalize_row(x, c->b, NULL, (float *)c->y + i * n, n, 0.0,
                      inverse_std(mean_square + (double)c->alpha));
    }
}

AVX2_KERNEL(layernorm)
{
    run_rows(state, call, 1, layernorm_range);
    return RAYO_OK;
}

AVX2_KERNEL(rmsnorm)
{
    run_rows(state, call, 1, rmsnorm_range);
    return RAYO_OK;
}

/* ---- transpose: y (n x m) = a (m x n)^T ------------------------------------- */

/* 8x8 block: rows of a (stride lda) become columns of y (stride ldy). */
static inline void transpose8x8(const float *a, size_t lda, float *y, size_t ldy)
{
    __m256 r[8];
    for (int k = 0; k < 8; k++)
        r[k] = _mm256_loadu_ps(a + k * lda);
    v_transpose8x8(r);
    for (int k = 0; k < 8; k++)
        _mm256_storeu_ps(y + k * ldy, r[k]);
}

#define TILE 32 /* 32x32 floats: 4 KiB read and 4 KiB written per tile, in L1 */

static void transpose_tile(const float *a, float *y, size_t m, size_t n, size_t i0, size_t i1,
                           size_t j0, size_t j1)
{
    size_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        size_t j = j0;
        for (; j + 8 <= j1; j += 8)
            transpose8x8(a + i * n + j, n, y + j * m + i, m);
        for (; j < j1; j++)
            for (size_t k = i; k < i + 8; k++)
                y[j * m + k] = a[k * n + j];
    }
    for (; i < i1; i++)
        for (size_t j = j0; j < j1; j++)
            y[j * m + i] = a[i * n + j];
}

/* Items are bands of TILE rows of a. */
static void transpose_range(const cpu_state *st, const rayo_call *c, size_t begin, size_t end)
{
    (void)st;
    size_t m = c->m, n = c->n;
    for (size_t band = begin; band < end; band++) {
        size_t i0 = band * TILE, i1 = i0 + TILE < m ? i0 + TILE : m;
        for (size_t j0 = 0; j0 < n; j0 += TILE)
            transpose_tile(c->a, c->y, m, n, i0, i1, j0, j0 + TILE < n ? j0 + TILE : n);
    }
}

AVX2_KERNEL(transpose)
{
    const avx2_state *st = state;
    size_t bands = (call->m + TILE - 1) / TILE;
    size_t per_band = TILE * (call->n ? call->n : 1);
    size_t min_bands = ((size_t)1 << 18) / per_band;
    avx2_run_ranges(st, call, bands, min_bands < 2 ? 2 : min_bands, 1, transpose_range);
    return RAYO_OK;
}
