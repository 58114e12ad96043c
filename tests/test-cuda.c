/* SPDX-License-Identifier: MIT */
/* test-cuda.c - the cuda plugin through its descriptor, with a host-services
 * table of our own (no core involved):
 *   - the descriptor (name, arch, rank, memory API, one entry per op);
 *   - the probe: a reason when no device can be used (then SKIP);
 *   - with a device: kernels against the conformance engine's float64
 *     references and the ops' contracts (librayo is linked for the op list
 *     and the engine only) on fresh random inputs (elementwise, reductions
 *     with NaN, rows, norms without gamma, matmul in every transpose and in
 *     shapes that mix the tiled kernels with the edge kernel, gemv,
 *     transpose, bias_act), relaxed Q8_0 / Q4_0 / Q4_K / Q6_K gemv (x in 8 bits; several of one x in a
 *     replayed batch: one launch; a residual add and rmsnorm of the sum: one kernel; rope of q and k:
 *     one launch, the same rope twice on one buffer: two; gate, up and swiglu: one launch, swiglu
 *     of up then gate: not; rmsnorm of one row and the gemvs of its output: one launch; q, k, v and the ropes
 *     of q and k: one launch, the same as with fuse_rope = no), fused attention in the shapes that take each
 *     launch plan (a KV group wider than one warp's 4 heads, odd groups,
 *     aligned and unaligned K/V rows, decode and prefill), batches on device buffers (a typed matmul too)
 *     at unaligned offsets (each op of a chain checked against the device's
 *     own previous result), a replayed chain of 50 dependent ops, a gemv and rmsnorm against float64
 *     (pdl = yes, and pdl = no in the second state), the TF32 path (precision = tf32) with the
 *     prompt's split-k products (prompt_split_k), concurrent calls, a failing call that must leave the caller's output untouched,
 *     and the on-disk JIT cache.
 * rayo-conform covers every op and edge case; this test covers what only
 * the plugin's own interface shows.
 *   test-cuda [--probe]   --probe: print the probe's answer, exit 0 if a
 *                         device is usable, 77 if not.
 * RAYO_CUDA_PLUGIN names the plugin file (default: this build tree's). */
#define _POSIX_C_SOURCE 200809L
#include "rayo-plugin.h"
#include "rayo-dtype.h"
#include "conform.h"
#include "ref-infer.h"

#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef CUDA_PLUGIN
#define CUDA_PLUGIN "plugins/cuda/.libs/rayo-cuda.so"
#endif

static int failures;
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            failures++;                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

/* ---- a host of our own ---------------------------------------------------- */
static char last_error[2048];
static const char *config_precision = "fp32";
static const char *config_embedded = "no";
static const char *config_split_k = "no";
static const char *config_attn_block = "yes";
static const char *config_pdl = "yes";
static const char *config_fuse_rope = "yes";
static char cache_dir[512];

static void h_log(const rayo_host *h, int level, const char *fmt, ...)
{
    (void)h;
    if (level > RAYO_LOG_INFO && !getenv("TEST_CUDA_VERBOSE"))
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  [log %d] ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void h_set_error(const rayo_host *h, const char *fmt, ...)
{
    (void)h;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

static const char *h_config(const rayo_host *h, const char *key)
{
    (void)h;
    if (!strcmp(key, "precision"))
        return config_precision;
    if (!strcmp(key, "embedded_code")) /* the first state JITs the PTX (the cache is checked), the second may not */
        return config_embedded;
    if (!strcmp(key, "prompt_split_k"))
        return config_split_k;
    if (!strcmp(key, "attention_block"))
        return config_attn_block;
    if (!strcmp(key, "pdl"))
        return config_pdl;
    if (!strcmp(key, "fuse_rope"))
        return config_fuse_rope;
    return NULL;
}

static void *h_alloc(size_t align, size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, align, bytes ? bytes : align) == 0 ? p : NULL;
}

static unsigned h_threads(const rayo_host *h)
{
    (void)h;
    return 1;
}

static void h_parallel(const rayo_host *h, size_t n, void (*fn)(void *, size_t, unsigned), void *arg)
{
    (void)h;
    for (size_t i = 0; i < n; i++)
        fn(arg, i, 0);
}

static const char *h_cache_dir(const rayo_host *h)
{
    (void)h;
    return cache_dir[0] ? cache_dir : NULL;
}

static const rayo_host host = {
    sizeof(rayo_host), RAYO_PLUGIN_ABI_MAJOR, RAYO_PLUGIN_ABI_MINOR, NULL, 0,
    h_log, h_set_error, h_config, h_alloc, free, h_threads, h_parallel, h_cache_dir,
};

/* ---- random inputs and judging --------------------------------------------- */
static conform_rng rng;

static float *floats(size_t n, double lo, double hi)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    conform_fill_uniform(&rng, p, n, lo, hi);
    return p;
}

static const char *op_name(uint32_t op)
{
    return rayo_op_by_id(op)->name;
}

/* The plugin's result `out` of call (host copies of what it read; y: y
 * before the call where the op reads it) against the conformance engine's
 * float64 reference, with contract (NULL: the op's own).  The rest says
 * where, printf-like. */
static void judge(const rayo_op_info *contract, rayo_call call, const void *out, const char *fmt, ...)
{
    char msg[512], where[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(where, sizeof where, fmt, ap);
    va_end(ap);
    if (conform_check_outputs(contract, &call, out, msg, sizeof msg) != 0) {
        failures++;
        fprintf(stderr, "FAIL %s: %s\n", where, msg);
    }
}

/* ---- the plugin ----------------------------------------------------------------- */
static const rayo_plugin_descriptor *desc;

/* The call's kernel, found as the loader finds it: by op and dtypes (an
 * entry without a kernel does not count). */
static rayo_status run(void *st, const rayo_call *c)
{
    for (size_t i = 0; i < desc->op_count; i++)
        if (desc->ops[i].op == c->op && desc->ops[i].dtypes == c->dtypes && desc->ops[i].fn)
            return desc->ops[i].fn(st, c);
    return RAYO_E_UNSUPPORTED;
}

/* The ops of the list with signature sig, or with a second one sig2. */
static size_t ops_of(rayo_op_sig sig, rayo_op_sig sig2, uint32_t *ops, size_t most)
{
    size_t n = 0;
    for (size_t i = 0; i < rayo_op_count() && n < most; i++)
        if (rayo_op_at(i)->sig == sig || rayo_op_at(i)->sig == sig2)
            ops[n++] = rayo_op_at(i)->id;
    return n;
}

/* Mostly positive, near 1 too, and the edges of log and sqrt. */
static float *log_sqrt_inputs(size_t n)
{
    float *pos = floats(n, 0, 3);
    if (n > 8) {
        pos[0] = NAN; pos[1] = INFINITY; pos[2] = 0; pos[3] = -1; pos[4] = 1e-40f; pos[5] = 1.0001f;
    }
    return pos;
}

static void test_unary(void *st, const float *a, float *y, size_t n)
{
    uint32_t unary[64]; /* every unary op of the list, with and without parameters */
    size_t count = ops_of(RAYO_SIG_UNARY, RAYO_SIG_UNARY_P, unary, 64);
    count += ops_of(RAYO_SIG_UNARY_P2, RAYO_SIG_UNARY_P2, unary + count, 64 - count);
    CHECK(count >= 18 && count < 64, "%zu unary ops in the list", count); /* 18 in the list now */
    for (size_t u = 0; u < count; u++) {
        uint32_t op = unary[u];
        float al = op == RAYO_OP_CLIP ? -2.5f : 0.7f, be = op == RAYO_OP_CLIP ? 3.5f : 0.0f;
        float *pos = op == RAYO_OP_LOG || op == RAYO_OP_SQRT ? log_sqrt_inputs(n) : NULL;
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = op, .n = n, .alpha = al, .beta = be, .a = pos ? pos : a, .y = y};
        memset(y, 0xff, n * sizeof *y);
        rayo_status rs = run(st, &c);
        CHECK(rs == RAYO_OK, "%s n=%zu: status %d: %s", op_name(op), n, rs, last_error);
        judge(NULL, c, y, "%s n=%zu", op_name(op), n);
        free(pos);
    }
}

static void test_elementwise(void *st)
{
    uint32_t binary[16];
    size_t binary_count = ops_of(RAYO_SIG_BINARY, RAYO_SIG_BINARY, binary, 16);
    CHECK(binary_count >= 6, "%zu binary ops in the list", binary_count);
    static const size_t sizes[] = {1, 3, 4, 5, 1000, 4099, 1 << 18};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *a = floats(n, -30, 30), *b = floats(n, -30, 30), *y = malloc(n * sizeof *y);
        if (n > 10) { /* edge values */
            a[0] = NAN; a[1] = INFINITY; a[2] = -INFINITY; a[3] = -0.0f; a[4] = 1e-30f; a[5] = -1e-30f;
            a[6] = 88.5f; a[7] = -100.0f; a[8] = 1e-40f; a[9] = 3.4028235e38f; a[10] = -3.4028235e38f;
        }
        test_unary(st, a, y, n);
        for (size_t u = 0; u < binary_count; u++) {
            rayo_call c = {.struct_size = sizeof(rayo_call), .op = binary[u], .n = n, .a = a, .b = b, .y = y};
            rayo_status rs = run(st, &c);
            CHECK(rs == RAYO_OK, "%s: status %d: %s", op_name(c.op), rs, last_error);
            judge(NULL, c, y, "%s n=%zu", op_name(c.op), n);
        }
        /* axpy, in place: y = 1.5 a + y, y read from b's copy */
        memcpy(y, b, n * sizeof *y);
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_AXPY, .n = n, .alpha = 1.5f, .a = a, .y = y};
        CHECK(run(st, &c) == RAYO_OK, "axpy: %s", last_error);
        c.y = b;
        judge(NULL, c, y, "axpy n=%zu", n);
        free(a); free(b); free(y);
    }
}

static void test_reductions(void *st)
{
    static const size_t sizes[] = {1, 7, 256, 257, 100003, 1 << 21};
    uint32_t ops[16];
    size_t count = ops_of(RAYO_SIG_REDUCE, RAYO_SIG_REDUCE2, ops, 16);
    CHECK(count >= 6, "%zu reductions in the list", count);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *a = floats(n, -2, 2), *b = floats(n, -2, 2);
        for (size_t k = 0; k < count; k++) {
            float y = NAN;
            rayo_call c = {.struct_size = sizeof(rayo_call), .op = ops[k], .n = n, .a = a, .b = ops[k] == RAYO_OP_DOT ? b : NULL, .y = &y};
            CHECK(run(st, &c) == RAYO_OK, "%s: %s", op_name(c.op), last_error);
            judge(NULL, c, &y, "%s n=%zu", op_name(c.op), n);
        }
        size_t idx = 12345;
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ARGMAX, .n = n, .a = a, .y = &idx};
        CHECK(run(st, &c) == RAYO_OK, "argmax: %s", last_error);
        judge(NULL, c, &idx, "argmax n=%zu", n);
        if (n > 200) { /* the first NaN wins, and ties go to the first index */
            a[n - 3] = NAN; a[n - 1] = NAN; a[5] = 1e30f; a[150] = 1e30f;
            CHECK(run(st, &c) == RAYO_OK, "argmax: %s", last_error);
            judge(NULL, c, &idx, "argmax with NaN n=%zu", n);
            a[n - 3] = a[n - 1] = 0;
            CHECK(run(st, &c) == RAYO_OK, "argmax: %s", last_error);
            judge(NULL, c, &idx, "argmax tie n=%zu", n);
            float y = 0;
            a[n / 2] = NAN;
            rayo_call m = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MAX, .n = n, .a = a, .y = &y};
            CHECK(run(st, &m) == RAYO_OK, "max: %s", last_error);
            judge(NULL, m, &y, "max with a NaN n=%zu", n);
        }
        free(a); free(b);
    }
}

