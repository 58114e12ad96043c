/* SPDX-License-Identifier: MIT */
/* quant.c - gemv with half or block-quantized weights on SIMD128: y (m) =
 * alpha A x + beta y, A (m x n) in f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K with
 * rows along n (row stride lda elements), x and y f32.
 *
 * Decode streams every weight byte once, so blocks are decoded in registers
 * (bytes -> int16 -> int32 -> float lanes) and multiplied into x at once; no
 * row is dequantized to memory.  SIMD128 has no FMA and no half-precision
 * conversion: products are a multiply and an add, and f16 is widened with
 * integer operations (exact, see wasm_f16_top_lanes in plugin.h).
 *
 * Accuracy (contract 1e-5 of sum|terms|, judged on the dequantized values):
 * each group of 16 or 32 values is summed as sum q x in float lanes and
 * scaled once (d sc sum q x; Q4_K also - dmin m sum x, its contract counts
 * the two parts separately); scaled groups are added in float over at most
 * 256 values, then in double, so the error stays near 40 * 2^-24 of
 * sum|terms| however long the row.
 *
 * Relaxed Q8_0 and Q4_0: x is rounded once to int16 per 32 values (largest
 * |x| / 32767, within the x86 plugins' rounding budget;
 * ../cpu-base/simd128-int-gemv_tmpl.c), the codes widened to int16 and
 * multiplied into it by i32x4.dot_i16x8_s (pairs summed into int32,
 * exact), one float multiply-add per block by d times x's scale.
 *
 * Q8_0 and Q4_0 go four rows per pass, reading x once for the four.  The
 * checks, the split of the rows over the pool and y's update are the shared
 * glue of ../cpu-base/cpu-typed-gemv_tmpl.c.
 */
#include "plugin.h"
#define TYPED_GEMV_STRICT_ONLY /* the template's integer path is x86's: relaxed Q8_0/Q4_0 is below */
#include "cpu-typed-gemv_tmpl.c"
#include "simd128-int-gemv_tmpl.c"

/* Blocks of 32 summed in float lanes before the lanes go to double. */
#define SMALL_BLOCKS_PER_GROUP 8

/* ---- decoding helpers --------------------------------------------------- */

/* The f16 scale at p (the vector path: no branches). */
static inline float f16_at(const uint8_t *p)
{
    return wasm_f32x4_extract_lane(wasm_f16_top_lanes(wasm_i32x4_splat((int32_t)((uint32_t)rayo__le16(p) << 16))), 0);
}

static inline double hsum_f64(vf32 v)
{
    return ((double)wasm_f32x4_extract_lane(v, 0) + (double)wasm_f32x4_extract_lane(v, 1)) +
           ((double)wasm_f32x4_extract_lane(v, 2) + (double)wasm_f32x4_extract_lane(v, 3));
}

/* Signed bytes 4l .. 4l + 3 of q as int32 lanes: each byte moved to the top
 * of its lane (swizzle), then shifted down with its sign.  Written so on
 * purpose: clang 14 turns extend_low_i8x16 -> extend_low_i16x8 -> convert
 * into lane-by-lane scalar conversions (12 instructions per 4 values). */
static inline v128_t bytes_to_i32(v128_t q, int l)
{
    const v128_t top = wasm_i8x16_make(-1, -1, -1, (int8_t)(4 * l), -1, -1, -1, (int8_t)(4 * l + 1),
                                       -1, -1, -1, (int8_t)(4 * l + 2), -1, -1, -1, (int8_t)(4 * l + 3));
    return wasm_i32x4_shr(wasm_i8x16_swizzle(q, top), 24);
}

/* sum q x over 16 signed bytes q and x[0..16), in float lanes. */
static inline vf32 dot16(v128_t q, const float *x)
{
    vf32 s = vmul(wasm_f32x4_convert_i32x4(bytes_to_i32(q, 0)), wasm_v128_load(x));
    s = vadd(s, vmul(wasm_f32x4_convert_i32x4(bytes_to_i32(q, 1)), wasm_v128_load(x + 4)));
    s = vadd(s, vmul(wasm_f32x4_convert_i32x4(bytes_to_i32(q, 2)), wasm_v128_load(x + 8)));
    return vadd(s, vmul(wasm_f32x4_convert_i32x4(bytes_to_i32(q, 3)), wasm_v128_load(x + 12)));
}

/* Q8_0 block: sum q x over its 32 values (d left out). */
static inline vf32 block_q8_0(const uint8_t *blk, const float *x)
{
    return vadd(dot16(wasm_v128_load(blk + 2), x), dot16(wasm_v128_load(blk + 18), x + 16));
}

