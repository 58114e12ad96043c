/* SPDX-License-Identifier: MIT */
/* x86-avx2-math.h - AVX2+FMA approximations of exp, expm1, log, tanh, sigmoid and
 * the normal CDF (for gelu), 8 floats at a time, and small SIMD helpers.
 *
 * The polynomial coefficients were fitted for rayo (Chebyshev fits in
 * 50-digit arithmetic, then rounded to float).  Error measured over EVERY
 * float (2^32 inputs, NaNs included) against double-precision libm, through
 * the ops that use them (tests/test-avx2-math --exhaustive; the figures are
 * in doc/benchmarks-cpu.md).  First figure: results of magnitude >= 1e-6;
 * second: every normal result; last: worst case in units of the op's
 * contract (rayo-ops.h, <= 1 passes):
 *
 *   exp   (v_exp_exact_subnormal)   0.98 ulp   0.99 ulp   0.04
 *         subnormal results are recomputed in double: correctly rounded
 *   log   (v_log)                   0.86 ulp   0.86 ulp   0.04
 *   tanh  (v_tanh)                  2.42 ulp   2.42 ulp   0.07
 *   sigmoid (v_sigmoid)             2.40 ulp   2.40 ulp   0.06
 *   gelu  x * v_phi(x)              7.54 ulp  10.28 ulp   0.18
 *   elu   (v_expm1, alpha = 1)      0.88 ulp   0.88 ulp   0.04
 * The second column grows where an intermediate of a left tail is subnormal
 * or tiny (silu/mish ~47 ulp near x = -92), below the contract's absolute
 * term (1e-7), which is why the contract units stay small.
 *
 * NaN in gives NaN out; +-Inf and zeros follow the C99 libm rules (exp(-inf)
 * = 0, log(0) = -inf, log(x < 0) = NaN, tanh(+-inf) = +-1 ...).  The clamps
 * below are written as max(bound, x) / min(bound, x): with the bound first,
 * maxps/minps return the second operand when one is NaN, so NaN flows through.
 */
#ifndef RAYO_AVX2_VMATH_H
#define RAYO_AVX2_VMATH_H

#include <immintrin.h>
#include <math.h>

#include <stddef.h>
#include <stdint.h>

#define V_SET(c) _mm256_set1_ps(c)

/* Lanes [0, count) set, for count in [0, 8]: masks of maskload/maskstore,
 * which never touch the memory of unset lanes. */
