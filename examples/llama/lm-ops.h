/* SPDX-License-Identifier: MIT */
/* lm-ops.h - the few operations a Llama block needs, each one rayo call.
 *
 * They run matmul / gemv on the quantized weights in place, get_rows, rope,
 * attention and swiglu (ABI 1), either at once on host memory (rayo_run) or
 * recorded into a batch on a backend's buffers (rayo_batch_record), where
 * the weights stay resident on a GPU: lm_exec says which.
 *
 * On host memory, a call no loaded backend can do (RAYO_E_UNSUPPORTED,
 * RAYO_E_NO_BACKEND: plugins built before ABI 1's inference ops) takes the
 * interim path: the f32 ops of ABI 1.0's first draft on weights dequantized
 * tile by tile with core/rayo-dtype.h, and rope in C.  lm_force_interim
 * makes the interim path the only one (to compare both). */
#ifndef LLAMA_LM_OPS_H
#define LLAMA_LM_OPS_H

#include <rayo.h>
#include <rayo-dtype.h>
#include <stddef.h>
#include <stdint.h>

/* Where a tensor's bytes are: host memory, or a byte offset in a buffer of
 * the batch's backend. */
typedef struct lm_ref {
    void *host;         /* host calls (mapped weights are read only: never an output) */
    rayo_buffer *buf;   /* batched calls */
    size_t off;
    size_t step;        /* batched calls: bytes off advances per step of a replayed batch */
} lm_ref;

/* r advanced by `bytes`. */
static inline lm_ref lm_at(lm_ref r, size_t bytes)
{
    if (r.buf)
        r.off += bytes;
    else
        r.host = (char *)r.host + bytes;
    return r;
}

/* How the calls run: at once on host memory (batch NULL), or recorded into
 * batch (every lm_ref then in a buffer of its backend). */
typedef struct lm_exec {
    rayo_context *ctx;
    rayo_batch *batch;
    int replay;         /* batch is recorded once and replayed, one token per step */
} lm_exec;

typedef struct lm_weight {
    rayo_dtype dtype;
    lm_ref data;        /* rows x cols, rows of whole blocks, dense */
    size_t rows, cols;  /* rows = outputs, cols = inputs (GGUF ne[1], ne[0]) */
} lm_weight;

extern int lm_force_interim;
/* Calls that took the interim path because no backend could do the ABI 1 op. */
extern size_t lm_fallbacks;

/* y[t][rows] = sum_c x[t][c] w[r][c] for t < n_tok: one gemv (n_tok = 1) or
 * one matmul over all tokens, on the weight's own dtype, at this precision. */
rayo_status lm_linear(const lm_exec *e, const lm_weight *w, lm_ref x, size_t n_tok, lm_ref y,
                      rayo_precision precision);
/* The same product added to y (the residual stream): y[t] += w x[t], each sum
 * rounded once, as lm_linear into a scratch row and an add would. */
rayo_status lm_linear_add(const lm_exec *e, const lm_weight *w, lm_ref x, size_t n_tok, lm_ref y,
                          rayo_precision precision);
/* y[i][cols] = row rows[i] of w as f32, i < n; rows_host: the same indices in
 * host memory (for the interim path). */
rayo_status lm_get_rows(const lm_exec *e, const lm_weight *w, lm_ref rows,
                        const int32_t *rows_host, size_t n, lm_ref y);
/* Rotary embedding in place, NORM pairs (2i, 2i + 1): x is [n_tok][n_heads][head_dim],
 * token t at position pos[t] (pos_host: the same in host memory). */
typedef struct lm_rope_shape {
    size_t n_heads, head_dim, rot_dims;
    float freq_base;
} lm_rope_shape;
rayo_status lm_rope(const lm_exec *e, const lm_rope_shape *r, lm_ref x, size_t n_tok, lm_ref pos,
                    const int32_t *pos_host);

typedef struct lm_attn {
    size_t n_q, n_kv;           /* queries are the last n_q of n_kv positions (causal) */
    size_t n_heads, n_kv_heads, head_dim;
    size_t kv_stride;           /* floats between positions in the caches */
    int kv_grows;               /* batched: n_kv grows with the replayed batch's step */
} lm_attn;
/* out[n_q][n_heads * head_dim] = softmax(q k^T / sqrt(head_dim) + causal mask) v,
 * every head in one call. */
rayo_status lm_attention(const lm_exec *e, const lm_attn *p, lm_ref q, lm_ref k, lm_ref v,
                         lm_ref out, rayo_precision precision);
/* The index of the first largest of x's n values (the first NaN if any):
 * on host memory a size_t at y, in a batch a uint64 (what batches store). */
rayo_status lm_argmax(const lm_exec *e, lm_ref x, size_t n, lm_ref y);
/* y = silu(gate) * up, rows x cols. */
rayo_status lm_swiglu(const lm_exec *e, lm_ref gate, lm_ref up, lm_ref y, size_t rows, size_t cols);
/* y = x / rms(x) * gamma per row. */
rayo_status lm_rmsnorm(const lm_exec *e, lm_ref x, lm_ref gamma, lm_ref y, size_t rows,
                       size_t cols, float eps);

#endif
