/* SPDX-License-Identifier: MIT */
/* test-dtype.c - core/rayo-dtype.h: f16/bf16 conversions against independent
 * float64 rounding, and the GGUF block formats against test vectors built
 * here from the formats' published layouts (quantize -> known bytes for
 * Q8_0 and Q4_0; known bytes -> values for Q8_0, Q4_0, Q4_K, Q6_K), and the
 * row dot products against float64 sums over the dequantized values. */
#include "testutil.h" /* first: it sets _GNU_SOURCE */
#include "rayo-dtype.h"
#include <math.h>
#include "test-rng.h"

/* ---- independent rounding oracles, in float64 ----
 * The value a format with `mant` stored mantissa bits, smallest normal
 * exponent `emin` and largest finite value `max` gives x under round to
 * nearest even.  x is an f32, so x / quantum is exact in double and
 * nearbyint (default rounding mode: to nearest even) does the rounding. */
static double round_to_format(double x, int mant, int emin, double max)
{
    if (x == 0.0 || isnan(x) || isinf(x))
        return x;
    int e;
    frexp(fabs(x), &e); /* |x| in [2^(e-1), 2^e) */
    int exp = e - 1 < emin ? emin : e - 1;
    double quantum = ldexp(1.0, exp - mant);
    double r = nearbyint(fabs(x) / quantum) * quantum;
    /* Overflow: values at or past max + half a quantum of max's binade go to inf. */
    if (r > max)
        r = INFINITY;
    return copysign(r, x);
}

static double f16_oracle(float x) { return round_to_format(x, 10, -14, 65504.0); }
static double bf16_oracle(float x) { return round_to_format(x, 7, -126, ldexp(255.0, 120)); }

static uint32_t random_f32_bits(void)
{
    return (uint32_t)rng_next();
}

/* One f32 -> f16 case: the decoded result equals the oracle (sign of zero
 * included); NaN gives a quiet NaN. */
static bool f16_case_ok(float x)
{
    uint16_t h = rayo_f32_to_f16(x);
    float back = rayo_f16_to_f32(h);
    if (isnan(x))
        return (h & 0x7e00) == 0x7e00 && ((h >> 15) == (rayo_f32_bits(x) >> 31));
    double want = f16_oracle(x);
    return (double)back == want && !signbit(back) == !signbit(want);
}

static bool bf16_case_ok(float x)
{
    uint16_t h = rayo_f32_to_bf16(x);
    float back = rayo_bf16_to_f32(h);
    if (isnan(x))
        return isnan(back) && (h & 0x40) && ((h >> 15) == (rayo_f32_bits(x) >> 31));
    double want = bf16_oracle(x);
    return (double)back == want && !signbit(back) == !signbit(want);
}

/* f16 -> f32 for all 65536 patterns against the format's definition. */
static void test_f16_decode_all(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        int e = (h >> 10) & 31, m = h & 1023;
        double s = (h & 0x8000) ? -1.0 : 1.0;
        double want = e == 31 ? (m ? NAN : s * INFINITY)
                    : e == 0  ? s * ldexp(m, -24)
                              : s * ldexp(1024 + m, e - 25);
        float got = rayo_f16_to_f32((uint16_t)h);
        bool ok = isnan(want) ? isnan(got) : ((double)got == want && !signbit(got) == !signbit(want));
        if (!ok && bad++ < 3)
            CHECK(0, "f16 0x%04x -> %.9g, want %.9g", (unsigned)h, (double)got, want);
    }
    CHECK(bad == 0, "%d f16 patterns decoded wrong", bad);
    /* f16 -> f32 -> f16 is the identity for every non-NaN pattern. */
    bad = 0;
    for (uint32_t h = 0; h < 65536; h++)
        if (((h >> 10) & 31) != 31 || !(h & 1023))
            bad += rayo_f32_to_f16(rayo_f16_to_f32((uint16_t)h)) != h;
    CHECK(bad == 0, "%d f16 patterns do not round-trip", bad);
}

