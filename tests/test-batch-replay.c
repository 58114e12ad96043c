/* SPDX-License-Identifier: MIT */
/* test-batch-replay.c - a batch recorded once and replayed (rayo_batch_set_step).
 *
 * On every loaded backend with buffers and the ops: a decode step of one
 * token (q, k and v products with k and v written into the cache slot of
 * the token's position, rope on q and on the slot, grouped-query attention
 * over the cache so far, a residual add and the rmsnorm of its sum, then an
 * add in place and the rmsnorm of that, without gamma: the pairs a backend
 * may run as one kernel) is recorded once at position P0
 * and submitted at every later position with its step set, a new input
 * and position written between submits.  Each step's output and the whole
 * cache must equal the same ops called one by one on host memory on the
 * same backend (rayo_run_on).  Before that, steps out of order (s, s + 1,
 * s + 3, s + 2, s): a backend that prepares the next step ahead of the
 * submit (cuda, vulkan) must run the step set, not the one it expected.  A backend
 * that cannot replay (a 1.0 memory API) goes through the core's
 * re-recording: same results.  All of it at strict precision, then again
 * with the attention relaxed (a backend's relaxed attention kernels
 * replayed too).
 * Then the API's refusals: a step that moves an operand out of its buffer
 * (the step stays as it was), step fields that make no sense, set_step and
 * submit while the batch runs.
 *
 * Last, on vulkan, the calls its replayed steps run fused (fuse = yes):
 * rmsnorm + q, k, v products of Q8_0 weights at relaxed precision + ropes of
 * q and k in place (k's in the cache slot, positions moving a step), and
 * twice rmsnorm + gate and up products + swiglu (into a third row, then in
 * place on gate's), 6 steps (from the third on, each recorded ahead
 * fused).  Each step's outputs must equal, bit for bit, those of
 * the same batch in a context with fuse = no (the calls one by one), and
 * lie within the relaxed contract of float64 references; the debug log must
 * show all 11 calls fused into the dispatch of the one before (7 where the
 * plugin binds five storage buffers, not eight: the norms with the
 * products only). */
#include "testutil.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { HEADS = 4, KV_HEADS = 2, HD = 8, D = HEADS * HD, KVW = KV_HEADS * HD, CTX = 21, P0 = 5 };

typedef struct model {
    float wq[D * D], wk[KVW * D], wv[KVW * D], gamma[D];
    float kc[CTX * KVW], vc[CTX * KVW];   /* the cache, rows 0..P0-1 the "prompt" */
} model;

/* Buffers of the backend: weights, cache, activations, position. */
typedef struct dev {
    rayo_buffer *wq, *wk, *wv, *gamma, *kc, *vc, *x, *q, *att, *z, *zn, *z2, *pos;
} dev;

static rayo_rope_params rope_shape(size_t heads)
{
    return (rayo_rope_params){sizeof(rayo_rope_params), RAYO_ROPE_NORM, HD, 10000.0f, 1.0f, heads, HD, 0, 0};
}

static rayo_attention_params attn_shape(size_t n_kv)
{
    return (rayo_attention_params){sizeof(rayo_attention_params), RAYO_ATTN_CAUSAL, RAYO_DTYPE_F32, 1, n_kv,
                                   HEADS, KV_HEADS, HD, 1.0f / sqrtf((float)HD), D, HD, KVW, HD, KVW, HD, D, HD};
}

#define BCALL(...) ((rayo_batch_call){.struct_size = sizeof(rayo_batch_call), __VA_ARGS__})
#define HCALL(...) ((rayo_call){.struct_size = sizeof(rayo_call), __VA_ARGS__})
#define ROW (KVW * sizeof(float))

