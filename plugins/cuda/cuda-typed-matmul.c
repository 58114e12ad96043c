/* cuda-typed-matmul.c - matmul with an f32 A and a half or quantized B
 * (the weight: f16, bf16, Q8_0, Q4_0, Q4_K, Q6_K), C in f32.
 *
 * The simple way: B is dequantized whole into f32 device scratch by the
 * get_rows kernels (bit-exact, honouring ldb), then the f32 matmul runs on
 * that copy.  A strict call takes the fp32 kernels; a relaxed one may take
 * the TF32 tensor-core kernels (within the combos' relaxed 2e-3).  A
 * transposed B (the LLM prefill's weight, n x k) is transposed once more in
 * the scratch when both copies fit: the TF32 kernels read B untransposed
 * only, and the fp32 ones are much faster untransposed too (on the H200 a
 * TinyLlama prefill took 490 tok/s through sgemm_nt_k8).  B's f32 copy must
 * fit in TYPED_MATMUL_MAX_SCRATCH; a larger B is refused (the call falls
 * through). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "cuda-internal.h"

#include <stdint.h>

#define TYPED_MATMUL_MAX_SCRATCH ((size_t)1 << 30)
#define SCRATCH_ALIGN 256

/* B as stored: rows of cols elements (n x k with RAYO_TRANS_B, else k x n). */
static void b_shape(const cuda_op *op, size_t *rows, size_t *cols)
{
    int tb = (op->flags & RAYO_TRANS_B) != 0;
    *rows = tb ? op->n : op->k;
    *cols = tb ? op->k : op->n;
}

/* Bytes of B's dense f32 copy, rounded up to SCRATCH_ALIGN; 0 on overflow. */
static size_t f32_copy_bytes(const cuda_op *op)
{
    size_t rows, cols;
    b_shape(op, &rows, &cols);
    if (cols && rows > (SIZE_MAX - SCRATCH_ALIGN) / sizeof(float) / cols)
        return 0;
    size_t bytes = rows * cols * sizeof(float);
    return (bytes + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
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

size_t cuda_typed_matmul_scratch_bytes(const cuda_op *op)
{
    if (!op->dtypes)
        return 0;
    size_t one = f32_copy_bytes(op);
    return transposes_b(op) ? 2 * one : one;
}

rayo_status cuda_typed_matmul_check(const cuda_op *op)
{
    if (op->op != RAYO_OP_MATMUL || !op->dtypes)
        return RAYO_OK;
    rayo_dtype adt = RAYO_DTYPE_OF(op->dtypes, 0), bdt = RAYO_DTYPE_OF(op->dtypes, 1),
               ydt = RAYO_DTYPE_OF(op->dtypes, 3);
    if (adt != RAYO_DTYPE_F32 || ydt != RAYO_DTYPE_F32 || bdt == RAYO_DTYPE_F32 || !rayo_dtype_name(bdt))
        return RAYO_E_UNSUPPORTED;
    /* the f32 kernels take dense A and C only */
    size_t a_cols = (op->flags & RAYO_TRANS_A) ? op->m : op->k;
    if ((op->lda && op->lda != a_cols) || (op->ldy && op->ldy != op->n))
        return RAYO_E_UNSUPPORTED;
    size_t rows, cols, row_bytes;
    b_shape(op, &rows, &cols);
    if (!rayo_dtype_row_bytes(bdt, op->ldb ? op->ldb : cols, &row_bytes))
        return RAYO_E_UNSUPPORTED;
    size_t one = f32_copy_bytes(op);
    if (one == 0 && rows && cols)
        return RAYO_E_UNSUPPORTED;
    return one <= TYPED_MATMUL_MAX_SCRATCH ? RAYO_OK : RAYO_E_UNSUPPORTED;
}

rayo_status cuda_launch_typed_matmul(cuda_state *st, CUstream stream, const cuda_op *op)
{
    rayo_status s = cuda_typed_matmul_check(op);
    if (s != RAYO_OK)
        return s;
    size_t rows, cols;
    b_shape(op, &rows, &cols);
    CUdeviceptr b32 = op->scratch;
    s = cuda_launch_dequant_rows(st, stream, RAYO_DTYPE_OF(op->dtypes, 1), b32, op->b, rows, cols, op->ldb);
    if (s != RAYO_OK)
        return s;
    cuda_op f32 = *op;
    f32.dtypes = 0;
    f32.lda = f32.ldb = f32.ldy = 0;
    f32.b = b32;
    f32.scratch = 0;
    if (transposes_b(op)) {
        CUdeviceptr bt = b32 + f32_copy_bytes(op);
        cuda_op tr = {.op = RAYO_OP_TRANSPOSE, .m = rows, .n = cols, .a = b32, .y = bt};
        if ((s = cuda_launch_op(st, stream, &tr)) != RAYO_OK)
            return s;
        f32.b = bt;
        f32.flags &= ~(uint32_t)RAYO_TRANS_B;
    }
    return cuda_launch_matmul_f32(st, stream, &f32, wants_tf32(st, op));
}
