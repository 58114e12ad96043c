/* SPDX-License-Identifier: MIT */
/* infer.c - the inference ops of the AVX2 backend (convert, get_rows, rope,
 * attention, swiglu, geglu, geglu_tanh): ../cpu-base/x86-infer_tmpl.c at 8
 * floats a vector, on the operations defined here. */
#include "plugin.h"
#include "x86-avx2-math.h"

#define VF __m256
#define VF_LANES 8
#define SCORE_HEADS 2 /* attention's scores: 2 heads x 4 keys of accumulators */
#define PV_HEADS 4 /* attention's p V: 4 heads x 2 vectors of accumulators of 16 registers */
#define ATT_SCORE_KEYS 12 /* attention, heads in lanes: keys of score accumulators */
#define ATT_PV_DIMS 8 /* and dimensions of p V accumulators */

#define vf_zero _mm256_setzero_ps
#define vf_set _mm256_set1_ps
#define vf_load _mm256_loadu_ps
#define vf_store _mm256_storeu_ps
#define vf_add _mm256_add_ps
#define vf_sub _mm256_sub_ps
#define vf_mul _mm256_mul_ps
#define vf_max _mm256_max_ps
#define vf_fma _mm256_fmadd_ps
#define vf_fmsub _mm256_fmsub_ps
#define vf_exp v_exp
#define vf_hsum v_hsum
#define vf_silu v_silu
#define vf_gelu v_gelu
#define vf_gelu_tanh v_gelu_tanh

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

static inline void vf_store_n(float *p, size_t n, __m256 v)
{
    if (n == 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, v_lane_mask(n), v);
}

/* (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...) */
static inline __m256 vf_swap_pairs(__m256 x)
{
    return _mm256_permute_ps(x, 0xb1);
}

static inline float vf_hmax(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

/* The sums of the lanes of a, b, c, d. */
static inline __m128 vf_sum4(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

#include "x86-infer_tmpl.c"
