/* SPDX-License-Identifier: MIT */
/* cuda-host-bench - the cuda backend on host memory, in one run:
 *
 *   cuda-host-bench [N]        (N: the matmul's size, default 4096)
 *
 *   1. the PCIe link itself: cuMemcpyHtoD/DtoH of 256 MiB from pinned
 *      (cuMemHostAlloc) and from pageable (malloc) memory, through the
 *      driver directly (the plugin's own loader, cuda-driver.c): the
 *      reference the host path is judged against;
 *   2. rayo's host path on 2^26 floats (scale: 256 MiB in, 256 MiB out,
 *      rayo_run_on "cuda") with pinned staging and with pinned_staging = no,
 *      and the round trip of add on 1024 floats (median of 2000 calls);
 *   3. matmul N on device buffers (one batch), then on host memory through
 *      the default chain (rayo_run), pinned and pageable staging; the target
 *      is host >= 0.8 x (device matmul + its PCIe bytes at pinned speed);
 *   4. checks of what the host path's pieces must get right: the blocked
 *      matmul with beta != 0 (C read, assembled in a temporary) and an axpy
 *      whose y is larger than a staging slot, against float64 / the CPU.
 * Each time is the median of 5 after a warm-up.  Output: a table, and one
 * "csv,..." line per figure.  Exit status 1 if a check fails. */
#define _POSIX_C_SOURCE 200809L
#include "cuda-internal.h"
#include "rayo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 5
#define STREAM_FLOATS ((size_t)1 << 26)

static int failures;

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

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *random_floats(size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "cuda-host-bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

static void report(const char *group, const char *name, double value, const char *unit, const char *note)
{
    printf("%-8s %-40s %12.3f %-8s %s\n", group, name, value, unit, note ? note : "");
    printf("csv,%s,%s,%.4f,%s\n", group, name, value, unit);
    fflush(stdout);
}

static void check(int ok, const char *what, double value)
{
    printf("check    %-40s %s (%.3g)\n", what, ok ? "ok" : "FAILED", value);
    failures += !ok;
}

/* ---- timing: the median of ROUNDS calls after one warm-up ---------------- */
typedef int (*timed_fn)(void *arg);

static double time_median(timed_fn fn, void *arg)
{
    double t[ROUNDS];
    if (fn(arg) != 0)
        return -1;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        if (fn(arg) != 0)
            return -1;
        t[r] = now_s() - t0;
    }
    qsort(t, ROUNDS, sizeof t[0], cmp_double);
    return t[ROUNDS / 2];
}

/* ---- 1. the link, through the driver --------------------------------------- */
typedef struct link_copy {
    const cuda_driver *drv;
    CUdeviceptr dev;
    void *host;
    size_t bytes;
    int to_device;
} link_copy;

static int run_link_copy(void *p)
{
    const link_copy *c = p;
    CUresult r = c->to_device ? c->drv->cuMemcpyHtoD(c->dev, c->host, c->bytes)
                              : c->drv->cuMemcpyDtoH(c->host, c->dev, c->bytes);
    return r != CUDA_SUCCESS;
}

