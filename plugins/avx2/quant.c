/* SPDX-License-Identifier: MIT */
/* quant.c - gemv with half or block-quantized weights: y (m) = alpha A x +
 * beta y, A (m x n) in f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K with rows along n (row stride lda
 * elements), x and y f32.  The driver (x prepared once, rows over the
 * threads, strict or relaxed path) is ../cpu-base/cpu-typed-gemv_tmpl.c.
 *
 * Decode is the hot path of inference and it is memory-bound: each weight
 * byte is read once.  So the blocks are decoded in registers and multiplied
 * into x at once; no row is ever dequantized to memory.  Four rows go per
 * pass (x is read once for the four; two for relaxed Q4_K, x86-quant.h),
 * each row in its own accumulators, but for relaxed Q4_0 whose four rows'
 * integer sums are gathered into one vector before their scales.
 *
 * Strict path (contract 1e-5 of sum|terms| at any n, judged against float64
 * on the dequantized values): bytes -> int32 -> float lanes, products summed
 * in float lanes over at most 256 elements (32 terms per lane), then added
 * into double lanes, so the error stays near 40 * 2^-24 ~ 2.4e-6 of
 * sum|terms| however long the row is.  Q8_0 and Q4_0 multiply the block's
 * scale into the lane sums (d sum q x); the K formats rebuild each weight
 * (d sc q - dmin m) before its product (no cancellation between a sum of
 * q x and a sum of m x); f16 and bf16 are widened exactly (F16C for f16, a
 * shift for bf16).
 *
 * Relaxed path (block formats; x rounded once per call, cpu-typed-gemv_tmpl.c):
 *   Q8_0, Q4_0: x in int8 per 32 values, _mm256_maddubs_epi16 (codes
 *     u8 x x s8 with the sign moved, pairs into int16) and
 *     _mm256_madd_epi16 by ones into int32 lanes (exact), one float
 *     multiply-add per block by d times x's scale; where int8 x fails the
 *     error budget, x in int16 and codes widened to int16 (madd);
 *   Q4_K, Q6_K: x in int8 per 256 values, _mm256_maddubs_epi16 (codes u8 x
 *     x s8, pairs into int16), _mm256_madd_epi16 by the sub-block scales
 *     into int32 (Q4_K: a sub-block's pairs first summed in int16, then
 *     one madd for the block), one float multiply-add per 256 values.
 * Codes go 16 or 32 per instruction where the strict path spends three
 * instructions on eight floats.  Where the CPU has AVX-VNNI (and the
 * context's vnni setting allows it, plugin.c), the int8 Q8_0 and Q4_0
 * kernels take their u8 x s8 step as one vpdpbusd instead of maddubs,
 * madd and add, and Q6_K (x per 256) its madd by the group scales and add
 * as one vpdpwssd: the same integer sums, the same results.
 */
#include "plugin.h"
#include "x86-avx2-math.h"
#define TYPED_GEMV_ROWS_FOR_CPU avx2_rows_for_cpu
#define TYPED_GEMV_MANY_FOR avx2_many_for
#include "cpu-typed-gemv_tmpl.c"
#include "x86-quant.h"

/* The block functions are inlined into the row drivers whatever their
 * size: called, each block would cost a call and the spill of its
 * accumulator (2x slower on Q4_K). */
#define ALWAYS_INLINE inline __attribute__((always_inline))

/* The kernels prefetch into L2 the lines PREFETCH_BYTES ahead of what
 * they decode, as one run over the rows of a pass (x86_rows_ahead; each
 * row's own lines at first).  The hardware prefetcher alone left
 * the four row streams at about half of the bandwidth a plain read reaches;
 * prefetching 2 KiB ahead into L1 gained a little (Q4_K relaxed, 1 thread:
 * 3.5 -> 2.3 ms), 32 KiB ahead into L2 (4 rows: 128 KiB of L2) as much
 * again (2.3 -> 1.6-1.7 ms; 16 KiB gave less, 64 KiB the same). */
#define PREFETCH_BYTES 32768

/* Blocks of 32 summed in float lanes before the lanes go to double. */
#define SMALL_BLOCKS_PER_GROUP 8

/* ---- decoding helpers --------------------------------------------------- */

/* The 8 signed bytes at p as float lanes. */
static inline __m256 bytes8_ps(const void *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

/* Signed bytes 0..7 and 8..15 of v as float lanes. */
static inline __m256 low8_ps(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

static inline __m256 high8_ps(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)));
}

