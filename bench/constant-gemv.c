/* SPDX-License-Identifier: MIT */
/* constant-gemv.c - relaxed gemv of weights in a constant buffer against the
 * same weights in a plain one, on one backend, in one process.
 *
 *   bench/constant-gemv [--backend B] [--dtype q4_0|q8_0|...] [--size MxN] [--reps R]
 *
 * Two batches of one gemv each (y = A x, A m x n of the dtype, random
 * values), one reading A from a plain buffer, one from a buffer made
 * constant (rayo_buffer_set_constant: a backend may keep A in a layout of
 * its own, made at the first call, which is timed apart).  They are
 * submitted alternately, R times each; each line is one submit and wait,
 * wall clock, with A's bytes per second, and a third line is the
 * reference: rayo_sum on the same backend over a float array of A's size
 * (a vectorized read of as many bytes, from memory too).  A (tens of MB at the default
 * 32000 x 2048) does not stay in the caches between submits.  The backend's
 * settings come from rayo.conf and RAYO_CONFIG as usual (threads,
 * [backend.NAME] prepared_weights). */
#define _POSIX_C_SOURCE 200809L
#include "rayo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float random_value(void)
{
    return (float)rand() / (float)RAND_MAX - 0.5f;
}

/* The reference: one rayo_sum over `floats` floats on the backend, seconds. */
static double timed_read(rayo_context *ctx, const char *backend, const float *data, size_t floats)
{
    float result = 0.0f;
    rayo_call c = {.struct_size = sizeof c, .op = RAYO_OP_SUM, .n = floats, .a = data, .y = &result};
    double t0 = now();
    if (rayo_run_on(ctx, backend, &c) != RAYO_OK)
        return -1.0;
    return now() - t0;
}

/* One submit and wait: its seconds, or a negative number on an error. */
static double timed(rayo_batch *b)
{
    double t0 = now();
    if (rayo_batch_submit(b) != RAYO_OK || rayo_batch_wait(b, UINT64_MAX) != RAYO_OK)
        return -1.0;
    return now() - t0;
}

int main(int argc, char **argv)
{
    const char *backend = "avx512", *dtype = "q8_0";
    size_t m = 32000, n = 2048;
    int reps = 8;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--backend"))
            backend = argv[i + 1];
        else if (!strcmp(argv[i], "--dtype"))
            dtype = argv[i + 1];
        else if (!strcmp(argv[i], "--size") && sscanf(argv[i + 1], "%zux%zu", &m, &n) == 2)
            ;
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: constant-gemv [--backend B] [--dtype D] [--size MxN] [--reps R]\n");
            return 2;
        }
    }
    int dt = rayo_dtype_by_name(dtype);
    size_t wbytes = 0;
    if (dt < 0 || !rayo_dtype_row_bytes((rayo_dtype)dt, m * n, &wbytes) || !m || !n) {
        fprintf(stderr, "constant-gemv: bad dtype %s or size %zux%zu\n", dtype, m, n);
        return 2;
    }
    rayo_context *ctx;
    if (rayo_open(&ctx, NULL) != RAYO_OK) {
        fprintf(stderr, "constant-gemv: rayo_open: %s\n", rayo_last_error());
        return 1;
    }
    float *f = malloc(m * n * sizeof(float)), *x = malloc(n * sizeof(float));
    void *q = malloc(wbytes);
    rayo_buffer *w[2] = {NULL, NULL}, *xb = NULL, *yb = NULL;
    rayo_batch *b[2] = {NULL, NULL};
    rayo_status st = f && x && q ? RAYO_OK : RAYO_E_NOMEM;
    for (size_t i = 0; st == RAYO_OK && i < m * n; i++)
        f[i] = random_value();
    for (size_t i = 0; st == RAYO_OK && i < n; i++)
        x[i] = random_value();
    if (st == RAYO_OK)
        st = rayo_dtype_from_f32((rayo_dtype)dt, f, q, m * n);
    if (st == RAYO_OK)
        st = rayo_buffer_create(ctx, backend, n * sizeof(float), &xb);
    if (st == RAYO_OK)
        st = rayo_buffer_create(ctx, backend, m * sizeof(float), &yb);
    if (st == RAYO_OK)
        st = rayo_buffer_write(xb, 0, x, n * sizeof(float));
    for (int c = 0; c < 2 && st == RAYO_OK; c++) {
        st = rayo_buffer_create(ctx, backend, wbytes, &w[c]);
        if (st == RAYO_OK)
            st = rayo_buffer_write(w[c], 0, q, wbytes);
        if (st == RAYO_OK && c == 1)
            st = rayo_buffer_set_constant(w[c]);
        if (st == RAYO_OK)
            st = rayo_batch_create(ctx, backend, &b[c]);
        rayo_batch_call g = {.struct_size = sizeof g, .op = RAYO_OP_GEMV,
                             .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32), .m = m, .n = n,
                             .alpha = 1.0f, .a = {w[c], 0}, .b = {xb, 0}, .y = {yb, 0},
                             .precision = RAYO_PRECISION_RELAXED};
        if (st == RAYO_OK)
            st = rayo_batch_record(b[c], &g);
    }
    if (st != RAYO_OK) {
        fprintf(stderr, "constant-gemv: %s: %s\n", rayo_strerror(st), rayo_last_error());
        return 1;
    }
    printf("gemv %s %zux%zu on %s, relaxed, %.1f MB of weights; rayo threads %u\n", dtype, m, n, backend,
           (double)wbytes / 1e6, rayo_thread_count(ctx));
    double first = timed(b[1]);
    printf("constant, first call (lays the weights out): %.3f ms\n", first * 1e3);
    size_t floats = wbytes / sizeof(float);
    float *ref = malloc(floats * sizeof(float));
    for (size_t i = 0; ref && i < floats; i++)
        ref[i] = 1.0f;
    for (int r = 0; r < reps && first >= 0.0 && ref; r++)
        for (int c = 0; c < 3; c++) {
            double t = c == 2 ? timed_read(ctx, backend, ref, floats) : timed(b[c]);
            if (t < 0.0) {
                fprintf(stderr, "constant-gemv: %s\n", rayo_last_error());
                return 1;
            }
            printf("%-8s %.3f ms %.2f GB/s\n", c == 2 ? "read" : c ? "constant" : "plain", t * 1e3,
                   (double)(c == 2 ? floats * sizeof(float) : wbytes) / t / 1e9);
        }
    free(ref);
    for (int c = 0; c < 2; c++) {
        rayo_batch_destroy(b[c]);
        rayo_buffer_destroy(w[c]);
    }
    rayo_buffer_destroy(xb);
    rayo_buffer_destroy(yb);
    rayo_close(ctx);
    free(f), free(x), free(q);
    return first >= 0.0 ? 0 : 1;
}
