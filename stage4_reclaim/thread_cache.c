/* stage4_reclaim/thread_cache.c — layer 1's slow path, with reclamation.
 *
 * What changed from stage 2/3 (diff this file against
 * stage2_centralcache/thread_cache.c):
 *   - thread exit: a pthread key destructor gives the exiting thread's
 *     objects back to the central cache and its record back to the pool,
 *     where the next new thread reuses it;
 *   - after that destructor has run (other TLS destructors may still
 *     allocate), the thread works on the sentinel: every malloc and free
 *     goes straight to the central cache, so nothing is cached and lost;
 *   - a budget: the lists of all threads together may hold at most
 *     HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES (see "Budget" below);
 *   - limits start at 0, not 1, so a class a thread never uses costs it no
 *     budget.
 * May touch: this thread's tc_cache; other caches' budget fields (under
 * tc_registry_lock); the central cache through cc_*. */
#include "stage1_threadcache/thread_cache.h"

#include <errno.h>
#include <pthread.h>

#include "common/lock.h"
#include "common/pool.h"
#include "common/trace.h"
#include "stage2_centralcache/central_cache.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/reclaim.h"

/* Per-list cap, as in stage 2. */
#define TC_LIST_CAP_BYTES  ((size_t)1 << 20)
#define TC_MAX_LIST_LENGTH 8192u

/* A new thread's starting share of the budget, and the unit in which share
 * moves between threads. */
#define TC_START_SHARE ((size_t)64 << 10)
#define TC_SHARE_STEP  ((size_t)64 << 10)

tc_cache tc_sentinel; /* all zero: every list empty, every limit 0; never written */
HC_THREAD_LOCAL tc_cache *tc_current = &tc_sentinel;

/* Set once this thread's exit destructor has run. */
static HC_THREAD_LOCAL int tc_thread_exited;

static hc_pool tc_cache_pool = HC_POOL_INITIALIZER(sizeof(tc_cache));

/* The live caches (doubly linked, so an exiting thread unlinks in O(1)),
 * and the budget. Every change to any cache's capacity_bytes or share_bytes
 * happens under this lock, so the sums below are exact. */
static hc_lock tc_registry_lock = HC_LOCK_INITIALIZER;
static tc_cache *tc_registry;
static size_t tc_live_caches;
static size_t tc_unclaimed;      /* budget not yet given to any thread */
static int tc_budget_ready;
static tc_cache *tc_steal_cursor; /* where the next search for spare share starts */

static pthread_key_t tc_exit_key;
static pthread_once_t tc_exit_key_once = PTHREAD_ONCE_INIT;
static int tc_exit_key_ok;

static void tc_thread_exit(void *arg);

static void tc_exit_key_create(void) {
    tc_exit_key_ok = pthread_key_create(&tc_exit_key, tc_thread_exit) == 0;
}

static uint32_t tc_list_cap(unsigned cls) {
    size_t cap = TC_LIST_CAP_BYTES / sc_size(cls);
    if (cap > TC_MAX_LIST_LENGTH) cap = TC_MAX_LIST_LENGTH;
    if (cap < sc_batch(cls)) cap = sc_batch(cls);
    return (uint32_t)cap;
}

/* ---- Budget -------------------------------------------------------------------
 * A list's limit (max_length) bounds what it can hold, so the sum over a
 * thread's lists of max_length x size -- its capacity -- bounds what the
 * thread can cache. Each thread has a share of the budget and keeps its
 * capacity within it:
 *   - a list that wants to grow its limit reserves the bytes from the share;
 *   - if the share is used up, the thread asks for more: first from budget
 *     no thread holds, then from the unused share of other threads (idle
 *     ones, round robin), in TC_SHARE_STEP units;
 *   - if nobody has any to spare, the thread halves its own other lists
 *     (returning their excess objects) and tries once more; if that is not
 *     enough either, the list simply does not grow.
 * Shares only move when unused, so at every moment
 *   sum(cached bytes) <= sum(capacity) <= sum(share) <= budget.
 * An exiting thread returns its share to the unclaimed budget. */

static void tc_budget_init_locked(void) {
    if (!tc_budget_ready) {
        tc_unclaimed = hc_get_options()->max_total_thread_cache_bytes;
        tc_budget_ready = 1;
    }
}

/* Moves up to `want` bytes of share to `tc`; registry lock held. */
static void tc_claim_share_locked(tc_cache *tc, size_t want) {
    /* LAB BEGIN: budget_claim */
    size_t take = want < tc_unclaimed ? want : tc_unclaimed;
    tc_unclaimed -= take;
    tc->share_bytes += take;
    want -= take;
    for (size_t tries = 0; want > 0 && tries < tc_live_caches; tries++) {
        tc_cache *victim = tc_steal_cursor != NULL ? tc_steal_cursor : tc_registry;
        tc_steal_cursor = victim->next_cache;
        if (victim == tc)
            continue;
        size_t spare = victim->share_bytes - victim->capacity_bytes;
        take = spare < want ? spare : want;
        victim->share_bytes -= take;
        tc->share_bytes += take;
        want -= take;
    }
    /* LAB END: budget_claim */
}