/* The step recorded at position P0; k and v's slots move one row per step. */
static rayo_status record_step(rayo_batch *b, const dev *d, const rayo_rope_params *rq,
                               const rayo_rope_params *rk, const rayo_attention_params *at, uint32_t precision)
{
    const rayo_operand slot_k = {d->kc, P0 * ROW}, slot_v = {d->vc, P0 * ROW};
    const rayo_batch_call calls[] = {
        BCALL(.op = RAYO_OP_GEMV, .m = D, .n = D, .alpha = 1, .a = {d->wq, 0}, .b = {d->x, 0}, .y = {d->q, 0}),
        BCALL(.op = RAYO_OP_GEMV, .m = KVW, .n = D, .alpha = 1, .a = {d->wk, 0}, .b = {d->x, 0}, .y = slot_k,
              .step_bytes = {0, 0, 0, ROW}),
        BCALL(.op = RAYO_OP_GEMV, .m = KVW, .n = D, .alpha = 1, .a = {d->wv, 0}, .b = {d->x, 0}, .y = slot_v,
              .step_bytes = {0, 0, 0, ROW}),
        BCALL(.op = RAYO_OP_ROPE, .dtypes = RAYO_DTYPES(0, RAYO_DTYPE_I32, 0, 0), .m = 1, .n = HD,
              .a = {d->q, 0}, .b = {d->pos, 0}, .y = {d->q, 0}, .params = rq),
        BCALL(.op = RAYO_OP_ROPE, .dtypes = RAYO_DTYPES(0, RAYO_DTYPE_I32, 0, 0), .m = 1, .n = HD,
              .a = slot_k, .b = {d->pos, 0}, .y = slot_k, .params = rk, .step_bytes = {ROW, 0, 0, ROW}),
        BCALL(.op = RAYO_OP_ATTENTION, .m = 1, .n = HD, .k = P0 + 1, .a = {d->q, 0}, .b = {d->kc, 0},
              .c = {d->vc, 0}, .y = {d->att, 0}, .params = at, .step_flags = RAYO_STEP_KV_LENGTH,
              .precision = precision),
        BCALL(.op = RAYO_OP_ADD, .n = D, .a = {d->att, 0}, .b = {d->x, 0}, .y = {d->z, 0}),
        BCALL(.op = RAYO_OP_RMSNORM, .m = 1, .n = D, .alpha = 1e-5f, .a = {d->z, 0}, .b = {d->gamma, 0},
              .y = {d->zn, 0}),
        BCALL(.op = RAYO_OP_ADD, .n = D, .a = {d->zn, 0}, .b = {d->x, 0}, .y = {d->zn, 0}),
        BCALL(.op = RAYO_OP_RMSNORM, .m = 1, .n = D, .alpha = 1e-5f, .a = {d->zn, 0}, .y = {d->z2, 0}),
    };
    rayo_status st = RAYO_OK;
    for (size_t i = 0; i < sizeof calls / sizeof calls[0] && st == RAYO_OK; i++)
        st = rayo_batch_record(b, &calls[i]);
    return st;
}

/* The same step at position pos, one call at a time on host memory. */
static rayo_status host_step(rayo_context *ctx, const char *be, model *m, const float *x, int32_t pos,
                             uint32_t precision, float *z, float *zn, float *z2)
{
    float q[D], att[D];
    float *k = m->kc + pos * KVW, *v = m->vc + pos * KVW;
    rayo_rope_params rq = rope_shape(HEADS), rk = rope_shape(KV_HEADS);
    rayo_attention_params at = attn_shape((size_t)pos + 1);
    const rayo_call calls[] = {
        HCALL(.op = RAYO_OP_GEMV, .m = D, .n = D, .alpha = 1, .a = m->wq, .b = x, .y = q),
        HCALL(.op = RAYO_OP_GEMV, .m = KVW, .n = D, .alpha = 1, .a = m->wk, .b = x, .y = k),
        HCALL(.op = RAYO_OP_GEMV, .m = KVW, .n = D, .alpha = 1, .a = m->wv, .b = x, .y = v),
        HCALL(.op = RAYO_OP_ROPE, .dtypes = RAYO_DTYPES(0, RAYO_DTYPE_I32, 0, 0), .m = 1, .n = HD, .a = q,
              .b = &pos, .y = q, .params = &rq),
        HCALL(.op = RAYO_OP_ROPE, .dtypes = RAYO_DTYPES(0, RAYO_DTYPE_I32, 0, 0), .m = 1, .n = HD, .a = k,
              .b = &pos, .y = k, .params = &rk),
        HCALL(.op = RAYO_OP_ATTENTION, .m = 1, .n = HD, .k = (size_t)pos + 1, .a = q, .b = m->kc, .c = m->vc,
              .y = att, .params = &at, .precision = precision),
        HCALL(.op = RAYO_OP_ADD, .n = D, .a = att, .b = x, .y = z),
        HCALL(.op = RAYO_OP_RMSNORM, .m = 1, .n = D, .alpha = 1e-5f, .a = z, .b = m->gamma, .y = zn),
        HCALL(.op = RAYO_OP_ADD, .n = D, .a = zn, .b = x, .y = zn),
        HCALL(.op = RAYO_OP_RMSNORM, .m = 1, .n = D, .alpha = 1e-5f, .a = zn, .y = z2),
    };
    rayo_status st = RAYO_OK;
    for (size_t i = 0; i < sizeof calls / sizeof calls[0] && st == RAYO_OK; i++)
        st = rayo_run_on(ctx, be, &calls[i]);
    return st;
}

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = test_random();
}

