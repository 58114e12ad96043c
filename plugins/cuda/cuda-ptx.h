/* SPDX-License-Identifier: MIT */
/* cuda-ptx.h - the PTX modules that ptx/gen-ptx generates at build time
 * (cuda-ptx.c in the build directory) and the plugin embeds.
 *
 * Each module is embedded once, without its target header: the targets'
 * texts differ only in that header, which rayo_ptx_text() puts in front
 * when the module is loaded.  The generator writes its PTX files with the
 * same rayo_ptx_header(), so both give the same text for a target. */
#ifndef RAYO_CUDA_PTX_H
#define RAYO_CUDA_PTX_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The PTX modules, the one list of them: X(ID, name, min_sm, arch_specific)
 * gives the plugin's module ids (MOD_<ID>, cuda-internal.h), the
 * generator's table and its module_<name>() functions (ptx/gen-ptx.h), and
 * the order of rayo_cuda_ptx_modules[].  min_sm: the lowest target the
 * module is written for (0: every target); arch_specific: for
 * sm_<min_sm>a only, which no other GPU runs. */
#define RAYO_PTX_MODULES(X)                                                          \
    X(ELEMENTWISE, elementwise, 0, 0)                                                \
    X(REDUCE, reduce, 0, 0)                                                          \
    X(ROWS, rows, 0, 0)                                                              \
    X(MATRIX, matrix, 0, 0)                                                          \
    X(SGEMM, sgemm, 0, 0)                                                            \
    X(TF32, tf32, 0, 0)                                                              \
    X(ROWS_CLUSTER, rows_cluster, 90, 0) /* clusters, distributed shared memory */   \
    X(INFER, infer, 0, 0)                                                            \
    X(SPLITK, splitk, 0, 0)                                                          \
    X(WGMMA, wgmma, 90, 1) /* Hopper's warpgroup MMA: sm_90a */                      \
    X(MMA16, mma16, 0, 0)                                                            \
    X(ATTN_CLUSTER, attn_cluster, 90, 0) /* relaxed decode attention over clusters */

typedef struct rayo_ptx_module {
    const char *name;     /* as in RAYO_PTX_MODULES */
    const char *body;     /* NUL-terminated PTX after the target header */
    size_t body_size;     /* strlen(body) */
    int min_sm;           /* the lowest target it is written for */
    int arch_specific;    /* written for sm_<min_sm>a only */
} rayo_ptx_module;

/* A TF32 or 16-bit (mma16) gemm variant: its block tile and launch shape. */
typedef struct rayo_ptx_tf32_config {
    const char *name;
    int block_m, block_n;
    int threads;
    int smem_bytes;       /* dynamic shared memory per block */
} rayo_ptx_tf32_config;

/* The fast fp32 gemm kernels (module "sgemm", ptx/sgemm.c) add their float
 * sums into second sums after every BLOCK_K terms; the second sums take
 * ACC_BYTES of dynamic shared memory (64 floats for each of 256 threads). */
#define RAYO_PTX_SGEMM_BLOCK_K 256
#define RAYO_PTX_SGEMM_ACC_BYTES 65536

/* The row-cached kernels of module "rows" (rowc_*, ptx/rows.c) keep their
 * row in dynamic shared memory (n floats per row: a warp's row each for
 * rowc_*_warp_*, of up to ROWC_WARP_MAX_N floats, in blocks of
 * ROWC_WARP_THREADS; rowc_*_clusterC_* (sm_90) spread a row over the
 * shared memory of C CTAs, C = 2 ... MAX_CLUSTER); STATIC_SMEM bytes of
 * static shared memory beside it hold the reductions (WARP_SLOTS bytes for
 * the warps, then the cluster slots). */
#define RAYO_PTX_ROWC_STATIC_SMEM 320
#define RAYO_PTX_ROWC_WARP_SLOTS 256
#define RAYO_PTX_ROWC_MAX_CLUSTER 8
#define RAYO_PTX_ROWC_WARP_MAX_N 1024
#define RAYO_PTX_ROWC_WARP_THREADS 256

/* gemv with half or quantized weights (module "infer", ptx/infer-gemv.c):
 * blocks of 32 * ROWS threads, one warp per row of A, x staged in chunks of
 * at most xchunk floats (a multiple of every tile), each padded with 4
 * floats after every pad_period floats, after fixed_bytes of other shared
 * memory: rayo_ptx_gemvq_smem gives a call's dynamic shared memory. */
