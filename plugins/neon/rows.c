/* SPDX-License-Identifier: MIT */
/* rows.c - softmax, log_softmax, layernorm, rmsnorm: m rows of n.
 *
 * Row statistics (sums, mean, variance) are accumulated in double, and the
 * normalising expressions are evaluated in double lanes and rounded once to
 * float: with |mean| >> stddev a float mean alone would cost more than the
 * 4e-6 contract.  The exponentials are float (neon_exp, a few ulp).  Rows run
 * on the pool when there are enough of them.  y may be x (in place): each
 * row is read completely before a write that could clobber what it needs.
 */
#include "plugin.h"
#include "neon-math.h"

#include <math.h>
#include <string.h>

#define COST_EXP 16 /* per element, in cheap operations */
#define COST_NORM 4

static inline void widen(float32x4_t v, float64x2_t *lo, float64x2_t *hi)
{
    *lo = vcvt_f64_f32(vget_low_f32(v));
    *hi = vcvt_high_f64_f32(v);
}

static inline float32x4_t narrow(float64x2_t lo, float64x2_t hi)
{
    return vcvt_high_f32_f64(vcvt_f32_f64(lo), hi);
}

/* The first k (< 4) floats of p, then `pad`. */
static inline float32x4_t load_padded(const float *p, size_t k, float pad)
{
    float t[4] = { pad, pad, pad, pad };
    memcpy(t, p, k * sizeof(float));
    return vld1q_f32(t);
}

/* Max-subtracted, so e^(x - max) <= 1 never overflows; a NaN in the row
 * makes the max NaN and so the whole row NaN, as in the reference. */
static void softmax_row(const float *x, float *y, size_t n)
{
    float32x4_t mx = vdupq_n_f32(neon_max_f32(x, n));
    size_t j = 0;
    for (; n - j >= 4; j += 4)
        vst1q_f32(y + j, vec_exp(vsubq_f32(vld1q_f32(x + j), mx)));
    if (j < n) {
        float t[4];
        vst1q_f32(t, vec_exp(vsubq_f32(load_padded(x + j, n - j, 0.0f), mx)));
        memcpy(y + j, t, (n - j) * sizeof(float));
    }
    float32x4_t inv = vdupq_n_f32((float)(1.0 / neon_sum_f64(y, n)));
    for (j = 0; n - j >= 4; j += 4)
        vst1q_f32(y + j, vmulq_f32(vld1q_f32(y + j), inv));
    for (; j < n; j++)
        y[j] *= vgetq_lane_f32(inv, 0);
}

/* acc += the four lanes of v, in double. */
static inline void add_f64(float64x2_t acc[2], float32x4_t v)
{
    float64x2_t lo, hi;
    widen(v, &lo, &hi);
    acc[0] = vaddq_f64(acc[0], lo);
    acc[1] = vaddq_f64(acc[1], hi);
}

/* sum of e^(x[j] - mx) in double lanes, without storing the terms (y may
 * be x).  Padding lanes hold -inf, whose term is 0. */
static double sum_exp_shifted(const float *x, size_t n, float32x4_t mx)
{
    float64x2_t acc[2] = { vdupq_n_f64(0.0), vdupq_n_f64(0.0) };
    size_t j = 0;
    for (; n - j >= 4; j += 4)
        add_f64(acc, vec_exp(vsubq_f32(vld1q_f32(x + j), mx)));
    if (j < n)
        add_f64(acc, vec_exp(vsubq_f32(load_padded(x + j, n - j, -__builtin_inff()), mx)));
    return vaddvq_f64(vaddq_f64(acc[0], acc[1]));
}

/* y = x - (max + log sum e^(x - max)), the subtraction in double. */
/* y = (x - max) - log(sum), in that order: max + log(sum) as one shift
 * would lose log(sum) against a large max (a constant row of 1e30).  x - max
 * and y have the same sign and |x - max| <= |y|: each float rounding costs
 * at most 2^-24 |y|. */
static void log_softmax_row(const float *x, float *y, size_t n)
{
    float m = neon_max_f32(x, n);
    float32x4_t mx = vdupq_n_f32(m);
    float log_sum = (float)log(sum_exp_shifted(x, n, mx));
    float32x4_t l = vdupq_n_f32(log_sum);
    size_t j = 0;
    for (; n - j >= 4; j += 4)
        vst1q_f32(y + j, vsubq_f32(vsubq_f32(vld1q_f32(x + j), mx), l));
    for (; j < n; j++)
        y[j] = (x[j] - m) - log_sum;
}

/* y = (x - center) * rstd [* gamma] [+ beta], in double; gamma, beta may be
 * NULL. */
static void normalize_row(const float *x, const float *gamma, const float *beta, float *y,
                      size_t n, double center, double rstd)
{
    const float64x2_t c = vdupq_n_f64(center), r = vdupq_n_f64(rstd);
    size_t j = 0;
    for (; n - j >= 4; j += 4) {
        float64x2_t lo, hi;
        widen(vld1q_f32(x + j), &lo, &hi);
        lo = vmulq_f64(vsubq_f64(lo, c), r);
        hi = vmulq_f64(vsubq_f64(hi, c), r);
        if (gamma) {
            float64x2_t glo, ghi;
            widen(vld1q_f32(gamma + j), &glo, &ghi);
            lo = vmulq_f64(lo, glo);
            hi = vmulq_f64(hi, ghi);
        }
        if (beta) {
            float64x2_t blo, bhi;
            widen(vld1q_f32(beta + j), &blo, &bhi);
            lo = vaddq_f64(lo, blo);
            hi = vaddq_f64(hi, bhi);
        }
        vst1q_f32(y + j, narrow(lo, hi));
    }
    for (; j < n; j++) {
        double v = ((double)x[j] - center) * rstd;
        if (gamma)
            v *= gamma[j];
        if (beta)
            v += beta[j];
        y[j] = (float)v;
    }
}

/* ---- the double sums of layernorm ------------------------------------------ */
#define VD float64x2_t
#define ROW_SUMS_STEP 4
#define vd_zero() vdupq_n_f64(0.0)
#define vd_set vdupq_n_f64
#define vd_add vaddq_f64
#define vd_sub vsubq_f64
#define vd_fma(a, b, acc) vfmaq_f64(acc, a, b)
#define vd_hsum vaddvq_f64
static inline void row_sums_widen(const float *x, VD *lo, VD *hi)
{
    widen(vld1q_f32(x), lo, hi);
}
#include "cpu-row-sums_tmpl.c"

/* ---- kernels: the row functions above over the call's m rows ---------------- */
#define ROWS_EXP_COST COST_EXP
#define ROWS_NORM_COST COST_NORM
#include "cpu-rows_tmpl.c"
