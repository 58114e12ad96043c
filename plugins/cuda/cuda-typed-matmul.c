/* SPDX-License-Identifier: MIT */
/* cuda-typed-matmul.c - matmul with an f32 A and a half or quantized B
 * (the weight: f16, bf16, Q8_0, Q4_0, Q4_K, Q6_K), or with f16 x f16 or
 * bf16 x bf16 operands, C in f32.
 *
 * f16 x f16 and bf16 x bf16 run on the tensor cores where their kernels
 * take the call: relaxed calls on sm_90 through warpgroup MMA
 * (cuda-wgmma.c), else the mma.sync kernels (cuda-mma16.c).  Otherwise,
 * the simple way: B (and a half A) are dequantized whole into f32 device
 * scratch by the get_rows kernels (bit-exact, honouring lda and ldb), then
 * the f32 matmul runs on those copies.  A strict call takes the fp32 kernels; a relaxed one may take
 * the TF32 tensor-core kernels (within the combos' relaxed 2e-3).  A
 * transposed B (the LLM prefill's weight, n x k) is transposed once more in
 * the scratch when both copies fit: the TF32 kernels read B untransposed
 * only, and the fp32 ones are much faster untransposed too (on the H200 a
 * TinyLlama prefill took 490 tok/s through sgemm_nt_k8).  Each f32 copy
 * must fit in TYPED_MATMUL_MAX_SCRATCH; a larger one is refused (the call
 * falls through).
 *
 * A relaxed call with an f32 A and a transposed quantized or half B (the
 * LLM prompt's products) takes the half path instead where the tensor-core
 * kernels take its f16 copies: each row of A and of B goes to f16 scaled by
 * a power of two of its own (module infer's half_rows_*: no overflow, full
 * f16 precision for small rows), the f16 x f16 product runs through wgmma
 * (or mma.sync) with f32 sums into scratch, and half_scale_c scales it back
 * (exact) with alpha and beta.  Two f16 roundings per product: at most
 * 2^-10 of the SUM scale, within the relaxed 2e-3.  With
 * [backend.cuda] prompt_split_k, a product whose tiles would leave the GPU
 * idle runs as slices of k (cuda_wgmma_half_parts) into as many partial
 * products, which half_scale_c_parts sums in float64. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"
#include "cuda-ptx.h"

#include <stdint.h>
#include <stdio.h>

#define TYPED_MATMUL_MAX_SCRATCH ((size_t)1 << 30)
#define SCRATCH_ALIGN 256

/* B as stored: rows of cols elements (n x k with RAYO_TRANS_B, else k x n). */
static void b_shape(const cuda_op *op, size_t *rows, size_t *cols)
{
    int tb = (op->flags & RAYO_TRANS_B) != 0;
    *rows = tb ? op->n : op->k;
    *cols = tb ? op->k : op->n;
}

