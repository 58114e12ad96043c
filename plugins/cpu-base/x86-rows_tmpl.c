/* SPDX-License-Identifier: MIT */
/* x86-rows_tmpl.c - the row ops of the avx2 and avx512 backends (softmax,
 * log_softmax, layernorm, rmsnorm, transpose), written once over the vector
 * interface of avx2-vector.h / avx512-vector.h.  A plugin's rows.c includes
 * that header and defines what differs by width, then includes this file:
 *   row_sum_f64, row_centered_squares_f64, normalize_row   the norms' double
 *                     arithmetic (cpu-rows_tmpl.c says what each does)
 *   ROWS_EXP_COST, ROWS_NORM_COST   their costs (cpu-rows_tmpl.c)
 *   TRANSPOSE_TILE, TRANSPOSE_COST  optional (cpu-transpose_tmpl.c)
 * This file gives the softmaxes and a VF_LANES x VF_LANES transpose block,
 * then includes cpu-rows_tmpl.c and cpu-transpose_tmpl.c.
 *
 * y may be x (in place): every row reads x completely, or element by
 * element just before writing it, before any write that could clobber an
 * element still needed.
 */

#include <math.h>

#ifndef VF_LANES
#error "include avx2-vector.h or avx512-vector.h before x86-rows_tmpl.c"
#endif

/* ---- softmax, log_softmax -------------------------------------------------- */

/* sum of exp(x[j] - mx), float lanes within blocks of 1024 elements, double
 * across blocks; with y, the terms are stored too (y may be x).  Inlined,
 * so log_softmax's call (y NULL: it needs x afterwards) has no stores. */
static inline __attribute__((always_inline)) double exp_shifted_sum(const float *x, float *y, size_t n,
                                                                    float mx)
{
    const VF shift = vf_set(mx);
    VD total = vd_zero();
    size_t j = 0;
    while (j < n) {
        size_t block_end = n - j > 1024 ? j + 1024 : n;
        VF acc0 = vf_zero(), acc1 = acc0;
        for (; j + 2 * VF_LANES <= block_end; j += 2 * VF_LANES) {
            VF e0 = vf_exp(vf_sub(vf_load(x + j), shift));
            VF e1 = vf_exp(vf_sub(vf_load(x + j + VF_LANES), shift));
            if (y) {
                vf_store(y + j, e0);
                vf_store(y + j + VF_LANES, e1);
            }
            acc0 = vf_add(acc0, e0);
            acc1 = vf_add(acc1, e1);
        }
        for (; j < block_end; j += VF_LANES) {
            size_t count = block_end - j < VF_LANES ? block_end - j : VF_LANES;
            VF e = vf_keep_n(vf_exp(vf_sub(vf_load_n(x + j, count), shift)), count); /* unused lanes add 0 */
            if (y)
                vf_store_n(y + j, count, e);
            acc0 = vf_add(acc0, e);
        }
        total = vd_widen_add(total, vf_add(acc0, acc1));
    }
    return vd_hsum(total);
}

/* Max-subtracted, so exp never overflows; a NaN in the row makes the max
 * NaN and the whole row NaN, as in the reference and the scalar backend. */
static void softmax_row(const float *x, float *y, size_t n)
{
    float mx = CPU_KERNEL(max_f32)(x, n);
    const VF f = vf_set((float)(1.0 / exp_shifted_sum(x, y, n, mx)));
    size_t j = 0;
    for (; j + VF_LANES <= n; j += VF_LANES)
        vf_store(y + j, vf_mul(vf_load(y + j), f));
    if (j < n)
        vf_store_n(y + j, n - j, vf_mul(vf_load_n(y + j, n - j), f));
}

/* y = (x - max) - log(sum exp(x - max)), in that order: max + log(sum) as
 * one shift would lose log(sum) against a large max (a constant row of
 * 1e30).  x - max and y have the same sign and |x - max| <= |y|, so each
 * float rounding costs at most 2^-24 |y|. */
static void log_softmax_row(const float *x, float *y, size_t n)
{
    float mx = CPU_KERNEL(max_f32)(x, n);
    const VF vmx = vf_set(mx);
    const VF vlog = vf_set((float)log(exp_shifted_sum(x, NULL, n, mx)));
    size_t j = 0;
    for (; j + VF_LANES <= n; j += VF_LANES)
        vf_store(y + j, vf_sub(vf_sub(vf_load(x + j), vmx), vlog));
    if (j < n)
        vf_store_n(y + j, n - j, vf_sub(vf_sub(vf_load_n(x + j, n - j), vmx), vlog));
}

#include "cpu-rows_tmpl.c"

/* ---- transpose: y (n x m) = a (m x n)^T ------------------------------------- */

/* A VF_LANES-square block: rows of a (stride lda) become columns of y
 * (stride ldy); tiles and bands on the pool are cpu-transpose_tmpl.c's. */
#define TRANSPOSE_BLOCK VF_LANES
static inline void transpose_block(const float *a, size_t lda, float *y, size_t ldy)
{
    VF r[VF_LANES];
    for (int k = 0; k < VF_LANES; k++)
        r[k] = vf_load(a + k * lda);
    vf_transpose(r);
    for (int k = 0; k < VF_LANES; k++)
        vf_store(y + k * ldy, r[k]);
}

#include "cpu-transpose_tmpl.c"
