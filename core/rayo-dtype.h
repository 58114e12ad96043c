/* SPDX-License-Identifier: MIT */
/* rayo-dtype.h - rayo's element types and data formats: ids, sizes, and the
 * conversions every backend and the core need, as header-only C.
 *
 * Self-contained (no libm, no librayo symbol): a plugin, the core and the
 * tests include it and get the same, bit-exact conversions.  Valid C11 and
 * C++ (C++ plugins include it through rayo-plugin.h).
 *
 * Formats
 *   F32, F16, BF16, I32      one element per "block"; little-endian IEEE-754
 *                            binary32 / binary16 / bfloat16, and int32.
 *   Q8_0, Q4_0, Q4_K, Q6_K   blocks byte-compatible with the GGUF file format
 *                            (ggml's block_q8_0, block_q4_0, block_q4_K,
 *                            block_q6_K), so weights memory-mapped from a GGUF
 *                            file are used as they are.  A row of n elements
 *                            is n / block_elems consecutive blocks; n must be
 *                            a multiple of the block size.
 *
 * Rounding
 *   f32 -> f16 and f32 -> bf16 round to nearest, ties to even, with exact
 *   subnormals and overflow to infinity (f16: |x| >= 65520).  NaN stays NaN
 *   (made quiet, sign and top payload bits kept).  f16/bf16 -> f32 is exact.
 *   Quantizing to Q8_0 and Q4_0 gives the bytes of GGUF's reference
 *   quantizer (see rayo_quantize_q8_0 and rayo_quantize_q4_0 for the rule).
 *   Dequantizing computes each value with the same float operations, in the
 *   same order, as the format's reference decoder, so results are bit-exact.
 *
 * Multi-byte fields inside blocks are little-endian and read byte by byte:
 * blocks need no alignment and the code is correct on any host.
 */
#ifndef RAYO_DTYPE_H
#define RAYO_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#define RAYO_DTYPE_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define RAYO_DTYPE_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* RAYO_DTYPE_FN: the helpers marked with it are static inline here (a
 * plugin needs no librayo symbol) and also exported by librayo under the
 * same names, compiled from these bodies (core/dtype.c defines the macro),
 * so a foreign-function interface can call them.  rayo.h lists them. */
#ifndef RAYO_DTYPE_FN
#define RAYO_DTYPE_FN static inline
#endif

/* ---- ids ------------------------------------------------------------------
 * Stable numbers, part of the ABI.  F32 is 0 so that a zeroed operand
 * descriptor means "f32", as every call meant before dtypes existed. */
/* Every dtype, one line each: X(ID, number, name, elements per block, bytes
 * per block).  The id enum and the name and size functions below come from
 * it, so a new dtype is one line here plus its block layout and codec. */
#define RAYO_DTYPE_LIST(X)                               \
    X(F32, 0, "f32", 1, 4)                               \
    X(F16, 1, "f16", 1, 2)                               \
    X(BF16, 2, "bf16", 1, 2)                             \
    X(I32, 3, "i32", 1, 4)                               \
    X(Q8_0, 8, "q8_0", RAYO_QK8_0, RAYO_Q8_0_BYTES)      \
    X(Q4_0, 9, "q4_0", RAYO_QK4_0, RAYO_Q4_0_BYTES)      \
    X(Q4_K, 10, "q4_k", RAYO_QK_K, RAYO_Q4_K_BYTES)      \
    X(Q6_K, 11, "q6_k", RAYO_QK_K, RAYO_Q6_K_BYTES)

#define RAYO__DTYPE_ENUM(ID, NUMBER, NAME, ELEMS, BYTES) RAYO_DTYPE_##ID = NUMBER,
typedef enum rayo_dtype {
    RAYO_DTYPE_LIST(RAYO__DTYPE_ENUM)
    RAYO_DTYPE_LIMIT = 32 /* ids are below this: a set of dtypes fits a uint32_t */
} rayo_dtype;
#undef RAYO__DTYPE_ENUM

/* A set of dtypes as a bit mask (what an op operand accepts, what a kernel implements). */
#define RAYO_DTYPE_BIT(dt) (1u << (unsigned)(dt))

/* ---- block layouts --------------------------------------------------------
 * For documentation and sizeof: the code reads the bytes, not these structs. */
#define RAYO_QK8_0 32
#define RAYO_QK4_0 32
#define RAYO_QK_K 256

