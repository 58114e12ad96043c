/* SPDX-License-Identifier: MIT */
/* test-x86-typed.c - what rayo-conform's shapes do not reach in the avx2 and
 * avx512 kernels for half and quantized weights (plugins/cpu-base/
 * x86-typed-matmul.c, cpu-typed-gemv_tmpl.c):
 *   - matmul whose op(B) is dequantized in several panels (n wider than
 *     one panel at this k), with strided A, B and C, beta != 0, both
 *     orientations of half B, f16/bf16 A (converted once); judged against
 *     float64 with the strict contract;
 *   - gemv at relaxed precision whose x cannot be rounded to integers (a
 *     value that is not finite, a block of x below 1e-30): the strict path
 *     must run, bit for bit; and, so that those checks can fail, an
 *     ordinary x must take the integer path (results differ from strict);
 *   - gemv at relaxed precision within the relaxed contract (2e-3 of
 *     sum |terms| per row, float64 reference) for x of the classes where
 *     int8 x is at its limits: short rows, x spanning 1e-8..1e8, x with a
 *     few values 100 times the rest; and an ordinary long x must take the
 *     int8 path (an error above 2^-16 of sum |terms| on some row, which
 *     the int16 and strict paths never reach), and so must x with one
 *     value 8 times the rest in 256 for Q4_K and Q6_K (their int8 x with
 *     a scale per 32 values);
 *   - matmul of a few rows of A against B transposed (run as gemvs of B
 *     into several x's at once): each row of C equals the gemv of B with
 *     that row, bit for bit, at both precisions, whatever path each x takes.
 * Each backend that loads is checked, 1 and 2 threads; SKIP (77) where
 * neither loads.
 */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include "conform.h"
#include "ref-infer.h"

#include <math.h>

static conform_rng rng;

/* A random matrix of rows x cols (row stride ld elements) in dtype dt. */
static unsigned char *random_matrix(rayo_dtype dt, size_t rows, size_t cols, size_t ld)
{
    size_t row_bytes = 0;
    rayo_dtype_row_bytes(dt, ld, &row_bytes);
    unsigned char *p = malloc(rows * row_bytes + 1);
    for (size_t r = 0; p && r < rows; r++)
        conform_fill_row(&rng, dt, p + r * row_bytes, cols, -1.0f, 1.0f);
    return p;
}

typedef struct mm_case {
    rayo_dtype adt, bdt;
    unsigned flags;
    size_t m, n, k;
    size_t pad; /* extra elements (whole blocks) in every row stride; 0: dense */
    float beta;
} mm_case;

static void check_matmul(rayo_context *ctx, const char *backend, const mm_case *t)
{
    int ta = (t->flags & RAYO_TRANS_A) != 0, tb = (t->flags & RAYO_TRANS_B) != 0;
    size_t ar = ta ? t->k : t->m, ac = ta ? t->m : t->k, br = tb ? t->n : t->k, bc = tb ? t->k : t->n;
    size_t lda = t->pad ? ac + t->pad : 0, ldb = t->pad ? bc + t->pad : 0, ldy = t->pad ? t->n + t->pad : 0;
    size_t ldc = ldy ? ldy : t->n;
    unsigned char *A = random_matrix(t->adt, ar, ac, lda ? lda : ac);
    unsigned char *B = random_matrix(t->bdt, br, bc, ldb ? ldb : bc);
    float *C = malloc(t->m * ldc * sizeof *C);
    double *ref = malloc(t->m * t->n * sizeof *ref), *terms = malloc(t->m * t->n * sizeof *terms);
    if (!A || !B || !C || !ref || !terms) {
        CHECK(0, "out of memory");
        goto out;
    }
    conform_fill_uniform(&rng, C, t->m * ldc, -1.0, 1.0);
    ref_matrix ra = { t->adt, A, ar, ac, lda ? lda : ac }, rb = { t->bdt, B, br, bc, ldb ? ldb : bc };
    ref_matmul(t->flags, t->m, t->n, t->k, 1.0, &ra, &rb, t->beta, C, ldc, ref, terms);
    rayo_call call = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = t->flags,
                       .dtypes = RAYO_DTYPES(t->adt, t->bdt, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                       .m = t->m, .n = t->n, .k = t->k, .alpha = 1.0f, .beta = t->beta,
                       .a = A, .b = B, .y = C, .lda = lda, .ldb = ldb, .ldy = ldy,
                       .precision = RAYO_PRECISION_STRICT };
    rayo_status st = rayo_run_on(ctx, backend, &call);
    CHECK(st == RAYO_OK, "%s: matmul %s x %s: %s", backend, rayo_dtype_name(t->adt), rayo_dtype_name(t->bdt),
          rayo_last_error());
    const rayo_op_info *op = rayo_op_by_id(RAYO_OP_MATMUL);
    size_t bad = 0, first = 0;
    for (size_t i = 0; st == RAYO_OK && i < t->m * t->n; i++) {
        int pass;
        conform_judge(op, ref[i], terms[i], C[i / t->n * ldc + i % t->n], &pass);
        if (!pass && bad++ == 0)
            first = i;
    }
    CHECK(bad == 0, "%s: matmul %s x %s flags %u, %zu x %zu x %zu, pad %zu: %zu bad elements, first (%zu, %zu) "
          "= %g, want %g", backend, rayo_dtype_name(t->adt), rayo_dtype_name(t->bdt), t->flags, t->m, t->n, t->k,
          t->pad, bad, first / t->n, first % t->n, (double)C[first / t->n * ldc + first % t->n], ref[first]);
out:
    free(A), free(B), free(C), free(ref), free(terms);
}

