/* tools/docs/experiments/rseq_cpu.c — the restartable-sequences area glibc 2.36
 * registers for every thread, and what a per-CPU cache would read from it.
 *
 * Not part of any allocator layer: a stand-alone program for
 * docs/interview.md ("Per-CPU caches with rseq"). glibc registers one
 * struct rseq per thread at startup and exports where it is (__rseq_offset
 * from the thread pointer, __rseq_size; 0 when the kernel refused or
 * GLIBC_TUNABLES=glibc.pthread.rseq=0). The kernel writes the thread's
 * current CPU into cpu_id whenever it schedules the thread, so reading the
 * CPU is one load, where sched_getcpu() is a call (a vDSO call, or
 * glibc reading this same field). The program prints the registration,
 * times both reads, and counts how often the CPU a thread sees changes
 * while another thread competes for the cores: each change is a migration,
 * which is what forces an rseq critical section to restart.
 *
 * usage: gcc -O2 -pthread tools/docs/experiments/rseq_cpu.c -o /tmp/rseq && /tmp/rseq */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/rseq.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static volatile struct rseq *my_rseq(void) {
    return (volatile struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

/* Reads the CPU N times; counts the changes (migrations) and the times the
 * thread was preempted (involuntary context switches): either aborts an
 * rseq critical section that was running. */
struct watch {
    long reads, migrations, preemptions;
};

static void *watch(void *arg) {
    struct watch *w = arg;
    unsigned last = my_rseq()->cpu_id;
    for (long i = 0; i < w->reads; i++) {
        unsigned cpu = my_rseq()->cpu_id;
        w->migrations += cpu != last;
        last = cpu;
    }
    struct rusage usage;
    getrusage(RUSAGE_THREAD, &usage);
    w->preemptions = usage.ru_nivcsw;
    return NULL;
}

int main(void) {
    printf("__rseq_size %u, __rseq_offset %td: %s\n", __rseq_size, __rseq_offset,
           __rseq_size ? "registered by glibc" : "not registered (per-CPU caches would fall back)");
    if (!__rseq_size)
        return 0;
    const long n = 50 * 1000 * 1000;
    volatile unsigned sink = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        sink += my_rseq()->cpu_id;
    double t1 = now_ns();
    for (long i = 0; i < n; i++)
        sink += (unsigned)sched_getcpu();
    double t2 = now_ns();
    printf("cpu_id from the rseq area: %.2f ns a read; sched_getcpu(): %.2f ns\n", (t1 - t0) / n,
           (t2 - t1) / n);
    /* Three threads on this machine's cores: the scheduler moves them. */
    pthread_t threads[3];
    struct watch w[3] = {{n * 20, 0, 0}, {n * 20, 0, 0}, {n * 20, 0, 0}};
    double t3 = now_ns();
    for (int i = 0; i < 3; i++)
        pthread_create(&threads[i], NULL, watch, &w[i]);
    for (int i = 0; i < 3; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < 3; i++)
        printf("thread %d: %ld migrations, %ld preemptions in %ld reads (%.1f s for all three)\n", i,
               w[i].migrations, w[i].preemptions, w[i].reads, (now_ns() - t3) / 1e9);
    return 0;
}
