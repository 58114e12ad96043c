/* gemv.c - y = alpha op(A) x + beta y with A row-major rows x cols:
 *   no transpose: y[i] = the blocked dot (reduce.c) of row i and x.
 *   transpose:    y[j] = sum_i A[i][j] x[i]: a block of JB columns lives in
 *                 JB/4 vector accumulators while the rows stream by (A is
 *                 read in order); every RB rows the float partials go into
 *                 double, to keep tall matrices near 1e-6 of sum|terms|.
 *   beta == 0 never reads y.  Rows (or column blocks) split over the pool.
 */
#include "plugin.h"
#include "math.h"

#define JB 32  /* columns per block of the transposed gemv (8 accumulators) */
#define RB 64  /* rows per float partial of the transposed gemv */
#define GEMV_PARALLEL_MIN ((size_t)1 << 18) /* elements of A */

typedef struct gemv_job {
    size_t rows, cols;
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
    size_t hi = job->rows - lo > job->chunk ? lo + job->chunk : job->rows;
    (void)worker;
    for (size_t i = lo; i < hi; i++)
        job->y[i] = finish(neon_dot_f64(job->A + i * job->cols, job->x, job->cols), job->alpha,
                           job->beta, &job->y[i]);
}

/* Columns [j0, j0 + JB) of the transposed product, all full vectors. */
static void gemv_t_full_block(const gemv_job *job, size_t j0, double *total)
{
    for (size_t i0 = 0; i0 < job->rows; i0 += RB) {
        size_t i1 = job->rows - i0 > RB ? i0 + RB : job->rows;
        float32x4_t acc[JB / 4];
        for (size_t v = 0; v < JB / 4; v++)
            acc[v] = vdupq_n_f32(0.0f);
        for (size_t i = i0; i < i1; i++) {
            const float *row = job->A + i * job->cols + j0;
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
static void gemv_t_edge_block(const gemv_job *job, size_t j0, size_t jb, double *total)
{
    for (size_t i0 = 0; i0 < job->rows; i0 += RB) {
        size_t i1 = job->rows - i0 > RB ? i0 + RB : job->rows;
        float part[JB] = { 0.0f };
        for (size_t i = i0; i < i1; i++) {
            const float *row = job->A + i * job->cols + j0;
            for (size_t j = 0; j < jb; j++)
                part[j] = __builtin_fmaf(row[j], job->x[i], part[j]);
        }
        for (size_t j = 0; j < jb; j++)
            total[j] += part[j];
    }
}

static void gemv_t_task(void *arg, size_t task, unsigned worker)
{
    const gemv_job *job = arg;
    (void)worker;
    for (size_t b = task * job->chunk; b < (task + 1) * job->chunk; b++) {
        size_t j0 = b * JB;
        if (j0 >= job->cols)
            break;
        size_t jb = job->cols - j0 < JB ? job->cols - j0 : JB;
        double total[JB] = { 0.0 };
        if (jb == JB)
            gemv_t_full_block(job, j0, total);
        else
            gemv_t_edge_block(job, j0, jb, total);
        for (size_t j = 0; j < jb; j++)
            job->y[j0 + j] = finish(total[j], job->alpha, job->beta, &job->y[j0 + j]);
    }
}

rayo_status neon_gemv_run(const cpu_state *st, int trans, size_t rows, size_t cols,
                          float alpha, const float *A, const float *x, float beta, float *y)
{
    gemv_job job = { rows, cols, alpha, beta, A, x, y, 0 };
    size_t units = trans ? (cols + JB - 1) / JB : rows;
    if (units == 0)
        return RAYO_OK;
    size_t tasks = 1, threads = cpu_threads(st);
    if (threads > 1 && rows * cols >= GEMV_PARALLEL_MIN)
        tasks = 4 * threads < units ? 4 * threads : units;
    job.chunk = (units + tasks - 1) / tasks;
    tasks = (units + job.chunk - 1) / job.chunk;
    cpu_parallel(st, tasks, trans ? gemv_t_task : gemv_n_task, &job);
    return RAYO_OK;
}

NEON_KERNEL(gemv)
{
    if (rayo_call_strided(call))
        return RAYO_E_UNSUPPORTED; /* row strides: not in this kernel yet */
    if (call->flags & ~(uint32_t)RAYO_TRANS_A)
        return RAYO_E_UNSUPPORTED;
    return neon_gemv_run(state, (call->flags & RAYO_TRANS_A) != 0, call->m, call->n,
                         call->alpha, call->a, call->b, call->beta, call->y);
}
