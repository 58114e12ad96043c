/* SPDX-License-Identifier: MIT */
/* lm-ops.c - see lm-ops.h. */
#include "lm-ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int lm_force_interim;
size_t lm_fallbacks;

/* One call: at once on host memory, or recorded into the batch, its
 * operands moving with the batch's step as their refs say (step_flags:
 * RAYO_STEP_*). */
static rayo_status run_moving(const lm_exec *e, rayo_call c, const lm_ref *a, const lm_ref *b,
                              const lm_ref *cc, const lm_ref *y, uint32_t step_flags)
{
    static const lm_ref none = {0};
    a = a ? a : &none;
    b = b ? b : &none;
    cc = cc ? cc : &none;
    if (!e->batch) {
        c.a = a->host;
        c.b = b->host;
        c.c = cc->host;
        c.y = y->host;
        return rayo_run(e->ctx, &c);
    }
    rayo_batch_call bc = {sizeof bc, c.op, c.flags, c.dtypes, c.m, c.n, c.k, c.alpha, c.beta,
        {a->buf, a->off}, {b->buf, b->off}, {cc->buf, cc->off}, {y->buf, y->off},
        c.lda, c.ldb, c.ldc, c.ldy, c.precision, 0, c.params,
        {a->step, b->step, cc->step, y->step}, step_flags, 0};
    return rayo_batch_record(e->batch, &bc);
}

static rayo_status run(const lm_exec *e, rayo_call c, const lm_ref *a, const lm_ref *b,
                       const lm_ref *cc, const lm_ref *y)
{
    return run_moving(e, c, a, b, cc, y, 0);
}

/* A host call the interim path takes instead: forced (the call was not run:
 * st is RAYO_E_UNSUPPORTED), or no backend had the op.  Batches have none. */
static int take_interim(const lm_exec *e, rayo_status st)
{
    if (e->batch || (st != RAYO_E_UNSUPPORTED && st != RAYO_E_NO_BACKEND))
        return 0;
    if (!lm_force_interim)
        lm_fallbacks++;
    return 1;
}

static int forced(const lm_exec *e)
{
    return lm_force_interim && !e->batch;
}

#define CALL(...) ((rayo_call){.struct_size = sizeof(rayo_call), __VA_ARGS__})
#define F32 RAYO_DTYPE_F32

/* ---- linear ------------------------------------------------------------ */
#define TILE_ROWS 64

static rayo_status linear_tile(rayo_context *ctx, const float *tile, size_t rows, size_t cols,
                               const float *x, size_t n_tok, float *y, size_t ldy, float *tmp, float beta)
{
    if (n_tok == 1)
        return rayo_gemv(ctx, 0, rows, cols, 1.0f, tile, x, beta, y);
    rayo_status st = rayo_matmul(ctx, RAYO_TRANS_B, n_tok, rows, cols, 1.0f, x, tile, 0.0f, tmp);
    for (size_t t = 0; st == RAYO_OK && t < n_tok; t++)
        for (size_t r = 0; r < rows; r++)
            y[t * ldy + r] = tmp[t * rows + r] + (beta != 0.0f ? y[t * ldy + r] : 0.0f);
    return st;
}

static rayo_status linear_interim(rayo_context *ctx, const lm_weight *w, const float *x,
                                  size_t n_tok, float *y, float beta)
{
    size_t row_bytes;
    if (!rayo_dtype_row_bytes(w->dtype, w->cols, &row_bytes))
        return RAYO_E_INVALID;
    float *tile = malloc(TILE_ROWS * w->cols * sizeof *tile);
    float *tmp = malloc(n_tok * TILE_ROWS * sizeof *tmp);
    rayo_status st = tile && tmp ? RAYO_OK : RAYO_E_NOMEM;
    for (size_t r0 = 0; st == RAYO_OK && r0 < w->rows; r0 += TILE_ROWS) {
        size_t rows = w->rows - r0 < TILE_ROWS ? w->rows - r0 : TILE_ROWS;
        const uint8_t *src = (const uint8_t *)w->data.host + r0 * row_bytes;
        if (w->dtype != RAYO_DTYPE_F32)
            for (size_t r = 0; r < rows; r++)
                rayo_dequantize_row(w->dtype, src + r * row_bytes, tile + r * w->cols, w->cols);
        const float *t = w->dtype == RAYO_DTYPE_F32 ? (const float *)src : tile;
        st = linear_tile(ctx, t, rows, w->cols, x, n_tok, y + r0, w->rows, tmp, beta);
    }
    free(tile);
    free(tmp);
    return st;
}

