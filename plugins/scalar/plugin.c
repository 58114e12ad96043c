/* plugin.c - descriptor, probe/init/fini and op table of the portable C
 * backend: the backend that exists on every machine rayo runs on. */
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

unsigned scalar_threads(const scalar_state *st)
{
    unsigned n = st->host->num_threads ? st->host->num_threads(st->host) : 1;
    return n ? n : 1;
}

void scalar_parallel(const scalar_state *st, size_t n_tasks, scalar_task_fn *fn, void *arg)
{
    if (n_tasks > 1 && st->host->parallel_for && scalar_threads(st) > 1) {
        st->host->parallel_for(st->host, n_tasks, fn, arg);
        return;
    }
    for (size_t t = 0; t < n_tasks; t++)
        fn(arg, t, 0);
}

float *scalar_alloc_floats(const scalar_state *st, size_t count)
{
    if (count > SIZE_MAX / sizeof(float))
        return NULL;
    if (st->host->alloc_aligned)
        return st->host->alloc_aligned(64, count * sizeof(float));
    return malloc(count * sizeof(float));
}

void scalar_free(const scalar_state *st, void *ptr)
{
    if (st->host->alloc_aligned)
        st->host->free_aligned(ptr);
    else
        free(ptr);
}

typedef struct range_job {
    const rayo_call *call;
    scalar_range_fn *fn;
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

void scalar_run_ranges(const scalar_state *st, const rayo_call *call, size_t count,
                       size_t work_per_item, scalar_range_fn *fn)
{
    size_t threads = scalar_threads(st);
    size_t work = work_per_item && count > SIZE_MAX / work_per_item ? SIZE_MAX
                                                                     : count * work_per_item;
    if (threads < 2 || count < 2 || work < SCALAR_PARALLEL_MIN_WORK) {
        fn(call, 0, count);
        return;
    }
    /* A few tasks per thread balance uneven progress; each stays big
     * enough that scheduling it costs little. */
    size_t tasks = work / (SCALAR_PARALLEL_MIN_WORK / 4);
    if (tasks > 4 * threads)
        tasks = 4 * threads;
    if (tasks > count)
        tasks = count;
    range_job job = { call, fn, count, (count + tasks - 1) / tasks };
    scalar_parallel(st, (count + job.chunk - 1) / job.chunk, range_task, &job);
}

static rayo_status scalar_probe(const rayo_host *host, rayo_probe_result *result)
{
    (void)host;
    result->device_count = 1;
    rayo_device_desc *dev = &result->devices[0];
    memset(dev, 0, sizeof *dev);
    snprintf(dev->name, sizeof dev->name, "CPU (portable C)");
    dev->type = RAYO_DEVICE_CPU;
    dev->flags = RAYO_DEVICE_HOST_MEMORY;
    dev->memory_bytes = 0;
    result->reason[0] = '\0';
    return RAYO_OK;
}

static rayo_status scalar_init(const rayo_host *host, uint32_t device, void **state)
{
    if (device != 0)
        return RAYO_E_NOT_FOUND;
    scalar_state *st = malloc(sizeof *st);
    if (!st)
        return RAYO_E_NOMEM;
    st->host = host;
    *state = st;
    return RAYO_OK;
}

static void scalar_fini(void *state)
{
    free(state);
}

#define RAYO_KERNEL(NAME) scalar_##NAME
static const rayo_op_entry scalar_ops[] = {
#include "rayo-op-table.h"
};

RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
    .magic = RAYO_PLUGIN_MAGIC,
    .abi_major = RAYO_PLUGIN_ABI_MAJOR,
    .abi_minor = RAYO_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(rayo_plugin_descriptor),
    .arch = RAYO_ARCH_ANY,
    .name = "scalar",
    .version = PACKAGE_VERSION,
    .cpu_features = 0,
    .priority = 10,
    .probe = scalar_probe,
    .init = scalar_init,
    .fini = scalar_fini,
    .ops = scalar_ops,
    .op_count = sizeof scalar_ops / sizeof scalar_ops[0],
    .memory = NULL,
};
