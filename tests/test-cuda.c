/* test-cuda.c - the cuda plugin through its descriptor, with a host-services
 * table of our own (no core involved):
 *   - the descriptor (name, arch, rank, memory API, one entry per op);
 *   - the probe: a reason when no device can be used (then SKIP);
 *   - with a device: kernels against float64 references on fresh random
 *     inputs (elementwise, reductions with NaN, rows, norms without gamma,
 *     matmul in every transpose and in shapes that mix the tiled kernels with
 *     the edge kernel, gemv, transpose, bias_act), batches on device buffers
 *     at unaligned offsets, the TF32 path (precision = tf32), concurrent
 *     calls, a failing call that must leave the caller's output untouched,
 *     and the on-disk JIT cache.
 * rayo-conform covers every op and edge case; this test covers what only
 * the plugin's own interface shows.
 *   test-cuda [--probe]   --probe: print the probe's answer, exit 0 if a
 *                         device is usable, 77 if not.
 * RAYO_CUDA_PLUGIN names the plugin file (default: this build tree's). */
#define _POSIX_C_SOURCE 200809L
#include "rayo-plugin.h"

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

/* ---- the op list ----------------------------------------------------------- */
typedef struct op_meta {
    uint32_t id;
    const char *name;
    double tol_rel, tol_abs;
    int sum_scale;
} op_meta;

#define RAYO_OPS_BASE_ONLY /* the ops the cuda plugin registers */
static const op_meta op_list[] = {
#define RAYO_OP(ID, ENUM, NAME, SIG, TR, TA, SC, DOC) {ID, #NAME, TR, TA, RAYO_SCALE_##SC == RAYO_SCALE_SUM},
#define RAYO_SCALE_ELEM 0
#define RAYO_SCALE_SUM 1
#include "rayo-ops.h"
#undef RAYO_OP
};
#undef RAYO_OPS_BASE_ONLY
#define OP_COUNT (sizeof op_list / sizeof op_list[0])

static const op_meta *meta(uint32_t id)
{
    for (size_t i = 0; i < OP_COUNT; i++)
        if (op_list[i].id == id)
            return &op_list[i];
    return NULL;
}

/* ---- random inputs and judging --------------------------------------------- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(double lo, double hi)
{
    rng_state += 0x9e3779b97f4a7c15ull;
    uint64_t z = rng_state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) / 9007199254740992.0;
}

static float *floats(size_t n, double lo, double hi)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)uniform(lo, hi);
    return p;
}

/* |y - ref| <= tol_rel * scale + tol_abs, NaN matches NaN; a result equal to
 * the reference rounded to float passes. Returns the number of bad elements. */
static size_t judge(const char *what, double tol_rel, double tol_abs, const float *y, const double *ref,
                    const double *scale, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], e = fabs((double)y[i] - r);
        int ok;
        if (isnan(r) || isnan(y[i]))
            ok = isnan(r) && isnan(y[i]);
        else if (isinf(r) || isinf(y[i]))
            ok = (double)y[i] == r || y[i] == (float)r;
        else
            ok = y[i] == (float)r || e <= tol_rel * scale[i] + tol_abs;
        if (!ok && bad++ < 3)
            fprintf(stderr, "FAIL %s: element %zu: got %.9g, want %.9g (scale %.3g)\n", what, i, (double)y[i], r,
                    scale[i]);
    }
    if (bad)
        failures++;
    return bad;
}

/* ---- float64 references ----------------------------------------------------- */
static double ref_unary(uint32_t op, double x, double a, double b)
{
    switch (op) {
    case RAYO_OP_SCALE: return a * x;
    case RAYO_OP_RELU: return isnan(x) ? x : x > 0 ? x : 0;
    case RAYO_OP_LEAKY_RELU: return x > 0 ? x : a * x;
    case RAYO_OP_ELU: return x > 0 ? x : a * expm1(x);
    case RAYO_OP_SELU: return 1.0507009873554804934 * (x > 0 ? x : 1.6732632423543772848 * expm1(x));
    case RAYO_OP_SIGMOID: return 1 / (1 + exp(-x));
    case RAYO_OP_TANH: return tanh(x);
    case RAYO_OP_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
    case RAYO_OP_GELU_TANH: return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case RAYO_OP_SILU: return x / (1 + exp(-x));
    case RAYO_OP_MISH: return x * tanh(log1p(exp(x)));
    case RAYO_OP_HARDSWISH: return x * fmin(fmax(x + 3, 0), 6) / 6;
    case RAYO_OP_CLIP: return isnan(x) ? x : fmin(fmax(x, a), b);
    case RAYO_OP_EXP: return exp(x);
    case RAYO_OP_LOG: return log(x);
    case RAYO_OP_SQRT: return sqrt(x);
    case RAYO_OP_ABS: return fabs(x);
    default: return NAN;
    }
}

