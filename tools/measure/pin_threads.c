/* tools/measure/pin_threads.c — pins a program's threads to cores by the
 * order they are created, to measure a producer/consumer program with its
 * blocks made to cross cores (or not) on every run, where the scheduler
 * would otherwise place the threads differently from one run to the next.
 *
 *   gcc -O2 -shared -fPIC tools/measure/pin_threads.c -o pin_threads.so -ldl
 *   PIN=0,1,0,1 LD_PRELOAD="./pin_threads.so LIB" PROGRAM ARGS
 *
 * PIN lists a core for each thread the program creates, in order; the list
 * repeats for threads past its end (PIN=0,1 alternates); an entry that is
 * not a number (PIN=-,1) leaves its thread where the kernel puts it, as the
 * main thread is left. mimalloc-bench's xmalloc-test creates its
 * threads as consumer, producer, consumer, producer: PIN=0,1,0,1 puts the
 * consumers on core 0 and the producers on core 1, so every block crosses
 * (docs/benchmarks.md, section 38). A measurement tool, not part of any
 * allocator: it calls getenv and dlsym, as a preloaded tool may. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* The start routine, its argument and the core, handed to the new thread.
 * A ring of them, so that no allocation is made here; a program that has
 * more than PIN_RING creations in flight at once reuses a record still in
 * use, which none of the programs this is for does. */
#define PIN_RING 256
struct pinned_start {
    void *(*start)(void *);
    void *arg;
    int core;
};
static struct pinned_start ring[PIN_RING];
static unsigned created;

/* The core for the thread created `n`-th (from 0), or -1 to leave it. */
static int core_for(unsigned n) {
    const char *list = getenv("PIN");
    if (list == NULL || *list == '\0')
        return -1;
    unsigned entries = 1;
    for (const char *c = list; *c != '\0'; c++)
        entries += *c == ',';
    const char *entry = list;
    for (unsigned i = n % entries; i > 0; i--)
        entry = strchr(entry, ',') + 1;
    return *entry >= '0' && *entry <= '9' ? atoi(entry) : -1;
}

static void *start_pinned(void *record) {
    struct pinned_start *s = record;
    if (s->core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(s->core, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    return s->start(s->arg);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    static create_fn real_create;
    if (real_create == NULL)
        real_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    unsigned n = __atomic_fetch_add(&created, 1, __ATOMIC_RELAXED);
    struct pinned_start *s = &ring[n % PIN_RING];
    *s = (struct pinned_start){start, arg, core_for(n)};
    return real_create(thread, attr, start_pinned, s);
}
