/* SPDX-License-Identifier: MIT */
/* x86-typed-matmul.c - matmul with half or block-quantized operands on the
 * plugin's sgemm (x86-typed-matmul.h says how). */
#include "x86-typed-matmul.h"
#include "x86-qmatmul.h"
#include "x86-row-to-f32.h" /* rows in vectors, the bytes rayo_dequantize_row gives */

/* f32 of dequantized B per panel: 16 MiB, so that the panels are wide (A
 * is packed again for every panel) while the scratch stays bounded. */
#define PANEL_FLOATS ((size_t)4 << 20)

/* ---- conversion of rows to f32, over the threads ---------------------------- */

typedef struct convert_job {
    rayo_dtype dt;
    const uint8_t *src;
    size_t src_stride; /* bytes between rows */
    size_t src_offset; /* bytes from a row's start to its first converted element */
    size_t count;      /* elements per row */
    float *dst;        /* rows of `count` floats */
    size_t rows, chunk;
} convert_job;

static void convert_task(void *arg, size_t task, unsigned worker)
{
    const convert_job *job = arg;
    (void)worker;
    size_t end = (task + 1) * job->chunk < job->rows ? (task + 1) * job->chunk : job->rows;
    for (size_t r = task * job->chunk; r < end; r++)
        x86_row_to_f32(job->dt, job->src + r * job->src_stride + job->src_offset, job->dst + r * job->count,
                       job->count);
}

/* Converts `rows` rows of `count` elements, spread over the threads when
 * there is enough of it. */
static void convert_rows(const cpu_state *st, convert_job *job)
{
    size_t threads = job->rows * job->count >= CPU_PARALLEL_MIN_WORK ? cpu_threads(st) : 1;
    size_t tasks = threads > 1 ? 4 * threads : 1;
    job->chunk = (job->rows + tasks - 1) / tasks;
    if (job->chunk)
        cpu_parallel(st, (job->rows + job->chunk - 1) / job->chunk, convert_task, job);
}

/* Bytes of `count` elements of dt (whole blocks for block dtypes). */
static size_t bytes_of(rayo_dtype dt, size_t count)
{
    size_t bytes = 0;
    rayo_dtype_row_bytes(dt, count, &bytes); /* sizes validated by the core */
    return bytes;
}

/* ---- the kernel ----------------------------------------------------------- */

typedef struct typed_matmul {
    const rayo_call *call;
    rayo_dtype adt, bdt;
    int trans_a, trans_b;
    size_t panel;       /* columns of op(B) per panel */
    int in_place;       /* one panel and a dense C: sgemm writes C itself */
    const float *a;     /* op(A)'s storage as dense f32 */
    float *b, *c;       /* a panel of B as f32; C's panel when C is not written in place */
} typed_matmul;

/* Columns [j0, j0 + w) of op(B) as f32 into t->b, laid out as sgemm reads
 * them: B stored n x k (TRANS_B) gives w rows of k, else k rows of w. */
static void convert_panel(const cpu_state *st, const typed_matmul *t, size_t j0, size_t w)
{
    const rayo_call *c = t->call;
    size_t rows = t->trans_b ? c->n : c->k, cols = t->trans_b ? c->k : c->n;
    size_t stride = bytes_of(t->bdt, c->ldb ? c->ldb : cols);
    convert_job job = { t->bdt, c->b, stride, 0, cols, t->b, w, 0 };
    if (t->trans_b)
        job.src = (const uint8_t *)c->b + j0 * stride;
    else /* a half dtype: the panel's columns of every row */
        job.src_offset = bytes_of(t->bdt, j0), job.count = w, job.rows = rows;
    convert_rows(st, &job);
}

/* C[:, j0 .. j0 + w) = alpha P + beta C (C unread when beta == 0), P the
 * m x w product of the panel. */
static void store_panel(const rayo_call *c, size_t j0, size_t w, const float *p)
{
    float *C = c->y;
    size_t ldc = c->ldy ? c->ldy : c->n;
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < w; j++) {
            float v = c->alpha * p[i * w + j];
            C[i * ldc + j0 + j] = c->beta == 0.0f ? v : v + c->beta * C[i * ldc + j0 + j];
        }
}