/* Reserves `need` bytes of capacity for tc; returns 1 on success. */
static int tc_reserve(tc_cache *tc, size_t need) {
    /* LAB BEGIN: budget_reserve */
    int granted;
    hc_lock_acquire(&tc_registry_lock);
    if (tc->capacity_bytes + need > tc->share_bytes) {
        size_t missing = tc->capacity_bytes + need - tc->share_bytes;
        tc_claim_share_locked(tc, (missing + TC_SHARE_STEP - 1) / TC_SHARE_STEP * TC_SHARE_STEP);
    }
    granted = tc->capacity_bytes + need <= tc->share_bytes;
    if (granted)
        tc->capacity_bytes += need;
    hc_lock_release(&tc_registry_lock);
    return granted;
    /* LAB END: budget_reserve */
}

/* Gives up to `n` objects of lists[cls] back to the central cache. */
static void tc_release(tc_cache *tc, unsigned cls, uint32_t n) {
    void *first, *last;
    uint32_t taken = fl_pop_range(&tc->lists[cls], n, &first, &last);
    if (taken > 0)
        cc_return(cls, first, last, taken);
}

/* Lowers lists[cls]'s limit to `limit`, returning objects above it and the
 * freed capacity. */
static void tc_shrink_list(tc_cache *tc, unsigned cls, uint32_t limit) {
    hc_free_list *list = &tc->lists[cls];
    if (list->max_length <= limit)
        return;
    if (list->length > limit)
        tc_release(tc, cls, list->length - limit);
    size_t freed = (size_t)(list->max_length - limit) * sc_size(cls);
    list->max_length = limit;
    hc_lock_acquire(&tc_registry_lock);
    tc->capacity_bytes -= freed;
    hc_lock_release(&tc_registry_lock);
}

/* Slow start, as in stage 2, but each step is paid for from the budget. */
static void tc_grow_limit(tc_cache *tc, unsigned cls) {
    hc_free_list *list = &tc->lists[cls];
    uint32_t batch = sc_batch(cls), cap = tc_list_cap(cls), limit = list->max_length;
    if (limit < batch)
        limit++;
    else if (limit < cap)
        limit = limit + batch < cap ? limit + batch : cap;
    else
        return;
    size_t need = (size_t)(limit - list->max_length) * sc_size(cls);
    if (!tc_reserve(tc, need)) {
        /* No share to be had anywhere: make room among this thread's own
         * other lists, the ones it used before and may no longer need. */
        for (unsigned other = 1; other < HC_NUM_CLASSES; other++)
            if (other != cls)
                tc_shrink_list(tc, other, tc->lists[other].max_length / 2);
        if (!tc_reserve(tc, need))
            return;
    }
    list->max_length = limit;
}

/* ---- Creation and exit ---------------------------------------------------------- */

tc_cache *tc_get_or_create(void) {
    tc_cache *tc = tc_current;
    if (HC_LIKELY(tc != &tc_sentinel))
        return tc;
    /* A thread whose exit destructor already ran keeps the sentinel: its
     * mallocs and frees go straight to the central cache (tc_refill and
     * tc_overflow below), so a later destructor's allocations are never
     * cached in a cache nobody will reclaim. Likewise if the OS refuses the
     * record: the thread works uncached rather than failing. */
    if (tc_thread_exited)
        return &tc_sentinel;
    pthread_once(&tc_exit_key_once, tc_exit_key_create);
    tc = pool_alloc(&tc_cache_pool); /* zeroed: lists empty, limits 0 */
    if (tc == NULL)
        return &tc_sentinel;
    hc_lock_acquire(&tc_registry_lock);
    tc_budget_init_locked();
    tc->next_cache = tc_registry;
    if (tc_registry != NULL)
        tc_registry->prev_cache = tc;
    tc_registry = tc;
    tc_live_caches++;
    tc_claim_share_locked(tc, TC_START_SHARE);
    hc_lock_release(&tc_registry_lock);
    /* Publish before pthread_setspecific: for high key numbers glibc
     * allocates there, and that malloc must find this cache ready instead
     * of creating a second one. */
    tc_current = tc;
    if (tc_exit_key_ok)
        pthread_setspecific(tc_exit_key, tc);
    return tc;
}

