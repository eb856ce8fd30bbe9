/* stage4_reclaim/reclaim.h — what layer 4 adds to the thread cache's
 * interface: a view of the thread-cache budget (for stats and tests) and the
 * locks the fork handlers take. */
#ifndef HC_RECLAIM_H_
#define HC_RECLAIM_H_


#include <stddef.h>

typedef struct tc_budget_stats {
    size_t budget_bytes;    /* HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES */
    size_t floor_bytes;     /* capacity each thread has outside the budget */
    size_t share_bytes;     /* budget held by live threads (charged + spare) */
    size_t capacity_bytes;  /* what their lists' limits allow, floors included */
    size_t unclaimed_bytes; /* budget held by no thread */
    size_t live_caches;     /* threads with a cache */
    size_t parked_caches;   /* caches of exited threads kept for new ones (thread_exit.c) */
} tc_budget_stats;
/* Share and capacity include the parked caches'.
 * Invariants: capacity <= share + (live_caches + parked_caches) x floor;
 *             share + unclaimed <= budget (== when no claim is in flight). */

/* Reclaims the caches of threads that died without their exit destructor,
 * then adds up the rest. Takes the registry lock. */
void tc_budget_snapshot(tc_budget_stats *out);

/* Gives every parked cache back (hc_release_free_memory). Takes the
 * registry lock. */
void tc_reclaim_parked(void);

/* Taken before fork() and unlocked after it, in parent and child. */
void tc_fork_lock(void);
void tc_fork_unlock(void);

/* ---- Fork safety (fork.c) ------------------------------------------------------
 * fork() copies only the calling thread; a lock another thread held at that
 * moment would stay locked in the child for good. The prepare handler takes
 * every allocator lock, in one fixed order, so the fork happens while no
 * other thread is inside the allocator; parent and child then unlock them:
 *   1. thread-cache registry, 2. thread-cache record pool (tc_fork_lock),
 *   3. every central bucket lock, shard by shard, class 0 upwards in each,
 *   4. the page cache lock, 5. the span-record pools, in place order (pc_lock_all).
 * The page map has no lock of its own (its writers hold the page cache
 * lock). The order matches every nesting the allocator does (registry
 * before pool; page cache before the span-record pools; bucket locks never nested with
 * each other or with the page cache), so prepare cannot deadlock. Before
 * them all: stdio's list lock (stdio mallocs with a FILE locked, and
 * fflush(NULL) locks FILEs under the list lock: fork.c), then the locks of
 * one other part of layer 4 (the heap profiler's, which it takes outside
 * every allocator lock), given by hc_fork_set_outer_locks. A single-threaded process, or a fork nested in
 * one (from a signal handler), takes none of them (fork.c). */
void hc_fork_prepare(void);
void hc_fork_parent(void);
void hc_fork_child(void);

/* Registers the three handlers with pthread_atfork, once. Called from the
 * malloc slow path after the thread's cache is published (pthread_atfork
 * may call malloc, which must then find the cache and not recurse here), and
 * from a constructor; a nested call returns at once. */
void hc_fork_register(void);

/* The profiler's fork locks (profile.c): taken first and unlocked last by
 * the handlers above, under their rule, rather than by a pthread_atfork
 * handler of its own, which would wait for a lock the interrupted thread
 * holds when a signal handler forks. Set once, from a constructor. */
void hc_fork_set_outer_locks(void (*lock)(void), void (*unlock)(void));

#endif /* HC_RECLAIM_H_ */