/* y = w x + beta y (beta 0: y not read; 1: the product added to y, rounded once) */
static rayo_status linear(const lm_exec *e, const lm_weight *w, lm_ref x, size_t n_tok, lm_ref y,
                          rayo_precision precision, float beta)
{
    rayo_call c = n_tok == 1
        ? CALL(.op = RAYO_OP_GEMV, .dtypes = RAYO_DTYPES(w->dtype, F32, 0, F32), .m = w->rows,
               .n = w->cols, .alpha = 1.0f, .beta = beta, .precision = (uint32_t)precision)
        : CALL(.op = RAYO_OP_MATMUL, .flags = RAYO_TRANS_B, .dtypes = RAYO_DTYPES(F32, w->dtype, 0,
               F32), .m = n_tok, .n = w->rows, .k = w->cols, .alpha = 1.0f, .beta = beta,
               .precision = (uint32_t)precision);
    /* gemv: A = w, b = x; matmul: A = x, B = w */
    rayo_status st = forced(e) ? RAYO_E_UNSUPPORTED : n_tok == 1
        ? run(e, c, &w->data, &x, NULL, &y) : run(e, c, &x, &w->data, NULL, &y);
    if (!take_interim(e, st))
        return st;
    return linear_interim(e->ctx, w, x.host, n_tok, y.host, beta);
}

rayo_status lm_linear(const lm_exec *e, const lm_weight *w, lm_ref x, size_t n_tok, lm_ref y,
                      rayo_precision precision)
{
    return linear(e, w, x, n_tok, y, precision, 0.0f);
}

rayo_status lm_linear_add(const lm_exec *e, const lm_weight *w, lm_ref x, size_t n_tok, lm_ref y,
                          rayo_precision precision)
{
    return linear(e, w, x, n_tok, y, precision, 1.0f);
}

rayo_status lm_get_rows(const lm_exec *e, const lm_weight *w, lm_ref rows,
                        const int32_t *rows_host, size_t n, lm_ref y)
{
    rayo_call c = CALL(.op = RAYO_OP_GET_ROWS, .dtypes = RAYO_DTYPES(w->dtype, RAYO_DTYPE_I32, 0,
                       F32), .m = n, .n = w->cols, .k = w->rows);
    rayo_status st = forced(e) ? RAYO_E_UNSUPPORTED : run(e, c, &w->data, &rows, NULL, &y);
    if (!take_interim(e, st))
        return st;
    size_t row_bytes;
    if (!rayo_dtype_row_bytes(w->dtype, w->cols, &row_bytes))
        return RAYO_E_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (rows_host[i] < 0 || (size_t)rows_host[i] >= w->rows)
            return RAYO_E_INVALID;
        rayo_dequantize_row(w->dtype, (const uint8_t *)w->data.host + (size_t)rows_host[i] *
                            row_bytes, (float *)y.host + i * w->cols, w->cols);
    }
    return RAYO_OK;
}

/* ---- rope ---------------------------------------------------------------- */
static void rope_interim(float *x, size_t n_tok, const lm_rope_shape *r, const int32_t *pos)
{
    for (size_t t = 0; t < n_tok; t++)
        for (size_t i = 0; i < r->rot_dims / 2; i++) {
            /* the angle in double: pos * inv_freq in f32 drifts at large positions */
            double theta = (double)pos[t] * pow(r->freq_base, -2.0 * (double)i /
                                                (double)r->rot_dims);
            float c = (float)cos(theta), s = (float)sin(theta);
            for (size_t h = 0; h < r->n_heads; h++) {
                float *p = x + (t * r->n_heads + h) * r->head_dim + 2 * i;
                float x0 = p[0], x1 = p[1];
                p[0] = x0 * c - x1 * s;
                p[1] = x0 * s + x1 * c;
            }
        }
}

rayo_status lm_rope(const lm_exec *e, const lm_rope_shape *r, lm_ref x, size_t n_tok, lm_ref pos,
                    const int32_t *pos_host)
{
    rayo_rope_params p = {sizeof p, RAYO_ROPE_NORM, (uint32_t)r->rot_dims, r->freq_base, 1.0f,
                          r->n_heads, r->head_dim, 0, 0};
    rayo_call c = CALL(.op = RAYO_OP_ROPE, .dtypes = RAYO_DTYPES(F32, RAYO_DTYPE_I32, 0, F32),
                       .m = n_tok, .n = r->head_dim, .params = &p);
    rayo_status st = forced(e) ? RAYO_E_UNSUPPORTED : run(e, c, &x, &pos, NULL, &x);
    if (!take_interim(e, st))
        return st;
    rope_interim(x.host, n_tok, r, pos_host);
    return RAYO_OK;
}

/* ---- attention ------------------------------------------------------------ */
/* Head h's rows of a [tokens][stride] matrix into a dense [tokens][head_dim] one. */
static void gather(float *dst, const float *src, size_t n, size_t stride, size_t off, size_t hd)
{
    for (size_t t = 0; t < n; t++)
        memcpy(dst + t * hd, src + t * stride + off, hd * sizeof *dst);
}

