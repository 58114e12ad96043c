/* SPDX-License-Identifier: MIT */
/* quant.c - gemv with half or block-quantized weights: y (m) = alpha A x +
 * beta y, A (m x n) in f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K with rows along n
 * (row stride lda elements), x and y f32.  The 512-bit form of
 * ../avx2/quant.c, which explains the method: blocks decoded in registers,
 * four rows per pass, software prefetch; strict path in float lanes over at
 * most 256 values (16 per lane) added into double lanes; relaxed path in
 * integers against x rounded once per call (../cpu-base/cpu-typed-gemv_tmpl.c).
 *
 * The relaxed int8 kernel of Q4_0 is avx2's 256-bit one (x86-quant.h) in
 * a row driver with no 512-bit instruction in its loop, which ran faster
 * on an AVX-512 Xeon than 512-bit forms (see "relaxed: the int8 kernels"
 * below), as is Q8_0's on a CPU without AVX512_VNNI; with it, Q8_0 runs
 * four rows a pass in 512-bit vpdpbusd ("relaxed: Q8_0" below).  Those of
 * Q4_K and Q6_K are in 512-bit vectors ("relaxed: Q4_K", "relaxed: Q6_K").
 */
#include "plugin.h"
#include "avx512-math.h"
#define TYPED_GEMV_MANY_FOR avx512_many_for
#include "cpu-typed-gemv_tmpl.c"
#include "x86-prepared.h"
#include "x86-quant.h"

/* Block functions are inlined into the row driver whatever their size, and
 * the loops over rows and over the parts of a block unrolled: the rows'
 * accumulators stay in registers and the parts' offsets are constants. */
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 4")

/* The kernels prefetch into L2 the lines PREFETCH_BYTES ahead of what
 * they decode, as one run over the rows of a pass (x86_rows_ahead;
 * measured in ../avx2/quant.c). */
#define PREFETCH_BYTES 32768

/* ---- decoding helpers --------------------------------------------------- */

/* The 16 signed bytes of v as float lanes. */
static inline __m512 bytes16_ps(__m128i v)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
}

static inline __m512 load16(const float *x)
{
    return _mm512_loadu_ps(x);
}

static inline __m512i load512(const void *p)
{
    return _mm512_loadu_si512(p);
}

/* ---- the row drivers ---------------------------------------------------------- */

/* acc += the dot of block b of a row (at blk) with x, in float lanes: 512-bit
 * (the strict kernels, relaxed int16 x and Q6_K) or 256-bit (the relaxed
 * int8 kernels of x86-quant.h; see "relaxed: the int8 kernels" below). */
typedef __m512 block_fn(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc);
typedef __m256 block256_fn(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m256 acc);

/* Defines, for float vectors VEC (FN: their block function type; ZERO() a
 * zero one) summed into double vectors DVEC (DZERO() a zero one;
 * WIDEN_ADD(acc, v): acc + v's lanes in double; HSUM(acc): the sum of the
 * lanes):
 *   DOTS(blk, stride, R, x, blocks, block_bytes, group, block, out): the
 *     dots of R rows (blk, blk + stride, ...) over `blocks` blocks, float
 *     lanes over groups of `group` blocks, double across groups; the rows'
 *     group PREFETCH_BYTES ahead is prefetched as one run (x86_rows_ahead);
 *   ROWS(row, stride, count, x, blocks, block_bytes, group, block, out):
 *     `count` rows (1..4), four in one pass, fewer one by one.
 * Always inlined, with constant R, sizes and block function: one body for
 * the two widths. */
#define ROW_DRIVERS(DOTS, ROWS, VEC, FN, ZERO, DVEC, DZERO, WIDEN_ADD, HSUM)                               \
    static ALWAYS_INLINE void DOTS(const uint8_t *blk, size_t stride, int R, const typed_gemv_x *x,       \
                                   size_t blocks, size_t block_bytes, size_t group, FN *block, double *out) \
    {                                                                                                     \
        const char *ahead = x86_rows_ahead(blk, stride, R, PREFETCH_BYTES);                               \
        DVEC acc[4];                                                                                      \
        UNROLL for (int r = 0; r < R; r++) acc[r] = DZERO();                                              \
        for (size_t b = 0; b < blocks;) {                                                                 \
            size_t end = b + group < blocks ? b + group : blocks;                                         \
            VEC g[4] = { ZERO(), ZERO(), ZERO(), ZERO() };                                                \
            for (; b < end; b++) {                                                                        \
                x86_prefetch_run(ahead + R * block_bytes * b, R * block_bytes);                           \
                UNROLL for (int r = 0; r < R; r++)                                                        \
                {                                                                                         \
                    const uint8_t *p = blk + r * stride + b * block_bytes;                                \
                    g[r] = block(p, x, b, g[r]);                                                          \
                }                                                                                         \
            }                                                                                             \
            UNROLL for (int r = 0; r < R; r++) acc[r] = WIDEN_ADD(acc[r], g[r]);                          \
        }                                                                                                 \
        UNROLL for (int r = 0; r < R; r++) out[r] = HSUM(acc[r]);                                         \
    }                                                                                                     \
    static ALWAYS_INLINE void ROWS(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, \
                                   size_t blocks, size_t block_bytes, size_t group, FN *block, double out[4]) \
    {                                                                                                     \
        if (count == 4) {                                                                                 \
            DOTS(row, stride, 4, x, blocks, block_bytes, group, block, out);                              \
            return;                                                                                       \
        }                                                                                                 \
        for (size_t r = 0; r < count; r++)                                                                \
            DOTS(row + r * stride, stride, 1, x, blocks, block_bytes, group, block, out + r);             \
    }

ROW_DRIVERS(dots_of_blocks, rows_of_blocks, __m512, block_fn, _mm512_setzero_ps, __m512d, _mm512_setzero_pd,
            z_widen_add, _mm512_reduce_add_pd)
ROW_DRIVERS(dots_of_blocks256, rows_of_blocks256, __m256, block256_fn, _mm256_setzero_ps, __m256d,
            _mm256_setzero_pd, v_widen_add, v_hsum_pd)

/* ---- strict ----------------------------------------------------------------- */

/* Q8_0 block: d sum q x. */
static ALWAYS_INLINE __m512 block_q8_0(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc)
{
    const uint8_t *q = blk + 2;
    const float *xb = x->f + 32 * b;
    __m512 s = _mm512_mul_ps(bytes16_ps(x86_load128(q)), load16(xb));
    s = _mm512_fmadd_ps(bytes16_ps(x86_load128(q + 16)), load16(xb + 16), s);
    return _mm512_fmadd_ps(_mm512_set1_ps(x86_f16_at(blk)), s, acc);
}

/* Q4_0 block: d sum (q - 8) x; byte j holds value j (low nibble) and j + 16. */
static ALWAYS_INLINE __m512 block_q4_0(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc)
{
    const __m128i low_nibbles = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    const float *xb = x->f + 32 * b;
    __m128i bytes = x86_load128(blk + 2);
    __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, low_nibbles), eight);
    __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), low_nibbles), eight);
    __m512 s = _mm512_mul_ps(bytes16_ps(lo), load16(xb));
    s = _mm512_fmadd_ps(bytes16_ps(hi), load16(xb + 16), s);
    return _mm512_fmadd_ps(_mm512_set1_ps(x86_f16_at(blk)), s, acc);
}

/* sum (scale q - offset) x over 32 values, codes the 32 signed bytes of q. */
static inline __m512 dot32_affine(__m256i codes, __m512 scale, __m512 offset, const float *x, __m512 acc)
{
    __m512 q0 = bytes16_ps(_mm256_castsi256_si128(codes)), q1 = bytes16_ps(_mm256_extracti128_si256(codes, 1));
    acc = _mm512_fmadd_ps(_mm512_fmsub_ps(scale, q0, offset), load16(x), acc);
    return _mm512_fmadd_ps(_mm512_fmsub_ps(scale, q1, offset), load16(x + 16), acc);
}

/* Q4_K (layout in rayo-dtype.h): sub-blocks 2c and 2c + 1 are the low and
 * high nibbles of chunk c's 32 bytes; each weight rebuilt before its product. */
static ALWAYS_INLINE __m512 block_q4_k(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    const float *xb = x->f + RAYO_QK_K * b;
    __m128i sc8, m8;
    x86_q4_k_scales_mins(blk + RAYO_Q4_K_SCALES, &sc8, &m8);
    /* d sc[s] and dmin m[s] of the eight sub-blocks in the lanes of two
     * vectors (decoding them one by one in scalar code cost a quarter of
     * the time), each broadcast where its sub-block needs it */
    __m512 scales = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_set1_ps(x86_f16_at(blk)),
                                                         _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc8))));
    __m512 mins = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_set1_ps(x86_f16_at(blk + RAYO_Q4_K_DMIN)),
                                                       _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m8))));
    UNROLL
    for (int c = 0; c < 4; c++, xb += 64) {
        __m256i bytes = x86_load256(blk + RAYO_Q4_K_QS + 32 * c);
        __m512i lane0 = _mm512_set1_epi32(2 * c), lane1 = _mm512_set1_epi32(2 * c + 1);
        acc = dot32_affine(_mm256_and_si256(bytes, low_nibbles), _mm512_permutexvar_ps(lane0, scales),
                           _mm512_permutexvar_ps(lane0, mins), xb, acc);
        acc = dot32_affine(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles),
                           _mm512_permutexvar_ps(lane1, scales), _mm512_permutexvar_ps(lane1, mins), xb + 32, acc);
    }
    return acc;
}

