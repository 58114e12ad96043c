/* SPDX-License-Identifier: MIT */
/* bench-stream.c - rayo-bench's memory references: read (a sum), copy and
 * triad (a = b + s c) over n floats, on as many threads as the op they are
 * compared with, at the machine's best.
 *
 * A scalar loop is no reference: it leaves much of the bandwidth a
 * vectorized loop reaches unused, and flatters the op measured against it.
 * So read and triad run AVX2
 * loops where the CPU has AVX2 (picked at run time: the program itself is
 * built for any x86-64), with non-temporal stores when the arrays do not fit
 * the last-level cache (no read for ownership of lines that are only
 * written); copy is the C library's memcpy, which makes the same choices.
 * Elsewhere (other CPUs, WebAssembly) plain loops, which the compiler
 * vectorizes for the baseline of the target.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

const char *const bench_stream_names[BENCH_STREAM_KINDS] = {"read", "copy", "triad"};

static const float TRIAD_SCALE = 3.0f;

size_t bench_stream_bytes(bench_stream_kind kind, size_t n)
{
    return (size_t)(kind + 1) * n * sizeof(float); /* read 1, copy 2, triad 3 arrays */
}

int bench_stream_in_cache(size_t bytes)
{
    long llc = -1;
#if defined(_SC_LEVEL3_CACHE_SIZE)
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0)
        llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (llc <= 0)
        llc = 8l << 20; /* the OS does not say: a common size */
    return bytes <= (size_t)llc / 2; /* half: what the op's own operands leave room for */
}

/* ---- plain loops ---------------------------------------------------------- */
static float read_plain(const float *x, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        s0 += x[i], s1 += x[i + 1], s2 += x[i + 2], s3 += x[i + 3];
    for (; i < n; i++)
        s0 += x[i];
    return (s0 + s1) + (s2 + s3);
}

static void triad_plain(float *a, const float *b, const float *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + TRIAD_SCALE * c[i];
}

/* ---- AVX2 ----------------------------------------------------------------- */
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static float read_avx2(const float *x, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) { /* four sums: the adds' latency hidden */
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_loadu_ps(x + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_loadu_ps(x + i + 24));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    float total = read_plain(x + i, n - i);
    for (int l = 0; l < 8; l++)
        total += lanes[l];
    return total;
}

__attribute__((target("avx2,fma"))) static void triad_avx2(float *a, const float *b, const float *c, size_t n,
                                                            int streaming)
{
    const __m256 s = _mm256_set1_ps(TRIAD_SCALE);
    size_t i = 0;
    if (streaming) /* non-temporal stores need 32-byte aligned addresses */
        for (; i < n && ((uintptr_t)(a + i) & 31); i++)
            a[i] = b[i] + TRIAD_SCALE * c[i];
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_fmadd_ps(s, _mm256_loadu_ps(c + i), _mm256_loadu_ps(b + i));
        if (streaming)
            _mm256_stream_ps(a + i, v);
        else
            _mm256_storeu_ps(a + i, v);
    }
    if (streaming)
        _mm_sfence();
    triad_plain(a + i, b + i, c + i, n - i);
}
#endif

static int have_avx2(void)
{
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

const char *bench_stream_code(void)
{
    return have_avx2() ? "AVX2" : "plain loops";
}

/* ---- one call over the threads --------------------------------------------- */
typedef struct stream_part {
    const bench_stream *s;
    size_t begin, end;
    int streaming;
    float sum;
} stream_part;

static void *stream_worker(void *p)
{
    stream_part *part = p;
    const bench_stream *s = part->s;
    size_t b = part->begin, len = part->end - part->begin;
    switch (s->kind) {
    case BENCH_STREAM_READ:
#if defined(__x86_64__)
        part->sum = have_avx2() ? read_avx2(s->b + b, len) : read_plain(s->b + b, len);
#else
        part->sum = read_plain(s->b + b, len);
#endif
        break;
    case BENCH_STREAM_COPY:
        memcpy(s->a + b, s->b + b, len * sizeof(float));
        break;
    default:
#if defined(__x86_64__)
        if (have_avx2()) {
            triad_avx2(s->a + b, s->b + b, s->c + b, len, part->streaming);
            break;
        }
#endif
        triad_plain(s->a + b, s->b + b, s->c + b, len);
        break;
    }
    return NULL;
}

static volatile float stream_sink;

int bench_stream_run(void *arg)
{
    const bench_stream *s = arg;
    enum { MAX_THREADS = 64 };
    pthread_t tid[MAX_THREADS];
    stream_part parts[MAX_THREADS];
    unsigned t = s->threads < 1 ? 1 : s->threads < MAX_THREADS ? s->threads : MAX_THREADS;
    size_t chunk = (s->n + t - 1) / t;
    int streaming = !bench_stream_in_cache(bench_stream_bytes(s->kind, s->n));
    for (unsigned i = 0; i < t; i++) {
        parts[i] = (stream_part){s, i * chunk < s->n ? i * chunk : s->n,
                                 (i + 1) * chunk < s->n ? (i + 1) * chunk : s->n, streaming, 0.0f};
    }
    unsigned started = 1;
    for (; started < t; started++)
        if (pthread_create(&tid[started], NULL, stream_worker, &parts[started]) != 0)
            break;
    stream_worker(&parts[0]);
    for (unsigned i = 1; i < started; i++)
        pthread_join(tid[i], NULL);
    stream_sink = parts[0].sum;
    return started == t ? 0 : -1;
}
