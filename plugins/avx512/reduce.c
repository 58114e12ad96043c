/* SPDX-License-Identifier: MIT */
/* reduce.c - sum, dot, norm_l1, norm_l2, max, min, argmax of the AVX-512
 * backend: ../cpu-base/x86-reduce_tmpl.c at 16 floats a vector (its comment
 * gives the accuracy and the NaN rules), and the sum of squares in double
 * (norm_l2), 2 x 8 doubles a step with a masked tail.
 */
#include "plugin.h"
#include "avx512-vector.h"

double avx512_sum_squares_f64(const float *x, size_t n)
{
    __m512d acc0 = _mm512_setzero_pd(), acc1 = acc0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d x0 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        __m512d x1 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
        acc0 = _mm512_fmadd_pd(x0, x0, acc0);
        acc1 = _mm512_fmadd_pd(x1, x1, acc1);
    }
    if (i < n) {
        __mmask16 m = z_lanes(n - i);
        __m512d x0 = _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)m, x + i));
        __m512d x1 = _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)(m >> 8), x + i + 8));
        acc0 = _mm512_fmadd_pd(x0, x0, acc0);
        acc1 = _mm512_fmadd_pd(x1, x1, acc1);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
}

#include "x86-reduce_tmpl.c"
