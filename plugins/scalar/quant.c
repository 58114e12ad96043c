/* SPDX-License-Identifier: MIT */
/* quant.c - matmul and gemv with f16, bf16 or block-quantized operands
 * (activations, accumulation and outputs f32).
 *
 * Everything is reduced to one product: out(i, j) = alpha dot(X row i,
 * W row j) + beta out(i, j), where W holds rows along k in any float-valued
 * dtype (the weights: matmul's B with RAYO_TRANS_B, gemv's A) and X holds
 * f32 rows along k (the activations).  A task takes a range of W rows; it
 * dequantizes each row once into its worker's scratch with rayo-dtype.h
 * (bit-exact: the values the reference judges against) and dots it with
 * every X row by the blocked dot of reduce.c (float lanes inside a block,
 * double across blocks), so the error stays near 3e-6 of sum|terms| however
 * long k is.
 *
 * Operands in other layouts (a half-precision A, a transposed A, B without
 * RAYO_TRANS_B) are converted to dense f32 first: only f16 and bf16 may be
 * laid out that way (block formats must be the k-major weights), and they
 * are the small side of an inference matmul.
 *
 * beta == 0 never reads the output.
 */
#include "plugin.h"

#define PARALLEL_MIN ((size_t)1 << 16) /* multiply-adds below which one thread runs */

/* Rows of `cols` elements in dtype dt, row r at data + r * row_bytes. */
typedef struct weight_rows {
    rayo_dtype dtype;
    const unsigned char *data;
    size_t row_bytes;
} weight_rows;

typedef struct rowdot_job {
    weight_rows w;
    size_t w_count, k;       /* W rows, and elements per row */
    const float *x;          /* x_count rows of k, row stride ldx */
    size_t x_count, ldx;
    float *out;              /* out(i, j) = out[i * out_rs + j] */
    size_t out_rs;
    float alpha, beta;
    float *scratch;          /* per worker: one dequantized W row */
    size_t per_worker;
    size_t chunk;            /* W rows per task */
} rowdot_job;

static void rowdot_task(void *arg, size_t task, unsigned worker)
{
    const rowdot_job *job = arg;
    float *row = job->scratch + (size_t)worker * job->per_worker;
    size_t lo = task * job->chunk, hi = lo + job->chunk < job->w_count ? lo + job->chunk : job->w_count;
    for (size_t j = lo; j < hi; j++) {
        rayo_dequantize_row(job->w.dtype, job->w.data + j * job->w.row_bytes, row, job->k);
        for (size_t i = 0; i < job->x_count; i++) {
            double sum = scalar_dot_f64(job->x + i * job->ldx, row, job->k);
            float *o = job->out + i * job->out_rs + j;
            double v = (double)job->alpha * sum;
            *o = (float)(job->beta == 0.0f ? v : v + (double)job->beta * *o);
        }
    }
}

static size_t round_up16(size_t x)
{
    return (x + 15) / 16 * 16;
}

/* Runs the job over the pool; RAYO_E_NOMEM (nothing written) when the
 * scratch cannot be had. */
static rayo_status rowdot_run(const cpu_state *st, rowdot_job *job)
{
    double work = (double)job->w_count * (double)job->x_count * (double)job->k;
    size_t threads = cpu_threads(st), tasks = 1;
    if (threads > 1 && work >= (double)PARALLEL_MIN)
        tasks = 4 * threads < job->w_count ? 4 * threads : job->w_count;
    size_t workers = tasks > 1 ? threads : 1;
    job->per_worker = round_up16(job->k + 1);
    job->scratch = cpu_alloc_floats(st, workers * job->per_worker);
    if (!job->scratch)
        return RAYO_E_NOMEM;
    job->chunk = (job->w_count + tasks - 1) / tasks;
    tasks = (job->w_count + job->chunk - 1) / job->chunk;
    if (tasks > 1)
        cpu_parallel(st, tasks, rowdot_task, job);
    else
        rowdot_task(job, 0, 0);
    cpu_free(st, job->scratch);
    return RAYO_OK;
}

