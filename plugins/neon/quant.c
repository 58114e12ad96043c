/* SPDX-License-Identifier: MIT */
/* quant.c - gemv with half or block-quantized weights: y (m) = alpha A x +
 * beta y, A (m x n) in f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K with rows along
 * n (row stride lda elements), x and y f32.
 *
 * Decode streams every weight byte once, so blocks are decoded in registers
 * (bytes -> int16 -> int32 -> float lanes) and multiplied into x at once; no
 * row is dequantized to memory.  Baseline Advanced SIMD only (no SDOT: x is
 * f32, and quantizing it to int8 would break the 1e-5 contract).
 *
 * Accuracy (contract 1e-5 of sum|terms|, judged on the dequantized values):
 * each group of 16 or 32 values is summed as sum q x in float lanes and
 * scaled once (d sc sum q x; Q4_K also - dmin m sum x, its contract counts
 * the two parts separately); scaled groups are added in float over at most
 * 256 values, then in double, so the error stays near 40 * 2^-24 of
 * sum|terms| however long the row.  f16 and bf16 widen exactly (FCVTL, a
 * shift).
 *
 * Q8_0 and Q4_0 go four rows per pass (cpu-typed-gemv_tmpl.c), reading x once for the
 * four.  The checks, the split of the rows over the pool and y's update are
 * the shared glue of ../cpu-base/cpu-typed-gemv_tmpl.c (its strict path: there is no
 * integer kernel here, relaxed calls run these too).
 */
#include "plugin.h"
#include "neon-math.h"
#define TYPED_GEMV_STRICT_ONLY /* no integer path here: relaxed calls run these */
#include "cpu-typed-gemv_tmpl.c"

/* Blocks of 32 summed in float lanes before the lanes go to double. */
#define SMALL_BLOCKS_PER_GROUP 8

/* ---- decoding helpers --------------------------------------------------- */

/* The f16 at p as a float (FCVT: exact). */
static inline float f16_at(const uint8_t *p)
{
    float16x4_t h = vreinterpret_f16_u16(vdup_n_u16(rayo__le16(p)));
    return vgetq_lane_f32(vcvt_f32_f16(h), 0);
}

static inline double hsum_f64(float32x4_t v)
{
    return vaddvq_f64(vaddq_f64(vcvt_f64_f32(vget_low_f32(v)), vcvt_high_f64_f32(v)));
}

/* sum q x over 16 signed bytes q and x[0..16), in float lanes. */
static inline float32x4_t dot16(int8x16_t q, const float *x)
{
    int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
    float32x4_t s = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vld1q_f32(x));
    s = vfmaq_f32(s, vcvtq_f32_s32(vmovl_high_s16(lo)), vld1q_f32(x + 4));
    s = vfmaq_f32(s, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vld1q_f32(x + 8));
    return vfmaq_f32(s, vcvtq_f32_s32(vmovl_high_s16(hi)), vld1q_f32(x + 12));
}

/* Q8_0 block: sum q x over its 32 values (d left out). */
static inline float32x4_t block_q8_0(const uint8_t *blk, const float *x)
{
    const int8_t *q = (const int8_t *)(blk + 2);
    return vaddq_f32(dot16(vld1q_s8(q), x), dot16(vld1q_s8(q + 16), x + 16));
}

/* Q4_0 block: sum (q - 8) x; byte j holds value j (low nibble) and j + 16. */
static inline float32x4_t block_q4_0(const uint8_t *blk, const float *x)
{
    uint8x16_t bytes = vld1q_u8(blk + 2);
    int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(15))), vdupq_n_s8(8));
    int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4)), vdupq_n_s8(8));
    return vaddq_f32(dot16(lo, x), dot16(hi, x + 16));
}

/* ---- Q8_0, Q4_0: one row, and four rows at once -------------------------- */

/* Rows of 32-value blocks that start with their f16 scale d: sum over blocks
 * of d * block_dot, in float over groups of blocks, in double across
 * groups.  Inlined with a constant block_dot. */
