/* SPDX-License-Identifier: MIT */
/* plugin.c - the AVX2+FMA backend: its device name, its sgemm blocking rule,
 * op table and descriptor (the state and the rest of
 * the glue are ../cpu-base: x86-plugin.c, cpu-base.c).
 *
 * The core checks the descriptor's cpu_features (AVX2, FMA, F16C, and that
 * the OS saves YMM state) before it runs any code of this file, so nothing here
 * needs to check the CPU again, but for AVX-VNNI, which the plugin uses
 * only where the CPU has it (the relaxed int8 gemv, quant.c, and the
 * integer matmul, ../cpu-base/x86-qmatmul.c).
 */
#include "plugin.h"

#include <cpuid.h>
#include <string.h>

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

/* Whether the CPU has AVX-VNNI: cpuid leaf 7, subleaf 1 (there when
 * subleaf 0's eax, the last subleaf, is at least 1), eax bit 4.  Its
 * instructions work on the YMM registers, whose state the core has found
 * the OS saves before it loaded the plugin. */
static int cpu_has_avx_vnni(void)
{
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (a < 1)
        return 0;
    __cpuid_count(7, 1, a, b, c, d);
    return (a >> 4) & 1;
}

/* The vnni setting (50-avx2.conf): auto, AVX-VNNI where the CPU has it,
 * or off; said at debug level, with the reason when it is not used. */
static void choose_vnni(x86_state *st)
{
    const rayo_host *host = st->cpu.host;
    const char *v = host->config ? host->config(host, "vnni") : NULL;
    int off = v && strcmp(v, "off") == 0;
    if (v && !off && strcmp(v, "auto") != 0 && host->log)
        host->log(host, RAYO_LOG_WARN, "[backend.avx2] vnni = %s ignored: want auto or off", v);
    int has = cpu_has_avx_vnni();
    st->avx_vnni = has && !off;
    if (host->log)
        host->log(host, RAYO_LOG_DEBUG, "relaxed int8 gemv (Q8_0, Q4_0, Q6_K) and integer matmul: %s",
                  st->avx_vnni ? "AVX-VNNI (vpdpbusd, vpdpwssd)"
                  : off        ? "AVX2 (maddubs), not AVX-VNNI: vnni = off"
                               : "AVX2 (maddubs), not AVX-VNNI: the CPU lacks it (cpuid 7.1 eax bit 4)");
}

/* cpu_run_ranges is not used (granule 1): see avx2_run_ranges (plugin.h). */
X86_PLUGIN_SPEC_WITH("AVX2+FMA", gemm_shape, 1, choose_vnni);

/* Every dtype combination of rayo-ops.h has a kernel here (CPU_COMBO_*:
 * ../cpu-base/x86-plugin.h). */
#define CPU_PLUGIN_ID "avx2", RAYO_ARCH_X86_64, RAYO_CPU_X86_AVX2 | RAYO_CPU_X86_FMA | RAYO_CPU_X86_F16C, 50
#include "cpu-plugin_tmpl.c"
