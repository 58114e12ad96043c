/* SPDX-License-Identifier: MIT */
/* vk-bench - benchmarks of the vulkan backend through rayo's public API.
 *
 *   vk-bench [--quick] [--csv FILE] [--sgemm N | --elementwise |
 *             --gemv MxN [--dtype LIST] [--copies] [--relaxed] | --attention N | --matmul MxNxK |
 *             --floor]
 *
 * 1. sgemm on device buffers (one batch of several products, submit, wait),
 *    with a spot check of the result against a float64 dot product;
 * 2. elementwise ops on device buffers: GB/s counting bytes read + written;
 * 3. a batch of 10 chained elementwise ops (upload, 10 ops, one submit,
 *    read back) against 10 separate host-memory calls;
 * 4. the host round trip of add on 1024 floats (rayo_run_on "vulkan");
 * 5. (--gemv MxN only) gemv with weights in each dtype (or those of
 *    --dtype, comma-separated names: f32,q4_k): GB/s counting the bytes of
 *    A, x and y, cycling through copies of A that together exceed the GPU's
 *    L2 cache, as decode streams each weight once; with --copies, first
 *    the device's copy bandwidth (scale of 2^26 floats, 2^24 with --quick:
 *    bytes read + written) and read bandwidth (sum of as many) in the same
 *    run, and each gemv as a fraction of the copy figure; also the time of
 *    the same call on 8 rows (the per-call floor: dispatch and barrier);
 *    --relaxed: the calls at relaxed precision (block weights may take
 *    8-bit x: the decode's calls), else at the context's default;
 *    --quick: shorter warm-up and batches;
 * 6. (--attention N only) attention decode, 1 query of 32 heads against a
 *    cache of N positions of 4 KV heads x 64 (TinyLlama) and of 32 x 128
 *    (Llama-2-7B), f32 and f16: GB/s counting the bytes of K and V,
 *    cycling through 64 copies of the cache (fewer, of 1 GB in all, for
 *    large caches); --relaxed: at relaxed precision (a decode's calls).
 * 7. (--floor only) the per-dispatch floor: 512 tiny calls in one batch
 *    (add of 256 floats, one workgroup; rmsnorm of 1 x 2048), us a call:
 *    chained (each reads the last one's result: a barrier between every
 *    two), independent (each writes its own slice: the plugin leaves out
 *    the barrier while it can track the accesses since the last one, 8
 *    such calls), and chained over 8 and 64 command buffers of one
 *    submission (groups of calls alternately fixed and moving with the
 *    batch's step, which the plugin records apart).  Which of the barrier,
 *    the command buffers or the shader sets the floor; two plugins in two
 *    runs compare their barriers.
 * 8. (--matmul MxNxK only) C = A B^T (the prefill's weight as B, n x k)
 *    with A and B in each combination rayo_matmul_ex offers, against the
 *    f32 product of the same shape and flags in the same run (and f32 with
 *    B not transposed); TFLOP/s counting 2 m n k.  --quick: f32, f32 x
 *    q4_k and f16 x f16 only.
 * Times are medians of repeated runs after warm-up.  Speed is measured
 * here, never asserted: this program is not a test.
 */
#define _POSIX_C_SOURCE 200809L
#include "rayo.h"
#include "dtype-list.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static FILE *csv;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
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

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static float frand(void)     /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
}