/* Bytes of a dense f32 copy of rows x cols, rounded up to SCRATCH_ALIGN; 0 on overflow. */
static size_t f32_bytes(size_t rows, size_t cols)
{
    if (cols && rows > (SIZE_MAX - SCRATCH_ALIGN) / sizeof(float) / cols)
        return 0;
    size_t bytes = rows * cols * sizeof(float);
    return (bytes + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
}

static size_t f32_copy_bytes(const cuda_op *op)
{
    size_t rows, cols;
    b_shape(op, &rows, &cols);
    return f32_bytes(rows, cols);
}

/* A as stored: rows of cols elements (k x m with RAYO_TRANS_A, else m x k). */
static void a_shape(const cuda_op *op, size_t *rows, size_t *cols)
{
    int ta = (op->flags & RAYO_TRANS_A) != 0;
    *rows = ta ? op->k : op->m;
    *cols = ta ? op->m : op->k;
}

/* Bytes of a half A's f32 copy (0 for an f32 A, used in place). */
static size_t a_copy_bytes(const cuda_op *op)
{
    size_t rows, cols;
    a_shape(op, &rows, &cols);
    return RAYO_DTYPE_OF(op->dtypes, 0) == RAYO_DTYPE_F32 ? 0 : f32_bytes(rows, cols);
}

/* Whether the f32 matmul may use TF32: a relaxed call, or [backend.cuda]
 * precision = tf32 (as for all-f32 matmul). */
static int wants_tf32(const cuda_state *st, const cuda_op *op)
{
    return st->allow_tf32 || op->precision == RAYO_PRECISION_RELAXED;
}

/* A transposed B is transposed again for the fast NN kernels (TF32 and fp32)
 * when both f32 copies fit in the scratch limit. */
static int transposes_b(const cuda_op *op)
{
    size_t one = f32_copy_bytes(op);
    return (op->flags & RAYO_TRANS_B) && !(op->flags & RAYO_TRANS_A) && one <= TYPED_MATMUL_MAX_SCRATCH / 2;
}

/* ---- the half path ---- */
/* Byte offsets in the scratch: the f16 copies of A and B, their inverse
 * row scales, the f32 product (or `parts` partial products of slices of
 * k, m n floats apart); total = the bytes in all. */
typedef struct half_layout {
    size_t a16, sa, b16, sb, t, total;
    unsigned parts;
} half_layout;

static size_t align_up(size_t v)
{
    return (v + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
}

static cuda_op half_product(const cuda_op *op, CUdeviceptr base, const half_layout *l);

static half_layout half_layout_of(const cuda_state *st, const cuda_op *op)
{
    half_layout l;
    l.a16 = 0;
    l.sa = l.a16 + align_up(op->m * op->k * 2);
    l.b16 = l.sa + align_up(op->m * 4);
    l.sb = l.b16 + align_up(op->n * op->k * 2);
    l.t = l.sb + align_up(op->n * 4);
    cuda_op h = half_product(op, 0, &l);
    l.parts = cuda_wgmma_half_parts(st, &h);
    if (op->m * op->n > TYPED_MATMUL_MAX_SCRATCH / 4 / l.parts)
        l.parts = 1; /* takes_half checks the single product's size */
    l.total = l.t + align_up(l.parts * op->m * op->n * 4);
    return l;
}

/* The f16 x f16 call on the copies at base (B^T, C = the product T). */
static cuda_op half_product(const cuda_op *op, CUdeviceptr base, const half_layout *l)
{
    cuda_op h = {.op = RAYO_OP_MATMUL, .flags = RAYO_TRANS_B, .m = op->m, .n = op->n, .k = op->k};
    h.alpha = 1.0f;
    h.a = base + l->a16;
    h.b = base + l->b16;
    h.y = base + l->t;
    h.dtypes = RAYO_DTYPES(RAYO_DTYPE_F16, RAYO_DTYPE_F16, 0, RAYO_DTYPE_F32);
    h.precision = RAYO_PRECISION_RELAXED;
    return h;
}

/* Whether the call takes the half path: relaxed, f32 A (not transposed)
 * by a transposed half or quantized B, f32 C, rows of k a multiple of 8
 * (16-byte f16 rows), and a tensor-core kernel for the copies. */
static int takes_half(const cuda_state *st, const cuda_op *op)
{
    rayo_dtype adt = RAYO_DTYPE_OF(op->dtypes, 0), bdt = RAYO_DTYPE_OF(op->dtypes, 1);
    size_t row_bytes;
    if (!st->use_half_prompt || op->op != RAYO_OP_MATMUL || op->precision != RAYO_PRECISION_RELAXED ||
        adt != RAYO_DTYPE_F32 || bdt == RAYO_DTYPE_F32 || !rayo_dtype_name(bdt) ||
        RAYO_DTYPE_OF(op->dtypes, 3) != RAYO_DTYPE_F32 ||
        (op->flags & (RAYO_TRANS_A | RAYO_TRANS_B)) != RAYO_TRANS_B)
        return 0;
    if (!op->m || !op->n || !op->k || op->k % 8 || op->n % 2 || (op->lda && op->lda < op->k) ||
        (op->ldy && op->ldy < op->n) || !rayo_dtype_row_bytes(bdt, op->ldb ? op->ldb : op->k, &row_bytes) ||
        op->k % rayo_dtype_block_elems(bdt))
        return 0;
    if (op->m > ((size_t)1 << 31) || op->n > ((size_t)1 << 31) || op->k > ((size_t)1 << 31) ||
        op->m * op->n > TYPED_MATMUL_MAX_SCRATCH / 4 || op->n * op->k > TYPED_MATMUL_MAX_SCRATCH / 2 ||
        op->m * op->k > TYPED_MATMUL_MAX_SCRATCH / 2)
        return 0;
    half_layout l = half_layout_of(st, op);
    cuda_op h = half_product(op, 0, &l);
    return cuda_wgmma_half_takes(st, &h) || cuda_mma16_kernel(st, &h);
}

/* A kernel of module infer: 256 threads a block, gx x gy blocks. */
static rayo_status half_launch(cuda_state *st, CUstream stream, const char *name, size_t gx, size_t gy,
                               void **params)
{
    CUfunction fn;
    rayo_status s = cuda_function(st, MOD_INFER, name, &fn);
    if (s != RAYO_OK)
        return s;
    CUresult r = cuda_launch_kernel(st, fn, (unsigned)(gx ? gx : 1), (unsigned)(gy ? gy : 1), 1, 256, 1, 1, 0, stream,
                                    params, NULL);
    return r == CUDA_SUCCESS ? RAYO_OK : cuda_fail(st, r, name);
}

/* rows x cols values of dtype dt at src (rows row_bytes apart) to scaled
 * f16 at dst, the inverse scales at inv. */
static rayo_status half_rows(cuda_state *st, CUstream stream, rayo_dtype dt, CUdeviceptr dst, CUdeviceptr inv,
                             CUdeviceptr src, size_t rows, size_t cols, size_t row_bytes)
{
    char name[40];
    snprintf(name, sizeof name, "half_rows_%s", rayo_dtype_name(dt));
    unsigned long long m = rows, n = cols, rb = row_bytes;
    void *params[] = {&dst, &inv, &src, &m, &n, &rb};
    size_t most = (size_t)st->sm_count * 16;
    return half_launch(st, stream, name, rows < most ? rows : most, 1, params);
}

static rayo_status launch_half(cuda_state *st, CUstream stream, const cuda_op *op)
{
    half_layout l = half_layout_of(st, op);
    CUdeviceptr base = op->scratch;
    rayo_dtype bdt = RAYO_DTYPE_OF(op->dtypes, 1);
    size_t b_row_bytes = 0;
    if (!rayo_dtype_row_bytes(bdt, op->ldb ? op->ldb : op->k, &b_row_bytes))
        return RAYO_E_UNSUPPORTED; /* takes_half checked it */
    /* the product's kernel, known before anything is queued (a scratch
     * whose base the kernels refuse: the call is refused whole) */
    cuda_op h = half_product(op, base, &l);
    int wg = cuda_wgmma_half_takes(st, &h);
    const rayo_ptx_tf32_config *mma = wg ? NULL : cuda_mma16_kernel(st, &h);
    if (!wg && !mma)
        return RAYO_E_UNSUPPORTED;
    unsigned parts = wg ? l.parts : 1;
    rayo_status s = half_rows(st, stream, RAYO_DTYPE_F32, base + l.a16, base + l.sa, op->a, op->m, op->k,
                              (op->lda ? op->lda : op->k) * 4);
    if (s == RAYO_OK)
        s = half_rows(st, stream, bdt, base + l.b16, base + l.sb, op->b, op->n, op->k, b_row_bytes);
    if (s == RAYO_OK)
        s = wg ? cuda_launch_wgmma_half_split(st, stream, &h, parts) : cuda_launch_mma16(st, stream, &h, mma);
    if (s != RAYO_OK)
        return s;
    CUdeviceptr y = op->y, t = base + l.t, sa = base + l.sa, sb = base + l.sb;
    unsigned long long m = op->m, n = op->n, ldy = op->ldy ? op->ldy : op->n, nparts = parts;
    float alpha = op->alpha, beta = op->beta;
    void *params[] = {&y, &t, &sa, &sb, &m, &n, &ldy, &alpha, &beta, &nparts};
    /* a block per 256 columns and row; rows beyond about 32 blocks an SM
     * (far below the grid's 65535 rows) taken in turn by a column's blocks */
    size_t gx = (op->n + 255) / 256, gy = (size_t)st->sm_count * 32 / gx;
    gy = gy < 1 ? 1 : gy > op->m ? op->m : gy;
    return half_launch(st, stream, parts > 1 ? "half_scale_c_parts" : "half_scale_c", gx, gy, params);
}

/* ---- the dequantizing path ---- */
/* A and B dequantized to f32 (B perhaps transposed too); 0 on the mma16
 * kernels. */
static size_t typed_matmul_scratch(const cuda_state *st, const cuda_op *op)
{
    if (cuda_mma16_kernel(st, op))
        return 0;
    if (takes_half(st, op))
        return half_layout_of(st, op).total;
    size_t one = f32_copy_bytes(op);
    return a_copy_bytes(op) + (transposes_b(op) ? 2 * one : one);
}

/* The dtypes the dequantizing path takes: f32 A with a half or quantized B,
 * or both f16 or both bf16. */
static int dtypes_known(rayo_dtype adt, rayo_dtype bdt)
{
    if (adt == RAYO_DTYPE_F16 || adt == RAYO_DTYPE_BF16)
        return bdt == adt;
    return adt == RAYO_DTYPE_F32 && bdt != RAYO_DTYPE_F32 && rayo_dtype_name(bdt);
}

/* The mma16 kernels, or A and C dense (a half A is dequantized) and the
 * f32 copies within the scratch limit. */
static rayo_status typed_matmul_check(const cuda_state *st, const cuda_op *op)
{
    if (op->flags & ~(uint32_t)(RAYO_TRANS_A | RAYO_TRANS_B))
        return RAYO_E_UNSUPPORTED;
    if (cuda_mma16_kernel(st, op))
        return RAYO_OK;
    rayo_dtype adt = RAYO_DTYPE_OF(op->dtypes, 0), bdt = RAYO_DTYPE_OF(op->dtypes, 1),
               ydt = RAYO_DTYPE_OF(op->dtypes, 3);
    if (ydt != RAYO_DTYPE_F32 || !dtypes_known(adt, bdt))
        return RAYO_E_UNSUPPORTED;
    /* the f32 kernels take dense A (an f32 one is used in place) and C only */
    size_t a_rows, a_cols, rows, cols, row_bytes;
    a_shape(op, &a_rows, &a_cols);
    if ((adt == RAYO_DTYPE_F32 && op->lda && op->lda != a_cols) || (op->ldy && op->ldy != op->n))
        return RAYO_E_UNSUPPORTED;
    b_shape(op, &rows, &cols);
    if (!rayo_dtype_row_bytes(bdt, op->ldb ? op->ldb : cols, &row_bytes) ||
        !rayo_dtype_row_bytes(adt, op->lda ? op->lda : a_cols, &row_bytes))
        return RAYO_E_UNSUPPORTED;
    size_t one = f32_copy_bytes(op), a32 = a_copy_bytes(op);
    if ((one == 0 && rows && cols) || (a32 == 0 && adt != RAYO_DTYPE_F32 && a_rows && a_cols))
        return RAYO_E_UNSUPPORTED;
    return one <= TYPED_MATMUL_MAX_SCRATCH && a32 <= TYPED_MATMUL_MAX_SCRATCH ? RAYO_OK : RAYO_E_UNSUPPORTED;
}

static rayo_status launch_typed_matmul(cuda_state *st, CUstream stream, const cuda_op *op)
{
    /* f16 x f16, bf16 x bf16: on sm_90 a relaxed call takes warpgroup MMA
     * (cuda-wgmma.c) where it can, else the mma.sync kernels */
    rayo_status s = cuda_launch_wgmma_half(st, stream, op);
    if (s != RAYO_E_UNSUPPORTED)
        return s;
    const rayo_ptx_tf32_config *mma = cuda_mma16_kernel(st, op);
    if (mma)
        return cuda_launch_mma16(st, stream, op, mma);
    s = typed_matmul_check(st, op);
    if (s != RAYO_OK)
        return s;
    if (takes_half(st, op) && op->scratch && op->scratch_size >= half_layout_of(st, op).total)
        return launch_half(st, stream, op);
    cuda_op f32 = *op;
    f32.dtypes = 0;
    f32.lda = f32.ldb = f32.ldy = 0;
    f32.scratch = 0;
    size_t rows, cols, a32 = a_copy_bytes(op);
    if (a32) {
        a_shape(op, &rows, &cols);
        s = cuda_launch_dequant_rows(st, stream, RAYO_DTYPE_OF(op->dtypes, 0), op->scratch, op->a, rows, cols,
                                     op->lda);
        if (s != RAYO_OK)
            return s;
        f32.a = op->scratch;
    }
    b_shape(op, &rows, &cols);
    CUdeviceptr b32 = op->scratch + a32;
    s = cuda_launch_dequant_rows(st, stream, RAYO_DTYPE_OF(op->dtypes, 1), b32, op->b, rows, cols, op->ldb);
    if (s != RAYO_OK)
        return s;
    f32.b = b32;
    if (transposes_b(op)) {
        CUdeviceptr bt = b32 + f32_copy_bytes(op);
        cuda_op tr = {.op = RAYO_OP_TRANSPOSE, .m = rows, .n = cols, .a = b32, .y = bt,
                      .family = &cuda_family_transpose};
        if ((s = cuda_launch_op(st, stream, &tr)) != RAYO_OK)
            return s;
        f32.b = bt;
        f32.flags &= ~(uint32_t)RAYO_TRANS_B;
    }
    return cuda_launch_matmul_f32(st, stream, &f32, wants_tf32(st, op));
}

const cuda_family cuda_family_typed_matmul = {.name = "typed_matmul", .check = typed_matmul_check,
                                              .scratch = typed_matmul_scratch, .launch = launch_typed_matmul,
                                              .strided = 1};
