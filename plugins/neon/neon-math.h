/* SPDX-License-Identifier: MIT */
/* neon-math.h - vector math (vec_*) for the neon backend: exp, expm1, log, and the
 * activations built on them, four floats at a time.
 *
 * Accuracy: every function here stays within a few ulp (a few 1e-7
 * relative) of the float64 result, well inside the contracts of rayo-ops.h
 * (2e-6).  NaN/Inf behave as the scalar backend's one-element functions
 * (plugins/scalar/elementwise.c), which follow the float64 reference: the
 * functions are written as the same formulas so special values take the same
 * path.  AArch64's FMAX/FMIN (vmaxq_f32/vminq_f32) return NaN when either
 * input is NaN, which the clamps below rely on to carry NaN through.
 *
 * Polynomials: expm1 uses its Taylor series (exact coefficients 1/k!);
 * the erf/erfc pieces of gelu were fitted for this file with mpmath's
 * chebyfit (near-minimax), the errors noted next to them.
 */
#ifndef RAYO_NEON_MATH_H
#define RAYO_NEON_MATH_H

#include <arm_neon.h>
#include <string.h>

#define NEON_LOG2E 1.44269504088896341f
/* ln 2 split for Cody-Waite reduction: LN2_HI = (float)ln2, LN2_LO = the rest. */
#define NEON_LN2_HI 0.693147182464599609375f
#define NEON_LN2_LO (-1.904654299957768e-09f)

static inline float32x4_t vec_splat(float v)
{
    return vdupq_n_f32(v);
}

/* mask ? a : b */
static inline float32x4_t vec_select(uint32x4_t mask, float32x4_t a, float32x4_t b)
{
    return vbslq_f32(mask, a, b);
}

/* 2^n for integer n in [-126, 127], built in the exponent field. */
static inline float32x4_t vec_pow2i(int32x4_t n)
{
    return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23));
}

/* x = n ln2 + r with |r| <= ln2/2 (x already clamped to a finite range). */
static inline float32x4_t vec_exp_reduce(float32x4_t x, int32x4_t *n_out)
{
    float32x4_t n = vrndnq_f32(vmulq_f32(x, vec_splat(NEON_LOG2E)));
    float32x4_t r = vfmsq_f32(x, n, vec_splat(NEON_LN2_HI));
    r = vfmsq_f32(r, n, vec_splat(NEON_LN2_LO));
    *n_out = vcvtq_s32_f32(n);
    return r;
}

/* expm1(r) for |r| <= ln2/2: Taylor to r^8 (the r^9 term is < 6e-10 r),
 * written as r + r^2 q(r) so small r keep full relative precision. */
static inline float32x4_t vec_expm1_poly(float32x4_t r)
{
    float32x4_t q = vec_splat(1.0f / 40320.0f);
    q = vfmaq_f32(vec_splat(1.0f / 5040.0f), q, r);
    q = vfmaq_f32(vec_splat(1.0f / 720.0f), q, r);
    q = vfmaq_f32(vec_splat(1.0f / 120.0f), q, r);
    q = vfmaq_f32(vec_splat(1.0f / 24.0f), q, r);
    q = vfmaq_f32(vec_splat(1.0f / 6.0f), q, r);
    q = vfmaq_f32(vec_splat(0.5f), q, r);
    return vfmaq_f32(r, vmulq_f32(r, r), q);
}

/* e^x.  x is clamped to [-104, 89]: beyond, the result is 0 or inf anyway.
 * 2^n is applied in two halves so that n in [-150, 128] never leaves the
 * normal range: results that overflow give inf, subnormal results are
 * rounded once, by the last multiplication. */
static inline float32x4_t vec_exp(float32x4_t x)
{
    x = vminq_f32(vmaxq_f32(x, vec_splat(-104.0f)), vec_splat(89.0f));
    int32x4_t n;
    float32x4_t p = vec_expm1_poly(vec_exp_reduce(x, &n));
    int32x4_t n1 = vshrq_n_s32(n, 1);
    float32x4_t s1 = vec_pow2i(n1), s2 = vec_pow2i(vsubq_s32(n, n1));
    return vmulq_f32(vfmaq_f32(s1, s1, p), s2);
}

/* e^x - 1 for x <= 88 (callers: elu, selu, tanh; larger x is not used).
 * Below -30 the result is -1 in float.  2^n p + (2^n - 1) keeps the relative
 * precision of p when n = 0 (|x| < ln2/2), where e^x - 1 would cancel. */
