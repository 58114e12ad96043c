/* SPDX-License-Identifier: MIT */
/* x86-quant.h - block decoding that the gemv kernels of the avx2 and avx512
 * plugins share (their quant.c; both are compiled with AVX2 and F16C).
 * Layouts of the blocks: core/rayo-dtype.h.
 *
 * The int8 Q8_0 and Q4_0 kernels also come in an AVX-VNNI form (avx2 uses
 * it where the CPU has it: plugins/avx2/plugin.c): the u8 x s8 step is one
 * vpdpbusd (VEX) where AVX2 takes maddubs, madd by ones and an add (and
 * avx2's Q6_K takes vpdpwssd for madd and add: x86_madd_add).  Those
 * functions carry __attribute__((target("avxvnni"))) (X86_AVX_VNNI) rather
 * than the plugin being compiled with -mavxvnni, which would let the
 * compiler put VNNI instructions anywhere, on CPUs without them too; and
 * rather than a second file compiled with the flag, which would need the
 * row drivers of quant.c twice.  A function with the attribute inlines the
 * plain AVX2 helpers it calls (a subset of its target), and where the two
 * forms differ in one step only, that step is passed as a constant
 * function (x86_q8_0_dot or x86_q8_0_dot_vnni) to an always-inline kernel
 * (__AVXVNNI__ cannot tell the two forms apart: it is the whole file's,
 * not the function's).  The integer sums are the same in both forms (the
 * maddubs pairs of these formats never saturate: each kernel says why),
 * so the results are identical bit for bit. */
#ifndef RAYO_X86_QUANT_H
#define RAYO_X86_QUANT_H

#include "rayo-plugin.h"
#include "cpu-rounding-budget.h"
#include "x86-avx2-math.h"

#include <float.h>
#include <immintrin.h>
#include <string.h>

/* The f16 scale at p (F16C: one instruction, where rayo_f16_to_f32 branches
 * and costs as much as the rest of a Q8_0 block). */
static inline float x86_f16_at(const uint8_t *p)
{
    return _cvtsh_ss(rayo__le16(p));
}

static inline __m128i x86_load128(const void *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

static inline __m256i x86_load256(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

/* The eight 6-bit scales and minimums of a Q4_K block (12 bytes at p, the
 * layout of rayo_q4_k_scale_min) as the low 8 bytes of sc and m, unpacked
 * in general registers: eight byte stores and a vector load of them stall
 * the store forwarding.  Where the vector units are the bottleneck (the
 * 256-bit kernels below) the general registers' work runs beside them. */
static inline void x86_q4_k_scales_mins(const uint8_t *p, __m128i *sc, __m128i *m)
{
    uint32_t u0, u1, u2;
    memcpy(&u0, p, 4), memcpy(&u1, p + 4, 4), memcpy(&u2, p + 8, 4); /* little-endian x86 */
    uint32_t sc_lo = u0 & 0x3f3f3f3fu, m_lo = u1 & 0x3f3f3f3fu;
    uint32_t sc_hi = (u2 & 0x0f0f0f0fu) | (((u0 >> 6) & 0x03030303u) << 4);
    uint32_t m_hi = ((u2 >> 4) & 0x0f0f0f0fu) | (((u1 >> 6) & 0x03030303u) << 4);
    *sc = _mm_cvtsi64_si128((long long)((uint64_t)sc_hi << 32 | sc_lo));
    *m = _mm_cvtsi64_si128((long long)((uint64_t)m_hi << 32 | m_lo));
}

/* Where the prefetches of a pass over R rows (row, row + stride, ...) go:
 * the same place in the group of R rows that starts at least `prefetch`
 * bytes ahead.  With stride the rows' bytes (a model's weights) a group is
 * one run of memory, and a kernel that moves through its R rows at one
 * pace prefetches it as one sequential stream: the four row streams
 * prefetched each on its own left avx2's relaxed Q4_0 gemv (1 thread,
 * 32000 x 2048, weights not in cache, AMD EPYC) at 6.1-7.7 GB/s, one
 * stream 7.8-11.0 (the read reference: 10.7). */
static inline const char *x86_rows_ahead(const uint8_t *row, size_t stride, int R, size_t prefetch)
{
    size_t group = (size_t)R * stride;
    return (const char *)row + group * ((prefetch + group - 1) / group);
}

/* Prefetches (into L2) an address every 64 bytes of [at, at + bytes):
 * called with at moving by bytes each time, every line of the run is
 * prefetched once or twice. */
static inline __attribute__((always_inline)) void x86_prefetch_run(const char *at, size_t bytes)
{
    for (size_t offset = 0; offset < bytes; offset += 64)
        _mm_prefetch(at + offset, _MM_HINT_T1);
}

/* Q6_K: the 32 codes q (0..63) of values 128h + 32k + l, l < 32: q's low 4
 * bits from ql[64h + 32 (k & 1) + l] (nibble k >> 1), its high 2 bits from
 * bits 2k, 2k + 1 of qh[32h + l] (qh: those 32 bytes), moved straight to
 * bits 4-5 by one shift (16-bit lanes: what crosses into the other byte
 * falls outside the mask). */
static inline __m256i x86_q6_k_codes(const uint8_t *blk, __m256i qh, int h, int k)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15), bits_4_5 = _mm256_set1_epi8(0x30);
    __m256i ql = x86_load256(blk + 64 * h + 32 * (k & 1));
    __m256i low = _mm256_and_si256(k >> 1 ? _mm256_srli_epi16(ql, 4) : ql, low_nibbles);
    __m256i high = k < 2 ? _mm256_slli_epi16(qh, 4 - 2 * k) : k == 3 ? _mm256_srli_epi16(qh, 2) : qh;
    return _mm256_or_si256(low, _mm256_and_si256(high, bits_4_5));
}

