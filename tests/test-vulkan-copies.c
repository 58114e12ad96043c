/* SPDX-License-Identifier: MIT */
/* test-vulkan-copies - the f16 copies of weights that the vulkan backend's
 * relaxed prompt products keep between calls ([backend.vulkan]
 * weight_copies): a copy is only ever read while it equals what converting
 * the weight now would make.
 *
 * With weight_copies = auto, no and a limit of 1 MiB (two of the three
 * weights here fit):
 *   - a relaxed f32 x Q4_0^T product run in two batches: within the relaxed
 *     contract of a float64 reference, the second (served by the kept copy)
 *     bit for bit the first;
 *   - the weight written with buffer_write: a new batch and a replay of a
 *     batch recorded before the write both give the new reference;
 *   - an f16 weight that a convert op writes on the device, before the
 *     product's batch is recorded and after (the product's batch replayed):
 *     each product follows the weight's values of its run;
 *   - the three settings' results bit for bit the same.
 * The backend's debug log says how many copies were made and served (auto:
 * some of each; no: none).  SKIP (77) where vulkan is unusable or its
 * device has no f16 cooperative matrix (the half prompt, and so the kept
 * copies, do not run there: lavapipe).  Fresh random inputs
 * (RAYO_CONFORM_SEED repeats a run).
 */
#include "testutil.h"
#include "conform.h"

#include <math.h>

#define SETTINGS "[rayo]\nlog = debug\n[plugins]\nallow = scalar, vulkan\n[dispatch]\norder = vulkan\n"
#define M 37
#define K 512
#define N1 300  /* the Q4_0 weight's rows */
#define N2 200  /* the f16 weight's rows */

static rayo_context *ctx;
static conform_rng rng;

static rayo_buffer *buffer_of(const void *data, size_t bytes)
{
    rayo_buffer *b = NULL;
    CHECK(rayo_buffer_create(ctx, "vulkan", bytes, &b) == RAYO_OK, "buffer: %s", rayo_last_error());
    if (b && data)
        CHECK(rayo_buffer_write(b, 0, data, bytes) == RAYO_OK, "write: %s", rayo_last_error());
    return b;
}

static size_t row_bytes(rayo_dtype dt, size_t n)
{
    size_t r = 0;
    rayo_dtype_row_bytes(dt, n, &r);
    return r;
}

/* rows x K of dt, random. */
static unsigned char *weight(rayo_dtype dt, size_t rows)
{
    unsigned char *w = malloc(rows * row_bytes(dt, K));
    CHECK(w != NULL, "out of memory");
    for (size_t r = 0; r < rows; r++)
        conform_fill_row(&rng, dt, w + r * row_bytes(dt, K), K, -1, 1);
    return w;
}

/* y = a (M x K) times w^T (w: n x K of dt), relaxed. */
static rayo_batch_call product(rayo_buffer *a, rayo_buffer *w, rayo_dtype dt, size_t n, rayo_buffer *y)
{
    return (rayo_batch_call){
        .struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_MATMUL, .flags = RAYO_TRANS_B,
        .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, dt, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
        .m = M, .n = n, .k = K, .alpha = 1.0f, .precision = RAYO_PRECISION_RELAXED,
        .a = {a, 0}, .b = {w, 0}, .y = {y, 0},
    };
}

/* y (read back) against the float64 product of a and w's stored values,
 * within the relaxed 2e-3 of the SUM scale; returns the result (M x n). */
static float *expect_product(rayo_buffer *y, const float *a, const unsigned char *w, rayo_dtype dt, size_t n,
                             const char *what)
{
    float *got = malloc(M * n * 4), *row = malloc(K * 4);
    CHECK(rayo_buffer_read(y, 0, got, M * n * 4) == RAYO_OK, "read: %s", rayo_last_error());
    size_t bad = 0;
    for (size_t j = 0; j < n; j++) {
        rayo_dequantize_row(dt, w + j * row_bytes(dt, K), row, K);
        for (size_t i = 0; i < M; i++) {
            double sum = 0, scale = 0;
            for (size_t p = 0; p < K; p++) {
                sum += (double)a[i * K + p] * row[p];
                scale += fabs((double)a[i * K + p] * row[p]);
            }
            bad += !(fabs(got[i * n + j] - sum) <= 2e-3 * scale);
        }
    }
    CHECK(bad == 0, "%s: %zu of %zu elements outside the relaxed bound of the float64 product", what, bad,
          (size_t)M * n);
    free(row);
    return got;
}

