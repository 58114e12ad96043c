/* SPDX-License-Identifier: MIT */
/* rayo.h - public API of librayo.
 *
 * rayo runs numeric kernels on whatever compute the machine has.  The core
 * loads backends (scalar, avx2, avx512, neon, vulkan, cuda, wasm) as plugins, ranks
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
#include "rayo-dtype.h" /* rayo_dtype: element types and block formats */

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
#define RAYO_ATTN_CAUSAL 0x1u /* attention (rayo_attention_params.flags): causal mask */

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

/* ---- dtypes of a call -----------------------------------------------------
 * One 32-bit word, 8 bits per operand (a, b, c, y): the dispatch key.  0 is
 * all f32, which every call meant before dtypes; an operand the op does not
 * use is 0 (RAYO_DTYPE_NONE).  The legal combinations of each op are its
 * RAYO_COMBO lines in rayo-ops.h (rayo_op_combo lists them). */
#define RAYO_DTYPE_NONE RAYO_DTYPE_F32 /* an operand the op does not use */
#define RAYO_DTYPES(a, b, c, y) \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(y) << 24)
/* operand 0..3 = a, b, c, y */
#define RAYO_DTYPE_OF(dtypes, operand) ((rayo_dtype)(((dtypes) >> (8 * (operand))) & 0xffu))

/* Precision a call allows (rayo_call.precision).  Each op and combination
 * has a strict and a relaxed accuracy contract (rayo_combo_info). */
typedef enum rayo_precision {
    RAYO_PRECISION_DEFAULT = 0, /* strict, unless the configuration says [op.NAME] precision = relaxed */
    RAYO_PRECISION_STRICT = 1,  /* f32 products and sums: the strict contract, whatever the config */
    RAYO_PRECISION_RELAXED = 2  /* TF32/bf16 products, f16 accumulation where the op allows it: the
                                   relaxed contract */
} rayo_precision;

/* One call of any op on host memory.  Which fields an op reads is given by
 * its signature in rayo-ops.h.  Unused fields must be 0/NULL.
 * Growable: struct_size is sizeof(rayo_call) of the caller's header; fields
 * added in later ABI minors are appended, and read as 0 for a caller that
 * predates them.  Set it: rayo_call c = {sizeof c, RAYO_OP_ADD, ...} or
 * {.struct_size = sizeof(rayo_call), ...}. */
typedef struct rayo_call {
    uint32_t struct_size; /* sizeof(rayo_call) of the caller's header */
    uint32_t op;          /* rayo_op */
    uint32_t flags;       /* RAYO_TRANS_*, or the rayo_activation of bias_act */
    uint32_t dtypes;      /* RAYO_DTYPES(a, b, c, y); 0: all f32 */
    size_t m, n, k;       /* sizes; vector ops use n only */
    float alpha, beta;    /* op parameters (scale factor, eps, clip bounds...) */
    const void *a, *b, *c;/* inputs (float unless dtypes says otherwise) */
    void *y;              /* output: float unless dtypes says otherwise; size_t * for argmax */
    size_t lda, ldb, ldc, ldy; /* row strides in elements of a, b, c, y; 0: dense */
    uint32_t precision;   /* rayo_precision */
    uint32_t reserved;    /* 0 */
    const void *params;   /* the op's parameter struct (rope, attention), else NULL */
    /* 1.2: which operands lie in constant buffers (RAYO_CONSTANT_A | _B |
     * _C; rayo_buffer_set_constant), set by the core for the ops of a batch
     * and 0 in every other call (rayo_run refuses anything else).  A hint:
     * a kernel may keep what it derives from such an operand (a repacked
     * weight) until the plugin's release_constant. */
    uint32_t constant_operands;
    uint32_t reserved3;   /* 0 */
    /* ABI 1.x appends fields here; 0 means 1.0 behaviour. */
} rayo_call;

/* rayo_call.constant_operands */
#define RAYO_CONSTANT_A 0x1u
#define RAYO_CONSTANT_B 0x2u
#define RAYO_CONSTANT_C 0x4u

/* Whether a call made with an older header has a field (for plugins and
 * the core reading fields appended after 1.0). */