static inline __attribute__((always_inline)) double
dot_small_blocks(const uint8_t *blk, const float *x, size_t n, size_t block_bytes,
                 float32x4_t (*block_dot)(const uint8_t *, const float *))
{
    double total = 0.0;
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + SMALL_BLOCKS_PER_GROUP < blocks ? b + SMALL_BLOCKS_PER_GROUP : blocks;
        float32x4_t group = vdupq_n_f32(0.0f);
        for (; b < end; b++, blk += block_bytes, x += 32)
            group = vfmaq_n_f32(group, block_dot(blk, x), f16_at(blk));
        total += hsum_f64(group);
    }
    return total;
}

/* The same over four rows (blk, blk + stride, ...), x read once for all. */
static inline __attribute__((always_inline)) void
dot4_small_blocks(const uint8_t *blk, size_t stride, const float *x, size_t n, size_t block_bytes,
                  float32x4_t (*block_dot)(const uint8_t *, const float *), double out[4])
{
    out[0] = out[1] = out[2] = out[3] = 0.0;
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + SMALL_BLOCKS_PER_GROUP < blocks ? b + SMALL_BLOCKS_PER_GROUP : blocks;
        float32x4_t group[4] = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
        for (; b < end; b++)
            for (int r = 0; r < 4; r++) {
                const uint8_t *p = blk + r * stride + b * block_bytes;
                group[r] = vfmaq_n_f32(group[r], block_dot(p, x + 32 * b), f16_at(p));
            }
        for (int r = 0; r < 4; r++)
            out[r] += hsum_f64(group[r]);
    }
}

static double dot_q8_0(const uint8_t *blk, const float *x, size_t n)
{
    return dot_small_blocks(blk, x, n, RAYO_Q8_0_BYTES, block_q8_0);
}

static double dot_q4_0(const uint8_t *blk, const float *x, size_t n)
{
    return dot_small_blocks(blk, x, n, RAYO_Q4_0_BYTES, block_q4_0);
}

static void dot4_q8_0(const uint8_t *blk, size_t stride, const float *x, size_t n, double out[4])
{
    dot4_small_blocks(blk, stride, x, n, RAYO_Q8_0_BYTES, block_q8_0, out);
}

static void dot4_q4_0(const uint8_t *blk, size_t stride, const float *x, size_t n, double out[4])
{
    dot4_small_blocks(blk, stride, x, n, RAYO_Q4_0_BYTES, block_q4_0, out);
}

/* ---- K formats: one 256-value super-block per float group ----------------- */

/* sum of x[0..32), in float lanes */
static inline float32x4_t sum32(const float *x)
{
    float32x4_t a = vaddq_f32(vld1q_f32(x), vld1q_f32(x + 4));
    float32x4_t b = vaddq_f32(vld1q_f32(x + 8), vld1q_f32(x + 12));
    a = vaddq_f32(a, vaddq_f32(vld1q_f32(x + 16), vld1q_f32(x + 20)));
    b = vaddq_f32(b, vaddq_f32(vld1q_f32(x + 24), vld1q_f32(x + 28)));
    return vaddq_f32(a, b);
}

/* Q4_K: value i of sub-block s is (d sc[s]) q - (dmin m[s]); sub-blocks 2c
 * and 2c + 1 are the low and high nibbles of the 32 bytes of chunk c.  Each
 * sub-block adds d sc (sum q x) - dmin m (sum x). */
static double dot_q4_k(const uint8_t *blk, const float *x, size_t n)
{
    double total = 0.0;
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q4_K_BYTES) {
        float d = f16_at(blk), dmin = f16_at(blk + RAYO_Q4_K_DMIN);
        float32x4_t block = vdupq_n_f32(0.0f);
        for (int s = 0; s < 8; s++, x += 32) {
            const uint8_t *qs = blk + RAYO_Q4_K_QS + 32 * (s / 2);
            uint8x16_t b0 = vld1q_u8(qs), b1 = vld1q_u8(qs + 16);
            if (s & 1)
                b0 = vshrq_n_u8(b0, 4), b1 = vshrq_n_u8(b1, 4);
            else
                b0 = vandq_u8(b0, vdupq_n_u8(15)), b1 = vandq_u8(b1, vdupq_n_u8(15));
            float32x4_t qx = vaddq_f32(dot16(vreinterpretq_s8_u8(b0), x), dot16(vreinterpretq_s8_u8(b1), x + 16));
            uint8_t sc, m;
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, s, &sc, &m);
            block = vfmaq_n_f32(block, qx, d * (float)sc);
            block = vfmsq_n_f32(block, sum32(x), dmin * (float)m);
        }
        total += hsum_f64(block);
    }
    return total;
}

