/* SPDX-License-Identifier: MIT */
/* test-constant-buffer.c - rayo_buffer_set_constant and the weights a
 * backend keeps prepared from such a buffer.
 *
 * On avx2 and avx512 (test_x86_main: 1 and 2 threads, avx2 without
 * AVX-VNNI too), relaxed matmuls C = A B^T of Q4_0, Q8_0, Q4_K and Q6_K
 * weights, k = 1024 and 2048, n = 16, 40 and 136 (panels cut short), m = 9
 * and 64: the weights in a constant buffer, the call run twice (the first
 * packs the kept panels, the second only reads them), must give C bit for
 * bit equal to the same batch with the weights in a plain buffer, and
 * within the relaxed contract of a float64 reference (prepared_weights =
 * all, which keeps them).  Then the buffer is
 * destroyed and a new constant one of the same size (most often at the
 * same address) gets other weights: its results must be the new weights'
 * (kept panels of the old ones would not be).  The same with
 * prepared_weights = no.  Relaxed gemvs of Q4_0 and Q8_0 weights in
 * constant buffers (which avx512 lays out for its blocks-in-lanes kernel,
 * prepared_weights = gemv or all), m = 1, 5, 37, 300 and n = 32 to 2048
 * (chunks of 16 blocks cut short), with alpha and beta: within the
 * relaxed contract of float64 references, twice, and again for other
 * weights at the same size.  Then the API's refusals: writes to a constant
 * buffer, an op recorded to write it, set_constant while a batch writes it,
 * constant_operands set on a call of host pointers. */
#include "testutil.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BCALL(...) ((rayo_batch_call){.struct_size = sizeof(rayo_batch_call), __VA_ARGS__})

/* C (m x n) of one relaxed matmul of A (m x k, in a) and B (n x k of dt, in w). */
static rayo_status run_matmul(rayo_context *ctx, const char *backend, rayo_buffer *a, rayo_buffer *w,
                              rayo_buffer *c, rayo_dtype dt, size_t m, size_t n, size_t k)
{
    rayo_batch_call call = BCALL(.op = RAYO_OP_MATMUL, .flags = RAYO_TRANS_B,
                                 .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, dt, 0, RAYO_DTYPE_F32), .m = m, .n = n,
                                 .k = k, .alpha = 1.0f, .a = {a, 0}, .b = {w, 0}, .y = {c, 0},
                                 .precision = RAYO_PRECISION_RELAXED);
    return test_run_batch(ctx, backend, &call, 1);
}

/* y (m) = alpha A x + beta y, A (m x n of dt, in w), relaxed. */
static rayo_status run_gemv(rayo_context *ctx, const char *backend, rayo_buffer *w, rayo_buffer *x, rayo_buffer *y,
                            rayo_dtype dt, size_t m, size_t n, float alpha, float beta)
{
    rayo_batch_call call = BCALL(.op = RAYO_OP_GEMV, .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                                 .m = m, .n = n, .alpha = alpha, .beta = beta, .a = {w, 0}, .b = {x, 0},
                                 .y = {y, 0}, .precision = RAYO_PRECISION_RELAXED);
    return test_run_batch(ctx, backend, &call, 1);
}

/* Random weights of dt (n x k): their stored bytes in q, their values in f. */
static void make_weights(rayo_dtype dt, size_t n, size_t k, void *q, float *f)
{
    for (size_t i = 0; i < n * k; i++)
        f[i] = test_random();
    rayo_dtype_from_f32(dt, f, q, n * k);
    rayo_dtype_to_f32(dt, q, f, n * k);
}

/* C against float64 sums: within 2e-3 of the sum of |products| (the relaxed
 * contract of the quantized matmul, rayo-ops.h), plus a tiny floor. */
static int within_contract(const float *a, const float *w, const float *c, size_t m, size_t n, size_t k)
{
    for (size_t r = 0; r < m; r++)
        for (size_t j = 0; j < n; j++) {
            double s = 0.0, mag = 0.0;
            for (size_t i = 0; i < k; i++) {
                s += (double)a[r * k + i] * w[j * k + i];
                mag += fabs((double)a[r * k + i] * w[j * k + i]);
            }
            if (fabs(c[r * n + j] - s) > 2e-3 * mag + 1e-6)
                return 0;
        }
    return 1;
}

typedef struct shape {
    rayo_dtype dt;
    size_t m, n, k;
} shape;