static void test_f16_known(void)
{
    static const struct { float x; uint16_t h; } cases[] = {
        {1.0f, 0x3c00}, {-2.0f, 0xc000}, {0.5f, 0x3800}, {0.0f, 0x0000}, {-0.0f, 0x8000},
        {65504.0f, 0x7bff}, {65519.99f, 0x7bff}, {65520.0f, 0x7c00}, {1e6f, 0x7c00},
        {-1e6f, 0xfc00}, {INFINITY, 0x7c00}, {-INFINITY, 0xfc00},
        {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {0x1.8p-25f, 0x0001}, {0x1.8p-24f, 0x0002},
        {0x1p-14f, 0x0400}, {0x1.ff8p-15f, 0x03ff} /* largest subnormal */, {0x1.ffcp-15f, 0x0400} /* tie: to 1024, even */,
        {0.1f, 0x2e66}, {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x1.8p-10f, 0x3c02},
        {0x1p-149f, 0x0000}, {-0x1p-149f, 0x8000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t h = rayo_f32_to_f16(cases[i].x);
        CHECK(h == cases[i].h, "f16(%a) = 0x%04x, want 0x%04x", (double)cases[i].x, h, cases[i].h);
    }
    uint16_t nan = rayo_f32_to_f16(rayo_f32_from_bits(0x7f800001u)); /* signalling NaN */
    CHECK((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) && (nan & 0x200), "f16(sNaN) = 0x%04x is not a quiet NaN", nan);
}

static void test_bf16_known(void)
{
    static const struct { uint32_t x; uint16_t h; } cases[] = {
        {0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80} /* tie, even stays */, {0x3f818000u, 0x3f82} /* tie, odd up */,
        {0x3f808001u, 0x3f81}, {0xbf7fffffu, 0xbf80}, {0x7f7fffffu, 0x7f80} /* FLT_MAX rounds to inf */,
        {0x7f7f7fffu, 0x7f7f}, {0x7f800000u, 0x7f80}, {0xff800000u, 0xff80}, {0x00000001u, 0x0000},
        {0x00008000u, 0x0000} /* subnormal tie to even 0 */, {0x00018000u, 0x0002}, {0x80000000u, 0x8000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t h = rayo_f32_to_bf16(rayo_f32_from_bits(cases[i].x));
        CHECK(h == cases[i].h, "bf16(0x%08x) = 0x%04x, want 0x%04x", (unsigned)cases[i].x, h, cases[i].h);
    }
    uint16_t nan = rayo_f32_to_bf16(rayo_f32_from_bits(0xff800001u));
    CHECK(nan == 0xffc0, "bf16(-sNaN with payload in the low bits) = 0x%04x, want 0xffc0", nan);
}

/* Random f32 patterns over every exponent, exact ties, and neighbours of ties. */
static void test_conversions_random(void)
{
    int bad16 = 0, bad_bf = 0;
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = random_f32_bits();
        switch (i % 4) {
        case 1: u = (u & ~0x1fffu) | 0x1000u; break;           /* an f16 tie (normal range) */
        case 2: u = (u & ~0xffffu) | 0x8000u; break;           /* a bf16 tie */
        case 3: u = (u & 0x80000000u) | (0x33000000u + (u & 0x07ffffffu)); break; /* f16's subnormal range */
        default: break;
        }
        float x = rayo_f32_from_bits(u);
        if (!f16_case_ok(x) && bad16++ < 3)
            CHECK(0, "f16(0x%08x) = 0x%04x, oracle %.9g", (unsigned)u, rayo_f32_to_f16(x), f16_oracle(x));
        if (!bf16_case_ok(x) && bad_bf++ < 3)
            CHECK(0, "bf16(0x%08x) = 0x%04x, oracle %.9g", (unsigned)u, rayo_f32_to_bf16(x), bf16_oracle(x));
    }
    CHECK(bad16 == 0, "%d f32 -> f16 conversions wrong", bad16);
    CHECK(bad_bf == 0, "%d f32 -> bf16 conversions wrong", bad_bf);
#if defined(__FLT16_MAX__) && !defined(__cplusplus)
    /* A second, bit-level oracle where the compiler has _Float16. */
    int bad = 0;
    for (int i = 0; i < 1000000; i++) {
        float x = rayo_f32_from_bits(random_f32_bits());
        if (isnan(x))
            continue;
        _Float16 h = (_Float16)x;
        uint16_t bits;
        memcpy(&bits, &h, sizeof bits);
        bad += bits != rayo_f32_to_f16(x);
    }
    CHECK(bad == 0, "%d f32 -> f16 conversions differ from the compiler's _Float16", bad);
#endif
}

/* ---- block formats ---- */
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static void check_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
    size_t i = 0;
    while (i < n && got[i] == want[i])
        i++;
    CHECK(i == n, "%s: byte %zu is 0x%02x, want 0x%02x", what, i, i < n ? got[i] : 0, i < n ? want[i] : 0);
}

static void check_values(const float *got, const double *want, size_t n, const char *what)
{
    size_t i = 0;
    while (i < n && (double)got[i] == want[i])
        i++;
    CHECK(i == n, "%s: value %zu is %.9g, want %.9g", what, i, i < n ? (double)got[i] : 0.0, i < n ? want[i] : 0.0);
}

/* Q8_0 = {f16 d; int8 q[32]}, x = q d; quantizing: d = max|x| / 127,
 * q = x / d rounded half away from zero. */
static void test_q8_0(void)
{
    /* Block 0: max |x| = 127, so d = 1 and q = round(x): 2.5 -> 3 and -2.5 -> -3
     * show halves go away from zero (not to even). Block 1: all zero. */
    float x[64] = {127, -127, 2.5f, -2.5f, 0.5f, -0.5f, 1.49f, -1.51f, 100.4f, -3};
    for (int j = 10; j < 32; j++)
        x[j] = (float)(j - 20);
    int8_t q[32] = {127, -127, 3, -3, 1, -1, 1, -2, 100, -3};
    for (int j = 10; j < 32; j++)
        q[j] = (int8_t)(j - 20);
    uint8_t want[68] = {0}, got[68];
    put16(want, 0x3c00); /* d = 1.0 */
    for (int j = 0; j < 32; j++)
        want[2 + j] = (uint8_t)q[j];
    memset(got, 0xa5, sizeof got);
    rayo_quantize_q8_0(x, got, 64);
    check_bytes(got, want, 68, "quantize q8_0");

    /* Decoding: d = 0.5 (0x3800), q from -128 to 127. */
    uint8_t blk[34];
    double ref[32];
    put16(blk, 0x3800);
    for (int j = 0; j < 32; j++) {
        int v = j == 0 ? -128 : j == 1 ? 127 : j * 7 - 100;
        blk[2 + j] = (uint8_t)(int8_t)v;
        ref[j] = 0.5 * v;
    }
    float y[32];
    rayo_dequantize_q8_0(blk, y, 32);
    check_values(y, ref, 32, "dequantize q8_0");
}

/* Q4_0 = {f16 d; uint8 qs[16]}: byte j = value j (low nibble) | value j+16
 * (high nibble), x = (q - 8) d.  Quantizing: max = the first value of largest
 * magnitude, with its sign; d = max / -8; q = min(15, trunc(x / d + 8.5)). */
static void test_q4_0(void)
{
    float x[64] = {0};
    int q[64];
    /* Block 0: max = -8 -> d = 1.  8 has the same magnitude but comes later. */
    const float b0[32] = {-8, 7, 8, 0, 0.5f, -0.5f, 1.49f, 1.5f, -1.5f, -2.5f, 3, -7, 6.99f, -7.99f, 2, -2,
                          1, -1, 4, -4, 5, -5, 6, -6, 0.25f, -0.25f, 2.6f, -2.6f, 3.5f, -3.5f, 4.4f, -4.4f};
    const int q0[32] = {0, 15, 15, 8, 9, 8, 9, 10, 7, 6, 11, 1, 15, 0, 10, 6,
                        9, 7, 12, 4, 13, 3, 14, 2, 8, 8, 11, 5, 12, 5, 12, 4};
    /* Block 1: max = 16 -> d = -2, x / d = -x / 2. */
    const float b1[32] = {16, -16, 2, -2, 0, 1, -1, 3, -3, 8, -8, 15, -15, 0.9f, -0.9f, 5,
                          -5, 6, -6, 7, -7, 9, -9, 10, -10, 11, -11, 12, -12, 13, -13, 14};
    const int q1[32] = {0, 15, 7, 9, 8, 8, 9, 7, 10, 4, 12, 1, 15, 8, 8, 6,
                        11, 5, 11, 5, 12, 4, 13, 3, 13, 3, 14, 2, 14, 2, 15, 1};
    for (int j = 0; j < 32; j++) {
        x[j] = b0[j]; q[j] = q0[j];
        x[32 + j] = b1[j]; q[32 + j] = q1[j];
    }
    uint8_t want[36], got[36];
    put16(want, 0x3c00);      /* d = 1 */
    put16(want + 18, 0xc000); /* d = -2 */
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 16; j++)
            want[18 * b + 2 + j] = (uint8_t)(q[32 * b + j] | (q[32 * b + j + 16] << 4));
    memset(got, 0xa5, sizeof got);
    rayo_quantize_q4_0(x, got, 64);
    check_bytes(got, want, 36, "quantize q4_0");

    /* Decoding: d = -2; byte j = 0x(j)(15-j): value j has q = 15 - j, value j + 16 has q = j. */
    uint8_t blk[18];
    double ref[32];
    put16(blk, 0xc000);
    for (int j = 0; j < 16; j++) {
        blk[2 + j] = (uint8_t)((15 - j) | (j << 4));
        ref[j] = -2.0 * (15 - j - 8);
        ref[j + 16] = -2.0 * (j - 8);
    }
    float y[32];
    rayo_dequantize_q4_0(blk, y, 32);
    check_values(y, ref, 32, "dequantize q4_0");
    CHECK(y[0] == -14.0f && y[15] == 16.0f && y[16] == 16.0f && y[31] == -14.0f,
          "q4_0 spot values %g %g %g %g", (double)y[0], (double)y[15], (double)y[16], (double)y[31]);
}

