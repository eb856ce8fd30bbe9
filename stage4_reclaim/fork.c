/* stage4_reclaim/fork.c — layer 4: the allocator's locks across fork().
 *
 * See reclaim.h for the lock order and why it cannot deadlock.
 * May touch: every layer's locks (through tc_fork_lock, cc_shard_lock,
 * pc_lock_all), the hardened build's (harden_fork_lock), the profiler's
 * (hc_fork_set_outer_locks) and stdio's list
 * lock, nothing else. */
#include <pthread.h>
#include <sys/single_threaded.h>

#include "common/compiler.h"
#include "common/harden.h"
#include "common/lock.h"
#include "common/size_class.h"
#include "stage2_centralcache/central_cache.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/transfer_cache.h"
#include "stage4_reclaim/reclaim.h"

/* Forks this thread is inside of (prepare done, parent/child not yet), and
 * how many of those took no lock. A fork nested in one (from a signal
 * handler) takes none: this thread holds, or is taking or dropping, every
 * lock already, and waiting for one it holds never ends. */
static HC_THREAD_LOCAL unsigned fork_depth;
static HC_THREAD_LOCAL unsigned fork_depth_unlocked;

/* stdio's list lock (glibc exports it; weak, so another libc simply has
 * none). stdio calls malloc with a FILE locked (getline grows its buffer
 * under it) and fflush(NULL) takes the FILE locks with the list lock held,
 * so the list lock comes before every allocator lock: glibc's fork takes
 * it before its own malloc's locks, but after the pthread_atfork handlers,
 * ours among them. Taking it here first keeps that order for an
 * interposed malloc (glibc's tst-malloc-fork-deadlock hung without it). It
 * is a recursive lock: glibc's fork takes it again after us. */
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));
extern void _IO_list_resetlock(void) __attribute__((weak));

/* Lock 0. of reclaim.h's order: the profiler's, if it is linked in. */
static void (*outer_lock)(void);
static void (*outer_unlock)(void);

void hc_fork_set_outer_locks(void (*lock)(void), void (*unlock)(void)) {
    outer_lock = lock;
    outer_unlock = unlock;
}

void hc_fork_prepare(void) {
    /* glibc's rule: a single-threaded process has nobody to wait for. Only
     * this thread can be inside the allocator, interrupted by the signal
     * whose handler forks (tst-mallocfork2); the child is a copy of it, and
     * finishes what it was doing when the handler returns. */
    if (__libc_single_threaded || fork_depth > 0) {
        fork_depth++;
        fork_depth_unlocked++;
        return;
    }
    fork_depth++;
    if (_IO_list_lock != NULL)
        _IO_list_lock();
    if (outer_lock != NULL)
        outer_lock();
    tc_fork_lock();
    for (unsigned shard = 0; shard < CC_SHARDS; shard++)
        for (unsigned cls = 0; cls < HC_NUM_CLASSES; cls++)
            hc_lock_acquire(cc_shard_lock(shard, cls));
    pc_lock_all();
    harden_fork_lock(); /* the hardened build's own (common/harden.h); none otherwise */
    /* Every allocator lock is ours now: a prepare handler that runs after
     * this one (registered before hcmalloc's) may still allocate, and its
     * lock operations must not wait for this thread (common/lock.h). */
    hc_lock_fork_owner = 1;
}

/* The reverse order. In the child the one thread left is the copy of the
 * one that locked, so it may unlock (the mutexes are plain ones). The depth
 * drops last: a fork from a signal handler while the locks are still being
 * unlocked nests, and takes none. */
static void hc_fork_unlock(int in_child) {
    if (fork_depth_unlocked > 0) {
        fork_depth_unlocked--;
        fork_depth--;
        return;
    }
    hc_lock_fork_owner = 0; /* so that the unlocks below happen */
    harden_fork_unlock(in_child);
    pc_unlock_all();
    for (unsigned shard = CC_SHARDS; shard-- > 0;)
        for (unsigned cls = HC_NUM_CLASSES; cls-- > 0;)
            hc_lock_unlock(cc_shard_lock(shard, cls));
    tc_fork_unlock();
    if (outer_unlock != NULL)
        outer_unlock();
    /* The child's stdio locks are new ones already (glibc resets them
     * before the child handlers run): one more reset, not an unlock. */
    if (in_child && _IO_list_resetlock != NULL)
        _IO_list_resetlock();
    else if (!in_child && _IO_list_unlock != NULL)
        _IO_list_unlock();
    fork_depth--;
}

void hc_fork_parent(void) { hc_fork_unlock(0); }

/* The other threads' caches stay in the child's registry with what they
 * cached: those threads do not exist there, so that memory is lost to the
 * child (bounded by the thread-cache budget), as with any allocator.
 * Parked caches (thread_exit.c) are whole in the child too: the registry
 * lock, which parking and adoption hold, was taken for the fork, so the
 * child's first new threads adopt them. */
void hc_fork_child(void) { hc_fork_unlock(1); }

/* 0: not yet; 1: registering (a nested malloc from pthread_atfork sees
 * this and returns); 2: done. */
static int fork_handlers_state;

void hc_fork_register(void) {
    if (HC_LIKELY(__atomic_load_n(&fork_handlers_state, __ATOMIC_ACQUIRE) != 0))
        return;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&fork_handlers_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    pthread_atfork(hc_fork_prepare, hc_fork_parent, hc_fork_child);
    __atomic_store_n(&fork_handlers_state, 2, __ATOMIC_RELEASE);
}

/* Also at load time, so a program whose first allocation comes late (or in
 * a forked child) is covered too. */
__attribute__((constructor)) static void hc_fork_register_at_load(void) { hc_fork_register(); }