/* acc (two double vectors) += the 8 float lanes of v. */
static inline void add_wide(__m256d acc[2], __m256 v)
{
    acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

static inline double sum_wide(const __m256d acc[2])
{
    return v_hsum_pd(_mm256_add_pd(acc[0], acc[1]));
}

/* ---- the row driver: rows of blocks, any block function ------------------ */

/* Loops over the R rows and over the parts of a block, unrolled: the
 * rows' accumulators then stay in registers (a loop over an array of them
 * kept it in memory) and the parts' offsets and lane indexes are constants. */
#define UNROLL_ROWS _Pragma("GCC unroll 4")
#define UNROLL_X _Pragma("GCC unroll 4") /* and over the x's of the many-x forms */

/* acc += the dot of block b of a row (at blk) with x, in float lanes. */
typedef __m256 block_fn(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc);

/* The dots of R rows (blk, blk + stride, ...) over `blocks` blocks: float
 * lanes over groups of `group` blocks, double across groups.  Inlined with
 * constant R, sizes and block function, so the block's decoding and x's
 * loads are shared by nothing but what the compiler sees. */
static inline __attribute__((always_inline)) void
dots_of_blocks(const uint8_t *blk, size_t stride, int R, const typed_gemv_x *x, size_t blocks,
               size_t block_bytes, size_t group, block_fn *block, double *out)
{
    const char *ahead = x86_rows_ahead(blk, stride, R, PREFETCH_BYTES);
    __m256d acc[4][2];
    UNROLL_ROWS
    for (int r = 0; r < R; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_pd();
    for (size_t b = 0; b < blocks;) {
        size_t end = b + group < blocks ? b + group : blocks;
        __m256 g[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
        for (; b < end; b++) {
            x86_prefetch_run(ahead + R * block_bytes * b, R * block_bytes);
            UNROLL_ROWS
            for (int r = 0; r < R; r++) {
                const uint8_t *p = blk + r * stride + b * block_bytes;
                g[r] = block(p, x, b, g[r]);
            }
        }
        UNROLL_ROWS
        for (int r = 0; r < R; r++)
            add_wide(acc[r], g[r]);
    }
    UNROLL_ROWS
    for (int r = 0; r < R; r++)
        out[r] = sum_wide(acc[r]);
}

/* `count` rows (1..4): four in one pass, fewer one by one. */
static inline __attribute__((always_inline)) void
rows_of_blocks(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t blocks,
               size_t block_bytes, size_t group, block_fn *block, double out[4])
{
    if (count == 4) {
        dots_of_blocks(row, stride, 4, x, blocks, block_bytes, group, block, out);
        return;
    }
    for (size_t r = 0; r < count; r++)
        dots_of_blocks(row + r * stride, stride, 1, x, blocks, block_bytes, group, block, out + r);
}

/* ---- strict: Q8_0 and Q4_0 ----------------------------------------------- */

/* Q8_0 block: d sum q x over its 32 values. */
static ALWAYS_INLINE __m256 block_q8_0(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc)
{
    const uint8_t *q = blk + 2;
    const float *xb = x->f + 32 * b;
    __m256 s0 = _mm256_mul_ps(bytes8_ps(q), _mm256_loadu_ps(xb));
    __m256 s1 = _mm256_mul_ps(bytes8_ps(q + 8), _mm256_loadu_ps(xb + 8));
    s0 = _mm256_fmadd_ps(bytes8_ps(q + 16), _mm256_loadu_ps(xb + 16), s0);
    s1 = _mm256_fmadd_ps(bytes8_ps(q + 24), _mm256_loadu_ps(xb + 24), s1);
    return _mm256_fmadd_ps(_mm256_set1_ps(x86_f16_at(blk)), _mm256_add_ps(s0, s1), acc);
}

/* Q4_0 block: d sum (q - 8) x; byte j holds value j (low nibble) and j + 16. */
static ALWAYS_INLINE __m256 block_q4_0(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc)
{
    const __m128i low_nibbles = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    const float *xb = x->f + 32 * b;
    __m128i bytes = x86_load128(blk + 2);
    __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, low_nibbles), eight);
    __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), low_nibbles), eight);
    __m256 s0 = _mm256_mul_ps(low8_ps(lo), _mm256_loadu_ps(xb));
    __m256 s1 = _mm256_mul_ps(high8_ps(lo), _mm256_loadu_ps(xb + 8));
    s0 = _mm256_fmadd_ps(low8_ps(hi), _mm256_loadu_ps(xb + 16), s0);
    s1 = _mm256_fmadd_ps(high8_ps(hi), _mm256_loadu_ps(xb + 24), s1);
    return _mm256_fmadd_ps(_mm256_set1_ps(x86_f16_at(blk)), _mm256_add_ps(s0, s1), acc);
}

TYPED_ROWS_FN(rows_q8_0, 32, RAYO_Q8_0_BYTES, SMALL_BLOCKS_PER_GROUP, block_q8_0)

TYPED_ROWS_FN(rows_q4_0, 32, RAYO_Q4_0_BYTES, SMALL_BLOCKS_PER_GROUP, block_q4_0)

/* ---- strict: Q4_K and Q6_K (one 256-value block per float group) --------- */

/* sum (scale q_i - offset) x_i over 32 values, q the 32 signed bytes of
 * codes, added to acc. */