#define CHECK(expr)                                                                   \
    do {                                                                              \
        rayo_status st_ = (expr);                                                     \
        if (st_ != RAYO_OK) {                                                         \
            fprintf(stderr, "vk-bench: %s: %s (%s)\n", #expr, rayo_strerror(st_),     \
                    rayo_last_error());                                               \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

static rayo_buffer *upload(rayo_context *ctx, const float *data, size_t n)
{
    rayo_buffer *b;
    CHECK(rayo_buffer_create(ctx, "vulkan", n * sizeof(float), &b));
    if (data)
        CHECK(rayo_buffer_write(b, 0, data, n * sizeof(float)));
    return b;
}

/* Runs `reps` copies of one call in one batch; returns seconds per call. */
static double time_batch(rayo_context *ctx, const rayo_batch_call *call, int reps)
{
    rayo_batch *batch;
    CHECK(rayo_batch_create(ctx, "vulkan", &batch));
    for (int r = 0; r < reps; r++)
        CHECK(rayo_batch_record(batch, call));
    double t0 = now();
    CHECK(rayo_batch_submit(batch));
    CHECK(rayo_batch_wait(batch, UINT64_MAX));
    double t = now() - t0;
    rayo_batch_destroy(batch);
    return t / reps;
}

/* only: one size (--sgemm N), or 0 for all */
static void bench_sgemm(rayo_context *ctx, int quick, size_t only)
{
    const size_t full[] = {1024, 2048, 4096, 8192}, small[] = {128, 256, 512, 1000};
    const size_t *sizes = quick ? small : full;
    printf("\n== sgemm (fp32, device buffers, C = A B) ==\n");
    printf("%8s %12s %10s %12s\n", "n", "ms", "TFLOP/s", "max rel err");
    for (int si = 0; si < 4; si++) {
        size_t n = only ? only : sizes[si];
        if (only && si > 0)
            break;
        float *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
        float *c = malloc(n * n * sizeof *c);
        if (!a || !b || !c)
            exit(1);
        fill(a, n * n);
        fill(b, n * n);
        rayo_buffer *ba = upload(ctx, a, n * n), *bb = upload(ctx, b, n * n);
        rayo_buffer *bc = upload(ctx, NULL, n * n);
        rayo_batch_call call = {
            .struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_MATMUL, .m = n, .n = n, .k = n, .alpha = 1.0f, .beta = 0.0f,
            .a = {ba, 0}, .b = {bb, 0}, .y = {bc, 0},
        };
        double flop = 2.0 * n * n * n;
        int reps = (int)(2e12 / flop) + 1;     /* about 0.1 s per batch on a fast GPU */
        if (reps > 50)
            reps = 50;
        if (quick)
            reps = 1;
        time_batch(ctx, &call, 1);              /* warm-up: pipeline, clocks */
        double t[5];
        for (int i = 0; i < 5; i++)
            t[i] = time_batch(ctx, &call, reps);
        double sec = median(t, 5);
        /* spot check 64 entries against float64 */
        CHECK(rayo_buffer_read(bc, 0, c, n * n * sizeof *c));
        double worst = 0;
        for (int s = 0; s < 64; s++) {
            size_t i = (size_t)(s * 7919u) % n, j = (size_t)(s * 104729u) % n;
            double ref = 0, mag = 0;
            for (size_t p = 0; p < n; p++) {
                ref += (double)a[i * n + p] * b[p * n + j];
                mag += fabs((double)a[i * n + p] * b[p * n + j]);
            }
            double e = fabs(c[i * n + j] - ref) / mag;
            if (!(e <= worst))
                worst = e;       /* NaN sticks */
        }
        printf("%8zu %12.3f %10.2f %12.2e\n", n, sec * 1e3, flop / sec * 1e-12, worst);
        if (csv)
            fprintf(csv, "sgemm,%zu,%.6f,%.3f,%.3e\n", n, sec * 1e3, flop / sec * 1e-12, worst);
        rayo_buffer_destroy(ba);
        rayo_buffer_destroy(bb);
        rayo_buffer_destroy(bc);
        free(a);
        free(b);
        free(c);
    }
}

typedef struct elt_case {
    const char *name;
    uint32_t op;
    int inputs;        /* 1 or 2 arrays read */
} elt_case;

static void bench_elementwise(rayo_context *ctx, int quick)
{
    size_t n = quick ? ((size_t)1 << 18) : ((size_t)1 << 26);   /* 256 MiB per array */
    const elt_case cases[] = {
        {"add", RAYO_OP_ADD, 2}, {"mul", RAYO_OP_MUL, 2}, {"scale", RAYO_OP_SCALE, 1},
        {"relu", RAYO_OP_RELU, 1}, {"exp", RAYO_OP_EXP, 1}, {"gelu", RAYO_OP_GELU, 1},
        {"silu", RAYO_OP_SILU, 1},
    };
    float *h = malloc(n * sizeof *h);
    if (!h)
        exit(1);
    fill(h, n);
    rayo_buffer *x = upload(ctx, h, n), *z = upload(ctx, h, n), *y = upload(ctx, NULL, n);
    /* about a second of work first, so the clocks have left their idle state */
    rayo_batch_call warm = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ADD, .n = n, .a = {x, 0}, .b = {z, 0}, .y = {y, 0}};
    for (double t0 = now(); now() - t0 < (quick ? 0.05 : 1.0);)
        time_batch(ctx, &warm, 20);
    printf("\n== elementwise on device buffers, n = %zu (GB/s = bytes read + written) ==\n", n);
    printf("%-8s %10s %10s\n", "op", "us", "GB/s");
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        rayo_batch_call call = {
            .struct_size = sizeof(rayo_batch_call), .op = cases[ci].op, .n = n, .alpha = 0.5f,
            .a = {x, 0}, .b = {cases[ci].inputs > 1 ? z : NULL, 0}, .y = {y, 0},
        };
        time_batch(ctx, &call, 2);
        double t[7];
        for (int i = 0; i < 7; i++)
            t[i] = time_batch(ctx, &call, 20);
        double sec = median(t, 7);
        double bytes = (double)n * 4 * (cases[ci].inputs + 1);
        printf("%-8s %10.1f %10.1f\n", cases[ci].name, sec * 1e6, bytes / sec * 1e-9);
        if (csv)
            fprintf(csv, "elementwise,%s,%zu,%.3f,%.1f\n", cases[ci].name, n, sec * 1e6, bytes / sec * 1e-9);
    }
    rayo_buffer_destroy(x);
    rayo_buffer_destroy(z);
    rayo_buffer_destroy(y);
    free(h);
}

/* y = relu(scale(add(x, x))) ... : ten ops, each reading the last result. */
static const uint32_t chain_ops[10] = {
    RAYO_OP_ADD, RAYO_OP_SCALE, RAYO_OP_RELU, RAYO_OP_MUL, RAYO_OP_SIGMOID,
    RAYO_OP_SUB, RAYO_OP_ABS, RAYO_OP_SQRT, RAYO_OP_SILU, RAYO_OP_TANH,
};

static int chain_binary(uint32_t op) { return op == RAYO_OP_ADD || op == RAYO_OP_MUL || op == RAYO_OP_SUB; }

static double chain_batch(rayo_context *ctx, const float *in, float *out, size_t n)
{
    double t0 = now();
    rayo_buffer *x = upload(ctx, in, n), *y = upload(ctx, NULL, n);
    rayo_batch *batch;
    CHECK(rayo_batch_create(ctx, "vulkan", &batch));
    for (int i = 0; i < 10; i++) {
        rayo_buffer *src = i == 0 ? x : y;
        rayo_batch_call call = {
            .struct_size = sizeof(rayo_batch_call), .op = chain_ops[i], .n = n, .alpha = 0.5f,
            .a = {src, 0}, .b = {chain_binary(chain_ops[i]) ? x : NULL, 0}, .y = {y, 0},
        };
        CHECK(rayo_batch_record(batch, &call));
    }
    CHECK(rayo_batch_submit(batch));
    CHECK(rayo_batch_wait(batch, UINT64_MAX));
    CHECK(rayo_buffer_read(y, 0, out, n * sizeof *out));
    rayo_batch_destroy(batch);
    rayo_buffer_destroy(x);
    rayo_buffer_destroy(y);
    return now() - t0;
}

