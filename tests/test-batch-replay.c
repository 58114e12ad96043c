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
 * submit while the batch runs. */
#include "testutil.h"
#include <math.h>
#include <stdint.h>
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
    return test_summary();
}