/* gemv of A (m x n, dt) with x at both precisions into ys (strict) and yr
 * (relaxed); 0 if a call failed. */
static int gemv_both(rayo_context *ctx, const char *backend, rayo_dtype dt, const unsigned char *A, size_t m,
                     size_t n, const float *x, float *ys, float *yr)
{
    rayo_call call = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV,
                       .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                       .m = m, .n = n, .alpha = 1.0f, .a = A, .b = x, .y = ys,
                       .precision = RAYO_PRECISION_STRICT };
    rayo_status s1 = rayo_run_on(ctx, backend, &call);
    call.y = yr;
    call.precision = RAYO_PRECISION_RELAXED;
    rayo_status s2 = rayo_run_on(ctx, backend, &call);
    CHECK(s1 == RAYO_OK && s2 == RAYO_OK, "%s: gemv %s: %s", backend, rayo_dtype_name(dt), rayo_last_error());
    return s1 == RAYO_OK && s2 == RAYO_OK;
}

static void check_relaxed_fallback(rayo_context *ctx, const char *backend, rayo_dtype dt)
{
    enum { M = 9, N = 1024 };
    unsigned char *A = random_matrix(dt, M, N, N);
    float x[N], ys[M], yr[M];
    if (!A) {
        CHECK(0, "out of memory");
        return;
    }
    conform_fill_uniform(&rng, x, N, -1.0, 1.0);
    if (gemv_both(ctx, backend, dt, A, M, N, x, ys, yr))
        CHECK(memcmp(ys, yr, sizeof ys) != 0, "%s: gemv %s relaxed gave the strict result bit for bit: "
              "the integer path did not run", backend, rayo_dtype_name(dt));
    static const float odd[] = { INFINITY, -INFINITY, NAN };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        conform_fill_uniform(&rng, x, N, -1.0, 1.0);
        x[(i * 397) % N] = odd[i];
        if (gemv_both(ctx, backend, dt, A, M, N, x, ys, yr))
            CHECK(memcmp(ys, yr, sizeof ys) == 0, "%s: gemv %s relaxed with x[%zu] = %g differs from strict",
                  backend, rayo_dtype_name(dt), (i * 397) % N, (double)odd[i]);
    }
    conform_fill_uniform(&rng, x, N, -1.0, 1.0);
    for (size_t i = 256; i < 288; i++)
        x[i] = 1e-35f * (float)(i % 5);
    if (gemv_both(ctx, backend, dt, A, M, N, x, ys, yr))
        CHECK(memcmp(ys, yr, sizeof ys) == 0, "%s: gemv %s relaxed with a block of x near 1e-35 differs from "
              "strict", backend, rayo_dtype_name(dt));
    free(A);
}