#define RAYO_CALL_HAS(call, field) \
    (offsetof(rayo_call, field) + sizeof(((const rayo_call *)0)->field) <= (call)->struct_size)

/* Metadata from the op list. */
typedef enum rayo_op_sig {
    RAYO_SIG_BINARY, RAYO_SIG_UNARY, RAYO_SIG_UNARY_P, RAYO_SIG_UNARY_P2,
    RAYO_SIG_AXPY, RAYO_SIG_REDUCE, RAYO_SIG_REDUCE2, RAYO_SIG_ARGREDUCE,
    RAYO_SIG_ROWS, RAYO_SIG_NORM, RAYO_SIG_MATMUL, RAYO_SIG_GEMV,
    RAYO_SIG_TRANSPOSE, RAYO_SIG_BIAS_ACT,
    RAYO_SIG_CONVERT, RAYO_SIG_GET_ROWS, RAYO_SIG_ROPE, RAYO_SIG_ATTENTION, RAYO_SIG_GLU
} rayo_op_sig;

typedef enum rayo_scale_kind { RAYO_SCALE_ELEM, RAYO_SCALE_SUM } rayo_scale_kind;

/* An op, from the op list.  Reached through pointers only (rayo_op_at,
 * rayo_op_by_name, rayo_op_by_id): struct_size says which fields the
 * library's version has. */
typedef struct rayo_op_info {
    size_t struct_size;       /* sizeof(rayo_op_info) of the library */
    rayo_op id;
    const char *name;
    rayo_op_sig sig;
    double tol_rel, tol_abs;  /* strict accuracy contract of its first combination (rayo-ops.h) */
    rayo_scale_kind scale;
    const char *summary;
} rayo_op_info;

/* One legal dtype combination of an op and its two contracts. */
typedef struct rayo_combo_info {
    size_t struct_size;       /* sizeof(rayo_combo_info) of the library */
    rayo_op op;
    uint32_t dtypes;          /* RAYO_DTYPES(a, b, c, y) */
    const char *name;         /* the dtypes of the operands the op uses, "f32.q4_k.f32";
                                 [op.NAME.COMBO] in the configuration */
    double tol_rel, tol_abs;          /* strict contract */
    double relaxed_rel, relaxed_abs;  /* relaxed contract (RAYO_PRECISION_RELAXED) */
} rayo_combo_info;

/* The number of ops, and the op at position i (list order), or NULL. */
RAYO_API size_t rayo_op_count(void);
RAYO_API const rayo_op_info *rayo_op_at(size_t index);
/* The op with this name or id, or NULL. */
RAYO_API const rayo_op_info *rayo_op_by_name(const char *name);
RAYO_API const rayo_op_info *rayo_op_by_id(uint32_t id);
/* The dtype combinations an op takes: their number, and combination
 * `index`, or NULL.  Combination 0 is all-f32 for every op that takes it. */
RAYO_API size_t rayo_op_combo_count(rayo_op op);
RAYO_API const rayo_combo_info *rayo_op_combo(rayo_op op, size_t index);
/* The combination of op with these dtypes, or NULL if the op does not list it. */
RAYO_API const rayo_combo_info *rayo_op_combo_find(rayo_op op, uint32_t dtypes);
/* The dtypes operand (0..3 = a, b, c, y) of op takes in some combination, as
 * a RAYO_DTYPE_BIT mask (0 for an unknown op). */
RAYO_API uint32_t rayo_op_operand_dtypes(rayo_op op, unsigned operand);

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
 * A device plugin (a GPU backend: one with its own memory) is loaded and
 * ranked but its device starts at its first use: a call that reaches it, a
 * buffer or batch on it, or rayo_backend_get (set [rayo] lazy_init = no to
 * start it here).  opts may be NULL.  Fails (RAYO_E_NO_BACKEND) if no backend at all could be
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
 * overlaps are undefined.  Matrices are row-major and contiguous here; the
 * inference ops below and rayo_run take row strides. */
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
/* y = log(1 + exp(x)), without overflow for large x (1.1) */
RAYO_API rayo_status rayo_softplus(rayo_context *ctx, const float *x, float *y, size_t n);
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

