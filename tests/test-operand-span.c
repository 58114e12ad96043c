/* SPDX-License-Identifier: MIT */
/* test-operand-span.c - the span of an operand is its true extent (the
 * largest offset touched + 1) for every layout rope and attention allow:
 * head-major KV views (token stride head_dim, head stride n_kv head_dim),
 * rope with a head stride and ldx = 0, padded token-major views.
 *   1. rayo_operand_counts against the largest offset found by visiting
 *      every element;
 *   2. on each device backend that loads (vulkan, cuda): attention on host
 *      memory with a head-major
 *      cache in buffers allocated to exactly that extent (a plugin that
 *      copies more reads past them: ASan, tests/sanitize.sh, reports it),
 *      its result against scalar's; and the same call in a batch with
 *      device buffers of exactly that size, which must be accepted. */
#include "testutil.h"
#include "rayo-plugin.h"

#include <math.h>

static rayo_context *ctx;

/* The largest offset + 1 of [tokens][heads][dim] with strides ts, hs
 * (0: dense), by visiting every element. */
static size_t visit_extent(size_t tokens, size_t heads, size_t dim, size_t ts, size_t hs)
{
    size_t t_step = ts ? ts : heads * dim, h_step = hs ? hs : dim, end = 0;
    for (size_t t = 0; t < tokens; t++)
        for (size_t h = 0; h < heads; h++)
            for (size_t d = 0; d < dim; d++) {
                size_t at = t * t_step + h * h_step + d + 1;
                end = at > end ? at : end;
            }
    return end;
}

static void check_rope_span(size_t tokens, size_t heads, size_t dim, size_t ldx, size_t hs)
{
    rayo_rope_params p = {.struct_size = sizeof p, .n_heads = heads, .head_dim = dim, .head_stride_x = hs};
    rayo_call c = {.struct_size = sizeof c, .op = RAYO_OP_ROPE, .m = tokens, .n = dim, .lda = ldx, .params = &p};
    size_t count[4], want = visit_extent(tokens, heads, dim, ldx, hs);
    CHECK(rayo_operand_counts(&c, RAYO_SIG_ROPE, count) == 0 && count[0] == want,
          "rope %zu tokens x %zu heads x %zu, ldx %zu, head stride %zu: span %zu, true extent %zu", tokens, heads,
          dim, ldx, hs, count[0], want);
}

/* A head-major cache of cap positions viewed as n_kv tokens. */
static rayo_attention_params head_major(size_t n_q, size_t n_kv, size_t cap, size_t heads, size_t kv_heads,
                                        size_t dim)
{
    rayo_attention_params p = {.struct_size = sizeof p, .flags = RAYO_ATTN_CAUSAL, .kv_dtype = RAYO_DTYPE_F32,
                               .n_q = n_q, .n_kv = n_kv, .n_heads = heads, .n_kv_heads = kv_heads,
                               .head_dim = dim, .scale = (float)(1.0 / sqrt((double)dim)),
                               .k_token = dim, .k_head = cap * dim, .v_token = dim, .v_head = cap * dim};
    return p;
}

static void check_attention_span(size_t n_kv, size_t cap, size_t kv_heads, size_t dim)
{
    rayo_attention_params p = head_major(1, n_kv, cap, 2 * kv_heads, kv_heads, dim);
    rayo_call c = {.struct_size = sizeof c, .op = RAYO_OP_ATTENTION, .m = 1, .n = dim, .k = n_kv, .params = &p};
    size_t count[4], want = visit_extent(n_kv, kv_heads, dim, dim, cap * dim);
    CHECK(rayo_operand_counts(&c, RAYO_SIG_ATTENTION, count) == 0 && count[1] == want && count[2] == want,
          "head-major cache %zu of %zu positions x %zu heads x %zu: spans %zu %zu, true extent %zu", n_kv, cap,
          kv_heads, dim, count[1], count[2], want);
}

static void test_spans(void)
{
    check_rope_span(5, 4, 64, 0, 0);
    check_rope_span(5, 4, 64, 0, 80);     /* a head stride, ldx = 0 (token stride heads x dim) */
    check_rope_span(3, 8, 16, 16, 3 * 16); /* head-major */
    check_rope_span(7, 2, 6, 20, 7);
    check_attention_span(1, 1, 1, 8);
    check_attention_span(40, 64, 2, 16);
    check_attention_span(8192, 8192, 8, 128);
    check_attention_span(100, 8192, 4, 64);
}

