/* SPDX-License-Identifier: MIT */
/* cuda-bench-infer - the inference kernels of the cuda backend, on device
 * buffers, next to a read-only reference measured in the same run.
 *
 *   cuda-bench-infer [--quick] [--gemv | --attention] [--relaxed] [--dtypes LIST]
 *
 * gemv with f16, bf16, Q8_0, Q4_0, Q4_K and Q6_K weights at 4096 x 11008
 * and 11008 x 4096 (rows x columns), strict and relaxed (Q8_0 and Q4_0:
 * x rounded to 8 bits), and relaxed at a TinyLlama decode step's shapes
 * (2048 x 2048, 256 x 2048, 5632 x 2048, 2048 x 5632, where the time is
 * near a launch's): bytes of the weights / time, each call
 * on another copy of the weights so that the 50 MB L2 cache holds none of
 * them (what decode does: every token streams every weight once).  The
 * reference is rayo's own read-only kernel, sum over 2^28 floats (1 GiB),
 * timed in the same run; the ratio column is gemv over it.  Every row of
 * every result is checked against a float64 dot product of the dequantized
 * row (sum of |terms| as the scale).  Attention, 32 heads, head dim 64, causal:
 * decode (1 query; 4 and 32 KV heads; f16 caches of 4096 and 32768, f16 of 192
 * with 4 KV heads (a small model's decode step), f32 of
 * 4096 and 192) as bytes of K and V / time over the same reference, prefill (2048
 * tokens, 4 KV heads) as a time, for torch's scaled_dot_product_attention
 * in the same run (torch-infer-cuda.py); then head dim 128 (rows "d128":
 * decode, f16 caches of 192 to 32768 with 32 KV heads, of 192 with 4; a Llama-2-7B-shape prefill of
 * 512 tokens, 32 KV heads, as a time and TFLOP/s of the products, and of 128 and 512 tokens with an
 * f32 cache); each at strict precision (rows
 * without a mark: float64 scores) and again at relaxed (rows "relaxed":
 * float32 scores where the rows are aligned).
 * --quick: gemv at 4096 x 11008 only; --gemv: no attention; --attention:
 * attention only; --relaxed: no strict gemv; --dtypes: gemv with the weight
 * dtypes of the comma-separated LIST only (names as rayo_dtype_name gives
 * them: q4_0,q4_k).
 * Output: a table and "csv,..." lines. */
#define _POSIX_C_SOURCE 200809L
#include "rayo.h"
#include "dtype-list.h"
#include "rayo-dtype.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define L2_DEFEAT_BYTES ((size_t)512 << 20) /* weights in flight: 10 x the L2 */

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
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frand(void)
{
    return (float)((double)next_u32() / 4294967296.0 * 2.0 - 1.0);
}

static void die(const char *what, rayo_status s)
{
    fprintf(stderr, "cuda-bench-infer: %s: %s: %s\n", what, rayo_strerror(s), rayo_last_error());
    exit(1);
}

static rayo_buffer *device_buffer(rayo_context *ctx, size_t bytes, const void *init)
{
    rayo_buffer *b;
    rayo_status s = rayo_buffer_create(ctx, "cuda", bytes, &b);
    if (s != RAYO_OK)
        die("rayo_buffer_create", s);
    if (init && (s = rayo_buffer_write(b, 0, init, bytes)) != RAYO_OK)
        die("rayo_buffer_write", s);
    return b;
}

/* Seconds per call: the calls in one batch, median of 5 rounds after a warm-up. */
static double time_calls(rayo_context *ctx, const rayo_batch_call *calls, int count, int reps)
{
    double t[5];
    for (int r = 0; r < 6; r++) {
        rayo_batch *b;
        rayo_status s = rayo_batch_create(ctx, "cuda", &b);
        for (int i = 0; i < reps && s == RAYO_OK; i++)
            s = rayo_batch_record(b, &calls[i % count]);
        double t0 = now_s();
        if (s == RAYO_OK)
            s = rayo_batch_submit(b);
        if (s == RAYO_OK)
            s = rayo_batch_wait(b, UINT64_MAX);
        double t1 = now_s();
        rayo_batch_destroy(b);
        if (s != RAYO_OK)
            die("batch", s);
        if (r > 0)
            t[r - 1] = (t1 - t0) / reps;
    }
    qsort(t, 5, sizeof t[0], cmp_double);
    return t[2];
}