/* The pthread key destructor: runs when a thread that has a cache exits. */
static void tc_thread_exit(void *arg) {
    /* LAB BEGIN: thread_exit */
    tc_cache *tc = arg;
    tc_thread_exited = 1;
    tc_current = &tc_sentinel;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
        tc_release(tc, cls, tc->lists[cls].length);
    hc_lock_acquire(&tc_registry_lock);
    if (tc->prev_cache != NULL)
        tc->prev_cache->next_cache = tc->next_cache;
    else
        tc_registry = tc->next_cache;
    if (tc->next_cache != NULL)
        tc->next_cache->prev_cache = tc->prev_cache;
    if (tc_steal_cursor == tc)
        tc_steal_cursor = tc->next_cache;
    tc_live_caches--;
    tc_unclaimed += tc->share_bytes;
    hc_lock_release(&tc_registry_lock);
    pool_free(&tc_cache_pool, tc);
    /* LAB END: thread_exit */
}

/* ---- Refill, overflow, flush ----------------------------------------------------- */

void *tc_refill(tc_cache *tc, unsigned cls) {
    HC_TRACE(HC_TRACE_TC_REFILL, cls);
    void *first, *last;
    if (tc == &tc_sentinel) /* uncached: one object straight from the central cache */
        return cc_fetch(cls, 1, &first, &last) ? first : NULL;
    hc_free_list *list = &tc->lists[cls];
    uint32_t want = list->max_length < sc_batch(cls) ? list->max_length : sc_batch(cls);
    if (want == 0)
        want = 1;
    uint32_t got = cc_fetch(cls, want, &first, &last);
    if (got == 0)
        return NULL; /* errno = ENOMEM from the OS layer */
    tc_grow_limit(tc, cls);
    if (got > 1) {
        /* The limit may not have grown (budget): keep what fits, return the rest. */
        fl_push_range(list, fl_next(first), last, got - 1);
        if (list->length > list->max_length)
            tc_release(tc, cls, list->length - list->max_length);
    }
    return first;
}

void tc_overflow(tc_cache *tc, unsigned cls, void *obj) {
    HC_TRACE(HC_TRACE_TC_OVERFLOW, cls);
    if (tc == &tc_sentinel) {
        tc_free_without_cache(obj, cls);
        return;
    }
    hc_free_list *list = &tc->lists[cls];
    tc_grow_limit(tc, cls);
    fl_push(list, obj);
    uint32_t excess = list->length > list->max_length ? list->length - list->max_length : 0;
    uint32_t batch = sc_batch(cls);
    tc_release(tc, cls, excess > batch ? excess : (list->length < batch ? list->length : batch));
}

void tc_free_without_cache(void *obj, unsigned cls) {
    fl_set_next(obj, NULL);
    cc_return(cls, obj, obj, 1);
}

void tc_flush_current(void) {
    tc_cache *tc = tc_current;
    if (tc == &tc_sentinel)
        return;
    /* Empty every list and give its capacity back to the share, where
     * other threads can claim it. */
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
        tc_shrink_list(tc, cls, 0);
}

/* ---- Stats and fork ----------------------------------------------------------- */

void tc_collect_stats(hc_stats *out) {
    size_t cached = 0;
    hc_lock_acquire(&tc_registry_lock);
    for (tc_cache *tc = tc_registry; tc != NULL; tc = tc->next_cache) {
        /* Other threads' lengths are read without their owners' help: a
         * snapshot that may be a batch out of date, never a torn value. */
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
            cached += (size_t)__atomic_load_n(&tc->lists[cls].length, __ATOMIC_RELAXED) * sc_size(cls);
    }
    hc_lock_release(&tc_registry_lock);
    cc_collect_stats(out);
    out->thread_cache_bytes += cached;
    out->bytes_in_use = out->bytes_in_use > cached ? out->bytes_in_use - cached : 0;
}

void tc_budget_snapshot(tc_budget_stats *out) {
    hc_lock_acquire(&tc_registry_lock);
    tc_budget_init_locked();
    out->budget_bytes = hc_get_options()->max_total_thread_cache_bytes;
    out->unclaimed_bytes = tc_unclaimed;
    out->live_caches = tc_live_caches;
    out->capacity_bytes = 0;
    out->share_bytes = 0;
    for (tc_cache *tc = tc_registry; tc != NULL; tc = tc->next_cache) {
        out->capacity_bytes += tc->capacity_bytes;
        out->share_bytes += tc->share_bytes;
    }
    hc_lock_release(&tc_registry_lock);
}

void tc_fork_lock(void) {
    hc_lock_acquire(&tc_registry_lock);
    hc_lock_acquire(&tc_cache_pool.lock);
}

void tc_fork_unlock(void) {
    hc_lock_release(&tc_cache_pool.lock);
    hc_lock_release(&tc_registry_lock);
}
