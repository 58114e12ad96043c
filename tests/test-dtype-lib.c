/* SPDX-License-Identifier: MIT */
/* test-dtype-lib.c - the dtype functions only librayo has: the Q4_K and
 * Q6_K quantizers (quantize then dequantize, every value within the bound
 * rayo.h documents of its float64 input, on fresh random blocks of several
 * hard classes and sizes, at unaligned destinations), and the checked row
 * conversions rayo_dtype_from_f32 / rayo_dtype_to_f32 (each dtype's codec,
 * f16/bf16 within half a unit in the last place, and a clear status and
 * message for every bad argument), and rayo_dtype_by_name. */
#include "testutil.h" /* first: it sets _GNU_SOURCE */
#include "rayo.h"
#include <math.h>
#include "test-rng.h"

/* ---- input classes: what makes a min/max quantizer's life hard ---- */
enum { CLASS_UNIFORM, CLASS_SUBBLOCK_MAGNITUDES, CLASS_POSITIVE, CLASS_NEGATIVE, CLASS_ZERO,
       CLASS_CONSTANT, CLASS_SPIKE, CLASS_TINY, CLASS_LARGE, CLASS_COUNT };
static const char *const class_names[CLASS_COUNT] = {
    "uniform", "sub-block magnitudes", "positive", "negative", "zero", "constant", "spike",
    "tiny", "large"};

/* Value i of a block of class c; large is the class's magnitude. */
static float class_value(int c, int i, float constant, double large)
{
    double u = rng_uniform(-1, 1);
    switch (c) {
    case CLASS_SUBBLOCK_MAGNITUDES: return (float)(u * pow(10.0, (i / 16) % 8 - 4));
    case CLASS_POSITIVE: return (float)fabs(u);
    case CLASS_NEGATIVE: return (float)-fabs(u);
    case CLASS_ZERO: return 0.0f;
    case CLASS_CONSTANT: return constant;
    case CLASS_SPIKE: return i == 77 ? constant : 0.0f;
    case CLASS_TINY: return (float)(u * 1e-7);
    case CLASS_LARGE: return (float)(u * large);
    default: return (float)u;
    }
}

static void fill(float *x, size_t n, int c, double large)
{
    float constant = (float)rng_uniform(-5, 5);
    for (size_t i = 0; i < n; i++)
        x[i] = class_value(c, (int)(i % 256), constant, large);
}

/* The bound of rayo.h: rel * A + 2^-19 per block of 256, A = max |x|. */
static int count_outside_bound(const float *x, const float *y, size_t n, double rel)
{
    int bad = 0;
    for (size_t b = 0; b < n / 256; b++) {
        double amax = 0;
        for (int i = 0; i < 256; i++)
            if (fabs(x[256 * b + i]) > amax)
                amax = fabs(x[256 * b + i]);
        double bound = rel * amax + ldexp(1.0, -19);
        for (int i = 0; i < 256; i++)
            bad += !(fabs((double)y[256 * b + i] - x[256 * b + i]) <= bound);
    }
    return bad;
}

/* Quantize then dequantize n values of class c into a destination one byte
 * past an aligned one. */
static void round_trip_case(rayo_dtype dt, size_t n, int c)
{
    double rel = dt == RAYO_DTYPE_Q4_K ? 0.1 : 0.021, large = dt == RAYO_DTYPE_Q4_K ? 3e6 : 2e8;
    size_t bytes = 0;
    rayo_dtype_row_bytes(dt, n, &bytes);
    float *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
    uint8_t *q = malloc(bytes + 1);
    fill(x, n, c, large);
    rayo_status s1 = rayo_dtype_from_f32(dt, x, q + 1, n);
    rayo_status s2 = rayo_dtype_to_f32(dt, q + 1, y, n);
    int bad = count_outside_bound(x, y, n, rel);
    CHECK(s1 == RAYO_OK && s2 == RAYO_OK && bad == 0, "%s n=%zu %s: status %d/%d, %d values "
        "outside %g A + 2^-19", rayo_dtype_name(dt), n, class_names[c], s1, s2, bad, rel);
    free(x);
    free(y);
    free(q);
}

static void test_k_round_trips(void)
{
    static const size_t sizes[] = {0, 256, 512, 256 * 7, 256 * 64};
    for (int c = 0; c < CLASS_COUNT; c++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            round_trip_case(RAYO_DTYPE_Q4_K, sizes[s], c);
            round_trip_case(RAYO_DTYPE_Q6_K, sizes[s], c);
        }
}

/* The direct quantizers write the same blocks as the row conversion. */
static void test_k_direct(void)
{
    enum { N = 512 };
    float x[N];
    uint8_t a[2 * RAYO_Q4_K_BYTES], b[2 * RAYO_Q6_K_BYTES], ra[sizeof a], rb[sizeof b];
    fill(x, N, CLASS_UNIFORM, 0);
    rayo_quantize_q4_k(x, a, N);
    rayo_quantize_q6_k(x, b, N);
    rayo_dtype_from_f32(RAYO_DTYPE_Q4_K, x, ra, N);
    rayo_dtype_from_f32(RAYO_DTYPE_Q6_K, x, rb, N);
    CHECK(memcmp(a, ra, sizeof a) == 0 && memcmp(b, rb, sizeof b) == 0,
        "rayo_quantize_q4_k/q6_k differ from rayo_dtype_from_f32");
}

