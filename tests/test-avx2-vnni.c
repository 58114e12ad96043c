/* SPDX-License-Identifier: MIT */
/* test-avx2-vnni.c - avx2's relaxed int8 gemv gives the same results with
 * AVX-VNNI and without it.
 *
 * Two contexts open at once, one with [backend.avx2] vnni = auto (AVX-VNNI
 * where the CPU has it), one with vnni = off (AVX2's maddubs); each must
 * say at debug level which form it uses.  Relaxed gemv on random Q8_0,
 * Q4_0 and Q6_K weights, at row counts around the four-row kernels (1, 3,
 * 4, 5, 8, 11), rows of an even and an odd number of blocks, short and
 * long, dense and with a row stride, must give the same floats bit for bit in both
 * (the integer sums are exact in both forms) and lie within 2e-3 of sum
 * |terms| of the float64 reference (the relaxed contract, as
 * test-x86-typed.c).  x is made of multiples of 1/64 with 127/64 in every
 * block of 32, which int8 holds exactly (per 32 values or per 256), so the
 * int8 kernels run (not the int16 or per-32 ones that x failing the
 * rounding budget would take).  SKIP (77)
 * where avx2 does not load or the CPU lacks AVX-VNNI.
 */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include "conform.h"
#include "ref-infer.h"

#include <math.h>

static conform_rng rng;

static rayo_status open_with(rayo_context **ctx, test_context_log *log, const char *vnni)
{
    char settings[256];
    snprintf(settings, sizeof settings, "[rayo]\nlog = debug\nthreads = 1\n[backend.avx2]\nvnni = %s\n", vnni);
    return test_open_logged(ctx, log, settings);
}

/* x of n values, multiples of 1/64 in [-127/64, 127/64], +-127/64 in each
 * block of 32: int8 x with the scale 1/64 holds it exactly. */
static void fill_x(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int k = (int)(conform_rng_next(&rng) % 255) - 127;
        x[i] = (float)k / 64.0f;
    }
    for (size_t b = 0; b < n / 32; b++)
        x[32 * b + conform_rng_next(&rng) % 32] = conform_rng_next(&rng) % 2 ? 127.0f / 64.0f : -127.0f / 64.0f;
}

typedef struct gemv_case {
    rayo_dtype dt;
    size_t m, n, lda; /* lda 0: dense */
} gemv_case;

static rayo_status relaxed_gemv(rayo_context *ctx, const gemv_case *t, const void *A, const float *x, float *y)
{
    rayo_call call = { .struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV,
                       .dtypes = RAYO_DTYPES(t->dt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                       .m = t->m, .n = t->n, .lda = t->lda, .alpha = 1.0f, .a = A, .b = x, .y = y,
                       .precision = RAYO_PRECISION_RELAXED };
    return rayo_run_on(ctx, "avx2", &call);
}

static void check_case(rayo_context *vnni, rayo_context *off, const gemv_case *t)
{
    size_t ld = t->lda ? t->lda : t->n, row_bytes = 0;
    rayo_dtype_row_bytes(t->dt, ld, &row_bytes);
    unsigned char *A = malloc(t->m * row_bytes);
    float *x = malloc(t->n * sizeof *x), *y1 = malloc(t->m * sizeof *y1), *y2 = malloc(t->m * sizeof *y2);
    double *ref = malloc(t->m * sizeof *ref), *terms = malloc(t->m * sizeof *terms);
    CHECK(A && x && y1 && y2 && ref && terms, "out of memory");
    if (!A || !x || !y1 || !y2 || !ref || !terms)
        goto out;
    for (size_t r = 0; r < t->m; r++)
        conform_fill_row(&rng, t->dt, A + r * row_bytes, ld, -1.0f, 1.0f);
    fill_x(x, t->n);
    const char *dt = rayo_dtype_name(t->dt);
    CHECK(relaxed_gemv(vnni, t, A, x, y1) == RAYO_OK, "gemv %s (vnni): %s", dt, rayo_last_error());
    CHECK(relaxed_gemv(off, t, A, x, y2) == RAYO_OK, "gemv %s (off): %s", dt, rayo_last_error());
    ref_matrix ra = { t->dt, A, t->m, t->n, ld };
    CHECK(ref_gemv(0, &ra, x, 1.0, 0.0, NULL, ref, terms) == 0, "no reference for gemv %s", dt);
    for (size_t r = 0; r < t->m; r++) {
        CHECK(memcmp(&y1[r], &y2[r], sizeof(float)) == 0,
              "gemv %s m %zu n %zu lda %zu: y[%zu] = %.9g with AVX-VNNI, %.9g without", dt, t->m, t->n, t->lda, r,
              (double)y1[r], (double)y2[r]);
        double e = fabs((double)y1[r] - ref[r]) / (2e-3 * terms[r]);
        CHECK(e <= 1.0, "gemv %s m %zu n %zu: y[%zu] = %.9g, reference %.9g: %.3g of the contract", dt, t->m, t->n,
              r, (double)y1[r], ref[r], e);
    }
out:
    free(A), free(x), free(y1), free(y2), free(ref), free(terms);
}

static void check_all(rayo_context *vnni, rayo_context *off)
{
    static const rayo_dtype dts[] = { RAYO_DTYPE_Q8_0, RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q6_K };
    static const size_t ms[] = { 1, 3, 4, 5, 8, 11 };
    /* 4160: 130 blocks of 32, 2080 values a group; 2304: 9 blocks of 256 */
    static const size_t ns[] = { 32, 64, 96, 2048, 2304, 4160, 11008 };
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
            for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
                if (ns[j] % rayo_dtype_block_elems(dts[d]) == 0)
                    check_case(vnni, off, &(gemv_case){ dts[d], ms[i], ns[j], 0 });
        if (dts[d] != RAYO_DTYPE_Q6_K)
            check_case(vnni, off, &(gemv_case){ dts[d], 9, 96, 160 });
        check_case(vnni, off, &(gemv_case){ dts[d], 13, 4096, 4096 + 256 });
    }
}

int main(void)
{
    test_clear_rayo_env();
    uint64_t seed = conform_default_seed();
    conform_rng_seed(&rng, seed);
    printf("seed %llu (RAYO_CONFORM_SEED replays it)\n", (unsigned long long)seed);
    static test_context_log vnni_log, off_log;
    rayo_context *vnni = NULL, *off = NULL;
    if (open_with(&vnni, &vnni_log, "auto") != RAYO_OK || open_with(&off, &off_log, "off") != RAYO_OK) {
        printf("FAIL: rayo_open: %s\n", rayo_last_error());
        return 1;
    }
    int status = 77;
    if (!strstr(vnni_log.text, "avx2: relaxed int8 gemv"))
        printf("SKIP: avx2 does not load here (CPU, OS or build lacks it)\n");
    else if (strstr(vnni_log.text, "the CPU lacks it"))
        printf("SKIP: the CPU lacks AVX-VNNI: avx2 has only its maddubs gemv here\n");
    else {
        CHECK(strstr(vnni_log.text, "relaxed int8 gemv (Q8_0, Q4_0, Q6_K) and integer matmul: AVX-VNNI"), "vnni = auto: %s",
              vnni_log.text);
        CHECK(strstr(off_log.text, "not AVX-VNNI: vnni = off"), "vnni = off: %s", off_log.text);
        check_all(vnni, off);
        status = test_summary();
    }
    rayo_close(off);
    rayo_close(vnni);
    return status;
}
