/* SPDX-License-Identifier: MIT */
/* dtype.c - the dtype helpers as exported functions of librayo, for
 * programs that cannot use rayo-dtype.h's static inline forms (Python's
 * ctypes, other foreign-function interfaces), and what only the library
 * has: the Q4_K and Q6_K quantizers and the checked whole-row conversions. */

/* rayo-dtype.h's RAYO_DTYPE_FN helpers become exported definitions here,
 * compiled from the same bodies the plugins inline.  Their declaration is
 * their definition, hence no separate prototype. */
#define RAYO_DTYPE_FN __attribute__((visibility("default")))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#include "rayo-dtype.h"
#pragma GCC diagnostic pop

#include "internal.h"
#include <math.h>

/* ---- Q4_K and Q6_K quantizers ---------------------------------------------
 * A plain min/max rule (llama.cpp searches for better scales: the blocks
 * differ, the format does not). */

/* A block scale (v >= 0) as f16, rounded up so that no 6- or 8-bit
 * sub-block scale needs more than its maximum; returns the stored value. */
static float put_block_scale(uint8_t *p, float v)
{
    uint16_t h = rayo_f32_to_f16(v);
    if (rayo_f16_to_f32(h) < v)
        h++; /* the next f16 up: positive halves are ordered like their bits */
    rayo__put_le16(p, h);
    return rayo_f16_to_f32(h);
}

static int clamp_int(long v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : (int)v;
}

/* Packs the eight 6-bit (sc, m) pairs the way rayo_q4_k_scale_min reads them. */
static void pack_q4_k_scales(uint8_t *s, const int *sc, const int *m)
{
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
}

/* The 4-bit codes of one Q4_K sub-block s with step ds and offset ms. */
static void put_q4_k_codes(const float *x, uint8_t *blk, int s, float ds, float ms)
{
    uint8_t *q = blk + RAYO_Q4_K_QS + 32 * (s / 2);
    for (int l = 0; l < 32; l++) {
        int v = ds > 0 ? clamp_int(lroundf((x[l] + ms) / ds), 0, 15) : 0;
        q[l] |= (uint8_t)(v << (4 * (s & 1)));
    }
}

/* One block: sub-block s spans [lo_s, hi_s] with lo_s <= 0; its step is
 * (hi_s - lo_s) / 15 and its offset -lo_s, both as 6-bit multiples of the
 * block's f16 d and dmin. */
static void q4_k_block(const float *x, uint8_t *out)
{
    float step[8], off[8], max_step = 0, max_off = 0;
    for (int s = 0; s < 8; s++) {
        float lo = 0, hi = 0;
        for (int l = 0; l < 32; l++) {
            lo = fminf(lo, x[32 * s + l]);
            hi = fmaxf(hi, x[32 * s + l]);
        }
        step[s] = (hi - lo) / 15;
        off[s] = -lo;
        max_step = fmaxf(max_step, step[s]);
        max_off = fmaxf(max_off, off[s]);
    }
    memset(out, 0, RAYO_Q4_K_BYTES);
    float d = put_block_scale(out, max_step / 63);
    float dmin = put_block_scale(out + RAYO_Q4_K_DMIN, max_off / 63);
    int sc[8], m[8];
    for (int s = 0; s < 8; s++) {
        sc[s] = d > 0 ? clamp_int(lroundf(step[s] / d), 0, 63) : 0;
        m[s] = dmin > 0 ? clamp_int(lroundf(off[s] / dmin), 0, 63) : 0;
    }
    pack_q4_k_scales(out + RAYO_Q4_K_SCALES, sc, m);
    for (int s = 0; s < 8; s++)
        put_q4_k_codes(x + 32 * s, out, s, d * (float)sc[s], dmin * (float)m[s]);
}

RAYO_API void rayo_quantize_q4_k(const float *x, void *dst, size_t n)
{
    uint8_t *out = dst;
    for (size_t b = 0; b < n / RAYO_QK_K; b++)
        q4_k_block(x + b * RAYO_QK_K, out + b * RAYO_Q4_K_BYTES);
}

/* Value i's 6-bit code (q + 32) into ql/qh, the inverse of rayo_q6_k_code. */
static void put_q6_k_code(uint8_t *blk, int i, int code)
{
    int h = i / 128, k = (i % 128) / 32, l = i % 32;
    blk[64 * h + 32 * (k & 1) + l] |= (uint8_t)((code & 15) << (4 * (k >> 1)));
    blk[RAYO_Q6_K_QH + 32 * h + l] |= (uint8_t)((code >> 4) << (2 * k));
}

/* One block: group g of 16 values gets the scale max|x| / 31 as a signed
 * 8-bit multiple of the block's f16 d. */
