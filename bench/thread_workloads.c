/* bench/thread_workloads.c — the workloads about threads coming and going:
 * churn (short-lived threads), manythreads and latethreads (a fresh thread
 * among many others). The list they are in is workloads.c's.
 * May touch: the allocator under test (bench/alloc_shim.h), libc. */
#define _GNU_SOURCE
#include <limits.h> /* PTHREAD_DESTRUCTOR_ITERATIONS */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench/harness.h"
#include "bench/workloads.h"

/* ---- churn: short-lived threads, many times (article 004, its trap 6.2) ---------
 * Each round starts THREADS threads; each allocates CHURN_BLOCKS small blocks,
 * frees them and exits. Whatever a thread's cache still holds when it exits is
 * lost unless the allocator reclaims it: the mapped bytes at the end show it.
 * Thread creation is part of the timed work here: it is the workload. */

#define CHURN_BLOCKS 1000
#define CHURN_MIN    16
#define CHURN_MAX    256
_Static_assert(CHURN_BLOCKS <= RANDOM_BLOCKS_MAX, "churn_thread's blocks fit its arrays");

static void *churn_thread(void *arg) {
    const worker *w = arg;
    malloc_and_free_random_blocks(w->index, CHURN_BLOCKS, CHURN_MIN, CHURN_MAX);
    return NULL;
}

/* per_thread: the rounds. Returns the pairs done: CHURN_BLOCKS per thread lifetime. */
long run_churn(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall) {
    (void)wl;
    worker workers[BENCH_MAX_THREADS];
    uint64_t start = harness_start_clock(max_ns);
    long r = 0;
    for (; r < per_thread && !harness_past_deadline(); r++) {
        for (int i = 0; i < threads; i++) {
            workers[i].index = (int)(r * threads + i);
            must_start_thread(&workers[i].thread, NULL, churn_thread, &workers[i]);
        }
        for (int i = 0; i < threads; i++)
            pthread_join(workers[i].thread, NULL);
    }
    *wall = now_ns() - start;
    return r * threads * CHURN_BLOCKS;
}

/* ---- manythreads, latethreads: a fresh thread among many others -----------------
 * Before mixed's loop is timed on THREADS fresh threads, BENCH_SIDE_THREADS
 * (default 300) other threads each malloc and free SIDE_BLOCKS blocks of
 * 16 B..4 KiB. In manythreads they stay alive and idle until the run ends
 * (a thread-per-connection server); in latethreads they do it inside a
 * pthread key destructor in the last destructor round, as their first
 * allocation, and exit. Either way the fresh threads should not notice. */

#define SIDE_BLOCKS      100
_Static_assert(SIDE_BLOCKS <= RANDOM_BLOCKS_MAX, "side_work's blocks fit its arrays");
#define SIDE_MAX_THREADS 4000
/* latethreads: one thread at a time. With 16 at once, jemalloc 5.3 (Debian's
 * libjemalloc2) crashed (SIGSEGV) in about one run in two, 100 threads. */
#define SIDE_LATE_AT_ONCE 1

static pthread_t side_threads[SIDE_MAX_THREADS];
static int side_count, side_ready, side_released;
static pthread_mutex_t side_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t side_cond = PTHREAD_COND_INITIALIZER;
static pthread_key_t late_key;
static __thread int late_index;

static void side_work(int index) {
    malloc_and_free_random_blocks(index, SIDE_BLOCKS, 16, 4096);
}

static void *idle_thread(void *arg) {
    side_work((int)(intptr_t)arg);
    pthread_mutex_lock(&side_lock);
    side_ready++;
    pthread_cond_broadcast(&side_cond);
    while (!side_released)
        pthread_cond_wait(&side_cond, &side_lock);
    pthread_mutex_unlock(&side_lock);
    return NULL;
}

/* Re-arms itself until the last round, then allocates for the first time. */
static void late_destructor(void *rounds_left) {
    uintptr_t left = (uintptr_t)rounds_left;
    if (left > 1)
        pthread_setspecific(late_key, (void *)(left - 1));
    else
        side_work(late_index);
}

static void *late_thread(void *arg) {
    late_index = (int)(intptr_t)arg;
    pthread_setspecific(late_key, (void *)(uintptr_t)PTHREAD_DESTRUCTOR_ITERATIONS);
    return NULL;
}

static void start_side_thread(int i, void *(*fn)(void *)) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10); /* a thousand 8 MiB stacks is a lot to map */
    must_start_thread(&side_threads[i], &attr, fn, (void *)(intptr_t)i);
    pthread_attr_destroy(&attr);
}

/* BENCH_SIDE_THREADS (bench.py --side-threads), 1..SIDE_MAX_THREADS, else 300. */
static int side_thread_count(void) {
    const char *env = getenv("BENCH_SIDE_THREADS");
    int n = env != NULL ? atoi(env) : 300;
    return n < 1 || n > SIDE_MAX_THREADS ? 300 : n;
}

/* manythreads: every side thread has done its work and waits, alive. */
static void idle_threads_start(void) {
    side_count = side_thread_count();
    for (int i = 0; i < side_count; i++)
        start_side_thread(i, idle_thread);
    pthread_mutex_lock(&side_lock);
    while (side_ready < side_count)
        pthread_cond_wait(&side_cond, &side_lock);
    pthread_mutex_unlock(&side_lock);
}

/* latethreads: every side thread has done its work in its last destructor
 * round, and exited. */
static void late_threads_run(void) {
    int count = side_thread_count();
    pthread_key_create(&late_key, late_destructor);
    for (int i = 0; i < count; i += SIDE_LATE_AT_ONCE) {
        int n = count - i < SIDE_LATE_AT_ONCE ? count - i : SIDE_LATE_AT_ONCE;
        for (int j = 0; j < n; j++)
            start_side_thread(i + j, late_thread);
        for (int j = 0; j < n; j++)
            pthread_join(side_threads[i + j], NULL);
    }
    side_count = 0; /* none is left to join */
}

static void side_threads_stop(void) {
    pthread_mutex_lock(&side_lock);
    side_released = 1;
    pthread_cond_broadcast(&side_cond);
    pthread_mutex_unlock(&side_lock);
    for (int i = 0; i < side_count; i++)
        pthread_join(side_threads[i], NULL);
}


long run_among_idle_threads(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall) {
    return run_loops(wl, threads, per_thread, max_ns, wall, idle_threads_start, side_threads_stop);
}

long run_after_late_threads(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall) {
    return run_loops(wl, threads, per_thread, max_ns, wall, late_threads_run, side_threads_stop);
}
