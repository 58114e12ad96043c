/* SPDX-License-Identifier: MIT */
/* plugin.c - the AVX-512 backend: its device name, its sgemm blocking rule,
 * op table and descriptor (the state and the rest of the glue are
 * ../cpu-base: x86-plugin.c, cpu-base.c, cpu-plugin_tmpl.c).
 *
 * The core checks the descriptor's cpu_features (AVX-512F/BW/VL/DQ, AVX2, FMA,
 * each counted only when XGETBV says the OS saves the YMM, ZMM and opmask
 * state) before it runs any code of this plugin, so nothing here checks the
 * CPU again.
 */
#include "plugin.h"

/* The Goto/BLIS rule (x86-plugin.h) for the 12x32 microkernel, with factors
 * measured on an AMD EPYC (Zen 4: 32 KiB L1d, 1 MiB L2) against OpenBLAS:
 *   kc: a kc x 32 panel of packed B as large as L1d (a larger kc means
 *       fewer passes over C, whose loads missed the caches: kc = 128 was 8%
 *       slower at 1024^3);
 *   mc: an mc x kc block of A in an eighth of L2 (smaller blocks measured
 *       faster than half of L2: the B panel's lines then stay in L2 too). */
static const x86_gemm_shape gemm_shape = {
    .mr = AVX512_GEMM_MR, .nr = AVX512_GEMM_NR, .kc_l1d_num = 1, .kc_l1d_den = 1, .kc_max = 512,
    .mc_l2_div = 8, .mc_max = 1200, .nc_min_tiles = 8, .nc_max = 8192,
};

X86_PLUGIN_SPEC("AVX-512", gemm_shape, AVX512_VECTOR_GRANULE);

/* Every dtype combination of rayo-ops.h has a kernel here (CPU_COMBO_*:
 * ../cpu-base/x86-plugin.h).  Priority 60: above avx2 (50), which it
 * supersedes where both load.  -mavx512f implies -mavx2 -mfma: gcc may emit
 * AVX2 and FMA instructions too, so the plugin requires them as well, and
 * F16C for quant.c's block scales (every AVX-512 CPU has them; the mask
 * RAYO_CPU_DISABLE=avx2 then refuses it like avx2). */
#define CPU_PLUGIN_ID                                                                      \
    "avx512", RAYO_ARCH_X86_64,                                                            \
        RAYO_CPU_X86_AVX512F | RAYO_CPU_X86_AVX512BW | RAYO_CPU_X86_AVX512VL |             \
            RAYO_CPU_X86_AVX512DQ | RAYO_CPU_X86_AVX2 | RAYO_CPU_X86_FMA | RAYO_CPU_X86_F16C, \
        60
#include "cpu-plugin_tmpl.c"
