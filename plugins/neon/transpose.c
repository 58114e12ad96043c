/* transpose.c - y (n x m) = a (m x n)^T: 4 x 4 register transposes
 * (TRN1/TRN2) inside 32 x 32 tiles that stay in L1 both ways; bands of rows
 * run on the pool.
 */
#include "plugin.h"

#include <arm_neon.h>

#define TB 32  /* transpose tile */

/* y[0..3][0..3] (leading dimension ldy) = a[0..3][0..3]^T (leading dimension lda). */
static inline void transpose_4x4(const float *a, size_t lda, float *y, size_t ldy)
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

/* Rows [i0, i1) x columns [j0, j1) of a (m x n) into y (n x m). */
static void transpose_tile(const float *a, float *y, size_t m, size_t n, size_t i0, size_t i1,
                           size_t j0, size_t j1)
{
    size_t i4 = i0 + (i1 - i0) / 4 * 4, j4 = j0 + (j1 - j0) / 4 * 4;
    for (size_t i = i0; i < i4; i += 4)
        for (size_t j = j0; j < j4; j += 4)
            transpose_4x4(a + i * n + j, n, y + j * m + i, m);
    /* the ragged right columns and bottom rows */
    for (size_t j = j4; j < j1; j++)
        for (size_t i = i0; i < i1; i++)
            y[j * m + i] = a[i * n + j];
    for (size_t j = j0; j < j4; j++)
        for (size_t i = i4; i < i1; i++)
            y[j * m + i] = a[i * n + j];
}

/* Items of the range are bands of TB rows of a. */
static void transpose_bands(const rayo_call *c, size_t lo, size_t hi)
{
    size_t m = c->m, n = c->n;
    for (size_t band = lo; band < hi; band++) {
        size_t i0 = band * TB, i1 = m - i0 > TB ? i0 + TB : m;
        for (size_t j0 = 0; j0 < n; j0 += TB)
            transpose_tile(c->a, c->y, m, n, i0, i1, j0, n - j0 > TB ? j0 + TB : n);
    }
}

NEON_KERNEL(transpose)
{
    cpu_run_ranges(state, call, (call->m + TB - 1) / TB, TB * call->n, transpose_bands);
    return RAYO_OK;
}
