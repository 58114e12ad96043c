/* plugin.c - the AVX-512 backend: its device name, the init/fini of its
 * state (caches, sgemm blocking, scratch), op table and descriptor (the rest
 * of the glue is ../cpu-base).
 *
 * The core checks the descriptor's cpu_features (AVX-512F/BW/VL/DQ, AVX2, FMA,
 * each counted only when XGETBV says the OS saves the YMM, ZMM and opmask
 * state) before it runs any code of this plugin, so nothing here checks the
 * CPU again.
 */
#include "plugin.h"

#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t avx512_stream_bytes = SIZE_MAX;

/* The device's name in rayo-info: the ISA and the CPU's brand (cpuid
 * 0x80000002..4, 48 bytes of text padded with spaces). */
static void describe(char *name, size_t size)
{
    unsigned regs[13] = { 0 }; /* 12 registers of text and a terminating zero */
    if (__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u)
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    const char *brand = (const char *)regs;
    while (*brand == ' ')
        brand++;
    int len = (int)strlen(brand);
    while (len > 0 && brand[len - 1] == ' ')
        len--;
    snprintf(name, size, "CPU AVX-512%s%.*s%s", len ? " (" : "", len, brand, len ? ")" : "");
}

static size_t clamp_size(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The Goto/BLIS rules for the 12x32 microkernel, with factors measured on
 * an AMD EPYC (Zen 4: 32 KiB L1d, 1 MiB L2) against OpenBLAS:
 *   kc: a kc x 32 panel of packed B as large as L1d (a larger kc means
 *       fewer passes over C, whose loads missed the caches: kc = 128 was 8%
 *       slower at 1024^3);
 *   mc: an mc x kc block of A in an eighth of L2 (smaller blocks measured
 *       faster than half of L2: the B panel's lines then stay in L2 too);
 *   nc: a kc x nc block of B in a quarter of L3. */
static void choose_blocking(const avx2_caches *caches, avx512_blocking *b)
{
    size_t kc = caches->l1d / (AVX512_GEMM_NR * sizeof(float));
    b->kc = clamp_size(kc, 64, 512) / 8 * 8;
    size_t mc = caches->l2 / 8 / (b->kc * sizeof(float));
    b->mc = clamp_size(mc, 4 * AVX512_GEMM_MR, 1200) / AVX512_GEMM_MR * AVX512_GEMM_MR;
    size_t nc = caches->l3 / 4 / (b->kc * sizeof(float));
    b->nc = clamp_size(nc, 8 * AVX512_GEMM_NR, 8192) / AVX512_GEMM_NR * AVX512_GEMM_NR;
}

static rayo_status init_state(cpu_state *base)
{
    avx512_state *st = (avx512_state *)base; /* cpu_state is its first member */
    const rayo_host *host = base->host;
    avx2_detect_caches(&st->caches);
    choose_blocking(&st->caches, &st->blocking);
    x86_gemm_blocking_overrides(host, &st->blocking, AVX512_GEMM_MR, AVX512_GEMM_NR);
    /* Streaming stores pay off only when the output could not stay in the
     * last-level cache anyway. */
    avx512_stream_bytes = st->caches.l3;
    const char *stream = host->config ? host->config(host, "stream_min_bytes") : NULL;
    if (stream) {
        char *end;
        unsigned long long v = strtoull(stream, &end, 10);
        if (*end == '\0' && end != stream)
            avx512_stream_bytes = (size_t)v;
        else if (host->log)
            host->log(host, RAYO_LOG_WARN, "[backend.avx512] stream_min_bytes = %s ignored: not a number", stream);
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
    avx512_state *st = (avx512_state *)base;
    x86_gemm_pool_fini(&st->cpu, &st->scratch_pool);
}

const cpu_plugin_spec cpu_plugin = {
    .describe = describe,
    .state_size = sizeof(avx512_state),
    .init = init_state,
    .fini = fini_state,
    .range_granule = AVX512_VECTOR_GRANULE,
};

#define RAYO_KERNEL CPU_KERNEL
#define T(X) RAYO_DTYPE_##X
#define COMBO(OP, A, B, C, Y, FN) {RAYO_OP_##OP, RAYO_DTYPES(T(A), T(B), T(C), T(Y)), FN}

static const rayo_op_entry avx512_ops[] = {
#include "rayo-op-table.h"
    /* dtype combinations of rayo-ops.h with a kernel here (the others fall
     * through to the next backend) */
    COMBO(GEMV, F16, F32, NONE, F32, avx512_gemv_quant),
    COMBO(GEMV, BF16, F32, NONE, F32, avx512_gemv_quant),
    COMBO(GEMV, Q8_0, F32, NONE, F32, avx512_gemv_quant),
    COMBO(GEMV, Q4_0, F32, NONE, F32, avx512_gemv_quant),
    COMBO(GEMV, Q4_K, F32, NONE, F32, avx512_gemv_quant),
    COMBO(GEMV, Q6_K, F32, NONE, F32, avx512_gemv_quant),
    COMBO(MATMUL, F32, F16, NONE, F32, avx512_matmul_typed),
    COMBO(MATMUL, F32, BF16, NONE, F32, avx512_matmul_typed),
    COMBO(MATMUL, F32, Q8_0, NONE, F32, avx512_matmul_typed),
    COMBO(MATMUL, F32, Q4_0, NONE, F32, avx512_matmul_typed),
    COMBO(MATMUL, F32, Q4_K, NONE, F32, avx512_matmul_typed),
    COMBO(MATMUL, F32, Q6_K, NONE, F32, avx512_matmul_typed),
    COMBO(MATMUL, F16, F16, NONE, F32, avx512_matmul_typed),
    COMBO(MATMUL, BF16, BF16, NONE, F32, avx512_matmul_typed),
#include "x86-infer-ops.h" /* convert, get_rows, rope, attention, gated units */
};

/* Priority 60: above avx2 (50), which it supersedes where both load. */
/* -mavx512f implies -mavx2 -mfma: gcc may emit AVX2 and FMA instructions
 * too, so the plugin requires them as well, and F16C for quant.c's block
 * scales (every AVX-512 CPU has them; the
 * mask RAYO_CPU_DISABLE=avx2 then refuses it like avx2). */
CPU_PLUGIN_DESCRIPTOR("avx512", RAYO_ARCH_X86_64,
                      RAYO_CPU_X86_AVX512F | RAYO_CPU_X86_AVX512BW | RAYO_CPU_X86_AVX512VL |
                          RAYO_CPU_X86_AVX512DQ | RAYO_CPU_X86_AVX2 | RAYO_CPU_X86_FMA | RAYO_CPU_X86_F16C,
                      60, avx512_ops);
