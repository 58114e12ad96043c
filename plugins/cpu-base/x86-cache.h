/* SPDX-License-Identifier: MIT */
/* x86-cache.h - what the x86 plugins (avx2, avx512) read of the CPU with
 * sysfs and cpuid (x86-cache.c: plain C, compiled into both). */
#ifndef RAYO_X86_CACHE_H
#define RAYO_X86_CACHE_H

#include <stddef.h>

typedef struct x86_caches {
    size_t l1d, l2, l3;   /* bytes, per core for l1d/l2, total for l3 */
    const char *source;   /* "sysfs", "cpuid" or "defaults" */
} x86_caches;

void x86_detect_caches(x86_caches *caches);

/* The CPU's brand string (cpuid 0x80000002..4), trimmed; "" where cpuid
 * lacks it. */
void x86_cpu_brand(char *out, size_t size);

#endif