static void test_rows(void *st)
{
    static const size_t shapes[][2] = {{1, 1}, {3, 7}, {64, 1000}, {1000, 33}, {2, 300001}};
    static const uint32_t ops[] = {RAYO_OP_SOFTMAX, RAYO_OP_LOG_SOFTMAX, RAYO_OP_LAYERNORM, RAYO_OP_RMSNORM};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t m = shapes[s][0], n = shapes[s][1], mn = m * n;
        float *a = floats(mn, -10, 10), *g = floats(n, 0.5, 2), *bt = floats(n, -1, 1), *y = malloc(mn * sizeof *y);
        for (int kind = 0; kind < 4; kind++) {
            int norm = kind >= 2, no_gamma = kind == 2 && s % 2;
            rayo_call c = {.struct_size = sizeof(rayo_call), .op = ops[kind], .m = m, .n = n, .a = a, .y = y, .alpha = 1e-5f};
            if (norm) {
                c.b = no_gamma ? NULL : g;
                c.c = bt;
            }
            CHECK(run(st, &c) == RAYO_OK, "%s: %s", op_name(c.op), last_error);
            judge(NULL, c, y, "%s %zux%zu%s", op_name(c.op), m, n, no_gamma ? " without gamma" : "");
        }
        free(a); free(g); free(bt); free(y);
    }
}

/* contract: NULL for matmul's own, or a TF32 bound */
static void check_matmul(void *st, unsigned flags, size_t m, size_t n, size_t k, float alpha, float beta,
                         const rayo_op_info *contract)
{
    float *A = floats(m * k, -1, 1), *B = floats(k * n, -1, 1), *C = floats(m * n, -1, 1);
    float *y = malloc((m * n + 1) * sizeof *y);
    memcpy(y, C, m * n * sizeof *y);
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
                   .a = A, .b = B, .y = y};
    CHECK(run(st, &c) == RAYO_OK, "matmul: %s", last_error);
    c.y = C;
    judge(contract, c, y, "matmul flags=%u %zux%zux%zu alpha=%g beta=%g", flags, m, n, k, (double)alpha,
          (double)beta);
    free(A); free(B); free(C); free(y);
}

static void test_gemv(void *st)
{
    for (unsigned flags = 0; flags < 2; flags++) {
        size_t m = 1000, n = 301, ny = flags ? n : m;
        float *A = floats(m * n, -1, 1), *x = floats(flags ? m : n, -1, 1), *y0 = floats(ny, -1, 1);
        float *y = malloc(ny * sizeof *y);
        memcpy(y, y0, ny * sizeof *y);
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .flags = flags, .m = m, .n = n, .alpha = 2, .beta = 0.5f, .a = A,
                       .b = x, .y = y};
        CHECK(run(st, &c) == RAYO_OK, "gemv: %s", last_error);
        c.y = y0;
        judge(NULL, c, y, "gemv%s", flags ? " transposed" : "");
        free(A); free(x); free(y0); free(y);
    }
}

/* rows rows of n values of A stored in dt (Q8_0, Q4_0, Q4_K or Q6_K) at q,
 * and A made the stored weights (each row row_bytes apart in q). */
static void store_rows(rayo_dtype dt, float *A, unsigned char *q, size_t rows, size_t n, size_t row_bytes)
{
    void (*quantize)(const float *, void *, size_t) = dt == RAYO_DTYPE_Q8_0   ? rayo_quantize_q8_0
                                                      : dt == RAYO_DTYPE_Q4_0 ? rayo_quantize_q4_0
                                                      : dt == RAYO_DTYPE_Q4_K ? rayo_quantize_q4_k
                                                                              : rayo_quantize_q6_k;
    for (size_t r = 0; r < rows; r++) {
        unsigned char *row = q + r * row_bytes;
        quantize(A + r * n, row, n);
        rayo_dequantize_row(dt, row, A + r * n, n);
    }
}

/* Relaxed Q8_0 / Q4_0 / Q4_K / Q6_K gemv on host memory against the float64 product of
 * the stored weights, within the relaxed contract: rows long enough for
 * the kernels with x in 8 bits (cuda-infer.c: 1024 values on), in the
 * decoder's shapes and odd row counts (warps looping over rows), x scaled
 * far down (below 2^-64: the rounding's rescaled path) and up, x with an
 * outlier (one past the kernels' error estimate: float sums), x with a NaN
 * or an infinity, and rows of an odd number of Q4_0 blocks (rows not on 4
 * bytes: the float kernels) or Q6_K blocks (rows on 2 bytes: its kernel). */
static void check_gemv_int8(void *st, rayo_dtype dt, size_t m, size_t n, float xscale, float beta, float outlier)
{
    size_t row_bytes = 0;
    CHECK(rayo_dtype_row_bytes(dt, n, &row_bytes), "row bytes of %zu values", n);
    float *A = floats(m * n, -1, 1), *x = floats(n, -1, 1), *y0 = floats(m, -1, 1), *y = malloc(m * sizeof *y);
    unsigned char *q = malloc(m * row_bytes);
    store_rows(dt, A, q, m, n, row_bytes);
    for (size_t i = 0; i < n; i++)
        x[i] *= xscale;
    x[n / 3] *= outlier;
    memcpy(y, y0, m * sizeof *y);
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .m = m, .n = n, .alpha = 1.5f, .beta = beta,
                   .a = q, .b = x, .y = y, .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                   .precision = RAYO_PRECISION_RELAXED};
    CHECK(run(st, &c) == RAYO_OK, "gemv %s: %s", rayo_dtype_name(dt), last_error);
    rayo_call ref = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .m = m, .n = n, .alpha = 1.5f,
                     .beta = beta, .a = A, .b = x, .y = y0};
    rayo_op_info relaxed = *rayo_op_by_id(RAYO_OP_GEMV);
    relaxed.tol_rel = 2e-3; /* the combo's relaxed contract */
    judge(&relaxed, ref, y, "relaxed gemv %s %zux%zu, x scaled by %g, one value by %g more", rayo_dtype_name(dt), m,
          n, (double)xscale, (double)outlier);
    free(A); free(x); free(y0); free(y); free(q);
}

static void test_gemv_int8(void *st)
{
    static const size_t shapes[][2] = {{1, 1024}, {37, 2048}, {256, 2048}, {300, 5632}, {1001, 4096},
                                       {70, 11008}, {17, 1056}};
    static const rayo_dtype dtypes[] = {RAYO_DTYPE_Q8_0, RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K};
    for (int d = 0; d < 4; d++) {
        rayo_dtype dt = dtypes[d];
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            size_t n = shapes[i][1] % rayo_dtype_block_elems(dt) ? 1280 : shapes[i][1]; /* Q4_K, Q6_K: 5 blocks */
            check_gemv_int8(st, dt, shapes[i][0], n, 1.0f, i % 2 ? 0.5f : 0.0f, 1.0f);
        }
        check_gemv_int8(st, dt, 5, 2048, 1e-25f, 0.0f, 1.0f);
        check_gemv_int8(st, dt, 5, 2048, 1e30f, 0.0f, 1.0f);
        check_gemv_int8(st, dt, 300, 2048, 1.0f, 0.0f, 1000.0f); /* past the estimate: the float sums */
        check_gemv_int8(st, dt, 300, 11008, 1.0f, 0.5f, 100.0f); /* within it: 8-bit x */
        check_gemv_int8(st, dt, 40, 2048, 1.0f, 0.0f, NAN);
        check_gemv_int8(st, dt, 40, 4096, 1.0f, 0.5f, INFINITY);
    }
}

/* Attention (strict) against the float64 reference: decode with the
 * bench's grouping (8 query heads per KV head: two warps per group),
 * groups of 6 and 1, K/V rows 16-byte aligned (vector loads) or not (an odd
 * head_dim), a causal prefill long enough for one key range per query; and
 * decode at short caches, whose few key ranges one block merges
 * (attn_block_*: head_dim 64, 72, 128 and 256, f32 and f16, a range of a
 * causal query without keys). */
typedef struct attn_case {
    size_t n_q, n_kv, heads, kv_heads, d;
    rayo_dtype kv;
    int causal;
} attn_case;

static const attn_case attn_cases[] = {
    {1, 1000, 32, 4, 64, RAYO_DTYPE_F16, 1}, {3, 777, 16, 2, 128, RAYO_DTYPE_F32, 1},
    {2, 300, 12, 2, 72, RAYO_DTYPE_F16, 0},  {1, 513, 4, 4, 37, RAYO_DTYPE_F32, 1},
    {1, 4096, 8, 1, 256, RAYO_DTYPE_F16, 1}, {1100, 1100, 8, 1, 64, RAYO_DTYPE_F16, 1},
    {1, 200, 32, 4, 64, RAYO_DTYPE_F32, 1},  {1, 130, 32, 32, 128, RAYO_DTYPE_F16, 1},
    {2, 150, 12, 2, 72, RAYO_DTYPE_F32, 0},  {1, 160, 8, 1, 256, RAYO_DTYPE_F16, 1},
    {4, 34, 8, 2, 64, RAYO_DTYPE_F32, 1},
};
#define ATTN_CASES (sizeof attn_cases / sizeof attn_cases[0])
static float *attn_outputs[ATTN_CASES]; /* the first state's, for attention_block_agrees */

/* Case i on inputs drawn from seed + i (the same in every state); the
 * output checked against the reference and returned. */
static float *attention_case(void *st, size_t i, uint64_t seed)
{
    const attn_case *a = &attn_cases[i];
    conform_rng keep = rng;
    conform_rng_seed(&rng, seed + i);
    size_t n_q = a->n_q, n_kv = a->n_kv, d = a->d, kvn = n_kv * a->kv_heads * d;
    size_t qn = n_q * a->heads * d, esize = a->kv == RAYO_DTYPE_F16 ? 2 : 4;
    float *q = floats(qn, -1, 1), *kf = floats(kvn, -1, 1), *vf = floats(kvn, -1, 1);
    rng = keep;
    float *out = malloc(qn * sizeof *out);
    double *ref = malloc(qn * sizeof *ref), *terms = malloc(qn * sizeof *terms);
    void *k = kf, *v = vf;
    if (esize == 2) {
        uint16_t *kh = malloc(kvn * 2), *vh = malloc(kvn * 2);
        for (size_t e = 0; e < kvn; e++)
            kh[e] = rayo_f32_to_f16(kf[e]), vh[e] = rayo_f32_to_f16(vf[e]);
        k = kh, v = vh;
    }
    rayo_attention_params p = {.struct_size = sizeof p, .flags = a->causal ? RAYO_ATTN_CAUSAL : 0,
                               .kv_dtype = a->kv, .n_q = n_q, .n_kv = n_kv, .n_heads = a->heads,
                               .n_kv_heads = a->kv_heads, .head_dim = d, .scale = (float)(2.0 / sqrt((double)d))};
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ATTENTION,
                   .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, a->kv, a->kv, RAYO_DTYPE_F32),
                   .m = n_q, .n = d, .k = n_kv, .a = q, .b = k, .c = v, .y = out, .params = &p};
    CHECK(run(st, &c) == RAYO_OK, "attention %zu: %s", i, last_error);
    ref_attention_shape sh = {n_q, n_kv, a->heads, a->kv_heads, d, a->causal, p.scale};
    ref_heads rq = {RAYO_DTYPE_F32, q, a->heads * d, d};
    ref_heads rk = {a->kv, k, a->kv_heads * d, d}, rv = {a->kv, v, a->kv_heads * d, d};
    CHECK(ref_attention(&sh, &rq, &rk, &rv, ref, terms) == 0, "attention %zu: reference", i);
    size_t bad = 0, worst = 0;
    double worst_units = 0;
    for (size_t e = 0; e < qn; e++) {
        int pass;
        double units = conform_judge(rayo_op_by_id(RAYO_OP_ATTENTION), ref[e], terms[e], out[e], &pass);
        bad += !pass;
        if (!pass && units > worst_units)
            worst_units = units, worst = e;
    }
    CHECK(bad == 0, "attention %zu (%zu x %zu, %zu / %zu heads x %zu, %s): %zu of %zu out of contract, "
          "worst out[%zu] = %.9g, reference %.9g", i, n_q, n_kv, a->heads, a->kv_heads, d,
          esize == 2 ? "f16" : "f32", bad, qn, worst, (double)out[worst], ref[worst]);
    if (esize == 2)
        free(k), free(v);
    free(q); free(kf); free(vf); free(ref); free(terms);
    return out;
}

static void test_attention(void *st, uint64_t seed)
{
    for (size_t i = 0; i < ATTN_CASES; i++)
        attn_outputs[i] = attention_case(st, i, seed);
}

/* How many of the n floats at out are not bit for bit those at kept (none
 * kept: 0). */
static size_t floats_differ(const float *out, const float *kept, size_t n)
{
    size_t differ = 0;
    for (size_t e = 0; e < n && kept; e++)
        differ += memcmp(&out[e], &kept[e], sizeof *out) != 0;
    return differ;
}

/* A state with attention_block = no (attn_warp_* and attn_merge for every
 * case): the same outputs, bit for bit, as the first state's. */
