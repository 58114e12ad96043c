/* SPDX-License-Identifier: MIT */
/* call-check.c - the full validation of a call against its op: every way a
 * call can be wrong gets a status and a message.  The typed functions' common
 * calls pass a shorter check first (op-calls.c). */
#include "internal.h"
#include <math.h>
#include <string.h>

/* The element counts of a, b, c and y (rayo_operand_counts, rayo-plugin.h). */
static bool operand_counts(const rayo_call *c, const rayo_op_info *op, size_t cnt[4])
{
    return rayo_operand_counts(c, (int)op->sig, cnt) == 0;
}

void call_operand_counts(const rayo_call *call, size_t counts[4])
{
    const rayo_op_info *op = rayo_op_by_id(call->op);
    if (!op || !operand_counts(call, op, counts))
        memset(counts, 0, 4 * sizeof counts[0]);
}

/* ---- the ABI 1.0 fields: struct size, dtypes, strides, precision, params ---- */
static rayo_status check_struct(const rayo_call *c, const rayo_op_info *op)
{
    if (c->struct_size < CALL_V1_0_SIZE)
        return rayo__fail(RAYO_E_INVALID, "%s: call->struct_size is %u: set it to sizeof(rayo_call)", op->name,
                         (unsigned)c->struct_size);
    /* A newer header's call: fields this library does not know must be 0. */
    for (size_t i = sizeof(rayo_call); i < c->struct_size; i++)
        if (((const unsigned char *)c)[i])
            return rayo__fail(RAYO_E_UNSUPPORTED, "%s: the call sets fields of a newer rayo than this one (%s)",
                             op->name, rayo_version());
    if (c->reserved || c->reserved3)
        return rayo__fail(RAYO_E_INVALID, "%s: call->reserved and call->reserved3 must be 0", op->name);
    if (c->constant_operands)
        return rayo__fail(RAYO_E_INVALID, "%s: call->constant_operands is set by the core for buffers made "
                         "constant (rayo_buffer_set_constant); a call on host pointers must leave it 0", op->name);
    if (c->precision > RAYO_PRECISION_RELAXED)
        return rayo__fail(RAYO_E_INVALID, "%s: unknown precision %u", op->name, (unsigned)c->precision);
    bool has_params = op->sig == RAYO_SIG_ROPE || op->sig == RAYO_SIG_ATTENTION;
    if (!has_params && c->params)
        return rayo__fail(RAYO_E_INVALID, "%s: takes no parameter struct (call->params must be NULL)", op->name);
    return RAYO_OK;
}

static const char *const operand_names[4] = {"a", "b", "c", "y"};

/* The alignment an operand's pointer must have: its element's (f32 and i32
 * 4, f16 and bf16 2), 2 for block dtypes (their scales are f16).  A kernel
 * may load elements directly, even with vector loads a misaligned element
 * would break, so rayo(3) requires it and the core refuses the rest. */
static size_t operand_alignment(const rayo_call *c, unsigned i)
{
    rayo_dtype dt = RAYO_DTYPE_OF(c->dtypes, i);
    return rayo_dtype_block_elems(dt) > 1 ? 2 : rayo_dtype_block_bytes(dt);
}

static rayo_status check_alignment(const rayo_call *c, const rayo_op_info *op, const void *const ptrs[4],
                                   const size_t cnt[4])
{
    for (unsigned i = 0; i < 4; i++) {
        size_t align = operand_alignment(c, i);
        if (cnt[i] && ptrs[i] && align > 1 && (uintptr_t)ptrs[i] % align)
            return rayo__fail(RAYO_E_INVALID, "%s: operand %s at %p is not aligned to its element type "
                             "(%s: %zu bytes)", op->name, operand_names[i], ptrs[i],
                             rayo_dtype_name(RAYO_DTYPE_OF(c->dtypes, i)), align);
    }
    return RAYO_OK;
}

static rayo_status check_dtypes(const rayo_call *c, const rayo_op_info *op)
{
    if (op_combo_index(c->op, c->dtypes) >= 0)
        return RAYO_OK;
    for (unsigned i = 0; i < 4; i++) {
        rayo_dtype dt = RAYO_DTYPE_OF(c->dtypes, i);
        /* the code first: RAYO_DTYPE_BIT of a code past 31 would shift out of
         * range, and an unknown code has no name to print */
        if (dt >= RAYO_DTYPE_LIMIT || !rayo_dtype_name(dt))
            return rayo__fail(RAYO_E_INVALID, "%s: operand %s: unknown dtype code %u", op->name, operand_names[i],
                             (unsigned)dt);
        if (!(rayo_op_operand_dtypes(op->id, i) & RAYO_DTYPE_BIT(dt)) &&
            (dt != RAYO_DTYPE_F32 || (op_sig_operands((int)op->sig) & (1u << i))))
            return rayo__fail(RAYO_E_INVALID, "%s: operand %s: dtype %s is not one it takes", op->name,
                             operand_names[i], rayo_dtype_name(dt));
    }
    return rayo__fail(RAYO_E_INVALID, "%s: dtypes %s/%s/%s/%s (a/b/c/y) are not a combination it takes "
                     "(rayo-info lists them)", op->name, rayo_dtype_name(RAYO_DTYPE_OF(c->dtypes, 0)),
                     rayo_dtype_name(RAYO_DTYPE_OF(c->dtypes, 1)), rayo_dtype_name(RAYO_DTYPE_OF(c->dtypes, 2)),
                     rayo_dtype_name(RAYO_DTYPE_OF(c->dtypes, 3)));
}

