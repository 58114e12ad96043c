/* SPDX-License-Identifier: MIT */
/* cpu-gemm.c - the matmul and gemv drivers of the CPU plugins (see
 * cpu-gemm.h): call checks, edge cases, tile plans and task splits. */
#include "cpu-gemm.h"

#define GEMV_PARALLEL_MIN ((size_t)1 << 18)   /* elements of A */
#define MATMUL_PARALLEL_MIN ((size_t)1 << 18) /* m * n * k below which one thread runs */

static size_t round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

/* ---- gemv ---------------------------------------------------------------- */
static void gemv_rows_task(void *arg, size_t task, unsigned worker)
{
    const cpu_gemv_job *job = arg;
    size_t lo = task * job->chunk;
    (void)worker;
    job->kernel->rows(job, lo, cpu_min_size(lo + job->chunk, job->rows));
}

static void gemv_columns_task(void *arg, size_t task, unsigned worker)
{
    const cpu_gemv_job *job = arg;
    size_t jb = job->kernel->jb;
    (void)worker;
    for (size_t b = task * job->chunk; b < (task + 1) * job->chunk; b++) {
        size_t j0 = b * jb;
        if (j0 >= job->cols)
            break;
        job->kernel->columns(job, j0, cpu_min_size(jb, job->cols - j0));
    }
}

rayo_status cpu_gemv_run(const cpu_state *st, const cpu_gemv_kernel *kernel, int trans,
                         size_t rows, size_t cols, size_t lda, float alpha, const float *A,
                         const float *x, float beta, float *y)
{
    cpu_gemv_job job = { rows, cols, lda ? lda : cols, alpha, beta, A, x, y, 0, kernel };
    /* units of work: rows, or blocks of jb columns */
    size_t units = trans ? (cols + kernel->jb - 1) / kernel->jb : rows;
    if (units == 0)
        return RAYO_OK;
    size_t tasks = 1, threads = cpu_threads(st);
    if (threads > 1 && rows * cols >= GEMV_PARALLEL_MIN)
        tasks = cpu_min_size(4 * threads, units);
    job.chunk = (units + tasks - 1) / tasks;
    tasks = (units + job.chunk - 1) / job.chunk;
    cpu_parallel(st, tasks, trans ? gemv_columns_task : gemv_rows_task, &job);
    return RAYO_OK;
}

rayo_status cpu_gemv_call(const cpu_state *st, const cpu_gemv_kernel *kernel,
                          const rayo_call *call)
{
    if (call->flags & ~(uint32_t)RAYO_TRANS_A)
        return RAYO_E_UNSUPPORTED;
    return cpu_gemv_run(st, kernel, (call->flags & RAYO_TRANS_A) != 0, call->m, call->n,
                        call->lda, call->alpha, call->a, call->b, call->beta, call->y);
}

rayo_status cpu_gemv_call_dense(const cpu_state *st, const cpu_gemv_kernel *kernel, const rayo_call *call)
{
    if (rayo_call_strided(call))
        return RAYO_E_UNSUPPORTED;
    return cpu_gemv_call(st, kernel, call);
}

/* ---- matmul -------------------------------------------------------------- */
/* k == 0: op(A) op(B) is the zero matrix. */
static void scale_c(float *C, size_t count, float beta)
{
    for (size_t i = 0; i < count; i++)
        C[i] = beta == 0.0f ? 0.0f : beta * C[i];
}

static void set_strides(cpu_gemm_job *job, uint32_t flags)
{
    int ta = (flags & RAYO_TRANS_A) != 0, tb = (flags & RAYO_TRANS_B) != 0;
    job->a_rs = ta ? 1 : job->k; /* A stored m x k, or k x m when transposed */
    job->a_cs = ta ? job->m : 1;
    job->b_rs = tb ? 1 : job->n; /* B stored k x n, or n x k when transposed */
    job->b_cs = tb ? job->k : 1;
}

/* m == 1 or n == 1: a matrix-vector product (the vector operand is
 * contiguous whatever the transpose flags). */