/* Largest |a - b| relative to the largest |b| (the kernels are the same:
 * only an alignment-dependent summation order may differ). */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(b[i]));
        worst = fmax(worst, isnan(a[i]) ? INFINITY : fabs((double)a[i] - b[i]));
    }
    return worst / scale;
}

static rayo_status make_buffers(rayo_context *ctx, const char *be, const model *m, dev *d)
{
    struct { rayo_buffer **b; size_t bytes; const void *init; } all[] = {
        {&d->wq, sizeof m->wq, m->wq}, {&d->wk, sizeof m->wk, m->wk}, {&d->wv, sizeof m->wv, m->wv},
        {&d->gamma, sizeof m->gamma, m->gamma}, {&d->kc, sizeof m->kc, m->kc}, {&d->vc, sizeof m->vc, m->vc},
        {&d->x, D * 4, NULL}, {&d->q, D * 4, NULL}, {&d->att, D * 4, NULL}, {&d->z, D * 4, NULL},
        {&d->zn, D * 4, NULL}, {&d->z2, D * 4, NULL}, {&d->pos, 4, NULL}};
    rayo_status st = RAYO_OK;
    for (size_t i = 0; i < sizeof all / sizeof all[0] && st == RAYO_OK; i++) {
        st = rayo_buffer_create(ctx, be, all[i].bytes, all[i].b);
        if (st == RAYO_OK && all[i].init)
            st = rayo_buffer_write(*all[i].b, 0, all[i].init, all[i].bytes);
    }
    return st;
}

static void free_buffers(dev *d)
{
    rayo_buffer *all[] = {d->wq, d->wk, d->wv, d->gamma, d->kc, d->vc, d->x, d->q, d->att, d->z, d->zn, d->z2, d->pos};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        rayo_buffer_destroy(all[i]);
}

/* One replayed step at position pos against the host step. */
static void replay_one(rayo_context *ctx, const char *be, rayo_batch *b, const dev *d, model *host,
                       int32_t pos, uint32_t precision)
{
    float x[D], z[3][D], want[3][D];
    fill(x, D);
    rayo_status st = rayo_buffer_write(d->x, 0, x, sizeof x);
    if (st == RAYO_OK)
        st = rayo_buffer_write(d->pos, 0, &pos, sizeof pos);
    if (st == RAYO_OK)
        st = rayo_batch_set_step(b, (size_t)(pos - P0));
    if (st == RAYO_OK)
        st = rayo_batch_submit(b);
    if (st == RAYO_OK)
        st = rayo_batch_wait(b, UINT64_MAX);
    rayo_buffer *out[3] = {d->z, d->zn, d->z2};
    for (int i = 0; i < 3 && st == RAYO_OK; i++)
        st = rayo_buffer_read(out[i], 0, z[i], sizeof z[i]);
    CHECK(st == RAYO_OK, "%s: replay at position %d: %s", be, pos, rayo_last_error());
    st = host_step(ctx, be, host, x, pos, precision, want[0], want[1], want[2]);
    CHECK(st == RAYO_OK, "%s: host step at %d: %s", be, pos, rayo_last_error());
    static const char *const names[3] = {"sum", "its rmsnorm", "the rmsnorm of the add in place"};
    for (int i = 0; i < 3; i++) {
        double diff = rel_diff(z[i], want[i], D);
        CHECK(diff <= 1e-6, "%s: %s at position %d differs from the one-by-one calls by %g", be, names[i], pos,
              diff);
    }
}

