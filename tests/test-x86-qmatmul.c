/* SPDX-License-Identifier: MIT */
/* test-x86-qmatmul.c - the integer matmul of quantized weights at relaxed
 * precision in the avx2 and avx512 plugins (plugins/cpu-base/x86-qmatmul.c):
 *   - Q4_0, Q8_0, Q4_K and Q6_K weights against float64 with the relaxed contract, every
 *     element, on fresh random operands (Q8_0: every other row's codes
 *     over all bytes, -128 included): row counts around its tiles of 4
 *     and 8 rows (1..5, 7..9, 17, 37), column counts around its panels of
 *     8 and 16 columns (1, 7..9, 15..17, 33, 100),
 *     k from the path's shortest (1024) to 5632, dense and strided A, B, C,
 *     alpha != 1, beta != 0 (C read) and beta == 0 (C poisoned, never read);
 *   - A whose 8-bit rounding cannot meet the contract: values spanning
 *     1e-8..1e8 (random decades and signs), and 1% outliers 30-300 times
 *     the rest; every element against float64 as above (the rows that
 *     fail the path's error budget must take the f32 path);
 *   - that the path ran: the relaxed result differs from the strict one;
 *   - that it stands aside where it must: k below 1024 gives the strict
 *     result bit for bit; a row of A with an infinity or a NaN gives that
 *     row's strict result bit for bit, the other rows judged as above.
 * The worst error in units of the contract is printed.  Each backend that
 * loads, 1 and 2 threads; SKIP (77) where neither loads.
 */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include "conform.h"
#include "ref-infer.h"

#include <math.h>

static conform_rng rng;
static double worst; /* largest error seen, in units of the contract */

typedef struct qcase {
    rayo_dtype bdt;
    size_t m, n, k;
    size_t pad; /* extra elements (whole blocks for B) in every row stride; 0: dense */
    float alpha, beta;
} qcase;

/* What A holds. */
typedef enum a_kind { A_UNIFORM, A_DECADES, A_OUTLIERS } a_kind;

typedef struct operands {
    float *A, *C;
    unsigned char *B;
    size_t lda, ldb, ldc;
} operands;

/* n values of A: uniform in [-1, 1], plus for A_DECADES a random power of
 * ten from 1e-8 to 1e8 each, for A_OUTLIERS 1% of them times 30..300. */
static void fill_a(float *x, size_t n, a_kind kind)
{
    conform_fill_uniform(&rng, x, n, -1.0, 1.0);
    for (size_t i = 0; i < n; i++) {
        if (kind == A_DECADES)
            x[i] *= (float)pow(10.0, -8.0 + 16.0 * conform_rng_uniform(&rng));
        else if (kind == A_OUTLIERS && conform_rng_uniform(&rng) < 0.01)
            x[i] *= (float)(30.0 + 270.0 * conform_rng_uniform(&rng));
    }
}

/* Every code of a Q8_0 row random over all bytes, -128 first in each
 * block: the extremes of the signed 8-bit products (a quantizer gives
 * -127..127 only). */
static void full_range_q8_0(unsigned char *row, size_t k)
{
    for (size_t b = 0; b < k / 32; b++) {
        unsigned char *codes = row + b * RAYO_Q8_0_BYTES + 2;
        for (int i = 0; i < 32; i++)
            codes[i] = i ? (unsigned char)(256.0 * conform_rng_uniform(&rng)) : 0x80;
    }
}

static int make_operands(const qcase *t, a_kind kind, operands *o)
{
    o->lda = t->k + t->pad, o->ldb = t->k + (t->pad ? 256 : 0), o->ldc = t->n + t->pad;
    size_t row_bytes = 0;
    rayo_dtype_row_bytes(t->bdt, o->ldb, &row_bytes);
    o->A = malloc(t->m * o->lda * sizeof *o->A + 1);
    o->B = malloc(t->n * row_bytes + 1);
    o->C = malloc(t->m * o->ldc * sizeof *o->C + 1);
    if (!o->A || !o->B || !o->C)
        return 0;
    fill_a(o->A, t->m * o->lda, kind);
    for (size_t r = 0; r < t->n; r++) {
        conform_fill_row(&rng, t->bdt, o->B + r * row_bytes, t->k, -1.0f, 1.0f);
        if (t->bdt == RAYO_DTYPE_Q8_0 && r % 2)
            full_range_q8_0(o->B + r * row_bytes, t->k);
    }
    if (t->beta != 0.0f)
        conform_fill_uniform(&rng, o->C, t->m * o->ldc, -1.0, 1.0);
    else
        for (size_t i = 0; i < t->m * o->ldc; i++)
            o->C[i] = NAN; /* beta == 0 must not read C */
    return 1;
}