/* Q8_0: 32 values x = d * q, q a signed byte. */
typedef struct rayo_block_q8_0 {
    uint16_t d;            /* f16 scale */
    int8_t qs[RAYO_QK8_0]; /* q of values 0..31 */
} rayo_block_q8_0;

/* Q4_0: 32 values x = d * (q - 8), q a nibble.  Byte j holds value j in its
 * low nibble and value j + 16 in its high nibble. */
typedef struct rayo_block_q4_0 {
    uint16_t d;                /* f16 scale */
    uint8_t qs[RAYO_QK4_0 / 2];
} rayo_block_q4_0;

/* Q4_K: 256 values in 8 sub-blocks of 32; value i of sub-block s = i / 32 is
 * x = (d * sc[s]) * q - (dmin * m[s]), q a nibble, sc and m 6-bit unsigned.
 * scales[12] packs the eight (sc, m) pairs:
 *   bytes 0..3   bits 0-5: sc[0..3]       bits 6-7: bits 4-5 of sc[4..7]
 *   bytes 4..7   bits 0-5: m[0..3]        bits 6-7: bits 4-5 of m[4..7]
 *   bytes 8..11  bits 0-3: bits 0-3 of sc[4..7], bits 4-7: bits 0-3 of m[4..7]
 * qs holds four 32-byte chunks; chunk c has sub-block 2c in its low nibbles
 * and sub-block 2c + 1 in its high nibbles (value i: byte 32 * (i / 64) + i % 32). */
typedef struct rayo_block_q4_k {
    uint16_t d;                /* f16 scale of the sub-block scales */
    uint16_t dmin;             /* f16 scale of the sub-block mins */
    uint8_t scales[12];
    uint8_t qs[RAYO_QK_K / 2];
} rayo_block_q4_k;

/* Q6_K: 256 values, x = (d * sc[i / 16]) * (q - 32), q 6-bit unsigned, sc a
 * signed byte.  The block is two halves of 128 values; in half h, value
 * 128h + 32k + l (k < 4, l < 32) takes
 *   low 4 bits:  ql[64h + 32 * (k & 1) + l], low nibble for k < 2, high for k >= 2
 *   high 2 bits: bits 2k..2k+1 of qh[32h + l].
 * Note that d comes last. */
typedef struct rayo_block_q6_k {
    uint8_t ql[RAYO_QK_K / 2];
    uint8_t qh[RAYO_QK_K / 4];
    int8_t scales[RAYO_QK_K / 16];
    uint16_t d;                /* f16 super-block scale */
} rayo_block_q6_k;

RAYO_DTYPE_STATIC_ASSERT(sizeof(rayo_block_q8_0) == 34, "Q8_0 block is 34 bytes");
RAYO_DTYPE_STATIC_ASSERT(sizeof(rayo_block_q4_0) == 18, "Q4_0 block is 18 bytes");
RAYO_DTYPE_STATIC_ASSERT(sizeof(rayo_block_q4_k) == 144, "Q4_K block is 144 bytes");
RAYO_DTYPE_STATIC_ASSERT(sizeof(rayo_block_q6_k) == 210, "Q6_K block is 210 bytes");

/* Byte offsets of the fields, as the code reads them. */
#define RAYO_Q8_0_BYTES 34
#define RAYO_Q4_0_BYTES 18
#define RAYO_Q4_K_BYTES 144
#define RAYO_Q4_K_DMIN 2
#define RAYO_Q4_K_SCALES 4
#define RAYO_Q4_K_QS 16
#define RAYO_Q6_K_BYTES 210
#define RAYO_Q6_K_QH 128
#define RAYO_Q6_K_SCALES 192
#define RAYO_Q6_K_D 208

/* ---- sizes ---------------------------------------------------------------- */
#define RAYO__DTYPE_NAME_CASE(ID, NUMBER, NAME, ELEMS, BYTES) case RAYO_DTYPE_##ID: return NAME;
#define RAYO__DTYPE_ELEMS_CASE(ID, NUMBER, NAME, ELEMS, BYTES) case RAYO_DTYPE_##ID: return ELEMS;
#define RAYO__DTYPE_BYTES_CASE(ID, NUMBER, NAME, ELEMS, BYTES) case RAYO_DTYPE_##ID: return BYTES;

/* The dtype's name ("f32", "q4_k"...); NULL for an unknown id. */
RAYO_DTYPE_FN const char *rayo_dtype_name(rayo_dtype dt)
{
    switch (dt) {
    RAYO_DTYPE_LIST(RAYO__DTYPE_NAME_CASE)
    default: return NULL;
    }
}