/* The refusals, on the recorded batch (waited for) and a fresh one. */
static void refusals(rayo_context *ctx, const char *be, rayo_batch *b, const dev *d)
{
    float before[D], after[D];
    CHECK(rayo_buffer_read(d->z, 0, before, sizeof before) == RAYO_OK, "%s: read z", be);
    CHECK(rayo_batch_set_step(b, CTX - P0) == RAYO_E_INVALID, "%s: a step past the cache is refused", be);
    CHECK(rayo_batch_set_step(b, SIZE_MAX / 2) == RAYO_E_OVERFLOW, "%s: an absurd step is refused", be);
    CHECK(rayo_batch_submit(b) == RAYO_OK, "%s: submit after refused steps", be);
    CHECK(rayo_batch_submit(b) == RAYO_E_STATE, "%s: submit while running", be);
    CHECK(rayo_batch_set_step(b, 0) == RAYO_E_STATE, "%s: set_step while running", be);
    CHECK(rayo_batch_wait(b, UINT64_MAX) == RAYO_OK, "%s: wait", be);
    CHECK(rayo_buffer_read(d->z, 0, after, sizeof after) == RAYO_OK && !memcmp(before, after, sizeof after),
          "%s: the refused steps left the step as it was", be);
    rayo_batch_call add = BCALL(.op = RAYO_OP_ADD, .n = D, .a = {d->att, 0}, .b = {d->x, 0}, .y = {d->z, 0});
    CHECK(rayo_batch_record(b, &add) == RAYO_E_STATE, "%s: record after submit", be);
    rayo_batch *fresh = NULL;
    CHECK(rayo_batch_create(ctx, be, &fresh) == RAYO_OK, "%s: batch", be);
    rayo_batch_call bad = add;
    bad.step_bytes[2] = 4; /* c: add has none */
    CHECK(rayo_batch_record(fresh, &bad) == RAYO_E_INVALID, "%s: step_bytes of an unused operand", be);
    bad = add;
    bad.step_bytes[0] = 2;
    CHECK(rayo_batch_record(fresh, &bad) == RAYO_E_INVALID, "%s: step_bytes not whole floats", be);
    bad = add;
    bad.step_flags = RAYO_STEP_KV_LENGTH;
    CHECK(rayo_batch_record(fresh, &bad) == RAYO_E_INVALID, "%s: RAYO_STEP_KV_LENGTH on add", be);
    bad = add;
    bad.step_bytes[3] = 4;
    CHECK(rayo_batch_record(fresh, &bad) == RAYO_OK, "%s: y moving by one float", be);
    CHECK(rayo_batch_set_step(fresh, 1) == RAYO_E_INVALID, "%s: ... not past its buffer", be);
    rayo_batch_destroy(fresh);
}

static void check_backend(rayo_context *ctx, const char *be, uint32_t precision)
{
    static model host, init;
    fill(init.wq, D * D);
    fill(init.wk, KVW * D);
    fill(init.wv, KVW * D);
    fill(init.gamma, D);
    fill(init.kc, P0 * KVW);
    fill(init.vc, P0 * KVW);
    memset(init.kc + P0 * KVW, 0, sizeof init.kc - P0 * ROW);
    memset(init.vc + P0 * KVW, 0, sizeof init.vc - P0 * ROW);
    host = init;
    dev d = {0};
    rayo_batch *b = NULL;
    rayo_rope_params rq = rope_shape(HEADS), rk = rope_shape(KV_HEADS);
    rayo_attention_params at = attn_shape(P0 + 1);
    rayo_status st = make_buffers(ctx, be, &init, &d);
    if (st == RAYO_OK)
        st = rayo_batch_create(ctx, be, &b);
    if (st == RAYO_OK)
        st = record_step(b, &d, &rq, &rk, &at, precision);
    if (st == RAYO_E_UNSUPPORTED) {
        printf("SKIP %s: %s\n", be, rayo_last_error());
    } else {
        CHECK(st == RAYO_OK, "%s: recording the step: %s", be, rayo_last_error());
        static const int32_t out_of_order[] = {0, 1, 3, 2, 0};
        for (size_t i = 0; st == RAYO_OK && i < sizeof out_of_order / sizeof *out_of_order; i++)
            replay_one(ctx, be, b, &d, &host, P0 + out_of_order[i], precision);
        for (int32_t pos = P0; st == RAYO_OK && pos < CTX; pos++)
            replay_one(ctx, be, b, &d, &host, pos, precision);
        float kc[CTX * KVW], vc[CTX * KVW];
        CHECK(rayo_buffer_read(d.kc, 0, kc, sizeof kc) == RAYO_OK &&
                  rayo_buffer_read(d.vc, 0, vc, sizeof vc) == RAYO_OK, "%s: read the cache", be);
        CHECK(rel_diff(kc, host.kc, CTX * KVW) <= 1e-6 && rel_diff(vc, host.vc, CTX * KVW) <= 1e-6,
              "%s: the cache the replays wrote differs from the one-by-one calls'", be);
        refusals(ctx, be, b, &d);
        printf("%s: %d positions replayed (attention %s)\n", be, CTX - P0,
               precision == RAYO_PRECISION_RELAXED ? "relaxed" : "strict");
    }
    rayo_batch_destroy(b);
    free_buffers(&d);
}

/* ---- fused decode calls (vulkan) ------------------------------------------------ */

enum { FN = 1024, FQH = 4, FKH = 2, FHD = 16, FQ = FQH * FHD, FK = FKH * FHD, FF = 96, FSTEPS = 6, FCALLS = 14 };
#define Q8_BLOCK 34u
#define F_EPS 1e-5f

