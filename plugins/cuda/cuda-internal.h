/* SPDX-License-Identifier: MIT */
/* cuda-internal.h - shared declarations of the cuda backend's files.
 *
 * The plugin needs the Driver API's types and enums only: libcuda.so.1 is
 * dlopened at run time (cuda-driver.c), so the plugin builds and loads on
 * machines without an NVIDIA driver and its probe says why it is unavailable.
 * They come from the toolkit's cuda.h where configure found one, else from
 * rayo's own declarations (cuda-driver-api.h): no toolkit needed to build.
 */
#ifndef RAYO_CUDA_INTERNAL_H
#define RAYO_CUDA_INTERNAL_H

#include "rayo-plugin.h"

#if defined(HAVE_CUDA_H) && !defined(RAYO_CUDA_OWN_DECLS)
#include <cuda.h>
#else
#include "cuda-driver-api.h"
#endif
#include "cuda-ptx.h"
#include "../gpu-common/gpu-family.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the driver API, resolved with dlsym ---------------------------------
 * cuda.h maps several names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2):
 * the table's fields and the dlsym names both go through that mapping, so
 * the plugin calls exactly the entry points it was compiled against. */
#define CUDA_DRIVER_FUNCTIONS(X)                                                          \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                 \
    X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceTotalMem)             \
    X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)      \
    X(cuCtxSetCurrent) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)     \
    X(cuFuncSetAttribute) X(cuLinkCreate) X(cuLinkAddData) X(cuLinkComplete)              \
    X(cuLinkDestroy) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)        \
    X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)             \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuLaunchKernel)         \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery)                   \
    X(cuEventSynchronize) X(cuStreamWaitEvent)

/* Optional: the graphs of replayed batches (all of them, or none used). */
#define CUDA_GRAPH_FUNCTIONS(X)                                                           \
    X(cuGraphCreate) X(cuGraphAddKernelNode) X(cuGraphInstantiate)                        \
    X(cuGraphExecKernelNodeSetParams) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)

#define CUDA_FIELD(name) __typeof__(name) *name;
typedef struct cuda_driver {
    void *lib;
    int version;          /* cuDriverGetVersion: 12040 = 12.4 */
    CUDA_DRIVER_FUNCTIONS(CUDA_FIELD)
    /* optional (CUDA 12.0 on): NULL where the driver lacks it */
    __typeof__(cuTensorMapEncodeTiled) *cuTensorMapEncodeTiled;
    /* CUDA 12.3 on: graph edges of a kind (programmatic dependent launch) */
    __typeof__(cuGraphAddDependencies_v2) *cuGraphAddDependencies_v2;
    CUDA_GRAPH_FUNCTIONS(CUDA_FIELD)
    int has_graphs;       /* every one of CUDA_GRAPH_FUNCTIONS resolved */
    /* cuEventElapsedTime under its first name (every driver has it; cuda.h
     * 12.8 on maps the name to a _v2 older drivers lack): profile mode only */
    CUresult (*event_elapsed)(float *ms, CUevent start, CUevent end);
} cuda_driver;
#undef CUDA_FIELD

/* Loads libcuda.so.1 and cuInit()s it, once per process (libcuda stays
 * loaded: unloading the driver library is not supported).  NULL with a
 * human-readable reason when there is no usable driver. */
const cuda_driver *cuda_driver_get(char *why, size_t why_len);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" */
const char *cuda_error_text(const cuda_driver *drv, CUresult r, char *buf, size_t len);

/* The rayo status for a driver error; *lost set when the context is unusable. */
rayo_status cuda_map_error(CUresult r, int *lost);

/* ---- the PTX modules -------------------------------------------------- */
/* MOD_ELEMENTWISE ...: an index of rayo_cuda_ptx_modules[] */
#define CUDA_MODULE_ID(ID, name, min_sm, arch_specific) MOD_##ID,
enum cuda_module_id { RAYO_PTX_MODULES(CUDA_MODULE_ID) MOD_COUNT };
#undef CUDA_MODULE_ID

