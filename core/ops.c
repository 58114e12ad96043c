/* SPDX-License-Identifier: MIT */
/* ops.c - the op table, call validation and the public op functions, all
 * generated from the one op list (rayo-ops.h). */
#include "internal.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const rayo_op_info op_table[] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) \
    {sizeof(rayo_op_info), RAYO_OP_##ENUM, #NAME, RAYO_SIG_##SIG, TR, TA, RAYO_SCALE_##SC, DOC},
#include "rayo-ops.h"
#undef RAYO_OP
};
#define OP_COUNT (sizeof op_table / sizeof op_table[0])

/* Each op's position in the list (and in op_table). */
enum {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) OP_POSITION_##ENUM,
#include "rayo-ops.h"
#undef RAYO_OP
};

/* op id -> position in op_table + 1 (0: no such op) */
static const unsigned char op_index[RAYO_OP_ID_LIMIT] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) [ID] = OP_POSITION_##ENUM + 1,
#include "rayo-ops.h"
#undef RAYO_OP
};

RAYO_API size_t rayo_op_count(void)
{
    return OP_COUNT;
}

RAYO_API const rayo_op_info *rayo_op_at(size_t index)
{
    return index < OP_COUNT ? &op_table[index] : NULL;
}

/* Inline, over const tables: in the typed functions the op id is a
 * constant, so the compiler resolves the op and its signature at build time. */
static inline __attribute__((always_inline)) const rayo_op_info *op_info(uint32_t id)
{
    if (id >= RAYO_OP_ID_LIMIT || !op_index[id])
        return NULL;
    return &op_table[op_index[id] - 1];
}

RAYO_API const rayo_op_info *rayo_op_by_id(uint32_t id)
{
    return op_info(id);
}

RAYO_API const rayo_op_info *rayo_op_by_name(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < OP_COUNT; i++)
        if (!strcmp(op_table[i].name, name))
            return &op_table[i];
    return NULL;
}

/* ---- dtype combinations ---- */
/* The RAYO_COMBO lines as written. */
static const struct combo_line {
    uint32_t op, dtypes;
    double tol_rel, tol_abs, relaxed_rel, relaxed_abs;
} combo_lines[] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC)
#define RAYO_COMBO(OP, A, B, C, Y, TR, TA, RR, RA) \
    {RAYO_OP_##OP, RAYO_DTYPES(RAYO_DTYPE_##A, RAYO_DTYPE_##B, RAYO_DTYPE_##C, RAYO_DTYPE_##Y), TR, TA, RR, RA},
#include "rayo-ops.h"
#undef RAYO_COMBO
#undef RAYO_OP
};
#define COMBO_LINES (sizeof combo_lines / sizeof combo_lines[0])

/* Every op's combinations, grouped by op in list order: its RAYO_COMBO
 * lines, or one all-f32 combination with the op's contract.  Built once. */
#define COMBO_CAP (OP_COUNT + COMBO_LINES)
static rayo_combo_info combos[COMBO_CAP];
static char combo_names[COMBO_CAP][48];
static uint16_t combo_base[OP_COUNT], combo_count[OP_COUNT];
static uint32_t operand_masks[OP_COUNT][4];
static pthread_once_t combos_once = PTHREAD_ONCE_INIT;

unsigned op_sig_operands(int sig)
{
    switch (sig) {
    case RAYO_SIG_BINARY: case RAYO_SIG_REDUCE2: case RAYO_SIG_MATMUL: case RAYO_SIG_GEMV:
    case RAYO_SIG_BIAS_ACT: case RAYO_SIG_GET_ROWS: case RAYO_SIG_ROPE: case RAYO_SIG_GLU:
        return 0xbu; /* a, b, y */
    case RAYO_SIG_NORM: case RAYO_SIG_ATTENTION: return 0xfu;
    default: return 0x9u; /* a, y */
    }
}

static void name_combo(rayo_combo_info *ci, char *buf, size_t size, int sig)
{
    size_t len = 0;
    buf[0] = '\0';
    if (ci->dtypes == 0) {
        snprintf(buf, size, "f32");
    } else {
        for (unsigned i = 0; i < 4; i++)
            if (op_sig_operands(sig) & (1u << i))
                len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "." : "",
                                        rayo_dtype_name(RAYO_DTYPE_OF(ci->dtypes, i)));
    }
    ci->name = buf;
}

