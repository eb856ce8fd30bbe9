/* bench/bench_driver.c — the bench's measuring process: one workload, one
 * allocator, one run, then exit.
 *
 * Built once per allocator (bench/defs.bzl). With BENCH_HCMALLOC defined it
 * calls a stage's hc_malloc / hc_free_sized; without, plain malloc / free,
 * which are glibc's, or a peer's when the runner (bench.py) sets LD_PRELOAD.
 * Each run is a fresh process, so no allocator inherits another's heap.
 *
 * usage:
 *   bench_driver run WORKLOAD THREADS SCALE MAX_SECONDS
 *       prints: pairs=N wall_ns=N cut=0|1 peak_rss_kib=N end_mapped_kib=N
 *               mapped_source=stats|rss
 *   bench_driver callgrind ITERATIONS KEEP_ONE_LIVE
 *       the fast-path loop bench.py runs under callgrind (bench_cg_loop)
 *   bench_driver name
 *       prints the allocator this build calls: a stage's name, or the file
 *       of the library that malloc resolves to (so a preload is checked)
 * With BENCH_HEAPMAP=PREFIX (bench.py --heapmap) and a preloaded hcmalloc
 * that has hc_dump_heap_svg, a run also writes PREFIX-peak.svg (the heap
 * when the program's bytes in use were highest, sampled every 2 ms) and
 * PREFIX-end.svg (after the workload).
 *
 * Times are wall-clock (CLOCK_MONOTONIC) from the moment every worker is
 * released until the last one has finished: CPU time (clock()) adds the
 * threads' times together and would make parallel runs look slower.
 *
 * A run does its fixed amount of work or stops at MAX_SECONDS, whichever
 * comes first (cut=1), and reports the pairs it did: on this machine one
 * allocator can be 100x slower than another at the same workload (a page
 * fault costs ~25 us in its VM), and a fixed size that suits glibc would
 * keep the slow one busy for minutes.
 * May touch: the allocator under test through the two calls below, libc. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- The allocator under test ------------------------------------------------ */

#include "common/hcmalloc.h" /* hc_stats, also for a preloaded drop-in hcmalloc */

#ifdef BENCH_HCMALLOC
#define bench_malloc(size) hc_malloc(size)
#define bench_free(ptr, size) hc_free_sized((ptr), (size))
#define bench_realloc(ptr, size) hc_realloc((ptr), (size))
/* Stages 1-2 find no block from its address: their hc_realloc fails. */
static int bench_has_realloc(void) { return (hc_features() & HC_FEATURE_UNSIZED_FREE) != 0; }
static const char *allocator_name(void) { return hc_stage_name(); }
#else
#include <dlfcn.h>
#define bench_malloc(size) malloc(size)
#define bench_realloc(ptr, size) realloc((ptr), (size))
static int bench_has_realloc(void) { return 1; }
/* glibc 2.36 has no free_sized; the peers' free finds the size themselves. */
#define bench_free(ptr, size) ((void)(size), free(ptr))
/* The library malloc resolves to: libc, or the one LD_PRELOAD put first. */
static const char *allocator_name(void) {
    Dl_info info;
    void *(*resolved)(size_t) = malloc;
    void *address;
    memcpy(&address, &resolved, sizeof address); /* ISO C has no function-to-object cast */
    if (dladdr(address, &info) != 0 && info.dli_fname != NULL)
        return info.dli_fname;
    return "malloc";
}
#endif

/* Tells the compiler the block is used, so it cannot delete a malloc/free
 * pair whose memory nobody reads (GCC does that at -O2). Costs nothing. */
#define escape(ptr) __asm__ volatile("" : : "r"(ptr) : "memory")

static void *must_malloc(size_t size) {
    void *p = bench_malloc(size);
    if (p == NULL) {
        fprintf(stderr, "bench_driver: malloc(%zu) failed: %s\n", size, strerror(errno));
        exit(1);
    }
    return p;
}

/* ---- Small helpers ------------------------------------------------------------ */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: each thread has its own, seeded by its index, so every
 * allocator sees exactly the same sequence of sizes and victims. */
static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t seed_for(int index) { return 0x9E3779B97F4A7C15ull * (uint64_t)(index + 1); }

static size_t random_size(uint64_t *rng, size_t min, size_t max) {
    return min + next_random(rng) % (max - min + 1);
}