static void report(const char *group, const char *name, double value, const char *unit, const char *note)
{
    printf("%-8s %-30s %12.2f %-8s %s\n", group, name, value, unit, note ? note : "");
    printf("csv,%s,%s,%.4f,%s\n", group, name, value, unit);
    fflush(stdout);
}

/* One row of weights in dtype dt from random values in [-1, 1). */
static void make_row(rayo_dtype dt, size_t n, uint8_t *out, float *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = frand();
    switch (dt) {
    case RAYO_DTYPE_F16:
    case RAYO_DTYPE_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h = dt == RAYO_DTYPE_F16 ? rayo_f32_to_f16(tmp[i]) : rayo_f32_to_bf16(tmp[i]);
            out[2 * i] = (uint8_t)h, out[2 * i + 1] = (uint8_t)(h >> 8);
        }
        break;
    case RAYO_DTYPE_Q8_0: rayo_quantize_q8_0(tmp, out, n); break;
    case RAYO_DTYPE_Q4_0: rayo_quantize_q4_0(tmp, out, n); break;
    default: { /* K-quants: random codes and scales, sane f16 super-scales */
        size_t bytes = n / RAYO_QK_K * rayo_dtype_block_bytes(dt);
        for (size_t i = 0; i < bytes; i++)
            out[i] = (uint8_t)next_u32();
        for (size_t b = 0; b < n / RAYO_QK_K; b++) {
            uint8_t *blk = out + b * rayo_dtype_block_bytes(dt);
            uint16_t d = rayo_f32_to_f16(0.01f + 0.01f * (float)(next_u32() % 100) / 100.0f);
            size_t at = dt == RAYO_DTYPE_Q6_K ? RAYO_Q6_K_D : 0;
            blk[at] = (uint8_t)d, blk[at + 1] = (uint8_t)(d >> 8);
            if (dt == RAYO_DTYPE_Q4_K)
                blk[RAYO_Q4_K_DMIN] = (uint8_t)d, blk[RAYO_Q4_K_DMIN + 1] = (uint8_t)(d >> 8);
        }
    }
    }
}

/* Largest |y - ref| / sum |terms| over 32 rows of the first copy. */
static double check_rows(rayo_dtype dt, const uint8_t *w, size_t row_bytes, const float *x, const float *y,
                         size_t m, size_t n)
{
    float *deq = malloc(n * sizeof *deq);
    double worst = 0;
    for (size_t r = 0; r < m && deq; r++) { /* every row: the blocks loop over rows */
        rayo_dequantize_row(dt, w + r * row_bytes, deq, n);
        double ref = 0, terms = 0;
        for (size_t i = 0; i < n; i++) {
            ref += (double)deq[i] * x[i];
            terms += fabs((double)deq[i] * x[i]);
        }
        double e = fabs(y[r] - ref) / (terms > 0 ? terms : 1);
        if (!(e <= worst))
            worst = e;
    }
    free(deq);
    return deq ? worst : NAN;
}

