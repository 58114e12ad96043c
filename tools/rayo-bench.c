/* SPDX-License-Identifier: MIT */
/* rayo-bench - how fast rayo's ops run, per backend and size, next to
 * references measured in the same run.
 *
 *   rayo-bench [--ops LIST] [--backends LIST] [--sizes LIST] [--reps N]
 *              [--threads N] [--vs openblas|blis] [--csv FILE] [--dispatch]
 *              [--min-ms MS] [--clock wall|cpu] [--plot FILE.svg|.png] [--dtype DT]
 *              [--precision strict|relaxed]
 *
 * Every case is timed as the median of --reps samples; a sample repeats the
 * call until it lasts at least --min-ms milliseconds.  A BLAS reference and
 * the backend it is compared with are sampled alternately, so that load
 * changes during the run hit both alike.  References, measured in
 * this run with the same thread count and shown as rows of their own:
 *   - read (a sum), copy (memcpy) and a triad (a = b + s c) over the same
 *     number of floats on the same threads, vectorized (bench-stream.c), for
 *     the vector ops from 2^20 elements up, each row marked hot (the arrays
 *     stay in the last-level cache) or cold: the columns "read", "copy" and
 *     "triad" give the op's bandwidth (bytes its operands move / time) over
 *     theirs;
 *     for gemv with --dtype (quantized or half weights), the same over as
 *     many bytes as the weights, and the op's bytes are the weights' (what
 *     decode streams);
 *   - for matmul with --dtype (C = A W^T, W quantized or half), the f32
 *     matmul of the same shape on the same backend, timed in alternating
 *     samples: the column "f32" gives its time over the typed one's;
 *   - with --vs, OpenBLAS or BLIS (dlopened, no build dependency) for the
 *     ops BLAS has: sgemm, sgemv, sdot, saxpy, sasum, snrm2; the column gives
 *     the reference's time over rayo's (above 1: rayo is faster).  The
 *     header names the kernel set the library runs; where it would pick a
 *     worse one than the CPU runs, rayo-bench sets the library's variable
 *     first (bench-refs.c) and says so.
 * --plot draws the table with gnuplot (bench-plot.c).
 * --dispatch times small calls through the public API (dispatch included)
 * against a direct call of the same kernel of the same plugin, dlopened here.
 *
 * The table goes to stdout, progress to stderr, all rows to --csv.
 */
#define _GNU_SOURCE
#include "bench.h"
#include "conform.h"
#include "tool-version.h"
#include "rayo-plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST 64

/* ---- options ------------------------------------------------------------------ */
typedef struct size_spec {
    char text[48];
    size_t d[3];   /* the numbers given */
    int count;     /* how many: 1 (N), 2 (MxN), 3 (MxNxK) */
} size_spec;

typedef struct options {
    const rayo_op_info *ops[MAX_LIST];
    size_t op_count;
    char *backends[MAX_LIST];
    size_t backend_count;
    size_spec sizes[MAX_LIST];
    size_t size_count;
    int reps;
    double min_ms;
    unsigned threads;      /* 0: rayo's default */
    const char *vs;        /* "openblas", "blis" or NULL */
    const char *csv_path;
    const char *plot_path;
    int dispatch;
    rayo_dtype weights;    /* --dtype: gemv's A (F32 unless given) */
    uint32_t precision;    /* --precision: every call's (rayo_precision) */
    int reference_only;    /* the child that times the BLAS reference at its best */
} options;

/* ---- time ----------------------------------------------------------------------- */
/* Wall-clock time by default; --clock cpu counts only the CPU time of this
 * process (all its threads), which leaves out the time other processes take
 * on a shared machine: meaningful for one thread. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(bench_clock, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Something to time: one call of it. */
typedef int (*bench_fn)(void *arg);

/* How many calls make a sample of at least min_ms; 0 if the function fails.
 * The first call is a warm-up (caches, page faults, thread pool start). */
static long calibrate(bench_fn fn, void *arg, double min_ms)
{
    if (fn(arg) != 0)
        return 0;
    double t0 = now_ns();
    if (fn(arg) != 0)
        return 0;
    double one = now_ns() - t0;
    long iters = one > 0 ? (long)(min_ms * 1e6 / one) + 1 : 1000;
    return iters > 10000000 ? 10000000 : iters;
}

/* One sample: ns per call over iters calls; < 0 if a call fails. */
static double sample(bench_fn fn, void *arg, long iters)
{
    double start = now_ns();
    for (long i = 0; i < iters; i++)
        if (fn(arg) != 0)
            return -1.0;
    return (now_ns() - start) / (double)iters;
}

static double median(double *v, int count)
{
    qsort(v, (size_t)count, sizeof v[0], compare_doubles);
    return count % 2 ? v[count / 2] : 0.5 * (v[count / 2 - 1] + v[count / 2]);
}

#define MAX_REPS 256

/* Median time of one call in ns over `reps` samples of at least min_ms
 * each; < 0 if the function fails. */
static double time_median(bench_fn fn, void *arg, int reps, double min_ms)
{
    long iters = calibrate(fn, arg, min_ms);
    double samples[MAX_REPS];
    if (!iters)
        return -1.0;
    for (int r = 0; r < reps; r++)
        if ((samples[r] = sample(fn, arg, iters)) < 0)
            return -1.0;
    return median(samples, reps);
}

/* Calls fn for at least ms milliseconds, untimed; -1 if a call fails. */
static int warm_up(bench_fn fn, void *arg, double ms)
{
    double end = now_ns() + ms * 1e6;
    do {
        if (fn(arg) != 0)
            return -1;
    } while (now_ns() < end);
    return 0;
}

/* Two functions timed in alternating samples (a, b, a, b...), so that a
 * change of the machine's load during the run hits both alike.  Each sample
 * is preceded by warm_ms of untimed calls: after the other side's sample a
 * thread pool's workers are asleep, and on a virtual machine an idle vCPU
 * takes tens of milliseconds to run at full speed again; OpenBLAS's workers
 * also spin for ~0.1 s after their last call, taking the cores from rayo's. */
static int time_pair(bench_fn fa, void *arg_a, bench_fn fb, void *arg_b, int reps, double min_ms,
                     double warm_ms, double *ns_a, double *ns_b)
{
    long ia = calibrate(fa, arg_a, min_ms), ib = calibrate(fb, arg_b, min_ms);
    double sa[MAX_REPS], sb[MAX_REPS];
    *ns_a = *ns_b = -1.0;
    for (int r = 0; r < reps; r++) {
        if (ia && (warm_up(fa, arg_a, warm_ms) != 0 || (sa[r] = sample(fa, arg_a, ia)) < 0))
            return -1;
        if (ib && (warm_up(fb, arg_b, warm_ms) != 0 || (sb[r] = sample(fb, arg_b, ib)) < 0))
            return -1;
    }
    if (ia)
        *ns_a = median(sa, reps);
    if (ib)
        *ns_b = median(sb, reps);
    return 0;
}

/* ---- buffers -------------------------------------------------------------------- */
static conform_rng rng;

static float *make_floats(size_t count, double lo, double hi)
{
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, (count ? count : 1) * sizeof(float)) != 0)
        return NULL;
    conform_fill_uniform(&rng, p, count, lo, hi);
    return p;
}

/* ---- the call of one case -------------------------------------------------------- */
typedef struct bench_case {
    const rayo_op_info *op;
    rayo_call call;
    size_t m, n, k;        /* the shape as the op sees it */
    double bytes;          /* bytes its operands move per call */
    double flops;          /* 0 where not meaningful */
    size_t stream_n;       /* floats of the read/copy/triad references; 0: none */
    char shape[48];
    float *buf[4];
    size_t argmax_out;
    rayo_rope_params rope;        /* the inference ops' parameters */
    rayo_attention_params attn;
} bench_case;

static void free_case(bench_case *c)
{
    for (int i = 0; i < 4; i++)
        free(c->buf[i]);
    memset(c->buf, 0, sizeof c->buf);
}

/* gemv, A (rows x cols) in dtype weights: the bytes counted are the
 * weights' (decode streams them once per token; x and y stay in cache). */