static void build_combos(void)
{
    size_t next = 0;
    for (size_t o = 0; o < OP_COUNT; o++) {
        const rayo_op_info *op = &op_table[o];
        combo_base[o] = (uint16_t)next;
        for (size_t i = 0; i < COMBO_LINES; i++) {
            if (combo_lines[i].op != (uint32_t)op->id)
                continue;
            const struct combo_line *l = &combo_lines[i];
            combos[next] = (rayo_combo_info){sizeof(rayo_combo_info), op->id, l->dtypes, NULL,
                                             l->tol_rel, l->tol_abs, l->relaxed_rel, l->relaxed_abs};
            next++;
        }
        if (next == combo_base[o]) /* no lines: all-f32 only, one contract */
            combos[next++] = (rayo_combo_info){sizeof(rayo_combo_info), op->id, 0, NULL,
                                               op->tol_rel, op->tol_abs, op->tol_rel, op->tol_abs};
        combo_count[o] = (uint16_t)(next - combo_base[o]);
        for (size_t c = combo_base[o]; c < next; c++) {
            name_combo(&combos[c], combo_names[c], sizeof combo_names[c], (int)op->sig);
            for (unsigned i = 0; i < 4; i++)
                if (op_sig_operands((int)op->sig) & (1u << i))
                    operand_masks[o][i] |= RAYO_DTYPE_BIT(RAYO_DTYPE_OF(combos[c].dtypes, i));
        }
    }
}

/* Position of an op in the list, or -1. */
static inline int op_position(uint32_t id)
{
    return id < RAYO_OP_ID_LIMIT && op_index[id] ? op_index[id] - 1 : -1;
}

RAYO_API size_t rayo_op_combo_count(rayo_op op)
{
    int o = op_position(op);
    pthread_once(&combos_once, build_combos);
    return o < 0 ? 0 : combo_count[o];
}

RAYO_API const rayo_combo_info *rayo_op_combo(rayo_op op, size_t index)
{
    int o = op_position(op);
    pthread_once(&combos_once, build_combos);
    return o < 0 || index >= combo_count[o] ? NULL : &combos[combo_base[o] + index];
}

_Static_assert(COMBO_CAP <= COMBO_SLOTS, "more dtype combinations than COMBO_SLOTS (internal.h)");

int op_combo_slot(uint32_t op, uint32_t dtypes)
{
    int i = op_combo_index(op, dtypes);
    return i < 0 ? -1 : combo_base[op_position(op)] + i;
}

int op_combo_index(uint32_t op, uint32_t dtypes)
{
    int o = op_position(op);
    pthread_once(&combos_once, build_combos);
    if (o < 0)
        return -1;
    for (size_t i = 0; i < combo_count[o]; i++)
        if (combos[combo_base[o] + i].dtypes == dtypes)
            return (int)i;
    return -1;
}

RAYO_API const rayo_combo_info *rayo_op_combo_find(rayo_op op, uint32_t dtypes)
{
    int i = op_combo_index(op, dtypes);
    return i < 0 ? NULL : rayo_op_combo(op, (size_t)i);
}

RAYO_API uint32_t rayo_op_operand_dtypes(rayo_op op, unsigned operand)
{
    int o = op_position(op);
    pthread_once(&combos_once, build_combos);
    return o < 0 || operand > 3 ? 0 : operand_masks[o][operand];
}

/* ---- validation ---- */
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
/* The size of a rayo_call of ABI 1.0, the smallest this library takes. */
#define CALL_V1_0_SIZE (offsetof(rayo_call, params) + sizeof(const void *))

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
    if (c->reserved)
        return rayo__fail(RAYO_E_INVALID, "%s: call->reserved must be 0", op->name);
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

/* A typed f32 function's call: all-f32, dense, strict, no parameter struct,
 * this library's struct size.  Every ABI 1.0 check passes for it, so the
 * ops that predate ABI 1.0 skip them (callgrind: softmax's validation went
 * from 84 to 195 instructions a call without this). */
static bool abi_fields_are_plain(const rayo_call *c, const rayo_op_info *op)
{
    return op->sig <= RAYO_SIG_BIAS_ACT && c->struct_size == sizeof(rayo_call) && c->dtypes == 0 &&
           (c->lda | c->ldb | c->ldc | c->ldy) == 0 && c->precision == 0 && c->reserved == 0 && !c->params;
}

/* The full check, with a message for every way a call can be wrong (kept
 * out of line: the common call never gets here). */
