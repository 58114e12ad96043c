/* SPDX-License-Identifier: MIT */
/* cpu-typed-gemv_tmpl.c - what the x86 plugins' gemv with half or block-quantized
 * weights (avx2/quant.c, avx512/quant.c) share: the call's checks, the
 * weight rows' stride, x prepared once per call, the split of the rows over
 * the threads and the choice of row kernel.
 *
 * Two paths, by the call's precision:
 *   strict   x in f32: blocks decoded to float lanes and multiplied into x
 *            (the strict contract, 1e-5 of sum |terms|, at any n);
 *   relaxed  block formats only: x rounded once per call, the block
 *            products in integers, a float scale per block or super-block:
 *            Q8_0, Q4_0: x in int8 with a float scale per 32 values
 *              (maddubs: 32 products per instruction, two blocks a step)
 *              where that rounding passes the error budget, else in
 *              int16 (error <= 2^-16 of the block's largest |x| per value;
 *              madd, int16 x int16) where that passes it, else strict;
 *            Q4_K, Q6_K: x in int8 with a float scale per 256 values (rows
 *              are at least 256 long), maddubs (u8 codes x s8 x), madd by
 *              the sub-block scales, the minimums with exact sums of x;
 *              where that rounding fails the budget, Q4_K takes x in int8
 *              per 32 values (each sub-block's int32 sum times its own
 *              float scale), Q6_K too (each 32 values' dot of codes and
 *              group scales in int32, then times its float scale), and
 *              what fails that as well the strict path.
 *            An x with a value that is not finite, or a block of x whose
 *            largest |x| is below 1e-30 but not 0, takes the strict path.
 *
 * The error budget of rounded x is cpu-rounding-budget.h's.
 *
 * Each plugin defines, as static functions, its row kernels of the type
 * typed_rows_fn below: the dots of `count` (1..4) rows that start `stride`
 * bytes apart with x, reading x once for all of them (x, 44 KiB in f32 at
 * n = 11008, does not stay in L1: reading it again for every row cost more
 * than the row's weights).
 */
#ifndef RAYO_CPU_TYPED_GEMV_H
#define RAYO_CPU_TYPED_GEMV_H

#include "cpu-base.h"
#include "cpu-f64-fallback.h"
#include "cpu-rounding-budget.h"
#ifndef TYPED_GEMV_STRICT_ONLY
#include "x86-quant.h" /* the integer path is x86's: its x rounded in vectors */
#endif

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>

/* Values the relaxed paths sum in float lanes before double: 2048 (64
 * Q8_0/Q4_0 blocks, 8 K blocks).  Their block sums are exact integers
 * scaled once, so float over 2048 values (at most 64 adds per lane) is far
 * inside the relaxed contract, and the double accumulators of four rows
 * are touched rarely enough to live in memory (they did not fit the 16
 * registers of AVX2 beside the decoding; spilled, they cost every block). */
#define TYPED_GEMV_INT_GROUP 2048

/* Values of x per int8 or int16 block (Q8_0, Q4_0) and per int8 block of
 * Q4_K, Q6_K (the weights' 256-value super-blocks). */
#define TYPED_GEMV_X16_BLOCK 32
#define TYPED_GEMV_X8_BLOCK 256

/* x as the row kernels see it. */
typedef struct typed_gemv_x {
    const float *f;       /* x itself (n) */
    /* relaxed path, Q8_0 and Q4_0 (else NULL), one of: */
    const int8_t *q8_32;    /* round(x / scale8_32) per 32 values (n; Q4_0: in pairs, typed_gemv_pair_x) */
    const float *scale8_32; /* per 32 values: largest |x| / 127 (n / 32) */
    /* Q4_0 with q8_32, per pair of blocks (2p, 2p + 1) in the lanes of
     * x86-quant.h's pair kernels, 0-3 for block 2p and 4-7 for 2p + 1: */
    const int32_t *offset8_64; /* 8 times the sum of the block's q8_32 (n / 8) */
    const float *scale8_64;    /* the block's scale8_32 (n / 8) */
    const int16_t *q16;     /* round(x / scale16) per 32 values (n) */
    const float *scale16;   /* per 32 values: largest |x| / 32767 (n / 32) */
    /* relaxed path, Q4_K and Q6_K (else NULL): */
    const int8_t *q8;     /* round(x / scale8) per 256 values (n) */
    const float *scale8;  /* per 256 values: largest |x| / 127 (n / 256) */
    const int16_t *qsum;  /* per 16 values: the sum of their q8, or of their q8_32 where Q6_K takes
                             x per 32 (n / 16), for Q6_K's -32 */
    const float *sum;     /* per 32 values: the sum of x (n / 32), for Q4_K's minimums */
} typed_gemv_x;

typedef void typed_rows_fn(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x,
                           size_t n, double out[4]);