static void attention_block_agrees(void *st, uint64_t seed)
{
    for (size_t i = 0; i < ATTN_CASES; i++) {
        float *out = attention_case(st, i, seed);
        size_t qn = attn_cases[i].n_q * attn_cases[i].heads * attn_cases[i].d;
        size_t differ = floats_differ(out, attn_outputs[i], qn);
        CHECK(differ == 0, "attention %zu: %zu of %zu outputs differ without attention_block", i, differ, qn);
        free(out);
        free(attn_outputs[i]);
        attn_outputs[i] = NULL;
    }
}

static void test_matrix(void *st)
{
    for (unsigned flags = 0; flags < 4; flags++) {
        check_matmul(st, flags, 7, 5, 3, 1.0f, 0.0f, NULL);
        check_matmul(st, flags, 130, 260, 72, 0.5f, 2.0f, NULL);   /* edge tiles on both sides */
        check_matmul(st, flags, 256, 128, 64, 1.0f, 0.0f, NULL);   /* tiled only */
        check_matmul(st, flags, 129, 131, 33, 1.0f, -1.0f, NULL);  /* K not a multiple of 8 */
        check_matmul(st, flags, 128, 256, 4096, 0.5f, 2.0f, NULL); /* split-K: 16 slabs */
        check_matmul(st, flags, 200, 300, 1112, 1.0f, 0.5f, NULL); /* edge tiles, 5 uneven slabs */
        check_matmul(st, flags, 1, 260, 300, 1.0f, 0.5f, NULL);    /* m = 1: a gemv */
        check_matmul(st, flags, 260, 1, 300, 2.0f, 0.0f, NULL);    /* n = 1: a gemv */
    }
    check_matmul(st, 0, 384, 256, 160, 1.0f, 0.0f, NULL); /* K % 16 == 0 */
    check_matmul(st, 0, 5, 6, 0, 1.0f, 0.5f, NULL);       /* k = 0: C = beta C */
    test_gemv(st);

    /* transpose and bias_act */
    size_t m = 77, n = 1031;
    float *a = floats(m * n, -4, 4), *bias = floats(n, -1, 1), *y = malloc(m * n * sizeof *y);
    rayo_call t = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_TRANSPOSE, .m = m, .n = n, .a = a, .y = y};
    CHECK(run(st, &t) == RAYO_OK, "transpose: %s", last_error);
    judge(NULL, t, y, "transpose %zux%zu", m, n);
    for (unsigned act = 0; act < RAYO_ACT_LIMIT; act++) {
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_BIAS_ACT, .flags = act, .m = m, .n = n, .a = a, .b = bias, .y = y};
        CHECK(run(st, &c) == RAYO_OK, "bias_act %u: %s", act, last_error);
        judge(NULL, c, y, "bias_act %u", act);
    }
    rayo_call bad = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_BIAS_ACT, .flags = RAYO_ACT_LIMIT, .m = m, .n = n, .a = a, .b = bias, .y = y};
    CHECK(run(st, &bad) == RAYO_E_UNSUPPORTED, "bias_act with an unknown activation must be unsupported");
    rayo_call badmm = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = 4, .m = 2, .n = 2, .k = 2, .a = a, .b = a, .y = y};
    CHECK(run(st, &badmm) == RAYO_E_UNSUPPORTED, "matmul with an unknown flag must be unsupported");
    free(a); free(bias); free(y);
}

/* The host form of a recorded device call, with host copies of its inputs. */
static rayo_call host_call(const rayo_dev_call *d, const float *a, const float *b)
{
    return (rayo_call){.struct_size = sizeof(rayo_call), .op = d->op, .flags = d->flags, .m = d->m, .n = d->n, .k = d->k, .alpha = d->alpha,
                       .beta = d->beta, .a = a, .b = b};
}

static float *read_floats(void *st, void *buffer, size_t offset, size_t n)
{
    float *p = malloc(n * sizeof *p);
    CHECK(desc->memory->buffer_read(st, buffer, offset, p, n * 4) == RAYO_OK, "read: %s", last_error);
    return p;
}

/* Device buffers and one batch: unaligned offsets (scalar kernels), an op in
 * place, a chain of ops reading each other's results, a reduction.  Each op
 * writes a region of its own (the in-place add overwrites inputs the host
 * knows), so each is checked against the float64 reference of the device's
 * own previous result. */
static void test_batches(void *st)
{
    const rayo_memory_api *mem = desc->memory;
    size_t n = 100001;
    float *a = floats(n, -1, 1), *b = floats(n, -1, 1);
    void *ba = NULL, *bb = NULL, *by = NULL;
    CHECK(mem->buffer_alloc(st, (n + 1) * 4, &ba) == RAYO_OK, "buffer_alloc: %s", last_error);
    CHECK(mem->buffer_alloc(st, (n + 1) * 4, &bb) == RAYO_OK, "buffer_alloc: %s", last_error);
    CHECK(mem->buffer_alloc(st, (n + 2) * 4, &by) == RAYO_OK, "buffer_alloc: %s", last_error);
    if (!ba || !bb || !by)
        return;
    CHECK(mem->buffer_write(st, ba, 4, a, n * 4) == RAYO_OK, "write");
    CHECK(mem->buffer_write(st, bb, 0, b, n * 4) == RAYO_OK, "write");
    void *batch = NULL;
    CHECK(mem->batch_begin(st, &batch) == RAYO_OK, "batch_begin");
    rayo_dev_call add = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_ADD, .n = n, .a = {ba, 4}, .b = {bb, 0}, .y = {ba, 4}};
    rayo_dev_call mul = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_MUL, .n = n, .a = {ba, 4}, .b = {bb, 0}, .y = {by, 4}};
    rayo_dev_call sum = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_SUM, .n = n, .a = {by, 4}, .y = {by, 0}};
    CHECK(mem->batch_record(st, batch, &add) == RAYO_OK, "record add");
    CHECK(mem->batch_record(st, batch, &mul) == RAYO_OK, "record mul");
    CHECK(mem->batch_record(st, batch, &sum) == RAYO_OK, "record sum");
    CHECK(mem->batch_submit(st, batch) == RAYO_OK, "submit: %s", last_error);
    CHECK(mem->batch_record(st, batch, &add) == RAYO_E_STATE, "recording into a submitted batch");
    CHECK(mem->batch_wait(st, batch, UINT64_MAX) == RAYO_OK, "wait: %s", last_error);
    mem->batch_free(st, batch);
    float *sums = read_floats(st, ba, 4, n), *products = read_floats(st, by, 4, n);
    float *total = read_floats(st, by, 0, 1);
    judge(NULL, host_call(&add, a, b), sums, "batch add, in place, n=%zu", n);
    judge(NULL, host_call(&mul, sums, b), products, "batch mul of the sums, n=%zu", n);
    judge(NULL, host_call(&sum, products, NULL), total, "batch sum of the products, n=%zu", n);
    /* a batch that is never submitted can be freed */
    CHECK(mem->batch_begin(st, &batch) == RAYO_OK, "batch_begin");
    mem->batch_free(st, batch);
    mem->buffer_free(st, ba);
    mem->buffer_free(st, bb);
    mem->buffer_free(st, by);
    free(a); free(b); free(sums); free(products); free(total);
}

/* A replayed chain of dependent kernels, as a decode step is: CHAIN_OPS
 * elementwise ops, each reading the one before's output (add and mul by c in
 * turn, between two buffers), a gemv of the last output and rmsnorm of the
 * gemv's.  With programmatic dependent launch (pdl) a kernel's blocks start
 * while the one before runs: one that read its input too early would read
 * the output of two ops back.  Submitted three times with a fresh x (one by
 * one, the graph built, the graph replayed); every chain value, the gemv and
 * the rmsnorm are checked against float64 on the host. */
enum { CHAIN_OPS = 50, CHAIN_N = 4099, CHAIN_M = 257 };

typedef struct chain_bufs {
    void *x, *c, *p, *q, *w, *g, *gamma, *y;
} chain_bufs;

static rayo_status record_chain(void *st, void *batch, const chain_bufs *b)
{
    const rayo_memory_api *mem = desc->memory;
    rayo_status s = RAYO_OK;
    for (int i = 0; i < CHAIN_OPS && s == RAYO_OK; i++) {
        void *in = i == 0 ? b->x : i % 2 ? b->p : b->q, *out = i % 2 ? b->q : b->p;
        rayo_dev_call e = {.struct_size = sizeof(rayo_dev_call), .op = i % 2 ? RAYO_OP_MUL : RAYO_OP_ADD,
                           .n = CHAIN_N, .a = {in, 0}, .b = {b->c, 0}, .y = {out, 0}};
        s = mem->batch_record(st, batch, &e);
    }
    void *last = CHAIN_OPS % 2 ? b->p : b->q;
    rayo_dev_call gemv = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_GEMV, .m = CHAIN_M, .n = CHAIN_N,
                          .alpha = 1, .a = {b->w, 0}, .b = {last, 0}, .y = {b->g, 0}};
    rayo_dev_call norm = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_RMSNORM, .m = 1, .n = CHAIN_M,
                          .alpha = 1e-5f, .a = {b->g, 0}, .b = {b->gamma, 0}, .y = {b->y, 0}};
    if (s == RAYO_OK)
        s = mem->batch_record(st, batch, &gemv);
    return s == RAYO_OK ? mem->batch_record(st, batch, &norm) : s;
}

/* The chain's float64 results: its last values v, the gemv g (gabs: the
 * sum of |terms| of each row) and the rmsnorm y. */
typedef struct chain_ref {
    double v[CHAIN_N], g[CHAIN_M], gabs[CHAIN_M], y[CHAIN_M], inv_rms;
} chain_ref;

static void chain_reference(const float *x, const float *c, const float *w, const float *gamma, chain_ref *r)
{
    for (size_t j = 0; j < CHAIN_N; j++) {
        double v = x[j];
        for (int i = 0; i < CHAIN_OPS; i++)
            v = i % 2 ? v * c[j] : v + c[j];
        r->v[j] = v;
    }
    double squares = 0;
    for (size_t i = 0; i < CHAIN_M; i++) {
        double g = 0, gabs = 0;
        for (size_t j = 0; j < CHAIN_N; j++) {
            g += (double)w[i * CHAIN_N + j] * r->v[j];
            gabs += fabs((double)w[i * CHAIN_N + j] * r->v[j]);
        }
        r->g[i] = g, r->gabs[i] = gabs;
        squares += g * g;
    }
    r->inv_rms = 1 / sqrt(squares / CHAIN_M + 1e-5);
    for (size_t i = 0; i < CHAIN_M; i++)
        r->y[i] = r->g[i] * r->inv_rms * gamma[i];
}

/* One submit's outputs against the reference: the chain's values within
 * 1e-5 (50 float roundings, no cancellation: all positive), the gemv within
 * 3e-4 of its row's sum of |terms|, rmsnorm within that scaled. */
static void chain_judge(void *st, const chain_bufs *b, const chain_ref *r, const char *pdl, int submit)
{
    float *v = read_floats(st, CHAIN_OPS % 2 ? b->p : b->q, 0, CHAIN_N);
    float *g = read_floats(st, b->g, 0, CHAIN_M), *y = read_floats(st, b->y, 0, CHAIN_M);
    size_t bad_v = 0, bad_g = 0, bad_y = 0;
    double gabs_max = 0;
    for (size_t j = 0; j < CHAIN_N; j++)
        bad_v += !(fabs(v[j] - r->v[j]) <= 1e-5 * fabs(r->v[j]));
    for (size_t i = 0; i < CHAIN_M; i++) {
        bad_g += !(fabs(g[i] - r->g[i]) <= 3e-4 * r->gabs[i]);
        gabs_max = fmax(gabs_max, r->gabs[i]);
    }
    for (size_t i = 0; i < CHAIN_M; i++)
        bad_y += !(fabs(y[i] - r->y[i]) <= 6e-4 * gabs_max * r->inv_rms + 1e-5 * fabs(r->y[i]));
    CHECK(!bad_v && !bad_g && !bad_y, "chain of %d dependent ops, gemv, rmsnorm (pdl = %s), submit %d: %zu of %d "
          "chain values, %zu of %d gemv and %zu rmsnorm outputs off the float64 reference", CHAIN_OPS, pdl, submit,
          bad_v, CHAIN_N, bad_g, CHAIN_M, bad_y);
    free(v); free(g); free(y);
}