/* Q6_K: value 128h + 32k + l is (d sc[(128h + 32k + l) / 16]) (q - 32). */
static ALWAYS_INLINE __m512 block_q6_k(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc)
{
    const float *xb = x->f + RAYO_QK_K * b;
    /* d sc[g] of the 16 groups in the lanes of one vector (as in Q4_K) */
    __m512 scales = _mm512_mul_ps(_mm512_set1_ps(x86_f16_at(blk + RAYO_Q6_K_D)),
                                  bytes16_ps(x86_load128(blk + RAYO_Q6_K_SCALES)));
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m256i qh = x86_load256(blk + RAYO_Q6_K_QH + 32 * h);
        UNROLL
        for (int k = 0; k < 4; k++, xb += 32) {
            __m256i codes = _mm256_sub_epi8(x86_q6_k_codes(blk, qh, h, k), _mm256_set1_epi8(32));
            int g = 8 * h + 2 * k;
            __m512 w0 = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_set1_epi32(g), scales),
                                      bytes16_ps(_mm256_castsi256_si128(codes)));
            __m512 w1 = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_set1_epi32(g + 1), scales),
                                      bytes16_ps(_mm256_extracti128_si256(codes, 1)));
            acc = _mm512_fmadd_ps(w0, load16(xb), acc);
            acc = _mm512_fmadd_ps(w1, load16(xb + 16), acc);
        }
    }
    return acc;
}

/* f16 and bf16: 16 values ("a block" of 32 bytes) as floats. */
static ALWAYS_INLINE __m512 block_f16(const uint8_t *w, const typed_gemv_x *x, size_t b, __m512 acc)
{
    return _mm512_fmadd_ps(_mm512_cvtph_ps(x86_load256(w)), load16(x->f + 16 * b), acc);
}

static ALWAYS_INLINE __m512 block_bf16(const uint8_t *w, const typed_gemv_x *x, size_t b, __m512 acc)
{
    __m512 wf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x86_load256(w)), 16));
    return _mm512_fmadd_ps(wf, load16(x->f + 16 * b), acc);
}

TYPED_ROWS_FN(rows_q8_0, 32, RAYO_Q8_0_BYTES, 8, block_q8_0)
TYPED_ROWS_FN(rows_q4_0, 32, RAYO_Q4_0_BYTES, 8, block_q4_0)
TYPED_ROWS_FN(rows_q4_k, RAYO_QK_K, RAYO_Q4_K_BYTES, 1, block_q4_k)
TYPED_ROWS_FN(rows_q6_k, RAYO_QK_K, RAYO_Q6_K_BYTES, 1, block_q6_k)

/* Rows of halves, any n: the last n % 16 values one by one in double. */
static ALWAYS_INLINE void rows_of_halves(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x,
                                         size_t n, block_fn *block, double out[4])
{
    rows_of_blocks(row, stride, count, x, n / 16, 32, 16, block, out);
    for (size_t r = 0; r < count; r++)
        out[r] += typed_gemv_half_tail(row + r * stride, x->f, n / 16 * 16, n, block == block_f16);
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

/* ---- relaxed: Q8_0 and Q4_0 against x in int16 ------------------------------ */

/* acc += scale * the 16 int32 lanes of s. */
static inline __m512 scaled_add(__m512i s, float scale, __m512 acc)
{
    return _mm512_fmadd_ps(_mm512_set1_ps(scale), _mm512_cvtepi32_ps(s), acc);
}

/* One vpmaddwd per block: its 32 codes (int16) by x's 32 int16 values. */
static ALWAYS_INLINE __m512 block_q8_0_int(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc)
{
    __m512i s = _mm512_madd_epi16(_mm512_cvtepi8_epi16(x86_load256(blk + 2)), load512(x->q16 + 32 * b));
    return scaled_add(s, x86_f16_at(blk) * x->scale16[b], acc);
}

static ALWAYS_INLINE __m512 block_q4_0_int(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc)
{
    __m256i bytes = _mm256_cvtepu8_epi16(x86_load128(blk + 2));
    __m256i lo = _mm256_and_si256(bytes, _mm256_set1_epi16(15)), hi = _mm256_srli_epi16(bytes, 4);
    __m512i codes = _mm512_sub_epi16(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi16(8));
    __m512i s = _mm512_madd_epi16(codes, load512(x->q16 + 32 * b));
    return scaled_add(s, x86_f16_at(blk) * x->scale16[b], acc);
}

TYPED_ROWS_FN(rows_q8_0_int, 32, RAYO_Q8_0_BYTES, TYPED_GEMV_INT_GROUP / 32, block_q8_0_int)
TYPED_ROWS_FN(rows_q4_0_int, 32, RAYO_Q4_0_BYTES, TYPED_GEMV_INT_GROUP / 32, block_q4_0_int)

/* ---- relaxed: the int8 kernels in 256-bit vectors ----------------------------- */

/* Q4_0 against int8 x, and Q8_0 on a CPU without AVX512_VNNI or in rows
 * that do not make a group of four, run avx2's 256-bit kernels
 * (x86-quant.h) in a 256-bit row driver: no 512-bit instruction in the
 * loop.  On an AVX-512
 * Xeon (Sapphire Rapids class, 1 thread, 4096 x 11008 weights in cache),
 * the same Q4_0 pair kernel ran 1.3x slower than avx2's when its sums went
 * into 512-bit accumulators (one vaddps zmm, or a zmm move, per pair and
 * row: while 512-bit uops are in flight, port 1 takes no vector work), and
 * slower still with vpdpbusd (AVX512-VNNI) in place of vpmaddubsw +
 * vpmaddwd; a 512-bit Q4_K kernel (vpmulld by the scales) took 2.02 ms
 * where x86-quant.h's two rows a pass takes 1.55 ms, as in avx2 (four rows
 * a pass, which 32 registers allow, ran no faster).  Four Q4_0 rows share
 * one float vector, as in avx2 (x86_q4_0_rows4_pair_i8). */

/* ---- relaxed: Q8_0 in 512-bit vectors with AVX512_VNNI ------------------------ */

/* On a CPU with AVX512_VNNI, four Q8_0 rows a pass go through vpdpbusd
 * (unsigned codes times signed x, four products into each int32 lane),
 * a pair of blocks a 512-bit vector: the codes w made unsigned by w + 128
 * (one xor a row, where |w| against x signed by w takes three), and x's
 * part this adds, 128 times x's sums over each lane's 4 values (c: one
 * vpdpbusd of x for the four rows), starts each row's sums negated.  A
 * row's 16 lanes then hold its pair's four quarters (16 values each; 0-1
 * block 2p, 2-3 block 2p + 1), summed across the rows by unpacks (two
 * levels, as in x86-quant.h's four-row Q4_0) into lane 4k + r: row r's
 * quarter k, at most 16 * 128 * 127 in magnitude, an exact integer in
 * float.  One convert and one FMA by the rows' f16 scales times x's then
 * serve the four rows.  The block sums are the 256-bit kernels' exact
 * integers: only the float order changes.  On the AMD EPYC (Zen 5 class,
 * 1 thread, 256 x 2048 weights in L2, best of 20) a call took 11.8 us
 * against 15.6 with the 256-bit pair kernel.  Q4_0 in the same form (one
 * vpdpbusd per pair and row, or two per two pairs against x's low and
 * high nibbles' values) took 21.4-27.3 us against 20.4-21.8 for avx2's
 * four-row kernel (512 x 2048), which it keeps: on this core a 512-bit
 * instruction costs about two 256-bit ones, and Q4_0's kernel already did
 * as many products per instruction (avx2's four-row form with 256-bit
 * vpdpbusd in place of vpmaddubsw and the int16 sums took 20.6-20.8 us
 * against 21.1-21.6 in the same runs: within their spread). */
#pragma GCC push_options
#pragma GCC target("avx512vnni")

/* The 2 x 32 codes of a pair of Q8_0 blocks, plus 128 (unsigned). */
static ALWAYS_INLINE __m512i q8_0_pair_codes(const uint8_t *blk)
{
    __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(x86_load256(blk + 2)),
                                   x86_load256(blk + RAYO_Q8_0_BYTES + 2), 1);
    return _mm512_xor_si512(w, _mm512_set1_epi8((char)0x80));
}

