/* SPDX-License-Identifier: MIT */
/* cuda-decls-own.c - the cuda plugin's entry-point names as dlsym sees them
 * when built with rayo's own Driver API declarations (for test-cuda-decls). */
#include "config.h"
#define RAYO_CUDA_OWN_DECLS
#include "cuda-internal.h"

#define STR2(x) #x
#define STR(x) STR2(x)
#define NAME_STRING(name) STR(name),
extern const char *const own_decls_names[];
extern const size_t own_decls_count;
const char *const own_decls_names[] = {CUDA_DRIVER_FUNCTIONS(NAME_STRING) CUDA_GRAPH_FUNCTIONS(NAME_STRING)};
const size_t own_decls_count = sizeof own_decls_names / sizeof own_decls_names[0];
