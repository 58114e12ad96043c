/* SPDX-License-Identifier: MIT */
/* reduce.c - sum, dot, max, min, argmax, norm_l1, norm_l2.
 *
 * Sums are blocked: 16 float lanes accumulate a block of 256 elements (16
 * terms per lane, so at most ~1e-6 * sum|terms| of rounding), then each block
 * is added in double.  norm_l2 squares in double, so no |x| < FLT_MAX can
 * overflow.  Long vectors are cut into chunks summed on the core's pool; the
 * chunking depends on n only, so a result does not depend on the number of
 * threads.  max/min use FMAX/FMIN, which propagate NaN as the contract asks.
 */
#include "plugin.h"
#include "neon-math.h"

#include <math.h>
#include <string.h>

#define SUM_BLOCK 256

static inline double hsum_f64(float32x4_t v)
{
    float64x2_t lo = vcvt_f64_f32(vget_low_f32(v));
    float64x2_t hi = vcvt_high_f64_f32(v);
    return vaddvq_f64(vaddq_f64(lo, hi));
}

/* The first k (< 4) floats of p, then `pad` in the other lanes. */
static inline float32x4_t load_padded(const float *p, size_t k, float pad)
{
    float t[4] = { pad, pad, pad, pad };
    memcpy(t, p, k * sizeof(float));
    return vld1q_f32(t);
}

/* Sum of TERM(i) over one block [0, len), len <= SUM_BLOCK, in float lanes.
 * TERM(i) is a float32x4_t of elements i..i+3 with zeros past len.  A block
 * whose float lanes overflowed (or met inf/NaN) is added again in double,
 * term by term (TERM_F64(i)): partial sums past FLT_MAX (FLT_MAX + FLT_MAX -
 * FLT_MAX) cannot make a finite result inf, and inf/NaN inputs give the
 * same answer in double. */
#define BLOCK_SUM(len, TERM, TERM_PARTIAL)                                    \
    do {                                                                       \
        float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;         \
        size_t i = 0;                                                          \
        for (; len - i >= 16; i += 16) {                                       \
            s0 = TERM(s0, i);                                                  \
            s1 = TERM(s1, i + 4);                                              \
            s2 = TERM(s2, i + 8);                                              \
            s3 = TERM(s3, i + 12);                                             \
        }                                                                      \
        for (; len - i >= 4; i += 4)                                           \
            s0 = TERM(s0, i);                                                  \
        if (i < len)                                                           \
            s1 = TERM_PARTIAL(s1, i, len - i);                                 \
        double block_ = hsum_f64(s0) + hsum_f64(s1) + hsum_f64(s2) + hsum_f64(s3); \
        if (!isfinite(block_)) /* float lanes overflowed: again in double */   \
            for (block_ = 0.0, i = 0; i < len; i++)                            \
                block_ += TERM_F64(i);                                         \
        total += block_;                                                       \
    } while (0)

double neon_sum_f64(const float *x, size_t n)
{
    double total = 0.0;
    for (size_t b = 0; b < n; b += SUM_BLOCK) {
        const float *p = x + b;
        size_t len = n - b < SUM_BLOCK ? n - b : SUM_BLOCK;
#define TERM(s, i) vaddq_f32(s, vld1q_f32(p + (i)))
#define TERM_PARTIAL(s, i, k) vaddq_f32(s, load_padded(p + (i), k, 0.0f))
#define TERM_F64(i) (double)p[i]
        BLOCK_SUM(len, TERM, TERM_PARTIAL);
#undef TERM
#undef TERM_PARTIAL
#undef TERM_F64
    }
    return total;
}

double neon_sum_abs_f64(const float *x, size_t n)
{
    double total = 0.0;
    for (size_t b = 0; b < n; b += SUM_BLOCK) {
        const float *p = x + b;
        size_t len = n - b < SUM_BLOCK ? n - b : SUM_BLOCK;
#define TERM(s, i) vaddq_f32(s, vabsq_f32(vld1q_f32(p + (i))))
#define TERM_PARTIAL(s, i, k) vaddq_f32(s, vabsq_f32(load_padded(p + (i), k, 0.0f)))
#define TERM_F64(i) fabs((double)p[i])
        BLOCK_SUM(len, TERM, TERM_PARTIAL);
#undef TERM
#undef TERM_PARTIAL
#undef TERM_F64
    }
    return total;
}

