/* SPDX-License-Identifier: MIT */
/* ref-infer.h - float64 references for the inference ops of ABI 1 final:
 * dequantize, gemv/matmul with f16/bf16/quantized operands, get_rows, rope,
 * attention (GQA, KV cache, causal), swiglu/geglu.
 *
 * They judge the kernels, so they share no code with them: every value is
 * computed in double from the operands' stored values (a block format's
 * dequantized values, an f16's exact value), with explicit shapes and
 * strides.  Where the accuracy contract needs it, a function also returns
 * for each output the sum of |terms| that make it (the conditioning).
 * Outputs are dense, row-major doubles.  Each function returns 0, or -1 for
 * shapes it cannot evaluate (the kernel should refuse them too) or, for
 * ref_matmul, which decodes its operands once, when memory runs out.
 *
 * Part of the conformance engine (tools/conform/); not part of librayo.
 */
#ifndef RAYO_REF_INFER_H
#define RAYO_REF_INFER_H

#include "rayo.h"
#include "rayo-dtype.h"
#include <stddef.h>
#include <stdint.h>

/* The exact value of element i of a row stored in dtype dt (float-valued
 * dtypes; I32 gives the integer). */
double ref_element(rayo_dtype dt, const void *row, size_t i);

/* y[i] = value of element i, i < n (n a multiple of the block size). */
int ref_dequantize(rayo_dtype dt, const void *src, size_t n, double *y);

/* A matrix as stored: rows x cols elements, row r starting ld elements after
 * row r - 1 (ld >= cols; for block dtypes ld and cols are multiples of the
 * block size, so every row starts on a block). */
typedef struct ref_matrix {
    rayo_dtype dtype;
    const void *data;
    size_t rows, cols, ld;
} ref_matrix;

/* Element (r, c) of a stored matrix. */
double ref_matrix_at(const ref_matrix *a, size_t r, size_t c);

/* C(m x n) = alpha op(A) op(B) + beta C0, where op(X) is X or X^T
 * (RAYO_TRANS_A / RAYO_TRANS_B in flags, as in rayo.h); op(A) is m x k,
 * op(B) is k x n.  C0 (m x n, row stride ldc) is read only when beta != 0.
 * terms[i*n + j] = sum_p |alpha a b| + |beta c0|. */
int ref_matmul(unsigned flags, size_t m, size_t n, size_t k, double alpha, const ref_matrix *a,
               const ref_matrix *b, double beta, const float *c0, size_t ldc, double *c, double *terms);

/* y = alpha op(A) x + beta y0; op(A) is A (rows outputs) or A^T
 * (RAYO_TRANS_A: cols outputs).  y0 read only when beta != 0. */
int ref_gemv(unsigned flags, const ref_matrix *a, const float *x, double alpha, double beta,
             const float *y0, double *y, double *terms);

/* out[r][c] = table(idx[r], c) for r < n_idx, c < table->cols.  -1 when an
 * index is negative or >= table->rows. */
int ref_get_rows(const ref_matrix *table, const int32_t *idx, size_t n_idx, double *out);

/* ---- rope ---------------------------------------------------------------- */
typedef enum ref_rope_mode {
    REF_ROPE_NORM = 0, /* rotate adjacent pairs (x[2i], x[2i+1]) (GPT-J, Llama in GGUF) */
    REF_ROPE_NEOX = 1  /* rotate halves (x[i], x[i + rot_dims/2]) (GPT-NeoX, Qwen, Phi) */
} ref_rope_mode;

/* x is [n_tokens][n_heads][head_dim] with strides in elements between tokens
 * and between heads.  Token t's angle for pair i (i < rot_dims / 2) is
 *   theta = pos[t] * freq_scale * freq_base^(-2i / rot_dims),
 * and the pair (u, v) becomes (u cos - v sin, u sin + v cos).  Dimensions
 * from rot_dims on are copied.  rot_dims is even and <= head_dim.
 * y is dense [n_tokens][n_heads][head_dim]. */
int ref_rope(ref_rope_mode mode, size_t n_tokens, size_t n_heads, size_t head_dim, size_t rot_dims,
             const float *x, size_t token_stride, size_t head_stride, const int32_t *pos,
             double freq_base, double freq_scale, double *y);

/* ---- attention -------------------------------------------------------------- */
/* A [tokens][heads][head_dim] tensor with strides in elements. */
typedef struct ref_heads {
    rayo_dtype dtype;        /* f32 for queries; f32 or f16 for the KV cache */
    const void *data;
    size_t token_stride, head_stride;
} ref_heads;

typedef struct ref_attention_shape {
    size_t n_q;              /* queries (1 for decode) */
    size_t n_kv;             /* cached positions, the queries' own included */
    size_t n_heads, n_kv_heads, head_dim;
    int causal;              /* query i is at position n_kv - n_q + i and sees keys j <= it */
    double scale;            /* usually 1 / sqrt(head_dim) */
} ref_attention_shape;

/* out[i][h][:] = sum_j p_j V[j][h / g][:],  p = softmax_j(scale Q[i][h] . K[j][h / g])
 * over the visible keys, with g = n_heads / n_kv_heads (grouped-query
 * attention: consecutive query heads share a KV head).  Computed in one pass
 * with a running maximum.  terms (may be NULL) gets sum_j p_j |V[j]| per
 * output.  -1 when n_kv_heads does not divide n_heads, n_kv is 0, or a causal
 * call has more queries than positions, or memory runs out (it decodes one
 * KV head's keys and values at a time). */
int ref_attention(const ref_attention_shape *s, const ref_heads *q, const ref_heads *k,
                  const ref_heads *v, double *out, double *terms);

/* ---- gated activations ------------------------------------------------------ */
typedef enum ref_glu_kind {
    REF_GLU_SWIGLU = 0,      /* silu(a) * b */
    REF_GLU_GEGLU = 1,       /* gelu(a) * b, erf form */
    REF_GLU_GEGLU_TANH = 2   /* gelu(a) * b, tanh form */
} ref_glu_kind;

/* y[r][c] = f(a[r][c]) * b[r][c], rows x cols, a and b with row strides (a
 * and b may be the two halves of one [gate | up] matrix). */
int ref_glu(ref_glu_kind kind, size_t rows, size_t cols, const float *a, size_t lda, const float *b,
            size_t ldb, double *y);

#endif