static void check_dependent_chain(void *st, const char *pdl)
{
    const rayo_memory_api *mem = desc->memory;
    float *c = floats(CHAIN_N, 0.9, 1.1), *w = floats(CHAIN_M * CHAIN_N, -1, 1), *gamma = floats(CHAIN_M, 0.5, 1.5);
    chain_bufs b = {0};
    void *batch = NULL, **all[8] = {&b.x, &b.c, &b.p, &b.q, &b.w, &b.g, &b.gamma, &b.y};
    const size_t floats_of[8] = {CHAIN_N, CHAIN_N, CHAIN_N, CHAIN_N, CHAIN_M * CHAIN_N, CHAIN_M, CHAIN_M, CHAIN_M};
    int ok = 1;
    for (int i = 0; i < 8; i++)
        ok &= mem->buffer_alloc(st, 4 * floats_of[i], all[i]) == RAYO_OK;
    ok = ok && mem->buffer_write(st, b.c, 0, c, 4 * CHAIN_N) == RAYO_OK &&
         mem->buffer_write(st, b.w, 0, w, 4 * CHAIN_M * CHAIN_N) == RAYO_OK &&
         mem->buffer_write(st, b.gamma, 0, gamma, 4 * CHAIN_M) == RAYO_OK && mem->batch_begin(st, &batch) == RAYO_OK &&
         record_chain(st, batch, &b) == RAYO_OK;
    CHECK(ok, "dependent chain: buffers and batch: %s", last_error);
    chain_ref *r = malloc(sizeof *r);
    for (int submit = 0; ok && submit < 3; submit++) {
        float *x = floats(CHAIN_N, 0.5, 1.5);
        ok = mem->buffer_write(st, b.x, 0, x, 4 * CHAIN_N) == RAYO_OK && mem->batch_submit(st, batch) == RAYO_OK &&
             mem->batch_wait(st, batch, UINT64_MAX) == RAYO_OK;
        CHECK(ok, "dependent chain, submit %d: %s", submit, last_error);
        chain_reference(x, c, w, gamma, r);
        if (ok)
            chain_judge(st, &b, r, pdl, submit);
        free(x);
    }
    if (batch)
        mem->batch_free(st, batch);
    for (int i = 0; i < 8; i++)
        if (*all[i])
            mem->buffer_free(st, *all[i]);
    free(c); free(w); free(gamma); free(r);
}

/* Relaxed 8-bit gemvs of one x in a replayed batch, as a decode step records
 * q, k and v: the plugin runs them as one launch (gemv8x_*), the k and v
 * outputs moving with the step (the launch set again in the graph), and a
 * strict gemv of the same x after them (not in the launch).  Each output
 * at each step must be bit for bit the same gemv on host memory (the same
 * rows' arithmetic), which in turn is judged against float64. */
#define G8_PARTS 4
static void check_gemv8_group(void *st, rayo_dtype dt)
{
    const rayo_memory_api *mem = desc->memory;
    static const size_t rows[G8_PARTS] = {300, 64, 17, 33};
    size_t n = 2048, row_bytes = 0, w_at[G8_PARTS], y_at[G8_PARTS], wbytes = 0, ybytes = 0, stride = 4 * 131;
    CHECK(rayo_dtype_row_bytes(dt, n, &row_bytes), "row bytes");
    for (int p = 0; p < G8_PARTS; p++) {
        w_at[p] = wbytes, y_at[p] = ybytes;
        wbytes += rows[p] * row_bytes;
        ybytes += 4 * rows[p] + (p == 1 || p == 2 ? 2 * stride : 0); /* k, v: room for steps 0-2 */
    }
    float *wf = floats(wbytes / row_bytes * n, -1, 1), *x = floats(n, -1, 1), *want = malloc(4 * 300);
    unsigned char *w = malloc(wbytes);
    store_rows(dt, wf, w, wbytes / row_bytes, n, row_bytes);
    rayo_op_info relaxed = *rayo_op_by_id(RAYO_OP_GEMV);
    relaxed.tol_rel = 2e-3; /* the combo's relaxed contract */
    void *bw = NULL, *bx = NULL, *by = NULL, *batch = NULL;
    CHECK(mem->buffer_alloc(st, wbytes, &bw) == RAYO_OK && mem->buffer_alloc(st, 4 * n + 16, &bx) == RAYO_OK &&
          mem->buffer_alloc(st, ybytes, &by) == RAYO_OK && mem->batch_begin(st, &batch) == RAYO_OK,
          "buffers: %s", last_error);
    if (!bw || !bx || !by || !batch)
        return;
    CHECK(mem->buffer_write(st, bw, 0, w, wbytes) == RAYO_OK && mem->buffer_write(st, bx, 16, x, 4 * n) == RAYO_OK,
          "write");
    rayo_dev_call c[G8_PARTS];
    for (int p = 0; p < G8_PARTS; p++) {
        c[p] = (rayo_dev_call){.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_GEMV, .m = rows[p], .n = n,
                               .alpha = 1.5f, .a = {bw, w_at[p]}, .b = {bx, 16}, .y = {by, y_at[p]},
                               .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                               .precision = p < 3 ? RAYO_PRECISION_RELAXED : RAYO_PRECISION_STRICT};
        c[p].step_bytes[3] = p == 1 || p == 2 ? stride : 0;
        CHECK(mem->batch_record(st, batch, &c[p]) == RAYO_OK, "record gemv %d: %s", p, last_error);
    }
    for (size_t step = 0; step < 3; step++) { /* launched one by one, the graph built, the graph set again */
        CHECK(mem->batch_set_step(st, batch, step) == RAYO_OK && mem->batch_submit(st, batch) == RAYO_OK &&
              mem->batch_wait(st, batch, UINT64_MAX) == RAYO_OK, "step %zu: %s", step, last_error);
        for (int p = 0; p < G8_PARTS; p++) {
            float *got = read_floats(st, by, y_at[p] + step * c[p].step_bytes[3], rows[p]);
            rayo_call one = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .m = rows[p], .n = n,
                             .alpha = 1.5f, .a = w + w_at[p], .b = x, .y = want, .dtypes = c[p].dtypes,
                             .precision = c[p].precision};
            CHECK(run(st, &one) == RAYO_OK, "gemv alone: %s", last_error);
            CHECK(!memcmp(got, want, 4 * rows[p]), "%s gemv %d of 4 on one x (%zu rows), step %zu: not the same "
                  "as the gemv alone", rayo_dtype_name(dt), p, rows[p], step);
            rayo_call ref = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .m = rows[p], .n = n,
                             .alpha = 1.5f, .a = wf + w_at[p] / row_bytes * n, .b = x};
            if (step == 0)
                judge(&relaxed, ref, got, "%s gemv %d of 4 on one x in a batch", rayo_dtype_name(dt), p);
            free(got);
        }
    }
    mem->batch_free(st, batch);
    mem->buffer_free(st, bw);
    mem->buffer_free(st, bx);
    mem->buffer_free(st, by);
    free(wf); free(x); free(want); free(w);
}

/* Relaxed 8-bit gate and up gemvs of one x and swiglu of their outputs in
 * place of gate's, as a decode step records them: one launch in the plugin
 * (gemv8s_*).  swap: swiglu of up's and gate's outputs (the other order),
 * which must not be fused.  Each output must be bit for bit the gemvs and
 * swiglu alone on host memory. */
static void check_gemv8_swiglu(void *st, rayo_dtype dt, int swap)
{
    const rayo_memory_api *mem = desc->memory;
    size_t m = 300, n = 2048, row_bytes = 0;
    CHECK(rayo_dtype_row_bytes(dt, n, &row_bytes), "row bytes");
    float *wf = floats(2 * m * n, -1, 1), *x = floats(n, -1, 1), *out[2], *want = malloc(4 * m);
    unsigned char *w = malloc(2 * m * row_bytes);
    store_rows(dt, wf, w, 2 * m, n, row_bytes);
    void *bw = NULL, *bx = NULL, *by = NULL, *batch = NULL;
    CHECK(mem->buffer_alloc(st, 2 * m * row_bytes, &bw) == RAYO_OK && mem->buffer_alloc(st, 4 * n, &bx) == RAYO_OK &&
          mem->buffer_alloc(st, 8 * m, &by) == RAYO_OK && mem->batch_begin(st, &batch) == RAYO_OK,
          "buffers: %s", last_error);
    if (!bw || !bx || !by || !batch)
        return;
    CHECK(mem->buffer_write(st, bw, 0, w, 2 * m * row_bytes) == RAYO_OK &&
          mem->buffer_write(st, bx, 0, x, 4 * n) == RAYO_OK, "write");
    for (int p = 0; p < 2; p++) {
        rayo_dev_call c = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_GEMV, .m = m, .n = n, .alpha = 1.0f,
                           .a = {bw, p * m * row_bytes}, .b = {bx, 0}, .y = {by, 4 * p * m},
                           .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                           .precision = RAYO_PRECISION_RELAXED};
        CHECK(mem->batch_record(st, batch, &c) == RAYO_OK, "record gemv %d: %s", p, last_error);
        rayo_call one = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .m = m, .n = n, .alpha = 1.0f,
                         .a = w + p * m * row_bytes, .b = x, .y = out[p] = malloc(4 * m), .dtypes = c.dtypes,
                         .precision = RAYO_PRECISION_RELAXED};
        CHECK(run(st, &one) == RAYO_OK, "gemv alone: %s", last_error);
    }
    rayo_dev_call glu = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_SWIGLU, .m = 1, .n = m,
                         .a = {by, swap ? 4 * m : 0}, .b = {by, swap ? 0 : 4 * m}, .y = {by, 0}};
    CHECK(mem->batch_record(st, batch, &glu) == RAYO_OK, "record swiglu: %s", last_error);
    CHECK(mem->batch_submit(st, batch) == RAYO_OK && mem->batch_wait(st, batch, UINT64_MAX) == RAYO_OK, "submit: %s",
          last_error);
    rayo_call one = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_SWIGLU, .m = 1, .n = m, .a = out[swap],
                     .b = out[!swap], .y = want};
    CHECK(run(st, &one) == RAYO_OK, "swiglu alone: %s", last_error);
    float *got = read_floats(st, by, 0, 2 * m);
    CHECK(!memcmp(got, want, 4 * m) && !memcmp(got + m, out[1], 4 * m),
          "%s gate, up and swiglu%s in a batch: not the gemvs and swiglu alone", rayo_dtype_name(dt),
          swap ? " (up first)" : "");
    free(got);
    mem->batch_free(st, batch);
    mem->buffer_free(st, bw);
    mem->buffer_free(st, bx);
    mem->buffer_free(st, by);
    free(wf); free(x); free(out[0]); free(out[1]); free(want); free(w);
}

/* A residual add then rmsnorm of the sum, as a decode step records them
 * (x += r in place, then r = rmsnorm(x)): one kernel in the plugin.  Submitted
 * twice (one by one, then as a graph); after each, x must be bit for bit the
 * float sums and r bit for bit rmsnorm alone on host memory, which in turn
 * is judged against float64. */
