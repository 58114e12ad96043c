/* SPDX-License-Identifier: MIT */
/* avx512-math.h - AVX-512 approximations of exp, expm1, log, tanh, sigmoid and the
 * normal CDF (for gelu), 16 floats at a time, and small SIMD helpers.
 *
 * The polynomials are those of the avx2 backend (rayo's own Chebyshev fits,
 * plugins/cpu-base/x86-avx2-math.h gives their measured error); what changes is the
 * machinery around them, which AVX-512 does in single instructions:
 *   - 2^k scaling by vscalefps, which rounds once and is right for every k,
 *     subnormal and overflowing results included: exp needs no slow path
 *     for its extreme inputs;
 *   - the exponent and mantissa of log's argument by vgetexpps/vgetmantps,
 *     subnormal inputs included;
 *   - compares into opmask registers and masked blends instead of blendv.
 * Results are those of the avx2 backend for normal outputs (the same
 * roundings in the same order); tests/test-avx512-conform.sh checks every op.
 *
 * NaN in gives NaN out; +-Inf and zeros follow C99 libm.  Clamps are written
 * max(bound, x) / min(bound, x): vmaxps/vminps return the second operand when
 * one is NaN, so NaN flows through.
 */
#ifndef RAYO_AVX512_VMATH_H
#define RAYO_AVX512_VMATH_H

#include <immintrin.h>
#include <math.h>

#include <stddef.h>
#include <stdint.h>

#define Z_SET(c) _mm512_set1_ps(c)
#define Z_NEAREST (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* Lanes [0, count) of a 16-lane vector, count in [0, 16]. */
static inline __mmask16 z_lanes(size_t count)
{
    return (__mmask16)((1u << count) - 1u);
}

/* Stores the lanes m of v at p: a plain store when all 16 are set.  Masked
 * stores to memory are slow on AMD Zen 4 (packing with them cost 5% of an
 * sgemm); full vectors, the common case in loops, avoid them. */
static inline void z_store_lanes(float *p, __mmask16 m, __m512 v)
{
    if (m == 0xffff)
        _mm512_storeu_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, m, v);
}

/* acc + the 16 lanes of v, in double. */
static inline __m512d z_widen_add(__m512d acc, __m512 v)
{
    acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    return _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

/* In-register 16x16 transpose: lane j of r[i] becomes lane i of r[j].
 * Pairs of rows are interleaved, then groups of 4 (shuffle_ps), so that
 * r[4q + c] holds in its 128-bit lane L column 4L + c of rows 4q..4q+3;
 * two rounds of 128-bit lane shuffles then gather each column's 4 lanes. */
static inline void z_transpose16x16(__m512 r[16])
{
    __m512 t[16];
    for (int k = 0; k < 16; k += 2) {
        t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 16; k += 4) {
        r[k] = _mm512_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 8; k++) {
        int q = k / 4 * 8 + k % 4; /* (0,4) (1,5) (2,6) (3,7) (8,12) ... (11,15) */
        t[q] = _mm512_shuffle_f32x4(r[q], r[q + 4], _MM_SHUFFLE(2, 0, 2, 0));
        t[q + 4] = _mm512_shuffle_f32x4(r[q], r[q + 4], _MM_SHUFFLE(3, 1, 3, 1));
    }
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], _MM_SHUFFLE(2, 0, 2, 0));
        r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* 1 / d for d in [1, 2^126] or NaN: vrcp14ps (relative error < 2^-14) and
 * one Newton step (error ~2^-28 before rounding), a few ulp at most once
 * multiplied; vdivps zmm is the slowest instruction of tanh, sigmoid and
 * gelu (gelu 1.3x avx2's speed with it, see doc/benchmarks-cpu.md). */
static inline __m512 z_recip(__m512 d)
{
    __m512 r = _mm512_rcp14_ps(d);
    return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, Z_SET(1.0f)), r);
}