static void expect_same(const float *got, const float *want, size_t n, const char *what)
{
    CHECK(memcmp(got, want, n * 4) == 0, "%s: not bit for bit the same", what);
}

static void run(rayo_batch *b, const char *what)
{
    rayo_status st = rayo_batch_submit(b);
    if (st == RAYO_OK)
        st = rayo_batch_wait(b, UINT64_MAX);
    CHECK(st == RAYO_OK, "%s: %s", what, rayo_last_error());
}

static rayo_batch *batch_of(const rayo_batch_call *calls, size_t n)
{
    rayo_batch *b = NULL;
    rayo_status st = rayo_batch_create(ctx, "vulkan", &b);
    for (size_t i = 0; i < n && st == RAYO_OK; i++)
        st = rayo_batch_record(b, &calls[i]);
    CHECK(st == RAYO_OK, "recording: %s", rayo_last_error());
    return b;
}

/* The results of one setting: out[0..5], each M x N1 or M x N2. */
typedef struct results {
    float *r[6];
} results;

/* A Q4_0 weight: two batches, then written, a new batch and a replay of
 * one recorded before the write.  Two more weights of the same shape fill
 * the 1 MiB limit (each copy ~0.4 MiB). */
static void q4_weight(const float *a, rayo_buffer *ba, results *res)
{
    unsigned char *w = weight(RAYO_DTYPE_Q4_0, N1), *w2 = weight(RAYO_DTYPE_Q4_0, N1);
    size_t wb = N1 * row_bytes(RAYO_DTYPE_Q4_0, K);
    rayo_buffer *bw = buffer_of(w, wb), *by = buffer_of(NULL, M * N1 * 4);
    rayo_batch_call call = product(ba, bw, RAYO_DTYPE_Q4_0, N1, by);
    CHECK(test_run_batch(ctx, "vulkan", &call, 1) == RAYO_OK, "first product: %s", rayo_last_error());
    res->r[0] = expect_product(by, a, w, RAYO_DTYPE_Q4_0, N1, "q4_0, first");
    rayo_batch *kept = batch_of(&call, 1); /* recorded before the write below */
    run(kept, "q4_0, second");
    res->r[1] = expect_product(by, a, w, RAYO_DTYPE_Q4_0, N1, "q4_0, second");
    expect_same(res->r[1], res->r[0], M * N1, "q4_0, second against first");
    /* two more weights: with the 1 MiB limit the third is converted per call */
    rayo_buffer *other[2] = {buffer_of(w2, wb), buffer_of(w2, wb)};
    for (int i = 0; i < 2; i++) {
        rayo_batch_call c2 = product(ba, other[i], RAYO_DTYPE_Q4_0, N1, by);
        CHECK(test_run_batch(ctx, "vulkan", &c2, 1) == RAYO_OK, "other weight: %s", rayo_last_error());
        free(expect_product(by, a, w2, RAYO_DTYPE_Q4_0, N1, "q4_0, another weight"));
    }
    rayo_buffer_destroy(other[0]);
    rayo_buffer_destroy(other[1]);
    CHECK(rayo_buffer_write(bw, 0, w2, wb) == RAYO_OK, "write: %s", rayo_last_error());
    CHECK(test_run_batch(ctx, "vulkan", &call, 1) == RAYO_OK, "after the write: %s", rayo_last_error());
    res->r[2] = expect_product(by, a, w2, RAYO_DTYPE_Q4_0, N1, "q4_0, new batch after buffer_write");
    run(kept, "q4_0, replay after the write");
    res->r[3] = expect_product(by, a, w2, RAYO_DTYPE_Q4_0, N1, "q4_0, replay after buffer_write");
    expect_same(res->r[3], res->r[2], M * N1, "q4_0, replay against new batch");
    rayo_batch_destroy(kept);
    rayo_buffer_destroy(bw);
    rayo_buffer_destroy(by);
    free(w), free(w2);
}

/* An f16 weight written by a convert op: before the product's batch is
 * recorded, and after it (the batch replayed). */
