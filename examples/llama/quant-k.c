/* quant-k.c - Q4_K and Q6_K quantizers (see quant-k.h; the layouts are
 * described next to rayo_block_q4_k and rayo_block_q6_k in rayo-dtype.h). */
#include "quant-k.h"
#include <math.h>
#include <rayo-dtype.h>
#include <stdint.h>
#include <string.h>

/* A block scale (v >= 0) as f16, rounded up so that no 6- or 8-bit
 * sub-block scale needs more than its maximum; returns the stored value. */
static float put_scale(uint8_t *p, float v)
{
    uint16_t h = rayo_f32_to_f16(v);
    if (rayo_f16_to_f32(h) < v)
        h++; /* the next f16 up: positive halves are ordered like their bits */
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
    return rayo_f16_to_f32(h);
}

static int clampi(long v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }

/* Packs the eight 6-bit (sc, m) pairs the way rayo_q4_k_scale_min reads them. */
static void pack_q4_k_scales(uint8_t *s, const int *sc, const int *m)
{
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
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
    float d = put_scale(out, max_step / 63);
    float dmin = put_scale(out + RAYO_Q4_K_DMIN, max_off / 63);
    int sc[8], m[8];
    for (int s = 0; s < 8; s++) {
        sc[s] = d > 0 ? clampi(lroundf(step[s] / d), 0, 63) : 0;
        m[s] = dmin > 0 ? clampi(lroundf(off[s] / dmin), 0, 63) : 0;
    }
    pack_q4_k_scales(out + RAYO_Q4_K_SCALES, sc, m);
    for (int s = 0; s < 8; s++) {
        float ds = d * (float)sc[s], ms = dmin * (float)m[s];
        uint8_t *q = out + RAYO_Q4_K_QS + 32 * (s / 2);
        for (int l = 0; l < 32; l++) {
            int v = ds > 0 ? clampi(lroundf((x[32 * s + l] + ms) / ds), 0, 15) : 0;
            q[l] |= (uint8_t)(v << (4 * (s & 1)));
        }
    }
}

void quantize_q4_k(const float *x, void *dst, size_t n)
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
    float d = put_scale(out + RAYO_Q6_K_D, max_scale / 127);
    for (int g = 0; g < 16; g++) {
        int sc = d > 0 ? clampi(lroundf(scale[g] / d), -128, 127) : 0;
        out[RAYO_Q6_K_SCALES + g] = (uint8_t)(int8_t)sc;
        float ds = d * (float)sc;
        for (int l = 0; l < 16; l++) {
            int q = ds > 0 ? clampi(lroundf(x[16 * g + l] / ds), -32, 31) : 0;
            put_q6_k_code(out, 16 * g + l, q + 32);
        }
    }
}

void quantize_q6_k(const float *x, void *dst, size_t n)
{
    uint8_t *out = dst;
    for (size_t b = 0; b < n / RAYO_QK_K; b++)
        q6_k_block(x + b * RAYO_QK_K, out + b * RAYO_Q6_K_BYTES);
}
