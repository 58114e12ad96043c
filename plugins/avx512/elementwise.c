/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act: the
 * AVX-512 vector primitives of ../cpu-base/cpu-elementwise_tmpl.c (16
 * floats, two vectors a step, one masked load/store for the last n % 16
 * elements: masked-off lanes are never touched, so no read past the end;
 * streaming stores for outputs larger than the last-level cache).
 *
 * NaN/Inf: each op's comparisons are the scalar backend's, as a compare into
 * an opmask and a masked blend.  vmaxps/vminps return their SECOND operand
 * when either is NaN, so _mm512_max_ps(bound, x) == (x < bound ? bound : x),
 * NaN included; maximum/minimum test for NaN explicitly.
 */
#include "plugin.h"
#include "avx512-math.h"

#include <stdint.h>

/* Cost per element handed to cpu_run_ranges: cheap ops go parallel from
 * CPU_PARALLEL_MIN_WORK elements, transcendental ones 16 times sooner. */
#define ELTWISE_CHEAP 1
#define ELTWISE_MATH 16

/* ---- one-vector functions --------------------------------------------------- */

/* (a > b || a is NaN) ? a : b, the scalar backend's maximum. */
static inline __m512 z_maximum(__m512 a, __m512 b)
{
    __mmask16 take_a = _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ) | _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(take_a, b, a);
}

static inline __m512 z_minimum(__m512 a, __m512 b)
{
    __mmask16 take_a = _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ) | _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(take_a, b, a);
}

static inline __mmask16 z_positive(__m512 x)
{
    return _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
}

static inline __m512 z_clip(__m512 x, __m512 lo, __m512 hi)
{
    return _mm512_min_ps(hi, _mm512_max_ps(lo, x)); /* NaN stays */
}

/* x tanh(log(1 + e^x)) = x n / (n + 2), n = e (e + 2); past x = 20 the result is x. */
static inline __m512 z_mish(__m512 x)
{
    __m512 e = z_exp(x);
    __m512 n = _mm512_mul_ps(e, _mm512_add_ps(e, Z_SET(2.0f)));
    __m512 y = _mm512_mul_ps(x, _mm512_div_ps(n, _mm512_add_ps(n, Z_SET(2.0f))));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, Z_SET(20.0f), _CMP_GE_OQ), y, x);
}

/* max(x, 0) + log1p(e^-|x|), log1p(t) = log(u) t / (u - 1), u = 1 + t (the
 * scalar backend's softplus1); max(0, x) keeps a NaN x. */
static inline __m512 z_softplus(__m512 x)
{
    __m512 t = z_exp(_mm512_or_ps(x, Z_SET(-0.0f)));
    __m512 u = _mm512_add_ps(Z_SET(1.0f), t);
    __m512 l = _mm512_mul_ps(z_log(u), _mm512_div_ps(t, _mm512_sub_ps(u, Z_SET(1.0f))));
    l = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, Z_SET(1.0f), _CMP_EQ_OQ), l, t);
    return _mm512_add_ps(_mm512_max_ps(_mm512_setzero_ps(), x), l);
}

static inline __m512 z_hardswish(__m512 x)
{
    __m512 t = z_clip(_mm512_add_ps(x, Z_SET(3.0f)), _mm512_setzero_ps(), Z_SET(6.0f));
    return _mm512_mul_ps(x, _mm512_div_ps(t, Z_SET(6.0f)));
}

static inline __m512 z_elu(__m512 x, __m512 alpha)
{
    return _mm512_mask_blend_ps(z_positive(x), _mm512_mul_ps(alpha, z_expm1(x)), x);
}

/* selu: scale * x in double lanes, rounded once, so it is right up to the
 * overflow threshold (a float scale, rounded up, overflows a little early);
 * the negative side is scale * alpha * expm1(x), far from any overflow. */
static inline __m512 z_selu(__m512 x)
{
    const __m512d scale = _mm512_set1_pd(1.0507009873554805);
    __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(scale, _mm512_cvtps_pd(_mm512_castps512_ps256(x))));
    __m256 hi = _mm512_cvtpd_ps(_mm512_mul_pd(
        scale, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))));
    __m512 positive = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
    __m512 negative = _mm512_mul_ps(Z_SET(1.7580993408473766f), z_expm1(x)); /* scale * 1.6732632423543772 */
    return _mm512_mask_blend_ps(z_positive(x), negative, positive);
}

static inline __m512 z_relu(__m512 x)
{
    return _mm512_max_ps(_mm512_setzero_ps(), x); /* x < 0 ? 0 : x; NaN stays */
}

static inline __m512 z_leaky_relu(__m512 x, __m512 alpha)
{
    return _mm512_mask_blend_ps(z_positive(x), _mm512_mul_ps(alpha, x), x);
}

/* ---- the vector interface of the template --------------------------------- */
typedef __m512 vec_t;
#define VEC_LANES 16
#define VEC_UNROLL2 1
#define VEC_FN(name) z_##name
#define vec_load _mm512_loadu_ps
#define vec_store _mm512_storeu_ps
#define vec_splat _mm512_set1_ps
#define vec_load_part(p, k) _mm512_maskz_loadu_ps(z_lanes(k), p)
#define vec_store_part(p, v, k) _mm512_mask_storeu_ps(p, z_lanes(k), v)
/* Non-temporal stores need 64-byte aligned addresses: a float-aligned y
 * reaches one after at most 15 elements (x86_use_stream). */
#define VEC_STREAM_ALIGN 64
#define vec_stream _mm512_stream_ps

#define z_add _mm512_add_ps
#define z_sub _mm512_sub_ps
#define z_mul _mm512_mul_ps
#define z_div _mm512_div_ps
#define z_sqrt _mm512_sqrt_ps
#define z_abs _mm512_abs_ps
#define z_exp_op z_exp_exact_subnormal
/* One fma, one rounding: alpha * a alone may overflow a float where
 * alpha * a + y does not. */
#define z_axpy _mm512_fmadd_ps

#include "cpu-elementwise_tmpl.c"