#define RAYO_PTX_GEMVQ_ROWS 16
typedef struct rayo_ptx_gemvq_config {
    const char *name;     /* "gemvq_q8_0" */
    int dtype;            /* rayo_dtype of A */
    int fixed_bytes;      /* shared memory before the x chunk */
    int pad_period;
    int tile_elems;       /* values a warp loads at once */
    int xchunk;           /* x values staged at once */
} rayo_ptx_gemvq_config;

/* Bytes of dynamic shared memory for rows of n values (SIZE_MAX: the most). */
static inline size_t rayo_ptx_gemvq_smem(const rayo_ptx_gemvq_config *c, size_t n)
{
    size_t chunk = n < (size_t)c->xchunk ? n : (size_t)c->xchunk;
    chunk = (chunk + (size_t)c->tile_elems - 1) / (size_t)c->tile_elems * (size_t)c->tile_elems;
    return (size_t)c->fixed_bytes + 4 * (chunk + 4 * (chunk / (size_t)c->pad_period));
}

/* gemv with Q8_0 / Q4_0 / Q4_K / Q6_K weights and x rounded to 8 bits (module
 * "infer", ptx/infer-gemv8.c: gemv8_q8_0, gemv8_q4_0, gemv8_q4_k, gemv8_q6_k), for relaxed calls with rows
 * of at least MIN_N values (x's rounding is within the relaxed contract on
 * long rows): blocks of 32 * WARPS threads, one warp per row at a time; x's
 * codes, scales and sums in dynamic shared memory. */
#define RAYO_PTX_GEMV8_WARPS 16
#define RAYO_PTX_GEMV8_MIN_N 1024
/* gemv8x_*: up to PARTS such gemvs of one x in one launch (x rounded once
 * per block), their rows one after another (parameters y, A, rows per part,
 * then those of gemv8_* from x on). */
#define RAYO_PTX_GEMV8_PARTS 3
static inline size_t rayo_ptx_gemv8_smem(size_t n)
{
    return n + n / 32 * 12; /* n codes, n / 32 f64 scales and s32 sums */
}

/* attention (module "infer", ptx/attention.c): head_dim at most this. */
#define RAYO_PTX_ATTN_MAX_DIM 256
/* attn_warp_*: query heads of one KV group per warp (1, 2 or 4; 8 would
 * need more than 48 KiB of static shared memory at head_dim 256) */
#define RAYO_PTX_ATTN_HEADS_PER_WARP 4
/* attn_block_*: a block per (warp of heads, query) whose warps are the key
 * ranges, merged in the block (no attn_merge): at most this many ranges,
 * each warp's slab of shared memory 8 HB (head_dim + 32) bytes, all of them
 * within the 48 KiB every block gets. */
#define RAYO_PTX_ATTN_BLOCK_WARPS(dmax) ((dmax) <= 128 ? 8 : 5)
/* attn_dec_* (module "attn_cluster", ptx/attn-cluster.c): warps per CTA,
 * and the largest cluster (CTAs per query and head: 2, 4 or 8) */
#define RAYO_PTX_ATTN_DEC_WARPS 4
#define RAYO_PTX_ATTN_DEC_MAX_CLUSTER 8
/* attn_dec_*_c8_g<HG>: query heads of one KV group a CTA, 2 or 4 (each
 * head's q, m, sum and acc[8] in registers beside the tile's K and V) */
#define RAYO_PTX_ATTN_DEC_MAX_HG 4
/* attn_pf_f32_d<D> (module "infer", ptx/attention-prefill.c): its dynamic
 * shared memory, the K_hi, K_lo and V tiles of 64 keys (rows of D f16
 * values and 16 bytes of padding) and the 64 keys' scales (float32) */
#define RAYO_PTX_ATTN_PF32_SMEM(d) (3 * 64 * 2 * ((d) + 8) + 4 * 64)

/* A gemm variant of module "wgmma" (sm_90a): its block tile and launch
 * shape, and the k extent of one tensor-map box (ptx/wgmma.c). */
typedef struct rayo_ptx_wgmma_config {
    const char *name;
    int block_m, block_n;
    int threads;
    int smem_bytes;       /* dynamic shared memory per block */
    int box_k;            /* elements of k per copy (one 128-byte swizzled row) */
} rayo_ptx_wgmma_config;

