/* SPDX-License-Identifier: MIT */
/* vk-internal.h - shared declarations of the rayo vulkan plugin.
 *
 * The plugin never links against libvulkan: vk-loader.c dlopens
 * libvulkan.so.1 and fills the function tables below, so the plugin builds
 * and loads on machines without Vulkan and its probe says why not.
 *
 * Objects:
 *   vk_state  one initialised device (the plugin state the core holds)
 *   vk_pool   device or staging memory, sub-allocated from large blocks
 *   vk_buf    a range of a block: the buffer handle of the memory API
 *   vk_ctx    a command buffer with its descriptor pools and temporaries:
 *             a batch, or the one-shot submission of a host-memory call
 */
#ifndef RAYO_VK_INTERNAL_H
#define RAYO_VK_INTERNAL_H

/* POSIX (dlopen, pthreads, getpid) with -std=c11; this header comes first */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "rayo-plugin.h"
#include "vk-shaders.h"
#include "../gpu-common/gpu-family.h"

/* ---- function tables (filled by vk-loader.c) ------------------------------ */
#define VK_GLOBAL_FNS(X) \
    X(vkCreateInstance) X(vkEnumerateInstanceExtensionProperties) \
    X(vkEnumerateInstanceLayerProperties) X(vkEnumerateInstanceVersion)

#define VK_INSTANCE_FNS(X) \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties) \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)

/* present only with the extension; may stay NULL */
#define VK_INSTANCE_OPTIONAL_FNS(X) \
    X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT) \
    X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)

#define VK_DEVICE_FNS(X) \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkQueueSubmit) X(vkDeviceWaitIdle) \
    X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory) X(vkUnmapMemory) \
    X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) \
    X(vkBindBufferMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule) \
    X(vkCreatePipelineCache) X(vkGetPipelineCacheData) X(vkDestroyPipelineCache) \
    X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreatePipelineLayout) \
    X(vkDestroyPipelineLayout) X(vkCreateDescriptorSetLayout) \
    X(vkDestroyDescriptorSetLayout) X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) \
    X(vkResetDescriptorPool) X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) \
    X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkResetCommandPool) \
    X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer) \
    X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) \
    X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) \
    X(vkCreateSemaphore) X(vkDestroySemaphore) X(vkWaitSemaphores) \
    X(vkGetSemaphoreCounterValue) X(vkCreateQueryPool) X(vkDestroyQueryPool) \
    X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp) X(vkGetQueryPoolResults)

#define VK_DECLARE_FN(name) PFN_##name name;

typedef struct vk_lib {
    void *handle;                            /* dlopen handle */
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    VK_GLOBAL_FNS(VK_DECLARE_FN)
} vk_lib;

typedef struct vk_ifns {
    VK_INSTANCE_FNS(VK_DECLARE_FN)
    VK_INSTANCE_OPTIONAL_FNS(VK_DECLARE_FN)
} vk_ifns;

typedef struct vk_dfns {
    VK_DEVICE_FNS(VK_DECLARE_FN)
    PFN_vkCmdPushDescriptorSetKHR vkCmdPushDescriptorSetKHR; /* VK_KHR_push_descriptor; may be NULL */
} vk_dfns;

/* ---- memory ---------------------------------------------------------------- */
typedef struct vk_range {
    VkDeviceSize offset, size;
} vk_range;

typedef struct vk_pool vk_pool;

typedef struct vk_block {
    struct vk_block *next;
    vk_pool *pool;            /* the pool it belongs to */
    VkDeviceMemory memory;
    VkBuffer buffer;          /* one buffer over the whole block */
    VkDeviceSize size, used;
    unsigned char *map;       /* host pointer where the memory is host-visible */
    vk_range *free;           /* free ranges, sorted by offset */
    size_t free_count, free_cap;
} vk_block;

struct vk_pool {
    const char *name;         /* "device" or "staging", for messages */
    uint32_t type_index;
    VkMemoryPropertyFlags flags;
    VkDeviceSize block_size;
    vk_block *blocks;
    pthread_mutex_t lock;
};