static typed_rows_fn rows_f16, rows_bf16, rows_q8_0, rows_q4_0, rows_q4_k, rows_q6_k;
/* A plugin without the integer kernels (neon, wasm) defines
 * TYPED_GEMV_STRICT_ONLY before including this file: relaxed calls then
 * take its strict kernels, which this file makes from its dots (below). */
#ifndef TYPED_GEMV_STRICT_ONLY
static typed_rows_fn rows_q8_0_int, rows_q4_0_int, rows_q4_k_int, rows_q6_k_int;
static typed_rows_fn rows_q8_0_i8, rows_q4_0_i8; /* Q8_0, Q4_0 against int8 x */
static typed_rows_fn rows_q4_k_i8_32, rows_q6_k_i8_32; /* Q4_K, Q6_K against int8 x per 32 values */
/* A plugin with other forms of these kernels, for CPUs with more
 * instructions than it was compiled for, defines TYPED_GEMV_ROWS_FOR_CPU
 * as the name of its function that maps the state and the kernel chosen
 * here to the kernel that runs (avx2: AVX-VNNI). */
#ifdef TYPED_GEMV_ROWS_FOR_CPU
static typed_rows_fn *TYPED_GEMV_ROWS_FOR_CPU(const cpu_state *st, typed_rows_fn *rows);
#endif
#endif
/* A plugin may also have, for some row kernels, a form that takes four rows
 * against up to TYPED_GEMV_MANY_X x's at once (a short prompt's products):
 * each block of weights decoded once for all of them, every (row, x) sum
 * made in the same order as the row kernel makes it, so out[j][r] is
 * bit for bit what the row kernel gives for row r and xs[j].  It defines
 * TYPED_GEMV_MANY_FOR as the name of its function that maps a row kernel
 * to that form, or to NULL where there is none. */
#define TYPED_GEMV_MANY_X 4
typedef void typed_rows_many_fn(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], size_t nx,
                                size_t n, double out[][4]);
#ifdef TYPED_GEMV_MANY_FOR
static typed_rows_many_fn *TYPED_GEMV_MANY_FOR(typed_rows_fn *rows);
#endif

/* Defines the row kernel NAME over blocks of BLOCK values and BYTES bytes,
 * GROUP of them summed in float before double, from the plugin's
 * always-inline rows_of_blocks(row, stride, count, x, blocks, bytes,
 * group, block function, out) and its block function BLOCK_FN. */
#define TYPED_ROWS_FN(NAME, BLOCK, BYTES, GROUP, BLOCK_FN)                                            \
    static void NAME(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n, \
                     double out[4])                                                                   \
    {                                                                                                 \
        rows_of_blocks(row, stride, count, x, n / (BLOCK), (BYTES), (GROUP), BLOCK_FN, out);         \
    }

/* Defines the int8 row kernel NAME of Q8_0 or Q4_0 (Q8_0 1 or 0) from the
 * plugin's PAIR_FN, a block function over pairs of blocks (x86-quant.h),
 * and the scalar last block. */
#define TYPED_ROWS_PAIRS(NAME, Q8_0, PAIR_FN)                                                          \
    static void NAME(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n, \
                     double out[4])                                                                   \
    {                                                                                                 \
        size_t bytes = (Q8_0) ? RAYO_Q8_0_BYTES : RAYO_Q4_0_BYTES;                                    \
        rows_of_blocks(row, stride, count, x, n / 64, 2 * bytes, TYPED_GEMV_INT_GROUP / 64, PAIR_FN, out); \
        typed_gemv_odd_block(row, stride, count, x, n, (Q8_0), out);                                  \
    }

/* Defines NAME, a many-x form (typed_rows_many_fn), from the plugin's
 * always-inline NX_FN(row, stride, xs, NX, n, out), NX a constant 1..4. */
#define TYPED_ROWS_MANY(NAME, NX_FN)                                                                    \
    static void NAME(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], size_t nx, size_t n, \
                     double out[][4])                                                                  \
    {                                                                                                  \
        switch (nx) {                                                                                  \
        case 4: NX_FN(row, stride, xs, 4, n, out); break;                                              \
        case 3: NX_FN(row, stride, xs, 3, n, out); break;                                              \
        case 2: NX_FN(row, stride, xs, 2, n, out); break;                                              \
        default: NX_FN(row, stride, xs, 1, n, out);                                                    \
        }                                                                                              \
    }

/* The strict row kernel for A's dtype; NULL where there is none. */
static inline typed_rows_fn *typed_rows_for(rayo_dtype dt)
{
    switch (dt) {
    case RAYO_DTYPE_F16: return rows_f16;
    case RAYO_DTYPE_BF16: return rows_bf16;
    case RAYO_DTYPE_Q8_0: return rows_q8_0;
    case RAYO_DTYPE_Q4_0: return rows_q4_0;
    case RAYO_DTYPE_Q4_K: return rows_q4_k;
    case RAYO_DTYPE_Q6_K: return rows_q6_k;
    default: return NULL;
    }
}