static void check_add_rmsnorm(void *st, size_t m, size_t n)
{
    const rayo_memory_api *mem = desc->memory;
    size_t len = m * n;
    float *x = floats(len, -2, 2), *r = floats(len, -2, 2), *gamma = floats(n, 0.5, 1.5), *want = malloc(4 * len);
    void *bx = NULL, *br = NULL, *bg = NULL, *batch = NULL;
    CHECK(mem->buffer_alloc(st, 4 * len, &bx) == RAYO_OK && mem->buffer_alloc(st, 4 * len, &br) == RAYO_OK &&
          mem->buffer_alloc(st, 4 * n, &bg) == RAYO_OK && mem->batch_begin(st, &batch) == RAYO_OK,
          "buffers: %s", last_error);
    if (!bx || !br || !bg || !batch)
        return;
    CHECK(mem->buffer_write(st, bx, 0, x, 4 * len) == RAYO_OK && mem->buffer_write(st, br, 0, r, 4 * len) == RAYO_OK &&
          mem->buffer_write(st, bg, 0, gamma, 4 * n) == RAYO_OK, "write");
    rayo_dev_call add = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_ADD, .n = len, .a = {bx, 0},
                         .b = {br, 0}, .y = {bx, 0}};
    rayo_dev_call norm = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_RMSNORM, .m = m, .n = n,
                          .alpha = 1e-5f, .a = {bx, 0}, .b = {bg, 0}, .y = {br, 0}};
    CHECK(mem->batch_record(st, batch, &add) == RAYO_OK && mem->batch_record(st, batch, &norm) == RAYO_OK,
          "record: %s", last_error);
    for (int round = 0; round < 2; round++) {
        CHECK(mem->batch_submit(st, batch) == RAYO_OK && mem->batch_wait(st, batch, UINT64_MAX) == RAYO_OK,
              "submit %d: %s", round, last_error);
        for (size_t i = 0; i < len; i++)
            x[i] += r[i];
        float *gx = read_floats(st, bx, 0, len), *gr = read_floats(st, br, 0, len);
        CHECK(!memcmp(gx, x, 4 * len), "add then rmsnorm %zux%zu, submit %d: the sum is not a + b", m, n, round);
        rayo_call one = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_RMSNORM, .m = m, .n = n, .alpha = 1e-5f,
                         .a = x, .b = gamma, .y = want};
        CHECK(run(st, &one) == RAYO_OK, "rmsnorm alone: %s", last_error);
        CHECK(!memcmp(gr, want, 4 * len), "add then rmsnorm %zux%zu, submit %d: not rmsnorm alone", m, n, round);
        one.y = NULL;
        judge(NULL, one, gr, "rmsnorm of a sum in a batch %zux%zu, submit %d", m, n, round);
        memcpy(r, gr, 4 * len);
        free(gx); free(gr);
    }
    mem->batch_free(st, batch);
    mem->buffer_free(st, bx);
    mem->buffer_free(st, br);
    mem->buffer_free(st, bg);
    free(x); free(r); free(gamma); free(want);
}

/* ---- rmsnorm and the 8-bit gemvs of its output: one launch ------------------ */
/* The buffers and the host copies of check_norm_gemv8: x, gamma, rmsnorm's
 * output xn, the weights (f32 and stored) and the products' outputs y. */
typedef struct norm_g8 {
    rayo_dtype dt;
    int swiglu;                        /* gate, up, swiglu; else three gemvs (q, k, v) */
    size_t parts, m[3], n, row_bytes, rows;
    float *wf, *gamma;
    unsigned char *w;
    void *bx, *bg, *bn, *bw, *by, *batch;
} norm_g8;

static rayo_status norm_g8_record(void *st, norm_g8 *t)
{
    const rayo_memory_api *mem = desc->memory;
    rayo_dev_call norm = {.struct_size = sizeof norm, .op = RAYO_OP_RMSNORM, .m = 1, .n = t->n, .alpha = 1e-5f,
                          .a = {t->bx, 0}, .b = {t->bg, 0}, .y = {t->bn, 0}};
    rayo_status s = mem->batch_record(st, t->batch, &norm);
    for (size_t p = 0, w_at = 0, y_at = 0; s == RAYO_OK && p < t->parts; p++) {
        rayo_dev_call c = {.struct_size = sizeof c, .op = RAYO_OP_GEMV, .m = t->m[p], .n = t->n, .alpha = 1.0f,
                           .a = {t->bw, w_at}, .b = {t->bn, 0}, .y = {t->by, y_at},
                           .dtypes = RAYO_DTYPES(t->dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                           .precision = RAYO_PRECISION_RELAXED};
        s = mem->batch_record(st, t->batch, &c);
        w_at += t->m[p] * t->row_bytes, y_at += 4 * t->m[p];
    }
    rayo_dev_call glu = {.struct_size = sizeof glu, .op = RAYO_OP_SWIGLU, .m = 1, .n = t->m[0], .a = {t->by, 0},
                         .b = {t->by, 4 * t->m[0]}, .y = {t->by, 0}};
    return s == RAYO_OK && t->swiglu ? mem->batch_record(st, t->batch, &glu) : s;
}

/* rmsnorm's output xn against rmsnorm alone on host memory (within one
 * float step: the sum of squares in another order) and float64. */
static void norm_g8_judge_xn(void *st, const norm_g8 *t, const float *x, const float *xn, int round)
{
    float *want = malloc(4 * t->n);
    rayo_call one = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_RMSNORM, .m = 1, .n = t->n, .alpha = 1e-5f,
                     .a = x, .b = t->gamma, .y = want};
    CHECK(run(st, &one) == RAYO_OK, "rmsnorm alone: %s", last_error);
    size_t off = 0;
    for (size_t i = 0; i < t->n; i++)
        off += xn[i] != want[i] && xn[i] != nextafterf(want[i], INFINITY) && xn[i] != nextafterf(want[i], -INFINITY);
    CHECK(!off, "rmsnorm then %s gemvs, round %d: %zu of %zu rmsnorm outputs off rmsnorm alone",
          rayo_dtype_name(t->dt), round, off, t->n);
    one.y = NULL;
    judge(NULL, one, xn, "rmsnorm then %s gemvs in one launch, round %d", rayo_dtype_name(t->dt), round);
    free(want);
}

/* Each product bit for bit the gemv alone on host memory of xn as read back
 * (and swiglu alone of gate's and up's), judged against float64 too. */
static void norm_g8_judge_y(void *st, const norm_g8 *t, const float *xn, const float *y, int round)
{
    rayo_op_info relaxed = *rayo_op_by_id(RAYO_OP_GEMV);
    relaxed.tol_rel = 2e-3; /* the combo's relaxed contract */
    float *want = malloc(4 * t->rows), *glu = malloc(4 * t->m[0]);
    for (size_t p = 0, at = 0; p < t->parts; at += t->m[p], p++) {
        rayo_call one = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .m = t->m[p], .n = t->n,
                         .alpha = 1.0f, .a = t->w + at * t->row_bytes, .b = xn, .y = want + at,
                         .dtypes = RAYO_DTYPES(t->dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                         .precision = RAYO_PRECISION_RELAXED};
        CHECK(run(st, &one) == RAYO_OK, "gemv alone: %s", last_error);
        rayo_call ref = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .m = t->m[p], .n = t->n,
                         .alpha = 1.0f, .a = t->wf + at * t->n, .b = xn};
        if (!t->swiglu || p == 1)
            judge(&relaxed, ref, y + at, "rmsnorm then %s gemv %zu, round %d", rayo_dtype_name(t->dt), p, round);
    }
    rayo_call s = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_SWIGLU, .m = 1, .n = t->m[0], .a = want,
                   .b = want + t->m[0], .y = glu};
    CHECK(!t->swiglu || run(st, &s) == RAYO_OK, "swiglu alone: %s", last_error);
    if (t->swiglu)
        memcpy(want, glu, 4 * t->m[0]);
    CHECK(!memcmp(y, want, 4 * t->rows), "rmsnorm then %s %s in one batch, round %d: not the ops alone",
          rayo_dtype_name(t->dt), t->swiglu ? "gate, up and swiglu" : "q, k and v gemvs", round);
    free(want); free(glu);
}

static int norm_g8_alloc(void *st, norm_g8 *t)
{
    const rayo_memory_api *mem = desc->memory;
    return mem->buffer_alloc(st, 4 * t->n, &t->bx) == RAYO_OK && mem->buffer_alloc(st, 4 * t->n, &t->bg) == RAYO_OK &&
           mem->buffer_alloc(st, 4 * t->n, &t->bn) == RAYO_OK &&
           mem->buffer_alloc(st, t->rows * t->row_bytes, &t->bw) == RAYO_OK &&
           mem->buffer_alloc(st, 4 * t->rows, &t->by) == RAYO_OK && mem->batch_begin(st, &t->batch) == RAYO_OK &&
           mem->buffer_write(st, t->bg, 0, t->gamma, 4 * t->n) == RAYO_OK &&
           mem->buffer_write(st, t->bw, 0, t->w, t->rows * t->row_bytes) == RAYO_OK && norm_g8_record(st, t) == RAYO_OK;
}

/* rmsnorm of one row, then relaxed 8-bit gemvs of its output in a batch, as
 * a decode step records them (q, k and v; or gate, up and swiglu): one
 * launch in the plugin (gemv8xn_*, gemv8sn_*).  Two rounds (one by one,
 * then the graph), each on a fresh x; outlier: one value of x that many
 * times larger (1000: past the 8-bit estimate, the float path, whose x the
 * kernel normalises again). */
static void check_norm_gemv8(void *st, rayo_dtype dt, int swiglu, float outlier)
{
    norm_g8 t = {.dt = dt, .swiglu = swiglu, .parts = swiglu ? 2 : 3, .n = 2048};
    t.m[0] = swiglu ? 300 : 256, t.m[1] = swiglu ? 300 : 64, t.m[2] = swiglu ? 0 : 33;
    t.rows = t.m[0] + t.m[1] + t.m[2];
    CHECK(rayo_dtype_row_bytes(dt, t.n, &t.row_bytes), "row bytes");
    t.wf = floats(t.rows * t.n, -1, 1), t.gamma = floats(t.n, 0.5, 1.5), t.w = malloc(t.rows * t.row_bytes);
    store_rows(dt, t.wf, t.w, t.rows, t.n, t.row_bytes);
    int ok = norm_g8_alloc(st, &t);
    CHECK(ok, "rmsnorm then gemvs: buffers and batch: %s", last_error);
    for (int round = 0; ok && round < 2; round++) {
        float *x = floats(t.n, -2, 2);
        x[t.n / 3] *= outlier;
        ok = desc->memory->buffer_write(st, t.bx, 0, x, 4 * t.n) == RAYO_OK &&
             desc->memory->batch_submit(st, t.batch) == RAYO_OK &&
             desc->memory->batch_wait(st, t.batch, UINT64_MAX) == RAYO_OK;
        CHECK(ok, "rmsnorm then gemvs, round %d: %s", round, last_error);
        float *xn = read_floats(st, t.bn, 0, t.n), *y = read_floats(st, t.by, 0, t.rows);
        norm_g8_judge_xn(st, &t, x, xn, round);
        norm_g8_judge_y(st, &t, xn, y, round);
        free(x); free(xn); free(y);
    }
    void *bufs[] = {t.bx, t.bg, t.bn, t.bw, t.by};
    for (size_t i = 0; i < 5; i++)
        if (bufs[i])
            desc->memory->buffer_free(st, bufs[i]);
    if (t.batch)
        desc->memory->batch_free(st, t.batch);
    free(t.wf); free(t.gamma); free(t.w);
}

/* Rope of q and of k in place in a batch, as a decode step records them:
 * one launch in the plugin (rope2_*).  Then the same rope twice on one
 * buffer, which must not be one launch (the second reads the first's
 * output).  After a submit each buffer must be bit for bit the ropes alone
 * on host memory, in turn. */
static void check_rope_pair(void *st, rayo_rope_mode mode, size_t tokens)
{
    const rayo_memory_api *mem = desc->memory;
    enum { HEADS = 32, KV_HEADS = 4, HD = 64 };
    size_t qn = tokens * HEADS * HD, kn = tokens * KV_HEADS * HD;
    float *q = floats(qn, -2, 2), *k = floats(kn, -2, 2), *want = malloc(4 * qn);
    int32_t pos[8];
    for (size_t t = 0; t < tokens; t++)
        pos[t] = (int32_t)(17 + 100 * t);
    void *bq = NULL, *bk = NULL, *bp = NULL, *batch = NULL;
    CHECK(tokens <= 8 && mem->buffer_alloc(st, 4 * qn, &bq) == RAYO_OK && mem->buffer_alloc(st, 4 * kn, &bk) == RAYO_OK &&
          mem->buffer_alloc(st, 4 * tokens, &bp) == RAYO_OK && mem->batch_begin(st, &batch) == RAYO_OK,
          "buffers: %s", last_error);
    if (!bq || !bk || !bp || !batch)
        return;
    CHECK(mem->buffer_write(st, bq, 0, q, 4 * qn) == RAYO_OK && mem->buffer_write(st, bk, 0, k, 4 * kn) == RAYO_OK &&
          mem->buffer_write(st, bp, 0, pos, 4 * tokens) == RAYO_OK, "write");
    rayo_rope_params pq = {sizeof pq, mode, 48, 10000.0f, 1.0f, HEADS, HD, 0, 0}, pk = pq;
    pk.n_heads = KV_HEADS;
    /* q and k apart: one launch; then k twice over: two */
    void *buf[4] = {bq, bk, bk, bk};
    const rayo_rope_params *par[4] = {&pq, &pk, &pk, &pk};
    for (int i = 0; i < 4; i++) {
        rayo_dev_call c = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_ROPE, .m = tokens, .n = HD,
                           .a = {buf[i], 0}, .b = {bp, 0}, .y = {buf[i], 0}, .params = par[i],
                           .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32)};
        CHECK(mem->batch_record(st, batch, &c) == RAYO_OK, "record rope %d: %s", i, last_error);
    }
    CHECK(mem->batch_submit(st, batch) == RAYO_OK && mem->batch_wait(st, batch, UINT64_MAX) == RAYO_OK, "submit: %s",
          last_error);
    float *mine[2] = {q, k};
    size_t len[2] = {qn, kn}, times[2] = {1, 3};
    for (int b = 0; b < 2; b++) {
        for (size_t i = 0; i < times[b]; i++) {
            rayo_call one = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ROPE, .m = tokens, .n = HD,
                             .a = mine[b], .b = pos, .y = want, .params = par[b],
                             .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32)};
            CHECK(run(st, &one) == RAYO_OK, "rope alone: %s", last_error);
            memcpy(mine[b], want, 4 * len[b]);
        }
        float *got = read_floats(st, buf[b], 0, len[b]);
        CHECK(!memcmp(got, mine[b], 4 * len[b]), "rope %s of %zu tokens in a batch (%s): not the ropes alone",
              mode == RAYO_ROPE_NEOX ? "neox" : "norm", tokens, b ? "k three times, after q" : "q, with k");
        free(got);
    }
    mem->batch_free(st, batch);
    mem->buffer_free(st, bq);
    mem->buffer_free(st, bk);
    mem->buffer_free(st, bp);
    free(q); free(k); free(want);
}