static rayo_call call_of(const qcase *t, const operands *o, float *C, rayo_precision p)
{
    return (rayo_call){ .struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = RAYO_TRANS_B,
                        .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, t->bdt, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                        .m = t->m, .n = t->n, .k = t->k, .alpha = t->alpha, .beta = t->beta,
                        .a = o->A, .b = o->B, .y = C, .lda = t->pad ? o->lda : 0,
                        .ldb = t->pad ? o->ldb : 0, .ldy = t->pad ? o->ldc : 0, .precision = (uint32_t)p };
}

/* Every element of C against float64 with the relaxed contract. */
static void judge(const char *backend, const qcase *t, const operands *o, const float *C)
{
    double *ref = malloc(t->m * t->n * sizeof *ref), *terms = malloc(t->m * t->n * sizeof *terms);
    if (!ref || !terms) {
        CHECK(0, "out of memory");
        free(ref), free(terms);
        return;
    }
    ref_matrix ra = { RAYO_DTYPE_F32, o->A, t->m, t->k, o->lda }, rb = { t->bdt, o->B, t->n, t->k, o->ldb };
    ref_matmul(RAYO_TRANS_B, t->m, t->n, t->k, t->alpha, &ra, &rb, t->beta, o->C, o->ldc, ref, terms);
    rayo_op_info contract = *rayo_op_by_id(RAYO_OP_MATMUL);
    const rayo_combo_info *combo = rayo_op_combo_find(RAYO_OP_MATMUL, call_of(t, o, NULL, 0).dtypes);
    contract.tol_rel = combo->relaxed_rel, contract.tol_abs = combo->relaxed_abs;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < t->m * t->n; i++) {
        int pass;
        double err = conform_judge(&contract, ref[i], terms[i], C[i / t->n * o->ldc + i % t->n], &pass);
        worst = err > worst ? err : worst;
        if (!pass && bad++ == 0)
            first = i;
    }
    CHECK(bad == 0, "%s: relaxed matmul f32 x %s, %zu x %zu x %zu, pad %zu: %zu elements out of contract, "
          "first (%zu, %zu) = %g, want %g", backend, rayo_dtype_name(t->bdt), t->m, t->n, t->k, t->pad, bad,
          first / t->n, first % t->n, (double)C[first / t->n * o->ldc + first % t->n], ref[first]);
    free(ref), free(terms);
}

/* What a case expects of the integer path. */
typedef enum expect { INTEGER, NOT_FINITE_A, STANDS_ASIDE, WITHIN_CONTRACT } expect;

/* Row r of the relaxed C equals the strict one bit for bit. */
static int same_row(const qcase *t, const float *relaxed, const float *strict, size_t r)
{
    size_t ldc = t->n + t->pad;
    return memcmp(relaxed + r * ldc, strict + r * ldc, t->n * sizeof(float)) == 0;
}

/* Runs the case at relaxed and at strict precision.  INTEGER: the relaxed
 * result is judged, and must differ from the strict one (A was rounded);
 * WITHIN_CONTRACT: judged only (A_DECADES, A_OUTLIERS: rows may take the
 * f32 path); NOT_FINITE_A puts an infinity or a NaN into row m / 2 of A:
 * that row must be the strict one bit for bit, every element is judged;
 * STANDS_ASIDE: the two must be equal bit for bit. */
static void check(rayo_context *ctx, const char *backend, const qcase *t, a_kind kind, expect e)
{
    operands o = { NULL, NULL, NULL, 0, 0, 0 };
    float *before = NULL, *strict = NULL;
    size_t c_bytes = t->m * (t->n + t->pad) * sizeof(float);
    if (!make_operands(t, kind, &o) || !(before = malloc(c_bytes)) || !(strict = malloc(c_bytes))) {
        CHECK(0, "out of memory");
        goto out;
    }
    if (e == NOT_FINITE_A)
        o.A[t->m / 2 * o.lda + t->k / 3] = t->m % 2 ? INFINITY : NAN;
    memcpy(before, o.C, c_bytes);
    memcpy(strict, o.C, c_bytes);
    rayo_call relaxed = call_of(t, &o, o.C, RAYO_PRECISION_RELAXED);
    rayo_call exact = call_of(t, &o, strict, RAYO_PRECISION_STRICT);
    rayo_status s1 = rayo_run_on(ctx, backend, &relaxed), s2 = rayo_run_on(ctx, backend, &exact);
    CHECK(s1 == RAYO_OK && s2 == RAYO_OK, "%s: matmul %s: %s", backend, rayo_dtype_name(t->bdt), rayo_last_error());
    if (s1 != RAYO_OK || s2 != RAYO_OK)
        goto out;
    int same = memcmp(o.C, strict, c_bytes) == 0;
    if (e != STANDS_ASIDE) {
        operands as_before = o;
        as_before.C = before; /* the reference reads C as it was before the call */
        judge(backend, t, &as_before, o.C);
    }
    if (e == INTEGER)
        CHECK(!same, "%s: relaxed matmul %s %zu x %zu x %zu gave the strict result bit for bit: the integer "
              "path did not run", backend, rayo_dtype_name(t->bdt), t->m, t->n, t->k);
    if (e == NOT_FINITE_A)
        CHECK(same_row(t, o.C, strict, t->m / 2), "%s: relaxed matmul %s %zu x %zu x %zu: the row of A with an "
              "infinity or a NaN differs from the strict result", backend, rayo_dtype_name(t->bdt), t->m, t->n, t->k);
    if (e == STANDS_ASIDE) {
        CHECK(same, "%s: relaxed matmul %s %zu x %zu x %zu, which the integer path must leave to the strict "
              "one, differs from strict", backend, rayo_dtype_name(t->bdt), t->m, t->n, t->k);
    }
out:
    free(o.A), free(o.B), free(o.C), free(before), free(strict);
}