/* The relaxed (integer) row kernel; NULL for the half formats, whose f32
 * path is already as fast as memory. */
static inline typed_rows_fn *typed_rows_int_for(rayo_dtype dt)
{
#ifdef TYPED_GEMV_STRICT_ONLY
    (void)dt;
    return NULL;
#else
    switch (dt) {
    case RAYO_DTYPE_Q8_0: return rows_q8_0_int;
    case RAYO_DTYPE_Q4_0: return rows_q4_0_int;
    case RAYO_DTYPE_Q4_K: return rows_q4_k_int;
    case RAYO_DTYPE_Q6_K: return rows_q6_k_int;
    default: return NULL;
    }
#endif
}

#ifdef TYPED_GEMV_STRICT_ONLY
/* The row kernels of a plugin without the integer path, from its dots of
 * one row with x (all six dtypes) and of four rows, x read once for the
 * four (Q8_0, Q4_0). */
typedef double typed_dot_fn(const uint8_t *row, const float *x, size_t n);
typedef void typed_dot4_fn(const uint8_t *row, size_t stride, const float *x, size_t n, double out[4]);
static typed_dot_fn dot_f16, dot_bf16, dot_q8_0, dot_q4_0, dot_q4_k, dot_q6_k;
static typed_dot4_fn dot4_q8_0, dot4_q4_0;

static inline void typed_rows_by(typed_dot_fn *dot, typed_dot4_fn *dot4, const uint8_t *row, size_t stride,
                                 size_t count, const float *x, size_t n, double out[4])
{
    if (dot4 && count == 4) {
        dot4(row, stride, x, n, out);
        return;
    }
    for (size_t r = 0; r < count; r++)
        out[r] = dot(row + r * stride, x, n);
}

#define TYPED_ROWS_BY(NAME, DOT, DOT4)                                                               \
    static void NAME(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x, size_t n, \
                     double out[4])                                                                  \
    {                                                                                                \
        typed_rows_by(DOT, DOT4, row, stride, count, x->f, n, out);                                  \
    }
TYPED_ROWS_BY(rows_q8_0, dot_q8_0, dot4_q8_0)
TYPED_ROWS_BY(rows_q4_0, dot_q4_0, dot4_q4_0)
TYPED_ROWS_BY(rows_q4_k, dot_q4_k, NULL)
TYPED_ROWS_BY(rows_q6_k, dot_q6_k, NULL)
TYPED_ROWS_BY(rows_f16, dot_f16, NULL)
TYPED_ROWS_BY(rows_bf16, dot_bf16, NULL)
#endif

/* sum of w[i] x[i] over i in [begin, n), w f16 or bf16, one by one in
 * double: the end of a half row that no whole vector covers. */
static inline double typed_gemv_half_tail(const uint8_t *w, const float *x, size_t begin, size_t n,
                                          int is_f16)
{
    double sum = 0.0;
    for (size_t i = begin; i < n; i++) {
        uint16_t h = rayo__le16(w + 2 * i);
        sum += (double)(is_f16 ? rayo_f16_to_f32(h) : rayo_bf16_to_f32(h)) * (double)x[i];
    }
    return sum;
}

/* Bytes from one row of A to the next (lda elements, else n). */
static inline size_t typed_gemv_row_bytes(const rayo_call *c)
{
    size_t bytes = 0;
    rayo_dtype_row_bytes(RAYO_DTYPE_OF(c->dtypes, 0), c->lda ? c->lda : c->n, &bytes); /* validated by the core */
    return bytes;
}

/* Whether these kernels take the call: no flags (A not transposed), no
 * strides but lda, and a dtype of A with a row kernel. */
static inline int typed_gemv_takes(const rayo_call *c)
{
    return !c->flags && !(c->ldb | c->ldc | c->ldy) && typed_rows_for(RAYO_DTYPE_OF(c->dtypes, 0));
}

/* ---- x for the relaxed path ------------------------------------------------ */

/* The largest |x| and the sum of x over len values; 0 when one is not
 * finite, or when the largest is in (0, 1e-30) (its reciprocal scale would
 * overflow). */
static inline int typed_gemv_x_stats(const float *x, size_t len, float *amax, double *sum)
{
    float max = 0.0f;
    double s = 0.0;
    for (size_t i = 0; i < len; i++) {
        float a = fabsf(x[i]);
        if (!(a <= FLT_MAX))
            return 0;
        max = a > max ? a : max;
        s += x[i];
    }
    *amax = max, *sum = s;
    return !(max != 0.0f && max < 1e-30f);
}

