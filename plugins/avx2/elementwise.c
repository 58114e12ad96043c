/* SPDX-License-Identifier: MIT */
/* elementwise.c - binary, unary and activation ops, axpy and bias_act: the
 * AVX2 vector primitives of ../cpu-base/cpu-elementwise_tmpl.c (8 floats,
 * two vectors a step, a masked load/store for the last n % 8 elements,
 * streaming stores for outputs larger than the last-level cache).
 *
 * NaN/Inf: every op gives NaN, +-Inf or a finite value exactly where the
 * scalar backend does (tests/test-avx2-math checks every float for the
 * transcendental ones).  The comparisons below are the scalar code's,
 * written as compare + blend.  maxps/minps return their SECOND operand when
 * either is NaN, so _mm256_max_ps(bound, x) == (x < bound ? bound : x)
 * exactly, NaN included; maximum/minimum need an explicit NaN test.
 */
#include "plugin.h"
#include "x86-avx2-math.h"

#include <stdint.h>

/* Calls below these sizes run on the calling thread only: waking the pool
 * costs a few microseconds (avx2_run_items, plugin.h). */
#define ELTWISE_CHEAP ((size_t)1 << 18)
#define ELTWISE_MATH ((size_t)1 << 14)


/* ---- one-vector functions --------------------------------------------------- */

/* (a > b || a is NaN) ? a : b, the scalar backend's maximum. */
static inline __m256 v_maximum(__m256 a, __m256 b)
{
    __m256 take_a = _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    return _mm256_blendv_ps(b, a, take_a);
}

static inline __m256 v_minimum(__m256 a, __m256 b)
{
    __m256 take_a = _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    return _mm256_blendv_ps(b, a, take_a);
}

static inline __m256 v_relu(__m256 x)
{
    return _mm256_max_ps(_mm256_setzero_ps(), x); /* x < 0 ? 0 : x; NaN stays */
}

static inline __m256 v_clip(__m256 x, __m256 lo, __m256 hi)
{
    return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); /* NaN stays */
}

static inline __m256 v_positive(__m256 x)
{
    return _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
}

/* x tanh(log(1 + e^x)) = x n / (n + 2), n = e (e + 2); x past 20 is its own result. */
static inline __m256 v_mish(__m256 x)
{
    __m256 e = v_exp(x);
    __m256 n = _mm256_mul_ps(e, _mm256_add_ps(e, V_SET(2.0f)));
    __m256 y = _mm256_mul_ps(x, _mm256_div_ps(n, _mm256_add_ps(n, V_SET(2.0f))));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, V_SET(20.0f), _CMP_GE_OQ));
}

/* max(x, 0) + log1p(e^-|x|), log1p(t) = log(u) t / (u - 1), u = 1 + t (the
 * scalar backend's softplus1); max(0, x) keeps a NaN x. */
static inline __m256 v_softplus(__m256 x)
{
    __m256 t = v_exp(_mm256_or_ps(x, V_SET(-0.0f)));
    __m256 u = _mm256_add_ps(V_SET(1.0f), t);
    __m256 l = _mm256_mul_ps(v_log(u), _mm256_div_ps(t, _mm256_sub_ps(u, V_SET(1.0f))));
    l = _mm256_blendv_ps(l, t, _mm256_cmp_ps(u, V_SET(1.0f), _CMP_EQ_OQ));
    return _mm256_add_ps(_mm256_max_ps(_mm256_setzero_ps(), x), l);
}

static inline __m256 v_hardswish(__m256 x)
{
    __m256 t = v_clip(_mm256_add_ps(x, V_SET(3.0f)), _mm256_setzero_ps(), V_SET(6.0f));
    return _mm256_mul_ps(x, _mm256_div_ps(t, V_SET(6.0f)));
}

static inline __m256 v_elu(__m256 x, __m256 alpha)
{
    return _mm256_blendv_ps(_mm256_mul_ps(alpha, v_expm1(x)), x, v_positive(x));
}

/* scale * x uses scale as hi + lo floats and one fma, so it is rounded once
 * from the near-exact product: right up to the overflow threshold, where a
 * float scale (rounded up) would overflow a little early. */
static inline __m256 v_selu(__m256 x)
{
    const __m256 scale_hi = V_SET(1.0507009873554805f);
    const __m256 scale_lo = V_SET((float)(1.0507009873554805 - (double)1.0507009873554805f));
    const __m256 scale_alpha = V_SET(1.7580993408473766f); /* scale * 1.6732632423543772 */
    __m256 positive = _mm256_fmadd_ps(scale_hi, x, _mm256_mul_ps(scale_lo, x));
    positive = _mm256_blendv_ps(positive, x, _mm256_cmp_ps(x, V_SET(INFINITY), _CMP_EQ_OQ)); /* not inf - inf */
    return _mm256_blendv_ps(_mm256_mul_ps(scale_alpha, v_expm1(x)), positive, v_positive(x));
}

/* ---- the vector interface of the template --------------------------------- */
typedef __m256 vec_t;
#define VEC_LANES 8
#define VEC_UNROLL2 1
#define VEC_FN(name) v_##name
#define vec_load _mm256_loadu_ps
#define vec_store _mm256_storeu_ps
#define vec_splat _mm256_set1_ps
#define vec_load_part(p, k) _mm256_maskload_ps(p, v_lane_mask(k))
#define vec_store_part(p, v, k) _mm256_maskstore_ps(p, v_lane_mask(k), v)
#define VEC_STREAM_ALIGN 32
#define vec_stream _mm256_stream_ps

#define v_add _mm256_add_ps
#define v_sub _mm256_sub_ps
#define v_mul _mm256_mul_ps
#define v_div _mm256_div_ps
#define v_sqrt _mm256_sqrt_ps
#define v_exp_op v_exp_exact_subnormal
/* One fma, one rounding: alpha * a alone may overflow a float where
 * alpha * a + y does not. */
#define v_axpy _mm256_fmadd_ps

static inline __m256 v_leaky_relu(__m256 x, __m256 alpha)
{
    return _mm256_blendv_ps(_mm256_mul_ps(alpha, x), x, v_positive(x));
}

#include "cpu-elementwise_tmpl.c"