/* Lane 4k + r: row r's quarter k, from the rows' lanes s[r] (see above). */
static ALWAYS_INLINE __m512i rows4_quarters(const __m512i s[4])
{
    __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[0], s[1]), _mm512_unpackhi_epi32(s[0], s[1]));
    __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2], s[3]), _mm512_unpackhi_epi32(s[2], s[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

/* The f16 scales of the four rows' pair p as floats (lanes 4h + r, h the
 * block of the pair). */
static ALWAYS_INLINE __m256 q8_0_rows4_d(const uint8_t *blk, size_t stride)
{
    return _mm256_cvtph_ps(_mm_insert_epi64(_mm_cvtsi64_si128(x86_f16_of_rows4(blk, stride)),
                                            x86_f16_of_rows4(blk + RAYO_Q8_0_BYTES, stride), 1));
}

/* Those scales times x's two scales, in the quarters' lanes (block k / 2). */
static ALWAYS_INLINE __m512 q8_0_rows4_scales_of(__m256 d, const float *sx)
{
    __m128 two = _mm_castpd_ps(_mm_load_sd((const double *)(const void *)sx));
    __m256 sx_lanes = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(two), _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
    __m512 scales = _mm512_castps256_ps512(_mm256_mul_ps(d, sx_lanes));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7), scales);
}

static ALWAYS_INLINE __m512 q8_0_rows4_scales(const uint8_t *blk, size_t stride, const float *sx)
{
    return q8_0_rows4_scales_of(q8_0_rows4_d(blk, stride), sx);
}

/* Pairs [p, end) of four Q8_0 rows: acc lane 4k + r gets row r's quarter k. */
static ALWAYS_INLINE __m512 q8_0_rows4_group(const uint8_t *row, size_t stride, const typed_gemv_x *x, size_t p,
                                             size_t end)
{
    const __m512i plus128 = _mm512_set1_epi8((char)0x80);
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    __m512 acc = _mm512_setzero_ps();
    for (; p < end; p++) {
        const uint8_t *blk = row + 2 * RAYO_Q8_0_BYTES * p;
        x86_prefetch_run(ahead + 8 * RAYO_Q8_0_BYTES * p, 8 * RAYO_Q8_0_BYTES);
        __m512i xv = load512(x->q8_32 + 64 * p);
        __m512i minus_c = _mm512_sub_epi32(_mm512_setzero_si512(),
                                           _mm512_dpbusd_epi32(_mm512_setzero_si512(), plus128, xv));
        __m512i s[4];
        UNROLL for (int r = 0; r < 4; r++)
            s[r] = _mm512_dpbusd_epi32(minus_c, q8_0_pair_codes(blk + r * stride), xv);
        __m512 scales = q8_0_rows4_scales(blk, stride, x->scale8_32 + 2 * p);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(rows4_quarters(s)), scales, acc);
    }
    return acc;
}

/* Four rows: groups of pairs in float, then double; row r's lanes are
 * 4k + r. */
static void q8_0_rows4_vnni(const uint8_t *row, size_t stride, const typed_gemv_x *x, size_t n, double out[4])
{
    const size_t group = TYPED_GEMV_INT_GROUP / 64, pairs = n / 64;
    __m512d sums = _mm512_setzero_pd();
    for (size_t p = 0; p < pairs; p += group)
        sums = z_widen_add(sums, q8_0_rows4_group(row, stride, x, p, p + group < pairs ? p + group : pairs));
    /* double lane j holds float lanes j and j + 8: quarters 0 and 2 of row
     * j (j < 4), 1 and 3 of row j - 4 */
    _mm256_storeu_pd(out, _mm256_add_pd(_mm512_castpd512_pd256(sums), _mm512_extractf64x4_pd(sums, 1)));
    typed_gemv_odd_block(row, stride, 4, x, n, 1, out);
}

/* q8_0_rows4_group for NX x's at once: each pair's codes and scales of
 * the four rows decoded once, then each x's sums exactly as there. */
static ALWAYS_INLINE void q8_0_rows4_group_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[],
                                              int NX, size_t p, size_t end, __m512 acc[TYPED_GEMV_MANY_X])
{
    const __m512i plus128 = _mm512_set1_epi8((char)0x80);
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    UNROLL for (int j = 0; j < NX; j++) acc[j] = _mm512_setzero_ps();
    for (; p < end; p++) {
        const uint8_t *blk = row + 2 * RAYO_Q8_0_BYTES * p;
        x86_prefetch_run(ahead + 8 * RAYO_Q8_0_BYTES * p, 8 * RAYO_Q8_0_BYTES);
        __m512i codes[4];
        UNROLL for (int r = 0; r < 4; r++) codes[r] = q8_0_pair_codes(blk + r * stride);
        __m256 d = q8_0_rows4_d(blk, stride);
        UNROLL for (int j = 0; j < NX; j++)
        {
            __m512i xv = load512(xs[j]->q8_32 + 64 * p);
            __m512i minus_c = _mm512_sub_epi32(_mm512_setzero_si512(),
                                               _mm512_dpbusd_epi32(_mm512_setzero_si512(), plus128, xv));
            __m512i s[4];
            UNROLL for (int r = 0; r < 4; r++) s[r] = _mm512_dpbusd_epi32(minus_c, codes[r], xv);
            __m512 scales = q8_0_rows4_scales_of(d, xs[j]->scale8_32 + 2 * p);
            acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(rows4_quarters(s)), scales, acc[j]);
        }
    }
}

/* q8_0_rows4_vnni for NX x's at once (TYPED_GEMV_MANY_FOR). */
static ALWAYS_INLINE void q8_0_rows4_vnni_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[],
                                             int NX, size_t n, double out[][4])
{
    const size_t group = TYPED_GEMV_INT_GROUP / 64, pairs = n / 64;
    __m512d sums[TYPED_GEMV_MANY_X];
    UNROLL for (int j = 0; j < NX; j++) sums[j] = _mm512_setzero_pd();
    for (size_t p = 0; p < pairs; p += group) {
        __m512 acc[TYPED_GEMV_MANY_X];
        q8_0_rows4_group_nx(row, stride, xs, NX, p, p + group < pairs ? p + group : pairs, acc);
        UNROLL for (int j = 0; j < NX; j++) sums[j] = z_widen_add(sums[j], acc[j]);
    }
    UNROLL for (int j = 0; j < NX; j++)
    {
        _mm256_storeu_pd(out[j], _mm256_add_pd(_mm512_castpd512_pd256(sums[j]), _mm512_extractf64x4_pd(sums[j], 1)));
        typed_gemv_odd_block(row, stride, 4, xs[j], n, 1, out[j]);
    }
}

TYPED_ROWS_MANY(q8_0_rows4_vnni_many, q8_0_rows4_vnni_nx)

#pragma GCC pop_options

/* Rows of pairs of Q8_0 (q8_0 1) or Q4_0 blocks, and the last odd block. */
static ALWAYS_INLINE void rows_of_pairs(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x,
                                        size_t n, int q8_0, block256_fn *pair, double out[4])
{
    size_t pair_bytes = 2 * (q8_0 ? RAYO_Q8_0_BYTES : RAYO_Q4_0_BYTES);
    rows_of_blocks256(row, stride, count, x, n / 64, pair_bytes, TYPED_GEMV_INT_GROUP / 64, pair, out);
    typed_gemv_odd_block(row, stride, count, x, n, q8_0, out);
}

static ALWAYS_INLINE __m256 pair_q8_0(const uint8_t *blk, const typed_gemv_x *x, size_t p, __m256 acc)
{
    return x86_q8_0_pair_i8(blk, x->q8_32 + 64 * p, x->scale8_32 + 2 * p, acc);
}

static ALWAYS_INLINE __m256 pair_q4_0(const uint8_t *blk, const typed_gemv_x *x, size_t p, __m256 acc)
{
    return x86_q4_0_pair_i8(blk, x->q8_32 + 64 * p, x->offset8_64 + 8 * p, x->scale8_64 + 8 * p, acc);
}

static void rows_q8_0_i8(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n,
                         double out[4])
{
    if (count == 4 && __builtin_cpu_supports("avx512vnni")) {
        q8_0_rows4_vnni(row, stride, x, n, out);
        return;
    }
    rows_of_pairs(row, stride, count, x, n, 1, pair_q8_0, out);
}

/* Pairs [p, end) of four Q4_0 rows against int8 x in one float vector:
 * lane 4h + r holds row r's block h of each pair (x86-quant.h, the avx2
 * kernel's four-row form). */