/* Q4_0 block: sum (q - 8) x; byte j holds value j (low nibble) and j + 16. */
static inline vf32 block_q4_0(const uint8_t *blk, const float *x)
{
    v128_t bytes = wasm_v128_load(blk + 2), eight = wasm_i8x16_splat(8);
    v128_t lo = wasm_i8x16_sub(wasm_v128_and(bytes, wasm_i8x16_splat(15)), eight);
    v128_t hi = wasm_i8x16_sub(wasm_u8x16_shr(bytes, 4), eight);
    return vadd(dot16(lo, x), dot16(hi, x + 16));
}

/* ---- Q8_0, Q4_0: one row, and four rows at once -------------------------- */

/* Rows of 32-value blocks that start with their f16 scale d: sum over blocks
 * of d * block_dot, in float over groups of blocks, in double across
 * groups.  Inlined with a constant block_dot. */
static inline __attribute__((always_inline)) double
dot_small_blocks(const uint8_t *blk, const float *x, size_t n, size_t block_bytes,
                 vf32 (*block_dot)(const uint8_t *, const float *))
{
    double total = 0.0;
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + SMALL_BLOCKS_PER_GROUP < blocks ? b + SMALL_BLOCKS_PER_GROUP : blocks;
        vf32 group = vsplat(0.0f);
        for (; b < end; b++, blk += block_bytes, x += 32)
            group = vadd(group, vmul(block_dot(blk, x), vsplat(f16_at(blk))));
        total += hsum_f64(group);
    }
    return total;
}

/* The f16 scales at p, p + stride, p + 2 stride, p + 3 stride, as float
 * lanes: one decode for four rows. */
static inline vf32 f16_at4(const uint8_t *p, size_t stride)
{
    v128_t top = wasm_i32x4_make((int32_t)((uint32_t)rayo__le16(p) << 16),
                                 (int32_t)((uint32_t)rayo__le16(p + stride) << 16),
                                 (int32_t)((uint32_t)rayo__le16(p + 2 * stride) << 16),
                                 (int32_t)((uint32_t)rayo__le16(p + 3 * stride) << 16));
    return wasm_f16_top_lanes(top);
}

/* The same over four rows (blk, blk + stride, ...): x read once for all
 * (the four block_dots inline, their loads of x are the same), the four
 * scales decoded together. */
static inline __attribute__((always_inline)) void
dot4_small_blocks(const uint8_t *blk, size_t stride, const float *x, size_t n, size_t block_bytes,
                  vf32 (*block_dot)(const uint8_t *, const float *), double out[4])
{
    out[0] = out[1] = out[2] = out[3] = 0.0;
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + SMALL_BLOCKS_PER_GROUP < blocks ? b + SMALL_BLOCKS_PER_GROUP : blocks;
        vf32 g0 = vsplat(0.0f), g1 = g0, g2 = g0, g3 = g0;
        for (; b < end; b++) {
            const uint8_t *p = blk + b * block_bytes;
            const float *xb = x + 32 * b;
            vf32 d = f16_at4(p, stride);
            g0 = vadd(g0, vmul(block_dot(p, xb), wasm_i32x4_shuffle(d, d, 0, 0, 0, 0)));
            g1 = vadd(g1, vmul(block_dot(p + stride, xb), wasm_i32x4_shuffle(d, d, 1, 1, 1, 1)));
            g2 = vadd(g2, vmul(block_dot(p + 2 * stride, xb), wasm_i32x4_shuffle(d, d, 2, 2, 2, 2)));
            g3 = vadd(g3, vmul(block_dot(p + 3 * stride, xb), wasm_i32x4_shuffle(d, d, 3, 3, 3, 3)));
        }
        out[0] += hsum_f64(g0);
        out[1] += hsum_f64(g1);
        out[2] += hsum_f64(g2);
        out[3] += hsum_f64(g3);
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
static inline vf32 sum32(const float *x)
{
    vf32 a = vadd(wasm_v128_load(x), wasm_v128_load(x + 4));
    vf32 b = vadd(wasm_v128_load(x + 8), wasm_v128_load(x + 12));
    a = vadd(a, vadd(wasm_v128_load(x + 16), wasm_v128_load(x + 20)));
    b = vadd(b, vadd(wasm_v128_load(x + 24), wasm_v128_load(x + 28)));
    return vadd(a, b);
}

/* Q4_K: value i of sub-block s is (d sc[s]) q - (dmin m[s]); sub-blocks 2c
 * and 2c + 1 are the low and high nibbles of the 32 bytes of chunk c.  Each
 * sub-block adds d sc (sum q x) - dmin m (sum x). */
static double dot_q4_k(const uint8_t *blk, const float *x, size_t n)
{
    double total = 0.0;
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q4_K_BYTES) {
        float d = f16_at(blk), dmin = f16_at(blk + RAYO_Q4_K_DMIN);
        vf32 block = vsplat(0.0f);
        for (int s = 0; s < 8; s++, x += 32) {
            const uint8_t *qs = blk + RAYO_Q4_K_QS + 32 * (s / 2);
            v128_t b0 = wasm_v128_load(qs), b1 = wasm_v128_load(qs + 16);
            if (s & 1) {
                b0 = wasm_u8x16_shr(b0, 4);
                b1 = wasm_u8x16_shr(b1, 4);
            } else {
                b0 = wasm_v128_and(b0, wasm_i8x16_splat(15));
                b1 = wasm_v128_and(b1, wasm_i8x16_splat(15));
            }
            uint8_t sc, m;
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, s, &sc, &m);
            vf32 qx = vadd(dot16(b0, x), dot16(b1, x + 16));
            block = vadd(block, vmul(qx, vsplat(d * (float)sc)));
            block = vsub(block, vmul(sum32(x), vsplat(dmin * (float)m)));
        }
        total += hsum_f64(block);
    }
    return total;
}