static inline float32x4_t vec_expm1(float32x4_t x)
{
    x = vminq_f32(vmaxq_f32(x, vec_splat(-30.0f)), vec_splat(88.0f));
    int32x4_t n;
    float32x4_t p = vec_expm1_poly(vec_exp_reduce(x, &n));
    float32x4_t s = vec_pow2i(n);
    return vfmaq_f32(vsubq_f32(s, vec_splat(1.0f)), s, p);
}

/* log(x).  x = 2^e m with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s) with
 * s = (m - 1) / (m + 1), |s| < 0.172, as 2s + 2s z R(z), z = s^2: the series
 * to z^4 leaves < 2e-9 relative.  Subnormal x are scaled by 2^23 first.
 * Then the libm special cases: log(+-0) = -inf, log(x < 0) = NaN,
 * log(inf) = inf, log(NaN) = NaN. */
static inline float32x4_t vec_log(float32x4_t x)
{
    uint32x4_t tiny = vcltq_f32(x, vec_splat(1.17549435e-38f));
    float32x4_t xs = vec_select(tiny, vmulq_f32(x, vec_splat(8388608.0f)), x);
    int32x4_t bias = vbslq_s32(tiny, vdupq_n_s32(23), vdupq_n_s32(0));

    const int32x4_t sqrt_half_bits = vdupq_n_s32(0x3f3504f3);
    int32x4_t bits = vreinterpretq_s32_f32(xs);
    int32x4_t e = vshrq_n_s32(vsubq_s32(bits, sqrt_half_bits), 23);
    float32x4_t m = vreinterpretq_f32_s32(vsubq_s32(bits, vshlq_n_s32(e, 23)));
    float32x4_t ef = vcvtq_f32_s32(vsubq_s32(e, bias));

    float32x4_t f = vsubq_f32(m, vec_splat(1.0f)); /* exact: m in [0.707, 1.414) */
    float32x4_t s = vdivq_f32(f, vaddq_f32(f, vec_splat(2.0f)));
    float32x4_t z = vmulq_f32(s, s);
    float32x4_t r = vec_splat(1.0f / 11.0f);
    r = vfmaq_f32(vec_splat(1.0f / 9.0f), r, z);
    r = vfmaq_f32(vec_splat(1.0f / 7.0f), r, z);
    r = vfmaq_f32(vec_splat(1.0f / 5.0f), r, z);
    r = vfmaq_f32(vec_splat(1.0f / 3.0f), r, z);
    float32x4_t s2 = vaddq_f32(s, s);
    float32x4_t log_m = vfmaq_f32(s2, vmulq_f32(s2, z), r);
    float32x4_t y = vfmaq_f32(vfmaq_f32(log_m, ef, vec_splat(NEON_LN2_LO)), ef,
                              vec_splat(NEON_LN2_HI));

    y = vec_select(vceqq_f32(x, vec_splat(0.0f)), vec_splat(-__builtin_inff()), y);
    y = vec_select(vcltq_f32(x, vec_splat(0.0f)), vec_splat(__builtin_nanf("")), y);
    y = vec_select(vceqq_f32(x, vec_splat(__builtin_inff())), x, y);
    return vec_select(vceqq_f32(x, x), y, x); /* NaN in, the same NaN out */
}

/* 1 / (1 + e^-x): -inf gives 0, +inf gives 1, no overflow trouble. */
static inline float32x4_t vec_sigmoid(float32x4_t x)
{
    return vdivq_f32(vec_splat(1.0f), vaddq_f32(vec_splat(1.0f), vec_exp(vnegq_f32(x))));
}

/* x / (1 + e^-x), the scalar backend's formula (silu(-inf) = NaN as there). */
static inline float32x4_t vec_silu(float32x4_t x)
{
    return vdivq_f32(x, vaddq_f32(vec_splat(1.0f), vec_exp(vnegq_f32(x))));
}

/* tanh |x| = t / (t + 2) with t = expm1(2|x|): no cancellation near 0.
 * Past |x| = 9, tanh is within 3e-8 of 1, so |x| is clamped there; the sign
 * is copied back (tanh(-0) = -0). */
static inline float32x4_t vec_tanh(float32x4_t x)
{
    float32x4_t ax = vminq_f32(vabsq_f32(x), vec_splat(9.0f));
    float32x4_t t = vec_expm1(vaddq_f32(ax, ax));
    float32x4_t y = vdivq_f32(t, vaddq_f32(t, vec_splat(2.0f)));
    return vbslq_f32(vdupq_n_u32(0x80000000u), x, y);
}

/* x (1 + tanh(u)) / 2 with u = sqrt(2/pi) (x + 0.044715 x^3), computed as
 * x / (1 + e^-2u): no cancellation in the left tail. */