/* Weights (Q8_0 rows as stored, and their values), gamma. */
typedef struct fused_model {
    uint8_t wq[FQ * FN / 32 * Q8_BLOCK], wk[FK * FN / 32 * Q8_BLOCK], wv[FK * FN / 32 * Q8_BLOCK];
    uint8_t wg[FF * FN / 32 * Q8_BLOCK], wu[FF * FN / 32 * Q8_BLOCK];
    double q[FQ * FN], k[FK * FN], v[FK * FN], g[FF * FN], u[FF * FN];
    float gamma[FN];
} fused_model;

/* Random Q8_0 rows with the scale 2^-7 (an exact f16: 0x2000), codes in
 * [-127, 127]; their values q / 128 into deq. */
static void q8_rows(uint8_t *out, double *deq, size_t rows)
{
    for (size_t blk = 0; blk < rows * FN / 32; blk++) {
        uint8_t *b = out + blk * Q8_BLOCK;
        b[0] = 0x00;
        b[1] = 0x20;
        for (size_t j = 0; j < 32; j++) {
            int code = (int)lrint(test_random() * 127.0);
            b[2 + j] = (uint8_t)(int8_t)code;
            deq[blk * 32 + j] = code / 128.0;
        }
    }
}

/* The buffers: weights, gamma, x, the norms' outputs, q, the k and v cache
 * (a row a step), positions (one a step), gate, up, swiglu's y, gate and up
 * of the in-place swiglu. */
typedef struct fused_dev {
    rayo_buffer *wq, *wk, *wv, *wg, *wu, *gamma, *x, *xn, *q, *kc, *vc, *pos, *g, *u, *h, *g2, *u2;
} fused_dev;

static rayo_status fused_buffers(rayo_context *ctx, const fused_model *m, fused_dev *d)
{
    struct { rayo_buffer **b; size_t bytes; const void *init; } all[] = {
        {&d->wq, sizeof m->wq, m->wq}, {&d->wk, sizeof m->wk, m->wk}, {&d->wv, sizeof m->wv, m->wv},
        {&d->wg, sizeof m->wg, m->wg}, {&d->wu, sizeof m->wu, m->wu}, {&d->gamma, sizeof m->gamma, m->gamma},
        {&d->x, FN * 4, NULL}, {&d->xn, 3 * FN * 4, NULL}, {&d->q, FQ * 4, NULL}, {&d->kc, FSTEPS * FK * 4, NULL},
        {&d->vc, FSTEPS * FK * 4, NULL}, {&d->pos, FSTEPS * 4, NULL}, {&d->g, FF * 4, NULL},
        {&d->u, FF * 4, NULL}, {&d->h, FF * 4, NULL}, {&d->g2, FF * 4, NULL}, {&d->u2, FF * 4, NULL}};
    rayo_status st = RAYO_OK;
    for (size_t i = 0; i < sizeof all / sizeof all[0] && st == RAYO_OK; i++) {
        st = rayo_buffer_create(ctx, "vulkan", all[i].bytes, all[i].b);
        if (st == RAYO_OK && all[i].init)
            st = rayo_buffer_write(*all[i].b, 0, all[i].init, all[i].bytes);
    }
    return st;
}

