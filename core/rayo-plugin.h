/* rayo-plugin.h - the plugin ABI of rayo (the only header a plugin includes).
 *
 * A plugin is a shared object named rayo-NAME.so that exports one data
 * symbol, `rayo_plugin` (a rayo_plugin_descriptor).  Before dlopen the core
 * checks the file name against plugins.allow/deny and the file itself (a
 * regular file; an ELF shared object of this machine's class and
 * architecture whose loadable segments lie within the file; under root or
 * setuid, not writable by group or others).  It then dlopens the file
 * (RTLD_NOW | RTLD_LOCAL) - which runs the plugin's ELF constructors, if any:
 * no loader can check a descriptor before that, so a plugin should have no
 * constructors - and checks the descriptor before calling any plugin
 * function: that the symbol lies in the plugin and is large enough, magic,
 * ABI major, struct size, the CPU features the plugin was compiled for,
 * checked against the CPU *and* the OS (cpuid + XGETBV on x86, HWCAP on
 * Arm), that probe, init, fini, the op table (at most 4096 entries), every
 * kernel and the memory API (struct_size and all nine functions) point into
 * the plugin's own segments.  Only then:
 *
 *   probe()  cheap: is the hardware/driver here, which devices; a reason if not
 *   init()   for one device, with the host services; returns the plugin state
 *   ops[]    {op id, kernel} pairs; unknown ids are ignored by the core, ops
 *            the plugin lacks fall through to the next backend
 *   memory   optional device buffers and batches (GPU plugins).  A plugin
 *            without them works on host memory; the core then provides
 *            buffers and batches itself over host memory.
 *   fini()   at rayo_close, before dlclose.
 *
 * Versioning: a core accepts plugins of its ABI major and any minor.  Structs
 * begin with their size so either side can grow them at the end: a newer core
 * reads only the fields an older plugin has; a plugin must check
 * host->struct_size before using host fields added after minor 0.
 *
 * Rules for kernels:
 *   - A kernel returns RAYO_OK, or an error without having modified any
 *     output that is also an input (axpy's y, matmul's C with beta != 0,
 *     in-place calls): the core then passes the call to the next backend.
 *   - RAYO_E_UNSUPPORTED for parameters it does not handle (e.g. a transpose
 *     flag): the core falls through without logging an error.
 *   - Kernels may be called concurrently from several threads on one state.
 *   - Sizes reaching a kernel are validated by the core: byte counts fit in
 *     size_t, pointers are non-NULL where the op needs them, n > 0 (the core
 *     answers empty calls itself).
 */
#ifndef RAYO_PLUGIN_H
#define RAYO_PLUGIN_H

#include "rayo.h"
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RAYO_PLUGIN_ABI_MAJOR 1
#define RAYO_PLUGIN_ABI_MINOR 0
#define RAYO_PLUGIN_MAGIC 0x4f594152u /* "RAYO" little-endian */

#if defined(__GNUC__)
#define RAYO_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define RAYO_PLUGIN_EXPORT
#endif

/* ---- CPU features (descriptor.cpu_features; host->cpu_features) -------- */
#define RAYO_CPU_X86_SSE2    (1ull << 0)
#define RAYO_CPU_X86_SSE41   (1ull << 1)
#define RAYO_CPU_X86_AVX     (1ull << 2)  /* includes OS YMM state (XGETBV) */
#define RAYO_CPU_X86_AVX2    (1ull << 3)  /* includes OS YMM state */
#define RAYO_CPU_X86_FMA     (1ull << 4)  /* includes OS YMM state */
#define RAYO_CPU_X86_F16C    (1ull << 5)
#define RAYO_CPU_X86_AVX512F (1ull << 6)  /* includes OS ZMM/opmask state */
#define RAYO_CPU_X86_AVX512BW (1ull << 7)  /* AVX-512 bits include OS ZMM/opmask state */
#define RAYO_CPU_X86_AVX512VL (1ull << 8)
#define RAYO_CPU_X86_AVX512DQ (1ull << 9)
#define RAYO_CPU_ARM_ASIMD   (1ull << 16) /* AArch64 Advanced SIMD (HWCAP_ASIMD) */
#define RAYO_CPU_ARM_FP16    (1ull << 17)
#define RAYO_CPU_ARM_DOTPROD (1ull << 18)
#define RAYO_CPU_ARM_SVE     (1ull << 19)
#define RAYO_CPU_WASM_SIMD128 (1ull << 32)

/* Architecture a plugin was built for (descriptor.arch); the core refuses a
 * plugin of another architecture with a clear reason. */
#define RAYO_ARCH_ANY     0u  /* portable code (scalar; GPU plugins' host side is still native) */
#define RAYO_ARCH_X86_64  1u
#define RAYO_ARCH_AARCH64 2u
#define RAYO_ARCH_WASM32  3u

