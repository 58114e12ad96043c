/* SPDX-License-Identifier: MIT */
/* reduce.c - sum, dot, max, min, argmax, norm_l1, norm_l2.
 *
 * Sums are blocked: 16 float lanes accumulate a block of 256 elements (16
 * terms per lane, so at most ~1e-6 * sum|terms| of rounding), then each block
 * is added in double.  norm_l2 squares in double, so no |x| < FLT_MAX can
 * overflow.  Long vectors are cut into chunks summed on the core's pool; the
 * chunking depends on n only, so a result does not depend on the number of
 * threads.  max/min use FMAX/FMIN, which propagate NaN as the contract asks.
 */
#include "plugin.h"
#include "neon-math.h"

#include <math.h>
#include <string.h>

#define SUM_BLOCK 256

static inline double hsum_f64(float32x4_t v)
{
    float64x2_t lo = vcvt_f64_f32(vget_low_f32(v));
    float64x2_t hi = vcvt_high_f64_f32(v);
    return vaddvq_f64(vaddq_f64(lo, hi));
}

/* The first k (< 4) floats of p, then `pad` in the other lanes. */
static inline float32x4_t load_padded(const float *p, size_t k, float pad)
{
    float t[4] = { pad, pad, pad, pad };
    memcpy(t, p, k * sizeof(float));
    return vld1q_f32(t);
}

/* A function summing one block (n <= SUM_BLOCK) of TERM(s, i), the float
 * vector s plus the elements i..i+3, in float lanes; TERM_PARTIAL(s, i, k)
 * is the same for the last k < 4 elements (zeros past n).  A block whose
 * lanes overflowed is added again in double by cpu-reduce_tmpl.c. */
#define BLOCK_SUM_FN(name, PARAMS, TERM, TERM_PARTIAL)                          \
    static double name PARAMS                                                  \
    {                                                                          \
        float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;         \
        size_t i = 0;                                                          \
        for (; n - i >= 16; i += 16) {                                         \
            s0 = TERM(s0, i);                                                  \
            s1 = TERM(s1, i + 4);                                              \
            s2 = TERM(s2, i + 8);                                              \
            s3 = TERM(s3, i + 12);                                             \
        }                                                                      \
        for (; n - i >= 4; i += 4)                                             \
            s0 = TERM(s0, i);                                                  \
        if (i < n)                                                             \
            s1 = TERM_PARTIAL(s1, i, n - i);                                   \
        return hsum_f64(s0) + hsum_f64(s1) + hsum_f64(s2) + hsum_f64(s3);      \
    }

#define TERM_SUM(s, i) vaddq_f32(s, vld1q_f32(x + (i)))
#define TERM_SUM_PARTIAL(s, i, k) vaddq_f32(s, load_padded(x + (i), k, 0.0f))
#define TERM_ABS(s, i) vaddq_f32(s, vabsq_f32(vld1q_f32(x + (i))))
#define TERM_ABS_PARTIAL(s, i, k) vaddq_f32(s, vabsq_f32(load_padded(x + (i), k, 0.0f)))
#define TERM_DOT(s, i) vfmaq_f32(s, vld1q_f32(a + (i)), vld1q_f32(b + (i)))
#define TERM_DOT_PARTIAL(s, i, k) vfmaq_f32(s, load_padded(a + (i), k, 0.0f), load_padded(b + (i), k, 0.0f))

BLOCK_SUM_FN(block_sum, (const float *x, size_t n), TERM_SUM, TERM_SUM_PARTIAL)
BLOCK_SUM_FN(block_abs_sum, (const float *x, size_t n), TERM_ABS, TERM_ABS_PARTIAL)
BLOCK_SUM_FN(block_dot, (const float *a, const float *b, size_t n), TERM_DOT, TERM_DOT_PARTIAL)

/* Sum of squares in double lanes: x^2 of any float fits a double. */
double neon_sum_squares_f64(const float *x, size_t n)
{
    float64x2_t s0 = vdupq_n_f64(0.0), s1 = s0;
    size_t i = 0;
    for (; n - i >= 4; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        float64x2_t lo = vcvt_f64_f32(vget_low_f32(v)), hi = vcvt_high_f64_f32(v);
        s0 = vfmaq_f64(s0, lo, lo);
        s1 = vfmaq_f64(s1, hi, hi);
    }
    double total = vaddvq_f64(vaddq_f64(s0, s1));
    for (; i < n; i++)
        total += (double)x[i] * (double)x[i];
    return total;
}

/* NaN-propagating max/min of x[0..n) (vmaxq/vminq propagate NaN), -inf /
 * +inf for n == 0; want_max is a constant wherever this is inlined. */
static inline __attribute__((always_inline)) float reduce_extreme(const float *x, size_t n, int want_max)
{
    if (n == 0)
        return want_max ? -INFINITY : INFINITY;
#define PICK(m, v) (want_max ? vmaxq_f32(m, v) : vminq_f32(m, v))
    float32x4_t m0 = vdupq_n_f32(x[0]), m1 = m0;
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        m0 = PICK(m0, vld1q_f32(x + i));
        m1 = PICK(m1, vld1q_f32(x + i + 4));
    }
    for (; n - i >= 4; i += 4)
        m0 = PICK(m0, vld1q_f32(x + i));
    if (i < n)
        m1 = PICK(m1, load_padded(x + i, n - i, x[0]));
    return want_max ? vmaxvq_f32(PICK(m0, m1)) : vminvq_f32(PICK(m0, m1));
#undef PICK
}

/* Index of the first element equal to `target` (NaN: the first NaN). */
static size_t reduce_find_first(const float *x, size_t n, float target)
{
    int want_nan = target != target;
    float32x4_t t = vdupq_n_f32(target);
    size_t i = 0;
    for (; n - i >= 4; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        uint32x4_t hit = want_nan ? vmvnq_u32(vceqq_f32(v, v)) : vceqq_f32(v, t);
        if (vmaxvq_u32(hit))
            break;
    }
    for (; i < n; i++)
        if (want_nan ? x[i] != x[i] : x[i] == target)
            return i;
    return n; /* not reached: target is an element of x */
}

#define REDUCE_SPLIT CPU_SPLIT_BY_SIZE /* the same result on any pool */
#define REDUCE_BLOCK SUM_BLOCK
#define REDUCE_BLOCKED
#define REDUCE_SQUARES neon_sum_squares_f64
#include "cpu-reduce_tmpl.c"