static inline __m256i v_lane_mask(size_t count)
{
    static const int32_t ones_then_zeros[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
    return _mm256_loadu_si256((const __m256i *)(ones_then_zeros + 8 - count));
}

static inline float v_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

static inline double v_hsum_pd(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* acc + the 8 lanes of v, in double. */
static inline __m256d v_widen_add(__m256d acc, __m256 v)
{
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    return _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

static inline __m256 v_abs(__m256 x)
{
    return _mm256_andnot_ps(V_SET(-0.0f), x);
}

/* In-register 8x8 transpose: r[i] lane j becomes r[j] lane i. */
static inline void v_transpose8x8(__m256 r[8])
{
    __m256 t[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; k++) {
        t[k] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x20);
        t[k + 4] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x31);
    }
    for (int k = 0; k < 8; k++)
        r[k] = t[k];
}

/* Range reduction shared by exp and expm1: x = k ln2 + r, |r| <= ln2/2.
 * ln2 is split in a part with few bits (k * LN2_HI is exact) and the rest. */
static inline __m256 v_exp_reduce(__m256 x, __m256 *k)
{
    *k = _mm256_round_ps(_mm256_mul_ps(x, V_SET(1.44269504088896341f)),
                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fmadd_ps(*k, V_SET(-0.693359375f), x);
    return _mm256_fmadd_ps(*k, V_SET(2.12194440e-4f), r);
}

/* exp(r) - 1 - r = r^2 q(r) on |r| <= ln2/2; relative error of the fit 2e-10. */
static inline __m256 v_expm1_poly(__m256 r)
{
    __m256 q = V_SET(1.989098087e-04f);
    q = _mm256_fmadd_ps(q, r, V_SET(1.393364103e-03f));
    q = _mm256_fmadd_ps(q, r, V_SET(8.333310934e-03f));
    q = _mm256_fmadd_ps(q, r, V_SET(4.166646501e-02f));
    q = _mm256_fmadd_ps(q, r, V_SET(1.666666668e-01f));
    q = _mm256_fmadd_ps(q, r, V_SET(5.000000013e-01f));
    return _mm256_fmadd_ps(_mm256_mul_ps(r, r), q, r);
}

/* 2^k (1 + em) for any k in [-150, 128], rounded once: fma(em, s, s) with s
 * = 2^k exact - a normal float for k >= -126, a subnormal one below - so
 * subnormal results are rounded once too; k = 128 (just below the overflow
 * threshold) uses s = 2^127 and doubles the result; k = -150 uses 2^-149
 * and (1 + em) / 2 = 1 + (em - 1) / 2.  The slow path of v_exp. */
static inline __m256 v_exp_scale_extreme(__m256 em, __m256i k)
{
    __m256i k_min = _mm256_cmpgt_epi32(_mm256_set1_epi32(-149), k);
    em = _mm256_blendv_ps(em, _mm256_mul_ps(_mm256_sub_ps(em, V_SET(1.0f)), V_SET(0.5f)),
                          _mm256_castsi256_ps(k_min));
    __m256i k1 = _mm256_max_epi32(_mm256_min_epi32(k, _mm256_set1_epi32(127)), _mm256_set1_epi32(-149));
    __m256i k2 = _mm256_sub_epi32(_mm256_max_epi32(k, _mm256_set1_epi32(-149)), k1); /* 0 or 1 */
    __m256i s_normal = _mm256_slli_epi32(_mm256_add_epi32(k1, _mm256_set1_epi32(127)), 23);
    /* 2^k1 for k1 in [-149, -127] is the subnormal whose bits are 1 << (k1 + 149). */
    __m256i s_sub = _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_add_epi32(k1, _mm256_set1_epi32(149)));
    __m256i subnormal = _mm256_cmpgt_epi32(_mm256_set1_epi32(-126), k1);
    __m256 s = _mm256_castsi256_ps(_mm256_blendv_epi8(s_normal, s_sub, subnormal));
    __m256 two_k2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_fmadd_ps(em, s, s), two_k2);
}

/* exp(x) = 2^k (1 + em), rounded once by fma(em, s, s) with s = 2^k.  For
 * x in [-87.3, 88.3] (k in [-126, 127]) s is a normal float built from the
 * exponent bits; a vector with any lane outside takes the slow path above. */
static inline __m256 v_exp(__m256 x)
{
    /* Beyond these bounds the result is +inf or 0 anyway; clamping keeps k
     * within the int range and NaN passes (bound first, see above). */
    x = _mm256_min_ps(V_SET(89.0f), _mm256_max_ps(V_SET(-104.0f), x));
    __m256 kf;
    __m256 r = v_exp_reduce(x, &kf);
    __m256 em = v_expm1_poly(r);
    __m256i k = _mm256_cvtps_epi32(kf);
    __m256 extreme = _mm256_or_ps(_mm256_cmp_ps(x, V_SET(-87.3f), _CMP_LT_OQ),
                                  _mm256_cmp_ps(x, V_SET(88.3f), _CMP_GT_OQ));
    if (_mm256_movemask_ps(extreme))
        return v_exp_scale_extreme(em, k);
    __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
    return _mm256_fmadd_ps(em, s, s); /* NaN lanes: em is NaN */
}

/* exp in double for 4 lanes (|error| ~1e-15 relative): the exp op uses it
 * for results below FLT_MIN, where float has few bits left and only a
 * correctly rounded result meets the contract (relative 2e-6, no absolute
 * term); rounding this to float is then right except within ~1e-15 of a
 * tie.  Inputs are already clamped to [-104, -87]. */