/* Q6_K: value 128h + 32k + l is (d sc[(128h + 32k + l) / 16]) (q - 32), q's
 * low 4 bits from ql[64h + 32 (k & 1) + l] (nibble k >> 1), its high 2 bits
 * from bits 2k, 2k + 1 of qh[32h + l]. */
static inline v128_t q6_codes(v128_t ql, v128_t qh, int k)
{
    v128_t low = (k >> 1) ? wasm_u8x16_shr(ql, 4) : wasm_v128_and(ql, wasm_i8x16_splat(15));
    v128_t high = wasm_v128_and(wasm_u8x16_shr(qh, (uint32_t)(2 * k)), wasm_i8x16_splat(3));
    v128_t q = wasm_v128_or(low, wasm_i8x16_shl(high, 4));
    return wasm_i8x16_sub(q, wasm_i8x16_splat(32));
}

static double dot_q6_k(const uint8_t *blk, const float *x, size_t n)
{
    double total = 0.0;
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q6_K_BYTES) {
        float d = f16_at(blk + RAYO_Q6_K_D);
        const int8_t *scales = (const int8_t *)(blk + RAYO_Q6_K_SCALES);
        vf32 block = vsplat(0.0f);
        for (int h = 0; h < 2; h++) {
            v128_t qh0 = wasm_v128_load(blk + RAYO_Q6_K_QH + 32 * h);
            v128_t qh1 = wasm_v128_load(blk + RAYO_Q6_K_QH + 32 * h + 16);
            for (int k = 0; k < 4; k++, x += 32) {
                const uint8_t *ql = blk + 64 * h + 32 * (k & 1);
                const int8_t *sc = scales + 8 * h + 2 * k; /* values l < 16, then l >= 16 */
                vf32 s0 = dot16(q6_codes(wasm_v128_load(ql), qh0, k), x);
                vf32 s1 = dot16(q6_codes(wasm_v128_load(ql + 16), qh1, k), x + 16);
                block = vadd(block, vmul(s0, vsplat(d * (float)sc[0])));
                block = vadd(block, vmul(s1, vsplat(d * (float)sc[1])));
            }
        }
        total += hsum_f64(block);
    }
    return total;
}

/* ---- f16 and bf16 rows --------------------------------------------------- */

/* Rows of 2-byte floats: float lanes over 256 values, double across.  n may
 * be any length: the last n % 8 values are summed one by one in double. */
static inline __attribute__((always_inline)) double dot_halves(const uint8_t *w, const float *x, size_t n,
                                                               int is_f16)
{
    double total = 0.0;
    size_t i = 0;
    while (i + 8 <= n) {
        size_t end = i + 256 < n ? i + 256 : n;
        vf32 s0 = vsplat(0.0f), s1 = s0;
        for (; i + 8 <= end; i += 8) {
            /* the even halves shifted up, the odd ones masked in place:
             * the dot product does not care for the order, so x is split
             * the same way (two shufps) */
            v128_t h8 = wasm_v128_load(w + 2 * i);
            vf32 even = wasm_i32x4_shl(h8, 16), odd = wasm_v128_and(h8, wasm_i32x4_splat((int32_t)0xffff0000u));
            if (is_f16) {
                even = wasm_f16_top_lanes(even);
                odd = wasm_f16_top_lanes(odd);
            }
            vf32 x0 = wasm_v128_load(x + i), x1 = wasm_v128_load(x + i + 4);
            s0 = vadd(s0, vmul(even, wasm_i32x4_shuffle(x0, x1, 0, 2, 4, 6)));
            s1 = vadd(s1, vmul(odd, wasm_i32x4_shuffle(x0, x1, 1, 3, 5, 7)));
        }
        total += hsum_f64(vadd(s0, s1));
    }
    return total + typed_gemv_half_tail(w, x, i, n, is_f16);
}