typedef enum x_class { X_UNIFORM, X_DECADES, X_OUTLIERS, X_ONE_IN_256 } x_class;

static const char *const x_class_name[] = { "uniform in +-1", "spanning 1e-8..1e8", "with outliers x100",
                                            "with +-8 once in 256" };

static void fill_x(float *x, size_t n, x_class cls)
{
    conform_fill_uniform(&rng, x, n, -1.0, 1.0);
    for (size_t i = 0; i < n; i++) {
        if (cls == X_DECADES)
            x[i] = (x[i] < 0 ? -1.0f : 1.0f) * (float)pow(10.0, -8.0 + 16.0 * conform_rng_uniform(&rng));
        else if (cls == X_OUTLIERS && conform_rng_uniform(&rng) < 0.01)
            x[i] *= 100.0f;
        else if (cls == X_ONE_IN_256 && i % 256 == 100)
            x[i] = x[i] < 0 ? -8.0f : 8.0f;
    }
}

/* The largest error of a relaxed gemv (m x n) over 2e-3 of its row's
 * sum |terms|; -1 if a call failed. */
static double relaxed_error(rayo_context *ctx, const char *backend, rayo_dtype dt, size_t m, size_t n, x_class cls)
{
    unsigned char *A = random_matrix(dt, m, n, n);
    float *x = malloc(n * sizeof *x), *y = malloc(m * sizeof *y);
    double *ref = malloc(m * sizeof *ref), *terms = malloc(m * sizeof *terms), worst = -1.0;
    if (!A || !x || !y || !ref || !terms) {
        CHECK(0, "out of memory");
        goto out;
    }
    fill_x(x, n, cls);
    rayo_call call = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV,
                       .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                       .m = m, .n = n, .alpha = 1.0f, .a = A, .b = x, .y = y,
                       .precision = RAYO_PRECISION_RELAXED };
    rayo_status st = rayo_run_on(ctx, backend, &call);
    CHECK(st == RAYO_OK, "%s: gemv %s: %s", backend, rayo_dtype_name(dt), rayo_last_error());
    ref_matrix ra = { dt, A, m, n, n };
    if (st != RAYO_OK || ref_gemv(0, &ra, x, 1.0, 0.0, NULL, ref, terms) != 0)
        goto out;
    worst = 0.0;
    for (size_t r = 0; r < m; r++) {
        double e = fabs((double)y[r] - ref[r]) / (2e-3 * terms[r]);
        worst = e > worst ? e : worst;
    }
out:
    free(A), free(x), free(y), free(ref), free(terms);
    return worst;
}

static void check_relaxed_accuracy(rayo_context *ctx, const char *backend, rayo_dtype dt)
{
    static const size_t sizes[] = { 32, 64, 256, 288, 1024, 4096, 4128, 16384 }; /* 4128: 129 blocks */
    size_t block = rayo_dtype_block_elems(dt);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int cls = X_UNIFORM; cls <= X_ONE_IN_256; cls++) {
            if (sizes[i] % block)
                continue;
            size_t m = sizes[i] <= 1024 ? 257 : 13;
            double e = relaxed_error(ctx, backend, dt, m, sizes[i], (x_class)cls);
            CHECK(e >= 0.0 && e <= 1.0, "%s: gemv %s relaxed, n = %zu, x %s: error %.3g of the contract",
                  backend, rayo_dtype_name(dt), sizes[i], x_class_name[cls], e);
        }
    /* 2^-16 of sum |terms| is 1/131 of the contract */
    double e = relaxed_error(ctx, backend, dt, 64, 4096, X_UNIFORM);
    CHECK(e > 1.0 / 131.0, "%s: gemv %s relaxed, n = 4096, ordinary x: error %.3g of the contract, as "
          "small as 16-bit x gives: the int8 path did not run", backend, rayo_dtype_name(dt), e);
    /* One value of 8 in 256 fails the budget of one x scale per 256 values
     * (its rounding error, sqrt(4096 / 12) 8 / 127 ~ 1.2, is over 0.64) and
     * passes that of a scale per 32 (~0.46): the K formats' int8 x per 32. */
    if (block == RAYO_QK_K) {
        e = relaxed_error(ctx, backend, dt, 64, 4096, X_ONE_IN_256);
        CHECK(e > 1.0 / 131.0, "%s: gemv %s relaxed, n = 4096, x with +-8 once in 256: error %.3g of the "
              "contract, as small as the strict path gives: int8 x per 32 did not run", backend,
              rayo_dtype_name(dt), e);
    }
}