static inline __m256 dot32_affine(__m256i codes, __m256 scale, __m256 offset, const float *x,
                                  __m256 acc)
{
    __m128i lo = _mm256_castsi256_si128(codes), hi = _mm256_extracti128_si256(codes, 1);
    acc = _mm256_fmadd_ps(_mm256_fmsub_ps(scale, low8_ps(lo), offset), _mm256_loadu_ps(x), acc);
    acc = _mm256_fmadd_ps(_mm256_fmsub_ps(scale, high8_ps(lo), offset), _mm256_loadu_ps(x + 8), acc);
    acc = _mm256_fmadd_ps(_mm256_fmsub_ps(scale, low8_ps(hi), offset), _mm256_loadu_ps(x + 16), acc);
    return _mm256_fmadd_ps(_mm256_fmsub_ps(scale, high8_ps(hi), offset), _mm256_loadu_ps(x + 24), acc);
}

/* Q4_K: value i of sub-block s is (d sc[s]) q - (dmin m[s]); sub-blocks 2c
 * and 2c + 1 are the low and high nibbles of the 32 bytes of chunk c. */
static ALWAYS_INLINE __m256 block_q4_k(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    const float *xb = x->f + RAYO_QK_K * b;
    __m128i sc8, m8;
    x86_q4_k_scales_mins(blk + RAYO_Q4_K_SCALES, &sc8, &m8);
    /* d sc[s] and dmin m[s] of the eight sub-blocks in the lanes of two
     * vectors (decoding them one by one in scalar code cost a quarter of
     * the time), each broadcast where its sub-block needs it */
    __m256 scales = _mm256_mul_ps(_mm256_set1_ps(x86_f16_at(blk)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc8)));
    __m256 mins = _mm256_mul_ps(_mm256_set1_ps(x86_f16_at(blk + RAYO_Q4_K_DMIN)),
                                _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m8)));
    UNROLL_ROWS
    for (int c = 0; c < 4; c++, xb += 64) {
        __m256i bytes = x86_load256(blk + RAYO_Q4_K_QS + 32 * c);
        __m256i lane0 = _mm256_set1_epi32(2 * c), lane1 = _mm256_set1_epi32(2 * c + 1);
        acc = dot32_affine(_mm256_and_si256(bytes, low_nibbles), _mm256_permutevar8x32_ps(scales, lane0),
                           _mm256_permutevar8x32_ps(mins, lane0), xb, acc);
        acc = dot32_affine(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles),
                           _mm256_permutevar8x32_ps(scales, lane1), _mm256_permutevar8x32_ps(mins, lane1), xb + 32,
                           acc);
    }
    return acc;
}

/* Q6_K: value 128h + 32k + l is (d sc[(128h + 32k + l) / 16]) (q - 32). */
static ALWAYS_INLINE __m256 block_q6_k(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc)
{
    const float *xb = x->f + RAYO_QK_K * b;
    __m256 d = _mm256_set1_ps(x86_f16_at(blk + RAYO_Q6_K_D));
    __m128i scales8 = x86_load128(blk + RAYO_Q6_K_SCALES);
    /* d sc[g] of the 16 groups in the lanes of two vectors (as in Q4_K) */
    const __m256 scales[2] = { _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(scales8))),
                               _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(scales8, 8)))) };
    UNROLL_ROWS
    for (int h = 0; h < 2; h++) {
        __m256i qh = x86_load256(blk + RAYO_Q6_K_QH + 32 * h);
        UNROLL_ROWS
        for (int k = 0; k < 4; k++, xb += 32) {
            __m256i codes = _mm256_sub_epi8(x86_q6_k_codes(blk, qh, h, k), _mm256_set1_epi8(32));
            __m128i lo = _mm256_castsi256_si128(codes), hi = _mm256_extracti128_si256(codes, 1);
            /* values l < 16 (group 8h + 2k), then l >= 16 */
            __m256 s0 = _mm256_permutevar8x32_ps(scales[h], _mm256_set1_epi32(2 * k));
            __m256 s1 = _mm256_permutevar8x32_ps(scales[h], _mm256_set1_epi32(2 * k + 1));
            acc = _mm256_fmadd_ps(_mm256_mul_ps(s0, low8_ps(lo)), _mm256_loadu_ps(xb), acc);
            acc = _mm256_fmadd_ps(_mm256_mul_ps(s0, high8_ps(lo)), _mm256_loadu_ps(xb + 8), acc);
            acc = _mm256_fmadd_ps(_mm256_mul_ps(s1, low8_ps(hi)), _mm256_loadu_ps(xb + 16), acc);
            acc = _mm256_fmadd_ps(_mm256_mul_ps(s1, high8_ps(hi)), _mm256_loadu_ps(xb + 24), acc);
        }
    }
    return acc;
}

TYPED_ROWS_FN(rows_q4_k, RAYO_QK_K, RAYO_Q4_K_BYTES, 1, block_q4_k)

