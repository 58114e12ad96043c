/* gemv.c - y = alpha op(A) x + beta y, A row-major rows x cols.
 *
 *   no transpose: y[i] = dot(A row i, x): the blocked dot of reduce.c.
 *   transpose:    y[j] = sum_i A[i][j] x[i]: rows are added into a block of
 *                 column accumulators (axpy form, so A is read in order);
 *                 RB rows at a time in float, then into double, to keep the
 *                 error of tall matrices near 1e-6 of sum|terms|.
 * Rows (or column blocks) are split over the pool when A is large.
 * beta == 0 never reads y.
 */
#include "plugin.h"

#define JB 256  /* columns per block of the transposed product */
#define RB 64   /* rows per float partial sum */
#define GEMV_PARALLEL_MIN ((size_t)1 << 18) /* elements of A */

typedef struct gemv_job {
    size_t rows, cols, lda; /* lda: elements between row starts of A */
    float alpha, beta;
    const float *A, *x;
    float *y;
    size_t chunk; /* rows (no transpose) or column blocks (transpose) per task */
} gemv_job;

static float finish(double sum, float alpha, float beta, const float *y)
{
    double v = (double)alpha * sum;
    return (float)(beta == 0.0f ? v : v + (double)beta * *y);
}

static void gemv_n_task(void *arg, size_t task, unsigned worker)
{
    const gemv_job *job = arg;
    size_t lo = task * job->chunk;
    size_t hi = lo + job->chunk < job->rows ? lo + job->chunk : job->rows;
    (void)worker;
    for (size_t i = lo; i < hi; i++)
        job->y[i] = finish(scalar_dot_f64(job->A + i * job->lda, job->x, job->cols), job->alpha,
                           job->beta, &job->y[i]);
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
static void gemv_t_block(const gemv_job *job, size_t j0, size_t jb)
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
        job->y[j0 + j] = finish(total[j], job->alpha, job->beta, &job->y[j0 + j]);
}

static void gemv_t_task(void *arg, size_t task, unsigned worker)
{
    const gemv_job *job = arg;
    (void)worker;
    for (size_t b = task * job->chunk; b < (task + 1) * job->chunk; b++) {
        size_t j0 = b * JB;
        if (j0 >= job->cols)
            break;
        gemv_t_block(job, j0, job->cols - j0 < JB ? job->cols - j0 : JB);
    }
}

/* Splits `units` (rows or column blocks) into tasks when A is large. */
static size_t task_count(const cpu_state *st, size_t units, size_t elements)
{
    size_t threads = cpu_threads(st);
    if (threads < 2 || elements < GEMV_PARALLEL_MIN)
        return 1;
    size_t tasks = 4 * threads;
    return tasks < units ? tasks : units;
}

rayo_status scalar_gemv_run(const cpu_state *st, int trans, size_t rows, size_t cols, size_t lda,
                            float alpha, const float *A, const float *x, float beta, float *y)
{
    gemv_job job = { rows, cols, lda ? lda : cols, alpha, beta, A, x, y, 0 };
    size_t units = trans ? (cols + JB - 1) / JB : rows;
    if (units == 0)
        return RAYO_OK;
    size_t tasks = task_count(st, units, rows * cols);
    job.chunk = (units + tasks - 1) / tasks;
    tasks = (units + job.chunk - 1) / job.chunk;
    cpu_parallel(st, tasks, trans ? gemv_t_task : gemv_n_task, &job);
    return RAYO_OK;
}

SCALAR_KERNEL(gemv)
{
    if (call->flags & ~(uint32_t)RAYO_TRANS_A)
        return RAYO_E_UNSUPPORTED;
    return scalar_gemv_run(state, (call->flags & RAYO_TRANS_A) != 0, call->m, call->n, call->lda,
                           call->alpha, call->a, call->b, call->beta, call->y);
}
