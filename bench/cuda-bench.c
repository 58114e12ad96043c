/* SPDX-License-Identifier: MIT */
/* cuda-bench - benchmarks of the cuda backend through the public API.
 *
 *   cuda-bench [--quick] [--sgemm-kernels LIST] [--tf32-kernels LIST]
 *   cuda-bench --bandwidth [--backend NAME]
 *   cuda-bench --shapes
 *   cuda-bench --half [--mma16-shapes LIST] [--mma16-strict-shapes LIST]
 *   cuda-bench --half-wgmma
 *
 * Measures, on device buffers (one batch of R identical calls, submitted and
 * waited for; the median of several batches):
 *   - sgemm fp32, n = 1024, 2048, 4096, 8192, for each sgemm kernel;
 *   - TF32 gemm (precision = tf32) for each tf32 kernel (mma.sync, the
 *     wgmma path off) and each wgmma kernel (sm_90: C = A B, then A B^T);
 *   - elementwise and row ops on 2^26 floats, as bytes moved per second;
 * and on host memory:
 *   - the round trip of add on 1024 floats (rayo_run_on "cuda": copy in,
 *     kernel, copy out), median of 2000 calls.
 * --bandwidth measures instead the memory-bound ops (row ops, gemv, transcendentals) on 2^27
 * floats (512 MiB each way): scale (the copy reference), the row ops and
 * bias_act at rows of 64 ... 32000, the transcendentals, and gemv 11008 x
 * 4096 in both orientations (GB/s: bytes read + written), on the cuda
 * backend or the one --backend names (vulkan: the same figures).
 * --shapes measures fp32 matmuls of small and skinny shapes
 * (m = 1, n = 1, few tiles with a long k, odd sizes, transposes) as TFLOP/s;
 * bench/torch-small-matmul.py times cuBLAS on the shapes it lists.
 * --half measures instead f16 x f16 and bf16 x bf16 matmul (C in f32) at
 * 4096^3, 2048^3 and 1024^3: relaxed through wgmma (sm_90; A B, A B^T, and
 * at 4096 the transposed A too), relaxed through the plain mma16 kernels
 * (wgmma_half = no; each shape of --mma16-shapes, default the configured
 * one; A B and A B^T) and strict (the _b256 ones, each of
 * --mma16-strict-shapes).  --half-wgmma: the wgmma figures of --half only.
 * Every matmul result is spot-checked against float64 dot products.
 * Output: a table, and one "csv,..." line per figure for scripts. */
#define _POSIX_C_SOURCE 200809L
#include "rayo.h"
#include "rayo-dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char *backend = "cuda"; /* --backend */

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static int die(const char *what, rayo_status s)
{
    fprintf(stderr, "cuda-bench: %s: %s: %s\n", what, rayo_strerror(s), rayo_last_error());
    exit(1);
}

static rayo_context *open_with(const char *settings)
{
    rayo_options o = {.struct_size = sizeof o, .settings = settings, .no_config_files = 1};
    rayo_context *ctx;
    rayo_status s = rayo_open(&ctx, &o);
    if (s != RAYO_OK)
        die("rayo_open", s);
    return ctx;
}

static rayo_buffer *device_buffer(rayo_context *ctx, size_t floats, int fill)
{
    rayo_buffer *b;
    rayo_status s = rayo_buffer_create(ctx, backend, floats * sizeof(float), &b);
    if (s != RAYO_OK)
        die("rayo_buffer_create", s);
    if (fill) {
        size_t chunk = 1 << 22;
        float *tmp = malloc(chunk * sizeof *tmp);
        for (size_t off = 0; off < floats; off += chunk) {
            size_t n = floats - off < chunk ? floats - off : chunk;
            for (size_t i = 0; i < n; i++)
                tmp[i] = frand();
            if ((s = rayo_buffer_write(b, off * sizeof(float), tmp, n * sizeof(float))) != RAYO_OK)
                die("rayo_buffer_write", s);
        }
        free(tmp);
    }
    return b;
}