typedef struct vk_buf {
    vk_block *block;
    VkDeviceSize offset, size;
    /* What a kept weight copy checks (vk-weight-copies.c): */
    uint64_t id;                      /* unique, an application's buffer only (else 0) */
    atomic_ulong writes;              /* buffer_write calls so far */
    atomic_bool device_written;       /* bound to a slot a shader may write, ever */
} vk_buf;

/* ---- pipelines --------------------------------------------------------------- */
#define VK_MAX_SPEC 10
/* Storage buffers of a dispatch: a, b, c, y and s (a multi-pass op's
 * scratch), and d, e, f for the fused shaders that need more (vk-infer.c).
 * The set layout holds all eight where the device allows eight storage
 * buffers per stage (the spec's minimum is 4), else the first five
 * (vk_state.bindings) and those fusions are off. */
#define VK_BINDINGS 8
#define VK_BASE_BINDINGS 5

enum { VK_PIPE_COMPILING, VK_PIPE_READY, VK_PIPE_FAILED };
typedef struct vk_pipeline_entry {
    uint32_t shader, spec_count;
    uint32_t spec[VK_MAX_SPEC];
    VkPipeline pipeline;
    int state;                        /* VK_PIPE_*: a worker may still be compiling it */
    VkResult result;                  /* the driver's, once compiled */
    float compile_ms;                 /* how long that took */
    bool logged;                      /* ... said in the debug log */
} vk_pipeline_entry;

/* A pipeline for a worker to compile: its entry and what it needs. */
typedef struct vk_compile_job {
    size_t entry;
    uint32_t shader, spec_count;
    uint32_t spec[VK_MAX_SPEC];
    VkShaderModule module;
} vk_compile_job;
#define VK_COMPILE_THREADS_MAX 16

/* The matmul tile: BM x BN per workgroup, BK deep, TM x TN per invocation. */
typedef struct vk_tile {
    uint32_t bm, bn, bk, tm, tn;
} vk_tile;

/* ---- profile (vk-profile.c) ------------------------------------------------------ */
typedef struct vk_prof_key {
    uint32_t op, dtypes;
    size_t m, n, k;
} vk_prof_key;
typedef struct vk_prof_entry {
    vk_prof_key key;
    double ms;
    size_t calls;
} vk_prof_entry;
#define VK_PROF_ENTRIES 128
/* ---- submission contexts -------------------------------------------------------- */
/* Bytes of one buffer an op reads or writes (barrier elision, vk-submit.c). */
typedef struct vk_span {
    VkBuffer buffer;
    VkDeviceSize start, end;
    bool write;
} vk_span;
#define VK_PENDING 24             /* spans tracked since the last barrier */

typedef struct vk_ctx {
    struct vk_ctx *next;              /* in the free list */
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkDescriptorPool *desc_pools;     /* the last one is the one in use */
    size_t desc_pool_count;
    vk_buf **temps;                   /* freed when the context is released */
    size_t temp_count, temp_cap;
    uint64_t signal;                  /* timeline value of its submission */
    int submitted;
    int ended;                        /* its command buffer is ended (submittable again) */
    int owed;                         /* a barrier is due before the next command */
    int skip;                         /* the next command may run without it (an independent op) */
    int depth;                        /* nesting of vk_record_family (typed matmul's steps) */
    vk_span pending[VK_PENDING];      /* what the ops since the last barrier access */
    uint32_t pending_count;
    bool pending_known;               /* pending[] holds every such access */
    rayo_status error;                /* first error while recording */
    bool ahead;                       /* only finds the pipelines a recording needs, starting
                                       * their compilation (never submitted) */
    uint64_t validation_mark;         /* validation messages before it began */
    uint64_t *copies;                 /* ids of the kept weight copies it reads */
    size_t copy_count, copy_cap;
    vk_buf *mm_scratch, *mm_index;   /* typed matmul's (two of temps; NULL: none) */
    vk_buf *fault;                    /* host-visible word a shader sets on bad data
                                       * (get_rows' indices; one of temps; NULL: none):
                                       * zeroed at submit, read at wait */
    VkQueryPool prof_pool;            /* profile = yes: a timestamp per op */
    vk_prof_key *prof_keys;           /* the op of each timestamp */
    uint32_t prof_count;              /* timestamps written */
    int prof_collected;               /* this submission's times were added */
} vk_ctx;