/* round(x / (amax / limit)) half away from 0, |result| <= limit. */
static inline int typed_gemv_round(float x, float inv)
{
    float v = x * inv;
    return (int)(v >= 0.0f ? v + 0.5f : v - 0.5f);
}

/* len values of x into q (int8 or else int16) at the scale amax / limit
 * (127 or 32767), their errors into err. */
static inline void typed_gemv_round_to(const float *x, size_t len, float amax, int8_t *q8, int16_t *q16,
                                       rounding_error *err)
{
    float limit = q8 ? 127.0f : 32767.0f, inv = amax != 0.0f ? limit / amax : 0.0f;
    double step = (double)amax / limit, sq = 0.0, abs = 0.0, sq_x = 0.0;
    for (size_t i = 0; i < len; i++) {
        int v = typed_gemv_round(x[i], inv);
        double e = (double)x[i] - v * step;
        if (q8)
            q8[i] = (int8_t)v;
        else
            q16[i] = (int16_t)v;
        sq += e * e, abs += fabs((double)x[i]), sq_x += (double)x[i] * x[i];
    }
    err->sq += sq, err->abs += abs, err->sq_x += sq_x;
    err->max = (double)amax > err->max ? (double)amax : err->max;
}

/* x (n, a multiple of 32) in blocks of 32 into q8 (int8) or else q16, and
 * their scales, the errors into err; 0 when a block cannot be represented
 * (typed_gemv_x_stats). */
static inline int typed_gemv_round_x32(const float *x, size_t n, int8_t *q8, int16_t *q16, float *scale,
                                       rounding_error *err)
{
#ifndef TYPED_GEMV_STRICT_ONLY
    if (q8)
        return x86_round_x32_i8(x, n, q8, scale, err);
#endif
    for (size_t b = 0; b < n / TYPED_GEMV_X16_BLOCK; b++) {
        const float *xb = x + b * TYPED_GEMV_X16_BLOCK;
        size_t at = b * TYPED_GEMV_X16_BLOCK;
        float amax;
        double unused;
        if (!typed_gemv_x_stats(xb, TYPED_GEMV_X16_BLOCK, &amax, &unused))
            return 0;
        typed_gemv_round_to(xb, TYPED_GEMV_X16_BLOCK, amax, q8 ? q8 + at : NULL, q16 ? q16 + at : NULL, err);
        scale[b] = amax / (q8 ? 127.0f : 32767.0f);
    }
    return 1;
}

/* The sums of q's values per 16 (n / 16 of them) into qsum. */
static inline void typed_gemv_group_sums(const int8_t *q, size_t n, int16_t *qsum)
{
    for (size_t g = 0; g < n / 16; g++) {
        int group_sum = 0;
        for (size_t i = 16 * g; i < 16 * g + 16; i++)
            group_sum += q[i];
        qsum[g] = (int16_t)group_sum;
    }
}

#ifndef TYPED_GEMV_STRICT_ONLY
/* x (n, a multiple of 256) into q8, scale8, qsum and sum; 0 when a block
 * cannot be represented or the rounding fails the error budget. */
static inline int typed_gemv_round_x8(const float *x, size_t n, int8_t *q, float *scale, int16_t *qsum,
                                      float *sum)
{
    rounding_error err = { 0.0, 0.0, 0.0, 0.0 };
    if (!x86_round_x256_i8(x, n, q, scale, sum, &err))
        return 0;
    typed_gemv_group_sums(q, n, qsum);
    return rounding_within_budget(&err);
}
#endif

/* Floats of scratch the relaxed x of length n needs (room for any form). */
static inline size_t typed_gemv_scratch(size_t n)
{
    return n / 2 + n / 4 + n / 8 + n / 16;
}

/* Q4_0's per-pair lanes of x (typed_gemv_x's offset8_64 and scale8_64)
 * from q (in order) and its scales: each block's -8 offset computed once
 * per call here instead of once per pair of blocks in the row kernels. */
static inline void typed_gemv_pair_lanes(const int8_t *q, const float *scale, size_t n, int32_t *offset,
                                         float *sx)
{
    for (size_t b = 0; b < n / 64 * 2; b++) {
        int32_t sum = 0;
        for (size_t i = 32 * b; i < 32 * b + 32; i++)
            sum += q[i];
        size_t lanes = 8 * (b / 2) + 4 * (b % 2);
        for (size_t i = lanes; i < lanes + 4; i++)
            offset[i] = 8 * sum, sx[i] = scale[b];
    }
}

/* Q4_0's int8 x goes in pairs of blocks, each pair's values in the order
 * of the nibbles of its two blocks: [2b: 0-15][2b+1: 0-15][2b: 16-31]
 * [2b+1: 16-31] (x86-quant.h); a last block without a pair stays in order. */