/* Seconds per call: `reps` copies of the call in one batch, median of `rounds`. */
static double time_batch(rayo_context *ctx, const rayo_batch_call *call, int reps, int rounds)
{
    double t[16];
    for (int r = 0; r < rounds + 1; r++) {
        rayo_batch *b;
        rayo_status s = rayo_batch_create(ctx, backend, &b);
        for (int i = 0; i < reps && s == RAYO_OK; i++)
            s = rayo_batch_record(b, call);
        double t0 = now_s();
        if (s == RAYO_OK)
            s = rayo_batch_submit(b);
        if (s == RAYO_OK)
            s = rayo_batch_wait(b, UINT64_MAX);
        double t1 = now_s();
        rayo_batch_destroy(b);
        if (s != RAYO_OK)
            die("batch", s);
        if (r > 0) /* the first round warms up (JIT, caches, clocks) */
            t[r - 1] = (t1 - t0) / reps;
    }
    return median(t, rounds);
}

static void report(const char *group, const char *name, size_t size, double value, const char *unit,
                   const char *note)
{
    printf("%-8s %-28s %6zu %12.2f %-8s %s\n", group, name, size, value, unit, note ? note : "");
    printf("csv,%s,%s,%zu,%.4f,%s\n", group, name, size, value, unit);
    fflush(stdout);
}

/* Largest |C - ref| / sum|terms| over 64 sampled elements of C = A B
 * (B transposed: A B^T). */
static double spot_check(rayo_buffer *A, rayo_buffer *B, rayo_buffer *C, size_t n, int trans_b)
{
    float *row = malloc(n * sizeof *row), *bm = malloc(n * n * sizeof *bm), c;
    double worst = 0;
    if (!row || !bm || rayo_buffer_read(B, 0, bm, n * n * sizeof(float)) != RAYO_OK) {
        free(row);
        free(bm);
        return NAN;
    }
    for (int s = 0; s < 64; s++) {
        size_t i = (size_t)(s * 7919) % n, j = (size_t)(s * 104729 + 13) % n;
        rayo_buffer_read(A, i * n * sizeof(float), row, n * sizeof(float));
        rayo_buffer_read(C, (i * n + j) * sizeof(float), &c, sizeof c);
        double ref = 0, terms = 0;
        for (size_t p = 0; p < n; p++) {
            double b = bm[trans_b ? j * n + p : p * n + j];
            ref += (double)row[p] * b;
            terms += fabs((double)row[p] * b);
        }
        double e = fabs(c - ref) / (terms > 0 ? terms : 1);
        if (!(e <= worst))
            worst = e;
    }
    free(row);
    free(bm);
    return worst;
}

/* A wgmma kernel (wg_*) is benchmarked on C = A B (B transposed into
 * scratch first) and on C = A B^T (its operands as they come); a tf32_*
 * one with the wgmma path off. */
static void bench_gemm(const char *group, const char *precision, const char *key, const char *kernel,
                       const size_t *sizes, int nsizes, unsigned flags)
{
    char settings[256];
    int wg = !strncmp(kernel, "wg_", 3);
    snprintf(settings, sizeof settings, "[backend.cuda]\nprecision = %s\n%s = %s\n%s", precision,
             wg ? "wgmma_kernel" : key, kernel, !strcmp(key, "tf32_kernel") && !wg ? "wgmma = no\n" : "");
    rayo_context *ctx = open_with(settings);
    char name[64];
    snprintf(name, sizeof name, "%s%s", kernel, flags & RAYO_TRANS_B ? " B^T" : "");
    for (int s = 0; s < nsizes; s++) {
        size_t n = sizes[s];
        rayo_buffer *A = device_buffer(ctx, n * n, 1), *B = device_buffer(ctx, n * n, 1);
        rayo_buffer *C = device_buffer(ctx, n * n, 0);
        rayo_batch_call c = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = n, .n = n, .k = n,
                             .alpha = 1, .beta = 0, .a = {A, 0}, .b = {B, 0}, .y = {C, 0}};
        double flops = 2.0 * (double)n * n * n;
        int reps = flops > 2e11 ? 3 : flops > 2e10 ? 10 : 40;
        double t = time_batch(ctx, &c, reps, 5);
        char note[64];
        snprintf(note, sizeof note, "max err %.1e (of sum|terms|)", spot_check(A, B, C, n, (flags & RAYO_TRANS_B) != 0));
        report(group, name, n, flops / t * 1e-12, "TFLOP/s", note);
        rayo_buffer_destroy(A);
        rayo_buffer_destroy(B);
        rayo_buffer_destroy(C);
    }
    rayo_close(ctx);
}

