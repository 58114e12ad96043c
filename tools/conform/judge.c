/* SPDX-License-Identifier: MIT */
/* judge.c - the accuracy contract applied to one output element, and the
 * judging of outputs computed elsewhere (device backends' tests). */
#define _POSIX_C_SOURCE 200809L
#include "conform-internal.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

double conform_judge(const rayo_op_info *op, double ref, double terms, float y, int *pass)
{
    int exact = op->tol_rel == 0 && op->tol_abs == 0;
    if (isnan(ref) || isnan(y)) {
        *pass = isnan(ref) && isnan(y);
        return *pass ? 0 : INFINITY;
    }
    double scale = op->scale == RAYO_SCALE_SUM ? terms : fabs(ref);
    double allowed = op->tol_rel * scale + op->tol_abs;
    double err = fabs((double)y - ref);
    if (y == (float)ref) {
        /* The reference rounded to float: nothing can do better.  Its error
         * exceeds the contract only where the reference is out of the range
         * of normal floats (overflow, underflow): not counted there. */
        *pass = 1;
        if (exact || isinf(ref) || !(allowed > 0) || err > allowed)
            return 0;
        return err / allowed;
    }
    if (exact || isinf(ref) || isinf(y) || !(allowed > 0)) {
        *pass = 0;
        return INFINITY;
    }
    double units = err / allowed;
    *pass = units <= 1.0;
    return units;
}

/* ---- judging outputs computed elsewhere -------------------------------------- */
static int judge_index(const rayo_call *c, double ref, const void *out, char *msg, size_t size)
{
    size_t got;
    memcpy(&got, out, sizeof got);
    if ((double)got == ref)
        return 0;
    snprintf(msg, size, "index %zu, the float64 reference says %.0f (x[%zu] = %.9g)", got, ref, (size_t)ref,
             (double)((const float *)c->a)[(size_t)ref]);
    return 1;
}

static int judge_floats(const rayo_op_info *op, const double *ref, const double *terms, const float *y,
                        size_t count, char *msg, size_t size)
{
    size_t bad = 0, worst = 0;
    double worst_units = -1;
    for (size_t i = 0; i < count; i++) {
        int pass;
        double units = conform_judge(op, ref[i], terms[i], y[i], &pass);
        if (!pass && units > worst_units)
            worst_units = units, worst = i;
        bad += !pass;
    }
    if (!bad)
        return 0;
    snprintf(msg, size, "%zu of %zu elements out of contract; worst y[%zu] = %.9g, float64 reference %.9g "
             "(%.3g times the allowed error)", bad, count, worst, (double)y[worst], ref[worst], worst_units);
    return 1;
}

int conform_check_outputs(const rayo_op_info *contract, const rayo_call *call, const void *out,
                          char *msg, size_t size)
{
    const rayo_op_info *op = contract ? contract : rayo_op_by_id(call->op);
    size_t count = conform_output_count(call);
    double *ref = malloc((count + 1) * sizeof *ref), *terms = malloc((count + 1) * sizeof *terms);
    int rc = -1;
    snprintf(msg, size, "op %u: no float64 reference (or no memory for it)", (unsigned)call->op);
    if (op && ref && terms && conform_reference(call, ref, terms) == 0) {
        if (size)
            msg[0] = 0;
        if (op->sig == RAYO_SIG_ARGREDUCE)
            rc = count ? judge_index(call, ref[0], out, msg, size) : 0;
        else
            rc = judge_floats(op, ref, terms, out, count, msg, size);
    }
    free(ref);
    free(terms);
    return rc;
}
