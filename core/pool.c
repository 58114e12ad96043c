/* SPDX-License-Identifier: MIT */
/* pool.c - the core's thread pool, offered to plugins as host->parallel_for.
 *
 * One job at a time: the caller takes the pool, publishes the job, works on
 * it as worker 0 alongside the pool threads, and waits for them.  A second
 * caller that finds the pool busy (concurrent calls on one context) runs its
 * tasks itself instead of waiting: no deadlock, no nesting problems.
 *
 * After fork() the child has the pool's memory but none of its threads:
 * in a process other than the one that made the pool, every job runs on
 * the calling thread, and destroying the pool only frees its memory. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime where config.h is not included (the wasm build) */
#include "internal.h"
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct rayo_pool {
    unsigned threads;            /* including the caller */
    pid_t owner;                 /* the process whose threads these are */
    pthread_t *tids;
    pthread_mutex_t busy;        /* held by the caller owning the current job */
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    _Atomic uint64_t generation; /* bumped per job (under lock; read without it while spinning) */
    atomic_bool stop;
    _Atomic unsigned running;    /* pool threads still working on the job (read without the lock while spinning) */
    void (*fn)(void *, size_t, unsigned);
    void *arg;
    size_t n_tasks;
    atomic_size_t next_task;
};

static void run_tasks(rayo_pool *p, unsigned worker)
{
    size_t t;
    while ((t = atomic_fetch_add(&p->next_task, 1)) < p->n_tasks)
        p->fn(p->arg, t, worker);
}

struct worker_start { rayo_pool *pool; unsigned id; };

/* After a job, a worker watches for the next one for a while before it
 * sleeps: waking a sleeping thread costs tens of microseconds, and the
 * calls that use the pool tend to come in runs.  The while is a time, not
 * a count of pause instructions: a pause takes from a few nanoseconds to
 * 64 ns (on an AMD EPYC), so 20000 of them spun 60 us on one CPU and
 * 1.3 ms on another, where the worker then held a CPU that the caller or
 * other processes needed.  Between the calls of an LLM decode step the
 * gaps were under 64 us in 96% of cases (TinyLlama shape, 2 threads, on a
 * loaded 2-vCPU EPYC; shorter on an idle one), so a longer watch saves a
 * few wake-ups per token and costs CPU time in every wait. */
#define SPIN_NS 64000
#define PAUSES_PER_CLOCK_READ 32

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static uint64_t monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void spin_for_next_job(rayo_pool *p, uint64_t seen)
{
    uint64_t start = monotonic_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&p->generation, memory_order_acquire) != seen ||
            atomic_load_explicit(&p->stop, memory_order_relaxed))
            return;
        cpu_relax();
        if (i % PAUSES_PER_CLOCK_READ == 0 && monotonic_ns() - start > SPIN_NS)
            return;
    }
}

/* The caller, its tasks done, watches the workers finish as long as a
 * worker watches for a job before it sleeps on the condition. */
static void wait_for_workers(rayo_pool *p)
{
    uint64_t start = monotonic_ns();
    for (unsigned i = 1; atomic_load_explicit(&p->running, memory_order_acquire) > 0; i++) {
        cpu_relax();
        if (i % PAUSES_PER_CLOCK_READ == 0 && monotonic_ns() - start > SPIN_NS)
            return;
    }
}

static void *worker_main(void *arg)
{
    struct worker_start *ws = arg;
    rayo_pool *p = ws->pool;
    unsigned id = ws->id;
    free(ws);
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (seen) { /* just finished a job */
            pthread_mutex_unlock(&p->lock);
            spin_for_next_job(p, seen);
            pthread_mutex_lock(&p->lock);
        }
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        run_tasks(p, id);
        pthread_mutex_lock(&p->lock);
        if (--p->running == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

rayo_pool *pool_create(unsigned threads)
{
    rayo_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (threads < 1)
        threads = 1;
    p->tids = calloc(threads, sizeof *p->tids);
    if (!p->tids) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->busy, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = 1;
    p->owner = getpid();
    for (unsigned i = 1; i < threads; i++) {
        struct worker_start *ws = malloc(sizeof *ws);
        if (!ws)
            break;
        ws->pool = p;
        ws->id = i;
        if (pthread_create(&p->tids[i], NULL, worker_main, ws) != 0) {
            free(ws);
            break; /* fewer threads than asked: still correct */
        }
        p->threads++;
    }
    return p;
}

void pool_destroy(rayo_pool *p)
{
    if (!p)
        return;
    if (getpid() != p->owner) { /* a forked child: no threads to stop, locks in any state */
        free(p->tids);
        free(p);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 1; i < p->threads; i++)
        pthread_join(p->tids[i], NULL);
    pthread_mutex_destroy(&p->busy);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->tids);
    free(p);
}

unsigned pool_threads(const rayo_pool *p)
{
    return p ? p->threads : 1;
}

static void run_serially(size_t n_tasks, void (*fn)(void *, size_t, unsigned), void *arg)
{
    for (size_t t = 0; t < n_tasks; t++)
        fn(arg, t, 0);
}

void pool_run(rayo_pool *p, size_t n_tasks, void (*fn)(void *, size_t, unsigned), void *arg)
{
    if (!p || p->threads == 1 || n_tasks <= 1 || getpid() != p->owner || pthread_mutex_trylock(&p->busy) != 0) {
        run_serially(n_tasks, fn, arg);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store(&p->next_task, 0);
    p->running = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_tasks(p, 0);
    wait_for_workers(p);

    pthread_mutex_lock(&p->lock);
    while (p->running > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->busy);
}