double neon_dot_f64(const float *a, const float *b, size_t n)
{
    double total = 0.0;
    for (size_t o = 0; o < n; o += SUM_BLOCK) {
        const float *p = a + o, *q = b + o;
        size_t len = n - o < SUM_BLOCK ? n - o : SUM_BLOCK;
#define TERM(s, i) vfmaq_f32(s, vld1q_f32(p + (i)), vld1q_f32(q + (i)))
#define TERM_PARTIAL(s, i, k) vfmaq_f32(s, load_padded(p + (i), k, 0.0f), load_padded(q + (i), k, 0.0f))
#define TERM_F64(i) ((double)p[i] * q[i])
        BLOCK_SUM(len, TERM, TERM_PARTIAL);
#undef TERM
#undef TERM_PARTIAL
#undef TERM_F64
    }
    return total;
}

/* Sum of squares in double lanes: x^2 of any float fits a double. */
double neon_sum_squares_f64(const float *x, size_t n)
{
    float64x2_t s0 = vdupq_n_f64(0.0), s1 = s0;
    size_t i = 0;
    for (; n - i >= 4; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        float64x2_t lo = vcvt_f64_f32(vget_low_f32(v)), hi = vcvt_high_f64_f32(v);
        s0 = vfmaq_f64(s0, lo, lo);
        s1 = vfmaq_f64(s1, hi, hi);
    }
    double total = vaddvq_f64(vaddq_f64(s0, s1));
    for (; i < n; i++)
        total += (double)x[i] * (double)x[i];
    return total;
}

/* NaN-propagating max/min of x[0..n), n >= 1 (vmaxq/vminq propagate NaN);
 * want_max is a constant wherever this is inlined. */
static inline __attribute__((always_inline)) float extreme_f32(const float *x, size_t n, int want_max)
{
#define PICK(m, v) (want_max ? vmaxq_f32(m, v) : vminq_f32(m, v))
    float32x4_t m0 = vdupq_n_f32(x[0]), m1 = m0;
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        m0 = PICK(m0, vld1q_f32(x + i));
        m1 = PICK(m1, vld1q_f32(x + i + 4));
    }
    for (; n - i >= 4; i += 4)
        m0 = PICK(m0, vld1q_f32(x + i));
    if (i < n)
        m1 = PICK(m1, load_padded(x + i, n - i, x[0]));
    return want_max ? vmaxvq_f32(PICK(m0, m1)) : vminvq_f32(PICK(m0, m1));
#undef PICK
}

float neon_max_f32(const float *x, size_t n)
{
    return extreme_f32(x, n, 1);
}

static float min_f32(const float *x, size_t n)
{
    return extreme_f32(x, n, 0);
}

/* ---- chunked reductions on the pool ------------------------------------------ */
#define MAX_CHUNKS 64
#define MIN_CHUNK ((size_t)1 << 16)

typedef double chunk_fn(const rayo_call *call, size_t lo, size_t hi);

typedef struct reduce_job {
    const rayo_call *call;
    chunk_fn *fn;
    size_t n, chunk;
    double partial[MAX_CHUNKS];
} reduce_job;

static void reduce_task(void *arg, size_t task, unsigned worker)
{
    reduce_job *job = arg;
    size_t lo = task * job->chunk;
    size_t hi = job->n - lo > job->chunk ? lo + job->chunk : job->n;
    (void)worker;
    job->partial[task] = job->fn(job->call, lo, hi);
}

/* Fills job->partial with fn over consecutive chunks of [0, n); returns
 * how many.  The split depends on n only (results are reproducible). */
static size_t reduce_chunks(const cpu_state *st, reduce_job *job)
{
    size_t n = job->n, chunks = n / MIN_CHUNK;
    if (chunks < 2) {
        job->chunk = n;
        job->partial[0] = job->fn(job->call, 0, n);
        return 1;
    }
    if (chunks > MAX_CHUNKS)
        chunks = MAX_CHUNKS;
    job->chunk = ((n + chunks - 1) / chunks + SUM_BLOCK - 1) / SUM_BLOCK * SUM_BLOCK;
    chunks = (n + job->chunk - 1) / job->chunk;
    cpu_parallel(st, chunks, reduce_task, job);
    return chunks;
}