static double ref_binary(uint32_t op, double a, double b)
{
    switch (op) {
    case RAYO_OP_ADD: return a + b;
    case RAYO_OP_SUB: return a - b;
    case RAYO_OP_MUL: return a * b;
    case RAYO_OP_DIV: return a / b;
    case RAYO_OP_MAXIMUM: return isnan(a) || isnan(b) ? NAN : fmax(a, b);
    case RAYO_OP_MINIMUM: return isnan(a) || isnan(b) ? NAN : fmin(a, b);
    default: return NAN;
    }
}

/* ---- the plugin ----------------------------------------------------------------- */
static const rayo_plugin_descriptor *desc;

static rayo_status run(void *st, const rayo_call *c)
{
    for (size_t i = 0; i < desc->op_count; i++)
        if (desc->ops[i].op == c->op)
            return desc->ops[i].fn(st, c);
    return RAYO_E_UNSUPPORTED;
}

static void test_elementwise(void *st)
{
    static const uint32_t unary[] = {RAYO_OP_SCALE, RAYO_OP_RELU, RAYO_OP_LEAKY_RELU, RAYO_OP_ELU, RAYO_OP_SELU,
                                     RAYO_OP_SIGMOID, RAYO_OP_TANH, RAYO_OP_GELU, RAYO_OP_GELU_TANH, RAYO_OP_SILU,
                                     RAYO_OP_MISH, RAYO_OP_HARDSWISH, RAYO_OP_CLIP, RAYO_OP_EXP, RAYO_OP_LOG,
                                     RAYO_OP_SQRT, RAYO_OP_ABS};
    static const uint32_t binary[] = {RAYO_OP_ADD, RAYO_OP_SUB, RAYO_OP_MUL, RAYO_OP_DIV, RAYO_OP_MAXIMUM,
                                      RAYO_OP_MINIMUM};
    static const size_t sizes[] = {1, 3, 4, 5, 1000, 4099, 1 << 18};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *a = floats(n, -30, 30), *b = floats(n, -30, 30), *y = malloc(n * sizeof *y);
        double *ref = malloc(n * sizeof *ref), *scale = malloc(n * sizeof *scale);
        if (n > 10) { /* edge values */
            a[0] = NAN; a[1] = INFINITY; a[2] = -INFINITY; a[3] = -0.0f; a[4] = 1e-30f; a[5] = -1e-30f;
            a[6] = 88.5f; a[7] = -100.0f; a[8] = 1e-40f; a[9] = 3.4028235e38f; a[10] = -3.4028235e38f;
        }
        for (size_t u = 0; u < sizeof unary / sizeof unary[0]; u++) {
            uint32_t op = unary[u];
            const op_meta *mt = meta(op);
            float al = op == RAYO_OP_CLIP ? -2.5f : 0.7f, be = op == RAYO_OP_CLIP ? 3.5f : 0.0f;
            float *in = a;
            float *pos = NULL;
            if (op == RAYO_OP_LOG || op == RAYO_OP_SQRT) { /* mostly positive, log near 1 too */
                pos = floats(n, 0, 3);
                if (n > 8) { pos[0] = NAN; pos[1] = INFINITY; pos[2] = 0; pos[3] = -1; pos[4] = 1e-40f; pos[5] = 1.0001f; }
                in = pos;
            }
            rayo_call c = {.struct_size = sizeof(rayo_call), .op = op, .n = n, .alpha = al, .beta = be, .a = in, .y = y};
            memset(y, 0xff, n * sizeof *y);
            rayo_status rs = run(st, &c);
            CHECK(rs == RAYO_OK, "%s n=%zu: status %d: %s", mt->name, n, rs, last_error);
            for (size_t i = 0; i < n; i++) {
                ref[i] = ref_unary(op, in[i], al, be);
                scale[i] = fabs(ref[i]);
            }
            char what[64];
            snprintf(what, sizeof what, "%s n=%zu", mt->name, n);
            judge(what, mt->tol_rel, mt->tol_abs, y, ref, scale, n);
            free(pos);
        }
        for (size_t u = 0; u < sizeof binary / sizeof binary[0]; u++) {
            uint32_t op = binary[u];
            const op_meta *mt = meta(op);
            rayo_call c = {.struct_size = sizeof(rayo_call), .op = op, .n = n, .a = a, .b = b, .y = y};
            rayo_status rs = run(st, &c);
            CHECK(rs == RAYO_OK, "%s: status %d: %s", mt->name, rs, last_error);
            for (size_t i = 0; i < n; i++) {
                ref[i] = ref_binary(op, a[i], b[i]);
                scale[i] = fabs(ref[i]);
            }
            char what[64];
            snprintf(what, sizeof what, "%s n=%zu", mt->name, n);
            judge(what, mt->tol_rel, mt->tol_abs, y, ref, scale, n);
        }
        /* axpy, in place: y = 1.5 a + y */
        memcpy(y, b, n * sizeof *y);
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_AXPY, .n = n, .alpha = 1.5f, .a = a, .y = y};
        CHECK(run(st, &c) == RAYO_OK, "axpy: %s", last_error);
        for (size_t i = 0; i < n; i++) {
            ref[i] = 1.5 * a[i] + b[i];
            scale[i] = fabs(1.5 * a[i]) + fabs(b[i]);
        }
        judge("axpy", 1.2e-7, 0, y, ref, scale, n);
        free(a); free(b); free(y); free(ref); free(scale);
    }
}

