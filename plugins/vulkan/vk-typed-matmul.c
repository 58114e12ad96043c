/* SPDX-License-Identifier: MIT */
/* vk-typed-matmul.c - matmul with half or quantized operands: f32 A with
 * an f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K B (the weight), and f16 x f16,
 * bf16 x bf16; C in f32.
 *
 * The simple way (as the cuda plugin's cuda-typed-matmul.c): the operands
 * that are not f32 are widened into f32 device scratch by the get_rows
 * shader (infer_rows.comp: bit-exact, any row stride), one identity index
 * per row, then the all-f32 matmul (vk-ops.c) runs on the copies with the
 * call's transposes and precision: the strict float32 path, or the f16
 * cooperative-matrix one where [backend.vulkan] precision = f16 allows it
 * (as for all-f32 matmul).  A or C with row strides go through the same
 * copies (C back to its rows afterwards), so every stride is taken.  With
 * typed_matmul_transpose = yes a transposed B's copy is transposed once
 * more (transpose.comp) and the matmul reads it untransposed.
 *
 * The scratch of a call (f32 copies of B, of A where it is not dense f32,
 * of C where it has gaps) is at most TYPED_MATMUL_MAX_SCRATCH bytes, each
 * copy within what one descriptor addresses; a larger call is refused
 * (RAYO_E_UNSUPPORTED with the reason: it falls through to a CPU backend).
 * A context (a batch, or a host call) keeps one scratch and one identity
 * index table and reuses them for each of its matmuls: every dispatch ends
 * with a barrier, so the next call's copies wait for the last one's matmul.
 */
#include "vk-internal.h"

#include <stdint.h>
#include <string.h>

#define TYPED_MATMUL_MAX_SCRATCH VK_TYPED_MATMUL_MAX_SCRATCH
#define SCRATCH_ALIGN 256u

/* A matrix operand as stored: rows of cols elements, ld apart. */
typedef struct stored {
    rayo_dtype dt;
    size_t rows, cols, ld;
} stored;