/* Q4_K: {f16 d, f16 dmin, scales[12], qs[128]}; 8 sub-blocks of 32 values,
 * x = d sc[s] q - dmin m[s].  The 12 scale bytes, built by hand for
 *   sc = {1, 2, 3, 63, 17, 33, 48, 5},  m = {0, 4, 62, 7, 21, 40, 3, 63}:
 *   bytes 0-3  = sc[0..3] | (sc[4..7] >> 4) << 6 = 0x41 0x82 0xC3 0x3F
 *   bytes 4-7  = m[0..3]  | (m[4..7] >> 4) << 6  = 0x40 0x84 0x3E 0xC7
 *   bytes 8-11 = (sc[4..7] & 15) | (m[4..7] & 15) << 4 = 0x51 0x81 0x30 0xF5 */
static const uint8_t q4k_sc[8] = {1, 2, 3, 63, 17, 33, 48, 5};
static const uint8_t q4k_m[8] = {0, 4, 62, 7, 21, 40, 3, 63};
static const uint8_t q4k_scale_bytes[12] = {0x41, 0x82, 0xC3, 0x3F, 0x40, 0x84, 0x3E, 0xC7, 0x51, 0x81, 0x30, 0xF5};

static int q4k_nibble(int i) { return (i * 7 + 3) % 16; }