/* Elements per block: 1 for plain types; 0 for an unknown id. */
RAYO_DTYPE_FN size_t rayo_dtype_block_elems(rayo_dtype dt)
{
    switch (dt) {
    RAYO_DTYPE_LIST(RAYO__DTYPE_ELEMS_CASE)
    default: return 0;
    }
}

/* Bytes per block; 0 for an unknown id. */
RAYO_DTYPE_FN size_t rayo_dtype_block_bytes(rayo_dtype dt)
{
    switch (dt) {
    RAYO_DTYPE_LIST(RAYO__DTYPE_BYTES_CASE)
    default: return 0;
    }
}
#undef RAYO__DTYPE_NAME_CASE
#undef RAYO__DTYPE_ELEMS_CASE
#undef RAYO__DTYPE_BYTES_CASE

static inline int rayo_dtype_is_block(rayo_dtype dt)
{
    return rayo_dtype_block_elems(dt) > 1;
}

/* Bytes of a row of n elements into *bytes.  Returns 1, or 0 when the id is
 * unknown, n is not a whole number of blocks, or the size overflows. */
RAYO_DTYPE_FN int rayo_dtype_row_bytes(rayo_dtype dt, size_t n, size_t *bytes)
{
    size_t per = rayo_dtype_block_elems(dt), size = rayo_dtype_block_bytes(dt);
    if (!per || n % per)
        return 0;
    size_t blocks = n / per;
    if (blocks > SIZE_MAX / size)
        return 0;
    *bytes = blocks * size;
    return 1;
}

/* ---- f16 and bf16 --------------------------------------------------------- */
static inline uint32_t rayo_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float rayo_f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Rounds m / 2^shift to the nearest integer, ties to even (1 <= shift <= 31). */
static inline uint32_t rayo__shift_round_even(uint32_t m, unsigned shift)
{
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

RAYO_DTYPE_FN uint16_t rayo_f32_to_f16(float x)
{
    uint32_t u = rayo_f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, keep the top payload bits */
        return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
    if (a >= 0x477ff000u) /* >= 65520 = halfway from 65504 (odd) up: infinity */
        return (uint16_t)(sign | 0x7c00);
    if (a < 0x38800000u) { /* below 2^-14: an f16 subnormal (in units of 2^-24) or zero */
        unsigned e = a >> 23 ? a >> 23 : 1;           /* f32 subnormals scale like e = 1 */
        uint32_t m = (a & 0x7fffffu) | (a >> 23 ? 0x800000u : 0);
        unsigned shift = 126 - e;                      /* x = m * 2^-24 / 2^shift */
        if (shift > 24)                                /* x < 2^-25: rounds to zero */
            return sign;
        return (uint16_t)(sign | rayo__shift_round_even(m, shift)); /* 0x400 = smallest normal */
    }
    /* Normal: round away 13 mantissa bits (a carry moves into the exponent,
     * which is right), then rebias the exponent from 127 to 15. */
    uint32_t r = a + 0x0fffu + ((a >> 13) & 1);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

RAYO_DTYPE_FN float rayo_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f)
        return rayo_f32_from_bits(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0)
            return rayo_f32_from_bits(sign);
        e = 113; /* normalise the subnormal m * 2^-24 */
        while (!(m & 0x400)) {
            m <<= 1;
            e--;
        }
        return rayo_f32_from_bits(sign | (e << 23) | ((m & 0x3ff) << 13));
    }
    return rayo_f32_from_bits(sign | ((e + 112) << 23) | (m << 13));
}

/* bf16 is the top half of an f32: rounding the low 16 bits away, ties to
 * even, is one integer add (a carry into the exponent is right, up to inf). */