/* Element (r, c) of a row-major f32, f16 or bf16 matrix with row stride ld. */
static float half_or_f32_at(rayo_dtype dt, const void *data, size_t ld, size_t r, size_t c)
{
    size_t i = r * ld + c;
    if (dt == RAYO_DTYPE_F32)
        return ((const float *)data)[i];
    const unsigned char *p = (const unsigned char *)data + 2 * i;
    uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
    return dt == RAYO_DTYPE_F16 ? rayo_f16_to_f32(h) : rayo_bf16_to_f32(h);
}

/* dst (rows x cols, dense f32) = X or X^T, X stored in dtype dt (f32, f16
 * or bf16) with row stride ld. */
static void to_dense_f32(rayo_dtype dt, const void *data, size_t ld, int trans, size_t rows,
                         size_t cols, float *dst)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[r * cols + c] = trans ? half_or_f32_at(dt, data, ld, c, r)
                                      : half_or_f32_at(dt, data, ld, r, c);
}

static size_t row_bytes(rayo_dtype dt, size_t ld)
{
    size_t bytes = 0;
    rayo_dtype_row_bytes(dt, ld, &bytes); /* validated by the core */
    return bytes;
}

/* matmul: C (m x n, ldy) = alpha op(A) op(B) + beta C. */
static rayo_status typed_matmul(const cpu_state *st, const rayo_call *c)
{
    rayo_dtype adt = RAYO_DTYPE_OF(c->dtypes, 0), bdt = RAYO_DTYPE_OF(c->dtypes, 1);
    int ta = (c->flags & RAYO_TRANS_A) != 0, tb = (c->flags & RAYO_TRANS_B) != 0;
    size_t m = c->m, n = c->n, k = c->k;
    size_t lda = c->lda ? c->lda : (ta ? m : k), ldb = c->ldb ? c->ldb : (tb ? k : n);
    if (rayo_dtype_is_block(adt) || (rayo_dtype_is_block(bdt) && !tb))
        return RAYO_E_UNSUPPORTED; /* validation refuses these first */
    rowdot_job job = { .w = { bdt, c->b, row_bytes(bdt, ldb) }, .w_count = n, .k = k,
                       .x = c->a, .x_count = m, .ldx = lda, .out = c->y,
                       .out_rs = c->ldy ? c->ldy : n, .alpha = c->alpha, .beta = c->beta };
    float *dense_a = NULL, *dense_b = NULL;
    rayo_status status = RAYO_E_NOMEM;
    if (adt != RAYO_DTYPE_F32 || ta) {
        if (!(dense_a = cpu_alloc_floats(st, m * k + 1)))
            goto done;
        to_dense_f32(adt, c->a, lda, ta, m, k, dense_a);
        job.x = dense_a;
        job.ldx = k;
    }
    if (!tb) { /* B is k x n: its transpose gives the rows along k */
        if (!(dense_b = cpu_alloc_floats(st, n * k + 1)))
            goto done;
        to_dense_f32(bdt, c->b, ldb, 1, n, k, dense_b);
        job.w = (weight_rows){ RAYO_DTYPE_F32, (const unsigned char *)dense_b, k * sizeof(float) };
    }
    status = rowdot_run(st, &job);
done:
    cpu_free(st, dense_a);
    cpu_free(st, dense_b);
    return status;
}

SCALAR_KERNEL(matmul_typed)
{
    if (call->flags & ~(uint32_t)(RAYO_TRANS_A | RAYO_TRANS_B))
        return RAYO_E_UNSUPPORTED;
    if (call->m == 0 || call->n == 0)
        return RAYO_OK;
    return typed_matmul(state, call);
}

/* gemv: y (m) = alpha A x + beta y, A (m x n) the weights, row stride lda. */
SCALAR_KERNEL(gemv_typed)
{
    rayo_dtype adt = RAYO_DTYPE_OF(call->dtypes, 0);
    if (call->flags || call->m == 0)
        return call->flags ? RAYO_E_UNSUPPORTED : RAYO_OK;
    rowdot_job job = { .w = { adt, call->a, row_bytes(adt, call->lda ? call->lda : call->n) },
                       .w_count = call->m, .k = call->n, .x = call->b, .x_count = 1,
                       .ldx = call->n, .out = call->y, .out_rs = 0, .alpha = call->alpha,
                       .beta = call->beta };
    return rowdot_run(state, &job);
}