static inline void typed_gemv_pair_x(int8_t *q, size_t n)
{
    for (size_t p = 0; p < n / 64; p++) {
        int8_t *pair = q + 64 * p, tmp[64];
        for (int half = 0; half < 2; half++)
            for (int blk = 0; blk < 2; blk++)
                memcpy(tmp + 32 * half + 16 * blk, pair + 32 * blk + 16 * half, 16);
        memcpy(pair, tmp, 64);
    }
}

/* The Q8_0 or Q4_0 rows' last block against int8 x when n / 32 is odd
 * (the kernels go two blocks at a time), added to out. */
static inline void typed_gemv_odd_block(const uint8_t *row, size_t stride, size_t count, const typed_gemv_x *x,
                                        size_t n, int q8_0, double out[4])
{
    size_t b = n / 32 - 1, bytes = q8_0 ? RAYO_Q8_0_BYTES : RAYO_Q4_0_BYTES;
    if (n / 32 % 2 == 0)
        return;
    const int8_t *xq = x->q8_32 + 32 * b;
    for (size_t r = 0; r < count; r++) {
        const uint8_t *blk = row + r * stride + b * bytes;
        int sum = 0;
        for (int j = 0; j < 16; j++)
            sum += q8_0 ? (int8_t)blk[2 + j] * xq[j] + (int8_t)blk[18 + j] * xq[j + 16]
                        : ((blk[2 + j] & 15) - 8) * xq[j] + ((blk[2 + j] >> 4) - 8) * xq[j + 16];
        out[r] += (double)(rayo_f16_to_f32(rayo__le16(blk)) * x->scale8_32[b]) * sum;
    }
}

#ifndef TYPED_GEMV_STRICT_ONLY
/* The many-x form of a plugin's four-row Q4_0 kernel against int8 x
 * (x86_q4_0_rows4_pair_i8_nx; the row kernel's lanes 4h + r), one body for
 * the plugins: float lanes over groups of pairs, each group's added into
 * double by widen exactly as the row kernel adds it, then the odd block.
 * prefetch: the plugin's distance (x86_rows_ahead). */
typedef __m256d typed_widen_fn(__m256d sums, __m256 acc);

static inline __attribute__((always_inline)) void
typed_q4_0_rows4_i8_nx(const uint8_t *row, size_t stride, const typed_gemv_x *const xs[], int NX, size_t n,
                       size_t prefetch, typed_widen_fn *widen, double out[][4])
{
    const char *ahead = x86_rows_ahead(row, stride, 4, prefetch);
    const size_t group = TYPED_GEMV_INT_GROUP / 64, pairs = n / 64;
    __m256d sums[TYPED_GEMV_MANY_X];
    _Pragma("GCC unroll 4") for (int j = 0; j < NX; j++) sums[j] = _mm256_setzero_pd();
    for (size_t p = 0; p < pairs;) {
        size_t end = p + group < pairs ? p + group : pairs;
        __m256 acc[TYPED_GEMV_MANY_X];
        _Pragma("GCC unroll 4") for (int j = 0; j < NX; j++) acc[j] = _mm256_setzero_ps();
        for (; p < end; p++) {
            x86_prefetch_run(ahead + 8 * RAYO_Q4_0_BYTES * p, 8 * RAYO_Q4_0_BYTES);
            const int8_t *xq[TYPED_GEMV_MANY_X];
            const int32_t *offset[TYPED_GEMV_MANY_X];
            const float *sx[TYPED_GEMV_MANY_X];
            _Pragma("GCC unroll 4") for (int j = 0; j < NX; j++)
            {
                xq[j] = xs[j]->q8_32 + 64 * p, offset[j] = xs[j]->offset8_64 + 8 * p;
                sx[j] = xs[j]->scale8_64 + 8 * p;
            }
            x86_q4_0_rows4_pair_i8_nx(row + 2 * RAYO_Q4_0_BYTES * p, stride, xq, offset, sx, NX, acc);
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NX; j++) sums[j] = widen(sums[j], acc[j]);
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NX; j++)
    {
        _mm256_storeu_pd(out[j], sums[j]);
        typed_gemv_odd_block(row, stride, 4, xs[j], n, 0, out[j]);
    }
}

/* Q8_0 and Q4_0: x in int8 where it passes the budget, else in int16
 * where that does; the row kernel for it, NULL when neither does or x
 * cannot be rounded. */