static void q6_k_block(const float *x, uint8_t *out)
{
    float scale[16], max_scale = 0;
    for (int g = 0; g < 16; g++) {
        float amax = 0;
        for (int l = 0; l < 16; l++)
            amax = fmaxf(amax, fabsf(x[16 * g + l]));
        scale[g] = amax / 31;
        max_scale = fmaxf(max_scale, scale[g]);
    }
    memset(out, 0, RAYO_Q6_K_BYTES);
    float d = put_block_scale(out + RAYO_Q6_K_D, max_scale / 127);
    for (int g = 0; g < 16; g++) {
        int sc = d > 0 ? clamp_int(lroundf(scale[g] / d), -128, 127) : 0;
        out[RAYO_Q6_K_SCALES + g] = (uint8_t)(int8_t)sc;
        float ds = d * (float)sc;
        for (int l = 0; l < 16; l++) {
            int q = ds > 0 ? clamp_int(lroundf(x[16 * g + l] / ds), -32, 31) : 0;
            put_q6_k_code(out, 16 * g + l, q + 32);
        }
    }
}

RAYO_API void rayo_quantize_q6_k(const float *x, void *dst, size_t n)
{
    uint8_t *out = dst;
    for (size_t b = 0; b < n / RAYO_QK_K; b++)
        q6_k_block(x + b * RAYO_QK_K, out + b * RAYO_Q6_K_BYTES);
}

/* ---- checked whole-row conversions --------------------------------------- */

/* RAYO_OK when a row of n elements of dt can be converted to or from f32. */
static rayo_status check_row(const char *fn, rayo_dtype dt, const void *src, const void *dst,
    size_t n)
{
    const char *name = rayo_dtype_name(dt);
    size_t bytes;
    if (!name || dt == RAYO_DTYPE_I32)
        return rayo__fail(RAYO_E_INVALID, "%s: dtype %d is not a float format (f32, f16, bf16, "
            "q8_0, q4_0, q4_k, q6_k)", fn, (int)dt);
    if (!rayo_dtype_row_bytes(dt, n, &bytes))
        return rayo__fail(RAYO_E_INVALID, "%s: n = %zu is not a multiple of %s's block of %zu",
            fn, n, name, rayo_dtype_block_elems(dt));
    if (n && (!src || !dst))
        return rayo__fail(RAYO_E_INVALID, "%s: NULL pointer", fn);
    return RAYO_OK;
}

static void half_from_f32(const float *x, uint8_t *out, size_t n, int brain)
{
    for (size_t i = 0; i < n; i++)
        rayo__put_le16(out + 2 * i, brain ? rayo_f32_to_bf16(x[i]) : rayo_f32_to_f16(x[i]));
}

RAYO_API rayo_status rayo_dtype_from_f32(rayo_dtype dt, const float *x, void *dst, size_t n)
{
    rayo_status st = check_row("rayo_dtype_from_f32", dt, x, dst, n);
    if (st != RAYO_OK || n == 0)
        return st;
    switch (dt) {
    case RAYO_DTYPE_F32: memmove(dst, x, n * sizeof(float)); break;
    case RAYO_DTYPE_F16: half_from_f32(x, dst, n, 0); break;
    case RAYO_DTYPE_BF16: half_from_f32(x, dst, n, 1); break;
    case RAYO_DTYPE_Q8_0: rayo_quantize_q8_0(x, dst, n); break;
    case RAYO_DTYPE_Q4_0: rayo_quantize_q4_0(x, dst, n); break;
    case RAYO_DTYPE_Q4_K: rayo_quantize_q4_k(x, dst, n); break;
    case RAYO_DTYPE_Q6_K: rayo_quantize_q6_k(x, dst, n); break;
    default: break; /* refused by check_row */
    }
    return RAYO_OK;
}

RAYO_API rayo_status rayo_dtype_to_f32(rayo_dtype dt, const void *src, float *y, size_t n)
{
    rayo_status st = check_row("rayo_dtype_to_f32", dt, src, y, n);
    if (st != RAYO_OK || n == 0)
        return st;
    if (dt == RAYO_DTYPE_F32)
        memmove(y, src, n * sizeof(float));
    else
        rayo_dequantize_row(dt, src, y, n);
    return RAYO_OK;
}

RAYO_API int rayo_dtype_by_name(const char *name)
{
    for (int dt = 0; name && dt < RAYO_DTYPE_LIMIT; dt++) {
        const char *s = rayo_dtype_name((rayo_dtype)dt);
        if (s && strcmp(s, name) == 0)
            return dt;
    }
    return -1;
}