/* GB/s of pinned and pageable copies; pinned_gbs[0] to the device, [1] back. */
static int bench_link(double pinned_gbs[2])
{
    char why[256];
    const cuda_driver *drv = cuda_driver_get(why, sizeof why);
    CUdevice dev;
    CUcontext ctx;
    if (!drv || drv->cuDeviceGet(&dev, 0) != CUDA_SUCCESS || drv->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        drv->cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "cuda-host-bench: no CUDA device: %s\n", drv ? "cuDeviceGet/context failed" : why);
        return -1;
    }
    link_copy c = {drv, 0, NULL, STREAM_FLOATS * sizeof(float), 1};
    void *pinned = NULL, *pageable = random_floats(STREAM_FLOATS);
    if (drv->cuMemAlloc(&c.dev, c.bytes) != CUDA_SUCCESS || drv->cuMemHostAlloc(&pinned, c.bytes, 0) != CUDA_SUCCESS)
        return -1;
    memcpy(pinned, pageable, c.bytes);
    const char *names[2] = {"pinned", "pageable"};
    for (int kind = 0; kind < 2; kind++)
        for (int dir = 0; dir < 2; dir++) {
            c.host = kind ? pageable : pinned;
            c.to_device = dir == 0;
            double t = time_median(run_link_copy, &c);
            char name[64];
            snprintf(name, sizeof name, "%s, %s", names[kind], dir ? "device to host" : "host to device");
            report("link", name, t > 0 ? (double)c.bytes / t * 1e-9 : 0, "GB/s", "cuMemcpy, 256 MiB");
            if (!kind)
                pinned_gbs[dir] = t > 0 ? (double)c.bytes / t * 1e-9 : 0;
        }
    drv->cuMemFreeHost(pinned);
    drv->cuMemFree(c.dev);
    free(pageable);
    drv->cuDevicePrimaryCtxRelease(dev);
    return 0;
}

/* ---- rayo --------------------------------------------------------------------- */
static rayo_context *open_with(const char *settings)
{
    rayo_options o = {.struct_size = sizeof o, .settings = settings, .no_config_files = 1};
    rayo_context *ctx;
    rayo_status s = rayo_open(&ctx, &o);
    if (s != RAYO_OK) {
        fprintf(stderr, "cuda-host-bench: rayo_open: %s: %s\n", rayo_strerror(s), rayo_last_error());
        exit(1);
    }
    return ctx;
}

typedef struct host_call {
    rayo_context *ctx;
    const char *backend; /* NULL: the default chain */
    rayo_call call;
} host_call;

static int run_host_call(void *p)
{
    host_call *h = p;
    rayo_status s = h->backend ? rayo_run_on(h->ctx, h->backend, &h->call) : rayo_run(h->ctx, &h->call);
    if (s != RAYO_OK)
        fprintf(stderr, "cuda-host-bench: op %u: %s: %s\n", (unsigned)h->call.op, rayo_strerror(s), rayo_last_error());
    return s != RAYO_OK;
}

static const char *const staging_settings[2] = {"[backend.cuda]\npinned_staging = yes\n",
                                                "[backend.cuda]\npinned_staging = no\n"};
static const char *const staging_names[2] = {"pinned staging", "pageable staging"};

/* 2. scale on 2^26 floats through the cuda backend. */
static void bench_staging(void)
{
    float *x = random_floats(STREAM_FLOATS), *y = malloc(STREAM_FLOATS * sizeof *y);
    for (int kind = 0; kind < 2 && y; kind++) {
        host_call h = {open_with(staging_settings[kind]), "cuda",
                       {.struct_size = sizeof(rayo_call), .op = RAYO_OP_SCALE, .n = STREAM_FLOATS, .a = x, .y = y,
                        .alpha = 0.5f}};
        double t = time_median(run_host_call, &h);
        char name[64];
        snprintf(name, sizeof name, "scale 2^26 floats, %s", staging_names[kind]);
        report("host", name, t > 0 ? 2.0 * STREAM_FLOATS * sizeof(float) / t * 1e-9 : 0, "GB/s",
               "(in + out bytes) / time");
        size_t bad = 0;
        for (size_t i = 0; i < STREAM_FLOATS; i += 4093)
            bad += y[i] != 0.5f * x[i];
        check(t > 0 && bad == 0, "scale result", (double)bad);
        rayo_close(h.ctx);
    }
    free(x);
    free(y);
}