static ALWAYS_INLINE __m256 q4_0_rows4_group(const uint8_t *row, size_t stride, const typed_gemv_x *x, size_t p,
                                             size_t end)
{
    __m256 acc = _mm256_setzero_ps();
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    for (; p < end; p++) {
        const uint8_t *blk = row + 2 * RAYO_Q4_0_BYTES * p;
        x86_prefetch_run(ahead + 8 * RAYO_Q4_0_BYTES * p, 8 * RAYO_Q4_0_BYTES);
        acc = x86_q4_0_rows4_pair_i8(blk, stride, x->q8_32 + 64 * p, x->offset8_64 + 8 * p, x->scale8_64 + 8 * p,
                                     acc);
    }
    return acc;
}

/* Four rows: groups of pairs in float, their lanes 4h + r added into
 * double lane r. */
static void q4_0_rows4_i8(const uint8_t *row, size_t stride, const typed_gemv_x *x, size_t pairs, double out[4])
{
    const size_t group = TYPED_GEMV_INT_GROUP / 64;
    __m256d sums = _mm256_setzero_pd();
    for (size_t p = 0; p < pairs; p += group)
        sums = v_widen_add(sums, q4_0_rows4_group(row, stride, x, p, p + group < pairs ? p + group : pairs));
    _mm256_storeu_pd(out, sums);
}

/* q4_0_rows4_i8 for NX x's at once (TYPED_GEMV_MANY_FOR). */
static ALWAYS_INLINE void q4_0_rows4_i8_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX,
                                           size_t n, double out[][4])
{
    typed_q4_0_rows4_i8_nx(row, stride, xs, NX, n, PREFETCH_BYTES, v_widen_add, out);
}

TYPED_ROWS_MANY(q4_0_rows4_i8_many, q4_0_rows4_i8_nx)

static void rows_q4_0_i8(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n,
                         double out[4])
{
    if (count == 4) {
        q4_0_rows4_i8(row, stride, x, n / 64, out);
        typed_gemv_odd_block(row, stride, count, x, n, 0, out);
        return;
    }
    rows_of_pairs(row, stride, count, x, n, 0, pair_q4_0, out);
}



/* ---- relaxed: Q4_K against int8 x, in 512-bit vectors ------------------------ */

/* A Q4_K block's 128 code bytes are read as two 512-bit halves P = 0, 1:
 * chunks 2P and 2P + 1, whose low nibbles are sub-blocks 4P and 4P + 2,
 * high nibbles 4P + 1 and 4P + 3.  vpmaddubsw multiplies each by x's
 * values in that order (xv below: x's natural order with two 256-bit
 * quarters swapped, once for the rows of a pass), vpmaddwd by the
 * sub-blocks' scales (lanes 0-15 of one sub-block, 16-31 of the other,
 * picked by vpshufb) into int32: 12 instructions per 128 values and row,
 * where the 256-bit kernel of x86-quant.h (avx2's) spends about 21 on its
 * int16 transposes alone; four rows a pass, whose blocks' scales,
 * minimums, d and dmin are unpacked together in 512-bit registers
 * (q4_k_scales_mins4 below: a row's alone took about 22 of the 50
 * instructions of its block).  On the AMD EPYC (Zen 5
 * class, 1 thread, 512 x 2048 weights in L2) a call took 17.6 us against
 * 22.0 with the 256-bit kernel, which was compute-bound there (a third of
 * the read bandwidth in cache).  Not measured on an AVX-512 Xeon, where
 * an earlier 512-bit form (vpmulld by the scales) lost to the 256-bit one
 * (below). */

/* int16 lanes 0-15: sub-block s_low's scale (byte s_low of each 128-bit
 * lane, zero-extended), lanes 16-31: s_high's; a vpshufb pattern. */
static inline __m512i q4_k_scale_pattern(short s_low, short s_high)
{
    __m256i lo = _mm256_set1_epi16((short)(0x8000 | s_low)), hi = _mm256_set1_epi16((short)(0x8000 | s_high));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* x's 256 int8 values of a block in the order of the code halves:
 * xv[2P] sub-blocks 4P and 4P + 2, xv[2P + 1] 4P + 1 and 4P + 3. */
static ALWAYS_INLINE void q4_k_x_order(const int8_t *xq, __m512i xv[4])
{
    UNROLL
    for (int P = 0; P < 2; P++) {
        __m512i a = load512(xq + 128 * P), b = load512(xq + 128 * P + 64);
        xv[2 * P] = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0));
        xv[2 * P + 1] = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2));
    }
}

/* x's scales per 32 values (sx: the block's 8) in the int32 lanes of the
 * code halves' sums: xs[2P] sub-blocks 4P (lanes 0-7) and 4P + 2, xs[2P +
 * 1] 4P + 1 and 4P + 3. */
static ALWAYS_INLINE void q4_k_x_scales(const float *sx, __m512 xs[4])
{
    __m512 v = _mm512_castps256_ps512(_mm256_loadu_ps(sx));
    UNROLL
    for (int j = 0; j < 4; j++) {
        int s = 4 * (j / 2) + j % 2;
        __m512i lanes = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(s)), _mm256_set1_epi32(s + 2), 1);
        xs[j] = _mm512_permutexvar_ps(lanes, v);
    }
}

/* The headers of block b of four Q4_K rows (at p[r]), unpacked together
 * in vector registers: 128-bit lane r of the result holds row r's eight
 * 6-bit scales (bytes 0-7) and minimums (bytes 8-15).  Two byte shuffles
 * put B0-3, B8-11, B4-7, B8-11 (the low bits) and B0-3, B4-7 (the top two
 * bits of scales and minimums 0-3, which are the high bits of 4-7) where
 * each byte of the result takes them from, then three masks: ten
 * instructions for the four rows, where one row's in general registers
 * take about 28 (x86_q4_k_scales_mins).  Reads 16 bytes at each row's
 * scales (the block's first code bytes follow them). */
static ALWAYS_INLINE __m512i q4_k_scales_mins4(const uint8_t *const p[4])
{
    const __m512i low_from = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m512i top_from = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7));
    const __m512i low_bits = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0x3f, 0x3f, 0x3f, 0x3f, 15, 15, 15, 15, 0x3f, 0x3f, 0x3f, 0x3f, 0, 0, 0, 0));
    const __m512i mid_bits = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
    const __m512i top_bits = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30, 0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30));
    __m512i v = _mm512_castsi128_si512(x86_load128(p[0] + RAYO_Q4_K_SCALES));
    v = _mm512_inserti32x4(v, x86_load128(p[1] + RAYO_Q4_K_SCALES), 1);
    v = _mm512_inserti32x4(v, x86_load128(p[2] + RAYO_Q4_K_SCALES), 2);
    v = _mm512_inserti32x4(v, x86_load128(p[3] + RAYO_Q4_K_SCALES), 3);
    __m512i low = _mm512_shuffle_epi8(v, low_from), top = _mm512_shuffle_epi8(v, top_from);
    /* 16-bit shifts: what crosses from the neighbouring byte falls outside the masks */
    __m512i r = _mm512_or_si512(_mm512_and_si512(low, low_bits), _mm512_and_si512(_mm512_srli_epi16(low, 4), mid_bits));
    return _mm512_or_si512(r, _mm512_and_si512(_mm512_srli_epi16(top, 2), top_bits));
}

/* d and dmin of the four rows' blocks in lanes 2r and 2r + 1: the eight
 * halves converted by one instruction. */
static ALWAYS_INLINE __m512 q4_k_d_dmin4(const uint8_t *const p[4])
{
    uint32_t u[4];
    UNROLL for (int r = 0; r < 4; r++) memcpy(&u[r], p[r], 4); /* little-endian x86: d in the low half */
    return _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_setr_epi32((int)u[0], (int)u[1], (int)u[2], (int)u[3])));
}

/* The minimums' factors of the four rows (sm, dd as above): m_dmin[h]
 * holds dmin m[s] of rows 2h (lanes 0-7) and 2h + 1 (lanes 8-15), for
 * the sub-blocks s of x's sums per 32 in the same lanes; they do not
 * depend on x. */
static ALWAYS_INLINE void q4_k_mins_dmin4(__m512i sm, __m512 dd, __m512 m_dmin[2])
{
    __m256i m = _mm512_castsi512_si256(_mm512_permutexvar_epi64(_mm512_setr_epi64(1, 3, 5, 7, 1, 3, 5, 7), sm));
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m128i m8 = h ? _mm256_extracti128_si256(m, 1) : _mm256_castsi256_si128(m);
        __m512i dmin_lanes = _mm512_inserti64x4(_mm512_set1_epi32(4 * h + 1), _mm256_set1_epi32(4 * h + 3), 1);
        m_dmin[h] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(m8)), _mm512_permutexvar_ps(dmin_lanes, dd));
    }
}

/* mins[h] -= m_dmin[h] against x's exact sums per 32 (xsum, the block's 8). */
static ALWAYS_INLINE void q4_k_minus_mins4(const __m512 m_dmin[2], const float *xsum, __m512 mins[2])
{
    __m512 x = _mm512_broadcast_f32x8(_mm256_loadu_ps(xsum));
    UNROLL for (int h = 0; h < 2; h++) mins[h] = _mm512_fnmadd_ps(m_dmin[h], x, mins[h]);
}