RAYO_DTYPE_FN uint16_t rayo_f32_to_bf16(float x)
{
    uint32_t u = rayo_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* NaN: quiet */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

RAYO_DTYPE_FN float rayo_bf16_to_f32(uint16_t h)
{
    return rayo_f32_from_bits((uint32_t)h << 16);
}

/* ---- helpers for blocks ---- */
static inline uint16_t rayo__le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline void rayo__put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

static inline float rayo__absf(float x)
{
    return rayo_f32_from_bits(rayo_f32_bits(x) & 0x7fffffffu);
}

/* C's roundf (halves away from zero) for |x| < 2^23, without libm: x minus
 * its truncation is exact there. */
static inline int rayo__round_away(float x)
{
    int t = (int)x;
    float frac = x - (float)t;
    if (frac >= 0.5f)
        t++;
    else if (frac <= -0.5f)
        t--;
    return t;
}

/* GCC contracts a * b + c into an FMA in GNU C modes, which changes the
 * rounding a quantizer depends on; these functions keep the two roundings. */
#if defined(__GNUC__) && !defined(__clang__)
#define RAYO__NO_FMA_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define RAYO__NO_FMA_CONTRACT /* clang contracts only within one expression */
#endif

/* The (sc, m) pair of sub-block j (0..7) of a Q4_K block's 12 scale bytes. */
static inline void rayo_q4_k_scale_min(const uint8_t *scales, int j, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4));
        *m = (uint8_t)((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

/* ---- quantize (n a multiple of 32; dst holds n / 32 blocks) ---------------
 * Q8_0, per block: amax = max |x|, d = amax / 127, q = roundf(x * (1 / d))
 * (0 when d is 0), d stored as f16.  The unrounded f32 d is used for q.
 * Non-finite inputs give valid but unspecified blocks. */
RAYO_DTYPE_FN void rayo_quantize_q8_0(const float *x, void *dst, size_t n)
{
    uint8_t *out = (uint8_t *)dst;
    for (size_t b = 0; b < n / RAYO_QK8_0; b++, x += RAYO_QK8_0, out += RAYO_Q8_0_BYTES) {
        float amax = 0.0f;
        for (int j = 0; j < RAYO_QK8_0; j++)
            if (rayo__absf(x[j]) > amax)
                amax = rayo__absf(x[j]);
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        rayo__put_le16(out, rayo_f32_to_f16(d));
        for (int j = 0; j < RAYO_QK8_0; j++) {
            float v = x[j] * id;
            int q = v != v ? 0 : v > 127.0f ? 127 : v < -127.0f ? -127 : rayo__round_away(v);
            out[2 + j] = (uint8_t)(int8_t)q;
        }
    }
}

/* Q4_0, per block: max = the first value of largest |x| (with its sign),
 * d = max / -8, q = min(15, trunc(x * (1 / d) + 8.5)) with both operations
 * rounded to f32 (so the extreme value maps to q = 0 and its negation to 15),
 * d stored as f16. */
RAYO_DTYPE_FN RAYO__NO_FMA_CONTRACT void rayo_quantize_q4_0(const float *x, void *dst, size_t n)
{
    uint8_t *out = (uint8_t *)dst;
    for (size_t b = 0; b < n / RAYO_QK4_0; b++, x += RAYO_QK4_0, out += RAYO_Q4_0_BYTES) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < RAYO_QK4_0; j++)
            if (rayo__absf(x[j]) > amax) {
                amax = rayo__absf(x[j]);
                max = x[j];
            }
        float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        rayo__put_le16(out, rayo_f32_to_f16(d));
        for (int j = 0; j < RAYO_QK4_0; j++) {
            float p = x[j] * id;
            float t = p + 8.5f;
            int q = t != t || t < 0.0f ? 0 : t >= 15.0f ? 15 : (int)t;
            uint8_t nib = (uint8_t)q;
            if (j < RAYO_QK4_0 / 2)
                out[2 + j] = nib;
            else
                out[2 + j - RAYO_QK4_0 / 2] |= (uint8_t)(nib << 4);
        }
    }
}

/* ---- dequantize (n a multiple of the block size) ------------------------- */
RAYO_DTYPE_FN void rayo_dequantize_q8_0(const void *src, float *y, size_t n)
{
    const uint8_t *blk = (const uint8_t *)src;
    for (size_t b = 0; b < n / RAYO_QK8_0; b++, blk += RAYO_Q8_0_BYTES, y += RAYO_QK8_0) {
        float d = rayo_f16_to_f32(rayo__le16(blk));
        for (int j = 0; j < RAYO_QK8_0; j++)
            y[j] = (float)(int8_t)blk[2 + j] * d;
    }
}

RAYO_DTYPE_FN void rayo_dequantize_q4_0(const void *src, float *y, size_t n)
{
    const uint8_t *blk = (const uint8_t *)src;
    for (size_t b = 0; b < n / RAYO_QK4_0; b++, blk += RAYO_Q4_0_BYTES, y += RAYO_QK4_0) {
        float d = rayo_f16_to_f32(rayo__le16(blk));
        for (int j = 0; j < RAYO_QK4_0 / 2; j++) {
            y[j] = (float)((blk[2 + j] & 15) - 8) * d;
            y[j + RAYO_QK4_0 / 2] = (float)((blk[2 + j] >> 4) - 8) * d;
        }
    }
}

