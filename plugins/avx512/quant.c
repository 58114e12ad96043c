/* quant.c - gemv with half or block-quantized weights: y (m) = alpha A x +
 * beta y, A (m x n) in f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K with rows along n
 * (row stride lda elements), x and y f32.  The 512-bit form of
 * ../avx2/quant.c, which explains the method: blocks decoded in registers
 * (no dequantized row in memory), products in float lanes over at most 256
 * values (16 per lane), added into double lanes, rows over the threads.
 * beta == 0 never reads y; other strides and flags go to the next backend.
 */
#include "plugin.h"
#include "math.h"
#include "typed-gemv.h"

/* ---- decoding helpers --------------------------------------------------- */

static inline float f16_at(const uint8_t *p)
{
    return _cvtsh_ss(rayo__le16(p));
}

/* The 16 signed bytes of v as float lanes. */
static inline __m512 bytes16_ps(__m128i v)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
}

static inline __m512 load16(const float *x)
{
    return _mm512_loadu_ps(x);
}

/* ---- one row: the dot of a quantized row with x, in double -------------- */

/* Q8_0 block: sum q x (d left out). */
static inline __m512 block_q8_0(const uint8_t *blk, const float *x)
{
    const uint8_t *q = blk + 2;
    __m512 s = _mm512_mul_ps(bytes16_ps(_mm_loadu_si128((const __m128i *)q)), load16(x));
    return _mm512_fmadd_ps(bytes16_ps(_mm_loadu_si128((const __m128i *)(q + 16))), load16(x + 16), s);
}

/* Q4_0 block: sum (q - 8) x; byte j holds value j (low nibble) and j + 16. */
static inline __m512 block_q4_0(const uint8_t *blk, const float *x)
{
    const __m128i low_nibbles = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    __m128i bytes = _mm_loadu_si128((const __m128i *)(blk + 2));
    __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, low_nibbles), eight);
    __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), low_nibbles), eight);
    __m512 s = _mm512_mul_ps(bytes16_ps(lo), load16(x));
    return _mm512_fmadd_ps(bytes16_ps(hi), load16(x + 16), s);
}

/* Blocks of 32 values led by their f16 scale (Q8_0, Q4_0): d * block_dot in
 * float over 8 blocks, double across.  Inlined with a constant block_dot. */
static inline __attribute__((always_inline)) double
dot_small_blocks(const uint8_t *blk, const float *x, size_t n, size_t block_bytes,
                 __m512 (*block_dot)(const uint8_t *, const float *))
{
    __m512d acc = _mm512_setzero_pd();
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + 8 < blocks ? b + 8 : blocks;
        __m512 group = _mm512_setzero_ps();
        for (; b < end; b++, blk += block_bytes, x += 32)
            group = _mm512_fmadd_ps(_mm512_set1_ps(f16_at(blk)), block_dot(blk, x), group);
        acc = z_widen_add(acc, group);
    }
    return _mm512_reduce_add_pd(acc);
}

/* The same over four rows (blk, blk + stride, ...), x read once for all. */
static inline __attribute__((always_inline)) void
dot4_small_blocks(const uint8_t *blk, size_t stride, const float *x, size_t n, size_t block_bytes,
                  __m512 (*block_dot)(const uint8_t *, const float *), double out[4])
{
    __m512d acc[4] = { _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd() };
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + 8 < blocks ? b + 8 : blocks;
        __m512 group[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
        for (; b < end; b++)
            for (int r = 0; r < 4; r++) {
                const uint8_t *p = blk + r * stride + b * block_bytes;
                group[r] = _mm512_fmadd_ps(_mm512_set1_ps(f16_at(p)), block_dot(p, x + 32 * b), group[r]);
            }
        for (int r = 0; r < 4; r++)
            acc[r] = z_widen_add(acc[r], group[r]);
    }
    for (int r = 0; r < 4; r++)
        out[r] = _mm512_reduce_add_pd(acc[r]);
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

/* sum (scale q - offset) x over 32 values, codes the 32 signed bytes of q. */
static inline __m512 dot32_affine(__m256i codes, __m512 scale, __m512 offset, const float *x,
                                  __m512 acc)
{
    __m512 q0 = bytes16_ps(_mm256_castsi256_si128(codes)), q1 = bytes16_ps(_mm256_extracti128_si256(codes, 1));
    acc = _mm512_fmadd_ps(_mm512_fmsub_ps(scale, q0, offset), load16(x), acc);
    return _mm512_fmadd_ps(_mm512_fmsub_ps(scale, q1, offset), load16(x + 16), acc);
}

/* Q4_K (layout in rayo-dtype.h): sub-blocks 2c and 2c + 1 are the low and
 * high nibbles of chunk c's 32 bytes. */
static double dot_q4_k(const uint8_t *blk, const float *x, size_t n)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    __m512d acc = _mm512_setzero_pd();
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q4_K_BYTES) {
        float d = f16_at(blk), dmin = f16_at(blk + RAYO_Q4_K_DMIN);
        __m512 block = _mm512_setzero_ps();
        for (int c = 0; c < 4; c++, x += 64) {
            __m256i bytes = _mm256_loadu_si256((const __m256i *)(blk + RAYO_Q4_K_QS + 32 * c));
            uint8_t sc0, m0, sc1, m1;
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, 2 * c, &sc0, &m0);
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, 2 * c + 1, &sc1, &m1);
            block = dot32_affine(_mm256_and_si256(bytes, low_nibbles), _mm512_set1_ps(d * (float)sc0),
                                 _mm512_set1_ps(dmin * (float)m0), x, block);
            block = dot32_affine(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles),
                                 _mm512_set1_ps(d * (float)sc1), _mm512_set1_ps(dmin * (float)m1),
                                 x + 32, block);
        }
        acc = z_widen_add(acc, block);
    }
    return _mm512_reduce_add_pd(acc);
}