/* ---- inference ops: dtypes, strides, precision ------------------------
 * Operands other than f32 go through a matrix descriptor passed by value.
 * Block formats (Q8_0, Q4_0, Q4_K, Q6_K) are the GGUF blocks as stored;
 * a row of a block dtype is a whole number of blocks.  A quantized weight
 * is always the operand whose rows run along the reduction: matmul's B with
 * RAYO_TRANS_B (C = A W^T, GGUF's [n_out][n_in]) and gemv's A without
 * RAYO_TRANS_A.  Accuracy: rayo_op_combo gives each combination's strict
 * and relaxed contract; quantized and half operands are judged on their
 * stored (dequantized) values. */
typedef struct rayo_matrix {
    const void *data;
    rayo_dtype dtype;
    size_t ld;             /* elements between row starts; 0: dense */
} rayo_matrix;

/* y (n elements of ydt) = x (n elements of xdt): f32 <-> f16, f32 <-> bf16
 * (round to nearest even), f32 -> Q8_0 / Q4_0 (GGUF's quantizer), any
 * block dtype -> f32; exact (bit-identical to rayo-dtype.h).  Block dtypes
 * need n a multiple of the block size. */
RAYO_API rayo_status rayo_convert(rayo_context *ctx, rayo_dtype xdt, const void *x,
    rayo_dtype ydt, void *y, size_t n);
/* ---- dtype helpers as library functions --------------------------------
 * rayo-dtype.h's helpers are static inline for C; librayo also exports
 * these under the same names, for foreign-function interfaces (ctypes):
 *   rayo_dtype_name  rayo_dtype_block_elems  rayo_dtype_block_bytes
 *   rayo_dtype_row_bytes  rayo_f32_to_f16  rayo_f16_to_f32  rayo_f32_to_bf16
 *   rayo_bf16_to_f32  rayo_quantize_q8_0  rayo_quantize_q4_0
 *   rayo_dequantize_q8_0  rayo_dequantize_q4_0  rayo_dequantize_q4_k
 *   rayo_dequantize_q6_k  rayo_dequantize_row
 * The functions below exist only in the library. */
/* Q4_K and Q6_K blocks of n values (n a multiple of 256; dst holds n / 256
 * blocks) by a min/max rule.  Per block of 256 finite values with largest
 * magnitude A, every value comes back (dequantized) within 0.1 A for Q4_K
 * and 0.021 A for Q6_K, plus 2^-19 where A is tiny (the f16 block scale's
 * smallest step).  The f16 block scale limits A to about 4e6 (Q4_K) and 2.5e8
 * (Q6_K); non-finite or larger inputs give valid but unspecified blocks. */
RAYO_API void rayo_quantize_q4_k(const float *x, void *dst, size_t n);
RAYO_API void rayo_quantize_q6_k(const float *x, void *dst, size_t n);
/* dst (n elements of dt) = x (n f32): f16/bf16 round to nearest even;
 * block dtypes by rayo_quantize_*.  RAYO_E_INVALID (with a message) for i32
 * or an unknown dtype, n not a multiple of the block size, NULL pointers. */
RAYO_API rayo_status rayo_dtype_from_f32(rayo_dtype dt, const float *x, void *dst, size_t n);
/* y (n f32) = src (n elements of dt), exact; errors as rayo_dtype_from_f32. */
RAYO_API rayo_status rayo_dtype_to_f32(rayo_dtype dt, const void *src, float *y, size_t n);
/* The dtype named name ("f16", "q4_k": rayo_dtype_name's names), or -1. */
RAYO_API int rayo_dtype_by_name(const char *name);

/* C (m x n, f32, row stride ldc) = alpha op(A) op(B) + beta C for any
 * combination rayo-ops.h lists for matmul (f32 x {f16, bf16, q8_0, q4_0,
 * q4_k, q6_k}, f16 x f16, bf16 x bf16, f32 x f32). */
RAYO_API rayo_status rayo_matmul_ex(rayo_context *ctx, unsigned flags, size_t m, size_t n,
    size_t k, float alpha, rayo_matrix A, rayo_matrix B, float beta, float *C, size_t ldc,
    rayo_precision precision);
