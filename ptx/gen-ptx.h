/* SPDX-License-Identifier: MIT */
/* gen-ptx.h - private header of the PTX generator (the C files in ptx/, one program run
 * at build time; nothing here is part of rayo's API).
 *
 * How the generator is organised:
 *   gen-ptx.c       main: the module table, the target header, the output
 *                   (PTX files, or C strings the cuda plugin embeds)
 *   emit.c          the emitter: text buffer, virtual registers and their
 *                   names, emit()/label()/kern_finish(), small building blocks
 *   math.c          accurate math and activations as PTX sequences (m_*)
 *   block-reduce.c  warp shuffles and block-wide reductions
 *   one file per module:  elementwise.c, reduce.c, rows.c (also rows_cluster),
 *                   matrix.c (with gemv.c and transpose.c), sgemm.c, tf32.c
 *                   (also mma16: the f16/bf16 kernels),
 *                   splitk.c (the float64 sum of split-K partials),
 *                   wgmma.c (TF32, f16 and bf16 on Hopper's warpgroup MMA, sm_90a),
 *                   infer-gemv.c + infer-gemv8.c + infer-ops.c + attention.c +
 *                   attention-prefill.c
 *                   (module "infer": gemv with half and quantized weights, and
 *                   with 8-bit x; glu, rope, convert, get_rows; fused attention),
 *                   attn-cluster.c (attn_cluster: relaxed decode attention, sm_90)
 *
 * A kernel is written into a `kern`: each helper takes fresh virtual
 * registers (nf, nr, ...), and emit() prints one instruction with their
 * names (F, R, ...); kern_finish() adds the entry line and the register
 * declarations and appends the kernel to its module's text. */
#ifndef RAYO_GEN_PTX_H
#define RAYO_GEN_PTX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/rayo-dtype.h"
#include "../plugins/cuda/cuda-ptx.h" /* the module list, the tables' types */

/* ---- emit.c: text buffer ------------------------------------------------- */
typedef struct strbuf {
    char *p;
    size_t len, cap;
} strbuf;

void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(strbuf *b);

/* ---- emit.c: one kernel and its virtual registers -------------------------- */
typedef struct kern {
    strbuf body;
    int nf, nr, nd, nfd, np, nlabel;
} kern;

/* A fresh virtual register (or label) number of each kind. */
int nf(kern *k);     /* .f32 */
int nr(kern *k);     /* .b32 */
int nd(kern *k);     /* .b64 */
int nfd(kern *k);    /* .f64 */
int np(kern *k);     /* .pred */
int nlabel(kern *k);

/* The PTX names of registers, labels and immediates, for emit()'s %s.  They
 * live in a ring of 64 buffers, valid until the ring comes round again: one
 * instruction may use at most 64 (the generator stops with an error beyond). */
const char *F(int i);      /* %f<i> */
const char *R(int i);      /* %r<i> */
const char *D(int i);      /* %rd<i> */
const char *FD(int i);     /* %fd<i> */
const char *P(int i);      /* %p<i> */
const char *L(int i);      /* $L<i> */
const char *C(float v);    /* a float32 immediate, bit exact */
const char *CB(uint32_t bits);
const char *CD(double v);  /* a float64 immediate */