/* n blocks of random sizes in [min, max], each touched once. */
static void malloc_random_blocks(char **blocks, size_t *sizes, int n, size_t min, size_t max,
                                 uint64_t *rng) {
    for (int i = 0; i < n; i++) {
        sizes[i] = random_size(rng, min, max);
        blocks[i] = must_malloc(sizes[i]);
        blocks[i][0] = (char)i;
    }
}

static void free_blocks(char **blocks, const size_t *sizes, int n) {
    for (int i = 0; i < n; i++)
        bench_free(blocks[i], sizes[i]);
}

/* A short-lived thread's whole work (churn, manythreads, latethreads): `n`
 * (at most RANDOM_BLOCKS_MAX) blocks of random sizes in [min, max], from the
 * random numbers of `index`, made and then freed. */
#define RANDOM_BLOCKS_MAX 1000

static void malloc_and_free_random_blocks(int index, int n, size_t min, size_t max) {
    uint64_t rng = seed_for(index);
    char *blocks[RANDOM_BLOCKS_MAX];
    size_t size[RANDOM_BLOCKS_MAX];
    malloc_random_blocks(blocks, size, n, min, max, &rng);
    free_blocks(blocks, size, n);
}

/* ---- Running N workers and timing them ----------------------------------------- */

typedef struct worker {
    pthread_t thread;
    int index;
    long ops;               /* malloc+free pairs this worker is asked to do */
    long done;              /* ... and did (fewer when the deadline cut it short) */
    struct spsc_ring *ring; /* xthread only: the queue it shares with its partner */
} worker;

static pthread_barrier_t start_line;
static uint64_t deadline_ns; /* written before the workers are released */
static atomic_int cut_short;

/* Loops ask every so many pairs: a clock read costs ~20 ns, a pair ~5. */
#define DEADLINE_EVERY 1024

static int past_deadline(void) {
    if (now_ns() < deadline_ns)
        return 0;
    atomic_store(&cut_short, 1);
    return 1;
}

/* Starts the workers, releases them together, and returns the wall time from
 * the release until the last one is joined. Thread creation is outside the
 * timed part (except in churn, where it is the workload). */
static uint64_t run_workers(worker *workers, int n, void *(**fns)(void *), uint64_t max_ns) {
    pthread_barrier_init(&start_line, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&workers[i].thread, NULL, fns[i], &workers[i]) != 0) {
            fprintf(stderr, "bench_driver: pthread_create failed\n");
            exit(1);
        }
    }
    uint64_t start = now_ns();
    deadline_ns = start + max_ns;
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < n; i++)
        pthread_join(workers[i].thread, NULL);
    uint64_t wall = now_ns() - start;
    pthread_barrier_destroy(&start_line);
    return wall;
}

/* ---- tight: malloc(32), write it, free, as fast as possible (articles 000, 001) -- */

