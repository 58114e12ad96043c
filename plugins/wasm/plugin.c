/* plugin.c - descriptor, probe/init/fini and op table of the WebAssembly
 * SIMD128 backend, and the helpers that spread work over the core's pool. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plugin.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

unsigned wasm_threads(const wasm_state *st)
{
    unsigned n = st->host->num_threads ? st->host->num_threads(st->host) : 1;
    return n ? n : 1;
}

void wasm_parallel(const wasm_state *st, size_t n_tasks, wasm_task_fn *fn, void *arg)
{
    if (n_tasks > 1 && st->host->parallel_for && wasm_threads(st) > 1) {
        st->host->parallel_for(st->host, n_tasks, fn, arg);
        return;
    }
    for (size_t t = 0; t < n_tasks; t++)
        fn(arg, t, 0);
}

float *wasm_alloc_floats(const wasm_state *st, size_t count)
{
    if (count > SIZE_MAX / sizeof(float))
        return NULL;
    return st->host->alloc_aligned(64, count * sizeof(float));
}

void wasm_free(const wasm_state *st, void *ptr)
{
    st->host->free_aligned(ptr);
}

typedef struct range_job {
    const rayo_call *call;
    wasm_range_fn *fn;
    size_t count, chunk;
} range_job;

static void range_task(void *arg, size_t task, unsigned worker)
{
    const range_job *job = arg;
    size_t lo = task * job->chunk;
    size_t hi = lo + job->chunk < job->count ? lo + job->chunk : job->count;
    (void)worker;
    if (lo < hi)
        job->fn(job->call, lo, hi);
}

void wasm_run_ranges(const wasm_state *st, const rayo_call *call, size_t count,
                     size_t work_per_item, wasm_range_fn *fn)
{
    size_t threads = wasm_threads(st);
    size_t work = work_per_item && count > SIZE_MAX / work_per_item ? SIZE_MAX
                                                                     : count * work_per_item;
    if (threads < 2 || count < 2 || work < WASM_PARALLEL_MIN_WORK) {
        fn(call, 0, count);
        return;
    }
    /* chunks of whole vectors, a few per thread */
    size_t tasks = 4 * threads < count ? 4 * threads : count;
    size_t chunk = ((count + tasks - 1) / tasks + 3) / 4 * 4;
    range_job job = {call, fn, count, chunk};
    wasm_parallel(st, (count + chunk - 1) / chunk, range_task, &job);
}

/* The core loads this plugin only where the engine validates SIMD128 code
 * (cpu_features below); the probe says so again for rayo-info. */
static rayo_status wasm_probe(const rayo_host *host, rayo_probe_result *result)
{
    result->device_count = 0;
    if (!(host->cpu_features & RAYO_CPU_WASM_SIMD128)) {
        snprintf(result->reason, sizeof result->reason,
                 "this WebAssembly engine does not support SIMD128");
        return RAYO_E_UNSUPPORTED;
    }
    rayo_device_desc *dev = &result->devices[0];
    memset(dev, 0, sizeof *dev);
    snprintf(dev->name, sizeof dev->name, "WebAssembly SIMD128 (4 x f32)");
    dev->type = RAYO_DEVICE_CPU;
    dev->flags = RAYO_DEVICE_HOST_MEMORY;
    result->device_count = 1;
    result->reason[0] = '\0';
    return RAYO_OK;
}

static rayo_status wasm_init(const rayo_host *host, uint32_t device, void **state)
{
    if (device != 0)
        return RAYO_E_NOT_FOUND;
    wasm_state *st = malloc(sizeof *st);
    if (!st)
        return RAYO_E_NOMEM;
    st->host = host;
    *state = st;
    return RAYO_OK;
}

static void wasm_fini(void *state)
{
    free(state);
}

#define RAYO_KERNEL(NAME) wasm_##NAME
static const rayo_op_entry wasm_ops[] = {
#include "rayo-op-table.h"
};

RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
    .magic = RAYO_PLUGIN_MAGIC,
    .abi_major = RAYO_PLUGIN_ABI_MAJOR,
    .abi_minor = RAYO_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(rayo_plugin_descriptor),
    .arch = RAYO_ARCH_WASM32,
    .name = "wasm",
    .version = PACKAGE_VERSION,
    .cpu_features = RAYO_CPU_WASM_SIMD128,
    .priority = 50,
    .probe = wasm_probe,
    .init = wasm_init,
    .fini = wasm_fini,
    .ops = wasm_ops,
    .op_count = sizeof wasm_ops / sizeof wasm_ops[0],
    .memory = NULL,
};