static inline __m256d v_exp_pd(__m256d x)
{
    __m256d k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fmadd_pd(k, _mm256_set1_pd(-6.93147180369123816490e-01), x);
    r = _mm256_fmadd_pd(k, _mm256_set1_pd(-1.90821492927058770002e-10), r);
    /* Taylor to r^12: the remainder is below 2e-15 for |r| <= ln2/2. */
    __m256d p = _mm256_set1_pd(1.0 / 479001600.0);
    static const double inv_fact[12] = { 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
                                         1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0,
                                         0.5, 1.0, 1.0 };
    for (int i = 0; i < 12; i++)
        p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(inv_fact[i]));
    /* 2^k: k in [-151, -125] is a normal double. */
    __m128i ki = _mm256_cvtpd_epi32(k);
    __m256i e = _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(ki), _mm256_set1_epi64x(1023)), 52);
    return _mm256_mul_pd(p, _mm256_castsi256_pd(e));
}

/* v_exp, with the lanes whose result is subnormal (x < ln(FLT_MIN)) redone
 * in double so that they are correctly rounded. */
static inline __m256 v_exp_exact_subnormal(__m256 x)
{
    __m256 y = v_exp(x);
    __m256 sub = _mm256_and_ps(_mm256_cmp_ps(x, V_SET(-87.3365448f), _CMP_LT_OQ),
                               _mm256_cmp_ps(x, V_SET(-104.0f), _CMP_GE_OQ));
    if (!_mm256_movemask_ps(sub))
        return y;
    __m256 xc = _mm256_max_ps(x, V_SET(-104.0f));
    __m256d lo = v_exp_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(xc)));
    __m256d hi = v_exp_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(xc, 1)));
    __m256 exact = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
    return _mm256_blendv_ps(y, exact, sub);
}

/* expm1 for x <= 88: exp(x) - 1 = 2^k (expm1(r) + 1) - 1 = 2^k expm1(r) + (2^k - 1);
 * 2^k - 1 is exact for the k where it matters, so there is no cancellation. */
static inline __m256 v_expm1(__m256 x)
{
    x = _mm256_min_ps(V_SET(88.0f), _mm256_max_ps(V_SET(-30.0f), x));
    __m256 k;
    __m256 r = v_exp_reduce(x, &k);
    __m256 em = v_expm1_poly(r);
    __m256 two_k = _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23));
    return _mm256_fmadd_ps(two_k, em, _mm256_sub_ps(two_k, V_SET(1.0f)));
}

/* log(1 + f) = f - f^2/2 + f^3 P(f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]. */
static inline __m256 v_log1p_poly(__m256 f)
{
    __m256 p = V_SET(6.971611471e-02f);
    p = _mm256_fmadd_ps(p, f, V_SET(-1.147973385e-01f));
    p = _mm256_fmadd_ps(p, f, V_SET(1.168541992e-01f));
    p = _mm256_fmadd_ps(p, f, V_SET(-1.242568733e-01f));
    p = _mm256_fmadd_ps(p, f, V_SET(1.424905765e-01f));
    p = _mm256_fmadd_ps(p, f, V_SET(-1.666780232e-01f));
    p = _mm256_fmadd_ps(p, f, V_SET(2.000071575e-01f));
    p = _mm256_fmadd_ps(p, f, V_SET(-2.499999696e-01f));
    p = _mm256_fmadd_ps(p, f, V_SET(3.333333118e-01f));
    __m256 f2 = _mm256_mul_ps(f, f);
    __m256 tail = _mm256_fmadd_ps(_mm256_mul_ps(f2, f), p, _mm256_mul_ps(f2, V_SET(-0.5f)));
    return _mm256_add_ps(f, tail);
}