TYPED_ROWS_FN(rows_q6_k, RAYO_QK_K, RAYO_Q6_K_BYTES, 1, block_q6_k)

/* ---- strict: f16 and bf16, 8 values per "block" --------------------------- */

static ALWAYS_INLINE __m256 block_f16(const uint8_t *w, const typed_gemv_x *x, size_t b, __m256 acc)
{
    return _mm256_fmadd_ps(_mm256_cvtph_ps(x86_load128(w)), _mm256_loadu_ps(x->f + 8 * b), acc);
}

/* bf16 is the top half of an f32. */
static ALWAYS_INLINE __m256 block_bf16(const uint8_t *w, const typed_gemv_x *x, size_t b, __m256 acc)
{
    __m256 wf = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(x86_load128(w)), 16));
    return _mm256_fmadd_ps(wf, _mm256_loadu_ps(x->f + 8 * b), acc);
}

/* n may be any length: the last n % 8 values one by one in double. */
static inline __attribute__((always_inline)) void
rows_of_halves(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n,
               block_fn *block, double out[4])
{
    rows_of_blocks(row, stride, count, x, n / 8, 16, 32, block, out);
    for (size_t r = 0; r < count; r++)
        out[r] += typed_gemv_half_tail(row + r * stride, x->f, n / 8 * 8, n, block == block_f16);
}

static void rows_f16(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n,
                     double out[4])
{
    rows_of_halves(row, stride, count, x, n, block_f16, out);
}

static void rows_bf16(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n,
                      double out[4])
{
    rows_of_halves(row, stride, count, x, n, block_bf16, out);
}

/* ---- relaxed: integer block dots against x in int16 or int8 ---------------- */

/* 8 int32 lanes: the pair sums of 16 int16 codes with x's int16 values at xq. */
static inline __m256i madd16(__m256i codes, const int16_t *xq)
{
    return _mm256_madd_epi16(codes, x86_load256(xq));
}

/* acc += scale * the 8 int32 lanes of s. */
static inline __m256 scaled_add(__m256i s, float scale, __m256 acc)
{
    return _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(s), acc);
}

static ALWAYS_INLINE __m256 block_q8_0_int(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc)
{
    const int16_t *xq = x->q16 + 32 * b;
    __m256i s = _mm256_add_epi32(madd16(_mm256_cvtepi8_epi16(x86_load128(blk + 2)), xq),
                                 madd16(_mm256_cvtepi8_epi16(x86_load128(blk + 18)), xq + 16));
    return scaled_add(s, x86_f16_at(blk) * x->scale16[b], acc);
}

static ALWAYS_INLINE __m256 block_q4_0_int(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc)
{
    const int16_t *xq = x->q16 + 32 * b;
    const __m256i eight = _mm256_set1_epi16(8);
    __m256i bytes = _mm256_cvtepu8_epi16(x86_load128(blk + 2));
    __m256i lo = _mm256_sub_epi16(_mm256_and_si256(bytes, _mm256_set1_epi16(15)), eight);
    __m256i hi = _mm256_sub_epi16(_mm256_srli_epi16(bytes, 4), eight);
    __m256i s = _mm256_add_epi32(madd16(lo, xq), madd16(hi, xq + 16));
    return scaled_add(s, x86_f16_at(blk) * x->scale16[b], acc);
}

/* Q8_0 and Q4_0 against int8 x, pairs of blocks (x86-quant.h; Q4_0's x
 * in the pairs' order). */
static ALWAYS_INLINE __m256 block_q8_0_pair(const uint8_t *blk, const typed_gemv_x *x, size_t p, __m256 acc)
{
    return x86_q8_0_pair_i8(blk, x->q8_32 + 64 * p, x->scale8_32 + 2 * p, acc);
}

static ALWAYS_INLINE __m256 block_q4_0_pair(const uint8_t *blk, const typed_gemv_x *x, size_t p, __m256 acc)
{
    return x86_q4_0_pair_i8(blk, x->q8_32 + 64 * p, x->offset8_64 + 8 * p, x->scale8_64 + 8 * p, acc);
}

/* Q6_K against int8 x: d (x scale) sum_g sc[g] (sum q xq - 32 sum xq) over
 * the 16 groups g of 16 values.  maddubs multiplies 32 codes (0..63) by x
 * (pairs into int16: at most 2 * 63 * 127), madd by the two groups' scales
 * (int16 lanes 0-7 hold group 2j, lanes 8-15 group 2j + 1; madd and add,
 * or one AVX-VNNI vpdpwssd: x86_madd_add); the -32 part is madd of x's
 * group sums with the scales.  For NX x's at once (acc[j] += x j's sum):
 * each 32 codes and their scales decoded once. */
