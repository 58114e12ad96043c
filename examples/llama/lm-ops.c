/* lm-ops.c - see lm-ops.h. */
#include "lm-ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int lm_force_interim;
size_t lm_fallbacks;

/* A status that sends the call down the interim path. */
static int not_there(rayo_status st)
{
    if (st == RAYO_E_UNSUPPORTED || st == RAYO_E_NO_BACKEND) {
        lm_fallbacks++;
        return 1;
    }
    return 0;
}

/* ---- linear ------------------------------------------------------------ */
#define TILE_ROWS 64

static rayo_status linear_tile(rayo_context *ctx, const float *tile, size_t rows, size_t cols,
                               const float *x, size_t n_tok, float *y, size_t ldy, float *tmp)
{
    if (n_tok == 1)
        return rayo_gemv(ctx, 0, rows, cols, 1.0f, tile, x, 0.0f, y);
    rayo_status st = rayo_matmul(ctx, RAYO_TRANS_B, n_tok, rows, cols, 1.0f, x, tile, 0.0f, tmp);
    for (size_t t = 0; st == RAYO_OK && t < n_tok; t++)
        memcpy(y + t * ldy, tmp + t * rows, rows * sizeof *y);
    return st;
}

static rayo_status linear_interim(rayo_context *ctx, const lm_weight *w, const float *x,
                                  size_t n_tok, float *y)
{
    size_t row_bytes;
    if (!rayo_dtype_row_bytes(w->dtype, w->cols, &row_bytes))
        return RAYO_E_INVALID;
    float *tile = malloc(TILE_ROWS * w->cols * sizeof *tile);
    float *tmp = malloc(n_tok * TILE_ROWS * sizeof *tmp);
    rayo_status st = tile && tmp ? RAYO_OK : RAYO_E_NOMEM;
    for (size_t r0 = 0; st == RAYO_OK && r0 < w->rows; r0 += TILE_ROWS) {
        size_t rows = w->rows - r0 < TILE_ROWS ? w->rows - r0 : TILE_ROWS;
        const uint8_t *src = (const uint8_t *)w->data + r0 * row_bytes;
        if (w->dtype != RAYO_DTYPE_F32)
            for (size_t r = 0; r < rows; r++)
                rayo_dequantize_row(w->dtype, src + r * row_bytes, tile + r * w->cols, w->cols);
        const float *t = w->dtype == RAYO_DTYPE_F32 ? (const float *)src : tile;
        st = linear_tile(ctx, t, rows, w->cols, x, n_tok, y + r0, w->rows, tmp);
    }
    free(tile);
    free(tmp);
    return st;
}

rayo_status lm_linear(rayo_context *ctx, const lm_weight *w, const float *x, size_t n_tok,
                      float *y, rayo_precision precision)
{
    if (!lm_force_interim) {
        rayo_matrix W = {w->data, w->dtype, 0}, X = {x, RAYO_DTYPE_F32, 0};
        rayo_status st = n_tok == 1
            ? rayo_gemv_ex(ctx, 0, w->rows, w->cols, 1.0f, W, x, 0.0f, y, precision)
            : rayo_matmul_ex(ctx, RAYO_TRANS_B, n_tok, w->rows, w->cols, 1.0f, X, W, 0.0f, y,
                             0, precision);
        if (!not_there(st))
            return st;
    }
    return linear_interim(ctx, w, x, n_tok, y);
}

rayo_status lm_get_rows(rayo_context *ctx, const lm_weight *w, const int32_t *rows, size_t n,
                        float *y)
{
    if (!lm_force_interim) {
        rayo_matrix table = {w->data, w->dtype, 0};
        rayo_status st = rayo_get_rows(ctx, table, w->rows, w->cols, rows, n, y, 0);
        if (!not_there(st))
            return st;
    }
    size_t row_bytes;
    if (!rayo_dtype_row_bytes(w->dtype, w->cols, &row_bytes))
        return RAYO_E_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (rows[i] < 0 || (size_t)rows[i] >= w->rows)
            return RAYO_E_INVALID;
        rayo_dequantize_row(w->dtype, (const uint8_t *)w->data + (size_t)rows[i] * row_bytes,
                            y + i * w->cols, w->cols);
    }
    return RAYO_OK;
}

/* ---- rope ---------------------------------------------------------------- */
static void rope_interim(float *x, size_t n_tok, size_t n_heads, size_t head_dim,
                         size_t rot_dims, float freq_base, const int32_t *pos)
{
    for (size_t t = 0; t < n_tok; t++)
        for (size_t i = 0; i < rot_dims / 2; i++) {
            /* the angle in double: pos * inv_freq in f32 drifts at large positions */
            double theta = (double)pos[t] * pow(freq_base, -2.0 * (double)i / (double)rot_dims);
            float c = (float)cos(theta), s = (float)sin(theta);
            for (size_t h = 0; h < n_heads; h++) {
                float *p = x + (t * n_heads + h) * head_dim + 2 * i;
                float x0 = p[0], x1 = p[1];
                p[0] = x0 * c - x1 * s;
                p[1] = x0 * s + x1 * c;
            }
        }
}

rayo_status lm_rope(rayo_context *ctx, float *x, size_t n_tok, size_t n_heads, size_t head_dim,
                    size_t rot_dims, float freq_base, const int32_t *pos)
{
    if (!lm_force_interim) {
        rayo_rope_params p = {sizeof p, RAYO_ROPE_NORM, (uint32_t)rot_dims, freq_base, 1.0f,
                              n_heads, head_dim, 0, 0};
        rayo_status st = rayo_rope(ctx, &p, x, 0, x, 0, n_tok, pos);
        if (!not_there(st))
            return st;
    }
    rope_interim(x, n_tok, n_heads, head_dim, rot_dims, freq_base, pos);
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

rayo_status lm_attention(rayo_context *ctx, const lm_attn *p, const float *q, const float *k,
                         const float *v, float *out, rayo_precision precision)
{
    if (!lm_force_interim) {
        size_t width = p->n_heads * p->head_dim;
        rayo_attention_params a = {sizeof a, RAYO_ATTN_CAUSAL, RAYO_DTYPE_F32, p->n_q, p->n_kv,
            p->n_heads, p->n_kv_heads, p->head_dim, 1.0f / sqrtf((float)p->head_dim),
            width, p->head_dim, p->kv_stride, p->head_dim, p->kv_stride, p->head_dim,
            width, p->head_dim};
        /* rayo_attention has no precision argument: the same call through rayo_run */
        rayo_call c = {.struct_size = sizeof c, .op = RAYO_OP_ATTENTION, .dtypes = RAYO_DTYPES(
            RAYO_DTYPE_F32, RAYO_DTYPE_F32, RAYO_DTYPE_F32, RAYO_DTYPE_F32), .m = p->n_q,
            .n = p->head_dim, .k = p->n_kv, .a = q, .b = k, .c = v, .y = out,
            .precision = (uint32_t)precision, .params = &a};
        rayo_status st = rayo_run(ctx, &c);
        if (!not_there(st))
            return st;
    }
    return attention_interim(ctx, p, q, k, v, out);
}

rayo_status lm_swiglu(rayo_context *ctx, const float *gate, const float *up, float *y,
                      size_t rows, size_t cols)
{
    if (!lm_force_interim) {
        rayo_status st = rayo_swiglu(ctx, gate, 0, up, 0, y, 0, rows, cols);
        if (!not_there(st))
            return st;
    }
    rayo_status st = rayo_silu(ctx, gate, y, rows * cols);
    return st == RAYO_OK ? rayo_mul(ctx, y, up, y, rows * cols) : st;
}