/* ---- --half: f16 x f16 and bf16 x bf16 matmul ---------------------------- */
static rayo_buffer *half_buffer(rayo_context *ctx, rayo_dtype dt, size_t n)
{
    rayo_buffer *b;
    uint16_t *tmp = malloc(n * sizeof *tmp);
    rayo_status s = tmp ? rayo_buffer_create(ctx, backend, n * sizeof *tmp, &b) : RAYO_E_NOMEM;
    if (s != RAYO_OK)
        die("rayo_buffer_create", s);
    for (size_t i = 0; i < n; i++)
        tmp[i] = dt == RAYO_DTYPE_BF16 ? rayo_f32_to_bf16(frand()) : rayo_f32_to_f16(frand());
    if ((s = rayo_buffer_write(b, 0, tmp, n * sizeof *tmp)) != RAYO_OK)
        die("rayo_buffer_write", s);
    free(tmp);
    return b;
}

static float half_value(rayo_dtype dt, uint16_t h)
{
    return dt == RAYO_DTYPE_BF16 ? rayo_bf16_to_f32(h) : rayo_f16_to_f32(h);
}

/* Largest |C - ref| / sum|terms| over 64 sampled elements of C = op(A) op(B). */
static double half_check(rayo_dtype dt, uint32_t flags, rayo_buffer *A, rayo_buffer *B, rayo_buffer *C, size_t n)
{
    uint16_t *a = malloc(n * n * 2), *b = malloc(n * n * 2);
    double worst = 0;
    int ta = (flags & RAYO_TRANS_A) != 0, tb = (flags & RAYO_TRANS_B) != 0;
    if (!a || !b || rayo_buffer_read(A, 0, a, n * n * 2) != RAYO_OK || rayo_buffer_read(B, 0, b, n * n * 2) != RAYO_OK)
        worst = NAN;
    for (int s = 0; s < 64 && worst == worst; s++) {
        size_t i = (size_t)(s * 7919) % n, j = (size_t)(s * 104729 + 13) % n;
        float c;
        rayo_buffer_read(C, (i * n + j) * sizeof(float), &c, sizeof c);
        double ref = 0, terms = 0;
        for (size_t p = 0; p < n; p++) {
            double t = (double)half_value(dt, a[ta ? p * n + i : i * n + p]) *
                       half_value(dt, b[tb ? j * n + p : p * n + j]);
            ref += t;
            terms += fabs(t);
        }
        double e = fabs(c - ref) / (terms > 0 ? terms : 1);
        if (!(e <= worst))
            worst = e;
    }
    free(a);
    free(b);
    return worst;
}

/* shape: "wgmma" (sm_90: the warpgroup MMA path of relaxed calls), or an
 * mma16 shape (the mma.sync kernels, wgmma_half = no) */
static void bench_half(rayo_dtype dt, uint32_t flags, uint32_t precision, const char *shape, size_t n)
{
    char settings[256], name[64];
    if (!strcmp(shape, "wgmma"))
        snprintf(settings, sizeof settings, "[backend.cuda]\nwgmma_half = yes\n");
    else
        snprintf(settings, sizeof settings, "[backend.cuda]\nwgmma_half = no\n%s = %s\n",
                 precision == RAYO_PRECISION_STRICT ? "mma16_strict_kernel" : "mma16_kernel", shape);
    rayo_context *ctx = open_with(settings);
    rayo_buffer *A = half_buffer(ctx, dt, n * n), *B = half_buffer(ctx, dt, n * n), *C = device_buffer(ctx, n * n, 0);
    rayo_batch_call c = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_MATMUL, .flags = flags, .m = n,
                         .n = n, .k = n, .alpha = 1, .beta = 0, .a = {A, 0}, .b = {B, 0}, .y = {C, 0},
                         .dtypes = RAYO_DTYPES(dt, dt, 0, RAYO_DTYPE_F32), .precision = precision};
    double flops = 2.0 * (double)n * n * n;
    int reps = flops > 2e11 ? 10 : flops > 2e10 ? 20 : 80;
    double t = time_batch(ctx, &c, reps, 5);
    char note[64];
    snprintf(note, sizeof note, "max err %.1e (of sum|terms|)", half_check(dt, flags, A, B, C, n));
    snprintf(name, sizeof name, "%s %c%c %s %s", rayo_dtype_name(dt), flags & RAYO_TRANS_A ? 't' : 'n',
             flags & RAYO_TRANS_B ? 't' : 'n',
             precision == RAYO_PRECISION_STRICT ? "strict" : "relaxed", shape);
    report("half", name, n, flops / t * 1e-12, "TFLOP/s", note);
    rayo_buffer_destroy(A);
    rayo_buffer_destroy(B);
    rayo_buffer_destroy(C);
    rayo_close(ctx);
}

