/* SPDX-License-Identifier: MIT */
/* internal.h - what the parts of librayo share.  Not installed.  Names:
 * rayo_* is the public API (rayo.h) and nothing else; helpers shared inside
 * the core are rayo__* or carry their part's prefix (core_, loader_...), so
 * the boundary shows in every identifier; all are HIDDEN. */
#ifndef RAYO_INTERNAL_H
#define RAYO_INTERNAL_H

#include "config.h"
#include "rayo-plugin.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#define HIDDEN __attribute__((visibility("hidden")))
/* Backends one context uses at most (the chains' length).  Files that are
 * not loaded (rejected, unavailable, denied) do not count: any number of
 * them is listed. */
#define MAX_BACKENDS 32
#define MAX_LINKS MAX_BACKENDS
/* Dtype combinations of all ops together (op-table.c checks that they fit). */
#define COMBO_SLOTS 128
/* The op entry of ABI 1.0: what an op table entry holds at least. */
#define OP_ENTRY_V1_0_SIZE (offsetof(rayo_op_entry, fn) + sizeof(rayo_kernel_fn))

/* ---- log.c: messages and the thread's last error ---- */
HIDDEN void core_log(const rayo_context *ctx, rayo_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
HIDDEN rayo_status rayo__fail(rayo_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
HIDDEN void rayo__clear_error(void);
HIDDEN void rayo__set_errorv(const char *fmt, va_list ap);
/* host->set_error notes that a plugin gave a message; the core takes the
 * note after a kernel failed (dispatch.c: kernel_failed). */
HIDDEN void rayo__note_plugin_message(void);
HIDDEN int rayo__take_plugin_message(void);
HIDDEN int rayo__parse_log_level(const char *s, rayo_log_level *out);

/* ---- config.c ---- */
typedef struct config_entry {
    char *section, *key, *value;
    char *origin;            /* "file:line", "env RAYO_X", "options" */
} config_entry;

typedef struct config_file {
    char *path;
    char *status;            /* "read", "not found", "masked by ...", ... */
    int problems;            /* warnings that began with this file's path and a line */
    char counted[64];        /* "read, 2 problems (see warnings)" when problems > 0 */
} config_file;

typedef struct rayo_config {
    config_entry *entries;   /* later entries override earlier ones */
    size_t count, cap;
    config_file *files;
    size_t file_count, file_cap;
} rayo_config;

HIDDEN void config_load(rayo_context *ctx, rayo_config *cfg, const rayo_options *opts);
HIDDEN const char *config_get(const rayo_config *cfg, const char *section, const char *key);
/* The entry that sets (section, key): the last one read, or NULL. */
HIDDEN const config_entry *config_lookup(const rayo_config *cfg, const char *section, const char *key);
HIDDEN void config_free(rayo_config *cfg);
/* A file's status as rayo-info shows it, with its count of problems. */
HIDDEN const char *config_file_status(const config_file *f);
/* Counts a warning against the config file it begins with ("FILE:LINE: ..."),
 * so that a file's count of problems is what was said about it. */
HIDDEN void config_count_problem(rayo_config *cfg, const char *msg);
HIDDEN bool config_bool(const char *v, bool dflt);
/* "a directory", "a FIFO", ... for a st_mode (messages). */
HIDDEN const char *file_type_name(unsigned mode);
/* Where the effective (section, key) came from ("file:line", "env RAYO_X"), or NULL. */
HIDDEN const char *config_origin(const rayo_config *cfg, const char *section, const char *key);
/* Typed lookups: a value that does not parse is warned about with its origin
 * and the default is used. */
HIDDEN bool config_get_bool(const rayo_context *ctx, const char *section, const char *key, bool dflt);
HIDDEN size_t config_get_size(const rayo_context *ctx, const char *section, const char *key, size_t dflt);
/* Parses INI text from a stream (config files) or a string; for the fuzz
 * targets as much as for config_load.  base_dir: relative plugin paths
 * resolve against it (NULL: the current directory). */
HIDDEN int config_parse_stream(rayo_context *ctx, rayo_config *cfg, const char *name, FILE *fp,
                               const char *base_dir);
HIDDEN int config_parse_string(rayo_context *ctx, rayo_config *cfg, const char *name, const char *text);
/* Is `name` in the comma-separated list? (case-sensitive, spaces trimmed) */
HIDDEN bool list_contains(const char *list, const char *name);
/* Calls fn for each trimmed, non-empty item of a list separated by `sep`. */
HIDDEN void list_each(const char *list, char sep, void (*fn)(void *u, const char *item), void *u);
/* The same for a list of backend names: commas and blanks both separate. */
HIDDEN void list_each_name(const char *list, void (*fn)(void *u, const char *item), void *u);

/* ---- cpu.c ---- */
HIDDEN uint64_t cpu_detect(void);
HIDDEN uint64_t cpu_features_from_names(const char *list);
/* Names of the features in mask ("avx2, fma"), into buf. */
HIDDEN const char *cpu_feature_names(uint64_t mask, char *buf, size_t size);
HIDDEN uint32_t cpu_arch(void);
HIDDEN const char *arch_name(uint32_t arch);

/* ---- pool.c: the thread pool ---- */
typedef struct rayo_pool rayo_pool;
HIDDEN rayo_pool *pool_create(unsigned threads);
HIDDEN void pool_destroy(rayo_pool *pool);
HIDDEN unsigned pool_threads(const rayo_pool *pool);
HIDDEN void pool_run(rayo_pool *pool, size_t n_tasks,
                     void (*fn)(void *arg, size_t task, unsigned worker), void *arg);

/* ---- plugin-check.c: checks that trust nothing in the plugin ---- */
/* The size of a minor-0 descriptor: the fields this core reads. */
#define DESCRIPTOR_V1_0_SIZE (offsetof(rayo_plugin_descriptor, reserved2) + sizeof(uint32_t))
/* The size of a descriptor with release_constant (1.2). */
#define DESCRIPTOR_V1_2_SIZE (offsetof(rayo_plugin_descriptor, release_constant) + sizeof(void (*)(void)))
/* More op table entries than any plugin needs: a bigger op_count is a lie. */
#define PLUGIN_MAX_OPS 4096
/* Bytes read from the start of a plugin file for the ELF checks: the
 * program headers must lie within them (they follow the ELF header). */
#define PLUGIN_HEAD_BYTES 65536

typedef struct plugin_segment {
    uintptr_t start, end;    /* [start, end) as mapped */
    bool exec;
} plugin_segment;

typedef struct plugin_map {
    plugin_segment seg[16];
    size_t count;
} plugin_map;

/* The first `len` bytes of a file of file_size bytes: an ELF shared object
 * of this machine whose loadable segments all lie within the file? */
HIDDEN bool plugin_elf_ok(const unsigned char *head, size_t len, uint64_t file_size, char *why, size_t size);
/* The descriptor symbol: large enough and inside the plugin's segments. */
HIDDEN bool plugin_symbol_ok(const plugin_map *map, const void *desc, size_t sym_size, char *why, size_t size);
/* Magic, ABI major, size, and every pointer (probe, init, fini, ops and
 * their kernels, the memory API) into the plugin.  After plugin_symbol_ok. */
HIDDEN bool plugin_descriptor_ok(const plugin_map *map, const rayo_plugin_descriptor *d, size_t sym_size,
                                 char *why, size_t size);

/* ---- loader.c ---- */
typedef enum backend_kind {  /* what a backend runs on; in the default order lower runs first */
    KIND_GPU = 0, KIND_CPU = 1, KIND_SOFTWARE = 2
} backend_kind;

/* Keys of its own section a plugin may read (more are not remembered). */
#define BACKEND_KEYS_MAX 64

typedef struct rayo_backend {
    rayo_context *ctx;
    char name[32];
    char *path;
    char version[32];
    unsigned abi_major, abi_minor;
    rayo_backend_status status;
    char reason[256];
    void *dl;
    const rayo_plugin_descriptor *desc;
    rayo_probe_result probe;
    uint32_t device;               /* index in probe.devices */
    void *state;                   /* from init() */
    rayo_host host;                /* host services given to this plugin */
    backend_kind kind;
    unsigned rank;                 /* position in the default order */
    rayo_kernel_fn kernels[RAYO_OP_ID_LIMIT];   /* all-f32 kernel of each op */
    rayo_kernel_fn combo_kernels[COMBO_SLOTS];  /* other combinations, by op_combo_slot */
    size_t op_count;                            /* op table entries taken */
    atomic_bool lost;              /* device lost: no more calls */
    /* A device plugin (one with a memory API) starts at its first use, not
     * at rayo_open: deferred until then, started once (start_lock). */
    bool deferred;
    atomic_bool started;
    atomic_bool demoted;           /* started lazily as a software device no order names */
    bool named_in_order;           /* some order setting names it (config_check_names) */
    pthread_mutex_t start_lock;
    pthread_mutex_t keys_lock;     /* guards keys_read */
    char *keys_read[BACKEND_KEYS_MAX]; /* keys of [backend.NAME] the plugin asked for */
    size_t keys_read_count;
} rayo_backend;

HIDDEN void loader_load_all(rayo_context *ctx);
/* call_plugins false (a forked child): no fini, no dlclose - the plugins'
 * driver state belongs to the parent, and its threads are not here. */
HIDDEN void loader_unload_all(rayo_context *ctx, bool call_plugins);
HIDDEN rayo_backend *backend_by_name(const rayo_context *ctx, const char *name);
HIDDEN bool backend_active(const rayo_backend *be);
/* Starts a deferred backend (probe + init) once; RAYO_OK when it runs. */
HIDDEN rayo_status backend_start(rayo_backend *be);
/* Active, after starting it if it was deferred: for a use by name. */
HIDDEN bool backend_usable(rayo_backend *be);
/* The host memory [data, data + bytes) of a constant buffer is about to be
 * freed: every started plugin with release_constant is told. */
HIDDEN void backends_release_constant(rayo_context *ctx, const void *data, size_t bytes);
/* The kernel of a deferred backend's links: starts it, then runs the
 * plugin's kernel (arg is the backend). */
HIDDEN rayo_status backend_deferred_kernel(void *arg, const rayo_call *call);

/* ---- config-check.c: checks that need the loader's answer ---- */
/* Backend names in order/allow/deny and [backend.NAME] sections: a name no
 * plugin has is warned about once, with a close name if there is one. */
HIDDEN void config_check_names(rayo_context *ctx);
/* Remembers that the plugin read `key` of its section. */
HIDDEN void backend_note_key(rayo_backend *be, const char *key);
/* Warns about each key of the backend's section that neither the core nor
 * the plugin read (after init: plugins read their keys in probe or init). */
HIDDEN void backend_check_keys(rayo_backend *be);
HIDDEN void backend_free_keys(rayo_backend *be);

/* ---- dispatch.c ---- */
typedef struct rayo_link {
    rayo_backend *be;
    rayo_kernel_fn fn;
    void *arg;             /* fn's first argument: the plugin's state (the backend when deferred) */
    size_t min_size, max_size;
} rayo_link;

typedef struct rayo_chain_s {
    size_t count;
    bool relaxed_default;  /* [op.NAME] precision = relaxed: DEFAULT calls run RELAXED */
    rayo_link links[MAX_LINKS];
} rayo_chain_t;

HIDDEN void dispatch_resolve(rayo_context *ctx);
HIDDEN rayo_status dispatch_fallback(rayo_context *ctx, const rayo_chain_t *chain, const rayo_call *call,
                                     const rayo_op_info *op, size_t first_tried, rayo_status st, size_t size);
/* A call whose dtypes are not all-f32, or whose DEFAULT precision the
 * configuration relaxes (out of line). */
HIDDEN rayo_status dispatch_special(rayo_context *ctx, const rayo_call *call, const rayo_op_info *op);
/* The kernel of a backend for a call's op and dtypes, or NULL. */
HIDDEN rayo_kernel_fn backend_kernel(const rayo_backend *be, uint32_t op, uint32_t dtypes);

/* ---- op-table.c: the op table, generated from the op list ---- */
/* Each op's position in the list (and in rayo__op_table). */
enum {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) OP_POSITION_##ENUM,
#include "rayo-ops.h"
#undef RAYO_OP
    OP_POSITION_LIMIT
};
HIDDEN extern const rayo_op_info rayo__op_table[OP_POSITION_LIMIT];
/* op id -> position in rayo__op_table + 1 (0: no such op) */
HIDDEN extern const unsigned char rayo__op_index[RAYO_OP_ID_LIMIT];

/* The op of an id, or NULL (rayo_op_by_id, inline for the hot path). */
static inline const rayo_op_info *op_info(uint32_t id)
{
    if (id >= RAYO_OP_ID_LIMIT || !rayo__op_index[id])
        return NULL;
    return &rayo__op_table[rayo__op_index[id] - 1];
}

/* Operands (bit 0..3 = a, b, c, y) an op of signature sig uses. */
HIDDEN unsigned op_sig_operands(int sig);
/* The index of a dtype combination among its op's (rayo_op_combo), or -1. */
HIDDEN int op_combo_index(uint32_t op, uint32_t dtypes);
/* The slot (< COMBO_SLOTS) of a listed combination across all ops, or -1. */
HIDDEN int op_combo_slot(uint32_t op, uint32_t dtypes);

/* ---- call-check.c and op-calls.c: validation ---- */
/* The size of a rayo_call of ABI 1.0, the smallest this library takes. */
#define CALL_V1_0_SIZE (offsetof(rayo_call, params) + sizeof(const void *))

/* A typed f32 function's call: all-f32, dense, strict, no parameter struct,
 * this library's struct size.  Every ABI 1.0 check passes for it, so the
 * ops that predate ABI 1.0 skip them (callgrind: softmax's validation went
 * from 84 to 195 instructions a call without this). */
static inline bool call_abi_fields_are_plain(const rayo_call *c, rayo_op_sig sig)
{
    return sig <= RAYO_SIG_BIAS_ACT && c->struct_size == sizeof(rayo_call) && c->dtypes == 0 &&
           (c->lda | c->ldb | c->ldc | c->ldy) == 0 && c->precision == 0 && c->reserved == 0 && !c->params &&
           (c->constant_operands | c->reserved3) == 0;
}

/* Checks a call against its op's signature: pointers, flags, overflow; *op is
 * the op's entry (looked up once per call). */
HIDDEN rayo_status call_validate(const rayo_call *call, const rayo_op_info **op);
/* The full check, with a message for every way a call can be wrong;
 * data_on_host: the operands are host memory (alignment, get_rows' indices). */
HIDDEN rayo_status call_validate_fully(const rayo_call *call, const rayo_op_info *op, bool data_on_host);
/* The same checks for a call whose operands are in buffers (a batch): the
 * data itself (get_rows' indices) is not read. */
HIDDEN rayo_status call_validate_shape(const rayo_call *call, const rayo_op_info **op);
/* Element counts of the operands a, b, c and y (for buffer bounds). */
HIDDEN void call_operand_counts(const rayo_call *call, size_t counts[4]);
/* Writes the empty-call result (sum of nothing = 0, max = -inf, ...). */
HIDDEN void call_write_empty(const rayo_call *call);

/* ---- buffers.c: buffers and batches ---- */
HIDDEN extern const rayo_memory_api rayo_host_memory;
/* At rayo_close: waits for submitted batches, frees the device side of
 * every live buffer and batch and detaches their handles. */
HIDDEN void buffers_close_all(rayo_context *ctx, bool call_plugins);

/* ---- the context ---- */
/* Distinct messages a context remembers so as to say each once (log.c). */
#define LOG_ONCE_MAX 512

struct rayo_context {
    rayo_config cfg;
    rayo_log_level log_level;
    rayo_log_fn log_fn;
    void *log_user;
    uint64_t cpu_features;
    rayo_pool *pool;
    char *search_path;
    rayo_backend **backends; /* every plugin file seen, loaded or not */
    size_t backend_count, backend_cap, loaded_count;
    rayo_chain_t chains[RAYO_OP_ID_LIMIT];     /* the all-f32 combination of each op */
    rayo_chain_t combo_chains[COMBO_SLOTS];    /* the others, by op_combo_slot */
    pthread_mutex_t objects_lock; /* guards the two lists below */
    rayo_buffer *buffers;    /* live buffers and batches (buffers.c) */
    rayo_batch *batches;
    long owner_pid;          /* the process that opened it (fork detection) */
    bool no_env;             /* options.no_environment */
    bool force_cpu;
    pthread_mutex_t log_lock; /* guards said[] */
    uint64_t said[LOG_ONCE_MAX]; /* hashes of the messages said (log.c) */
    size_t said_count;
};

/* ---- the hot path of every call, inline ---- */
/* On every call's path, so inline: */
/* True when the call has no work (answered by the core: nothing to write). */
static inline bool call_is_empty(const rayo_call *c, rayo_op_sig sig)
{
    switch (sig) {
    case RAYO_SIG_MATMUL: return c->m == 0 || c->n == 0 || c->k == 0;
    case RAYO_SIG_GEMV: return c->m == 0 || c->n == 0;
    case RAYO_SIG_ROWS: case RAYO_SIG_NORM: case RAYO_SIG_TRANSPOSE: case RAYO_SIG_BIAS_ACT:
    case RAYO_SIG_GET_ROWS: case RAYO_SIG_GLU: case RAYO_SIG_ROPE: case RAYO_SIG_ATTENTION:
        return c->m == 0 || c->n == 0;
    default: return c->n == 0;
    }
}

/* The size dispatch windows compare with: n for vector ops, rows*cols for
 * row ops, m*n*k for matmul (saturated). */
static inline size_t call_work_size(const rayo_call *c, rayo_op_sig sig)
{
    size_t mn = c->m * c->n; /* validated: no overflow */
    switch (sig) {
    case RAYO_SIG_ROWS: case RAYO_SIG_NORM: case RAYO_SIG_TRANSPOSE:
    case RAYO_SIG_BIAS_ACT: case RAYO_SIG_GEMV:
        return mn;
    case RAYO_SIG_MATMUL:
        return (c->k && mn > SIZE_MAX / c->k) ? SIZE_MAX : mn * c->k;
    default:
        return c->n;
    }
}

/* ---- the public op functions ---- */

static inline bool link_fits(const rayo_link *l, size_t size)
{
    return size >= l->min_size && size <= l->max_size;
}

/* A call's way through its op's chain: the first link whose window fits
 * runs it; anything else (a failure, no link fitting) is the fallback's
 * business.  Inline: this is the whole cost of dispatch.  sig is op->sig,
 * passed apart because it is a constant in the typed functions, where it
 * resolves call_work_size at build time. */
static inline __attribute__((always_inline)) rayo_status dispatch_chain(rayo_context *ctx, const rayo_chain_t *chain,
                                                                         const rayo_call *call, const rayo_op_info *op,
                                                                         rayo_op_sig sig)
{
    size_t size = call_work_size(call, sig);
    for (size_t i = 0; i < chain->count; i++) {
        const rayo_link *l = &chain->links[i];
        if (!link_fits(l, size) || atomic_load_explicit(&l->be->lost, memory_order_relaxed))
            continue;
        rayo_status st = l->fn(l->arg, call);
        if (st == RAYO_OK)
            return RAYO_OK;
        return dispatch_fallback(ctx, chain, call, op, i, st, size);
    }
    return dispatch_fallback(ctx, chain, call, op, chain->count, RAYO_E_NO_BACKEND, size);
}

/* All-f32 calls at the precision they ask go straight to the op's chain
 * (dtypes and precision are constants 0 in the typed f32 functions, so
 * this is one load of relaxed_default); the rest out of line.  Forced
 * inline like dispatch_chain: left to itself gcc made it one out-of-line
 * function for every op, 60 instructions more per typed f32 call. */
static inline __attribute__((always_inline)) rayo_status dispatch_call(rayo_context *ctx, const rayo_call *call,
                                                                        const rayo_op_info *op, rayo_op_sig sig)
{
    const rayo_chain_t *chain = &ctx->chains[call->op];
    if (call->dtypes != 0 || (call->precision == RAYO_PRECISION_DEFAULT && chain->relaxed_default))
        return dispatch_special(ctx, call, op);
    return dispatch_chain(ctx, chain, call, op, sig);
}

/* Small helpers (context.c) */
HIDDEN char *rayo__strdup(const char *s);
HIDDEN char *rayo__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
HIDDEN void *rayo__alloc_aligned(size_t align, size_t bytes);
HIDDEN void rayo__free_aligned(void *p);
HIDDEN const char *rayo__env(const rayo_context *ctx, const char *name);

#endif
