/* tools/labs/trace_driver.c — the grader's performance traces (tools/labs/grade.py).
 *
 * Fixed, seeded traces in the spirit of malloclab's: each run replays one
 * trace through hc_malloc / hc_free_sized (every stage has both) and prints
 *
 *     <trace> <operations> <seconds> <peak bytes requested> <peak bytes mapped> <cpu seconds>
 *
 * "Requested" is what the trace holds (its own sizes, not rounded); "mapped"
 * is hc_get_stats' os_mapped_bytes, sampled every 4096 operations and at the
 * peak of each trace. Their ratio is the space utilisation. The CPU seconds
 * (user + system, every thread: getrusage) are what the grader divides by:
 * on a machine shared with other jobs, wall time measures their load as
 * much as the allocator, CPU time far less (a thread that waits for a lock
 * sleeps in the kernel, and the futex calls it makes count). Built with
 * -DHC_TRACE_LIBC it replays the same trace through libc malloc (the
 * yardstick for throughput when there is no reference to compare with) and
 * reports 0 bytes mapped.
 *
 * The first four use small objects only and ask little of a layer's
 * choices; the others are where choices show (lab 2's batch and limit
 * policy, lab 3's spare spans and merging, lab 4's reclamation):
 *   waves    one size at a time, 8 MiB of it, freed in an order that needs
 *            merges on both sides; then the next size, small to large:
 *            pages kept by a size no longer used, or free runs that never
 *            merged, are mapped bytes the next wave cannot use
 *   large    random blocks of 32 KiB to 1 MiB, 64 live: splits and merges
 *   exits    48 short-lived threads, 4 at a time, each caching and exiting:
 *            a cache that dies with its thread strands its objects
 *
 *   burst, sparse, idle   lab 2's list policy: how fast a limit grows from
 *            0 (burst: throughput), what a lightly used class fetches
 *            beyond its need (sparse: space), and whether a list left idle
 *            while its thread keeps running gives its objects back (idle:
 *            space, the scavenge)
 *
 * usage: trace_driver TRACE
 *        TRACE: churn, ramp, threads, handoff, burst, sparse, idle, waves,
 *        large, exits */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HC_TRACE_LIBC
static void *trace_malloc(size_t n) { return malloc(n); }
static void trace_free(void *p, size_t n) { (void)n; free(p); }
static void trace_flush(void) {}
static size_t trace_mapped(void) { return 0; }
#else
#include "common/hcmalloc.h"
static void *trace_malloc(size_t n) { return hc_malloc(n); }
static void trace_free(void *p, size_t n) { hc_free_sized(p, n); }
static void trace_flush(void) { hc_thread_flush(); }
static size_t trace_mapped(void) {
    hc_stats s;
    hc_get_stats(&s);
    return s.os_mapped_bytes;
}
#endif

/* One relaxed atomic add per operation: the same cost for every allocator
 * compared, and no lock that would dwarf the allocator's own work. */
static long long requested;
static size_t peak_requested, peak_mapped;