/* A B for each shape of a comma-separated list (NULL: the configured one). */
static void bench_half_shapes(rayo_dtype dt, uint32_t precision, const char *kernels, size_t n)
{
    char tmp[256], *save = NULL;
    snprintf(tmp, sizeof tmp, "%s", kernels ? kernels : "auto");
    for (char *sh = strtok_r(tmp, ",", &save); sh; sh = strtok_r(NULL, ",", &save))
        bench_half(dt, 0, precision, sh, n);
}

/* wgmma_only (--half-wgmma): the wgmma figures only */
static void bench_halves(const char *kernels, const char *strict_kernels, int wgmma_only)
{
    static const rayo_dtype dts[] = {RAYO_DTYPE_F16, RAYO_DTYPE_BF16};
    static const size_t sizes[] = {4096, 2048, 1024};
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 3; s++) {
            for (uint32_t flags = 0; flags < 4; flags++) /* every layout through wgmma (sm_90) */
                if (flags == RAYO_TRANS_B || sizes[s] == 4096 || flags == 0)
                    bench_half(dts[d], flags, RAYO_PRECISION_RELAXED, "wgmma", sizes[s]);
            if (wgmma_only)
                continue;
            bench_half_shapes(dts[d], RAYO_PRECISION_RELAXED, kernels, sizes[s]);
            bench_half(dts[d], RAYO_TRANS_B, RAYO_PRECISION_RELAXED, "auto", sizes[s]);
            bench_half_shapes(dts[d], RAYO_PRECISION_STRICT, strict_kernels, sizes[s]);
        }
}

/* bytes: moved per element (reads + writes) */
static void bench_stream(rayo_context *ctx, const char *name, uint32_t op, size_t n, size_t m, double bytes_per,
                         rayo_buffer *a, rayo_buffer *b, rayo_buffer *y)
{
    rayo_batch_call c = {.struct_size = sizeof(rayo_batch_call), .op = op, .n = n, .m = m, .alpha = 0.5f, .beta = 1.5f, .a = {a, 0}, .y = {y, 0}};
    if (op == RAYO_OP_ADD || op == RAYO_OP_DOT || op == RAYO_OP_MUL)
        c.b = (rayo_operand){b, 0};
    if (op == RAYO_OP_CLIP)
        c.alpha = -0.5f, c.beta = 0.5f;
    double t = time_batch(ctx, &c, 20, 5);
    size_t elems = m ? m * n : n;
    report("stream", name, elems, bytes_per * (double)elems / t * 1e-9, "GB/s", NULL);
}

/* Largest |y - ref| / (max |ref| of the row) over rows 0, m/2 and m-1 of a
 * row op (gamma = beta = the first n floats of b), ref in float64: the
 * rows a grid-stride loop reaches last are checked too. */
