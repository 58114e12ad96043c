/* SPDX-License-Identifier: MIT */
/* gemv.c - y = alpha op(A) x + beta y (row-major A, rows x cols), also
 * matmul's path for m == 1 or n == 1.
 *
 * Accuracy at any length (contract 1e-5 of sum|terms|): float lanes add at
 * most 32 terms each before they go to double accumulators, as in
 * reduce.c, so the error does not grow with the length.
 *   not transposed: dot products of rows with x, four rows at a time (x is
 *                   loaded once for four); blocks of DOT_BLOCK elements;
 *   transposed:     rows of A streamed whole (what the prefetcher likes)
 *                   and accumulated four at a time into a strip of float
 *                   sums in L1, flushed to double totals every ROW_BLOCK rows.
 */
#include "plugin.h"
#include "avx512-math.h"

#include <string.h>

#define DOT_BLOCK 512     /* elements: 32 per lane of a 16-lane sum */
#define ROW_BLOCK 32      /* rows accumulated in float by the transposed gemv */
#define X86_GEMV_RUN avx512_gemv_run
#include "x86-gemv_tmpl.c"

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* out[r] += dot(row r of A, x) for `count` (1..4) rows, n <= DOT_BLOCK. */
static inline void dot_rows_block(const float *A, size_t lda, size_t count, const float *x, size_t n,
                                  double out[4])
{
    __m512 s[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 m = z_lanes(min_size(16, n - j));
        __m512 xv = _mm512_maskz_loadu_ps(m, x + j);
        for (size_t r = 0; r < count; r++)
            s[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, A + r * lda + j), xv, s[r]);
    }
    for (size_t r = 0; r < count; r++)
        out[r] += _mm512_reduce_add_pd(z_widen_add(_mm512_setzero_pd(), s[r]));
}

/* y[i] = alpha dot(A row i, x) + beta y[i] for rows [begin, end). */
static void gemv_rows(const gemv_job *job, size_t begin, size_t end)
{
    for (size_t i = begin; i < end; i += 4) {
        size_t count = min_size(4, end - i);
        double d[4] = { 0.0, 0.0, 0.0, 0.0 };
        const float *A = job->A + i * job->cols;
        for (size_t j = 0; j < job->cols; j += DOT_BLOCK) {
            size_t n = min_size(DOT_BLOCK, job->cols - j);
            if (count == 4)
                dot_rows_block(A + j, job->cols, 4, job->x + j, n, d); /* count constant: unrolled */
            else
                dot_rows_block(A + j, job->cols, count, job->x + j, n, d);
        }
        for (size_t r = 0; r < count; r++) /* a sum past FLT_MAX is redone (cpu-f64-fallback.h) */
            job->y[i + r] = finish(cpu_dot_redo(d[r], A + r * job->cols, 1, job->x, job->cols), job->alpha,
                                   job->beta, &job->y[i + r]);
    }
}

/* acc[0..w) += x[0] a0 + x[1] a1 + x[2] a2 + x[3] a3 (row segments):
 * whole vectors, then one masked step. */
static inline __m512 acc4_vec(__m512 s, const __m512 xv[4], const float *a0, const float *a1,
                              const float *a2, const float *a3, __mmask16 m)
{
    s = _mm512_fmadd_ps(xv[0], _mm512_maskz_loadu_ps(m, a0), s);
    s = _mm512_fmadd_ps(xv[1], _mm512_maskz_loadu_ps(m, a1), s);
    s = _mm512_fmadd_ps(xv[2], _mm512_maskz_loadu_ps(m, a2), s);
    return _mm512_fmadd_ps(xv[3], _mm512_maskz_loadu_ps(m, a3), s);
}

static void accumulate4(float *acc, const float *a0, const float *a1, const float *a2, const float *a3,
                        const float *x, size_t w)
{
    const __m512 xv[4] = { _mm512_set1_ps(x[0]), _mm512_set1_ps(x[1]), _mm512_set1_ps(x[2]),
                           _mm512_set1_ps(x[3]) };
    size_t j = 0;
    for (; j + 16 <= w; j += 16)
        _mm512_storeu_ps(acc + j, acc4_vec(_mm512_loadu_ps(acc + j), xv, a0 + j, a1 + j, a2 + j, a3 + j,
                                           0xffff));
    if (j < w) {
        __mmask16 m = z_lanes(w - j);
        _mm512_mask_storeu_ps(acc + j, m, acc4_vec(_mm512_maskz_loadu_ps(m, acc + j), xv, a0 + j, a1 + j,
                                                   a2 + j, a3 + j, m));
    }
}

static void accumulate1(float *acc, const float *a0, float x0, size_t w)
{
    const __m512 xv = _mm512_set1_ps(x0);
    size_t j = 0;
    for (; j + 16 <= w; j += 16)
        _mm512_storeu_ps(acc + j, _mm512_fmadd_ps(xv, _mm512_loadu_ps(a0 + j), _mm512_loadu_ps(acc + j)));
    if (j < w) {
        __mmask16 m = z_lanes(w - j);
        __m512 s = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m, a0 + j), _mm512_maskz_loadu_ps(m, acc + j));
        _mm512_mask_storeu_ps(acc + j, m, s);
    }
}

/* total[0..w) += acc[0..w) in double; acc = 0. */
static void flush_strip(double *total, float *acc, size_t w)
{
    size_t j = 0;
    for (; j + 8 <= w; j += 8) {
        __m512d t = _mm512_add_pd(_mm512_loadu_pd(total + j), _mm512_cvtps_pd(_mm256_loadu_ps(acc + j)));
        _mm512_storeu_pd(total + j, t);
        _mm256_storeu_ps(acc + j, _mm256_setzero_ps());
    }
    for (; j < w; j++) {
        total[j] += acc[j];
        acc[j] = 0.0f;
    }
}