static void test_q4_k(void)
{
    for (int s = 0; s < 8; s++) {
        uint8_t sc, m;
        rayo_q4_k_scale_min(q4k_scale_bytes, s, &sc, &m);
        CHECK(sc == q4k_sc[s] && m == q4k_m[s], "q4_k sub-block %d: sc %u m %u, want %u %u", s, sc, m,
              q4k_sc[s], q4k_m[s]);
    }
    /* d = 1 (0x3c00), dmin = 0.5 (0x3800).  Value i of sub-block s = i / 32
     * lies in qs byte 32 (i / 64) + i % 32: low nibble for even s, high for odd. */
    uint8_t blk[144] = {0};
    put16(blk, 0x3c00);
    put16(blk + 2, 0x3800);
    memcpy(blk + 4, q4k_scale_bytes, 12);
    double ref[256];
    for (int i = 0; i < 256; i++) {
        int s = i / 32, q = q4k_nibble(i);
        blk[16 + 32 * (i / 64) + i % 32] |= (uint8_t)(s % 2 ? q << 4 : q);
        ref[i] = 1.0 * q4k_sc[s] * q - 0.5 * q4k_m[s];
    }
    float y[256];
    rayo_dequantize_q4_k(blk, y, 256);
    check_values(y, ref, 256, "dequantize q4_k");
    /* Spot values worked out by hand: value 0 (s 0): q 3 -> 3;  value 40
     * (s 1): q 11 -> 2*11 - 2 = 20;  value 255 (s 7): q 12 -> 5*12 - 31.5 = 28.5;
     * value 100 (s 3): q 15 -> 63*15 - 3.5 = 941.5. */
    CHECK(y[0] == 3.0f && y[40] == 20.0f && y[255] == 28.5f && y[100] == 941.5f,
          "q4_k spot values %g %g %g %g", (double)y[0], (double)y[40], (double)y[255], (double)y[100]);
}