static void bench_gemv(rayo_context *ctx, rayo_dtype dt, size_t m, size_t n, uint32_t precision, double ref_gbs)
{
    size_t row_bytes = 0, copies;
    if (!rayo_dtype_row_bytes(dt, n, &row_bytes))
        return;
    size_t bytes = row_bytes * m;
    copies = L2_DEFEAT_BYTES / bytes + 1;
    uint8_t *w = malloc(bytes);
    float *tmp = malloc(n * sizeof *tmp), *x = malloc(n * sizeof *x), *y = malloc(m * sizeof *y);
    if (!w || !tmp || !x || !y) {
        fprintf(stderr, "cuda-bench-infer: out of memory\n");
        exit(1);
    }
    for (size_t r = 0; r < m; r++)
        make_row(dt, n, w + r * row_bytes, tmp);
    for (size_t i = 0; i < n; i++)
        x[i] = frand();
    rayo_buffer *xb = device_buffer(ctx, n * sizeof(float), x), *yb = device_buffer(ctx, m * sizeof(float), NULL);
    rayo_buffer **wb = malloc(copies * sizeof *wb);
    rayo_batch_call *calls = malloc(copies * sizeof *calls);
    for (size_t c = 0; c < copies; c++) {
        wb[c] = device_buffer(ctx, bytes, w);
        calls[c] = (rayo_batch_call){.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_GEMV,
                                     .dtypes = RAYO_DTYPES(dt, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32),
                                     .m = m, .n = n, .alpha = 1, .beta = 0, .precision = precision,
                                     .a = {wb[c], 0}, .b = {xb, 0}, .y = {yb, 0}};
    }
    double t = time_calls(ctx, calls, (int)copies, 400);
    /* the last call used copy (400 - 1) % copies: all copies hold the same bytes */
    rayo_status s = rayo_buffer_read(yb, 0, y, m * sizeof(float));
    if (s != RAYO_OK)
        die("rayo_buffer_read", s);
    double gbs = (double)bytes / t * 1e-9;
    char name[64], note[128];
    snprintf(name, sizeof name, "gemv %s %zux%zu%s", rayo_dtype_name(dt), m, n,
             precision == RAYO_PRECISION_RELAXED ? " relaxed" : "");
    snprintf(note, sizeof note, "%.2f us, %.2fx the sum reference, max err %.1e (of sum|terms|)", t * 1e6,
             gbs / ref_gbs, check_rows(dt, w, row_bytes, x, y, m, n));
    report("gemv", name, gbs, "GB/s", note);
    for (size_t c = 0; c < copies; c++)
        rayo_buffer_destroy(wb[c]);
    rayo_buffer_destroy(xb);
    rayo_buffer_destroy(yb);
    free(wb);
    free(calls);
    free(w);
    free(tmp);
    free(x);
    free(y);
}

/* Attention, 32 heads, kv_heads KV heads, head dim `dim`, causal: decode (one
 * query against a cache of n_kv, each call on another copy of the cache:
 * bytes of K and V / time) or prefill (n_q = n_kv: time, for torch's
 * scaled_dot_product_attention in the same run). */
static void bench_attention(rayo_context *ctx, rayo_dtype kv, size_t n_q, size_t n_kv, size_t kv_heads, size_t dim,
                            uint32_t precision, double ref_gbs)
{
    enum { HEADS = 32 };
    const size_t DIM = dim;
    size_t esize = kv == RAYO_DTYPE_F16 ? 2 : 4, kv_bytes = n_kv * kv_heads * DIM * esize;
    size_t q_bytes = n_q * HEADS * DIM * sizeof(float);
    size_t copies = n_q == 1 ? L2_DEFEAT_BYTES / (2 * kv_bytes) + 1 : 1;
    uint8_t *host = malloc(kv_bytes > q_bytes ? kv_bytes : q_bytes);
    if (!host) {
        fprintf(stderr, "cuda-bench-infer: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < (kv_bytes > q_bytes ? kv_bytes : q_bytes) / 2; i++) {
        uint16_t h = kv == RAYO_DTYPE_F16 ? rayo_f32_to_f16(frand()) : (uint16_t)next_u32();
        host[2 * i] = (uint8_t)h, host[2 * i + 1] = (uint8_t)(h >> 8);
    }
    if (kv == RAYO_DTYPE_F32) /* floats in [-1, 1) */
        for (size_t i = 0; i < kv_bytes / 4; i++) {
            float f = frand();
            memcpy(host + 4 * i, &f, 4);
        }
    float *q = malloc(q_bytes);
    for (size_t i = 0; q && i < q_bytes / 4; i++)
        q[i] = frand();
    rayo_buffer *qb = device_buffer(ctx, q_bytes, q), *ob = device_buffer(ctx, q_bytes, NULL);
    rayo_buffer **kb = malloc(2 * copies * sizeof *kb);
    rayo_batch_call *calls = malloc(copies * sizeof *calls);
    rayo_attention_params *p = malloc(sizeof *p);
    *p = (rayo_attention_params){.struct_size = sizeof *p, .flags = RAYO_ATTN_CAUSAL, .kv_dtype = kv, .n_q = n_q,
                                 .n_kv = n_kv, .n_heads = HEADS, .n_kv_heads = kv_heads, .head_dim = DIM,
                                 .scale = 0.125f};
    for (size_t c = 0; c < copies; c++) {
        kb[2 * c] = device_buffer(ctx, kv_bytes, host);
        kb[2 * c + 1] = device_buffer(ctx, kv_bytes, host);
        calls[c] = (rayo_batch_call){.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_ATTENTION,
                                     .dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, kv, kv, RAYO_DTYPE_F32),
                                     .m = n_q, .n = DIM, .k = n_kv, .a = {qb, 0}, .b = {kb[2 * c], 0},
                                     .c = {kb[2 * c + 1], 0}, .y = {ob, 0}, .params = p, .precision = precision};
    }
    double t = time_calls(ctx, calls, (int)copies, n_q == 1 ? 400 : 10);
    char name[64], note[128];
    snprintf(name, sizeof name, "attention %s %zu x %zu kv%zu%s%s", rayo_dtype_name(kv), n_q, n_kv, kv_heads,
             dim == 128 ? " d128" : "", precision == RAYO_PRECISION_RELAXED ? " relaxed" : "");
    if (n_q == 1) {
        double gbs = 2.0 * (double)kv_bytes / t * 1e-9;
        snprintf(note, sizeof note, "%.2f us, %.2fx the sum reference (bytes of K and V)", t * 1e6, gbs / ref_gbs);
        report("attn", name, gbs, "GB/s", note);
    } else { /* the products' work over the pairs a causal mask leaves: 4 d flops a pair and head */
        double pairs = (double)n_q * (double)(n_kv - n_q) + (double)n_q * (double)(n_q + 1) / 2;
        snprintf(note, sizeof note, "causal, 32 heads / %zu KV heads, head dim %zu, %.1f TFLOP/s", kv_heads, dim,
                 4.0 * (double)dim * HEADS * pairs / t * 1e-12);
        report("attn", name, t * 1e3, "ms", note);
    }
    for (size_t c = 0; c < 2 * copies; c++)
        rayo_buffer_destroy(kb[c]);
    rayo_buffer_destroy(qb);
    rayo_buffer_destroy(ob);
    free(kb);
    free(calls);
    free(p);
    free(q);
    free(host);
}

