/* SPDX-License-Identifier: MIT */
/* cpu-f64-fallback.h - float64 where float intermediates would break a contract,
 * shared by every CPU plugin.
 *
 * 1. The range contract of the products (rayo-ops.h: no intermediate
 * overflow where the float64 result is finite), gemv and matmul:
 *
 * The kernels sum in float lanes for speed.  Products near 1e38 that cancel
 * pass FLT_MAX in those sums although the float64 result is finite; an
 * overflowed float sum never comes back (inf, or NaN from inf - inf), so:
 *   gemv     an output whose sum is not finite is summed again in double
 *            (cpu_dot_f64, cpu_typed_dot_f64): one extra pass over that
 *            row only, nothing for finite sums;
 *   matmul   the tiles write C in place, beta applied, so an overflow cannot
 *            be redone afterwards: a call whose float sums could pass FLT_MAX
 *            (k max|op(A)| max|op(B)| near FLT_MAX, all finite) is computed
 *            by cpu_gemm_f64 instead (double sums; slow, for such data only).
 * Inputs holding inf or NaN give the same non-finite results either way.
 *
 * 2. The gated units y = f(gate) up: with up near 1e30, f(gate) ~ 1e-37
 * (gates of -9 to -88) still makes a normal y, so f must keep its relative
 * precision where a float f is subnormal, flushed or cancelled (1 +
 * tanh(z) for z << 0).  cpu_glu_f64 computes f in double, in forms without
 * that cancellation (erfc, 2 / (1 + exp(-2 z))), and rounds f up once.
 *
 * 3. Attention scores: an error e in a score is a relative error e in its
 * weight, and float scores near 1e3 are ~1e-4 off.  A block of scores
 * whose float values pass CPU_ATTN_EXACT_ABOVE (cpu_scores_large) is
 * computed again in double and kept as float differences from its largest
 * (cpu_scores_relative), that largest in double with the running max.
 */
#ifndef RAYO_CPU_F64_FALLBACK_H
#define RAYO_CPU_F64_FALLBACK_H

#include "rayo-dtype.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* sum of a[i * as] b[i * bs] over i < n, in double (products of floats are
 * exact there). */
static inline double cpu_dot_f64(const float *a, size_t as, const float *b, size_t bs, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i * as] * (double)b[i * bs];
    return s;
}

/* sum, or where a float partial sum overflowed (sum not finite) the dot of
 * a (stride as) and x (dense) again in double. */
static inline double cpu_dot_redo(double sum, const float *a, size_t as, const float *x, size_t n)
{
    return isfinite(sum) ? sum : cpu_dot_f64(a, as, x, 1, n);
}

/* The same for a row of weights of dtype dt (n a multiple of its block). */
static inline double cpu_typed_dot_f64(rayo_dtype dt, const uint8_t *row, const float *x, size_t n)
{
    float w[256]; /* a multiple of every block size */
    double s = 0.0;
    for (size_t at = 0; at < n; at += 256) {
        size_t len = n - at < 256 ? n - at : 256, skip = 0;
        rayo_dtype_row_bytes(dt, at, &skip);
        rayo_dequantize_row(dt, row + skip, w, len);
        s += cpu_dot_f64(w, 1, x + at, 1, len);
    }
    return s;
}

/* The largest of |x|'s bits over x[0], x[stride], ... (n values): it
 * orders NaN above infinity above every finite value and needs no branch.
 * Contiguous values go eight at a time into eight maxima (independent
 * chains, which the compiler may also put in one vector). */
static inline uint32_t cpu_max_abs_bits(const float *x, size_t n, size_t stride)
{
    uint32_t top[8] = { 0 }, bits;
    size_t j = 0;
    if (stride == 1)
        for (; j + 8 <= n; j += 8)
            for (int l = 0; l < 8; l++) {
                memcpy(&bits, x + j + l, sizeof bits);
                bits &= 0x7fffffffu;
                top[l] = bits > top[l] ? bits : top[l];
            }
    for (; j < n; j++) {
        memcpy(&bits, x + j * stride, sizeof bits);
        bits &= 0x7fffffffu;
        top[0] = bits > top[0] ? bits : top[0];
    }
    for (int l = 1; l < 8; l++)
        top[0] = top[l] > top[0] ? top[l] : top[0];
    return top[0];
}