/* Q6_K: {ql[128], qh[64], int8 scales[16], f16 d} (d last), x = d sc[i/16] (q - 32).
 * In half h, value 128h + 32k + l: low 4 bits in ql[64h + 32(k & 1) + l]
 * (low nibble for k < 2), high 2 bits in bits 2k, 2k+1 of qh[32h + l]. */
static int q6k_code(int i) { return (i * 5 + 11) % 64; }
static int q6k_scale(int g) { return g % 2 ? -3 * g : 2 * g + 1; } /* signed, -45..31 */

static void test_q6_k(void)
{
    uint8_t blk[210] = {0};
    double ref[256];
    for (int g = 0; g < 16; g++)
        blk[192 + g] = (uint8_t)(int8_t)q6k_scale(g);
    put16(blk + 208, 0x3400); /* d = 0.25 */
    for (int i = 0; i < 256; i++) {
        int h = i / 128, k = (i % 128) / 32, l = i % 32, c = q6k_code(i);
        blk[64 * h + 32 * (k & 1) + l] |= (uint8_t)((c & 15) << (k < 2 ? 0 : 4));
        blk[128 + 32 * h + l] |= (uint8_t)((c >> 4) << (2 * k));
        ref[i] = 0.25 * q6k_scale(i / 16) * (c - 32);
    }
    float y[256];
    rayo_dequantize_q6_k(blk, y, 256);
    check_values(y, ref, 256, "dequantize q6_k");
    /* By hand: value 0: code 11, scale 1 -> 0.25 * (11 - 32) = -5.25; value 255:
     * code (1275 + 11) % 64 = 6, scale of group 15 = -45 -> 0.25 * -45 * -26 = 292.5;
     * value 77 (group 4, scale 9): code 396 % 64 = 12 -> 0.25 * 9 * -20 = -45. */
    CHECK(y[0] == -5.25f && y[255] == 292.5f && y[77] == -45.0f, "q6_k spot values %g %g %g",
          (double)y[0], (double)y[255], (double)y[77]);
    /* The first bytes by hand: ql[0] = code(0) & 15 | (code(64) & 15) << 4
     * = 11 | (331 % 64 = 11) << 4 = 0xBB; qh[0] = 11>>4 | (171%64=43)>>4 << 2 | 11>>4 << 4 | (491%64=43)>>4 << 6 = 0x88. */
    CHECK(blk[0] == 0xBB && blk[128] == 0x88, "q6_k test block built wrong: 0x%02x 0x%02x", blk[0], blk[128]);
}