static rayo_status __attribute__((noinline)) validate_fully(const rayo_call *c, const rayo_op_info *op,
                                                            bool data_on_host)
{
    size_t cnt[4];
    rayo_status abi = abi_fields_are_plain(c, op) ? RAYO_OK : check_abi_fields(c, op);
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

/* The common small call - a vector op with n > 0, its pointers and no flags -
 * is answered in a few compares: dispatch overhead is what small ops pay. */
static inline __attribute__((always_inline)) bool plainly_valid_vector_call(const rayo_call *c,
                                                                         const rayo_op_info *op)
{
    bool needs_b = op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_REDUCE2;
    return op->sig <= RAYO_SIG_ARGREDUCE && op->id != RAYO_OP_CLIP && c->flags == 0 &&
           c->struct_size == sizeof(rayo_call) && c->dtypes == 0 && (c->lda | c->ldb | c->ldc | c->ldy) == 0 &&
           c->precision == 0 && c->reserved == 0 && !c->params &&
           c->n - 1 < RAYO_MAX_ELEMENTS && c->a && c->y && (c->b || !needs_b) &&
           (((uintptr_t)c->a | (uintptr_t)c->b | (uintptr_t)c->y) & 3) == 0; /* else refused by the full check */
}

/* The same for softmax and log_softmax on dense f32 rows. */
static inline __attribute__((always_inline)) bool plainly_valid_rows_call(const rayo_call *c,
                                                                       const rayo_op_info *op)
{
    return op->sig == RAYO_SIG_ROWS && c->flags == 0 && abi_fields_are_plain(c, op) && c->m - 1 < RAYO_MAX_ELEMENTS &&
           c->n - 1 < RAYO_MAX_ELEMENTS && c->m <= RAYO_MAX_ELEMENTS / c->n && c->a && c->y &&
           (((uintptr_t)c->a | (uintptr_t)c->y) & 3) == 0;
}

static inline __attribute__((always_inline)) rayo_status
validate_call(const rayo_call *c, const rayo_op_info **op_out)
{
    if (!c)
        return rayo__fail(RAYO_E_INVALID, "call is NULL");
    const rayo_op_info *op = op_info(c->op);
    *op_out = op;
    if (!op)
        return rayo__fail(RAYO_E_INVALID, "unknown op id %u", (unsigned)c->op);
    if (plainly_valid_vector_call(c, op) || plainly_valid_rows_call(c, op))
        return RAYO_OK;
    return validate_fully(c, op, true);
}

rayo_status call_validate(const rayo_call *c, const rayo_op_info **op_out)
{
    return validate_call(c, op_out);
}

rayo_status call_validate_shape(const rayo_call *c, const rayo_op_info **op_out)
{
    *op_out = c ? op_info(c->op) : NULL;
    if (!*op_out)
        return rayo__fail(RAYO_E_INVALID, "unknown op id %u", c ? (unsigned)c->op : 0u);
    return validate_fully(c, *op_out, false);
}

/* beta * y over `count` elements; beta == 0 writes zeros (y may hold NaN). */
static void scale_output(float *y, size_t count, float beta)
{
    for (size_t i = 0; i < count; i++)
        y[i] = beta == 0.0f ? 0.0f : beta * y[i];
}

void call_write_empty(const rayo_call *c)
{
    float *y = c->y;
    switch (c->op) {
    case RAYO_OP_SUM: case RAYO_OP_DOT: case RAYO_OP_NORM_L1: case RAYO_OP_NORM_L2: *y = 0.0f; return;
    case RAYO_OP_MAX: *y = -INFINITY; return;
    case RAYO_OP_MIN: *y = INFINITY; return;
    case RAYO_OP_MATMUL: /* k == 0: C = beta C, row by row (C may be a strided view) */
        for (size_t i = 0; c->n && i < c->m; i++)
            scale_output(y + i * (c->ldy ? c->ldy : c->n), c->n, c->beta);
        return;
    case RAYO_OP_GEMV: { /* inner length 0: y = beta y */
        size_t out = (c->flags & RAYO_TRANS_A) ? c->n : c->m;
        size_t inner = (c->flags & RAYO_TRANS_A) ? c->m : c->n;
        if (out && !inner)
            scale_output(y, out, c->beta);
        return;
    }
    default: return; /* nothing to write */
    }
}

/* The hot path of every op: one op lookup, checks, the chain; inlined into
 * each typed function.  It does not clear the thread's error message: that
 * is written only on failure. */
static inline __attribute__((always_inline)) rayo_status run_call(rayo_context *ctx, const rayo_call *call)
{
    if (!ctx)
        return rayo__fail(RAYO_E_INVALID, "context is NULL");
    const rayo_op_info *op = NULL;
    rayo_status st = validate_call(call, &op);
    if (st != RAYO_OK)
        return st;
    if (call_is_empty(call, op)) {
        call_write_empty(call);
        return RAYO_OK;
    }
    return dispatch_call(ctx, call, op);
}

RAYO_API rayo_status rayo_run(rayo_context *ctx, const rayo_call *call)
{
    /* A call from an older 1.x header: its fields, then zeros (1.0 behaviour
     * for every field it lacks).  Kernels always get at least this size. */
    if (call && call->struct_size >= CALL_V1_0_SIZE && call->struct_size < sizeof(rayo_call)) {
        rayo_call full;
        memset(&full, 0, sizeof full);
        memcpy(&full, call, call->struct_size);
        full.struct_size = sizeof full;
        return run_call(ctx, &full);
    }
    return run_call(ctx, call);
}

/* Every field by name rather than "= {0}": gcc 12 turns a zero-initialised
 * 136-byte struct into `rep stosq`, whose start-up cost was a fifth of a
 * small typed call (callgrind, rayo_add of 16 floats).  Named stores become
 * a few plain moves.  The assert keeps the list complete when a 1.x field
 * is appended. */
static inline void call_clear(rayo_call *c)
{
    _Static_assert(sizeof(rayo_call) == offsetof(rayo_call, params) + sizeof(void *),
                  "call_clear must name every rayo_call field");
    c->struct_size = sizeof *c;
    c->op = c->flags = c->dtypes = 0;
    c->m = c->n = c->k = 0;
    c->alpha = c->beta = 0.0f;
    c->a = c->b = c->c = NULL;
    c->y = NULL;
    c->lda = c->ldb = c->ldc = c->ldy = 0;
    c->precision = c->reserved = 0;
    c->params = NULL;
}

/* RUN(c_.op = ..., c_.n = ...): a typed call's fields as assignments. */
#define RUN(...) do { rayo_call c_; call_clear(&c_); __VA_ARGS__; return run_call(ctx, &c_); } while (0)

#define RAYO_DEF_BINARY(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *a, const float *b, float *y, size_t n) \
    { RUN(c_.op = ID, c_.n = n, c_.a = a, c_.b = b, c_.y = y); }
#define RAYO_DEF_UNARY(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n) \
    { RUN(c_.op = ID, c_.n = n, c_.a = x, c_.y = y); }
#define RAYO_DEF_UNARY_P(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float alpha) \
    { RUN(c_.op = ID, c_.n = n, c_.alpha = alpha, c_.a = x, c_.y = y); }
#define RAYO_DEF_UNARY_P2(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float lo, float hi) \
    { RUN(c_.op = ID, c_.n = n, c_.alpha = lo, c_.beta = hi, c_.a = x, c_.y = y); }
#define RAYO_DEF_AXPY(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float alpha) \
    { RUN(c_.op = ID, c_.n = n, c_.alpha = alpha, c_.a = x, c_.y = y); }
#define RAYO_DEF_REDUCE(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, size_t n, float *result) \
    { RUN(c_.op = ID, c_.n = n, c_.a = x, c_.y = result); }
#define RAYO_DEF_REDUCE2(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *a, const float *b, size_t n, float *result) \
    { RUN(c_.op = ID, c_.n = n, c_.a = a, c_.b = b, c_.y = result); }
#define RAYO_DEF_ARGREDUCE(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, size_t n, size_t *index) \
    { RUN(c_.op = ID, c_.n = n, c_.a = x, c_.y = index); }
#define RAYO_DEF_ROWS(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t rows, size_t cols) \
    { RUN(c_.op = ID, c_.m = rows, c_.n = cols, c_.a = x, c_.y = y); }
#define RAYO_DEF_NORM(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, const float *gamma, const float *beta, \
                                                  float *y, size_t rows, size_t cols, float eps) \
    { RUN(c_.op = ID, c_.m = rows, c_.n = cols, c_.alpha = eps, c_.a = x, c_.b = gamma, c_.c = beta, c_.y = y); }