static VkDeviceSize round_up(VkDeviceSize x) { return (x + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN; }

/* Bytes of a dense f32 copy of rows x cols, or 0 past the limits. */
static VkDeviceSize f32_bytes(size_t rows, size_t cols)
{
    if (cols && rows > TYPED_MATMUL_MAX_SCRATCH / sizeof(float) / cols)
        return 0;
    return round_up((VkDeviceSize)rows * cols * sizeof(float));
}

/* The context's scratch, grown to at least bytes (a larger one replaces it;
 * both are freed when the context is released). */
rayo_status vk_typed_scratch(vk_state *s, vk_ctx *cx, VkDeviceSize bytes, vk_buf **out)
{
    if (!cx->mm_scratch || cx->mm_scratch->size < bytes) {
        vk_buf *b;
        rayo_status st = vk_ctx_temp(s, cx, &s->device_pool, bytes, &b);
        if (st != RAYO_OK)
            return st;
        cx->mm_scratch = b;
    }
    *out = cx->mm_scratch;
    return RAYO_OK;
}

/* int32 indices 0, 1, ..., rows - 1 (host-written, in device memory: every
 * workgroup of get_rows reads them all), kept by the context. */
static rayo_status ctx_identity(vk_state *s, vk_ctx *cx, size_t rows, vk_buf **out)
{
    if (!cx->mm_index || cx->mm_index->size < rows * sizeof(int32_t)) {
        size_t count = rows < 1024 ? 1024 : rows;
        vk_buf *b;
        int32_t *idx;
        rayo_status st = vk_ctx_upload_temp(s, cx, count * sizeof(int32_t), &b, (void **)&idx);
        if (st != RAYO_OK)
            return st;
        /* all of it: its size (what the check above reads) is rounded up */
        for (size_t i = 0; i < b->size / sizeof(int32_t); i++)
            idx[i] = (int32_t)i;
        cx->mm_index = b;
    }
    *out = cx->mm_index;
    return RAYO_OK;
}

/* dst (rows x cols f32, row stride ld_dst) = src as stored, widened to f32
 * by get_rows with the identity indices. */
static rayo_status widen(vk_state *s, vk_ctx *cx, const stored *src, rayo_dev_operand from,
                         rayo_dev_operand to, size_t ld_dst, vk_buf *index)
{
    rayo_dev_call g = {
        .struct_size = sizeof g, .op = RAYO_OP_GET_ROWS,
        .dtypes = RAYO_DTYPES(src->dt, RAYO_DTYPE_I32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
        .m = src->rows, .n = src->cols, .k = src->rows,
        .a = from, .b = {index, 0}, .y = to, .lda = src->ld, .ldy = ld_dst,
    };
    rayo_status st = vk_record(s, cx, &g);
    if (st == RAYO_OK)
        vk_profile_op(s, cx, &g);
    return st;
}

static bool dense(size_t ld, size_t cols) { return ld == 0 || ld == cols; }

/* Whether a transposed B's f32 copy is transposed once more, so that the
 * matmul reads B untransposed: typed_matmul_transpose in [backend.vulkan]
 * (yes | no; default TRANSPOSE_DEFAULT), where the transpose shader's grid
 * fits the device. */
#define TRANSPOSE_DEFAULT false  /* yes was slower on the H200 (doc/benchmarks-vulkan.md) */
static bool transposes_b(const vk_state *s, const rayo_dev_call *call, const stored *b)
{
    const char *v = s->host->config(s->host, "typed_matmul_transpose");
    bool want = v ? (!strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "true")) : TRANSPOSE_DEFAULT;
    return want && (call->flags & RAYO_TRANS_B) && b->rows && b->cols &&
           (b->cols + 31) / 32 <= s->props.limits.maxComputeWorkGroupCount[0] &&
           (b->rows + 31) / 32 <= s->props.limits.maxComputeWorkGroupCount[1];
}

/* Its operands widened to f32 scratch, then the f32 matmul: recorded as
 * calls of their own (ops, bound by the caller, go unused). */
static rayo_status rec_typed_matmul(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, vk_operands *ops)
{
    (void)ops;
    rayo_dtype adt = RAYO_DTYPE_OF(call->dtypes, 0), bdt = RAYO_DTYPE_OF(call->dtypes, 1),
               ydt = RAYO_DTYPE_OF(call->dtypes, 3);
    bool halves = (adt == RAYO_DTYPE_F16 || adt == RAYO_DTYPE_BF16) && bdt == adt;
    if (ydt != RAYO_DTYPE_F32 || bdt == RAYO_DTYPE_F32 || (adt != RAYO_DTYPE_F32 && !halves) ||
        !rayo_dtype_name(bdt))
        return RAYO_E_UNSUPPORTED;
    if (call->flags & ~(RAYO_TRANS_A | RAYO_TRANS_B))
        return RAYO_E_INVALID;
    if (vk_half_prompt_takes(s, call)) {
        rayo_status st = vk_half_prompt(s, cx, call);
        if (st != RAYO_E_UNSUPPORTED)
            return st;          /* else refused before recording anything: the f32 way */
    }
    bool ta = call->flags & RAYO_TRANS_A, tb = call->flags & RAYO_TRANS_B;
    stored a = {adt, ta ? call->k : call->m, ta ? call->m : call->k, call->lda};
    stored b = {bdt, tb ? call->n : call->k, tb ? call->k : call->n, call->ldb};
    stored c = {RAYO_DTYPE_F32, call->m, call->n, call->ldy};
    bool copy_a = adt != RAYO_DTYPE_F32 || !dense(a.ld, a.cols), copy_c = !dense(c.ld, c.cols);
    /* the copies, one after another: B, A, C */
    VkDeviceSize b_bytes = f32_bytes(b.rows, b.cols);
    VkDeviceSize a_bytes = copy_a ? f32_bytes(a.rows, a.cols) : 0;
    VkDeviceSize c_bytes = copy_c ? f32_bytes(c.rows, c.cols) : 0;
    VkDeviceSize bt_bytes = transposes_b(s, call, &b) ? b_bytes : 0;
    VkDeviceSize total = b_bytes + bt_bytes + a_bytes + c_bytes;
    VkDeviceSize range = s->props.limits.maxStorageBufferRange;
    bool past = (b.rows && b.cols && !b_bytes) || (copy_a && a.rows && a.cols && !a_bytes) ||
                (copy_c && !c_bytes);
    if (bt_bytes && total > TYPED_MATMUL_MAX_SCRATCH) { /* then without the second copy */
        total -= bt_bytes;
        bt_bytes = 0;
    }
    if (past || total > TYPED_MATMUL_MAX_SCRATCH || b_bytes > range || a_bytes > range ||
        c_bytes > range) {
        s->host->set_error(s->host, "vulkan: matmul %s x %s of %zu x %zu x %zu needs more f32 "
                           "scratch than the typed matmul takes (%llu MiB in all, %llu MiB per copy "
                           "on this device)", rayo_dtype_name(adt), rayo_dtype_name(bdt),
                           call->m, call->n, call->k,
                           (unsigned long long)(TYPED_MATMUL_MAX_SCRATCH >> 20),
                           (unsigned long long)(range >> 20));
        return RAYO_E_UNSUPPORTED;
    }
    rayo_dev_call f = {
        .struct_size = sizeof f, .op = RAYO_OP_MATMUL, .flags = call->flags,
        .m = call->m, .n = call->n, .k = call->k, .alpha = call->alpha, .beta = call->beta,
        .a = call->a, .b = call->b, .y = call->y, .precision = call->precision,
    };
    if (total == 0)             /* k = 0 and C dense: y = beta C, nothing to widen */
        return vk_record(s, cx, &f);
    size_t index_rows = b.rows;
    if (copy_a && a.rows > index_rows)
        index_rows = a.rows;
    if (copy_c && c.rows > index_rows)
        index_rows = c.rows;
    vk_buf *scratch, *index;
    rayo_status st = vk_typed_scratch(s, cx, total, &scratch);
    if (st == RAYO_OK)
        st = ctx_identity(s, cx, index_rows, &index);
    if (st != RAYO_OK)
        return st;
    rayo_dev_operand b32 = {scratch, 0}, bt = {scratch, b_bytes}, a32 = {scratch, b_bytes + bt_bytes};
    rayo_dev_operand c32 = {scratch, b_bytes + bt_bytes + a_bytes};
    if (b_bytes && (st = widen(s, cx, &b, call->b, b32, 0, index)) != RAYO_OK)
        return st;
    f.b = b32;
    if (bt_bytes) {
        rayo_dev_call tr = {.struct_size = sizeof tr, .op = RAYO_OP_TRANSPOSE, .m = b.rows, .n = b.cols,
                            .a = b32, .y = bt};
        if ((st = vk_record(s, cx, &tr)) != RAYO_OK)
            return st;
        f.b = bt;
        f.flags &= ~(uint32_t)RAYO_TRANS_B;
    }
    if (copy_a && a_bytes) {
        if ((st = widen(s, cx, &a, call->a, a32, 0, index)) != RAYO_OK)
            return st;
        f.a = a32;
    }
    if (copy_c) {
        /* C's rows in, unless beta = 0 (matmul.comp then does not read C) */
        if (call->beta != 0.0f && (st = widen(s, cx, &c, call->y, c32, 0, index)) != RAYO_OK)
            return st;
        f.y = c32;
    }
    if ((st = vk_record(s, cx, &f)) != RAYO_OK)
        return st;
    vk_profile_op(s, cx, &f);
    if (!copy_c)
        return st;
    stored dense_c = {RAYO_DTYPE_F32, c.rows, c.cols, 0};
    return widen(s, cx, &dense_c, c32, call->y, c.ld, index);
}

const vk_family vk_family_typed_matmul = {.name = "typed_matmul", .record = rec_typed_matmul, .strided = true,
                                          .ctx_scratch = true};
