/* SPDX-License-Identifier: MIT */
/* rows.c - softmax, log_softmax, layernorm, rmsnorm (m independent rows of
 * n) and transpose of the AVX2 backend: ../cpu-base/x86-rows_tmpl.c at 8
 * floats a vector, on the norms' double arithmetic defined here.
 *
 * Accuracy: row statistics are accumulated in double where float would not
 * do (the mean of a layernorm row must be right relative to the row's
 * spread, not to its magnitude: think 1000 + 1e-3 noise), and the norms'
 * final expression is evaluated in double and rounded once.
 */
#include "plugin.h"
#include "avx2-vector.h"

/* Rows go parallel from calls of this many elements (avx2_run_items):
 * every row op is exp-heavy or two passes in double. */
#define ROWS_EXP_COST ((size_t)1 << 15)
#define ROWS_NORM_COST ROWS_EXP_COST

/* ---- layernorm, rmsnorm ----------------------------------------------------- */

/* The double sums of layernorm (cpu-row-sums_tmpl.c), 8 floats a step. */
#define ROW_SUMS_STEP 8
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

/* 8x8 transpose blocks in tiles of 32x32 floats (4 KiB read and 4 KiB
 * written, in L1); bands go parallel from this many elements. */
#define TRANSPOSE_COST ((size_t)1 << 18)
#include "x86-rows_tmpl.c"
