/* SPDX-License-Identifier: MIT */
/* test-x86-settings.c - each context keeps its own [backend.NAME] settings.
 *
 * Two contexts open at once, one with stream_min_bytes = 4096 and one with
 * 1 GiB, for avx2 and for avx512 (each where it loads; avx512 SKIPs its part
 * on a CPU without it).  After both are open, add on 8192 floats (32 KiB)
 * must take the streaming stores in the first context and not in the second:
 * the plugins say so at debug level, once per call.  A plugin that kept the
 * setting in a process global (the context opened last would set it for
 * both) fails here.  The sums are checked against a double reference, the
 * settings the plugin read against its init line, and a bad value must be
 * refused with a warning that names it.  Exits 77 when neither backend loads.
 */
#include "testutil.h" /* first: it defines _GNU_SOURCE */

#include <math.h>

#define N 8192 /* 32 KiB of output: streams at 4096, not at 1 GiB */

static rayo_status open_with(rayo_context **ctx, test_context_log *log, const char *backend, const char *value)
{
    char settings[256];
    snprintf(settings, sizeof settings, "[rayo]\nlog = debug\nthreads = 1\n[backend.%s]\nstream_min_bytes = %s\n",
             backend, value);
    return test_open_logged(ctx, log, settings);
}

static int loaded(rayo_context *ctx, const char *backend)
{
    rayo_backend_info info = { .struct_size = sizeof(rayo_backend_info) };
    return test_backend(ctx, backend, &info) == RAYO_OK && info.status == RAYO_BACKEND_LOADED;
}

/* y = a + b on `backend`; true when every sum is the double one rounded. */
static int add_is_right(rayo_context *ctx, const char *backend, const float *a, const float *b, float *y)
{
    rayo_call call = { .struct_size = sizeof call, .op = RAYO_OP_ADD, .n = N, .a = a, .b = b, .y = y };
    if (rayo_run_on(ctx, backend, &call) != RAYO_OK)
        return 0;
    for (size_t i = 0; i < N; i++)
        if (y[i] != (float)((double)a[i] + (double)b[i]))
            return 0;
    return 1;
}

static int streamed(const test_context_log *log)
{
    return strstr(log->text, "floats out with streaming stores") != NULL;
}

static void check_backend(const char *backend, const float *a, const float *b, float *y)
{
    static test_context_log low_log, high_log;
    rayo_context *low = NULL, *high = NULL;
    CHECK(open_with(&low, &low_log, backend, "4096") == RAYO_OK, "%s: open: %s", backend, rayo_last_error());
    CHECK(open_with(&high, &high_log, backend, "1073741824") == RAYO_OK, "%s: open: %s", backend, rayo_last_error());
    CHECK(strstr(low_log.text, "stream_min_bytes 4096") != NULL, "%s: the first context read %s", backend,
          low_log.text);
    CHECK(strstr(high_log.text, "stream_min_bytes 1073741824") != NULL, "%s: the second context read %s",
          backend, high_log.text);
    /* Both are open now: a global would hold the second one's value. */
    low_log.text[0] = high_log.text[0] = '\0';
    CHECK(add_is_right(low, backend, a, b, y), "%s: add with streaming stores is wrong", backend);
    CHECK(streamed(&low_log), "%s: 32 KiB out of a context with stream_min_bytes = 4096 did not stream: %s",
          backend, low_log.text);
    CHECK(add_is_right(high, backend, a, b, y), "%s: add without streaming stores is wrong", backend);
    CHECK(!streamed(&high_log), "%s: 32 KiB out of a context with stream_min_bytes = 1 GiB streamed: %s",
          backend, high_log.text);
    rayo_close(high);
    rayo_close(low);
}

/* A value that is not a whole number keeps the default, with a warning. */
static void check_bad_value(const char *backend)
{
    static test_context_log log;
    static const char *const bad[] = { "-1", "12k", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rayo_context *ctx = NULL;
        CHECK(open_with(&ctx, &log, backend, bad[i]) == RAYO_OK, "%s: open: %s", backend, rayo_last_error());
        CHECK(strstr(log.text, "stream_min_bytes = ") && strstr(log.text, "ignored"),
              "%s: stream_min_bytes = '%s' was not refused: %s", backend, bad[i], log.text);
        rayo_close(ctx);
    }
}

int main(void)
{
    test_clear_rayo_env();
    static float a[N], b[N], y[N];
    for (size_t i = 0; i < N; i++) {
        a[i] = test_random() * 1e3f;
        b[i] = test_random();
    }
    static const char *const backends[] = { "avx2", "avx512" };
    int ran = 0;
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        rayo_context *probe = NULL;
        int here = test_open(&probe, NULL) == RAYO_OK && loaded(probe, backends[i]);
        rayo_close(probe);
        if (!here) {
            printf("SKIP %s: the backend does not load here (CPU, OS or build lacks it)\n", backends[i]);
            continue;
        }
        check_backend(backends[i], a, b, y);
        check_bad_value(backends[i]);
        ran++;
    }
    if (!ran) {
        printf("SKIP: neither avx2 nor avx512 loads here\n");
        return 77;
    }
    return test_summary();
}
