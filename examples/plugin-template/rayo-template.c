/* SPDX-License-Identifier: MIT */
/* rayo-template.c - a complete third-party rayo plugin, as small as it gets.
 *
 * Copy this folder, rename "template" (the file rayo-NAME.so and the
 * descriptor's name), implement the ops you are good at: every op you leave
 * out falls through to the next backend, so a plugin can start with one op.
 * Build it against the installed rayo (README next to this file):
 *
 *   make                   # cc ... $(pkg-config --cflags rayo) -> rayo-template.so
 *   make check             # rayo-conform ./rayo-template.so: is it right?
 *   sudo make install      # into $(pkg-config --variable=plugindir rayo)
 *   rayo-info              # is it used?
 *
 * Rules (rayo-plugin(7) and rayo-plugin.h have them all): export only
 * `rayo_plugin`; no code may run before the core has read the descriptor (no
 * constructors); init runs once per rayo context, so keep state per init,
 * never in a static; kernels are called concurrently; a kernel that fails
 * must not have modified an output that is also an input. */
#include <rayo-plugin.h>
#include <stdio.h>
#include <stdlib.h>

/* One per init (per rayo context using this plugin): two contexts in one
 * process share this .so but not this state. */
typedef struct template_state {
    const rayo_host *host;   /* logging, config, thread pool: valid until fini */
} template_state;

static rayo_status template_probe(const rayo_host *host, rayo_probe_result *result)
{
    (void)host;
    /* A real accelerator plugin looks for its driver here and, if it is not
     * there, says why in result->reason and reports no device. */
    result->device_count = 1;
    snprintf(result->devices[0].name, sizeof result->devices[0].name, "template device (host CPU)");
    result->devices[0].type = RAYO_DEVICE_CPU;
    result->devices[0].flags = RAYO_DEVICE_HOST_MEMORY;
    return RAYO_OK;
}

/* device: the index in the probe's list that [backend.template] device =
 * chose (0 by default).  If init fails, fini is not called: free here. */
static rayo_status template_init(const rayo_host *host, uint32_t device, void **out)
{
    (void)device;
    template_state *st = calloc(1, sizeof *st);
    if (!st)
        return RAYO_E_NOMEM;
    st->host = host;
    const char *greeting = host->config(host, "greeting"); /* [backend.template] greeting = ... */
    if (greeting)
        host->log(host, RAYO_LOG_INFO, "config says: %s", greeting);
    *out = st;
    return RAYO_OK;
}

/* At rayo_close of the context whose init returned this state. */
static void template_fini(void *s)
{
    free(s);
}

/* y = a + b.  The core has checked the pointers and that n > 0. */
static rayo_status template_add(void *s, const rayo_call *c)
{
    (void)s;
    float *y = c->y;
    for (size_t i = 0; i < c->n; i++)
        y[i] = ((const float *)c->a)[i] + ((const float *)c->b)[i];
    return RAYO_OK;
}

/* relu must keep NaN (rayo-ops.h states each op's NaN/Inf contract). */
static rayo_status template_relu(void *s, const rayo_call *c)
{
    (void)s;
    float *y = c->y;
    for (size_t i = 0; i < c->n; i++)
        y[i] = ((const float *)c->a)[i] < 0.0f ? 0.0f : ((const float *)c->a)[i];
    return RAYO_OK;
}

static const rayo_op_entry template_ops[] = {
    {RAYO_OP_ADD, 0, template_add},
    {RAYO_OP_RELU, 0, template_relu},
};

RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
    .magic = RAYO_PLUGIN_MAGIC,
    .abi_major = RAYO_PLUGIN_ABI_MAJOR,
    .abi_minor = RAYO_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(rayo_plugin_descriptor),
    .arch = RAYO_ARCH_ANY,
    .name = "template",
    .version = "1.0",
    .cpu_features = 0,  /* e.g. RAYO_CPU_X86_AVX2 if compiled with -mavx2 */
    .priority = 5,          /* below scalar (10): a template should not take over */
    .reserved = 0,          /* must be 0 */
    .probe = template_probe,
    .init = template_init,
    .fini = template_fini,
    .ops = template_ops,
    .op_count = sizeof template_ops / sizeof template_ops[0],
    .memory = NULL,     /* host memory: the core provides buffers and batches */
    .op_entry_size = sizeof(rayo_op_entry),
};