static ALWAYS_INLINE void q6_k_int_nx(const uint8_t *blk, const typed_gemv_x *const xs[], int NX, size_t b,
                                      x86_madd_add_fn *madd_add, __m256 acc[])
{
    __m128i scales8 = x86_load128(blk + RAYO_Q6_K_SCALES);
    __m256i sum[TYPED_GEMV_MANY_X];
    UNROLL_X for (int j = 0; j < NX; j++) sum[j] = _mm256_setzero_si256();
    UNROLL_ROWS
    for (int h = 0; h < 2; h++) {
        __m256i qh = x86_load256(blk + RAYO_Q6_K_QH + 32 * h), sc_h = x86_q6_k_scales16(scales8, h);
        UNROLL_ROWS
        for (int k = 0; k < 4; k++) {
            __m256i sc = x86_q6_k_scale_pair(sc_h, k), codes = x86_q6_k_codes(blk, qh, h, k);
            UNROLL_X for (int j = 0; j < NX; j++)
            {
                const int8_t *xq = xs[j]->q8 + RAYO_QK_K * b + 128 * h + 32 * k;
                sum[j] = madd_add(sum[j], _mm256_maddubs_epi16(codes, x86_load256(xq)), sc);
            }
        }
    }
    float d = x86_f16_at(blk + RAYO_Q6_K_D);
    UNROLL_X for (int j = 0; j < NX; j++)
    {
        __m256i offset = _mm256_madd_epi16(x86_load256(xs[j]->qsum + 16 * b), _mm256_cvtepi8_epi16(scales8));
        acc[j] = scaled_add(_mm256_sub_epi32(sum[j], _mm256_slli_epi32(offset, 5)), d * xs[j]->scale8[b], acc[j]);
    }
}

static ALWAYS_INLINE __m256 q6_k_int_by(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc,
                                         x86_madd_add_fn *madd_add)
{
    const typed_gemv_x *const xs[1] = { x };
    q6_k_int_nx(blk, xs, 1, b, madd_add, &acc);
    return acc;
}

static ALWAYS_INLINE __m256 block_q6_k_int(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc)
{
    return q6_k_int_by(blk, x, b, acc, x86_madd_add);
}

TYPED_ROWS_FN(rows_q8_0_int, 32, RAYO_Q8_0_BYTES, TYPED_GEMV_INT_GROUP / 32, block_q8_0_int)

TYPED_ROWS_FN(rows_q4_0_int, 32, RAYO_Q4_0_BYTES, TYPED_GEMV_INT_GROUP / 32, block_q4_0_int)

TYPED_ROWS_PAIRS(rows_q8_0_i8, 1, block_q8_0_pair)

/* sums + a group's lanes in double: blocks 2b and 2b + 1 of each row
 * (the two halves) summed, then added. */
static inline __m256d widen_halves_add(__m256d sums, __m256 acc)
{
    return _mm256_add_pd(sums, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(acc)),
                                             _mm256_cvtps_pd(_mm256_extractf128_ps(acc, 1))));
}

/* Q4_0 against int8 x, four rows sharing one float accumulator (lane
 * 4h + r: row r, block h of each pair; x86-quant.h), double across groups
 * of pairs as dots_of_blocks does; a pair of the four rows is 8 blocks of
 * the group's run (x86_rows_ahead). */
typedef __m256 q4_0_rows4_fn(const uint8_t *blk, size_t stride, const int8_t *xq, const int32_t *offset,
                             const float *sx, __m256 acc);

static ALWAYS_INLINE void q4_0_rows4_i8(const uint8_t *row, size_t stride, const typed_gemv_x *x, size_t pairs,
                                        q4_0_rows4_fn *rows4, double out[4])
{
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    __m256d sums = _mm256_setzero_pd();
    for (size_t p = 0; p < pairs;) {
        size_t end = p + TYPED_GEMV_INT_GROUP / 64 < pairs ? p + TYPED_GEMV_INT_GROUP / 64 : pairs;
        __m256 acc = _mm256_setzero_ps();
        for (; p < end; p++) {
            const uint8_t *blk = row + 2 * RAYO_Q4_0_BYTES * p;
            x86_prefetch_run(ahead + 8 * RAYO_Q4_0_BYTES * p, 8 * RAYO_Q4_0_BYTES);
            acc = rows4(blk, stride, x->q8_32 + 64 * p, x->offset8_64 + 8 * p, x->scale8_64 + 8 * p, acc);
        }
        sums = widen_halves_add(sums, acc);
    }
    _mm256_storeu_pd(out, sums);
}

/* Q4_0's rows against int8 x: four by rows4, fewer by the pair block
 * function. */
static ALWAYS_INLINE void q4_0_rows_i8(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x,
                                       size_t n, q4_0_rows4_fn *rows4, block_fn *pair, double out[4])
{
    if (count == 4)
        q4_0_rows4_i8(row, stride, x, n / 64, rows4, out);
    else
        rows_of_blocks(row, stride, count, x, n / 64, 2 * RAYO_Q4_0_BYTES, TYPED_GEMV_INT_GROUP / 64, pair, out);
    typed_gemv_odd_block(row, stride, count, x, n, 0, out);
}