typedef enum vk_precision { VK_PREC_FP32, VK_PREC_F16 } vk_precision;
/* The gemv settings of [backend.vulkan] (vk-infer.c; 0: the default). */
typedef struct vk_gemv_settings {
    uint32_t rows, units, wg, split;
    bool xstage;
} vk_gemv_settings;

/* [backend.vulkan] attention_decode: no, yes (one query head per KV head), all. */
typedef enum vk_attn_decode { VK_ATTN_DEC_NO, VK_ATTN_DEC_UNGROUPED, VK_ATTN_DEC_ALL } vk_attn_decode;

typedef struct vk_state {
    const rayo_host *host;
    vk_lib lib;
    vk_ifns fi;
    vk_dfns fd;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    atomic_ulong validation_messages;

    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem_props;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    pthread_mutex_t queue_lock;       /* vkQueueSubmit and the timeline value */
    VkSemaphore timeline;
    uint64_t timeline_value;          /* last value signalled by a submission */
    atomic_int lost;                  /* VK_ERROR_DEVICE_LOST seen */

    vk_pool device_pool, staging_pool;
    bool unified;                     /* device memory is host-visible: no staging */
    vk_pool mapped_pool;              /* device-local and host-visible: small buffers */
    bool mapped_small;                /* mapped_pool is there (vk_memory_init) */
    vk_buf *dummy;                    /* bound to unused descriptor slots */
    uint32_t bindings;                /* in the set layout: VK_BINDINGS or VK_BASE_BINDINGS */

    VkDescriptorSetLayout set_layout;
    VkPipelineLayout pipeline_layout;
    VkPipelineCache pipeline_cache;
    char cache_path[1024];
    VkShaderModule modules[VK_SHADER_COUNT];
    vk_pipeline_entry *pipelines;
    size_t pipeline_count, pipeline_cap;
    pthread_mutex_t pipeline_lock;    /* the table, the modules, the jobs */
    pthread_cond_t pipeline_done;     /* an entry's compilation ended */
    pthread_cond_t job_ready;         /* a job was queued, or compile_stop set */
    vk_compile_job *jobs;             /* queued: [job_head, job_count) */
    size_t job_count, job_head, job_cap;
    pthread_t workers[VK_COMPILE_THREADS_MAX];
    uint32_t worker_count, compile_threads;
    bool compile_stop;
    atomic_ulong jobs_queued;         /* ever: a recording ahead that queued none can record now */

    vk_ctx *free_ctx;
    pthread_mutex_t ctx_lock;

    bool subgroup_ok;                 /* arithmetic, shuffle and vote in compute */
    bool f64;                         /* shaderFloat64: sums and row statistics in double */
    bool denorm_preserve;             /* shaderDenormPreserveFloat32: requested in every module */
    uint32_t subgroup_size;
    vk_precision precision;
    bool coop;                        /* f16 cooperative-matrix matmul enabled */
    uint32_t coop_bk;                 /* its K step: 32 or 64 (also the half prompt's) */
    bool half_prompt;                 /* relaxed prompt matmul on scaled f16 copies (vk-half-prompt.c) */
    struct vk_copies *copies;         /* their kept copies of weights (vk-weight-copies.c; NULL: none) */
    atomic_ulong buf_ids;             /* the last application buffer's id */
    bool int_dot;                     /* 8-bit integer dot products enabled (gemv_int8) */
    bool int8_q6_k;                   /* ... for Q6_K weights too (gemv_int8 = all) */
    vk_tile tile;
    vk_tile tile_small;               /* for products with few tiles */
    uint32_t eltwise_unroll;          /* elements per invocation and step: 1, 2, 4 */
    bool push_descriptors;            /* descriptors pushed into the command buffer, not allocated */
    bool overlap;                     /* independent ops without a barrier between them */
    enum { VK_AHEAD_NO, VK_AHEAD_MOVING, VK_AHEAD_STEP } record_ahead; /* vk-batches.c */
    bool fuse;                        /* neighbouring calls of a batch recorded ahead as one dispatch */
    vk_gemv_settings gemv;            /* read once at init: a decode step records ~150 gemvs */
    vk_attn_decode attn_decode;       /* which relaxed decode attention takes attention_dec.comp */
    uint32_t attn_decode_keys;        /* ... its keys per chunk (0: by the call's size) */
    bool attn_short;                  /* relaxed decode at short caches takes attention_short.comp */
    uint32_t attn_short_keys;         /* ... up to this many keys */
    bool attn_prompt;                 /* relaxed prompts take attention_prompt.comp */
    uint32_t attn_prompt_rows;        /* ... its query rows per workgroup (0: by shared memory) */
    uint32_t timestamp_bits;          /* the queue's timestampValidBits */
    bool profile;                     /* [backend.vulkan] profile = yes (and timestamps) */
    vk_prof_entry prof[VK_PROF_ENTRIES]; /* under ctx_lock */
    size_t prof_count, prof_batches;
    double prof_record_ms;
} vk_state;