/* A few rows of A against B transposed (a short prompt's products), which
 * the plugins run as gemvs of B into several x's at once (x86-typed-
 * matmul.c): each row of C must be the gemv of B with that row of A, bit
 * for bit, whichever path its x takes (int8, int16 or strict: with mixed,
 * row 1 holds outliers, row 2 a NaN, row 3 a block near 1e-35).  Relaxed
 * calls of up to 4-12 rows (by dtype and plugin: gemv_rows_max) with k >=
 * 1024 and strict calls of up to 20 rows (two calls of the gemvs past 16)
 * take that path; strided A and C, beta != 0.  mixed 0: every row
 * ordinary (every x then takes the int8 path together); mixed 2: every
 * row with +-8 once in 256 (Q4_K and Q6_K: every x in int8 per 32 values
 * at n = 2304). */
static void check_rows_as_gemvs(rayo_context *ctx, const char *backend, rayo_dtype dt, size_t m, size_t k,
                                rayo_precision p, int mixed)
{
    enum { N = 37, PAD = 64 };
    size_t lda = k + PAD, ldc = N + 3;
    unsigned char *B = random_matrix(dt, N, k, k);
    float *A = malloc(m * lda * sizeof *A), *C = malloc(m * ldc * sizeof *C), *y = malloc(N * sizeof *y);
    float *before = malloc(m * ldc * sizeof *before);
    if (!A || !B || !C || !y || !before) {
        CHECK(0, "out of memory");
        goto out;
    }
    for (size_t r = 0; r < m; r++)
        fill_x(A + r * lda, k, mixed == 2 ? X_ONE_IN_256 : mixed && r == 1 ? X_OUTLIERS : X_UNIFORM);
    if (mixed == 1 && m > 2)
        A[2 * lda + k / 2] = NAN;
    for (size_t i = 0; mixed == 1 && m > 3 && i < 32; i++)
        A[3 * lda + 32 + i] = 1e-35f * (float)(i % 5);
    conform_fill_uniform(&rng, C, m * ldc, -1.0, 1.0);
    rayo_call mm = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = RAYO_TRANS_B,
                     .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, dt, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                     .m = m, .n = N, .k = k, .alpha = 0.75f, .beta = 0.5f, .a = A, .b = B, .y = C,
                     .lda = lda, .ldy = ldc, .precision = (uint32_t)p };
    memcpy(before, C, m * ldc * sizeof *C);
    rayo_status st = rayo_run_on(ctx, backend, &mm);
    CHECK(st == RAYO_OK, "%s: matmul f32 x %s: %s", backend, rayo_dtype_name(dt), rayo_last_error());
    for (size_t r = 0; st == RAYO_OK && r < m; r++) {
        memcpy(y, before + r * ldc, N * sizeof *y);
        rayo_call gemv = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV,
                           .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                           .m = N, .n = k, .alpha = 0.75f, .beta = 0.5f, .a = B, .b = A + r * lda, .y = y,
                           .precision = (uint32_t)p };
        if (rayo_run_on(ctx, backend, &gemv) != RAYO_OK) {
            CHECK(0, "%s: gemv %s: %s", backend, rayo_dtype_name(dt), rayo_last_error());
            break;
        }
        CHECK(memcmp(y, C + r * ldc, N * sizeof *y) == 0, "%s: %s matmul f32 x %s, %zu x %d x %zu: row %zu "
              "differs from the gemv of that row", backend, p == RAYO_PRECISION_STRICT ? "strict" : "relaxed",
              rayo_dtype_name(dt), m, N, k, r);
    }
out:
    free(A), free(B), free(C), free(y), free(before);
}