/* One shape: constant against plain, twice; then new weights at the old size. */
static void check_shape(rayo_context *ctx, const char *backend, const shape *s)
{
    size_t wbytes = 0, m = s->m, n = s->n, k = s->k;
    rayo_dtype_row_bytes(s->dt, n * k, &wbytes);
    float *af = malloc(m * k * sizeof(float)), *wf = malloc(n * k * sizeof(float));
    float *c0 = malloc(m * n * sizeof(float)), *c1 = malloc(m * n * sizeof(float));
    unsigned char *wq = malloc(wbytes);
    rayo_buffer *a = NULL, *plain = NULL, *konst = NULL, *c = NULL;
    const char *name = rayo_dtype_name(s->dt);
    rayo_status st = RAYO_E_NOMEM;
    if (af && wf && c0 && c1 && wq) {
        for (size_t i = 0; i < m * k; i++)
            af[i] = test_random();
        make_weights(s->dt, n, k, wq, wf);
        st = rayo_buffer_create(ctx, backend, m * k * sizeof(float), &a);
    }
    if (st == RAYO_OK)
        st = rayo_buffer_create(ctx, backend, wbytes, &plain);
    if (st == RAYO_OK)
        st = rayo_buffer_create(ctx, backend, m * n * sizeof(float), &c);
    if (st == RAYO_OK)
        st = rayo_buffer_write(a, 0, af, m * k * sizeof(float));
    if (st == RAYO_OK)
        st = rayo_buffer_write(plain, 0, wq, wbytes);
    if (st == RAYO_OK)
        st = run_matmul(ctx, backend, a, plain, c, s->dt, m, n, k);
    if (st == RAYO_OK)
        st = rayo_buffer_read(c, 0, c0, m * n * sizeof(float));
    CHECK(st == RAYO_OK, "%s %s %zux%zux%zu: plain buffers: %s", backend, name, m, n, k, rayo_last_error());
    CHECK(st != RAYO_OK || within_contract(af, wf, c0, m, n, k), "%s %s %zux%zux%zu: plain: outside the contract",
          backend, name, m, n, k);
    for (int round = 0; round < 2 && st == RAYO_OK; round++) { /* round 1: other weights, same size */
        if (round) {
            make_weights(s->dt, n, k, wq, wf);
            st = rayo_buffer_write(plain, 0, wq, wbytes);
            if (st == RAYO_OK)
                st = run_matmul(ctx, backend, a, plain, c, s->dt, m, n, k);
            if (st == RAYO_OK)
                st = rayo_buffer_read(c, 0, c0, m * n * sizeof(float));
        }
        if (st == RAYO_OK)
            st = rayo_buffer_create(ctx, backend, wbytes, &konst);
        if (st == RAYO_OK)
            st = rayo_buffer_write(konst, 0, wq, wbytes);
        if (st == RAYO_OK)
            st = rayo_buffer_set_constant(konst);
        for (int again = 0; again < 2 && st == RAYO_OK; again++) {
            memset(c1, 0xff, m * n * sizeof(float));
            st = rayo_buffer_write(c, 0, c1, m * n * sizeof(float));
            if (st == RAYO_OK)
                st = run_matmul(ctx, backend, a, konst, c, s->dt, m, n, k);
            if (st == RAYO_OK)
                st = rayo_buffer_read(c, 0, c1, m * n * sizeof(float));
            CHECK(st != RAYO_OK || !memcmp(c0, c1, m * n * sizeof(float)),
                  "%s %s %zux%zux%zu: constant weights (weights %d, call %d) differ from plain ones", backend, name,
                  m, n, k, round, again);
        }
        CHECK(st == RAYO_OK, "%s %s %zux%zux%zu: constant buffer: %s", backend, name, m, n, k, rayo_last_error());
        CHECK(st != RAYO_OK || within_contract(af, wf, c0, m, n, k),
              "%s %s %zux%zux%zu: outside the contract", backend, name, m, n, k);
        rayo_buffer_destroy(konst);
        konst = NULL;
    }
    rayo_buffer_destroy(a);
    rayo_buffer_destroy(plain);
    rayo_buffer_destroy(c);
    free(af), free(wf), free(c0), free(c1), free(wq);
}

/* y = alpha A x + beta y0 against float64: within 2e-3 of alpha times the
 * sum of |products| (the relaxed contract), plus beta y0's rounding. */