static void fused_free(fused_dev *d)
{
    rayo_buffer *all[] = {d->wq, d->wk, d->wv, d->wg, d->wu, d->gamma, d->x, d->xn, d->q,
                          d->kc, d->vc, d->pos, d->g, d->u, d->h, d->g2, d->u2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        rayo_buffer_destroy(all[i]);
}

static const rayo_rope_params fused_rope_q = {sizeof(rayo_rope_params), RAYO_ROPE_NORM, 0, 10000.0f, 1.0f,
                                              FQH, FHD, 0, 0};
static const rayo_rope_params fused_rope_k = {sizeof(rayo_rope_params), RAYO_ROPE_NORM, 8, 500.0f, 0.5f,
                                              FKH, FHD, 0, 0};

/* The batch at step 0: the k and v slots and the position move a step. */
static rayo_status fused_record(rayo_batch *b, const fused_dev *d)
{
    const uint32_t q8 = RAYO_DTYPES(RAYO_DTYPE_Q8_0, 0, 0, 0), i32 = RAYO_DTYPES(0, RAYO_DTYPE_I32, 0, 0);
    const uint32_t relaxed = RAYO_PRECISION_RELAXED;
#define F_NORM(out) BCALL(.op = RAYO_OP_RMSNORM, .m = 1, .n = FN, .alpha = F_EPS, .a = {d->x, 0}, \
                          .b = {d->gamma, 0}, .y = {d->xn, (out) * FN * 4})
#define F_GEMV(w, rows, in, out, ...) BCALL(.op = RAYO_OP_GEMV, .dtypes = q8, .m = rows, .n = FN, .alpha = 1, \
                                            .a = {w, 0}, .b = {d->xn, (in) * FN * 4}, .y = out, \
                                            .precision = relaxed, __VA_ARGS__)
    const rayo_operand slot_k = {d->kc, 0};
    const rayo_batch_call calls[FCALLS] = {
        F_NORM(0),
        F_GEMV(d->wq, FQ, 0, ((rayo_operand){d->q, 0}), .ldy = 0),
        F_GEMV(d->wk, FK, 0, slot_k, .step_bytes = {0, 0, 0, FK * 4}),
        F_GEMV(d->wv, FK, 0, ((rayo_operand){d->vc, 0}), .step_bytes = {0, 0, 0, FK * 4}),
        BCALL(.op = RAYO_OP_ROPE, .dtypes = i32, .m = 1, .n = FHD, .a = {d->q, 0}, .b = {d->pos, 0},
              .y = {d->q, 0}, .params = &fused_rope_q, .step_bytes = {0, 4, 0, 0}),
        BCALL(.op = RAYO_OP_ROPE, .dtypes = i32, .m = 1, .n = FHD, .a = slot_k, .b = {d->pos, 0}, .y = slot_k,
              .params = &fused_rope_k, .step_bytes = {FK * 4, 4, 0, FK * 4}),
        F_NORM(1),
        F_GEMV(d->wg, FF, 1, ((rayo_operand){d->g, 0}), .ldy = 0),
        F_GEMV(d->wu, FF, 1, ((rayo_operand){d->u, 0}), .ldy = 0),
        BCALL(.op = RAYO_OP_SWIGLU, .m = 1, .n = FF, .a = {d->g, 0}, .b = {d->u, 0}, .y = {d->h, 0}),
        F_NORM(2),
        F_GEMV(d->wg, FF, 2, ((rayo_operand){d->g2, 0}), .ldy = 0),
        F_GEMV(d->wu, FF, 2, ((rayo_operand){d->u2, 0}), .ldy = 0),
        BCALL(.op = RAYO_OP_SWIGLU, .m = 1, .n = FF, .a = {d->g2, 0}, .b = {d->u2, 0}, .y = {d->g2, 0}),
    };
#undef F_NORM
#undef F_GEMV
    rayo_status st = RAYO_OK;
    for (size_t i = 0; i < FCALLS && st == RAYO_OK; i++)
        st = rayo_batch_record(b, &calls[i]);
    return st;
}

/* What a step leaves: the norm's output, q, the step's k and v rows, gate,
 * up, swiglu's y, the in-place swiglu's y and its up. */
enum { O_XN, O_Q, O_K, O_V, O_G, O_U, O_H, O_H2, O_U2, OUTS };
static const size_t out_len[OUTS] = {FN, FQ, FK, FK, FF, FF, FF, FF, FF};
static const char *const out_name[OUTS] = {"rmsnorm", "q (roped)", "k (roped)", "v", "gate", "up",
                                           "swiglu", "swiglu in place", "up (in place)"};
typedef struct fused_out {
    float v[OUTS][FN];
} fused_out;

static rayo_status fused_step(const fused_dev *d, rayo_batch *b, size_t step, const float *x, fused_out *o)
{
    int32_t pos = 7 + 3 * (int32_t)step;
    rayo_status st = rayo_buffer_write(d->x, 0, x, FN * 4);
    if (st == RAYO_OK)
        st = rayo_buffer_write(d->pos, step * 4, &pos, 4);
    if (st == RAYO_OK)
        st = rayo_batch_set_step(b, step);
    if (st == RAYO_OK)
        st = rayo_batch_submit(b);
    if (st == RAYO_OK)
        st = rayo_batch_wait(b, UINT64_MAX);
    rayo_buffer *const from[OUTS] = {d->xn, d->q, d->kc, d->vc, d->g, d->u, d->h, d->g2, d->u2};
    const size_t at[OUTS] = {0, 0, step * FK * 4, step * FK * 4, 0, 0, 0, 0, 0};
    for (int i = 0; i < OUTS && st == RAYO_OK; i++)
        st = rayo_buffer_read(from[i], at[i], o->v[i], out_len[i] * 4);
    return st;
}

/* Float64 references and the bound of each: a row of a relaxed product
 * within 2e-3 of its sum of |terms| (core/rayo-ops.h), what the rope and the
 * swiglu make of that error, a float's rounding on top. */
typedef struct fused_ref {
    double v[OUTS][FN], tol[OUTS][FN];
} fused_ref;

static void ref_product(const double *w, size_t rows, const double *xn, double *y, double *tol)
{
    for (size_t r = 0; r < rows; r++) {
        double s = 0, abs_sum = 0;
        for (size_t j = 0; j < FN; j++) {
            s += w[r * FN + j] * xn[j];
            abs_sum += fabs(w[r * FN + j] * xn[j]);
        }
        y[r] = s;
        tol[r] = 2e-3 * abs_sum + 1e-6;
    }
}