static int make_typed_gemv(size_t rows, size_t cols, rayo_dtype weights, bench_case *c)
{
    size_t row_bytes;
    if (!rayo_dtype_row_bytes(weights, cols, &row_bytes) || !rows)
        return -1; /* cols not a whole number of blocks */
    unsigned char *a = NULL;
    if (posix_memalign((void **)&a, 64, rows * row_bytes) != 0)
        return -1;
    for (size_t r = 0; r < rows; r++)
        conform_fill_row(&rng, weights, a + r * row_bytes, cols, -1.0f, 1.0f);
    rayo_call *call = &c->call;
    c->buf[0] = (float *)(void *)a;
    call->a = a;
    call->dtypes = RAYO_DTYPES(weights, RAYO_DTYPE_F32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32);
    call->m = c->m = rows;
    call->n = c->n = cols;
    call->b = c->buf[1] = make_floats(cols, -1.0, 1.0);
    call->y = c->buf[2] = make_floats(rows, -1.0, 1.0);
    call->alpha = 1.0f;
    c->bytes = (double)(rows * row_bytes);
    c->flops = 2.0 * (double)rows * (double)cols;
    c->stream_n = rows * row_bytes / sizeof(float);
    snprintf(c->shape, sizeof c->shape, "%zux%zu %s", rows, cols, rayo_dtype_name(weights));
    if (!c->buf[1] || !c->buf[2]) {
        free_case(c);
        return -1;
    }
    return 0;
}

/* ---- the inference ops ------------------------------------------------------------
 * Shapes from --sizes N (or RxC), operands random; bytes are what the
 * operands move per call, and the read/copy/triad references run over as
 * many bytes:
 *   attention    decode (one query) against a cache of N positions, or R
 *                queries (causal prefill) against C; 32 heads, 4 KV heads,
 *                head dim 64; the cache in --dtype f16, else f32; bytes: the
 *                K and V rows read (what decode streams per layer);
 *   rope         N floats as tokens of 32 heads x 128, NEOX; x and y;
 *   swiglu, geglu, geglu_tanh   rows of min(N, 4096) (or R x C); gate, up, y;
 *   get_rows     N / 4096 rows of 4096 from a table of 4096 rows in --dtype
 *                (f32 without); the rows read and y;
 *   convert      N values f32 -> f16, or --dtype -> f32; x and y. */
#define BENCH_HEADS 32
#define BENCH_KV_HEADS 4
#define BENCH_HEAD_DIM 64
#define BENCH_ROPE_HEAD_DIM 128
#define BENCH_ROW 4096

/* count values of dtype dt, random in [-1, 1), 64-byte aligned; NULL when
 * count is not whole blocks or memory is short. */
static void *make_typed(rayo_dtype dt, size_t count)
{
    size_t bytes;
    void *p = NULL;
    if (!rayo_dtype_row_bytes(dt, count, &bytes) || posix_memalign(&p, 64, bytes + 64) != 0)
        return NULL;
    conform_fill_row(&rng, dt, p, count, -1.0f, 1.0f);
    return p;
}

static int make_attention(const size_spec *s, rayo_dtype kv, bench_case *c)
{
    size_t n_q = s->count == 2 ? s->d[0] : 1, n_kv = s->count == 2 ? s->d[1] : s->d[0];
    size_t d = BENCH_HEAD_DIM, kv_values = n_kv * BENCH_KV_HEADS * d;
    if (s->count == 3 || n_q > n_kv)
        return -1;
    c->attn = (rayo_attention_params){ .struct_size = sizeof c->attn, .flags = RAYO_ATTN_CAUSAL, .kv_dtype = kv,
                                        .n_q = n_q, .n_kv = n_kv, .n_heads = BENCH_HEADS,
                                        .n_kv_heads = BENCH_KV_HEADS, .head_dim = d,
                                        .scale = (float)(1.0 / sqrt((double)d)) };
    rayo_call *call = &c->call;
    call->dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, kv, kv, RAYO_DTYPE_F32);
    call->m = c->m = n_q, call->n = c->n = d, call->k = c->k = n_kv;
    call->params = &c->attn;
    call->a = c->buf[0] = make_floats(n_q * BENCH_HEADS * d, -1, 1);
    call->b = c->buf[1] = make_typed(kv, kv_values);
    call->c = c->buf[3] = make_typed(kv, kv_values);
    call->y = c->buf[2] = make_floats(n_q * BENCH_HEADS * d, -1, 1);
    c->bytes = 2.0 * (double)(kv_values * (kv == RAYO_DTYPE_F16 ? 2 : 4));
    c->flops = 4.0 * (double)n_q * BENCH_HEADS * (double)n_kv * (double)d; /* causal prefill: about half */
    c->stream_n = (size_t)(c->bytes / sizeof(float));
    snprintf(c->shape, sizeof c->shape, "%zux%zu %s", n_q, n_kv, rayo_dtype_name(kv));
    return 0;
}

static int make_rope(size_t total, bench_case *c)
{
    size_t per_token = BENCH_HEADS * BENCH_ROPE_HEAD_DIM, tokens = total / per_token;
    if (!tokens)
        return -1;
    c->rope = (rayo_rope_params){ .struct_size = sizeof c->rope, .mode = RAYO_ROPE_NEOX, .freq_base = 10000.0f,
                                   .freq_scale = 1.0f, .n_heads = BENCH_HEADS, .head_dim = BENCH_ROPE_HEAD_DIM };
    rayo_call *call = &c->call;
    call->dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, RAYO_DTYPE_I32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32);
    call->m = c->m = tokens, call->n = c->n = BENCH_ROPE_HEAD_DIM;
    call->params = &c->rope;
    call->a = c->buf[0] = make_floats(tokens * per_token, -1, 1);
    call->y = c->buf[2] = make_floats(tokens * per_token, -1, 1);
    int32_t *pos = (int32_t *)(void *)(c->buf[1] = make_floats(tokens, 0, 1));
    for (size_t t = 0; pos && t < tokens; t++)
        pos[t] = (int32_t)(t * 7 % 8192);
    call->b = pos;
    c->bytes = 2.0 * (double)(tokens * per_token * sizeof(float));
    c->stream_n = tokens * per_token;
    snprintf(c->shape, sizeof c->shape, "%zux%zux%d", tokens, (size_t)BENCH_HEADS, BENCH_ROPE_HEAD_DIM);
    return 0;
}

static int make_glu(const size_spec *s, size_t total, bench_case *c)
{
    size_t cols = s->count == 2 ? s->d[1] : total < BENCH_ROW ? total : BENCH_ROW;
    size_t rows = s->count == 2 ? s->d[0] : total / cols;
    if (s->count == 3 || !rows)
        return -1;
    rayo_call *call = &c->call;
    call->m = c->m = rows, call->n = c->n = cols;
    call->a = c->buf[0] = make_floats(rows * cols, -4, 4);
    call->b = c->buf[1] = make_floats(rows * cols, -1, 1);
    call->y = c->buf[2] = make_floats(rows * cols, -1, 1);
    c->bytes = 3.0 * (double)(rows * cols * sizeof(float));
    c->stream_n = rows * cols;
    snprintf(c->shape, sizeof c->shape, "%zux%zu", rows, cols);
    return 0;
}

static int make_get_rows(size_t total, rayo_dtype table, bench_case *c)
{
    size_t rows = total / BENCH_ROW, row_bytes;
    if (!rows || !rayo_dtype_row_bytes(table, BENCH_ROW, &row_bytes))
        return -1;
    rayo_call *call = &c->call;
    call->dtypes = RAYO_DTYPES(table, RAYO_DTYPE_I32, RAYO_DTYPE_NONE, RAYO_DTYPE_F32);
    call->m = c->m = rows, call->n = c->n = BENCH_ROW, call->k = c->k = BENCH_ROW;
    call->a = c->buf[0] = make_typed(table, (size_t)BENCH_ROW * BENCH_ROW);
    call->y = c->buf[2] = make_floats(rows * BENCH_ROW, -1, 1);
    int32_t *idx = (int32_t *)(void *)(c->buf[1] = make_floats(rows, 0, 1));
    for (size_t r = 0; idx && r < rows; r++)
        idx[r] = (int32_t)(conform_rng_next(&rng) % BENCH_ROW);
    call->b = idx;
    c->bytes = (double)(rows * (row_bytes + BENCH_ROW * sizeof(float)));
    c->stream_n = (size_t)(c->bytes / (2 * sizeof(float))); /* memcpy moves twice its floats */
    snprintf(c->shape, sizeof c->shape, "%zux%d %s", rows, BENCH_ROW, rayo_dtype_name(table));
    return 0;
}

