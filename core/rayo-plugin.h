/* SPDX-License-Identifier: MIT */
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
 * kernel, release_constant when the descriptor has it and it is not NULL,
 * and the memory API (struct_size, all nine 1.0 functions and
 * batch_set_step when the table has it and it is not NULL) point into
 * the plugin's own segments.  Only then:
 *
 *   probe()  cheap: is the hardware/driver here, which devices; a reason if not
 *   init()   for one device, with the host services; returns the plugin state
 *   ops[]    {op id, dtypes, kernel} entries: the op and dtype combination
 *            (RAYO_DTYPES; 0 = all f32) a kernel implements.  An op may
 *            appear once per combination, or once with RAYO_DTYPES_ANY.
 *            Unknown op ids and dtype combinations are ignored by the core;
 *            ops and combinations the plugin lacks fall through to the next
 *            backend
 *   memory   optional device buffers and batches (GPU plugins).  A plugin
 *            without them works on host memory; the core then provides
 *            buffers and batches itself over host memory.
 *   fini()   at rayo_close, before dlclose.
 *
 * Versioning: a core accepts plugins of its ABI major and any minor.  Structs
 * begin with their size so either side can grow them at the end: a newer core
 * reads only the fields an older plugin has (and never sends a plugin a call
 * that uses a field newer than its abi_minor: the call goes on down the
 * chain); a plugin must check host->struct_size before using host fields
 * added after minor 0, and RAYO_CALL_HAS(call, field) before reading call
 * fields added after minor 0.  The op entry grows the same way
 * (descriptor.op_entry_size).
 *
 * C and C++: define the descriptor as
 *   RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {...};
 * The `extern` declaration below gives it external linkage and C linkage in
 * C++ too (a C++ namespace-scope const is otherwise internal); the same line
 * compiles as C and as C++ (tests/abi/test-abi-cxx.sh builds a C++17 plugin).
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
 *     answers empty calls itself), dtypes is a combination the op lists,
 *     strides are 0 or at least the row length (and whole blocks for block
 *     dtypes), precision is STRICT or RELAXED (the core applies the
 *     configuration to DEFAULT; a kernel treats a remaining 0 as STRICT).
 *   - Strides: a kernel honours lda..ldy (a row starts ld elements after the
 *     previous one; 0 = dense) or returns RAYO_E_UNSUPPORTED for a strided
 *     call, which then falls through.
 *   - Precision: under STRICT a kernel meets the strict contract; under
 *     RELAXED it may use reduced-precision products and meets the relaxed one.
 */
#ifndef RAYO_PLUGIN_H
#define RAYO_PLUGIN_H

#include "rayo.h"
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RAYO_PLUGIN_ABI_MAJOR 1
#define RAYO_PLUGIN_ABI_MINOR 2
#define RAYO_PLUGIN_MAGIC 0x4f594152u /* "RAYO" little-endian */

#if defined(__GNUC__)
#define RAYO_PLUGIN_VISIBLE_ __attribute__((visibility("default")))
#else
#define RAYO_PLUGIN_VISIBLE_
#endif
/* Put before the descriptor's definition.  In C++ it is `extern "C"`: the
 * declaration at the end of this header already makes the symbol visible,
 * and g++ ignores, with a -Wattributes warning, a visibility attribute on a
 * definition outside the extern "C" block that declared it. */
#ifdef __cplusplus
#define RAYO_PLUGIN_EXPORT extern "C"
#else
#define RAYO_PLUGIN_EXPORT RAYO_PLUGIN_VISIBLE_
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
/* RAYO_DEVICE_FLUSHES_DENORMALS (0x2, rayo.h): say so when it may be true. */

typedef struct rayo_device_desc {
    char name[128];
    uint32_t type;           /* rayo_device_type */
    uint32_t flags;          /* RAYO_DEVICE_* */
    uint64_t memory_bytes;   /* 0 if unknown */
    uint64_t reserved[4];    /* 0: room for 1.x (this struct sits in an array) */
} rayo_device_desc;

typedef struct rayo_probe_result {
    size_t struct_size;
    uint32_t device_count;
    rayo_device_desc devices[RAYO_MAX_DEVICES];
    char reason[256];        /* why device_count is 0 (or a note) */
} rayo_probe_result;

/* ---- kernels ------------------------------------------------------------- */
typedef rayo_status (*rayo_kernel_fn)(void *state, const rayo_call *call);

/* dtypes of an op entry whose kernel takes every combination of its op and
 * answers RAYO_E_UNSUPPORTED for what it does not do. */
