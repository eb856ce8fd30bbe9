/* bench/heapmap.c — the heap-map sampler (bench/heapmap.h).
 * May touch: the allocator's hc_get_stats and hc_dump_heap_svg
 * (bench/alloc_shim.h), libc (files, a thread, nanosleep). */
#define _GNU_SOURCE
#include "bench/heapmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/alloc_shim.h"

static bench_heap_svg_fn heapmap_dump;
static const char *heapmap_prefix; /* NULL: no heap maps this run */
static atomic_int heapmap_done;
static pthread_t heapmap_thread;

static void heapmap_write(const char *suffix) {
    char path[4096];
    snprintf(path, sizeof path, "%s-%s.svg", heapmap_prefix, suffix);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    heapmap_dump(fileno(f)); /* hc_dump_heap_svg writes to the fd itself */
    fclose(f);
}

static void *heapmap_sampler(void *arg) {
    (void)arg;
    size_t peak = 0;
    while (!atomic_load(&heapmap_done)) {
        hc_stats s;
        bench_allocator_stats(&s);
        if (s.bytes_in_use > peak + peak / 20) { /* 5% above the last picture's */
            peak = s.bytes_in_use;
            heapmap_write("peak");
        }
        nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
    }
    return NULL;
}

void heapmap_start(void) {
    hc_stats probe;
    heapmap_prefix = getenv("BENCH_HEAPMAP");
    heapmap_dump = bench_heap_svg_writer();
    if (heapmap_prefix == NULL || heapmap_dump == NULL || !bench_allocator_stats(&probe)) {
        heapmap_prefix = NULL;
        return;
    }
    pthread_create(&heapmap_thread, NULL, heapmap_sampler, NULL);
}

void heapmap_finish(void) {
    if (heapmap_prefix == NULL)
        return;
    atomic_store(&heapmap_done, 1);
    pthread_join(heapmap_thread, NULL);
    heapmap_write("end");
}
