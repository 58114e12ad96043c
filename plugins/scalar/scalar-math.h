/* SPDX-License-Identifier: MIT */
/* scalar-math.h - float exp, expm1, log, tanh and erfc in portable C that
 * compilers vectorise (not installed; included by the kernels).
 *
 * libm's expf/tanhf/erff are correct but opaque calls: a loop of them runs
 * one element at a time, and the branches around them mispredict on mixed
 * signs (5-30 ns per element here).  These versions use only arithmetic,
 * integer bit operations and branch-free selections (pick), so a loop of
 * them becomes SIMD code at -O2 on any target with vectors.
 *
 * Accuracy (checked against float64 over dense sweeps and every special
 * value by the harness and rayo-conform): a few ulp, well inside the 2e-6
 * relative contracts of rayo-ops.h.  NaN in gives NaN out; overflow and
 * underflow saturate to inf and 0 as libm does.
 */
#ifndef RAYO_SCALAR_MATH_H
#define RAYO_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rayo-dtype.h" /* rayo_f32_bits, rayo_f32_from_bits */

/* cond ? a : b, as a bit blend.  A plain ?: is no worse in itself, but with
 * constant operands gcc threads jumps through it and the arithmetic that
 * follows ends up under a branch, which stops vectorisation. */
static inline float pick(int cond, float a, float b)
{
    uint32_t mask = (uint32_t)0 - (uint32_t)(cond != 0);
    return rayo_f32_from_bits((rayo_f32_bits(a) & mask) | (rayo_f32_bits(b) & ~mask));
}

static inline double pick_double(int cond, double a, double b)
{
    uint64_t mask = (uint64_t)0 - (uint64_t)(cond != 0), ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    ua = (ua & mask) | (ub & ~mask);
    memcpy(&a, &ua, sizeof a);
    return a;
}

/* min(max(x, lo), hi); NaN stays NaN. */
static inline float clamp(float x, float lo, float hi)
{
    x = pick(x < lo, lo, x);
    return pick(x > hi, hi, x);
}

/* 2^k for an integer-valued float k in [-126, 127]. */
static inline float pow2_int(float k)
{
    return rayo_f32_from_bits((uint32_t)((int32_t)k + 127) << 23);
}

#define MATH_LOG2E 1.44269504f
#define MATH_LN2_HI 0.693359375f    /* 9 significant bits: k * LN2_HI is exact */
#define MATH_LN2_LO -2.12194440e-4f /* ln 2 - LN2_HI */
#define MATH_ROUNDER 12582912.0f    /* 1.5 * 2^23: (x + R) - R rounds x to an integer */

/* x = k ln 2 + r, |r| <= ln2 / 2 (Cody-Waite).  NaN x gives k = 0, r = NaN. */
static inline float reduce_ln2(float x, float *k)
{
    float finite = pick(x != x, 0.0f, x);
    *k = (finite * MATH_LOG2E + MATH_ROUNDER) - MATH_ROUNDER;
    return (x - *k * MATH_LN2_HI) - *k * MATH_LN2_LO;
}

/* e^r - 1 for |r| <= ln2 / 2: Taylor to degree 7 (truncation < 6e-9). */
static inline float expm1_reduced(float r)
{
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    return r + r * r * p;
}

static inline float exp_f(float x)
{
    float k;
    float r = reduce_ln2(clamp(x, -104.0f, 89.0f), &k);
    float p = 1.0f + expm1_reduced(r);
    /* 2^k in two factors: k spans [-150, 129], beyond one exponent field;
     * the second product rounds subnormal results once, or overflows. */
    float k1 = (k * 0.5f + MATH_ROUNDER) - MATH_ROUNDER;
    return p * pow2_int(k1) * pow2_int(k - k1);
}

/* e^x rounded once from double: the exp op's contract has no absolute
 * slack, so results in the subnormal range (x < -87.3) must round right,
 * which exp_f's few-ulp error does not guarantee.  Same reduction in double,
 * Taylor to degree 10 (truncation < 3e-13); still vectorises, at 2 lanes. */
static inline float exp_rounded(float x)
{
    const double rounder = 6755399441055744.0; /* 1.5 * 2^52 */
    const double ln2_hi = 0.693147180369123816490, ln2_lo = 1.90821492927058770002e-10;
    double xd = clamp(x, -104.0f, 89.0f);
    double finite = pick_double(xd == xd, xd, 0.0);
    double shifted = finite * 1.44269504088896340736 + rounder;
    double k = shifted - rounder;
    double r = (xd - k * ln2_hi) - k * ln2_lo;
    double p = 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    uint64_t kbits, rbits;
    memcpy(&kbits, &shifted, sizeof kbits);
    memcpy(&rbits, &rounder, sizeof rbits);
    uint64_t scale_bits = (kbits - rbits + 1023u) << 52; /* 2^k, k in [-150, 129] */
    double scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    return (float)(p * scale);
}