/* Q6_K's int8 scales of groups 8h .. 8h + 7 as int16, in both 128-bit
 * halves (for x86_q6_k_scale_pair). */
static inline __m256i x86_q6_k_scales16(__m128i scales8, int h)
{
    return _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(h ? _mm_srli_si128(scales8, 8) : scales8));
}

/* The scales of the 32 values 128h + 32k + l: group 8h + 2k's in the int16
 * lanes of the low half (l < 16), group 8h + 2k + 1's in the high half,
 * from sc_h (x86_q6_k_scales16) by one in-lane byte shuffle, where picking
 * from the bytes and widening took a shuffle and a cross-lane widen. */
static inline __m256i x86_q6_k_scale_pair(__m256i sc_h, int k)
{
    __m128i lo = _mm_set1_epi16((short)((4 * k + 1) << 8 | 4 * k));
    __m128i hi = _mm_set1_epi16((short)((4 * k + 3) << 8 | (4 * k + 2)));
    return _mm256_shuffle_epi8(sc_h, _mm256_set_m128i(hi, lo));
}

/* The functions that need AVX-VNNI (the CPU's, checked by the plugin). */
#define X86_AVX_VNNI __attribute__((target("avxvnni")))

/* acc + the products of u's unsigned bytes with s's signed bytes, summed by
 * fours (bytes 4i .. 4i + 3) into the int32 lanes: maddubs (pairs into
 * int16, saturating: the callers keep a pair within int16), madd by ones,
 * add. */
static inline __m256i x86_dot_u8s8(__m256i acc, __m256i u, __m256i s)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

/* The same in one AVX-VNNI instruction, without the int16 step. */
static inline X86_AVX_VNNI __m256i x86_dot_u8s8_vnni(__m256i acc, __m256i u, __m256i s)
{
    return _mm256_dpbusd_avx_epi32(acc, u, s);
}

/* acc + the products of a's and b's int16 lanes, summed by pairs into the
 * int32 lanes: madd and add, or one AVX-VNNI vpdpwssd (neither saturates:
 * the same sums where they fit int32). */
typedef __m256i x86_madd_add_fn(__m256i acc, __m256i a, __m256i b);

static inline __m256i x86_madd_add(__m256i acc, __m256i a, __m256i b)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}

static inline X86_AVX_VNNI __m256i x86_madd_add_vnni(__m256i acc, __m256i a, __m256i b)
{
    return _mm256_dpwssd_avx_epi32(acc, a, b);
}

/* A Q8_0 block's 32 codes q (signed) times x's 32 values, summed by fours
 * into int32 lanes.  u8 x s8 takes an unsigned first operand: AVX2 gives
 * it |q| and moves q's sign onto x (maddubs pairs at most 2 * 128 * 127:
 * no saturation); AVX-VNNI gives it q + 128 (one xor, where |q| and the
 * sign take two instructions) and starts the sums at minus 128 times x's
 * sums by fours, x's part of the +128 (one more vpdpbusd, of x alone: the
 * same for every row of a pass, which the compiler computes once).  Both
 * are the exact sums. */
typedef __m256i x86_q8_0_dot_fn(__m256i q, __m256i x);

static inline __m256i x86_q8_0_dot(__m256i q, __m256i x)
{
    return x86_dot_u8s8(_mm256_setzero_si256(), _mm256_abs_epi8(q), _mm256_sign_epi8(x, q));
}

static inline X86_AVX_VNNI __m256i x86_q8_0_dot_vnni(__m256i q, __m256i x)
{
    const __m256i plus128 = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    __m256i minus_x_part = _mm256_sub_epi32(zero, x86_dot_u8s8_vnni(zero, plus128, x));
    return x86_dot_u8s8_vnni(minus_x_part, _mm256_xor_si256(q, plus128), x);
}

/* Q8_0 against int8 x, two blocks at a time (x in order), each block's
 * dot by dot; hadd of the two blocks: lanes 0-1 and 4-5 hold block 2b, 2-3
 * and 6-7 block 2b + 1.  Returns acc + those lanes times d x's scale (sx:
 * the two blocks' x scales).  In two parts, so that a kernel taking
 * several x's converts a pair's scales d once (x86_q8_0_pair_d) and makes
 * each x's sums as here (x86_q8_0_pair_scaled). */
static inline __m256 x86_q8_0_pair_d(const uint8_t *blk)
{
    return _mm256_cvtph_ps(_mm_unpacklo_epi32(_mm_set1_epi16((short)rayo__le16(blk)),
                                              _mm_set1_epi16((short)rayo__le16(blk + RAYO_Q8_0_BYTES))));
}

