/* SPDX-License-Identifier: MIT */
/* plugin.c - the AVX2+FMA backend: its device name, its sgemm blocking rule,
 * op table and descriptor (the state and the rest of
 * the glue are ../cpu-base: x86-plugin.c, cpu-base.c).
 *
 * The core checks the descriptor's cpu_features (AVX2, FMA, F16C, and that
 * the OS saves YMM state) before it runs any code of this file, so nothing here
 * needs to check the CPU again.
 */
#include "plugin.h"

/* ---- device name, state ---------------------------------------------------- */

static void describe(char *name, size_t size)
{
    x86_describe("AVX2+FMA", name, size);
}

static size_t clamp_size(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The Goto/BLIS rules for the 4x24 microkernel on floats, with factors
 * measured on an AMD EPYC (Zen 3, 32 KiB L1d, 512 KiB L2) against OpenBLAS:
 *   kc: a kc x 24 panel of packed B fills about 3/4 of L1d (the A panel
 *       streams beside it); a larger kc means fewer passes over C and a
 *       cheaper microkernel epilogue per flop;
 *   mc: the packed mc x kc block of A fills about a quarter of L2;
 *   nc: the packed kc x nc block of B fills about a quarter of L3 (shared by
 *       the cores, which all read it). */
static void choose_blocking(const x86_caches *caches, x86_gemm_blocking *b)
{
    size_t kc = caches->l1d * 3 / 4 / (AVX2_GEMM_NR * sizeof(float));
    b->kc = clamp_size(kc, 64, 768) / 8 * 8;
    size_t mc = caches->l2 / 4 / (b->kc * sizeof(float));
    b->mc = clamp_size(mc, 4 * AVX2_GEMM_MR, 1024) / AVX2_GEMM_MR * AVX2_GEMM_MR;
    size_t nc = caches->l3 / 4 / (b->kc * sizeof(float));
    b->nc = clamp_size(nc, 10 * AVX2_GEMM_NR, 4096) / AVX2_GEMM_NR * AVX2_GEMM_NR;
}

static rayo_status init_state(cpu_state *base)
{
    static const x86_gemm_shape shape = { AVX2_GEMM_MR, AVX2_GEMM_NR, choose_blocking };
    return x86_state_init(base, &shape);
}

/* ---- the op table and the descriptor ------------------------------------- */

const cpu_plugin_spec cpu_plugin = {
    .describe = describe,
    .state_size = sizeof(avx2_state),
    .init = init_state,
    .fini = x86_state_fini,
    .range_granule = 1, /* cpu_run_ranges is not used: see avx2_run_ranges (plugin.h) */
};

/* Every dtype combination of rayo-ops.h has a kernel here (CPU_COMBO_*:
 * ../cpu-base/x86-plugin.h). */
static const rayo_op_entry avx2_ops[] = {
#include "cpu-op-table.h"
};

CPU_PLUGIN_DESCRIPTOR("avx2", RAYO_ARCH_X86_64, RAYO_CPU_X86_AVX2 | RAYO_CPU_X86_FMA | RAYO_CPU_X86_F16C, 50, avx2_ops);