/* ---- vk-loader.c ------------------------------------------------------------------ */
/* Opens the Vulkan loader (path NULL: libvulkan.so.1).  On failure writes
 * the reason to why and returns RAYO_E_NOT_FOUND. */
rayo_status vk_lib_open(vk_lib *lib, const char *path, char *why, size_t why_size);
void vk_lib_close(vk_lib *lib);
void vk_load_instance_fns(const vk_lib *lib, VkInstance instance, vk_ifns *fi);
rayo_status vk_load_device_fns(const vk_ifns *fi, VkDevice device, vk_dfns *fd,
                               char *why, size_t why_size);
const char *vk_result_name(VkResult r);
rayo_status vk_status_of(VkResult r);
/* Maps a failed VkResult to a rayo status and sets the host's error message. */
rayo_status vk_fail(vk_state *s, VkResult r, const char *what);

/* ---- vk-memory.c ------------------------------------------------------------------ */
rayo_status vk_memory_init(vk_state *s);
void vk_memory_fini(vk_state *s);
rayo_status vk_buf_alloc(vk_state *s, vk_pool *pool, VkDeviceSize bytes, vk_buf **out);
/* An application's buffer: small ones in mapped_pool where there is one. */
rayo_status vk_buf_alloc_for_app(vk_state *s, VkDeviceSize bytes, vk_buf **out);
void vk_buf_free(vk_state *s, vk_buf *buf);
/* Host pointer of a buffer of host-visible memory, else NULL. */
void *vk_buf_map(const vk_buf *buf);

/* An array of count elements of size bytes (*cap allocated), grown where
 * full to hold one more: the array (maybe moved), NULL without memory (the
 * old one then still valid). */
static inline void *vk_room_for_one(void *array, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return array;
    size_t more = *cap ? 2 * *cap : 32;
    void *grown = realloc(array, more * size);
    if (grown)
        *cap = more;
    return grown;
}

/* ---- vk-pipelines.c --------------------------------------------------------------- */
rayo_status vk_pipelines_init(vk_state *s);
void vk_pipelines_fini(vk_state *s);
/* The pipeline of a shader with these specialization constants (ids 0..n-1)
 * for a recording into cx, created at first use and kept until fini; into a
 * context recording ahead (vk_ctx.ahead: never submitted, its dispatches not
 * recorded) a pipeline not made yet starts compiling on a worker and *out is
 * VK_NULL_HANDLE. */
rayo_status vk_ctx_pipeline(vk_state *s, const vk_ctx *cx, uint32_t shader, const uint32_t *spec,
                            uint32_t spec_count, VkPipeline *out);

/* ---- vk-submit.c ------------------------------------------------------------------- */
/* An operand bound to a descriptor: the buffer range and the offset of the
 * operand inside that range, in 4-byte words (rounded down) and in bytes
 * (f16 and block operands may start at any even or any byte). */