static inline __m256 x86_q8_0_pair_scaled(__m256i s0, __m256i s1, __m256 d, const float *sx, __m256 acc)
{
    __m256 sx_lanes = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(_mm256_broadcast_ss(sx)),
                                                          _mm256_castps_pd(_mm256_broadcast_ss(sx + 1))));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_hadd_epi32(s0, s1)), _mm256_mul_ps(d, sx_lanes), acc);
}

static inline __attribute__((always_inline)) __m256 x86_q8_0_pair_by(const uint8_t *blk, const int8_t *xq,
                                                                     const float *sx, __m256 acc,
                                                                     x86_q8_0_dot_fn *dot)
{
    __m256i s0 = dot(x86_load256(blk + 2), x86_load256(xq));
    __m256i s1 = dot(x86_load256(blk + RAYO_Q8_0_BYTES + 2), x86_load256(xq + 32));
    return x86_q8_0_pair_scaled(s0, s1, x86_q8_0_pair_d(blk), sx, acc);
}

static inline __m256 x86_q8_0_pair_i8(const uint8_t *blk, const int8_t *xq, const float *sx, __m256 acc)
{
    return x86_q8_0_pair_by(blk, xq, sx, acc, x86_q8_0_dot);
}

static inline X86_AVX_VNNI __m256 x86_q8_0_pair_vnni(const uint8_t *blk, const int8_t *xq, const float *sx,
                                                     __m256 acc)
{
    return x86_q8_0_pair_by(blk, xq, sx, acc, x86_q8_0_dot_vnni);
}

/* Q4_0 against int8 x, two blocks (2b, 2b + 1) at a time: x of the pair
 * stored in the order of the nibbles, [2b: 0-15][2b+1: 0-15][2b: 16-31]
 * [2b+1: 16-31] (cpu-typed-gemv_tmpl.c), so that one 256-bit and/shift
 * decodes both blocks' low nibbles (values 0-15), another their high ones
 * (16-31).  maddubs takes the codes q (0..15) as they are, unsigned; the
 * int16 lanes then hold sums of four q x terms, lanes 0-7 of block 2b,
 * 8-15 of 2b + 1 (at most 4 * 15 * 127 = 7620).  The pair's bytes 2-17
 * (block 2b) and 20-35 (block 2b + 1): two loads inside the pair and a
 * blend. */
static inline void x86_q4_0_pair_codes(const uint8_t *blk, __m256i *lo, __m256i *hi)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    __m256i bytes = _mm256_blend_epi32(x86_load256(blk + 2), x86_load256(blk + 4), 0xf0);
    *lo = _mm256_and_si256(bytes, low_nibbles);
    *hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles);
}

static inline __m256i x86_q4_0_pair_i16(const uint8_t *blk, __m256i x_lo, __m256i x_hi)
{
    __m256i lo, hi;
    x86_q4_0_pair_codes(blk, &lo, &hi);
    return _mm256_add_epi16(_mm256_maddubs_epi16(lo, x_lo), _mm256_maddubs_epi16(hi, x_hi));
}

/* The same pair by AVX-VNNI, in int32 lanes: lanes 0-3 hold parts of block
 * 2b, 4-7 of block 2b + 1, each the sum of the terms of the int16 lanes
 * 2j and 2j + 1 of x86_q4_0_pair_i16 (what madd by ones makes of those). */
static inline X86_AVX_VNNI __m256i x86_q4_0_pair_i32_vnni(const uint8_t *blk, __m256i x_lo, __m256i x_hi)
{
    __m256i lo, hi;
    x86_q4_0_pair_codes(blk, &lo, &hi);
    return x86_dot_u8s8_vnni(x86_dot_u8s8_vnni(_mm256_setzero_si256(), lo, x_lo), hi, x_hi);
}

/* acc + the int32 lanes sums times the f16 scales d (in the int16 lanes
 * of d) times x's scales sx (x's lanes of the pair, cpu-typed-gemv_tmpl.c). */
static inline __m256 x86_q4_0_scaled_add(__m256i sums, __m128i d, const float *sx, __m256 acc)
{
    __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(d), _mm256_loadu_ps(sx));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc);
}

/* Q4_0 against int8 x, one row's pair of blocks (the rows that do not
 * make a group of four): acc + the pair's int32 sums less x's offset
 * times the scales.  A block's values are q - 8: x's offset lanes,
 * prepared once per call for the four-row kernel (8 times the block's x
 * sum in each of its four lanes), come off a quarter in each of the
 * block's four int32 lanes here (exact: 8 times a sum is a multiple of 4),
 * so the four lanes together lose the offset once.  The int32 lanes 0-3
 * hold parts of block 2b, lanes 4-7 of block 2b + 1 (each at most
 * 2 * 7620 before the offset's quarter, at most 2 * 32 * 127, comes off). */
static inline __m256 x86_q4_0_pair_minus_offset(const uint8_t *blk, __m256i sums, const int32_t *offset,
                                                 const float *sx, __m256 acc)
{
    __m256i quarter = _mm256_srai_epi32(x86_load256(offset), 2);
    __m128i d = _mm_unpacklo_epi64(_mm_set1_epi16((short)rayo__le16(blk)),
                                   _mm_set1_epi16((short)rayo__le16(blk + RAYO_Q4_0_BYTES)));
    return x86_q4_0_scaled_add(_mm256_sub_epi32(sums, quarter), d, sx, acc);
}