/* The latency of a small call: add on 1024 floats, median of 2000. */
static void bench_round_trip(void)
{
    enum { N = 1024, CALLS = 2000 };
    static float a[N], b[N], y[N];
    static double t[CALLS];
    for (int i = 0; i < N; i++)
        a[i] = frand(), b[i] = frand();
    host_call h = {open_with(NULL), "cuda", {.struct_size = sizeof(rayo_call), .op = RAYO_OP_ADD, .n = N, .a = a,
                                             .b = b, .y = y}};
    for (int i = 0; i < 200; i++)
        run_host_call(&h);
    int bad = 0;
    for (int i = 0; i < CALLS; i++) {
        double t0 = now_s();
        bad |= run_host_call(&h);
        t[i] = now_s() - t0;
    }
    qsort(t, CALLS, sizeof t[0], cmp_double);
    report("host", "add 1024 floats, round trip (median)", t[CALLS / 2] * 1e6, "us", NULL);
    check(!bad && y[N - 1] == a[N - 1] + b[N - 1], "add result", (double)bad);
    rayo_close(h.ctx);
}

/* Largest |y - (alpha A B + beta y0)| / (sum of |terms|) over 64 elements. */
static double matmul_error(const float *a, const float *b, const float *y0, const float *y, size_t m, size_t n,
                           size_t k, float alpha, float beta)
{
    double worst = 0;
    for (int s = 0; s < 64; s++) {
        size_t i = (size_t)s * 7919 % m, j = ((size_t)s * 104729 + 13) % n;
        if (s == 0)
            i = m - 1; /* the last block's last row */
        double ref = 0, terms = 0;
        for (size_t p = 0; p < k; p++) {
            double t = (double)a[i * k + p] * b[p * n + j];
            ref += t;
            terms += fabs(t);
        }
        ref = alpha * ref + (y0 ? beta * (double)y0[i * n + j] : 0);
        terms = fabs(alpha) * terms + (y0 ? fabs(beta * (double)y0[i * n + j]) : 0);
        double e = fabs(y[i * n + j] - ref) / (terms > 0 ? terms : 1);
        if (!(e <= worst))
            worst = e;
    }
    return worst;
}

/* 3. matmul n: device buffers, then host memory through the default chain. */
static double bench_device_matmul(size_t n)
{
    rayo_context *ctx = open_with(NULL);
    rayo_buffer *buf[3];
    float *init = random_floats(n * n);
    for (int i = 0; i < 3; i++)
        if (rayo_buffer_create(ctx, "cuda", n * n * sizeof(float), &buf[i]) != RAYO_OK ||
            rayo_buffer_write(buf[i], 0, init, n * n * sizeof(float)) != RAYO_OK)
            return -1;
    free(init);
    rayo_batch_call c = {.struct_size = sizeof c, .op = RAYO_OP_MATMUL, .m = n, .n = n, .k = n, .alpha = 1,
                         .a = {buf[0], 0}, .b = {buf[1], 0}, .y = {buf[2], 0}};
    double t[ROUNDS + 1];
    for (int r = 0; r <= ROUNDS; r++) {
        rayo_batch *b;
        double t0 = now_s();
        rayo_status s = rayo_batch_create(ctx, "cuda", &b);
        if (s == RAYO_OK && (s = rayo_batch_record(b, &c)) == RAYO_OK && (s = rayo_batch_submit(b)) == RAYO_OK)
            s = rayo_batch_wait(b, UINT64_MAX);
        t[r] = now_s() - t0;
        rayo_batch_destroy(b);
        if (s != RAYO_OK)
            return -1;
    }
    qsort(t + 1, ROUNDS, sizeof t[0], cmp_double); /* t[0]: the warm-up */
    for (int i = 0; i < 3; i++)
        rayo_buffer_destroy(buf[i]);
    rayo_close(ctx);
    return t[1 + ROUNDS / 2];
}

