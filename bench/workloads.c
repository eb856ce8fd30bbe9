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

/* ---- phases: one class's phase, then another's -------------------------------------
 * A program that works in phases: rounds of PHASE_LIVE blocks allocated and
 * then all freed, the first PHASE_FIRST_ROUNDS rounds of PHASE_FIRST_SIZE,
 * every later one of PHASE_SECOND_SIZE. Both phases fit a thread cache's
 * budget (32 MiB by default) alone, not together: a cache that keeps room
 * for the first phase after it is over has less for the second
 * (docs/stage4.md, section 3). A pair is a malloc and its free. */

#define PHASE_LIVE         100000
#define PHASE_FIRST_SIZE   128
#define PHASE_FIRST_ROUNDS 4
#define PHASE_SECOND_SIZE  256

static void *phases_worker(void *arg) {
    worker *w = arg;
    void **live = must_malloc(PHASE_LIVE * sizeof(void *));
    harness_wait_for_start();
    long done = 0;
    for (long round = 0; done < w->ops && !harness_past_deadline(); round++) {
        size_t size = round < PHASE_FIRST_ROUNDS ? PHASE_FIRST_SIZE : PHASE_SECOND_SIZE;
        long count = w->ops - done < PHASE_LIVE ? w->ops - done : PHASE_LIVE;
        for (long i = 0; i < count; i++) {
            char *p = must_malloc(size);
            p[0] = (char)i;
            live[i] = p;
        }
        for (long i = 0; i < count; i++)
            bench_free(live[i], size);
        done += count;
    }
    bench_free(live, PHASE_LIVE * sizeof(void *));
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
#define HANDOFF_MIN  16 /* holds the sequence number and the size */
#define HANDOFF_MAX  512

typedef struct spsc_ring {
    _Alignas(64) atomic_long head; /* next slot the consumer frees */
    _Alignas(64) atomic_long tail; /* next slot the producer fills */
    atomic_long end;               /* how many the producer made, once it stops; else -1 */
    _Alignas(64) void *slots[RING_SLOTS];
} spsc_ring;

/* One side of a pair; `mixed` (a constant at each call, so each wrapper is
 * its own loop): sizes 16..512 B, the size stored in the block for the
 * consumer's sized free, else XTHREAD_SIZE. */
static inline __attribute__((always_inline)) void produce(worker *w, int mixed) {
    spsc_ring *ring = w->ring;
    uint64_t rng = seed_for(w->index);
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
            size_t size = mixed ? random_size(&rng, HANDOFF_MIN, HANDOFF_MAX) : XTHREAD_SIZE;
            long *p = must_malloc(size);
            p[0] = tail + i;
            if (mixed)
                p[1] = (long)size;
            ring->slots[(tail + i) & (RING_SLOTS - 1)] = p;
        }
        tail += n;
        atomic_store_explicit(&ring->tail, tail, memory_order_release);
        if ((tail & (DEADLINE_EVERY - 1)) < RING_BATCH && harness_past_deadline())
            break;
    }
    atomic_store_explicit(&ring->end, tail, memory_order_release);
    w->done = tail;
}

static inline __attribute__((always_inline)) void consume(worker *w, int mixed) {
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
                fprintf(stderr, "bench_driver: object %ld handed over corrupted\n", head);
                exit(1);
            }
            bench_free(p, mixed ? (size_t)p[1] : XTHREAD_SIZE);
            if ((head & (RING_BATCH - 1)) == RING_BATCH - 1)
                atomic_store_explicit(&ring->head, head + 1, memory_order_release);
        }
        atomic_store_explicit(&ring->head, head, memory_order_release);
    }
    w->done = 0; /* the producer counts the pairs */
}

static void *producer_worker(void *arg) {
    produce(arg, 0);
    return NULL;
}

static void *consumer_worker(void *arg) {
    consume(arg, 0);
    return NULL;
}

/* ---- handoff: xthread with sizes 16..512 B mixed (mimalloc-bench's xmalloc-test) -
 * The pattern of mimalloc-bench's xmalloc-test: every block is freed by a
 * thread that did not allocate it, and the blocks are of many size classes,
 * so a cross-thread free lands in a different list each time. */

static void *handoff_producer(void *arg) {
    produce(arg, 1);
    return NULL;
}

static void *handoff_consumer(void *arg) {
    consume(arg, 1);
    return NULL;
}

/* ---- large: 256 KiB..4 MiB, one byte written per page (article 001) ------------- */

#define LARGE_MIN  ((size_t)256 * 1024)
#define LARGE_MAX  ((size_t)4 * 1024 * 1024)
#define LARGE_STEP 4096 /* the kernel's page: one write faults it in */

/* A block of n bytes with one byte written per page: every page faulted in. */
static char *written_block(size_t n, long tag) {
    char *p = must_malloc(n);
    for (size_t off = 0; off < n; off += LARGE_STEP)
        p[off] = (char)tag;
    return p;
}

