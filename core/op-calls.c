/* SPDX-License-Identifier: MIT */
/* op-calls.c - the public op functions (rayo_run and one typed function per
 * op of the list, rayo-ops.h) and their hot path: a short check, the empty
 * call, the chain. */
#include "internal.h"
#include <math.h>
#include <string.h>

/* The common small call - a vector op with n > 0, its pointers and no flags -
 * is answered in a few compares: dispatch overhead is what small ops pay.
 * sig is the op's signature, a constant in the typed functions. */
static inline __attribute__((always_inline)) bool plainly_valid_vector_call(const rayo_call *c, rayo_op_sig sig)
{
    bool needs_b = sig == RAYO_SIG_BINARY || sig == RAYO_SIG_REDUCE2;
    return sig <= RAYO_SIG_ARGREDUCE && c->op != RAYO_OP_CLIP && c->flags == 0 &&
           c->struct_size == sizeof(rayo_call) && c->dtypes == 0 && (c->lda | c->ldb | c->ldc | c->ldy) == 0 &&
           c->precision == 0 && c->reserved == 0 && !c->params && (c->constant_operands | c->reserved3) == 0 &&
           c->n - 1 < RAYO_MAX_ELEMENTS && c->a && c->y && (c->b || !needs_b) &&
           (((uintptr_t)c->a | (uintptr_t)c->b | (uintptr_t)c->y) & 3) == 0; /* else refused by the full check */
}

/* The same for softmax and log_softmax on dense f32 rows. */
static inline __attribute__((always_inline)) bool plainly_valid_rows_call(const rayo_call *c, rayo_op_sig sig)
{
    return sig == RAYO_SIG_ROWS && c->flags == 0 && call_abi_fields_are_plain(c, sig) &&
           c->m - 1 < RAYO_MAX_ELEMENTS && c->n - 1 < RAYO_MAX_ELEMENTS && c->m <= RAYO_MAX_ELEMENTS / c->n &&
           c->a && c->y && (((uintptr_t)c->a | (uintptr_t)c->y) & 3) == 0;
}

static inline __attribute__((always_inline)) rayo_status validate_known_op(const rayo_call *c, const rayo_op_info *op,
                                                                            rayo_op_sig sig)
{
    if (plainly_valid_vector_call(c, sig) || plainly_valid_rows_call(c, sig))
        return RAYO_OK;
    return call_validate_fully(c, op, true);
}

rayo_status call_validate(const rayo_call *c, const rayo_op_info **op_out)
{
    if (!c)
        return rayo__fail(RAYO_E_INVALID, "call is NULL");
    const rayo_op_info *op = op_info(c->op);
    *op_out = op;
    if (!op)
        return rayo__fail(RAYO_E_INVALID, "unknown op id %u", (unsigned)c->op);
    return validate_known_op(c, op, op->sig);
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

/* The hot path of every op: checks, the chain; inlined into each typed
 * function, where op and sig are constants.  It does not clear the thread's
 * error message: that is written only on failure. */
static inline __attribute__((always_inline)) rayo_status run_call(rayo_context *ctx, const rayo_call *call,
                                                                   const rayo_op_info *op, rayo_op_sig sig)
{
    if (!ctx)
        return rayo__fail(RAYO_E_INVALID, "context is NULL");
    rayo_status st = validate_known_op(call, op, sig);
    if (st != RAYO_OK)
        return st;
    if (call_is_empty(call, sig)) {
        call_write_empty(call);
        return RAYO_OK;
    }
    return dispatch_call(ctx, call, op, sig);
}

/* A call of any op: the op looked up from its id. */
static rayo_status run_any_call(rayo_context *ctx, const rayo_call *call)
{
    if (!ctx)
        return rayo__fail(RAYO_E_INVALID, "context is NULL");
    const rayo_op_info *op;
    rayo_status st = call_validate(call, &op);
    if (st != RAYO_OK)
        return st;
    if (call_is_empty(call, op->sig)) {
        call_write_empty(call);
        return RAYO_OK;
    }
    return dispatch_call(ctx, call, op, op->sig);
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
        return run_any_call(ctx, &full);
    }
    return run_any_call(ctx, call);
}

