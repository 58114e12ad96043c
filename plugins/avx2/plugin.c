/* plugin.c - the AVX2+FMA backend: its device name, the init/fini of its
 * state (caches, sgemm blocking, scratch), its range splitting, op table and
 * descriptor (the rest of the glue is ../cpu-base).
 *
 * The core checks the descriptor's cpu_features (AVX2, FMA, F16C, and that
 * the OS saves YMM state) before it runs any code of this file, so nothing here
 * needs to check the CPU again.
 */
#include "plugin.h"

#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- threads --------------------------------------------------------------- */
/* Not cpu_run_ranges: avx2 splits by element count (its thresholds are
 * measured per op class, elementwise.c and rows.c) into one chunk per
 * thread at cache-line granules, and its range functions read the state
 * (streaming stores). */

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
    unsigned threads = cpu_threads(&st->cpu);
    if (threads <= 1) {
        fn(st, call, 0, n);
        return;
    }
    /* One chunk per thread, rounded up to the granule. */
    size_t chunk = ((n + threads - 1) / threads + granule - 1) / granule * granule;
    range_job job = { st, call, fn, n, chunk };
    cpu_parallel(&st->cpu, (n + chunk - 1) / chunk, range_task, &job);
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

/* The device's name in rayo-info: the ISA and the CPU's brand. */
static void describe(char *name, size_t size)
{
    char brand[64];
    cpu_brand(brand, sizeof brand);
    snprintf(name, size, "CPU AVX2+FMA%s%s%s", brand[0] ? " (" : "", brand, brand[0] ? ")" : "");
}

static rayo_status init_state(cpu_state *base)
{
    avx2_state *st = (avx2_state *)base; /* cpu_state is its first member */
    const rayo_host *host = base->host;
    avx2_detect_caches(&st->caches);
    avx2_choose_blocking(&st->caches, &st->blocking);
    x86_gemm_blocking_overrides(host, &st->blocking, AVX2_GEMM_MR, AVX2_GEMM_NR);
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
    if (x86_gemm_pool_init(&st->scratch_pool) != RAYO_OK)
        return RAYO_E_BACKEND;
    if (host->log)
        host->log(host, RAYO_LOG_DEBUG,
                  "caches (%s): L1d %zu KiB, L2 %zu KiB, L3 %zu KiB; sgemm blocks mc %zu kc %zu nc %zu",
                  st->caches.source, st->caches.l1d >> 10, st->caches.l2 >> 10, st->caches.l3 >> 10,
                  st->blocking.mc, st->blocking.kc, st->blocking.nc);
    return RAYO_OK;
}

static void fini_state(cpu_state *base)
{
    avx2_state *st = (avx2_state *)base;
    x86_gemm_pool_fini(&st->cpu, &st->scratch_pool);
}

/* ---- the op table and the descriptor ------------------------------------- */

const cpu_plugin_spec cpu_plugin = {
    .describe = describe,
    .state_size = sizeof(avx2_state),
    .init = init_state,
    .fini = fini_state,
    .range_granule = 1, /* cpu_run_ranges is not used: see avx2_run_ranges */
};

#define T(X) RAYO_DTYPE_##X
#define COMBO(OP, A, B, C, Y, FN) {RAYO_OP_##OP, RAYO_DTYPES(T(A), T(B), T(C), T(Y)), FN}

#define RAYO_KERNEL CPU_KERNEL
static const rayo_op_entry avx2_ops[] = {
#include "rayo-op-table.h"
    /* dtype combinations of rayo-ops.h with a kernel here (the others fall
     * through to the scalar backend) */
    COMBO(GEMV, F16, F32, NONE, F32, avx2_gemv_quant),
    COMBO(GEMV, BF16, F32, NONE, F32, avx2_gemv_quant),
    COMBO(GEMV, Q8_0, F32, NONE, F32, avx2_gemv_quant),
    COMBO(GEMV, Q4_0, F32, NONE, F32, avx2_gemv_quant),
    COMBO(GEMV, Q4_K, F32, NONE, F32, avx2_gemv_quant),
    COMBO(GEMV, Q6_K, F32, NONE, F32, avx2_gemv_quant),
    COMBO(MATMUL, F32, F16, NONE, F32, avx2_matmul_typed),
    COMBO(MATMUL, F32, BF16, NONE, F32, avx2_matmul_typed),
    COMBO(MATMUL, F32, Q8_0, NONE, F32, avx2_matmul_typed),
    COMBO(MATMUL, F32, Q4_0, NONE, F32, avx2_matmul_typed),
    COMBO(MATMUL, F32, Q4_K, NONE, F32, avx2_matmul_typed),
    COMBO(MATMUL, F32, Q6_K, NONE, F32, avx2_matmul_typed),
    COMBO(MATMUL, F16, F16, NONE, F32, avx2_matmul_typed),
    COMBO(MATMUL, BF16, BF16, NONE, F32, avx2_matmul_typed),
#include "x86-infer-ops.h" /* convert, get_rows, rope, attention, gated units */
};

CPU_PLUGIN_DESCRIPTOR("avx2", RAYO_ARCH_X86_64, RAYO_CPU_X86_AVX2 | RAYO_CPU_X86_FMA | RAYO_CPU_X86_F16C, 50, avx2_ops);
