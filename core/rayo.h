/* rayo.h - public API of librayo.
 *
 * rayo runs numeric kernels on whatever compute the machine has.  The core
 * loads backends (scalar, avx2, neon, vulkan, cuda, wasm) as plugins, ranks
 * them and resolves, for every op, a chain of backends that can run it.
 *
 *   rayo_context *ctx;
 *   if (rayo_open(&ctx, NULL) != RAYO_OK) { fprintf(stderr, "%s\n", rayo_last_error()); ... }
 *   rayo_add(ctx, a, b, y, n);
 *   rayo_close(ctx);
 *
 * Every function that can fail returns a rayo_status; rayo_last_error() gives
 * a human-readable message for the last failure on the calling thread.
 * A context may be used by several threads at once.
 *
 * fork(): a child may go on using a context its parent opened, on CPU
 * backends: the thread pool's threads do not exist in the child, so there
 * CPU work runs on the calling thread.  GPU backends (driver state and
 * threads) are not fork-safe: in the child, open a new context for GPU work
 * (set RAYO_FORCE_CPU or dispatch order for the inherited one).  rayo_close
 * in the child frees the core's memory without calling into the plugins.
 * Do not fork while another thread is inside a rayo call.
 */
#ifndef RAYO_H
#define RAYO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RAYO_BUILDING_CORE) && defined(__GNUC__)
#define RAYO_API __attribute__((visibility("default")))
#else
#define RAYO_API
#endif

#define RAYO_VERSION_MAJOR 0
#define RAYO_VERSION_MINOR 1
#define RAYO_VERSION_PATCH 0

/* ---- status ---------------------------------------------------------- */
typedef enum rayo_status {
    RAYO_OK = 0,
    RAYO_E_INVALID = 1,     /* a NULL pointer, a bad flag or parameter */
    RAYO_E_OVERFLOW = 2,    /* sizes whose product or byte count overflows, or absurd sizes */
    RAYO_E_NOMEM = 3,       /* host or device memory exhausted */
    RAYO_E_UNSUPPORTED = 4, /* this backend cannot run this op / these parameters */
    RAYO_E_BACKEND = 5,     /* a backend failed at run time (driver error, launch failure) */
    RAYO_E_DEVICE_LOST = 6, /* the device is gone; the backend is disabled for this context */
    RAYO_E_NOT_FOUND = 7,   /* no such backend, op or device */
    RAYO_E_CONFIG = 8,      /* invalid configuration (only where the caller asked to be strict) */
    RAYO_E_ABI = 9,         /* plugin ABI mismatch */
    RAYO_E_TIMEOUT = 10,    /* a batch did not complete in the time given */
    RAYO_E_NO_BACKEND = 11, /* no loaded backend can run this call */
    RAYO_E_STATE = 12       /* wrong order of calls (e.g. recording into a submitted batch) */
} rayo_status;

RAYO_API const char *rayo_strerror(rayo_status status);
/* Message of the last failure on this thread ("" if none), like errno: read
 * it right after a call returned an error.  Successful op calls do not clear
 * it (that would cost every small call a write). */
RAYO_API const char *rayo_last_error(void);

/* ---- ops --------------------------------------------------------------- */
typedef enum rayo_op {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) RAYO_OP_##ENUM = ID,
#include "rayo-ops.h"
#undef RAYO_OP
    RAYO_OP_ID_LIMIT = 256 /* op ids are below this */
} rayo_op;

/* flags of rayo_call.flags */
#define RAYO_TRANS_A 0x1u /* matmul, gemv: use A transposed */
#define RAYO_TRANS_B 0x2u /* matmul: use B transposed */

/* activations of bias_act (rayo_call.flags) */
typedef enum rayo_activation {
    RAYO_ACT_NONE = 0,
    RAYO_ACT_RELU = 1,
    RAYO_ACT_GELU = 2,
    RAYO_ACT_SILU = 3,
    RAYO_ACT_TANH = 4,
    RAYO_ACT_SIGMOID = 5,
    RAYO_ACT_LIMIT
} rayo_activation;

/* One call of any op on host memory.  Which fields an op reads is given by
 * its signature in rayo-ops.h.  Unused fields must be 0/NULL. */
typedef struct rayo_call {
    uint32_t op;      /* rayo_op */
    uint32_t flags;   /* RAYO_TRANS_*, or the rayo_activation of bias_act */
    size_t m, n, k;   /* sizes; vector ops use n only */
    float alpha, beta;/* op parameters (scale factor, eps, clip bounds...) */
    const float *a, *b, *c; /* inputs */
    void *y;          /* output: float *, or size_t * for argmax */
} rayo_call;