/* Every field by name rather than "= {0}": gcc 12 turns a zero-initialised
 * 136-byte struct into `rep stosq`, whose start-up cost was a fifth of a
 * small typed call (callgrind, rayo_add of 16 floats).  Named stores become
 * a few plain moves.  The assert keeps the list complete when a 1.x field
 * is appended. */
static inline void call_clear(rayo_call *c)
{
    _Static_assert(sizeof(rayo_call) == offsetof(rayo_call, reserved3) + sizeof(uint32_t),
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
    c->constant_operands = c->reserved3 = 0;
}

/* RUN(ENUM, SIG, c_.n = ..., ...): a typed call of op RAYO_OP_ENUM, its
 * signature RAYO_SIG_SIG, and its fields as assignments. */
#define RUN(E, S, ...) do { rayo_call c_; call_clear(&c_); c_.op = RAYO_OP_##E; __VA_ARGS__; \
    return run_call(ctx, &c_, &rayo__op_table[OP_POSITION_##E], RAYO_SIG_##S); } while (0)

#define RAYO_DEF_BINARY(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *a, const float *b, float *y, size_t n) \
    { RUN(E, BINARY, c_.n = n, c_.a = a, c_.b = b, c_.y = y); }
#define RAYO_DEF_UNARY(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n) \
    { RUN(E, UNARY, c_.n = n, c_.a = x, c_.y = y); }
#define RAYO_DEF_UNARY_P(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float alpha) \
    { RUN(E, UNARY_P, c_.n = n, c_.alpha = alpha, c_.a = x, c_.y = y); }
#define RAYO_DEF_UNARY_P2(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float lo, float hi) \
    { RUN(E, UNARY_P2, c_.n = n, c_.alpha = lo, c_.beta = hi, c_.a = x, c_.y = y); }
#define RAYO_DEF_AXPY(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t n, float alpha) \
    { RUN(E, AXPY, c_.n = n, c_.alpha = alpha, c_.a = x, c_.y = y); }
#define RAYO_DEF_REDUCE(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, size_t n, float *result) \
    { RUN(E, REDUCE, c_.n = n, c_.a = x, c_.y = result); }
#define RAYO_DEF_REDUCE2(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *a, const float *b, size_t n, float *result) \
    { RUN(E, REDUCE2, c_.n = n, c_.a = a, c_.b = b, c_.y = result); }
#define RAYO_DEF_ARGREDUCE(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, size_t n, size_t *index) \
    { RUN(E, ARGREDUCE, c_.n = n, c_.a = x, c_.y = index); }
#define RAYO_DEF_ROWS(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t rows, size_t cols) \
    { RUN(E, ROWS, c_.m = rows, c_.n = cols, c_.a = x, c_.y = y); }
#define RAYO_DEF_NORM(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, const float *gamma, const float *beta, \
                                                  float *y, size_t rows, size_t cols, float eps) \
    { RUN(E, NORM, c_.m = rows, c_.n = cols, c_.alpha = eps, c_.a = x, c_.b = gamma, c_.c = beta, c_.y = y); }
#define RAYO_DEF_MATMUL(N, E) rayo_status rayo_##N(rayo_context *ctx, unsigned flags, size_t m, size_t n, size_t k, \
                                                    float alpha, const float *A, const float *B, float beta, float *C) \
    { RUN(E, MATMUL, c_.flags = flags, c_.m = m, c_.n = n, c_.k = k, c_.alpha = alpha, c_.beta = beta, c_.a = A, c_.b = B, c_.y = C); }
#define RAYO_DEF_GEMV(N, E) rayo_status rayo_##N(rayo_context *ctx, unsigned flags, size_t m, size_t n, float alpha, \
                                                  const float *A, const float *x, float beta, float *y) \
    { RUN(E, GEMV, c_.flags = flags, c_.m = m, c_.n = n, c_.alpha = alpha, c_.beta = beta, c_.a = A, c_.b = x, c_.y = y); }
#define RAYO_DEF_TRANSPOSE(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, float *y, size_t rows, size_t cols) \
    { RUN(E, TRANSPOSE, c_.m = rows, c_.n = cols, c_.a = x, c_.y = y); }
#define RAYO_DEF_BIAS_ACT(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *x, const float *bias, float *y, \
                                                      size_t rows, size_t cols, rayo_activation act) \
    { RUN(E, BIAS_ACT, c_.flags = (uint32_t)act, c_.m = rows, c_.n = cols, c_.a = x, c_.b = bias, c_.y = y); }