typedef struct cuda_module {
    CUmodule handle;
    int state;            /* 0 not loaded, 1 loaded, -1 failed (error holds why) */
    char error[1024];
} cuda_module;

#define CUDA_FUNC_SLOTS 256
typedef struct cuda_func_slot {
    const char *name;     /* a string literal or a name owned by the table */
    char name_buf[48];
    CUfunction fn;
} cuda_func_slot;

/* ---- staging for host-memory calls -----------------------------------
 * Each lane has a bounded host staging area cut into CUDA_STAGING_SLOTS
 * slots: the host copies chunk i+1 of an operand into one slot while the
 * copy engine moves chunk i out of another.  Pinned (cuMemHostAlloc) once,
 * at the lane's first call; pageable when pinning failed or is turned off. */
#define CUDA_MAX_LANES 8
#define CUDA_STAGING_SLOTS 4
#define CUDA_DEFAULT_STAGING_MIB 32

typedef struct cuda_slot {
    unsigned char *host;  /* slot_bytes of the staging area */
    CUevent done;         /* the last copy into or out of the slot */
    void *pending_dst;    /* a download still to be copied out to here */
    size_t pending_bytes;
} cuda_slot;

typedef struct cuda_lane {
    CUstream stream;      /* copies, and the kernels of a call in one piece */
    CUstream compute;     /* kernels of a call split into blocks */
    CUevent uploaded, computed[2];
    void *staging;        /* CUDA_STAGING_SLOTS * slot_bytes, or NULL */
    int pinned;           /* staging came from cuMemHostAlloc */
    size_t slot_bytes;
    cuda_slot slots[CUDA_STAGING_SLOTS];
    int next_slot;
    CUdeviceptr dev;      /* device staging: the whole call, grown on demand */
    size_t dev_size;
    int busy;
} cuda_lane;

/* One kind of op in [backend.cuda] profile mode (cuda-profile.c). */
typedef struct cuda_prof_entry {
    uint32_t op, dtypes;
    size_t m, n;
    double ms;
    size_t calls;
} cuda_prof_entry;
#define CUDA_PROF_ENTRIES 128

typedef struct cuda_state {
    const rayo_host *host;
    const cuda_driver *drv;
    CUdevice device;
    CUcontext ctx;        /* the device's primary context */
    int cc_major, cc_minor;
    int ptx_target;       /* 80 or 90: which generated PTX to JIT */
    int sm_count;
    int max_smem_optin;   /* bytes of shared memory a block may opt in to */
    int allow_tf32;       /* precision = tf32 */
    int jit_cache;        /* keep JIT output on disk */
    char cache_dir[1024]; /* "" = no disk cache */
    char sgemm_kernel[48], sgemm_fallback[48], tf32_kernel[48];
    int use_wgmma;        /* TF32 through wgmma: cc 9.0, a CUDA 12 driver, [backend.cuda] wgmma */
    int use_wgmma_half;   /* relaxed f16 / bf16 matmul through wgmma too: [backend.cuda] wgmma_half */
    char wgmma_kernel[48];
    int use_graphs;       /* batches run as CUDA graphs: [backend.cuda] graphs */
    int pdl_edges;        /* a graph's kernels follow each other by programmatic edges:
                           * [backend.cuda] pdl, sm_90 PTX, a CUDA 12.3 driver */
    int use_gemv8;        /* relaxed Q8_0 / Q4_0 / Q4_K / Q6_K gemv with 8-bit x: [backend.cuda] gemv_int8 */
    int fuse_norm;        /* rmsnorm of one row in the launch of the gemv8 products of its output:
                           * [backend.cuda] fuse_norm */
    int fuse_rope;        /* the ropes of q and k in the launch of the q, k, v products: [backend.cuda] fuse_rope */
    int use_attn_block;   /* attention with few key ranges in one launch: [backend.cuda] attention_block */
    int use_attn_cluster; /* relaxed decode attention over clusters (sm_90): [backend.cuda] attention_cluster */
    int use_attn_group;   /* relaxed decode of grouped heads on tensor cores: attention_group (2: all) */
    int use_attn_prefill; /* relaxed prompt attention on tensor cores: [backend.cuda] attention_prefill */
    int use_half_prompt;  /* relaxed f32 x quantized B^T matmul on f16 copies: [backend.cuda] half_prompt */
    int use_prompt_split_k; /* its small products split along k: [backend.cuda] prompt_split_k */
    int use_cubin;        /* load the build's sm_90 machine code: [backend.cuda] embedded_code */
    int profile;          /* [backend.cuda] profile: time each op of a batch */
    cuda_prof_entry prof[CUDA_PROF_ENTRIES]; /* under lock */
    size_t prof_count;
    char mma16_shape[32], mma16_strict_shape[32]; /* f16/bf16 matmul kernels; "" = off */
    atomic_int lost;      /* the context is unusable: every call fails fast */

    pthread_mutex_t lock; /* modules, functions, lanes */
    pthread_cond_t lane_free;
    cuda_module modules[MOD_COUNT];
    cuda_func_slot funcs[CUDA_FUNC_SLOTS];
    cuda_lane lanes[CUDA_MAX_LANES];
    int lane_count, lane_limit;
    size_t staging_bytes; /* host staging per lane ([backend.cuda] staging_mib) */
    int use_pinned;       /* [backend.cuda] pinned_staging */
    atomic_int pinned_warned;
} cuda_state;