static inline typed_rows_fn *typed_gemv_small_blocks_x(typed_gemv_x *x, rayo_dtype dt, size_t n, float *scratch)
{
    int q8_0 = dt == RAYO_DTYPE_Q8_0;
    int8_t *q8 = (int8_t *)(void *)scratch; /* n / 4 floats */
    float *scale8 = scratch + n / 4;          /* n / 32 */
    rounding_error err = { 0.0, 0.0, 0.0, 0.0 };
    if (!typed_gemv_round_x32(x->f, n, q8, NULL, scale8, &err))
        return NULL;
    if (rounding_within_budget(&err)) {
        x->q8_32 = q8, x->scale8_32 = scale8;
        if (q8_0)
            return rows_q8_0_i8;
        int32_t *offset = (int32_t *)(void *)(scale8 + n / 32); /* n / 8 */
        float *sx = scale8 + n / 32 + n / 8;                     /* n / 8 */
        typed_gemv_pair_lanes(q8, scale8, n, offset, sx);
        x->offset8_64 = offset, x->scale8_64 = sx;
        typed_gemv_pair_x(q8, n);
        return rows_q4_0_i8;
    }
    int16_t *q16 = (int16_t *)(void *)scratch; /* n / 2 floats */
    float *scale16 = scratch + n / 2;          /* n / 32 */
    err = (rounding_error){ 0.0, 0.0, 0.0, 0.0 };
    typed_gemv_round_x32(x->f, n, NULL, q16, scale16, &err);
    if (!rounding_within_budget(&err))
        return NULL;
    x->q16 = q16, x->scale16 = scale16;
    return q8_0 ? rows_q8_0_int : rows_q4_0_int;
}

/* Q4_K and Q6_K where x's scale per 256 fails the budget (a few values
 * far larger than the rest: outlier features): x in int8 per 32 values,
 * with the sums of x per 32 for Q4_K's minimums, the sums of the int8
 * values per 16 for Q6_K's -32; the row kernel, NULL where that fails too. */
static inline typed_rows_fn *typed_gemv_k_x32(typed_gemv_x *x, rayo_dtype dt, size_t n, float *scratch)
{
    int8_t *q = (int8_t *)(void *)scratch;                /* n / 4 floats */
    float *scale = scratch + n / 4, *sum = scale + n / 32; /* n / 32, n / 32 */
    int16_t *qsum = (int16_t *)(void *)(sum + n / 32);     /* n / 32 */
    rounding_error err = { 0.0, 0.0, 0.0, 0.0 };
    if (!typed_gemv_round_x32(x->f, n, q, NULL, scale, &err) || !rounding_within_budget(&err))
        return NULL;
    x->q8_32 = q, x->scale8_32 = scale;
    if (dt == RAYO_DTYPE_Q6_K) {
        typed_gemv_group_sums(q, n, qsum);
        x->qsum = qsum;
        return rows_q6_k_i8_32;
    }
    for (size_t b = 0; b < n / 32; b++)
        sum[b] = (float)x86_sum32_pd(x->f + 32 * b);
    x->sum = sum;
    return rows_q4_k_i8_32;
}

/* Fills x's relaxed fields for A's dtype from scratch (typed_gemv_scratch
 * floats); the integer row kernel for them, NULL where x cannot be rounded
 * within the contract (the strict path then runs). */
static inline typed_rows_fn *typed_gemv_round_x(typed_gemv_x *x, rayo_dtype dt, size_t n, float *scratch)
{
    if (dt == RAYO_DTYPE_Q8_0 || dt == RAYO_DTYPE_Q4_0)
        return typed_gemv_small_blocks_x(x, dt, n, scratch);
    int8_t *q = (int8_t *)(void *)scratch;                 /* n / 4 floats */
    float *scale = scratch + n / 4, *sum = scale + n / 256; /* n / 256, n / 32 */
    int16_t *qsum = (int16_t *)(void *)(sum + n / 32);      /* n / 32 */
    x->q8 = q, x->scale8 = scale, x->qsum = qsum, x->sum = sum;
    if (typed_gemv_round_x8(x->f, n, q, scale, qsum, sum))
        return typed_rows_int_for(dt);
    return typed_gemv_k_x32(x, dt, n, scratch);
}
#endif

/* ---- the driver -------------------------------------------------------------- */

/* Runs of rows over the threads (typed_gemv_split): at most this many. */
#define TYPED_GEMV_MAX_RUNS 16

/* One thread's run of steps; `taken` counts the steps handed out from its
 * start, to its owner or to a thread whose own run is done.  A cache line
 * each: the owner's counter is not shared with another owner's. */
typedef struct typed_gemv_rows_run {
    _Alignas(64) atomic_size_t taken;
} typed_gemv_rows_run;

/* The most x's of one typed_gemv_run_many. */
#define TYPED_GEMV_MAX_X 16

