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

static rayo_status check_flags(const rayo_call *c, const rayo_op_info *op)
{
    uint32_t allowed = 0;
    if (op->sig == RAYO_SIG_MATMUL)
        allowed = RAYO_TRANS_A | RAYO_TRANS_B;
    else if (op->sig == RAYO_SIG_GEMV)
        allowed = RAYO_TRANS_A;
    if (op->sig == RAYO_SIG_BIAS_ACT) {
        if (c->flags >= RAYO_ACT_LIMIT)
            return rayo_fail(RAYO_E_INVALID, "bias_act: unknown activation %u", (unsigned)c->flags);
    } else if (c->flags & ~allowed) {
        return rayo_fail(RAYO_E_INVALID, "%s: unknown flags 0x%x", op->name, (unsigned)c->flags);
    }
    return RAYO_OK;
}

static rayo_status check_params(const rayo_call *c, const rayo_op_info *op)
{
    if (c->op == RAYO_OP_CLIP && !(c->alpha <= c->beta))
        return rayo_fail(RAYO_E_INVALID, "clip: lower bound %g is not <= upper bound %g",
                         (double)c->alpha, (double)c->beta);
    if (op->sig == RAYO_SIG_NORM && !(c->alpha >= 0.0f && isfinite(c->alpha)))
        return rayo_fail(RAYO_E_INVALID, "%s: eps must be finite and >= 0, got %g", op->name, (double)c->alpha);
    if (op->sig == RAYO_SIG_ARGREDUCE && c->n == 0)
        return rayo_fail(RAYO_E_INVALID, "%s of an empty vector has no answer", op->name);
    return RAYO_OK;
}

/* The full check, with a message for every way a call can be wrong (kept
 * out of line: the common call never gets here). */
static rayo_status __attribute__((noinline)) validate_fully(const rayo_call *c, const rayo_op_info *op)
{
    size_t cnt[4];
    if (!operand_counts(c, op, cnt))
        return rayo_fail(RAYO_E_OVERFLOW, "%s: sizes m=%zu n=%zu k=%zu overflow", op->name, c->m, c->n, c->k);
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
            return rayo_fail(RAYO_E_INVALID, "%s: %s is NULL", op->name, names[i]);
    }
    return RAYO_OK;
}

/* The common small call - a vector op with n > 0, its pointers and no flags -
 * is answered in a few compares: dispatch overhead is what small ops pay. */
static inline __attribute__((always_inline)) bool plainly_valid_vector_call(const rayo_call *c,
                                                                         const rayo_op_info *op)
{
    bool needs_b = op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_REDUCE2;
    return op->sig <= RAYO_SIG_ARGREDUCE && op->id != RAYO_OP_CLIP && c->flags == 0 &&
           c->n - 1 < RAYO_MAX_ELEMENTS && c->a && c->y && (c->b || !needs_b);
}

static inline __attribute__((always_inline)) rayo_status
validate_call(const rayo_call *c, const rayo_op_info **op_out)
{
    if (!c)
        return rayo_fail(RAYO_E_INVALID, "call is NULL");
    const rayo_op_info *op = op_info(c->op);
    *op_out = op;
    if (!op)
        return rayo_fail(RAYO_E_INVALID, "unknown op id %u", (unsigned)c->op);
    if (plainly_valid_vector_call(c, op))
        return RAYO_OK;
    return validate_fully(c, op);
}

rayo_status call_validate(const rayo_call *c, const rayo_op_info **op_out)
{
    return validate_call(c, op_out);
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
    case RAYO_OP_MATMUL: /* k == 0: C = beta C */
        if (c->m && c->n)
            scale_output(y, c->m * c->n, c->beta);
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
        return rayo_fail(RAYO_E_INVALID, "context is NULL");
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
    return run_call(ctx, call);
}

#define RUN(...) do { rayo_call c_ = {.struct_size = sizeof(rayo_call), __VA_ARGS__}; return run_call(ctx, &c_); } while (0)

#define RAYO_DEF_BINARY(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *a, const float *b, float *y, size_t n) \
    { RUN(.op = ID, .n = n, .a = a, .b = b, .y = y); }
#define RAYO_DEF_UNARY(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n) \
    { RUN(.op = ID, .n = n, .a = x, .y = y); }
#define RAYO_DEF_UNARY_P(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float alpha) \
    { RUN(.op = ID, .n = n, .alpha = alpha, .a = x, .y = y); }
#define RAYO_DEF_UNARY_P2(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float lo, float hi) \
    { RUN(.op = ID, .n = n, .alpha = lo, .beta = hi, .a = x, .y = y); }
#define RAYO_DEF_AXPY(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float alpha) \
    { RUN(.op = ID, .n = n, .alpha = alpha, .a = x, .y = y); }
#define RAYO_DEF_REDUCE(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, size_t n, float *result) \
    { RUN(.op = ID, .n = n, .a = x, .y = result); }
#define RAYO_DEF_REDUCE2(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *a, const float *b, size_t n, float *result) \
    { RUN(.op = ID, .n = n, .a = a, .b = b, .y = result); }
#define RAYO_DEF_ARGREDUCE(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, size_t n, size_t *index) \
    { RUN(.op = ID, .n = n, .a = x, .y = index); }
#define RAYO_DEF_ROWS(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t rows, size_t cols) \
    { RUN(.op = ID, .m = rows, .n = cols, .a = x, .y = y); }
