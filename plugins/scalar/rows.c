/* SPDX-License-Identifier: MIT */
/* rows.c - softmax, log_softmax, layernorm, rmsnorm: m independent rows of n.
 *
 * Row statistics (sums, mean, variance) are accumulated in double and the
 * final per-element expression is evaluated in double and rounded once:
 * with |mean| >> stddev, a float mean alone would cost more than the 4e-6
 * contract.  Rows run in parallel when there are enough of them.  y may be
 * x (in place): every row reads x completely before the first write that
 * could clobber an element it still needs.
 */
#include "plugin.h"
#include "scalar-math.h"

#include <math.h>

#define COST_EXP 16 /* per element, in cheap operations */
#define COST_NORM 4

/* sum of x in double: the mean of a row must be accurate relative to its
 * spread, not only to sum|x| (think 1000 + 1e-3 noise). */
static double row_sum_f64(const float *x, size_t n)
{
    double acc[4] = { 0 };
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (size_t l = 0; l < 4; l++)
            acc[l] += x[j + l];
    double s = 0.0;
    for (; j < n; j++)
        s += x[j];
    return s + (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* sum over j of e^(x[j] - mx), without storing the terms. */
static double sum_exp_shifted(const float *x, size_t n, float mx)
{
    double acc[4] = { 0 };
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (size_t l = 0; l < 4; l++)
            acc[l] += exp_f(x[j + l] - mx);
    double s = 0.0;
    for (; j < n; j++)
        s += exp_f(x[j] - mx);
    return s + (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* Max-subtracted: e^(x - max) <= 1, no overflow; a NaN in the row makes the
 * max NaN and so the whole row NaN, as in the reference. */
static void softmax_row(const float *x, float *y, size_t n)
{
    float mx = scalar_max_f32(x, n);
    SCALAR_MAP(y, 0, n, j, exp_f(x[j] - mx));
    double inv = 1.0 / row_sum_f64(y, n);
    SCALAR_MAP(y, 0, n, j, (float)(y[j] * inv));
}

/* (x - max) - log(sum), in that order: max + log(sum) as one shift would
 * lose log(sum) against a large max (a constant row of 1e30). */
static void log_softmax_row(const float *x, float *y, size_t n)
{
    float mx = scalar_max_f32(x, n);
    double log_sum = log(sum_exp_shifted(x, n, mx));
    SCALAR_MAP(y, 0, n, j, (float)(((double)x[j] - mx) - log_sum));
}

/* y = (x - mean) * rstd * gamma + beta; gamma and beta may be NULL. */
#define NORMALISED(j) (((double)x[j] - center) * rstd)
#define NORM_LOOP(expr) SCALAR_MAP(y, 0, n, j, (float)(expr))

static void normalize_row(const float *x, const float *gamma, const float *beta, float *y,
                      size_t n, double center, double rstd)
{
    if (gamma && beta)
        NORM_LOOP(NORMALISED(j) * gamma[j] + beta[j]);
    else if (gamma)
        NORM_LOOP(NORMALISED(j) * gamma[j]);
    else if (beta)
        NORM_LOOP(NORMALISED(j) + beta[j]);
    else
        NORM_LOOP(NORMALISED(j));
}

/* Two-pass variance: the second pass sums squares of centred values, so
 * there is no cancellation of E[x^2] - E[x]^2. */
/* Two-pass variance: the second pass sums squares of centred values, so
 * there is no cancellation of E[x^2] - E[x]^2. */
static double row_centered_squares_f64(const float *x, size_t n, double mean)
{
    double acc[4] = { 0 };
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (size_t l = 0; l < 4; l++) {
            double d = (double)x[j + l] - mean;
            acc[l] += d * d;
        }
    double ss = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (; j < n; j++)
        ss += ((double)x[j] - mean) * ((double)x[j] - mean);
    return ss;
}

/* ---- kernels: the row functions above over the call's m rows ---------------- */
#define ROWS_EXP_COST COST_EXP
#define ROWS_NORM_COST COST_NORM
#include "cpu-rows_tmpl.c"