static float *random_floats(size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; x && i < n; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
    return x;
}

/* attention with a head-major cache on host memory: backend be against
 * scalar. */
static void test_host_attention(const char *be)
{
    rayo_attention_params p = head_major(1, 100, 300, 8, 2, 64);
    size_t kv = visit_extent(p.n_kv, p.n_kv_heads, p.head_dim, p.k_token, p.k_head);
    size_t qn = p.n_heads * p.head_dim;
    float *q = random_floats(qn), *k = random_floats(kv), *v = random_floats(kv);
    float *out = calloc(qn, sizeof *out), *want = calloc(qn, sizeof *want);
    rayo_call c = {.struct_size = sizeof c, .op = RAYO_OP_ATTENTION, .m = p.n_q, .n = p.head_dim, .k = p.n_kv,
                   .a = q, .b = k, .c = v, .params = &p};
    c.y = want;
    rayo_status s = rayo_run_on(ctx, "scalar", &c);
    CHECK(s == RAYO_OK, "scalar attention: %s", rayo_last_error());
    c.y = out;
    s = rayo_run_on(ctx, be, &c);
    CHECK(s == RAYO_OK, "%s attention, head-major cache in buffers of its true extent: %s", be, rayo_last_error());
    double worst = 0;
    for (size_t i = 0; s == RAYO_OK && i < qn; i++)
        worst = fmax(worst, fabs((double)out[i] - want[i]));
    CHECK(worst < 1e-4, "%s and scalar differ by %g", be, worst);
    free(q), free(k), free(v), free(out), free(want);
}

/* The same layout in a batch: buffers of exactly the true extent are
 * enough. */
static void test_batch_attention(const char *be)
{
    rayo_attention_params p = head_major(1, 100, 300, 8, 2, 64);
    size_t kv_bytes = visit_extent(p.n_kv, p.n_kv_heads, p.head_dim, p.k_token, p.k_head) * sizeof(float);
    size_t q_bytes = p.n_heads * p.head_dim * sizeof(float);
    rayo_buffer *q = NULL, *k = NULL, *v = NULL, *o = NULL;
    int ok = rayo_buffer_create(ctx, be, q_bytes, &q) == RAYO_OK &&
             rayo_buffer_create(ctx, be, kv_bytes, &k) == RAYO_OK &&
             rayo_buffer_create(ctx, be, kv_bytes, &v) == RAYO_OK &&
             rayo_buffer_create(ctx, be, q_bytes, &o) == RAYO_OK;
    CHECK(ok, "buffers: %s", rayo_last_error());
    if (ok) {
        rayo_batch_call bc = {.struct_size = sizeof bc, .op = RAYO_OP_ATTENTION, .m = p.n_q, .n = p.head_dim,
                              .k = p.n_kv, .a = {q, 0}, .b = {k, 0}, .c = {v, 0}, .y = {o, 0}, .params = &p};
        rayo_status s = test_run_batch(ctx, be, &bc, 1);
        CHECK(s == RAYO_OK, "%s batch attention, head-major cache in buffers of its true extent: %s", be,
              rayo_last_error());
    }
    rayo_buffer_destroy(q), rayo_buffer_destroy(k), rayo_buffer_destroy(v), rayo_buffer_destroy(o);
}

int main(void)
{
    test_clear_rayo_env();
    test_spans();
    if (test_open(&ctx, "[plugins]\nallow = scalar, vulkan, cuda\n") != RAYO_OK) {
        printf("FAIL: rayo_open: %s\n", rayo_last_error());
        return 1;
    }
    static const char *const devices[] = {"vulkan", "cuda"};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
        rayo_backend_info info = {.struct_size = sizeof info};
        if (test_backend(ctx, devices[i], &info) == RAYO_OK && info.status == RAYO_BACKEND_LOADED) {
            test_host_attention(devices[i]);
            test_batch_attention(devices[i]);
        } else {
            printf("%s not loaded here: its attention checks did not run\n", devices[i]);
        }
    }
    rayo_close(ctx);
    return test_summary();
}
