/* SPDX-License-Identifier: MIT */
/* plugin.c - the AVX-512 backend: its device name, its sgemm blocking rule,
 * op table and descriptor (the state and the rest of the glue are
 * ../cpu-base: x86-plugin.c, cpu-base.c).
 *
 * The core checks the descriptor's cpu_features (AVX-512F/BW/VL/DQ, AVX2, FMA,
 * each counted only when XGETBV says the OS saves the YMM, ZMM and opmask
 * state) before it runs any code of this plugin, so nothing here checks the
 * CPU again.
 */
#include "plugin.h"

static void describe(char *name, size_t size)
{
    x86_describe("AVX-512", name, size);
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
static void choose_blocking(const x86_caches *caches, x86_gemm_blocking *b)
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
    static const x86_gemm_shape shape = { AVX512_GEMM_MR, AVX512_GEMM_NR, choose_blocking };
    return x86_state_init(base, &shape);
}

const cpu_plugin_spec cpu_plugin = {
    .describe = describe,
    .state_size = sizeof(avx512_state),
    .init = init_state,
    .fini = x86_state_fini,
    .range_granule = AVX512_VECTOR_GRANULE,
};

/* Every dtype combination of rayo-ops.h has a kernel here (CPU_COMBO_*:
 * ../cpu-base/x86-plugin.h). */
static const rayo_op_entry avx512_ops[] = {
#include "cpu-op-table.h"
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
