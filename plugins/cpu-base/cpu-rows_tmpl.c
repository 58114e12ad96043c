/* SPDX-License-Identifier: MIT */
/* cpu-rows_tmpl.c - the row kernels of a CPU plugin (softmax, log_softmax,
 * layernorm, rmsnorm over m independent rows of n), written once over the
 * plugin's row functions.  A plugin's rows.c defines, as static functions,
 *   softmax_row(x, y, n)   log_softmax_row(x, y, n)   the softmaxes of a row
 *   row_sum_f64(x, n)      sum x[j] in double: the mean must be right
 *                          relative to the row's spread, not only to sum|x|
 *   row_centered_squares_f64(x, n, mean)   sum (x[j] - mean)^2 in double (a
 *                          two-pass variance: no cancellation of E[x^2] - E[x]^2)
 *   normalize_row(x, gamma, beta, y, n, center, rstd)   y = (x - center) *
 *                          rstd * gamma + beta, in double, rounded once;
 *                          gamma, beta may be NULL (1, 0)
 * (CPU_KERNEL(sum_squares_f64), the plugin's, gives rmsnorm's squares) and
 * ROWS_EXP_COST, ROWS_NORM_COST (the cost of one element of the softmaxes
 * and of the norms, in CPU_RUN_ITEMS's unit), then includes this file.  The
 * rows of a call are spread over the pool with CPU_RUN_ITEMS (cpu-base.h).
 */
#ifndef CPU_RUN_ITEMS
#define CPU_RUN_ITEMS cpu_run_items
#endif

/* 1 / sqrt(var + eps), and 0 where var + eps = 0 (rayo-ops.h: the
 * normalised value of a constant row with eps = 0 is 0, not 0 * inf);
 * a NaN in the row stays NaN, so the whole row comes out NaN. */
static double inverse_std(double var_plus_eps)
{
    return var_plus_eps == 0 ? 0.0 : 1.0 / sqrt(var_plus_eps);
}

static void layernorm_row(const float *x, const float *gamma, const float *beta, float *y, size_t n,
                          float eps)
{
    double mean = row_sum_f64(x, n) / (double)n;
    double var = row_centered_squares_f64(x, n, mean) / (double)n;
    normalize_row(x, gamma, beta, y, n, mean, inverse_std(var + (double)eps));
}

static void rmsnorm_row(const float *x, const float *gamma, float *y, size_t n, float eps)
{
    double mean_square = CPU_KERNEL(sum_squares_f64)(x, n) / (double)n;
    normalize_row(x, gamma, NULL, y, n, 0.0, inverse_std(mean_square + (double)eps));
}

static void softmax_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    for (size_t i = lo; i < hi; i++)
        softmax_row((const float *)c->a + i * c->n, (float *)c->y + i * c->n, c->n);
}

static void log_softmax_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    for (size_t i = lo; i < hi; i++)
        log_softmax_row((const float *)c->a + i * c->n, (float *)c->y + i * c->n, c->n);
}

static void layernorm_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    for (size_t i = lo; i < hi; i++)
        layernorm_row((const float *)c->a + i * c->n, c->b, c->c, (float *)c->y + i * c->n, c->n, c->alpha);
}

static void rmsnorm_rows(const cpu_state *st, const rayo_call *c, size_t lo, size_t hi)
{
    (void)st;
    for (size_t i = lo; i < hi; i++)
        rmsnorm_row((const float *)c->a + i * c->n, c->b, (float *)c->y + i * c->n, c->n, c->alpha);
}

/* A row of n = 0 still counts as one element: the call's size is its rows. */
static rayo_status run_rows(void *state, const rayo_call *call, size_t cost, cpu_range_fn *fn)
{
    CPU_RUN_ITEMS(state, call, call->m, call->n ? call->n : 1, cost, fn);
    return RAYO_OK;
}

CPU_KERNEL_FN(softmax)
{
    return run_rows(state, call, ROWS_EXP_COST, softmax_rows);
}

CPU_KERNEL_FN(log_softmax)
{
    return run_rows(state, call, ROWS_EXP_COST, log_softmax_rows);
}

CPU_KERNEL_FN(layernorm)
{
    return run_rows(state, call, ROWS_NORM_COST, layernorm_rows);
}

CPU_KERNEL_FN(rmsnorm)
{
    return run_rows(state, call, ROWS_NORM_COST, rmsnorm_rows);
}