static void test_sizes(void)
{
    static const struct { rayo_dtype dt; size_t elems, bytes; const char *name; } t[] = {
        {RAYO_DTYPE_F32, 1, 4, "f32"}, {RAYO_DTYPE_F16, 1, 2, "f16"}, {RAYO_DTYPE_BF16, 1, 2, "bf16"},
        {RAYO_DTYPE_I32, 1, 4, "i32"}, {RAYO_DTYPE_Q8_0, 32, 34, "q8_0"}, {RAYO_DTYPE_Q4_0, 32, 18, "q4_0"},
        {RAYO_DTYPE_Q4_K, 256, 144, "q4_k"}, {RAYO_DTYPE_Q6_K, 256, 210, "q6_k"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CHECK(rayo_dtype_block_elems(t[i].dt) == t[i].elems && rayo_dtype_block_bytes(t[i].dt) == t[i].bytes &&
              !strcmp(rayo_dtype_name(t[i].dt), t[i].name), "sizes of %s", t[i].name);
    }
    size_t bytes = 0;
    CHECK(rayo_dtype_row_bytes(RAYO_DTYPE_Q4_K, 4096, &bytes) && bytes == 16 * 144, "q4_k row of 4096");
    CHECK(!rayo_dtype_row_bytes(RAYO_DTYPE_Q8_0, 33, &bytes), "q8_0 row of 33 is refused");
    CHECK(!rayo_dtype_row_bytes((rayo_dtype)5, 4, &bytes) && !rayo_dtype_name((rayo_dtype)5), "unknown dtype");
    CHECK(!rayo_dtype_row_bytes(RAYO_DTYPE_Q8_0, (SIZE_MAX / 32) * 32, &bytes), "overflowing row refused");
}

/* ---- random blocks: dot products and round trips ---- */
static void random_blocks(rayo_dtype dt, uint8_t *p, size_t n)
{
    size_t bytes = 0;
    rayo_dtype_row_bytes(dt, n, &bytes);
    for (size_t i = 0; i < bytes; i++)
        p[i] = (uint8_t)rng_next();
    /* The f16 scales: finite and moderate (random bits can be NaN or huge). */
    size_t bb = rayo_dtype_block_bytes(dt);
    for (size_t b = 0; b < bytes / bb; b++) {
        uint8_t *blk = p + b * bb;
        float d = (float)rng_uniform(-0.05, 0.05);
        if (dt == RAYO_DTYPE_Q8_0 || dt == RAYO_DTYPE_Q4_0)
            put16(blk, rayo_f32_to_f16(d));
        else if (dt == RAYO_DTYPE_Q4_K) {
            put16(blk, rayo_f32_to_f16(fabsf(d)));
            put16(blk + 2, rayo_f32_to_f16((float)rng_uniform(0, 0.05)));
        } else if (dt == RAYO_DTYPE_Q6_K)
            put16(blk + 208, rayo_f32_to_f16(d * 0.1f));
        else if (dt == RAYO_DTYPE_F16)
            put16(blk, rayo_f32_to_f16((float)rng_uniform(-2, 2)));
        else if (dt == RAYO_DTYPE_BF16)
            put16(blk, rayo_f32_to_bf16((float)rng_uniform(-2, 2)));
    }
}

/* Float64 dot over the dequantized row, and the sum of |terms| the f32 kernel's
 * error is measured against (Q4_K: both parts, d sc q x and dmin m x). */
static double dot_reference(rayo_dtype dt, const uint8_t *row, const float *x, size_t n, const float *y, double *scale)
{
    double s = 0, a = 0;
    for (size_t i = 0; i < n; i++) {
        s += (double)y[i] * x[i];
        a += fabs((double)y[i] * x[i]);
    }
    if (dt == RAYO_DTYPE_Q4_K) {
        a = 0;
        for (size_t i = 0; i < n; i++) {
            const uint8_t *blk = row + (i / 256) * 144;
            uint8_t sc, m;
            rayo_q4_k_scale_min(blk + 4, (int)(i % 256) / 32, &sc, &m);
            double dmin = rayo_f16_to_f32((uint16_t)(blk[2] | blk[3] << 8));
            a += (fabs((double)y[i] + dmin * m) + dmin * m) * fabs((double)x[i]);
        }
    }
    *scale = a;
    return s;
}

static void test_dot_random(void)
{
    static const rayo_dtype types[] = {RAYO_DTYPE_F16, RAYO_DTYPE_BF16, RAYO_DTYPE_Q8_0,
                                       RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K};
    static const size_t blocks[] = {1, 2, 3, 7, 16, 33};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        rayo_dtype dt = types[t];
        double worst = 0;
        for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
            size_t n = blocks[k] * (dt == RAYO_DTYPE_F16 || dt == RAYO_DTYPE_BF16 ? 37 : rayo_dtype_block_elems(dt));
            size_t bytes = 0;
            rayo_dtype_row_bytes(dt, n, &bytes);
            uint8_t *row = malloc(bytes + 1);
            float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
            /* +1: an odd address, blocks need no alignment */
            random_blocks(dt, row + 1, n);
            for (size_t i = 0; i < n; i++)
                x[i] = (float)rng_uniform(-1, 1);
            int ok;
            CHECK(rayo_dequantize_row(dt, row + 1, y, n), "dequantize_row %s", rayo_dtype_name(dt));
            float got = rayo_dot_row_f32(dt, row + 1, x, n, &ok);
            double scale, want = dot_reference(dt, row + 1, x, n, y, &scale);
            /* f32 accumulation: partial sums of <= 32 terms, then one running
             * sum over the partials (Q6_K: one per 16 values, Q4_K: per 32). */
            size_t partials = dt == RAYO_DTYPE_Q6_K ? n / 16 : dt == RAYO_DTYPE_Q4_K ? n / 32
                                                             : n / rayo_dtype_block_elems(dt);
            double allowed = (double)(partials + 40) * 0x1p-24 * scale + 1e-30;
            double err = fabs(got - want);
            if (err / allowed > worst)
                worst = err / allowed;
            CHECK(ok && err <= allowed, "dot %s n=%zu: %.9g, float64 %.9g (error %.3g, allowed %.3g)",
                  rayo_dtype_name(dt), n, (double)got, want, err, allowed);
            free(row);
            free(x);
            free(y);
        }
        printf("dot %-5s worst error %.3f of the allowed\n", rayo_dtype_name(dt), worst);
    }
}