static double check_rows(uint32_t op, uint32_t flags, size_t m, size_t n, float eps, rayo_buffer *a, rayo_buffer *b,
                         rayo_buffer *y)
{
    float *x = malloc(n * sizeof *x), *g = malloc(n * sizeof *g), *out = malloc(n * sizeof *out);
    double *ref = malloc(n * sizeof *ref), worst = 0;
    size_t rows[3] = {0, m / 2, m - 1};
    if (!x || !g || !out || !ref || rayo_buffer_read(b, 0, g, n * sizeof *g) != RAYO_OK)
        worst = NAN;
    for (int r = 0; r < 3 && worst == worst; r++) {
        size_t off = rows[r] * n * sizeof(float);
        if (rayo_buffer_read(a, off, x, n * sizeof *x) != RAYO_OK ||
            rayo_buffer_read(y, off, out, n * sizeof *out) != RAYO_OK) {
            worst = NAN;
            break;
        }
        double mx = -INFINITY, s = 0, mean = 0, scale = 0;
        for (size_t j = 0; j < n; j++)
            mx = x[j] > mx ? x[j] : mx;
        if (op == RAYO_OP_SOFTMAX || op == RAYO_OP_LOG_SOFTMAX) {
            for (size_t j = 0; j < n; j++)
                s += exp(x[j] - mx);
            for (size_t j = 0; j < n; j++)
                ref[j] = op == RAYO_OP_SOFTMAX ? exp(x[j] - mx) / s : x[j] - mx - log(s);
        } else if (op == RAYO_OP_LAYERNORM || op == RAYO_OP_RMSNORM) {
            if (op == RAYO_OP_LAYERNORM) {
                for (size_t j = 0; j < n; j++)
                    mean += x[j];
                mean /= (double)n;
            }
            for (size_t j = 0; j < n; j++)
                s += (x[j] - mean) * (x[j] - mean);
            double rstd = 1 / sqrt(s / (double)n + eps);
            for (size_t j = 0; j < n; j++)
                ref[j] = (x[j] - mean) * rstd * g[j] + (op == RAYO_OP_LAYERNORM ? g[j] : 0);
        } else { /* bias_act, none or gelu */
            for (size_t j = 0; j < n; j++) {
                double v = (double)x[j] + g[j];
                ref[j] = flags == RAYO_ACT_GELU ? v * 0.5 * erfc(-v / sqrt(2.0)) : v;
            }
        }
        for (size_t j = 0; j < n; j++)
            scale = fabs(ref[j]) > scale ? fabs(ref[j]) : scale;
        for (size_t j = 0; j < n; j++) {
            double e = fabs(out[j] - ref[j]) / (scale > 0 ? scale : 1);
            if (!(e <= worst))
                worst = e;
        }
    }
    free(x);
    free(g);
    free(out);
    free(ref);
    return worst;
}

static void bench_rows(rayo_context *ctx, const char *name, uint32_t op, size_t n, size_t total, rayo_buffer *a,
                       rayo_buffer *b, rayo_buffer *y, uint32_t flags)
{
    size_t m = total / n;
    rayo_batch_call c = {.struct_size = sizeof(rayo_batch_call), .op = op, .n = n, .m = m, .flags = flags,
                         .alpha = 1e-5f, .a = {a, 0}, .y = {y, 0}};
    if (op == RAYO_OP_LAYERNORM || op == RAYO_OP_RMSNORM || op == RAYO_OP_BIAS_ACT)
        c.b = (rayo_operand){b, 0}; /* gamma (or bias): n floats */
    if (op == RAYO_OP_LAYERNORM)
        c.c = (rayo_operand){b, 0};
    double t = time_batch(ctx, &c, 20, 5);
    char what[64], note[64];
    snprintf(what, sizeof what, "%s %zux%zu", name, m, n);
    snprintf(note, sizeof note, "max err %.1e (of the row's max)", check_rows(op, flags, m, n, c.alpha, a, b, y));
    report("rows", what, n, 8.0 * (double)(m * n) / t * 1e-9, "GB/s", note);
}

static void bench_gemv(rayo_context *ctx, size_t m, size_t n, uint32_t flags, rayo_buffer *a, rayo_buffer *x,
                       rayo_buffer *y)
{
    rayo_batch_call c = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_GEMV, .m = m, .n = n, .flags = flags,
                         .alpha = 1, .beta = 0, .a = {a, 0}, .b = {x, 0}, .y = {y, 0}};
    double t = time_batch(ctx, &c, 20, 5);
    size_t ylen = flags & RAYO_TRANS_A ? n : m, xlen = flags & RAYO_TRANS_A ? m : n;
    char what[64];
    snprintf(what, sizeof what, "gemv %zux%zu%s", m, n, flags & RAYO_TRANS_A ? " trans_a" : "");
    report("gemv", what, m * n, 4.0 * (double)(m * n + xlen + ylen) / t * 1e-9, "GB/s", NULL);
}

