/* SPDX-License-Identifier: MIT */
/* dtype-list.h - the benchmarks' --dtype(s) LIST option: whether a dtype's
 * name is an item of a comma-separated list. */
#ifndef RAYO_BENCH_DTYPE_LIST_H
#define RAYO_BENCH_DTYPE_LIST_H
#include <string.h>
#include "rayo.h"

/* Whether dt's name (rayo_dtype_name: q4_0, q4_k, ...) is an item of the
 * comma-separated list (NULL: every dtype is). */
static inline int dtype_listed(const char *list, rayo_dtype dt)
{
    const char *name = rayo_dtype_name(dt);
    size_t len = strlen(name);
    for (const char *p = list; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ','))
        if (strcspn(p, ",") == len && !strncmp(p, name, len))
            return 1;
    return list == NULL;
}
#endif
