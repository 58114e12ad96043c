/* SPDX-License-Identifier: MIT */
/* fake.c - plugins built only for the loader tests.  One source, compiled
 * once per variant with -DFAKE_<VARIANT>; each variant breaks one rule (or
 * follows them) so that tests/test-loader.c can check the core's answer.
 *
 *   FAKE_GOOD     implements add only (the rest must fall through) and logs
 *                 each call, with the precision it got, so the test can see
 *                 that it ran and how
 *   FAKE_ABI2     claims plugin ABI major 2
 *   FAKE_NEWER    ABI 1.7, a larger descriptor and op ids the core does not know
 *   FAKE_PROBEFAIL  probe says the hardware is absent
 *   FAKE_INITFAIL   init fails
 *   FAKE_NEEDCPU  compiled "for" a CPU feature (the test masks it)
 *   FAKE_RUNFAIL  add fails at run time after scribbling on its output
 *   FAKE_LOST     add reports the device lost
 *   FAKE_BADMAGIC a descriptor with the wrong magic
 *   FAKE_NODESC   exports no descriptor at all
 * Descriptors that lie (the loader must refuse them without a crash):
 *   FAKE_BADOPS   ops = 0x10
 *   FAKE_MANYOPS  op_count 100000 with a one-entry table
 *   FAKE_BADKERNEL  a kernel pointer outside the plugin
 *   FAKE_ABSSYM   rayo_plugin is an absolute symbol (address 0x10)
 *   FAKE_SMALLDESC  rayo_plugin is 8 bytes
 *   FAKE_MEMNULL  a memory API with NULL functions
 *   FAKE_MEMSIZE0 a memory API with struct_size 0
 *   FAKE_CTOR     good, with an ELF constructor that sets RAYO_FAKE_CTOR_RAN
 *   FAKE_GPU      good, but its device says it is a GPU (offload thresholds,
 *                 rayo-calibrate)
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#if defined(FAKE_NEWER) || defined(FAKE_SMALLDESC) || defined(FAKE_ABSSYM)
#define RAYO_PLUGIN_NO_DECLARATION /* its rayo_plugin has another type */
#endif
#include "rayo-plugin.h"
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#if defined(FAKE_NODESC)
/* No descriptor: something that is not a rayo plugin. */
RAYO_PLUGIN_EXPORT int not_a_rayo_plugin(void);
int not_a_rayo_plugin(void) { return 1; }
#elif defined(FAKE_ABSSYM)
__asm__(".globl rayo_plugin\n.type rayo_plugin, %object\n.set rayo_plugin, 0x10\n.size rayo_plugin, 256\n");
#elif defined(FAKE_SMALLDESC)
RAYO_PLUGIN_EXPORT const uint64_t rayo_plugin = RAYO_PLUGIN_MAGIC | ((uint64_t)RAYO_PLUGIN_ABI_MAJOR << 32);
#else

#ifdef FAKE_CTOR
__attribute__((constructor)) static void fake_constructor(void)
{
    setenv("RAYO_FAKE_CTOR_RAN", "1", 1);
}
#endif

typedef struct fake_state { const rayo_host *host; } fake_state;

static rayo_status fake_probe(const rayo_host *host, rayo_probe_result *r)
{
    (void)host;
#ifdef FAKE_PROBEFAIL
    snprintf(r->reason, sizeof r->reason, "fake accelerator not present (test)");
    r->device_count = 0;
    return RAYO_E_NOT_FOUND;
#else
    r->device_count = 1;
    snprintf(r->devices[0].name, sizeof r->devices[0].name, "fake device");
#ifdef FAKE_GPU
    r->devices[0].type = RAYO_DEVICE_GPU;
#else
    r->devices[0].type = RAYO_DEVICE_CPU;
#endif
    r->devices[0].flags = RAYO_DEVICE_HOST_MEMORY;
    return RAYO_OK;
#endif
}

#ifndef FAKE_INITFAIL
static fake_state the_state;
#endif

static rayo_status fake_init(const rayo_host *host, uint32_t device, void **state)
{
    (void)device;
#ifdef FAKE_INITFAIL
    host->set_error(host, "fake init refuses (test)");
    (void)state;
    return RAYO_E_BACKEND;
#else
    /* A key of its own: the core warns about the keys of [backend.NAME]
     * that the plugin never reads (test-config-names). */
    (void)host->config(host, "fake_key");
    the_state.host = host;
    *state = &the_state;
    return RAYO_OK;
#endif
}