static void test_reductions(void *st)
{
    static const size_t sizes[] = {1, 7, 256, 257, 100003, 1 << 21};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *a = floats(n, -2, 2), *b = floats(n, -2, 2);
        double sum = 0, dot = 0, l1 = 0, l2 = 0, mx = -INFINITY, mn = INFINITY, abs_sum = 0, abs_dot = 0;
        size_t arg = 0;
        for (size_t i = 0; i < n; i++) {
            sum += a[i]; abs_sum += fabs(a[i]);
            dot += (double)a[i] * b[i]; abs_dot += fabs((double)a[i] * b[i]);
            l1 += fabs(a[i]); l2 += (double)a[i] * a[i];
            if (a[i] > mx) { mx = a[i]; arg = i; }
            if (a[i] < mn) mn = a[i];
        }
        struct { uint32_t op; double ref, scale; } cases[] = {
            {RAYO_OP_SUM, sum, abs_sum}, {RAYO_OP_DOT, dot, abs_dot}, {RAYO_OP_NORM_L1, l1, l1},
            {RAYO_OP_NORM_L2, sqrt(l2), sqrt(l2)}, {RAYO_OP_MAX, mx, fabs(mx)}, {RAYO_OP_MIN, mn, fabs(mn)},
        };
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            float y = NAN;
            rayo_call c = {.struct_size = sizeof(rayo_call), .op = cases[k].op, .n = n, .a = a, .b = b, .y = &y};
            if (cases[k].op != RAYO_OP_DOT)
                c.b = NULL;
            const op_meta *mt = meta(cases[k].op);
            CHECK(run(st, &c) == RAYO_OK, "%s: %s", mt->name, last_error);
            char what[64];
            snprintf(what, sizeof what, "%s n=%zu", mt->name, n);
            judge(what, mt->tol_rel, mt->tol_abs, &y, &cases[k].ref, &cases[k].scale, 1);
        }
        size_t idx = 12345;
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ARGMAX, .n = n, .a = a, .y = &idx};
        CHECK(run(st, &c) == RAYO_OK && idx == arg, "argmax n=%zu: %zu, want %zu", n, idx, arg);
        if (n > 200) { /* the first NaN wins, and ties go to the first index */
            a[n - 3] = NAN; a[n - 1] = NAN; a[5] = 1e30f; a[150] = 1e30f;
            CHECK(run(st, &c) == RAYO_OK && idx == n - 3, "argmax with NaN: %zu, want %zu", idx, n - 3);
            a[n - 3] = a[n - 1] = 0;
            CHECK(run(st, &c) == RAYO_OK && idx == 5, "argmax tie: %zu, want 5", idx);
            float y = 0;
            a[n / 2] = NAN;
            rayo_call m = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MAX, .n = n, .a = a, .y = &y};
            CHECK(run(st, &m) == RAYO_OK && isnan(y), "max with a NaN: %g", (double)y);
        }
        free(a); free(b);
    }
}

