/* SPDX-License-Identifier: MIT */
/* test-conform-wrong-plugin - a plugin with planted bugs, so that the test
 * can see rayo-conform report FAIL (and exit 1) through the real loader:
 *   add    the last element is one ulp off          -> FAIL
 *   relu   writes one element past the end of y     -> FAIL
 *   sum    right (double accumulator)               -> ok
 *   scale  "unsupported" for alpha < 0, else right  -> ok, with a note
 *   exp    not in the op table                      -> not implemented */
#include "rayo-plugin.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static rayo_status wrong_add(void *state, const rayo_call *c)
{
    const float *a = c->a, *b = c->b;
    float *y = c->y;
    (void)state;
    for (size_t i = 0; i < c->n; i++)
        y[i] = a[i] + b[i];
    y[c->n - 1] = nextafterf(y[c->n - 1], INFINITY);
    return RAYO_OK;
}

static rayo_status wrong_relu(void *state, const rayo_call *c)
{
    const float *x = c->a;
    float *y = c->y;
    (void)state;
    for (size_t i = 0; i < c->n; i++)
        y[i] = x[i] > 0 ? x[i] : (isnan(x[i]) ? x[i] : 0.0f);
    y[c->n] = 0.0f;
    return RAYO_OK;
}

static rayo_status right_sum(void *state, const rayo_call *c)
{
    const float *x = c->a;
    double s = 0;
    (void)state;
    for (size_t i = 0; i < c->n; i++)
        s += x[i];
    *(float *)c->y = (float)s;
    return RAYO_OK;
}

static rayo_status partial_scale(void *state, const rayo_call *c)
{
    const float *x = c->a;
    float *y = c->y;
    (void)state;
    if (c->alpha < 0)
        return RAYO_E_UNSUPPORTED;
    for (size_t i = 0; i < c->n; i++)
        y[i] = c->alpha * x[i];
    return RAYO_OK;
}

static rayo_status wrong_probe(const rayo_host *host, rayo_probe_result *result)
{
    (void)host;
    result->device_count = 1;
    memset(&result->devices[0], 0, sizeof result->devices[0]);
    snprintf(result->devices[0].name, sizeof result->devices[0].name, "CPU (planted bugs)");
    result->devices[0].type = RAYO_DEVICE_CPU;
    result->devices[0].flags = RAYO_DEVICE_HOST_MEMORY;
    return RAYO_OK;
}

static rayo_status wrong_init(const rayo_host *host, uint32_t device, void **state)
{
    (void)host;
    (void)device;
    *state = NULL;
    return RAYO_OK;
}

static void wrong_fini(void *state)
{
    (void)state;
}

static const rayo_op_entry wrong_ops[] = {
    {RAYO_OP_ADD, 0, wrong_add}, {RAYO_OP_RELU, 0, wrong_relu},
    {RAYO_OP_SUM, 0, right_sum}, {RAYO_OP_SCALE, 0, partial_scale},
};

RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
    .magic = RAYO_PLUGIN_MAGIC,
    .abi_major = RAYO_PLUGIN_ABI_MAJOR,
    .abi_minor = RAYO_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(rayo_plugin_descriptor),
    .arch = RAYO_ARCH_ANY,
    .name = "conformwrong",
    .version = "1",
    .priority = 1,
    .probe = wrong_probe,
    .init = wrong_init,
    .fini = wrong_fini,
    .ops = wrong_ops,
    .op_count = sizeof wrong_ops / sizeof wrong_ops[0],
    .op_entry_size = sizeof(rayo_op_entry),
};