/* Makes the state's context current on the calling thread and returns
 * RAYO_E_DEVICE_LOST fast once the device is gone. */
rayo_status cuda_enter(cuda_state *st);

/* Records a driver failure: maps it, marks the device lost where needed and
 * sets the detail message ("cuda: WHAT: CUDA_ERROR_..."). */
rayo_status cuda_fail(cuda_state *st, CUresult r, const char *what);

/* The kernel `name` of module `mod`, loading (JIT) the module on first use. */
rayo_status cuda_function(cuda_state *st, int mod, const char *name, CUfunction *fn);

/* ---- one op on device pointers --------------------------------------- */
typedef struct cuda_family cuda_family;
typedef struct cuda_op {
    uint32_t op, flags;
    size_t m, n, k;
    float alpha, beta;
    CUdeviceptr a, b, c, y;   /* 0 = operand unused (or gamma/beta absent) */
    CUdeviceptr scratch;      /* cuda_scratch_bytes() of device memory */
    /* the inference ops (cuda-infer.c) also read: */
    uint32_t dtypes;          /* RAYO_DTYPES(a, b, c, y); 0: all f32 */
    size_t lda, ldb, ldy;     /* row strides in elements; 0: dense */
    const void *params;       /* host copy of the op's parameter struct (rope) */
    uint32_t precision;       /* rayo_precision of the call (typed matmul: RELAXED may use TF32) */
    size_t scratch_size;      /* bytes at scratch (a kernel that wants more does without) */
    const cuda_family *family; /* the kernels that run it */
} cuda_op;

/* ---- kernel families ---------------------------------------------------
 * The kernels of one kind of op: each entry of the op table (gpu-op-table.h)
 * names one, and a recorded or staged op keeps it, so no call is sorted by
 * its signature again on the way to its kernels. */
struct cuda_family {
    const char *name;
    /* RAYO_OK if it runs this op (flags, dtypes, sizes); checked before the
     * op is queued, so a refused call passes on to the next backend */
    rayo_status (*check)(const cuda_state *st, const cuda_op *op);
    /* Device scratch the op needs (reduction partials); NULL: none. */
    size_t (*scratch)(const cuda_state *st, const cuda_op *op);
    /* Queues the op's kernels on stream. */
    rayo_status (*launch)(cuda_state *st, CUstream stream, const cuda_op *op);
    int strided;              /* honours row strides (lda ... ldy) */
};

/* Every family, each defined next to its launcher: cuda-launch.c (the
 * f32 ops), cuda-typed-matmul.c, cuda-infer.c. */
#define CUDA_FAMILY_DECL(name) extern const cuda_family cuda_family_##name;
GPU_FAMILIES(CUDA_FAMILY_DECL)
#undef CUDA_FAMILY_DECL