/* k == 0: op(A) op(B) is the zero matrix, C = beta C (0 when beta == 0). */
static void scale_c(const rayo_call *c)
{
    float *C = c->y;
    size_t ldc = c->ldy ? c->ldy : c->n;
    for (size_t i = 0; i < c->m; i++)
        for (size_t j = 0; j < c->n; j++)
            C[i * ldc + j] = c->beta == 0.0f ? 0.0f : c->beta * C[i * ldc + j];
}

/* op(A)'s storage as dense f32: the call's own A when it is, else a copy
 * in scratch (*copy, freed by the caller). */
static const float *dense_a(const cpu_state *st, const typed_matmul *t, float **copy)
{
    const rayo_call *c = t->call;
    size_t rows = t->trans_a ? c->k : c->m, cols = t->trans_a ? c->m : c->k;
    *copy = NULL;
    if (t->adt == RAYO_DTYPE_F32 && (c->lda == 0 || c->lda == cols))
        return c->a;
    if (!(*copy = cpu_alloc_floats(st, rows * cols)))
        return NULL;
    convert_job job = { t->adt, c->a, bytes_of(t->adt, c->lda ? c->lda : cols), 0, cols, *copy, rows, 0 };
    convert_rows(st, &job);
    return *copy;
}

static rayo_status run_panels(void *state, typed_matmul *t, x86_sgemm_fn *sgemm)
{
    const rayo_call *c = t->call;
    int in_place = t->in_place;
    for (size_t j0 = 0; j0 < c->n; j0 += t->panel) {
        size_t w = c->n - j0 < t->panel ? c->n - j0 : t->panel;
        convert_panel(state, t, j0, w);
        x86_gemm_args g = { c->m, w, c->k, in_place ? c->alpha : 1.0f, in_place ? c->beta : 0.0f,
                            t->a, t->b, in_place ? c->y : t->c, t->trans_a, t->trans_b };
        rayo_status s = sgemm(state, &g);
        if (s != RAYO_OK)
            return s;
        if (!in_place)
            store_panel(c, j0, w, t->c);
    }
    return RAYO_OK;
}

/* ---- a few rows of A: gemvs ---------------------------------------------- */

/* Whether the call would take the integer path (x86-qmatmul.h: relaxed,
 * block weights, k long enough); else typed_matmul_run's f32 products. */
static int integer_path(rayo_dtype bdt, const rayo_call *call)
{
    return rayo_dtype_is_block(bdt) && call->precision == RAYO_PRECISION_RELAXED && call->k >= QMATMUL_MIN_K;
}

/* x's per call of the plugin's gemvs (at most cpu-typed-gemv_tmpl.c's
 * TYPED_GEMV_MAX_X): more rows take several calls. */
#define GEMV_X_MAX 16

/* The most rows of A that run as gemvs.  The gemvs read B from memory once
 * for up to GEMV_X_MAX rows, but decode each weight once per row; the
 * integer path decodes it once per call (its repacking) and then
 * multiplies 8 rows per pass far faster, while the f32 path dequantizes
 * all of B to f32 panels per call and multiplies in f32.  Measured on the
 * Zen 5 EPYC (avx512 and avx2, 1 and 2 threads, B 11008 x 4096 in four
 * copies taken in turn, so from memory; doc/benchmarks-cpu.md): the
 * integer path overtook the gemvs at 5 rows (Q4_0, avx512) or 6-8 (the
 * others); where the gemvs decode a block once for four x's (Q4_0 and
 * Q8_0; avx512's Q8_0 with AVX512_VNNI) at 7-8 rows of Q4_0 and 13-16 of
 * Q8_0 on avx512, past 10 rows of Q4_0 and near 8 of Q8_0 on avx2, and
 * (Q4_K and Q6_K, also decoded once for four x's) at 12 rows of Q4_K (1
 * thread; past 12 with 2) and 16 of Q6_K (B 5632 x 2048; past 16 with B
 * 11008 x 4096) on avx512, at 8 of Q4_K (1 thread; past 10 with 2) and
 * past 12 of Q6_K on avx2.  The f32 path was 1.1-3x slower than the gemvs
 * at every count up to 64. */