static void *large_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    harness_wait_for_start();
    long i = 0;
    for (; i < w->ops && !harness_past_deadline(); i++) {
        size_t n = random_size(&rng, LARGE_MIN, LARGE_MAX);
        char *p = written_block(n, i);
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

/* ---- mapchurn: a map's entries, a large live set, half replaced ------------------
 * The allocations of a std::map<int, std::string> of MAP_LIVE entries per
 * thread, in C: an entry is a node (48..96 B) and its string (16..128 B),
 * allocated back to back, as the map's insert makes them. Entries are
 * inserted in key order; then MAP_PASSES times, MAP_LIVE / 2 random keys are
 * erased (a key drawn twice is erased once), every missing key is inserted
 * again in key order, and the map is walked in key order through the nodes'
 * links, reading each string's ends, as a map's iteration would. Where the
 * allocator puts a re-inserted node and its string, relative to its
 * neighbours in key order, is what the walk's cache misses pay for. Every
 * thread keeps its own map of MAP_LIVE entries, so the work grows with the
 * threads; the program it models is two threads of 500,000 each (--scale 2:
 * at 500,000, glibc took 1.7 s of the 2 s limit with 2 threads on an idle
 * 2-core machine, and ran into it under load). A pair is a node's or a
 * string's malloc and free. */

#define MAP_LIVE     250000 /* entries per thread at --scale 1 (--scale 2: the modelled program's) */
#define MAP_PASSES   3
#define MAP_NODE_MIN 48
#define MAP_NODE_MAX 96
#define MAP_TEXT_MIN 16
#define MAP_TEXT_MAX 128

typedef struct map_node {
    struct map_node *next; /* the entry with the next key: the walk's order */
    char *text;
    unsigned text_size, node_size;
    long key;
} map_node;
_Static_assert(sizeof(map_node) <= MAP_NODE_MIN, "a node holds its fields");

static map_node *map_insert(long key, uint64_t *rng) {
    unsigned node_size = (unsigned)random_size(rng, MAP_NODE_MIN, MAP_NODE_MAX);
    unsigned text_size = (unsigned)random_size(rng, MAP_TEXT_MIN, MAP_TEXT_MAX);
    map_node *node = must_malloc(node_size);
    node->text = must_malloc(text_size);
    node->text[0] = node->text[text_size - 1] = (char)key;
    node->key = key;
    node->node_size = node_size;
    node->text_size = text_size;
    return node;
}

static void map_erase(map_node *node) {
    bench_free(node->text, node->text_size);
    bench_free(node, node->node_size);
}

/* Inserts every missing key in key order, counting its mallocs in *made,
 * and relinks the entries; returns 0 when the deadline came first. */
static int map_fill(map_node **by_key, long live, uint64_t *rng, long *made) {
    map_node *prev = NULL;
    for (long k = 0; k < live; k++) {
        if (by_key[k] == NULL) {
            by_key[k] = map_insert(k, rng);
            *made += 2;
            if ((*made & (DEADLINE_EVERY - 1)) == 0 && harness_past_deadline())
                return 0;
        }
        if (prev != NULL)
            prev->next = by_key[k];
        prev = by_key[k];
    }
    prev->next = NULL;
    return 1;
}

static void map_walk(const map_node *head) {
    long key = 0;
    for (const map_node *n = head; n != NULL; n = n->next, key++) {
        if (n->key != key || n->text[0] != (char)key || n->text[n->text_size - 1] != (char)key) {
            fprintf(stderr, "bench_driver: mapchurn entry %ld corrupted\n", key);
            exit(1);
        }
    }
}

static void *mapchurn_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    long live = w->ops, made = 0;
    map_node **by_key = must_malloc((size_t)live * sizeof(map_node *));
    memset(by_key, 0, (size_t)live * sizeof(map_node *));
    harness_wait_for_start();
    int on_time = map_fill(by_key, live, &rng, &made);
    for (int pass = 0; pass < MAP_PASSES && on_time; pass++) {
        for (long i = 0; i < live / 2; i++) {
            long k = (long)(next_random(&rng) % (uint64_t)live);
            if (by_key[k] != NULL) {
                map_erase(by_key[k]);
                by_key[k] = NULL;
            }
        }
        on_time = map_fill(by_key, live, &rng, &made);
        if (on_time)
            map_walk(by_key[0]);
    }
    for (long k = 0; k < live; k++)
        if (by_key[k] != NULL)
            map_erase(by_key[k]);
    bench_free(by_key, (size_t)live * sizeof(map_node *));
    w->done = made; /* every malloc made is freed by now */
    return NULL;
}

/* ---- strgrow: strings grown one byte at a time, in turn ---------------------------
 * STRGROW_LENGTH-byte strings, per_thread / STRGROW_LENGTH of them on each
 * thread: all start at 1 byte, then each in turn is grown by
 * realloc(s, len + 1) and the new byte written, until every one holds
 * STRGROW_LENGTH bytes; then all are freed. A pair is a malloc or a
 * realloc. With the strings interleaved, no block has free room behind it
 * for long: an allocator that cannot grow a block in place copies it at
 * every size class it crosses, and one that rounds up too generously holds
 * the slack of every string at the peak. */