/* One row's block (at p; its scales in bytes 0-7 of every 128-bit lane of
 * sc) decoded for q4_k_dot512: codes[2P] the low nibbles of half P,
 * codes[2P + 1] the high ones; scales[j] their sub-blocks' int16 scales. */
static ALWAYS_INLINE void q4_k_codes512(const uint8_t *p, __m512i sc, __m512i codes[4], __m512i scales[4])
{
    const __m512i low_nibbles = _mm512_set1_epi8(15);
    UNROLL
    for (int P = 0; P < 2; P++) {
        __m512i v = load512(p + RAYO_Q4_K_QS + 64 * P);
        codes[2 * P] = _mm512_and_si512(v, low_nibbles);
        codes[2 * P + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low_nibbles);
        scales[2 * P] = _mm512_shuffle_epi8(sc, q4_k_scale_pattern(4 * P, 4 * P + 2));
        scales[2 * P + 1] = _mm512_shuffle_epi8(sc, q4_k_scale_pattern(4 * P + 1, 4 * P + 3));
    }
}

/* One row's decoded block (its d in every lane of d) against x (xv, xs)
 * without the minimums: per32 0: xs[0] holds x's scale per 256 in every
 * lane, the scaled int32 sums are added in int32 (at most 4 * 2 * (2 * 15
 * * 127) * 63 a lane) and go to float once; per32 1: each half's sums go
 * to float times its lanes' x scales. */
static ALWAYS_INLINE __m512 q4_k_dot512(const __m512i codes[4], const __m512i scales[4], __m512 d,
                                        const __m512i xv[4], const __m512 xs[4], int per32, __m512 acc)
{
    __m512i sum = _mm512_setzero_si512();
    __m512 t = _mm512_setzero_ps();
    UNROLL
    for (int P = 0; P < 2; P++) {
        __m512i s_lo = _mm512_madd_epi16(_mm512_maddubs_epi16(codes[2 * P], xv[2 * P]), scales[2 * P]);
        __m512i s_hi = _mm512_madd_epi16(_mm512_maddubs_epi16(codes[2 * P + 1], xv[2 * P + 1]), scales[2 * P + 1]);
        if (!per32) {
            sum = _mm512_add_epi32(sum, _mm512_add_epi32(s_lo, s_hi));
        } else {
            t = P ? _mm512_fmadd_ps(_mm512_cvtepi32_ps(s_lo), xs[2 * P], t)
                  : _mm512_mul_ps(_mm512_cvtepi32_ps(s_lo), xs[2 * P]);
            t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s_hi), xs[2 * P + 1], t);
        }
    }
    return per32 ? _mm512_fmadd_ps(t, d, acc) : _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, xs[0]), acc);
}

/* The 128-bit lane r of v in all four lanes (vpermd: r need not be a
 * constant, as vshufi32x4's immediate must, which -O0 and -O1 do not fold). */
static ALWAYS_INLINE __m512i lane128_of(__m512i v, int r)
{
    __m512i in_lane = _mm512_set_epi32(3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0);
    return _mm512_permutexvar_epi32(_mm512_add_epi32(_mm512_set1_epi32(4 * r), in_lane), v);
}

/* x's int8 values (q8) and scales (scale: per 32 values with per32, else
 * per 256) of block b as q4_k_dot512 takes them. */
static ALWAYS_INLINE void q4_k_x_of(const int8_t *q8, const float *scale, int per32, size_t b, __m512i xv[4],
                                    __m512 xs[4])
{
    q4_k_x_order(q8 + RAYO_QK_K * b, xv);
    if (per32)
        q4_k_x_scales(scale + 8 * b, xs);
    else
        xs[0] = _mm512_set1_ps(scale[b]);
}

/* Block b of R (1..4) rows: their headers decoded together (the lanes of
 * rows past R repeat row 0), then each row's codes. */
static ALWAYS_INLINE void q4_k_rows_block(const uint8_t *row, size_t stride, int R, const __m512i xv[4],
                                          const __m512 xs[4], const float *xsum, int per32, __m512 acc[4],
                                          __m512 mins[2])
{
    const uint8_t *p[4];
    UNROLL for (int r = 0; r < 4; r++) p[r] = row + (r < R ? r : 0) * stride;
    __m512i sm = q4_k_scales_mins4(p);
    __m512 dd = q4_k_d_dmin4(p), m_dmin[2];
    q4_k_mins_dmin4(sm, dd, m_dmin);
    q4_k_minus_mins4(m_dmin, xsum, mins);
    UNROLL
    for (int r = 0; r < R; r++) {
        __m512i codes[4], scales[4];
        q4_k_codes512(p[r], lane128_of(sm, r), codes, scales);
        acc[r] = q4_k_dot512(codes, scales, _mm512_permutexvar_ps(_mm512_set1_epi32(2 * r), dd), xv, xs, per32,
                             acc[r]);
    }
}

/* Row r's lanes of the minimums' vectors (q4_k_minus_mins4) as a double sum. */
static ALWAYS_INLINE double q4_k_mins_of(const __m512 mins[2], int r)
{
    __m256 half = r % 2 ? _mm512_extractf32x8_ps(mins[r / 2], 1) : _mm512_castps512_ps256(mins[r / 2]);
    return v_hsum_pd(v_widen_add(_mm256_setzero_pd(), half));
}

/* The dots of R Q4_K rows with x (q8: int8 per 256 values, scales: one per
 * block, or per 32 with per32) over `blocks` blocks into out: float lanes
 * over X86_Q4_K_BLOCKS_PER_GROUP blocks, then double; the rows' group
 * PREFETCH_BYTES ahead prefetched as one run (x86_rows_ahead). */
static ALWAYS_INLINE void q4_k_rows512(const uint8_t *row, size_t stride, int R, const int8_t *q8,
                                       const float *scale, const float *xsum, int per32, size_t blocks, double *out)
{
    const char *ahead = x86_rows_ahead(row, stride, R, PREFETCH_BYTES);
    UNROLL for (int r = 0; r < R; r++) out[r] = 0.0;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + X86_Q4_K_BLOCKS_PER_GROUP < blocks ? b + X86_Q4_K_BLOCKS_PER_GROUP : blocks;
        __m512 acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
        __m512 mins[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() };
        for (; b < end; b++) {
            __m512i xv[4];
            __m512 xs[4];
            x86_prefetch_run(ahead + R * RAYO_Q4_K_BYTES * b, R * RAYO_Q4_K_BYTES);
            q4_k_x_of(q8, scale, per32, b, xv, xs);
            q4_k_rows_block(row + RAYO_Q4_K_BYTES * b, stride, R, xv, xs, xsum + 8 * b, per32, acc, mins);
        }
        UNROLL for (int r = 0; r < R; r++)
            out[r] += _mm512_reduce_add_pd(z_widen_add(_mm512_setzero_pd(), acc[r])) + q4_k_mins_of(mins, r);
    }
}

/* count (1..4) rows: four in one pass, fewer one by one. */
static ALWAYS_INLINE void q4_k_rows512_of(const uint8_t *row, size_t stride, size_t count, const int8_t *q8,
                                          const float *scale, const float *xsum, int per32, size_t n, double out[4])
{
    if (count == 4) {
        q4_k_rows512(row, stride, 4, q8, scale, xsum, per32, n / RAYO_QK_K, out);
        return;
    }
    for (size_t r = 0; r < count; r++)
        q4_k_rows512(row + r * stride, stride, 1, q8, scale, xsum, per32, n / RAYO_QK_K, out + r);
}

static void rows_q4_k_int(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n,
                          double out[4])
{
    q4_k_rows512_of(row, stride, count, x->q8, x->scale8, x->sum, 0, n, out);
}

static void rows_q4_k_i8_32(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n,
                            double out[4])
{
    q4_k_rows512_of(row, stride, count, x->q8_32, x->scale8_32, x->sum, 1, n, out);
}

/* ---- relaxed: Q6_K against int8 x, in 512-bit vectors ------------------------ */

/* Q6_K's value 128h + 32k + l (layout in x86_q6_k_codes): for each h, the
 * 64 bytes of ql hold the low 4 bits of k = 0, 1 (low nibbles) and k = 2,
 * 3 (high nibbles), in x's order; qh's 32 bytes, in both 256-bit halves,
 * give the high 2 bits of k and k + 1 by one variable shift per 16-bit
 * lane (k = 0: 4 left, 1: 2 left; 2: none, 3: 2 right) and a mask.  So
 * 128 codes take 11 instructions (two loads, three masks, three shifts,
 * two ors), where two 256-bit x86_q6_k_codes and a join take 22.  On the
 * AMD EPYC (Zen 5 class, 1 thread, 512 x 2048 weights in L2) a call took
 * 19.1 us against 23.2 (x per 256) and 22.8 against 35 (x per 32, whose
 * 256-bit kernel x86_q6_k_i8_32 this plugin ran before). */