/* in RAYO_PTX_MODULES order */
extern const rayo_ptx_module rayo_cuda_ptx_modules[];
extern const unsigned rayo_cuda_ptx_module_count;
extern const rayo_ptx_tf32_config rayo_cuda_tf32_configs[];
extern const unsigned rayo_cuda_tf32_config_count;
extern const rayo_ptx_wgmma_config rayo_cuda_wgmma_configs[];
extern const unsigned rayo_cuda_wgmma_config_count;
/* module "mma16" (f16/bf16 inputs, tf32.c): mma16_<f16|bf16>_<nn|nt|tn|tt>_<shape> */
extern const rayo_ptx_tf32_config rayo_cuda_mma16_configs[];
extern const unsigned rayo_cuda_mma16_config_count;
/* Machine code of a module for sm_<sm> (sm_90a for an arch-specific one),
 * assembled by ptxas at build time (configure --enable-cuda-cubin;
 * plugins/cuda/embed-cubin.sh); the table is empty otherwise. */
typedef struct rayo_cubin {
    const char *module;
    int sm;
    const unsigned char *data;
    size_t size;
} rayo_cubin;
extern const rayo_cubin rayo_cuda_cubins[];
extern const unsigned rayo_cuda_cubin_count;

extern const rayo_ptx_gemvq_config rayo_cuda_gemvq_configs[];
extern const unsigned rayo_cuda_gemvq_config_count;

/* The targets the PTX is written for, as an array initialiser (the plugin
 * picks one per device: cuda-plugin.c). */
#define RAYO_PTX_TARGETS {80, 90}

/* The first lines of module `name`'s PTX for sm_<sm>, written like snprintf.
 * PTX ISA 7.0 (CUDA 11.0) covers sm_80; sm_90 needs ISA 7.8 (CUDA 12.0);
 * an arch-specific module (sm_90a: wgmma) ISA 8.0 (CUDA 12.0). */
static inline int rayo_ptx_header(char *buf, size_t len, const char *name, int sm, int arch_specific)
{
    return snprintf(buf, len,
                    "// rayo cuda backend: module %s for sm_%d%s, generated by gen-ptx (do not edit)\n"
                    ".version %s\n.target sm_%d%s\n.address_size 64\n",
                    name, sm, arch_specific ? "a" : "", arch_specific ? "8.0" : sm >= 90 ? "7.8" : "7.0", sm,
                    arch_specific ? "a" : "");
}

/* Every kernel's body begins with this comment (ptx/emit.c, kern_finish).
 * For sm_90 and later rayo_ptx_text() puts the two griddepcontrol
 * instructions of programmatic dependent launch in its place: the kernel
 * waits for the grid before it in the graph to complete (its memory then
 * visible) before touching any memory, then lets the next grid's launch
 * begin.  Launched without a programmatic edge both are no-ops.  sm_80 has
 * no griddepcontrol: its text keeps the comment. */
#define RAYO_PTX_PDL_MARK "\t// griddepcontrol on sm_90\n"
#define RAYO_PTX_PDL_SM90 "\tgriddepcontrol.wait;\n\tgriddepcontrol.launch_dependents;\n"

/* body for sm_<sm> into out (NULL: only counts); returns its length */
static inline size_t rayo_ptx_body_for(char *out, const char *body, int sm)
{
    const char *mark = RAYO_PTX_PDL_MARK, *with = sm >= 90 ? RAYO_PTX_PDL_SM90 : RAYO_PTX_PDL_MARK;
    size_t n = 0, mark_len = strlen(mark), with_len = strlen(with);
    for (const char *at; (at = strstr(body, mark)); body = at + mark_len) {
        size_t before = (size_t)(at - body);
        if (out) {
            memcpy(out + n, body, before);
            memcpy(out + n + before, with, with_len);
        }
        n += before + with_len;
    }
    if (out)
        memcpy(out + n, body, strlen(body) + 1);
    return n + strlen(body);
}

/* Module pm's whole PTX for sm_<sm> (header, then body), NUL-terminated,
 * in memory the caller frees; *size = its strlen.  NULL when out of memory. */
static inline char *rayo_ptx_text(const rayo_ptx_module *pm, int sm, size_t *size)
{
    int head = rayo_ptx_header(NULL, 0, pm->name, sm, pm->arch_specific);
    if (head < 0)
        return NULL;
    size_t body = rayo_ptx_body_for(NULL, pm->body, sm);
    char *text = malloc((size_t)head + body + 1);
    if (!text)
        return NULL;
    rayo_ptx_header(text, (size_t)head + 1, pm->name, sm, pm->arch_specific);
    rayo_ptx_body_for(text + head, pm->body, sm);
    *size = (size_t)head + body;
    return text;
}

#endif