/* log(x) for the lanes where 0 < x < inf; other lanes get the libm answer. */
static inline __m256 v_log(__m256 x)
{
    /* Subnormals: scale by 2^23 first so the exponent field is meaningful. */
    __m256 tiny = _mm256_cmp_ps(x, V_SET(1.17549435e-38f), _CMP_LT_OQ);
    __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, V_SET(8388608.0f)), tiny);
    __m256 e_adjust = _mm256_and_ps(tiny, V_SET(-23.0f));

    /* x = 2^e m with m in [sqrt(1/2), sqrt(2)): take the exponent of x*sqrt(2)-ish
     * by comparing the mantissa with sqrt(2). */
    __m256i bits = _mm256_castps_si256(xs);
    __m256i mant_bits = _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)),
                                        _mm256_set1_epi32(0x3f800000));
    __m256 m = _mm256_castsi256_ps(mant_bits);               /* [1, 2) */
    __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
    __m256 big = _mm256_cmp_ps(m, V_SET(1.41421356f), _CMP_GT_OQ);
    m = _mm256_blendv_ps(m, _mm256_mul_ps(m, V_SET(0.5f)), big);
    e = _mm256_add_ps(_mm256_add_ps(e, _mm256_and_ps(big, V_SET(1.0f))), e_adjust);

    __m256 f = _mm256_sub_ps(m, V_SET(1.0f));                /* exact */
    __m256 y = v_log1p_poly(f);
    y = _mm256_fmadd_ps(e, V_SET(-2.12194440e-4f), y);
    y = _mm256_fmadd_ps(e, V_SET(0.693359375f), y);

    /* Specials, rare: x <= 0, x = inf, NaN. */
    __m256 ordinary = _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ),
                                    _mm256_cmp_ps(x, V_SET(INFINITY), _CMP_LT_OQ));
    if (_mm256_movemask_ps(ordinary) != 0xff) {
        __m256 zero = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ);
        __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
        __m256 special = _mm256_add_ps(x, x);                 /* inf -> inf, NaN -> NaN */
        special = _mm256_blendv_ps(special, V_SET(-INFINITY), zero);
        special = _mm256_blendv_ps(special, V_SET(NAN), neg);
        y = _mm256_blendv_ps(special, y, ordinary);
    }
    return y;
}

/* tanh(x) = sign(x) t / (t + 2) with t = expm1(2|x|); tanh(|x| >= 10) = 1 in float. */
static inline __m256 v_tanh(__m256 x)
{
    __m256 sign = _mm256_and_ps(x, V_SET(-0.0f));
    __m256 ax = _mm256_min_ps(V_SET(10.0f), v_abs(x));
    __m256 t = v_expm1(_mm256_add_ps(ax, ax));
    __m256 y = _mm256_div_ps(t, _mm256_add_ps(t, V_SET(2.0f)));
    return _mm256_or_ps(y, sign);
}

/* sigmoid with e = exp(-|x|): 1/(1+e) for x >= 0, e/(1+e) for x < 0, so the
 * left tail keeps its relative precision down to the subnormals. */
static inline __m256 v_sigmoid(__m256 x)
{
    __m256 e = v_exp(_mm256_or_ps(x, V_SET(-0.0f)));          /* exp(-|x|) */
    __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    __m256 num = _mm256_blendv_ps(V_SET(1.0f), e, negative);
    return _mm256_div_ps(num, _mm256_add_ps(V_SET(1.0f), e));
}

/* Normal CDF Phi(x) = (1 + erf(x / sqrt(2))) / 2, with relative accuracy in
 * the lower tail (gelu(x) = x Phi(x) needs it for x down to about -5.5).
 *   |x| < 1:  Phi = 1/2 + x S(x^2)
 *   |x| >= 1: Phi(-a) = exp(-a^2/2) t H(t), t = 4 / (4 + a); exp(-a^2/2) is
 *             computed from the exact product a*a (its rounding error by fma)
 *             so the large exponent does not magnify the rounding of a^2. */