static ALWAYS_INLINE void q6_k_codes512(const uint8_t *blk, int h, __m512i codes[2])
{
    const __m512i low_nibbles = _mm512_set1_epi8(15), bits_4_5 = _mm512_set1_epi8(0x30);
    const __m512i left = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i right = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    __m512i ql = load512(blk + 64 * h);
    __m512i qh = _mm512_broadcast_i64x4(x86_load256(blk + RAYO_Q6_K_QH + 32 * h));
    codes[0] = _mm512_or_si512(_mm512_and_si512(ql, low_nibbles), _mm512_and_si512(_mm512_sllv_epi16(qh, left), bits_4_5));
    codes[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low_nibbles),
                               _mm512_and_si512(_mm512_srlv_epi16(qh, right), bits_4_5));
}

/* int16 lanes: g in lanes 0-7, g + 1 in 8-15, g + 2 in 16-23, g + 3 in 24-31. */
static inline __m512i quarters16(short g)
{
    __m512i v = _mm512_castsi128_si512(_mm_set1_epi16(g));
    v = _mm512_inserti32x4(v, _mm_set1_epi16((short)(g + 1)), 1);
    v = _mm512_inserti32x4(v, _mm_set1_epi16((short)(g + 2)), 2);
    return _mm512_inserti32x4(v, _mm_set1_epi16((short)(g + 3)), 3);
}

/* int16 lanes 4i .. 4i + 3 (of each 128-bit lane): group 8h + 4j + i's
 * scale, from the 16 scales in int16 (sc16): those of half j of h. */
static ALWAYS_INLINE __m512i q6_k_groups(__m256i sc16, int h, int j)
{
    return _mm512_permutexvar_epi16(quarters16((short)(8 * h + 4 * j)), _mm512_castsi256_si512(sc16));
}

/* One row's Q6_K block decoded: codes[2h + j] half j of h's codes
 * (q6_k_codes512), groups[2h + j] their scales (q6_k_groups), sc16 the
 * 16 scales in int16, d the block's d. */
typedef struct q6_k_decoded {
    __m512i codes[4], groups[4];
    __m256i sc16;
    float d;
} q6_k_decoded;

static ALWAYS_INLINE void q6_k_decode512(const uint8_t *blk, q6_k_decoded *w)
{
    w->sc16 = _mm256_cvtepi8_epi16(x86_load128(blk + RAYO_Q6_K_SCALES));
    w->d = x86_f16_at(blk + RAYO_Q6_K_D);
    UNROLL
    for (int h = 0; h < 2; h++) {
        q6_k_codes512(blk, h, w->codes + 2 * h);
        w->groups[2 * h] = q6_k_groups(w->sc16, h, 0);
        w->groups[2 * h + 1] = q6_k_groups(w->sc16, h, 1);
    }
}

/* The int32 sums of the codes of half j of h (w: values 128h + 64j ..)
 * times x (xq at them) times their four 16-value groups' scales: lanes
 * 0-7 hold the 32 values of chunk 4h + 2j, lanes 8-15 of chunk 4h + 2j + 1. */
static ALWAYS_INLINE __m512i q6_k_half_sums(const q6_k_decoded *w, const int8_t *xq, int h, int j)
{
    return _mm512_madd_epi16(_mm512_maddubs_epi16(w->codes[2 * h + j], load512(xq + 128 * h + 64 * j)),
                             w->groups[2 * h + j]);
}

/* Q6_K against int8 x per 256 values: d (x scale) sum_g sc[g] (sum q xq -
 * 32 sum xq) over the 16 groups g of 16 values, in int32 (maddubs pairs at
 * most 2 * 63 * 127; the -32 part: madd of x's group sums with the
 * scales); the block decoded (q6_k_decode512). */
static ALWAYS_INLINE __m512 q6_k_dot_int(const q6_k_decoded *w, const typed_gemv_x *x, size_t b, __m512 acc)
{
    const int8_t *xq = x->q8 + RAYO_QK_K * b;
    __m256i offset = _mm256_madd_epi16(x86_load256(x->qsum + 16 * b), w->sc16);
    __m512i sum = _mm512_setzero_si512();
    UNROLL
    for (int h = 0; h < 2; h++)
        sum = _mm512_add_epi32(sum, _mm512_add_epi32(q6_k_half_sums(w, xq, h, 0), q6_k_half_sums(w, xq, h, 1)));
    __m512i total = _mm512_sub_epi32(sum, _mm512_zextsi256_si512(_mm256_slli_epi32(offset, 5)));
    return scaled_add(total, w->d * x->scale8[b], acc);
}

/* x's scales per 32 values of chunks 4h + 2j (lanes 0-7) and 4h + 2j + 1
 * (lanes 8-15), from the block's 8 at sx. */
static ALWAYS_INLINE __m512 q6_k_x_scales(const float *sx, int h, int j)
{
    int c = 4 * h + 2 * j;
    __m512i lanes = _mm512_inserti64x4(_mm512_set1_epi32(c), _mm256_set1_epi32(c + 1), 1);
    return _mm512_permutexvar_ps(lanes, _mm512_castps256_ps512(_mm256_loadu_ps(sx)));
}

/* Q6_K against int8 x per 32 values (where x's scale per 256 fails the
 * error budget): each half's int32 sums go to float times their chunks' x
 * scales; the -32 part (lane c: chunk c's madd of x's group sums, qsum,
 * with the scales) times chunk c's x scale, all times d. */
static ALWAYS_INLINE __m512 q6_k_dot_i8_32(const q6_k_decoded *w, const typed_gemv_x *x, size_t b, __m512 acc)
{
    const int8_t *xq = x->q8_32 + RAYO_QK_K * b;
    const float *sx = x->scale8_32 + 8 * b;
    __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(x86_load256(x->qsum + 16 * b), w->sc16), 5);
    __m512 t = _mm512_zextps256_ps512(_mm256_mul_ps(_mm256_cvtepi32_ps(offset), _mm256_loadu_ps(sx)));
    t = _mm512_sub_ps(_mm512_setzero_ps(), t);
    UNROLL
    for (int h = 0; h < 2; h++) {
        UNROLL
        for (int j = 0; j < 2; j++)
            t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q6_k_half_sums(w, xq, h, j)), q6_k_x_scales(sx, h, j), t);
    }
    return _mm512_fmadd_ps(_mm512_set1_ps(w->d), t, acc);
}

static ALWAYS_INLINE __m512 block_q6_k_int(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc)
{
    q6_k_decoded w;
    q6_k_decode512(blk, &w);
    return q6_k_dot_int(&w, x, b, acc);
}

static ALWAYS_INLINE __m512 block_q6_k_i8_32(const uint8_t *blk, const typed_gemv_x *x, size_t b, __m512 acc)
{
    q6_k_decoded w;
    q6_k_decode512(blk, &w);
    return q6_k_dot_i8_32(&w, x, b, acc);
}

TYPED_ROWS_FN(rows_q6_k_int, RAYO_QK_K, RAYO_Q6_K_BYTES, TYPED_GEMV_INT_GROUP / RAYO_QK_K, block_q6_k_int)
TYPED_ROWS_FN(rows_q6_k_i8_32, RAYO_QK_K, RAYO_Q6_K_BYTES, TYPED_GEMV_INT_GROUP / RAYO_QK_K, block_q6_k_i8_32)

/* ---- relaxed: Q4_K and Q6_K against several x's at once ---------------------- */

/* Four rows against up to four x's: each block's headers and codes decoded
 * once, then every x's sums by the row kernel's operations in its order.
 * With four x's, the 16 float accumulators beside the decoding spill from
 * the 32 registers; taking the x's in two passes of two over a group of
 * blocks (its weights from L1 the second time, decoded again) ran no
 * faster for Q4_K and 7% slower for Q6_K on the AMD EPYC (Zen 5 class, 1
 * thread, 4 x 5632 x 2048 matmul as gemvs). */

/* x's int8 values and their scales: per 32 values with per32, else per 256. */
static inline const int8_t *k_x_q8(const typed_gemv_x *x, int per32)
{
    return per32 ? x->q8_32 : x->q8;
}

static inline const float *k_x_scale(const typed_gemv_x *x, int per32)
{
    return per32 ? x->scale8_32 : x->scale8;
}

/* Blocks [b, end) of four Q4_K rows against NX x's, each x's sums as
 * q4_k_rows512 (R = 4) makes them, its group added into out[j] as there. */