static void raise_to(size_t *peak, size_t value) {
    size_t seen = __atomic_load_n(peak, __ATOMIC_RELAXED);
    while (value > seen &&
           !__atomic_compare_exchange_n(peak, &seen, value, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static void note(long long delta, int sample) {
    long long now = __atomic_add_fetch(&requested, delta, __ATOMIC_RELAXED);
    if (now > 0) raise_to(&peak_requested, (size_t)now);
    if (sample) raise_to(&peak_mapped, trace_mapped());
}

static uint64_t next_random(uint64_t *state) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

/* Mostly small, a few up to 4 KiB: the shape of most programs' requests. */
static size_t random_size(uint64_t *state) {
    uint64_t r = next_random(state);
    if (r % 16 < 12) return 8 + r % 120;
    if (r % 16 < 15) return 128 + r % 896;
    return 1024 + r % 3072;
}

static void abort_oom(void) {
    fprintf(stderr, "trace_driver: out of memory\n");
    exit(2);
}

/* Random malloc/free over `slots` live slots: the steady state of a server. */
static long churn(uint64_t seed, size_t slots, long ops) {
    void **ptr = calloc(slots, sizeof *ptr);
    size_t *size = calloc(slots, sizeof *size);
    uint64_t state = seed;
    long done = 0;
    for (long i = 0; i < ops; i++, done++) {
        size_t k = next_random(&state) % slots;
        int sample = (i & 4095) == 0;
        if (ptr[k] != NULL) {
            trace_free(ptr[k], size[k]);
            note(-(long long)size[k], sample);
            ptr[k] = NULL;
        } else {
            size[k] = random_size(&state);
            if ((ptr[k] = trace_malloc(size[k])) == NULL) abort_oom();
            memset(ptr[k], 1, 8);
            note((long long)size[k], sample);
        }
    }
    note(0, 1);
    for (size_t k = 0; k < slots; k++)
        if (ptr[k] != NULL) {
            trace_free(ptr[k], size[k]);
            note(-(long long)size[k], 0);
        }
    free(ptr);
    free(size);
    return done;
}

/* Build up 200,000 objects of 64 B, free them all; five times. */
static long ramp(void) {
    enum { N = 200000, SIZE = 64 };
    void **ptr = calloc(N, sizeof *ptr);
    long done = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < N; i++, done++) {
            if ((ptr[i] = trace_malloc(SIZE)) == NULL) abort_oom();
            note(SIZE, (i & 4095) == 0);
        }
        note(0, 1);
        for (int i = 0; i < N; i++, done++) {
            trace_free(ptr[i], SIZE);
            note(-SIZE, 0);
        }
    }
    free(ptr);
    return done;
}

struct churn_job {
    uint64_t seed;
    long ops;
};

static void *churn_thread(void *arg) {
    struct churn_job *job = arg;
    job->ops = churn(job->seed, 4096, job->ops);
    return NULL;
}

/* Two threads, each its own churn. */
static long threads(void) {
    pthread_t t[2];
    struct churn_job jobs[2] = {{2, 600000}, {3, 600000}};
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, churn_thread, &jobs[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return jobs[0].ops + jobs[1].ops;
}

/* One thread allocates, another frees: memory must flow between them. */
enum { HANDOFF_RING = 1024, HANDOFF_ITEMS = 300000, HANDOFF_SIZE = 96 };
static void *handoff_ring[HANDOFF_RING];
static long handoff_head, handoff_tail; /* produced, consumed */
static pthread_mutex_t handoff_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t handoff_cond = PTHREAD_COND_INITIALIZER;

static void *handoff_consumer(void *arg) {
    (void)arg;
    for (long i = 0; i < HANDOFF_ITEMS; i++) {
        pthread_mutex_lock(&handoff_lock);
        while (handoff_tail == handoff_head) pthread_cond_wait(&handoff_cond, &handoff_lock);
        void *p = handoff_ring[handoff_tail % HANDOFF_RING];
        handoff_tail++;
        pthread_cond_broadcast(&handoff_cond);
        pthread_mutex_unlock(&handoff_lock);
        trace_free(p, HANDOFF_SIZE);
        note(-HANDOFF_SIZE, 0);
    }
    return NULL;
}

static long handoff(void) {
    pthread_t consumer;
    pthread_create(&consumer, NULL, handoff_consumer, NULL);
    for (long i = 0; i < HANDOFF_ITEMS; i++) {
        void *p = trace_malloc(HANDOFF_SIZE);
        if (p == NULL) abort_oom();
        note(HANDOFF_SIZE, (i & 4095) == 0);
        pthread_mutex_lock(&handoff_lock);
        while (handoff_head - handoff_tail == HANDOFF_RING) pthread_cond_wait(&handoff_cond, &handoff_lock);
        handoff_ring[handoff_head % HANDOFF_RING] = p;
        handoff_head++;
        pthread_cond_broadcast(&handoff_cond);
        pthread_mutex_unlock(&handoff_lock);
    }
    pthread_join(consumer, NULL);
    return 2L * HANDOFF_ITEMS;
}

/* Frees ptr[0..n) in the order 1, 3, 5, ... then 0, 2, 4, ...: each block of
 * the second pass has free neighbours on both sides. */
static void free_odd_then_even(void **ptr, size_t n, size_t size) {
    for (int parity = 1; parity >= 0; parity--)
        for (size_t i = (size_t)parity; i < n; i += 2) {
            trace_free(ptr[i], size);
            note(-(long long)size, 0);
        }
}

static long waves(void) {
    static const size_t sizes[] = {48, 160, 1024, 3072, 12288, 40960, 98304, 200000, 520000};
    enum { WAVE_BYTES = 8 << 20 };
    void **ptr = calloc(WAVE_BYTES / 48 + 1, sizeof *ptr);
    long done = 0;
    for (size_t w = 0; w < sizeof sizes / sizeof sizes[0]; w++) {
        size_t size = sizes[w], n = WAVE_BYTES / size;
        for (size_t i = 0; i < n; i++, done++) {
            if ((ptr[i] = trace_malloc(size)) == NULL) abort_oom();
            memset(ptr[i], 1, 8);
            note((long long)size, (i & 255) == 0);
        }
        note(0, 1);
        free_odd_then_even(ptr, n, size);
        done += (long)n;
    }
    free(ptr);
    return done;
}

static long large(void) {
    enum { SLOTS = 64, OPS = 20000 };
    void *ptr[SLOTS] = {0};
    size_t size[SLOTS];
    uint64_t state = 7;
    long done = 0;
    for (long i = 0; i < OPS; i++, done++) {
        size_t k = next_random(&state) % SLOTS;
        if (ptr[k] != NULL) {
            trace_free(ptr[k], size[k]);
            note(-(long long)size[k], (i & 63) == 0);
            ptr[k] = NULL;
        } else {
            size[k] = ((size_t)32 << 10) + next_random(&state) % ((size_t)992 << 10);
            if ((ptr[k] = trace_malloc(size[k])) == NULL) abort_oom();
            memset(ptr[k], 1, 8);
            note((long long)size[k], (i & 63) == 0);
        }
    }
    note(0, 1);
    for (int k = 0; k < SLOTS; k++)
        if (ptr[k] != NULL) {
            trace_free(ptr[k], size[k]);
            note(-(long long)size[k], 0);
        }
    return done;
}

/* Bursts: 64 objects of one class at a time, then the next of 24 classes
 * (16 to 384 B); after the 24, the thread's cache is flushed (every limit
 * back to 0, as a worker's between two requests), so every burst meets its
 * list in slow start: how fast a limit grows from 0 is what it measures. */
static long burst(void) {
    enum { ROUNDS = 3000, CLASSES = 24, PER_BURST = 64 };
    void *ptr[PER_BURST];
    long done = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int c = 0; c < CLASSES; c++) {
            size_t size = 16 + 16 * (size_t)c;
            /* One note per burst, not per object: the atomic add would
             * cost as much as the slow path this trace is about. */
            for (int i = 0; i < PER_BURST; i++, done++)
                if ((ptr[i] = trace_malloc(size)) == NULL) abort_oom();
            note((long long)(size * PER_BURST), r == 0 && c == CLASSES - 1);
            for (int i = 0; i < PER_BURST; i++, done++) trace_free(ptr[i], size);
            note(-(long long)(size * PER_BURST), 0);
        }
        trace_flush();
    }
    note(0, 1);
    return done;
}