static void test_rows(void *st)
{
    static const size_t shapes[][2] = {{1, 1}, {3, 7}, {64, 1000}, {1000, 33}, {2, 300001}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t m = shapes[s][0], n = shapes[s][1], mn = m * n;
        float *a = floats(mn, -10, 10), *g = floats(n, 0.5, 2), *bt = floats(n, -1, 1), *y = malloc(mn * sizeof *y);
        double *ref = malloc(mn * sizeof *ref), *scale = malloc(mn * sizeof *scale);
        for (int kind = 0; kind < 4; kind++) {
            uint32_t op = (uint32_t[]){RAYO_OP_SOFTMAX, RAYO_OP_LOG_SOFTMAX, RAYO_OP_LAYERNORM, RAYO_OP_RMSNORM}[kind];
            const op_meta *mt = meta(op);
            int no_gamma = kind == 2 && s % 2;
            rayo_call c = {.struct_size = sizeof(rayo_call), .op = op, .m = m, .n = n, .a = a, .y = y, .alpha = 1e-5f};
            if (kind >= 2) {
                c.b = no_gamma ? NULL : g;
                c.c = bt;
            }
            CHECK(run(st, &c) == RAYO_OK, "%s: %s", mt->name, last_error);
            for (size_t i = 0; i < m; i++) {
                const float *x = a + i * n;
                double mx = -INFINITY, se = 0, mean = 0, var = 0, ms = 0;
                for (size_t j = 0; j < n; j++) mx = fmax(mx, x[j]);
                for (size_t j = 0; j < n; j++) se += exp(x[j] - mx);
                for (size_t j = 0; j < n; j++) { mean += x[j]; ms += (double)x[j] * x[j]; }
                mean /= (double)n; ms /= (double)n;
                for (size_t j = 0; j < n; j++) var += (x[j] - mean) * (x[j] - mean);
                var /= (double)n;
                for (size_t j = 0; j < n; j++) {
                    double r;
                    double gj = (kind >= 2 && !no_gamma) ? g[j] : 1.0;
                    if (kind == 0) r = exp(x[j] - mx) / se;
                    else if (kind == 1) r = x[j] - mx - log(se);
                    else if (kind == 2) r = (x[j] - mean) / sqrt(var + 1e-5f) * gj + bt[j];
                    else r = x[j] / sqrt(ms + 1e-5f) * gj;
                    ref[i * n + j] = r;
                    scale[i * n + j] = fabs(r);
                }
            }
            char what[64];
            snprintf(what, sizeof what, "%s %zux%zu", mt->name, m, n);
            judge(what, mt->tol_rel, mt->tol_abs, y, ref, scale, mn);
        }
        free(a); free(g); free(bt); free(y); free(ref); free(scale);
    }
}

static void ref_matmul(unsigned flags, size_t m, size_t n, size_t k, float alpha, const float *A, const float *B,
                       float beta, const float *C, double *ref, double *scale)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0, t = 0;
            for (size_t p = 0; p < k; p++) {
                double av = (flags & RAYO_TRANS_A) ? A[p * m + i] : A[i * k + p];
                double bv = (flags & RAYO_TRANS_B) ? B[j * k + p] : B[p * n + j];
                s += av * bv;
                t += fabs(av * bv);
            }
            s *= alpha;
            t *= fabs(alpha);
            if (beta != 0) {
                s += (double)beta * C[i * n + j];
                t += fabs((double)beta * C[i * n + j]);
            }
            ref[i * n + j] = s;
            scale[i * n + j] = t;
        }
}

/* tol: the contract (fp32) or a TF32 bound */
static void check_matmul(void *st, unsigned flags, size_t m, size_t n, size_t k, float alpha, float beta,
                         double tol_rel)
{
    float *A = floats(m * k, -1, 1), *B = floats(k * n, -1, 1), *C = floats(m * n, -1, 1);
    float *y = malloc(m * n * sizeof *y);
    double *ref = malloc(m * n * sizeof *ref), *scale = malloc(m * n * sizeof *scale);
    memcpy(y, C, m * n * sizeof *y);
    ref_matmul(flags, m, n, k, alpha, A, B, beta, C, ref, scale);
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
                   .a = A, .b = B, .y = y};
    CHECK(run(st, &c) == RAYO_OK, "matmul: %s", last_error);
    char what[96];
    snprintf(what, sizeof what, "matmul flags=%u %zux%zux%zu alpha=%g beta=%g", flags, m, n, k, (double)alpha,
             (double)beta);
    judge(what, tol_rel, 0, y, ref, scale, m * n);
    free(A); free(B); free(C); free(y); free(ref); free(scale);
}

