/* SPDX-License-Identifier: MIT */
/* rng.c - random numbers and seeds of the conformance engine (conform.h). */
#define _POSIX_C_SOURCE 200809L
#include "conform-internal.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void conform_rng_seed(conform_rng *rng, uint64_t seed)
{
    rng->state = seed;
}

uint64_t conform_rng_next(conform_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double conform_rng_uniform(conform_rng *rng)
{
    return (double)(conform_rng_next(rng) >> 11) * 0x1.0p-53;
}

void conform_fill_uniform(conform_rng *rng, float *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)uniform_in(rng, lo, hi);
}

uint64_t conform_default_seed(void)
{
    const char *env = getenv("RAYO_CONFORM_SEED");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 0);
        if (*end == '\0')
            return v;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    conform_rng r = {(uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
                     ((uint64_t)getpid() << 32)};
    /* Short enough to type when replaying a run. */
    return conform_rng_next(&r) % 4000000000u;
}