static ALWAYS_INLINE void q4_k_rows4_group_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[],
                                              int NX, int per32, size_t b, size_t end, const char *ahead,
                                              double out[][4])
{
    __m512 acc[TYPED_GEMV_MANY_X][4], mins[TYPED_GEMV_MANY_X][2];
    UNROLL for (int j = 0; j < NX; j++)
    {
        UNROLL for (int r = 0; r < 4; r++) acc[j][r] = _mm512_setzero_ps();
        mins[j][0] = mins[j][1] = _mm512_setzero_ps();
    }
    for (; b < end; b++) {
        const uint8_t *p[4];
        x86_prefetch_run(ahead + 4 * RAYO_Q4_K_BYTES * b, 4 * RAYO_Q4_K_BYTES);
        UNROLL for (int r = 0; r < 4; r++) p[r] = row + r * stride + RAYO_Q4_K_BYTES * b;
        __m512i sm = q4_k_scales_mins4(p), xv[TYPED_GEMV_MANY_X][4];
        __m512 dd = q4_k_d_dmin4(p), m_dmin[2], xsv[TYPED_GEMV_MANY_X][4];
        q4_k_mins_dmin4(sm, dd, m_dmin);
        UNROLL for (int j = 0; j < NX; j++)
        {
            q4_k_minus_mins4(m_dmin, xs[j]->sum + 8 * b, mins[j]);
            q4_k_x_of(k_x_q8(xs[j], per32), k_x_scale(xs[j], per32), per32, b, xv[j], xsv[j]);
        }
        UNROLL
        for (int r = 0; r < 4; r++) {
            __m512i codes[4], scales[4];
            q4_k_codes512(p[r], lane128_of(sm, r), codes, scales);
            __m512 d = _mm512_permutexvar_ps(_mm512_set1_epi32(2 * r), dd);
            UNROLL for (int j = 0; j < NX; j++)
                acc[j][r] = q4_k_dot512(codes, scales, d, xv[j], xsv[j], per32, acc[j][r]);
        }
    }
    UNROLL for (int j = 0; j < NX; j++)
    {
        UNROLL for (int r = 0; r < 4; r++)
            out[j][r] += _mm512_reduce_add_pd(z_widen_add(_mm512_setzero_pd(), acc[j][r])) + q4_k_mins_of(mins[j], r);
    }
}

/* q4_k_rows512 of four rows for NX x's at once (TYPED_GEMV_MANY_FOR). */
static ALWAYS_INLINE void q4_k_rows4_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX,
                                        int per32, size_t n, double out[][4])
{
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    size_t blocks = n / RAYO_QK_K;
    UNROLL for (int j = 0; j < NX; j++)
    {
        UNROLL for (int r = 0; r < 4; r++) out[j][r] = 0.0;
    }
    for (size_t b = 0; b < blocks; b += X86_Q4_K_BLOCKS_PER_GROUP) {
        size_t end = b + X86_Q4_K_BLOCKS_PER_GROUP < blocks ? b + X86_Q4_K_BLOCKS_PER_GROUP : blocks;
        q4_k_rows4_group_nx(row, stride, xs, NX, per32, b, end, ahead, out);
    }
}

/* Blocks [b, end) of four Q6_K rows against NX x's into g[j] (row r in
 * g[j][r]), each x's sums as block_q6_k_int (block_q6_k_i8_32 with
 * per32) makes them. */
static ALWAYS_INLINE void q6_k_rows4_group_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[],
                                              int NX, int per32, size_t b, size_t end, const char *ahead,
                                              __m512 g[][4])
{
    UNROLL for (int j = 0; j < NX; j++)
    {
        UNROLL for (int r = 0; r < 4; r++) g[j][r] = _mm512_setzero_ps();
    }
    for (; b < end; b++) {
        x86_prefetch_run(ahead + 4 * RAYO_Q6_K_BYTES * b, 4 * RAYO_Q6_K_BYTES);
        UNROLL
        for (int r = 0; r < 4; r++) {
            q6_k_decoded w;
            q6_k_decode512(row + r * stride + RAYO_Q6_K_BYTES * b, &w);
            UNROLL for (int j = 0; j < NX; j++)
                g[j][r] = per32 ? q6_k_dot_i8_32(&w, xs[j], b, g[j][r]) : q6_k_dot_int(&w, xs[j], b, g[j][r]);
        }
    }
}

/* The Q6_K row kernel of four rows (rows_of_blocks) for NX x's at once
 * (TYPED_GEMV_MANY_FOR): groups of blocks in float, then double. */
static ALWAYS_INLINE void q6_k_rows4_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX,
                                        int per32, size_t n, double out[][4])
{
    const char *ahead = x86_rows_ahead(row, stride, 4, PREFETCH_BYTES);
    const size_t group = TYPED_GEMV_INT_GROUP / RAYO_QK_K, blocks = n / RAYO_QK_K;
    __m512d acc[TYPED_GEMV_MANY_X][4];
    UNROLL for (int j = 0; j < NX; j++)
    {
        UNROLL for (int r = 0; r < 4; r++) acc[j][r] = _mm512_setzero_pd();
    }
    for (size_t b = 0; b < blocks; b += group) {
        size_t end = b + group < blocks ? b + group : blocks;
        __m512 g[TYPED_GEMV_MANY_X][4];
        q6_k_rows4_group_nx(row, stride, xs, NX, per32, b, end, ahead, g);
        UNROLL for (int j = 0; j < NX; j++)
        {
            UNROLL for (int r = 0; r < 4; r++) acc[j][r] = z_widen_add(acc[j][r], g[j][r]);
        }
    }
    UNROLL for (int j = 0; j < NX; j++)
    {
        UNROLL for (int r = 0; r < 4; r++) out[j][r] = _mm512_reduce_add_pd(acc[j][r]);
    }
}

/* Defines NAME, a many-x form (TYPED_ROWS_MANY) of ROWS4_NX, q4_k_rows4_nx
 * or q6_k_rows4_nx, with x per 256 values (PER32 0) or per 32 (PER32 1). */
