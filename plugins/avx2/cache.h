/* cache.h - the CPU's cache sizes (cache.c): shared by the x86 plugins
 * (avx2, and avx512, which compiles cache.c in again: plain C with cpuid). */
#ifndef RAYO_AVX2_CACHE_H
#define RAYO_AVX2_CACHE_H

#include <stddef.h>

typedef struct avx2_caches {
    size_t l1d, l2, l3;   /* bytes, per core for l1d/l2, total for l3 */
    const char *source;   /* "sysfs", "cpuid" or "defaults" */
} avx2_caches;

void avx2_detect_caches(avx2_caches *caches);

#endif