/* Range reduction of exp and expm1: x = k ln2 + r, |r| <= ln2/2, with ln2
 * split in a part with few bits (k * LN2_HI is exact) and the rest. */
static inline __m512 z_exp_reduce(__m512 x, __m512 *k)
{
    *k = _mm512_roundscale_ps(_mm512_mul_ps(x, Z_SET(1.44269504088896341f)), Z_NEAREST);
    __m512 r = _mm512_fmadd_ps(*k, Z_SET(-0.693359375f), x);
    return _mm512_fmadd_ps(*k, Z_SET(2.12194440e-4f), r);
}

/* exp(r) - 1 = r + r^2 q(r) on |r| <= ln2/2. */
static inline __m512 z_expm1_poly(__m512 r)
{
    __m512 q = Z_SET(1.989098087e-04f);
    q = _mm512_fmadd_ps(q, r, Z_SET(1.393364103e-03f));
    q = _mm512_fmadd_ps(q, r, Z_SET(8.333310934e-03f));
    q = _mm512_fmadd_ps(q, r, Z_SET(4.166646501e-02f));
    q = _mm512_fmadd_ps(q, r, Z_SET(1.666666668e-01f));
    q = _mm512_fmadd_ps(q, r, Z_SET(5.000000013e-01f));
    return _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r);
}

/* exp(x) = 2^k (1 + em): 1 + em is rounded once, and vscalefps scales it
 * exactly for normal results (rounds once for subnormal ones, overflows to
 * inf past FLT_MAX).  The clamp keeps k small; NaN passes (em is NaN). */
static inline __m512 z_exp(__m512 x)
{
    x = _mm512_min_ps(Z_SET(89.0f), _mm512_max_ps(Z_SET(-104.0f), x));
    __m512 k;
    __m512 em = z_expm1_poly(z_exp_reduce(x, &k));
    return _mm512_scalef_ps(_mm512_add_ps(em, Z_SET(1.0f)), k);
}

/* exp in double for 8 lanes (relative error ~1e-15) of inputs in
 * [-104, -87]: the exp op's results below FLT_MIN, where only a correctly
 * rounded float meets the contract (relative, no absolute term). */
static inline __m512d z_exp_pd(__m512d x)
{
    __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)), Z_NEAREST);
    __m512d r = _mm512_fmadd_pd(k, _mm512_set1_pd(-6.93147180369123816490e-01), x);
    r = _mm512_fmadd_pd(k, _mm512_set1_pd(-1.90821492927058770002e-10), r);
    /* Taylor to r^12: the remainder is below 2e-15 for |r| <= ln2/2. */
    double inverse_factorial = 1.0 / 479001600.0; /* 1/12! */
    __m512d p = _mm512_set1_pd(inverse_factorial);
    for (int i = 11; i >= 0; i--) {
        inverse_factorial *= i + 1;
        p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(inverse_factorial));
    }
    return _mm512_scalef_pd(p, k);
}

/* z_exp, with the lanes whose result is subnormal (x < ln(FLT_MIN)) redone
 * in double so that they are correctly rounded. */
static inline __m512 z_exp_exact_subnormal(__m512 x)
{
    __m512 y = z_exp(x);
    __mmask16 sub = _mm512_cmp_ps_mask(x, Z_SET(-87.3365448f), _CMP_LT_OQ) &
                    _mm512_cmp_ps_mask(x, Z_SET(-104.0f), _CMP_GE_OQ);
    if (!sub)
        return y;
    __m512d lo = z_exp_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(x)));
    __m512d hi = z_exp_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))));
    __m512 exact = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
    return _mm512_mask_blend_ps(sub, y, exact);
}

/* expm1 for x <= 88: 2^k expm1(r) + (2^k - 1), no cancellation (2^k - 1 is
 * exact for the k where it matters). */
static inline __m512 z_expm1(__m512 x)
{
    x = _mm512_min_ps(Z_SET(88.0f), _mm512_max_ps(Z_SET(-30.0f), x));
    __m512 k;
    __m512 em = z_expm1_poly(z_exp_reduce(x, &k));
    __m512 two_k = _mm512_scalef_ps(Z_SET(1.0f), k);
    return _mm512_fmadd_ps(two_k, em, _mm512_sub_ps(two_k, Z_SET(1.0f)));
}

