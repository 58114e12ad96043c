/* SPDX-License-Identifier: MIT */
/* cpu-reduce_tmpl.c - the reduction kernels of a CPU plugin (sum, dot,
 * norm_l1, norm_l2, max, min, argmax), written once over the plugin's serial
 * loops.  A plugin's reduce.c defines them, then includes this file:
 *
 *   reduce_serial           a cpu_reduce_fn (cpu-base.h): the sum of a
 *                           cpu_reduction on the calling thread
 *   REDUCE_SPLIT, REDUCE_BLOCK  how cpu_reduce cuts long vectors for the pool
 *   reduce_extreme(x, n, want_max)  max or min of x[0..n): NaN if any
 *                           element is NaN, -inf / +inf for n == 0
 *   reduce_find_first(x, n, value)  the index of the first element equal to
 *                           value (value NaN: of the first NaN); there is one
 *
 * argmax is two simple passes: the maximum (NaN if any), then where it
 * first is, so the index is the first maximum or the first NaN.
 *
 * A plugin whose sums are blocks in float lanes may define, instead of
 * reduce_serial, REDUCE_BLOCKED and these functions of one block (n <=
 * REDUCE_BLOCK) summed in float lanes and returned in double:
 *   block_sum(x, n)  block_abs_sum(x, n)  block_dot(a, b, n)
 * and REDUCE_SQUARES(x, n), the sum of squares of a whole vector in double.
 * Its reduce_serial (below) adds the blocks in double and adds again, term
 * by term in double (cpu_reduce_f64), a block whose float lanes overflowed
 * or met inf/NaN: partial sums past FLT_MAX (FLT_MAX + FLT_MAX - FLT_MAX)
 * then cannot make a finite result inf.  The fast path costs one test per
 * block.
 */

#ifdef REDUCE_BLOCKED
static double reduce_serial(cpu_reduction kind, const float *a, const float *b, size_t n)
{
    if (kind == CPU_RED_SQUARES)
        return REDUCE_SQUARES(a, n);
    double total = 0.0;
    for (size_t i = 0; i < n; i += REDUCE_BLOCK) {
        size_t len = n - i < REDUCE_BLOCK ? n - i : REDUCE_BLOCK;
        const float *bi = b ? b + i : NULL;
        double part;
        switch (kind) {
        case CPU_RED_SUM: part = block_sum(a + i, len); break;
        case CPU_RED_ABS: part = block_abs_sum(a + i, len); break;
        default: part = block_dot(a + i, bi, len); break;
        }
        total += isfinite(part) ? part : cpu_reduce_f64(kind, a + i, bi, len);
    }
    return total;
}
#endif

static double reduce_call(void *state, const rayo_call *call, cpu_reduction kind)
{
    const float *b = kind == CPU_RED_DOT ? call->b : NULL;
    return cpu_reduce(state, reduce_serial, REDUCE_SPLIT, REDUCE_BLOCK, kind, call->a, b, call->n);
}

CPU_KERNEL_FN(sum)
{
    *(float *)call->y = (float)reduce_call(state, call, CPU_RED_SUM);
    return RAYO_OK;
}

CPU_KERNEL_FN(dot)
{
    *(float *)call->y = (float)reduce_call(state, call, CPU_RED_DOT);
    return RAYO_OK;
}

CPU_KERNEL_FN(norm_l1)
{
    *(float *)call->y = (float)reduce_call(state, call, CPU_RED_ABS);
    return RAYO_OK;
}

CPU_KERNEL_FN(norm_l2)
{
    *(float *)call->y = (float)sqrt(reduce_call(state, call, CPU_RED_SQUARES));
    return RAYO_OK;
}

CPU_KERNEL_FN(max)
{
    (void)state;
    *(float *)call->y = reduce_extreme(call->a, call->n, 1);
    return RAYO_OK;
}

CPU_KERNEL_FN(min)
{
    (void)state;
    *(float *)call->y = reduce_extreme(call->a, call->n, 0);
    return RAYO_OK;
}

/* The plugin's max, sum and dot for its other kernels (softmax, gemv). */
float CPU_KERNEL(max_f32)(const float *x, size_t n)
{
    return reduce_extreme(x, n, 1);
}

#ifdef REDUCE_BLOCKED
double CPU_KERNEL(sum_f64)(const float *x, size_t n)
{
    return reduce_serial(CPU_RED_SUM, x, NULL, n);
}

double CPU_KERNEL(dot_f64)(const float *a, const float *b, size_t n)
{
    return reduce_serial(CPU_RED_DOT, a, b, n);
}
#endif

CPU_KERNEL_FN(argmax)
{
    (void)state;
    if (call->n == 0)
        return RAYO_E_INVALID;
    float best = reduce_extreme(call->a, call->n, 1);
    *(size_t *)call->y = reduce_find_first(call->a, call->n, best);
    return RAYO_OK;
}