static void bench_bandwidth(rayo_context *ctx)
{
    size_t total = (size_t)1 << 27;
    rayo_buffer *a = device_buffer(ctx, total, 1), *b = device_buffer(ctx, total, 1), *y = device_buffer(ctx, total, 0);
    bench_stream(ctx, "scale (copy)", RAYO_OP_SCALE, total, 0, 8, a, b, y);
    static const struct { const char *name; uint32_t op; } ew[] = {
        {"gelu", RAYO_OP_GELU}, {"sigmoid", RAYO_OP_SIGMOID}, {"silu", RAYO_OP_SILU}, {"tanh", RAYO_OP_TANH}};
    for (size_t i = 0; i < sizeof ew / sizeof ew[0]; i++)
        bench_stream(ctx, ew[i].name, ew[i].op, total, 0, 8, a, b, y);
    static const struct { const char *name; uint32_t op, flags; } rows[] = {
        {"softmax", RAYO_OP_SOFTMAX, 0}, {"log_softmax", RAYO_OP_LOG_SOFTMAX, 0},
        {"layernorm", RAYO_OP_LAYERNORM, 0}, {"rmsnorm", RAYO_OP_RMSNORM, 0},
        {"bias_act gelu", RAYO_OP_BIAS_ACT, RAYO_ACT_GELU}, {"bias_act none", RAYO_OP_BIAS_ACT, RAYO_ACT_NONE}};
    static const size_t cols[] = {64, 1024, 4096, 32000};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (size_t j = 0; j < sizeof cols / sizeof cols[0]; j++)
            bench_rows(ctx, rows[i].name, rows[i].op, cols[j], total, a, b, y, rows[i].flags);
    static const size_t more_cols[] = {8192, 16384, 65536}; /* cuda: 1, 2 and 8 CTAs per row */
    for (size_t j = 0; j < sizeof more_cols / sizeof more_cols[0]; j++) {
        bench_rows(ctx, "softmax", RAYO_OP_SOFTMAX, more_cols[j], total, a, b, y, 0);
        bench_rows(ctx, "rmsnorm", RAYO_OP_RMSNORM, more_cols[j], total, a, b, y, 0);
    }
    bench_gemv(ctx, 11008, 4096, 0, a, b, y);
    bench_gemv(ctx, 11008, 4096, RAYO_TRANS_A, a, b, y);
    rayo_buffer_destroy(a);
    rayo_buffer_destroy(b);
    rayo_buffer_destroy(y);
}

/* m x n x k and the transposes ("nt": B transposed) */
static const struct shape { size_t m, n, k; const char *tr; } shapes[] = {
    {1024, 1024, 1024, "nn"}, {1024, 1024, 1024, "tn"}, {1024, 1024, 1024, "nt"}, {1024, 1024, 1024, "tt"},
    {2048, 2048, 2048, "nn"}, {512, 512, 4096, "nn"}, {4096, 128, 4096, "nn"}, {1000, 1000, 1000, "nn"},
    {1000, 1000, 1000, "tt"}, {500, 480, 520, "nn"}, {1536, 1536, 1536, "nn"},
    {1, 4096, 4096, "nn"}, {1, 4096, 4096, "nt"}, {4096, 1, 4096, "nn"}, {4096, 1, 4096, "tn"},
    {4096, 4096, 64, "nn"},
};

/* group "shape": the default kernels; "shape-k8" (the 1024 shapes only):
 * sgemm_kernel = sgemm_nn_k8_async, so every transpose runs its k8 kernel */
