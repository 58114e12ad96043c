/* SPDX-License-Identifier: MIT */
/* x86-quant.h - block decoding that the gemv kernels of the avx2 and avx512
 * plugins share (their quant.c; both are compiled with AVX2 and F16C).
 * Layouts of the blocks: core/rayo-dtype.h. */
#ifndef RAYO_X86_QUANT_H
#define RAYO_X86_QUANT_H

#include "rayo-plugin.h"

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
 * the store forwarding. */
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

/* Q6_K: the 32 codes q (0..63) of values 128h + 32k + l, l < 32: q's low 4
 * bits from ql[64h + 32 (k & 1) + l] (nibble k >> 1), its high 2 bits from
 * bits 2k, 2k + 1 of qh[32h + l] (qh: those 32 bytes). */
static inline __m256i x86_q6_k_codes(const uint8_t *blk, __m256i qh, int h, int k)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15), two_bits = _mm256_set1_epi8(3);
    __m256i ql = x86_load256(blk + 64 * h + 32 * (k & 1));
    __m256i low = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(4 * (k >> 1))), low_nibbles);
    __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), two_bits);
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
}

/* Q8_0 against int8 x, two blocks at a time (x in order).  maddubs takes
 * an unsigned first operand: |q| times x with q's sign moved onto x (pairs
 * into int16: at most 2 * 128 * 127, no saturation), madd by ones into
 * int32, hadd of the two blocks: lanes 0-1 and 4-5 hold block 2b, 2-3 and
 * 6-7 block 2b + 1.  Returns acc + those lanes times d x's scale (sx: the
 * two blocks' x scales). */
static inline __m256 x86_q8_0_pair_i8(const uint8_t *blk, const int8_t *xq, const float *sx, __m256 acc)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i q0 = x86_load256(blk + 2), q1 = x86_load256(blk + RAYO_Q8_0_BYTES + 2);
    __m256i x0 = x86_load256(xq), x1 = x86_load256(xq + 32);
    __m256i s0 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(q0), _mm256_sign_epi8(x0, q0)), ones);
    __m256i s1 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(q1), _mm256_sign_epi8(x1, q1)), ones);
    __m128i d = _mm_unpacklo_epi32(_mm_set1_epi16((short)rayo__le16(blk)),
                                   _mm_set1_epi16((short)rayo__le16(blk + RAYO_Q8_0_BYTES)));
    __m256 sx_lanes = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(_mm256_broadcast_ss(sx)),
                                                          _mm256_castps_pd(_mm256_broadcast_ss(sx + 1))));
    __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(d), sx_lanes);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_hadd_epi32(s0, s1)), scale, acc);
}

/* Q4_0 against int8 x, two blocks (2b, 2b + 1) at a time: x of the pair
 * stored in the order of the nibbles, [2b: 0-15][2b+1: 0-15][2b: 16-31]
 * [2b+1: 16-31] (cpu-typed-gemv_tmpl.c), so that one 256-bit and/shift
 * decodes both blocks' low nibbles (values 0-15), another their high ones
 * (16-31).  A block's values are q - 8 (byte j: value j in the low nibble,
 * j + 16 in the high one); maddubs takes the codes as they are (unsigned)
 * and 8 times x's pair sums come off (int16: at most 4 * 15 * 127 and
 * 4 * 8 * 127; x's part, the same for every row, the compiler computes
 * once for four); the int32 lanes 0-3 then hold block 2b, lanes 4-7 block
 * 2b + 1.  Returns acc + those lanes times d x's scale (sx: the two
 * blocks' x scales).  Per 64 values: 2 loads, 3 ops to
 * decode, 2 maddubs, 3 to sum, 4 for the scales, 2 float ops (the
 * one-block form took 16 per 32). */
static inline __m256 x86_q4_0_pair_i8(const uint8_t *blk, const int8_t *xq, const float *sx, __m256 acc)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    __m256i bytes = _mm256_set_m128i(x86_load128(blk + RAYO_Q4_0_BYTES + 2), x86_load128(blk + 2));
    __m256i x_lo = x86_load256(xq), x_hi = x86_load256(xq + 32);
    __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(bytes, low_nibbles), x_lo);
    __m256i hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles), x_hi);
    const __m256i eight = _mm256_set1_epi8(8);
    __m256i offset = _mm256_add_epi16(_mm256_maddubs_epi16(eight, x_lo), _mm256_maddubs_epi16(eight, x_hi));
    __m256i pairs = _mm256_sub_epi16(_mm256_add_epi16(lo, hi), offset);
    __m256i sums = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    __m128i d = _mm_unpacklo_epi64(_mm_set1_epi16((short)rayo__le16(blk)),
                                   _mm_set1_epi16((short)rayo__le16(blk + RAYO_Q4_0_BYTES)));
    __m256 sx_lanes = _mm256_set_m128(_mm_broadcast_ss(sx + 1), _mm_broadcast_ss(sx));
    __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(d), sx_lanes);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scale, acc);
}

/* Q4_K against int8 x with a scale per 32 values (the fallback where x's
 * scale per 256 fails the error budget): the sub-blocks' dots in int32
 * (maddubs, madd by ones), each times its d sc x-scale in float (the eight
 * scales as one vector, a lane broadcast per sub-block); the minimums' part
 * with x's exact sums per 32 (sums).  sx: x's scales of the 8 sub-blocks. */
static inline __m256 x86_q4_k_i8_32(const uint8_t *blk, const int8_t *xq, const float *sx, const float *sums,
                                    __m256 acc)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    __m128i sc8, m8;
    x86_q4_k_scales_mins(blk + RAYO_Q4_K_SCALES, &sc8, &m8);
    __m256 scales = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(x86_f16_at(blk)), _mm256_loadu_ps(sx)),
                                  _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc8)));
    __m256 mins = _mm256_mul_ps(_mm256_set1_ps(x86_f16_at(blk + RAYO_Q4_K_DMIN)),
                                _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m8)));
    acc = _mm256_fnmadd_ps(mins, _mm256_loadu_ps(sums), acc);
    for (int c = 0; c < 4; c++, xq += 64) {
        __m256i bytes = x86_load256(blk + RAYO_Q4_K_QS + 32 * c);
        __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(bytes, low_nibbles), x86_load256(xq));
        __m256i hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles),
                                          x86_load256(xq + 32));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(lo, ones)),
                              _mm256_permutevar8x32_ps(scales, _mm256_set1_epi32(2 * c)), acc);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(hi, ones)),
                              _mm256_permutevar8x32_ps(scales, _mm256_set1_epi32(2 * c + 1)), acc);
    }
    return acc;
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
    for (int h = 0; h < 2; h++) {
        __m256i qh = x86_load256(blk + RAYO_Q6_K_QH + 32 * h);
        for (int k = 0; k < 4; k++) {
            int c = 4 * h + k;
            __m128i pick = _mm_set_epi64x(0x0101010101010101ll * (2 * c + 1), 0x0101010101010101ll * (2 * c));
            __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales8, pick));
            __m256i p = _mm256_maddubs_epi16(x86_q6_k_codes(blk, qh, h, k), x86_load256(xq + 32 * c));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(p, sc)),
                                  _mm256_permutevar8x32_ps(scales, _mm256_set1_epi32(c)), acc);
        }
    }
    return acc;
}

#endif
