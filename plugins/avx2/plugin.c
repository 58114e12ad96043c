/* plugin.c - the AVX2+FMA backend: descriptor, probe, init/fini, op table.
 *
 * The core checks the descriptor's cpu_features (AVX2, FMA, and that the OS
 * saves YMM state) before it runs any code of this file, so nothing here
 * needs to check the CPU again.
 */
#include "plugin.h"

#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- threads --------------------------------------------------------------- */

unsigned avx2_threads(const avx2_state *st)
{
    unsigned n = st->host->num_threads ? st->host->num_threads(st->host) : 1;
    return n ? n : 1;
}

void avx2_parallel(const avx2_state *st, size_t n_tasks, avx2_task_fn *fn, void *arg)
{
    if (n_tasks > 1 && avx2_threads(st) > 1 && st->host->parallel_for) {
        st->host->parallel_for(st->host, n_tasks, fn, arg);
        return;
    }
    for (size_t t = 0; t < n_tasks; t++)
        fn(arg, t, 0);
}

typedef struct range_job {
    const avx2_state *st;
    const rayo_call *call;
    avx2_range_fn *fn;
    size_t n, chunk;
} range_job;

static void range_task(void *arg, size_t task, unsigned worker)
{
    const range_job *job = arg;
    size_t begin = task * job->chunk;
    size_t end = begin + job->chunk < job->n ? begin + job->chunk : job->n;
    (void)worker;
    if (begin < end)
        job->fn(job->st, job->call, begin, end);
}

void avx2_run_ranges(const avx2_state *st, const rayo_call *call, size_t n,
                     size_t min_parallel, size_t granule, avx2_range_fn *fn)
{
    /* Small calls first, without asking the core for its thread count. */
    if (n < min_parallel) {
        fn(st, call, 0, n);
        return;
    }
    unsigned threads = avx2_threads(st);
    if (threads <= 1) {
        fn(st, call, 0, n);
        return;
    }
    /* One chunk per thread, rounded up to the granule. */
    size_t chunk = ((n + threads - 1) / threads + granule - 1) / granule * granule;
    range_job job = { st, call, fn, n, chunk };
    avx2_parallel(st, (n + chunk - 1) / chunk, range_task, &job);
}

/* ---- probe, init, fini ------------------------------------------------------ */

/* The CPU's brand string from cpuid 0x80000002..4, trimmed. */
static void cpu_brand(char *out, size_t size)
{
    unsigned regs[12] = { 0 };
    unsigned max_ext = __get_cpuid_max(0x80000000u, NULL);
    out[0] = '\0';
    if (max_ext < 0x80000004u)
        return;
    for (unsigned i = 0; i < 3; i++)
        __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    char brand[49];
    memcpy(brand, regs, 48);
    brand[48] = '\0';
    const char *start = brand;
    while (*start == ' ')
        start++;
    snprintf(out, size, "%s", start);
    for (size_t len = strlen(out); len > 0 && out[len - 1] == ' '; len--)
        out[len - 1] = '\0';
}

static rayo_status avx2_probe(const rayo_host *host, rayo_probe_result *result)
{
    (void)host;
    char brand[64];
    cpu_brand(brand, sizeof brand);
    result->device_count = 1;
    rayo_device_desc *dev = &result->devices[0];
    snprintf(dev->name, sizeof dev->name, "CPU AVX2+FMA%s%s%s", brand[0] ? " (" : "", brand,
             brand[0] ? ")" : "");
    dev->type = RAYO_DEVICE_CPU;
    dev->flags = RAYO_DEVICE_HOST_MEMORY;
    dev->memory_bytes = 0;
    result->reason[0] = '\0';
    return RAYO_OK;
}

/* [backend.avx2] mc / kc / nc override the blocking derived from the caches
 * (for tuning; values are rounded to what the microkernel needs). */
static void apply_blocking_overrides(const rayo_host *host, avx2_blocking *b)
{
    static const char *const keys[] = { "mc", "kc", "nc" };
    size_t *fields[] = { &b->mc, &b->kc, &b->nc };
    static const size_t multiple[] = { AVX2_GEMM_MR, 8, AVX2_GEMM_NR };
    if (!host->config)
        return;
    for (size_t i = 0; i < 3; i++) {
        const char *value = host->config(host, keys[i]);
        if (!value)
            continue;
        char *end;
        unsigned long v = strtoul(value, &end, 10);
        if (*end != '\0' || v < multiple[i] || v > 65536) {
            if (host->log)
                host->log(host, RAYO_LOG_WARN, "[backend.avx2] %s = %s ignored: want %zu..65536",
                          keys[i], value, multiple[i]);
            continue;
        }
        *fields[i] = v / multiple[i] * multiple[i];
    }
}

static rayo_status avx2_init(const rayo_host *host, uint32_t device, void **state)
{
    if (device != 0)
        return RAYO_E_NOT_FOUND;
    avx2_state *st = calloc(1, sizeof *st);
    if (!st)
        return RAYO_E_NOMEM;
    st->host = host;
    avx2_detect_caches(&st->caches);
    avx2_choose_blocking(&st->caches, &st->blocking);
    apply_blocking_overrides(host, &st->blocking);
    /* Streaming (non-temporal) stores pay off only when the output would
     * not stay in the last-level cache anyway. */
    st->stream_bytes = st->caches.l3;
    const char *stream = host->config ? host->config(host, "stream_min_bytes") : NULL;
    if (stream) {
        char *end;
        unsigned long long v = strtoull(stream, &end, 10);
        if (*end == '\0')
            st->stream_bytes = (size_t)v;
        else if (host->log)
            host->log(host, RAYO_LOG_WARN, "[backend.avx2] stream_min_bytes = %s ignored: not a number", stream);
    }
    if (pthread_mutex_init(&st->scratch_lock, NULL) != 0) {
        free(st);
        return RAYO_E_BACKEND;
    }
    if (host->log)
        host->log(host, RAYO_LOG_DEBUG,
                  "caches (%s): L1d %zu KiB, L2 %zu KiB, L3 %zu KiB; sgemm blocks mc %zu kc %zu nc %zu",
                  st->caches.source, st->caches.l1d >> 10, st->caches.l2 >> 10, st->caches.l3 >> 10,
                  st->blocking.mc, st->blocking.kc, st->blocking.nc);
    *state = st;
    return RAYO_OK;
}

static void avx2_fini(void *state)
{
    avx2_state *st = state;
    if (!st)
        return;
    avx2_scratch_free_all(st);
    pthread_mutex_destroy(&st->scratch_lock);
    free(st);
}

/* ---- the op table and the descriptor ------------------------------------- */

#define RAYO_KERNEL(NAME) avx2_##NAME
static const rayo_op_entry avx2_ops[] = {
#include "rayo-op-table.h"
};

RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {
    .magic = RAYO_PLUGIN_MAGIC,
    .abi_major = RAYO_PLUGIN_ABI_MAJOR,
    .abi_minor = RAYO_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(rayo_plugin_descriptor),
    .arch = RAYO_ARCH_X86_64,
    .name = "avx2",
    .version = "0.1.0",
    .cpu_features = RAYO_CPU_X86_AVX2 | RAYO_CPU_X86_FMA,
    .priority = 50,
    .probe = avx2_probe,
    .init = avx2_init,
    .fini = avx2_fini,
    .ops = avx2_ops,
    .op_count = sizeof avx2_ops / sizeof avx2_ops[0],
    .memory = NULL,
};
