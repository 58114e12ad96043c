/* SPDX-License-Identifier: MIT */
/* cpu-base.c - the glue every CPU plugin shares (see cpu-base.h): threads
 * over the core's pool, scratch memory, probe/init/fini.  Compiled into
 * each CPU plugin with that plugin's flags; it reads the plugin's
 * cpu_plugin spec and cpu_plugin_id. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include "cpu-base.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- threads ------------------------------------------------------------- */

unsigned cpu_threads(const cpu_state *st)
{
    unsigned n = st->host->num_threads ? st->host->num_threads(st->host) : 1;
    return n ? n : 1;
}

void cpu_parallel(const cpu_state *st, size_t n_tasks, cpu_task_fn *fn, void *arg)
{
    if (n_tasks > 1 && st->host->parallel_for && cpu_threads(st) > 1) {
        st->host->parallel_for(st->host, n_tasks, fn, arg);
        return;
    }
    for (size_t t = 0; t < n_tasks; t++)
        fn(arg, t, 0);
}

typedef struct range_job {
    const cpu_state *st;
    const rayo_call *call;
    cpu_range_fn *fn;
    size_t count, chunk;
} range_job;

static void range_task(void *arg, size_t task, unsigned worker)
{
    const range_job *job = arg;
    size_t lo = task * job->chunk;
    size_t hi = job->count - lo > job->chunk ? lo + job->chunk : job->count;
    (void)worker;
    if (lo < hi)
        job->fn(job->st, job->call, lo, hi);
}

void cpu_run_ranges(const cpu_state *st, const rayo_call *call, size_t count,
                    size_t work_per_item, cpu_range_fn *fn)
{
    size_t work = work_per_item && count > SIZE_MAX / work_per_item ? SIZE_MAX
                                                                     : count * work_per_item;
    /* Small calls first, without asking the host for its thread count (an
     * indirect call: a few ns of a 20 ns call). */
    if (count < 2 || work < CPU_PARALLEL_MIN_WORK) {
        fn(st, call, 0, count);
        return;
    }
    size_t threads = cpu_threads(st);
    if (threads < 2) {
        fn(st, call, 0, count);
        return;
    }
    size_t tasks = work / (CPU_PARALLEL_MIN_WORK / 4);
    if (tasks > 4 * threads)
        tasks = 4 * threads;
    if (tasks > count)
        tasks = count;
    size_t chunk = (count + tasks - 1) / tasks;
    size_t granule = cpu_plugin.range_granule;
    if (granule > 1 && chunk > granule && count > granule * tasks)
        chunk = (chunk + granule - 1) / granule * granule;
    range_job job = { st, call, fn, count, chunk };
    cpu_parallel(st, (count + chunk - 1) / chunk, range_task, &job);
}

void cpu_run_per_thread(const cpu_state *st, const rayo_call *call, size_t n, size_t min_parallel,
                        size_t granule, cpu_range_fn *fn)
{
    if (n < min_parallel) {
        fn(st, call, 0, n);
        return;
    }
    size_t threads = cpu_threads(st);
    if (threads <= 1) {
        fn(st, call, 0, n);
        return;
    }
    size_t chunk = ((n + threads - 1) / threads + granule - 1) / granule * granule;
    range_job job = { st, call, fn, n, chunk };
    cpu_parallel(st, (n + chunk - 1) / chunk, range_task, &job);
}

/* ---- reductions ---------------------------------------------------------- */

#define REDUCE_MAX_CHUNKS 64

typedef struct reduce_job {
    cpu_reduce_fn *serial;
    cpu_reduction kind;
    const float *a, *b;
    size_t n, chunk;
    double partial[REDUCE_MAX_CHUNKS];
} reduce_job;

static void reduce_task(void *arg, size_t task, unsigned worker)
{
    reduce_job *job = arg;
    size_t lo = task * job->chunk;
    size_t len = job->n - lo < job->chunk ? job->n - lo : job->chunk;
    (void)worker;
    job->partial[task] = job->serial(job->kind, job->a + lo, job->b ? job->b + lo : NULL, len);
}