/* Metadata from the op list. */
typedef enum rayo_op_sig {
    RAYO_SIG_BINARY, RAYO_SIG_UNARY, RAYO_SIG_UNARY_P, RAYO_SIG_UNARY_P2,
    RAYO_SIG_AXPY, RAYO_SIG_REDUCE, RAYO_SIG_REDUCE2, RAYO_SIG_ARGREDUCE,
    RAYO_SIG_ROWS, RAYO_SIG_NORM, RAYO_SIG_MATMUL, RAYO_SIG_GEMV,
    RAYO_SIG_TRANSPOSE, RAYO_SIG_BIAS_ACT
} rayo_op_sig;

typedef enum rayo_scale_kind { RAYO_SCALE_ELEM, RAYO_SCALE_SUM } rayo_scale_kind;

typedef struct rayo_op_info {
    rayo_op id;
    const char *name;
    rayo_op_sig sig;
    double tol_rel, tol_abs;  /* accuracy contract, see rayo-ops.h */
    rayo_scale_kind scale;
    const char *summary;
} rayo_op_info;

/* All ops, in list order; *count receives their number. */
RAYO_API const rayo_op_info *rayo_ops(size_t *count);
/* The op with this name or id, or NULL. */
RAYO_API const rayo_op_info *rayo_op_by_name(const char *name);
RAYO_API const rayo_op_info *rayo_op_by_id(uint32_t id);

/* ---- opening a context ------------------------------------------------- */
typedef enum rayo_log_level {
    RAYO_LOG_ERROR = 0, RAYO_LOG_WARN = 1, RAYO_LOG_INFO = 2, RAYO_LOG_DEBUG = 3
} rayo_log_level;

typedef void (*rayo_log_fn)(void *user, rayo_log_level level, const char *msg);

typedef struct rayo_options {
    size_t struct_size;        /* sizeof(rayo_options): lets the struct grow */
    /* Configuration text in rayo.conf syntax, applied after every file and
     * environment variable (the application has the last word).  This is how
     * a build without config files (wasm) is configured. */
    const char *settings;
    /* Skip $sysconfdir/rayo and $XDG_CONFIG_HOME files (RAYO_CONFIG and the
     * environment still apply unless no_environment is set). */
    int no_config_files;
    int no_environment;        /* ignore RAYO_* environment variables */
    const char *sysconf_dir;   /* replaces $sysconfdir/rayo (tests, relocation) */
    rayo_log_fn log;           /* NULL: messages go to stderr at the configured level */
    void *log_user;
    /* Open even when no backend loads (diagnostic tools); calls then fail
     * with RAYO_E_NO_BACKEND. */
    int allow_no_backend;
    /* Replaces $datadir/rayo/conf.d, the drop-ins packages ship (read
     * before $sysconfdir/rayo; a file of the same name in
     * $sysconfdir/rayo/conf.d masks one here).  Tests, relocation. */
    const char *vendor_conf_dir;
} rayo_options;

typedef struct rayo_context rayo_context;

/* Opens a context: reads config, loads and probes plugins, resolves dispatch.
 * opts may be NULL.  Fails (RAYO_E_NO_BACKEND) if no backend at all could be
 * loaded, unless opts->allow_no_backend is set. */
RAYO_API rayo_status rayo_open(rayo_context **ctx, const rayo_options *opts);
/* Closes the context: waits for submitted batches, frees the device memory
 * of every buffer and batch still alive, unloads the plugins.  Their
 * handles stay valid for rayo_buffer_destroy / rayo_batch_destroy (which
 * then free only the handle; call them, or the handles leak); any other use
 * returns RAYO_E_STATE.  No call on ctx itself may follow. */
RAYO_API void rayo_close(rayo_context *ctx);

/* ---- ops on host memory ------------------------------------------------
 * One function per op of rayo-ops.h (its accuracy contract is there), written
 * out here; tests/test-prototypes.c fails to compile if one of them does not
 * match the op's signature in the list.  NULL gamma/beta in the norms mean
 * 1 and 0.
 * Outputs may alias inputs exactly (y == a) for elementwise ops; other
 * overlaps are undefined.  Matrices are row-major and contiguous. */
/* binary, elementwise */
/* y = a + b */
RAYO_API rayo_status rayo_add(rayo_context *ctx, const float *a, const float *b, float *y,
    size_t n);
