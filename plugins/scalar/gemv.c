/* SPDX-License-Identifier: MIT */
/* gemv.c - y = alpha op(A) x + beta y, A row-major rows x cols.
 *
 *   no transpose: y[i] = dot(A row i, x): the blocked dot of reduce.c.
 *   transpose:    y[j] = sum_i A[i][j] x[i]: rows are added into a block of
 *                 column accumulators (axpy form, so A is read in order);
 *                 RB rows at a time in float, then into double, to keep the
 *                 error of tall matrices near 1e-6 of sum|terms|.
 * Rows (or column blocks) are split over the pool when A is large (the
 * shared driver, cpu-base/cpu-gemm.c).
 * beta == 0 never reads y.
 */
#include "plugin.h"

#define JB 256  /* columns per block of the transposed product */
#define RB 64   /* rows per float partial sum */

/* y[lo..hi) of the product without transpose */
static void gemv_rows(const cpu_gemv_job *job, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        job->y[i] = cpu_gemv_finish(scalar_dot_f64(job->A + i * job->lda, job->x, job->cols),
                                    job->alpha, job->beta, &job->y[i]);
}

/* part[0..jb) += xi * row[0..jb): groups of 16 with a constant bound, which
 * gcc -O2 vectorises (a loop to a variable bound it leaves scalar). */
static void add_scaled_row(float *restrict part, const float *restrict row, float xi, size_t jb)
{
    size_t j = 0;
    for (; j + 16 <= jb; j += 16)
        for (size_t l = 0; l < 16; l++)
            part[j + l] += xi * row[j + l];
    for (; j < jb; j++)
        part[j] += xi * row[j];
}

/* Columns [j0, j0 + jb) of the transposed product. */
static void gemv_columns(const cpu_gemv_job *job, size_t j0, size_t jb)
{
    double total[JB] = { 0 };
    float part[JB];
    for (size_t i0 = 0; i0 < job->rows; i0 += RB) {
        size_t i1 = i0 + RB < job->rows ? i0 + RB : job->rows;
        for (size_t j = 0; j < jb; j++)
            part[j] = 0.0f;
        for (size_t i = i0; i < i1; i++)
            add_scaled_row(part, job->A + i * job->lda + j0, job->x[i], jb);
        for (size_t j = 0; j < jb; j++)
            total[j] += part[j];
    }
    for (size_t j = 0; j < jb; j++)
        job->y[j0 + j] = cpu_gemv_finish(total[j], job->alpha, job->beta, &job->y[j0 + j]);
}

const cpu_gemv_kernel scalar_gemv_kernels = { JB, gemv_rows, gemv_columns };

SCALAR_KERNEL(gemv)
{
    return cpu_gemv_call(state, &scalar_gemv_kernels, call);
}