static int make_convert(size_t total, rayo_dtype other, bench_case *c)
{
    rayo_dtype from = other == RAYO_DTYPE_F32 ? RAYO_DTYPE_F32 : other;
    rayo_dtype to = other == RAYO_DTYPE_F32 ? RAYO_DTYPE_F16 : RAYO_DTYPE_F32;
    size_t in_bytes, out_bytes;
    if (!rayo_dtype_row_bytes(from, total, &in_bytes) || !rayo_dtype_row_bytes(to, total, &out_bytes))
        return -1;
    rayo_call *call = &c->call;
    call->dtypes = RAYO_DTYPES(from, RAYO_DTYPE_NONE, RAYO_DTYPE_NONE, to);
    call->n = c->n = total;
    call->a = c->buf[0] = make_typed(from, total);
    call->y = c->buf[2] = make_floats(out_bytes / sizeof(float) + 1, -1, 1);
    c->bytes = (double)(in_bytes + out_bytes);
    c->stream_n = (size_t)(c->bytes / (2 * sizeof(float)));
    snprintf(c->shape, sizeof c->shape, "%zu %s->%s", total, rayo_dtype_name(from), rayo_dtype_name(to));
    return 0;
}

/* The case of an inference op; -1 where the size or dtype does not apply. */
static int make_infer_case(const rayo_op_info *op, const size_spec *s, rayo_dtype dt, bench_case *c)
{
    size_t total = s->count == 1 ? s->d[0] : s->count == 2 ? s->d[0] * s->d[1] : 0;
    int rc;
    switch (op->sig) {
    case RAYO_SIG_ATTENTION:
        rc = dt == RAYO_DTYPE_F32 || dt == RAYO_DTYPE_F16 ? make_attention(s, dt, c) : -1;
        break;
    case RAYO_SIG_ROPE: rc = dt == RAYO_DTYPE_F32 ? make_rope(total, c) : -1; break;
    case RAYO_SIG_GLU: rc = dt == RAYO_DTYPE_F32 ? make_glu(s, total, c) : -1; break;
    case RAYO_SIG_GET_ROWS: rc = make_get_rows(total, dt, c); break;
    case RAYO_SIG_CONVERT: rc = make_convert(total, dt, c); break;
    default: return -1;
    }
    if (rc == 0 && (!c->buf[0] || !c->buf[2] || (op->sig != RAYO_SIG_CONVERT && !c->buf[1]) ||
                    (op->sig == RAYO_SIG_ATTENTION && !c->buf[3])))
        rc = -1; /* out of memory */
    if (rc)
        free_case(c);
    return rc;
}

/* matmul C (m x n) = A (m x k, f32) W^T, W (n x k) in dtype weights, as a
 * model's weights are stored (RAYO_TRANS_B); the f32 reference is
 * f32_matmul_case's. */
static int make_typed_matmul(size_t m, size_t n, size_t k, rayo_dtype weights, bench_case *c)
{
    size_t row_bytes;
    if (!rayo_dtype_row_bytes(weights, k, &row_bytes))
        return -1; /* k not a whole number of blocks */
    unsigned char *w = NULL;
    if (posix_memalign((void **)&w, 64, n * row_bytes) != 0)
        return -1;
    for (size_t r = 0; r < n; r++)
        conform_fill_row(&rng, weights, w + r * row_bytes, k, -1.0f, 1.0f);
    rayo_call *call = &c->call;
    c->buf[1] = (float *)(void *)w;
    call->b = w;
    call->dtypes = RAYO_DTYPES(RAYO_DTYPE_F32, weights, RAYO_DTYPE_NONE, RAYO_DTYPE_F32);
    call->flags = RAYO_TRANS_B;
    call->m = c->m = m;
    call->n = c->n = n;
    call->k = c->k = k;
    call->a = c->buf[0] = make_floats(m * k, -1.0, 1.0);
    call->y = c->buf[2] = make_floats(m * n, -1.0, 1.0);
    call->alpha = 1.0f;
    c->bytes = (double)((m * k + m * n) * sizeof(float) + n * row_bytes);
    c->flops = 2.0 * (double)m * (double)n * (double)k;
    snprintf(c->shape, sizeof c->shape, "%zux%zux%zu %s", m, n, k, rayo_dtype_name(weights));
    if (!c->buf[0] || !c->buf[2]) {
        free_case(c);
        return -1;
    }
    return 0;
}

/* The f32 matmul of the same shape as the typed case t, with B stored n x k
 * (RAYO_TRANS_B) like t's weights: the reference of --dtype matmul. */
static int make_f32_matmul(const bench_case *t, bench_case *c)
{
    memset(c, 0, sizeof *c);
    c->op = t->op;
    c->call = t->call;
    c->call.dtypes = 0;
    c->call.a = c->buf[0] = make_floats(t->m * t->k, -1.0, 1.0);
    c->call.b = c->buf[1] = make_floats(t->n * t->k, -1.0, 1.0);
    c->call.y = c->buf[2] = make_floats(t->m * t->n, -1.0, 1.0);
    c->m = t->m, c->n = t->n, c->k = t->k;
    c->bytes = (double)((t->m * t->k + t->n * t->k + t->m * t->n) * sizeof(float));
    c->flops = t->flops;
    snprintf(c->shape, sizeof c->shape, "%zux%zux%zu f32", t->m, t->n, t->k);
    if (!c->buf[0] || !c->buf[1] || !c->buf[2]) {
        free_case(c);
        return -1;
    }
    return 0;
}

/* Builds the call of op at size s with fresh random inputs (gemv's A in
 * dtype weights); -1 if the size does not fit the op or memory is short. */
static int make_case(const rayo_op_info *op, const size_spec *s, rayo_dtype weights, bench_case *c)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    rayo_call *call = &c->call;
    call->struct_size = sizeof *call;
    call->op = op->id;
    if (op->id >= RAYO_OP_CONVERT)
        return make_infer_case(op, s, weights, c);
    if (weights != RAYO_DTYPE_F32 && op->sig != RAYO_SIG_GEMV && op->sig != RAYO_SIG_MATMUL)
        return -1; /* --dtype times gemv, matmul and the inference ops only */
    size_t total = s->count == 1 ? s->d[0] : s->count == 2 ? s->d[0] * s->d[1] : 0;
    double lo = -1.0, hi = 1.0;
    if (!strcmp(op->name, "log") || !strcmp(op->name, "sqrt"))
        lo = 0.01, hi = 2.0;
    switch (op->sig) {
    case RAYO_SIG_BINARY: case RAYO_SIG_UNARY: case RAYO_SIG_UNARY_P: case RAYO_SIG_UNARY_P2:
    case RAYO_SIG_AXPY: case RAYO_SIG_REDUCE: case RAYO_SIG_REDUCE2: case RAYO_SIG_ARGREDUCE: {
        if (!total)
            return -1;
        size_t n = total;
        c->n = call->n = n;
        c->buf[0] = make_floats(n, lo, hi);
        call->a = c->buf[0];
        int two_inputs = op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_REDUCE2;
        if (two_inputs)
            call->b = c->buf[1] = make_floats(n, lo, hi);
        int vector_out = op->sig != RAYO_SIG_REDUCE && op->sig != RAYO_SIG_REDUCE2 &&
                         op->sig != RAYO_SIG_ARGREDUCE;
        c->buf[2] = make_floats(vector_out ? n : 1, -1.0, 1.0);
        call->y = op->sig == RAYO_SIG_ARGREDUCE ? (void *)&c->argmax_out : (void *)c->buf[2];
        call->alpha = op->sig == RAYO_SIG_AXPY ? 1e-3f : op->sig == RAYO_SIG_UNARY_P2 ? -0.5f : 0.1f;
        call->beta = 0.5f;
        size_t arrays = (size_t)(1 + two_inputs + vector_out + (op->sig == RAYO_SIG_AXPY));
        c->bytes = (double)(arrays * n * sizeof(float));
        c->stream_n = n;
        snprintf(c->shape, sizeof c->shape, "%zu", n);
        break;
    }
    case RAYO_SIG_ROWS: case RAYO_SIG_NORM: case RAYO_SIG_BIAS_ACT: {
        size_t rows, cols;
        if (s->count == 2)
            rows = s->d[0], cols = s->d[1];
        else if (s->count == 1)
            cols = s->d[0] < 1024 ? s->d[0] : 1024, rows = s->d[0] / cols;
        else
            return -1;
        if (!rows || !cols)
            return -1;
        call->m = c->m = rows;
        call->n = c->n = cols;
        call->a = c->buf[0] = make_floats(rows * cols, lo, hi);
        call->y = c->buf[2] = make_floats(rows * cols, -1.0, 1.0);
        if (op->sig != RAYO_SIG_ROWS) {
            call->b = c->buf[1] = make_floats(2 * cols, -1.0, 1.0); /* gamma or bias, then beta */
            call->c = op->sig == RAYO_SIG_NORM ? c->buf[1] + cols : NULL;
        }
        call->alpha = 1e-5f;
        call->flags = op->sig == RAYO_SIG_BIAS_ACT ? RAYO_ACT_GELU : 0;
        c->bytes = 2.0 * (double)(rows * cols * sizeof(float));
        snprintf(c->shape, sizeof c->shape, "%zux%zu", rows, cols);
        break;
    }
    case RAYO_SIG_GEMV: case RAYO_SIG_TRANSPOSE: {
        size_t rows = s->d[0], cols = s->count >= 2 ? s->d[1] : s->d[0];
        if (s->count == 3)
            return -1;
        if (weights != RAYO_DTYPE_F32)
            return op->sig == RAYO_SIG_GEMV ? make_typed_gemv(rows, cols, weights, c) : -1;
        call->m = c->m = rows;
        call->n = c->n = cols;
        call->a = c->buf[0] = make_floats(rows * cols, lo, hi);
        if (op->sig == RAYO_SIG_GEMV) {
            call->b = c->buf[1] = make_floats(cols, -1.0, 1.0);
            call->y = c->buf[2] = make_floats(rows, -1.0, 1.0);
            call->alpha = 1.0f;
            c->bytes = (double)((rows * cols + rows + cols) * sizeof(float));
            c->flops = 2.0 * (double)rows * (double)cols;
        } else {
            call->y = c->buf[2] = make_floats(rows * cols, -1.0, 1.0);
            c->bytes = 2.0 * (double)(rows * cols * sizeof(float));
        }
        snprintf(c->shape, sizeof c->shape, "%zux%zu", rows, cols);
        break;
    }
    case RAYO_SIG_MATMUL: {
        size_t m = s->d[0], n = s->count == 3 ? s->d[1] : s->d[0], k = s->count == 3 ? s->d[2] : s->d[0];
        if (s->count == 2)
            return -1;
        if (weights != RAYO_DTYPE_F32)
            return make_typed_matmul(m, n, k, weights, c);
        call->m = c->m = m;
        call->n = c->n = n;
        call->k = c->k = k;
        call->a = c->buf[0] = make_floats(m * k, -1.0, 1.0);
        call->b = c->buf[1] = make_floats(k * n, -1.0, 1.0);
        call->y = c->buf[2] = make_floats(m * n, -1.0, 1.0);
        call->alpha = 1.0f;
        call->beta = 0.0f;
        c->bytes = (double)((m * k + k * n + m * n) * sizeof(float));
        c->flops = 2.0 * (double)m * (double)n * (double)k;
        snprintf(c->shape, sizeof c->shape, "%zux%zux%zu", m, n, k);
        break;
    }
    default:
        return -1;
    }
    int needs_b = op->sig == RAYO_SIG_BINARY || op->sig == RAYO_SIG_REDUCE2 || op->sig == RAYO_SIG_NORM ||
                  op->sig == RAYO_SIG_BIAS_ACT || op->sig == RAYO_SIG_GEMV || op->sig == RAYO_SIG_MATMUL;
    if (!c->buf[0] || !c->buf[2] || (needs_b && !c->buf[1])) {
        free_case(c);
        return -1; /* out of memory */
    }
    return 0;
}

