/* SPDX-License-Identifier: MIT */
/* avx2-vector.h - the vector interface the x86 kernel templates are written
 * over (../cpu-base/x86-*_tmpl.c), at 8 floats a vector: VF and its vf_*
 * operations, the double accumulator VD (vd_*) and the NaN mask VM (vm_*).
 * avx512-vector.h defines the same names at 16 floats. */
#ifndef RAYO_AVX2_VECTOR_H
#define RAYO_AVX2_VECTOR_H

#include "x86-avx2-math.h"

#define VF __m256
#define VF_LANES 8

#define vf_zero _mm256_setzero_ps
#define vf_set _mm256_set1_ps
#define vf_load _mm256_loadu_ps
#define vf_store _mm256_storeu_ps
#define vf_add _mm256_add_ps
#define vf_sub _mm256_sub_ps
#define vf_mul _mm256_mul_ps
#define vf_max _mm256_max_ps
#define vf_min _mm256_min_ps
#define vf_fma _mm256_fmadd_ps
#define vf_fmsub _mm256_fmsub_ps
#define vf_abs v_abs
#define vf_exp v_exp
#define vf_hsum v_hsum
#define vf_silu v_silu
#define vf_gelu v_gelu
#define vf_gelu_tanh v_gelu_tanh
#define vf_transpose v_transpose8x8

/* Whether a lane of v is below c (NaN is not). */
static inline int vf_any_below(__m256 v, float c)
{
    return _mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(c), _CMP_LT_OQ)) != 0;
}

/* Lanes [0, n) of p (n <= 8); the others read as 0 and are not touched. */
static inline __m256 vf_load_n(const float *p, size_t n)
{
    return n == 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, v_lane_mask(n));
}

/* Lanes [0, n) of p (n < 8); the others are fill. */
static inline __m256 vf_load_n_or(const float *p, size_t n, __m256 fill)
{
    __m256i m = v_lane_mask(n);
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}

static inline void vf_store_n(float *p, size_t n, __m256 v)
{
    if (n == 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, v_lane_mask(n), v);
}

/* v with lanes [n, 8) set to 0. */
static inline __m256 vf_keep_n(__m256 v, size_t n)
{
    return _mm256_and_ps(v, _mm256_castsi256_ps(v_lane_mask(n)));
}

/* Whether every lane of v is finite (not inf, not NaN). */
static inline int vf_all_finite(__m256 v)
{
    return _mm256_movemask_ps(_mm256_cmp_ps(v_abs(v), _mm256_set1_ps(INFINITY), _CMP_LT_OQ)) == 0xff;
}

/* Bit l set where lane l of v equals value; where it is NaN (nan). */
static inline unsigned vf_eq_bits(__m256 v, __m256 value)
{
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, value, _CMP_EQ_OQ));
}

static inline unsigned vf_nan_bits(__m256 v)
{
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

/* The largest (want_max) or smallest lane, no NaN among them: halves,
 * then pairs, then the last two lanes. */
static inline __m128 v_extreme4(__m128 a, __m128 b, int want_max)
{
    return want_max ? _mm_max_ps(a, b) : _mm_min_ps(a, b);
}

static inline float v_extreme(__m256 v, int want_max)
{
    __m128 m = v_extreme4(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1), want_max);
    m = v_extreme4(m, _mm_movehl_ps(m, m), want_max);
    return _mm_cvtss_f32(v_extreme4(m, _mm_movehdup_ps(m), want_max));
}
#define vf_hmax(v) v_extreme((v), 1)
#define vf_hmin(v) v_extreme((v), 0)

/* The NaN lanes seen so far: a vector of all-ones lanes. */
#define VM __m256
#define vm_none _mm256_setzero_ps
#define vm_or _mm256_or_ps
static inline __m256 vm_nan(__m256 v)
{
    return _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
}

static inline int vm_any(__m256 m)
{
    return _mm256_movemask_ps(m) != 0;
}

/* (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...) */
static inline __m256 vf_swap_pairs(__m256 x)
{
    return _mm256_permute_ps(x, 0xb1);
}

/* The sums of the lanes of a, b, c, d. */
static inline __m128 vf_sum4(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

/* Double accumulators of 4 lanes. */
#define VD __m256d
#define vd_zero _mm256_setzero_pd
#define vd_set _mm256_set1_pd
#define vd_add _mm256_add_pd
#define vd_sub _mm256_sub_pd
#define vd_fma _mm256_fmadd_pd
#define vd_hsum v_hsum_pd
#define vd_widen_add v_widen_add
/* (x, 0, 0, 0) */
static inline __m256d vd_first(double x)
{
    return _mm256_set_pd(0.0, 0.0, 0.0, x);
}

#endif