/* The operands that are matrices and so take a row stride (bit i: operand
 * a, b, c, y): every matrix operand of the op, whatever its size. */
static unsigned strided_operands(int sig)
{
    switch (sig) {
    case RAYO_SIG_MATMUL: case RAYO_SIG_GLU: return 0xbu; /* a, b, y */
    case RAYO_SIG_GEMV: return 0x1u;                      /* A (x and y are vectors) */
    case RAYO_SIG_GET_ROWS: case RAYO_SIG_ROPE: return 0x9u; /* table or x, and y */
    default: return 0;
    }
}

/* Row length of each operand as stored: the least row stride it takes (0
 * for an empty row, where any stride is fine). */
static void row_lengths(const rayo_call *c, const rayo_op_info *op, size_t len[4])
{
    len[0] = len[1] = len[2] = len[3] = 0;
    switch (op->sig) {
    case RAYO_SIG_MATMUL:
        len[0] = (c->flags & RAYO_TRANS_A) ? c->m : c->k;
        len[1] = (c->flags & RAYO_TRANS_B) ? c->k : c->n;
        len[3] = c->n;
        break;
    case RAYO_SIG_GEMV: len[0] = c->n; break;
    case RAYO_SIG_GET_ROWS: len[0] = len[3] = c->n; break;
    case RAYO_SIG_GLU: len[0] = len[1] = len[3] = c->n; break;
    case RAYO_SIG_ROPE: {
        const rayo_rope_params *p = c->params;
        len[0] = (p->n_heads - 1) * (p->head_stride_x ? p->head_stride_x : p->head_dim) + p->head_dim;
        len[3] = (p->n_heads - 1) * (p->head_stride_y ? p->head_stride_y : p->head_dim) + p->head_dim;
        break;
    }
    default: break;
    }
}

static rayo_status check_strides(const rayo_call *c, const rayo_op_info *op)
{
    const size_t ld[4] = {c->lda, c->ldb, c->ldc, c->ldy};
    size_t len[4];
    row_lengths(c, op, len);
    for (unsigned i = 0; i < 4; i++) {
        if (!ld[i])
            continue;
        if (!(strided_operands((int)op->sig) & (1u << i)))
            return rayo__fail(RAYO_E_INVALID, "%s: operand %s takes no row stride (ld%s must be 0)", op->name,
                             operand_names[i], operand_names[i]);
        if (ld[i] < len[i])
            return rayo__fail(RAYO_E_INVALID, "%s: ld%s = %zu is less than the row length %zu", op->name,
                             operand_names[i], ld[i], len[i]);
        size_t block = rayo_dtype_block_elems(RAYO_DTYPE_OF(c->dtypes, i));
        if (block > 1 && ld[i] % block)
            return rayo__fail(RAYO_E_INVALID, "%s: ld%s = %zu of a %s operand is not whole blocks of %zu", op->name,
                             operand_names[i], ld[i], rayo_dtype_name(RAYO_DTYPE_OF(c->dtypes, i)), block);
    }
    return RAYO_OK;
}

/* Block dtypes: rows of whole blocks, along the reduction for weights.
 * gemv's half weights too are rows along the reduction: no backend has a
 * transposed half gemv, so such a call is refused here, with the reason,
 * rather than passed down every chain to RAYO_E_NO_BACKEND. */
