/* SPDX-License-Identifier: MIT */
/* test-api.c - misuse of the public API gets a status and a message, never
 * a crash; host-memory buffers and batches; concurrent calls on one context. */
#include "testutil.h"
#include <math.h>
#include <pthread.h>
#include <stdint.h>

static rayo_context *ctx;

static void expect(rayo_status got, rayo_status want, const char *what)
{
    CHECK(got == want, "%s: got %s (%s), want %s", what, rayo_strerror(got), rayo_last_error(), rayo_strerror(want));
    if (got != RAYO_OK)
        CHECK(rayo_last_error()[0] != '\0', "%s: a message goes with the error", what);
}

static void test_null_pointers(void)
{
    float x[4] = {1, 2, 3, 4}, y[4];
    float r;
    size_t idx;
    expect(rayo_add(NULL, x, x, y, 4), RAYO_E_INVALID, "NULL context");
    expect(rayo_add(ctx, NULL, x, y, 4), RAYO_E_INVALID, "NULL input");
    expect(rayo_add(ctx, x, x, NULL, 4), RAYO_E_INVALID, "NULL output");
    expect(rayo_sum(ctx, x, 4, NULL), RAYO_E_INVALID, "NULL result");
    expect(rayo_sum(ctx, NULL, 0, &r), RAYO_OK, "sum of nothing");
    CHECK(r == 0.0f, "sum of nothing is 0");
    expect(rayo_max(ctx, NULL, 0, &r), RAYO_OK, "max of nothing");
    CHECK(isinf(r) && r < 0, "max of nothing is -inf");
    expect(rayo_argmax(ctx, x, 0, &idx), RAYO_E_INVALID, "argmax of nothing");
    expect(rayo_add(ctx, NULL, NULL, NULL, 0), RAYO_OK, "add of nothing");
    expect(rayo_layernorm(ctx, x, NULL, NULL, y, 1, 4, 1e-5f), RAYO_OK, "layernorm without gamma/beta");
    expect(rayo_run(ctx, NULL), RAYO_E_INVALID, "rayo_run(NULL)");
    rayo_call bad = {.struct_size = sizeof(rayo_call), .op = 250, .n = 1, .a = x, .y = y};
    expect(rayo_run(ctx, &bad), RAYO_E_INVALID, "unknown op id");
    /* dtype codes past the 32 a set holds (UBSan: no shift out of range) */
    rayo_call bad_dtype = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ADD, .n = 1, .a = x, .b = x, .y = y,
                           .dtypes = RAYO_DTYPES(40, 0, 0, 0)};
    expect(rayo_run(ctx, &bad_dtype), RAYO_E_INVALID, "dtype code 40");
    CHECK(strstr(rayo_last_error(), "unknown dtype code 40") != NULL, "message: %s", rayo_last_error());
    /* a refusal says why itself: no earlier call's text is left behind */
    expect(rayo_add(ctx, NULL, x, y, 4), RAYO_E_INVALID, "add with a NULL input");
    rayo_rope_params odd = {.struct_size = sizeof odd, .mode = RAYO_ROPE_NORM, .n_heads = 1, .head_dim = 5,
                            .freq_base = 10000, .freq_scale = 1};
    int32_t pos = 0;
    float row[8] = {0}, out[8];
    expect(rayo_rope(ctx, &odd, row, 0, out, 0, 1, &pos), RAYO_E_INVALID, "rope with an odd head_dim, rot_dims 0");
    CHECK(strstr(rayo_last_error(), "rope") && !strstr(rayo_last_error(), "add"), "message: %s", rayo_last_error());
    /* f16 weights with RAYO_TRANS_A: no backend has it; refused up front */
    uint16_t half[4] = {0};
    rayo_call gemv_t = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .flags = RAYO_TRANS_A, .m = 2, .n = 2,
                        .alpha = 1, .a = half, .b = x, .y = y,
                        .dtypes = RAYO_DTYPES(RAYO_DTYPE_F16, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32)};
    expect(rayo_run(ctx, &gemv_t), RAYO_E_INVALID, "gemv f16 with RAYO_TRANS_A");
    CHECK(strstr(rayo_last_error(), "RAYO_TRANS_A") != NULL, "message: %s", rayo_last_error());
    expect(rayo_run_on(ctx, "no-such-backend", &bad), RAYO_E_NOT_FOUND, "unknown backend");
    expect(rayo_open(NULL, NULL), RAYO_E_INVALID, "rayo_open(NULL)");
    rayo_close(NULL); /* must not crash */
}

