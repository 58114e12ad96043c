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

/* ---- rope (cpu-rope_tmpl.c) ----------------------------------------------- */
/* The rotation itself is evaluated in double and rounded once. */
#define ROPE_TRIG double
#define ROPE_COST COST_ROPE
#include "cpu-rope_tmpl.c"

static void rope_head(const cpu_rope_job *job, const float *x, float *y, size_t i0, size_t count,
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

SCALAR_KERNEL(rope)
{
    return cpu_rope(state, call);
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