static inline float32x4_t vec_gelu_tanh(float32x4_t x)
{
    float32x4_t cube = vmulq_f32(vmulq_f32(vmulq_f32(vec_splat(0.044715f), x), x), x);
    float32x4_t u = vmulq_f32(vec_splat(0.79788456080286536f), vaddq_f32(x, cube));
    float32x4_t d = vaddq_f32(vec_splat(1.0f), vec_exp(vmulq_f32(vec_splat(-2.0f), u)));
    return vdivq_f32(x, d);
}

/* erf(x / sqrt 2) / x as a polynomial in s = x^2, for |x| < 1 (error 8e-10
 * relative). */
static inline float32x4_t vec_erf_scaled_poly(float32x4_t s)
{
    float32x4_t p = vec_splat(-1.532107634276418e-5f);
    p = vfmaq_f32(vec_splat(0.00022700459238572282f), p, s);
    p = vfmaq_f32(vec_splat(-0.0023726879776039775f), p, s);
    p = vfmaq_f32(vec_splat(0.019946656962512341f), p, s);
    p = vfmaq_f32(vec_splat(-0.1329807211343738f), p, s);
    return vfmaq_f32(vec_splat(0.79788456026168123f), p, s);
}

/* erfc(u / sqrt 2) for u >= 1, as e^(-u^2/2) G(u), G smooth and fitted as a
 * polynomial in v = 1/(1 + u) - 0.32 over u in [1, 6] (error 5e-8
 * relative); u is clamped to 20 (the result is 0 well before).  u^2/2 is
 * carried as hi + lo (an FMA gives the rounding error of u*u exactly): the
 * rounding of u^2 alone would cost 16 ulp of e^(-u^2/2) at u = 4. */
static inline float32x4_t vec_erfc_scaled(float32x4_t u)
{
    u = vminq_f32(u, vec_splat(20.0f));
    float32x4_t sq_hi = vmulq_f32(u, u);
    float32x4_t sq_lo = vfmaq_f32(vnegq_f32(sq_hi), u, u);
    float32x4_t gauss = vec_exp(vmulq_f32(sq_hi, vec_splat(-0.5f)));
    gauss = vfmsq_f32(gauss, gauss, vmulq_f32(sq_lo, vec_splat(0.5f))); /* e^-lo/2 = 1 - lo/2 */

    float32x4_t uc = vminq_f32(u, vec_splat(6.0f));
    float32x4_t v = vsubq_f32(vdivq_f32(vec_splat(1.0f), vaddq_f32(uc, vec_splat(1.0f))),
                              vec_splat(0.32f));
    float32x4_t g = vec_splat(0.51781237026894712f);
    g = vfmaq_f32(vec_splat(2.055865035770018f), g, v);
    g = vfmaq_f32(vec_splat(-1.9324923709468496f), g, v);
    g = vfmaq_f32(vec_splat(0.43143523615854291f), g, v);
    g = vfmaq_f32(vec_splat(0.66414120500471953f), g, v);
    g = vfmaq_f32(vec_splat(-0.81370175898813094f), g, v);
    g = vfmaq_f32(vec_splat(0.096620723692781697f), g, v);
    g = vfmaq_f32(vec_splat(1.1271402504755529f), g, v);
    g = vfmaq_f32(vec_splat(0.32116019896362722f), g, v);
    return vmulq_f32(gauss, g);
}

/* gelu(x) = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2.
 *   |x| < 1:  x/2 (1 + x P(x^2))
 *   x >= 1:   x/2 (2 - erfc(x / sqrt 2))
 *   x <= -1:  x/2 erfc(-x / sqrt 2)     (full relative precision in the tail)
 * As in the scalar backend, gelu(-inf) = -inf * 0 = NaN, gelu(inf) = inf. */
static inline float32x4_t vec_gelu(float32x4_t x)
{
    float32x4_t half_x = vmulq_f32(x, vec_splat(0.5f));
    float32x4_t ax = vabsq_f32(x);
    float32x4_t erfc_ax = vec_erfc_scaled(ax);
    float32x4_t inner = vfmaq_f32(vec_splat(1.0f), x, vec_erf_scaled_poly(vmulq_f32(x, x)));
    float32x4_t outer = vec_select(vcltq_f32(x, vec_splat(0.0f)), erfc_ax,
                                    vsubq_f32(vec_splat(2.0f), erfc_ax));
    float32x4_t factor = vec_select(vcltq_f32(ax, vec_splat(1.0f)), inner, outer);
    return vmulq_f32(half_x, factor);
}

/* x tanh(log(1 + e^x)) = x n / (n + 2) with e = e^x, n = e (e + 2): exact
 * algebra, no cancellation for x << 0; from x = 20 the factor is 1 in float
 * (the scalar backend's formula: mish(-inf) = -inf * 0 = NaN). */