/* Sparse: 16 threads alive at once, each holding 20 objects of each of 24
 * classes (16 to 384 B): a class used a little. What a list fetched beyond
 * its 20 sits in that thread's cache, mapped and of no use to the others:
 * a limit that grows fast fetches more than a thread ends up using. */
enum { SPARSE_THREADS = 16, SPARSE_CLASSES = 24, SPARSE_EACH = 20 };
static pthread_barrier_t sparse_all_hold;

static void *sparse_thread(void *arg) {
    (void)arg;
    static __thread void *ptr[SPARSE_CLASSES][SPARSE_EACH];
    for (int c = 0; c < SPARSE_CLASSES; c++)
        for (int i = 0; i < SPARSE_EACH; i++) {
            size_t size = 16 + 16 * (size_t)c;
            if ((ptr[c][i] = trace_malloc(size)) == NULL) abort_oom();
            note((long long)size, 0);
        }
    pthread_barrier_wait(&sparse_all_hold);
    note(0, 1); /* every thread holds its objects: the peak */
    pthread_barrier_wait(&sparse_all_hold);
    for (int c = 0; c < SPARSE_CLASSES; c++)
        for (int i = 0; i < SPARSE_EACH; i++) {
            trace_free(ptr[c][i], 16 + 16 * (size_t)c);
            note(-(long long)(16 + 16 * c), 0);
        }
    return NULL;
}

static long sparse(void) {
    pthread_t t[SPARSE_THREADS];
    pthread_barrier_init(&sparse_all_hold, NULL, SPARSE_THREADS);
    for (int i = 0; i < SPARSE_THREADS; i++) pthread_create(&t[i], NULL, sparse_thread, NULL);
    for (int i = 0; i < SPARSE_THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&sparse_all_hold);
    return 2L * SPARSE_THREADS * SPARSE_CLASSES * SPARSE_EACH;
}