static rayo_status check_blocks(const rayo_call *c, const rayo_op_info *op)
{
    for (unsigned i = 0; i < 4; i++) {
        rayo_dtype dt = RAYO_DTYPE_OF(c->dtypes, i);
        size_t block = rayo_dtype_block_elems(dt);
        if (op->sig == RAYO_SIG_GEMV && i == 0 && dt != RAYO_DTYPE_F32 && (c->flags & RAYO_TRANS_A))
            return rayo__fail(RAYO_E_INVALID, "gemv: operand a: %s weights take no RAYO_TRANS_A (rows along "
                             "the reduction, as GGUF stores them)", rayo_dtype_name(dt));
        if (block <= 1)
            continue;
        const char *name = rayo_dtype_name(dt);
        switch (op->sig) {
        case RAYO_SIG_MATMUL:
            if (!(c->flags & RAYO_TRANS_B) || c->k % block)
                return rayo__fail(RAYO_E_INVALID, "matmul: operand b: %s needs RAYO_TRANS_B and k a multiple of %zu",
                                 name, block);
            break;
        case RAYO_SIG_GEMV:
            if ((c->flags & RAYO_TRANS_A) || c->n % block)
                return rayo__fail(RAYO_E_INVALID, "gemv: operand a: %s needs no RAYO_TRANS_A and n a multiple of %zu",
                                 name, block);
            break;
        default: /* convert, get_rows: rows of n elements */
            if (c->n % block)
                return rayo__fail(RAYO_E_INVALID, "%s: operand %s: %s needs n a multiple of %zu", op->name,
                                 operand_names[i], name, block);
        }
    }
    return RAYO_OK;
}

static rayo_status check_rope(const rayo_call *c)
{
    const rayo_rope_params *p = rayo_call_rope_params(c);
    if (!p)
        return rayo__fail(RAYO_E_INVALID, "rope: call->params must point to a rayo_rope_params with its struct_size set");
    if (p->mode != RAYO_ROPE_NORM && p->mode != RAYO_ROPE_NEOX)
        return rayo__fail(RAYO_E_INVALID, "rope: unknown mode %d", (int)p->mode);
    if (!p->n_heads || !p->head_dim)
        return rayo__fail(RAYO_E_INVALID, "rope: n_heads %zu and head_dim %zu must be > 0", p->n_heads, p->head_dim);
    if (c->n != p->head_dim) /* n is the row length the core's checks and windows read */
        return rayo__fail(RAYO_E_INVALID, "rope: call->n is %zu: it must be head_dim (%zu)", c->n, p->head_dim);
    if (p->rot_dims % 2 || p->rot_dims > p->head_dim)
        return rayo__fail(RAYO_E_INVALID, "rope: rot_dims %u must be even and <= head_dim %zu", (unsigned)p->rot_dims,
                         p->head_dim);
    if (!p->rot_dims && p->head_dim % 2)
        return rayo__fail(RAYO_E_INVALID, "rope: rot_dims 0 rotates all of head_dim %zu, which must then be even",
                         p->head_dim);
    if (!(p->freq_base > 0.0f && isfinite(p->freq_base) && isfinite(p->freq_scale)))
        return rayo__fail(RAYO_E_INVALID, "rope: freq_base must be finite and > 0, freq_scale finite");
    if ((p->head_stride_x && p->head_stride_x < p->head_dim) || (p->head_stride_y && p->head_stride_y < p->head_dim))
        return rayo__fail(RAYO_E_INVALID, "rope: head strides must be 0 or >= head_dim");
    return RAYO_OK;
}

static rayo_status check_attention(const rayo_call *c)
{
    const rayo_attention_params *p = rayo_call_attention_params(c);
    if (!p)
        return rayo__fail(RAYO_E_INVALID,
                         "attention: call->params must point to a rayo_attention_params with its struct_size set");
    if (p->flags & ~RAYO_ATTN_CAUSAL)
        return rayo__fail(RAYO_E_INVALID, "attention: unknown flags 0x%x", (unsigned)p->flags);
    if (RAYO_DTYPE_OF(c->dtypes, 1) != p->kv_dtype || RAYO_DTYPE_OF(c->dtypes, 2) != p->kv_dtype)
        return rayo__fail(RAYO_E_INVALID, "attention: kv_dtype %s does not match the call's dtypes of k and v",
                         rayo_dtype_name(p->kv_dtype));
    if (c->m != p->n_q || c->n != p->head_dim || c->k != p->n_kv)
        return rayo__fail(RAYO_E_INVALID, "attention: m, n, k must be n_q, head_dim, n_kv");
    if (!p->n_heads || !p->n_kv_heads || p->n_heads % p->n_kv_heads)
        return rayo__fail(RAYO_E_INVALID, "attention: n_kv_heads %zu must divide n_heads %zu", p->n_kv_heads,
                         p->n_heads);
    if (p->n_q && !p->n_kv)
        return rayo__fail(RAYO_E_INVALID, "attention: n_kv is 0 (no keys to attend to)");
    if ((p->flags & RAYO_ATTN_CAUSAL) && p->n_q > p->n_kv)
        return rayo__fail(RAYO_E_INVALID, "attention: causal with n_q %zu > n_kv %zu", p->n_q, p->n_kv);
    if (!isfinite(p->scale))
        return rayo__fail(RAYO_E_INVALID, "attention: scale must be finite");
    return RAYO_OK;
}

