/* SPDX-License-Identifier: MIT */
/* test-x86-convert.c - convert on the avx2 and avx512 backends is exact:
 * bit for bit rayo-dtype.h on the values conformance does not reach.
 *
 *   f16 -> f32, bf16 -> f32   every one of the 65536 bit patterns (signalling
 *                             NaNs, which vcvtph2ps would quiet, included);
 *   f32 -> f16                every sign, exponent and kept mantissa, each
 *                             with the rounded-away bits at and around the
 *                             halfway points (ties to even), plus random
 *                             values in the f16 subnormal range;
 *   f32 -> bf16               the same with 16 bits rounded away;
 *   f32 -> Q8_0, Q4_0         blocks with ties after scaling, all zeros
 *                             (-0 first), subnormal maxima (1 / d = inf),
 *                             the largest magnitude twice with both signs,
 *                             3e38, NaN and inf;
 *   Q8_0, Q4_0, Q4_K, Q6_K    random bytes, scales included (NaN, inf,
 *   -> f32                    subnormal f16 scales among them).
 * Each with 1 and 2 threads and at an odd element offset.  A backend the
 * core does not load here is skipped with its reason; exit 77 when neither
 * loads.
 */
#include "testutil.h" /* first: it defines _GNU_SOURCE */
#include "test-rng.h"
#include "rayo-dtype.h"

#include <math.h>

static rayo_status convert_on(rayo_context *ctx, const char *backend, rayo_dtype from, rayo_dtype to,
                              const void *src, void *dst, size_t n)
{
    rayo_call c = { .struct_size = sizeof c, .op = RAYO_OP_CONVERT, .dtypes = RAYO_DTYPES(from, 0, 0, to),
                    .n = n, .a = src, .y = dst };
    return rayo_run_on(ctx, backend, &c);
}

/* Converts n values of src with the backend and compares the bytes with
 * want; one report per call. */
static void expect_bytes(rayo_context *ctx, const char *backend, const char *what, rayo_dtype from,
                         rayo_dtype to, const void *src, const unsigned char *want, size_t n)
{
    size_t bytes = 0;
    rayo_dtype_row_bytes(to, n, &bytes);
    unsigned char *got = malloc(bytes + 1);
    if (!got) {
        CHECK(got != NULL, "out of memory");
        return;
    }
    memset(got, 0xa5, bytes);
    rayo_status st = convert_on(ctx, backend, from, to, src, got, n);
    size_t at = 0;
    while (st == RAYO_OK && at < bytes && got[at] == want[at])
        at++;
    CHECK(st == RAYO_OK && at == bytes, "%s, %s: status %s; first difference at byte %zu of %zu (0x%02x, want 0x%02x)",
          backend, what, rayo_strerror(st), at, bytes, at < bytes ? got[at] : 0, at < bytes ? want[at] : 0);
    free(got);
}

static void check_halves_to_f32(rayo_context *ctx, const char *backend)
{
    uint16_t *h = malloc(65537 * sizeof *h);
    float *want = malloc(65537 * sizeof *want);
    if (!h || !want) {
        CHECK(0, "out of memory");
        goto done;
    }
    for (int brain = 0; brain < 2; brain++) {
        for (uint32_t i = 0; i < 65536; i++) {
            h[i + 1] = (uint16_t)i; /* h + 1: not 16-byte aligned */
            want[i] = brain ? rayo_bf16_to_f32((uint16_t)i) : rayo_f16_to_f32((uint16_t)i);
        }
        rayo_dtype dt = brain ? RAYO_DTYPE_BF16 : RAYO_DTYPE_F16;
        expect_bytes(ctx, backend, brain ? "bf16 -> f32, every pattern" : "f16 -> f32, every pattern", dt,
                     RAYO_DTYPE_F32, h + 1, (const unsigned char *)want, 65536);
    }
done:
    free(h);
    free(want);
}

/* Every top (32 - low_bits) bit pattern, each with these low bits. */
static void check_f32_to_half(rayo_context *ctx, const char *backend, int brain)
{
    unsigned low_bits = brain ? 16 : 13;
    uint32_t half = 1u << (low_bits - 1), mask = (1u << low_bits) - 1;
    const uint32_t lows[] = { 0, 1, half - 1, half, half + 1, mask, 0 /* random */ };
    size_t nl = sizeof lows / sizeof lows[0], tops = (size_t)1 << (32 - low_bits), n = tops * nl + (1 << 20);
    float *x = malloc((n + 1) * sizeof *x);
    uint16_t *want = malloc(n * sizeof *want);
    if (!x || !want) {
        CHECK(0, "out of memory");
        goto done;
    }
    size_t at = 0;
    for (size_t t = 0; t < tops; t++)
        for (size_t l = 0; l < nl; l++) {
            uint32_t low = l + 1 < nl ? lows[l] : (uint32_t)rng_next() & mask;
            x[at++] = rayo_f32_from_bits((uint32_t)(t << low_bits) | low);
        }
    while (at < n) { /* f16 subnormals and the values that round to them or to 0 */
        uint32_t exponent = 100 + (uint32_t)(rng_next() % 14);
        x[at++] = rayo_f32_from_bits((uint32_t)(rng_next() & 0x807fffffu) | exponent << 23);
    }
    for (size_t i = 0; i < n; i++)
        want[i] = brain ? rayo_f32_to_bf16(x[i]) : rayo_f32_to_f16(x[i]);
    expect_bytes(ctx, backend, brain ? "f32 -> bf16, rounding edges" : "f32 -> f16, rounding edges",
                 RAYO_DTYPE_F32, brain ? RAYO_DTYPE_BF16 : RAYO_DTYPE_F16, x, (const unsigned char *)want, n);
    /* An odd element offset and length (the vector loop's tail). */
    memmove(x + 1, x, 1001 * sizeof *x);
    expect_bytes(ctx, backend, "f32 -> half, odd offset", RAYO_DTYPE_F32, brain ? RAYO_DTYPE_BF16 : RAYO_DTYPE_F16,
                 x + 1, (const unsigned char *)want, 1001);
done:
    free(x);
    free(want);
}

