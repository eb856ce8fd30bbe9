/* bench/harness.h — the timing harness: the clock, the workers' start line
 * and deadline, and the seeded random numbers every workload draws from.
 *
 * Times are wall-clock (CLOCK_MONOTONIC) from the moment every worker is
 * let go until the last one has finished: CPU time (clock()) adds the
 * threads' times together and would make parallel runs look slower.
 *
 * A run does its fixed amount of work or stops at its deadline, whichever
 * comes first (then harness_was_cut() says so), and reports the pairs it
 * did: on this machine one allocator can be 100x slower than another at the
 * same workload (a page fault costs ~25 us in its VM), and a fixed size
 * that suits glibc would keep the slow one busy for minutes.
 * May touch: libc (clock, pthreads). */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Tells the compiler the block is used, so it cannot delete a malloc/free
 * pair whose memory nobody reads (GCC does that at -O2). Costs nothing. */
#define escape(ptr) __asm__ volatile("" : : "r"(ptr) : "memory")

/* bench_malloc, or exit(1) with a message: a workload cannot go on without
 * its block, and a NULL would only crash later. */
void *must_malloc(size_t size);

uint64_t now_ns(void);

/* ---- Random numbers: xorshift64*, one state per thread, seeded by its
 * index, so every allocator sees exactly the same sizes and victims. */

static inline uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static inline uint64_t seed_for(int index) { return 0x9E3779B97F4A7C15ull * (uint64_t)(index + 1); }

static inline size_t random_size(uint64_t *rng, size_t min, size_t max) {
    return min + next_random(rng) % (max - min + 1);
}

/* ---- Workers ------------------------------------------------------------------- */

typedef struct worker {
    pthread_t thread;
    int index;
    long ops;               /* malloc+free pairs this worker is asked to do */
    long done;              /* ... and did (fewer when the deadline cut it short) */
    struct spsc_ring *ring; /* xthread only: the queue it shares with its partner */
} worker;

/* Loops ask every so many pairs: a clock read costs ~20 ns, a pair ~5. */
#define DEADLINE_EVERY 1024

/* A worker calls this once, after its untimed set-up: it returns when every
 * worker is ready and the clock has started. */
void harness_wait_for_start(void);

/* Whether the run's time is up; the first "yes" marks the run as cut. */
int harness_past_deadline(void);

/* Sets the deadline max_ns from now and returns now: for workloads that
 * time themselves (churn starts its threads inside the timed part). */
uint64_t harness_start_clock(uint64_t max_ns);

/* Whether any worker stopped at the deadline. */
int harness_was_cut(void);

/* Starts the workers (fns[i] on workers[i]), lets them go together, and
 * returns the wall time from that moment until the last one is joined.
 * Thread creation is outside the timed part. */
uint64_t run_workers(worker *workers, int n, void *(**fns)(void *), uint64_t max_ns);

/* pthread_create, or exit(1) with a message. */
void must_start_thread(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