/* The sums by maddubs (AVX2), or by AVX-VNNI. */
static inline __m256 x86_q4_0_pair_i8(const uint8_t *blk, const int8_t *xq, const int32_t *offset,
                                      const float *sx, __m256 acc)
{
    __m256i x_lo = x86_load256(xq), x_hi = x86_load256(xq + 32);
    __m256i sums = _mm256_madd_epi16(x86_q4_0_pair_i16(blk, x_lo, x_hi), _mm256_set1_epi16(1));
    return x86_q4_0_pair_minus_offset(blk, sums, offset, sx, acc);
}

static inline X86_AVX_VNNI __m256 x86_q4_0_pair_vnni(const uint8_t *blk, const int8_t *xq, const int32_t *offset,
                                                     const float *sx, __m256 acc)
{
    __m256i sums = x86_q4_0_pair_i32_vnni(blk, x86_load256(xq), x86_load256(xq + 32));
    return x86_q4_0_pair_minus_offset(blk, sums, offset, sx, acc);
}

/* The f16 scales of one block of four rows (blk, blk + stride, ...) as
 * four 16-bit lanes, gathered in general registers. */
static inline long long x86_f16_of_rows4(const uint8_t *blk, size_t stride)
{
    uint64_t d01 = rayo__le16(blk) | (uint32_t)rayo__le16(blk + stride) << 16;
    uint64_t d23 = rayo__le16(blk + 2 * stride) | (uint32_t)rayo__le16(blk + 3 * stride) << 16;
    return (long long)(d23 << 32 | d01);
}

/* The sums of one pair of blocks of four rows (blk, blk + stride, ...)
 * into s[0..3] by pair (x86_q4_0_pair_i16, or x86_q4_0_pair_i32_vnni),
 * x's two vectors loaded once for the four. */
typedef __m256i x86_q4_0_pair_fn(const uint8_t *blk, __m256i x_lo, __m256i x_hi);

static inline __attribute__((always_inline)) void x86_q4_0_pairs_of_rows4(const uint8_t *blk, size_t stride,
                                                                          const int8_t *xq,
                                                                          x86_q4_0_pair_fn *pair, __m256i s[4])
{
    __m256i x_lo = x86_load256(xq), x_hi = x86_load256(xq + 32);
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        s[r] = pair(blk + r * stride, x_lo, x_hi);
}

/* acc + the int32 sums of a pair of blocks of four rows (lane 4h + r: row
 * r's block 2b + h) less x's offsets, times the rows' scales and x's. */
static inline __m256 x86_q4_0_rows4_minus_offset(const uint8_t *blk, size_t stride, __m256i sums,
                                                 const int32_t *offset, const float *sx, __m256 acc)
{
    __m128i d = _mm_insert_epi64(_mm_cvtsi64_si128(x86_f16_of_rows4(blk, stride)),
                                 x86_f16_of_rows4(blk + RAYO_Q4_0_BYTES, stride), 1);
    return x86_q4_0_scaled_add(_mm256_sub_epi32(sums, x86_load256(offset)), d, sx, acc);
}

/* Q4_0 against int8 x, one pair of blocks of four rows (blk, blk + stride,
 * ...).  The four rows' int16 lanes (x86_q4_0_pair_i16) are summed across
 * the rows by unpacks, two levels, into lanes holding two partial sums of
 * each row and block, each of 16 q x terms: at most 16 * 15 * 127 = 30480,
 * exact in int16 (x's -8 offset comes off later, in int32, where the sums
 * could not overflow either way).  A byte shuffle puts a row's two partial
 * sums side by side and madd by ones sums them into int32: lane 4h + r
 * holds row r's block 2b + h.  The eight f16 scales go into the same
 * lanes, so one convert, one multiply by x's scales and one FMA serve four
 * rows.  A block's values are q - 8: offset, 8 times the sums of x's
 * blocks in the same lanes, comes off once for the four rows; sx: x's
 * scales in those lanes (cpu-typed-gemv_tmpl.c). */
static inline __m256i x86_q4_0_rows4_sums16(const __m256i s[4])
{
    const __m256i row_partials = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, 0, 1, 8,
                                                  9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
    __m256i s01 = _mm256_add_epi16(_mm256_unpacklo_epi16(s[0], s[1]), _mm256_unpackhi_epi16(s[0], s[1]));
    __m256i s23 = _mm256_add_epi16(_mm256_unpacklo_epi16(s[2], s[3]), _mm256_unpackhi_epi16(s[2], s[3]));
    __m256i s0123 = _mm256_add_epi16(_mm256_unpacklo_epi32(s01, s23), _mm256_unpackhi_epi32(s01, s23));
    return _mm256_madd_epi16(_mm256_shuffle_epi8(s0123, row_partials), _mm256_set1_epi16(1));
}

static inline __m256 x86_q4_0_rows4_pair_i8(const uint8_t *blk, size_t stride, const int8_t *xq,
                                            const int32_t *offset, const float *sx, __m256 acc)
{
    __m256i s[4];
    x86_q4_0_pairs_of_rows4(blk, stride, xq, x86_q4_0_pair_i16, s);
    return x86_q4_0_rows4_minus_offset(blk, stride, x86_q4_0_rows4_sums16(s), offset, sx, acc);
}