#define RAYO_DEF_MATMUL(N, ID) rayo_status rayo_##N(rayo_context *ctx, unsigned flags, size_t m, size_t n, size_t k, \
                                                    float alpha, const float *A, const float *B, float beta, float *C) \
    { RUN(c_.op = ID, c_.flags = flags, c_.m = m, c_.n = n, c_.k = k, c_.alpha = alpha, c_.beta = beta, c_.a = A, c_.b = B, c_.y = C); }
#define RAYO_DEF_GEMV(N, ID) rayo_status rayo_##N(rayo_context *ctx, unsigned flags, size_t m, size_t n, float alpha, \
                                                  const float *A, const float *x, float beta, float *y) \
    { RUN(c_.op = ID, c_.flags = flags, c_.m = m, c_.n = n, c_.alpha = alpha, c_.beta = beta, c_.a = A, c_.b = x, c_.y = y); }
#define RAYO_DEF_TRANSPOSE(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t rows, size_t cols) \
    { RUN(c_.op = ID, c_.m = rows, c_.n = cols, c_.a = x, c_.y = y); }
#define RAYO_DEF_BIAS_ACT(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, const float *bias, float *y, \
                                                      size_t rows, size_t cols, rayo_activation act) \
    { RUN(c_.op = ID, c_.flags = (uint32_t)act, c_.m = rows, c_.n = cols, c_.a = x, c_.b = bias, c_.y = y); }