typedef struct vk_binding {
    VkBuffer buffer;
    VkDeviceSize offset, range;
    uint32_t word_offset, byte_offset;
    const vk_buf *buf;                /* the buffer bound (vk_ctx_dispatch marks writes) */
} vk_binding;

/* The push constants of every shader (shaders/common.glsl); ext[]: more
 * parameters of the shaders that need them (attention.comp). */
#define VK_PUSH_EXT 16
typedef struct vk_push {
    uint32_t n, m, k;
    uint32_t oa, ob, oc, oy;
    float alpha, beta;
    uint32_t flags, aux;
    uint32_t ext[VK_PUSH_EXT];
} vk_push;

rayo_status vk_ctx_acquire(vk_state *s, vk_ctx **out);
/* Records a dispatch with bindings a, b, c, y, s, d, e, f (NULL: unused;
 * those past s->bindings are never read), after a
 * barrier when one is owed (any command before it in the context), unless
 * vk_ctx_independent cleared it.  Errors are kept in cx->error. */
rayo_status vk_ctx_dispatch(vk_state *s, vk_ctx *cx, VkPipeline pipeline,
                            const vk_binding *const bind[VK_BINDINGS], const vk_push *pc,
                            uint32_t gx, uint32_t gy, uint32_t gz);
/* Before an op's commands: when the op's accesses (spans) do not conflict
 * with those of the ops since the last barrier (no read or write of what
 * they write, no write of what they read), its first command goes without
 * the barrier, so that independent ops (the q, k and v products) overlap.
 * After them: vk_ctx_accessed adds the spans (tracked false: an op whose
 * accesses the spans do not describe; the next op then takes the barrier). */
void vk_ctx_independent(vk_ctx *cx, const vk_span *spans, size_t n);
void vk_ctx_accessed(vk_ctx *cx, const vk_span *spans, size_t n, bool tracked);
void vk_ctx_copy(vk_state *s, vk_ctx *cx, const vk_buf *src, VkDeviceSize src_off,
                 const vk_buf *dst, VkDeviceSize dst_off, VkDeviceSize bytes);
/* A temporary device buffer that lives until the context is released. */
rayo_status vk_ctx_temp(vk_state *s, vk_ctx *cx, vk_pool *pool, VkDeviceSize bytes, vk_buf **out);
/* A temporary device buffer of bytes (*out, its size rounded up) whose
 * contents the caller writes at *host before the submit: the buffer itself
 * on unified memory, else a staging buffer copied into it when the context
 * runs (before the commands recorded after this call).  For large tables
 * that many workgroups read (a shader reading staging memory reads it over
 * the bus); the copy costs a barrier. */
rayo_status vk_ctx_upload_temp(vk_state *s, vk_ctx *cx, VkDeviceSize bytes, vk_buf **out, void **host);
rayo_status vk_ctx_submit(vk_state *s, vk_ctx *cx);
/* Ends a context's command buffer once (last: with the barrier that makes
 * the results visible to the host; only the last of a submission needs it). */
rayo_status vk_ctx_end(vk_state *s, vk_ctx *cx, bool last);
/* Ends cxs[0..n) where not yet ended and submits them in that order in one
 * submission; a context ended before is submitted again as it was recorded. */
rayo_status vk_ctx_submit_all(vk_state *s, vk_ctx *const *cxs, size_t n);
rayo_status vk_ctx_wait(vk_state *s, vk_ctx *cx, uint64_t timeout_ns);
/* Returns a context to the free list (waits for it first if submitted). */
void vk_ctx_release(vk_state *s, vk_ctx *cx);
void vk_ctx_destroy_all(vk_state *s);
/* Waits until every submission so far has completed. */
rayo_status vk_queue_drain(vk_state *s);
/* Binds bytes of buf starting at byte offset off (any); fails (UNSUPPORTED)
 * when the range exceeds what one descriptor can address. */
