/* quant.c - gemv with half or block-quantized weights: y (m) = alpha A x +
 * beta y, A (m x n) in f16, bf16, Q8_0, Q4_0, Q4_K or Q6_K with rows along n (row stride lda
 * elements), x and y f32.
 *
 * Decode is the hot path of inference and it is memory-bound: each weight
 * byte is read once.  So the blocks are decoded in registers (bytes ->
 * int32 -> float lanes) and multiplied into x at once; no row is ever
 * dequantized to memory.
 *
 * Accuracy (contract 1e-5 of sum|terms| at any n, judged against float64 on
 * the dequantized values): products are summed in float lanes over at most
 * 256 elements (32 terms per lane), then added into double lanes, so the
 * error stays near 40 * 2^-24 ~ 2.4e-6 of sum|terms| however long the row is.
 * Q8_0 and Q4_0 multiply the block's scale into the lane sums (d sum q x);
 * the K formats rebuild each weight (d sc q - dmin m) before its product;
 * f16 and bf16 are widened exactly (F16C for f16, a shift for bf16).
 *
 * Q8_0 and Q4_0 go four rows per pass, reading x once for the four: x (44
 * KB at k = 11008) does not stay in L1, and reading it again for each row
 * cost more than the row's weights (1.5x on Q8_0 at 4096 x 11008).
 *
 * Rows are split over the threads in one chunk per thread (avx2_run_ranges).
 * beta == 0 never reads y.  Strides other than lda and flags are left to the
 * scalar backend (RAYO_E_UNSUPPORTED).
 */
#include "plugin.h"
#include "math.h"
#include "typed-gemv.h"

/* Rows below which the whole gemv runs on the calling thread: about 64 KiB
 * of weights (waking the pool costs more than streaming that much). */
#define PARALLEL_MIN_BYTES ((size_t)1 << 16)

/* Blocks of 32 summed in float lanes before the lanes go to double. */
#define SMALL_BLOCKS_PER_GROUP 8

/* ---- decoding helpers --------------------------------------------------- */

/* The f16 scale at p (F16C: one instruction, where rayo_f16_to_f32 branches
 * and costs as much as the rest of a Q8_0 block). */
static inline float f16_at(const uint8_t *p)
{
    return _cvtsh_ss(rayo__le16(p));
}

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

/* ---- one row: the dot of a quantized row with x, in double -------------- */

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

/* Q8_0 block: sum q x over its 32 values, in float lanes (d left out). */
static inline __m256 block_q8_0(const uint8_t *blk, const float *x)
{
    const uint8_t *q = blk + 2;
    __m256 s0 = _mm256_mul_ps(bytes8_ps(q), _mm256_loadu_ps(x));
    __m256 s1 = _mm256_mul_ps(bytes8_ps(q + 8), _mm256_loadu_ps(x + 8));
    s0 = _mm256_fmadd_ps(bytes8_ps(q + 16), _mm256_loadu_ps(x + 16), s0);
    s1 = _mm256_fmadd_ps(bytes8_ps(q + 24), _mm256_loadu_ps(x + 24), s1);
    return _mm256_add_ps(s0, s1);
}

/* Q4_0 block: sum (q - 8) x; byte j holds value j (low nibble) and j + 16. */
static inline __m256 block_q4_0(const uint8_t *blk, const float *x)
{
    const __m128i low_nibbles = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    __m128i bytes = _mm_loadu_si128((const __m128i *)(blk + 2));
    __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, low_nibbles), eight);
    __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), low_nibbles), eight);
    __m256 s0 = _mm256_mul_ps(low8_ps(lo), _mm256_loadu_ps(x));
    __m256 s1 = _mm256_mul_ps(high8_ps(lo), _mm256_loadu_ps(x + 8));
    s0 = _mm256_fmadd_ps(low8_ps(hi), _mm256_loadu_ps(x + 16), s0);
    s1 = _mm256_fmadd_ps(high8_ps(hi), _mm256_loadu_ps(x + 24), s1);
    return _mm256_add_ps(s0, s1);
}

/* Rows of 32-value blocks that start with their f16 scale d (Q8_0, Q4_0):
 * sum over blocks of d * block_dot, in float over groups of blocks, in
 * double across groups.  Inlined with a constant block_dot. */