/* y = a - b */
RAYO_API rayo_status rayo_sub(rayo_context *ctx, const float *a, const float *b, float *y,
    size_t n);
/* y = a * b */
RAYO_API rayo_status rayo_mul(rayo_context *ctx, const float *a, const float *b, float *y,
    size_t n);
/* y = a / b */
RAYO_API rayo_status rayo_div(rayo_context *ctx, const float *a, const float *b, float *y,
    size_t n);
/* y = max(a, b), NaN propagates */
RAYO_API rayo_status rayo_maximum(rayo_context *ctx, const float *a, const float *b, float *y,
    size_t n);
/* y = min(a, b), NaN propagates */
RAYO_API rayo_status rayo_minimum(rayo_context *ctx, const float *a, const float *b, float *y,
    size_t n);
/* y = alpha * x */
RAYO_API rayo_status rayo_scale(rayo_context *ctx, const float *x, float *y, size_t n, float alpha);
/* y = alpha * x + y */
RAYO_API rayo_status rayo_axpy(rayo_context *ctx, const float *x, float *y, size_t n, float alpha);

/* unary, activations */
/* y = max(x, 0) */
RAYO_API rayo_status rayo_relu(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = x > 0 ? x : alpha * x */
RAYO_API rayo_status rayo_leaky_relu(rayo_context *ctx, const float *x, float *y, size_t n,
    float alpha);
/* y = x > 0 ? x : alpha * (exp(x) - 1) */
RAYO_API rayo_status rayo_elu(rayo_context *ctx, const float *x, float *y, size_t n, float alpha);
/* y = 1.0507 * (x > 0 ? x : 1.67326 * (exp(x) - 1)) */
RAYO_API rayo_status rayo_selu(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = 1 / (1 + exp(-x)) */
RAYO_API rayo_status rayo_sigmoid(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = tanh(x) */
RAYO_API rayo_status rayo_tanh(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = x * (1 + erf(x / sqrt(2))) / 2 */
RAYO_API rayo_status rayo_gelu(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2 */
RAYO_API rayo_status rayo_gelu_tanh(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = x * sigmoid(x)  (swish) */
RAYO_API rayo_status rayo_silu(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = x * tanh(log(1 + exp(x))) */
RAYO_API rayo_status rayo_mish(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = x * clip(x + 3, 0, 6) / 6 */
RAYO_API rayo_status rayo_hardswish(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = min(max(x, lo), hi); lo <= hi */
RAYO_API rayo_status rayo_clip(rayo_context *ctx, const float *x, float *y, size_t n, float lo,
    float hi);
/* y = exp(x) */
RAYO_API rayo_status rayo_exp(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = log(x) */
RAYO_API rayo_status rayo_log(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = sqrt(x) */
RAYO_API rayo_status rayo_sqrt(rayo_context *ctx, const float *x, float *y, size_t n);
/* y = |x| */
RAYO_API rayo_status rayo_abs(rayo_context *ctx, const float *x, float *y, size_t n);

/* reductions */
/* *result = sum(x) */
RAYO_API rayo_status rayo_sum(rayo_context *ctx, const float *x, size_t n, float *result);
/* *result = sum(a * b) */
RAYO_API rayo_status rayo_dot(rayo_context *ctx, const float *a, const float *b, size_t n,
    float *result);
/* *result = max(x), NaN propagates; -inf for n = 0 */
RAYO_API rayo_status rayo_max(rayo_context *ctx, const float *x, size_t n, float *result);
/* *result = min(x), NaN propagates; +inf for n = 0 */
RAYO_API rayo_status rayo_min(rayo_context *ctx, const float *x, size_t n, float *result);
/* *index = index of the first maximum (first NaN if any); n = 0 is an error */
RAYO_API rayo_status rayo_argmax(rayo_context *ctx, const float *x, size_t n, size_t *index);
/* *result = sum(|x|) */
RAYO_API rayo_status rayo_norm_l1(rayo_context *ctx, const float *x, size_t n, float *result);
/* *result = sqrt(sum(x^2)), no overflow for |x| < FLT_MAX */
RAYO_API rayo_status rayo_norm_l2(rayo_context *ctx, const float *x, size_t n, float *result);

/* row-wise */
/* y = exp(x - max) / sum(exp(x - max)) per row */
RAYO_API rayo_status rayo_softmax(rayo_context *ctx, const float *x, float *y, size_t rows,
    size_t cols);
/* y = x - max - log(sum(exp(x - max))) per row */
RAYO_API rayo_status rayo_log_softmax(rayo_context *ctx, const float *x, float *y, size_t rows,
    size_t cols);
/* y = (x - mean) / sqrt(var + eps) * gamma + beta per row */
RAYO_API rayo_status rayo_layernorm(rayo_context *ctx, const float *x, const float *gamma,
    const float *beta, float *y, size_t rows, size_t cols, float eps);
/* y = x / sqrt(mean(x^2) + eps) * gamma per row (beta is ignored) */
RAYO_API rayo_status rayo_rmsnorm(rayo_context *ctx, const float *x, const float *gamma,
    const float *beta, float *y, size_t rows, size_t cols, float eps);

/* matrix */
/* C = alpha op(A) op(B) + beta C, row-major */
RAYO_API rayo_status rayo_matmul(rayo_context *ctx, unsigned flags, size_t m, size_t n,
    size_t k, float alpha, const float *A, const float *B, float beta, float *C);
/* y = alpha op(A) x + beta y, row-major */
RAYO_API rayo_status rayo_gemv(rayo_context *ctx, unsigned flags, size_t m, size_t n,
    float alpha, const float *A, const float *x, float beta, float *y);
/* y (cols x rows) = x^T */
RAYO_API rayo_status rayo_transpose(rayo_context *ctx, const float *x, float *y, size_t rows,
    size_t cols);
/* y = act(x + bias) per row */
RAYO_API rayo_status rayo_bias_act(rayo_context *ctx, const float *x, const float *bias,
    float *y, size_t rows, size_t cols, rayo_activation act);

/* Any op through one entry point (bindings, tools).  Same checks and
 * dispatch as the typed functions. */
RAYO_API rayo_status rayo_run(rayo_context *ctx, const rayo_call *call);
/* Runs the call on one backend only (no chain, no fallback): for tests and
 * benchmarks.  backend is a backend name as rayo-info prints it. */
RAYO_API rayo_status rayo_run_on(rayo_context *ctx, const char *backend, const rayo_call *call);

/* ---- device buffers and batches ---------------------------------------
 * A buffer lives on one backend (its device memory; host memory for CPU
 * backends).  A batch records ops on buffers of that backend and runs them
 * with one submission; errors are reported per batch, by submit or wait. */
typedef struct rayo_buffer rayo_buffer;
typedef struct rayo_batch rayo_batch;

/* backend NULL: the first GPU backend of the default order (a real device:
 * a software one such as lavapipe is not taken), else the first CPU
 * backend, else the first backend of the default order (a software device).
 * rayo_batch_create picks the same way. */
RAYO_API rayo_status rayo_buffer_create(rayo_context *ctx, const char *backend, size_t bytes, rayo_buffer **buf);
/* Gives up the caller's handle (it must not be used again).  A batch that
 * recorded an op on the buffer keeps its memory alive until that batch is
 * destroyed, so destroying a buffer before a batch that uses it is safe. */
RAYO_API void rayo_buffer_destroy(rayo_buffer *buf);
RAYO_API rayo_status rayo_buffer_write(rayo_buffer *buf, size_t offset, const void *src, size_t bytes);
RAYO_API rayo_status rayo_buffer_read(rayo_buffer *buf, size_t offset, void *dst, size_t bytes);
RAYO_API size_t rayo_buffer_size(const rayo_buffer *buf);
RAYO_API const char *rayo_buffer_backend(const rayo_buffer *buf);

/* An operand of a batched op: a buffer and an offset in BYTES (a multiple of 4). */
typedef struct rayo_operand {
    rayo_buffer *buf;
    size_t offset;
} rayo_operand;

typedef struct rayo_batch_call {
    uint32_t op, flags;
    size_t m, n, k;
    float alpha, beta;
    rayo_operand a, b, c, y;
} rayo_batch_call;

RAYO_API rayo_status rayo_batch_create(rayo_context *ctx, const char *backend, rayo_batch **batch);
/* Records an op; it runs at submit, in recording order.  All operands must be
 * buffers of the batch's backend and large enough (checked here). */
RAYO_API rayo_status rayo_batch_record(rayo_batch *batch, const rayo_batch_call *call);
RAYO_API rayo_status rayo_batch_submit(rayo_batch *batch);
/* timeout_ns: UINT64_MAX waits forever. */
RAYO_API rayo_status rayo_batch_wait(rayo_batch *batch, uint64_t timeout_ns);
/* Waits for a submitted batch, then frees it. */
RAYO_API void rayo_batch_destroy(rayo_batch *batch);

/* ---- introspection ----------------------------------------------------- */
typedef enum rayo_device_type {
    RAYO_DEVICE_CPU = 0,          /* native CPU */
    RAYO_DEVICE_GPU = 1,          /* discrete or integrated GPU */
    RAYO_DEVICE_SOFTWARE = 2,     /* a software/emulated device (lavapipe) */
    RAYO_DEVICE_OTHER = 3
} rayo_device_type;

typedef enum rayo_backend_status {
    RAYO_BACKEND_LOADED = 0,   /* active: used by dispatch */
    /* refused: the file (not an ELF plugin of this machine, truncated, writable
     * by others under root) before dlopen ran anything of it; the descriptor
     * (ABI, CPU, pointers outside the plugin) before any call into it, but
     * after dlopen ran the plugin's ELF constructors, if it has any */
    RAYO_BACKEND_REJECTED = 1,
    RAYO_BACKEND_UNAVAILABLE = 2, /* probe or init says no (no driver, no device) */
    RAYO_BACKEND_DISABLED = 3, /* denied by configuration (by file name: never opened), or
                                * more backends than one context uses */
    RAYO_BACKEND_SHADOWED = 4  /* another file of the same name was found first */
} rayo_backend_status;

typedef struct rayo_backend_info {
    const char *name;          /* "scalar", "avx2", ... (file name when unknown) */
    const char *path;          /* the plugin file */
    const char *version;       /* the plugin's own version, "" if not read */
    unsigned abi_major, abi_minor;
    rayo_backend_status status;
    const char *reason;        /* why not loaded, or "" */
    const char *device;        /* name of the device in use, or "" */
    rayo_device_type device_type;
    size_t device_count;       /* devices the probe reported */
    unsigned rank;             /* position in the default order, 0 = first */
    size_t op_count;           /* ops it implements */
} rayo_backend_info;

RAYO_API size_t rayo_backend_count(const rayo_context *ctx);
RAYO_API rayo_status rayo_backend_get(const rayo_context *ctx, size_t index, rayo_backend_info *info);

/* The names of the devices of backend `index` (as its probe reported them). */
RAYO_API const char *rayo_backend_device_name(const rayo_context *ctx, size_t index, size_t device);

/* The chain of an op: links in order; each link is a loaded backend with the
 * size window it accepts (max_size SIZE_MAX = no upper bound). */
typedef struct rayo_link_info {
    const char *backend;
    size_t min_size, max_size;
} rayo_link_info;
RAYO_API size_t rayo_chain(const rayo_context *ctx, rayo_op op, rayo_link_info *links, size_t max_links);
/* The backend a call of `op` with work size `size` would go to first
 * (size: n for vector ops, rows*cols for row ops, m*n*k for matmul).
 * NULL when ctx is NULL, op is unknown, or no loaded backend implements op
 * (its calls then fail with RAYO_E_NO_BACKEND). */
RAYO_API const char *rayo_backend_for(const rayo_context *ctx, rayo_op op, size_t size);

/* Config files read, in order (for rayo-info). */
RAYO_API size_t rayo_config_file_count(const rayo_context *ctx);
RAYO_API const char *rayo_config_file(const rayo_context *ctx, size_t index, const char **status);
/* Effective value of a setting ("dispatch.order"), or NULL. */
RAYO_API const char *rayo_config_get(const rayo_context *ctx, const char *section, const char *key);
/* Where the effective value came from: "FILE:LINE", "env RAYO_BACKEND",
 * "<application settings>:LINE"; NULL if the setting is not set. */
RAYO_API const char *rayo_config_origin(const rayo_context *ctx, const char *section, const char *key);
/* Every setting read, in the order read (a later one of the same section and
 * key overrides an earlier one): returns its origin and fills the rest, or
 * NULL past the end. */
RAYO_API size_t rayo_config_setting_count(const rayo_context *ctx);
RAYO_API const char *rayo_config_setting(const rayo_context *ctx, size_t index, const char **section,
                                         const char **key, const char **value);
/* Threads of the core's pool (including the caller). */
RAYO_API unsigned rayo_thread_count(const rayo_context *ctx);
RAYO_API const char *rayo_version(void);
/* Where the core looks for plugins, in order, separated by ':' */
RAYO_API const char *rayo_plugin_search_path(const rayo_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