static void bench_shapes(const char *group)
{
    int k8 = strcmp(group, "shape") != 0;
    rayo_context *ctx = open_with(k8 ? "[backend.cuda]\nsgemm_kernel = sgemm_nn_k8_async\n" : NULL);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct shape *sh = &shapes[i];
        if (k8 && sh->n != 1024)
            continue;
        rayo_buffer *A = device_buffer(ctx, sh->m * sh->k, 1), *B = device_buffer(ctx, sh->k * sh->n, 1);
        rayo_buffer *C = device_buffer(ctx, sh->m * sh->n, 0);
        uint32_t flags = (sh->tr[0] == 't' ? RAYO_TRANS_A : 0) | (sh->tr[1] == 't' ? RAYO_TRANS_B : 0);
        rayo_batch_call c = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_MATMUL, .m = sh->m, .n = sh->n,
                             .k = sh->k, .flags = flags, .alpha = 1, .beta = 0, .a = {A, 0}, .b = {B, 0}, .y = {C, 0}};
        /* about 2 ms a batch: at 40 TFLOP/s or 3 TB/s, whichever is slower */
        double flops = 2.0 * (double)sh->m * sh->n * sh->k;
        double bytes = 4.0 * ((double)sh->m * sh->k + (double)sh->k * sh->n + (double)sh->m * sh->n);
        double est = flops / 40e12 > bytes / 3e12 ? flops / 40e12 : bytes / 3e12;
        int reps = (int)(2e-3 / est);
        reps = reps < 3 ? 3 : reps > 200 ? 200 : reps;
        double t = time_batch(ctx, &c, reps, 7);
        char what[64];
        snprintf(what, sizeof what, "%zux%zux%zu %s", sh->m, sh->n, sh->k, sh->tr);
        char note[64];
        snprintf(note, sizeof note, "%.1f us a call (%d a batch)", t * 1e6, reps);
        report(group, what, sh->m * sh->n * sh->k, flops / t * 1e-12, "TFLOP/s", note);
        rayo_buffer_destroy(A);
        rayo_buffer_destroy(B);
        rayo_buffer_destroy(C);
    }
    rayo_close(ctx);
}

static void bench_round_trip(rayo_context *ctx)
{
    enum { N = 1024, CALLS = 2000 };
    static float a[N], b[N], y[N];
    static double t[CALLS];
    for (int i = 0; i < N; i++)
        a[i] = frand(), b[i] = frand();
    rayo_call c = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ADD, .n = N, .a = a, .b = b, .y = y};
    for (int i = 0; i < 200; i++)
        rayo_run_on(ctx, "cuda", &c);
    for (int i = 0; i < CALLS; i++) {
        double t0 = now_s();
        rayo_status s = rayo_run_on(ctx, "cuda", &c);
        t[i] = now_s() - t0;
        if (s != RAYO_OK)
            die("rayo_run_on add", s);
    }
    for (int i = 0; i < N; i++)
        if (y[i] != a[i] + b[i]) {
            fprintf(stderr, "cuda-bench: round trip add: wrong result at %d\n", i);
            exit(1);
        }
    double med = median(t, CALLS);
    report("host", "add round trip (median)", N, med * 1e6, "us", NULL);
    report("host", "add round trip (p10)", N, t[CALLS / 10] * 1e6, "us", NULL);
}

