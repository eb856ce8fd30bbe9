/* bench/workloads.h — the bench's workloads: the one list of them
 * (workloads.c), which the runner reads from the driver (`bench_driver
 * list`), and how a run of one is started.
 *
 * Work at --scale 1 is split evenly across the threads and sized so that
 * glibc takes 0.2..1 s on the project's 2-core machine whatever the thread
 * count.
 * May touch: the allocator under test (bench/alloc_shim.h), libc. */
#ifndef BENCH_WORKLOADS_H
#define BENCH_WORKLOADS_H

#include <stddef.h>
#include <stdint.h>

/* The driver's limit; the runner (bench.py) asks for at most 16 timed
 * threads, tools/measure/scaling_counts.sh for 64 counted ones. */
#define BENCH_MAX_THREADS 64

typedef struct workload workload;

/* Runs `wl` on `threads` threads, `per_thread` units of work each, stopping
 * at max_ns; stores the timed wall time in *wall and returns the pairs done. */
typedef long (*workload_runner)(const workload *wl, int threads, long per_thread, uint64_t max_ns,
                                uint64_t *wall);

struct workload {
    const char *name;
    const char *what;    /* one line: what a run does (the tables' titles) */
    const char *article; /* the allocator articles it models ([A0]-[A4] of docs/README.md's Sources), or the program it stands for */
    double total;        /* pairs at --scale 1 (large, bigblocks: blocks; churn: thread lifetimes;
                          * mapchurn: entries per thread, not split) */
    int needs_realloc;   /* stages 1-2 have none: their rows say so */
    workload_runner run;
    void *(*loop)(void *); /* each worker's loop, for the runners that take one */
};

extern const workload workloads[];
extern const size_t workload_count;

/* NULL when no workload has that name. */
const workload *find_workload(const char *name);

/* ---- Shared by the workloads' files -------------------------------------------- */

/* n blocks of random sizes in [min, max], each touched once, and freed. */
void malloc_random_blocks(char **blocks, size_t *sizes, int n, size_t min, size_t max, uint64_t *rng);
void free_blocks(char **blocks, const size_t *sizes, int n);

/* A short-lived thread's whole work (churn, manythreads, latethreads): `n`
 * (at most RANDOM_BLOCKS_MAX) blocks of random sizes in [min, max], from the
 * random numbers of `index`, made and then freed. */
#define RANDOM_BLOCKS_MAX 1000
void malloc_and_free_random_blocks(int index, int n, size_t min, size_t max);

/* The runners (workloads.c, thread_workloads.c). run_loops: a worker per
 * thread running wl->loop; before() (may be NULL, not timed) runs before
 * the workers start, after() (may be NULL) once they have finished. */
long run_loops(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall,
               void (*before)(void), void (*after)(void));
long run_per_thread_loops(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall);
long run_producer_consumer(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall);
long run_handoff(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall);
long run_whole_per_thread(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall);
long run_churn(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall);
long run_among_idle_threads(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall);
long run_after_late_threads(const workload *wl, int threads, long per_thread, uint64_t max_ns, uint64_t *wall);

/* mixed's loop: manythreads and latethreads time it among other threads. */
void *mixed_worker(void *arg);

#endif