static size_t gemv_rows_max(rayo_dtype bdt, const rayo_call *call, bool shares_decoding)
{
    if (integer_path(bdt, call) && shares_decoding)
        return bdt == RAYO_DTYPE_Q4_0 ? 6 : bdt == RAYO_DTYPE_Q6_K ? 12 : 8;
    if (integer_path(bdt, call))
        return bdt == RAYO_DTYPE_Q4_0 ? 4 : 6;
    return 64;
}

rayo_status typed_matmul_as_gemvs(void *state, const rayo_call *call, x86_typed_gemvs_fn *gemvs,
                                  x86_gemvs_share_fn *shares_decoding)
{
    rayo_dtype adt = RAYO_DTYPE_OF(call->dtypes, 0), bdt = RAYO_DTYPE_OF(call->dtypes, 1);
    if (call->flags != RAYO_TRANS_B || adt != RAYO_DTYPE_F32 || bdt == RAYO_DTYPE_F32 || call->m == 0 ||
        call->n == 0 || call->k == 0 || call->m > gemv_rows_max(bdt, call, shares_decoding(state, bdt)))
        return RAYO_E_UNSUPPORTED;
    rayo_call row = *call;
    row.op = RAYO_OP_GEMV;
    row.flags = 0;
    row.dtypes = RAYO_DTYPES(bdt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32);
    row.m = call->n, row.n = call->k, row.k = 0;
    row.a = call->b, row.lda = call->ldb, row.ldb = 0, row.ldy = 0;
    /* where the matmul would multiply in f32, so do the gemvs (a relaxed
     * call with short rows gives the strict result, as before) */
    if (!integer_path(bdt, call))
        row.precision = RAYO_PRECISION_STRICT;
    size_t lda = call->lda ? call->lda : call->k, ldc = call->ldy ? call->ldy : call->n;
    for (size_t i = 0; i < call->m; i += GEMV_X_MAX) {
        row.b = (const float *)call->a + i * lda;
        row.y = (float *)call->y + i * ldc;
        rayo_status s = gemvs(state, &row, call->m - i < GEMV_X_MAX ? call->m - i : GEMV_X_MAX, lda, ldc);
        if (s != RAYO_OK)
            return s;
    }
    return RAYO_OK;
}

rayo_status typed_matmul_run(void *state, const rayo_call *call, x86_sgemm_fn *sgemm)
{
    const cpu_state *st = state;
    typed_matmul t = { call, RAYO_DTYPE_OF(call->dtypes, 0), RAYO_DTYPE_OF(call->dtypes, 1),
                       (call->flags & RAYO_TRANS_A) != 0, (call->flags & RAYO_TRANS_B) != 0, 0, 0, NULL, NULL, NULL };
    if (call->dtypes == 0 || (rayo_dtype_is_block(t.bdt) && !t.trans_b) || (call->flags & ~(RAYO_TRANS_A | RAYO_TRANS_B)))
        return RAYO_E_UNSUPPORTED;
    rayo_status q = x86_qmatmul_run(state, call, sgemm); /* relaxed, Q4_0/Q4_K/Q8_0/Q6_K: in integers */
    if (q != RAYO_E_UNSUPPORTED)
        return q;
    if (call->m == 0 || call->n == 0)
        return RAYO_OK;
    if (call->k == 0) {
        scale_c(call);
        return RAYO_OK;
    }
    size_t k = call->k;
    t.panel = PANEL_FLOATS / k > 64 ? PANEL_FLOATS / k / 64 * 64 : 64;
    if (t.panel > call->n)
        t.panel = call->n;
    float *a_copy;
    t.a = dense_a(st, &t, &a_copy);
    t.b = cpu_alloc_floats(st, t.panel * k);
    t.in_place = t.panel >= call->n && (call->ldy == 0 || call->ldy == call->n);
    if (!t.in_place)
        t.c = cpu_alloc_floats(st, call->m * t.panel);
    rayo_status s = RAYO_E_NOMEM;
    if (t.a && t.b && (t.in_place || t.c))
        s = run_panels(state, &t, sgemm);
    cpu_free(st, a_copy);
    cpu_free(st, t.b);
    cpu_free(st, t.c);
    return s;
}