/* Elements per chunk before rounding up to whole blocks. */
static size_t reduce_chunk(cpu_reduce_split split, size_t n, size_t threads)
{
    if (split == CPU_SPLIT_PER_THREAD) {
        size_t tasks = 4 * threads < REDUCE_MAX_CHUNKS ? 4 * threads : REDUCE_MAX_CHUNKS;
        return (n + tasks - 1) / tasks;
    }
    size_t per_chunk = (n + REDUCE_MAX_CHUNKS - 1) / REDUCE_MAX_CHUNKS;
    size_t min_chunk = CPU_REDUCE_PARALLEL_MIN / 8; /* chunks worth handing out */
    return per_chunk < min_chunk ? min_chunk : per_chunk;
}

double cpu_reduce_parallel(const cpu_state *st, cpu_reduce_fn *serial, cpu_reduce_split split,
                           size_t block, cpu_reduction kind, const float *a, const float *b, size_t n)
{
    size_t threads = cpu_threads(st);
    if (threads < 2)
        return serial(kind, a, b, n);
    reduce_job job = { .serial = serial, .kind = kind, .a = a, .b = b, .n = n };
    job.chunk = (reduce_chunk(split, n, threads) + block - 1) / block * block;
    size_t tasks = (n + job.chunk - 1) / job.chunk;
    cpu_parallel(st, tasks, reduce_task, &job);
    double total = 0.0;
    for (size_t t = 0; t < tasks; t++)
        total += job.partial[t];
    return total;
}

/* ---- checks ------------------------------------------------------------- */

rayo_status cpu_attention_check(const rayo_call *c, const rayo_attention_params *p)
{
    rayo_dtype kv = RAYO_DTYPE_OF(c->dtypes, 1);
    if (kv != RAYO_DTYPE_F32 && kv != RAYO_DTYPE_F16)
        return RAYO_E_UNSUPPORTED;
    if (RAYO_DTYPE_OF(c->dtypes, 2) != kv || RAYO_DTYPE_OF(c->dtypes, 0) != RAYO_DTYPE_F32)
        return RAYO_E_UNSUPPORTED;
    if (!p->n_kv_heads || p->n_heads % p->n_kv_heads || !p->n_kv ||
        ((p->flags & RAYO_ATTN_CAUSAL) && p->n_q > p->n_kv))
        return RAYO_E_INVALID; /* the core refuses these first */
    return RAYO_OK;
}

static size_t or_dense(size_t stride, size_t dense)
{
    return stride ? stride : dense;
}

cpu_attention_layout cpu_attention_layout_of(const rayo_attention_params *p)
{
    size_t d = p->head_dim;
    cpu_attention_layout s;
    s.q_head = or_dense(p->q_head, d);
    s.k_head = or_dense(p->k_head, d);
    s.v_head = or_dense(p->v_head, d);
    s.o_head = or_dense(p->o_head, d);
    s.q_token = or_dense(p->q_token, p->n_heads * d);
    s.k_token = or_dense(p->k_token, p->n_kv_heads * d);
    s.v_token = or_dense(p->v_token, p->n_kv_heads * d);
    s.o_token = or_dense(p->o_token, p->n_heads * d);
    return s;
}

rayo_status cpu_rope_check(const rayo_call *c, size_t *rot)
{
    const rayo_rope_params *p = c->params;
    *rot = 0;
    if (c->m == 0 || p->n_heads == 0 || p->head_dim == 0)
        return RAYO_OK;
    *rot = p->rot_dims ? p->rot_dims : p->head_dim;
    if (*rot % 2 || *rot > p->head_dim || (p->mode != RAYO_ROPE_NORM && p->mode != RAYO_ROPE_NEOX))
        return RAYO_E_INVALID;
    return RAYO_OK;
}

