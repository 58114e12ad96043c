/* SPDX-License-Identifier: MIT */
/* test-avx2-gemm.c - the avx2 sgemm's blocking, threading and gemv paths.
 *
 * rayo-conform checks matmul on shapes up to ~500, where the blocking of
 * this machine's caches (kc 256, mc 128, nc 4080) is crossed a few times at
 * most.
 * Here tiny blocks are forced through [backend.avx2] kc / mc / nc, so that
 * every edge - partial micro-tiles, partial kc/mc/nc blocks, several jc and
 * pc steps, beta applied on the first k block only, column slices shared by
 * threads - is crossed many times on small matrices, with 1, 2 and 3
 * threads, all four transpose combinations, alpha/beta (beta = 0 with C
 * poisoned by NaN, which must not leak) and the m == 1 / n == 1 (gemv) paths.
 * Results are judged by the conformance engine against float64.
 * Skips (77) where the avx2 backend does not load.
 */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include "conform.h"

#include <math.h>

static conform_rng rng;

typedef struct shape {
    size_t m, n, k;
} shape;

/* Runs one matmul on avx2 and judges every element; returns 1 if it passes. */
static int check_matmul(rayo_context *ctx, const char *label, shape s, unsigned flags, float alpha, float beta)
{
    const rayo_op_info *op = rayo_op_by_id(RAYO_OP_MATMUL);
    float *A = malloc((s.m * s.k + 1) * sizeof *A), *B = malloc((s.k * s.n + 1) * sizeof *B);
    float *C = malloc((s.m * s.n + 1) * sizeof *C);
    double *ref = malloc(s.m * s.n * sizeof *ref), *terms = malloc(s.m * s.n * sizeof *terms);
    int ok = A && B && C && ref && terms;
    if (ok) {
        conform_fill_uniform(&rng, A, s.m * s.k, -1.0, 1.0);
        conform_fill_uniform(&rng, B, s.k * s.n, -1.0, 1.0);
        if (beta == 0.0f)
            for (size_t i = 0; i < s.m * s.n; i++)
                C[i] = NAN; /* must not be read */
        else
            conform_fill_uniform(&rng, C, s.m * s.n, -1.0, 1.0);
        rayo_call call = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = s.m, .n = s.n, .k = s.k,
                           .alpha = alpha, .beta = beta, .a = A, .b = B, .y = C };
        ok = conform_reference(&call, ref, terms) == 0;
        rayo_status st = rayo_run_on(ctx, "avx2", &call);
        CHECK(st == RAYO_OK, "%s: matmul %zux%zux%zu: %s", label, s.m, s.n, s.k, rayo_last_error());
        ok = ok && st == RAYO_OK;
        size_t bad = 0, first = 0;
        double worst = 0.0;
        for (size_t i = 0; ok && i < s.m * s.n; i++) {
            int pass;
            double units = conform_judge(op, ref[i], terms[i], C[i], &pass);
            worst = units > worst ? units : worst;
            if (!pass && bad++ == 0)
                first = i;
        }
        CHECK(ok && bad == 0, "%s: matmul %zux%zux%zu flags %u alpha %g beta %g: %zu bad elements, "
              "first C[%zu][%zu] = %g, want %g (worst %.2f units)", label, s.m, s.n, s.k, flags,
              (double)alpha, (double)beta, bad, first / s.n, first % s.n, ok ? (double)C[first] : 0.0,
              ok ? ref[first] : 0.0, worst);
        ok = ok && bad == 0;
    }
    free(A), free(B), free(C), free(ref), free(terms);
    return ok;
}