rayo_status vk_bind(vk_state *s, const vk_buf *buf, VkDeviceSize off, VkDeviceSize bytes,
                    vk_binding *out);

/* ---- vk-batches.c: the memory API (buffers and batches) ------------------------------ */
extern const rayo_memory_api vk_memory_api;

/* The buffers of one dispatch. */
typedef struct vk_operands {
    vk_binding bind[VK_BINDINGS];
    const vk_binding *use[VK_BINDINGS]; /* NULL where unused; [4]: scratch */
} vk_operands;
/* Operands with none bound yet. */
static inline void vk_operands_clear(vk_operands *ops)
{
    for (int i = 0; i < VK_BINDINGS; i++)
        ops->use[i] = NULL;
}

/* ---- kernel families ---------------------------------------------------------------
 * The shaders of one kind of op: each entry of the op table (gpu-op-table.h,
 * vk-plugin.c) names one, so no call is sorted by its signature or dtypes
 * again on the way to its shaders. */
typedef struct vk_family {
    const char *name;
    /* Records the call; its operands are bound (ops->use[4], the scratch,
     * is the family's to bind). */
    rayo_status (*record)(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, vk_operands *ops);
    bool strided;               /* takes row strides (lda ... ldy) */
    bool ctx_scratch;           /* uses scratch of the context that other calls reuse:
                                 * never runs alongside another op */
} vk_family;

/* Every family: vk-ops.c (the f32 ops), vk-infer.c, vk-typed-matmul.c. */
#define VK_FAMILY_DECL(name) extern const vk_family vk_family_##name;
GPU_FAMILIES(VK_FAMILY_DECL)
#undef VK_FAMILY_DECL

/* ---- vk-plugin.c: the op table ------------------------------------------------------- */
/* The family that runs (op, dtypes) here, or NULL. */
const vk_family *vk_family_of(uint32_t op, uint32_t dtypes);

/* ---- vk-ops.c ------------------------------------------------------------------------ */
/* Records one op on device buffers into cx (batches, and the f32 steps of
 * a typed matmul): through the family of its op and dtypes. */
rayo_status vk_record(vk_state *s, vk_ctx *cx, const rayo_dev_call *call);
/* Records one op through family (NULL: RAYO_E_UNSUPPORTED). */
rayo_status vk_record_family(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, const vk_family *family);
/* add then rmsnorm of its output as one dispatch; RAYO_E_UNSUPPORTED (nothing
 * recorded) where they do not suit it (vk-ops.c) */
rayo_status vk_record_add_rmsnorm(vk_state *s, vk_ctx *cx, const rayo_dev_call *add, const rayo_dev_call *norm);
/* rmsnorm of one row and a relaxed gemv of its output as one dispatch, the
 * normalised row stored where `store`; RAYO_E_UNSUPPORTED as above (vk-infer.c) */
rayo_status vk_record_norm_gemv(vk_state *s, vk_ctx *cx, const rayo_dev_call *norm, const rayo_dev_call *gemv,
                                bool store);
/* rmsnorm, gemvs gate and up of its output and their swiglu as one
 * dispatch; RAYO_E_UNSUPPORTED as above (vk-infer.c) */
rayo_status vk_record_norm_glu(vk_state *s, vk_ctx *cx, const rayo_dev_call *norm, const rayo_dev_call *gate,
                               const rayo_dev_call *up, const rayo_dev_call *glu, bool store);
/* Whether c[0 .. 6) = rmsnorm, gemvs q, k, v of its output, rope of q's and of
 * k's output in place run as three dispatches: the norm with q's and with k's
 * product and their rope (vk_record_norm_gemv_rope), then v's product, with
 * the norm where it fuses, else alone on the norm's stored output */
bool vk_norm_ropes_suit(const vk_state *s, const rayo_dev_call *const c[6]);
rayo_status vk_record_norm_gemv_rope(vk_state *s, vk_ctx *cx, const rayo_dev_call *norm, const rayo_dev_call *gemv,
                                     const rayo_dev_call *rope, bool store);
