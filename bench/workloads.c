/* bench/workloads.c — the list of workloads, and those that are a loop per
 * thread (or a producer and a consumer per pair). Each section says what a
 * workload does and which allocator article it models; churn, manythreads
 * and latethreads, which are about threads coming and going, are in
 * thread_workloads.c.
 * May touch: the allocator under test (bench/alloc_shim.h), libc. */
#define _GNU_SOURCE
#include "bench/workloads.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/alloc_shim.h"
#include "bench/harness.h"

/* ---- Blocks of random sizes ------------------------------------------------------ */

void malloc_random_blocks(char **blocks, size_t *sizes, int n, size_t min, size_t max, uint64_t *rng) {
    for (int i = 0; i < n; i++) {
        sizes[i] = random_size(rng, min, max);
        blocks[i] = must_malloc(sizes[i]);
        blocks[i][0] = (char)i;
    }
}

void free_blocks(char **blocks, const size_t *sizes, int n) {
    for (int i = 0; i < n; i++)
        bench_free(blocks[i], sizes[i]);
}

void malloc_and_free_random_blocks(int index, int n, size_t min, size_t max) {
    uint64_t rng = seed_for(index);
    char *blocks[RANDOM_BLOCKS_MAX];
    size_t size[RANDOM_BLOCKS_MAX];
    malloc_random_blocks(blocks, size, n, min, max, &rng);
    free_blocks(blocks, size, n);
}

/* ---- tight: malloc(32), write it, free, as fast as possible (articles 000, 001) -- */

static void *tight_worker(void *arg) {
    worker *w = arg;
    harness_wait_for_start();
    long i = 0;
    while (i < w->ops && !harness_past_deadline()) {
        long end = i + DEADLINE_EVERY < w->ops ? i + DEADLINE_EVERY : w->ops;
        for (; i < end; i++) {
            char *p = must_malloc(32);
            memset(p, (int)i, 32);
            escape(p);
            bench_free(p, 32);
        }
    }
    w->done = i;
    return NULL;
}

/* ---- hold: 128 B objects mostly kept, every tenth freed at once (article 001) ----
 * Rounds of HOLD_ROUND allocations: of each group of ten, the first is freed
 * as the tenth is allocated, so one slot in ten is a hole the next mallocs
 * may reuse; the other nine live until the round ends and all are freed. */

#define HOLD_SIZE  128
#define HOLD_ROUND 100000

static void *hold_worker(void *arg) {
    worker *w = arg;
    void **kept = must_malloc(HOLD_ROUND * sizeof(void *));
    harness_wait_for_start();
    long done = 0;
    while (done < w->ops && !harness_past_deadline()) {
        long round = w->ops - done < HOLD_ROUND ? w->ops - done : HOLD_ROUND;
        for (long i = 0; i < round; i++) {
            char *p = must_malloc(HOLD_SIZE);
            p[0] = (char)i;
            kept[i] = p;
            if (i % 10 == 9) {
                bench_free(kept[i - 9], HOLD_SIZE);
                kept[i - 9] = NULL;
            }
        }
        for (long i = 0; i < round; i++)
            if (kept[i] != NULL)
                bench_free(kept[i], HOLD_SIZE);
        done += round;
    }
    bench_free(kept, HOLD_ROUND * sizeof(void *));
    w->done = done;
    return NULL;
}

/* ---- mixed: random sizes 8 B..4 KiB, a live window of 1,000 (article 004) ------- */

#define MIXED_WINDOW 1000
#define MIXED_MIN    8
#define MIXED_MAX    4096

void *mixed_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    char *live[MIXED_WINDOW];
    size_t size[MIXED_WINDOW];
    malloc_random_blocks(live, size, MIXED_WINDOW, MIXED_MIN, MIXED_MAX, &rng);
    harness_wait_for_start();
    long i = 0;
    while (i < w->ops && !harness_past_deadline()) {
        long end = i + DEADLINE_EVERY < w->ops ? i + DEADLINE_EVERY : w->ops;
        for (; i < end; i++) {
            unsigned victim = (unsigned)(next_random(&rng) % MIXED_WINDOW);
            bench_free(live[victim], size[victim]);
            size_t n = random_size(&rng, MIXED_MIN, MIXED_MAX);
            char *p = must_malloc(n);
            p[0] = (char)i; /* touch both ends: the block is really used */
            p[n - 1] = (char)i;
            live[victim] = p;
            size[victim] = n;
        }
    }
    free_blocks(live, size, MIXED_WINDOW);
    w->done = i;
    return NULL;
}