static void ref_rope(const rayo_rope_params *p, int32_t pos, double *y, double *tol)
{
    size_t rot = p->rot_dims ? p->rot_dims : p->head_dim;
    for (size_t h = 0; h < p->n_heads; h++)
        for (size_t i = 0; i < rot / 2; i++) {
            double theta = pos * p->freq_scale * pow(p->freq_base, -2.0 * (double)i / (double)rot);
            double *pair = y + h * p->head_dim + 2 * i, *t = tol + h * p->head_dim + 2 * i;
            double u = pair[0], v = pair[1], c = cos(theta), s = sin(theta), e = t[0] + t[1];
            pair[0] = u * c - v * s;
            pair[1] = u * s + v * c;
            t[0] = t[1] = e + 1e-6 * (fabs(u) + fabs(v));
        }
}

static double silu(double g) { return g / (1.0 + exp(-g)); }

static void ref_swiglu(const double *g, const double *tg, const double *u, const double *tu, double *y, double *t)
{
    for (size_t r = 0; r < FF; r++) {
        y[r] = silu(g[r]) * u[r];
        t[r] = 1.1 * tg[r] * (fabs(u[r]) + tu[r]) + fabs(silu(g[r])) * tu[r] + 1e-6 * fabs(y[r]) + 1e-30;
    }
}

static void fused_reference(const fused_model *m, const float *x, size_t step, fused_ref *r)
{
    double ss = 0;
    for (size_t j = 0; j < FN; j++)
        ss += (double)x[j] * x[j];
    double inv = 1.0 / sqrt(ss / FN + (double)F_EPS);
    for (size_t j = 0; j < FN; j++) {
        r->v[O_XN][j] = x[j] * inv * m->gamma[j];
        r->tol[O_XN][j] = 1e-6 * fabs(r->v[O_XN][j]) + 1e-30;
    }
    const double *xn = r->v[O_XN];
    ref_product(m->q, FQ, xn, r->v[O_Q], r->tol[O_Q]);
    ref_product(m->k, FK, xn, r->v[O_K], r->tol[O_K]);
    ref_product(m->v, FK, xn, r->v[O_V], r->tol[O_V]);
    ref_product(m->g, FF, xn, r->v[O_G], r->tol[O_G]);
    ref_product(m->u, FF, xn, r->v[O_U], r->tol[O_U]);
    int32_t pos = 7 + 3 * (int32_t)step;
    ref_rope(&fused_rope_q, pos, r->v[O_Q], r->tol[O_Q]);
    ref_rope(&fused_rope_k, pos, r->v[O_K], r->tol[O_K]);
    ref_swiglu(r->v[O_G], r->tol[O_G], r->v[O_U], r->tol[O_U], r->v[O_H], r->tol[O_H]);
    memcpy(r->v[O_H2], r->v[O_H], sizeof r->v[O_H]);
    memcpy(r->tol[O_H2], r->tol[O_H], sizeof r->tol[O_H]);
    memcpy(r->v[O_U2], r->v[O_U], sizeof r->v[O_U]);
    memcpy(r->tol[O_U2], r->tol[O_U], sizeof r->tol[O_U]);
}

/* The debug line that counts a batch's fused calls, kept from the log, and
 * whether the plugin's info line said it binds eight storage buffers. */
static char fused_line[512];
static bool eight_buffers;

static void fused_log(void *user, rayo_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    if (strstr(msg, "recorded ahead"))
        snprintf(fused_line, sizeof fused_line, "%s", msg);
    if (strstr(msg, "(8 storage buffers)"))
        eight_buffers = true;
}

static rayo_status fused_open(rayo_context **ctx, const char *settings, const char *more, bool logged)
{
    static char all[2][4096];
    char *s = all[logged];
    snprintf(s, sizeof all[0], "%s%s", settings, more);
    rayo_options o = {.struct_size = sizeof o, .settings = s, .no_config_files = 1, .allow_no_backend = 1,
                      .log = logged ? fused_log : test_log_capture};
    return rayo_open(ctx, &o);
}