static double sum_chunks(const cpu_state *st, const rayo_call *call, chunk_fn *fn)
{
    reduce_job job = { .call = call, .fn = fn, .n = call->n };
    size_t count = reduce_chunks(st, &job);
    double total = 0.0;
    for (size_t c = 0; c < count; c++)
        total += job.partial[c];
    return total;
}

static double sum_chunk(const rayo_call *c, size_t lo, size_t hi)
{
    return neon_sum_f64((const float *)c->a + lo, hi - lo);
}

static double dot_chunk(const rayo_call *c, size_t lo, size_t hi)
{
    return neon_dot_f64((const float *)c->a + lo, (const float *)c->b + lo, hi - lo);
}

static double abs_chunk(const rayo_call *c, size_t lo, size_t hi)
{
    return neon_sum_abs_f64((const float *)c->a + lo, hi - lo);
}

static double squares_chunk(const rayo_call *c, size_t lo, size_t hi)
{
    return neon_sum_squares_f64((const float *)c->a + lo, hi - lo);
}

static double max_chunk(const rayo_call *c, size_t lo, size_t hi)
{
    return neon_max_f32((const float *)c->a + lo, hi - lo);
}

static double min_chunk(const rayo_call *c, size_t lo, size_t hi)
{
    return min_f32((const float *)c->a + lo, hi - lo);
}

NEON_KERNEL(sum)
{
    *(float *)call->y = (float)sum_chunks(state, call, sum_chunk);
    return RAYO_OK;
}

NEON_KERNEL(dot)
{
    *(float *)call->y = (float)sum_chunks(state, call, dot_chunk);
    return RAYO_OK;
}

NEON_KERNEL(norm_l1)
{
    *(float *)call->y = (float)sum_chunks(state, call, abs_chunk);
    return RAYO_OK;
}

NEON_KERNEL(norm_l2)
{
    *(float *)call->y = (float)sqrt(sum_chunks(state, call, squares_chunk));
    return RAYO_OK;
}

/* Partials of max/min are floats held in doubles (NaN included). */
static float fold_extreme(const cpu_state *st, const rayo_call *call, chunk_fn *fn, int want_max)
{
    reduce_job job = { .call = call, .fn = fn, .n = call->n };
    size_t count = reduce_chunks(st, &job);
    double best = job.partial[0];
    for (size_t c = 1; c < count && best == best; c++) {
        double v = job.partial[c];
        if (v != v || (want_max ? v > best : v < best))
            best = v;
    }
    return (float)best;
}

NEON_KERNEL(max)
{
    *(float *)call->y = call->n ? fold_extreme(state, call, max_chunk, 1) : -INFINITY;
    return RAYO_OK;
}

NEON_KERNEL(min)
{
    *(float *)call->y = call->n ? fold_extreme(state, call, min_chunk, 0) : INFINITY;
    return RAYO_OK;
}

/* Index of the first element equal to `target` (NaN: the first NaN). */
static size_t find_first(const float *x, size_t n, float target)
{
    int want_nan = target != target;
    float32x4_t t = vdupq_n_f32(target);
    size_t i = 0;
    for (; n - i >= 4; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        uint32x4_t hit = want_nan ? vmvnq_u32(vceqq_f32(v, v)) : vceqq_f32(v, t);
        if (vmaxvq_u32(hit))
            break;
    }
    for (; i < n; i++)
        if (want_nan ? x[i] != x[i] : x[i] == target)
            return i;
    return n; /* not reached: target is an element of x */
}

/* The first maximum, or the first NaN: the max (which is NaN if any element
 * is) is found first, then its first occurrence. */
NEON_KERNEL(argmax)
{
    if (call->n == 0)
        return RAYO_E_INVALID;
    float best = fold_extreme(state, call, max_chunk, 1);
    *(size_t *)call->y = find_first(call->a, call->n, best);
    return RAYO_OK;
}