/* gemv through its own op, both orientations. */
static void check_gemv(rayo_context *ctx, const char *label, size_t m, size_t n, unsigned flags, float beta)
{
    const rayo_op_info *op = rayo_op_by_id(RAYO_OP_GEMV);
    size_t in = flags ? m : n, out = flags ? n : m;
    float *A = malloc(m * n * sizeof *A), *x = malloc(in * sizeof *x), *y = malloc(out * sizeof *y);
    double *ref = malloc(out * sizeof *ref), *terms = malloc(out * sizeof *terms);
    if (A && x && y && ref && terms) {
        conform_fill_uniform(&rng, A, m * n, -1.0, 1.0);
        conform_fill_uniform(&rng, x, in, -1.0, 1.0);
        for (size_t i = 0; i < out; i++)
            y[i] = beta == 0.0f ? NAN : 0.25f;
        rayo_call call = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .flags = flags, .m = m, .n = n, .alpha = 0.5f, .beta = beta,
                           .a = A, .b = x, .y = y };
        conform_reference(&call, ref, terms);
        CHECK(rayo_run_on(ctx, "avx2", &call) == RAYO_OK, "%s: gemv: %s", label, rayo_last_error());
        size_t bad = 0;
        for (size_t i = 0; i < out; i++) {
            int pass;
            conform_judge(op, ref[i], terms[i], y[i], &pass);
            bad += !pass;
        }
        CHECK(bad == 0, "%s: gemv %zux%zu flags %u beta %g: %zu bad elements", label, m, n, flags, (double)beta,
              bad);
    }
    free(A), free(x), free(y), free(ref), free(terms);
}

static void run_all(rayo_context *ctx, const char *label)
{
    static const shape shapes[] = {
        { 1, 1, 1 }, { 2, 2, 2 }, { 5, 17, 3 }, { 6, 16, 8 }, { 7, 33, 65 }, { 13, 100, 129 },
        { 37, 70, 200 }, { 64, 64, 64 }, { 97, 131, 71 }, { 150, 40, 300 }, { 3, 500, 40 },
        /* skinny: gemv paths and near-gemv shapes */
        { 1, 300, 77 }, { 1, 1000, 1000 }, { 300, 1, 77 }, { 1000, 1, 1000 }, { 1, 1, 5000 }, { 2, 700, 300 },
    };
    static const float alphas[] = { 1.0f, -0.75f };
    static const float betas[] = { 0.0f, 1.0f, 0.5f };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (unsigned flags = 0; flags < 4; flags++)
            for (size_t b = 0; b < 3; b++)
                check_matmul(ctx, label, shapes[i], flags, alphas[(i + b) % 2], betas[b]);
    /* k == 0: C = beta C */
    check_matmul(ctx, label, (shape){ 9, 11, 0 }, 0, 1.0f, 0.5f);
    check_matmul(ctx, label, (shape){ 9, 11, 0 }, 0, 1.0f, 0.0f);
    for (unsigned flags = 0; flags < 2; flags++) {
        check_gemv(ctx, label, 1, 1, flags, 0.0f);
        check_gemv(ctx, label, 333, 77, flags, 0.0f);
        check_gemv(ctx, label, 77, 2100, flags, 0.5f);
        check_gemv(ctx, label, 1500, 1500, flags, 1.0f);
    }
}

int main(void)
{
    test_clear_rayo_env();
    conform_rng_seed(&rng, conform_default_seed());
    /* Blocks far below the real caches: every edge is crossed many times. */
    static const char *const configs[][2] = {
        { "tiny blocks, 1 thread", "[rayo]\nthreads = 1\n[backend.avx2]\nkc = 16\nmc = 12\nnc = 32\n" },
        { "tiny blocks, 2 threads", "[rayo]\nthreads = 2\n[backend.avx2]\nkc = 24\nmc = 18\nnc = 48\n" },
        { "odd blocks, 3 threads", "[rayo]\nthreads = 3\n[backend.avx2]\nkc = 40\nmc = 30\nnc = 80\n" },
        { "cache blocks, 2 threads", "[rayo]\nthreads = 2\n" },
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        rayo_context *ctx;
        if (test_open(&ctx, configs[i][1]) != RAYO_OK) {
            printf("FAIL: rayo_open: %s\n", rayo_last_error());
            return 1;
        }
        rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
        if (test_backend(ctx, "avx2", &info) != RAYO_OK || info.status != RAYO_BACKEND_LOADED) {
            printf("SKIP: avx2 backend not loaded: %s\n", info.reason ? info.reason : "not built");
            rayo_close(ctx);
            return 77;
        }
        run_all(ctx, configs[i][0]);
        rayo_close(ctx);
    }
    return test_summary();
}
