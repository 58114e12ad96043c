/* cuda-ptx.h - the PTX modules that ptx/gen-ptx.c generates at build time
 * (cuda-ptx.c in the build directory) and the plugin embeds. */
#ifndef RAYO_CUDA_PTX_H
#define RAYO_CUDA_PTX_H

#include <stddef.h>

typedef struct rayo_ptx_module {
    const char *name;     /* "elementwise", "reduce", "rows", "matrix", "sgemm", "tf32" */
    int sm;               /* the .target: 80 or 90 */
    const char *ptx;      /* NUL-terminated PTX text */
    size_t size;          /* strlen(ptx) */
} rayo_ptx_module;

/* A TF32 gemm variant: its block tile and launch shape. */
typedef struct rayo_ptx_tf32_config {
    const char *name;
    int block_m, block_n;
    int threads;
    int smem_bytes;       /* dynamic shared memory per block */
} rayo_ptx_tf32_config;

extern const rayo_ptx_module rayo_cuda_ptx_modules[];
extern const unsigned rayo_cuda_ptx_module_count;
extern const rayo_ptx_tf32_config rayo_cuda_tf32_configs[];
extern const unsigned rayo_cuda_tf32_config_count;

#endif
