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
 */

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

CPU_KERNEL_FN(argmax)
{
    (void)state;
    if (call->n == 0)
        return RAYO_E_INVALID;
    float best = reduce_extreme(call->a, call->n, 1);
    *(size_t *)call->y = reduce_find_first(call->a, call->n, best);
    return RAYO_OK;
}