#define RAYO_DEF_NORM(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, const float *gamma, const float *beta, \
                                                  float *y, size_t rows, size_t cols, float eps) \
    { RUN(.op = ID, .m = rows, .n = cols, .alpha = eps, .a = x, .b = gamma, .c = beta, .y = y); }
#define RAYO_DEF_MATMUL(N, ID) rayo_status rayo_##N(rayo_context *ctx, unsigned flags, size_t m, size_t n, size_t k, \
                                                    float alpha, const float *A, const float *B, float beta, float *C) \
    { RUN(.op = ID, .flags = flags, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta, .a = A, .b = B, .y = C); }
#define RAYO_DEF_GEMV(N, ID) rayo_status rayo_##N(rayo_context *ctx, unsigned flags, size_t m, size_t n, float alpha, \
                                                  const float *A, const float *x, float beta, float *y) \
    { RUN(.op = ID, .flags = flags, .m = m, .n = n, .alpha = alpha, .beta = beta, .a = A, .b = x, .y = y); }
#define RAYO_DEF_TRANSPOSE(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t rows, size_t cols) \
    { RUN(.op = ID, .m = rows, .n = cols, .a = x, .y = y); }
#define RAYO_DEF_BIAS_ACT(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *x, const float *bias, float *y, \
                                                      size_t rows, size_t cols, rayo_activation act) \
    { RUN(.op = ID, .flags = (uint32_t)act, .m = rows, .n = cols, .a = x, .b = bias, .y = y); }

#define RAYO_DEF_CONVERT(N, ID) rayo_status rayo_##N(rayo_context *ctx, rayo_dtype xdt, const void *x, \
                                                     rayo_dtype ydt, void *y, size_t n) \
    { RUN(.op = ID, .dtypes = RAYO_DTYPES(xdt, 0, 0, ydt), .n = n, .a = x, .y = y); }
#define RAYO_DEF_GET_ROWS(N, ID) rayo_status rayo_##N(rayo_context *ctx, rayo_matrix table, size_t table_rows, \
                                                      size_t cols, const int32_t *idx, size_t n_idx, float *y, size_t ldy) \
    { RUN(.op = ID, .dtypes = RAYO_DTYPES(table.dtype, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32), .m = n_idx, .n = cols, \
          .k = table_rows, .a = table.data, .b = idx, .y = y, .lda = table.ld, .ldy = ldy); }
#define RAYO_DEF_ROPE(N, ID) rayo_status rayo_##N(rayo_context *ctx, const rayo_rope_params *p, const float *x, \
                                                  size_t ldx, float *y, size_t ldy, size_t n_tokens, const int32_t *pos) \
    { RUN(.op = ID, .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32), .m = n_tokens, \
          .n = p ? p->head_dim : 0, .a = x, .b = pos, .y = y, .lda = ldx, .ldy = ldy, .params = p); }
#define RAYO_DEF_ATTENTION(N, ID) rayo_status rayo_##N(rayo_context *ctx, const rayo_attention_params *p, \
                                                       const float *q, const void *k, const void *v, float *out) \
    { RUN(.op = ID, .dtypes = p ? RAYO_DTYPES(RAYO_DTYPE_F32, p->kv_dtype, p->kv_dtype, RAYO_DTYPE_F32) : 0, \
          .m = p ? p->n_q : 0, .n = p ? p->head_dim : 0, .k = p ? p->n_kv : 0, .a = q, .b = k, .c = v, .y = out, \
          .params = p); }
#define RAYO_DEF_GLU(N, ID) rayo_status rayo_##N(rayo_context *ctx, const float *gate, size_t ldg, const float *up, \
                                                 size_t ldu, float *y, size_t ldy, size_t rows, size_t cols) \
    { RUN(.op = ID, .m = rows, .n = cols, .a = gate, .b = up, .y = y, .lda = ldg, .ldb = ldu, .ldy = ldy); }

#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) RAYO_API RAYO_DEF_##SIG(NAME, RAYO_OP_##ENUM)
#include "rayo-ops.h"
#undef RAYO_OP

RAYO_API rayo_status rayo_matmul_ex(rayo_context *ctx, unsigned flags, size_t m, size_t n, size_t k, float alpha,
                                    rayo_matrix A, rayo_matrix B, float beta, float *C, size_t ldc,
                                    rayo_precision precision)
{
    RUN(.op = RAYO_OP_MATMUL, .flags = flags, .dtypes = RAYO_DTYPES(A.dtype, B.dtype, 0, RAYO_DTYPE_F32), .m = m,
        .n = n, .k = k, .alpha = alpha, .beta = beta, .a = A.data, .b = B.data, .y = C, .lda = A.ld, .ldb = B.ld,
        .ldy = ldc, .precision = (uint32_t)precision);
}

RAYO_API rayo_status rayo_gemv_ex(rayo_context *ctx, unsigned flags, size_t m, size_t n, float alpha,
                                  rayo_matrix A, const float *x, float beta, float *y, rayo_precision precision)
{
    RUN(.op = RAYO_OP_GEMV, .flags = flags, .dtypes = RAYO_DTYPES(A.dtype, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
        .m = m, .n = n, .alpha = alpha, .beta = beta, .a = A.data, .b = x, .y = y, .lda = A.ld,
        .precision = (uint32_t)precision);
}