/* ---- runners -------------------------------------------------------------------- */
typedef struct run_arg {
    rayo_context *ctx;
    const char *backend;   /* NULL: through dispatch (rayo_run) */
    const rayo_call *call;
} run_arg;

static int run_rayo(void *p)
{
    const run_arg *r = p;
    rayo_status st = r->backend ? rayo_run_on(r->ctx, r->backend, r->call) : rayo_run(r->ctx, r->call);
    return st == RAYO_OK ? 0 : (int)st;
}

/* ---- BLAS references, dlopened ------------------------------------------------- */
static bench_kernels ref_choice;      /* what bench_choose_kernels found and set */
static char ref_kernels[256];         /* the kernel set the loaded reference runs */
static char ref_label[80];            /* its rows' backend column: library and kernel set */
enum { ROW_MAJOR = 101, NO_TRANS = 111 };

typedef struct blas_lib {
    const char *name;
    void *handle;
    int int64;            /* BLAS integers are 64-bit (some BLIS builds) */
    void *sgemm, *sgemv, *sdot, *saxpy, *sasum, *snrm2;
} blas_lib;

typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int,
                           float, float *, int);
typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*sgemv32_fn)(int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*sgemv64_fn)(int, int, int64_t, int64_t, float, const float *, int64_t, const float *, int64_t,
                           float, float *, int64_t);
typedef float (*sdot32_fn)(int, const float *, int, const float *, int);
typedef float (*sdot64_fn)(int64_t, const float *, int64_t, const float *, int64_t);
typedef void (*saxpy32_fn)(int, float, const float *, int, float *, int);
typedef void (*saxpy64_fn)(int64_t, float, const float *, int64_t, float *, int64_t);
typedef float (*sasum32_fn)(int, const float *, int);
typedef float (*sasum64_fn)(int64_t, const float *, int64_t);

/* Opens the library and sets its thread count; a message and -1 if absent. */
static int blas_open(blas_lib *lib, const char *which, unsigned threads)
{
    memset(lib, 0, sizeof *lib);
    lib->name = which;
    const char *file = !strcmp(which, "openblas") ? "libopenblas.so.0" : "libblis.so.4";
    lib->handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
        fprintf(stderr, "rayo-bench: --vs %s: %s is not installed here (%s); no %s column.\n"
                        "  (Debian: apt-get install lib%s-dev)\n",
                which, file, dlerror(), which, which);
        return -1;
    }
    lib->sgemm = dlsym(lib->handle, "cblas_sgemm");
    lib->sgemv = dlsym(lib->handle, "cblas_sgemv");
    lib->sdot = dlsym(lib->handle, "cblas_sdot");
    lib->saxpy = dlsym(lib->handle, "cblas_saxpy");
    lib->sasum = dlsym(lib->handle, "cblas_sasum");
    lib->snrm2 = dlsym(lib->handle, "cblas_snrm2");
    if (!strcmp(which, "openblas")) {
        void (*set)(int) = (void (*)(int))dlsym(lib->handle, "openblas_set_num_threads");
        if (set && threads)
            set((int)threads);
    } else {
        int64_t (*int_size)(void) = (int64_t (*)(void))dlsym(lib->handle, "bli_info_get_blas_int_type_size");
        lib->int64 = int_size && int_size() == 64;
        void (*set)(int64_t) = (void (*)(int64_t))dlsym(lib->handle, "bli_thread_set_num_threads");
        if (set && threads)
            set((int64_t)threads);
    }
    bench_kernels_in_use(which, lib->handle, ref_kernels, sizeof ref_kernels);
    return 0;
}

typedef struct blas_arg {
    const blas_lib *lib;
    const bench_case *c;
} blas_arg;

/* Does the library have this op's counterpart? */
static int blas_has(const blas_lib *lib, const rayo_op_info *op)
{
    if (!lib || !lib->handle)
        return 0;
    switch (op->id) {
    case RAYO_OP_MATMUL: return lib->sgemm != NULL;
    case RAYO_OP_GEMV: return lib->sgemv != NULL;
    case RAYO_OP_DOT: return lib->sdot != NULL;
    case RAYO_OP_AXPY: return lib->saxpy != NULL;
    case RAYO_OP_NORM_L1: return lib->sasum != NULL;
    case RAYO_OP_NORM_L2: return lib->snrm2 != NULL;
    default: return 0;
    }
}

static volatile float blas_sink;

static int run_blas(void *p)
{
    const blas_arg *b = p;
    const blas_lib *lib = b->lib;
    const bench_case *c = b->c;
    const rayo_call *call = &c->call;
    float *y = call->y;
    switch (c->op->id) {
    case RAYO_OP_MATMUL:
        if (lib->int64)
            ((sgemm64_fn)lib->sgemm)(ROW_MAJOR, NO_TRANS, NO_TRANS, (int64_t)c->m, (int64_t)c->n, (int64_t)c->k,
                                     call->alpha, call->a, (int64_t)c->k, call->b, (int64_t)c->n, call->beta, y,
                                     (int64_t)c->n);
        else
            ((sgemm32_fn)lib->sgemm)(ROW_MAJOR, NO_TRANS, NO_TRANS, (int)c->m, (int)c->n, (int)c->k, call->alpha,
                                     call->a, (int)c->k, call->b, (int)c->n, call->beta, y, (int)c->n);
        break;
    case RAYO_OP_GEMV:
        if (lib->int64)
            ((sgemv64_fn)lib->sgemv)(ROW_MAJOR, NO_TRANS, (int64_t)c->m, (int64_t)c->n, call->alpha, call->a,
                                     (int64_t)c->n, call->b, 1, 0.0f, y, 1);
        else
            ((sgemv32_fn)lib->sgemv)(ROW_MAJOR, NO_TRANS, (int)c->m, (int)c->n, call->alpha, call->a, (int)c->n,
                                     call->b, 1, 0.0f, y, 1);
        break;
    case RAYO_OP_DOT:
        blas_sink = lib->int64 ? ((sdot64_fn)lib->sdot)((int64_t)c->n, call->a, 1, call->b, 1)
                               : ((sdot32_fn)lib->sdot)((int)c->n, call->a, 1, call->b, 1);
        break;
    case RAYO_OP_AXPY:
        if (lib->int64)
            ((saxpy64_fn)lib->saxpy)((int64_t)c->n, call->alpha, call->a, 1, y, 1);
        else
            ((saxpy32_fn)lib->saxpy)((int)c->n, call->alpha, call->a, 1, y, 1);
        break;
    case RAYO_OP_NORM_L1: case RAYO_OP_NORM_L2: {
        void *fn = c->op->id == RAYO_OP_NORM_L1 ? lib->sasum : lib->snrm2;
        blas_sink = lib->int64 ? ((sasum64_fn)fn)((int64_t)c->n, call->a, 1) : ((sasum32_fn)fn)((int)c->n, call->a, 1);
        break;
    }
    default:
        return -1;
    }
    return 0;
}