static void test_matrix(void *st)
{
    for (unsigned flags = 0; flags < 4; flags++) {
        check_matmul(st, flags, 7, 5, 3, 1.0f, 0.0f, 1e-5);
        check_matmul(st, flags, 130, 260, 72, 0.5f, 2.0f, 1e-5);   /* tiled + both edges */
        check_matmul(st, flags, 256, 128, 64, 1.0f, 0.0f, 1e-5);   /* tiled only */
        check_matmul(st, flags, 129, 131, 33, 1.0f, -1.0f, 1e-5);  /* K not a multiple of 8 */
    }
    check_matmul(st, 0, 384, 256, 160, 1.0f, 0.0f, 1e-5); /* K % 16 == 0 */
    check_matmul(st, 0, 5, 6, 0, 1.0f, 0.5f, 1e-5);       /* k = 0: C = beta C */

    /* gemv both ways */
    for (unsigned flags = 0; flags < 2; flags++) {
        size_t m = 1000, n = 301;
        float *A = floats(m * n, -1, 1), *x = floats(flags ? m : n, -1, 1), *y0 = floats(flags ? n : m, -1, 1);
        size_t ny = flags ? n : m;
        float *y = malloc(ny * sizeof *y);
        double *ref = malloc(ny * sizeof *ref), *scale = malloc(ny * sizeof *scale);
        memcpy(y, y0, ny * sizeof *y);
        for (size_t o = 0; o < ny; o++) {
            double s = 0, t = 0;
            size_t len = flags ? m : n;
            for (size_t i = 0; i < len; i++) {
                double av = flags ? A[i * n + o] : A[o * n + i];
                s += av * x[i];
                t += fabs(av * x[i]);
            }
            ref[o] = 2 * s + 0.5 * y0[o];
            scale[o] = 2 * t + fabs(0.5 * y0[o]);
        }
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_GEMV, .flags = flags, .m = m, .n = n, .alpha = 2, .beta = 0.5f, .a = A,
                       .b = x, .y = y};
        CHECK(run(st, &c) == RAYO_OK, "gemv: %s", last_error);
        judge(flags ? "gemv transposed" : "gemv", 1e-5, 0, y, ref, scale, ny);
        free(A); free(x); free(y0); free(y); free(ref); free(scale);
    }

    /* transpose and bias_act */
    size_t m = 77, n = 1031;
    float *a = floats(m * n, -4, 4), *bias = floats(n, -1, 1), *y = malloc(m * n * sizeof *y);
    double *ref = malloc(m * n * sizeof *ref), *scale = malloc(m * n * sizeof *scale);
    rayo_call t = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_TRANSPOSE, .m = m, .n = n, .a = a, .y = y};
    CHECK(run(st, &t) == RAYO_OK, "transpose: %s", last_error);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            ref[j * m + i] = a[i * n + j], scale[j * m + i] = 0;
    judge("transpose", 0, 0, y, ref, scale, m * n);
    for (unsigned act = 0; act < RAYO_ACT_LIMIT; act++) {
        static const uint32_t as_op[] = {0, RAYO_OP_RELU, RAYO_OP_GELU, RAYO_OP_SILU, RAYO_OP_TANH, RAYO_OP_SIGMOID};
        rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_BIAS_ACT, .flags = act, .m = m, .n = n, .a = a, .b = bias, .y = y};
        CHECK(run(st, &c) == RAYO_OK, "bias_act %u: %s", act, last_error);
        for (size_t i = 0; i < m * n; i++) {
            double v = (double)a[i] + bias[i % n];
            ref[i] = act ? ref_unary(as_op[act], v, 0, 0) : v;
            scale[i] = fabs(ref[i]);
        }
        char what[32];
        snprintf(what, sizeof what, "bias_act %u", act);
        judge(what, 2e-6, 1e-7, y, ref, scale, m * n);
    }
    rayo_call bad = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_BIAS_ACT, .flags = RAYO_ACT_LIMIT, .m = m, .n = n, .a = a, .b = bias, .y = y};
    CHECK(run(st, &bad) == RAYO_E_UNSUPPORTED, "bias_act with an unknown activation must be unsupported");
    rayo_call badmm = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .flags = 4, .m = 2, .n = 2, .k = 2, .a = a, .b = a, .y = y};
    CHECK(run(st, &badmm) == RAYO_E_UNSUPPORTED, "matmul with an unknown flag must be unsupported");
    free(a); free(bias); free(y); free(ref); free(scale);
}