/* The family that runs (op, dtypes) here, or NULL (cuda-plugin.c). */
const cuda_family *cuda_family_of(uint32_t op, uint32_t dtypes);
/* op->family's check: RAYO_OK if the backend runs this op as called. */
rayo_status cuda_op_check(const cuda_state *st, const cuda_op *op);
/* Device scratch the op needs; 0 for most ops. */
size_t cuda_scratch_bytes(const cuda_state *st, const cuda_op *op);
/* Queues the op's kernels on stream (op->family's launcher). */
rayo_status cuda_launch_op(cuda_state *st, CUstream stream, const cuda_op *op);
/* cuLaunchKernel; while the calling thread builds or updates a batch's
 * graph (cuda-memory.c), the kernel node the launch stands for instead.
 * Every kernel launch of an op goes through it. */
CUresult cuda_launch_kernel(cuda_state *st, CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned smem, CUstream stream, void **params, void **extra);
/* Queues ops one after another (the first error stops it). */
rayo_status launch_all_plain(cuda_state *st, CUstream stream, const cuda_op *ops, size_t count);
/* launch_all_plain, each op between events, its time added to st->prof. */
rayo_status cuda_profile_launch(cuda_state *st, CUstream stream, const cuda_op *ops, size_t count);
/* Logs st->prof, the slowest first (at fini). */
void cuda_profile_report(cuda_state *st);
/* The op's name in the op list ("add"), or NULL. */
const char *cuda_op_name(uint32_t op);

/* The fp32 matmul on dense f32 operands; tf32: TF32 tensor cores allowed. */
rayo_status cuda_launch_matmul_f32(cuda_state *st, CUstream stream, const cuda_op *op, int tf32);

/* Launches kernel `name` of module `mod` on a gx x gy x gz grid of bx-thread blocks. */
rayo_status cuda_launch_grid(cuda_state *st, CUstream stream, int mod, const char *name, unsigned gx, unsigned gy,
                             unsigned gz, unsigned bx, unsigned smem, void **params);

/* ---- small and skinny fp32 matmuls (cuda-matmul-small.c) ---------------- */
/* m = 1 or n = 1: the matmul as a gemv; 1 when it took the op (*s its status). */
int cuda_matmul_as_gemv(cuda_state *st, CUstream stream, const cuda_op *op, rayo_status *s);
/* Split-K when C is all tiles of the sgemm kernel `name` (k-step bk) but too
 * few to fill the GPU and the scratch holds the slabs' partials: 1 when it
 * took the op (*s its status). */
int cuda_matmul_split_k(cuda_state *st, CUstream stream, const cuda_op *op, const char *name, int bk,
                        rayo_status *s);
/* The scratch either of them needs (0: none, or not a small matmul). */
size_t cuda_matmul_small_scratch_bytes(const cuda_state *st, const cuda_op *op);
/* ---- TF32 through wgmma on sm_90a (cuda-wgmma.c) --------------------- */
/* RAYO_E_UNSUPPORTED (nothing queued) when the call does not suit it. */
rayo_status cuda_launch_wgmma_tf32(cuda_state *st, CUstream stream, const cuda_op *op);
/* Device scratch of its K-major operand copies (0 when it does not run). */
size_t cuda_wgmma_scratch_bytes(const cuda_state *st, const cuda_op *op);
/* Relaxed f16 x f16 or bf16 x bf16 matmul (C in f32) through wgmma, every
 * transpose layout read in place (no scratch); RAYO_E_UNSUPPORTED when the
 * call does not suit it (strict, strides not multiples of 8 elements, ...). */
rayo_status cuda_launch_wgmma_half(cuda_state *st, CUstream stream, const cuda_op *op);
/* Whether cuda_launch_wgmma_half takes this call. */
int cuda_wgmma_half_takes(const cuda_state *st, const cuda_op *op);
/* Slices of k for an f16 A x B^T call with beta = 0 and a dense C whose
 * tiles leave the GPU idle ([backend.cuda] prompt_split_k): 1 = no split.
 * With parts > 1 the split launch stores `parts` partial products m n
 * apart from C on (parts m n floats) for the caller to sum. */
