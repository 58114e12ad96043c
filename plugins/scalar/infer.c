/* SPDX-License-Identifier: MIT */
/* infer.c - the row ops of an LLM decoder: get_rows (embedding lookup),
 * rope (rotary position embedding) and the gated units swiglu, geglu and
 * geglu_tanh.  attention is in attention.c.
 *
 * Every matrix operand has a row stride (0: dense); rows are spread over the
 * pool.  Outputs may be their input exactly (in place): each output element
 * depends only on input elements at the same place (rope: the same pair).
 */
#include "plugin.h"
#include "scalar-math.h"

#include <math.h>

#define COST_COPY 1 /* cheap operations per element, for threading */
#define COST_ROPE 4
#define COST_GLU 12

static size_t or_dense(size_t ld, size_t dense)
{
    return ld ? ld : dense;
}

/* ---- get_rows: y[r] = table[idx[r]] as f32 ------------------------------- */
/* m = indices, n = columns, k = table rows; a = table (lda), b = idx, y (ldy). */
static void get_rows_range(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    rayo_dtype dt = RAYO_DTYPE_OF(c->dtypes, 0);
    const int32_t *idx = c->b;
    size_t row_bytes = 0, ldy = or_dense(c->ldy, c->n);
    rayo_dtype_row_bytes(dt, or_dense(c->lda, c->n), &row_bytes); /* validated by the core */
    for (size_t r = lo; r < hi; r++) {
        const unsigned char *row = (const unsigned char *)c->a + (size_t)idx[r] * row_bytes;
        rayo_dequantize_row(dt, row, (float *)c->y + r * ldy, c->n);
    }
}

SCALAR_KERNEL(get_rows)
{
    const int32_t *idx = call->b;
    /* Every index is checked before the first row is written, so a refused
     * call leaves y as it was. */
    for (size_t r = 0; r < call->m; r++)
        if (idx[r] < 0 || (size_t)idx[r] >= call->k)
            return RAYO_E_INVALID;
    if (RAYO_DTYPE_OF(call->dtypes, 0) == RAYO_DTYPE_I32)
        return RAYO_E_UNSUPPORTED;
    cpu_run_ranges(state, call, call->m, call->n * COST_COPY, get_rows_range);
    return RAYO_OK;
}

/* ---- rope ------------------------------------------------------------------ */
/* The pair's angle is pos * inv_freq[i] with inv_freq in double: in float,
 * at position 8191 the product alone would be off by ~5e-4 rad.  The
 * rotation itself is evaluated in double and rounded once. */
#define PAIR_BLOCK 64 /* pairs whose cos/sin a token keeps on the stack */

typedef struct rope_job {
    const rayo_call *call;
    const rayo_rope_params *p;
    const double *inv_freq;  /* rot_dims / 2 */
    size_t rot_dims, half;
    size_t x_token, x_head, y_token, y_head;
    size_t chunk;            /* tokens per task */
} rope_job;

static void rope_pairs(const rope_job *job, const float *x, float *y, size_t i0, size_t count,
                       const double *cs, const double *sn)
{
    int neox = job->p->mode == RAYO_ROPE_NEOX;
    for (size_t l = 0; l < count; l++) {
        size_t i = i0 + l;
        size_t iu = neox ? i : 2 * i, iv = neox ? i + job->half : 2 * i + 1;
        double u = x[iu], v = x[iv];
        y[iu] = (float)(u * cs[l] - v * sn[l]);
        y[iv] = (float)(u * sn[l] + v * cs[l]);
    }
}

