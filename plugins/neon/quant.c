/* SPDX-License-Identifier: MIT */
/* quant.c - gemv with half or block-quantized weights: y (m) = alpha A x +
 * beta y, A (m x n) in f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K with rows along
 * n (row stride lda elements), x and y f32.
 *
 * Decode streams every weight byte once, so blocks are decoded in registers
 * (bytes -> int16 -> int32 -> float lanes) and multiplied into x at once; no
 * row is dequantized to memory.  Strict precision uses baseline Advanced
 * SIMD only (x is f32: quantizing it to int8 would break the 1e-5 contract).
 *
 * Relaxed Q8_0 and Q4_0, where the CPU has the dotprod extension (SDOT,
 * Armv8.2; AT_HWCAP's HWCAP_ASIMDDP, read per call): x is rounded once to
 * int8 per 32 values (largest |x| / 127, as the x86 plugins' relaxed path,
 * cpu-typed-gemv_tmpl.c) when that passes the rounding budget, and each
 * block's 32 codes go into x by two SDOTs (four products summed into each
 * int32 lane, exact), one float multiply-add by d times x's scale.  Four
 * rows a pass.  Elsewhere (no dotprod, strict, other dtypes, x that int8
 * cannot hold) the float kernels below run.
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
 * the shared glue of ../cpu-base/cpu-typed-gemv_tmpl.c (its strict path; the
 * SDOT kernels use its job and split too).
 */
#include "plugin.h"
#include "neon-math.h"
#define TYPED_GEMV_STRICT_ONLY /* the template's integer path is x86's: relaxed SDOT is below */
#include "cpu-typed-gemv_tmpl.c"
#include "simd128-int-gemv_tmpl.c"

#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20) /* AT_HWCAP bit of the dotprod extension (asm/hwcap.h) */
#endif

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

/* ---- relaxed Q8_0 and Q4_0: SDOT against x in int8 ------------------------- */

/* SDOT (Armv8.2 dotprod) is optional: these functions are compiled for it
 * and run only where the kernel reports it (HWCAP_ASIMDDP). */
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

/* The sums of four products of a block's 32 codes with x's 32 int8 values,
 * in four int32 lanes (exact). */
typedef int32x4_t sdot_fn(const uint8_t *blk, const int8_t *xq);

DOTPROD static inline int32x4_t sdot_q8_0(const uint8_t *blk, const int8_t *xq)
{
    const int8_t *q = (const int8_t *)(blk + 2);
    int32x4_t s = vdotq_s32(vdupq_n_s32(0), vld1q_s8(q), vld1q_s8(xq));
    return vdotq_s32(s, vld1q_s8(q + 16), vld1q_s8(xq + 16));
}

/* Q4_0's codes q - 8 (-8..7) are signed bytes, as SDOT wants them. */
DOTPROD static inline int32x4_t sdot_q4_0(const uint8_t *blk, const int8_t *xq)
{
    uint8x16_t bytes = vld1q_u8(blk + 2);
    int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(15))), vdupq_n_s8(8));
    int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4)), vdupq_n_s8(8));
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo, vld1q_s8(xq)), hi, vld1q_s8(xq + 16));
}

/* The dots of R rows (blk, blk + stride, ...) with x: per block, its int32
 * sums times d and x's scale in float lanes, over TYPED_GEMV_INT_GROUP
 * values, then double (as the x86 relaxed kernels).  x is read once for
 * the R rows. */
DOTPROD static inline __attribute__((always_inline)) void
sdot_rows(const uint8_t *blk, size_t stride, int R, const typed_gemv_x *x, size_t blocks, size_t block_bytes,
          sdot_fn *dot, double *out)
{
    for (int r = 0; r < R; r++)
        out[r] = 0.0;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + TYPED_GEMV_INT_GROUP / 32 < blocks ? b + TYPED_GEMV_INT_GROUP / 32 : blocks;
        float32x4_t g[4] = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };
        for (; b < end; b++) {
            const int8_t *xq = x->q8_32 + 32 * b;
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
            {
                const uint8_t *p = blk + r * stride + b * block_bytes;
                g[r] = vfmaq_n_f32(g[r], vcvtq_f32_s32(dot(p, xq)), f16_at(p) * x->scale8_32[b]);
            }
        }
        for (int r = 0; r < R; r++)
            out[r] += hsum_f64(g[r]);
    }
}

DOTPROD SIMD128_INT_ROWS(rows_q8_0_sdot, sdot_rows, sdot_q8_0, RAYO_Q8_0_BYTES)
DOTPROD SIMD128_INT_ROWS(rows_q4_0_sdot, sdot_rows, sdot_q4_0, RAYO_Q4_0_BYTES)

/* ---- the kernel ----------------------------------------------------------- */

/* Relaxed Q8_0 and Q4_0 take SDOT where the CPU has dotprod (getauxval: one
 * load), against x in int8 (simd128-int-gemv_tmpl.c); the rest, and x that
 * int8 cannot hold, the float kernels. */
rayo_status neon_gemv_quant(void *state, const rayo_call *call)
{
    if (simd128_int_gemv_takes(call) && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP)) {
        int q8_0 = RAYO_DTYPE_OF(call->dtypes, 0) == RAYO_DTYPE_Q8_0;
        if (simd128_int_gemv(state, call, q8_0 ? rows_q8_0_sdot : rows_q4_0_sdot, 1))
            return RAYO_OK;
    }
    return typed_gemv_run(state, call);
}