unsigned cuda_wgmma_half_parts(const cuda_state *st, const cuda_op *op);
rayo_status cuda_launch_wgmma_half_split(cuda_state *st, CUstream stream, const cuda_op *op, unsigned parts);
/* Dynamic shared memory of kernel `name` of module "wgmma" (0: not one). */
int cuda_wgmma_smem_bytes(const char *name);

/* ---- typed matmul (cuda-typed-matmul.c): f32 A and a half or quantized B,
 * or f16 x f16 / bf16 x bf16 ---- */
/* Family typed_matmul: the mma16 kernels, or A and B dequantized into the
 * scratch (B perhaps transposed too), then the f32 matmul on them. */

/* ---- f16 x f16, bf16 x bf16 matmul on the tensor cores (cuda-mma16.c) ---- */
struct rayo_ptx_tf32_config; /* cuda-ptx.h */
/* [backend.cuda] mma16_kernel, mma16_strict_kernel into st. */
void cuda_mma16_config(cuda_state *st);
/* The kernel for this matmul, or NULL (the dequantizing path). */
const struct rayo_ptx_tf32_config *cuda_mma16_kernel(const cuda_state *st, const cuda_op *op);
rayo_status cuda_launch_mma16(cuda_state *st, CUstream stream, const cuda_op *op,
                              const struct rayo_ptx_tf32_config *cfg);

/* ---- the inference kernels (cuda-infer.c) ------------------------------ */
/* rows [0, m) of a table in dtype dt (rows lda elements apart; 0: dense)
 * as dense f32 rows of n values at y: the get_rows kernels without indices. */
rayo_status cuda_launch_dequant_rows(cuda_state *st, CUstream stream, rayo_dtype dt, CUdeviceptr y,
                                     CUdeviceptr table, size_t m, size_t n, size_t lda);
/* -1 (with the error set) for a host call its kernel cannot check on the
 * device: a get_rows index outside the table. */
int cuda_check_host_call(const cuda_state *st, const rayo_call *call);
/* How many ops from ops[0] (of count) run as one launch: up to
 * RAYO_PTX_GEMV8_PARTS relaxed 8-bit gemvs of the same x whose outputs
 * touch no operand of the others (a decode step's q, k, v; gate, up), 2 for
 * a residual add and the rmsnorm of its sum (cuda_add_rmsnorm_suits) or two
 * ropes of the same tokens and positions apart in memory (q, k), 3 for two
 * such gemvs (gate, up) and the swiglu of their outputs; such a group
 * also with the rmsnorm of one row before it whose output is their x (+1),
 * and a group of gemvs (q, k, v) with a rope pair of two of their outputs
 * after it (+2: q's and k's, rope_tail in cuda-infer.c); else 1. */
size_t cuda_launch_group(const cuda_state *st, const cuda_op *ops, size_t count);
/* Queues ops[0 .. n), n from cuda_launch_group. */
rayo_status cuda_launch_ops(cuda_state *st, CUstream stream, const cuda_op *ops, size_t n);
/* Whether add (y = a + b) and then norm (rmsnorm of add's y) run as one
 * kernel (cuda-launch.c), and that kernel. */
int cuda_add_rmsnorm_suits(const cuda_state *st, const cuda_op *add, const cuda_op *norm);
rayo_status cuda_launch_add_rmsnorm(cuda_state *st, CUstream stream, const cuda_op *add, const cuda_op *norm);
/* Whether [a, a + abytes) and [b, b + bbytes) share a byte. */
static inline int cuda_overlap(CUdeviceptr a, size_t abytes, CUdeviceptr b, size_t bbytes)
{
    return a < b + bbytes && b < a + abytes;
}

/* ---- host-memory calls and device memory ------------------------------ */
/* A host-memory call of one of family's ops: through the staging buffers. */
rayo_status cuda_host_call(void *state, const rayo_call *call, const cuda_family *family);
void cuda_lanes_destroy(cuda_state *st);
extern const rayo_memory_api cuda_memory_api;

#endif