/* ---- rope of q and k in the launch of the q, k, v products ------------------ */
/* A decode step's attention inputs as examples/llama records them: rmsnorm
 * of x (or x as given), the relaxed 8-bit q, k and v gemvs of its output
 * (a GQA shape: q 2048 rows, k and v 256), k and v into a cache slot that
 * moves with the step, then rope of q and of k in place: one launch in the
 * plugin with fuse_rope = yes (gemv8xnr_*, gemv8xr_*).  Replayed for three
 * steps at three positions (one by one, the graph built, the graph set
 * again); each step's outputs must be bit for bit the ops alone on host
 * memory (gemvs of rmsnorm's output as read back, then the ropes), and in
 * the second state (fuse_rope = no: the products' launch, then rope2_*)
 * bit for bit the first state's. */
typedef struct qkv_case {
    rayo_dtype dt;
    size_t head_dim;
    rayo_rope_mode mode;
    int norm;
} qkv_case;
static const qkv_case qkv_cases[] = {
    {RAYO_DTYPE_Q4_0, 64, RAYO_ROPE_NORM, 1},  {RAYO_DTYPE_Q8_0, 128, RAYO_ROPE_NORM, 1},
    {RAYO_DTYPE_Q4_K, 64, RAYO_ROPE_NEOX, 1},  {RAYO_DTYPE_Q4_K, 128, RAYO_ROPE_NORM, 0},
    {RAYO_DTYPE_Q4_0, 128, RAYO_ROPE_NEOX, 0},
};
#define QKV_CASES (sizeof qkv_cases / sizeof qkv_cases[0])
enum { QKV_N = 2048, QKV_Q = 2048, QKV_KV = 256, QKV_ROWS = QKV_Q + 2 * QKV_KV, QKV_STEPS = 3 };
static const int32_t qkv_pos[QKV_STEPS] = {5, 1234, 30001};
static float *qkv_outputs[QKV_CASES]; /* the first state's q, k, v of each step, for qkv_rope_agrees */

typedef struct qkv_bufs {
    const qkv_case *c;
    rayo_rope_params pq, pk;
    size_t row_bytes;
    float *x;
    unsigned char *w;
    void *bx, *bg, *bn, *bw, *bq, *bkv, *bp, *batch; /* bkv: k's slots, then v's */
} qkv_bufs;

static rayo_dev_call qkv_gemv(const qkv_bufs *t, size_t first, size_t rows, void *y, size_t at, size_t step)
{
    rayo_dev_call c = {.struct_size = sizeof c, .op = RAYO_OP_GEMV, .m = rows, .n = QKV_N, .alpha = 1.0f,
                       .a = {t->bw, first * t->row_bytes}, .b = {t->c->norm ? t->bn : t->bx, 0}, .y = {y, at},
                       .dtypes = RAYO_DTYPES(t->c->dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                       .precision = RAYO_PRECISION_RELAXED};
    c.step_bytes[3] = step;
    return c;
}

static rayo_dev_call qkv_rope(const qkv_bufs *t, const rayo_rope_params *p, void *buf, size_t at, size_t step)
{
    rayo_dev_call c = {.struct_size = sizeof c, .op = RAYO_OP_ROPE, .m = 1, .n = p->head_dim, .a = {buf, at},
                       .b = {t->bp, 0}, .y = {buf, at}, .params = p,
                       .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32)};
    c.step_bytes[0] = c.step_bytes[3] = step;
    return c;
}

static rayo_status qkv_record(void *st, qkv_bufs *t)
{
    const rayo_memory_api *mem = desc->memory;
    size_t slot = 4 * QKV_KV, v_at = QKV_STEPS * slot;
    rayo_dev_call calls[5], norm = {.struct_size = sizeof norm, .op = RAYO_OP_RMSNORM, .m = 1, .n = QKV_N,
                                    .alpha = 1e-5f, .a = {t->bx, 0}, .b = {t->bg, 0}, .y = {t->bn, 0}};
    calls[0] = qkv_gemv(t, 0, QKV_Q, t->bq, 0, 0);
    calls[1] = qkv_gemv(t, QKV_Q, QKV_KV, t->bkv, 0, slot);
    calls[2] = qkv_gemv(t, QKV_Q + QKV_KV, QKV_KV, t->bkv, v_at, slot);
    calls[3] = qkv_rope(t, &t->pq, t->bq, 0, 0);
    calls[4] = qkv_rope(t, &t->pk, t->bkv, 0, slot);
    rayo_status s = t->c->norm ? mem->batch_record(st, t->batch, &norm) : RAYO_OK;
    for (int i = 0; i < 5 && s == RAYO_OK; i++)
        s = mem->batch_record(st, t->batch, &calls[i]);
    return s;
}

/* The step's q, k, v (out) as the ops alone on host memory give them, from
 * x's rmsnorm as the batch stored it (xn) or x. */
static void qkv_want(void *st, const qkv_bufs *t, const float *xn, int32_t pos, float *out)
{
    static const size_t first[3] = {0, QKV_Q, QKV_Q + QKV_KV}, rows[3] = {QKV_Q, QKV_KV, QKV_KV};
    float *roped = malloc(4 * QKV_Q);
    for (int p = 0; p < 3; p++) {
        rayo_call g = {.struct_size = sizeof g, .op = RAYO_OP_GEMV, .m = rows[p], .n = QKV_N, .alpha = 1.0f,
                       .a = t->w + first[p] * t->row_bytes, .b = xn, .y = out + first[p],
                       .dtypes = RAYO_DTYPES(t->c->dt, RAYO_DTYPE_F32, 0, RAYO_DTYPE_F32),
                       .precision = RAYO_PRECISION_RELAXED};
        CHECK(run(st, &g) == RAYO_OK, "gemv alone: %s", last_error);
        if (p == 2)
            break;
        rayo_call r = {.struct_size = sizeof r, .op = RAYO_OP_ROPE, .m = 1, .n = t->c->head_dim,
                       .a = out + first[p], .b = &pos, .y = roped, .params = p ? &t->pk : &t->pq,
                       .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, 0, RAYO_DTYPE_F32)};
        CHECK(run(st, &r) == RAYO_OK, "rope alone: %s", last_error);
        memcpy(out + first[p], roped, 4 * rows[p]);
    }
    free(roped);
}

/* One step: the batch at the step's position, its q, k, v against the ops
 * alone; returned in got. */
static void qkv_step(void *st, const qkv_bufs *t, size_t step, float *got)
{
    const rayo_memory_api *mem = desc->memory;
    CHECK(mem->buffer_write(st, t->bp, 0, &qkv_pos[step], 4) == RAYO_OK &&
          mem->batch_set_step(st, t->batch, step) == RAYO_OK && mem->batch_submit(st, t->batch) == RAYO_OK &&
          mem->batch_wait(st, t->batch, UINT64_MAX) == RAYO_OK, "q, k, v and ropes, step %zu: %s", step, last_error);
    size_t slot = 4 * QKV_KV;
    float *q = read_floats(st, t->bq, 0, QKV_Q), *k = read_floats(st, t->bkv, step * slot, QKV_KV),
          *v = read_floats(st, t->bkv, (QKV_STEPS + step) * slot, QKV_KV);
    float *xn = t->c->norm ? read_floats(st, t->bn, 0, QKV_N) : NULL, *want = malloc(4 * QKV_ROWS);
    memcpy(got, q, 4 * QKV_Q);
    memcpy(got + QKV_Q, k, 4 * QKV_KV);
    memcpy(got + QKV_Q + QKV_KV, v, 4 * QKV_KV);
    qkv_want(st, t, xn ? xn : t->x, qkv_pos[step], want);
    size_t off = floats_differ(got, want, QKV_ROWS);
    CHECK(!off, "%s q, k, v gemvs%s and ropes (%s, head_dim %zu), step %zu at %d: %zu of %d outputs not the ops "
          "alone", rayo_dtype_name(t->c->dt), t->c->norm ? " of an rmsnorm" : "",
          t->c->mode == RAYO_ROPE_NEOX ? "neox" : "norm", t->c->head_dim, step, (int)qkv_pos[step], off, QKV_ROWS);
    free(q); free(k); free(v); free(xn); free(want);
}

static int qkv_alloc(void *st, qkv_bufs *t, const float *gamma)
{
    const rayo_memory_api *mem = desc->memory;
    size_t wbytes = QKV_ROWS * t->row_bytes;
    return mem->buffer_alloc(st, 4 * QKV_N, &t->bx) == RAYO_OK && mem->buffer_alloc(st, 4 * QKV_N, &t->bg) == RAYO_OK &&
           mem->buffer_alloc(st, 4 * QKV_N, &t->bn) == RAYO_OK && mem->buffer_alloc(st, wbytes, &t->bw) == RAYO_OK &&
           mem->buffer_alloc(st, 4 * QKV_Q, &t->bq) == RAYO_OK &&
           mem->buffer_alloc(st, 8 * QKV_STEPS * QKV_KV, &t->bkv) == RAYO_OK &&
           mem->buffer_alloc(st, 4, &t->bp) == RAYO_OK && mem->batch_begin(st, &t->batch) == RAYO_OK &&
           mem->buffer_write(st, t->bx, 0, t->x, 4 * QKV_N) == RAYO_OK &&
           mem->buffer_write(st, t->bg, 0, gamma, 4 * QKV_N) == RAYO_OK &&
           mem->buffer_write(st, t->bw, 0, t->w, wbytes) == RAYO_OK && qkv_record(st, t) == RAYO_OK;
}

