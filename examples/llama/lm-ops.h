/* lm-ops.h - the few operations a Llama block needs, each one rayo call.
 *
 * They call rayo_matmul_ex / rayo_gemv_ex on the weights in place,
 * rayo_get_rows, rayo_rope, rayo_attention and rayo_swiglu (ABI 1).  A call
 * no loaded backend can do (RAYO_E_UNSUPPORTED, RAYO_E_NO_BACKEND: plugins
 * built before ABI 1's inference ops) takes the interim path: the f32 ops of
 * ABI 1.0's first draft on weights dequantized tile by tile with
 * core/rayo-dtype.h, and rope in C.
 * lm_force_interim makes the interim path the only one (to compare both). */
#ifndef LLAMA_LM_OPS_H
#define LLAMA_LM_OPS_H

#include <rayo.h>
#include <rayo-dtype.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lm_weight {
    rayo_dtype dtype;
    const void *data;   /* rows x cols, rows of whole blocks, dense */
    size_t rows, cols;  /* rows = outputs, cols = inputs (GGUF ne[1], ne[0]) */
} lm_weight;

extern int lm_force_interim;
/* Calls that took the interim path because no backend could do the ABI 1 op. */
extern size_t lm_fallbacks;

/* y[t][rows] = sum_c x[t][c] w[r][c] for t < n_tok: one gemv (n_tok = 1) or
 * one matmul over all tokens, on the weight's own dtype, at this precision. */
rayo_status lm_linear(rayo_context *ctx, const lm_weight *w, const float *x, size_t n_tok,
                      float *y, rayo_precision precision);
/* y[i][cols] = row rows[i] of w as f32, i < n. */
rayo_status lm_get_rows(rayo_context *ctx, const lm_weight *w, const int32_t *rows, size_t n,
                        float *y);
/* Rotary embedding in place, NORM pairs (2i, 2i + 1): x is [n_tok][n_heads][head_dim],
 * token t at position pos[t]. */
rayo_status lm_rope(rayo_context *ctx, float *x, size_t n_tok, size_t n_heads, size_t head_dim,
                    size_t rot_dims, float freq_base, const int32_t *pos);

typedef struct lm_attn {
    size_t n_q, n_kv;           /* queries are the last n_q of n_kv positions (causal) */
    size_t n_heads, n_kv_heads, head_dim;
    size_t kv_stride;           /* floats between positions in the caches */
} lm_attn;
/* out[n_q][n_heads * head_dim] = softmax(q k^T / sqrt(head_dim) + causal mask) v,
 * every head in one call. */
rayo_status lm_attention(rayo_context *ctx, const lm_attn *p, const float *q, const float *k,
                         const float *v, float *out, rayo_precision precision);
/* y = silu(gate) * up, rows x cols. */
rayo_status lm_swiglu(rayo_context *ctx, const float *gate, const float *up, float *y,
                      size_t rows, size_t cols);

#endif