/* One instruction (a tab before, a newline after), or a label line. */
void emit(kern *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void label(kern *k, int l);
/* for (i = start; i < end; i += step) { body } over u64 registers start, end:
 * ptx_loop_begin emits the head (the body follows), ptx_loop_end the tail. */
typedef struct ptx_loop {
    int i, p, l_top, l_done, step;
} ptx_loop;
ptx_loop ptx_loop_begin(kern *k, int start, int end, int step);
void ptx_loop_end(kern *k, ptx_loop l, int end);
/* Appends the finished kernel to mod and resets k. */
void kern_finish(strbuf *mod, kern *k, const char *name, const char *params, const char *directives,
                 const char *shared);

/* ---- emit.c: small building blocks (each returns a fresh register) --------- */
int param_u64(kern *k, const char *name);
int param_global(kern *k, const char *name); /* a .u64 pointer parameter, as a global address */
int param_f32(kern *k, const char *name);
int sreg(kern *k, const char *name);         /* mov.u32 from a special register */
void grid_index(kern *k, int *gid, int *stride);
int addr_of(kern *k, int base, int index, int scale);
int fmov(kern *k, float v);
int is_nan(kern *k, int x);
int horner(kern *k, int x, const float *c, int n);

/* ---- math.c: float32 math, .f32 register in, .f32 register out ------------- */
int m_exp(kern *k, int x);
int m_exp_act(kern *k, int x); /* clamped to [-86, 88]: for callers with an absolute tolerance */
int m_div_fast(kern *k, int num, int den); /* num * rcp.approx(den) */
int m_log(kern *k, int x);
int m_erfc_poly(kern *k, int t, int *tau); /* Q(tau) of erfc(t) = tau exp(Q(tau) - t^2), t >= 0 */
int m_sigmoid(kern *k, int x);
int m_silu(kern *k, int x);
int m_tanh(kern *k, int x);
int m_gelu(kern *k, int x);
int m_gelu_tanh(kern *k, int x);
int m_mish(kern *k, int x);
int m_relu(kern *k, int x);
int m_elu_like(kern *k, int x, int scale_neg, double scale_all);

/* ---- block-reduce.c: block-wide reductions (256 threads = 8 warps) --------- */
#define RED_THREADS 256
#define RED_WARPS (RED_THREADS / 32)
/* Shared scratch every reducing kernel declares: 8 warps x 16 bytes. */
#define RED_SHARED "\t.shared .align 16 .b8 red_smem[128];\n"

int shfl_f64(kern *k, int v, int off);
int block_sum_f64(kern *k, int v, int lane, int warp);
int block_minmax_f32(kern *k, int v, int lane, int warp, int is_max);
void argmax_combine(kern *k, int *v, int *i, int v2, int i2);
void block_argmax(kern *k, int *v, int *i, int lane, int warp);
void lane_warp(kern *k, int *tid, int *lane, int *warp);

/* ---- rows.c: rmsnorm's arithmetic, shared with the gemv8 kernels' prologue -- */
void norm_rstd(kern *k, int ss, int inv_n, int eps, int rstd);
int rmsnorm_value(kern *k, int x, int rstd, int gamma);

/* ---- product-redo.c: an output whose float sum overflowed, again in float64 -- */
/* One operand of a product's output: element i is at base + i * step
 * (float32 or bf16; step a .b64 register of elements, or -1 for 1), or,
 * for the block dtypes, value i of the row of blocks at base (step -1). */
typedef struct redo_operand {
    int base, step; /* .b64 */
    rayo_dtype dtype;
} redo_operand;
/* acc (.f64) = sum over count (.b64) terms of a[i] * b[i] in float64 where
 * acc is not finite; else acc is left as it is.  The _f32 form takes and
 * gives a .f32 sum (rounded once). */
void redo_if_not_finite(kern *k, int acc, const redo_operand *a, const redo_operand *b, int count);
void redo_if_not_finite_f32(kern *k, int acc, const redo_operand *a, const redo_operand *b, int count);
/* A thread's outputs of a product tile, C = alpha op(A) op(B) + beta C, all
 * computed again in float64 (the slow path of a tile with a sum that is not
 * finite): A and B both of dtype (float32 or bf16),
 * op(A)(i, p) = a[i * a_row + p * a_k], op(B)(p, j) = b[p * b_k +
 * j * b_col] (.b64 element strides), K terms, C(i, j) at c + (i * ldc + j)
 * floats; only outputs inside M x N.  The thread's rows are rows->base +
 * g * gap + e for g < groups, e < run (columns alike). */
typedef struct redo_product {
    int a, b, a_row, a_k, b_col, b_k, M, N, K; /* .b64 */
    rayo_dtype dtype;
} redo_product;
typedef struct redo_span {
    int base; /* .b64 */
    int groups, gap, run;
} redo_span;
void redo_tile(kern *k, const redo_product *p, const redo_span *rows, const redo_span *cols, int c, int ldc,
               int alpha, int beta);
/* A .pred: whether any of the count .f32 registers v is not finite. */
int any_not_finite(kern *k, const int *v, int count);
/* infer-ops.c: value e (.b32) of the block of dtype dt at blk (.b64), .f32 */
int dequant_value(kern *k, rayo_dtype dt, int blk, int e);

/* ---- the kernels of module "matrix" outside matrix.c ------------------------ */
void gen_gemv_n(strbuf *mod);
void gen_gemv_t(strbuf *mod);
void gen_gemv_fast(strbuf *mod); /* gemv_n_block_*, gemv_t_part_v4 */
void gen_transpose(strbuf *mod);
/* gemv.c: *ya = alpha * acc + beta * *ya (read only when beta != 0), acc
 * .f64, the rest in float64, rounded once */
void store_scaled(kern *k, int acc, int ya, int alpha, int beta);

/* ---- sgemm.c: the block's tile of C, shared with tf32.c -------------------- */
void block_tile(kern *k, int raster, int *tile_m, int *tile_n);

/* ---- the modules: each appends its kernels to mod --------------------------- */

/* module_elementwise() ...: one for each of RAYO_PTX_MODULES (cuda-ptx.h);
 * module_mma16 is in tf32.c (the f16/bf16 kernels on the TF32 kernels'
 * generator), module_rows_cluster in rows.c, module_attn_cluster in
 * attn-cluster.c. */
#define GEN_PTX_MODULE_FN(ID, name, min_sm, arch_specific) void module_##name(strbuf *mod);
RAYO_PTX_MODULES(GEN_PTX_MODULE_FN)
#undef GEN_PTX_MODULE_FN
/* infer-gemv.c: part += code * x for the 4 byte codes of w, each less bias
 * (.b32 w, .f32 x[4] and part) */
void codes_dot4(kern *k, int w, float bias, const int *x, int part);
/* infer-gemv.c: Q4_K sub-block 2 sub + e's 6-bit scale and min as .f32
 * (*scf, *mf), from the block's 12 scale bytes in the .b32 words s[3]
 * (sub a .b32 register, e 0 or 1) */
void q4_k_scale_min(kern *k, const int *s, int sub, int e, int *scf, int *mf);
/* infer-ops.c: silu(g) u as glu_swiglu computes it (.f32 g, u; returns .f32) */
int swiglu_value(kern *k, int g, int u);
/* infer-ops.c: the pair (u, v) (.f32) rotated by the angle pos (.s32) times
 * inv_freq[i] (i .b32; ratio, scale .f64 as the rope kernels take them):
 * *o1 = u cos - v sin, *o2 = u sin + v cos (.f32), as rope_* computes them */
void rope_rotate(kern *k, int pos, int i, int ratio, int scale, int u, int v, int *o1, int *o2);
/* attention.c: the parameters of every attention kernel (attn_warp_*,
 * attn_block_*, attn_dec_*): pointers q, k, v (.b64 global), the shape and
 * the strides (.u64), read in this order */
typedef struct attn_params {
    int q, k, v, n_q, n_kv, group, d, causal, qt, qh, kt, kh, vt, vh;
} attn_params;
void attn_read_params(kern *k, attn_params *a);
/* attention.c: where attn_merge reads the partial result of query i, head
 * h (of heads; all .b64) and key range split of nsplit (.b32): the address
 * (.b64) of part[((i heads + h) nsplit + split) (2 + d)], doubles: m, the
 * sum, then the d accumulators. */
int attn_part_at(kern *k, int part, int i, int heads, int h, int split, int nsplit, int d);
/* m (.f32, in base 2: stored as m ln 2, attn_merge's natural units) and the
 * sum (.f32) as doubles at base, where the predicate p0 holds. */
void attn_part_m_sum(kern *k, int base, int mm, int tot, int p0);
/* infer-gemv8.c: gemv with Q8_0 / Q4_0 / Q4_K / Q6_K weights and 8-bit x (relaxed calls) */
void infer_gemv8(strbuf *mod);
/* infer-ops.c: the other kernels of module "infer" (glu, rope, convert) */
void infer_ops(strbuf *mod);
/* infer-prompt.c: the half-precision prompt path's row scaling kernels */
void infer_prompt(strbuf *mod);
/* attention.c: attention kernels of module "infer" */
void infer_attention(strbuf *mod);
/* attention-prefill.c: relaxed prompt attention and grouped-query decode on tensor cores (module "infer") */
void infer_attention_prefill(strbuf *mod);

/* tf32.c: the C tables rayo_cuda_tf32_configs and rayo_cuda_mma16_configs
 * (plugins/cuda/cuda-ptx.h). */
void tf32_write_config_table(strbuf *c);
/* wgmma.c: the C table rayo_cuda_wgmma_configs (plugins/cuda/cuda-ptx.h). */
void wgmma_write_config_table(strbuf *c);
/* infer-gemv.c: the C table rayo_cuda_gemvq_configs (plugins/cuda/cuda-ptx.h). */
void infer_write_config_table(strbuf *c);

#endif