static void qkv_free(void *st, qkv_bufs *t)
{
    void *bufs[] = {t->bx, t->bg, t->bn, t->bw, t->bq, t->bkv, t->bp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            desc->memory->buffer_free(st, bufs[i]);
    if (t->batch)
        desc->memory->batch_free(st, t->batch);
}

/* Case i on inputs drawn from seed + i (the same in every state): every
 * step's q, k, v, checked against the ops alone. */
static float *qkv_rope_case(void *st, size_t i, uint64_t seed)
{
    const qkv_case *c = &qkv_cases[i];
    qkv_bufs t = {.c = c};
    t.pq = (rayo_rope_params){sizeof t.pq, c->mode, 0, 10000.0f, 1.0f, QKV_Q / c->head_dim, c->head_dim, 0, 0};
    t.pk = t.pq;
    t.pk.n_heads = QKV_KV / c->head_dim;
    CHECK(rayo_dtype_row_bytes(c->dt, QKV_N, &t.row_bytes), "row bytes");
    conform_rng keep = rng;
    conform_rng_seed(&rng, seed + 1000 + i);
    float *wf = floats((size_t)QKV_ROWS * QKV_N, -1, 1), *gamma = floats(QKV_N, 0.5, 1.5);
    t.x = floats(QKV_N, -2, 2);
    rng = keep;
    t.w = malloc(QKV_ROWS * t.row_bytes);
    store_rows(c->dt, wf, t.w, QKV_ROWS, QKV_N, t.row_bytes);
    float *out = calloc(QKV_STEPS * QKV_ROWS, 4);
    int ok = qkv_alloc(st, &t, gamma);
    CHECK(ok, "q, k, v and ropes: buffers and batch: %s", last_error);
    for (size_t step = 0; ok && step < QKV_STEPS; step++)
        qkv_step(st, &t, step, out + step * QKV_ROWS);
    qkv_free(st, &t);
    free(wf); free(gamma); free(t.x); free(t.w);
    return out;
}

static void test_qkv_rope(void *st, uint64_t seed)
{
    for (size_t i = 0; i < QKV_CASES; i++)
        qkv_outputs[i] = qkv_rope_case(st, i, seed);
}

/* A state with fuse_rope = no: the same outputs, bit for bit, as the first
 * state's (the ropes fused there). */
static void qkv_rope_agrees(void *st, uint64_t seed)
{
    for (size_t i = 0; i < QKV_CASES; i++) {
        float *out = qkv_rope_case(st, i, seed);
        size_t differ = floats_differ(out, qkv_outputs[i], QKV_STEPS * QKV_ROWS);
        CHECK(differ == 0, "q, k, v and ropes, case %zu: %zu of %d outputs differ without fuse_rope", i, differ,
              QKV_STEPS * QKV_ROWS);
        free(out);
        free(qkv_outputs[i]);
        qkv_outputs[i] = NULL;
    }
}

/* A typed matmul (f32 A, Q4_0 weight B transposed, as an LLM prefill) in a
 * batch on device buffers, strict and relaxed (TF32 allowed): checked against
 * the float64 product with B's dequantized values. */
static void test_typed_matmul_batch(void *st, uint32_t precision, size_t m, size_t n, size_t k)
{
    const rayo_memory_api *mem = desc->memory;
    size_t qbytes = n * (k / 32) * 18;
    float *a = floats(m * k, -1, 1), *bf = floats(n * k, -1, 1), *bd = malloc(n * k * 4);
    unsigned char *bq = malloc(qbytes);
    rayo_call quant = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_CONVERT, .n = n * k, .a = bf, .y = bq,
                       .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, 0, 0, RAYO_DTYPE_Q4_0)};
    rayo_call dequant = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_CONVERT, .n = n * k, .a = bq, .y = bd,
                         .dtypes = RAYO_DTYPES(RAYO_DTYPE_Q4_0, 0, 0, RAYO_DTYPE_F32)};
    CHECK(run(st, &quant) == RAYO_OK && run(st, &dequant) == RAYO_OK, "Q4_0 weights: %s", last_error);
    void *ba = NULL, *bb = NULL, *by = NULL;
    CHECK(mem->buffer_alloc(st, m * k * 4, &ba) == RAYO_OK && mem->buffer_alloc(st, qbytes, &bb) == RAYO_OK &&
          mem->buffer_alloc(st, m * n * 4, &by) == RAYO_OK, "buffer_alloc: %s", last_error);
    if (!ba || !bb || !by)
        return;
    CHECK(mem->buffer_write(st, ba, 0, a, m * k * 4) == RAYO_OK, "write");
    CHECK(mem->buffer_write(st, bb, 0, bq, qbytes) == RAYO_OK, "write");
    rayo_dev_call mm = {.struct_size = sizeof(rayo_dev_call), .op = RAYO_OP_MATMUL, .flags = RAYO_TRANS_B,
                        .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_Q4_0, 0, RAYO_DTYPE_F32), .m = m, .n = n,
                        .k = k, .alpha = 1.0f, .a = {ba, 0}, .b = {bb, 0}, .y = {by, 0}, .precision = precision};
    void *batch = NULL;
    CHECK(mem->batch_begin(st, &batch) == RAYO_OK, "batch_begin");
    CHECK(mem->batch_record(st, batch, &mm) == RAYO_OK, "record typed matmul: %s", last_error);
    CHECK(mem->batch_submit(st, batch) == RAYO_OK, "submit: %s", last_error);
    CHECK(mem->batch_wait(st, batch, UINT64_MAX) == RAYO_OK, "wait: %s", last_error);
    mem->batch_free(st, batch);
    float *c = read_floats(st, by, 0, m * n);
    rayo_op_info relaxed = *rayo_op_by_id(RAYO_OP_MATMUL);
    relaxed.tol_rel = 2e-3; /* the combo's relaxed contract */
    rayo_dev_call f32 = mm;
    f32.dtypes = 0;
    judge(precision == RAYO_PRECISION_RELAXED ? &relaxed : NULL, host_call(&f32, a, bd), c,
          "batch matmul f32 x Q4_0 (B transposed) %zux%zux%zu, precision %u", m, n, k, (unsigned)precision);
    mem->buffer_free(st, ba);
    mem->buffer_free(st, bb);
    mem->buffer_free(st, by);
    free(a); free(bf); free(bd); free(bq); free(c);
}

/* f16 x f16 and bf16 x bf16 matmul (C in f32), strict and relaxed, on host
 * memory, against the float64 product of the stored values: the tensor-core
 * kernels (strides multiples of 8) past their tiles' edges in every
 * transpose, a long positive k (the strict kernels' second sums), and odd
 * strides (the dequantizing path). */
static void check_matmul_half(void *st, rayo_dtype dt, unsigned flags, size_t m, size_t n, size_t k, double lo,
                              uint32_t precision)
{
    size_t na = m * k, nb = k * n;
    float *a = floats(na, lo, 1), *b = floats(nb, lo, 1), *C = floats(m * n, -1, 1);
    uint16_t *ah = malloc((na ? na : 1) * 2), *bh = malloc((nb ? nb : 1) * 2);
    float *y = malloc((m * n + 1) * sizeof *y);
    for (size_t i = 0; i < na + nb; i++) {
        float *v = i < na ? &a[i] : &b[i - na];
        uint16_t *h = i < na ? &ah[i] : &bh[i - na];
        *h = dt == RAYO_DTYPE_BF16 ? rayo_f32_to_bf16(*v) : rayo_f32_to_f16(*v);
        *v = dt == RAYO_DTYPE_BF16 ? rayo_bf16_to_f32(*h) : rayo_f16_to_f32(*h);
    }
    memcpy(y, C, m * n * sizeof *y);
    float alpha = flags & 1 ? 0.5f : 1.0f, beta = flags & 2 ? -1.5f : 0.0f;
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = m, .n = n, .k = k,
                   .alpha = alpha, .beta = beta, .a = ah, .b = bh, .y = y,
                   .dtypes = RAYO_DTYPES(dt, dt, 0, RAYO_DTYPE_F32), .precision = precision};
    CHECK(run(st, &c) == RAYO_OK, "matmul %s: %s", rayo_dtype_name(dt), last_error);
    rayo_call ref = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = m, .n = n,
                     .k = k, .alpha = alpha, .beta = beta, .a = a, .b = b, .y = C};
    rayo_op_info relaxed = *rayo_op_by_id(RAYO_OP_MATMUL);
    relaxed.tol_rel = 2e-3; /* the combo's relaxed contract */
    judge(precision == RAYO_PRECISION_RELAXED ? &relaxed : NULL, ref, y, "matmul %s flags=%u %zux%zux%zu precision %u",
          rayo_dtype_name(dt), flags, m, n, k, (unsigned)precision);
    free(a); free(b); free(C); free(ah); free(bh); free(y);
}

/* A relaxed f16 x f16 or bf16 x bf16 matmul with row strides `pad`
 * elements past the dense ones (lda, ldb, ldy; pad % 8 == 0 keeps the
 * tensor-core paths), judged against float64 sums within the relaxed 2e-3
 * of sum|terms|: every element of C, or `spots` of them (large shapes),
 * and C's padding must stay as it was. */
static void check_matmul_half_ld(void *st, rayo_dtype dt, unsigned flags, size_t m, size_t n, size_t k, size_t pad,
                                 size_t spots)
{
    int ta = (flags & RAYO_TRANS_A) != 0, tb = (flags & RAYO_TRANS_B) != 0;
    size_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldy = n + pad;
    size_t na = (ta ? k : m) * lda, nb = (tb ? n : k) * ldb, ny = m * ldy;
    uint16_t *ah = malloc(na * 2), *bh = malloc(nb * 2);
    float *tmp = floats(na > nb ? na : nb, -1, 1), *c0 = floats(ny, -1, 1), *y = malloc(ny * sizeof *y);
    for (size_t i = 0; i < na; i++)
        ah[i] = dt == RAYO_DTYPE_BF16 ? rayo_f32_to_bf16(tmp[i]) : rayo_f32_to_f16(tmp[i]);
    conform_fill_uniform(&rng, tmp, nb, -1, 1);
    for (size_t i = 0; i < nb; i++)
        bh[i] = dt == RAYO_DTYPE_BF16 ? rayo_f32_to_bf16(tmp[i]) : rayo_f32_to_f16(tmp[i]);
    memcpy(y, c0, ny * sizeof *y);
    float alpha = 0.75f, beta = flags & 1 ? 0.5f : 0.0f;
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = m, .n = n, .k = k,
                   .alpha = alpha, .beta = beta, .a = ah, .b = bh, .y = y, .lda = pad ? lda : 0,
                   .ldb = pad ? ldb : 0, .ldy = pad ? ldy : 0, .dtypes = RAYO_DTYPES(dt, dt, 0, RAYO_DTYPE_F32),
                   .precision = RAYO_PRECISION_RELAXED};
    rayo_status rs = run(st, &c);
    CHECK(rs == RAYO_OK, "matmul %s %zux%zux%zu ld +%zu: %s", rayo_dtype_name(dt), m, n, k, pad, last_error);
    size_t count = spots ? spots : m * n, bad = 0;
    double worst = 0;
    for (size_t s = 0; s < count && rs == RAYO_OK; s++) {
        size_t i = spots ? (size_t)(conform_rng_uniform(&rng) * (double)m) : s / n;
        size_t j = spots ? (size_t)(conform_rng_uniform(&rng) * (double)n) : s % n;
        if (spots && s < 4) { /* the corners too */
            i = s & 1 ? m - 1 : 0;
            j = s & 2 ? n - 1 : 0;
        }
        double sum = 0, mag = 0;
        for (size_t p = 0; p < k; p++) {
            uint16_t ha = ta ? ah[p * lda + i] : ah[i * lda + p], hb = tb ? bh[j * ldb + p] : bh[p * ldb + j];
            double t = dt == RAYO_DTYPE_BF16 ? (double)rayo_bf16_to_f32(ha) * rayo_bf16_to_f32(hb)
                                             : (double)rayo_f16_to_f32(ha) * rayo_f16_to_f32(hb);
            sum += t;
            mag += fabs(t);
        }
        double want = alpha * sum + beta * (double)c0[i * ldy + j];
        double err = fabs((double)y[i * ldy + j] - want), tol = 2e-3 * (alpha * mag + fabs(beta * c0[i * ldy + j]));
        if (!(err <= tol + 1e-30)) {
            if (bad++ < 3)
                fprintf(stderr, "FAIL matmul %s flags=%u %zux%zux%zu ld +%zu: C[%zu][%zu] = %.7g, want %.7g\n",
                        rayo_dtype_name(dt), flags, m, n, k, pad, i, j, (double)y[i * ldy + j], want);
        }
        if (tol > 0 && err / tol > worst)
            worst = err / tol;
    }
    for (size_t i = 0; i < m && pad && rs == RAYO_OK; i++)
        for (size_t j = n; j < ldy; j++)
            if (memcmp(&y[i * ldy + j], &c0[i * ldy + j], sizeof *y) != 0 && bad++ < 3)
                fprintf(stderr, "FAIL matmul %s ld +%zu: C's padding [%zu][%zu] written\n", rayo_dtype_name(dt), pad,
                        i, j);
    failures += bad != 0;
    if (rs == RAYO_OK) /* a refused call is a failure above, not a 0.00 */
        printf("matmul %s flags=%u %zux%zux%zu ld +%zu: worst error %.2f of the relaxed bound\n",
               rayo_dtype_name(dt), flags, m, n, k, pad, worst);
    free(ah); free(bh); free(tmp); free(c0); free(y);
}