/* log(1 + f) = f - f^2/2 + f^3 P(f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]. */
static inline __m512 z_log1p_poly(__m512 f)
{
    __m512 p = Z_SET(6.971611471e-02f);
    p = _mm512_fmadd_ps(p, f, Z_SET(-1.147973385e-01f));
    p = _mm512_fmadd_ps(p, f, Z_SET(1.168541992e-01f));
    p = _mm512_fmadd_ps(p, f, Z_SET(-1.242568733e-01f));
    p = _mm512_fmadd_ps(p, f, Z_SET(1.424905765e-01f));
    p = _mm512_fmadd_ps(p, f, Z_SET(-1.666780232e-01f));
    p = _mm512_fmadd_ps(p, f, Z_SET(2.000071575e-01f));
    p = _mm512_fmadd_ps(p, f, Z_SET(-2.499999696e-01f));
    p = _mm512_fmadd_ps(p, f, Z_SET(3.333333118e-01f));
    __m512 f2 = _mm512_mul_ps(f, f);
    __m512 tail = _mm512_fmadd_ps(_mm512_mul_ps(f2, f), p, _mm512_mul_ps(f2, Z_SET(-0.5f)));
    return _mm512_add_ps(f, tail);
}

/* log(x): x = 2^e m with m in [sqrt(1/2), sqrt(2)) (vgetmantps gives m in
 * [1, 2), subnormals included; m > sqrt(2) is halved and e raised). */
static inline __m512 z_log(__m512 x)
{
    __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
    __m512 e = _mm512_getexp_ps(x);
    __mmask16 big = _mm512_cmp_ps_mask(m, Z_SET(1.41421356f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, big, m, Z_SET(0.5f));
    e = _mm512_mask_add_ps(e, big, e, Z_SET(1.0f));
    __m512 y = z_log1p_poly(_mm512_sub_ps(m, Z_SET(1.0f)));
    y = _mm512_fmadd_ps(e, Z_SET(-2.12194440e-4f), y);
    y = _mm512_fmadd_ps(e, Z_SET(0.693359375f), y);
    /* Specials, rare: x <= 0, x = inf, NaN. */
    __mmask16 ordinary = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ) &
                         _mm512_cmp_ps_mask(x, Z_SET(INFINITY), _CMP_LT_OQ);
    if (ordinary != 0xffff) {
        __m512 special = _mm512_add_ps(x, x);                   /* inf -> inf, NaN -> NaN */
        special = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), special,
                                       Z_SET(-INFINITY));
        special = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), special,
                                       Z_SET(NAN));
        y = _mm512_mask_blend_ps(ordinary, special, y);
    }
    return y;
}

/* tanh(x) = sign(x) t / (t + 2) with t = expm1(2|x|); tanh(|x| >= 10) = 1 in float. */
static inline __m512 z_tanh(__m512 x)
{
    __m512 ax = _mm512_min_ps(Z_SET(10.0f), _mm512_abs_ps(x));
    __m512 t = z_expm1(_mm512_add_ps(ax, ax));
    __m512 y = _mm512_mul_ps(t, z_recip(_mm512_add_ps(t, Z_SET(2.0f)))); /* t + 2 in [2, 5e8] */
    return _mm512_or_ps(y, _mm512_and_ps(x, Z_SET(-0.0f)));
}

/* sigmoid with e = exp(-|x|): 1/(1+e) for x >= 0, e/(1+e) for x < 0, so the
 * left tail keeps its relative precision. */
static inline __m512 z_sigmoid(__m512 x)
{
    __m512 e = z_exp(_mm512_or_ps(x, Z_SET(-0.0f)));
    __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 num = _mm512_mask_blend_ps(negative, Z_SET(1.0f), e);
    return _mm512_mul_ps(num, z_recip(_mm512_add_ps(Z_SET(1.0f), e))); /* 1 + e in [1, 2] */
}

