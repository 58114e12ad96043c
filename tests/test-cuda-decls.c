/* SPDX-License-Identifier: MIT */
/* test-cuda-decls.c - rayo's own CUDA Driver API declarations
 * (plugins/cuda/cuda-driver-api.h) agree with the toolkit's cuda.h.
 *
 * With both included, the compiler itself checks that every typedef and
 * prototype of ours is compatible with cuda.h's (a mismatch fails the build
 * of this test).  At run time: every constant has cuda.h's value, and the
 * plugin's entry-point names (after the versioned-name mapping, which
 * dlsym looks up) are the same with either header.  SKIP without cuda.h. */
#include "config.h"
#include <stdio.h>
#include <string.h>

/* The plugin's entry-point names with rayo's own declarations
 * (tests/cuda-decls-own.c). */
extern const char *const own_decls_names[];
extern const size_t own_decls_count;

#ifndef HAVE_CUDA_H
int main(void)
{
    printf("SKIP: no cuda.h (configure found no CUDA toolkit): nothing to compare with\n");
    return own_decls_count ? 77 : 99;
}
#else
#include "cuda-internal.h" /* cuda.h, and the plugin's list of entry points */
#define RAYO_CUDA_DECLS_CHECK
#include "cuda-driver-api.h"

static int passed, failed;

static void check_value(const char *name, long long theirs, long long ours)
{
    if (theirs == ours) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "FAIL: %s is %lld in cuda.h, %lld in cuda-driver-api.h\n", name, theirs, ours);
}

#define STR2(x) #x
#define STR(x) STR2(x)
#define NAME_STRING(name) STR(name),
static const char *const toolkit_names[] = {CUDA_DRIVER_FUNCTIONS(NAME_STRING) CUDA_GRAPH_FUNCTIONS(NAME_STRING)};

int main(void)
{
#define CHECK_VALUE(name, value) check_value(#name, (long long)(name), (long long)(value));
    RAYO_CU_RESULTS(CHECK_VALUE)
    RAYO_CU_DEVICE_ATTRIBUTES(CHECK_VALUE)
    RAYO_CU_FUNCTION_ATTRIBUTES(CHECK_VALUE)
    RAYO_CU_JIT_OPTIONS(CHECK_VALUE)
    RAYO_CU_JIT_INPUT_TYPES(CHECK_VALUE)
    RAYO_CU_STREAM_FLAGS(CHECK_VALUE)
    RAYO_CU_EVENT_FLAGS(CHECK_VALUE)
    RAYO_CU_TENSOR_MAP_DATA_TYPES(CHECK_VALUE)
    RAYO_CU_TENSOR_MAP_INTERLEAVES(CHECK_VALUE)
    RAYO_CU_TENSOR_MAP_SWIZZLES(CHECK_VALUE)
    RAYO_CU_TENSOR_MAP_L2_PROMOTIONS(CHECK_VALUE)
    RAYO_CU_TENSOR_MAP_OOB_FILLS(CHECK_VALUE)
    RAYO_CU_GRAPH_EDGES(CHECK_VALUE)
    check_value("sizeof(CUgraphEdgeData)", (long long)sizeof(CUgraphEdgeData), 8);
    check_value("sizeof(CUtensorMap)", (long long)sizeof(CUtensorMap), 128);
    check_value("sizeof(CUdeviceptr)", (long long)sizeof(CUdeviceptr), 8);

    size_t n = sizeof toolkit_names / sizeof toolkit_names[0];
    check_value("number of entry points", (long long)n, (long long)own_decls_count);
    for (size_t i = 0; i < n && i < own_decls_count; i++) {
        if (!strcmp(toolkit_names[i], own_decls_names[i])) {
            passed++;
            continue;
        }
        failed++;
        fprintf(stderr, "FAIL: entry point %zu is looked up as %s with cuda.h, as %s with cuda-driver-api.h\n",
                i, toolkit_names[i], own_decls_names[i]);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : (passed ? 0 : 99);
}
#endif