static void test_matmul_half(void *st)
{
    static const rayo_dtype dts[] = {RAYO_DTYPE_F16, RAYO_DTYPE_BF16};
    for (int d = 0; d < 2; d++)
        for (uint32_t p = RAYO_PRECISION_STRICT; p <= RAYO_PRECISION_RELAXED; p++) {
            for (unsigned flags = 0; flags < 4; flags++) {
                check_matmul_half(st, dts[d], flags, 296, 200, 520, -1, p); /* tiles + edges, a partial k tile */
                check_matmul_half(st, dts[d], flags, 61, 45, 77, -1, p);    /* odd strides: dequantized */
            }
            check_matmul_half(st, dts[d], RAYO_TRANS_B, 64, 72, 16384, 0, p); /* long k, positive terms */
            check_matmul_half(st, dts[d], 0, 8, 16, 0, -1, p);                /* k = 0: C = beta C */
        }
    /* relaxed calls on sm_90 take warpgroup MMA (cuda-wgmma.c): partial 128 x
     * 256 tiles, k tiles of 64 cut short (k % 64 != 0, k < 64), row strides,
     * every transpose, and 4096^3 spot-checked */
    for (int d = 0; d < 2; d++) {
        for (unsigned flags = 0; flags < 4; flags++) {
            check_matmul_half(st, dts[d], flags, 392, 520, 200, -1, RAYO_PRECISION_RELAXED);
            check_matmul_half(st, dts[d], flags, 130, 258, 8, -1, RAYO_PRECISION_RELAXED);
            check_matmul_half_ld(st, dts[d], flags, 200, 264, 136, 24, 0);
            if (d == 0 || flags == 0) /* 144 tiles of 128 x 256 (those smaller take 128 x 128), edges in
                                       * all; m a multiple of 8 so that A's stride stays one with TRANS_A */
                check_matmul_half_ld(st, dts[d], flags, 1496, 3000, 72, 8, 20000);
        }
        check_matmul_half_ld(st, dts[d], RAYO_TRANS_B, 4096, 4096, 4096, 0, 256);
        check_matmul_half_ld(st, dts[d], 0, 4096, 4096, 4096, 0, 256);
    }
}

/* A call that cannot get its staging (far beyond any GPU) fails with a
 * status and leaves the caller's output alone. */
static void test_failure_keeps_output(void *st)
{
    float a[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8};
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .m = 400000, .n = 400000, .k = 400000, .alpha = 1, .beta = 1,
                   .a = a, .b = a, .y = y};
    rayo_status s = run(st, &c);
    CHECK(s == RAYO_E_NOMEM || s == RAYO_E_OVERFLOW, "huge matmul: status %d (%s)", s, last_error);
    CHECK(y[0] == 5 && y[3] == 8, "a failed call changed the output");
    float z[4] = {0};
    rayo_call ok = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ADD, .n = 4, .a = a, .b = a, .y = z};
    CHECK(run(st, &ok) == RAYO_OK && z[3] == 8, "a call after a failed one: %s", last_error);
}

typedef struct worker { void *st; int id, bad; } worker;
static void *worker_main(void *arg)
{
    worker *w = arg;
    size_t n = 5000 + (size_t)w->id * 77;
    float *a = malloc(n * 4), *y = malloc(n * 4);
    for (int rep = 0; rep < 40; rep++) {
        for (size_t i = 0; i < n; i++)
            a[i] = (float)(i % 97) + (float)w->id + (float)rep;
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_SCALE, .n = n, .alpha = 2, .a = a, .y = y};
        char msg[512];
        if (run(w->st, &c) != RAYO_OK || conform_check_outputs(NULL, &c, y, msg, sizeof msg) != 0)
            w->bad++;
    }
    free(a); free(y);
    return NULL;
}

static void test_concurrency(void *st)
{
    pthread_t th[6];
    worker w[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (worker){st, i, 0};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].bad == 0, "thread %d: %d wrong results", i, w[i].bad);
    }
}

static int count_cubins(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".cubin"))
            n++;
    if (d)
        closedir(d);
    return n;
}

/* Each kernel of the table is for a combination of the op list, and every
 * combination of the list has exactly one (the backend runs them all). */
static void check_op_table(void)
{
    size_t kernels = 0, combos = 0;
    for (size_t i = 0; i < desc->op_count; i++) {
        const rayo_op_entry *e = &desc->ops[i];
        if (!e->fn)
            continue; /* the loader skips it */
        kernels++;
        CHECK(rayo_op_combo_find((rayo_op)e->op, e->dtypes) != NULL,
              "entry %zu: op %u with dtypes 0x%08x is not a combination of the op list", i, (unsigned)e->op,
              (unsigned)e->dtypes);
    }
    for (size_t i = 0; i < rayo_op_count(); i++) {
        rayo_op op = rayo_op_at(i)->id;
        for (size_t c = 0; c < rayo_op_combo_count(op); c++, combos++) {
            uint32_t dtypes = rayo_op_combo(op, c)->dtypes;
            size_t found = 0;
            for (size_t j = 0; j < desc->op_count; j++)
                found += desc->ops[j].fn && desc->ops[j].op == (uint32_t)op && desc->ops[j].dtypes == dtypes;
            CHECK(found == 1, "%s %s: %zu kernels in the op table", rayo_op_at(i)->name,
                  rayo_op_combo(op, c)->name, found);
        }
    }
    CHECK(kernels == combos, "%zu kernels, the op list has %zu combinations", kernels, combos);
}

int main(int argc, char **argv)
{
    int probe_only = argc > 1 && !strcmp(argv[1], "--probe");
    /* RAYO_CUDA_PLUGIN: the plugin of a build tree that was moved */
    const char *path = getenv("RAYO_CUDA_PLUGIN") ? getenv("RAYO_CUDA_PLUGIN") : CUDA_PLUGIN;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "ERROR: %s\n", dlerror());
        return 99;
    }
    desc = dlsym(lib, RAYO_PLUGIN_SYMBOL);
    if (!desc) {
        fprintf(stderr, "ERROR: no rayo_plugin in %s\n", path);
        return 99;
    }
    CHECK(desc->magic == RAYO_PLUGIN_MAGIC && desc->abi_major == RAYO_PLUGIN_ABI_MAJOR, "descriptor header");
    CHECK(!strcmp(desc->name, "cuda") && desc->arch == RAYO_ARCH_ANY && desc->priority == 40, "name, arch, priority");
    CHECK(desc->memory && desc->memory->struct_size == sizeof(rayo_memory_api), "memory API");
    check_op_table();

    rayo_probe_result pr = {.struct_size = sizeof pr};
    CHECK(desc->probe(&host, &pr) == RAYO_OK, "probe status");
    if (pr.device_count == 0) {
        CHECK(pr.reason[0] != '\0', "an unavailable backend must say why");
        if (failures)
            return 1;
        printf("SKIP: no usable CUDA device: %s\n", pr.reason);
        return 77;
    }
    for (uint32_t i = 0; i < pr.device_count; i++)
        printf("device %u: %s, %.1f GiB, type %u\n", i, pr.devices[i].name,
               (double)pr.devices[i].memory_bytes / (1 << 30), pr.devices[i].type);
    CHECK(pr.devices[0].type == RAYO_DEVICE_GPU, "device type");
    if (probe_only)
        return failures ? 1 : 0;

    uint64_t seed = conform_default_seed();
    conform_rng_seed(&rng, seed);
    printf("seed %llu (RAYO_CONFORM_SEED repeats it)\n", (unsigned long long)seed);
    char tmpl[] = "/tmp/test-cuda-XXXXXX";
    if (mkdtemp(tmpl))
        snprintf(cache_dir, sizeof cache_dir, "%s", tmpl);
    void *st = NULL;
    CHECK(desc->init(&host, 0, &st) == RAYO_OK, "init: %s", last_error);
    if (!st)
        return 1;
    test_elementwise(st);
    test_reductions(st);
    test_rows(st);
    test_matrix(st);
    test_attention(st, seed);
    test_gemv_int8(st);
    test_batches(st);
    check_dependent_chain(st, config_pdl);
    check_gemv8_group(st, RAYO_DTYPE_Q8_0);
    check_gemv8_group(st, RAYO_DTYPE_Q4_0);
    check_gemv8_group(st, RAYO_DTYPE_Q4_K);
    check_gemv8_group(st, RAYO_DTYPE_Q6_K);
    check_gemv8_swiglu(st, RAYO_DTYPE_Q4_0, 0);
    check_gemv8_swiglu(st, RAYO_DTYPE_Q4_K, 0);
    check_gemv8_swiglu(st, RAYO_DTYPE_Q8_0, 1);
    check_gemv8_swiglu(st, RAYO_DTYPE_Q6_K, 0);
    check_add_rmsnorm(st, 1, 2048);
    check_add_rmsnorm(st, 3, 4096);
    check_add_rmsnorm(st, 2, 1100); /* n % 4 == 0, past the warp kernels */
    check_add_rmsnorm(st, 1, 999);  /* odd n: not fused, still right */
    check_norm_gemv8(st, RAYO_DTYPE_Q4_0, 0, 1.0f);
    check_norm_gemv8(st, RAYO_DTYPE_Q8_0, 1, 1.0f);
    check_norm_gemv8(st, RAYO_DTYPE_Q4_K, 0, 1.0f);
    check_norm_gemv8(st, RAYO_DTYPE_Q4_K, 1, 1.0f);
    check_norm_gemv8(st, RAYO_DTYPE_Q4_0, 1, 1000.0f);
    check_norm_gemv8(st, RAYO_DTYPE_Q8_0, 0, 1000.0f);
    check_norm_gemv8(st, RAYO_DTYPE_Q4_K, 1, 1000.0f);
    check_norm_gemv8(st, RAYO_DTYPE_Q6_K, 0, 1.0f);
    check_norm_gemv8(st, RAYO_DTYPE_Q6_K, 1, 1000.0f);
    check_rope_pair(st, RAYO_ROPE_NORM, 1);
    check_rope_pair(st, RAYO_ROPE_NEOX, 3);
    test_qkv_rope(st, seed);
    test_typed_matmul_batch(st, RAYO_PRECISION_STRICT, 37, 70, 96);
    test_typed_matmul_batch(st, RAYO_PRECISION_RELAXED, 37, 70, 96);
    test_matmul_half(st);
    test_failure_keeps_output(st);
    test_concurrency(st);
    int cubins = count_cubins(cache_dir);
    CHECK(cubins >= 4, "JIT cache: %d cubin files in %s", cubins, cache_dir);
    desc->fini(st);

    /* TF32 and the prompt's split-k products: a second state, from the
     * cache or the build's machine code this time */
    config_precision = "tf32";
    config_embedded = "yes";
    config_split_k = "yes";
    config_attn_block = "no";
    config_pdl = "no";
    config_fuse_rope = "no";
    st = NULL;
    CHECK(desc->init(&host, 0, &st) == RAYO_OK, "init (tf32): %s", last_error);
    if (st) {
        attention_block_agrees(st, seed);
        qkv_rope_agrees(st, seed);
        check_dependent_chain(st, config_pdl);
        /* the prompt's products split along k on sm_90 (prompt_split_k): a
         * TinyLlama layer's 128 x 2048 x 2048 (16 tiles, 8 slices), partial
         * tiles with a partial last slice (k = 2080: 33 k tiles in 7 slices) */
        test_typed_matmul_batch(st, RAYO_PRECISION_RELAXED, 128, 2048, 2048);
        test_typed_matmul_batch(st, RAYO_PRECISION_RELAXED, 130, 200, 2080);
        /* TF32 products (10-bit mantissas): about 1e-4 of the sum of |terms| */
        rayo_op_info tf32 = *rayo_op_by_id(RAYO_OP_MATMUL);
        tf32.tol_rel = 4e-3;
        check_matmul(st, 0, 512, 256, 96, 1.0f, 0.0f, &tf32);
        check_matmul(st, 0, 300, 200, 64, 1.0f, 1.0f, &tf32); /* tiled part + edges */
        /* transposed: wgmma on sm_90 (K-major copies), the fp32 path elsewhere */
        for (unsigned flags = 0; flags < 4; flags++) {
            check_matmul(st, flags, 256, 256, 64, 1.0f, 0.0f, &tf32);
            check_matmul(st, flags, 1000, 520, 132, 0.5f, 1.5f, &tf32); /* partial tiles, k % 32 != 0 */
        }
        for (unsigned flags = 0; flags < 3; flags++) /* n, m % 4 != 0: module matrix's transpose */
            check_matmul(st, flags, 130, 6, 4, 1.0f, 1.0f, &tf32);
        check_matmul(st, 0, 1024, 768, 512, 1.0f, 0.0f, &tf32); /* several tiles, every stage reused */
        desc->fini(st);
    }
    if (cache_dir[0]) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "warning: could not remove %s\n", cache_dir);
    }
    printf("%s: %d failures\n", argv[0], failures);
    return failures ? 1 : 0;
}