static void check_fused(const char *settings)
{
    static fused_model m;
    q8_rows(m.wq, m.q, FQ);
    q8_rows(m.wk, m.k, FK);
    q8_rows(m.wv, m.v, FK);
    q8_rows(m.wg, m.g, FF);
    q8_rows(m.wu, m.u, FF);
    for (size_t j = 0; j < FN; j++)
        m.gamma[j] = 0.5f + test_random() / 4;
    rayo_context *ctx[2] = {NULL, NULL};    /* fused, one by one */
    fused_dev d[2] = {{0}, {0}};
    rayo_batch *b[2] = {NULL, NULL};
    fused_line[0] = '\0';
    eight_buffers = false;
    rayo_status st = fused_open(&ctx[0], settings, "[rayo]\nlog = debug\n", true);
    if (st == RAYO_OK)
        st = fused_open(&ctx[1], settings, "[backend.vulkan]\nfuse = no\n", false);
    rayo_backend_info bi = {.struct_size = sizeof bi};
    if (st != RAYO_OK || test_backend(ctx[0], "vulkan", &bi) != RAYO_OK || bi.status != RAYO_BACKEND_LOADED) {
        printf("SKIP fused calls: vulkan not loaded\n");
        rayo_close(ctx[0]);
        rayo_close(ctx[1]);
        return;
    }
    for (int c = 0; c < 2 && st == RAYO_OK; c++) {
        st = fused_buffers(ctx[c], &m, &d[c]);
        if (st == RAYO_OK)
            st = rayo_batch_create(ctx[c], "vulkan", &b[c]);
        if (st == RAYO_OK)
            st = fused_record(b[c], &d[c]);
    }
    CHECK(st == RAYO_OK, "vulkan: the fused calls' batch: %s", rayo_last_error());
    static fused_out out[2];
    static fused_ref ref;
    for (size_t step = 0; step < FSTEPS && st == RAYO_OK; step++) {
        float x[FN];
        fill(x, FN);
        for (int c = 0; c < 2 && st == RAYO_OK; c++)
            st = fused_step(&d[c], b[c], step, x, &out[c]);
        CHECK(st == RAYO_OK, "vulkan: fused calls, step %zu: %s", step, rayo_last_error());
        fused_reference(&m, x, step, &ref);
        for (int i = 0; i < OUTS && st == RAYO_OK; i++) {
            CHECK(!memcmp(out[0].v[i], out[1].v[i], out_len[i] * 4),
                  "vulkan: %s at step %zu differs from fuse = no's", out_name[i], step);
            size_t bad = out_len[i];
            for (size_t j = 0; j < out_len[i] && bad == out_len[i]; j++)
                if (!(fabs(out[0].v[i][j] - ref.v[i][j]) <= ref.tol[i][j]))
                    bad = j;
            CHECK(bad == out_len[i], "vulkan: %s[%zu] at step %zu is %.9g, float64 %.9g (bound %.3g)", out_name[i],
                  bad, step, bad < out_len[i] ? out[0].v[i][bad] : 0.0, bad < out_len[i] ? ref.v[i][bad] : 0.0,
                  bad < out_len[i] ? ref.tol[i][bad] : 0.0);
        }
    }
    /* 5 fused with the attention's rmsnorm, 3 with each feed-forward one;
     * with five buffers 3 and 2 */
    char want[64];
    int fused = eight_buffers ? 11 : 7;
    snprintf(want, sizeof want, "%d calls, %d of them", FCALLS, fused);
    CHECK(strstr(fused_line, want) != NULL, "vulkan: the steps recorded ahead fused other than %d of %d calls: %s",
          fused, FCALLS, fused_line[0] ? fused_line : "(no such log line)");
    printf("vulkan: %d steps of fused calls (%s)\n", FSTEPS, fused_line);
    for (int c = 0; c < 2; c++) {
        rayo_batch_destroy(b[c]);
        fused_free(&d[c]);
        rayo_close(ctx[c]);
    }
}

int main(void)
{
    /* RAYO_PLUGIN_PATH (a build copied to another machine) as the setting */
    static char settings[4096];
    const char *path = getenv("RAYO_PLUGIN_PATH");
    if (path && *path)
        snprintf(settings, sizeof settings, "[plugins]\npath = %s\n", path);
    test_clear_rayo_env();
    srand((unsigned)time(NULL));
    rayo_context *ctx;
    if (test_open(&ctx, settings) != RAYO_OK) {
        fprintf(stderr, "open: %s\n", rayo_last_error());
        return 99;
    }
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info bi = {.struct_size = sizeof bi};
        if (rayo_backend_get(ctx, i, &bi) == RAYO_OK && bi.status == RAYO_BACKEND_LOADED) {
            check_backend(ctx, bi.name, RAYO_PRECISION_STRICT);
            check_backend(ctx, bi.name, RAYO_PRECISION_RELAXED);
        }
    }
    if (!test_passed)
        fprintf(stderr, "no backend ran the test; log:\n%s", test_log);
    rayo_close(ctx);
    check_fused(settings);
    return test_summary();
}