static double chain_host(rayo_context *ctx, const float *in, float *out, size_t n)
{
    double t0 = now();
    for (int i = 0; i < 10; i++) {
        rayo_call call = {
            .struct_size = sizeof(rayo_call), .op = chain_ops[i], .n = n, .alpha = 0.5f,
            .a = i == 0 ? in : out, .b = chain_binary(chain_ops[i]) ? in : NULL, .y = out,
        };
        CHECK(rayo_run_on(ctx, "vulkan", &call));
    }
    return now() - t0;
}

static void bench_chain(rayo_context *ctx, int quick)
{
    const size_t sizes[] = {(size_t)1 << 10, (size_t)1 << 20, (size_t)1 << 24};
    printf("\n== 10 chained elementwise ops from host memory ==\n");
    printf("%10s %14s %14s %8s %10s\n", "n", "batch ms", "10 calls ms", "ratio", "max diff");
    for (int si = 0; si < 3; si++) {
        size_t n = sizes[si];
        if (quick && n > ((size_t)1 << 16))
            break;
        float *in = malloc(n * sizeof *in), *o1 = malloc(n * sizeof *o1), *o2 = malloc(n * sizeof *o2);
        if (!in || !o1 || !o2)
            exit(1);
        fill(in, n);
        chain_batch(ctx, in, o1, n);
        chain_host(ctx, in, o2, n);
        double tb[7], th[7];
        for (int i = 0; i < 7; i++) {
            tb[i] = chain_batch(ctx, in, o1, n);
            th[i] = chain_host(ctx, in, o2, n);
        }
        double b = median(tb, 7), h = median(th, 7), diff = 0;
        for (size_t i = 0; i < n; i++)
            if (!(fabs(o1[i] - o2[i]) <= diff))
                diff = fabs(o1[i] - o2[i]);
        printf("%10zu %14.3f %14.3f %8.2f %10.2e\n", n, b * 1e3, h * 1e3, h / b, diff);
        if (csv)
            fprintf(csv, "chain10,%zu,%.4f,%.4f\n", n, b * 1e3, h * 1e3);
        free(in);
        free(o1);
        free(o2);
    }
}

static void bench_round_trip(rayo_context *ctx)
{
    enum { N = 1024, REPS = 1000 };
    static float a[N], b[N], y[N];
    fill(a, N);
    fill(b, N);
    rayo_call call = {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ADD, .n = N, .a = a, .b = b, .y = y};
    for (int i = 0; i < 50; i++)
        CHECK(rayo_run_on(ctx, "vulkan", &call));
    static double t[REPS];
    for (int i = 0; i < REPS; i++) {
        double t0 = now();
        CHECK(rayo_run_on(ctx, "vulkan", &call));
        t[i] = now() - t0;
    }
    for (int i = 0; i < N; i++)
        if (y[i] != a[i] + b[i]) {
            fprintf(stderr, "vk-bench: add round trip gave a wrong result at %d\n", i);
            exit(1);
        }
    double med = median(t, REPS);
    printf("\n== host round trip: add, 1024 floats from host memory ==\n");
    printf("median %.1f us, p10 %.1f us, p90 %.1f us (%d calls)\n", med * 1e6,
           t[REPS / 10] * 1e6, t[REPS * 9 / 10] * 1e6, REPS);
    if (csv)
        fprintf(csv, "roundtrip_add_1024,%.2f\n", med * 1e6);
}

/* Row r of an m x n weight matrix in dtype dt: random values, with the
 * scales of block formats set to moderate f16 values (random bytes there
 * could be NaN or Inf). */
static void fill_weights(rayo_dtype dt, unsigned char *row, size_t n, size_t row_bytes)
{
    for (size_t i = 0; i < row_bytes; i++)
        row[i] = (unsigned char)(frand() * 128 + 128);
    size_t bb = rayo_dtype_block_bytes(dt), at[2] = {0, 2}, count = 1;
    if (dt == RAYO_DTYPE_Q4_K)
        count = 2;
    if (dt == RAYO_DTYPE_Q6_K)
        at[0] = 208;
    for (size_t i = 0; i < n && dt != RAYO_DTYPE_F32; i += rayo_dtype_block_elems(dt)) {
        unsigned char *p = row + i / rayo_dtype_block_elems(dt) * bb;
        float v = rayo_dtype_is_block(dt) ? 0.01f * (1.0f + frand() * 0.5f) : frand();
        uint16_t h = dt == RAYO_DTYPE_BF16 ? rayo_f32_to_bf16(v) : rayo_f32_to_f16(v);
        for (size_t c = 0; c < count; c++) {
            p[at[c]] = (unsigned char)(h & 0xff);
            p[at[c] + 1] = (unsigned char)(h >> 8);
        }
    }
    if (dt == RAYO_DTYPE_F32)
        for (size_t i = 0; i < n; i++) {
            float v = frand();
            memcpy(row + 4 * i, &v, 4);
        }
}

/* Seconds per gemv: `reps` gemvs in one batch, cycling through the copies
 * of A; the median of 7 batches. */
static double time_gemv(rayo_context *ctx, rayo_batch_call *call, rayo_buffer **copies,
                        int n_copies, int reps)
{
    double t[7];
    for (int i = 0; i < 7; i++) {
        rayo_batch *batch;
        CHECK(rayo_batch_create(ctx, "vulkan", &batch));
        for (int r = 0; r < reps; r++) {
            call->a.buf = copies[r % n_copies];
            CHECK(rayo_batch_record(batch, call));
        }
        double t0 = now();
        CHECK(rayo_batch_submit(batch));
        CHECK(rayo_batch_wait(batch, UINT64_MAX));
        t[i] = (now() - t0) / reps;
        rayo_batch_destroy(batch);
    }
    return median(t, 7);
}

