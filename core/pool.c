/* SPDX-License-Identifier: MIT */
/* pool.c - the core's thread pool, offered to plugins as host->parallel_for.
 *
 * One job at a time: the caller takes the pool, publishes the job, works on
 * it as worker 0 alongside the pool threads, and waits for its tasks to be
 * done.  A task is claimed by one compare-and-swap on a word that holds the
 * job's generation beside the next task: a thread claims tasks of the job
 * it read only while that job is still out, so the caller waits for the
 * tasks that threads are running, never for a thread that has not woken
 * up yet (descheduled on a busy machine, or asleep: the caller then does
 * its share).  A second caller that finds the pool busy (concurrent calls
 * on one context) runs its tasks itself instead of waiting: no deadlock,
 * no nesting problems.
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

typedef void pool_task_fn(void *, size_t, unsigned);

struct rayo_pool {
    unsigned threads;            /* including the caller */
    pid_t owner;                 /* the process whose threads these are */
    pthread_t *tids;
    pthread_mutex_t busy;        /* held by the caller owning the current job */
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    /* The job's generation (high 32 bits) and its next unclaimed task (low
     * 32 bits, TASKS_CLOSED while the job is being written); read without
     * the lock while spinning, changed by claims. */
    _Atomic uint64_t word;
    atomic_bool stop;
    /* The job: written while the word holds its generation and
     * TASKS_CLOSED, read by a thread that then claims a task only if the
     * word still holds the generation and task it read before (atomics: a
     * late thread may read the next job's).  Closing first matters: a
     * thread that read the last job's word, then this job's larger
     * n_tasks, would otherwise claim one of this job's tasks under the
     * last job's generation, and the task would run twice.  All in the
     * default, sequentially consistent order: a thread that has read this
     * job's n_tasks finds the word closed or moved on in its claim. */
    _Atomic(pool_task_fn *) fn;
    _Atomic(void *) arg;
    atomic_size_t n_tasks;
    atomic_size_t tasks_done;    /* of the current job */
};

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

#define TASKS_CLOSED UINT32_MAX

static uint32_t generation_of(uint64_t word)
{
    return (uint32_t)(word >> 32);
}

/* A pool thread that finishes the job's last task wakes the caller, which
 * may have stopped watching and sleep on `done` (the caller itself,
 * worker 0, finds the count done where it checks). */
static void task_done(rayo_pool *p, size_t n_tasks, unsigned worker)
{
    if (atomic_fetch_add_explicit(&p->tasks_done, 1, memory_order_acq_rel) + 1 == n_tasks && worker) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->lock);
    }
}

/* Runs tasks of job `generation` while it is out and has tasks left. */
static void run_tasks(rayo_pool *p, uint32_t generation, unsigned worker)
{
    uint64_t word = atomic_load(&p->word);
    while (generation_of(word) == generation) {
        uint32_t task = (uint32_t)word;
        if (task == TASKS_CLOSED) { /* the caller is writing the job: a few stores */
            cpu_relax();
            word = atomic_load(&p->word);
            continue;
        }
        pool_task_fn *fn = atomic_load(&p->fn);
        void *arg = atomic_load(&p->arg);
        size_t n_tasks = atomic_load(&p->n_tasks);
        if (task >= n_tasks)
            return;
        /* Success: the job read above is still out (its tasks are not all
         * claimed, so no later job has been written). */
        if (atomic_compare_exchange_weak(&p->word, &word, word + 1)) {
            fn(arg, task, worker);
            task_done(p, n_tasks, worker);
            word = atomic_load(&p->word);
        }
    }
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

static uint64_t monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void spin_for_next_job(rayo_pool *p, uint32_t seen)
{
    uint64_t start = monotonic_ns();
    for (unsigned i = 1;; i++) {
        if (generation_of(atomic_load_explicit(&p->word, memory_order_acquire)) != seen ||
            atomic_load_explicit(&p->stop, memory_order_relaxed))
            return;
        cpu_relax();
        if (i % PAUSES_PER_CLOCK_READ == 0 && monotonic_ns() - start > SPIN_NS)
            return;
    }
}

/* The caller, its tasks done, watches the tasks that threads still run
 * finish as long as a worker watches for a job before it sleeps, then
 * sleeps until the last one wakes it. */
static void wait_for_tasks(rayo_pool *p, size_t n_tasks)
{
    uint64_t start = monotonic_ns();
    for (unsigned i = 1; atomic_load_explicit(&p->tasks_done, memory_order_acquire) < n_tasks; i++) {
        cpu_relax();
        if (i % PAUSES_PER_CLOCK_READ == 0 && monotonic_ns() - start > SPIN_NS)
            break;
    }
    if (atomic_load_explicit(&p->tasks_done, memory_order_acquire) >= n_tasks)
        return;
    pthread_mutex_lock(&p->lock);
    while (atomic_load_explicit(&p->tasks_done, memory_order_acquire) < n_tasks)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static void *worker_main(void *arg)
{
    struct worker_start *ws = arg;
    rayo_pool *p = ws->pool;
    unsigned id = ws->id;
    free(ws);
    uint32_t seen = 0;
    for (;;) {
        spin_for_next_job(p, seen);
        pthread_mutex_lock(&p->lock);
        while (!p->stop && generation_of(p->word) == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        bool stop = p->stop;
        seen = generation_of(p->word);
        pthread_mutex_unlock(&p->lock);
        if (stop)
            return NULL;
        run_tasks(p, seen, id);
    }
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

static void run_serially(size_t n_tasks, pool_task_fn *fn, void *arg)
{
    for (size_t t = 0; t < n_tasks; t++)
        fn(arg, t, 0);
}

void pool_run(rayo_pool *p, size_t n_tasks, pool_task_fn *fn, void *arg)
{
    if (!p || p->threads == 1 || n_tasks <= 1 || n_tasks >= TASKS_CLOSED || getpid() != p->owner ||
        pthread_mutex_trylock(&p->busy) != 0) {
        run_serially(n_tasks, fn, arg);
        return;
    }
    pthread_mutex_lock(&p->lock);
    uint32_t generation = generation_of(p->word) + 1;
    atomic_store(&p->word, (uint64_t)generation << 32 | TASKS_CLOSED);
    atomic_store(&p->fn, fn);
    atomic_store(&p->arg, arg);
    atomic_store(&p->n_tasks, n_tasks);
    atomic_store(&p->tasks_done, 0);
    atomic_store(&p->word, (uint64_t)generation << 32);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_tasks(p, generation, 0);
    wait_for_tasks(p, n_tasks);
    pthread_mutex_unlock(&p->busy);
}
