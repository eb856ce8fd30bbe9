/* bench/shim_count.c — bench/alloc_shim.h through malloc / free, counting
 * what a workload asks of the allocator: its operations (mallocs and
 * frees, a realloc counting as both) and its cross-thread frees (a block
 * freed by a thread other than the one that allocated it). The driver built
 * with it
 * (:driver_count) is for tools/measure/scaling_counts.sh, never for timing: each
 * call also writes or reads an owner table.
 *
 * The owner table: one 16-bit thread tag per slot, a slot per block by a
 * hash of its address, written at malloc and read at free. Two live blocks
 * that share a slot can miscount one free; at 2^22 slots and the bench's
 * live sets (at most a few hundred thousand blocks) that is well under 1%.
 * Counts are per thread and added to the totals every COUNT_FLUSH calls and
 * when the thread ends, so counting adds no shared write per call that
 * would change the contention being counted. The totals are printed on
 * stderr at exit: `count_ops=N count_cross_frees=N`.
 * May touch: malloc / free, its own table and counters. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/alloc_shim.h"

#define OWNER_SLOTS (1u << 22)
#define COUNT_FLUSH 256

static uint16_t owner[OWNER_SLOTS];
static uint64_t total_ops, total_cross;
static uint16_t next_tag;
static pthread_key_t flush_key;
static pthread_once_t flush_once = PTHREAD_ONCE_INIT;

typedef struct thread_counts {
    uint16_t tag; /* 0: not yet given one */
    uint32_t ops, cross;
} thread_counts;
static __thread thread_counts mine;

static void flush(thread_counts *c) {
    __atomic_add_fetch(&total_ops, c->ops, __ATOMIC_RELAXED);
    __atomic_add_fetch(&total_cross, c->cross, __ATOMIC_RELAXED);
    c->ops = c->cross = 0;
}

static void flush_at_exit(void *counts) { flush(counts); }

static void make_key(void) { pthread_key_create(&flush_key, flush_at_exit); }

static uint32_t slot_of(const void *p) {
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15u;
    return (uint32_t)(h >> 42); /* the top 22 bits */
}

static thread_counts *counts(void) {
    if (mine.tag == 0) {
        do
            mine.tag = __atomic_add_fetch(&next_tag, 1, __ATOMIC_RELAXED);
        while (mine.tag == 0); /* 0 is "no owner"; past 65,535 threads, tags repeat */
        pthread_once(&flush_once, make_key);
        pthread_setspecific(flush_key, &mine);
    }
    if (++mine.ops >= COUNT_FLUSH)
        flush(&mine);
    return &mine;
}

static void note_malloc(void *p) {
    if (p != NULL)
        __atomic_store_n(&owner[slot_of(p)], counts()->tag, __ATOMIC_RELAXED);
}

static void note_free(void *p) {
    thread_counts *c = counts();
    if (p == NULL)
        return;
    uint16_t by = __atomic_load_n(&owner[slot_of(p)], __ATOMIC_RELAXED);
    if (by != 0 && by != c->tag)
        c->cross++;
}

__attribute__((destructor)) static void print_counts(void) {
    flush(&mine);
    fprintf(stderr, "count_ops=%llu count_cross_frees=%llu\n",
            (unsigned long long)__atomic_load_n(&total_ops, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&total_cross, __ATOMIC_RELAXED));
}

void *bench_malloc(size_t size) {
    void *p = malloc(size);
    note_malloc(p);
    return p;
}

void bench_free(void *ptr, size_t size) {
    (void)size;
    note_free(ptr);
    free(ptr);
}

void *bench_realloc(void *ptr, size_t size) {
    note_free(ptr);
    void *p = realloc(ptr, size);
    note_malloc(p);
    return p;
}

int bench_has_realloc(void) { return 1; }

/* Never asked: bench.py, which checks a preload by this name, does not run
 * the counting driver. */
const char *bench_allocator_name(void) { return "malloc, counted"; }

int bench_allocator_stats(hc_stats *out) {
    (void)out;
    return 0;
}

bench_heap_svg_fn bench_heap_svg_writer(void) { return NULL; }