/* The largest |y - ref| / sum |terms| over the first rows (a sanity check
 * of the benchmarked call; rayo-conform checks the contract). */
static double gemv_check(rayo_dtype dt, const unsigned char *a, size_t row_bytes, const float *x,
                         size_t m, size_t n, rayo_buffer *y)
{
    size_t rows = m < 64 ? m : 64;
    float *got = malloc(rows * sizeof *got), *row = malloc(n * sizeof *row);
    if (!got || !row)
        exit(1);
    CHECK(rayo_buffer_read(y, 0, got, rows * sizeof *got));
    double worst = 0;
    for (size_t r = 0; r < rows; r++) {
        rayo_dequantize_row(dt, a + r * row_bytes, row, n);
        double ref = 0, mag = 0;
        for (size_t i = 0; i < n; i++) {
            ref += (double)row[i] * x[i];
            mag += fabs((double)row[i] * x[i]);
        }
        double e = fabs(got[r] - ref) / (mag > 0 ? mag : 1);
        worst = e > worst || e != e ? e : worst;
    }
    free(got);
    free(row);
    return worst;
}

/* GB/s of one call on device buffers of n floats each (x, z read; y
 * written): median of 7 batches of 20 calls, after warm-up. */
static double device_gbs(rayo_context *ctx, uint32_t op, size_t n, int inputs, double bytes)
{
    float *h = malloc(n * sizeof *h);
    if (!h)
        exit(1);
    fill(h, n);
    rayo_buffer *x = upload(ctx, h, n), *y = upload(ctx, NULL, n);
    rayo_batch_call call = {
        .struct_size = sizeof(rayo_batch_call), .op = op, .n = n, .alpha = 0.5f,
        .a = {x, 0}, .b = {inputs > 1 ? x : NULL, 0}, .y = {y, 0},
    };
    double t[7];
    for (double t0 = now(); now() - t0 < 0.3;)
        time_batch(ctx, &call, 20);
    for (int i = 0; i < 7; i++)
        t[i] = time_batch(ctx, &call, 20);
    rayo_buffer_destroy(x);
    rayo_buffer_destroy(y);
    free(h);
    return bytes / median(t, 7) * 1e-9;
}

/* The copy and read bandwidth references of the gemv table (same run). */
static double bench_copies(rayo_context *ctx, int quick)
{
    size_t n = (size_t)1 << (quick ? 24 : 26);
    double copy = device_gbs(ctx, RAYO_OP_SCALE, n, 1, 8.0 * n);
    double read = device_gbs(ctx, RAYO_OP_SUM, n, 1, 4.0 * n);
    printf("\n== references: device copy (scale, %zu floats) %.1f GB/s read + written; "
           "read (sum) %.1f GB/s ==\n", n, copy, read);
    if (csv)
        fprintf(csv, "copy,%zu,%.1f\nread,%zu,%.1f\n", n, copy, n, read);
    return copy;
}

static int gemv_relaxed; /* --relaxed */

static void bench_gemv(rayo_context *ctx, size_t m, size_t n, const char *only, int copies_ref,
                       int quick)
{
    double copy = copies_ref ? bench_copies(ctx, quick) : 0;
    const rayo_dtype dts[] = {RAYO_DTYPE_F32, RAYO_DTYPE_F16, RAYO_DTYPE_BF16, RAYO_DTYPE_Q8_0,
                              RAYO_DTYPE_Q6_K, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q4_0};
    printf("\n== gemv y = A x on device buffers, A %zu x %zu (GB/s = bytes of A, x, y)%s ==\n", m, n,
           gemv_relaxed ? ", relaxed precision" : "");
    printf("%-6s %10s %8s %10s %10s %8s %12s %10s\n", "dtype", "MB of A", "copies", "us", "GB/s",
           "vs copy", "max rel err", "8 rows us");
    float *x = malloc(n * sizeof *x);
    if (!x)
        exit(1);
    fill(x, n);
    rayo_buffer *bx = upload(ctx, x, n), *by = upload(ctx, NULL, m);
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        rayo_dtype dt = dts[di];
        size_t row_bytes;
        if (!dtype_listed(only, dt))
            continue;
        if (!rayo_dtype_row_bytes(dt, n, &row_bytes)) {
            printf("%-6s n = %zu is not whole blocks\n", rayo_dtype_name(dt), n);
            continue;
        }
        size_t bytes = row_bytes * m;
        unsigned char *a = malloc(bytes);
        if (!a)
            exit(1);
        for (size_t r = 0; r < m; r++)
            fill_weights(dt, a + r * row_bytes, n, row_bytes);
        /* copies of A: 512 MB in all, far past the L2 cache (at most 64) */
        int n_copies = (int)((512u << 20) / bytes) + 1;
        if (n_copies > 64)
            n_copies = 64;
        rayo_buffer **copies = malloc((size_t)n_copies * sizeof *copies);
        if (!copies)
            exit(1);
        for (int c = 0; c < n_copies; c++) {
            CHECK(rayo_buffer_create(ctx, "vulkan", bytes, &copies[c]));
            CHECK(rayo_buffer_write(copies[c], 0, a, bytes));
        }
        rayo_batch_call call = {
            .struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_GEMV,
            .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
            .m = m, .n = n, .alpha = 1.0f, .beta = 0.0f, .a = {copies[0], 0}, .b = {bx, 0},
            .y = {by, 0}, .precision = gemv_relaxed ? RAYO_PRECISION_RELAXED : RAYO_PRECISION_DEFAULT,
        };
        int reps = (quick ? 2 : 4) * n_copies;
        /* a second of work first: the clocks leave their idle state */
        for (double t0 = now(); now() - t0 < (quick ? 0.3 : 1.0);)
            time_gemv(ctx, &call, copies, n_copies, reps);
        double sec = time_gemv(ctx, &call, copies, n_copies, reps);
        /* the per-call floor: the same call on 8 rows (dispatch, barrier) */
        call.m = 8;
        double floor_sec = time_gemv(ctx, &call, copies, n_copies, reps);
        call.m = m;
        call.a.buf = copies[0];
        rayo_batch *one;
        CHECK(rayo_batch_create(ctx, "vulkan", &one));
        CHECK(rayo_batch_record(one, &call));
        CHECK(rayo_batch_submit(one));
        CHECK(rayo_batch_wait(one, UINT64_MAX));
        rayo_batch_destroy(one);
        double err = gemv_check(dt, a, row_bytes, x, m, n, by);
        double moved = (double)bytes + 4.0 * (n + m);
        double gbs = moved / sec * 1e-9, ratio = copy > 0 ? gbs / copy : 0;
        printf("%-6s %10.1f %8d %10.2f %10.1f %8.2f %12.2e %10.2f\n", rayo_dtype_name(dt),
               bytes / 1e6, n_copies, sec * 1e6, gbs, ratio, err, floor_sec * 1e6);
        if (csv)
            fprintf(csv, "gemv,%s,%zux%zu,%.3f,%.1f,%.3f,%.2e,%.3f\n", rayo_dtype_name(dt), m, n,
                    sec * 1e6, gbs, ratio, err, floor_sec * 1e6);
        for (int c = 0; c < n_copies; c++)
            rayo_buffer_destroy(copies[c]);
        free(copies);
        free(a);
    }
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(by);
    free(x);
}