/* The attention cases: decode at the cache lengths and KV head counts of
 * 7B-class models (4 KV heads: grouped queries; 32: one a head), decode at
 * a short f32 cache (192 keys: rayo-llama's decode of 64 tokens after 128,
 * where the time is a launch's), prefill; head_dim 64, then decode and a
 * 512-token prefill at head_dim 128 (a Llama-2-7B layer: 32 KV heads, f16
 * cache), decode with 8 KV heads at head_dim 128 (groups of 4) and with
 * a long f32 cache, and 128- and 512-token prefills with an f32 cache
 * (rayo-llama's). */
static void bench_attentions(rayo_context *ctx, double ref)
{
    static const size_t kv_heads[] = {4, 32}, n_kv[] = {4096, 32768};
    static const uint32_t precisions[] = {RAYO_PRECISION_STRICT, RAYO_PRECISION_RELAXED};
    for (size_t r = 0; r < 2; r++) {
        uint32_t pr = precisions[r];
        for (size_t h = 0; h < 2; h++)
            for (size_t n = 0; n < 2; n++)
                bench_attention(ctx, RAYO_DTYPE_F16, 1, n_kv[n], kv_heads[h], 64, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F16, 1, 192, 4, 64, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F32, 1, 4096, 4, 64, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F32, 1, 192, 4, 64, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F32, 1, 192, 32, 64, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F16, 2048, 2048, 4, 64, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F32, 2048, 2048, 4, 64, pr, ref);
        static const size_t n_kv128[] = {192, 1024, 2048, 4096, 32768};
        for (size_t n = 0; n < sizeof n_kv128 / sizeof n_kv128[0]; n++)
            bench_attention(ctx, RAYO_DTYPE_F16, 1, n_kv128[n], 32, 128, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F16, 1, 192, 4, 128, pr, ref);
        for (size_t n = 3; n < sizeof n_kv128 / sizeof n_kv128[0]; n++) /* groups of 4 (8 KV heads) */
            bench_attention(ctx, RAYO_DTYPE_F16, 1, n_kv128[n], 8, 128, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F32, 1, 32768, 4, 64, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F16, 512, 512, 32, 128, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F32, 128, 128, 32, 128, pr, ref);
        bench_attention(ctx, RAYO_DTYPE_F32, 512, 512, 32, 128, pr, ref);
    }
}