/* Idle: this thread frees 1 MiB of 256 B objects into its own list, then
 * keeps busy with another class (50,000 objects of 64 B kept: its slow path
 * runs all the while) and never touches 256 B again; then a second thread
 * wants 1 MiB of 256 B. A list that gives back what it held idle (the
 * scavenge) hands the second thread those objects; one that keeps them
 * makes the allocator map 1 MiB more. */
enum { IDLE_SIZE = 256, IDLE_COUNT = (1 << 20) / IDLE_SIZE, BUSY_SIZE = 64, BUSY_COUNT = 50000 };
static void *idle_ptr[IDLE_COUNT];

static void *idle_second_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < IDLE_COUNT; i++) {
        if ((idle_ptr[i] = trace_malloc(IDLE_SIZE)) == NULL) abort_oom();
        note(IDLE_SIZE, (i & 1023) == 0);
    }
    note(0, 1);
    for (int i = 0; i < IDLE_COUNT; i++) {
        trace_free(idle_ptr[i], IDLE_SIZE);
        note(-IDLE_SIZE, 0);
    }
    return NULL;
}

static long idle(void) {
    static void *busy[BUSY_COUNT];
    long done = 0;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < IDLE_COUNT; i++, done++) {
            if ((idle_ptr[i] = trace_malloc(IDLE_SIZE)) == NULL) abort_oom();
            note(IDLE_SIZE, (i & 1023) == 0);
        }
        for (int i = 0; i < IDLE_COUNT; i++, done++) {
            trace_free(idle_ptr[i], IDLE_SIZE);
            note(-IDLE_SIZE, 0);
        }
    }
    for (int i = 0; i < BUSY_COUNT; i++, done++) {
        if ((busy[i] = trace_malloc(BUSY_SIZE)) == NULL) abort_oom();
        note(BUSY_SIZE, (i & 4095) == 0);
    }
    pthread_t second;
    pthread_create(&second, NULL, idle_second_thread, NULL);
    pthread_join(second, NULL);
    done += 2L * IDLE_COUNT;
    for (int i = 0; i < BUSY_COUNT; i++, done++) {
        trace_free(busy[i], BUSY_SIZE);
        note(-BUSY_SIZE, 0);
    }
    return done;
}

static void *exiting_thread(void *arg) {
    uint64_t state = (uint64_t)(uintptr_t)arg;
    enum { N = 3000 };
    static __thread void *ptr[N];
    static __thread size_t size[N];
    for (int i = 0; i < N; i++) {
        size[i] = random_size(&state);
        if ((ptr[i] = trace_malloc(size[i])) == NULL) abort_oom();
        note((long long)size[i], (i & 255) == 0);
    }
    for (int i = 0; i < N; i++) {
        trace_free(ptr[i], size[i]);
        note(-(long long)size[i], 0);
    }
    note(0, 1);
    return NULL;
}

static long exits(void) {
    enum { ROUNDS = 12, AT_ONCE = 4 };
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t t[AT_ONCE];
        for (int i = 0; i < AT_ONCE; i++)
            pthread_create(&t[i], NULL, exiting_thread, (void *)(uintptr_t)(r * AT_ONCE + i + 11));
        for (int i = 0; i < AT_ONCE; i++) pthread_join(t[i], NULL);
    }
    return 2L * 3000 * ROUNDS * AT_ONCE;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s churn|ramp|threads|handoff|burst|sparse|idle|waves|large|exits\n",
                argv[0]);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ops;
    if (strcmp(argv[1], "churn") == 0) ops = churn(1, 20000, 2000000);
    else if (strcmp(argv[1], "ramp") == 0) ops = ramp();
    else if (strcmp(argv[1], "threads") == 0) ops = threads();
    else if (strcmp(argv[1], "handoff") == 0) ops = handoff();
    else if (strcmp(argv[1], "waves") == 0) ops = waves();
    else if (strcmp(argv[1], "large") == 0) ops = large();
    else if (strcmp(argv[1], "exits") == 0) ops = exits();
    else if (strcmp(argv[1], "burst") == 0) ops = burst();
    else if (strcmp(argv[1], "sparse") == 0) ops = sparse();
    else if (strcmp(argv[1], "idle") == 0) ops = idle();
    else {
        fprintf(stderr, "trace_driver: no trace '%s'\n", argv[1]);
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                 (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    printf("%s %ld %.6f %zu %zu %.6f\n", argv[1], ops, seconds, peak_requested, peak_mapped, cpu);
    return 0;
}