/* e^x - 1 without cancellation near 0: 2^k (e^r - 1) + (2^k - 1). */
static inline float expm1_f(float x)
{
    float k;
    float r = reduce_ln2(clamp(x, -30.0f, 88.0f), &k); /* e^-30 is below 1 ulp of 1 */
    float s = pow2_int(k);
    return s * expm1_reduced(r) + (s - 1.0f);
}

/* log x = e ln 2 + log m, m in [sqrt(1/2), sqrt 2); log m = 2 atanh(s) with
 * s = (m - 1) / (m + 1), |s| <= 0.172: odd series to s^11 (error < 3e-9). */
static inline float log_f(float x)
{
    int subnormal = x < 1.17549435e-38f;
    float xs = pick(subnormal, x * 8388608.0f, x); /* * 2^23: normal again */
    uint32_t u = rayo_f32_bits(xs);
    float e = (float)((int32_t)((u >> 23) & 0xffu) - 127) - pick(subnormal, 23.0f, 0.0f);
    float m = rayo_f32_from_bits((u & 0x007fffffu) | 0x3f800000u); /* [1, 2) */
    int high = m > 1.41421356f;
    m = pick(high, 0.5f * m, m);
    e = e + pick(high, 1.0f, 0.0f);
    float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
    float p = 1.0f / 11.0f;
    p = p * s2 + 1.0f / 9.0f;
    p = p * s2 + 1.0f / 7.0f;
    p = p * s2 + 1.0f / 5.0f;
    p = p * s2 + 1.0f / 3.0f;
    float log_m = 2.0f * s + 2.0f * s * s2 * p;
    float y = e * MATH_LN2_HI + (log_m + e * MATH_LN2_LO);
    y = pick(x == 0.0f, -INFINITY, y);
    y = pick(x < 0.0f, NAN, y);
    y = pick(x == INFINITY, INFINITY, y);
    return pick(x != x, x, y);
}

/* tanh |x| = expm1(2|x|) / (expm1(2|x|) + 2): no cancellation for small x;
 * past |x| = 9 it is 1 in float.  The sign is copied from x. */
static inline float tanh_f(float x)
{
    float a = rayo_f32_from_bits(rayo_f32_bits(x) & 0x7fffffffu);
    float em = expm1_f(2.0f * clamp(a, 0.0f, 9.0f));
    float t = em / (em + 2.0f);
    return rayo_f32_from_bits(rayo_f32_bits(t) | (rayo_f32_bits(x) & 0x80000000u));
}

/* erfc z for z >= 0 (NaN stays NaN) as t e^(-z^2 + P(t)), t = 1 / (1 + z/2).
 * P is our least-squares fit on Chebyshev nodes over z in [0, 12] of
 * log(erfc(z) / t) + z^2 (relative error of the form < 6e-8), the form
 * that keeps relative accuracy in the tail where erfc is tiny. */
static inline float erfc_f(float z)
{
    float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.157751014f;
    p = p * t - 0.750181579f;
    p = p * t + 1.31865295f;
    p = p * t - 0.909740677f;
    p = p * t + 0.0943214303f;
    p = p * t - 0.0902556602f;
    p = p * t + 0.0652326513f;
    p = p * t + 0.380354122f;
    p = p * t + 0.999348078f;
    p = p * t - 1.26548227f;
    return t * exp_f(p - z * z);
}

/* The activations that elementwise.c and the gated units of infer.c share. */
/* x * sigmoid(x) as x / (1 + e^-x): one rounding less than the product;
 * for x -> -inf the quotient goes to -0 as the reference does. */
static inline float silu1(float x)
{
    return x / (1.0f + exp_f(-x));
}

/* x * Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2.  For x < 0 that is erfc of a
 * positive argument, accurate relative to the tiny result; for x >= 0,
 * 1 - erfc(x / sqrt 2) / 2 has no cancellation (erfc <= 1). */
static inline float gelu1(float x)
{
    const float inv_sqrt2 = 0.70710678118654752f;
    float half_tail = 0.5f * erfc_f(fabsf(x) * inv_sqrt2);
    return x * pick(x >= 0.0f, 1.0f - half_tail, half_tail);
}

/* x * (1 + tanh(u)) / 2 = x * sigmoid(2u) = x / (1 + e^-2u): no cancellation
 * in the left tail, no overflow (e^-2u = inf gives -0). */
static inline float gelu_tanh1(float x)
{
    const float sqrt_2_over_pi = 0.79788456080286536f;
    float u = sqrt_2_over_pi * (x + 0.044715f * x * x * x);
    return x / (1.0f + exp_f(-2.0f * u));
}

#endif