/* Read bandwidth of rayo's sum over 1 GiB (2^28 floats). */
static double bench_sum_reference(rayo_context *ctx, int quick)
{
    size_t n = (size_t)1 << (quick ? 26 : 28);
    rayo_buffer *a, *y = device_buffer(ctx, 16, NULL);
    rayo_status s = rayo_buffer_create(ctx, "cuda", n * sizeof(float), &a);
    if (s != RAYO_OK)
        die("rayo_buffer_create", s);
    float *chunk = calloc((size_t)1 << 20, sizeof *chunk);
    for (size_t off = 0; off < n && chunk; off += (size_t)1 << 20)
        if ((s = rayo_buffer_write(a, off * sizeof(float), chunk, sizeof(float) << 20)) != RAYO_OK)
            die("rayo_buffer_write", s);
    free(chunk);
    rayo_batch_call c = {.struct_size = sizeof(rayo_batch_call), .op = RAYO_OP_SUM, .n = n, .a = {a, 0}, .y = {y, 0}};
    double t = time_calls(ctx, &c, 1, 20);
    double gbs = (double)n * sizeof(float) / t * 1e-9;
    report("ref", "sum (read only), 1 GiB", gbs, "GB/s", NULL);
    rayo_buffer_destroy(a);
    rayo_buffer_destroy(y);
    return gbs;
}

int main(int argc, char **argv)
{
    int quick = 0, gemv_only = 0, attention_only = 0, relaxed_only = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--relaxed"))
            relaxed_only = 1;
        else if (!strcmp(argv[i], "--dtypes") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--gemv") && !attention_only)
            gemv_only = 1;
        else if (!strcmp(argv[i], "--attention") && !gemv_only)
            attention_only = 1;
        else {
            fprintf(stderr, "usage: cuda-bench-infer [--quick] [--gemv | --attention] [--relaxed] [--dtypes LIST]\n");
            return 2;
        }
    }
    rayo_options o = {.struct_size = sizeof o, .no_config_files = 1};
    rayo_context *ctx;
    rayo_status s = rayo_open(&ctx, &o);
    if (s != RAYO_OK)
        die("rayo_open", s);
    if (!rayo_backend_for(ctx, RAYO_OP_GEMV, RAYO_DTYPES(RAYO_DTYPE_Q8_0, 0, 0, 0), 1)) {
        fprintf(stderr, "cuda-bench-infer: no backend for gemv q8_0\n");
        return 1;
    }
    printf("%-8s %-30s %12s %-8s %s\n", "group", "what", "value", "unit", "note");
    double ref = bench_sum_reference(ctx, quick);
    static const rayo_dtype dts[] = {RAYO_DTYPE_F16, RAYO_DTYPE_BF16, RAYO_DTYPE_Q8_0,
                                     RAYO_DTYPE_Q4_0, RAYO_DTYPE_Q4_K, RAYO_DTYPE_Q6_K};
    if (!gemv_only)
        bench_attentions(ctx, ref);
    if (attention_only) {
        rayo_close(ctx);
        return 0;
    }
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++)
        for (uint32_t p = relaxed_only ? RAYO_PRECISION_RELAXED : RAYO_PRECISION_STRICT;
             p <= RAYO_PRECISION_RELAXED && dtype_listed(only, dts[i]); p++) {
            bench_gemv(ctx, dts[i], 4096, 11008, p, ref);
            if (!quick)
                bench_gemv(ctx, dts[i], 11008, 4096, p, ref);
        }
    static const size_t decode[][2] = {{2048, 2048}, {256, 2048}, {5632, 2048}, {2048, 5632}};
    for (size_t i = 0; i < sizeof decode / sizeof decode[0] && !quick; i++)
        for (size_t d = 2; d < 5; d++) /* Q8_0, Q4_0, Q4_K */
            if (dtype_listed(only, dts[d]))
                bench_gemv(ctx, dts[d], decode[i][0], decode[i][1], RAYO_PRECISION_RELAXED, ref);
    rayo_close(ctx);
    return 0;
}