#define RAYO_DTYPES_ANY 0xffffffffu

typedef struct rayo_op_entry {
    uint32_t op;             /* rayo_op id */
    uint32_t dtypes;         /* RAYO_DTYPES(a, b, c, y) it implements; 0: all f32;
                                RAYO_DTYPES_ANY: every combination of the op */
    rayo_kernel_fn fn;
    /* ABI 1.x appends fields here (descriptor.op_entry_size). */
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

/* Elements a stored matrix of `rows` rows of `cols` spans when rows start
 * `ld` elements apart (0: dense).  -1 on overflow. */
static inline int rayo_matrix_span_(size_t rows, size_t cols, size_t ld, size_t *out)
{
    size_t step = ld > cols ? ld : cols, head;
    if (!rows || !cols) {
        *out = 0;
        return 0;
    }
    if (rayo_count_product_(rows - 1, step, &head) || head > RAYO_MAX_ELEMENTS - cols)
        return -1;
    *out = head + cols;
    return 0;
}

/* Elements of a [tokens][heads][dim] tensor with token and head strides
 * (0: dense, heads * dim and dim): its true extent, the largest offset
 * touched + 1 = (tokens - 1) ts + (heads - 1) hs + dim, whatever the order
 * of the strides (a head-major KV cache has ts = dim and hs = n_kv dim; a
 * token is not one contiguous block there). */
static inline int rayo_heads_span_(size_t tokens, size_t heads, size_t dim, size_t token_stride,
                                   size_t head_stride, size_t *out)
{
    size_t hs = head_stride ? head_stride : dim, ts = token_stride, last_token, last_head;
    if (!tokens || !heads || !dim) {
        *out = 0;
        return 0;
    }
    if (dim > RAYO_MAX_ELEMENTS || (!ts && rayo_count_product_(heads, dim, &ts)) || rayo_count_product_(tokens - 1, ts, &last_token) ||
        rayo_count_product_(heads - 1, hs, &last_head) ||
        last_head > RAYO_MAX_ELEMENTS - dim || last_token > RAYO_MAX_ELEMENTS - dim - last_head)
        return -1;
    *out = last_token + last_head + dim;
    return 0;
}

/* The parameter struct of rope / attention when it is there and holds
 * every 1.0 field; else NULL. */
static inline const rayo_rope_params *rayo_call_rope_params(const rayo_call *c)
{
    const rayo_rope_params *p = (const rayo_rope_params *)c->params;
    return p && p->struct_size >= offsetof(rayo_rope_params, head_stride_y) + sizeof p->head_stride_y
               ? p : NULL;
}
static inline const rayo_attention_params *rayo_call_attention_params(const rayo_call *c)
{
    const rayo_attention_params *p = (const rayo_attention_params *)c->params;
    return p && p->struct_size >= offsetof(rayo_attention_params, o_head) + sizeof p->o_head ? p : NULL;
}

static inline int rayo_operand_counts_new_(const rayo_call *c, int sig, size_t count[4])
{
    int bad = 0;
    switch (sig) {
    case RAYO_SIG_CONVERT: count[0] = count[3] = c->n; return 0;
    case RAYO_SIG_GET_ROWS: /* a: table k x n (lda); b: m i32 indices; y: m x n (ldy) */
        count[1] = c->m;
        bad |= rayo_matrix_span_(c->k, c->n, c->lda, &count[0]);
        bad |= rayo_matrix_span_(c->m, c->n, c->ldy, &count[3]);
        break;
    case RAYO_SIG_GLU: /* a = gate, b = up, y: m x n, each with its stride */
        bad |= rayo_matrix_span_(c->m, c->n, c->lda, &count[0]);
        bad |= rayo_matrix_span_(c->m, c->n, c->ldb, &count[1]);
        bad |= rayo_matrix_span_(c->m, c->n, c->ldy, &count[3]);
        break;
    case RAYO_SIG_ROPE: { /* a = x, b = m i32 positions, y; m tokens */
        const rayo_rope_params *p = rayo_call_rope_params(c);
        if (!p)
            return -1;
        count[1] = c->m;
        bad |= rayo_heads_span_(c->m, p->n_heads, p->head_dim, c->lda, p->head_stride_x, &count[0]);
        bad |= rayo_heads_span_(c->m, p->n_heads, p->head_dim, c->ldy, p->head_stride_y, &count[3]);
        break;
    }
    case RAYO_SIG_ATTENTION: { /* a = q, b = k, c = v, y = out; shapes in the params */
        const rayo_attention_params *p = rayo_call_attention_params(c);
        if (!p)
            return -1;
        bad |= rayo_heads_span_(p->n_q, p->n_heads, p->head_dim, p->q_token, p->q_head, &count[0]);
        bad |= rayo_heads_span_(p->n_kv, p->n_kv_heads, p->head_dim, p->k_token, p->k_head, &count[1]);
        bad |= rayo_heads_span_(p->n_kv, p->n_kv_heads, p->head_dim, p->v_token, p->v_head, &count[2]);
        bad |= rayo_heads_span_(p->n_q, p->n_heads, p->head_dim, p->o_token, p->o_head, &count[3]);
        break;
    }
    default: return -1;
    }
    if (bad)
        count[0] = count[1] = count[2] = count[3] = 0;
    return bad ? -1 : 0;
}

/* count[0..3]: the elements of a, b, c and y (0: the operand is not used),
 * each in its own dtype (rayo_dtype_row_bytes gives bytes).  Floats in an
 * all-f32 call, except argmax's y: one index, a size_t in a host call and a
 * uint64_t in a device buffer.  layernorm's gamma (b) and beta (c) count only
 * when given; rmsnorm has no beta.  A strided operand counts from its first
 * element to its last (rows - 1) * ld + cols.  Returns 0, or -1 (counts all
 * 0) when a size or a count is above RAYO_MAX_ELEMENTS, sig is unknown, or
 * rope/attention lack their parameters.  A device call is measured as a
 * rayo_call with non-NULL a..c where it has buffers. */
static inline int rayo_operand_counts(const rayo_call *c, int sig, size_t count[4])
{
    size_t mn = 0;
    count[0] = count[1] = count[2] = count[3] = 0;
    if (c->n > RAYO_MAX_ELEMENTS || c->m > RAYO_MAX_ELEMENTS || c->k > RAYO_MAX_ELEMENTS)
        return -1;
    if (sig >= RAYO_SIG_CONVERT)
        return rayo_operand_counts_new_(c, sig, count);
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
    case RAYO_SIG_MATMUL: { /* A stored m x k (k x m with TRANS_A), B k x n (n x k), C m x n */
        int ta = (c->flags & RAYO_TRANS_A) != 0, tb = (c->flags & RAYO_TRANS_B) != 0;
        if (rayo_matrix_span_(ta ? c->k : c->m, ta ? c->m : c->k, c->lda, &count[0]) ||
            rayo_matrix_span_(tb ? c->n : c->k, tb ? c->k : c->n, c->ldb, &count[1]) ||
            rayo_matrix_span_(c->m, c->n, c->ldy, &count[3])) {
            count[0] = count[1] = count[3] = 0;
            return -1;
        }
        return 0;
    }
    case RAYO_SIG_GEMV:
        if (rayo_matrix_span_(c->m, c->n, c->lda, &count[0]))
            return -1;
        count[1] = (c->flags & RAYO_TRANS_A) ? c->m : c->n;
        count[3] = (c->flags & RAYO_TRANS_A) ? c->n : c->m;
        return 0;
    default: return -1;
    }
}

