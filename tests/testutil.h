/* SPDX-License-Identifier: MIT */
/* testutil.h - the few helpers the core's C tests share. */
#ifndef RAYO_TESTUTIL_H
#define RAYO_TESTUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setenv, mkdtemp, rand_r */
#endif

#include "rayo.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_passed, test_failed;

#define CHECK(cond, ...) do {                                              \
        if (cond) { test_passed++; }                                       \
        else {                                                             \
            test_failed++;                                                 \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
        }                                                                  \
    } while (0)

/* Prints the closing line and returns the exit status for automake. */
static inline int test_summary(void)
{
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : (test_passed ? 0 : 99);
}

/* Log messages captured from rayo (for tests that check what was said). */
static char test_log[65536];

static inline void test_log_capture(void *user, rayo_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    size_t used = strlen(test_log);
    snprintf(test_log + used, sizeof test_log - used, "%s\n", msg);
}

static inline void test_clear_rayo_env(void)
{
    static const char *const vars[] = {"RAYO_BACKEND", "RAYO_DISABLE", "RAYO_PLUGIN_PATH", "RAYO_FORCE_CPU",
                                       "RAYO_LOG", "RAYO_CONFIG", "RAYO_THREADS", "RAYO_CPU_DISABLE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* Opens a context that reads no config files, with these settings. */
static inline rayo_status test_open(rayo_context **ctx, const char *settings)
{
    rayo_options o = {0};
    o.struct_size = sizeof o;
    o.settings = settings;
    o.no_config_files = 1;
    o.log = test_log_capture;
    o.allow_no_backend = 1;
    test_log[0] = '\0';
    return rayo_open(ctx, &o);
}

/* A context's own log: contexts open at once each keep theirs. */
typedef struct test_context_log {
    char text[16384];
} test_context_log;

static inline void test_context_log_capture(void *user, rayo_log_level level, const char *msg)
{
    test_context_log *log = user;
    size_t used = strlen(log->text);
    (void)level;
    snprintf(log->text + used, sizeof log->text - used, "%s\n", msg);
}

/* test_open with the context's log into *log (emptied first). */
static inline rayo_status test_open_logged(rayo_context **ctx, test_context_log *log, const char *settings)
{
    rayo_options o = {0};
    o.struct_size = sizeof o;
    o.settings = settings;
    o.no_config_files = 1;
    o.log = test_context_log_capture;
    o.log_user = log;
    o.allow_no_backend = 1;
    log->text[0] = '\0';
    return rayo_open(ctx, &o);
}

/* The info of the backend called `name`, or status NOT_FOUND. */
static inline rayo_status test_backend(rayo_context *ctx, const char *name, rayo_backend_info *info)
{
    for (size_t i = 0; i < rayo_backend_count(ctx); i++)
        if (rayo_backend_get(ctx, i, info) == RAYO_OK && !strcmp(info->name, name) &&
            info->status != RAYO_BACKEND_SHADOWED)
            return RAYO_OK;
    return RAYO_E_NOT_FOUND;
}

/* The main of a test of the x86 backends: check(ctx, backend) for each of
 * avx2 and avx512 that loads, with the core's pool at 1 and at 2 threads
 * (a note for one that does not load), then avx2 with AVX-VNNI off: the
 * AVX2 forms of its int8 kernels, which CPUs without AVX-VNNI run; `more`
 * settings after each config (test_x86_main_with).  Returns the exit status: the
 * summary's, 77 (SKIP) when neither loads, 1 when a context did not open. */
static inline int test_x86_main_with(void (*check)(rayo_context *ctx, const char *backend), const char *more)
{
    static const char *const configs[] = { "[rayo]\nthreads = 1\n", "[rayo]\nthreads = 2\n",
                                           "[rayo]\nthreads = 2\n[backend.avx2]\nvnni = off\n" };
    static const char *const backends[] = { "avx2", "avx512" };
    int ran = 0;
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        rayo_context *ctx;
        char settings[512];
        snprintf(settings, sizeof settings, "%s%s", configs[c], more);
        if (test_open(&ctx, settings) != RAYO_OK) {
            printf("FAIL: rayo_open: %s\n", rayo_last_error());
            return 1;
        }
        for (size_t b = 0; b < (c == 2 ? 1 : sizeof backends / sizeof backends[0]); b++) {
            rayo_backend_info info = { .struct_size = sizeof(rayo_backend_info) };
            if (test_backend(ctx, backends[b], &info) != RAYO_OK || info.status != RAYO_BACKEND_LOADED) {
                printf("note: %s not checked: %s\n", backends[b], info.reason ? info.reason : "not built");
                continue;
            }
            check(ctx, backends[b]);
            ran++;
        }
        rayo_close(ctx);
    }
    if (!ran) {
        printf("SKIP: neither avx2 nor avx512 loads here\n");
        return 77;
    }
    return test_summary();
}

static inline int test_x86_main(void (*check)(rayo_context *ctx, const char *backend))
{
    return test_x86_main_with(check, "");
}

/* Records `count` calls in one batch on `backend`, submits and waits. */
static inline rayo_status test_run_batch(rayo_context *ctx, const char *backend,
                                         const rayo_batch_call *calls, size_t count)
{
    rayo_batch *batch = NULL;
    rayo_status st = rayo_batch_create(ctx, backend, &batch);
    for (size_t i = 0; st == RAYO_OK && i < count; i++)
        st = rayo_batch_record(batch, &calls[i]);
    if (st == RAYO_OK)
        st = rayo_batch_submit(batch);
    if (st == RAYO_OK)
        st = rayo_batch_wait(batch, UINT64_MAX);
    if (batch)
        rayo_batch_destroy(batch);
    return st;
}

static inline float test_random(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

#endif