/* Normal CDF Phi(x) (gelu = x Phi(x)), relative accuracy in the lower tail:
 *   |x| < 1:  Phi = 1/2 + x S(x^2)
 *   |x| >= 1: Phi(-a) = exp(-a^2/2) t H(t), t = 4 / (4 + a), exp(-a^2/2)
 *             corrected by the rounding error of a*a (an fma). */
static inline __m512 z_phi_small(__m512 x)
{
    __m512 v = _mm512_mul_ps(x, x);
    __m512 s = Z_SET(-7.660538171e-06f);
    s = _mm512_fmadd_ps(s, v, Z_SET(1.135022962e-04f));
    s = _mm512_fmadd_ps(s, v, Z_SET(-1.186343989e-03f));
    s = _mm512_fmadd_ps(s, v, Z_SET(9.973328481e-03f));
    s = _mm512_fmadd_ps(s, v, Z_SET(-6.649036057e-02f));
    s = _mm512_fmadd_ps(s, v, Z_SET(3.989422801e-01f));
    return _mm512_fmadd_ps(x, s, Z_SET(0.5f));
}

/* Phi(-a) for 1 <= a <= 20. */
static inline __m512 z_phi_tail(__m512 a)
{
    __m512 t = _mm512_mul_ps(Z_SET(4.0f), z_recip(_mm512_add_ps(Z_SET(4.0f), a))); /* 4 + a in [5, 24] */
    static const float h_coefficients[] = { -2.934109503e-02f, 7.056966686e-03f, 8.696844281e-03f,
                                            1.997682007e-02f,  4.476417670e-02f, 6.316982807e-02f,
                                            8.107372410e-02f,  9.349994322e-02f, 9.973561507e-02f,
                                            9.973556995e-02f };
    __m512 h = Z_SET(1.164036302e-02f);
    for (size_t i = 0; i < sizeof h_coefficients / sizeof h_coefficients[0]; i++)
        h = _mm512_fmadd_ps(h, t, Z_SET(h_coefficients[i]));
    __m512 a2 = _mm512_mul_ps(a, a);
    __m512 half_err = _mm512_mul_ps(_mm512_fmsub_ps(a, a, a2), Z_SET(0.5f));
    __m512 g = z_exp(_mm512_mul_ps(a2, Z_SET(-0.5f)));
    g = _mm512_fnmadd_ps(g, half_err, g);                     /* exp(-h - e) ~ exp(-h)(1 - e) */
    return _mm512_mul_ps(_mm512_mul_ps(g, t), h);
}

static inline __m512 z_phi(__m512 x)
{
    __m512 a = _mm512_min_ps(Z_SET(20.0f), _mm512_abs_ps(x));
    __m512 tail = z_phi_tail(a);
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 big = _mm512_mask_blend_ps(neg, _mm512_sub_ps(Z_SET(1.0f), tail), tail);
    __mmask16 small = _mm512_cmp_ps_mask(a, Z_SET(1.0f), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(small, big, z_phi_small(x));
}

/* The activations of silu, gelu and gelu_tanh, also the gates of swiglu,
 * geglu and geglu_tanh (infer.c). */
static inline __m512 z_silu(__m512 x)
{
    return _mm512_mul_ps(x, z_sigmoid(x));
}

static inline __m512 z_gelu(__m512 x)
{
    return _mm512_mul_ps(x, z_phi(x));
}

/* x (1 + tanh(u)) / 2 = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
 * no cancellation in the left tail. */
static inline __m512 z_gelu_tanh(__m512 x)
{
    __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    __m512 u = _mm512_mul_ps(Z_SET(0.79788456080286536f), _mm512_fmadd_ps(Z_SET(0.044715f), x3, x));
    return _mm512_mul_ps(x, z_sigmoid(_mm512_add_ps(u, u)));
}

#endif
