/* SPDX-License-Identifier: MIT */
/* reduce.c - sum, dot, max, min, argmax, norm_l1, norm_l2.
 *
 * Accuracy: the contract is 1e-5 relative to sum|terms| at any n (2^22 and
 * more).  A single float accumulator drifts by ~n * 2^-24, so sums are
 * blocked: LANES float accumulators (which the compiler turns into SIMD
 * lanes) over blocks of BLOCK elements, i.e. BLOCK / LANES = 32 terms per
 * lane, and the lanes and blocks are added in double.  The error is then
 * bounded by about 32 * 2^-24 ~ 2e-6 of sum|terms|, independent of n.
 *
 * Large vectors are split over the thread pool in chunks of whole blocks;
 * the partial results are added in task order.
 */
#include "plugin.h"

#include <math.h>

#define LANES 16
#define BLOCK 512

/* One block (n <= BLOCK) of sum(TERM(i)), i < n, returned in double. */
#define BLOCK_SUM(TERM)                                                    \
    float acc[LANES] = { 0 };                                              \
    size_t i = 0;                                                          \
    for (; i + LANES <= n; i += LANES)                                     \
        for (size_t l = 0; l < LANES; l++)                                 \
            acc[l] += TERM(i + l);                                         \
    float rest = 0.0f;                                                     \
    for (; i < n; i++)                                                     \
        rest += TERM(i);                                                   \
    double s = rest;                                                       \
    for (size_t l = 0; l < LANES; l++)                                     \
        s += acc[l];                                                       \
    return s;

#define TERM_SUM(i) x[i]
#define TERM_ABS(i) fabsf(x[i])
#define TERM_DOT(i) (a[i] * b[i])

static double block_sum(const float *x, size_t n) { BLOCK_SUM(TERM_SUM) }
static double block_abs_sum(const float *x, size_t n) { BLOCK_SUM(TERM_ABS) }
static double block_dot(const float *a, const float *b, size_t n) { BLOCK_SUM(TERM_DOT) }

/* Squares in double: |x| < FLT_MAX squared is < 1.2e77, and even 2^64 such
 * terms stay far below DBL_MAX, so no scaling pass is needed, and squares of
 * tiny (even subnormal) floats do not underflow either. */
double scalar_sum_squares_f64(const float *x, size_t n)
{
    double acc[LANES / 2] = { 0 };
    size_t i = 0;
    for (; i + LANES / 2 <= n; i += LANES / 2)
        for (size_t l = 0; l < LANES / 2; l++)
            acc[l] += (double)x[i + l] * (double)x[i + l];
    double s = 0.0;
    for (; i < n; i++)
        s += (double)x[i] * (double)x[i];
    for (size_t l = 0; l < LANES / 2; l++)
        s += acc[l];
    return s;
}

/* ---- max, min, argmax ----------------------------------------------------------
 * One vectorisable pass keeps per-lane extremes and a per-lane "saw NaN"
 * flag; NaN propagates (a NaN anywhere makes the result NaN).  want_max is
 * a constant wherever this is inlined: one loop each for max and min. */
static inline __attribute__((always_inline)) float better(float v, float best, int want_max)
{
    return want_max ? (v > best ? v : best) : (v < best ? v : best);
}

static inline __attribute__((always_inline)) float reduce_extreme(const float *x, size_t n, int want_max)
{
    const float start = want_max ? -INFINITY : INFINITY;
    float m[LANES];
    int nan[LANES] = { 0 };
    for (size_t l = 0; l < LANES; l++)
        m[l] = start;
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (size_t l = 0; l < LANES; l++) {
            float v = x[i + l];
            m[l] = better(v, m[l], want_max);
            nan[l] |= v != v;
        }
    float best = start;
    int any_nan = 0;
    for (; i < n; i++) {
        best = better(x[i], best, want_max);
        any_nan |= x[i] != x[i];
    }
    for (size_t l = 0; l < LANES; l++) {
        best = better(m[l], best, want_max);
        any_nan |= nan[l];
    }
    return any_nan ? NAN : best;
}

static size_t reduce_find_first(const float *x, size_t n, float value)
{
    size_t i = 0;
    if (value != value) {
        while (i < n && x[i] == x[i])
            i++;
    } else {
        while (i < n && x[i] != value)
            i++;
    }
    return i;
}

#define REDUCE_SPLIT CPU_SPLIT_PER_THREAD
#define REDUCE_BLOCK BLOCK
#define REDUCE_BLOCKED /* blocks overflowed in float are added again in double */
#define REDUCE_SQUARES scalar_sum_squares_f64
#include "cpu-reduce_tmpl.c"