/* Quantize random data: dequantized values are within half a step of the
 * input (plus the f16 rounding of d), and re-quantizing the dequantized data
 * gives the same bytes for Q8_0 (its grid points are fixed points). */
static void test_quantize_random(void)
{
    enum { N = 32 * 64 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    uint8_t *q = malloc(2 * N), *q2 = malloc(2 * N); /* 34 bytes per 32 values */
    for (int i = 0; i < N; i++)
        x[i] = (float)rng_uniform(-3, 3) * (i % 64 < 32 ? 1.0f : 1e-3f);
    int bad8 = 0, bad4 = 0;
    rayo_quantize_q8_0(x, q, N);
    rayo_dequantize_q8_0(q, y, N);
    for (int b = 0; b < N / 32; b++) {
        double amax = 0, d = rayo_f16_to_f32((uint16_t)(q[34 * b] | q[34 * b + 1] << 8));
        for (int j = 0; j < 32; j++)
            if (fabs(x[32 * b + j]) > amax) /* not fmax: gcc 12's aarch64 vectoriser crashes on it */
                amax = fabs(x[32 * b + j]);
        for (int j = 0; j < 32; j++)
            bad8 += fabs(y[32 * b + j] - x[32 * b + j]) > d / 2 + 127 * fabs(d - amax / 127) + 1e-6 * amax;
    }
    rayo_quantize_q8_0(y, q2, N);
    CHECK(memcmp(q, q2, (N / 32) * 34) == 0, "q8_0: quantize(dequantize(q)) != q");
    rayo_quantize_q4_0(x, q, N);
    rayo_dequantize_q4_0(q, y, N);
    for (int b = 0; b < N / 32; b++) {
        double amax = 0, d = fabs(rayo_f16_to_f32((uint16_t)(q[18 * b] | q[18 * b + 1] << 8)));
        for (int j = 0; j < 32; j++)
            if (fabs(x[32 * b + j]) > amax) /* not fmax: gcc 12's aarch64 vectoriser crashes on it */
                amax = fabs(x[32 * b + j]);
        for (int j = 0; j < 32; j++) /* the top code is clamped: +8 d is out of range, 7 d is not */
            bad4 += fabs(y[32 * b + j] - x[32 * b + j]) > fmax(d / 2, amax - 7 * d) + 8 * fabs(d - amax / 8) + 1e-6 * amax;
    }
    CHECK(bad8 == 0, "q8_0: %d values further than half a step from the input", bad8);
    CHECK(bad4 == 0, "q4_0: %d values further than half a step from the input", bad4);
    free(x);
    free(y);
    free(q);
    free(q2);
}

int main(void)
{
    rng_seed_from_env();
    test_sizes();
    test_f16_decode_all();
    test_f16_known();
    test_bf16_known();
    test_conversions_random();
    test_q8_0();
    test_q4_0();
    test_q4_k();
    test_q6_k();
    test_dot_random();
    test_quantize_random();
    return test_summary();
}