/* The attention shapes of --attention: query heads, KV heads, head_dim. */
typedef struct attention_shape {
    const char *name;
    size_t heads, kv_heads, dim;
} attention_shape;

/* Copies of the cache cycled through: 64, fewer where they would pass
 * ATTN_COPY_BYTES (at least 2; each one far larger than a GPU's cache then). */
#define ATTN_COPIES 64
#define ATTN_COPY_BYTES ((size_t)1 << 30)

static int attention_copies(size_t bytes)
{
    size_t n = ATTN_COPY_BYTES / (2 * bytes);
    return n >= ATTN_COPIES ? ATTN_COPIES : n < 2 ? 2 : (int)n;
}

/* Decode attention: seconds per call over copies of the cache, and the bytes of K, V. */
static void bench_attention_shape(rayo_context *ctx, size_t n_kv, const attention_shape *sh)
{
    const size_t HEADS = sh->heads, KV_HEADS = sh->kv_heads, DIM = sh->dim;
    printf("\n== attention decode on device buffers (%s): 1 query, %zu heads, %zu KV heads x %zu, cache %zu"
           " (GB/s = bytes of K and V)%s ==\n", sh->name, HEADS, KV_HEADS, DIM, n_kv,
           gemv_relaxed ? ", relaxed precision" : "");
    printf("%-6s %10s %10s %10s\n", "cache", "MB of KV", "us", "GB/s");
    size_t kv_elems = n_kv * KV_HEADS * DIM;
    float *q = malloc(HEADS * DIM * sizeof *q), *kv = malloc(kv_elems * sizeof *kv);
    uint16_t *kv16 = malloc(kv_elems * sizeof *kv16);
    if (!q || !kv || !kv16)
        exit(1);
    fill(q, HEADS * DIM);
    fill(kv, kv_elems);
    for (size_t i = 0; i < kv_elems; i++)
        kv16[i] = rayo_f32_to_f16(kv[i]);
    rayo_buffer *bq = upload(ctx, q, HEADS * DIM), *bo = upload(ctx, NULL, HEADS * DIM);
    const rayo_dtype dts[] = {RAYO_DTYPE_F32, RAYO_DTYPE_F16};
    for (int di = 0; di < 2; di++) {
        size_t bytes = kv_elems * (dts[di] == RAYO_DTYPE_F16 ? 2 : 4);
        const void *src = dts[di] == RAYO_DTYPE_F16 ? (const void *)kv16 : (const void *)kv;
        int COPIES = attention_copies(bytes);
        rayo_buffer *k[ATTN_COPIES], *v[ATTN_COPIES];
        for (int c = 0; c < COPIES; c++) {
            CHECK(rayo_buffer_create(ctx, "vulkan", bytes, &k[c]));
            CHECK(rayo_buffer_create(ctx, "vulkan", bytes, &v[c]));
            CHECK(rayo_buffer_write(k[c], 0, src, bytes));
            CHECK(rayo_buffer_write(v[c], 0, src, bytes));
        }
        rayo_attention_params p = {
            .struct_size = sizeof p, .flags = RAYO_ATTN_CAUSAL, .kv_dtype = dts[di], .n_q = 1,
            .n_kv = n_kv, .n_heads = HEADS, .n_kv_heads = KV_HEADS, .head_dim = DIM,
            .scale = 0.125f,
        };
        rayo_batch_call call = {
            .struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ATTENTION,
            .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, dts[di], dts[di], RAYO_DTYPE_F32),
            .m = 1, .n = DIM, .k = n_kv, .a = {bq, 0}, .y = {bo, 0}, .params = &p,
            .precision = gemv_relaxed ? RAYO_PRECISION_RELAXED : RAYO_PRECISION_DEFAULT,
        };
        double t[7], warm = now();
        for (int i = 0; i < 8; i++) {           /* the first: about a second of warm-up */
            if (i == 1 && now() - warm < 1.0)
                i = 0;
            rayo_batch *batch;
            CHECK(rayo_batch_create(ctx, "vulkan", &batch));
            for (int r = 0; r < 4 * ATTN_COPIES; r++) {
                call.b.buf = k[r % COPIES];
                call.c.buf = v[r % COPIES];
                CHECK(rayo_batch_record(batch, &call));
            }
            double t0 = now();
            CHECK(rayo_batch_submit(batch));
            CHECK(rayo_batch_wait(batch, UINT64_MAX));
            if (i)
                t[i - 1] = (now() - t0) / (4 * ATTN_COPIES);
            rayo_batch_destroy(batch);
        }
        double sec = median(t, 7);
        printf("%-6s %10.2f %10.2f %10.1f\n", rayo_dtype_name(dts[di]), 2.0 * bytes / 1e6, sec * 1e6,
               2.0 * bytes / sec * 1e-9);
        if (csv)
            fprintf(csv, "attention_decode,%s,%s,%zu,%.3f,%.1f\n", sh->name, rayo_dtype_name(dts[di]), n_kv,
                    sec * 1e6, 2.0 * bytes / sec * 1e-9);
        for (int c = 0; c < COPIES; c++) {
            rayo_buffer_destroy(k[c]);
            rayo_buffer_destroy(v[c]);
        }
    }
    rayo_buffer_destroy(bq);
    rayo_buffer_destroy(bo);
    free(q);
    free(kv);
    free(kv16);
}