/* Q6_K: value 128h + 32k + l is (d sc[(128h + 32k + l) / 16]) (q - 32), q's
 * low 4 bits from ql[64h + 32 (k & 1) + l] (nibble k >> 1), its high 2 bits
 * from bits 2k, 2k + 1 of qh[32h + l]. */
static inline int8x16_t q6_codes(uint8x16_t ql, uint8x16_t qh, int k)
{
    uint8x16_t low = (k >> 1) ? vshrq_n_u8(ql, 4) : vandq_u8(ql, vdupq_n_u8(15));
    uint8x16_t high = vandq_u8(vshlq_u8(qh, vdupq_n_s8((int8_t)(-2 * k))), vdupq_n_u8(3));
    uint8x16_t q = vorrq_u8(low, vshlq_n_u8(high, 4));
    return vsubq_s8(vreinterpretq_s8_u8(q), vdupq_n_s8(32));
}

static double dot_q6_k(const uint8_t *blk, const float *x, size_t n)
{
    double total = 0.0;
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q6_K_BYTES) {
        float d = f16_at(blk + RAYO_Q6_K_D);
        const int8_t *scales = (const int8_t *)(blk + RAYO_Q6_K_SCALES);
        float32x4_t block = vdupq_n_f32(0.0f);
        for (int h = 0; h < 2; h++) {
            uint8x16_t qh0 = vld1q_u8(blk + RAYO_Q6_K_QH + 32 * h), qh1 = vld1q_u8(blk + RAYO_Q6_K_QH + 32 * h + 16);
            for (int k = 0; k < 4; k++, x += 32) {
                const uint8_t *ql = blk + 64 * h + 32 * (k & 1);
                const int8_t *sc = scales + 8 * h + 2 * k; /* values l < 16, then l >= 16 */
                block = vfmaq_n_f32(block, dot16(q6_codes(vld1q_u8(ql), qh0, k), x), d * (float)sc[0]);
                block = vfmaq_n_f32(block, dot16(q6_codes(vld1q_u8(ql + 16), qh1, k), x + 16), d * (float)sc[1]);
            }
        }
        total += hsum_f64(block);
    }
    return total;
}

/* ---- f16 and bf16 rows --------------------------------------------------- */

static inline float32x4_t f16x4(const uint8_t *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)p)));
}

static inline float32x4_t bf16x4(const uint8_t *p)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)(const void *)p), 16));
}

/* Rows of 2-byte floats: float lanes over 256 values, double across.  n may
 * be any length: the last n % 8 values are summed one by one in double. */
static inline __attribute__((always_inline)) double
dot_halves(const uint8_t *w, const float *x, size_t n, float32x4_t (*decode4)(const uint8_t *))
{
    double total = 0.0;
    size_t i = 0;
    while (i + 8 <= n) {
        size_t end = i + 256 < n ? i + 256 : n;
        float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
        for (; i + 8 <= end; i += 8) {
            s0 = vfmaq_f32(s0, decode4(w + 2 * i), vld1q_f32(x + i));
            s1 = vfmaq_f32(s1, decode4(w + 2 * i + 8), vld1q_f32(x + i + 4));
        }
        total += hsum_f64(vaddq_f32(s0, s1));
    }
    return total + typed_gemv_half_tail(w, x, i, n, decode4 == f16x4);
}

static double dot_f16(const uint8_t *w, const float *x, size_t n)
{
    return dot_halves(w, x, n, f16x4);
}

static double dot_bf16(const uint8_t *w, const float *x, size_t n)
{
    return dot_halves(w, x, n, bf16x4);
}

/* ---- the kernel ----------------------------------------------------------- */

rayo_status neon_gemv_quant(void *state, const rayo_call *call)
{
    return typed_gemv_run(state, call);
}