/* Whether a call has row strides (a kernel that does not honour them
 * returns RAYO_E_UNSUPPORTED, and the call falls through). */
static inline int rayo_call_strided(const rayo_call *c)
{
    return (c->lda | c->ldb | c->ldc | c->ldy) != 0;
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

/* rayo_call on buffers: the same fields in the same order (growable; a
 * plugin checks RAYO_DEV_CALL_HAS before reading a field added after 1.0). */
typedef struct rayo_dev_call {
    uint32_t struct_size;    /* sizeof(rayo_dev_call) of the core's header */
    uint32_t op, flags;
    uint32_t dtypes;         /* RAYO_DTYPES(a, b, c, y); 0: all f32 */
    size_t m, n, k;
    float alpha, beta;
    rayo_dev_operand a, b, c, y;  /* buf NULL = operand unused */
    size_t lda, ldb, ldc, ldy;    /* row strides in elements; 0: dense */
    uint32_t precision;      /* rayo_precision (DEFAULT already resolved) */
    uint32_t reserved;
    const void *params;      /* host copy of the op's parameter struct, valid until batch_free */
    /* 1.1, replay (only to a plugin whose memory API has batch_set_step;
     * others get calls already moved to the batch's step, these fields 0):
     * at step s operand i's offset is offset + s * step_bytes[i], and with
     * RAYO_STEP_KV_LENGTH an attention's k and n_kv are k + s and n_kv + s
     * (rayo_dev_call_at_step applies both). */
    size_t step_bytes[4];    /* a, b, c, y */
    uint32_t step_flags;
    uint32_t reserved2;
    /* 1.2: RAYO_CONSTANT_* bits of the operands in constant buffers, as in
     * rayo_call (a device plugin also sees the buffers it owns). */
    uint32_t constant_operands;
    uint32_t reserved3;
    /* ABI 1.x appends fields here. */
} rayo_dev_call;

#define RAYO_DEV_CALL_HAS(call, field) \
    (offsetof(rayo_dev_call, field) + sizeof(((const rayo_dev_call *)0)->field) <= (call)->struct_size)

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
    /* 1.1, optional (replay; NULL, or a 1.0-sized table: the core frees and
     * records the batch again before each later submit).  A plugin that has
     * it takes calls with step fields (rayo_dev_call), accepts batch_submit
     * again once batch_wait has returned, runs every later submit at the
     * step last given here (0 before the first call), and keeps what it
     * built for the batch (a CUDA graph, a command buffer) across submits.
     * Called only while the batch is not running; the core has checked
     * every recorded call at this step. */
    rayo_status (*batch_set_step)(void *state, void *batch, size_t step);
} rayo_memory_api;