/* ---- output ---------------------------------------------------------------------- */
typedef struct row {
    const char *op, *backend;
    const char *shape;
    double ns, gbps, gflops;
    double vs_stream[BENCH_STREAM_KINDS]; /* over read, copy, triad; 0: none */
    double vs_ref;                        /* 0: none */
} row;

static FILE *csv;
static const char *ref_name = "ref";

static void print_header(void)
{
    printf("%-12s %-24s %-16s %12s %9s %9s %6s %6s %6s %9s\n", "op", "backend", "size", "time/call", "GB/s",
           "GFLOP/s", "read", "copy", "triad", ref_name);
    if (csv)
        fprintf(csv, "op,backend,size,ns_per_call,gb_per_s,gflop_per_s,vs_read,vs_copy,vs_triad,vs_%s\n",
                ref_name);
}

static void format_time(double ns, char *buf, size_t size)
{
    if (ns < 1e3)
        snprintf(buf, size, "%.1f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, size, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, size, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, size, "%.3f s", ns / 1e9);
}

static void print_row(const row *r)
{
    char t[32], g[32], f[32], st[BENCH_STREAM_KINDS][32], v[32];
    format_time(r->ns, t, sizeof t);
    snprintf(g, sizeof g, r->gbps > 0 ? "%.2f" : "-", r->gbps);
    snprintf(f, sizeof f, r->gflops > 0 ? "%.2f" : "-", r->gflops);
    for (int k = 0; k < BENCH_STREAM_KINDS; k++)
        snprintf(st[k], sizeof st[k], r->vs_stream[k] > 0 ? "%.2fx" : "-", r->vs_stream[k]);
    snprintf(v, sizeof v, r->vs_ref > 0 ? "%.2fx" : "-", r->vs_ref);
    printf("%-12s %-24s %-16s %12s %9s %9s %6s %6s %6s %9s\n", r->op, r->backend, r->shape, t, g, f, st[0], st[1],
           st[2], v);
    fflush(stdout);
    if (csv)
        fprintf(csv, "%s,%s,%s,%.1f,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f\n", r->op, r->backend, r->shape, r->ns, r->gbps,
                r->gflops, r->vs_stream[0], r->vs_stream[1], r->vs_stream[2], r->vs_ref);
}

static void print_failure(const char *op, const char *backend, const char *shape, const char *why)
{
    printf("%-12s %-24s %-16s %12s  (%s)\n", op, backend, shape, "-", why);
    if (csv)
        fprintf(csv, "%s,%s,%s,,,,,,,\n", op, backend, shape);
}

/* ---- the main table ------------------------------------------------------------ */
/* read, copy and triad bandwidth over n floats (bytes moved / time), on the
 * thread count of the measured ops; cached per n. */
typedef struct stream_refs {
    size_t n;
    double gbps[BENCH_STREAM_KINDS];
} stream_refs;

static int measure_streams(const options *o, unsigned threads, size_t n, stream_refs *out)
{
    float *a = make_floats(n, -1, 1), *b = make_floats(n, -1, 1), *c = make_floats(n, -1, 1);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return -1;
    }
    out->n = n;
    char shape[32];
    snprintf(shape, sizeof shape, "%zu", n);
    for (int k = 0; k < BENCH_STREAM_KINDS; k++) {
        bench_stream s = {a, b, c, n, threads, (bench_stream_kind)k};
        double ns = time_median(bench_stream_run, &s, o->reps, o->min_ms);
        size_t bytes = bench_stream_bytes(s.kind, n);
        out->gbps[k] = ns > 0 ? (double)bytes / ns : 0;
        /* hot: the arrays stay in the last-level cache between calls */
        row r = {bench_stream_names[k], bench_stream_in_cache(bytes) ? "(ref hot)" : "(ref cold)", shape,
                 ns, out->gbps[k], 0, {0, 0, 0}, 0};
        print_row(&r);
    }
    free(a), free(b), free(c);
    return 0;
}

#define STREAM_REF_MIN ((size_t)1 << 20)

/* ---- the BLAS reference at its best, when the caller pinned a worse set ---------
 * The library reads its variable once, when it loads: the set the caller
 * pinned is timed here, next to rayo; the best set is timed by this program
 * run again (--reference-only) with the variable changed, before the table. */
typedef struct best_ref {
    char op[32], shape[48];
    double ns;
} best_ref;
static best_ref best_refs[256];
static size_t best_ref_count;
static char best_label[80];

static void print_reference_only(const options *o, blas_arg *ba, const rayo_op_info *op, const bench_case *c)
{
    double ns = time_median(run_blas, ba, o->reps, o->min_ms);
    if (ns > 0)
        printf("REF\t%s\t%s\t%.1f\n", op->name, c->shape, ns);
    fflush(stdout);
}

/* The row of the best set for this case, when the child measured it; its time or 0. */
static double print_best_reference(const rayo_op_info *op, const bench_case *c)
{
    for (size_t i = 0; i < best_ref_count; i++) {
        const best_ref *b = &best_refs[i];
        if (strcmp(b->op, op->name) || strcmp(b->shape, c->shape))
            continue;
        row r = {op->name, best_label, c->shape, b->ns, c->bytes / b->ns, c->flops / b->ns, {0, 0, 0}, 0};
        print_row(&r);
        return b->ns;
    }
    return 0.0;
}

/* Runs this program again with --reference-only under setting, and keeps the
 * times it prints. */