static rayo_status matmul_as_gemv(const cpu_state *st, const rayo_call *c,
                                  const cpu_gemv_kernel *gemv)
{
    int ta = (c->flags & RAYO_TRANS_A) != 0, tb = (c->flags & RAYO_TRANS_B) != 0;
    if (c->n == 1) /* C column = op(A) b */
        return ta ? cpu_gemv_run(st, gemv, 1, c->k, c->m, 0, c->alpha, c->a, c->b, c->beta, c->y)
                  : cpu_gemv_run(st, gemv, 0, c->m, c->k, 0, c->alpha, c->a, c->b, c->beta, c->y);
    /* C row = a op(B) = op(B)^T a */
    return tb ? cpu_gemv_run(st, gemv, 0, c->n, c->k, 0, c->alpha, c->b, c->a, c->beta, c->y)
              : cpu_gemv_run(st, gemv, 1, c->k, c->n, 0, c->alpha, c->b, c->a, c->beta, c->y);
}

/* Tile width and count.  Row tiles are mc high; columns are cut in nc-wide
 * tiles, or with narrow_tiles narrower (whole micro-panels) when there would
 * be fewer than two tiles per worker. */
static size_t plan_tiles(cpu_gemm_job *job, const cpu_gemm_kernel *kernel, size_t workers)
{
    size_t row_tiles = (job->m + kernel->mc - 1) / kernel->mc;
    size_t col_tiles = (job->n + kernel->nc - 1) / kernel->nc;
    if (!kernel->narrow_tiles) {
        job->nc = cpu_min_size(kernel->nc, round_up(job->n, kernel->nr));
    } else {
        size_t want = 2 * workers; /* tiles wanted */
        if (workers > 1 && row_tiles * col_tiles < want) {
            size_t panels = (job->n + kernel->nr - 1) / kernel->nr;
            col_tiles = cpu_min_size(panels, (want + row_tiles - 1) / row_tiles);
        }
        job->nc = round_up((job->n + col_tiles - 1) / col_tiles, kernel->nr);
    }
    job->col_tiles = (job->n + job->nc - 1) / job->nc;
    return row_tiles * job->col_tiles;
}

rayo_status cpu_gemm_call(void *state, const rayo_call *call, const cpu_gemm_kernel *kernel)
{
    const cpu_state *st = state;
    if (rayo_call_strided(call) && !kernel->strided)
        return RAYO_E_UNSUPPORTED; /* row strides: not in this plugin's kernel */
    if (call->flags & ~(uint32_t)(RAYO_TRANS_A | RAYO_TRANS_B))
        return RAYO_E_UNSUPPORTED;
    if (call->m == 0 || call->n == 0)
        return RAYO_OK;
    if (rayo_call_strided(call))
        return kernel->strided(state, call);
    if (call->k == 0) {
        scale_c(call->y, call->m * call->n, call->beta);
        return RAYO_OK;
    }
    if (call->m == 1 || call->n == 1)
        return matmul_as_gemv(st, call, kernel->gemv);

    cpu_gemm_job job = { .A = call->a, .B = call->b, .C = call->y, .m = call->m, .n = call->n,
                         .k = call->k, .alpha = call->alpha, .beta = call->beta };
    set_strides(&job, call->flags);
    if (cpu_gemm_may_overflow(job.m, job.n, job.k, job.A, job.a_rs, job.a_cs, job.B, job.b_rs, job.b_cs)) {
        /* float sums could pass FLT_MAX (cpu-f64-fallback.h) */
        cpu_gemm_f64(job.m, job.n, job.k, job.alpha, job.A, job.a_rs, job.a_cs, job.B, job.b_rs, job.b_cs,
                     job.beta, job.C, job.n);
        return RAYO_OK;
    }
    /* in double: m * n * k may not fit in size_t */
    int big = (double)job.m * job.n * job.k >= (double)MATMUL_PARALLEL_MIN;
    size_t workers = big && cpu_threads(st) > 1 ? cpu_threads(st) : 1;
    size_t tiles = plan_tiles(&job, kernel, workers);
    if (tiles == 1)
        workers = 1;
    size_t kc = cpu_min_size(kernel->kc, job.k);
    job.a_pack = round_up(cpu_min_size(kernel->mc, round_up(job.m, kernel->mr)) * kc, 16);
    job.b_pack = round_up(job.nc * kc, 16);
    job.scratch = cpu_alloc_floats(st, workers * (job.a_pack + job.b_pack));
    if (!job.scratch)
        return RAYO_E_NOMEM; /* nothing written yet: the next backend may try */
    if (workers > 1)
        cpu_parallel(st, tiles, kernel->tile, &job);
    else
        for (size_t t = 0; t < tiles; t++)
            kernel->tile(&job, t, 0);
    cpu_free(st, job.scratch);
    return RAYO_OK;
}