RAYO_DTYPE_FN void rayo_dequantize_q4_k(const void *src, float *y, size_t n)
{
    const uint8_t *blk = (const uint8_t *)src;
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q4_K_BYTES) {
        float d = rayo_f16_to_f32(rayo__le16(blk));
        float dmin = rayo_f16_to_f32(rayo__le16(blk + RAYO_Q4_K_DMIN));
        for (int s = 0; s < 8; s++, y += 32) {
            uint8_t sc, m;
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, s, &sc, &m);
            const uint8_t *q = blk + RAYO_Q4_K_QS + 32 * (s / 2);
            float ds = d * (float)sc, ms = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                y[l] = ds * (float)((q[l] >> (4 * (s & 1))) & 15) - ms;
        }
    }
}

/* The 6-bit code of value i (0..255) of a Q6_K block, minus 32. */
static inline int rayo_q6_k_code(const uint8_t *blk, int i)
{
    int h = i / 128, k = (i % 128) / 32, l = i % 32;
    int low = (blk[64 * h + 32 * (k & 1) + l] >> (4 * (k >> 1))) & 15;
    int high = (blk[RAYO_Q6_K_QH + 32 * h + l] >> (2 * k)) & 3;
    return (low | (high << 4)) - 32;
}

RAYO_DTYPE_FN void rayo_dequantize_q6_k(const void *src, float *y, size_t n)
{
    const uint8_t *blk = (const uint8_t *)src;
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q6_K_BYTES, y += RAYO_QK_K) {
        float d = rayo_f16_to_f32(rayo__le16(blk + RAYO_Q6_K_D));
        for (int i = 0; i < RAYO_QK_K; i++) {
            float ds = d * (float)(int8_t)blk[RAYO_Q6_K_SCALES + i / 16];
            y[i] = ds * (float)rayo_q6_k_code(blk, i);
        }
    }
}

/* Any float-valued dtype -> f32 (n elements, a multiple of the block size).
 * Returns 1, or 0 for I32 and unknown ids. */
RAYO_DTYPE_FN int rayo_dequantize_row(rayo_dtype dt, const void *src, float *y, size_t n)
{
    const uint8_t *p = (const uint8_t *)src;
    switch (dt) {
    case RAYO_DTYPE_F32: memcpy(y, src, n * sizeof(float)); return 1;
    case RAYO_DTYPE_F16:
        for (size_t i = 0; i < n; i++)
            y[i] = rayo_f16_to_f32(rayo__le16(p + 2 * i));
        return 1;
    case RAYO_DTYPE_BF16:
        for (size_t i = 0; i < n; i++)
            y[i] = rayo_bf16_to_f32(rayo__le16(p + 2 * i));
        return 1;
    case RAYO_DTYPE_Q8_0: rayo_dequantize_q8_0(src, y, n); return 1;
    case RAYO_DTYPE_Q4_0: rayo_dequantize_q4_0(src, y, n); return 1;
    case RAYO_DTYPE_Q4_K: rayo_dequantize_q4_k(src, y, n); return 1;
    case RAYO_DTYPE_Q6_K: rayo_dequantize_q6_k(src, y, n); return 1;
    default: return 0;
    }
}

/* ---- row dot products: sum_i row[i] * x[i] over n elements ---------------
 * The scalar reference kernels of quantized gemv/matmul.  f32 accumulation,
 * one partial sum per block (per sub-block for Q4_K), scaled once. */
/* f16 (brain = 0) or bf16 (brain = 1) row. */
static inline float rayo__dot_half_f32(const void *row, const float *x, size_t n, int brain)
{
    const uint8_t *p = (const uint8_t *)row;
    float s = 0.0f;
    for (size_t i = 0; i < n; i++) {
        uint16_t h = rayo__le16(p + 2 * i);
        s += (brain ? rayo_bf16_to_f32(h) : rayo_f16_to_f32(h)) * x[i];
    }
    return s;
}

static inline float rayo_dot_f16_f32(const void *row, const float *x, size_t n)
{
    return rayo__dot_half_f32(row, x, n, 0);
}

static inline float rayo_dot_bf16_f32(const void *row, const float *x, size_t n)
{
    return rayo__dot_half_f32(row, x, n, 1);
}

