/* SPDX-License-Identifier: MIT */
/* avx512-vector.h - the vector interface the x86 kernel templates are
 * written over (../cpu-base/x86-*_tmpl.c), at 16 floats a vector: VF and its
 * vf_* operations, the double accumulator VD (vd_*) and the NaN mask VM
 * (vm_*, an opmask).  ../avx2/avx2-vector.h defines the same names at 8. */
#ifndef RAYO_AVX512_VECTOR_H
#define RAYO_AVX512_VECTOR_H

#include "avx512-math.h"

#define VF __m512
#define VF_LANES 16

#define vf_zero _mm512_setzero_ps
#define vf_set _mm512_set1_ps
#define vf_load _mm512_loadu_ps
#define vf_store _mm512_storeu_ps
#define vf_add _mm512_add_ps
#define vf_sub _mm512_sub_ps
#define vf_mul _mm512_mul_ps
#define vf_max _mm512_max_ps
#define vf_min _mm512_min_ps
#define vf_fma _mm512_fmadd_ps
#define vf_fmsub _mm512_fmsub_ps
#define vf_abs _mm512_abs_ps
#define vf_exp z_exp
#define vf_hsum _mm512_reduce_add_ps
#define vf_hmax _mm512_reduce_max_ps
#define vf_hmin _mm512_reduce_min_ps
#define vf_silu z_silu
#define vf_gelu z_gelu
#define vf_gelu_tanh z_gelu_tanh
#define vf_transpose z_transpose16x16

/* Whether a lane of v is below c (NaN is not). */
static inline int vf_any_below(__m512 v, float c)
{
    return _mm512_cmp_ps_mask(v, _mm512_set1_ps(c), _CMP_LT_OQ) != 0;
}

/* Lanes [0, n) of p (n <= 16); the others read as 0 and are not touched. */
static inline __m512 vf_load_n(const float *p, size_t n)
{
    return _mm512_maskz_loadu_ps(z_lanes(n), p);
}

/* Lanes [0, n) of p (n < 16); the others are fill. */
static inline __m512 vf_load_n_or(const float *p, size_t n, __m512 fill)
{
    return _mm512_mask_loadu_ps(fill, z_lanes(n), p);
}

static inline void vf_store_n(float *p, size_t n, __m512 v)
{
    z_store_lanes(p, z_lanes(n), v);
}

/* v with lanes [n, 16) set to 0. */
static inline __m512 vf_keep_n(__m512 v, size_t n)
{
    return _mm512_maskz_mov_ps(z_lanes(n), v);
}

/* Whether every lane of v is finite (fpclass 0x99: NaN or +-inf). */
static inline int vf_all_finite(__m512 v)
{
    return _mm512_fpclass_ps_mask(v, 0x99) == 0;
}

/* Bit l set where lane l of v equals value; where it is NaN (nan). */
static inline unsigned vf_eq_bits(__m512 v, __m512 value)
{
    return _mm512_cmp_ps_mask(v, value, _CMP_EQ_OQ);
}

static inline unsigned vf_nan_bits(__m512 v)
{
    return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
}

/* (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...) */
static inline __m512 vf_swap_pairs(__m512 x)
{
    return _mm512_permute_ps(x, 0xb1);
}

/* The sums of the lanes of a, b, c, d. */
static inline __m128 vf_sum4(__m512 a, __m512 b, __m512 c, __m512 d)
{
    __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
    __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xee));
    /* ab: a's halves summed in lanes 0-7, b's in 8-15; the same for cd */
    __m256 lo = _mm256_hadd_ps(_mm512_castps512_ps256(ab), _mm512_extractf32x8_ps(ab, 1));
    __m256 hi = _mm256_hadd_ps(_mm512_castps512_ps256(cd), _mm512_extractf32x8_ps(cd, 1));
    __m256 abcd = _mm256_hadd_ps(lo, hi);
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

/* The NaN lanes seen so far: an opmask. */
#define VM __mmask16
#define vm_none() ((__mmask16)0)
#define vm_or(a, b) ((__mmask16)((a) | (b)))
#define vm_nan(v) _mm512_cmp_ps_mask((v), (v), _CMP_UNORD_Q)
#define vm_any(m) ((m) != 0)

/* Double accumulators of 8 lanes. */
#define VD __m512d
#define vd_zero _mm512_setzero_pd
#define vd_set _mm512_set1_pd
#define vd_add _mm512_add_pd
#define vd_sub _mm512_sub_pd
#define vd_fma _mm512_fmadd_pd
#define vd_hsum _mm512_reduce_add_pd
#define vd_widen_add z_widen_add
/* (x, 0, ..., 0) */
static inline __m512d vd_first(double x)
{
    return _mm512_set_pd(0, 0, 0, 0, 0, 0, 0, x);
}

#endif
