/* SPDX-License-Identifier: MIT */
/* test-neon-sdot.c - the neon backend's relaxed Q8_0 and Q4_0 gemv (SDOT
 * against x rounded to int8, plugins/neon/quant.c), through the real core
 * (under qemu-aarch64 when cross-built: tests/cross-aarch64.sh):
 *   - within the relaxed contract (2e-3 of sum |terms| per row, float64
 *     reference on the dequantized weights) for 1, 3, 4, 5 and 37 rows
 *     (four a pass and the rest), 1, 2, 3, 9, 64 and 129 blocks a row, x
 *     uniform, spanning 1e-8..1e8, or with a few values 100 times the rest,
 *     at 1 and 2 threads;
 *   - where the CPU has dotprod (HWCAP_ASIMDDP), an ordinary x of 2048 values
 *     or more must take the integer path (the result differs from strict's), and x with a value
 *     that is not finite or a block near 1e-35 must not (bit for bit
 *     strict's); without dotprod, relaxed is strict bit for bit for every
 *     x (the fallback: qemu-aarch64 -cpu cortex-a57 runs it).
 * SKIP (77) where the neon backend does not load. */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include "conform.h"
#include "ref-infer.h"

#include <math.h>
#include <sys/auxv.h>

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

static conform_rng rng;

typedef enum x_kind { X_UNIFORM, X_DECADES, X_OUTLIERS, X_INFINITE, X_TINY_BLOCK, X_KINDS } x_kind;
static const char *const x_kind_name[] = { "uniform", "spanning 1e-8..1e8", "with outliers x100",
                                           "with an infinity", "with a block near 1e-35" };

static void make_x(float *x, size_t n, x_kind kind)
{
    conform_fill_uniform(&rng, x, n, -1.0, 1.0);
    for (size_t i = 0; i < n; i++) {
        double u = conform_rng_uniform(&rng);
        if (kind == X_DECADES)
            x[i] = (x[i] < 0 ? -1.0f : 1.0f) * (float)pow(10.0, -8.0 + 16.0 * u);
        else if (kind == X_OUTLIERS && u < 0.02)
            x[i] *= 100.0f;
    }
    if (kind == X_INFINITE)
        x[n / 2] = -INFINITY;
    for (size_t i = 0; kind == X_TINY_BLOCK && i < 32; i++)
        x[n - 32 + i] = 1e-35f * (float)(i % 3);
}

/* y = A x on neon at precision p. */
static rayo_status neon_gemv(rayo_context *ctx, rayo_dtype dt, const void *A, size_t m, size_t n, const float *x,
                             float *y, rayo_precision p)
{
    rayo_call call = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV,
                       .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                       .m = m, .n = n, .alpha = 1.0f, .a = A, .b = x, .y = y, .precision = p };
    return rayo_run_on(ctx, "neon", &call);
}

/* The relaxed result of one case against float64 and against strict's. */
static void check_case(rayo_context *ctx, int dotprod, rayo_dtype dt, size_t m, size_t blocks, x_kind kind)
{
    size_t n = 32 * blocks, row_bytes = 0;
    rayo_dtype_row_bytes(dt, n, &row_bytes);
    unsigned char *A = malloc(m * row_bytes);
    float *x = malloc(n * sizeof *x), *ys = malloc(m * sizeof *ys), *yr = malloc(m * sizeof *yr);
    double *ref = malloc(m * sizeof *ref), *terms = malloc(m * sizeof *terms);
    CHECK(A && x && ys && yr && ref && terms, "out of memory");
    if (!A || !x || !ys || !yr || !ref || !terms)
        goto out;
    for (size_t r = 0; r < m; r++)
        conform_fill_row(&rng, dt, A + r * row_bytes, n, -1.0f, 1.0f);
    make_x(x, n, kind);
    rayo_status s1 = neon_gemv(ctx, dt, A, m, n, x, ys, RAYO_PRECISION_STRICT);
    rayo_status s2 = neon_gemv(ctx, dt, A, m, n, x, yr, RAYO_PRECISION_RELAXED);
    CHECK(s1 == RAYO_OK && s2 == RAYO_OK, "gemv %s: %s", rayo_dtype_name(dt), rayo_last_error());
    if (s1 != RAYO_OK || s2 != RAYO_OK)
        goto out;
    /* x that int8 cannot hold (or no dotprod): strict's kernels; ordinary
     * x of 2048 values or more: SDOT (shorter, or of the wide classes,
     * whichever the rounding budget picks: in a short x the largest values
     * weigh too much for int8) */
    int same = memcmp(ys, yr, m * sizeof *ys) == 0;
    if (!dotprod || kind >= X_INFINITE)
        CHECK(same, "gemv %s relaxed, %zu x %zu, x %s: differs from strict, where the float kernels should run",
              rayo_dtype_name(dt), m, n, x_kind_name[kind]);
    else if (kind == X_UNIFORM && n >= 2048)
        CHECK(!same, "gemv %s relaxed, %zu x %zu, x %s: strict's result bit for bit: SDOT did not run",
              rayo_dtype_name(dt), m, n, x_kind_name[kind]);
    ref_matrix ra = { dt, A, m, n, n };
    if (kind >= X_INFINITE || ref_gemv(0, &ra, x, 1.0, 0.0, NULL, ref, terms) != 0)
        goto out;
    for (size_t r = 0; r < m; r++)
        CHECK(fabs((double)yr[r] - ref[r]) <= 2e-3 * terms[r], "gemv %s relaxed, %zu x %zu, x %s: row %zu = %.9g, "
              "float64 %.9g, error over 2e-3 of sum |terms| %.9g", rayo_dtype_name(dt), m, n, x_kind_name[kind], r,
              (double)yr[r], ref[r], terms[r]);
out:
    free(A), free(x), free(ys), free(yr), free(ref), free(terms);
}

static void check_all(rayo_context *ctx, int dotprod)
{
    static const rayo_dtype dts[] = { RAYO_DTYPE_Q8_0, RAYO_DTYPE_Q4_0 };
    static const size_t rows[] = { 1, 3, 4, 5, 37 }, blocks[] = { 1, 2, 3, 9, 64, 129 };
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
            for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
                for (int k = 0; k < X_KINDS; k++)
                    if (!(k == X_TINY_BLOCK && blocks[b] < 2)) /* a tiny block beside ordinary ones */
                        check_case(ctx, dotprod, dts[d], rows[r], blocks[b], (x_kind)k);
}

int main(void)
{
    test_clear_rayo_env();
    conform_rng_seed(&rng, conform_default_seed());
    int dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
    printf("note: this CPU %s dotprod: %s\n", dotprod ? "has" : "lacks",
           dotprod ? "relaxed Q8_0 and Q4_0 take SDOT" : "relaxed runs the float kernels");
    static const char *const configs[] = { "[rayo]\nthreads = 1\n", "[rayo]\nthreads = 2\n" };
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        rayo_context *ctx;
        rayo_backend_info info = { .struct_size = sizeof(rayo_backend_info) };
        if (test_open(&ctx, configs[c]) != RAYO_OK) {
            printf("FAIL: rayo_open: %s\n", rayo_last_error());
            return 1;
        }
        if (test_backend(ctx, "neon", &info) != RAYO_OK || info.status != RAYO_BACKEND_LOADED) {
            printf("SKIP: neon does not load: %s\n", info.reason ? info.reason : "not built");
            rayo_close(ctx);
            return 77;
        }
        check_all(ctx, dotprod);
        rayo_close(ctx);
    }
    return test_summary();
}
