/* SPDX-License-Identifier: MIT */
/* test-pool.c - the core's thread pool (core/pool.c) on its own: every task
 * of every job runs exactly once, on a worker id below the pool's threads,
 * and is finished when pool_run returns; jobs follow each other with no gap
 * (a thread that wakes late must not run a task of a job that is over, nor
 * an old job's function on a new job's argument); a task that is slow on a
 * pool thread holds the caller until it is done; two callers at once; a
 * forked child. */
#include "internal.h"
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_TASKS = 1000 };

typedef struct job {
    unsigned threads;
    size_t n_tasks;
    atomic_int runs[MAX_TASKS];
    atomic_int bad_worker;
    int slow_task; /* -1: none; else this task sleeps first */
} job;

static int failures;

static void check(bool ok, const char *what, size_t a, size_t b)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s (%zu, %zu)\n", what, a, b);
        failures++;
    }
}

static void count_task(void *arg, size_t task, unsigned worker)
{
    job *j = arg;
    if (task >= j->n_tasks || worker >= j->threads) {
        atomic_fetch_add(&j->bad_worker, 1);
        return;
    }
    if ((int)task == j->slow_task && worker != 0)
        nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
    atomic_fetch_add(&j->runs[task], 1);
}

/* One job of n tasks; checks each ran once when pool_run returns. */
static void run_job(rayo_pool *p, unsigned threads, size_t n, int slow_task)
{
    job *j = calloc(1, sizeof *j); /* on the heap: freed (and reused) right after */
    j->threads = threads, j->n_tasks = n, j->slow_task = slow_task;
    pool_run(p, n, count_task, j);
    check(atomic_load(&j->bad_worker) == 0, "task or worker id out of range", n, threads);
    for (size_t t = 0; t < n; t++)
        if (atomic_load(&j->runs[t]) != 1) {
            check(false, "task not run exactly once (n, task)", n, t);
            break;
        }
    memset(j, 0xA5, sizeof *j); /* a late thread reading this job finds garbage */
    free(j);
}

static void jobs_of_sizes(unsigned threads)
{
    static const size_t sizes[] = { 0, 1, 2, 3, 7, 64, 999, MAX_TASKS };
    rayo_pool *p = pool_create(threads);
    check(p != NULL, "pool_create", threads, 0);
    if (!p)
        return;
    check(pool_threads(p) == threads, "pool_threads", pool_threads(p), threads);
    for (int round = 0; round < 20; round++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            run_job(p, threads, sizes[s], -1);
    /* Back to back, tiny: the threads' claims race the next job's
     * publication (a job of more tasks after one of fewer: a thread late on
     * the last job must not claim the new job's extra tasks). */
    for (int round = 0; round < 20000; round++)
        run_job(p, threads, 2 + (size_t)round % 3, -1);
    for (int round = 0; round < 10000; round++)
        run_job(p, threads, round % 2 ? 2 : 16, -1);
    /* A slow task on a pool thread: pool_run must wait for it. */
    for (int round = 0; round < 5; round++)
        run_job(p, threads, 2, 1);
    pool_destroy(p);
}

static rayo_pool *shared;

static void *caller_thread(void *arg)
{
    (void)arg;
    for (int round = 0; round < 3000; round++)
        run_job(shared, pool_threads(shared), 1 + (size_t)round % 9, -1);
    return NULL;
}

static void two_callers(void)
{
    shared = pool_create(3);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, caller_thread, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pool_destroy(shared);
}

/* After fork() the child's pool has no threads: every job runs on the caller. */
static void forked_child(void)
{
    rayo_pool *p = pool_create(2);
    run_job(p, 2, 8, -1);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int before = failures;
        run_job(p, 2, 64, -1);
        pool_destroy(p);
        _exit(failures == before ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "job in a forked child", (size_t)status, 0);
    run_job(p, 2, 8, -1);
    pool_destroy(p);
}

int main(void)
{
    for (unsigned threads = 1; threads <= 4; threads++)
        jobs_of_sizes(threads);
    two_callers();
    forked_child();
    if (failures) {
        fprintf(stderr, "test-pool: %d failures\n", failures);
        return 1;
    }
    printf("test-pool: ok\n");
    return 0;
}