/* ---- host services, passed to probe and init --------------------------- */
typedef struct rayo_host rayo_host;
struct rayo_host {
    size_t struct_size;
    unsigned abi_major, abi_minor;        /* of the core */
    void *core;                           /* opaque, for the functions below */
    uint64_t cpu_features;                /* what the CPU and OS support (after masking) */
    /* Log a message under the plugin's name (level: rayo_log_level). */
    void (*log)(const rayo_host *host, int level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    /* Set the detail message that goes with the status a kernel returns
     * (rayo_last_error() shows it when no other backend succeeds). */
    void (*set_error)(const rayo_host *host, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /* A key of the plugin's own config section [backend.NAME], or NULL. */
    const char *(*config)(const rayo_host *host, const char *key);
    /* Aligned host memory (align: a power of two >= sizeof(void *)). */
    void *(*alloc_aligned)(size_t align, size_t bytes);
    void (*free_aligned)(void *ptr);
    /* The core's thread pool: runs fn(arg, task, worker) for task in
     * [0, n_tasks) on up to num_threads() threads, the caller included, and
     * returns when all are done.  worker < num_threads() identifies the thread
     * (for per-thread scratch).  Safe to call from concurrent kernels: when
     * the pool is busy the tasks run on the calling thread (worker 0). */
    unsigned (*num_threads)(const rayo_host *host);
    void (*parallel_for)(const rayo_host *host, size_t n_tasks,
                         void (*fn)(void *arg, size_t task, unsigned worker), void *arg);
    /* A per-user cache directory for this plugin (pipeline/JIT caches),
     * created on demand; NULL if none can be used. */
    const char *(*cache_dir)(const rayo_host *host);
};

/* ---- probe ---------------------------------------------------------------- */
#define RAYO_MAX_DEVICES 16
#define RAYO_DEVICE_HOST_MEMORY 0x1u /* kernels work on host pointers directly */

typedef struct rayo_device_desc {
    char name[128];
    uint32_t type;           /* rayo_device_type */
    uint32_t flags;          /* RAYO_DEVICE_* */
    uint64_t memory_bytes;   /* 0 if unknown */
} rayo_device_desc;

typedef struct rayo_probe_result {
    size_t struct_size;
    uint32_t device_count;
    rayo_device_desc devices[RAYO_MAX_DEVICES];
    char reason[256];        /* why device_count is 0 (or a note) */
} rayo_probe_result;

/* ---- kernels ------------------------------------------------------------- */
typedef rayo_status (*rayo_kernel_fn)(void *state, const rayo_call *call);

typedef struct rayo_op_entry {
    uint32_t op;             /* rayo_op id */
    rayo_kernel_fn fn;
} rayo_op_entry;

/* ---- operand shapes -------------------------------------------------------
 * How many elements each operand of a call has, by the op's signature: the
 * one definition for the core and the plugins that size copies, staging
 * buffers or bindings.  (The conformance engine keeps an independent copy on
 * purpose, so that it checks this one.) */

/* Largest element count of one operand: its byte count fits in a ptrdiff_t,
 * so no kernel's pointer arithmetic can overflow.  The core refuses larger
 * calls (RAYO_E_OVERFLOW). */
#define RAYO_MAX_ELEMENTS ((size_t)PTRDIFF_MAX / sizeof(float))

/* The signature (rayo_op_sig) of an op id, or -1 for an id this header does
 * not know. */
static inline int rayo_op_signature(uint32_t op)
{
    switch (op) {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) case ID: return RAYO_SIG_##SIG;
#include "rayo-ops.h"
#undef RAYO_OP
    default: return -1;
    }
}

static inline int rayo_count_product_(size_t x, size_t y, size_t *out)
{
    if (x && y > RAYO_MAX_ELEMENTS / x)
        return -1;
    *out = x * y;
    return 0;
}

/* count[0..3]: the elements of a, b, c and y (0: the operand is not used).
 * Floats, except argmax's y: one index, a size_t in a host call and a
 * uint64_t in a device buffer.  layernorm's gamma (b) and beta (c) count only
 * when given; rmsnorm has no beta.  Returns 0, or -1 (counts all 0) when a
 * size or a count is above RAYO_MAX_ELEMENTS or sig is unknown.  A device
 * call is measured as a rayo_call with non-NULL a..c where it has buffers. */
static inline int rayo_operand_counts(const rayo_call *c, int sig, size_t count[4])
{
    size_t mn = 0, mk = 0, kn = 0;
    count[0] = count[1] = count[2] = count[3] = 0;
    if (c->n > RAYO_MAX_ELEMENTS || c->m > RAYO_MAX_ELEMENTS || c->k > RAYO_MAX_ELEMENTS)
        return -1;
    /* m x n only where the op has matrices (vector ops leave m unused) */
    if (sig >= RAYO_SIG_ROWS && rayo_count_product_(c->m, c->n, &mn))
        return -1;
    switch (sig) {
    case RAYO_SIG_BINARY: count[0] = count[1] = count[3] = c->n; return 0;
    case RAYO_SIG_UNARY: case RAYO_SIG_UNARY_P: case RAYO_SIG_UNARY_P2:
    case RAYO_SIG_AXPY: count[0] = count[3] = c->n; return 0;
    case RAYO_SIG_REDUCE: case RAYO_SIG_ARGREDUCE: count[0] = c->n; count[3] = 1; return 0;
    case RAYO_SIG_REDUCE2: count[0] = count[1] = c->n; count[3] = 1; return 0;
    case RAYO_SIG_ROWS: case RAYO_SIG_TRANSPOSE: count[0] = count[3] = mn; return 0;
    case RAYO_SIG_NORM:
        count[0] = count[3] = mn;
        count[1] = c->b ? c->n : 0;
        count[2] = c->c && c->op != RAYO_OP_RMSNORM ? c->n : 0;
        return 0;
    case RAYO_SIG_BIAS_ACT: count[0] = count[3] = mn; count[1] = c->n; return 0;
    case RAYO_SIG_MATMUL:
        if (rayo_count_product_(c->m, c->k, &mk) || rayo_count_product_(c->k, c->n, &kn))
            return -1;
        count[0] = mk; count[1] = kn; count[3] = mn; return 0;
    case RAYO_SIG_GEMV:
        count[0] = mn;
        count[1] = (c->flags & RAYO_TRANS_A) ? c->m : c->n;
        count[3] = (c->flags & RAYO_TRANS_A) ? c->n : c->m;
        return 0;
    default: return -1;
    }
}

/* Whether the op reads y before writing it (axpy; matmul and gemv with
 * beta != 0): a plugin that stages y must copy it in. */
static inline int rayo_output_is_input(const rayo_call *c, int sig)
{
    return sig == RAYO_SIG_AXPY ||
           ((sig == RAYO_SIG_MATMUL || sig == RAYO_SIG_GEMV) && c->beta != 0.0f);
}

/* ---- device memory and batches (optional) ------------------------------- */
typedef struct rayo_dev_operand {
    void *buf;               /* the plugin's buffer handle */
    size_t offset;           /* bytes */
} rayo_dev_operand;

typedef struct rayo_dev_call {
    uint32_t op, flags;
    size_t m, n, k;
    float alpha, beta;
    rayo_dev_operand a, b, c, y;  /* buf NULL = operand unused */
} rayo_dev_call;

typedef struct rayo_memory_api {
    size_t struct_size;
    rayo_status (*buffer_alloc)(void *state, size_t bytes, void **buf);
    void (*buffer_free)(void *state, void *buf);
    rayo_status (*buffer_write)(void *state, void *buf, size_t offset, const void *src, size_t bytes);
    rayo_status (*buffer_read)(void *state, void *buf, size_t offset, void *dst, size_t bytes);
    rayo_status (*batch_begin)(void *state, void **batch);
    /* Checked by the core before: op known, operands in bounds. */
    rayo_status (*batch_record)(void *state, void *batch, const rayo_dev_call *call);
    /* Asynchronous: returns once the work is queued. */
    rayo_status (*batch_submit)(void *state, void *batch);
    /* The batch's status: the first error of any op in it. */
    rayo_status (*batch_wait)(void *state, void *batch, uint64_t timeout_ns);
    void (*batch_free)(void *state, void *batch);
} rayo_memory_api;

/* ---- the descriptor --------------------------------------------------------
 * Data only: the core reads it before calling any function of the plugin. */
typedef struct rayo_plugin_descriptor {
    uint32_t magic;          /* RAYO_PLUGIN_MAGIC */
    uint16_t abi_major;      /* RAYO_PLUGIN_ABI_MAJOR */
    uint16_t abi_minor;      /* RAYO_PLUGIN_ABI_MINOR */
    uint32_t struct_size;    /* sizeof(rayo_plugin_descriptor) */
    uint32_t arch;           /* RAYO_ARCH_* */
    char name[32];           /* "avx2": the name used in config and tools */
    char version[32];        /* the plugin's own version */
    uint64_t cpu_features;   /* RAYO_CPU_* the code was compiled to require */
    uint32_t priority;       /* preference among CPU backends: higher first (scalar 10, SIMD 50) */
    uint32_t reserved;

    rayo_status (*probe)(const rayo_host *host, rayo_probe_result *result);
    rayo_status (*init)(const rayo_host *host, uint32_t device, void **state);
    void (*fini)(void *state);
    const rayo_op_entry *ops;
    size_t op_count;
    const rayo_memory_api *memory;  /* NULL: host memory (the core provides buffers) */
} rayo_plugin_descriptor;

/* Define the descriptor:  RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {...}; */
#define RAYO_PLUGIN_SYMBOL "rayo_plugin"

#ifdef __cplusplus
}
#endif
#endif
