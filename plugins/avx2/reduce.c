/* SPDX-License-Identifier: MIT */
/* reduce.c - sum, dot, norm_l1, norm_l2, max, min, argmax of the AVX2
 * backend: ../cpu-base/x86-reduce_tmpl.c at 8 floats a vector (its comment
 * gives the accuracy and the NaN rules), and the sum of squares in double
 * (norm_l2), 4 x 4 doubles a step.
 */
#include "plugin.h"
#include "avx2-vector.h"

double avx2_sum_squares_f64(const float *x, size_t n)
{
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256d x0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        __m256d x1 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
        __m256d x2 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8));
        __m256d x3 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12));
        acc0 = _mm256_fmadd_pd(x0, x0, acc0);
        acc1 = _mm256_fmadd_pd(x1, x1, acc1);
        acc2 = _mm256_fmadd_pd(x2, x2, acc2);
        acc3 = _mm256_fmadd_pd(x3, x3, acc3);
    }
    double s = v_hsum_pd(_mm256_add_pd(_mm256_add_pd(acc0, acc1), _mm256_add_pd(acc2, acc3)));
    for (; i < n; i++)
        s += (double)x[i] * (double)x[i];
    return s;
}

#include "x86-reduce_tmpl.c"