#define RAYO_DEF_CONVERT(N, ID) rayo_status rayo_##N(rayo_context *ctx, rayo_dtype xdt, const void *x, \
                                                     rayo_dtype ydt, void *y, size_t n) \
    { RUN(c_.op = ID, c_.dtypes = RAYO_DTYPES(xdt, 0, 0, ydt), c_.n = n, c_.a = x, c_.y = y); }
#define RAYO_DEF_GET_ROWS(N, ID) rayo_status rayo_##N(rayo_context *ctx, rayo_matrix table, size_t table_rows, \
                                                      size_t cols, const int32_t *idx, size_t n_idx, float *y, size_t ldy) \
    { RUN(c_.op = ID, c_.dtypes = RAYO_DTYPES(table.dtype, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32), c_.m = n_idx, c_.n = cols, \
          c_.k = table_rows, c_.a = table.data, c_.b = idx, c_.y = y, c_.lda = table.ld, c_.ldy = ldy); }
#define RAYO_DEF_ROPE(N, ID) rayo_status rayo_##N(rayo_context *ctx, const rayo_rope_params *p, const float *x, \
                                                  size_t ldx, float *y, size_t ldy, size_t n_tokens, const int32_t *pos) \
    { RUN(c_.op = ID, c_.dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32), c_.m = n_tokens, \
          c_.n = p ? p->head_dim : 0, c_.a = x, c_.b = pos, c_.y = y, c_.lda = ldx, c_.ldy = ldy, c_.params = p); }
#define RAYO_DEF_ATTENTION(N, ID) rayo_status rayo_##N(rayo_context *ctx, const rayo_attention_params *p, \
                                                       const float *q, const void *k, const void *v, float *out) \
    { RUN(c_.op = ID, c_.dtypes = p ? RAYO_DTYPES(RAYO_DTYPE_F32, p->kv_dtype, p->kv_dtype, RAYO_DTYPE_F32) : 0, \
          c_.m = p ? p->n_q : 0, c_.n = p ? p->head_dim : 0, c_.k = p ? p->n_kv : 0, c_.a = q, c_.b = k, c_.c = v, c_.y = out, \
          c_.params = p); }
#define RAYO_DEF_GLU(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *gate, size_t ldg, const float *up, \
                                                 size_t ldu, float *y, size_t ldy, size_t rows, size_t cols) \
    { RUN(c_.op = ID, c_.m = rows, c_.n = cols, c_.a = gate, c_.b = up, c_.y = y, c_.lda = ldg, c_.ldb = ldu, c_.ldy = ldy); }

#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) RAYO_API RAYO_DEF_##SIG(NAME, RAYO_OP_##ENUM)
#include "rayo-ops.h"
#undef RAYO_OP

RAYO_API rayo_status rayo_matmul_ex(rayo_context *ctx, unsigned flags, size_t m, size_t n, size_t k, float alpha,
                                    rayo_matrix A, rayo_matrix B, float beta, float *C, size_t ldc,
                                    rayo_precision precision)
{
    RUN(c_.op = RAYO_OP_MATMUL, c_.flags = flags, c_.dtypes = RAYO_DTYPES(A.dtype, B.dtype, 0, RAYO_DTYPE_F32), c_.m = m,
        c_.n = n, c_.k = k, c_.alpha = alpha, c_.beta = beta, c_.a = A.data, c_.b = B.data, c_.y = C, c_.lda = A.ld, c_.ldb = B.ld,
        c_.ldy = ldc, c_.precision = (uint32_t)precision);
}

RAYO_API rayo_status rayo_gemv_ex(rayo_context *ctx, unsigned flags, size_t m, size_t n, float alpha,
                                  rayo_matrix A, const float *x, float beta, float *y, rayo_precision precision)
{
    RUN(c_.op = RAYO_OP_GEMV, c_.flags = flags, c_.dtypes = RAYO_DTYPES(A.dtype, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
        c_.m = m, c_.n = n, c_.alpha = alpha, c_.beta = beta, c_.a = A.data, c_.b = x, c_.y = y, c_.lda = A.ld,
        c_.precision = (uint32_t)precision);
}