static void rows_q4_0_i8(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n,
                         double out[4])
{
    q4_0_rows_i8(row, stride, count, x, n, x86_q4_0_rows4_pair_i8, block_q4_0_pair, out);
}

/* ---- relaxed with AVX-VNNI: the int8 Q8_0 and Q4_0 kernels again, the
 * u8 x s8 step in one instruction (x86-quant.h), and Q6_K's madd and add
 * of the group scales in one ------------------------------------------------ */

static ALWAYS_INLINE X86_AVX_VNNI __m256 block_q8_0_pair_vnni(const uint8_t *blk, const typed_gemv_x *x, size_t p,
                                                              __m256 acc)
{
    return x86_q8_0_pair_vnni(blk, x->q8_32 + 64 * p, x->scale8_32 + 2 * p, acc);
}

static ALWAYS_INLINE X86_AVX_VNNI __m256 block_q4_0_pair_vnni(const uint8_t *blk, const typed_gemv_x *x, size_t p,
                                                              __m256 acc)
{
    return x86_q4_0_pair_vnni(blk, x->q8_32 + 64 * p, x->offset8_64 + 8 * p, x->scale8_64 + 8 * p, acc);
}

X86_AVX_VNNI TYPED_ROWS_PAIRS(rows_q8_0_i8_vnni, 1, block_q8_0_pair_vnni)

static ALWAYS_INLINE X86_AVX_VNNI __m256 block_q6_k_int_vnni(const uint8_t *blk, const typed_gemv_x *x, size_t b,
                                                             __m256 acc)
{
    return q6_k_int_by(blk, x, b, acc, x86_madd_add_vnni);
}

X86_AVX_VNNI TYPED_ROWS_FN(rows_q6_k_int_vnni, RAYO_QK_K, RAYO_Q6_K_BYTES, TYPED_GEMV_INT_GROUP / RAYO_QK_K,
                           block_q6_k_int_vnni)

static X86_AVX_VNNI void rows_q4_0_i8_vnni(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x,
                                           size_t n, double out[4])
{
    q4_0_rows_i8(row, stride, count, x, n, x86_q4_0_rows4_pair_vnni, block_q4_0_pair_vnni, out);
}

/* The int8 Q8_0, Q4_0 and Q6_K kernels' AVX-VNNI forms where the context
 * uses AVX-VNNI (x86_state.avx_vnni, plugin.c); rows itself otherwise. */
static typed_rows_fn *avx2_rows_for_cpu(const cpu_state *st, typed_rows_fn *rows)
{
    if (!((const x86_state *)st)->avx_vnni)
        return rows;
    if (rows == rows_q6_k_int)
        return rows_q6_k_int_vnni;
    return rows == rows_q8_0_i8 ? rows_q8_0_i8_vnni : rows == rows_q4_0_i8 ? rows_q4_0_i8_vnni : rows;
}

/* ---- relaxed, several x's at once (TYPED_GEMV_MANY_FOR): each pair of
 * blocks (Q4_0, Q8_0) or block (Q4_K, Q6_K) of four rows decoded once for
 * up to four x's, every (row, x) sum made in the row kernel's order, so
 * the results are its own.  Four x's at once leave AVX2's 16 registers
 * short (the sums go to the stack), yet ran 5-10% faster than two at a
 * time, decoding again for the next two (Q4_0, Q8_0). */

/* q4_0_rows4_i8 for NX x's: AVX2 and AVX-VNNI make the same integer sums,
 * so this maddubs form stands for both. */
static ALWAYS_INLINE void q4_0_rows4_i8_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX,
                                           size_t n, double out[][4])
{
    typed_q4_0_rows4_i8_nx(row, stride, xs, NX, n, PREFETCH_BYTES, widen_halves_add, out);
}

/* rows_q8_0_i8 (dots_of_blocks of four rows over x86_q8_0_pair_by) for NX
 * x's: each row's codes of a pair loaded once and its scales converted
 * once. */