static void test_sizes(void)
{
    float x[4] = {0}, y[4] = {0};
    size_t huge = SIZE_MAX / 2;
    expect(rayo_add(ctx, x, x, y, SIZE_MAX), RAYO_E_OVERFLOW, "n = SIZE_MAX");
    expect(rayo_matmul(ctx, 0, huge, huge, 4, 1, x, x, 0, y), RAYO_E_OVERFLOW, "matmul m*n overflows");
    expect(rayo_matmul(ctx, 0, 4, 4, huge, 1, x, x, 0, y), RAYO_E_OVERFLOW, "matmul m*k overflows");
    expect(rayo_softmax(ctx, x, y, (size_t)1 << 40, (size_t)1 << 40), RAYO_E_OVERFLOW, "rows*cols overflows");
    expect(rayo_gemv(ctx, 0, huge, 3, 1, x, x, 0, y), RAYO_E_OVERFLOW, "gemv m*n overflows");
    expect(rayo_matmul(ctx, 0x80, 2, 2, 1, 1, x, x, 0, y), RAYO_E_INVALID, "matmul unknown flag");
    expect(rayo_relu(ctx, x, y, 0), RAYO_OK, "relu n = 0");
    expect(rayo_clip(ctx, x, y, 4, 1.0f, -1.0f), RAYO_E_INVALID, "clip lo > hi");
    expect(rayo_layernorm(ctx, x, NULL, NULL, y, 1, 4, -1.0f), RAYO_E_INVALID, "negative eps");
    expect(rayo_bias_act(ctx, x, x, y, 1, 4, (rayo_activation)99), RAYO_E_INVALID, "unknown activation");
}

/* k == 0: C = beta * C, and beta == 0 clears C even if it held NaN. */
static void test_degenerate_matmul(void)
{
    float c[4] = {NAN, 1, 2, 3};
    float a[1], b[1];
    expect(rayo_matmul(ctx, 0, 2, 2, 0, 1, a, b, 0.0f, c), RAYO_OK, "k = 0, beta = 0");
    CHECK(c[0] == 0 && c[3] == 0, "C cleared: %g %g", c[0], c[3]);
    c[1] = 5;
    expect(rayo_matmul(ctx, 0, 2, 2, 0, 1, a, b, 2.0f, c), RAYO_OK, "k = 0, beta = 2");
    CHECK(c[1] == 10, "C scaled: %g", c[1]);
}

static void test_status_strings(void)
{
    for (int s = RAYO_OK; s <= RAYO_E_STATE; s++)
        CHECK(rayo_strerror((rayo_status)s) && strcmp(rayo_strerror((rayo_status)s), "unknown status"),
              "status %d has a message", s);
    CHECK(!strcmp(rayo_strerror((rayo_status)999), "unknown status"), "unknown status text");
}