typedef struct typed_gemv_job {
    const rayo_call *call;
    size_t count;                         /* x's: call->b, then every ldx floats (1 for a plain gemv) */
    typed_rows_fn *rows[TYPED_GEMV_MAX_X]; /* each x's row kernel: relaxed where its x rounds, else strict */
    typed_rows_many_fn *many;             /* where every x has the same row kernel and it has a many-x form */
    typed_gemv_x x[TYPED_GEMV_MAX_X];
    float *y[TYPED_GEMV_MAX_X];           /* each x's y: call->y, then every ldy floats */
    size_t stride;
    size_t step_rows, steps, n_runs; /* rows per step (a multiple of 4), steps in all, runs */
    typed_gemv_rows_run run[TYPED_GEMV_MAX_RUNS];
} typed_gemv_job;

static inline void typed_gemv_store(const rayo_call *c, float *y, size_t i, double dot)
{
    double v = (double)c->alpha * dot;
    y[i] = (float)(c->beta == 0.0f ? v : v + (double)c->beta * y[i]);
}

/* Stores x j's sums of rows i .. i + count - 1; a sum that is not finite
 * is redone in double (cpu-f64-fallback.h). */
static inline void typed_gemv_store_sums(const typed_gemv_job *job, size_t j, size_t i, size_t count,
                                         double sums[4])
{
    const rayo_call *c = job->call;
    const uint8_t *a = (const uint8_t *)c->a;
    for (size_t r = 0; r < count; r++) {
        if (!isfinite(sums[r]))
            sums[r] = cpu_typed_dot_f64(RAYO_DTYPE_OF(c->dtypes, 0), a + (i + r) * job->stride, job->x[j].f, c->n);
        typed_gemv_store(c, job->y[j], i + r, sums[r]);
    }
}

/* Rows i .. i + 3 against every x by the many-x form, TYPED_GEMV_MANY_X x's a call. */
static inline void typed_gemv_rows4_many(const typed_gemv_job *job, size_t i)
{
    const uint8_t *row = (const uint8_t *)job->call->a + i * job->stride;
    for (size_t j0 = 0; j0 < job->count; j0 += TYPED_GEMV_MANY_X) {
        size_t nx = job->count - j0 < TYPED_GEMV_MANY_X ? job->count - j0 : TYPED_GEMV_MANY_X;
        const typed_gemv_x *xs[TYPED_GEMV_MANY_X];
        double sums[TYPED_GEMV_MANY_X][4];
        for (size_t j = 0; j < nx; j++)
            xs[j] = &job->x[j0 + j];
        job->many(row, job->stride, xs, nx, job->call->n, sums);
        for (size_t j = 0; j < nx; j++)
            typed_gemv_store_sums(job, j0 + j, i, 4, sums[j]);
    }
}

/* y[begin..end) = alpha (A x)[i] + beta y[i] for each x; beta == 0 never
 * reads y.  Four rows at a time, every x against them before the next
 * four: their weights come from memory once and from L1 for the other x's
 * (and are decoded once for several x's where the many-x form runs). */
static inline void typed_gemv_rows(const typed_gemv_job *job, size_t begin, size_t end)
{
    const uint8_t *a = (const uint8_t *)job->call->a;
    for (size_t i = begin; i < end; i += 4) {
        size_t count = end - i < 4 ? end - i : 4;
        if (count == 4 && job->many) {
            typed_gemv_rows4_many(job, i);
            continue;
        }
        for (size_t j = 0; j < job->count; j++) {
            double sums[4];
            job->rows[j](a + i * job->stride, job->stride, count, &job->x[j], job->call->n, sums);
            typed_gemv_store_sums(job, j, i, count, sums);
        }
    }
}

/* Takes the next step of run r; false when the run has none left. */
static inline bool typed_gemv_take_step(typed_gemv_job *job, size_t r)
{
    size_t first = r * job->steps / job->n_runs, end = (r + 1) * job->steps / job->n_runs;
    size_t step = first + atomic_fetch_add_explicit(&job->run[r].taken, 1, memory_order_relaxed);
    if (step >= end)
        return false;
    size_t begin = step * job->step_rows, stop = begin + job->step_rows;
    typed_gemv_rows(job, begin, stop < job->call->m ? stop : job->call->m);
    return true;
}

/* Task r: run r, then what is left of the others. */
static void typed_gemv_task(void *arg, size_t task, unsigned worker)
{
    typed_gemv_job *job = arg;
    (void)worker;
    for (size_t i = 0; i < job->n_runs; i++)
        while (typed_gemv_take_step(job, (task + i) % job->n_runs))
            ;
}

/* Rows below which the whole gemv runs on the calling thread: about 64 KiB
 * of weights (waking the pool costs more than streaming that much). */
#define TYPED_GEMV_PARALLEL_MIN_BYTES ((size_t)1 << 16)

/* Weight bytes per step: a few rows, in multiples of four (a step costs
 * an atomic add and a call: under 1% of streaming 32 KiB). */
#define TYPED_GEMV_STEP_BYTES ((size_t)32 << 10)