static int gemv_within_contract(const float *w, const float *x, const float *y0, const float *y, size_t m, size_t n,
                                float alpha, float beta)
{
    for (size_t r = 0; r < m; r++) {
        double s = 0.0, mag = 0.0;
        for (size_t i = 0; i < n; i++) {
            s += (double)w[r * n + i] * x[i];
            mag += fabs((double)w[r * n + i] * x[i]);
        }
        double want = alpha * s + (double)beta * y0[r];
        if (fabs(y[r] - want) > 2e-3 * fabs(alpha) * mag + 1e-6 * fabs(want) + 1e-6)
            return 0;
    }
    return 1;
}

/* The gemv of a constant Q4_0 or Q8_0 weight (avx512 keeps it in its own
 * layout: other sums, so no bit-for-bit equality) against float64, twice,
 * then other weights at the same size in a new buffer. */
static void check_gemv(rayo_context *ctx, const char *backend, rayo_dtype dt, size_t m, size_t n)
{
    size_t wbytes = 0;
    rayo_dtype_row_bytes(dt, m * n, &wbytes);
    float *wf = malloc(m * n * sizeof(float)), *x = malloc(n * sizeof(float));
    float *y0 = malloc(m * sizeof(float)), *y = malloc(m * sizeof(float));
    unsigned char *wq = malloc(wbytes);
    rayo_buffer *w = NULL, *xb = NULL, *yb = NULL;
    rayo_status st = wf && x && y0 && y && wq ? RAYO_OK : RAYO_E_NOMEM;
    for (size_t i = 0; st == RAYO_OK && i < n; i++)
        x[i] = test_random();
    for (size_t i = 0; st == RAYO_OK && i < m; i++)
        y0[i] = test_random();
    if (st == RAYO_OK)
        st = rayo_buffer_create(ctx, backend, n * sizeof(float), &xb);
    if (st == RAYO_OK)
        st = rayo_buffer_create(ctx, backend, m * sizeof(float), &yb);
    if (st == RAYO_OK)
        st = rayo_buffer_write(xb, 0, x, n * sizeof(float));
    for (int round = 0; round < 2 && st == RAYO_OK; round++) {
        make_weights(dt, m, n, wq, wf);
        st = rayo_buffer_create(ctx, backend, wbytes, &w);
        if (st == RAYO_OK)
            st = rayo_buffer_write(w, 0, wq, wbytes);
        if (st == RAYO_OK)
            st = rayo_buffer_set_constant(w);
        for (int again = 0; again < 2 && st == RAYO_OK; again++) {
            float alpha = again ? 0.75f : 1.0f, beta = again ? -0.5f : 0.0f;
            st = rayo_buffer_write(yb, 0, y0, m * sizeof(float));
            if (st == RAYO_OK)
                st = run_gemv(ctx, backend, w, xb, yb, dt, m, n, alpha, beta);
            if (st == RAYO_OK)
                st = rayo_buffer_read(yb, 0, y, m * sizeof(float));
            CHECK(st != RAYO_OK || gemv_within_contract(wf, x, y0, y, m, n, alpha, beta),
                  "%s gemv %s %zux%zu (weights %d, call %d): outside the relaxed contract", backend,
                  rayo_dtype_name(dt), m, n, round, again);
        }
        CHECK(st == RAYO_OK, "%s gemv %s %zux%zu: %s", backend, rayo_dtype_name(dt), m, n, rayo_last_error());
        rayo_buffer_destroy(w);
        w = NULL;
    }
    rayo_buffer_destroy(xb);
    rayo_buffer_destroy(yb);
    free(wf), free(x), free(y0), free(y), free(wq);
}