static void run_all(rayo_context *ctx, const char *backend)
{
    static const size_t rows[] = { 1, 2, 3, 4, 5, 7, 8, 9, 17, 37 };
    static const size_t cols[] = { 1, 7, 8, 9, 15, 16, 17, 33, 100 };
    static const size_t k4_0[] = { 1024, 1056, 2048, 4128, 5632 };
    static const float ab[][2] = { { 1.0f, 0.0f }, { -0.75f, 0.5f }, { 2.5f, 0.0f } };
    size_t serial = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (size_t j = 0; j < sizeof cols / sizeof cols[0]; j++, serial++) {
            const float *x = ab[serial % 3];
            qcase t0 = { RAYO_DTYPE_Q4_0, rows[i], cols[j], k4_0[serial % 5], serial % 3 ? 0 : 32, x[0], x[1] };
            check(ctx, backend, &t0, A_UNIFORM, INTEGER);
            qcase t8 = { RAYO_DTYPE_Q8_0, rows[i], cols[j], k4_0[(serial + 2) % 5], serial % 4 ? 0 : 64, x[0], x[1] };
            check(ctx, backend, &t8, A_UNIFORM, INTEGER);
            qcase tk = { RAYO_DTYPE_Q4_K, rows[i], cols[j], 256 * (4 + serial % 4), serial % 2 ? 0 : 7, x[0], x[1] };
            check(ctx, backend, &tk, A_UNIFORM, INTEGER);
            qcase t6 = { RAYO_DTYPE_Q6_K, rows[i], cols[j], 256 * (4 + (serial + 1) % 5), serial % 3 ? 0 : 5, x[1] == 0.0f ? x[0] : -x[0], x[1] };
            check(ctx, backend, &t6, A_UNIFORM, INTEGER);
            if (serial % 4 == 0) { /* the hard classes of A, on a quarter of the shapes */
                check(ctx, backend, &t0, A_DECADES, WITHIN_CONTRACT);
                check(ctx, backend, &tk, A_OUTLIERS, WITHIN_CONTRACT);
                check(ctx, backend, &t8, serial % 8 ? A_DECADES : A_OUTLIERS, WITHIN_CONTRACT);
                check(ctx, backend, &t6, serial % 8 ? A_OUTLIERS : A_DECADES, WITHIN_CONTRACT);
            }
        }
    static const qcase not_finite[] = {
        { RAYO_DTYPE_Q4_0, 5, 9, 1024, 0, 1.0f, 0.0f }, { RAYO_DTYPE_Q4_K, 6, 17, 512, 32, 1.0f, 0.5f },
        { RAYO_DTYPE_Q8_0, 3, 12, 2048, 0, 1.0f, 0.0f }, { RAYO_DTYPE_Q6_K, 7, 10, 1280, 0, 1.0f, 0.25f },
    };
    for (size_t i = 0; i < sizeof not_finite / sizeof not_finite[0]; i++)
        check(ctx, backend, &not_finite[i], A_UNIFORM, NOT_FINITE_A);
    static const qcase short_k[] = {
        { RAYO_DTYPE_Q4_0, 7, 9, 992, 0, 1.0f, 0.0f }, { RAYO_DTYPE_Q4_K, 4, 8, 768, 0, 1.0f, 0.0f },
        { RAYO_DTYPE_Q8_0, 5, 3, 64, 0, 1.0f, 0.0f }, { RAYO_DTYPE_Q6_K, 6, 9, 768, 0, 1.0f, 0.0f },
    };
    for (size_t i = 0; i < sizeof short_k / sizeof short_k[0]; i++)
        check(ctx, backend, &short_k[i], A_UNIFORM, STANDS_ASIDE);
    printf("%s: worst relaxed error %.3g of the contract\n", backend, worst);
    worst = 0;
}

int main(void)
{
    test_clear_rayo_env();
    conform_rng_seed(&rng, conform_default_seed());
    return test_x86_main(run_all);
}