/* get_rows: every index in [0, table rows), before anything is written. */
static rayo_status check_indices(const rayo_call *c)
{
    const int32_t *idx = c->b;
    for (size_t r = 0; r < c->m; r++)
        if (idx[r] < 0 || (uint64_t)idx[r] >= c->k)
            return rayo__fail(RAYO_E_INVALID, "get_rows: index %zu is %ld, outside [0, %zu)", r, (long)idx[r], c->k);
    return RAYO_OK;
}

static rayo_status check_abi_fields(const rayo_call *c, const rayo_op_info *op)
{
    rayo_status st = check_struct(c, op);
    if (st == RAYO_OK)
        st = check_dtypes(c, op);
    if (st == RAYO_OK && op->sig == RAYO_SIG_ROPE)
        st = check_rope(c);
    if (st == RAYO_OK && op->sig == RAYO_SIG_ATTENTION)
        st = check_attention(c);
    if (st == RAYO_OK)
        st = check_strides(c, op);
    if (st == RAYO_OK)
        st = check_blocks(c, op);
    return st;
}

static rayo_status check_flags(const rayo_call *c, const rayo_op_info *op)
{
    uint32_t allowed = 0;
    if (op->sig == RAYO_SIG_MATMUL)
        allowed = RAYO_TRANS_A | RAYO_TRANS_B;
    else if (op->sig == RAYO_SIG_GEMV)
        allowed = RAYO_TRANS_A;
    if (op->sig == RAYO_SIG_BIAS_ACT) {
        if (c->flags >= RAYO_ACT_LIMIT)
            return rayo__fail(RAYO_E_INVALID, "bias_act: unknown activation %u", (unsigned)c->flags);
    } else if (c->flags & ~allowed) {
        return rayo__fail(RAYO_E_INVALID, "%s: unknown flags 0x%x", op->name, (unsigned)c->flags);
    }
    return RAYO_OK;
}

static rayo_status check_params(const rayo_call *c, const rayo_op_info *op)
{
    if (c->op == RAYO_OP_CLIP && !(c->alpha <= c->beta))
        return rayo__fail(RAYO_E_INVALID, "clip: lower bound %g is not <= upper bound %g",
                         (double)c->alpha, (double)c->beta);
    if (op->sig == RAYO_SIG_NORM && !(c->alpha >= 0.0f && isfinite(c->alpha)))
        return rayo__fail(RAYO_E_INVALID, "%s: eps must be finite and >= 0, got %g", op->name, (double)c->alpha);
    if (op->sig == RAYO_SIG_ARGREDUCE && c->n == 0)
        return rayo__fail(RAYO_E_INVALID, "%s of an empty vector has no answer", op->name);
    return RAYO_OK;
}
/* The full check, with a message for every way a call can be wrong (kept
 * out of line: the common call never gets here). */
rayo_status __attribute__((noinline)) call_validate_fully(const rayo_call *c, const rayo_op_info *op,
                                                         bool data_on_host)
{
    size_t cnt[4];
    rayo_status abi = call_abi_fields_are_plain(c, op->sig) ? RAYO_OK : check_abi_fields(c, op);
    if (abi != RAYO_OK)
        return abi;
    if (!operand_counts(c, op, cnt))
        return rayo__fail(RAYO_E_OVERFLOW, "%s: sizes m=%zu n=%zu k=%zu overflow", op->name, c->m, c->n, c->k);
    rayo_status st = check_flags(c, op);
    if (st == RAYO_OK)
        st = check_params(c, op);
    if (st != RAYO_OK)
        return st;
    /* Reductions always write their result; other outputs only when not empty. */
    static const char *const names[4] = {"first input", "second input", "third input", "output"};
    const void *ptrs[4] = {c->a, c->b, c->c, c->y};
    for (int i = 0; i < 4; i++) {
        bool needed = cnt[i] > 0;
        if (op->sig == RAYO_SIG_NORM && (i == 1 || i == 2))
            needed = false; /* gamma and beta are optional */
        if (needed && !ptrs[i])
            return rayo__fail(RAYO_E_INVALID, "%s: %s is NULL", op->name, names[i]);
    }
    if (data_on_host && (st = check_alignment(c, op, ptrs, cnt)) != RAYO_OK)
        return st;
    if (op->sig == RAYO_SIG_GET_ROWS && data_on_host)
        return check_indices(c);
    return RAYO_OK;
}

rayo_status call_validate_shape(const rayo_call *c, const rayo_op_info **op_out)
{
    *op_out = c ? op_info(c->op) : NULL;
    if (!*op_out)
        return rayo__fail(RAYO_E_INVALID, "unknown op id %u", c ? (unsigned)c->op : 0u);
    return call_validate_fully(c, *op_out, false);
}
