/* SPDX-License-Identifier: MIT */
/* test-stress.c - one context used from many threads at once: typed ops
 * small and large (the pool), buffers and batches created, shared, destroyed
 * out of order, while another thread opens and closes contexts of its own.
 * Checks results; its real job is to give TSan (tests/sanitize.sh) and ASan
 * every concurrent path of the core. */
#include "testutil.h"
#include <pthread.h>
#include <stdatomic.h>

enum { THREADS = 6, ROUNDS = 40, BIG = 1 << 16 };

static rayo_context *shared;
static rayo_buffer *common;      /* one buffer all threads' batches read */
static atomic_int failures;

static void fail_if(bool bad)
{
    if (bad)
        atomic_fetch_add(&failures, 1);
}

static void ignore_log(void *user, rayo_log_level level, const char *msg)
{
    (void)user; (void)level; (void)msg; /* test_log_capture is not thread-safe */
}

static rayo_status open_quiet(rayo_context **ctx, const char *settings)
{
    rayo_options o = {0};
    o.struct_size = sizeof o;
    o.settings = settings;
    o.no_config_files = 1;
    o.log = ignore_log;
    return rayo_open(ctx, &o);
}

static void ops_round(float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 13) - 6.0f;
    fail_if(rayo_relu(shared, x, y, n) != RAYO_OK);
    fail_if(y[n - 1] != (x[n - 1] > 0 ? x[n - 1] : 0));
    float s = 0;
    fail_if(rayo_sum(shared, y, n, &s) != RAYO_OK || s < 0);
}

static void batch_round(void)
{
    enum { N = 256 };
    rayo_buffer *mine = NULL;
    rayo_batch *batch = NULL;
    float out[N];
    fail_if(rayo_buffer_create(shared, NULL, N * sizeof(float), &mine) != RAYO_OK);
    fail_if(rayo_batch_create(shared, rayo_buffer_backend(common), &batch) != RAYO_OK);
    if (!mine || !batch || strcmp(rayo_buffer_backend(mine), rayo_buffer_backend(common))) {
        rayo_buffer_destroy(mine);
        rayo_batch_destroy(batch);
        return;
    }
    rayo_batch_call call = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ADD, .n = N, .a = {common, 0}, .b = {common, 0}, .y = {mine, 0}};
    fail_if(rayo_batch_record(batch, &call) != RAYO_OK);
    fail_if(rayo_batch_submit(batch) != RAYO_OK || rayo_batch_wait(batch, UINT64_MAX) != RAYO_OK);
    fail_if(rayo_buffer_read(mine, 0, out, sizeof out) != RAYO_OK || out[N - 1] != 2.0f * (N - 1));
    rayo_buffer_destroy(mine); /* before its batch: the batch keeps it */
    rayo_batch_destroy(batch);
}

static void *worker(void *arg)
{
    (void)arg;
    float *x = malloc(BIG * sizeof *x), *y = malloc(BIG * sizeof *y);
    for (int r = 0; r < ROUNDS && x && y; r++) {
        ops_round(x, y, (size_t)(r % 2 ? BIG : 100 + r));
        batch_round();
    }
    free(x);
    free(y);
    return NULL;
}

static void *opener(void *arg)
{
    (void)arg;
    for (int r = 0; r < 8; r++) {
        rayo_context *ctx;
        if (open_quiet(&ctx, "[rayo]\nthreads = 2\n") != RAYO_OK) {
            fail_if(true);
            continue;
        }
        float a[64] = {1}, y[64];
        fail_if(rayo_add(ctx, a, a, y, 64) != RAYO_OK || y[0] != 2.0f);
        rayo_buffer *buf = NULL;
        rayo_buffer_create(ctx, NULL, 64, &buf);
        rayo_close(ctx); /* with the buffer still alive: detached */
        rayo_buffer_destroy(buf);
    }
    return NULL;
}

int main(void)
{
    test_clear_rayo_env();
    CHECK(open_quiet(&shared, "[rayo]\nthreads = 4\n") == RAYO_OK, "open: %s", rayo_last_error());
    enum { N = 256 };
    float init[N];
    for (int i = 0; i < N; i++)
        init[i] = (float)i;
    CHECK(rayo_buffer_create(shared, NULL, sizeof init, &common) == RAYO_OK, "shared buffer");
    CHECK(rayo_buffer_write(common, 0, init, sizeof init) == RAYO_OK, "write");
    pthread_t t[THREADS + 1];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0, "thread %d", i);
    CHECK(pthread_create(&t[THREADS], NULL, opener, NULL) == 0, "opener");
    for (int i = 0; i <= THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&failures) == 0, "%d wrong results or failed calls from the threads", atomic_load(&failures));
    rayo_buffer_destroy(common);
    rayo_close(shared);
    return test_summary();
}
