/* SPDX-License-Identifier: MIT */
/* transpose.c - y (n x m) = a (m x n)^T: 4 x 4 register transposes
 * (TRN1/TRN2) inside the cache-blocked tiles of cpu-transpose_tmpl.c
 * (cpu-base.h), shared by every CPU plugin.
 */
#include "plugin.h"

#include <arm_neon.h>

/* y[0..3][0..3] (leading dimension ldy) = a[0..3][0..3]^T (leading dimension lda). */
#define TRANSPOSE_BLOCK 4
static inline void transpose_block(const float *a, size_t lda, float *y, size_t ldy)
{
    float32x4_t r0 = vld1q_f32(a), r1 = vld1q_f32(a + lda);
    float32x4_t r2 = vld1q_f32(a + 2 * lda), r3 = vld1q_f32(a + 3 * lda);
    /* pairs: t0 = a00 a10 a02 a12, t1 = a01 a11 a03 a13, t2/t3 likewise for rows 2, 3 */
    float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1));
    float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
    float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3));
    float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
    vst1q_f32(y, vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)));
    vst1q_f32(y + ldy, vreinterpretq_f32_f64(vtrn1q_f64(t1, t3)));
    vst1q_f32(y + 2 * ldy, vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)));
    vst1q_f32(y + 3 * ldy, vreinterpretq_f32_f64(vtrn2q_f64(t1, t3)));
}

#include "cpu-transpose_tmpl.c"
