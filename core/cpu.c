/* SPDX-License-Identifier: MIT */
/* cpu.c - what the CPU *and the OS* support.
 *
 * A plugin compiled for AVX2 must never run where the OS does not save YMM
 * state (VMs, some kernels): so AVX/AVX2/FMA count only when XGETBV says the
 * OS enabled XMM+YMM, and AVX-512 only with opmask+ZMM state too. */
#include "internal.h"
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#endif
#if defined(__aarch64__) && defined(HAVE_GETAUXVAL)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1 << 10)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
#endif

static const struct { const char *name; uint64_t bit; } feature_names[] = {
    {"sse2", RAYO_CPU_X86_SSE2},       {"sse41", RAYO_CPU_X86_SSE41},
    {"avx", RAYO_CPU_X86_AVX},         {"avx2", RAYO_CPU_X86_AVX2},
    {"fma", RAYO_CPU_X86_FMA},         {"f16c", RAYO_CPU_X86_F16C},
    {"avx512f", RAYO_CPU_X86_AVX512F}, {"avx512bw", RAYO_CPU_X86_AVX512BW},
    {"avx512vl", RAYO_CPU_X86_AVX512VL}, {"avx512dq", RAYO_CPU_X86_AVX512DQ},
    {"asimd", RAYO_CPU_ARM_ASIMD},     {"fp16", RAYO_CPU_ARM_FP16},
    {"dotprod", RAYO_CPU_ARM_DOTPROD}, {"sve", RAYO_CPU_ARM_SVE},
    {"simd128", RAYO_CPU_WASM_SIMD128},
};

#if defined(__x86_64__) || defined(__i386__)
static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static uint64_t cpu_detect_x86(void)
{
    unsigned a, b, c, d;
    uint64_t f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (d & bit_SSE2) f |= RAYO_CPU_X86_SSE2;
    if (c & bit_SSE4_1) f |= RAYO_CPU_X86_SSE41;
    bool osxsave = (c & bit_OSXSAVE) != 0;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    bool ymm_os = (xcr0 & 0x6) == 0x6;          /* XMM and YMM state enabled */
    bool zmm_os = ymm_os && (xcr0 & 0xe0) == 0xe0; /* bits 5-7: opmask, ZMM_Hi256, Hi16_ZMM */
    if (ymm_os && (c & bit_AVX)) f |= RAYO_CPU_X86_AVX;
    if (ymm_os && (c & bit_FMA)) f |= RAYO_CPU_X86_FMA;
    if (ymm_os && (c & bit_F16C)) f |= RAYO_CPU_X86_F16C;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        if (ymm_os && (b & bit_AVX2)) f |= RAYO_CPU_X86_AVX2;
        if (zmm_os && (b & bit_AVX512F)) f |= RAYO_CPU_X86_AVX512F;
        if (zmm_os && (b & bit_AVX512BW)) f |= RAYO_CPU_X86_AVX512BW;
        if (zmm_os && (b & bit_AVX512VL)) f |= RAYO_CPU_X86_AVX512VL;
        if (zmm_os && (b & bit_AVX512DQ)) f |= RAYO_CPU_X86_AVX512DQ;
    }
    return f;
}
#endif

#ifdef __EMSCRIPTEN__
/* The core is built without SIMD so that it runs on every engine, so the
 * engine itself is asked: does it validate the smallest module that uses a
 * SIMD128 instruction (a function doing v128.const 0; drop)? */
EM_JS(int, engine_validates_simd128, (void), {
    var simd_module = new Uint8Array([
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, /* "\0asm", version 1 */
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00,             /* types: () -> () */
        0x03, 0x02, 0x01, 0x00,                         /* one function of type 0 */
        0x0a, 0x17, 0x01, 0x15, 0x00,                   /* code: one body, no locals */
        0xfd, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* v128.const 0 */
        0x1a, 0x0b                                      /* drop, end */
    ]);
    try {
        return WebAssembly.validate(simd_module) ? 1 : 0;
    } catch (e) {
        return 0;
    }
});
#endif

uint64_t cpu_detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return cpu_detect_x86();
#elif defined(__aarch64__) && defined(HAVE_GETAUXVAL)
    unsigned long hw = getauxval(AT_HWCAP);
    uint64_t f = 0;
    if (hw & HWCAP_ASIMD) f |= RAYO_CPU_ARM_ASIMD;
    if (hw & HWCAP_ASIMDHP) f |= RAYO_CPU_ARM_FP16;
    if (hw & HWCAP_ASIMDDP) f |= RAYO_CPU_ARM_DOTPROD;
    if (hw & HWCAP_SVE) f |= RAYO_CPU_ARM_SVE;
    return f;
#elif defined(__EMSCRIPTEN__)
    return engine_validates_simd128() ? RAYO_CPU_WASM_SIMD128 : 0;
#elif defined(__wasm_simd128__)
    /* A wasm module with SIMD instructions only validates on an engine that
     * has them, so if this code runs, SIMD128 is there. */
    return RAYO_CPU_WASM_SIMD128;
#else
    return 0;
#endif
}

uint32_t cpu_arch(void)
{
#if defined(__x86_64__)
    return RAYO_ARCH_X86_64;
#elif defined(__aarch64__)
    return RAYO_ARCH_AARCH64;
#elif defined(__wasm32__)
    return RAYO_ARCH_WASM32;
#else
    return RAYO_ARCH_ANY;
#endif
}

const char *arch_name(uint32_t arch)
{
    switch (arch) {
    case RAYO_ARCH_ANY: return "any";
    case RAYO_ARCH_X86_64: return "x86-64";
    case RAYO_ARCH_AARCH64: return "aarch64";
    case RAYO_ARCH_WASM32: return "wasm32";
    }
    return "unknown";
}

struct names_acc { uint64_t mask; };

static void add_feature_name(void *u, const char *item)
{
    struct names_acc *acc = u;
    for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++)
        if (strcmp(item, feature_names[i].name) == 0)
            acc->mask |= feature_names[i].bit;
}

uint64_t cpu_features_from_names(const char *list)
{
    struct names_acc acc = {0};
    list_each(list, ',', add_feature_name, &acc);
    return acc.mask;
}

const char *cpu_feature_names(uint64_t mask, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++) {
        if (!(mask & feature_names[i].bit))
            continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", feature_names[i].name);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
    return buf;
}