/* y = alpha op(A) x + beta y, A (m x n) in any dtype gemv lists, x and y f32;
 * RAYO_TRANS_A only with f32 A (other weights are rows along the reduction). */
RAYO_API rayo_status rayo_gemv_ex(rayo_context *ctx, unsigned flags, size_t m, size_t n,
    float alpha, rayo_matrix A, const float *x, float beta, float *y, rayo_precision precision);
/* y[r] (cols f32, row stride ldy) = row idx[r] of table (table_rows x cols,
 * any dtype), r < n_idx; an index outside [0, table_rows) is RAYO_E_INVALID
 * before anything is written (in a batch: rayo_batch_wait). */
RAYO_API rayo_status rayo_get_rows(rayo_context *ctx, rayo_matrix table, size_t table_rows,
    size_t cols, const int32_t *idx, size_t n_idx, float *y, size_t ldy);

typedef enum rayo_rope_mode {
    RAYO_ROPE_NORM = 0, /* pairs (2i, 2i + 1): GPT-J, Llama as GGUF stores it */
    RAYO_ROPE_NEOX = 1  /* pairs (i, i + rot_dims / 2): GPT-NeoX, Qwen, Phi */
} rayo_rope_mode;
/* Growable: set struct_size = sizeof(rayo_rope_params). */
typedef struct rayo_rope_params {
    size_t struct_size;
    rayo_rope_mode mode;
    uint32_t rot_dims;      /* even, <= head_dim; 0: head_dim; dimensions past it are copied */
    float freq_base;        /* theta_i = pos * freq_scale * freq_base^(-2i / rot_dims) */
    float freq_scale;       /* 1: plain RoPE; < 1: linear position interpolation */
    size_t n_heads, head_dim;
    size_t head_stride_x, head_stride_y; /* elements between heads; 0: head_dim */
} rayo_rope_params;
/* x, y: [n_tokens][n_heads][head_dim] f32, token strides ldx, ldy (0:
 * n_heads * head_dim); y == x (in place) allowed; pos: one position per token. */
RAYO_API rayo_status rayo_rope(rayo_context *ctx, const rayo_rope_params *p, const float *x,
    size_t ldx, float *y, size_t ldy, size_t n_tokens, const int32_t *pos);

/* Growable: set struct_size = sizeof(rayo_attention_params). */
typedef struct rayo_attention_params {
    size_t struct_size;
    uint32_t flags;         /* RAYO_ATTN_CAUSAL: query i sits at position n_kv - n_q + i */
    rayo_dtype kv_dtype;    /* RAYO_DTYPE_F32 or RAYO_DTYPE_F16 */
    size_t n_q, n_kv;       /* n_q = 1: decode; n_q = n_kv: prefill */
    size_t n_heads, n_kv_heads, head_dim; /* n_kv_heads divides n_heads; query head h reads
                                             KV head h / (n_heads / n_kv_heads) */
    float scale;            /* usually 1 / sqrt(head_dim) */
    /* strides in elements between tokens and between heads of q, k, v and
     * out; 0: dense [tokens][heads][head_dim] */
    size_t q_token, q_head, k_token, k_head, v_token, v_head, o_token, o_head;
} rayo_attention_params;
/* out = softmax(scale Q K^T + causal mask) V for every head, grouped-query;
 * q, out f32, k, v in p->kv_dtype. */
RAYO_API rayo_status rayo_attention(rayo_context *ctx, const rayo_attention_params *p,
    const float *q, const void *k, const void *v, float *out);

/* y = silu(gate) * up, rows x cols, each with its row stride (0: cols);
 * gate and up may be the two halves of one [gate | up] matrix. */
RAYO_API rayo_status rayo_swiglu(rayo_context *ctx, const float *gate, size_t ldg,
    const float *up, size_t ldu, float *y, size_t ldy, size_t rows, size_t cols);
/* y = gelu(gate) * up, erf form; strides as swiglu */
RAYO_API rayo_status rayo_geglu(rayo_context *ctx, const float *gate, size_t ldg,
    const float *up, size_t ldu, float *y, size_t ldy, size_t rows, size_t cols);
