/* common/trace.h — the tier-traffic trace: counts, per size class and over
 * time, the events that move memory from one tier to another.
 *
 * Off by default: HC_TRACE_ENABLED is 0 and every macro below is an empty
 * statement, so the allocator compiles to exactly the same code as
 * without it. On in the *_trace targets
 * (stage4_reclaim:hcmalloc_trace, libhcmalloc_trace.so), which depend on
 * //common:trace: its `defines` sets HC_TRACE_ENABLED=1 for them alone.
 *
 * Counting thread-cache hits must not add a shared write to the fast path:
 * each thread counts its hits in its own TLS counters (HC_TRACE_HIT) and
 * adds them to the shared counters only now and then: every
 * HC_TRACE_FLUSH_EVERY hits of a class, and at each of its own misses of
 * that class (slow paths anyway). What a thread has not flushed when the
 * trace is written (< HC_TRACE_FLUSH_EVERY per class) is left out, except
 * the writing thread's own. A malloc is a hit or a refill (or, above the
 * largest class, a span carve of class 0); a free is a hit or an overflow.
 *
 * Everything shared is counted with relaxed atomic adds into a fixed array
 * (no allocation), both in totals and in a row of time buckets
 * (HCMALLOC_TRACE_BUCKET_MS, default 10 ms; events past the last bucket
 * land in the last). A process writes the trace at exit to the file named by
 * HCMALLOC_TRACE, or when it calls hc_trace_write; bench/trace_svg.py draws it.
 * May touch: its own counters, the clock, write(2). */
#ifndef HC_TRACE_H_
#define HC_TRACE_H_

#include <stdint.h>

#include "common/compiler.h"
#include "common/lock.h"
#include "common/size_class.h"

#ifndef HC_TRACE_ENABLED
#define HC_TRACE_ENABLED 0
#endif

/* The events; class 0 stands for "no size class" (large blocks, and the
 * page cache's own work: splits, merges, growth, releases). */
typedef enum hc_trace_event {
    HC_TRACE_TC_ALLOC_HIT, /* malloc served by the thread cache (per thread, see above) */
    HC_TRACE_TC_FREE_HIT,  /* free kept by the thread cache */
    HC_TRACE_TC_REFILL,  /* a thread-cache miss: an empty list asks the central cache */
    HC_TRACE_TC_OVERFLOW,/* a full list gives a batch back to the central cache */
    HC_TRACE_CC_FETCH,   /* central cache: a batch handed to a thread */
    HC_TRACE_CC_RETURN,  /* central cache: a batch (or one object) given back */
    HC_TRACE_SPAN_CARVE, /* page cache: a span handed out (class 0: a large block) */
    HC_TRACE_SPAN_RETURN,/* page cache: a span given back */
    HC_TRACE_PC_SPLIT,   /* page cache: a free span cut in two or three */
    HC_TRACE_PC_MERGE,   /* page cache: a freed span joined a free neighbour */
    HC_TRACE_PC_GROW,    /* page cache: a new region mapped from the OS */
    HC_TRACE_PC_RELEASE, /* page cache: a free span's pages given back to the OS */
    HC_TRACE_LOCK_TAKEN, /* a shared lock taken: a central bucket's (its class), the page cache's (0) */
    HC_TRACE_LOCK_WAITED,/* ... and found held by another thread first (a contended acquisition) */
    HC_TRACE_EVENTS
} hc_trace_event;

#define HC_TRACE_FLUSH_EVERY 1024u
#define HC_TRACE_BUCKETS     512

#if HC_TRACE_ENABLED

/* This thread's malloc (index 0) and free (index 1) hits not yet flushed. */
extern HC_THREAD_LOCAL uint32_t hc_trace_pending_hits[2][HC_NUM_CLASSES];

/* Adds `n` events of class `cls` to the shared counters, now. */
void hc_trace_add(hc_trace_event event, unsigned cls, uint64_t n);

/* Adds this thread's pending hits of `event` (TC_ALLOC_HIT or TC_FREE_HIT) and class `cls`. */
void hc_trace_flush_hits(hc_trace_event event, unsigned cls);

/* Writes the trace (bench/trace_svg.py's input) to `fd`: 0, or -1 and errno. */
int hc_trace_write(int fd);

#define HC_TRACE_N(event, cls, n) hc_trace_add((event), (cls), (n))
#define HC_TRACE(event, cls) hc_trace_add((event), (cls), 1)
/* `hit`: whether the thread cache is about to serve the call (evaluated
 * before it does). Thread-local: a plain add, and a flush 1 time in 1024. */
#define HC_TRACE_HIT(event, cls, hit)                                                    \
    do {                                                                                 \
        if (HC_UNLIKELY((hc_trace_pending_hits[(event)][(cls)] += (uint32_t)(hit)) >=     \
                        HC_TRACE_FLUSH_EVERY))                                           \
            hc_trace_flush_hits((event), (cls));                                         \
    } while (0)

/* Counts an acquisition of a shared lock of the allocator's (`cls`: a
 * bucket's class, 0 for the page cache's), and whether another thread held
 * it: a try, let go at once, before the ordinary acquisition, so that the
 * lock's own bookkeeping (the watchdog, the fork owner) stays as it is. The
 * try costs the traced build an extra atomic; the counts are what it is for
 * (tools/measure/scaling_counts.sh), not its time. */
HC_INLINE void hc_trace_lock_count(hc_lock *lock, unsigned cls) {
    if (hc_lock_fork_owner)
        return; /* every lock is this thread's already (fork) */
    int busy = pthread_mutex_trylock(&lock->mutex) != 0;
    if (!busy)
        pthread_mutex_unlock(&lock->mutex);
    hc_trace_add(HC_TRACE_LOCK_TAKEN, cls, 1);
    if (busy)
        hc_trace_add(HC_TRACE_LOCK_WAITED, cls, 1);
}
#define HC_TRACE_LOCK_ACQUIRE(lock, cls) (hc_trace_lock_count((lock), (cls)), hc_lock_acquire(lock))
#define HC_TRACE_LOCK_ACQUIRE_SPINNING(lock, cls) \
    (hc_trace_lock_count((lock), (cls)), hc_lock_acquire_spinning(lock))

#else

#define HC_TRACE_N(event, cls, n) ((void)0)
#define HC_TRACE(event, cls) ((void)0)
#define HC_TRACE_HIT(event, cls, hit) ((void)0)
/* The lock's own acquisition, its watchdog naming the caller's expression. */
#define HC_TRACE_LOCK_ACQUIRE(lock, cls) hc_lock_acquire(lock)
#define HC_TRACE_LOCK_ACQUIRE_SPINNING(lock, cls) hc_lock_acquire_spinning(lock)

#endif /* HC_TRACE_ENABLED */

#endif /* HC_TRACE_H_ */