static inline __attribute__((always_inline)) double
dot_small_blocks(const uint8_t *blk, const float *x, size_t n, size_t block_bytes,
                 __m256 (*block_dot)(const uint8_t *, const float *))
{
    __m256d acc[2] = { _mm256_setzero_pd(), _mm256_setzero_pd() };
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + SMALL_BLOCKS_PER_GROUP < blocks ? b + SMALL_BLOCKS_PER_GROUP : blocks;
        __m256 group = _mm256_setzero_ps();
        for (; b < end; b++, blk += block_bytes, x += 32)
            group = _mm256_fmadd_ps(_mm256_set1_ps(f16_at(blk)), block_dot(blk, x), group);
        add_wide(acc, group);
    }
    return sum_wide(acc);
}

/* The same over four rows (blk, blk + stride, ...), x read once for all. */
static inline __attribute__((always_inline)) void
dot4_small_blocks(const uint8_t *blk, size_t stride, const float *x, size_t n, size_t block_bytes,
                  __m256 (*block_dot)(const uint8_t *, const float *), double out[4])
{
    __m256d acc[4][2];
    for (int r = 0; r < 4; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_pd();
    size_t blocks = n / 32;
    for (size_t b = 0; b < blocks;) {
        size_t end = b + SMALL_BLOCKS_PER_GROUP < blocks ? b + SMALL_BLOCKS_PER_GROUP : blocks;
        __m256 group[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
        for (; b < end; b++)
            for (int r = 0; r < 4; r++) {
                const uint8_t *p = blk + r * stride + b * block_bytes;
                group[r] = _mm256_fmadd_ps(_mm256_set1_ps(f16_at(p)), block_dot(p, x + 32 * b), group[r]);
            }
        for (int r = 0; r < 4; r++)
            add_wide(acc[r], group[r]);
    }
    for (int r = 0; r < 4; r++)
        out[r] = sum_wide(acc[r]);
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
static double dot_q4_k(const uint8_t *blk, const float *x, size_t n)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15);
    __m256d acc[2] = { _mm256_setzero_pd(), _mm256_setzero_pd() };
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q4_K_BYTES) {
        float d = f16_at(blk), dmin = f16_at(blk + RAYO_Q4_K_DMIN);
        __m256 block = _mm256_setzero_ps();
        for (int c = 0; c < 4; c++, x += 64) {
            __m256i bytes = _mm256_loadu_si256((const __m256i *)(blk + RAYO_Q4_K_QS + 32 * c));
            uint8_t sc0, m0, sc1, m1;
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, 2 * c, &sc0, &m0);
            rayo_q4_k_scale_min(blk + RAYO_Q4_K_SCALES, 2 * c + 1, &sc1, &m1);
            block = dot32_affine(_mm256_and_si256(bytes, low_nibbles), _mm256_set1_ps(d * (float)sc0),
                                 _mm256_set1_ps(dmin * (float)m0), x, block);
            block = dot32_affine(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles),
                                 _mm256_set1_ps(d * (float)sc1), _mm256_set1_ps(dmin * (float)m1),
                                 x + 32, block);
        }
        add_wide(acc, block);
    }
    return sum_wide(acc);
}

/* Q6_K: value 128h + 32k + l is (d sc[(128h + 32k + l) / 16]) (q - 32), q's
 * low 4 bits from ql[64h + 32 (k & 1) + l] (nibble k >> 1), its high 2 bits
 * from bits 2k, 2k + 1 of qh[32h + l]. */