static void check_refusals(rayo_context *ctx, const char *backend)
{
    rayo_buffer *w = NULL, *x = NULL;
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8];
    if (rayo_buffer_create(ctx, backend, sizeof v, &w) != RAYO_OK ||
        rayo_buffer_create(ctx, backend, sizeof v, &x) != RAYO_OK) {
        CHECK(0, "%s: buffers: %s", backend, rayo_last_error());
        rayo_buffer_destroy(w);
        return;
    }
    CHECK(rayo_buffer_write(w, 0, v, sizeof v) == RAYO_OK, "%s: write before set_constant", backend);
    CHECK(rayo_buffer_set_constant(w) == RAYO_OK, "%s: set_constant: %s", backend, rayo_last_error());
    CHECK(rayo_buffer_set_constant(w) == RAYO_OK, "%s: set_constant again: %s", backend, rayo_last_error());
    float z[8] = {0};
    CHECK(rayo_buffer_write(w, 0, z, sizeof z) == RAYO_E_STATE && strstr(rayo_last_error(), "constant"),
          "%s: a write to a constant buffer: want RAYO_E_STATE naming it, got \"%s\"", backend, rayo_last_error());
    CHECK(rayo_buffer_read(w, 0, back, sizeof back) == RAYO_OK && !memcmp(back, v, sizeof v),
          "%s: a constant buffer's contents changed", backend);
    rayo_batch *b = NULL;
    CHECK(rayo_batch_create(ctx, backend, &b) == RAYO_OK, "%s: batch: %s", backend, rayo_last_error());
    rayo_batch_call into = BCALL(.op = RAYO_OP_RELU, .n = 8, .a = {x, 0}, .y = {w, 0});
    CHECK(rayo_batch_record(b, &into) == RAYO_E_STATE, "%s: an op writing a constant buffer: want RAYO_E_STATE",
          backend);
    rayo_batch_call from = BCALL(.op = RAYO_OP_RELU, .n = 8, .a = {w, 0}, .y = {x, 0});
    CHECK(rayo_batch_record(b, &from) == RAYO_OK, "%s: an op reading a constant buffer: %s", backend,
          rayo_last_error());
    CHECK(rayo_buffer_set_constant(x) == RAYO_E_STATE && strstr(rayo_last_error(), "batch"),
          "%s: set_constant on a buffer a recorded op writes: want RAYO_E_STATE, got \"%s\"", backend,
          rayo_last_error());
    rayo_batch_destroy(b);
    CHECK(rayo_buffer_set_constant(x) == RAYO_OK, "%s: set_constant once the batch is gone: %s", backend,
          rayo_last_error());
    CHECK(rayo_buffer_set_constant(NULL) == RAYO_E_INVALID, "set_constant(NULL): want RAYO_E_INVALID");
    rayo_buffer_destroy(w);
    rayo_buffer_destroy(x);
    float y[8];
    rayo_call host = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_RELU, .n = 8, .a = v, .y = y,
                      .constant_operands = RAYO_CONSTANT_A};
    CHECK(rayo_run(ctx, &host) == RAYO_E_INVALID && strstr(rayo_last_error(), "constant_operands"),
          "a host call with constant_operands: want RAYO_E_INVALID, got \"%s\"", rayo_last_error());
}

/* The same with the setting off: nothing kept, the same results. */
static void check_off(void)
{
    rayo_context *ctx;
    if (test_open(&ctx, "[backend.avx2]\nprepared_weights = no\n[backend.avx512]\nprepared_weights = no\n") !=
        RAYO_OK) {
        CHECK(0, "rayo_open: %s", rayo_last_error());
        return;
    }
    static const char *const backends[] = {"avx2", "avx512"};
    for (size_t b = 0; b < 2; b++) {
        rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
        if (test_backend(ctx, backends[b], &info) == RAYO_OK && info.status == RAYO_BACKEND_LOADED) {
            shape s = {RAYO_DTYPE_Q4_0, 64, 40, 1024};
            check_shape(ctx, backends[b], &s);
        }
    }
    rayo_close(ctx);
}

static void check(rayo_context *ctx, const char *backend)
{
    static const shape shapes[] = {
        {RAYO_DTYPE_Q4_0, 64, 40, 1024}, {RAYO_DTYPE_Q4_0, 9, 136, 2048}, {RAYO_DTYPE_Q8_0, 64, 16, 1024},
        {RAYO_DTYPE_Q8_0, 9, 136, 2048}, {RAYO_DTYPE_Q4_K, 64, 40, 2048}, {RAYO_DTYPE_Q4_K, 9, 16, 1024},
        {RAYO_DTYPE_Q6_K, 64, 136, 1024}, {RAYO_DTYPE_Q6_K, 9, 40, 2048},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(ctx, backend, &shapes[i]);
    static const size_t gemv_shapes[][2] = { {1, 32}, {37, 544}, {300, 2048}, {5, 1056} };
    for (size_t i = 0; i < sizeof gemv_shapes / sizeof gemv_shapes[0]; i++) {
        check_gemv(ctx, backend, RAYO_DTYPE_Q4_0, gemv_shapes[i][0], gemv_shapes[i][1]);
        check_gemv(ctx, backend, RAYO_DTYPE_Q8_0, gemv_shapes[i][0], gemv_shapes[i][1]);
    }
    check_refusals(ctx, backend);
    static int off_checked;
    if (!off_checked++)
        check_off();
}

int main(void)
{
    test_clear_rayo_env();
    unsigned seed = (unsigned)time(NULL);
    printf("seed %u\n", seed);
    srand(seed);
    return test_x86_main_with(check, "[backend.avx2]\nprepared_weights = all\n[backend.avx512]\nprepared_weights = all\n");
}
