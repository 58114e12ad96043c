/* SPDX-License-Identifier: MIT */
/* x86-gemv_tmpl.c - gemv of avx2 and avx512 (y = alpha op(A) x + beta y,
 * row-major A rows x cols), written once over each plugin's vector kernels.
 * Included by the plugin's gemv source, which defines X86_GEMV_RUN (the
 * name of its gemv_run, declared in its plugin.h) and ROW_BLOCK first, and
 * after it (the kernels it declares here):
 *   gemv_rows(job, begin, end)   y for rows [begin, end), no transpose
 *   accumulate4(acc, a0..a3, x, w), accumulate1(acc, a0, x0, w)
 *                                acc[0..w) += x[i] * row segment i
 *   flush_strip(total, acc, w)   total[0..w) += acc in double; acc = 0
 * Accuracy at any length (contract 1e-5 of sum|terms|): float lanes add at
 * most ROW_BLOCK (or a dot block's) terms before they go to double sums. */

/* alpha * sum + beta * y, as the scalar backend (beta == 0: y unread). */
static inline float finish(double sum, float alpha, float beta, const float *y)
{
    float v = (float)(alpha * sum);
    return beta == 0.0f ? v : v + beta * *y;
}

typedef struct gemv_job {
    size_t rows, cols;
    float alpha, beta;
    const float *A, *x;
    float *y;
    size_t chunk;                /* rows (no transpose) or columns (transpose) per task */
} gemv_job;

static void gemv_rows(const gemv_job *job, size_t begin, size_t end);
static void accumulate4(float *acc, const float *a0, const float *a1, const float *a2, const float *a3,
                        const float *x, size_t w);
static void accumulate1(float *acc, const float *a0, float x0, size_t w);
static void flush_strip(double *total, float *acc, size_t w);

static size_t gemv_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

#define COL_STRIP 2048 /* 8 KiB of float sums + 16 KiB of double totals: in L1 */

/* Transposed: y[j] = alpha sum_i A[i][j] x[i] + beta y[j] for columns
 * [begin, end).  Rows of A are streamed whole (contiguous, what the hardware
 * prefetcher likes) and accumulated, four at a time, into a strip of float
 * sums that stays in L1 and goes to double totals every ROW_BLOCK rows. */
static void gemv_cols(const gemv_job *job, size_t begin, size_t end)
{
    float acc[COL_STRIP];
    double total[COL_STRIP];
    for (size_t j = begin; j < end; j += COL_STRIP) {
        size_t w = gemv_min(COL_STRIP, end - j);
        memset(acc, 0, w * sizeof acc[0]);
        memset(total, 0, w * sizeof total[0]);
        const float *col = job->A + j;
        size_t lda = job->cols, i = 0;
        while (i < job->rows) {
            size_t block_end = gemv_min(i + ROW_BLOCK, job->rows);
            for (; i + 4 <= block_end; i += 4)
                accumulate4(acc, col + i * lda, col + (i + 1) * lda, col + (i + 2) * lda, col + (i + 3) * lda,
                            job->x + i, w);
            for (; i < block_end; i++)
                accumulate1(acc, col + i * lda, job->x[i], w);
            flush_strip(total, acc, w);
        }
        for (size_t c = 0; c < w; c++) /* a sum past FLT_MAX is redone (cpu-f64-fallback.h) */
            job->y[j + c] = finish(cpu_dot_redo(total[c], col + c, lda, job->x, job->rows), job->alpha,
                                   job->beta, &job->y[j + c]);
    }
}

static void gemv_rows_task(void *arg, size_t task, unsigned worker)
{
    const gemv_job *job = arg;
    (void)worker;
    size_t begin = task * job->chunk;
    gemv_rows(job, begin, gemv_min(begin + job->chunk, job->rows));
}

static void gemv_cols_task(void *arg, size_t task, unsigned worker)
{
    const gemv_job *job = arg;
    (void)worker;
    size_t begin = task * job->chunk;
    gemv_cols(job, begin, gemv_min(begin + job->chunk, job->cols));
}

#define GEMV_PARALLEL_MIN ((size_t)1 << 16) /* elements of A */

/* y = alpha op(A) x + beta y with A rows x cols; trans: op(A) = A^T. */
void X86_GEMV_RUN(const x86_state *st, int trans, size_t rows, size_t cols, float alpha, const float *A,
                  const float *x, float beta, float *y)
{
    gemv_job job = { rows, cols, alpha, beta, A, x, y, 0 };
    unsigned threads = cpu_threads(&st->cpu);
    size_t units = trans ? cols : rows;
    size_t granule = trans ? 64 : 4;
    size_t tasks = rows * cols >= GEMV_PARALLEL_MIN && threads > 1 ? threads : 1;
    job.chunk = ((units + tasks - 1) / tasks + granule - 1) / granule * granule;
    tasks = (units + job.chunk - 1) / job.chunk;
    cpu_parallel(&st->cpu, tasks, trans ? gemv_cols_task : gemv_rows_task, &job);
}

CPU_KERNEL_FN(gemv)
{
    if (rayo_call_strided(call))
        return RAYO_E_UNSUPPORTED; /* row strides: the scalar backend takes them */
    if (call->m == 0 || call->n == 0)
        return RAYO_OK;
    X86_GEMV_RUN(state, (call->flags & RAYO_TRANS_A) != 0, call->m, call->n, call->alpha, call->a, call->b,
                 call->beta, call->y);
    return RAYO_OK;
}