static ALWAYS_INLINE void q8_0_rows4_i8_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX,
                                           size_t n, x86_q8_0_dot_fn *dot, double out[][4])
{
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    const size_t pairs = n / 64;
    __m256d acc[TYPED_GEMV_MANY_X][4][2];
    UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++)
        acc[j][r][0] = acc[j][r][1] = _mm256_setzero_pd();
    for (size_t p = 0; p < pairs;) {
        size_t end = p + TYPED_GEMV_INT_GROUP / 64 < pairs ? p + TYPED_GEMV_INT_GROUP / 64 : pairs;
        __m256 g[TYPED_GEMV_MANY_X][4];
        UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++) g[j][r] = _mm256_setzero_ps();
        for (; p < end; p++) {
            x86_prefetch_run(ahead + 8 * RAYO_Q8_0_BYTES * p, 8 * RAYO_Q8_0_BYTES);
            UNROLL_ROWS for (int r = 0; r < 4; r++)
            {
                const uint8_t *blk = row + r * stride + 2 * RAYO_Q8_0_BYTES * p;
                __m256i q0 = x86_load256(blk + 2), q1 = x86_load256(blk + RAYO_Q8_0_BYTES + 2);
                __m256 d = x86_q8_0_pair_d(blk);
                UNROLL_X for (int j = 0; j < NX; j++)
                {
                    const int8_t *xq = xs[j]->q8_32 + 64 * p;
                    g[j][r] = x86_q8_0_pair_scaled(dot(q0, x86_load256(xq)), dot(q1, x86_load256(xq + 32)), d,
                                                   xs[j]->scale8_32 + 2 * p, g[j][r]);
                }
            }
        }
        UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++) add_wide(acc[j][r], g[j][r]);
    }
    UNROLL_X for (int j = 0; j < NX; j++)
    {
        UNROLL_ROWS for (int r = 0; r < 4; r++) out[j][r] = sum_wide(acc[j][r]);
        typed_gemv_odd_block(row, stride, 4, xs[j], n, 1, out[j]);
    }
}

/* rows_q6_k_int (dots_of_blocks of four rows over q6_k_int_by) for NX x's. */
static ALWAYS_INLINE void q6_k_rows4_int_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX,
                                            size_t n, x86_madd_add_fn *madd_add, double out[][4])
{
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    const size_t blocks = n / RAYO_QK_K, group = TYPED_GEMV_INT_GROUP / RAYO_QK_K;
    __m256d acc[TYPED_GEMV_MANY_X][4][2];
    UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++)
        acc[j][r][0] = acc[j][r][1] = _mm256_setzero_pd();
    for (size_t b = 0; b < blocks;) {
        size_t end = b + group < blocks ? b + group : blocks;
        __m256 g[4][TYPED_GEMV_MANY_X];
        UNROLL_ROWS for (int r = 0; r < 4; r++) UNROLL_X for (int j = 0; j < NX; j++) g[r][j] = _mm256_setzero_ps();
        for (; b < end; b++) {
            x86_prefetch_run(ahead + 4 * RAYO_Q6_K_BYTES * b, 4 * RAYO_Q6_K_BYTES);
            UNROLL_ROWS for (int r = 0; r < 4; r++)
                q6_k_int_nx(row + r * stride + RAYO_Q6_K_BYTES * b, xs, NX, b, madd_add, g[r]);
        }
        UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++) add_wide(acc[j][r], g[r][j]);
    }
    UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++) out[j][r] = sum_wide(acc[j][r]);
}

/* x86_q4_k_dots of one row (blk) for NX x's (xq[j]: block b's int8
 * values) into dots[j]: each chunk's nibbles unpacked once. */
static ALWAYS_INLINE void q4_k_dots_nx(const uint8_t *blk, const int8_t *const xq[], int NX,
                                       __m256i dots[TYPED_GEMV_MANY_X])
{
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    __m256i chunk[TYPED_GEMV_MANY_X], half[TYPED_GEMV_MANY_X];
    UNROLL_ROWS
    for (int c = 0; c < 4; c++) {
        __m256i bytes = x86_load256(blk + RAYO_Q4_K_QS + 32 * c);
        __m256i lo = _mm256_and_si256(bytes, low_nibbles);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles);
        UNROLL_X for (int j = 0; j < NX; j++)
            x86_q4_k_levels(c, _mm256_maddubs_epi16(lo, x86_load256(xq[j] + 64 * c)),
                            _mm256_maddubs_epi16(hi, x86_load256(xq[j] + 64 * c + 32)), &chunk[j], &half[j], &dots[j]);
    }
}

/* rows_q4_k_int (per32 0) or rows_q4_k_i8_32 (per32 1) of four rows
 * (x86_q4_k_rows) for NX x's: each row's block header and codes decoded
 * once. */