/* Block b (32 values) of the quantizer test: one kind of edge per block. */
static void edge_block(size_t b, float *x)
{
    for (int j = 0; j < 32; j++)
        x[j] = (float)rng_uniform(-3, 3);
    switch (b % 10) {
    case 0: /* ties: amax 127 (d = 1) or -8 (Q4_0: d = 1), values k + 0.5 */
        x[0] = 127.0f;
        for (int j = 1; j < 32; j++)
            x[j] = (float)((int)(rng_next() % 20) - 10) + 0.5f;
        break;
    case 1:
        x[3] = -8.0f;
        for (int j = 4; j < 32; j++)
            x[j] = (float)((int)(rng_next() % 16) - 8) + 0.5f;
        break;
    case 2:
        for (int j = 0; j < 32; j++)
            x[j] = j == 0 ? -0.0f : 0.0f;
        break;
    case 3: /* subnormal: 1 / d overflows, 0 * (1 / d) is NaN */
        for (int j = 0; j < 32; j++)
            x[j] = j == 4 ? 0.0f : x[j] * 1e-39f;
        break;
    case 4: /* the largest magnitude thrice, the first one negative */
        for (int j = 0; j < 32; j++)
            x[j] = fabsf(x[j]) >= 2.5f ? 2.0f : x[j];
        x[5] = -2.5f, x[9] = 2.5f, x[20] = -2.5f;
        break;
    case 5: x[7] = 3e38f, x[8] = -3e38f; break;
    case 6: x[11] = NAN; break;
    case 7: x[2] = -INFINITY; break;
    default: break; /* plain random */
    }
}

static void check_quantize(rayo_context *ctx, const char *backend)
{
    size_t blocks = 400, n = 32 * blocks;
    float *x = malloc((n + 1) * sizeof *x);
    unsigned char *want = malloc(blocks * RAYO_Q8_0_BYTES);
    if (!x || !want) {
        CHECK(0, "out of memory");
        goto done;
    }
    for (size_t b = 0; b < blocks; b++)
        edge_block(b, x + 1 + 32 * b);
    rayo_quantize_q8_0(x + 1, want, n);
    expect_bytes(ctx, backend, "f32 -> Q8_0, edge blocks", RAYO_DTYPE_F32, RAYO_DTYPE_Q8_0, x + 1, want, n);
    rayo_quantize_q4_0(x + 1, want, n);
    expect_bytes(ctx, backend, "f32 -> Q4_0, edge blocks", RAYO_DTYPE_F32, RAYO_DTYPE_Q4_0, x + 1, want, n);
done:
    free(x);
    free(want);
}

static void check_dequantize(rayo_context *ctx, const char *backend)
{
    static const rayo_dtype formats[] = { RAYO_DTYPE_Q8_0, RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K };
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        rayo_dtype dt = formats[f];
        size_t n = 256 * 300, bytes = 0;
        rayo_dtype_row_bytes(dt, n, &bytes);
        unsigned char *q = malloc(bytes + 2);
        float *want = malloc(n * sizeof *want);
        if (!q || !want) {
            CHECK(0, "out of memory");
        } else {
            for (size_t i = 0; i < bytes; i++) /* q + 2: 2-byte aligned, as blocks may be */
                q[i + 2] = (unsigned char)rng_next();
            rayo_dequantize_row(dt, q + 2, want, n);
            char what[64];
            snprintf(what, sizeof what, "%s -> f32, random bytes", rayo_dtype_name(dt));
            expect_bytes(ctx, backend, what, dt, RAYO_DTYPE_F32, q + 2, (const unsigned char *)want, n);
        }
        free(q);
        free(want);
    }
}

int main(void)
{
    test_clear_rayo_env();
    rng_seed_from_env();
    static const char *const backends[] = { "avx2", "avx512" };
    static const char *const settings[] = { "[rayo]\nthreads = 1\n", "[rayo]\nthreads = 2\n" };
    int ran = 0;
    for (size_t s = 0; s < 2; s++) {
        rayo_context *ctx;
        if (test_open(&ctx, settings[s]) != RAYO_OK) {
            printf("FAIL: rayo_open: %s\n", rayo_last_error());
            return 1;
        }
        for (size_t b = 0; b < 2; b++) {
            rayo_backend_info info = { .struct_size = sizeof(rayo_backend_info) };
            if (test_backend(ctx, backends[b], &info) != RAYO_OK || info.status != RAYO_BACKEND_LOADED) {
                if (s == 0)
                    printf("skipped %s: %s\n", backends[b], info.reason ? info.reason : "not built");
                continue;
            }
            ran = 1;
            check_halves_to_f32(ctx, backends[b]);
            check_f32_to_half(ctx, backends[b], 0);
            check_f32_to_half(ctx, backends[b], 1);
            check_quantize(ctx, backends[b]);
            check_dequantize(ctx, backends[b]);
        }
        rayo_close(ctx);
    }
    if (!ran) {
        printf("SKIP: neither the avx2 nor the avx512 backend loads here\n");
        return 77;
    }
    return test_summary();
}