static double dot_q6_k(const uint8_t *blk, const float *x, size_t n)
{
    const __m256i low_nibbles = _mm256_set1_epi8(15), two_bits = _mm256_set1_epi8(3);
    const __m256i bias = _mm256_set1_epi8(32);
    __m256d acc[2] = { _mm256_setzero_pd(), _mm256_setzero_pd() };
    for (size_t b = 0; b < n / RAYO_QK_K; b++, blk += RAYO_Q6_K_BYTES) {
        float d = f16_at(blk + RAYO_Q6_K_D);
        const int8_t *scales = (const int8_t *)(blk + RAYO_Q6_K_SCALES);
        __m256 block = _mm256_setzero_ps();
        for (int h = 0; h < 2; h++) {
            __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + RAYO_Q6_K_QH + 32 * h));
            for (int k = 0; k < 4; k++, x += 32) {
                __m256i ql = _mm256_loadu_si256((const __m256i *)(blk + 64 * h + 32 * (k & 1)));
                __m256i low = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(4 * (k >> 1))),
                                               low_nibbles);
                __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), two_bits);
                __m256i codes = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), bias);
                __m128i lo = _mm256_castsi256_si128(codes), hi = _mm256_extracti128_si256(codes, 1);
                const int8_t *sc = scales + 8 * h + 2 * k; /* values l < 16, then l >= 16 */
                __m256 s0 = _mm256_set1_ps(d * (float)sc[0]), s1 = _mm256_set1_ps(d * (float)sc[1]);
                block = _mm256_fmadd_ps(_mm256_mul_ps(s0, low8_ps(lo)), _mm256_loadu_ps(x), block);
                block = _mm256_fmadd_ps(_mm256_mul_ps(s0, high8_ps(lo)), _mm256_loadu_ps(x + 8), block);
                block = _mm256_fmadd_ps(_mm256_mul_ps(s1, low8_ps(hi)), _mm256_loadu_ps(x + 16), block);
                block = _mm256_fmadd_ps(_mm256_mul_ps(s1, high8_ps(hi)), _mm256_loadu_ps(x + 24), block);
            }
        }
        add_wide(acc, block);
    }
    return sum_wide(acc);
}

/* f16 (F16C) and bf16 (the top half of an f32): 8 values at p as floats. */
static inline __m256 f16x8_ps(const uint8_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static inline __m256 bf16x8_ps(const uint8_t *p)
{
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

/* Rows of 2-byte floats: float lanes over 256 values, double across.  n may
 * be any length: the last n % 8 values are summed one by one in double. */
static inline __attribute__((always_inline)) double
dot_halves(const uint8_t *w, const float *x, size_t n, __m256 (*decode8)(const uint8_t *))
{
    __m256d acc[2] = { _mm256_setzero_pd(), _mm256_setzero_pd() };
    size_t i = 0;
    while (i + 8 <= n) {
        size_t end = i + 256 < n ? i + 256 : n;
        __m256 s0 = _mm256_setzero_ps(), s1 = s0;
        for (; i + 16 <= end; i += 16) {
            s0 = _mm256_fmadd_ps(decode8(w + 2 * i), _mm256_loadu_ps(x + i), s0);
            s1 = _mm256_fmadd_ps(decode8(w + 2 * i + 16), _mm256_loadu_ps(x + i + 8), s1);
        }
        for (; i + 8 <= end; i += 8)
            s0 = _mm256_fmadd_ps(decode8(w + 2 * i), _mm256_loadu_ps(x + i), s0);
        add_wide(acc, _mm256_add_ps(s0, s1));
    }
    double tail = typed_gemv_half_tail(w, x, i, n, decode8 == f16x8_ps);
    return sum_wide(acc) + tail;
}

static double dot_f16(const uint8_t *w, const float *x, size_t n)
{
    return dot_halves(w, x, n, f16x8_ps);
}

static double dot_bf16(const uint8_t *w, const float *x, size_t n)
{
    return dot_halves(w, x, n, bf16x8_ps);
}

/* ---- the kernel ----------------------------------------------------------- */

static void gemv_quant_rows(const avx2_state *st, const rayo_call *c, size_t begin, size_t end)
{
    (void)st;
    typed_gemv_rows(c, begin, end);
}

rayo_status avx2_gemv_quant(void *state, const rayo_call *call)
{
    if (!typed_gemv_takes(call))
        return RAYO_E_UNSUPPORTED;
    if (call->m == 0)
        return RAYO_OK;
    size_t stride = typed_gemv_row_bytes(call);
    size_t min_rows = stride ? PARALLEL_MIN_BYTES / stride + 1 : call->m;
    avx2_run_ranges((const avx2_state *)state, call, call->m, min_rows, 1, gemv_quant_rows);
    return RAYO_OK;
}