/* ---- xthread: producers allocate 64 B, consumers free (articles 002, 004) -------
 * Each producer hands its objects to one consumer through a single-producer
 * single-consumer ring; both sides publish in batches so the queue itself
 * costs little next to the allocator. A full or empty ring yields the CPU:
 * with more threads than cores a spinning thread would only delay its partner. */

#define XTHREAD_SIZE 64
#define RING_SLOTS   4096 /* a power of two */
#define RING_BATCH   64

typedef struct spsc_ring {
    _Alignas(64) atomic_long head; /* next slot the consumer frees */
    _Alignas(64) atomic_long tail; /* next slot the producer fills */
    atomic_long end;               /* how many the producer made, once it stops; else -1 */
    _Alignas(64) void *slots[RING_SLOTS];
} spsc_ring;

static void *producer_worker(void *arg) {
    worker *w = arg;
    spsc_ring *ring = w->ring;
    harness_wait_for_start();
    long tail = 0;
    while (tail < w->ops) {
        long head = atomic_load_explicit(&ring->head, memory_order_acquire);
        long room = RING_SLOTS - (tail - head);
        if (room == 0) {
            if (harness_past_deadline())
                break;
            sched_yield();
            continue;
        }
        long n = room < RING_BATCH ? room : RING_BATCH;
        if (n > w->ops - tail)
            n = w->ops - tail;
        for (long i = 0; i < n; i++) {
            long *p = must_malloc(XTHREAD_SIZE);
            p[0] = tail + i;
            ring->slots[(tail + i) & (RING_SLOTS - 1)] = p;
        }
        tail += n;
        atomic_store_explicit(&ring->tail, tail, memory_order_release);
        if ((tail & (DEADLINE_EVERY - 1)) < RING_BATCH && harness_past_deadline())
            break;
    }
    atomic_store_explicit(&ring->end, tail, memory_order_release);
    w->done = tail;
    return NULL;
}

static void *consumer_worker(void *arg) {
    worker *w = arg;
    spsc_ring *ring = w->ring;
    harness_wait_for_start();
    long head = 0;
    for (;;) {
        long end = atomic_load_explicit(&ring->end, memory_order_acquire);
        long tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
        if (tail == head) {
            if (end == head)
                break; /* the producer has stopped and everything is freed */
            sched_yield();
            continue;
        }
        for (; head < tail; head++) {
            long *p = ring->slots[head & (RING_SLOTS - 1)];
            if (p[0] != head) {
                fprintf(stderr, "bench_driver: xthread object %ld corrupted\n", head);
                exit(1);
            }
            bench_free(p, XTHREAD_SIZE);
            if ((head & (RING_BATCH - 1)) == RING_BATCH - 1)
                atomic_store_explicit(&ring->head, head + 1, memory_order_release);
        }
        atomic_store_explicit(&ring->head, head, memory_order_release);
    }
    w->done = 0; /* the producer counts the pairs */
    return NULL;
}

/* ---- large: 256 KiB..4 MiB, one byte written per page (article 001) ------------- */

#define LARGE_MIN  ((size_t)256 * 1024)
#define LARGE_MAX  ((size_t)4 * 1024 * 1024)
#define LARGE_STEP 4096 /* the kernel's page: one write faults it in */

static void *large_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    harness_wait_for_start();
    long i = 0;
    for (; i < w->ops && !harness_past_deadline(); i++) {
        size_t n = random_size(&rng, LARGE_MIN, LARGE_MAX);
        char *p = must_malloc(n);
        for (size_t off = 0; off < n; off += LARGE_STEP)
            p[off] = (char)i;
        escape(p);
        bench_free(p, n);
    }
    w->done = i;
    return NULL;
}

/* ---- bigblocks: a live window of 20 blocks of 5..25 MiB, replaced at random -------
 * Each new block is written (a byte per page), like a program that keeps
 * big buffers. Frees and allocations balance: an allocator that gives the
 * freed pages to the OS at once faults every page of the next block in. */

#define BIG_WINDOW 20
#define BIG_MIN    ((size_t)5 << 20)
#define BIG_MAX    ((size_t)25 << 20)

static char *written_block(size_t n, long tag) {
    char *p = must_malloc(n);
    for (size_t off = 0; off < n; off += LARGE_STEP)
        p[off] = (char)tag;
    return p;
}

