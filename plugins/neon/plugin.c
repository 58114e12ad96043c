/* plugin.c - descriptor, probe/init/fini, op table and threading
 * helpers of the AArch64 Advanced SIMD backend.
 *
 * The descriptor says arch AArch64 and cpu_features ASIMD: the core checks
 * both (HWCAP) before any code of this file runs, so the kernels may use
 * Advanced SIMD unconditionally. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

unsigned neon_threads(const neon_state *st)
{
    unsigned n = st->host->num_threads ? st->host->num_threads(st->host) : 1;
    return n ? n : 1;
}

void neon_parallel(const neon_state *st, size_t n_tasks, neon_task_fn *fn, void *arg)
{
    if (n_tasks > 1 && st->host->parallel_for && neon_threads(st) > 1) {
        st->host->parallel_for(st->host, n_tasks, fn, arg);
        return;
    }
    for (size_t t = 0; t < n_tasks; t++)
        fn(arg, t, 0);
}

typedef struct range_job {
    const rayo_call *call;
    neon_range_fn *fn;
    size_t count, chunk;
} range_job;

static void range_task(void *arg, size_t task, unsigned worker)
{
    const range_job *job = arg;
    size_t lo = task * job->chunk;
    size_t hi = job->count - lo > job->chunk ? lo + job->chunk : job->count;
    (void)worker;
    job->fn(job->call, lo, hi);
}

void neon_run_ranges(const neon_state *st, const rayo_call *call, size_t count,
                     size_t cost_per_item, neon_range_fn *fn)
{
    size_t threads = neon_threads(st);
    size_t work = cost_per_item && count > SIZE_MAX / cost_per_item ? SIZE_MAX
                                                                     : count * cost_per_item;
    if (threads < 2 || count < 2 || work < NEON_PARALLEL_MIN_WORK) {
        fn(call, 0, count);
        return;
    }
    /* A few tasks per thread even out uneven progress; each task stays big
     * enough that handing it out costs little. */
    size_t tasks = work / (NEON_PARALLEL_MIN_WORK / 4);
    if (tasks > 4 * threads)
        tasks = 4 * threads;
    if (tasks > count)
        tasks = count;
    size_t chunk = (count + tasks - 1) / tasks;
    if (chunk > 16 && count > 16 * tasks)
        chunk = (chunk + 15) & ~(size_t)15;
    range_job job = { call, fn, count, chunk };
    neon_parallel(st, (count + chunk - 1) / chunk, range_task, &job);
}

static rayo_status neon_probe(const rayo_host *host, rayo_probe_result *result)
{
    result->device_count = 0;
    result->reason[0] = '\0';
    /* The core refused us already if ASIMD is missing; this check only makes
     * the reason explicit should a core ever skip it. */
    if (!(host->cpu_features & RAYO_CPU_ARM_ASIMD)) {
        snprintf(result->reason, sizeof result->reason,
                 "the CPU or OS lacks AArch64 Advanced SIMD (HWCAP_ASIMD)");
        return RAYO_OK;
    }
    rayo_device_desc *dev = &result->devices[0];
    memset(dev, 0, sizeof *dev);
    snprintf(dev->name, sizeof dev->name, "CPU (AArch64 Advanced SIMD)");
    dev->type = RAYO_DEVICE_CPU;
    dev->flags = RAYO_DEVICE_HOST_MEMORY;
    result->device_count = 1;
    return RAYO_OK;
}

static rayo_status neon_init(const rayo_host *host, uint32_t device, void **state)
{
    if (device != 0)
        return RAYO_E_NOT_FOUND;
    neon_state *st = malloc(sizeof *st);
    if (!st)
        return RAYO_E_NOMEM;
    st->host = host;
    *state = st;
    return RAYO_OK;
}

static void neon_fini(void *state)
{
    free(state);
}

#define RAYO_KERNEL(NAME) neon_##NAME
static const rayo_op_entry neon_ops[] = {
#include "rayo-op-table.h"
};

RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
    .magic = RAYO_PLUGIN_MAGIC,
    .abi_major = RAYO_PLUGIN_ABI_MAJOR,
    .abi_minor = RAYO_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(rayo_plugin_descriptor),
    .arch = RAYO_ARCH_AARCH64,
    .name = "neon",
    .version = PACKAGE_VERSION,
    .cpu_features = RAYO_CPU_ARM_ASIMD,
    .priority = 50,
    .probe = neon_probe,
    .init = neon_init,
    .fini = neon_fini,
    .ops = neon_ops,
    .op_count = sizeof neon_ops / sizeof neon_ops[0],
    .memory = NULL,
};