static rayo_status attention_head(rayo_context *ctx, const lm_attn *p, size_t h, const float *q,
                                  const float *k, const float *v, float *out, float *buf)
{
    size_t hd = p->head_dim, kvh = h / (p->n_heads / p->n_kv_heads), width = p->n_heads * hd;
    float *qh = buf, *kh = qh + p->n_q * hd, *vh = kh + p->n_kv * hd, *s = vh + p->n_kv * hd,
          *oh = s + p->n_q * p->n_kv;
    gather(qh, q, p->n_q, width, h * hd, hd);
    gather(kh, k, p->n_kv, p->kv_stride, kvh * hd, hd);
    gather(vh, v, p->n_kv, p->kv_stride, kvh * hd, hd);
    rayo_status st = rayo_matmul(ctx, RAYO_TRANS_B, p->n_q, p->n_kv, hd,
                                 1.0f / sqrtf((float)hd), qh, kh, 0.0f, s);
    for (size_t i = 0; i < p->n_q; i++) /* query i sits at position n_kv - n_q + i */
        for (size_t j = p->n_kv - p->n_q + i + 1; j < p->n_kv; j++)
            s[i * p->n_kv + j] = -INFINITY;
    if (st == RAYO_OK)
        st = rayo_softmax(ctx, s, s, p->n_q, p->n_kv);
    if (st == RAYO_OK)
        st = rayo_matmul(ctx, 0, p->n_q, hd, p->n_kv, 1.0f, s, vh, 0.0f, oh);
    for (size_t i = 0; st == RAYO_OK && i < p->n_q; i++)
        memcpy(out + i * width + h * hd, oh + i * hd, hd * sizeof *out);
    return st;
}

static rayo_status attention_interim(rayo_context *ctx, const lm_attn *p, const float *q,
                                     const float *k, const float *v, float *out)
{
    size_t hd = p->head_dim;
    float *buf = malloc((2 * p->n_q * hd + 2 * p->n_kv * hd + p->n_q * p->n_kv) * sizeof *buf);
    rayo_status st = buf ? RAYO_OK : RAYO_E_NOMEM;
    for (size_t h = 0; st == RAYO_OK && h < p->n_heads; h++)
        st = attention_head(ctx, p, h, q, k, v, out, buf);
    free(buf);
    return st;
}

rayo_status lm_attention(const lm_exec *e, const lm_attn *p, lm_ref q, lm_ref k, lm_ref v,
                         lm_ref out, rayo_precision precision)
{
    size_t width = p->n_heads * p->head_dim;
    rayo_attention_params a = {sizeof a, RAYO_ATTN_CAUSAL, F32, p->n_q, p->n_kv, p->n_heads,
        p->n_kv_heads, p->head_dim, 1.0f / sqrtf((float)p->head_dim), width, p->head_dim,
        p->kv_stride, p->head_dim, p->kv_stride, p->head_dim, width, p->head_dim};
    rayo_call c = CALL(.op = RAYO_OP_ATTENTION, .dtypes = RAYO_DTYPES(F32, F32, F32, F32),
                       .m = p->n_q, .n = p->head_dim, .k = p->n_kv,
                       .precision = (uint32_t)precision, .params = &a);
    uint32_t moving = p->kv_grows ? RAYO_STEP_KV_LENGTH : 0;
    rayo_status st = forced(e) ? RAYO_E_UNSUPPORTED : run_moving(e, c, &q, &k, &v, &out, moving);
    if (!take_interim(e, st))
        return st;
    return attention_interim(e->ctx, p, q.host, k.host, v.host, out.host);
}

/* ---- the rest ---------------------------------------------------------------- */
rayo_status lm_swiglu(const lm_exec *e, lm_ref gate, lm_ref up, lm_ref y, size_t rows, size_t cols)
{
    rayo_call c = CALL(.op = RAYO_OP_SWIGLU, .m = rows, .n = cols);
    rayo_status st = forced(e) ? RAYO_E_UNSUPPORTED : run(e, c, &gate, &up, NULL, &y);
    if (!take_interim(e, st))
        return st;
    st = rayo_silu(e->ctx, gate.host, y.host, rows * cols);
    return st == RAYO_OK ? rayo_mul(e->ctx, y.host, up.host, y.host, rows * cols) : st;
}

rayo_status lm_argmax(const lm_exec *e, lm_ref x, size_t n, lm_ref y)
{
    return run(e, CALL(.op = RAYO_OP_ARGMAX, .n = n), &x, NULL, NULL, &y);
}

rayo_status lm_rmsnorm(const lm_exec *e, lm_ref x, lm_ref gamma, lm_ref y, size_t rows,
                       size_t cols, float eps)
{
    return run(e, CALL(.op = RAYO_OP_RMSNORM, .m = rows, .n = cols, .alpha = eps), &x, &gamma,
               NULL, &y);
}
