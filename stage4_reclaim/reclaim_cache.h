/* stage4_reclaim/reclaim_cache.h — layer 4's per-thread record, shared by
 * its two halves: the thread-cache budget (budget.c) and thread-exit
 * reclamation (thread_exit.c). Both are the hooks of stage 2's list policy
 * (stage2_centralcache/thread_cache_hooks.h); nothing outside layer 4
 * includes this header. */
#ifndef HC_RECLAIM_CACHE_H_
#define HC_RECLAIM_CACHE_H_

#include <pthread.h>
#include <stddef.h>

#include "stage2_centralcache/thread_cache_hooks.h"

/* The record starts with stage 2's, which starts with the tc_cache every
 * layer reads, so tc_current and the fast path do not change. The sentinel
 * is a plain tc_cache: nothing reaches these fields through it. */
typedef struct tc_reclaim_cache {
    tc_policy_cache policy;      /* first: a tc_reclaim_cache * is a tc_cache * */
    /* The budget (budget.c). */
    size_t capacity_bytes;       /* sum of max_length x size: what the lists may hold */
    size_t spare_bytes;          /* budget held but not yet used; others may take it */
    unsigned active_epoch;       /* tc_epoch when this thread last needed budget */
    unsigned failed_claims;      /* claims refused since the last steal sweep */
    size_t period_mapped_at;     /* os_mapped_bytes() when its scavenge period began (budget.c) */
    unsigned visits_since_idle_check; /* slow-path visits since its idle big lists were summed (budget.c) */
    /* Thread exit (thread_exit.c). */
    pthread_mutex_t owner_alive; /* robust: held by the owner, so its death shows */
    int parked;                  /* its owner exited; waiting for a new thread (registry lock) */
    tc_cache *next_parked;       /* the parked stack (registry lock) */
} __attribute__((aligned(2 * HC_CACHE_LINE))) tc_reclaim_cache;
/* Whole pairs of cache lines: the pool carves records one after another
 * from page-aligned chunks, so each starts on a pair, and no thread's lists
 * share a 128-byte pair, which a core's prefetcher fetches together, with
 * the next thread's record (span records are kept apart for the same
 * reason: docs/stage3.md, "Records apart too"). On x86-64 the fields fill
 * 15 pairs as they are; the alignment keeps it so wherever they do not. */

HC_INLINE tc_reclaim_cache *tc_ext(tc_cache *tc) { return (tc_reclaim_cache *)tc; }

/* ---- budget.c, for thread_exit.c ------------------------------------------ */

/* Sets the unclaimed budget from the options; once, before any cache. */
void tc_budget_init(void);

/* A new sweep's epoch (each sweep advances it by one). */
unsigned tc_budget_next_epoch(void);

/* Takes `victim`'s spare if its owner has not needed budget for two
 * sweeps (`epoch` is the current one); returns the bytes taken. */
size_t tc_budget_take_idle_spare(tc_cache *victim, unsigned epoch);

/* Gives an unlinked cache's whole share (charge and spare) back to the
 * unclaimed budget. Its lists are already flushed. */
void tc_budget_give_back(tc_cache *tc);

/* ---- thread_exit.c, for budget.c ------------------------------------------ */

/* Layer 4's one-time set-up (the exit key, the budget): before any cache. */
void tc_reclaim_init_once(void);

/* Visits up to `visits` caches, round robin: unlinks those whose owner died
 * (chained on *dead through next_cache, for tc_reclaim_dead once the lock is
 * dropped) and, if `thief` is set, those parked too, and takes the spare of
 * idle ones; returns the bytes taken. Registry lock held. */
size_t tc_sweep_locked(tc_cache *thief, size_t visits, tc_cache **dead);

/* Reclaims the caches a sweep found dead (registry lock not held). */
void tc_reclaim_dead(tc_cache *dead);

/* How many caches are parked: exact under the registry lock. */
size_t tc_parked_caches(void);

#endif /* HC_RECLAIM_CACHE_H_ */