/* x86_q4_0_rows4_pair_i8 for NX x's at once (x j's fields of the pair at
 * xq[j], offset[j], sx[j]) into acc[j]: the four rows' codes and scales
 * decoded once, each x's sums made exactly as there. */
static inline __attribute__((always_inline)) void
x86_q4_0_rows4_pair_i8_nx(const uint8_t *blk, size_t stride, const int8_t *const xq[], const int32_t *const offset[],
                          const float *const sx[], int NX, __m256 acc[])
{
    __m256i lo[4], hi[4];
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        x86_q4_0_pair_codes(blk + r * stride, &lo[r], &hi[r]);
    __m128i d16 = _mm_insert_epi64(_mm_cvtsi64_si128(x86_f16_of_rows4(blk, stride)),
                                   x86_f16_of_rows4(blk + RAYO_Q4_0_BYTES, stride), 1);
    __m256 d = _mm256_cvtph_ps(d16);
    _Pragma("GCC unroll 4") for (int j = 0; j < NX; j++)
    {
        __m256i x_lo = x86_load256(xq[j]), x_hi = x86_load256(xq[j] + 32), s[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
            s[r] = _mm256_add_epi16(_mm256_maddubs_epi16(lo[r], x_lo), _mm256_maddubs_epi16(hi[r], x_hi));
        __m256i sums = _mm256_sub_epi32(x86_q4_0_rows4_sums16(s), x86_load256(offset[j]));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(d, _mm256_loadu_ps(sx[j])), acc[j]);
    }
}

/* The same four rows by AVX-VNNI: each row's int32 lanes
 * (x86_q4_0_pair_i32_vnni) summed across the rows by unpacks, two levels
 * (by 32 and 64 bits), straight into lane 4h + r; the int16 step and its
 * shuffle are gone. */
static inline X86_AVX_VNNI __m256 x86_q4_0_rows4_pair_vnni(const uint8_t *blk, size_t stride, const int8_t *xq,
                                                           const int32_t *offset, const float *sx, __m256 acc)
{
    __m256i s[4];
    x86_q4_0_pairs_of_rows4(blk, stride, xq, x86_q4_0_pair_i32_vnni, s);
    __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(s[0], s[1]), _mm256_unpackhi_epi32(s[0], s[1]));
    __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(s[2], s[3]), _mm256_unpackhi_epi32(s[2], s[3]));
    __m256i sums = _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
    return x86_q4_0_rows4_minus_offset(blk, stride, sums, offset, sx, acc);
}

/* Q6_K against int8 x with a scale per 32 values (the fallback where x's
 * scale per 256 fails the error budget): the 32 values of chunk c = 4h + k
 * are x's block c, so each chunk's int32 dot (maddubs of the codes 0..63,
 * madd by its two groups' int8 scales) goes times its own d x-scale in
 * float; the -32 part is madd of x's group sums (qsum: 16 per block) with
 * the scales, lane c holding chunk c, times 32.  sx: x's scales of the 8
 * chunks. */
static inline __m256 x86_q6_k_i8_32(const uint8_t *blk, const int8_t *xq, const float *sx, const int16_t *qsum,
                                    __m256 acc)
{
    __m128i scales8 = x86_load128(blk + RAYO_Q6_K_SCALES);
    __m256 scales = _mm256_mul_ps(_mm256_set1_ps(x86_f16_at(blk + RAYO_Q6_K_D)), _mm256_loadu_ps(sx));
    __m256i offset = _mm256_madd_epi16(x86_load256(qsum), _mm256_cvtepi8_epi16(scales8));
    acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(_mm256_slli_epi32(offset, 5)), scales, acc);
    /* unrolled: the shifts, shuffles and lane indexes are then constants */
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
    {
        __m256i qh = x86_load256(blk + RAYO_Q6_K_QH + 32 * h), sc_h = x86_q6_k_scales16(scales8, h);
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        {
            int c = 4 * h + k;
            __m256i sc = x86_q6_k_scale_pair(sc_h, k);
            __m256i p = _mm256_maddubs_epi16(x86_q6_k_codes(blk, qh, h, k), x86_load256(xq + 32 * c));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(p, sc)),
                                  _mm256_permutevar8x32_ps(scales, _mm256_set1_epi32(c)), acc);
        }
    }
    return acc;
}

/* ---- Q4_K rows against x in int8 per 256 values (the relaxed gemv) -------- */

/* int16 lane j (< 8) of v, which holds its 8 lanes in both halves, in every lane. */
static inline __m256i x86_broadcast_lane16(__m256i v, int j)
{
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)((2 * j + 1) << 8 | 2 * j)));
}

/* The sums of the 8 sub-blocks' maddubs pairs in the int16 lanes of one
 * vector, lane j of each 128-bit half holding sub-block j's 8 pairs of that
 * half: an 8 x 8 transpose with the adds on the way, three levels of
 * unpack and add (by 16, 32 and 64 bits).  A pair is at most 2 * 15 * 127,
 * so a lane at most 8 times that (30480): exact in int16.  level1 takes
 * the pairs of sub-blocks 2c, 2c + 1 (chunk c), level2 two chunks' level1
 * (c even and odd), level3 the two halves of the block. */