static inline float rayo_dot_q8_0_f32(const void *row, const float *x, size_t n)
{
    const uint8_t *blk = (const uint8_t *)row;
    float s = 0.0f;
    for (size_t b = 0; b < n / RAYO_QK8_0; b++, blk += RAYO_Q8_0_BYTES, x += RAYO_QK8_0) {
        float part = 0.0f;
        for (int j = 0; j < RAYO_QK8_0; j++)
            part += (float)(int8_t)blk[2 + j] * x[j];
        s += rayo_f16_to_f32(rayo__le16(blk)) * part;
    }
    return s;
}

static inline float rayo_dot_q4_0_f32(const void *row, const float *x, size_t n)
{
    const uint8_t *blk = (const uint8_t *)row;
    float s = 0.0f;
    for (size_t b = 0; b < n / RAYO_QK4_0; b++, blk += RAYO_Q4_0_BYTES, x += RAYO_QK4_0) {
        float part = 0.0f;
        for (int j = 0; j < RAYO_QK4_0 / 2; j++)
            part += (float)((blk[2 + j] & 15) - 8) * x[j] +
                    (float)((blk[2 + j] >> 4) - 8) * x[j + RAYO_QK4_0 / 2];
        s += rayo_f16_to_f32(rayo__le16(blk)) * part;
    }
    return s;
}

/* Q4_K: per sub-block, (d sc) sum(q x) - (dmin m) sum(x). */
static inline float rayo_dot_q4_k_f32(const void *row, const float *x, size_t n)
{
    const uint8_t *blk = (const uint8_t *)row;
    float s = 0.0f;
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q4_K_BYTES) {
        float d = rayo_f16_to_f32(rayo__le16(blk));
        float dmin = rayo_f16_to_f32(rayo__le16(blk + RAYO_Q4_K_DMIN));
        for (int sb = 0; sb < 8; sb++, x += 32) {
            uint8_t sc, m;
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, sb, &sc, &m);
            const uint8_t *q = blk + RAYO_Q4_K_QS + 32 * (sb / 2);
            float qx = 0.0f, sx = 0.0f;
            for (int l = 0; l < 32; l++) {
                qx += (float)((q[l] >> (4 * (sb & 1))) & 15) * x[l];
                sx += x[l];
            }
            s += d * (float)sc * qx - dmin * (float)m * sx;
        }
    }
    return s;
}

static inline float rayo_dot_q6_k_f32(const void *row, const float *x, size_t n)
{
    const uint8_t *blk = (const uint8_t *)row;
    float s = 0.0f;
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q6_K_BYTES, x += RAYO_QK_K) {
        float d = rayo_f16_to_f32(rayo__le16(blk + RAYO_Q6_K_D));
        for (int g = 0; g < RAYO_QK_K / 16; g++) { /* 16 groups of 16 share a scale */
            float part = 0.0f;
            for (int i = 16 * g; i < 16 * g + 16; i++)
                part += (float)rayo_q6_k_code(blk, i) * x[i];
            s += d * (float)(int8_t)blk[RAYO_Q6_K_SCALES + g] * part;
        }
    }
    return s;
}

/* The dot product of a row of any float-valued dtype with an f32 vector
 * (n a multiple of the block size); *ok = 0 for I32 and unknown ids. */
static inline float rayo_dot_row_f32(rayo_dtype dt, const void *row, const float *x, size_t n, int *ok)
{
    *ok = 1;
    switch (dt) {
    case RAYO_DTYPE_F32: {
        const float *r = (const float *)row;
        float s = 0.0f;
        for (size_t i = 0; i < n; i++)
            s += r[i] * x[i];
        return s;
    }
    case RAYO_DTYPE_F16: return rayo_dot_f16_f32(row, x, n);
    case RAYO_DTYPE_BF16: return rayo_dot_bf16_f32(row, x, n);
    case RAYO_DTYPE_Q8_0: return rayo_dot_q8_0_f32(row, x, n);
    case RAYO_DTYPE_Q4_0: return rayo_dot_q4_0_f32(row, x, n);
    case RAYO_DTYPE_Q4_K: return rayo_dot_q4_k_f32(row, x, n);
    case RAYO_DTYPE_Q6_K: return rayo_dot_q6_k_f32(row, x, n);
    default: *ok = 0; return 0.0f;
    }
}

#ifdef __cplusplus
}
#endif
#endif