/* y = gelu(gate) * up, tanh form; strides as swiglu */
RAYO_API rayo_status rayo_geglu_tanh(rayo_context *ctx, const float *gate, size_t ldg,
    const float *up, size_t ldu, float *y, size_t ldy, size_t rows, size_t cols);

/* Any op through one entry point (bindings, tools).  Same checks and
 * dispatch as the typed functions. */
RAYO_API rayo_status rayo_run(rayo_context *ctx, const rayo_call *call);
/* Runs the call on one backend only (no chain, no fallback): for tests and
 * benchmarks.  backend is a backend name as rayo-info prints it. */
RAYO_API rayo_status rayo_run_on(rayo_context *ctx, const char *backend, const rayo_call *call);

/* ---- device buffers and batches ---------------------------------------
 * A buffer lives on one backend (its device memory; host memory for CPU
 * backends).  A batch records ops on buffers of that backend and runs them
 * with one submission; errors are reported per batch, by submit or wait.
 *
 * Replay (1.1): a batch is recorded once and may be submitted again after
 * each wait, as often as wanted; every submit runs all its ops in order and
 * reads the buffers as they are then (write the next token ids and
 * positions between submits).  What moves from one submit to the next is
 * tied to the batch's step, a number set by rayo_batch_set_step between
 * submits: a recorded call's operand offsets advance by step_bytes per unit
 * of step, and an attention call with RAYO_STEP_KV_LENGTH attends to
 * n_kv + step keys.  So a decode step is recorded once, at the first
 * position, and replayed at every later one:
 *
 *   record the step with k's cache slot {cache, p0 * row}, step_bytes row,
 *       attention n_kv p0 + 1 and RAYO_STEP_KV_LENGTH;
 *   for each token: write its id and position; rayo_batch_set_step(b, pos - p0);
 *       rayo_batch_submit(b); rayo_batch_wait(b, UINT64_MAX); read the logits.
 *
 * A GPU backend turns the replayed batch into a CUDA graph or a reusable
 * command buffer; with a backend that cannot replay, the core records the
 * batch again before each submit, with the same results. */
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
/* 1.2: the buffer's contents are final (weights): from now on
 * rayo_buffer_write to it, and recording an op whose output is in it, are
 * RAYO_E_STATE; so is this call while a batch holds a recorded op that
 * writes it.  A backend may then keep prepared copies of what its ops read
 * from the buffer (the avx2 and avx512 backends: the prompt's repacked
 * weights, [backend.NAME] prepared_weights in rayo.conf(5)), freed with the
 * buffer's memory.  Ops recorded after this call see it; calling it again
 * does nothing. */
RAYO_API rayo_status rayo_buffer_set_constant(rayo_buffer *buf);

/* An operand of a batched op: a buffer and an offset in BYTES (a multiple
 * of 4 for 4-byte dtypes, of 2 for f16/bf16; any for block dtypes). */
typedef struct rayo_operand {
    rayo_buffer *buf;
    size_t offset;
} rayo_operand;

/* rayo_call with buffers: the same fields in the same order.  Growable
 * (struct_size first).  params is read at record time (the batch keeps a
 * copy). */
typedef struct rayo_batch_call {
    uint32_t struct_size;     /* sizeof(rayo_batch_call) of the caller's header */
    uint32_t op, flags;
    uint32_t dtypes;          /* RAYO_DTYPES(a, b, c, y); 0: all f32 */
    size_t m, n, k;
    float alpha, beta;
    rayo_operand a, b, c, y;
    size_t lda, ldb, ldc, ldy; /* row strides in elements; 0: dense */
    uint32_t precision;       /* rayo_precision */
    uint32_t reserved;
    const void *params;       /* the op's parameter struct, else NULL */
    /* 1.1, replay: at step s the operands' offsets are offset + s *
     * step_bytes (a, b, c, y; 0 for an operand that does not move, and for
     * an unused one), a multiple of the operand's alignment.  The offsets
     * above are those of step 0; every step the batch is set to must keep
     * each operand inside its buffer (rayo_batch_set_step checks). */
    size_t step_bytes[4];
    uint32_t step_flags;      /* RAYO_STEP_KV_LENGTH, else 0 */
    uint32_t reserved2;       /* 0 */
} rayo_batch_call;