/* max |x(i, j)| over rows x cols, x(i, j) = x[i * rs + j * cs]; NaN where
 * a value is not finite.  Read in memory order, the smaller stride
 * innermost: a transposed operand read the other way touched a new cache
 * line at every value (most of the time of a 64 x 8192 x 2048 matmul with
 * B transposed). */
static inline double cpu_max_abs(const float *x, size_t rows, size_t cols, size_t rs, size_t cs)
{
    if (rs < cs) {
        size_t t = rows;
        rows = cols, cols = t, t = rs, rs = cs, cs = t;
    }
    uint32_t top = 0;
    for (size_t i = 0; i < rows; i++) {
        uint32_t row_top = cpu_max_abs_bits(x + i * rs, cols, cs);
        top = row_top > top ? row_top : top;
    }
    if (top >= 0x7f800000u) /* infinity or NaN */
        return NAN;
    float m;
    memcpy(&m, &top, sizeof m);
    return m;
}

/* Whether float partial sums of op(A) (m x k) op(B) (k x n) could pass
 * FLT_MAX while every input is finite (a bound with room for rounding). */
static inline int cpu_gemm_may_overflow(size_t m, size_t n, size_t k, const float *A, size_t a_rs,
                                        size_t a_cs, const float *B, size_t b_rs, size_t b_cs)
{
    double bound = (double)k * cpu_max_abs(A, m, k, a_rs, a_cs) * cpu_max_abs(B, k, n, b_rs, b_cs);
    return bound >= (double)FLT_MAX / 2; /* false for NaN */
}

/* C (ldc) = alpha op(A) op(B) + beta C with sums in double (C unread when
 * beta == 0). */
static inline void cpu_gemm_f64(size_t m, size_t n, size_t k, float alpha, const float *A, size_t a_rs,
                                size_t a_cs, const float *B, size_t b_rs, size_t b_cs, float beta, float *C,
                                size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double v = (double)alpha * cpu_dot_f64(A + i * a_rs, a_cs, B + j * b_cs, b_rs, k);
            float *c = C + i * ldc + j;
            *c = (float)(beta == 0.0f ? v : v + (double)beta * *c);
        }
}

typedef enum cpu_glu_kind { CPU_GLU_SILU, CPU_GLU_GELU, CPU_GLU_GELU_TANH } cpu_glu_kind;

/* f(gate) up in double, rounded once. */
static inline float cpu_glu_f64(cpu_glu_kind kind, float gate, float up)
{
    double g = gate, f;
    if (kind == CPU_GLU_SILU)
        f = g / (1.0 + exp(-g));
    else if (kind == CPU_GLU_GELU)
        f = 0.5 * g * erfc(-g * 0.70710678118654752440); /* 1 / sqrt(2) */
    else
        f = g / (1.0 + exp(-2.0 * 0.79788456080286535588 /* sqrt(2 / pi) */ * (g + 0.044715 * g * g * g)));
    return (float)(f * (double)up);
}

/* Float scores up to this magnitude stay: their error is below ~2e-6. */
#define CPU_ATTN_EXACT_ABOVE 32.0f

/* Whether a score of s[0..count) passes CPU_ATTN_EXACT_ABOVE in magnitude
 * (NaN scores do not: NaN either way). */
static inline int cpu_scores_large(const float *s, size_t count)
{
    float big = 0.0f;
    for (size_t j = 0; j < count; j++)
        big = fabsf(s[j]) > big ? fabsf(s[j]) : big;
    return big > CPU_ATTN_EXACT_ABOVE;
}

/* s[j] = exact[j] - their largest, rounded to float; returns the largest,
 * or 0 (s as it was) where it is not finite. */
static inline double cpu_scores_relative(const double *exact, size_t count, float *s)
{
    double off = -INFINITY;
    for (size_t j = 0; j < count; j++)
        off = exact[j] > off ? exact[j] : off;
    if (!isfinite(off))
        return 0.0;
    for (size_t j = 0; j < count; j++)
        s[j] = (float)(exact[j] - off);
    return off;
}

#endif