static int in_list(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t len = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int quick = 0, bandwidth = 0, shapes_only = 0, half = 0;
    const char *sg = NULL, *tf = NULL, *mma16_shapes = NULL, *mma16_strict_shapes = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--bandwidth"))
            bandwidth = 1;
        else if (!strcmp(argv[i], "--shapes"))
            shapes_only = 1;
        else if (!strcmp(argv[i], "--half"))
            half = 1;
        else if (!strcmp(argv[i], "--half-wgmma"))
            half = 2;
        else if (!strcmp(argv[i], "--mma16-shapes") && i + 1 < argc)
            mma16_shapes = argv[++i];
        else if (!strcmp(argv[i], "--mma16-strict-shapes") && i + 1 < argc)
            mma16_strict_shapes = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--sgemm-kernels") && i + 1 < argc)
            sg = argv[++i];
        else if (!strcmp(argv[i], "--tf32-kernels") && i + 1 < argc)
            tf = argv[++i];
        else {
            fprintf(stderr, "usage: cuda-bench [--quick] [--sgemm-kernels A,B] [--tf32-kernels A,B] | --bandwidth "
                            "[--backend NAME] | --shapes | --half [--mma16-shapes A,B] [--mma16-strict-shapes A,B] "
                            "| --half-wgmma\n");
            return 2;
        }
    }
    static const char *const sgemm_kernels[] = {"sgemm_nn_k8_async", "sgemm_nn_k16_async", "sgemm_nn_k16_async_r"};
    static const char *const tf32_kernels[] = {"tf32_128x128_w2x2", "tf32_128x128_w2x2_r", "tf32_128x128_w2x2_swz",
                                               "wg_tf32_128x256", "wg_tf32_128x128"};
    static const size_t sizes[] = {1024, 2048, 4096, 8192};
    int nsizes = quick ? 2 : 4;

    rayo_context *ctx = open_with(NULL);
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    int found = 0; /* a copy shadowed by one found earlier in the search path is only listed */
    for (size_t i = 0; i < rayo_backend_count(ctx); i++)
        if (rayo_backend_get(ctx, i, &info) == RAYO_OK && !strcmp(info.name, backend)) {
            found |= info.status == RAYO_BACKEND_LOADED;
            printf("# %s backend: %s, device %s%s%s (%s)\n", backend,
                   info.status == RAYO_BACKEND_LOADED ? "loaded" : "not loaded", info.device, info.reason[0] ? ", " : "",
                   info.reason, info.path ? info.path : "?");
        }
    if (!found) {
        fprintf(stderr, "cuda-bench: no %s backend loaded (RAYO_PLUGIN_PATH?)\n", backend);
        return 1;
    }
    printf("%-8s %-28s %6s %12s %-8s %s\n", "group", "what", "size", "value", "unit", "note");
    if (shapes_only) {
        rayo_close(ctx);
        bench_shapes("shape");
        bench_shapes("shape-k8");
        return 0;
    }
    if (bandwidth) {
        bench_bandwidth(ctx);
        rayo_close(ctx);
        return 0;
    }
    if (half) {
        rayo_close(ctx);
        bench_halves(mma16_shapes, mma16_strict_shapes, half == 2);
        return 0;
    }

    bench_round_trip(ctx);

    size_t n = (size_t)1 << (quick ? 24 : 26);
    rayo_buffer *a = device_buffer(ctx, n, 1), *b = device_buffer(ctx, n, 1), *y = device_buffer(ctx, n, 0);
    bench_stream(ctx, "add", RAYO_OP_ADD, n, 0, 12, a, b, y);
    bench_stream(ctx, "mul", RAYO_OP_MUL, n, 0, 12, a, b, y);
    bench_stream(ctx, "scale", RAYO_OP_SCALE, n, 0, 8, a, b, y);
    bench_stream(ctx, "relu", RAYO_OP_RELU, n, 0, 8, a, b, y);
    bench_stream(ctx, "clip", RAYO_OP_CLIP, n, 0, 8, a, b, y);
    bench_stream(ctx, "exp", RAYO_OP_EXP, n, 0, 8, a, b, y);
    bench_stream(ctx, "gelu", RAYO_OP_GELU, n, 0, 8, a, b, y);
    bench_stream(ctx, "sigmoid", RAYO_OP_SIGMOID, n, 0, 8, a, b, y);
    bench_stream(ctx, "sum", RAYO_OP_SUM, n, 0, 4, a, b, y);
    bench_stream(ctx, "dot", RAYO_OP_DOT, n, 0, 8, a, b, y);
    bench_stream(ctx, "argmax", RAYO_OP_ARGMAX, n, 0, 4, a, b, y);
    bench_stream(ctx, "softmax rows of 4096", RAYO_OP_SOFTMAX, 4096, n / 4096, 8, a, b, y);
    bench_stream(ctx, "layernorm rows of 4096", RAYO_OP_LAYERNORM, 4096, n / 4096, 8, a, b, y);
    rayo_buffer_destroy(a);
    rayo_buffer_destroy(b);
    rayo_buffer_destroy(y);
    rayo_close(ctx);

    for (size_t i = 0; i < sizeof sgemm_kernels / sizeof sgemm_kernels[0]; i++)
        if (in_list(sg, sgemm_kernels[i]))
            bench_gemm("sgemm", "fp32", "sgemm_kernel", sgemm_kernels[i], sizes, nsizes, 0);
    for (size_t i = 0; i < sizeof tf32_kernels / sizeof tf32_kernels[0]; i++)
        if (in_list(tf, tf32_kernels[i])) {
            bench_gemm("tf32", "tf32", "tf32_kernel", tf32_kernels[i], sizes, nsizes, 0);
            if (!strncmp(tf32_kernels[i], "wg_", 3))
                bench_gemm("tf32", "tf32", "tf32_kernel", tf32_kernels[i], sizes, nsizes, RAYO_TRANS_B);
        }
    return 0;
}