static void *bigblocks_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    char *live[BIG_WINDOW];
    size_t size[BIG_WINDOW];
    for (int i = 0; i < BIG_WINDOW; i++) {
        size[i] = random_size(&rng, BIG_MIN, BIG_MAX);
        live[i] = written_block(size[i], i);
    }
    harness_wait_for_start();
    long i = 0;
    for (; i < w->ops && !harness_past_deadline(); i++) {
        unsigned victim = (unsigned)(next_random(&rng) % BIG_WINDOW);
        bench_free(live[victim], size[victim]);
        size[victim] = random_size(&rng, BIG_MIN, BIG_MAX);
        live[victim] = written_block(size[victim], i);
    }
    free_blocks(live, size, BIG_WINDOW);
    w->done = i;
    return NULL;
}

/* ---- regrow: a block grown by small reallocs to tens of MiB, then shrunk -------
 * From 64 B to 16..48 MiB by 100..4,195 bytes a step (a string appended to),
 * every new byte written, then back down to 64 B by steps of 1..64 KiB. One
 * pair here is one realloc. An allocator that copies the block whenever its
 * page count changes does a copy of the whole block per page. */

#define REGROW_START   64
#define REGROW_MIN_TOP ((size_t)16 << 20)
#define REGROW_MAX_TOP ((size_t)48 << 20)

static void *regrow_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    harness_wait_for_start();
    long i = 0;
    while (i < w->ops && !harness_past_deadline()) {
        size_t top = random_size(&rng, REGROW_MIN_TOP, REGROW_MAX_TOP), n = REGROW_START;
        char *p = must_malloc(n);
        while (n < top && i < w->ops) {
            size_t grown = n + random_size(&rng, 100, 4195);
            p = bench_realloc(p, grown);
            if (p == NULL) {
                fprintf(stderr, "bench_driver: realloc(%zu) failed\n", grown);
                exit(1);
            }
            memset(p + n, (int)i, grown - n);
            n = grown;
            i++;
            if ((i & (DEADLINE_EVERY - 1)) == 0 && harness_past_deadline())
                break;
        }
        while (n > REGROW_START) {
            size_t shrunk = n - random_size(&rng, 1024, 65536);
            if (shrunk < REGROW_START || shrunk > n)
                shrunk = REGROW_START;
            p = bench_realloc(p, shrunk);
            n = shrunk;
            i++;
        }
        escape(p);
        bench_free(p, n);
    }
    w->done = i;
    return NULL;
}

/* ---- longspans: ~3 MiB malloc/free among 10,000 free holes of 1..2 MiB ---------
 * Before the clock starts, 10,000 blocks of 1..2 MiB (split across the
 * threads), each followed by a 300 KiB fence, are allocated and the blocks
 * freed: a page cache is left with 10,000 long free spans, none long enough
 * for the timed requests. A best-fit search that walks them costs 10,000
 * steps a malloc. */

#define SPANS_HOLES    10000
#define SPANS_HOLE_MIN ((size_t)1 << 20)
#define SPANS_HOLE_MAX ((size_t)2 << 20)
#define SPANS_FENCE    ((size_t)300 << 10)
#define SPANS_MIN      ((size_t)5 << 19) /* 2.5 MiB */
#define SPANS_MAX      ((size_t)7 << 19) /* 3.5 MiB */

static int loop_threads; /* for workloads that split a fixed setup: run_per_thread_loops sets it */

static void *longspans_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    int holes = SPANS_HOLES / loop_threads;
    char **fences = must_malloc((size_t)holes * sizeof(char *));
    for (int i = 0; i < holes; i++) {
        size_t n = random_size(&rng, SPANS_HOLE_MIN, SPANS_HOLE_MAX);
        char *hole = must_malloc(n);
        hole[0] = 1;
        fences[i] = must_malloc(SPANS_FENCE);
        fences[i][0] = 1;
        bench_free(hole, n);
    }
    harness_wait_for_start();
    long i = 0;
    while (i < w->ops && !harness_past_deadline()) {
        long end = i + DEADLINE_EVERY < w->ops ? i + DEADLINE_EVERY : w->ops;
        for (; i < end; i++) {
            size_t n = random_size(&rng, SPANS_MIN, SPANS_MAX);
            char *p = must_malloc(n);
            p[0] = (char)i;
            escape(p);
            bench_free(p, n);
        }
    }
    for (int k = 0; k < holes; k++)
        bench_free(fences[k], SPANS_FENCE);
    bench_free(fences, (size_t)holes * sizeof(char *));
    w->done = i;
    return NULL;
}