static void measure_best_in_child(int argc, char **argv, const char *setting)
{
    char *args[256];
    int n = 0;
    for (int i = 0; i < argc && n < 254; i++)
        args[n++] = argv[i];
    args[n++] = "--reference-only";
    args[n] = NULL;
    int fds[2];
    if (pipe(fds) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]), close(fds[1]);
        bench_apply_setting(setting);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = pid > 0 ? fdopen(fds[0], "r") : NULL;
    char line[256];
    while (in && best_ref_count < sizeof best_refs / sizeof best_refs[0] && fgets(line, sizeof line, in)) {
        best_ref *b = &best_refs[best_ref_count];
        if (sscanf(line, "REF\t%31[^\t]\t%47[^\t]\t%lf", b->op, b->shape, &b->ns) == 3 && b->ns > 0)
            best_ref_count++;
    }
    if (in)
        fclose(in);
    else
        close(fds[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

/* The memory references over n floats: measured the first time, then reused. */
static const stream_refs *stream_refs_for(const options *o, size_t n, stream_refs *refs, size_t *count)
{
    for (size_t i = 0; i < *count; i++)
        if (refs[i].n == n)
            return &refs[i];
    if (*count == MAX_LIST)
        return NULL;
    fprintf(stderr, "[references] read, copy and triad over %zu floats, %u thread%s\n", n, o->threads,
            o->threads == 1 ? "" : "s");
    return measure_streams(o, o->threads, n, &refs[*count]) == 0 ? &refs[(*count)++] : NULL;
}

/* What one case is compared with. */
typedef struct case_refs {
    blas_arg *blas;            /* the BLAS reference, timed next to each backend; NULL: none */
    const bench_case *f32;     /* --dtype matmul: the f32 matmul of the same shape; NULL: none */
    const stream_refs *mem;    /* read, copy, triad over as many bytes; NULL: none */
    double best_ns;            /* the BLAS reference at its best, from the child; 0: none */
} case_refs;

/* Times case c on backend be (next to its reference, where it has one) and
 * prints its row. */
static void bench_backend(const options *o, rayo_context *ctx, const char *be, const bench_case *c,
                          const case_refs *refs)
{
    run_arg ra = { ctx, strcmp(be, "auto") ? be : NULL, &c->call };
    double ns, ref_ns = 0.0;
    if (refs->blas) { /* timed in alternating samples */
        double warm = o->threads > 1 ? 200.0 : 0.0;
        if (time_pair(run_blas, refs->blas, run_rayo, &ra, o->reps, o->min_ms, warm, &ref_ns, &ns) == 0 &&
            ref_ns > 0) {
            row r = { c->op->name, ref_label, c->shape, ref_ns, c->bytes / ref_ns, c->flops / ref_ns, {0, 0, 0}, 0 };
            print_row(&r);
        }
    } else if (refs->f32) {
        run_arg rf = { ctx, ra.backend, &refs->f32->call };
        const bench_case *f = refs->f32;
        if (time_pair(run_rayo, &rf, run_rayo, &ra, o->reps, o->min_ms, 0.0, &ref_ns, &ns) == 0 && ref_ns > 0) {
            row r = { c->op->name, be, f->shape, ref_ns, f->bytes / ref_ns, f->flops / ref_ns, {0, 0, 0}, 0 };
            print_row(&r);
        }
    } else {
        ns = time_median(run_rayo, &ra, o->reps, o->min_ms);
    }
    if (ns < 0) {
        print_failure(c->op->name, be, c->shape, rayo_last_error()[0] ? rayo_last_error() : "failed");
        return;
    }
    row r = { c->op->name, be, c->shape, ns, c->bytes / ns, c->flops / ns, {0, 0, 0}, 0 };
    for (int k = 0; refs->mem && k < BENCH_STREAM_KINDS; k++)
        r.vs_stream[k] = refs->mem->gbps[k] > 0 ? r.gbps / refs->mem->gbps[k] : 0;
    if (refs->best_ns > 0 || ref_ns > 0)
        r.vs_ref = (refs->best_ns > 0 ? refs->best_ns : ref_ns) / ns;
    print_row(&r);
}

/* One op at one size on every backend, with its references. */
static void bench_case_all(const options *o, rayo_context *ctx, const blas_lib *blas, bench_case *c,
                           const stream_refs *mem, size_t *done, size_t total)
{
    const rayo_op_info *op = c->op;
    blas_arg ba = { blas, c };
    int with_blas = blas_has(blas, op) && o->weights == RAYO_DTYPE_F32;
    if (o->reference_only) {
        if (with_blas)
            print_reference_only(o, &ba, op, c);
        return;
    }
    /* --dtype matmul: the f32 sgemm of the same shape on the same backend
     * is the reference (column "f32"). */
    bench_case f32c;
    int with_f32 = o->weights != RAYO_DTYPE_F32 && op->sig == RAYO_SIG_MATMUL && make_f32_matmul(c, &f32c) == 0;
    case_refs refs = { with_blas ? &ba : NULL, with_f32 ? &f32c : NULL, mem,
                       with_blas ? print_best_reference(op, c) : 0.0 };
    for (size_t bi = 0; bi < o->backend_count; bi++) {
        fprintf(stderr, "[%zu/%zu] %s on %s, %s\n", ++*done, total, op->name, o->backends[bi], c->shape);
        bench_backend(o, ctx, o->backends[bi], c, &refs);
    }
    if (with_f32)
        free_case(&f32c);
}

static void bench_table(const options *o, rayo_context *ctx, const blas_lib *blas)
{
    stream_refs refs[MAX_LIST];
    size_t ref_count = 0;
    size_t total = o->op_count * o->size_count * o->backend_count, done = 0;
    print_header();
    for (size_t si = 0; si < o->size_count; si++) {
        for (size_t oi = 0; oi < o->op_count; oi++) {
            bench_case c;
            if (make_case(o->ops[oi], &o->sizes[si], o->weights, &c) != 0) {
                done += o->backend_count;
                continue; /* this size does not apply to this op */
            }
            c.call.precision = o->precision;
            const stream_refs *mem = NULL;
            if (c.stream_n >= STREAM_REF_MIN && !o->reference_only)
                mem = stream_refs_for(o, c.stream_n, refs, &ref_count);
            bench_case_all(o, ctx, blas, &c, mem, &done, total);
            free_case(&c);
        }
    }
}

/* ---- --dispatch: the API against a direct call of the kernel -------------------- */
static void host_log(const rayo_host *h, int level, const char *fmt, ...)
{
    (void)h, (void)level, (void)fmt;
}

static void host_set_error(const rayo_host *h, const char *fmt, ...)
{
    (void)h, (void)fmt;
}

static const char *host_config(const rayo_host *h, const char *key)
{
    (void)h, (void)key;
    return NULL;
}

static void *host_alloc(size_t align, size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, align, bytes ? bytes : 1) == 0 ? p : NULL;
}

static unsigned host_threads(const rayo_host *h)
{
    (void)h;
    return 1;
}

static void host_parallel_for(const rayo_host *h, size_t n, void (*fn)(void *, size_t, unsigned), void *arg)
{
    (void)h;
    for (size_t i = 0; i < n; i++)
        fn(arg, i, 0);
}

static const char *host_cache_dir(const rayo_host *h)
{
    (void)h;
    return NULL;
}

typedef struct direct_plugin {
    void *handle;
    const rayo_plugin_descriptor *desc;
    void *state;
    rayo_host host;
} direct_plugin;

/* dlopens the plugin file (the core has it open already: same copy) and
 * initialises a second state of it with a minimal one-thread host. */
static int direct_open(direct_plugin *p, const char *path)
{
    memset(p, 0, sizeof *p);
    p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle)
        return -1;
    p->desc = dlsym(p->handle, RAYO_PLUGIN_SYMBOL);
    if (!p->desc)
        return -1;
    rayo_host h = {
        .struct_size = sizeof h, .abi_major = RAYO_PLUGIN_ABI_MAJOR, .abi_minor = RAYO_PLUGIN_ABI_MINOR,
        .cpu_features = p->desc->cpu_features, .log = host_log, .set_error = host_set_error,
        .config = host_config, .alloc_aligned = host_alloc, .free_aligned = free,
        .num_threads = host_threads, .parallel_for = host_parallel_for, .cache_dir = host_cache_dir,
    };
    p->host = h;
    return p->desc->init(&p->host, 0, &p->state) == RAYO_OK ? 0 : -1;
}

static rayo_kernel_fn direct_kernel(const direct_plugin *p, uint32_t op)
{
    for (size_t i = 0; i < p->desc->op_count; i++)
        if (p->desc->ops[i].op == op)
            return p->desc->ops[i].fn;
    return NULL;
}

typedef struct direct_arg {
    rayo_kernel_fn fn;
    void *state;
    const rayo_call *call;
} direct_arg;

static int run_direct(void *p)
{
    const direct_arg *d = p;
    return d->fn(d->state, d->call) == RAYO_OK ? 0 : -1;
}

/* The typed public function of the op (what an application calls). */
typedef struct api_arg {
    rayo_context *ctx;
    const bench_case *c;
} api_arg;

static int run_typed_api(void *p)
{
    const api_arg *a = p;
    const rayo_call *k = &a->c->call;
    float *y = k->y;
    rayo_status st;
    switch (k->op) {
    case RAYO_OP_ADD: st = rayo_add(a->ctx, k->a, k->b, y, k->n); break;
    case RAYO_OP_DOT: st = rayo_dot(a->ctx, k->a, k->b, k->n, y); break;
    case RAYO_OP_MAX: st = rayo_max(a->ctx, k->a, k->n, y); break;
    case RAYO_OP_RELU: st = rayo_relu(a->ctx, k->a, y, k->n); break;
    case RAYO_OP_GELU: st = rayo_gelu(a->ctx, k->a, y, k->n); break;
    case RAYO_OP_EXP: st = rayo_exp(a->ctx, k->a, y, k->n); break;
    case RAYO_OP_SOFTMAX: st = rayo_softmax(a->ctx, k->a, y, k->m, k->n); break;
    default: st = rayo_run(a->ctx, k); break;
    }
    return st == RAYO_OK ? 0 : (int)st;
}

static const char *backend_path(rayo_context *ctx, const char *name)
{
    rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
    for (size_t i = 0; i < rayo_backend_count(ctx); i++)
        if (rayo_backend_get(ctx, i, &info) == RAYO_OK && !strcmp(info.name, name) &&
            info.status == RAYO_BACKEND_LOADED)
            return info.path;
    return NULL;
}