static ALWAYS_INLINE void q4_k_rows4_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX,
                                        size_t n, int per32, double out[][4])
{
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    const size_t blocks = n / RAYO_QK_K;
    UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++) out[j][r] = 0.0;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + X86_Q4_K_BLOCKS_PER_GROUP < blocks ? b + X86_Q4_K_BLOCKS_PER_GROUP : blocks;
        __m256 acc[TYPED_GEMV_MANY_X][4];
        UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++) acc[j][r] = _mm256_setzero_ps();
        for (; b < end; b++) {
            const int8_t *xq[TYPED_GEMV_MANY_X];
            x86_prefetch_run(ahead + 4 * RAYO_Q4_K_BYTES * b, 4 * RAYO_Q4_K_BYTES);
            UNROLL_X for (int j = 0; j < NX; j++) xq[j] = (per32 ? xs[j]->q8_32 : xs[j]->q8) + RAYO_QK_K * b;
            UNROLL_ROWS
            for (int r = 0; r < 4; r++) {
                const uint8_t *p = row + r * stride + RAYO_Q4_K_BYTES * b;
                __m256i dots[TYPED_GEMV_MANY_X];
                __m128i sc8;
                __m256 d, mins;
                q4_k_dots_nx(p, xq, NX, dots);
                x86_q4_k_header(p, &sc8, &d, &mins);
                UNROLL_X for (int j = 0; j < NX; j++)
                {
                    const float *sx = per32 ? xs[j]->scale8_32 + 8 * b : xs[j]->scale8 + b;
                    acc[j][r] = x86_q4_k_row_dot(dots[j], sc8, d, mins, sx, xs[j]->sum + 8 * b, per32, acc[j][r]);
                }
            }
        }
        UNROLL_X for (int j = 0; j < NX; j++) UNROLL_ROWS for (int r = 0; r < 4; r++)
            out[j][r] += v_hsum_pd(v_widen_add(_mm256_setzero_pd(), acc[j][r]));
    }
}

/* Defines NAME, the many-x form (TYPED_ROWS_MANY) of NX_BY, an NX form
 * taking one more argument before out, FN: the sums' function (maddubs or
 * AVX-VNNI; ATTR: the target that it needs, or nothing) or Q4_K's per32. */
#define AVX2_ROWS_MANY(NAME, ATTR, NX_BY, FN)                                                                   \
    static ALWAYS_INLINE ATTR void NAME##_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], \
                                             int NX, size_t n, double out[][4])                               \
    {                                                                                                         \
        NX_BY(row, stride, xs, NX, n, FN, out);                                                               \
    }                                                                                                         \
    ATTR TYPED_ROWS_MANY(NAME, NAME##_nx)

TYPED_ROWS_MANY(q4_0_rows4_i8_many, q4_0_rows4_i8_nx)
AVX2_ROWS_MANY(q8_0_rows4_i8_many, , q8_0_rows4_i8_nx, x86_q8_0_dot)
AVX2_ROWS_MANY(q8_0_rows4_vnni_many, X86_AVX_VNNI, q8_0_rows4_i8_nx, x86_q8_0_dot_vnni)
AVX2_ROWS_MANY(q6_k_rows4_int_many, , q6_k_rows4_int_nx, x86_madd_add)
AVX2_ROWS_MANY(q6_k_rows4_int_vnni_many, X86_AVX_VNNI, q6_k_rows4_int_nx, x86_madd_add_vnni)
AVX2_ROWS_MANY(q4_k_rows4_int_many, , q4_k_rows4_nx, 0)
AVX2_ROWS_MANY(q4_k_rows4_i8_32_many, , q4_k_rows4_nx, 1)

static typed_rows_many_fn *avx2_many_for(typed_rows_fn *rows)
{
    if (rows == rows_q4_0_i8 || rows == rows_q4_0_i8_vnni)
        return q4_0_rows4_i8_many;
    if (rows == rows_q6_k_int || rows == rows_q6_k_int_vnni)
        return rows == rows_q6_k_int ? q6_k_rows4_int_many : q6_k_rows4_int_vnni_many;
    if (rows == rows_q4_k_int || rows == rows_q4_k_i8_32)
        return rows == rows_q4_k_int ? q4_k_rows4_int_many : q4_k_rows4_i8_32_many;
    return rows == rows_q8_0_i8 ? q8_0_rows4_i8_many : rows == rows_q8_0_i8_vnni ? q8_0_rows4_vnni_many : NULL;
}

/* Q4_K against int8 x with a scale per 256 values, or per 32, and Q6_K's
 * block against int8 x per 32 values (x86-quant.h). */
X86_RELAXED_Q4_K_KERNELS(PREFETCH_BYTES)
X86_Q6_K_I8_32_BLOCK

TYPED_ROWS_FN(rows_q6_k_i8_32, RAYO_QK_K, RAYO_Q6_K_BYTES, TYPED_GEMV_INT_GROUP / RAYO_QK_K, block_q6_k_i8_32)

TYPED_ROWS_FN(rows_q6_k_int, RAYO_QK_K, RAYO_Q6_K_BYTES, TYPED_GEMV_INT_GROUP / RAYO_QK_K, block_q6_k_int)

/* ---- the kernel ----------------------------------------------------------- */

rayo_status avx2_gemv_quant(void *state, const rayo_call *call)
{
    return typed_gemv_run((const cpu_state *)state, call);
}

rayo_status avx2_gemv_quant_many(void *state, const rayo_call *call, size_t count, size_t ldx, size_t ldy)
{
    return typed_gemv_run_many((const cpu_state *)state, call, count, ldx, ldy);
}

bool avx2_gemv_quant_shares_decoding(void *state, rayo_dtype dt)
{
    return typed_gemv_has_many((const cpu_state *)state, dt);
}
