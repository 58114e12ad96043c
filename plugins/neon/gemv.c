/* SPDX-License-Identifier: MIT */
/* gemv.c - y = alpha op(A) x + beta y with A row-major rows x cols:
 *   no transpose: y[i] = the blocked dot (reduce.c) of row i and x.
 *   transpose:    y[j] = sum_i A[i][j] x[i]: a block of JB columns lives in
 *                 JB/4 vector accumulators while the rows stream by (A is
 *                 read in order); every RB rows the float partials go into
 *                 double, to keep tall matrices near 1e-6 of sum|terms|.
 *   A sum past FLT_MAX (products near 1e38 that cancel) is redone in double
 *   (cpu-f64-fallback.h).
 *   beta == 0 never reads y.  Rows (or column blocks) split over the pool
 *   by the shared driver, cpu-base/cpu-gemm.c.
 */
#include "plugin.h"
#include "neon-math.h"

#define JB 32  /* columns per block of the transposed gemv (8 accumulators) */
#define RB 64  /* rows per float partial of the transposed gemv */

/* y[lo..hi) of the product without transpose */
static void gemv_rows(const cpu_gemv_job *job, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        job->y[i] = cpu_gemv_finish(cpu_dot_redo(neon_dot_f64(job->A + i * job->lda, job->x, job->cols),
                                                 job->A + i * job->lda, 1, job->x, job->cols),
                                    job->alpha, job->beta, &job->y[i]);
}

/* Columns [j0, j0 + JB) of the transposed product, all full vectors. */
static void gemv_t_full_block(const cpu_gemv_job *job, size_t j0, double *total)
{
    for (size_t i0 = 0; i0 < job->rows; i0 += RB) {
        size_t i1 = job->rows - i0 > RB ? i0 + RB : job->rows;
        float32x4_t acc[JB / 4];
        for (size_t v = 0; v < JB / 4; v++)
            acc[v] = vdupq_n_f32(0.0f);
        for (size_t i = i0; i < i1; i++) {
            const float *row = job->A + i * job->lda + j0;
            const float xi = job->x[i];
            for (size_t v = 0; v < JB / 4; v++)
                acc[v] = vfmaq_n_f32(acc[v], vld1q_f32(row + 4 * v), xi);
        }
        for (size_t v = 0; v < JB / 4; v++) {
            float part[4];
            vst1q_f32(part, acc[v]);
            for (size_t l = 0; l < 4; l++)
                total[4 * v + l] += part[l];
        }
    }
}

/* The last, narrower block (jb < JB columns): plain loops. */
static void gemv_t_edge_block(const cpu_gemv_job *job, size_t j0, size_t jb, double *total)
{
    for (size_t i0 = 0; i0 < job->rows; i0 += RB) {
        size_t i1 = job->rows - i0 > RB ? i0 + RB : job->rows;
        float part[JB] = { 0.0f };
        for (size_t i = i0; i < i1; i++) {
            const float *row = job->A + i * job->lda + j0;
            for (size_t j = 0; j < jb; j++)
                part[j] = __builtin_fmaf(row[j], job->x[i], part[j]);
        }
        for (size_t j = 0; j < jb; j++)
            total[j] += part[j];
    }
}

/* Columns [j0, j0 + jb) of the transposed product. */
static void gemv_columns(const cpu_gemv_job *job, size_t j0, size_t jb)
{
    double total[JB] = { 0.0 };
    if (jb == JB)
        gemv_t_full_block(job, j0, total);
    else
        gemv_t_edge_block(job, j0, jb, total);
    cpu_gemv_store_columns(job, j0, jb, total);
}

const cpu_gemv_kernel neon_gemv_kernels = { JB, gemv_rows, gemv_columns };

NEON_KERNEL(gemv)
{
    return cpu_gemv_call_dense(state, &neon_gemv_kernels, call); /* row strides: not yet */
}