static void *tight_worker(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(&start_line);
    long i = 0;
    while (i < w->ops && !past_deadline()) {
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
    pthread_barrier_wait(&start_line);
    long done = 0;
    while (done < w->ops && !past_deadline()) {
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

static void *mixed_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    char *live[MIXED_WINDOW];
    size_t size[MIXED_WINDOW];
    malloc_random_blocks(live, size, MIXED_WINDOW, MIXED_MIN, MIXED_MAX, &rng);
    pthread_barrier_wait(&start_line);
    long i = 0;
    while (i < w->ops && !past_deadline()) {
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
    pthread_barrier_wait(&start_line);
    long tail = 0;
    while (tail < w->ops) {
        long head = atomic_load_explicit(&ring->head, memory_order_acquire);
        long room = RING_SLOTS - (tail - head);
        if (room == 0) {
            if (past_deadline())
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
        if ((tail & (DEADLINE_EVERY - 1)) < RING_BATCH && past_deadline())
            break;
    }
    atomic_store_explicit(&ring->end, tail, memory_order_release);
    w->done = tail;
    return NULL;
}

static void *consumer_worker(void *arg) {
    worker *w = arg;
    spsc_ring *ring = w->ring;
    pthread_barrier_wait(&start_line);
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
    pthread_barrier_wait(&start_line);
    long i = 0;
    for (; i < w->ops && !past_deadline(); i++) {
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
    pthread_barrier_wait(&start_line);
    long i = 0;
    for (; i < w->ops && !past_deadline(); i++) {
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
    pthread_barrier_wait(&start_line);
    long i = 0;
    while (i < w->ops && !past_deadline()) {
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
            if ((i & (DEADLINE_EVERY - 1)) == 0 && past_deadline())
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

static int bench_threads; /* for workloads that split a fixed setup */

static void *longspans_worker(void *arg) {
    worker *w = arg;
    uint64_t rng = seed_for(w->index);
    int holes = SPANS_HOLES / bench_threads;
    char **fences = must_malloc((size_t)holes * sizeof(char *));
    for (int i = 0; i < holes; i++) {
        size_t n = random_size(&rng, SPANS_HOLE_MIN, SPANS_HOLE_MAX);
        char *hole = must_malloc(n);
        hole[0] = 1;
        fences[i] = must_malloc(SPANS_FENCE);
        fences[i][0] = 1;
        bench_free(hole, n);
    }
    pthread_barrier_wait(&start_line);
    long i = 0;
    while (i < w->ops && !past_deadline()) {
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

/* Returns the pairs done: CHURN_BLOCKS per thread lifetime. */
static long run_churn(int threads, long rounds, uint64_t max_ns, uint64_t *wall) {
    worker workers[16];
    uint64_t start = now_ns();
    deadline_ns = start + max_ns;
    long r = 0;
    for (; r < rounds && !past_deadline(); r++) {
        for (int i = 0; i < threads; i++) {
            workers[i].index = (int)(r * threads + i);
            if (pthread_create(&workers[i].thread, NULL, churn_thread, &workers[i]) != 0) {
                fprintf(stderr, "bench_driver: pthread_create failed\n");
                exit(1);
            }
        }
        for (int i = 0; i < threads; i++)
            pthread_join(workers[i].thread, NULL);
    }
    *wall = now_ns() - start;
    return r * threads * CHURN_BLOCKS;
}

/* ---- manythreads, latethreads: a fresh thread among many others (issue 12) -----
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
    if (pthread_create(&side_threads[i], &attr, fn, (void *)(intptr_t)i) != 0) {
        fprintf(stderr, "bench_driver: pthread_create failed\n");
        exit(1);
    }
    pthread_attr_destroy(&attr);
}

static void side_threads_start(const char *workload) {
    const char *env = getenv("BENCH_SIDE_THREADS");
    side_count = env != NULL ? atoi(env) : 300;
    if (side_count < 1 || side_count > SIDE_MAX_THREADS)
        side_count = 300;
    if (strcmp(workload, "manythreads") == 0) {
        for (int i = 0; i < side_count; i++)
            start_side_thread(i, idle_thread);
        pthread_mutex_lock(&side_lock);
        while (side_ready < side_count)
            pthread_cond_wait(&side_cond, &side_lock);
        pthread_mutex_unlock(&side_lock);
    } else {
        pthread_key_create(&late_key, late_destructor);
        for (int i = 0; i < side_count; i += SIDE_LATE_AT_ONCE) {
            int n = side_count - i < SIDE_LATE_AT_ONCE ? side_count - i : SIDE_LATE_AT_ONCE;
            for (int j = 0; j < n; j++)
                start_side_thread(i + j, late_thread);
            for (int j = 0; j < n; j++)
                pthread_join(side_threads[i + j], NULL);
        }
        side_count = 0;
    }
}

static void side_threads_stop(void) {
    pthread_mutex_lock(&side_lock);
    side_released = 1;
    pthread_cond_broadcast(&side_cond);
    pthread_mutex_unlock(&side_lock);
    for (int i = 0; i < side_count; i++)
        pthread_join(side_threads[i], NULL);
}

/* ---- Memory ---------------------------------------------------------------------
 * Peak RSS is the kernel's high-water mark of this process's resident set
 * (VmHWM). It is what getrusage's ru_maxrss would say, except that Linux
 * folds into ru_maxrss the RSS of the image a process had before exec: the
 * Python runner's 17 MiB, which would hide every small figure. */

static long peak_rss_kib(void) {
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Memory held at the end of a run: a stage reports what it has mapped from
 * the OS, and so does a preloaded drop-in hcmalloc (stage 4's library exports
 * hc_get_stats too); glibc and the peers cannot be asked the same way, so
 * their resident set stands in (it leaves out mapped memory never touched,
 * and counts the program's own pages: docs/benchmarks.md says so). */

static long end_mapped_kib(const char **source) {
#ifdef BENCH_HCMALLOC
    hc_stats stats;
    hc_get_stats(&stats);
    *source = "stats";
    return (long)(stats.os_mapped_bytes / 1024);
#else
    void (*get_stats)(hc_stats *);
    void *symbol = dlsym(RTLD_DEFAULT, "hc_get_stats");
    if (symbol != NULL) {
        hc_stats stats;
        memcpy(&get_stats, &symbol, sizeof get_stats);
        get_stats(&stats);
        *source = "stats";
        return (long)(stats.os_mapped_bytes / 1024);
    }
    long pages_total = 0, pages_resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2)
            pages_resident = 0;
        fclose(f);
    }
    *source = "rss";
    return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
#endif
}

/* ---- Heap maps (BENCH_HEAPMAP) ------------------------------------------------------
 * Found with dlsym, like hc_get_stats above: only the plain driver under a
 * preloaded stage 4 has them. */

static int (*heapmap_dump)(int fd);
static const char *heapmap_prefix;
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

#ifndef BENCH_HCMALLOC /* the sampler runs only under a preloaded stage 4 */
static void (*heapmap_stats)(hc_stats *);

static void *heapmap_sampler(void *arg) {
    (void)arg;
    size_t peak = 0;
    while (!atomic_load(&heapmap_done)) {
        hc_stats s;
        heapmap_stats(&s);
        if (s.bytes_in_use > peak + peak / 20) { /* 5% above the last picture's */
            peak = s.bytes_in_use;
            heapmap_write("peak");
        }
        nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
    }
    return NULL;
}
#endif

static void heapmap_start(void) {
#ifndef BENCH_HCMALLOC
    heapmap_prefix = getenv("BENCH_HEAPMAP");
    void *dump = dlsym(RTLD_DEFAULT, "hc_dump_heap_svg"), *stats = dlsym(RTLD_DEFAULT, "hc_get_stats");
    if (heapmap_prefix == NULL || dump == NULL || stats == NULL) {
        heapmap_prefix = NULL;
        return;
    }
    memcpy(&heapmap_dump, &dump, sizeof dump);
    memcpy(&heapmap_stats, &stats, sizeof stats);
    pthread_create(&heapmap_thread, NULL, heapmap_sampler, NULL);
#endif
}

static void heapmap_finish(void) {
    if (heapmap_prefix == NULL)
        return;
    atomic_store(&heapmap_done, 1);
    pthread_join(heapmap_thread, NULL);
    heapmap_write("end");
}

/* ---- The workloads ----------------------------------------------------------------
 * Work at --scale 1, split evenly across the threads, sized so that glibc
 * takes 0.2..1 s on the project's 2-core machine whatever the thread count. */

typedef enum { PER_THREAD_LOOP, PRODUCER_CONSUMER, THREAD_CHURN, AMONG_SIDE_THREADS } workload_shape;

typedef struct workload {
    const char *name;
    double total; /* pairs (large: blocks; churn: thread lifetimes) */
    workload_shape shape;
    void *(*fn)(void *);
} workload;

static const workload workloads[] = {
    {"tight", 48e6, PER_THREAD_LOOP, tight_worker},
    {"hold", 2e6, PER_THREAD_LOOP, hold_worker},
    {"mixed", 8e6, PER_THREAD_LOOP, mixed_worker},
    {"xthread", 8e6, PRODUCER_CONSUMER, NULL},
    {"large", 4000, PER_THREAD_LOOP, large_worker},
    {"churn", 2000, THREAD_CHURN, NULL},
    {"bigblocks", 400, PER_THREAD_LOOP, bigblocks_worker},
    {"regrow", 40e3, PER_THREAD_LOOP, regrow_worker},
    {"longspans", 100e3, PER_THREAD_LOOP, longspans_worker},
    {"manythreads", 4e6, AMONG_SIDE_THREADS, mixed_worker},
    {"latethreads", 4e6, AMONG_SIDE_THREADS, mixed_worker},
};

#define MAX_THREADS 16

static int run(const char *name, int threads, double scale, double max_seconds) {
    const workload *wl = NULL;
    for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++)
        if (strcmp(workloads[i].name, name) == 0)
            wl = &workloads[i];
    if (wl == NULL || threads < 1 || threads > MAX_THREADS || !(scale > 0) || !(max_seconds > 0)) {
        fprintf(stderr, "bench_driver: bad run arguments\n");
        return 2;
    }
    if (wl->fn == regrow_worker && !bench_has_realloc()) {
        printf("skipped=this_stage_has_no_realloc\n");
        return 0;
    }
    bench_threads = threads;
    long per_thread = (long)(wl->total * scale) / threads;
    if (per_thread < 1)
        per_thread = 1;
    uint64_t max_ns = (uint64_t)(max_seconds * 1e9);
    long pairs = 0;
    uint64_t wall;
    heapmap_start();

    if (wl->shape == THREAD_CHURN) {
        pairs = run_churn(threads, per_thread, max_ns, &wall);
    } else {
        /* PRODUCER_CONSUMER: THREADS pairs of threads, each with its ring. */
        int n = wl->shape == PRODUCER_CONSUMER ? 2 * threads : threads;
        worker workers[2 * MAX_THREADS];
        void *(*fns[2 * MAX_THREADS])(void *);
        spsc_ring *rings = NULL;
        if (wl->shape == PRODUCER_CONSUMER) {
            rings = must_malloc(sizeof(spsc_ring) * (size_t)threads);
            for (int i = 0; i < threads; i++) {
                atomic_init(&rings[i].head, 0);
                atomic_init(&rings[i].tail, 0);
                atomic_init(&rings[i].end, -1);
            }
        }
        for (int i = 0; i < n; i++) {
            int pair = wl->shape == PRODUCER_CONSUMER ? i / 2 : i;
            workers[i] = (worker){.index = pair, .ops = per_thread, .ring = rings ? &rings[pair] : NULL};
            fns[i] = wl->shape == PRODUCER_CONSUMER ? (i % 2 ? consumer_worker : producer_worker) : wl->fn;
        }
        if (wl->shape == AMONG_SIDE_THREADS)
            side_threads_start(wl->name); /* not timed */
        wall = run_workers(workers, n, fns, max_ns);
        if (wl->shape == AMONG_SIDE_THREADS)
            side_threads_stop();
        for (int i = 0; i < n; i++)
            pairs += workers[i].done;
        if (rings != NULL)
            bench_free(rings, sizeof(spsc_ring) * (size_t)threads);
    }

    heapmap_finish();
    const char *source;
    long mapped = end_mapped_kib(&source);
    printf("pairs=%ld wall_ns=%llu cut=%d peak_rss_kib=%ld end_mapped_kib=%ld mapped_source=%s\n",
           pairs, (unsigned long long)wall, atomic_load(&cut_short), peak_rss_kib(), mapped, source);
    return 0;
}

/* ---- callgrind: the fast path alone --------------------------------------------
 * bench.py runs this under callgrind and adds up the inclusive cost of the
 * calls bench_cg_loop makes (to malloc and free, and whatever they call):
 * the loop's own instructions are never counted. A warm-up loop first takes
 * the one-time costs (lazy symbol binding, creating the thread's cache, the
 * first refill); it takes the size as an argument so that the compiler
 * cannot fold the two loops into one function. Not static, so that the
 * symbols keep these names. */

void bench_cg_warmup(long iterations, size_t size);
void bench_cg_loop(long iterations);

__attribute__((noinline)) void bench_cg_warmup(long iterations, size_t size) {
    for (long i = 0; i < iterations; i++) {
        void *p = bench_malloc(size);
        escape(p);
        bench_free(p, size);
    }
}

__attribute__((noinline)) void bench_cg_loop(long iterations) {
    for (long i = 0; i < iterations; i++) {
        void *p = bench_malloc(32);
        escape(p);
        bench_free(p, 32);
    }
}

#define CG_WARMUP 1000

static int callgrind_loop(long iterations, int keep_one_live) {
    /* "warm": one more block of the class stays live throughout, so an
     * allocator that retires a page (or span) when its last block is freed
     * never sees it empty. */
    void *kept = keep_one_live ? must_malloc(32) : NULL;
    bench_cg_warmup(CG_WARMUP, 32);
    bench_cg_loop(iterations);
    if (kept != NULL)
        bench_free(kept, 32);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "name") == 0) {
        printf("%s\n", allocator_name());
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "run") == 0)
        return run(argv[2], atoi(argv[3]), strtod(argv[4], NULL), strtod(argv[5], NULL));
    if (argc == 4 && strcmp(argv[1], "callgrind") == 0)
        return callgrind_loop(atol(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: bench_driver run WORKLOAD THREADS SCALE MAX_SECONDS"
                    " | callgrind ITERATIONS KEEP_ONE_LIVE | name\n"
                    "(started by `bazel run //bench`: see bench/bench.py)\n");
    return 2;
}