/* Buffers and batches over host memory: upload, chain ops, one submit. */
static void test_batches(void)
{
    enum { N = 1000 };
    float a[N], b[N], out[N];
    for (int i = 0; i < N; i++) {
        a[i] = test_random();
        b[i] = test_random();
    }
    rayo_buffer *ba, *bb, *by;
    expect(rayo_buffer_create(ctx, "scalar", N * 4, &ba), RAYO_OK, "buffer a");
    expect(rayo_buffer_create(ctx, "scalar", N * 4, &bb), RAYO_OK, "buffer b");
    expect(rayo_buffer_create(ctx, "scalar", N * 4 + 8, &by), RAYO_OK, "buffer y");
    expect(rayo_buffer_write(ba, 0, a, sizeof a), RAYO_OK, "write a");
    expect(rayo_buffer_write(bb, 0, b, sizeof b), RAYO_OK, "write b");
    expect(rayo_buffer_write(ba, 1, a, sizeof a), RAYO_E_INVALID, "write past the end");
    expect(rayo_buffer_read(ba, SIZE_MAX, out, 4), RAYO_E_INVALID, "read at an absurd offset");

    rayo_batch *batch;
    expect(rayo_batch_create(ctx, "scalar", &batch), RAYO_OK, "batch");
    rayo_batch_call add = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ADD, .n = N, .a = {ba, 0}, .b = {bb, 0}, .y = {by, 0}};
    rayo_batch_call relu = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_RELU, .n = N, .a = {by, 0}, .y = {by, 0}};
    rayo_batch_call sum = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_SUM, .n = N, .a = {by, 0}, .y = {by, N * 4}};
    rayo_batch_call argmax = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ARGMAX, .n = N, .a = {ba, 0}, .y = {by, N * 4}};
    rayo_batch_call too_big = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ADD, .n = N + 1, .a = {ba, 0}, .b = {bb, 0}, .y = {by, 0}};
    rayo_batch_call odd = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ADD, .n = 2, .a = {ba, 2}, .b = {bb, 0}, .y = {by, 0}};
    expect(rayo_batch_record(batch, &add), RAYO_OK, "record add");
    expect(rayo_batch_record(batch, &relu), RAYO_OK, "record relu in place");
    expect(rayo_batch_record(batch, &sum), RAYO_OK, "record sum");
    expect(rayo_batch_record(batch, &too_big), RAYO_E_INVALID, "operand larger than its buffer");
    CHECK(strstr(rayo_last_error(), "range [0, +") && strstr(rayo_last_error(), "outside the buffer of"),
          "the message says which range: %s", rayo_last_error());
    expect(rayo_batch_record(batch, &odd), RAYO_E_INVALID, "unaligned offset");
    expect(rayo_batch_wait(batch, UINT64_MAX), RAYO_E_STATE, "wait before submit");
    expect(rayo_batch_submit(batch), RAYO_OK, "submit");
    expect(rayo_batch_record(batch, &add), RAYO_E_STATE, "record after submit");
    expect(rayo_batch_wait(batch, UINT64_MAX), RAYO_OK, "wait");
    float total;
    expect(rayo_buffer_read(by, 0, out, sizeof out), RAYO_OK, "read y");
    expect(rayo_buffer_read(by, N * 4, &total, 4), RAYO_OK, "read sum");
    double ref = 0;
    bool right = true;
    for (int i = 0; i < N; i++) {
        float want = a[i] + b[i] > 0 ? a[i] + b[i] : 0;
        right &= out[i] == want;
        ref += want;
    }
    CHECK(right, "add then relu in one batch");
    CHECK(fabs(total - ref) <= 1e-4 * (fabs(ref) + 1), "sum in the batch: %g vs %g", total, ref);
    rayo_batch_destroy(batch);

    expect(rayo_batch_create(ctx, NULL, &batch), RAYO_OK, "batch on the default backend");
    rayo_status st = rayo_batch_record(batch, &argmax);
    if (!strcmp(rayo_buffer_backend(ba), "scalar") && strcmp("scalar", rayo_backend_for(ctx, RAYO_OP_ADD, 0, 1))) {
        CHECK(st == RAYO_E_INVALID, "a buffer of another backend is refused");
    } else if (st == RAYO_OK) {
        expect(rayo_batch_submit(batch), RAYO_OK, "submit argmax");
        expect(rayo_batch_wait(batch, UINT64_MAX), RAYO_OK, "wait argmax");
        uint64_t idx;
        expect(rayo_buffer_read(by, N * 4, &idx, 8), RAYO_OK, "read argmax");
        size_t want = 0;
        for (size_t i = 1; i < N; i++)
            if (a[i] > a[want])
                want = i;
        CHECK(idx == want, "argmax in a batch: %llu vs %zu", (unsigned long long)idx, want);
    }
    rayo_batch_destroy(batch);
    rayo_buffer_destroy(ba);
    rayo_buffer_destroy(bb);
    rayo_buffer_destroy(by);
    rayo_buffer_destroy(NULL);
    rayo_batch_destroy(NULL);
}

/* Several threads, one context, all ops checked. */
enum { THREADS = 4, ROUNDS = 50, LEN = 4099 };

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    float *x = malloc(LEN * sizeof *x), *y = malloc(LEN * sizeof *y), *z = malloc(LEN * sizeof *z);
    long bad = 0;
    for (int r = 0; r < ROUNDS && x && y && z; r++) {
        for (int i = 0; i < LEN; i++) {
            x[i] = (float)(rand_r(&seed) % 1000) / 100.0f - 5.0f;
            y[i] = (float)(rand_r(&seed) % 1000) / 100.0f - 5.0f;
        }
        if (rayo_mul(ctx, x, y, z, LEN) != RAYO_OK)
            bad++;
        for (int i = 0; i < LEN; i++)
            bad += z[i] != x[i] * y[i];
        float m;
        if (rayo_max(ctx, x, LEN, &m) != RAYO_OK)
            bad++;
        float want = x[0];
        for (int i = 1; i < LEN; i++)
            want = x[i] > want ? x[i] : want;
        bad += m != want;
        if (rayo_matmul(ctx, 0, 17, 19, 23, 1.0f, x, y, 0.0f, z) != RAYO_OK)
            bad++;
        double ref = 0;
        for (int k = 0; k < 23; k++)
            ref += (double)x[5 * 23 + k] * y[k * 19 + 7];
        bad += fabs(z[5 * 19 + 7] - ref) > 1e-4 * (fabs(ref) + 1);
    }
    free(x);
    free(y);
    free(z);
    return (void *)bad;
}

static void test_concurrency(void)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)(i + 1)) == 0, "thread %zu", (size_t)i);
    long wrong = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        wrong += (long)r;
    }
    CHECK(wrong == 0, "%ld wrong results from concurrent calls", wrong);
}

int main(void)
{
    test_clear_rayo_env();
    CHECK(test_open(&ctx, NULL) == RAYO_OK && ctx, "open: %s", rayo_last_error());
    if (!ctx)
        return test_summary();
    test_null_pointers();
    test_sizes();
    test_degenerate_matmul();
    test_status_strings();
    test_batches();
    test_concurrency();
    rayo_close(ctx);
    return test_summary();
}