static inline __m256i x86_q4_k_level1(__m256i a, __m256i b)
{
    return _mm256_add_epi16(_mm256_unpacklo_epi16(a, b), _mm256_unpackhi_epi16(a, b));
}

static inline __m256i x86_q4_k_level2(__m256i a, __m256i b)
{
    return _mm256_add_epi16(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
}

static inline __m256i x86_q4_k_level3(__m256i a, __m256i b)
{
    return _mm256_add_epi16(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
}

/* Chunk c's maddubs pairs of one row (lo: sub-block 2c, hi: 2c + 1) into
 * its transpose: *chunk (c even), *half (c = 1), *dots (c = 3). */
static inline __attribute__((always_inline)) void x86_q4_k_levels(int c, __m256i lo, __m256i hi, __m256i *chunk,
                                                                   __m256i *half, __m256i *dots)
{
    if (c % 2 == 0)
        *chunk = x86_q4_k_level1(lo, hi);
    else if (c == 1)
        *half = x86_q4_k_level2(*chunk, x86_q4_k_level1(lo, hi));
    else
        *dots = x86_q4_k_level3(*half, x86_q4_k_level2(*chunk, x86_q4_k_level1(lo, hi)));
}

/* Block b of R Q4_K rows (blk, blk + stride, ...) against int8 x (xq):
 * per row, the sums of q xq of the 8 sub-blocks in int16 lanes
 * (x86_q4_k_level1..3) into dots[r].  maddubs multiplies a sub-block's 32
 * nibbles by x (u8 x s8, pairs into int16).  The chunks of 64 values go
 * outside, the rows inside: a chunk's two x vectors are loaded once for
 * the R rows and die with it, and each row keeps two vectors of partial
 * sums (rows outside kept x's eight vectors alive across the rows, and
 * four rows spilled every block). */
static inline __attribute__((always_inline)) void
x86_q4_k_dots(const uint8_t *blk, size_t stride, int R, const int8_t *xq, __m256i dots[4])
{
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    __m256i chunk[4], half[4];
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
    {
        __m256i x_lo = x86_load256(xq + 64 * c), x_hi = x86_load256(xq + 64 * c + 32);
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
        {
            __m256i bytes = x86_load256(blk + r * stride + RAYO_Q4_K_QS + 32 * c);
            __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(bytes, low_nibbles), x_lo);
            __m256i hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles), x_hi);
            x86_q4_k_levels(c, lo, hi, &chunk[r], &half[r], &dots[r]);
        }
    }
}

/* The header of a row's block at p: its scales sc[s] in sc8's low 8
 * bytes, its d in every lane of *d, dmin m[s] in lane s of *mins.  d and
 * dmin, side by side, are converted by one instruction (x86_f16_at's
 * insert costs two micro-ops for each). */
static inline __attribute__((always_inline)) void x86_q4_k_header(const uint8_t *p, __m128i *sc8, __m256 *d,
                                                                   __m256 *mins)
{
    __m128i m8;
    uint32_t d_dmin;
    memcpy(&d_dmin, p, 4); /* little-endian x86: d in the low half */
    __m128 both = _mm_cvtph_ps(_mm_cvtsi32_si128((int)d_dmin));
    *d = _mm256_broadcastss_ps(both);
    x86_q4_k_scales_mins(p + RAYO_Q4_K_SCALES, sc8, &m8);
    *mins = _mm256_mul_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(both)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m8)));
}

/* acc - dmin sum_s m[s] xsum[s] (the minimums against x's exact sums per
 * 32), then + the row's dot from its sub-block sums (dots, x86_q4_k_dots)
 * and header (sc8, d): per32 0: one x scale for the block (xs[0]): d xs
 * sum_s sc[s] dots[s], the scales applied by one madd in int32 (at most 2
 * * 30480 * 63 a lane); per32 1: a scale per sub-block (xs[0..7]): the two
 * halves' int16 lanes widened and added, then times d sc[s] xs[s] in float. */
static inline __attribute__((always_inline)) __m256 x86_q4_k_row_dot(__m256i dots, __m128i sc8, __m256 d, __m256 mins,
                                                                      const float *xs, const float *xsum, int per32,
                                                                      __m256 acc)
{
    acc = _mm256_fnmadd_ps(mins, _mm256_loadu_ps(xsum), acc);
    if (!per32) {
        __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sc8));
        __m256 sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(dots, sc));
        return _mm256_fmadd_ps(sum, _mm256_mul_ps(d, _mm256_set1_ps(xs[0])), acc);
    }
    __m256i sum = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(dots)),
                                   _mm256_cvtepi16_epi32(_mm256_extracti128_si256(dots, 1)));
    __m256 scales = _mm256_mul_ps(_mm256_mul_ps(d, _mm256_loadu_ps(xs)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc8)));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scales, acc);
}

/* Block b of R Q4_K rows against x in int8: acc[r] += the row's dot. */
static inline __attribute__((always_inline)) void
x86_q4_k_block(const uint8_t *blk, size_t stride, int R, const int8_t *xq, const float *xs, const float *xsum,
               int per32, __m256 acc[4])
{
    __m256i dots[4];
    x86_q4_k_dots(blk, stride, R, xq, dots);
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
    {
        __m128i sc8;
        __m256 d, mins;
        x86_q4_k_header(blk + r * stride, &sc8, &d, &mins);
        acc[r] = x86_q4_k_row_dot(dots[r], sc8, d, mins, xs, xsum, per32, acc[r]);
    }
}