static void run_all(rayo_context *ctx, const char *backend)
{
    static const mm_case cases[] = {
        /* k = 16384: 256 columns per panel, so n = 300 takes two */
        { RAYO_DTYPE_F32, RAYO_DTYPE_Q8_0, RAYO_TRANS_B, 3, 300, 16384, 0, 0.0f },
        { RAYO_DTYPE_F32, RAYO_DTYPE_Q4_K, RAYO_TRANS_B, 2, 300, 16384, 256, 0.5f },
        { RAYO_DTYPE_F32, RAYO_DTYPE_F16, RAYO_TRANS_A | RAYO_TRANS_B, 3, 300, 16384, 3, 0.0f },
        { RAYO_DTYPE_F16, RAYO_DTYPE_F16, 0, 2, 300, 16384, 0, 1.0f },
        { RAYO_DTYPE_BF16, RAYO_DTYPE_BF16, RAYO_TRANS_A, 2, 513, 16384, 5, 0.5f },
        /* one panel: C written in place, and an odd k for the halves' tails */
        { RAYO_DTYPE_BF16, RAYO_DTYPE_BF16, RAYO_TRANS_B, 33, 17, 1001, 0, 0.0f },
        { RAYO_DTYPE_F32, RAYO_DTYPE_Q6_K, RAYO_TRANS_B, 64, 48, 512, 0, 0.25f },
        { RAYO_DTYPE_F32, RAYO_DTYPE_Q4_0, RAYO_TRANS_B, 1, 40, 256, 32, 0.0f },
        /* k == 0: C = beta C, strided */
        { RAYO_DTYPE_F16, RAYO_DTYPE_F16, 0, 5, 7, 0, 3, 0.5f },
        { RAYO_DTYPE_F32, RAYO_DTYPE_Q8_0, RAYO_TRANS_B, 5, 7, 0, 32, 0.0f },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_matmul(ctx, backend, &cases[i]);
    static const rayo_dtype quantized[] = { RAYO_DTYPE_Q8_0, RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K };
    for (size_t i = 0; i < sizeof quantized / sizeof quantized[0]; i++)
        check_relaxed_fallback(ctx, backend, quantized[i]);
    for (size_t i = 0; i < sizeof quantized / sizeof quantized[0]; i++)
        check_relaxed_accuracy(ctx, backend, quantized[i]);
    static const rayo_dtype typed[] = { RAYO_DTYPE_Q8_0, RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K,
                                        RAYO_DTYPE_Q6_K, RAYO_DTYPE_F16, RAYO_DTYPE_BF16 };
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        size_t k = rayo_dtype_is_block(typed[i]) ? 1024 : 1001;
        /* all rows ordinary: the kernels that decode a block once for
         * several x's run where the plugin has them (k = 1056: an odd block) */
        for (size_t m = 2; m <= 5 && rayo_dtype_is_block(typed[i]); m++) {
            check_rows_as_gemvs(ctx, backend, typed[i], m, k, RAYO_PRECISION_RELAXED, 0);
            if (typed[i] == RAYO_DTYPE_Q8_0 || typed[i] == RAYO_DTYPE_Q4_0)
                check_rows_as_gemvs(ctx, backend, typed[i], m, 1056, RAYO_PRECISION_RELAXED, 0);
            /* K formats: nine super-blocks, a group of eight in float and one more */
            int k_format = typed[i] == RAYO_DTYPE_Q4_K || typed[i] == RAYO_DTYPE_Q6_K;
            for (int mixed = 0; k_format && mixed <= 2; mixed += 2)
                check_rows_as_gemvs(ctx, backend, typed[i], m, 2304, RAYO_PRECISION_RELAXED, mixed);
        }
        for (size_t m = 1; m <= 4 && rayo_dtype_is_block(typed[i]); m++)
            check_rows_as_gemvs(ctx, backend, typed[i], m, k, RAYO_PRECISION_RELAXED, 1);
        static const size_t strict_rows[] = { 1, 4, 5, 16, 17, 20 };
        for (size_t j = 0; j < sizeof strict_rows / sizeof strict_rows[0]; j++)
            check_rows_as_gemvs(ctx, backend, typed[i], strict_rows[j], k, RAYO_PRECISION_STRICT, 1);
    }
}

int main(void)
{
    test_clear_rayo_env();
    conform_rng_seed(&rng, conform_default_seed());
    return test_x86_main(run_all);
}
