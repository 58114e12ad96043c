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

/* The Goto/BLIS rule (x86-plugin.h) for the 4x24 microkernel on floats,
 * with factors measured on an AMD EPYC (Zen 3, 32 KiB L1d, 512 KiB L2)
 * against OpenBLAS: a kc x 24 panel of packed B fills about 3/4 of L1d (the
 * A panel streams beside it; a larger kc means fewer passes over C and a
 * cheaper microkernel epilogue per flop); the packed A block a quarter of
 * L2. */
static const x86_gemm_shape gemm_shape = {
    .mr = AVX2_GEMM_MR, .nr = AVX2_GEMM_NR, .kc_l1d_num = 3, .kc_l1d_den = 4, .kc_max = 768,
    .mc_l2_div = 4, .mc_max = 1024, .nc_min_tiles = 10, .nc_max = 4096,
};

/* cpu_run_ranges is not used (granule 1): see avx2_run_ranges (plugin.h). */
X86_PLUGIN_SPEC("AVX2+FMA", gemm_shape, 1);

/* Every dtype combination of rayo-ops.h has a kernel here (CPU_COMBO_*:
 * ../cpu-base/x86-plugin.h). */
#define CPU_PLUGIN_ID "avx2", RAYO_ARCH_X86_64, RAYO_CPU_X86_AVX2 | RAYO_CPU_X86_FMA | RAYO_CPU_X86_F16C, 50
#include "cpu-plugin_tmpl.c"