static inline float32x4_t vec_mish(float32x4_t x)
{
    float32x4_t e = vec_exp(x);
    float32x4_t n = vmulq_f32(e, vaddq_f32(e, vec_splat(2.0f)));
    float32x4_t y = vmulq_f32(x, vdivq_f32(n, vaddq_f32(n, vec_splat(2.0f))));
    return vec_select(vcgeq_f32(x, vec_splat(20.0f)), x, y);
}

/* max(x, 0) + log1p(e^-|x|), log1p(t) = log(u) t / (u - 1), u = 1 + t (the
 * scalar backend's softplus1); vmaxq_f32 keeps a NaN x. */
static inline float32x4_t vec_softplus(float32x4_t x)
{
    float32x4_t t = vec_exp(vnegq_f32(vabsq_f32(x)));
    float32x4_t u = vaddq_f32(vec_splat(1.0f), t);
    float32x4_t l = vmulq_f32(vec_log(u), vdivq_f32(t, vsubq_f32(u, vec_splat(1.0f))));
    l = vec_select(vceqq_f32(u, vec_splat(1.0f)), t, l);
    return vaddq_f32(vmaxq_f32(x, vec_splat(0.0f)), l);
}

/* x < lo ? lo : x, then > hi ? hi : t: NaN stays NaN (both compares false). */
static inline float32x4_t vec_clip(float32x4_t x, float32x4_t lo, float32x4_t hi)
{
    float32x4_t t = vec_select(vcltq_f32(x, lo), lo, x);
    return vec_select(vcgtq_f32(t, hi), hi, t);
}

/* x < 0 ? 0 : x (relu(-0) = -0 and relu(NaN) = NaN, as in scalar). */
static inline float32x4_t vec_relu(float32x4_t x)
{
    return vec_select(vcltq_f32(x, vec_splat(0.0f)), vec_splat(0.0f), x);
}

/* x * (clip(x + 3, 0, 6) / 6): the scalar backend's rounding order. */
static inline float32x4_t vec_hardswish(float32x4_t x)
{
    float32x4_t t = vec_clip(vaddq_f32(x, vec_splat(3.0f)), vec_splat(0.0f), vec_splat(6.0f));
    return vmulq_f32(x, vdivq_f32(t, vec_splat(6.0f)));
}

/* x > 0 ? x : alpha expm1(x) */
static inline float32x4_t vec_elu(float32x4_t x, float32x4_t alpha)
{
    return vec_select(vcgtq_f32(x, vec_splat(0.0f)), x, vmulq_f32(alpha, vec_expm1(x)));
}

/* selu: scale * elu(x, 1.6732632423543772), with scale * alpha rounded once.
 * scale * x in double lanes: in float, x = 3.23862215e38 would overflow
 * where the result is still a float (FLT_MAX). */
static inline float32x4_t vec_selu(float32x4_t x)
{
    const float64x2_t scale = vdupq_n_f64(1.0507009873554805);
    const float scale_alpha = 1.7580993408473766f;
    float32x4_t positive = vcvt_high_f32_f64(vcvt_f32_f64(vmulq_f64(vcvt_f64_f32(vget_low_f32(x)), scale)),
                                             vmulq_f64(vcvt_high_f64_f32(x), scale));
    return vec_select(vcgtq_f32(x, vec_splat(0.0f)), positive,
                       vmulq_f32(vec_splat(scale_alpha), vec_expm1(x)));
}

/* x > 0 ? x : alpha x */
static inline float32x4_t vec_leaky_relu(float32x4_t x, float32x4_t alpha)
{
    return vec_select(vcgtq_f32(x, vec_splat(0.0f)), x, vmulq_f32(alpha, x));
}

/* (a > b || a != a) ? a : b, i.e. NaN propagates; FMAX does exactly that. */
static inline float32x4_t vec_maximum(float32x4_t a, float32x4_t b)
{
    return vmaxq_f32(a, b);
}

static inline float32x4_t vec_minimum(float32x4_t a, float32x4_t b)
{
    return vminq_f32(a, b);
}

/* The tails of elementwise loops: the first k (< 4) floats of p in a
 * vector, zeros after them; and the first k lanes of v back to p. */
static inline float32x4_t load_partial(const float *p, size_t k)
{
    float t[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
    memcpy(t, p, k * sizeof(float));
    return vld1q_f32(t);
}

static inline void store_partial(float *p, float32x4_t v, size_t k)
{
    float t[4];
    vst1q_f32(t, v);
    memcpy(p, t, k * sizeof(float));
}

#endif