static void bench_dispatch(const options *o, rayo_context *ctx)
{
    static const char *const default_ops[] = { "add", "dot", "max", "relu", "gelu", "exp", "softmax" };
    const rayo_op_info *ops[MAX_LIST];
    size_t op_count = 0;
    if (o->op_count)
        for (size_t i = 0; i < o->op_count; i++)
            ops[op_count++] = o->ops[i];
    else
        for (size_t i = 0; i < sizeof default_ops / sizeof default_ops[0]; i++)
            ops[op_count++] = rayo_op_by_name(default_ops[i]);
    size_spec n1024 = { "1024", { 1024, 0, 0 }, 1 };
    const size_spec *size = o->size_count ? &o->sizes[0] : &n1024;

    printf("Small calls: ns per call through the public API (typed function, dispatch included),\n"
           "through rayo_run_on (one named backend), and as a direct call of the same kernel\n"
           "(the plugin dlopened here, called through its descriptor); overhead = API - direct.\n\n");
    printf("%-10s %-8s %-8s %12s %14s %12s %10s\n", "op", "size", "backend", "API ns", "run_on ns", "direct ns",
           "overhead");
    if (csv)
        fprintf(csv, "op,size,backend,api_ns,run_on_ns,direct_ns,overhead_ns\n");
    for (size_t i = 0; i < op_count; i++) {
        bench_case c;
        if (make_case(ops[i], size, RAYO_DTYPE_F32, &c) != 0)
            continue;
        const char *be = rayo_backend_for(ctx, ops[i]->id, 0, c.n * (c.m ? c.m : 1));
        const char *path = be ? backend_path(ctx, be) : NULL;
        direct_plugin dp;
        rayo_kernel_fn fn = NULL;
        if (path && direct_open(&dp, path) == 0)
            fn = direct_kernel(&dp, ops[i]->id);
        fprintf(stderr, "[dispatch] %s %s on %s\n", ops[i]->name, c.shape, be ? be : "(none)");
        api_arg aa = { ctx, &c };
        double api = time_median(run_typed_api, &aa, o->reps, o->min_ms);
        run_arg ra = { ctx, be, &c.call };
        double on = be ? time_median(run_rayo, &ra, o->reps, o->min_ms) : -1;
        direct_arg da = { fn, fn ? dp.state : NULL, &c.call };
        double direct = fn ? time_median(run_direct, &da, o->reps, o->min_ms) : -1;
        printf("%-10s %-8s %-8s %12.1f %14.1f %12.1f %10.1f\n", ops[i]->name, c.shape, be ? be : "-", api, on,
               direct, direct > 0 && api > 0 ? api - direct : 0.0);
        if (csv)
            fprintf(csv, "%s,%s,%s,%.2f,%.2f,%.2f,%.2f\n", ops[i]->name, c.shape, be ? be : "", api, on, direct,
                    direct > 0 && api > 0 ? api - direct : 0.0);
        fflush(stdout);
        if (fn && dp.desc->fini)
            dp.desc->fini(dp.state);
        if (path && dp.handle)
            dlclose(dp.handle);
        free_case(&c);
    }
    printf("\nPublished for comparison (not measured here): Trueno dot(1K) 66.9 ns, max(1K) 92.4 ns on AVX-512.\n");
}

/* ---- arguments --------------------------------------------------------------- */
static void usage(FILE *out)
{
    fprintf(out,
            "Usage: rayo-bench [OPTION]...\n"
            "Times rayo's ops on each backend and size (median of repeated runs), next to\n"
            "references measured in the same run.\n"
            "\n"
            "  --ops LIST        ops to time, comma-separated (default: all)\n"
            "  --backends LIST   backends as rayo-info names them, or 'auto' for the normal\n"
            "                    dispatch (default: every loaded backend)\n"
            "  --sizes LIST      N (elements; matrices N x N, matmul N^3), RxC, or MxNxK for\n"
            "                    matmul (default: 1024,1048576 for vectors, 256 for matrices)\n"
            "  --reps N          samples per case, the median is reported (default 11)\n"
            "  --min-ms MS       a sample repeats the call for at least this long (default 20)\n"
            "  --threads N       rayo's thread pool size, and the references' (default: rayo's)\n"
            "  --vs LIB          openblas or blis: time the same BLAS ops in that library\n"
            "  --clock CLOCK     wall (default) or cpu: the process's CPU time, which leaves\n"
            "                    out time taken by other processes (use with --threads 1)\n"
            "  --csv FILE        also write every row to FILE as CSV\n"
            "  --plot FILE.svg   draw GFLOP/s or GB/s against size with gnuplot: one panel\n"
            "                    per op, a colour per backend, references dashed (FILE.png:\n"
            "                    a PNG)\n"
            "  --dtype DT        gemv's or matmul's weights in DT (f16, bf16, q8_0, q4_0,\n"
            "                    q4_k, q6_k); other ops are left out, but for attention\n"
            "                    (f16 KV cache), get_rows (the table) and convert (DT ->\n"
            "                    f32).  gemv: GB/s counts the weights' bytes, against\n"
            "                    read, copy and triad over as many bytes.  matmul MxNxK:\n"
            "                    C = A W^T with W (N x K) in DT; the f32 matmul of the same\n"
            "                    shape on the same backend is timed next to it (column\n"
            "                    f32: its time over the typed one's)\n"
            "  --precision P     strict or relaxed: every call's precision (default: the\n"
            "                    configuration's, strict unless it says otherwise)\n"
            "  --dispatch        small calls: public API vs a direct call of the kernel\n"
            "  --help            this text\n"
            "  --version         the version of rayo-bench and of the librayo it runs with\n");
}

static int usage_error(const char *fmt, const char *what)
{
    fputs("rayo-bench: ", stderr);
    fprintf(stderr, fmt, what);
    fputs("\nTry 'rayo-bench --help'.\n", stderr);
    return 2;
}

/* --dtype: a float-valued dtype other than f32, by its rayo name. */
static int parse_weight_dtype(const char *text, rayo_dtype *out)
{
    for (unsigned id = 0; id < RAYO_DTYPE_LIMIT; id++) {
        const char *name = rayo_dtype_name((rayo_dtype)id);
        if (name && !strcmp(name, text) && id != RAYO_DTYPE_F32 && id != RAYO_DTYPE_I32) {
            *out = (rayo_dtype)id;
            return 0;
        }
    }
    return -1;
}

static int parse_size(const char *text, size_spec *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->text, sizeof s->text, "%s", text);
    const char *p = text;
    while (*p && s->count < 3) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || v == 0 || v > (1ull << 34) || (size_t)v != v)
            return -1;
        s->d[s->count++] = (size_t)v;
        if (*end == 'x')
            p = end + 1;
        else if (*end == '\0')
            return 0;
        else
            return -1;
    }
    return -1;
}

/* Is arg one of the options that take a value? */
static int takes_value(const char *arg)
{
    static const char *const names[] = {"--ops", "--backends", "--sizes", "--reps", "--min-ms", "--threads",
                                        "--vs", "--clock", "--dtype", "--precision", "--csv", "--plot"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(arg, names[i]))
            return 1;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->reps = 11;
    o->min_ms = 20.0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(arg, "--version")) {
            print_tool_version("rayo-bench");
            exit(0);
        } else if (!strcmp(arg, "--reference-only")) { /* internal: see measure_best_in_child */
            o->reference_only = 1;
            continue;
        } else if (!strcmp(arg, "--dispatch")) {
            o->dispatch = 1;
            continue;
        }
        if (!takes_value(arg))
            return usage_error(arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", arg);
        if (!value)
            return usage_error("%s needs a value", arg);
        i++;
        if (!strcmp(arg, "--ops")) {
            for (char *t = strtok(value, ","); t; t = strtok(NULL, ",")) {
                const rayo_op_info *op = rayo_op_by_name(t);
                if (!op)
                    return usage_error("unknown op '%s' (rayo-info --ops lists them)", t);
                if (o->op_count < MAX_LIST)
                    o->ops[o->op_count++] = op;
            }
        } else if (!strcmp(arg, "--backends")) {
            for (char *t = strtok(value, ","); t; t = strtok(NULL, ","))
                if (o->backend_count < MAX_LIST)
                    o->backends[o->backend_count++] = t;
        } else if (!strcmp(arg, "--sizes")) {
            for (char *t = strtok(value, ","); t; t = strtok(NULL, ",")) {
                if (o->size_count >= MAX_LIST || parse_size(t, &o->sizes[o->size_count]) != 0)
                    return usage_error("bad size '%s' (N, RxC or MxNxK)", t);
                o->size_count++;
            }
        } else if (!strcmp(arg, "--reps")) {
            o->reps = atoi(value);
            if (o->reps < 1 || o->reps > MAX_REPS)
                return usage_error("--reps %s: want 1..256", value);
        } else if (!strcmp(arg, "--min-ms")) {
            o->min_ms = atof(value);
            if (!(o->min_ms > 0))
                return usage_error("--min-ms %s: want a positive number", value);
        } else if (!strcmp(arg, "--threads")) {
            int t = atoi(value);
            if (t < 1 || t > 1024)
                return usage_error("--threads %s: want 1..1024", value);
            o->threads = (unsigned)t;
        } else if (!strcmp(arg, "--vs")) {
            if (strcmp(value, "openblas") && strcmp(value, "blis"))
                return usage_error("--vs %s: openblas or blis", value);
            o->vs = value;
        } else if (!strcmp(arg, "--clock")) {
            if (!strcmp(value, "cpu"))
                bench_clock = CLOCK_PROCESS_CPUTIME_ID;
            else if (strcmp(value, "wall"))
                return usage_error("--clock %s: wall or cpu", value);
        } else if (!strcmp(arg, "--dtype")) {
            if (parse_weight_dtype(value, &o->weights) != 0)
                return usage_error("--dtype %s: f16, bf16, q8_0, q4_0, q4_k or q6_k", value);
        } else if (!strcmp(arg, "--precision")) {
            if (!strcmp(value, "strict"))
                o->precision = RAYO_PRECISION_STRICT;
            else if (!strcmp(value, "relaxed"))
                o->precision = RAYO_PRECISION_RELAXED;
            else
                return usage_error("--precision %s: strict or relaxed", value);
        } else if (!strcmp(arg, "--csv")) {
            o->csv_path = value;
        } else if (!strcmp(arg, "--plot")) {
            o->plot_path = value;
        } else {
            return usage_error("unknown option '%s'", arg);
        }
    }
    return 0;
}