static void rope_token(const rope_job *job, size_t t)
{
    const rayo_rope_params *p = job->p;
    const float *x = (const float *)job->call->a + t * job->x_token;
    float *y = (float *)job->call->y + t * job->y_token;
    double pos = ((const int32_t *)job->call->b)[t];
    double cs[PAIR_BLOCK], sn[PAIR_BLOCK];
    for (size_t i0 = 0; i0 < job->half; i0 += PAIR_BLOCK) {
        size_t count = job->half - i0 < PAIR_BLOCK ? job->half - i0 : PAIR_BLOCK;
        for (size_t l = 0; l < count; l++) {
            double theta = pos * job->inv_freq[i0 + l];
            cs[l] = cos(theta);
            sn[l] = sin(theta);
        }
        for (size_t h = 0; h < p->n_heads; h++)
            rope_pairs(job, x + h * job->x_head, y + h * job->y_head, i0, count, cs, sn);
    }
    for (size_t h = 0; h < p->n_heads; h++) /* dimensions past rot_dims are copied */
        for (size_t d = job->rot_dims; d < p->head_dim; d++)
            y[h * job->y_head + d] = x[h * job->x_head + d];
}

static void rope_task(void *arg, size_t task, unsigned worker)
{
    const rope_job *job = arg;
    size_t lo = task * job->chunk, m = job->call->m;
    size_t hi = lo + job->chunk < m ? lo + job->chunk : m;
    (void)worker;
    for (size_t t = lo; t < hi; t++)
        rope_token(job, t);
}

SCALAR_KERNEL(rope)
{
    const cpu_state *st = state;
    const rayo_rope_params *p = call->params;
    size_t rot;
    rayo_status status = cpu_rope_check(call, &rot);
    if (status != RAYO_OK || rot == 0)
        return status;
    size_t half = rot / 2;
    double *inv_freq = (double *)cpu_alloc_floats(st, 2 * half + 2);
    if (!inv_freq)
        return RAYO_E_NOMEM;
    for (size_t i = 0; i < half; i++)
        inv_freq[i] = (double)p->freq_scale * pow((double)p->freq_base, -2.0 * (double)i / (double)rot);
    rope_job job = { .call = call, .p = p, .inv_freq = inv_freq, .rot_dims = rot, .half = half };
    job.x_head = or_dense(p->head_stride_x, p->head_dim);
    job.y_head = or_dense(p->head_stride_y, p->head_dim);
    job.x_token = or_dense(call->lda, p->n_heads * p->head_dim);
    job.y_token = or_dense(call->ldy, p->n_heads * p->head_dim);
    size_t per_token = p->n_heads * p->head_dim * COST_ROPE, tasks = 1;
    if (cpu_threads(st) > 1 && call->m * per_token >= CPU_PARALLEL_MIN_WORK)
        tasks = 4 * cpu_threads(st) < call->m ? 4 * cpu_threads(st) : call->m;
    job.chunk = (call->m + tasks - 1) / tasks;
    cpu_parallel(st, (call->m + job.chunk - 1) / job.chunk, rope_task, &job);
    cpu_free(st, inv_freq);
    return RAYO_OK;
}

/* ---- gated units: y = f(gate) * up ---------------------------------------- */
/* a = gate (lda), b = up (ldb), y (ldy); m rows of n; in double
 * (cpu-f64-fallback.h: the gate's left tail keeps its relative precision). */
#define GLU_KERNEL(NAME, KIND)                                                              \
    static void NAME##_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)                       \
    {                                                                                       \
        (void)st;                                                                           \
        size_t lda = or_dense(c->lda, c->n), ldb = or_dense(c->ldb, c->n);                  \
        size_t ldy = or_dense(c->ldy, c->n);                                                \
        for (size_t r = lo; r < hi; r++) {                                                  \
            const float *g = (const float *)c->a + r * lda, *u = (const float *)c->b + r * ldb; \
            float *y = (float *)c->y + r * ldy;                                             \
            SCALAR_MAP(y, 0, c->n, j, cpu_glu_f64(KIND, g[j], u[j]));                       \
        }                                                                                   \
    }                                                                                       \
    SCALAR_KERNEL(NAME)                                                                     \
    {                                                                                       \
        cpu_run_ranges(state, call, call->m, call->n * COST_GLU, NAME##_rows);              \
        return RAYO_OK;                                                                     \
    }

GLU_KERNEL(swiglu, CPU_GLU_SILU)
GLU_KERNEL(geglu, CPU_GLU_GELU)
GLU_KERNEL(geglu_tanh, CPU_GLU_GELU_TANH)
