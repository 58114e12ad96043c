/* SPDX-License-Identifier: MIT */
/* cuda-op-table.h - the ops of the cuda backend and the kernel family
 * (cuda-internal.h) that runs each, generated from the op list (rayo-ops.h):
 * included inside an array of {op, dtypes, X} with CUDA_X(FAMILY) defined as
 * the X of a family: once for the descriptor's op table (X its host entry)
 * and once for the plugin's own lookup (X the family; cuda-plugin.c).
 *
 *   - an op of all-f32 operands: the family of its signature (CUDA_SIG_*);
 *   - a RAYO_COMBO line: the family of its op's other dtypes (CUDA_COMBO_*);
 *     CUDA_TYPED skips the all-f32 line (DTYPES 0: the signature's family).
 *
 * A signature or an op with RAYO_COMBO lines the backend does not place is
 * a compile error: a new op gets its family here, once. */
#define CUDA_ENTRY(OP, DTYPES, FAMILY) {RAYO_OP_##OP, (DTYPES), CUDA_X(FAMILY)},
/* the loader skips an entry without a kernel */
#define CUDA_TYPED(OP, DTYPES, FAMILY) {RAYO_OP_##OP, (DTYPES), (DTYPES) ? CUDA_X(FAMILY) : NULL},

#define CUDA_SIG_BINARY(OP) CUDA_ENTRY(OP, 0, elementwise)
#define CUDA_SIG_UNARY(OP) CUDA_ENTRY(OP, 0, elementwise)
#define CUDA_SIG_UNARY_P(OP) CUDA_ENTRY(OP, 0, elementwise)
#define CUDA_SIG_UNARY_P2(OP) CUDA_ENTRY(OP, 0, elementwise)
#define CUDA_SIG_AXPY(OP) CUDA_ENTRY(OP, 0, elementwise)
#define CUDA_SIG_REDUCE(OP) CUDA_ENTRY(OP, 0, reduce)
#define CUDA_SIG_REDUCE2(OP) CUDA_ENTRY(OP, 0, reduce)
#define CUDA_SIG_ARGREDUCE(OP) CUDA_ENTRY(OP, 0, reduce)
#define CUDA_SIG_ROWS(OP) CUDA_ENTRY(OP, 0, rows)
#define CUDA_SIG_NORM(OP) CUDA_ENTRY(OP, 0, rows)
#define CUDA_SIG_MATMUL(OP) CUDA_ENTRY(OP, 0, matmul)
#define CUDA_SIG_GEMV(OP) CUDA_ENTRY(OP, 0, gemv)
#define CUDA_SIG_TRANSPOSE(OP) CUDA_ENTRY(OP, 0, transpose)
#define CUDA_SIG_BIAS_ACT(OP) CUDA_ENTRY(OP, 0, bias_act)
#define CUDA_SIG_GLU(OP) CUDA_ENTRY(OP, 0, glu)
/* ops whose every dtype combination is a RAYO_COMBO line */
#define CUDA_SIG_CONVERT(OP)
#define CUDA_SIG_GET_ROWS(OP)
#define CUDA_SIG_ROPE(OP)
#define CUDA_SIG_ATTENTION(OP)

#define CUDA_COMBO_MATMUL(OP, DTYPES) CUDA_TYPED(OP, DTYPES, typed_matmul) /* cuda-typed-matmul.c */
#define CUDA_COMBO_GEMV(OP, DTYPES) CUDA_TYPED(OP, DTYPES, gemvq)          /* the rest: cuda-infer.c */
#define CUDA_COMBO_CONVERT(OP, DTYPES) CUDA_ENTRY(OP, DTYPES, convert)
#define CUDA_COMBO_GET_ROWS(OP, DTYPES) CUDA_ENTRY(OP, DTYPES, get_rows)
#define CUDA_COMBO_ROPE(OP, DTYPES) CUDA_ENTRY(OP, DTYPES, rope)
#define CUDA_COMBO_ATTENTION(OP, DTYPES) CUDA_ENTRY(OP, DTYPES, attention)

#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) CUDA_SIG_##SIG(ENUM)
#define RAYO_COMBO(OP, A, B, C, Y, TR, TA, RR, RA)                                                    \
    CUDA_COMBO_##OP(OP, RAYO_DTYPES(RAYO_DTYPE_##A, RAYO_DTYPE_##B, RAYO_DTYPE_##C, RAYO_DTYPE_##Y))
#include "rayo-ops.h"
#undef RAYO_COMBO
#undef RAYO_OP
