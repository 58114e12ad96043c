/* SPDX-License-Identifier: MIT */
/* x86-cache.c - what the x86 plugins read of the CPU: its cache sizes (the
 * sgemm blocking derives from them) and its brand string.
 *
 * Linux describes the caches in /sys/devices/system/cpu/cpu0/cache/index*;
 * where sysfs is missing (containers without /sys) the deterministic cache
 * parameters of cpuid (leaf 4 on Intel, 0x8000001d on AMD) say the same.
 */
#include "x86-cache.h"

#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Typical values of current x86 cores, when neither source answers. */
#define DEFAULT_L1D (32u << 10)
#define DEFAULT_L2 (512u << 10)
#define DEFAULT_L3 (8u << 20)

static int read_sysfs_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* "32K", "1M", "1024" -> bytes; 0 if unreadable. */
static size_t parse_size(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end == 'K')
        v <<= 10;
    else if (*end == 'M')
        v <<= 20;
    return (size_t)v;
}

static void record_cache(x86_caches *c, unsigned level, int is_instruction, size_t bytes)
{
    if (is_instruction || bytes == 0)
        return;
    if (level == 1)
        c->l1d = bytes;
    else if (level == 2)
        c->l2 = bytes;
    else if (level == 3)
        c->l3 = bytes;
}

static int caches_from_sysfs(x86_caches *c)
{
    int found = 0;
    for (unsigned index = 0; index < 8; index++) {
        char path[96], level[16], type[32], size[32];
        const char *dir = "/sys/devices/system/cpu/cpu0/cache/index";
        snprintf(path, sizeof path, "%s%u/level", dir, index);
        if (!read_sysfs_line(path, level, sizeof level))
            break;
        snprintf(path, sizeof path, "%s%u/type", dir, index);
        if (!read_sysfs_line(path, type, sizeof type))
            continue;
        snprintf(path, sizeof path, "%s%u/size", dir, index);
        if (!read_sysfs_line(path, size, sizeof size))
            continue;
        record_cache(c, (unsigned)atoi(level), strcmp(type, "Instruction") == 0, parse_size(size));
        found = 1;
    }
    return found;
}

/* Leaf 4 (Intel) and 0x8000001d (AMD) share one layout: one sub-leaf per cache. */
static int caches_from_cpuid_leaf(x86_caches *c, unsigned leaf)
{
    int found = 0;
    for (unsigned sub = 0; sub < 16; sub++) {
        unsigned a, b, cx, d;
        __cpuid_count(leaf, sub, a, b, cx, d);
        unsigned type = a & 0x1f;          /* 0 none, 1 data, 2 instruction, 3 unified */
        if (type == 0)
            break;
        unsigned level = (a >> 5) & 7;
        size_t ways = ((b >> 22) & 0x3ff) + 1, partitions = ((b >> 12) & 0x3ff) + 1;
        size_t line = (b & 0xfff) + 1, sets = (size_t)cx + 1;
        record_cache(c, level, type == 2, ways * partitions * line * sets);
        found = 1;
    }
    return found;
}

static int caches_from_cpuid(x86_caches *c)
{
    unsigned a, b, cx, d;
    if (!__get_cpuid(0, &a, &b, &cx, &d))
        return 0;
    unsigned max_leaf = a;
    int amd = b == 0x68747541u; /* "Auth" of AuthenticAMD */
    if (amd) {
        /* 0x8000001d exists when the TopologyExtensions bit (ecx 22 of 0x80000001) is set. */
        if (__get_cpuid_max(0x80000000u, NULL) < 0x8000001du ||
            !__get_cpuid(0x80000001u, &a, &b, &cx, &d) || !(cx & (1u << 22)))
            return 0;
        return caches_from_cpuid_leaf(c, 0x8000001du);
    }
    return max_leaf >= 4 && caches_from_cpuid_leaf(c, 4);
}

void x86_detect_caches(x86_caches *caches)
{
    x86_caches c = { 0, 0, 0, "defaults" };
    if (caches_from_sysfs(&c))
        c.source = "sysfs";
    else if (caches_from_cpuid(&c))
        c.source = "cpuid";
    if (c.l1d == 0)
        c.l1d = DEFAULT_L1D;
    if (c.l2 == 0)
        c.l2 = DEFAULT_L2;
    if (c.l3 == 0)
        c.l3 = c.l2 > DEFAULT_L3 ? c.l2 : DEFAULT_L3;
    *caches = c;
}

void x86_cpu_brand(char *out, size_t size)
{
    unsigned regs[12] = { 0 };
    out[0] = '\0';
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000004u)
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