/* Blocks summed in float lanes before double: 8 (2048 values; the block
 * sums are exact integers scaled once, so float over them is far inside
 * the relaxed contract). */
#define X86_Q4_K_BLOCKS_PER_GROUP 8

/* The dots of R Q4_K rows with x over `blocks` blocks into out[0..R): x in
 * int8 (q8) with a scale per block (per32 0) or per 32 values (per32 1)
 * and its exact sums per 32 (xsum).  The rows' group `prefetch` bytes
 * ahead goes to L2 as one run (x86_rows_ahead).  A group's float lanes go
 * into out as a double sum: no double vector stays live across the loop. */
static inline __attribute__((always_inline)) void
x86_q4_k_rows(const uint8_t *row, size_t stride, int R, const int8_t *q8, const float *scale, const float *xsum,
              int per32, size_t blocks, size_t prefetch, double *out)
{
    const char *ahead = x86_rows_ahead(row, stride, R, prefetch);
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
        out[r] = 0.0;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + X86_Q4_K_BLOCKS_PER_GROUP < blocks ? b + X86_Q4_K_BLOCKS_PER_GROUP : blocks;
        __m256 acc[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
        for (; b < end; b++) {
            const uint8_t *blk = row + b * RAYO_Q4_K_BYTES;
            x86_prefetch_run(ahead + R * RAYO_Q4_K_BYTES * b, R * RAYO_Q4_K_BYTES);
            x86_q4_k_block(blk, stride, R, q8 + RAYO_QK_K * b, scale + (per32 ? 8 : 1) * b, xsum + 8 * b, per32, acc);
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
            out[r] += v_hsum_pd(v_widen_add(_mm256_setzero_pd(), acc[r]));
    }
}

/* Rows a pass: four spilled (the compiler regroups the adds). */
#define X86_Q4_K_ROWS 2

/* count (1..4) rows of the relaxed gemv, X86_Q4_K_ROWS a pass. */
static inline __attribute__((always_inline)) void
x86_q4_k_rows_of(const uint8_t *row, size_t stride, size_t count, const int8_t *q8, const float *scale,
                 const float *xsum, int per32, size_t n, size_t prefetch, double out[4])
{
    size_t r = 0;
    for (; r + X86_Q4_K_ROWS <= count; r += X86_Q4_K_ROWS)
        x86_q4_k_rows(row + r * stride, stride, X86_Q4_K_ROWS, q8, scale, xsum, per32, n / RAYO_QK_K, prefetch,
                      out + r);
    for (; r < count; r++)
        x86_q4_k_rows(row + r * stride, stride, 1, q8, scale, xsum, per32, n / RAYO_QK_K, prefetch, out + r);
}

/* Defines the relaxed Q4_K row kernels over cpu-typed-gemv_tmpl.c's x (a
 * plugin expands it after that file, with its prefetch distance):
 * rows_q4_k_int (x in int8 per 256 values) and rows_q4_k_i8_32 (per 32),
 * X86_Q4_K_ROWS rows a pass. */
#define X86_RELAXED_Q4_K_KERNELS(PREFETCH)                                                                  \
    static void rows_q4_k_int(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n, \
                              double out[4])                                                               \
    {                                                                                                     \
        x86_q4_k_rows_of(row, stride, count, x->q8, x->scale8, x->sum, 0, n, (PREFETCH), out);            \
    }                                                                                                     \
    static void rows_q4_k_i8_32(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x,      \
                                size_t n, double out[4])                                                  \
    {                                                                                                     \
        x86_q4_k_rows_of(row, stride, count, x->q8_32, x->scale8_32, x->sum, 1, n, (PREFETCH), out);      \
    }

/* Defines Q6_K's block function against int8 x per 32 values,
 * block_q6_k_i8_32, for the plugin's row driver. */
#define X86_Q6_K_I8_32_BLOCK                                                                                \
    static inline __attribute__((always_inline)) __m256 block_q6_k_i8_32(const uint8_t *blk,               \
                                                                         const typed_gemv_x *x, size_t b,  \
                                                                         __m256 acc)                       \
    {                                                                                                     \
        return x86_q6_k_i8_32(blk, x->q8_32 + RAYO_QK_K * b, x->scale8_32 + 8 * b, x->qsum + 16 * b, acc); \
    }

/* ---- x rounded to int8 per 32 values (the relaxed gemv's x) ------------- */

static inline float x86_hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

/* The largest |x| of the 32 floats at x in *amax; 0 when one is not finite. */
static inline int x86_amax32(const float *x, float *amax)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), big = _mm256_set1_ps(FLT_MAX);
    __m256 m = _mm256_setzero_ps();
    int finite = 0xff;
    for (int i = 0; i < 32; i += 8) {
        __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask);
        finite &= _mm256_movemask_ps(_mm256_cmp_ps(a, big, _CMP_LE_OQ)); /* false for NaN */
        m = _mm256_max_ps(m, a);
    }
    *amax = x86_hmax8(m);
    return finite == 0xff;
}

/* The 32 floats at x to int8 at q, round(x 127 / amax) half away from 0
 * (amax: their largest |x|); sums[0..2] get, per lane, the squared
 * rounding errors, |x| and x^2 (in float: 4 terms a lane). */
