/* SPDX-License-Identifier: MIT */
/* x86-row-to-f32.h - rows of f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K values to f32
 * in AVX2 + F16C, bit for bit the values of rayo-dtype.h (the scalar
 * backend's): the x86 plugins' convert and get_rows (x86-infer_tmpl.c) and
 * the panels of their typed matmul (x86-typed-matmul.c) share them.
 *   f16 -> f32  vcvtph2ps is exact, but quiets a signalling NaN where
 *               rayo_f16_to_f32 keeps it: groups of 8 with an exponent of
 *               all ones take the scalar path;
 *   bf16        a shift, as the scalar formula;
 *   blocks      products of small integers and f16 scales, exact or rounded
 *               once as in the reference.
 */
#ifndef RAYO_X86_ROW_TO_F32_H
#define RAYO_X86_ROW_TO_F32_H

#include "rayo-dtype.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* n f16 values (little-endian) to f32. */
static inline void f16_row_to_f32(const unsigned char *src, float *y, size_t n)
{
    const __m128i exponent = _mm_set1_epi16(0x7c00);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exponent), exponent)))
            for (size_t l = i; l < i + 8; l++) /* inf or NaN in the group: rare */
                y[l] = rayo_f16_to_f32(rayo__le16(src + 2 * l));
        else
            _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++)
        y[i] = rayo_f16_to_f32(rayo__le16(src + 2 * i));
}

static inline void bf16_row_to_f32(const unsigned char *src, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i)));
        _mm256_storeu_si256((__m256i *)(void *)(y + i), _mm256_slli_epi32(h, 16));
    }
    for (; i < n; i++)
        y[i] = rayo_bf16_to_f32(rayo__le16(src + 2 * i));
}

/* ---- blocks ------------------------------------------------------------------ */

/* An f16 scale as f32, exactly as rayo_f16_to_f32 (which keeps signalling NaNs). */
static inline float half_scale(const unsigned char *p)
{
    uint16_t h = rayo__le16(p);
    return (h & 0x7c00) == 0x7c00 ? rayo_f16_to_f32(h) : _cvtsh_ss(h);
}

/* 8 signed bytes at p, as floats. */
static inline __m256 i8x8_to_f32(const unsigned char *p)
{
    __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)p);
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

static inline void q8_0_row_to_f32(const unsigned char *blk, float *y, size_t n)
{
    for (size_t b = 0; b < n / RAYO_QK8_0; b++, blk += RAYO_Q8_0_BYTES, y += RAYO_QK8_0) {
        __m256 d = _mm256_set1_ps(half_scale(blk));
        for (int j = 0; j < RAYO_QK8_0; j += 8)
            _mm256_storeu_ps(y + j, _mm256_mul_ps(i8x8_to_f32(blk + 2 + j), d));
    }
}

static inline void q4_0_row_to_f32(const unsigned char *blk, float *y, size_t n)
{
    const __m128i low4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    for (size_t b = 0; b < n / RAYO_QK4_0; b++, blk += RAYO_Q4_0_BYTES, y += RAYO_QK4_0) {
        __m256 d = _mm256_set1_ps(half_scale(blk));
        __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
        __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low4), eight);            /* values 0..15 */
        __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low4), eight); /* 16..31 */
        __m128i parts[4] = { lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8) };
        for (int j = 0; j < 4; j++)
            _mm256_storeu_ps(y + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[j])), d));
    }
}

/* y = ds * q - ms for the 32 nibbles (shift 0 or 4) of q[0..32). */
static inline void q4_k_sub_block(const unsigned char *q, int shift, float ds, float ms, float *y)
{
    const __m256i low4 = _mm256_set1_epi32(15);
    __m256 vds = _mm256_set1_ps(ds), vms = _mm256_set1_ps(ms);
    for (int l = 0; l < 32; l += 8) {
        __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(q + l)));
        __m256 v = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(b, shift), low4));
        _mm256_storeu_ps(y + l, _mm256_sub_ps(_mm256_mul_ps(vds, v), vms)); /* ds * v is exact */
    }
}

static inline void q4_k_row_to_f32(const unsigned char *blk, float *y, size_t n)
{
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q4_K_BYTES) {
        float d = half_scale(blk), dmin = half_scale(blk + RAYO_Q4_K_DMIN);
        for (int s = 0; s < 8; s++, y += 32) {
            uint8_t sc, m;
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, s, &sc, &m);
            q4_k_sub_block(blk + RAYO_Q4_K_QS + 32 * (s / 2), 4 * (s & 1), d * (float)sc, dmin * (float)m, y);
        }
    }
}

/* The 32 values of part k (0..3) of half h (0..1) of a Q6_K block: codes
 * from the low nibbles and the 2-bit high parts, scaled per 16 values. */
static inline void q6_k_part(const unsigned char *blk, int h, int k, float d, float *y)
{
    const unsigned char *ql = blk + 64 * h + 32 * (k & 1), *qh = blk + RAYO_Q6_K_QH + 32 * h;
    const __m256i low4 = _mm256_set1_epi32(15), two = _mm256_set1_epi32(3), bias = _mm256_set1_epi32(32);
    for (int l = 0; l < 32; l += 8) {
        __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(ql + l)));
        __m256i hi = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(qh + l)));
        lo = _mm256_and_si256(_mm256_srli_epi32(lo, 4 * (k >> 1)), low4);
        hi = _mm256_and_si256(_mm256_srli_epi32(hi, 2 * k), two);
        __m256i code = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), bias);
        int i = 128 * h + 32 * k + l; /* index of y[l] in the block */
        float ds = d * (float)(int8_t)blk[RAYO_Q6_K_SCALES + i / 16];
        _mm256_storeu_ps(y + l, _mm256_mul_ps(_mm256_set1_ps(ds), _mm256_cvtepi32_ps(code)));
    }
}

static inline void q6_k_row_to_f32(const unsigned char *blk, float *y, size_t n)
{
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q6_K_BYTES, y += RAYO_QK_K) {
        float d = half_scale(blk + RAYO_Q6_K_D);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                q6_k_part(blk, h, k, d, y + 128 * h + 32 * k);
    }
}

/* Any float-valued dtype to f32, n a multiple of its block; 0 for others. */
static inline int x86_row_to_f32(rayo_dtype dt, const void *src, float *y, size_t n)
{
    switch (dt) {
    case RAYO_DTYPE_F32: memcpy(y, src, n * sizeof(float)); return 1;
    case RAYO_DTYPE_F16: f16_row_to_f32(src, y, n); return 1;
    case RAYO_DTYPE_BF16: bf16_row_to_f32(src, y, n); return 1;
    case RAYO_DTYPE_Q8_0: q8_0_row_to_f32(src, y, n); return 1;
    case RAYO_DTYPE_Q4_0: q4_0_row_to_f32(src, y, n); return 1;
    case RAYO_DTYPE_Q4_K: q4_k_row_to_f32(src, y, n); return 1;
    case RAYO_DTYPE_Q6_K: q6_k_row_to_f32(src, y, n); return 1;
    default: return 0;
    }
}

#endif