#define RAYO_DEF_CONVERT(N, E) rayo_status rayo_##N(rayo_context *ctx, rayo_dtype xdt, const void *x, \
                                                     rayo_dtype ydt, void *y, size_t n) \
    { RUN(E, CONVERT, c_.dtypes = RAYO_DTYPES(xdt, 0, 0, ydt), c_.n = n, c_.a = x, c_.y = y); }
#define RAYO_DEF_GET_ROWS(N, E) rayo_status rayo_##N(rayo_context *ctx, rayo_matrix table, size_t table_rows, \
                                                      size_t cols, const int32_t *idx, size_t n_idx, float *y, size_t ldy) \
    { RUN(E, GET_ROWS, c_.dtypes = RAYO_DTYPES(table.dtype, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32), c_.m = n_idx, c_.n = cols, \
          c_.k = table_rows, c_.a = table.data, c_.b = idx, c_.y = y, c_.lda = table.ld, c_.ldy = ldy); }
#define RAYO_DEF_ROPE(N, E) rayo_status rayo_##N(rayo_context *ctx, const rayo_rope_params *p, const float *x, \
                                                  size_t ldx, float *y, size_t ldy, size_t n_tokens, const int32_t *pos) \
    { RUN(E, ROPE, c_.dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32), c_.m = n_tokens, \
          c_.n = p ? p->head_dim : 0, c_.a = x, c_.b = pos, c_.y = y, c_.lda = ldx, c_.ldy = ldy, c_.params = p); }
#define RAYO_DEF_ATTENTION(N, E) rayo_status rayo_##N(rayo_context *ctx, const rayo_attention_params *p, \
                                                       const float *q, const void *k, const void *v, float *out) \
    { RUN(E, ATTENTION, c_.dtypes = p ? RAYO_DTYPES(RAYO_DTYPE_F32, p->kv_dtype, p->kv_dtype, RAYO_DTYPE_F32) : 0, \
          c_.m = p ? p->n_q : 0, c_.n = p ? p->head_dim : 0, c_.k = p ? p->n_kv : 0, c_.a = q, c_.b = k, c_.c = v, c_.y = out, \
          c_.params = p); }
#define RAYO_DEF_GLU(N, E) rayo_status rayo_##N(rayo_context *ctx, const float *gate, size_t ldg, const float *up, \
                                                 size_t ldu, float *y, size_t ldy, size_t rows, size_t cols) \
    { RUN(E, GLU, c_.m = rows, c_.n = cols, c_.a = gate, c_.b = up, c_.y = y, c_.lda = ldg, c_.ldb = ldu, c_.ldy = ldy); }

#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) RAYO_API RAYO_DEF_##SIG(NAME, ENUM)
#include "rayo-ops.h"
#undef RAYO_OP

RAYO_API rayo_status rayo_matmul_ex(rayo_context *ctx, unsigned flags, size_t m, size_t n, size_t k, float alpha,
                                    rayo_matrix A, rayo_matrix B, float beta, float *C, size_t ldc,
                                    rayo_precision precision)
{
    RUN(MATMUL, MATMUL, c_.flags = flags, c_.dtypes = RAYO_DTYPES(A.dtype, B.dtype, 0, RAYO_DTYPE_F32), c_.m = m,
        c_.n = n, c_.k = k, c_.alpha = alpha, c_.beta = beta, c_.a = A.data, c_.b = B.data, c_.y = C, c_.lda = A.ld, c_.ldb = B.ld,
        c_.ldy = ldc, c_.precision = (uint32_t)precision);
}

RAYO_API rayo_status rayo_gemv_ex(rayo_context *ctx, unsigned flags, size_t m, size_t n, float alpha,
                                  rayo_matrix A, const float *x, float beta, float *y, rayo_precision precision)
{
    RUN(GEMV, GEMV, c_.flags = flags, c_.dtypes = RAYO_DTYPES(A.dtype, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
        c_.m = m, c_.n = n, c_.alpha = alpha, c_.beta = beta, c_.a = A.data, c_.b = x, c_.y = y, c_.lda = A.ld,
        c_.precision = (uint32_t)precision);
}