static double dot_f16(const uint8_t *w, const float *x, size_t n)
{
    return dot_halves(w, x, n, 1);
}

static double dot_bf16(const uint8_t *w, const float *x, size_t n)
{
    return dot_halves(w, x, n, 0);
}

/* ---- relaxed Q8_0 and Q4_0: i32x4.dot_i16x8_s against x in int16 ----------- */

/* sum q x of 32 codes (c0: values 0-15, c1: 16-31, signed bytes, widened to
 * int16) with x's 32 int16 values, in four int32 lanes: four dot_i16x8_s
 * (eight products into four lanes each; exact, at most 8 * 128 * 32767 a
 * lane). */
static inline v128_t idot32(v128_t c0, v128_t c1, const v128_t xq[4])
{
    v128_t s = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(c0), xq[0]);
    s = wasm_i32x4_add(s, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(c0), xq[1]));
    s = wasm_i32x4_add(s, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(c1), xq[2]));
    return wasm_i32x4_add(s, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(c1), xq[3]));
}

typedef v128_t idot_fn(const uint8_t *blk, const v128_t xq[4]);

static inline v128_t idot_q8_0(const uint8_t *blk, const v128_t xq[4])
{
    return idot32(wasm_v128_load(blk + 2), wasm_v128_load(blk + 18), xq);
}

/* Q4_0's codes q - 8 as signed bytes: low nibbles values 0-15, high 16-31. */
static inline v128_t idot_q4_0(const uint8_t *blk, const v128_t xq[4])
{
    v128_t bytes = wasm_v128_load(blk + 2), eight = wasm_i8x16_splat(8);
    v128_t lo = wasm_i8x16_sub(wasm_v128_and(bytes, wasm_i8x16_splat(15)), eight);
    return idot32(lo, wasm_i8x16_sub(wasm_u8x16_shr(bytes, 4), eight), xq);
}

/* The dots of R rows (blk, blk + stride, ...) with x: per block its int32
 * sums times d and x's scale, in float lanes over TYPED_GEMV_INT_GROUP
 * values, then double; x's four vectors loaded once for the R rows. */
static inline __attribute__((always_inline)) void
idot_rows(const uint8_t *blk, size_t stride, int R, const typed_gemv_x *x, size_t blocks, size_t block_bytes,
          idot_fn *dot, double *out)
{
    for (int r = 0; r < R; r++)
        out[r] = 0.0;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + TYPED_GEMV_INT_GROUP / 32 < blocks ? b + TYPED_GEMV_INT_GROUP / 32 : blocks;
        vf32 g[4] = { vsplat(0.0f), vsplat(0.0f), vsplat(0.0f), vsplat(0.0f) };
        for (; b < end; b++) {
            const int16_t *xb = x->q16 + 32 * b;
            const v128_t xq[4] = { wasm_v128_load(xb), wasm_v128_load(xb + 8), wasm_v128_load(xb + 16),
                                   wasm_v128_load(xb + 24) };
            for (int r = 0; r < R; r++) {
                const uint8_t *p = blk + r * stride + b * block_bytes;
                vf32 scale = vsplat(f16_at(p) * x->scale16[b]);
                g[r] = vadd(g[r], vmul(wasm_f32x4_convert_i32x4(dot(p, xq)), scale));
            }
        }
        for (int r = 0; r < R; r++)
            out[r] += hsum_f64(g[r]);
    }
}

SIMD128_INT_ROWS(rows_q8_0_i16, idot_rows, idot_q8_0, RAYO_Q8_0_BYTES)
SIMD128_INT_ROWS(rows_q4_0_i16, idot_rows, idot_q4_0, RAYO_Q4_0_BYTES)

/* ---- the kernel ----------------------------------------------------------- */

/* Relaxed Q8_0 and Q4_0 against x in int16 (simd128-int-gemv_tmpl.c); the
 * rest, and x that int16 cannot hold within the budget, the float kernels. */
rayo_status wasm_gemv_quant(void *state, const rayo_call *call)
{
    if (simd128_int_gemv_takes(call)) {
        int q8_0 = RAYO_DTYPE_OF(call->dtypes, 0) == RAYO_DTYPE_Q8_0;
        if (simd128_int_gemv(state, call, q8_0 ? rows_q8_0_i16 : rows_q4_0_i16, 0))
            return RAYO_OK;
    }
    return typed_gemv_run(state, call);
}