/* The bytes of operand o from its start, as a tracked span; whether two meet. */
vk_span vk_span_of(const rayo_dev_operand *o, size_t bytes, bool write);
bool vk_spans_meet(const vk_span *a, const vk_span *b);
/* A temporary buffer of bytes from pool, alive until cx is released, bound
 * as the dispatch's fifth operand (ops->use[4]: scratch or a table). */
rayo_status vk_bind_temp(vk_state *s, vk_ctx *cx, vk_pool *pool, VkDeviceSize bytes, vk_operands *ops,
                         vk_buf **out);
/* A host-memory call of one of family's ops: staged, recorded, submitted,
 * waited for. */
rayo_status vk_host_call(void *state, const rayo_call *call, const vk_family *family);

/* ---- vk-profile.c: profile = yes (each a no-op otherwise) ---------------------------- */
/* At a batch's begin: the timestamps' reset and the first one. */
void vk_profile_begin(vk_state *s, vk_ctx *cx);
/* After each op recorded into a batch (and each step of a typed matmul). */
void vk_profile_op(vk_state *s, vk_ctx *cx, const rayo_dev_call *call);
void vk_profile_submitted(vk_state *s, vk_ctx *cx);
/* Host time: a clock in ms (0 without the profile), and the time since
 * such a reading added to the batches' recording time. */
double vk_profile_clock(const vk_state *s);
void vk_profile_host(vk_state *s, double since);
/* After a successful wait: adds the batch's op times to the totals. */
void vk_profile_collect(vk_state *s, vk_ctx *cx);
/* At close: the totals at info level. */
void vk_profile_report(vk_state *s);
void vk_profile_free(vk_state *s, vk_ctx *cx);
/* ---- vk-typed-matmul.c, vk-half-prompt.c ---------------------------------------------- */
#define VK_TYPED_MATMUL_MAX_SCRATCH ((VkDeviceSize)1 << 30) /* bytes of a call's copies */
/* The context's typed-matmul scratch, grown to at least bytes. */
rayo_status vk_typed_scratch(vk_state *s, vk_ctx *cx, VkDeviceSize bytes, vk_buf **out);
/* Whether a matmul call takes the f16 copies, and recording it (returns
 * RAYO_E_UNSUPPORTED before recording anything where it cannot). */
bool vk_half_prompt_takes(const vk_state *s, const rayo_dev_call *call);
rayo_status vk_half_prompt(vk_state *s, vk_ctx *cx, const rayo_dev_call *call);

/* ---- vk-weight-copies.c: the half prompt's kept f16 copies of weights ------------------ */
/* Records into cx the conversion of call's operand b into the copy bound at dst. */
typedef rayo_status (*vk_copy_maker)(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, const vk_binding *dst);
/* Reads [backend.vulkan] weight_copies (at init, once half_prompt is known). */
void vk_copies_init(vk_state *s);
/* The kept copy (bytes) of call's operand b, bound at *out and listed in
 * cx; made with `make` where there is none and the limit leaves room.
 * false: none (the call converts b itself). */
bool vk_weight_copy(vk_state *s, vk_ctx *cx, const rayo_dev_call *call, VkDeviceSize bytes, vk_copy_maker make,
                    vk_binding *out);
/* Whether every kept copy cx reads is still what a conversion would make now. */
bool vk_copies_fresh(vk_state *s, const vk_ctx *cx);
/* buffer_free: the buffer's copies retired (the queue drained before). */
void vk_copies_forget(vk_state *s, const vk_buf *buf);
void vk_copies_fini(vk_state *s);

/* ---- vk-infer.c ---------------------------------------------------------------------- */
/* Whether a rope or attention output of `span` elements has gaps (head or
 * token strides); ldy is checked by the caller. */
bool vk_infer_output_gaps(const rayo_call *call, size_t span);
/* Reads the gemv and attention settings into s (at init, once the subgroup size is known). */
void vk_infer_read_settings(vk_state *s);
/* Checks of a host call that a batch cannot make (get_rows' indices). */
rayo_status vk_check_host_call(vk_state *s, const rayo_call *call);

#endif