static void fake_fini(void *state)
{
    (void)state;
}

static rayo_status fake_add(void *state, const rayo_call *c)
{
    fake_state *s = state;
    float *y = c->y;
#if defined(FAKE_RUNFAIL)
    /* A plugin may write garbage to a pure output before failing: the core
     * must still deliver the right result from the next backend. */
    for (size_t i = 0; i < c->n; i++)
        y[i] = -12345.0f;
    s->host->set_error(s->host, "simulated failure in the middle of a call");
    return RAYO_E_BACKEND;
#elif defined(FAKE_LOST)
    (void)y;
    s->host->set_error(s->host, "simulated device loss");
    return RAYO_E_DEVICE_LOST;
#else
    for (size_t i = 0; i < c->n; i++)
        y[i] = ((const float *)c->a)[i] + ((const float *)c->b)[i];
    s->host->log(s->host, RAYO_LOG_DEBUG, "fake add ran (precision %u)", (unsigned)c->precision);
    return RAYO_OK;
#endif
}

#if defined(FAKE_MEMNULL) || defined(FAKE_MEMSIZE0)
static rayo_status fake_alloc(void *state, size_t bytes, void **buf)
{
    (void)state; (void)bytes;
    *buf = NULL;
    return RAYO_E_NOMEM;
}

static const rayo_memory_api fake_memory = {
#ifdef FAKE_MEMSIZE0
    .struct_size = 0,
#else
    .struct_size = sizeof(rayo_memory_api),
#endif
    .buffer_alloc = fake_alloc, /* the rest NULL */
};
#endif

static const rayo_op_entry fake_ops[] __attribute__((unused)) = {
#ifdef FAKE_BADKERNEL
    {RAYO_OP_MUL, 0, (rayo_kernel_fn)(uintptr_t)0x1000},
#endif
#ifdef FAKE_NEWER
    {200, 0, fake_add}, /* an op a future core knows, this one does not */
    {255, 0, fake_add},
    {9999, 0, fake_add},
#endif
    {RAYO_OP_ADD, 0, fake_add},
};

#ifdef FAKE_NEWER
/* A descriptor from a newer minor: the same fields, more at the end. */
typedef struct newer_descriptor {
    rayo_plugin_descriptor v1;
    void *future_field;
    uint64_t another_future_field;
} newer_descriptor;
RAYO_PLUGIN_EXPORT const newer_descriptor rayo_plugin = {{
#else
RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
#endif
#ifdef FAKE_BADMAGIC
    .magic = 0xdeadbeef,
#else
    .magic = RAYO_PLUGIN_MAGIC,
#endif
#ifdef FAKE_ABI2
    .abi_major = 2,
#else
    .abi_major = RAYO_PLUGIN_ABI_MAJOR,
#endif
#ifdef FAKE_NEWER
    .abi_minor = 7,
    .struct_size = sizeof(newer_descriptor),
#else
    .abi_minor = RAYO_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(rayo_plugin_descriptor),
#endif
    .arch = RAYO_ARCH_ANY,
    .name = FAKE_NAME,
    .version = "0.0-test",
#ifdef FAKE_NEEDCPU
#if defined(__x86_64__)
    .cpu_features = RAYO_CPU_X86_SSE2,
#elif defined(__aarch64__)
    .cpu_features = RAYO_CPU_ARM_ASIMD,
#else
    .cpu_features = RAYO_CPU_WASM_SIMD128,
#endif
#endif
    .priority = 100, /* ahead of every real CPU backend */
    .probe = fake_probe,
    .init = fake_init,
    .fini = fake_fini,
#if defined(FAKE_BADOPS)
    .ops = (const rayo_op_entry *)(uintptr_t)0x10,
#else
    .ops = fake_ops,
#endif
#if defined(FAKE_MANYOPS)
    .op_count = 100000,
#else
    .op_count = sizeof fake_ops / sizeof fake_ops[0],
#endif
#if defined(FAKE_MEMNULL) || defined(FAKE_MEMSIZE0)
    .memory = &fake_memory,
#else
    .memory = NULL,
#endif
    .op_entry_size = sizeof(rayo_op_entry),
#ifdef FAKE_NEWER
}, NULL, 42};
#else
};
#endif
#endif /* FAKE_NODESC, FAKE_ABSSYM, FAKE_SMALLDESC */