static void device_written_weight(const float *a, rayo_buffer *ba, results *res)
{
    size_t nx = (size_t)N2 * K;
    float *x = malloc(nx * 4);
    unsigned char *w = malloc(nx * 2);
    rayo_buffer *bx = buffer_of(NULL, nx * 4), *bw = buffer_of(NULL, nx * 2), *by = buffer_of(NULL, M * N2 * 4);
    rayo_batch_call conv = {
        .struct_size = sizeof conv, .op = RAYO_OP_CONVERT,
        .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_NONE, RAYO_DTYPE_F16), .n = nx,
        .a = {bx, 0}, .y = {bw, 0},
    };
    rayo_batch_call call = product(ba, bw, RAYO_DTYPE_F16, N2, by);
    rayo_batch *prod = NULL;
    for (int round = 0; round < 2; round++) {
        conform_fill_uniform(&rng, x, nx, -1, 1);
        CHECK(rayo_buffer_write(bx, 0, x, nx * 4) == RAYO_OK, "write: %s", rayo_last_error());
        CHECK(test_run_batch(ctx, "vulkan", &conv, 1) == RAYO_OK, "convert: %s", rayo_last_error());
        CHECK(rayo_buffer_read(bw, 0, w, nx * 2) == RAYO_OK, "read: %s", rayo_last_error());
        if (!prod)
            prod = batch_of(&call, 1);
        run(prod, "f16 product");
        res->r[4 + round] = expect_product(by, a, w, RAYO_DTYPE_F16, N2,
                                           round ? "f16 weight written on the device again, replay"
                                                 : "f16 weight written on the device");
    }
    rayo_batch_destroy(prod);
    rayo_buffer_destroy(bx);
    rayo_buffer_destroy(bw);
    rayo_buffer_destroy(by);
    free(x), free(w);
}

/* The kept copies' counters of the debug log at close: made, served. */
static int counters(unsigned long *made, unsigned long *hits)
{
    const char *at = strstr(test_log, "weight_copies: ");
    while (at && sscanf(at, "weight_copies: %lu made, %lu calls served", made, hits) != 2)
        at = strstr(at + 1, "weight_copies: ");
    return at != NULL;
}

/* 0: ran; 77: the half prompt does not run on this device. */
static int run_setting(const char *setting, uint64_t seed, results *res)
{
    char settings[512];
    snprintf(settings, sizeof settings, "%s[backend.vulkan]\nweight_copies = %s\n", SETTINGS, setting);
    ctx = NULL;
    if (test_open(&ctx, settings) != RAYO_OK) {
        CHECK(0, "rayo_open: %s", rayo_last_error());
        return 0;
    }
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    if (test_backend(ctx, "vulkan", &info) != RAYO_OK || info.status != RAYO_BACKEND_LOADED) {
        printf("SKIP: vulkan: %s\n", info.reason && info.reason[0] ? info.reason : "not loaded");
        rayo_close(ctx);
        return 77;
    }
    if (!strstr(test_log, "half prompt on")) {
        printf("SKIP: %s has no f16 cooperative matrix: no half prompt, no kept copies\n", info.device);
        rayo_close(ctx);
        return 77;
    }
    printf("weight_copies = %s on %s, seed %llu (RAYO_CONFORM_SEED repeats it)\n", setting, info.device,
           (unsigned long long)seed);
    conform_rng_seed(&rng, seed); /* the same inputs for every setting */
    float *a = malloc(M * K * 4);
    conform_fill_uniform(&rng, a, M * K, -1, 1);
    rayo_buffer *ba = buffer_of(a, M * K * 4);
    q4_weight(a, ba, res);
    device_written_weight(a, ba, res);
    rayo_buffer_destroy(ba);
    free(a);
    rayo_close(ctx);
    unsigned long made = 0, hits = 0;
    int said = counters(&made, &hits);
    if (!strcmp(setting, "no"))
        CHECK(!said, "weight_copies = no: the log speaks of kept copies");
    else
        CHECK(said && made >= 1 && hits >= 1, "weight_copies = %s: copies made %lu, served %lu (want some of each)",
              setting, made, hits);
    if (!strcmp(setting, "1"))
        CHECK(strstr(test_log, "limit of 1 MiB is reached") != NULL, "weight_copies = 1: the limit was not logged");
    return 0;
}

int main(void)
{
    test_clear_rayo_env();
    uint64_t seed = conform_default_seed();
    static const char *const settings[] = {"auto", "no", "1"};
    results res[3] = {0};
    for (int i = 0; i < 3; i++)
        if (run_setting(settings[i], seed, &res[i]) == 77)
            return 77;
    for (int i = 1; i < 3; i++)
        for (int r = 0; r < 6; r++)
            if (res[0].r[r] && res[i].r[r])
                expect_same(res[i].r[r], res[0].r[r], M * (r < 4 ? N1 : N2), settings[i]);
    for (int i = 0; i < 3; i++)
        for (int r = 0; r < 6; r++)
            free(res[i].r[r]);
    return test_summary();
}