/* ---- Running them ---------------------------------------------------------------- */

long run_loops(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall,
               void (*before)(void), void (*after)(void)) {
    worker workers[BENCH_MAX_THREADS];
    void *(*fns[BENCH_MAX_THREADS])(void *);
    loop_threads = threads;
    for (int i = 0; i < threads; i++) {
        workers[i] = (worker){.index = i, .ops = per_thread};
        fns[i] = wl->loop;
    }
    if (before != NULL)
        before(); /* not timed */
    *wall = run_workers(workers, threads, fns, max_ns);
    if (after != NULL)
        after();
    long pairs = 0;
    for (int i = 0; i < threads; i++)
        pairs += workers[i].done;
    return pairs;
}

long run_per_thread_loops(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall) {
    return run_loops(wl, threads, per_thread, max_ns, wall, NULL, NULL);
}

/* THREADS pairs of threads, each pair with its ring. */
long run_producer_consumer(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall) {
    (void)wl;
    int n = 2 * threads;
    worker workers[2 * BENCH_MAX_THREADS];
    void *(*fns[2 * BENCH_MAX_THREADS])(void *);
    spsc_ring *rings = must_malloc(sizeof(spsc_ring) * (size_t)threads);
    for (int i = 0; i < threads; i++) {
        atomic_init(&rings[i].head, 0);
        atomic_init(&rings[i].tail, 0);
        atomic_init(&rings[i].end, -1);
    }
    for (int i = 0; i < n; i++) {
        workers[i] = (worker){.index = i / 2, .ops = per_thread, .ring = &rings[i / 2]};
        fns[i] = i % 2 ? consumer_worker : producer_worker;
    }
    *wall = run_workers(workers, n, fns, max_ns);
    long pairs = 0;
    for (int i = 0; i < n; i++)
        pairs += workers[i].done;
    bench_free(rings, sizeof(spsc_ring) * (size_t)threads);
    return pairs;
}

/* ---- The list ---------------------------------------------------------------------
 * The one list of workloads: bench.py asks the driver for it (`bench_driver
 * list`), so a workload added here is in the tables, the chart and --help. */

const workload workloads[] = {
    {"tight", "N threads x (malloc 32 B, write 32 B, free)", "000, 001",
     48e6, 0, run_per_thread_loops, tight_worker},
    {"hold", "128 B blocks, 9 in 10 kept until the round ends, every 10th freed at once", "001",
     2e6, 0, run_per_thread_loops, hold_worker},
    {"mixed", "random 8 B..4 KiB, a live window of 1,000 per thread, random victims", "004",
     8e6, 0, run_per_thread_loops, mixed_worker},
    {"xthread", "threads = producer/consumer pairs; producers malloc 64 B, consumers free", "002, 004",
     8e6, 0, run_producer_consumer, NULL},
    {"large", "256 KiB..4 MiB, one byte written per 4 KiB page, then free", "001",
     4000, 0, run_per_thread_loops, large_worker},
    {"churn", "short-lived threads: each mallocs and frees 1,000 blocks of 16..256 B, exits", "004",
     2000, 0, run_churn, NULL},
    {"bigblocks", "20 live blocks of 5..25 MiB replaced at random, a byte written per page", "001",
     400, 0, run_per_thread_loops, bigblocks_worker},
    {"regrow", "realloc from 64 B up to 16..48 MiB by ~2 KiB steps, then down; pair = realloc", "001",
     40e3, 1, run_per_thread_loops, regrow_worker},
    {"longspans", "2.5..3.5 MiB malloc/free with 10,000 free holes of 1..2 MiB around", "001",
     100e3, 0, run_per_thread_loops, longspans_worker},
    {"manythreads", "mixed's loop on fresh threads while --side-threads idle threads live, "
                    "each after 100 mallocs of 16 B..4 KiB", "issue 12",
     4e6, 0, run_among_idle_threads, mixed_worker},
    {"latethreads", "mixed's loop on fresh threads after --side-threads threads made their first "
                    "100 mallocs in the last pthread-key destructor round", "issue 12",
     4e6, 0, run_after_late_threads, mixed_worker},
};

const size_t workload_count = sizeof workloads / sizeof workloads[0];

const workload *find_workload(const char *name) {
    for (size_t i = 0; i < workload_count; i++)
        if (strcmp(workloads[i].name, name) == 0)
            return &workloads[i];
    return NULL;
}