/* rayo_batch_call.step_flags: an attention call's n_kv (and k) grow by the
 * step: it attends to n_kv + s keys at step s. */
#define RAYO_STEP_KV_LENGTH 0x1u

RAYO_API rayo_status rayo_batch_create(rayo_context *ctx, const char *backend, rayo_batch **batch);
/* Records an op; it runs at submit, in recording order.  All operands must be
 * buffers of the batch's backend and large enough (checked here). */
RAYO_API rayo_status rayo_batch_record(rayo_batch *batch, const rayo_batch_call *call);
/* Runs the recorded ops; again after each rayo_batch_wait (replay).
 * RAYO_E_STATE while the batch is still running (not waited for). */
RAYO_API rayo_status rayo_batch_submit(rayo_batch *batch);
/* Sets the step the next submits run at (0 after create): checks every
 * recorded call at that step (RAYO_E_INVALID when an operand would leave
 * its buffer, RAYO_E_OVERFLOW when its offset would pass SIZE_MAX; the step
 * then stays as it was).  RAYO_E_STATE while the batch
 * runs.  Calls recorded later are checked at the step set. */
RAYO_API rayo_status rayo_batch_set_step(rayo_batch *batch, size_t step);
/* timeout_ns: UINT64_MAX waits forever.  A recorded get_rows whose indices
 * (read at run time from their buffer) leave [0, k) writes no row of its y
 * and makes the wait return RAYO_E_INVALID with a message, on every
 * backend; the ops recorded after it may have run (device backends) or not
 * (the CPU backends stop there). */
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

/* rayo_backend_info.device_flags, and rayo_device_desc.flags of a plugin's
 * probe.  FLUSHES_DENORMALS: the device may read float32 denormal inputs as
 * +-0 and flush denormal results (the contract's documented exception,
 * rayo-ops.h); rayo-conform then judges its subnormal cases both ways. */
#define RAYO_DEVICE_FLUSHES_DENORMALS 0x2u

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

/* Growable: the caller sets struct_size = sizeof(rayo_backend_info); the
 * library fills the fields that size holds. */
typedef struct rayo_backend_info {
    size_t struct_size;
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
    uint32_t device_flags;     /* RAYO_DEVICE_FLUSHES_DENORMALS of the device in use (1.0, appended) */
} rayo_backend_info;

RAYO_API size_t rayo_backend_count(const rayo_context *ctx);
/* Starts the backend's device first if it has not started yet (rayo_open). */
RAYO_API rayo_status rayo_backend_get(const rayo_context *ctx, size_t index, rayo_backend_info *info);

/* The names of the devices of backend `index` (as its probe reported them). */
RAYO_API const char *rayo_backend_device_name(const rayo_context *ctx, size_t index, size_t device);

/* The chain of an op and dtype combination (dtypes as in rayo_call; 0 is
 * all-f32): links in order; each link is a loaded backend with the size
 * window it accepts (max_size SIZE_MAX = no upper bound).  Growable: the
 * caller sets struct_size = sizeof(rayo_link_info). */
typedef struct rayo_link_info {
    size_t struct_size;
    const char *backend;
    size_t min_size, max_size;
} rayo_link_info;
/* Links of the chain (0 for an op or combination that is not listed). */
RAYO_API size_t rayo_chain_count(const rayo_context *ctx, rayo_op op, uint32_t dtypes);
RAYO_API rayo_status rayo_chain_link(const rayo_context *ctx, rayo_op op, uint32_t dtypes,
    size_t index, rayo_link_info *info);
/* The backend a call of `op` with these dtypes (RAYO_DTYPES(...), 0: all f32)
 * and work size `size` would go to first (size: n for vector ops, rows*cols
 * for row ops, m*n*k for matmul).  NULL when ctx is NULL, op is unknown, the
 * combination is not listed, or no loaded backend implements it (its calls
 * then fail with RAYO_E_NO_BACKEND). */
RAYO_API const char *rayo_backend_for(const rayo_context *ctx, rayo_op op, uint32_t dtypes,
    size_t size);

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