/* The rows over the threads: one run of rows per thread, which its owner
 * takes a step at a time from the front; a thread whose run is done takes
 * steps from the others' runs.  Each thread streams its own run in order
 * (the kernels prefetch ahead within it), and a thread slowed or
 * descheduled by other work holds the rest up by one step, not by a share
 * of the rows (the rows dealt in eight chunks left one of two threads
 * idle for half a chunk on average, a sixteenth of the gemv, at the end). */
static inline void typed_gemv_split(const cpu_state *st, typed_gemv_job *job)
{
    size_t m = job->call->m;
    size_t threads = m * job->stride >= TYPED_GEMV_PARALLEL_MIN_BYTES ? cpu_threads(st) : 1;
    size_t quads = TYPED_GEMV_STEP_BYTES / (4 * job->stride);
    job->step_rows = 4 * (quads ? quads : 1);
    job->steps = (m + job->step_rows - 1) / job->step_rows;
    job->n_runs = threads < job->steps ? threads : job->steps;
    if (job->n_runs > TYPED_GEMV_MAX_RUNS)
        job->n_runs = TYPED_GEMV_MAX_RUNS;
    for (size_t r = 0; r < job->n_runs; r++)
        atomic_init(&job->run[r].taken, 0);
    cpu_parallel(st, job->n_runs, typed_gemv_task, job);
}

/* The gemv kernels of both plugins: the relaxed path where the call allows
 * it and x can be rounded (and its few KiB of scratch are there), else the
 * strict one.  typed_gemv_run_many multiplies the same A into `count` x's
 * (1..TYPED_GEMV_MAX_X: call->b + j ldx into call->y + j ldy, the other
 * fields the call's), each x taking the path it would take alone, so that
 * each result is the plain gemv's bit for bit. */
static inline rayo_status typed_gemv_run_many(const cpu_state *st, const rayo_call *call, size_t count, size_t ldx,
                                              size_t ldy)
{
    if (!typed_gemv_takes(call) || count == 0 || count > TYPED_GEMV_MAX_X)
        return RAYO_E_UNSUPPORTED;
    if (call->m == 0)
        return RAYO_OK;
    rayo_dtype dt = RAYO_DTYPE_OF(call->dtypes, 0);
    typed_gemv_job job = { .call = call, .count = count, .stride = typed_gemv_row_bytes(call) };
    for (size_t j = 0; j < count; j++) {
        job.rows[j] = typed_rows_for(dt);
        job.x[j] = (typed_gemv_x){ .f = (const float *)call->b + j * ldx };
        job.y[j] = (float *)call->y + j * ldy;
    }
    float *scratch = NULL;
    if (call->precision == RAYO_PRECISION_RELAXED && typed_rows_int_for(dt))
        scratch = cpu_alloc_floats(st, count * typed_gemv_scratch(call->n));
#ifndef TYPED_GEMV_STRICT_ONLY
    for (size_t j = 0; scratch && j < count; j++) {
        typed_rows_fn *int_rows = typed_gemv_round_x(&job.x[j], dt, call->n, scratch + j * typed_gemv_scratch(call->n));
#ifdef TYPED_GEMV_ROWS_FOR_CPU
        if (int_rows)
            int_rows = TYPED_GEMV_ROWS_FOR_CPU(st, int_rows);
#endif
        if (int_rows)
            job.rows[j] = int_rows;
    }
#endif
#ifdef TYPED_GEMV_MANY_FOR
    size_t same = 1;
    while (same < count && job.rows[same] == job.rows[0])
        same++;
    if (count > 1 && same == count)
        job.many = TYPED_GEMV_MANY_FOR(job.rows[0]);
#endif
    typed_gemv_split(st, &job);
    cpu_free(st, scratch);
    return RAYO_OK;
}

/* Whether relaxed gemvs of dt into several ordinary x's (those that round
 * to int8) decode each block once for several of them. */
static inline bool typed_gemv_has_many(const cpu_state *st, rayo_dtype dt)
{
#if defined(TYPED_GEMV_MANY_FOR) && !defined(TYPED_GEMV_STRICT_ONLY)
    typed_rows_fn *rows = dt == RAYO_DTYPE_Q8_0 ? rows_q8_0_i8 : dt == RAYO_DTYPE_Q4_0 ? rows_q4_0_i8
                                                                                      : typed_rows_int_for(dt);
#ifdef TYPED_GEMV_ROWS_FOR_CPU
    rows = rows ? TYPED_GEMV_ROWS_FOR_CPU(st, rows) : NULL;
#else
    (void)st;
#endif
    return rows && TYPED_GEMV_MANY_FOR(rows);
#else
    (void)st, (void)dt;
    return false;
#endif
}

static inline rayo_status typed_gemv_run(const cpu_state *st, const rayo_call *call)
{
    return typed_gemv_run_many(st, call, 1, 0, 0);
}

#endif