static void bench_matmul(size_t n, const double pinned_gbs[2])
{
    double flops = 2.0 * (double)n * n * n, t_dev = bench_device_matmul(n);
    report("matmul", "device buffers (batch)", t_dev * 1e3, "ms", NULL);
    float *a = random_floats(n * n), *b = random_floats(n * n), *y = random_floats(n * n);
    double pcie = 2.0 * n * n * sizeof(float) / (pinned_gbs[0] * 1e9) + n * n * sizeof(float) / (pinned_gbs[1] * 1e9);
    report("matmul", "PCIe time of A, B in and C out, pinned", pcie * 1e3, "ms", "from the link figures");
    for (int kind = 0; kind < 2; kind++) {
        host_call h = {open_with(staging_settings[kind]), NULL,
                       {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .m = n, .n = n, .k = n, .a = a,
                        .b = b, .y = y, .alpha = 1}};
        const char *ran = rayo_backend_for(h.ctx, RAYO_OP_MATMUL, 0, n * n * n);
        double t = time_median(run_host_call, &h);
        char name[64], note[96];
        snprintf(name, sizeof name, "host memory, default chain, %s", staging_names[kind]);
        snprintf(note, sizeof note, "%.1f TFLOP/s on %s; x %.2f of device + PCIe", flops / t * 1e-12,
                 ran ? ran : "?", (t_dev + pcie) / t);
        report("matmul", name, t * 1e3, "ms", note);
        if (!kind)
            printf("csv,matmul,target ratio,%.4f,x\n", (t_dev + pcie) / t);
        double e = matmul_error(a, b, NULL, y, n, n, n, 1, 0);
        check(t > 0 && e < 1e-5, "host matmul result (error / sum|terms|)", e);
        rayo_close(h.ctx);
    }
    free(a);
    free(b);
    free(y);
}

/* 4. the blocked matmul reading C (beta != 0), a last block of odd rows;
 * an axpy whose y spans many staging slots. */
static void check_pieces(void)
{
    size_t m = 2048 + 100, n = 1024, k = 1024;
    float *a = random_floats(m * k), *b = random_floats(k * n), *y0 = random_floats(m * n);
    float *y = malloc(m * n * sizeof *y);
    memcpy(y, y0, m * n * sizeof *y);
    host_call h = {open_with(NULL), "cuda",
                   {.struct_size = sizeof(rayo_call), .op = RAYO_OP_MATMUL, .m = m, .n = n, .k = k, .a = a, .b = b,
                    .y = y, .alpha = 0.75f, .beta = 0.5f}};
    int bad = run_host_call(&h);
    double e = bad ? INFINITY : matmul_error(a, b, y0, y, m, n, k, 0.75f, 0.5f);
    check(!bad && e < 1e-5, "matmul 2148x1024x1024, beta 0.5, on cuda", e);
    size_t count = (size_t)1 << 24;
    float *x = random_floats(count), *yv = random_floats(count), *ref = malloc(count * sizeof *ref);
    for (size_t i = 0; i < count; i++)
        ref[i] = yv[i];
    h.call = (rayo_call){.struct_size = sizeof(rayo_call), .op = RAYO_OP_AXPY, .n = count, .a = x, .y = yv,
                         .alpha = 0.25f};
    bad = run_host_call(&h);
    double worst = 0;
    for (size_t i = 0; i < count && !bad; i++) {
        double want = 0.25 * (double)x[i] + ref[i], d = fabs(yv[i] - want) / (fabs(want) + 1e-30);
        if (!(d <= worst) && fabs(yv[i] - want) > 1e-7)
            worst = d;
    }
    check(!bad && worst < 1e-6, "axpy 2^24 floats on cuda (relative error)", bad ? INFINITY : worst);
    rayo_close(h.ctx);
    free(a), free(b), free(y0), free(y), free(x), free(yv), free(ref);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4096;
    if (n < 256 || n > 16384) {
        fprintf(stderr, "usage: cuda-host-bench [N]   (256 <= N <= 16384, default 4096)\n");
        return 2;
    }
    double pinned_gbs[2] = {0, 0};
    if (bench_link(pinned_gbs) != 0)
        return 77;
    bench_staging();
    bench_round_trip();
    bench_matmul(n, pinned_gbs);
    check_pieces();
    printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