#define STRGROW_LENGTH 16384

static void *strgrow_worker(void *arg) {
    worker *w = arg;
    long count = w->ops / STRGROW_LENGTH > 0 ? w->ops / STRGROW_LENGTH : 1;
    char **strings = must_malloc((size_t)count * sizeof(char *));
    size_t *sizes = must_malloc((size_t)count * sizeof(size_t));
    harness_wait_for_start();
    long i = 0;
    for (long s = 0; s < count; s++, i++) {
        strings[s] = must_malloc(1);
        strings[s][0] = (char)s;
        sizes[s] = 1;
    }
    int on_time = 1;
    for (size_t len = 1; len < STRGROW_LENGTH && on_time; len++) {
        for (long s = 0; s < count && on_time; s++, i++) {
            char *grown = bench_realloc(strings[s], len + 1);
            if (grown == NULL) {
                fprintf(stderr, "bench_driver: realloc(%zu) failed\n", len + 1);
                exit(1);
            }
            grown[len] = (char)len;
            strings[s] = grown;
            sizes[s] = len + 1;
            on_time = (i & (DEADLINE_EVERY - 1)) != 0 || !harness_past_deadline();
        }
    }
    for (long s = 0; s < count; s++) {
        size_t last = sizes[s] - 1; /* written as (char)last, or the first byte */
        if (strings[s][0] != (char)s || (last > 0 && strings[s][last] != (char)last)) {
            fprintf(stderr, "bench_driver: strgrow string %ld corrupted\n", s);
            exit(1);
        }
        bench_free(strings[s], sizes[s]);
    }
    bench_free(sizes, (size_t)count * sizeof(size_t));
    bench_free(strings, (size_t)count * sizeof(char *));
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
static long run_pairs(int threads, long per_thread, uint64_t max_ns, uint64_t *wall,
                      void *(*producer)(void *), void *(*consumer)(void *)) {
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
        fns[i] = i % 2 ? consumer : producer;
    }
    *wall = run_workers(workers, n, fns, max_ns);
    long pairs = 0;
    for (int i = 0; i < n; i++)
        pairs += workers[i].done;
    bench_free(rings, sizeof(spsc_ring) * (size_t)threads);
    return pairs;
}

long run_producer_consumer(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall) {
    (void)wl;
    return run_pairs(threads, per_thread, max_ns, wall, producer_worker, consumer_worker);
}

long run_handoff(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall) {
    (void)wl;
    return run_pairs(threads, per_thread, max_ns, wall, handoff_producer, handoff_consumer);
}

/* Every thread gets the whole size (wl->total at --scale 1), not a share. */
long run_whole_per_thread(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall) {
    return run_loops(wl, threads, per_thread * threads, max_ns, wall, NULL, NULL);
}

/* ---- The list ---------------------------------------------------------------------
 * The one list of workloads: bench.py asks the driver for it (`bench_driver
 * list`), so a workload added here is in the tables, the chart and --help. */

const workload workloads[] = {
    {"tight", "N threads x (malloc 32 B, write 32 B, free)", "000, 001",
     48e6, 0, run_per_thread_loops, tight_worker},
    {"hold", "128 B blocks, 9 in 10 kept until the round ends, every 10th freed at once", "001",
     2e6, 0, run_per_thread_loops, hold_worker},
    {"phases", "rounds of 100,000 blocks allocated, then freed: 4 rounds of 128 B, then 256 B",
     "a program in phases", 2e6, 0, run_per_thread_loops, phases_worker},
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
    {"handoff", "threads = producer/consumer pairs; producers malloc 16..512 B, consumers free",
     "xmalloc-test (mimalloc-bench)", 4e6, 0, run_handoff, NULL},
    {"mapchurn", "a map of 250,000 entries (node 48..96 B + string 16..128 B) per thread, "
                 "half erased and re-inserted, walked; 3 passes", "a churned std::map",
     MAP_LIVE, 0, run_whole_per_thread, mapchurn_worker},
    {"strgrow", "500 strings grown in turn by realloc(s, len + 1) to 16 KiB each "
                "(--scale 4: 2,000)",
     "strings appended to", 500.0 * STRGROW_LENGTH, 1, run_per_thread_loops, strgrow_worker},
    {"manythreads", "mixed's loop on fresh threads while --side-threads idle threads live, "
                    "each after 100 mallocs of 16 B..4 KiB", "thread-per-connection servers",
     4e6, 0, run_among_idle_threads, mixed_worker},
    {"latethreads", "mixed's loop on fresh threads after --side-threads threads made their first "
                    "100 mallocs in the last pthread-key destructor round", "late thread-exit allocations",
     4e6, 0, run_after_late_threads, mixed_worker},
};

const size_t workload_count = sizeof workloads / sizeof workloads[0];

const workload *find_workload(const char *name) {
    for (size_t i = 0; i < workload_count; i++)
        if (strcmp(workloads[i].name, name) == 0)
            return &workloads[i];
    return NULL;
}
