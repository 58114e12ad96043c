/* SPDX-License-Identifier: MIT */
/* cpu-rounding-budget.h - whether activations rounded to integers keep a
 * relaxed dot product within its contract: the budget the x86 relaxed gemv
 * (cpu-typed-gemv_tmpl.c) and the integer prompt matmul (x86-qmatmul.c)
 * check on each row of activations before taking the integer path.
 *
 * For weights w unrelated to x's rounding errors e, the error of a dot,
 * sum w e, has a standard deviation of about rms(w) sqrt(sum e^2), while its
 * terms sum to about mean|w| sum |x|; rms(w) / mean|w| is 1.2-1.3 for the
 * block formats' codes and for gaussian weights.  Five standard deviations
 * within the relaxed contract (2e-3 of sum |terms|) asks
 * sqrt(sum e^2) <= 2e-3 / (5 * 1.25) sum |x|.
 *
 * That estimate of the terms fails where a few values of x carry its sum:
 * x spanning many decades, or a short row.  A weight is 0 often enough
 * (a Q4_0 code is 8 once in 16) that the largest values may all meet
 * zeros, leaving only the small values' terms against errors the large
 * values' scale made: random weights gave 17 times the contract on 32
 * values spanning 1e-8..1e8.  So the sum is taken less what the 8 largest
 * |x| can hold, at most sqrt(8 sum x^2) (Cauchy-Schwarz; no sort needed):
 * a row whose sum rests on a few values takes the exact path.  Long rows
 * of ordinary values lose a few percent of the budget (n = 4096 uniform:
 * 5%) and still pass.  This stays a statistical bound: weights built to
 * match x's rounding errors can exceed it (rayo-ops.h says so).
 */
#ifndef RAYO_CPU_ROUNDING_BUDGET_H
#define RAYO_CPU_ROUNDING_BUDGET_H

#include <math.h>

/* sqrt(sum e^2) / what sum |x| is counted as, allowed for integer x. */
#define ROUNDING_BUDGET (2e-3 / (5 * 1.25))

/* How many of the largest |x| are assumed to meet zero weights. */
#define ROUNDING_DOMINANT 8

/* What a row's rounding adds up to: sum e^2, and of x: sum |x|, sum x^2
 * and the largest |x|. */
typedef struct rounding_error {
    double sq, abs, sq_x, max;
} rounding_error;

/* Whether the rounding summed in err is within the budget. */
static inline int rounding_within_budget(const rounding_error *err)
{
    double dominant = sqrt(ROUNDING_DOMINANT * err->sq_x);
    if (dominant < err->max)
        dominant = err->max;
    return sqrt(err->sq) <= ROUNDING_BUDGET * (err->abs - dominant);
}

#endif