#define K_ROWS_MANY(NAME, ROWS4_NX, PER32)                                                                   \
    static ALWAYS_INLINE void NAME##_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX, \
                                        size_t n, double out[][4])                                          \
    {                                                                                                       \
        ROWS4_NX(row, stride, xs, NX, (PER32), n, out);                                                     \
    }                                                                                                       \
    TYPED_ROWS_MANY(NAME, NAME##_nx)

K_ROWS_MANY(q4_k_int_many, q4_k_rows4_nx, 0)
K_ROWS_MANY(q4_k_i8_32_many, q4_k_rows4_nx, 1)
K_ROWS_MANY(q6_k_int_many, q6_k_rows4_nx, 0)
K_ROWS_MANY(q6_k_i8_32_many, q6_k_rows4_nx, 1)

/* ---- several x's at once ------------------------------------------------------ */

static typed_rows_many_fn *avx512_many_for(typed_rows_fn *rows)
{
    if (rows == rows_q8_0_i8 && __builtin_cpu_supports("avx512vnni"))
        return q8_0_rows4_vnni_many;
    if (rows == rows_q4_k_int || rows == rows_q4_k_i8_32)
        return rows == rows_q4_k_int ? q4_k_int_many : q4_k_i8_32_many;
    if (rows == rows_q6_k_int || rows == rows_q6_k_i8_32)
        return rows == rows_q6_k_int ? q6_k_int_many : q6_k_i8_32_many;
    return rows == rows_q4_0_i8 ? q4_0_rows4_i8_many : NULL;
}

/* ---- relaxed: Q4_0 and Q8_0 of constant buffers, blocks in lanes -----------
 * A weight in a constant buffer (x86-prepared.h) is laid out once so that
 * each 32-bit lane of a vector belongs to one block: 16 blocks of a row (a
 * chunk) side by side, each vector holding 4 codes of every one of them.
 * vpdpbusd then sums a whole block into its own lane, 8 of them per chunk
 * with no shuffle, and one convert, multiply and FMA apply the 16 blocks'
 * scales at once: a third of the instructions of the four-row kernels
 * above, which leaves a row bound by memory (Q8_0) or nearly (Q4_0).  The
 * copy is as large as the weight: per chunk the codes (Q4_0: word t of the
 * 16 bytes of block j at lane j of vector t, low nibbles values 4t.., high
 * ones 16 + 4t..; Q8_0: bytes 4g.. 4g + 3 of block j at lane j of vector
 * g, plus 128 so that they are unsigned), then the 16 f16 scales; blocks
 * past the row's end have zero codes and scales.  x is rounded to int8 per
 * 32 values as for the other relaxed kernels and laid out the same way;
 * a block's value offset (Q4_0's 8, Q8_0's 128) times the sum of x's codes
 * comes off per lane.  The sums are of the same integers; only the float
 * additions' order differs from the four-row kernels. */

#define LANES_BLOCKS 16
#define LANES_KIND 1 /* x86_prepared_key.kind */

static size_t lanes_codes_bytes(rayo_dtype dt)
{
    return dt == RAYO_DTYPE_Q4_0 ? 256 : 512;
}

/* Bytes of a chunk: its codes, then 16 f16 scales. */
static size_t lanes_chunk_bytes(rayo_dtype dt)
{
    return lanes_codes_bytes(dt) + 2 * LANES_BLOCKS;
}

typedef struct lanes_job {
    const rayo_call *call;
    rayo_dtype dt;
    size_t stride, blocks, chunks; /* A's row bytes; a row's blocks and chunks */
    uint8_t *lanes;                /* the copy: chunks x lanes_chunk_bytes per row */
    const int8_t *xg;              /* x laid out as the codes: chunks x 512 bytes */
    const float *dx, *off;         /* per block: x's scale; offset x the scale x the sum of x's codes */
} lanes_job;

/* Row r of A into the copy. */
static void lanes_pack_row(const lanes_job *job, size_t r)
{
    const uint8_t *row = (const uint8_t *)job->call->a + r * job->stride;
    size_t chunk_bytes = lanes_chunk_bytes(job->dt), codes = lanes_codes_bytes(job->dt);
    int q4 = job->dt == RAYO_DTYPE_Q4_0;
    size_t block_bytes = q4 ? RAYO_Q4_0_BYTES : RAYO_Q8_0_BYTES;
    uint8_t *out = job->lanes + r * job->chunks * chunk_bytes;
    memset(out, 0, job->chunks * chunk_bytes);
    for (size_t b = 0; b < job->blocks; b++) {
        const uint8_t *blk = row + b * block_bytes;
        uint8_t *chunk = out + b / LANES_BLOCKS * chunk_bytes;
        size_t j = b % LANES_BLOCKS;
        for (size_t w = 0; w < codes / 64; w++)
            for (int i = 0; i < 4; i++)
                chunk[64 * w + 4 * j + (size_t)i] = (uint8_t)(blk[2 + 4 * w + (size_t)i] ^ (q4 ? 0 : 0x80));
        memcpy(chunk + codes + 2 * j, blk, 2);
    }
}

static void lanes_pack_task(void *arg, size_t t, unsigned worker)
{
    const lanes_job *job = arg;
    (void)worker;
    for (size_t r = t * 64; r < job->call->m && r < (t + 1) * 64; r++)
        lanes_pack_row(job, r);
}

/* The dot of row r's copy with x: the chunks' float lanes, then their sum. */
#pragma GCC push_options
#pragma GCC target("avx512vnni")
static double lanes_row_dot(const lanes_job *job, size_t r)
{
    size_t chunk_bytes = lanes_chunk_bytes(job->dt), codes = lanes_codes_bytes(job->dt);
    const uint8_t *p = job->lanes + r * job->chunks * chunk_bytes;
    const __m512i nibble = _mm512_set1_epi8(15);
    __m512 acc = _mm512_setzero_ps();
    for (size_t c = 0; c < job->chunks; c++, p += chunk_bytes) {
        const int8_t *xg = job->xg + 512 * c;
        x86_prefetch_run((const char *)p + PREFETCH_BYTES, chunk_bytes);
        __m512i sum = _mm512_setzero_si512();
        if (job->dt == RAYO_DTYPE_Q4_0) {
            UNROLL for (int t = 0; t < 4; t++)
            {
                __m512i v = load512(p + 64 * t);
                sum = _mm512_dpbusd_epi32(sum, _mm512_and_si512(v, nibble), load512(xg + 64 * t));
                sum = _mm512_dpbusd_epi32(sum, _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble),
                                          load512(xg + 256 + 64 * t));
            }
        } else {
            UNROLL for (int g = 0; g < 8; g++) sum = _mm512_dpbusd_epi32(sum, load512(p + 64 * g), load512(xg + 64 * g));
        }
        __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p + codes)));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, load16(job->dx + LANES_BLOCKS * c)), acc);
        acc = _mm512_fnmadd_ps(d, load16(job->off + LANES_BLOCKS * c), acc);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(acc)),
                                              _mm512_cvtps_pd(_mm512_extractf32x8_ps(acc, 1))));
}
#pragma GCC pop_options

static void lanes_dot_task(void *arg, size_t t, unsigned worker)
{
    const lanes_job *job = arg;
    const rayo_call *c = job->call;
    (void)worker;
    for (size_t r = t * 64; r < c->m && r < (t + 1) * 64; r++) {
        double dot = lanes_row_dot(job, r);
        if (!isfinite(dot))
            dot = cpu_typed_dot_f64(job->dt, (const uint8_t *)c->a + r * job->stride, (const float *)c->b, c->n);
        typed_gemv_store(c, (float *)c->y, r, dot);
    }
}

/* x rounded to int8 per 32 values, in the copy's lanes (scratch: 2n floats);
 * 0 where it does not round within the relaxed contract. */
static int lanes_x(lanes_job *job, float *scratch)
{
    size_t n = job->call->n, nb = job->blocks, padded = job->chunks * LANES_BLOCKS;
    int8_t *q = (int8_t *)(void *)scratch, *xg = (int8_t *)(void *)(scratch + n / 4);
    float *scale = scratch + n / 4 + padded * 8, *dx = scale + nb, *off = dx + padded;
    rounding_error err = { 0.0, 0.0, 0.0, 0.0 };
    if (!typed_gemv_round_x32((const float *)job->call->b, n, q, NULL, scale, &err) || !rounding_within_budget(&err))
        return 0;
    memset(xg, 0, padded * 32);
    float offset = job->dt == RAYO_DTYPE_Q4_0 ? 8.0f : 128.0f;
    for (size_t b = 0; b < padded; b++) {
        int32_t sum = 0;
        for (size_t i = 0; b < nb && i < 32; i++) {
            xg[512 * (b / LANES_BLOCKS) + 64 * (i / 4) + 4 * (b % LANES_BLOCKS) + i % 4] = q[32 * b + i];
            sum += q[32 * b + i];
        }
        dx[b] = b < nb ? scale[b] : 0.0f;
        off[b] = offset * dx[b] * (float)sum;
    }
    job->xg = xg, job->dx = dx, job->off = off;
    return 1;
}

/* The relaxed gemv of a constant Q4_0 or Q8_0 weight through its copy
 * (made by the first such call); RAYO_E_UNSUPPORTED where this path does
 * not take the call (the other kernels then do). */
static rayo_status lanes_gemv(x86_state *st, const rayo_call *call)
{
    rayo_dtype dt = RAYO_DTYPE_OF(call->dtypes, 0);
    if (call->precision != RAYO_PRECISION_RELAXED || !(call->constant_operands & RAYO_CONSTANT_A) ||
        (dt != RAYO_DTYPE_Q4_0 && dt != RAYO_DTYPE_Q8_0) || st->prepared_weights < X86_PREPARED_GEMV ||
        call->m == 0 || !__builtin_cpu_supports("avx512vnni"))
        return RAYO_E_UNSUPPORTED;
    lanes_job job = { call, dt, typed_gemv_row_bytes(call), call->n / 32, 0, NULL, NULL, NULL, NULL };
    job.chunks = (job.blocks + LANES_BLOCKS - 1) / LANES_BLOCKS;
    x86_prepared_key key = { call->a, LANES_KIND, dt, call->m, call->n, job.stride };
    size_t tasks = (call->m + 63) / 64;
    job.lanes = x86_prepared_find(st, &key);
    if (!job.lanes) {
        size_t bytes = call->m * job.chunks * lanes_chunk_bytes(dt);
        uint8_t *fresh = (uint8_t *)(void *)cpu_alloc_floats(&st->cpu, bytes / sizeof(float));
        if (!fresh)
            return RAYO_E_UNSUPPORTED;
        job.lanes = fresh;
        cpu_parallel(&st->cpu, tasks, lanes_pack_task, &job);
        job.lanes = x86_prepared_keep(st, &key, fresh);
    }
    float *scratch = cpu_alloc_floats(&st->cpu, call->n / 4 + job.chunks * LANES_BLOCKS * 11);
    rayo_status s = RAYO_E_UNSUPPORTED;
    if (scratch && lanes_x(&job, scratch)) {
        cpu_parallel(&st->cpu, tasks, lanes_dot_task, &job);
        s = RAYO_OK;
    }
    cpu_free(&st->cpu, scratch);
    return s;
}

/* ---- the kernel ----------------------------------------------------------- */

rayo_status avx512_gemv_quant(void *state, const rayo_call *call)
{
    if (typed_gemv_takes(call)) {
        rayo_status s = lanes_gemv((x86_state *)state, call);
        if (s != RAYO_E_UNSUPPORTED)
            return s;
    }
    return typed_gemv_run((const cpu_state *)state, call);
}

rayo_status avx512_gemv_quant_many(void *state, const rayo_call *call, size_t count, size_t ldx, size_t ldy)
{
    return typed_gemv_run_many((const cpu_state *)state, call, count, ldx, ldy);
}

bool avx512_gemv_quant_shares_decoding(void *state, rayo_dtype dt)
{
    return typed_gemv_has_many((const cpu_state *)state, dt);
}
