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

/* The info of the backend called `name`, or status NOT_FOUND. */
static inline rayo_status test_backend(rayo_context *ctx, const char *name, rayo_backend_info *info)
{
    for (size_t i = 0; i < rayo_backend_count(ctx); i++)
        if (rayo_backend_get(ctx, i, info) == RAYO_OK && !strcmp(info->name, name) &&
            info->status != RAYO_BACKEND_SHADOWED)
            return RAYO_OK;
    return RAYO_E_NOT_FOUND;
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
