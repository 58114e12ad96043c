/* SPDX-License-Identifier: MIT */
/* gpu-op-entries.h - the entries of a GPU plugin's op tables, one per op and
 * dtype combination of the op list (rayo-ops.h), each naming the kernel
 * family (gpu-family.h) that runs it: {RAYO_OP_x, dtypes, GPU_X(family)},
 * included inside an array by gpu-op-table.h.
 *
 * A plugin without a kernel for some RAYO_COMBO lines of an op defines
 * GPU_COMBO_<OP>(OP, A, B, C, Y) first (GPU_ENTRY for the lines it runs,
 * nothing for the others).  A signature added to the op list without a
 * family here is a compile error: it gets one, once, for every GPU plugin. */
#define GPU_DTYPES(A, B, C, Y) RAYO_DTYPES(RAYO_DTYPE_##A, RAYO_DTYPE_##B, RAYO_DTYPE_##C, RAYO_DTYPE_##Y)
#define GPU_ENTRY(OP, DTYPES, FAMILY) {RAYO_OP_##OP, (DTYPES), GPU_X(FAMILY)},
/* A RAYO_COMBO line of other dtypes than f32 (the all-f32 line, DTYPES 0,
 * is the signature's family; the loader skips an entry without a kernel). */
#define GPU_TYPED(OP, DTYPES, FAMILY) {RAYO_OP_##OP, (DTYPES), (DTYPES) ? GPU_X(FAMILY) : NULL},

#define GPU_SIG_BINARY(OP) GPU_ENTRY(OP, 0, elementwise)
#define GPU_SIG_UNARY(OP) GPU_ENTRY(OP, 0, elementwise)
#define GPU_SIG_UNARY_P(OP) GPU_ENTRY(OP, 0, elementwise)
#define GPU_SIG_UNARY_P2(OP) GPU_ENTRY(OP, 0, elementwise)
#define GPU_SIG_AXPY(OP) GPU_ENTRY(OP, 0, elementwise)
#define GPU_SIG_REDUCE(OP) GPU_ENTRY(OP, 0, reduce)
#define GPU_SIG_REDUCE2(OP) GPU_ENTRY(OP, 0, reduce)
#define GPU_SIG_ARGREDUCE(OP) GPU_ENTRY(OP, 0, reduce)
#define GPU_SIG_ROWS(OP) GPU_ENTRY(OP, 0, rows)
#define GPU_SIG_NORM(OP) GPU_ENTRY(OP, 0, rows)
#define GPU_SIG_MATMUL(OP) GPU_ENTRY(OP, 0, matmul)
#define GPU_SIG_GEMV(OP) GPU_ENTRY(OP, 0, gemv)
#define GPU_SIG_TRANSPOSE(OP) GPU_ENTRY(OP, 0, transpose)
#define GPU_SIG_BIAS_ACT(OP) GPU_ENTRY(OP, 0, bias_act)
#define GPU_SIG_GLU(OP) GPU_ENTRY(OP, 0, glu)
/* ops whose every dtype combination is a RAYO_COMBO line */
#define GPU_SIG_CONVERT(OP)
#define GPU_SIG_GET_ROWS(OP)
#define GPU_SIG_ROPE(OP)
#define GPU_SIG_ATTENTION(OP)

#ifndef GPU_COMBO_MATMUL
#define GPU_COMBO_MATMUL(OP, A, B, C, Y) GPU_TYPED(OP, GPU_DTYPES(A, B, C, Y), typed_matmul)
#endif
#ifndef GPU_COMBO_GEMV
#define GPU_COMBO_GEMV(OP, A, B, C, Y) GPU_TYPED(OP, GPU_DTYPES(A, B, C, Y), gemvq)
#endif
#ifndef GPU_COMBO_CONVERT
#define GPU_COMBO_CONVERT(OP, A, B, C, Y) GPU_ENTRY(OP, GPU_DTYPES(A, B, C, Y), convert)
#endif
#ifndef GPU_COMBO_GET_ROWS
#define GPU_COMBO_GET_ROWS(OP, A, B, C, Y) GPU_ENTRY(OP, GPU_DTYPES(A, B, C, Y), get_rows)
#endif
#ifndef GPU_COMBO_ROPE
#define GPU_COMBO_ROPE(OP, A, B, C, Y) GPU_ENTRY(OP, GPU_DTYPES(A, B, C, Y), rope)
#endif
#ifndef GPU_COMBO_ATTENTION
#define GPU_COMBO_ATTENTION(OP, A, B, C, Y) GPU_ENTRY(OP, GPU_DTYPES(A, B, C, Y), attention)
#endif

#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) GPU_SIG_##SIG(ENUM)
#define RAYO_COMBO(OP, A, B, C, Y, TR, TA, RR, RA) GPU_COMBO_##OP(OP, A, B, C, Y)
#include "rayo-ops.h"
#undef RAYO_COMBO
#undef RAYO_OP