static inline __m256 v_phi_small(__m256 x)
{
    __m256 v = _mm256_mul_ps(x, x);
    __m256 s = V_SET(-7.660538171e-06f);
    s = _mm256_fmadd_ps(s, v, V_SET(1.135022962e-04f));
    s = _mm256_fmadd_ps(s, v, V_SET(-1.186343989e-03f));
    s = _mm256_fmadd_ps(s, v, V_SET(9.973328481e-03f));
    s = _mm256_fmadd_ps(s, v, V_SET(-6.649036057e-02f));
    s = _mm256_fmadd_ps(s, v, V_SET(3.989422801e-01f));
    return _mm256_fmadd_ps(x, s, V_SET(0.5f));
}

/* Phi(-a) for a >= 1 (a <= 20: beyond, the tail is 0 in float). */
static inline __m256 v_phi_tail(__m256 a)
{
    __m256 t = _mm256_div_ps(V_SET(4.0f), _mm256_add_ps(V_SET(4.0f), a));
    __m256 h = V_SET(1.164036302e-02f);
    h = _mm256_fmadd_ps(h, t, V_SET(-2.934109503e-02f));
    h = _mm256_fmadd_ps(h, t, V_SET(7.056966686e-03f));
    h = _mm256_fmadd_ps(h, t, V_SET(8.696844281e-03f));
    h = _mm256_fmadd_ps(h, t, V_SET(1.997682007e-02f));
    h = _mm256_fmadd_ps(h, t, V_SET(4.476417670e-02f));
    h = _mm256_fmadd_ps(h, t, V_SET(6.316982807e-02f));
    h = _mm256_fmadd_ps(h, t, V_SET(8.107372410e-02f));
    h = _mm256_fmadd_ps(h, t, V_SET(9.349994322e-02f));
    h = _mm256_fmadd_ps(h, t, V_SET(9.973561507e-02f));
    h = _mm256_fmadd_ps(h, t, V_SET(9.973556995e-02f));
    __m256 half_a2 = _mm256_mul_ps(_mm256_mul_ps(a, a), V_SET(0.5f));
    __m256 half_err = _mm256_mul_ps(_mm256_fmsub_ps(a, a, _mm256_mul_ps(a, a)), V_SET(0.5f));
    __m256 g = v_exp(_mm256_xor_ps(half_a2, V_SET(-0.0f)));
    g = _mm256_fnmadd_ps(g, half_err, g);                    /* exp(-h - e) ~ exp(-h)(1 - e) */
    return _mm256_mul_ps(_mm256_mul_ps(g, t), h);
}

static inline __m256 v_phi(__m256 x)
{
    __m256 a = _mm256_min_ps(V_SET(20.0f), v_abs(x));
    __m256 tail = v_phi_tail(a);
    __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    __m256 big = _mm256_blendv_ps(_mm256_sub_ps(V_SET(1.0f), tail), tail, neg);
    __m256 small = _mm256_cmp_ps(a, V_SET(1.0f), _CMP_LT_OQ);
    return _mm256_blendv_ps(big, v_phi_small(x), small);
}

/* The activations of silu, gelu and gelu_tanh, also the gates of swiglu,
 * geglu and geglu_tanh (infer.c). */
/* x sigmoid(x) with the stable sigmoid: relative precision in the left tail
 * (x / (1 + exp(-x)) would give -0 once exp(-x) overflows). */
static inline __m256 v_silu(__m256 x)
{
    return _mm256_mul_ps(x, v_sigmoid(x));
}

static inline __m256 v_gelu(__m256 x)
{
    return _mm256_mul_ps(x, v_phi(x));
}

/* x (1 + tanh(u)) / 2 = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
 * no cancellation in the left tail. */
static inline __m256 v_gelu_tanh(__m256 x)
{
    __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    __m256 u = _mm256_mul_ps(V_SET(0.79788456080286536f), _mm256_fmadd_ps(V_SET(0.044715f), x3, x));
    return _mm256_mul_ps(x, v_sigmoid(_mm256_add_ps(u, u)));
}

#endif