/* The size of a 1.0 memory API table (without batch_set_step). */
#define RAYO_MEMORY_API_V1_0_SIZE offsetof(rayo_memory_api, batch_set_step)

/* A rayo_dev_call of any size as a full one of this header: fields the
 * sender did not have are 0. */
static inline void rayo_dev_call_copy(const rayo_dev_call *in, rayo_dev_call *out)
{
    size_t n = in->struct_size < sizeof *out ? in->struct_size : sizeof *out;
    unsigned char *o = (unsigned char *)out;
    for (size_t i = 0; i < sizeof *out; i++)
        o[i] = i < n ? ((const unsigned char *)in)[i] : 0;
    out->struct_size = sizeof *out;
}

/* A full-size call c as it runs at `step`: offsets advanced; with
 * RAYO_STEP_KV_LENGTH an attention's k and n_kv grown, its parameters then
 * copied to *attn, which out->params points to.  out's step fields are 0. */
static inline void rayo_dev_call_at_step(const rayo_dev_call *c, size_t step, rayo_dev_call *out,
                                         rayo_attention_params *attn)
{
    *out = *c;
    rayo_dev_operand *o[4] = {&out->a, &out->b, &out->c, &out->y};
    for (int i = 0; i < 4; i++) {
        o[i]->offset += step * c->step_bytes[i];
        out->step_bytes[i] = 0;
    }
    out->step_flags = 0;
    const rayo_attention_params *p = (const rayo_attention_params *)c->params;
    if ((c->step_flags & RAYO_STEP_KV_LENGTH) && p) {
        size_t n = p->struct_size < sizeof *attn ? p->struct_size : sizeof *attn;
        for (size_t i = 0; i < sizeof *attn; i++)
            ((unsigned char *)attn)[i] = i < n ? ((const unsigned char *)p)[i] : 0;
        attn->struct_size = sizeof *attn;
        attn->n_kv += step;
        out->k += step;
        out->params = attn;
    }
}

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
    uint32_t op_entry_size;  /* sizeof(rayo_op_entry): lets entries grow in 1.x */
    uint32_t reserved2;      /* 0 */
    /* 1.2, optional (NULL): the host memory [data, data + bytes) of a
     * constant buffer is about to be freed: drop what the plugin derived
     * from it (rayo_call.constant_operands).  Called on every started
     * plugin that has it, while no kernel reads that memory, possibly
     * while kernels run on other memory. */
    void (*release_constant)(void *state, const void *data, size_t bytes);
    /* ABI 1.x appends fields here. */
} rayo_plugin_descriptor;

/* Define the descriptor:  RAYO_PLUGIN_EXPORT const rayo_plugin_descriptor rayo_plugin = {...};
 * This declaration gives it external (and, in C++, C) linkage.  A test that
 * defines the symbol with another type (a descriptor of a future minor)
 * defines RAYO_PLUGIN_NO_DECLARATION first. */
#ifndef RAYO_PLUGIN_NO_DECLARATION
extern RAYO_PLUGIN_VISIBLE_ const rayo_plugin_descriptor rayo_plugin;
#endif
#define RAYO_PLUGIN_SYMBOL "rayo_plugin"

#ifdef __cplusplus
}
#endif
#endif
