/* SPDX-License-Identifier: MIT */
/* test-rng.h - the tests' random numbers: splitmix64, seeded from
 * RAYO_CONFORM_SEED when set (to repeat a run), else from the time and pid;
 * the seed is printed. */
#ifndef RAYO_TEST_RNG_H
#define RAYO_TEST_RNG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state;

static inline uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static inline double rng_uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng_next() >> 11) / 9007199254740992.0;
}

static inline void rng_seed_from_env(void)
{
    const char *seed = getenv("RAYO_CONFORM_SEED");
    rng_state = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    printf("seed 0x%016llx (set RAYO_CONFORM_SEED to repeat)\n", (unsigned long long)rng_state);
}

#endif