/* ---- settings ------------------------------------------------------------ */

/* Digits only: strtoull alone would take "-1" as the largest number and ""
 * as 0. */
static int parse_size(const char *text, unsigned long long *value)
{
    char *end;
    if (*text < '0' || *text > '9')
        return 0;
    errno = 0;
    *value = strtoull(text, &end, 10);
    return *end == '\0' && errno == 0;
}

size_t cpu_setting_size(const cpu_state *st, const char *key, size_t fallback, size_t lo, size_t hi)
{
    const rayo_host *host = st->host;
    const char *text = host->config ? host->config(host, key) : NULL;
    if (!text)
        return fallback;
    unsigned long long v;
    if (parse_size(text, &v) && v >= lo && v <= hi)
        return (size_t)v;
    if (host->log)
        host->log(host, RAYO_LOG_WARN, "[backend.%s] %s = %s ignored: want a whole number in %zu..%zu",
                  cpu_plugin_id.name, key, text, lo, hi);
    return fallback;
}

/* ---- memory -------------------------------------------------------------- */

float *cpu_alloc_floats(const cpu_state *st, size_t count)
{
    if (count > SIZE_MAX / sizeof(float))
        return NULL;
    if (st->host->alloc_aligned)
        return st->host->alloc_aligned(64, count * sizeof(float));
    void *p = NULL; /* a host without the allocator: aligned all the same */
    return posix_memalign(&p, 64, count * sizeof(float)) == 0 ? p : NULL;
}

void cpu_free(const cpu_state *st, void *ptr)
{
    if (!ptr)
        return;
    if (st->host->alloc_aligned && st->host->free_aligned)
        st->host->free_aligned(ptr);
    else
        free(ptr);
}

/* ---- probe, init, fini --------------------------------------------------- */

/* The core refuses a plugin whose cpu_features the CPU and OS lack before
 * any of its code runs; this check only makes the reason explicit should a
 * core (or a tool calling probe directly) ever skip it. */
rayo_status cpu_probe(const rayo_host *host, rayo_probe_result *result)
{
    result->device_count = 0;
    result->reason[0] = '\0';
    if ((host->cpu_features & cpu_plugin_id.cpu_features) != cpu_plugin_id.cpu_features) {
        snprintf(result->reason, sizeof result->reason,
                 "the CPU, OS or engine lacks the features the %s backend was built for",
                 cpu_plugin_id.name);
        return RAYO_E_UNSUPPORTED;
    }
    rayo_device_desc *dev = &result->devices[0];
    memset(dev, 0, sizeof *dev);
    if (cpu_plugin.describe)
        cpu_plugin.describe(dev->name, sizeof dev->name);
    else
        snprintf(dev->name, sizeof dev->name, "%s", cpu_plugin.device_name);
    dev->type = RAYO_DEVICE_CPU;
    dev->flags = RAYO_DEVICE_HOST_MEMORY;
    result->device_count = 1;
    return RAYO_OK;
}

rayo_status cpu_init(const rayo_host *host, uint32_t device, void **state)
{
    if (device != 0)
        return RAYO_E_NOT_FOUND;
    cpu_state *st = calloc(1, cpu_plugin.state_size);
    if (!st)
        return RAYO_E_NOMEM;
    st->host = host;
    rayo_status status = cpu_plugin.init ? cpu_plugin.init(st) : RAYO_OK;
    if (status != RAYO_OK) {
        free(st);
        return status;
    }
    *state = st;
    return RAYO_OK;
}

void cpu_fini(void *state)
{
    cpu_state *st = state;
    if (!st)
        return;
    if (cpu_plugin.fini)
        cpu_plugin.fini(st);
    free(st);
}

void cpu_release_constant(void *state, const void *data, size_t bytes)
{
    if (state && cpu_plugin.release_constant)
        cpu_plugin.release_constant(state, data, bytes);
}