/* f16 and bf16 through the row conversions: each value comes back within
 * half a unit in the last place (mant stored bits, smallest normal
 * exponent emin) and converting it again
 * changes nothing. */
static void half_case(rayo_dtype dt, int mant, int emin)
{
    enum { N = 1001 };
    static float x[N], y[N], z[N];
    static uint16_t h[N + 1];
    for (int i = 0; i < N; i++)
        x[i] = (float)(rng_uniform(-1, 1) * pow(2.0, rng_uniform(-12, 15)));
    int bad = 0;
    rayo_status st = rayo_dtype_from_f32(dt, x, h + 1, N); /* 2-byte aligned only */
    st |= rayo_dtype_to_f32(dt, h + 1, y, N);
    st |= rayo_dtype_from_f32(dt, y, h, N);
    st |= rayo_dtype_to_f32(dt, h, z, N);
    for (int i = 0; i < N; i++) {
        int e;
        frexp(x[i], &e);
        double half_ulp = ldexp(1.0, (e - 1 < emin ? emin : e - 1) - mant - 1);
        bad += !(fabs((double)y[i] - x[i]) <= half_ulp) || y[i] != z[i];
    }
    CHECK(st == RAYO_OK && bad == 0, "%s: status %d, %d values not rounded to nearest",
        rayo_dtype_name(dt), st, bad);
}

/* Q8_0 and Q4_0 rows go through the same codecs as rayo-dtype.h's. */
static void test_legacy_blocks(void)
{
    enum { N = 96 };
    float x[N], y[N], want[N];
    uint8_t q[3 * RAYO_Q8_0_BYTES], ref[sizeof q];
    fill(x, N, CLASS_UNIFORM, 0);
    rayo_quantize_q8_0(x, ref, N);
    rayo_dequantize_q8_0(ref, want, N);
    rayo_status st = rayo_dtype_from_f32(RAYO_DTYPE_Q8_0, x, q, N) | rayo_dtype_to_f32(RAYO_DTYPE_Q8_0, q, y, N);
    CHECK(st == RAYO_OK && memcmp(q, ref, sizeof q) == 0 && memcmp(y, want, sizeof y) == 0, "q8_0 row");
    rayo_quantize_q4_0(x, ref, N);
    rayo_dequantize_q4_0(ref, want, N);
    st = rayo_dtype_from_f32(RAYO_DTYPE_Q4_0, x, q, N) | rayo_dtype_to_f32(RAYO_DTYPE_Q4_0, q, y, N);
    CHECK(st == RAYO_OK && memcmp(q, ref, 3 * RAYO_Q4_0_BYTES) == 0 && memcmp(y, want, sizeof y) == 0,
        "q4_0 row");
    st = rayo_dtype_from_f32(RAYO_DTYPE_F32, x, y, N);
    CHECK(st == RAYO_OK && memcmp(x, y, sizeof y) == 0, "f32 row is a copy");
}

static void expect_invalid(rayo_status st, const char *needle, const char *what)
{
    CHECK(st == RAYO_E_INVALID && strstr(rayo_last_error(), needle), "%s: status %d, message \"%s\"",
        what, st, rayo_last_error());
}

static void test_bad_arguments(void)
{
    float x[64] = {0};
    uint8_t q[256];
    expect_invalid(rayo_dtype_from_f32(RAYO_DTYPE_I32, x, q, 4), "not a float format", "i32");
    expect_invalid(rayo_dtype_to_f32((rayo_dtype)99, q, x, 4), "dtype 99", "unknown dtype");
    expect_invalid(rayo_dtype_from_f32(RAYO_DTYPE_Q8_0, x, q, 33), "multiple of q8_0's block of 32",
        "q8_0 n = 33");
    expect_invalid(rayo_dtype_to_f32(RAYO_DTYPE_Q4_K, q, x, 32), "multiple of q4_k's block of 256",
        "q4_k n = 32");
    expect_invalid(rayo_dtype_from_f32(RAYO_DTYPE_F16, NULL, q, 4), "NULL", "NULL input");
    expect_invalid(rayo_dtype_to_f32(RAYO_DTYPE_F16, q, NULL, 4), "NULL", "NULL output");
    CHECK(rayo_dtype_from_f32(RAYO_DTYPE_Q6_K, NULL, NULL, 0) == RAYO_OK, "n = 0 needs no buffers");
}

static void test_by_name(void)
{
    for (int dt = 0; dt < RAYO_DTYPE_LIMIT; dt++) {
        const char *name = rayo_dtype_name((rayo_dtype)dt);
        if (name)
            CHECK(rayo_dtype_by_name(name) == dt, "rayo_dtype_by_name(\"%s\") != %d", name, dt);
    }
    CHECK(rayo_dtype_by_name("q4_K") == -1 && rayo_dtype_by_name("q5_0") == -1 &&
          rayo_dtype_by_name("") == -1 && rayo_dtype_by_name(NULL) == -1, "unknown names give -1");
}

int main(void)
{
    rng_seed_from_env();
    test_k_round_trips();
    test_k_direct();
    half_case(RAYO_DTYPE_F16, 10, -14);
    half_case(RAYO_DTYPE_BF16, 7, -126);
    test_legacy_blocks();
    test_bad_arguments();
    test_by_name();
    return test_summary();
}