/* Q6_K (layout in rayo-dtype.h): 32 values (h, k) at a time, their codes
 * from ql and qh; values l < 16 and l >= 16 have scales of their own. */
static double dot_q6_k(const uint8_t *blk, const float *x, size_t n)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15), two_bits = _mm256_set1_epi8(3);
    const __m256i bias = _mm256_set1_epi8(32);
    __m512d acc = _mm512_setzero_pd();
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q6_K_BYTES) {
        float d = f16_at(blk + RAYO_Q6_K_D);
        const int8_t *scales = (const int8_t *)(blk + RAYO_Q6_K_SCALES);
        __m512 block = _mm512_setzero_ps();
        for (int h = 0; h < 2; h++) {
            __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + RAYO_Q6_K_QH + 32 * h));
            for (int k = 0; k < 4; k++, x += 32) {
                __m256i ql = _mm256_loadu_si256((const __m256i *)(blk + 64 * h + 32 * (k & 1)));
                __m256i low = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(4 * (k >> 1))),
                                               low_nibbles);
                __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), two_bits);
                __m256i codes = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), bias);
                const int8_t *sc = scales + 8 * h + 2 * k;
                __m512 w0 = _mm512_mul_ps(_mm512_set1_ps(d * (float)sc[0]),
                                          bytes16_ps(_mm256_castsi256_si128(codes)));
                __m512 w1 = _mm512_mul_ps(_mm512_set1_ps(d * (float)sc[1]),
                                          bytes16_ps(_mm256_extracti128_si256(codes, 1)));
                block = _mm512_fmadd_ps(w0, load16(x), block);
                block = _mm512_fmadd_ps(w1, load16(x + 16), block);
            }
        }
        acc = z_widen_add(acc, block);
    }
    return _mm512_reduce_add_pd(acc);
}

/* f16 and bf16: 16 values at p as floats. */
static inline __m512 f16x16_ps(const uint8_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

static inline __m512 bf16x16_ps(const uint8_t *p)
{
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

/* Rows of 2-byte floats, any n: the last n % 16 values one by one in double. */
static inline __attribute__((always_inline)) double
dot_halves(const uint8_t *w, const float *x, size_t n, __m512 (*decode16)(const uint8_t *))
{
    __m512d acc = _mm512_setzero_pd();
    size_t i = 0;
    while (i + 16 <= n) {
        size_t end = i + 256 < n ? i + 256 : n;
        __m512 s = _mm512_setzero_ps();
        for (; i + 16 <= end; i += 16)
            s = _mm512_fmadd_ps(decode16(w + 2 * i), load16(x + i), s);
        acc = z_widen_add(acc, s);
    }
    double tail = typed_gemv_half_tail(w, x, i, n, decode16 == f16x16_ps);
    return _mm512_reduce_add_pd(acc) + tail;
}

static double dot_f16(const uint8_t *w, const float *x, size_t n)
{
    return dot_halves(w, x, n, f16x16_ps);
}

static double dot_bf16(const uint8_t *w, const float *x, size_t n)
{
    return dot_halves(w, x, n, bf16x16_ps);
}

/* ---- the kernel ----------------------------------------------------------- */

rayo_status avx512_gemv_quant(void *state, const rayo_call *call)
{
    if (!typed_gemv_takes(call))
        return RAYO_E_UNSUPPORTED;
    if (call->m == 0)
        return RAYO_OK;
    /* work per row: its bytes, which is what the row costs */
    cpu_run_ranges(state, call, call->m, typed_gemv_row_bytes(call) + 1, typed_gemv_rows);
    return RAYO_OK;
}
