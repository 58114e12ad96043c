/* SPDX-License-Identifier: MIT */
/* infer.c - the inference ops of the AVX-512 backend (convert, get_rows,
 * rope, attention, swiglu, geglu, geglu_tanh): ../cpu-base/x86-infer_tmpl.c at
 * 16 floats a vector, on the operations defined here. */
#include "plugin.h"
#include "avx512-math.h"
#include "x86-avx2-math.h" /* v_exp: attention's heads in lanes are 256-bit */

#define VF __m512
#define VF_LANES 16
#define SCORE_HEADS 4 /* attention's scores: 4 heads x 4 keys of accumulators */
#define PV_HEADS 8 /* attention's p V: 8 heads x 2 vectors of accumulators of 32 registers */
#define ATT_SCORE_KEYS 24 /* attention, heads in lanes: keys of score accumulators */
#define ATT_PV_DIMS 16 /* and dimensions of p V accumulators */

#define vf_zero _mm512_setzero_ps
#define vf_set _mm512_set1_ps
#define vf_load _mm512_loadu_ps
#define vf_store _mm512_storeu_ps
#define vf_add _mm512_add_ps
#define vf_sub _mm512_sub_ps
#define vf_mul _mm512_mul_ps
#define vf_max _mm512_max_ps
#define vf_fma _mm512_fmadd_ps
#define vf_fmsub _mm512_fmsub_ps
#define vf_exp z_exp
#define vf_hsum _mm512_reduce_add_ps
#define vf_hmax _mm512_reduce_max_ps
#define vf_silu z_silu
#define vf_gelu z_gelu
#define vf_gelu_tanh z_gelu_tanh

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

static inline void vf_store_n(float *p, size_t n, __m512 v)
{
    z_store_lanes(p, z_lanes(n), v);
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

#include "x86-infer_tmpl.c"
