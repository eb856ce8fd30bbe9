/* bench/harness.c — the clock, the start line and the deadline
 * (bench/harness.h says why wall time, and why a deadline).
 * May touch: libc (clock, pthreads, stdio). */
#define _GNU_SOURCE
#include "bench/harness.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/alloc_shim.h"

void *must_malloc(size_t size) {
    void *p = bench_malloc(size);
    if (p == NULL) {
        fprintf(stderr, "bench_driver: malloc(%zu) failed: %s\n", size, strerror(errno));
        exit(1);
    }
    return p;
}

uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pthread_barrier_t start_line;
static uint64_t deadline_ns; /* written before the workers are let go */
static atomic_int cut_short;

void harness_wait_for_start(void) { pthread_barrier_wait(&start_line); }

int harness_past_deadline(void) {
    if (now_ns() < deadline_ns)
        return 0;
    atomic_store(&cut_short, 1);
    return 1;
}

uint64_t harness_start_clock(uint64_t max_ns) {
    uint64_t start = now_ns();
    deadline_ns = start + max_ns;
    return start;
}

int harness_was_cut(void) { return atomic_load(&cut_short); }

void must_start_thread(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    if (pthread_create(thread, attr, fn, arg) != 0) {
        fprintf(stderr, "bench_driver: pthread_create failed\n");
        exit(1);
    }
}

uint64_t run_workers(worker *workers, int n, void *(**fns)(void *), uint64_t max_ns) {
    pthread_barrier_init(&start_line, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        must_start_thread(&workers[i].thread, NULL, fns[i], &workers[i]);
    uint64_t start = harness_start_clock(max_ns);
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < n; i++)
        pthread_join(workers[i].thread, NULL);
    uint64_t wall = now_ns() - start;
    pthread_barrier_destroy(&start_line);
    return wall;
}