/* --attention N: a small model's grouped heads and a 7B one's, one KV head a head. */
static void bench_attention(rayo_context *ctx, size_t n_kv)
{
    static const attention_shape shapes[] = {{"TinyLlama", 32, 4, 64}, {"Llama-2-7B", 32, 32, 128}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        bench_attention_shape(ctx, n_kv, &shapes[i]);
}

/* ---- the per-dispatch floor ----------------------------------------------------- */

enum { FLOOR_CALLS = 512, FLOOR_N = 256, FLOOR_COLS = 2048 };

typedef enum floor_kind { FLOOR_CHAIN, FLOOR_INDEPENDENT } floor_kind;

/* Call i of a floor batch on x (FLOOR_CALLS x FLOOR_COLS floats), g (gamma)
 * and y (as many): chained, call i reads call i-1's output; independent,
 * every call reads x and writes its own slice of y. */
static rayo_batch_call floor_call(uint32_t op, floor_kind kind, int i, rayo_buffer *x,
                                  rayo_buffer *g, rayo_buffer *y)
{
    size_t width = op == RAYO_OP_RMSNORM ? FLOOR_COLS : FLOOR_N, bytes = width * sizeof(float);
    rayo_buffer *src = kind == FLOOR_CHAIN && i > 0 ? y : x;
    size_t src_off = kind == FLOOR_CHAIN && i > 0 ? (size_t)(i - 1) * bytes : 0;
    rayo_batch_call call = {
        .struct_size = sizeof(rayo_batch_call), .op = op, .m = 1, .n = width, .alpha = 1e-5f,
        .a = {src, src_off}, .b = {op == RAYO_OP_RMSNORM ? g : x, 0}, .y = {y, (size_t)i * bytes},
    };
    return call;
}

/* Seconds a call of a batch of FLOOR_CALLS; segments > 1: the calls in
 * that many groups, every other one moving with the step (step 0 here, so
 * nothing moves, but the plugin records each group in a command buffer of
 * its own). */
static double floor_batch(rayo_context *ctx, uint32_t op, floor_kind kind, int segments,
                          rayo_buffer *x, rayo_buffer *g, rayo_buffer *y)
{
    rayo_batch *batch;
    CHECK(rayo_batch_create(ctx, "vulkan", &batch));
    int per_group = FLOOR_CALLS / segments;
    for (int i = 0; i < FLOOR_CALLS; i++) {
        rayo_batch_call call = floor_call(op, kind, i, x, g, y);
        if (segments > 1 && (i / per_group) % 2)
            call.step_bytes[3] = sizeof(float);
        CHECK(rayo_batch_record(batch, &call));
    }
    double t[7];
    for (int r = 0; r < 8; r++) {       /* the first: warm-up */
        double t0 = now();
        CHECK(rayo_batch_submit(batch));
        CHECK(rayo_batch_wait(batch, UINT64_MAX));
        if (r)
            t[r - 1] = (now() - t0) / FLOOR_CALLS;
    }
    rayo_batch_destroy(batch);
    return median(t, 7);
}

static void bench_floor(rayo_context *ctx)
{
    float *h = malloc((size_t)FLOOR_CALLS * FLOOR_COLS * sizeof *h);
    if (!h)
        exit(1);
    fill(h, (size_t)FLOOR_CALLS * FLOOR_COLS);
    rayo_buffer *x = upload(ctx, h, (size_t)FLOOR_CALLS * FLOOR_COLS);
    rayo_buffer *g = upload(ctx, h, FLOOR_COLS);
    rayo_buffer *y = upload(ctx, NULL, (size_t)FLOOR_CALLS * FLOOR_COLS);
    for (double t0 = now(); now() - t0 < 0.5;)   /* clocks out of their idle state */
        floor_batch(ctx, RAYO_OP_ADD, FLOOR_INDEPENDENT, 1, x, g, y);
    printf("\n== per-call floor: %d calls in one batch, us a call (wall time of the submission / calls) ==\n",
           FLOOR_CALLS);
    printf("%-22s %12s %12s %14s %14s\n", "call", "chained", "independent", "chained, 8 cb", "chained, 64 cb");
    const struct { uint32_t op; const char *name; } ops[] = {
        {RAYO_OP_ADD, "add 256"}, {RAYO_OP_RMSNORM, "rmsnorm 1 x 2048"},
    };
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
        double chain = floor_batch(ctx, ops[oi].op, FLOOR_CHAIN, 1, x, g, y);
        double indep = floor_batch(ctx, ops[oi].op, FLOOR_INDEPENDENT, 1, x, g, y);
        double cb8 = floor_batch(ctx, ops[oi].op, FLOOR_CHAIN, 8, x, g, y);
        double cb64 = floor_batch(ctx, ops[oi].op, FLOOR_CHAIN, 64, x, g, y);
        printf("%-22s %12.2f %12.2f %14.2f %14.2f\n", ops[oi].name, chain * 1e6, indep * 1e6, cb8 * 1e6,
               cb64 * 1e6);
        if (csv)
            fprintf(csv, "floor,%s,%.3f,%.3f,%.3f,%.3f\n", ops[oi].name, chain * 1e6, indep * 1e6,
                    cb8 * 1e6, cb64 * 1e6);
    }
    rayo_buffer_destroy(x);
    rayo_buffer_destroy(g);
    rayo_buffer_destroy(y);
    free(h);
}