static void default_lists(options *o, rayo_context *ctx)
{
    if (!o->op_count && !o->dispatch) {
        size_t count;
        count = rayo_op_count();
        for (size_t i = 0; i < count && o->op_count < MAX_LIST; i++)
            o->ops[o->op_count++] = rayo_op_at(i);
    }
    if (!o->backend_count) {
        rayo_backend_info info = {.struct_size = sizeof(rayo_backend_info)};
        for (size_t i = 0; i < rayo_backend_count(ctx) && o->backend_count < MAX_LIST; i++)
            if (rayo_backend_get(ctx, i, &info) == RAYO_OK && info.status == RAYO_BACKEND_LOADED)
                o->backends[o->backend_count++] = strdup(info.name);
    }
    if (!o->size_count && !o->dispatch) {
        parse_size("1024", &o->sizes[0]);
        parse_size("1048576", &o->sizes[1]);
        parse_size("256x256x256", &o->sizes[2]);
        o->size_count = 3;
    }
}

/* The CPU's model name, and the date of the run, for the header and the plot. */
static char cpu_model[256] = "unknown CPU";
static char run_date[64];

static void note_machine(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
                snprintf(cpu_model, sizeof cpu_model, "%s", strchr(line, ':') + 2);
                cpu_model[strcspn(cpu_model, "\n")] = '\0';
                break;
            }
        fclose(f);
    }
    time_t t = time(NULL);
    strftime(run_date, sizeof run_date, "%Y-%m-%d %H:%M %Z", localtime(&t));
}

static void print_machine(const options *o, rayo_context *ctx, const char *command)
{
    const char *model = cpu_model, *date = run_date;
    printf("rayo-bench (rayo %s), %s\n", rayo_version(), date);
    printf("machine: %s, %ld CPUs online; rayo threads: %u\n", model, sysconf(_SC_NPROCESSORS_ONLN),
           rayo_thread_count(ctx));
    printf("command: %s\n", command);
    printf("median of %d samples of >= %.0f ms each, %s time\n", o->reps, o->min_ms,
           bench_clock == CLOCK_MONOTONIC ? "wall-clock" : "process CPU");
    printf("memory references: read and triad in %s, copy by memcpy, on %u thread%s\n", bench_stream_code(),
           o->threads, o->threads == 1 ? "" : "s");
    if (o->vs && ref_kernels[0])
        printf("reference: %s kernels %s\n  (%s)\n", o->vs, ref_kernels, ref_choice.note);
    else if (o->vs)
        printf("reference: %s not loaded\n", o->vs);
    double load[3];
    if (getloadavg(load, 3) == 3)
        printf("load average before the run: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
    printf("\n");
}

/* A copy of the arguments (parsing splits the lists in place) for the child
 * that times the reference at its best; NULL when out of memory. */
static char **copy_args(int argc, char **argv)
{
    char **args = calloc((size_t)argc + 1, sizeof *args);
    for (int i = 0; args && i < argc; i++)
        args[i] = strdup(argv[i]);
    return args;
}

static void free_args(int argc, char **args)
{
    for (int i = 0; args && i < argc; i++)
        free(args[i]);
    free(args);
}

static int bench_main(int argc, char **argv, char **args)
{
    /* The command line as given (parsing splits the lists in place). */
    char command[2048] = "rayo-bench";
    for (int i = 1; i < argc; i++)
        snprintf(command + strlen(command), sizeof command - strlen(command), " %s", argv[i]);
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    if (o.reference_only) /* the parent writes the table, the CSV and the plot */
        o.csv_path = o.plot_path = NULL;
    /* Before rayo_open (bench_choose_kernels forks: no threads yet) and
     * before the library is loaded (it reads its variable once). */
    if (o.vs && !o.reference_only)
        bench_choose_kernels(o.vs, &ref_choice);
    if (ref_choice.best_setting[0]) {
        fprintf(stderr, "[references] %s at its best (%s), in a child process\n", o.vs, ref_choice.best_setting);
        if (args)
            measure_best_in_child(argc, args, ref_choice.best_setting);
        snprintf(best_label, sizeof best_label, "%s %s", o.vs, ref_choice.best);
    }
    char settings[64] = "";
    if (o.threads)
        snprintf(settings, sizeof settings, "[rayo]\nthreads = %u\n", o.threads);
    rayo_options ro = { .struct_size = sizeof ro, .settings = o.threads ? settings : NULL };
    rayo_context *ctx;
    if (rayo_open(&ctx, &ro) != RAYO_OK) {
        fprintf(stderr, "rayo-bench: %s\n", rayo_last_error());
        return 1;
    }
    if (!o.threads)
        o.threads = rayo_thread_count(ctx);
    default_lists(&o, ctx);
    for (size_t i = 0; i < o.backend_count; i++)
        if (strcmp(o.backends[i], "auto") && !backend_path(ctx, o.backends[i])) {
            fprintf(stderr, "rayo-bench: backend '%s' is not loaded (rayo-info says why)\n", o.backends[i]);
            rayo_close(ctx);
            return 2;
        }
    conform_rng_seed(&rng, 12345);
    /* --plot reads the rows back from the CSV: a temporary one without --csv. */
    char plot_csv[] = "/tmp/rayo-bench-XXXXXX";
    const char *csv_path = o.csv_path;
    if (o.plot_path && !csv_path) {
        int fd = mkstemp(plot_csv);
        if (fd >= 0)
            close(fd), csv_path = plot_csv;
    }
    if (csv_path && !(csv = fopen(csv_path, "w"))) {
        fprintf(stderr, "rayo-bench: cannot write %s: %s\n", csv_path, strerror(errno));
        rayo_close(ctx);
        return 1;
    }
    blas_lib blas = { 0 };
    if (!o.dispatch && o.vs && blas_open(&blas, o.vs, o.threads) == 0) {
        ref_name = o.vs;
        /* the rows name the kernel set: "openblas Haswell", "(env)" when pinned by the caller */
        snprintf(ref_label, sizeof ref_label, "%s %.*s%s", o.vs, (int)strcspn(ref_kernels, " "), ref_kernels,
                 ref_choice.pinned[0] ? " (env)" : "");
    }
    else if (o.weights != RAYO_DTYPE_F32)
        ref_name = "f32";
    note_machine();
    if (!o.reference_only)
        print_machine(&o, ctx, command);
    if (o.dispatch)
        bench_dispatch(&o, ctx);
    else
        bench_table(&o, ctx, &blas);
    if (csv)
        fclose(csv);
    rc = 0;
    char title[512];
    snprintf(title, sizeof title, "rayo-bench (rayo %s), %s, %u thread%s, %s time, %s", rayo_version(), cpu_model,
             o.threads, o.threads == 1 ? "" : "s", bench_clock == CLOCK_MONOTONIC ? "wall-clock" : "CPU", run_date);
    if (o.plot_path && csv && bench_plot(csv_path, o.plot_path, title) != 0)
        rc = 1;
    if (csv_path == plot_csv)
        unlink(plot_csv);
    rayo_close(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    char **args = copy_args(argc, argv);
    int rc = bench_main(argc, argv, args);
    free_args(argc, args);
    return rc;
}