/* Device buffers and one batch: unaligned offsets (scalar kernels), a chain
 * of ops reading each other's results, a reduction. */
static void test_batches(void *st)
{
    const rayo_memory_api *mem = desc->memory;
    size_t n = 100001;
    float *a = floats(n, -1, 1), *b = floats(n, -1, 1), *y = malloc(n * sizeof *y);
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
    rayo_dev_call add = {.op = RAYO_OP_ADD, .n = n, .a = {ba, 4}, .b = {bb, 0}, .y = {by, 4}};
    rayo_dev_call mul = {.op = RAYO_OP_MUL, .n = n, .a = {by, 4}, .b = {bb, 0}, .y = {by, 4}};
    rayo_dev_call sum = {.op = RAYO_OP_SUM, .n = n, .a = {by, 4}, .y = {by, 0}};
    CHECK(mem->batch_record(st, batch, &add) == RAYO_OK, "record add");
    CHECK(mem->batch_record(st, batch, &mul) == RAYO_OK, "record mul");
    CHECK(mem->batch_record(st, batch, &sum) == RAYO_OK, "record sum");
    CHECK(mem->batch_submit(st, batch) == RAYO_OK, "submit: %s", last_error);
    CHECK(mem->batch_record(st, batch, &add) == RAYO_E_STATE, "recording into a submitted batch");
    CHECK(mem->batch_wait(st, batch, UINT64_MAX) == RAYO_OK, "wait: %s", last_error);
    mem->batch_free(st, batch);
    float total = 0;
    CHECK(mem->buffer_read(st, by, 4, y, n * 4) == RAYO_OK, "read");
    CHECK(mem->buffer_read(st, by, 0, &total, 4) == RAYO_OK, "read");
    double *ref = malloc(n * sizeof *ref), *scale = malloc(n * sizeof *scale), s = 0, t = 0;
    for (size_t i = 0; i < n; i++) {
        float v = (a[i] + b[i]) * b[i];
        ref[i] = v;
        scale[i] = fabs(v);
        s += v;
        t += fabs(v);
    }
    judge("batch add, mul", 0, 0, y, ref, scale, n);
    judge("batch sum", 1e-5, 0, &total, &s, &t, 1);
    /* a batch that is never submitted can be freed */
    CHECK(mem->batch_begin(st, &batch) == RAYO_OK, "batch_begin");
    mem->batch_free(st, batch);
    mem->buffer_free(st, ba);
    mem->buffer_free(st, bb);
    mem->buffer_free(st, by);
    free(a); free(b); free(y); free(ref); free(scale);
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
        if (run(w->st, &c) != RAYO_OK)
            w->bad++;
        for (size_t i = 0; i < n; i++)
            if (y[i] != 2 * a[i])
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
    CHECK(desc->op_count == OP_COUNT, "%zu ops, the list has %zu", desc->op_count, (size_t)OP_COUNT);

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
    test_batches(st);
    test_failure_keeps_output(st);
    test_concurrency(st);
    int cubins = count_cubins(cache_dir);
    CHECK(cubins >= 4, "JIT cache: %d cubin files in %s", cubins, cache_dir);
    desc->fini(st);

    /* TF32: a second state, from the cache this time */
    config_precision = "tf32";
    st = NULL;
    CHECK(desc->init(&host, 0, &st) == RAYO_OK, "init (tf32): %s", last_error);
    if (st) {
        check_matmul(st, 0, 512, 256, 96, 1.0f, 0.0f, 4e-3);
        check_matmul(st, 0, 300, 200, 64, 1.0f, 1.0f, 4e-3); /* tiled part + edges */
        check_matmul(st, 3, 256, 256, 64, 1.0f, 0.0f, 1e-5); /* transposed: the fp32 path */
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