/* ---- typed matmul ------------------------------------------------------------------ */

/* Largest |C - ref| / sum |terms| over 16 entries of C = A op(B) (A m x k,
 * B n x k with trans, else k x n), from the stored values. */
static double matmul_check(rayo_dtype adt, const unsigned char *a, rayo_dtype bdt,
                           const unsigned char *b, int trans, size_t m, size_t n, size_t k,
                           rayo_buffer *c)
{
    size_t a_row = 0, b_row = 0;
    rayo_dtype_row_bytes(adt, k, &a_row);
    rayo_dtype_row_bytes(bdt, trans ? k : n, &b_row);
    float *ar = malloc(k * sizeof *ar), *br = malloc((trans ? k : n) * sizeof *br);
    float *bcol = malloc(k * sizeof *bcol), got;
    if (!ar || !br || !bcol)
        exit(1);
    double worst = 0;
    for (int s = 0; s < 16; s++) {
        size_t i = (size_t)(s * 7919u) % m, j = (size_t)(s * 104729u) % n;
        rayo_dequantize_row(adt, a + i * a_row, ar, k);
        if (trans)
            rayo_dequantize_row(bdt, b + j * b_row, bcol, k);
        for (size_t p = 0; p < k && !trans; p++) {
            rayo_dequantize_row(bdt, b + p * b_row, br, n);
            bcol[p] = br[j];
        }
        double ref = 0, mag = 0;
        for (size_t p = 0; p < k; p++) {
            ref += (double)ar[p] * bcol[p];
            mag += fabs((double)ar[p] * bcol[p]);
        }
        CHECK(rayo_buffer_read(c, (i * n + j) * sizeof got, &got, sizeof got));
        double e = fabs(got - ref) / (mag > 0 ? mag : 1);
        worst = e > worst || e != e ? e : worst;
    }
    free(ar);
    free(br);
    free(bcol);
    return worst;
}