static inline void x86_round32_i8(const float *x, float amax, int8_t *q, __m256 sums[3])
{
    const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f);
    __m256 inv = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f), step = _mm256_set1_ps(amax / 127.0f);
    __m256i w[4];
    sums[0] = sums[1] = sums[2] = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
        __m256 v = _mm256_loadu_ps(x + 8 * i), s = _mm256_mul_ps(v, inv);
        __m256 r = _mm256_round_ps(_mm256_add_ps(s, _mm256_or_ps(_mm256_and_ps(s, sign), half)),
                                   _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m256 e = _mm256_fnmadd_ps(r, step, v);
        sums[0] = _mm256_fmadd_ps(e, e, sums[0]);
        sums[1] = _mm256_add_ps(sums[1], _mm256_andnot_ps(sign, v));
        sums[2] = _mm256_fmadd_ps(v, v, sums[2]);
        w[i] = _mm256_cvttps_epi32(r);
    }
    /* the packs go by 128-bit lanes: dwords in the order 0 4 1 5 2 6 3 7 */
    __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(w[0], w[1]), _mm256_packs_epi32(w[2], w[3]));
    bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(void *)q, bytes);
}

/* The sum of the 32 floats at x, in double. */
static inline double x86_sum32_pd(const float *x)
{
    __m256d s = _mm256_setzero_pd();
    for (int i = 0; i < 32; i += 8)
        s = v_widen_add(s, _mm256_loadu_ps(x + i));
    return v_hsum_pd(s);
}

/* acc[k] (two double vectors) += the float lanes of sums[k], k < 3. */
static inline void x86_add_errors(__m256d acc[3][2], const __m256 sums[3])
{
    for (int k = 0; k < 3; k++) {
        acc[k][0] = _mm256_add_pd(acc[k][0], _mm256_cvtps_pd(_mm256_castps256_ps128(sums[k])));
        acc[k][1] = _mm256_add_pd(acc[k][1], _mm256_cvtps_pd(_mm256_extractf128_ps(sums[k], 1)));
    }
}

static inline void x86_store_errors(__m256d acc[3][2], float max, rounding_error *err)
{
    err->sq += v_hsum_pd(_mm256_add_pd(acc[0][0], acc[0][1]));
    err->abs += v_hsum_pd(_mm256_add_pd(acc[1][0], acc[1][1]));
    err->sq_x += v_hsum_pd(_mm256_add_pd(acc[2][0], acc[2][1]));
    err->max = (double)max > err->max ? (double)max : err->max;
}

/* x (n, a multiple of 32) in int8 per 32 values into q, the scales
 * (largest |x| / 127) into scale, what the rounding adds up to into err:
 * the vector form of cpu-typed-gemv_tmpl.c's typed_gemv_round_x32.  0 when
 * a block holds a value that is not finite or its largest |x| is in
 * (0, 1e-30) (its reciprocal scale would overflow). */
static inline int x86_round_x32_i8(const float *x, size_t n, int8_t *q, float *scale, rounding_error *err)
{
    __m256d acc[3][2];
    for (int k = 0; k < 3; k++)
        acc[k][0] = acc[k][1] = _mm256_setzero_pd();
    float max = 0.0f;
    for (size_t b = 0; b < n / 32; b++, x += 32, q += 32) {
        float amax;
        __m256 sums[3];
        if (!x86_amax32(x, &amax) || (amax != 0.0f && amax < 1e-30f))
            return 0;
        x86_round32_i8(x, amax, q, sums);
        x86_add_errors(acc, sums);
        scale[b] = amax / 127.0f;
        max = amax > max ? amax : max;
    }
    x86_store_errors(acc, max, err);
    return 1;
}

/* x (n, a multiple of 256) in int8 per 256 values into q, the scales into
 * scale, the sums of x per 32 (in double, then float) into sum, what the
 * rounding adds up to into err: the vector form of cpu-typed-gemv_tmpl.c's
 * typed_gemv_round_x8 loop.  0 when a value is not finite or the largest
 * |x| of 32 is in (0, 1e-30). */
static inline int x86_round_x256_i8(const float *x, size_t n, int8_t *q, float *scale, float *sum,
                                    rounding_error *err)
{
    __m256d acc[3][2];
    for (int k = 0; k < 3; k++)
        acc[k][0] = acc[k][1] = _mm256_setzero_pd();
    float max = 0.0f;
    for (size_t b = 0; b < n / 256; b++, x += 256, q += 256) {
        float amax = 0.0f;
        for (int s = 0; s < 8; s++) {
            float sub;
            if (!x86_amax32(x + 32 * s, &sub) || (sub != 0.0f && sub < 1e-30f))
                return 0;
            amax = sub > amax ? sub : amax;
            sum[8 * b + s] = (float)x86_sum32_pd(x + 32 * s);
        }
        for (int s = 0; s < 8; s++) {
            __m256 sums[3];
            x86_round32_i8(x + 32 * s, amax, q + 32 * s, sums);
            x86_add_errors(acc, sums);
        }
        scale[b] = amax / 127.0f;
        max = amax > max ? amax : max;
    }
    x86_store_errors(acc, max, err);
    return 1;
}

#endif