/* quick: the f32 products, f32 x q4_k and f16 x f16 only */
static void bench_matmul(rayo_context *ctx, int quick, size_t m, size_t n, size_t k)
{
    static const struct { rayo_dtype a, b; uint32_t flags; } cases[] = {
        {RAYO_DTYPE_F32, RAYO_DTYPE_F32, 0}, {RAYO_DTYPE_F32, RAYO_DTYPE_F32, RAYO_TRANS_B},
        {RAYO_DTYPE_F32, RAYO_DTYPE_Q4_K, RAYO_TRANS_B}, {RAYO_DTYPE_F16, RAYO_DTYPE_F16, RAYO_TRANS_B},
        {RAYO_DTYPE_F32, RAYO_DTYPE_F16, RAYO_TRANS_B}, {RAYO_DTYPE_F32, RAYO_DTYPE_BF16, RAYO_TRANS_B},
        {RAYO_DTYPE_F32, RAYO_DTYPE_Q8_0, RAYO_TRANS_B}, {RAYO_DTYPE_F32, RAYO_DTYPE_Q4_0, RAYO_TRANS_B},
        {RAYO_DTYPE_F32, RAYO_DTYPE_Q6_K, RAYO_TRANS_B}, {RAYO_DTYPE_BF16, RAYO_DTYPE_BF16, RAYO_TRANS_B},
    };
    printf("\n== matmul C = A op(B) on device buffers, %zu x %zu x %zu (TFLOP/s = 2mnk / time; "
           "vs f32: the f32 product with the same flags, this run) ==\n", m, n, k);
    printf("%-6s %-6s %-4s %10s %10s %8s %12s\n", "A", "B", "op", "ms", "TFLOP/s", "vs f32", "max rel err");
    double flop = 2.0 * m * n * k, f32_nt = 0;
    rayo_buffer *bc = upload(ctx, NULL, m * n);
    for (size_t ci = 0; ci < (quick ? 4 : sizeof cases / sizeof cases[0]); ci++) {
        rayo_dtype adt = cases[ci].a, bdt = cases[ci].b;
        int trans = cases[ci].flags != 0;
        size_t a_row, b_row, b_rows = trans ? n : k;
        if (!rayo_dtype_row_bytes(adt, k, &a_row) || !rayo_dtype_row_bytes(bdt, trans ? k : n, &b_row)) {
            printf("%-6s %-6s k = %zu is not whole blocks\n", rayo_dtype_name(adt), rayo_dtype_name(bdt), k);
            continue;
        }
        unsigned char *a = malloc(a_row * m), *b = malloc(b_row * b_rows);
        if (!a || !b)
            exit(1);
        for (size_t r = 0; r < m; r++)
            fill_weights(adt, a + r * a_row, k, a_row);
        for (size_t r = 0; r < b_rows; r++)
            fill_weights(bdt, b + r * b_row, trans ? k : n, b_row);
        rayo_buffer *ba, *bb;
        CHECK(rayo_buffer_create(ctx, "vulkan", a_row * m, &ba));
        CHECK(rayo_buffer_write(ba, 0, a, a_row * m));
        CHECK(rayo_buffer_create(ctx, "vulkan", b_row * b_rows, &bb));
        CHECK(rayo_buffer_write(bb, 0, b, b_row * b_rows));
        rayo_batch_call call = {
            .struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_MATMUL, .flags = cases[ci].flags,
            .dtypes = RAYO_DTYPES(adt, bdt, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
            .m = m, .n = n, .k = k, .alpha = 1.0f, .beta = 0.0f,
            .a = {ba, 0}, .b = {bb, 0}, .y = {bc, 0},
        };
        int reps = (int)(1e12 / flop) + 1;     /* ~50 ms per batch at 20 TFLOP/s */
        if (reps > 20)
            reps = 20;
        for (double t0 = now(); now() - t0 < 0.2;)
            time_batch(ctx, &call, 1);          /* warm-up: pipelines, clocks */
        double t[5];
        for (int i = 0; i < 5; i++)
            t[i] = time_batch(ctx, &call, reps);
        double sec = median(t, 5);
        if (adt == RAYO_DTYPE_F32 && bdt == RAYO_DTYPE_F32 && trans)
            f32_nt = sec;
        double err = matmul_check(adt, a, bdt, b, trans, m, n, k, bc);
        const char *op = trans ? "NT" : "NN";
        printf("%-6s %-6s %-4s %10.3f %10.2f %7.2fx %12.2e\n", rayo_dtype_name(adt), rayo_dtype_name(bdt),
               op, sec * 1e3, flop / sec * 1e-12, f32_nt > 0 && trans ? f32_nt / sec : 0.0, err);
        if (csv)
            fprintf(csv, "matmul,%s,%s,%s,%zux%zux%zu,%.4f,%.3f,%.3f,%.2e\n", rayo_dtype_name(adt),
                    rayo_dtype_name(bdt), op, m, n, k, sec * 1e3, flop / sec * 1e-12,
                    f32_nt > 0 && trans ? f32_nt / sec : 0.0, err);
        rayo_buffer_destroy(ba);
        rayo_buffer_destroy(bb);
        free(a);
        free(b);
    }
    rayo_buffer_destroy(bc);
}

int main(int argc, char **argv)
{
    int quick = 0;
    size_t only_sgemm = 0;
    int only_elementwise = 0;
    size_t gemv_m = 0, gemv_n = 0, attention_n = 0, mm[3] = {0, 0, 0};
    const char *only_dtypes = NULL;
    int copies_ref = 0, floor_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--floor"))
            floor_only = 1;
        else if (!strcmp(argv[i], "--elementwise"))
            only_elementwise = 1;
        else if (!strcmp(argv[i], "--sgemm") && i + 1 < argc)
            only_sgemm = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--gemv") && i + 1 < argc &&
                 sscanf(argv[i + 1], "%zux%zu", &gemv_m, &gemv_n) == 2)
            i++;
        else if (!strcmp(argv[i], "--matmul") && i + 1 < argc &&
                 sscanf(argv[i + 1], "%zux%zux%zu", &mm[0], &mm[1], &mm[2]) == 3)
            i++;
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc)
            only_dtypes = argv[++i];
        else if (!strcmp(argv[i], "--copies"))
            copies_ref = 1;
        else if (!strcmp(argv[i], "--relaxed"))
            gemv_relaxed = 1;
        else if (!strcmp(argv[i], "--attention") && i + 1 < argc)
            attention_n = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv = fopen(argv[++i], "w");
        else {
            fprintf(stderr, "usage: vk-bench [--quick] [--csv FILE] [--sgemm N | --elementwise | "
                    "--gemv MxN [--dtype LIST] [--copies] [--relaxed] | --attention N | --matmul MxNxK | --floor]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    rayo_context *ctx;
    if (rayo_open(&ctx, NULL) != RAYO_OK) {
        fprintf(stderr, "vk-bench: %s\n", rayo_last_error());
        return 1;
    }
    const char *device = NULL;
    for (size_t i = 0; i < rayo_backend_count(ctx); i++) {
        rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
        if (rayo_backend_get(ctx, i, &info) == RAYO_OK && !strcmp(info.name, "vulkan")) {
            if (info.status != RAYO_BACKEND_LOADED) {
                printf("SKIP: vulkan backend not loaded: %s\n", info.reason);
                rayo_close(ctx);
                return 77;
            }
            device = info.device;
        }
    }
    if (!device) {
        printf("SKIP: no vulkan backend found\n");
        rayo_close(ctx);
        return 77;
    }
    printf("vk-bench: vulkan on %s\n", device);
    if (floor_only) {
        bench_floor(ctx);
    } else if (mm[0] && mm[1] && mm[2]) {
        bench_matmul(ctx, quick, mm[0], mm[1], mm[2]);
    } else if (attention_n) {
        bench_attention(ctx, attention_n);
    } else if (gemv_m) {
        bench_gemv(ctx, gemv_m, gemv_n, only_dtypes, copies_ref, quick);
    } else if (only_elementwise) {
        bench_elementwise(ctx, quick);
    } else if (only_sgemm) {
        bench_sgemm(ctx, quick, only_sgemm);
    } else {
        bench_round_trip(ctx);
        bench_chain(ctx, quick);
        bench_elementwise(ctx, quick);
        bench_sgemm(ctx, quick, 0);
    }
    if (csv)
        fclose(csv);
    rayo_close(ctx);
    return 0;
}
