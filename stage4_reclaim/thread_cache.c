/* stage4_reclaim/thread_cache.c — layer 1's slow path, with reclamation.
 *
 * What changed from stage 2/3 (diff this file against
 * stage2_centralcache/thread_cache.c):
 *   - thread exit: a pthread key destructor gives the exiting thread's
 *     objects back to the central cache and its record back to the pool,
 *     where the next new thread reuses it; it visits only the classes the
 *     thread used (a bitmap), and takes the registry lock once;
 *   - after that destructor has run (other TLS destructors may still
 *     allocate), the thread works on the sentinel: every malloc and free
 *     goes straight to the central cache, so nothing is cached and lost;
 *   - a cache created in the last destructor round, when no destructor will
 *     run again, is found by its robust owner lock once the thread is gone
 *     and reclaimed by another thread (the reaper);
 *   - a budget: the lists of all threads together may hold at most
 *     HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES, plus a small floor per thread
 *     (see "Budget" below), claimed and given back without a lock;
 *   - stage 4's fields (the registry's back link, the budget, the owner
 *     lock) live here, in a record that starts with stage 1's tc_cache;
 *   - limits start at 0, not 1, so a class a thread never uses costs it no
 *     budget; the scavenge and the shrinking limits of stage 2 give budget
 *     back as well as objects.
 * May touch: this thread's tc_cache; other caches' spare_bytes (atomically)
 * and registry links (under tc_registry_lock); a dead thread's whole cache;
 * the central cache through cc_*. */
#define _POSIX_C_SOURCE 200809L /* robust mutexes */
#include "stage1_threadcache/thread_cache.h"

#include <errno.h>
#include <pthread.h>

#include "common/fatal.h"
#include "common/lock.h"
#include "common/pool.h"
#include "common/trace.h"
#include "stage2_centralcache/central_cache.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/reclaim.h"

/* Per-list cap, shrinking and scavenging, as in stage 2. */
#define TC_LIST_CAP_BYTES  ((size_t)1 << 20)
#define TC_MAX_LIST_LENGTH 8192u
#define TC_MAX_OVERAGES    3
#define TC_SCAVENGE_PERIOD 256

tc_cache tc_sentinel; /* all zero: every list empty, every limit 0; never written */
HC_THREAD_LOCAL tc_cache *tc_current = &tc_sentinel;

/* Set once this thread's exit destructor has run. */
static HC_THREAD_LOCAL int tc_thread_exited;

/* What layer 4 keeps per thread beside the lists: the registry's back link,
 * the budget's figures and the owner lock. The record starts with the
 * tc_cache every layer reads (stage 1's header), so tc_current and the fast
 * path do not change; only this file sees the rest. The sentinel is a plain
 * tc_cache: nothing below reaches these fields through it. */
typedef struct tc_reclaim_cache {
    tc_cache base;               /* first: a tc_reclaim_cache * is a tc_cache * */
    tc_cache *prev_cache;        /* the registry is doubly linked: O(1) unlink at exit */
    uint64_t used_classes[2];    /* bit cls: lists[cls] has a limit above 0 */
    size_t capacity_bytes;       /* sum of max_length x size: what the lists may hold */
    size_t spare_bytes;          /* budget held but not yet used; others may take it */
    unsigned active_epoch;       /* tc_epoch when this thread last needed budget */
    unsigned failed_claims;      /* claims refused since the last steal sweep */
    pthread_mutex_t owner_alive; /* robust: held by the owner, so its death shows */
} tc_reclaim_cache;

HC_INLINE tc_reclaim_cache *tc_ext(tc_cache *tc) { return (tc_reclaim_cache *)tc; }

static hc_pool tc_cache_pool = HC_POOL_INITIALIZER(sizeof(tc_reclaim_cache));

/* The live caches (doubly linked, so an exiting thread unlinks in O(1)).
 * The lock guards the links and the count; threads take it to create a
 * cache, to exit, for stats, and for a rare bounded sweep (below): never on
 * a common slow path. */
static hc_lock tc_registry_lock = HC_LOCK_INITIALIZER;
static tc_cache *tc_registry;
static size_t tc_live_caches;
static tc_cache *tc_sweep_cursor; /* where the next sweep starts */

/* Budget no thread holds (atomic), and the sweep counter (atomic). */
static size_t tc_unclaimed;
static unsigned tc_epoch;

static pthread_key_t tc_exit_key;
static pthread_once_t tc_init_once = PTHREAD_ONCE_INIT;
static int tc_exit_key_ok;
static pthread_mutexattr_t tc_owner_attr;

static void tc_thread_exit(void *arg);

static void tc_init(void) {
    tc_exit_key_ok = pthread_key_create(&tc_exit_key, tc_thread_exit) == 0;
    if (!tc_exit_key_ok) /* say so once: exiting threads' caches now stay cached */
        hc_warn("pthread_key_create failed: caches of exiting threads will not be reclaimed");
    __atomic_store_n(&tc_unclaimed, hc_get_options()->max_total_thread_cache_bytes, __ATOMIC_RELAXED);
    pthread_mutexattr_init(&tc_owner_attr);
    pthread_mutexattr_setrobust(&tc_owner_attr, PTHREAD_MUTEX_ROBUST);
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
 * thread can cache. The first TC_FLOOR_BYTES of every thread's capacity are
 * free: a new thread always gets a working cache, even when the budget is
 * all handed out. Capacity above the floor is charged to the budget:
 *   - a list that wants to grow takes the bytes from its thread's spare;
 *   - when the spare is short, the thread claims TC_SHARE_STEP more from the
 *     unclaimed budget: one compare-and-swap on a counter, no lock;
 *   - when the unclaimed budget is empty too, the claim fails at once (one
 *     load) and the list does not grow. Only every TC_STEAL_BACKOFF-th
 *     refused claim of a thread sweeps TC_STEAL_VISITS caches (a trylock:
 *     never waiting) and takes the spare of those whose owners have not
 *     needed budget for two sweeps: idle threads' spare goes to busy ones,
 *     and a busy thread is never stolen from nor made to wait;
 *   - a limit that shrinks (overflow, scavenge, flush) turns its capacity
 *     back into spare, and a thread keeps at most TC_SPARE_KEEP spare: the
 *     rest goes back to the unclaimed counter (a fetch-add).
 * Bytes leave one counter before they enter another, so at every moment
 *   sum(cached) <= sum(capacity) <= sum(charged + spare) + live x floor
 *   and sum(charged + spare) + unclaimed <= budget.
 * An exiting thread returns its charge and spare to the unclaimed budget. */

#define TC_FLOOR_BYTES    ((size_t)2 * HC_BATCH_BYTES)
#define TC_SHARE_STEP     ((size_t)16 << 10)
#define TC_SPARE_KEEP     ((size_t)32 << 10)
#define TC_STEAL_BACKOFF  64u
#define TC_STEAL_VISITS   16u
#define TC_REAP_VISITS    2u

/* Budget owed for a capacity: what lies above the free floor. */
static size_t tc_charge(size_t capacity) {
    return capacity > TC_FLOOR_BYTES ? capacity - TC_FLOOR_BYTES : 0;
}

/* Takes up to `want` bytes from the counter at `from`; returns how many. */
static size_t tc_take(size_t *from, size_t want) {
    size_t have = __atomic_load_n(from, __ATOMIC_RELAXED);
    size_t take;
    do {
        if (have == 0)
            return 0;
        take = want < have ? want : have;
    } while (!__atomic_compare_exchange_n(from, &have, have - take, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return take;
}

/* Puts `bytes` into tc's spare and sends what exceeds TC_SPARE_KEEP back to
 * the unclaimed budget. */
static void tc_add_spare(tc_cache *tc, size_t bytes) {
    size_t spare = __atomic_add_fetch(&tc_ext(tc)->spare_bytes, bytes, __ATOMIC_RELAXED);
    if (spare > TC_SPARE_KEEP) {
        size_t back = tc_take(&tc_ext(tc)->spare_bytes, spare - TC_SPARE_KEEP);
        __atomic_fetch_add(&tc_unclaimed, back, __ATOMIC_RELAXED);
    }
}

/* Takes back a dead thread's cache: the owner died without our destructor
 * (it first allocated in the last destructor round). Registry lock held. */
static int tc_owner_dead_locked(tc_cache *tc) {
    if (pthread_mutex_trylock(&tc_ext(tc)->owner_alive) != EOWNERDEAD)
        return 0; /* EBUSY: alive (a 0 cannot happen: owners never unlock while linked) */
    pthread_mutex_consistent(&tc_ext(tc)->owner_alive);
    pthread_mutex_unlock(&tc_ext(tc)->owner_alive);
    return 1;
}

static void tc_unlink_locked(tc_cache *tc) {
    if (tc_ext(tc)->prev_cache != NULL)
        tc_ext(tc)->prev_cache->next_cache = tc->next_cache;
    else
        tc_registry = tc->next_cache;
    if (tc->next_cache != NULL)
        tc_ext(tc->next_cache)->prev_cache = tc_ext(tc)->prev_cache;
    if (tc_sweep_cursor == tc)
        tc_sweep_cursor = tc->next_cache;
    tc_live_caches--;
}

/* The next cache a sweep visits, round robin. Registry lock held. */
static tc_cache *tc_sweep_next_locked(void) {
    tc_cache *tc = tc_sweep_cursor != NULL ? tc_sweep_cursor : tc_registry;
    if (tc != NULL)
        tc_sweep_cursor = tc->next_cache;
    return tc;
}

/* Visits up to `visits` caches: unlinks those whose owner died (chained on
 * *dead through next_cache, for tc_reclaim after the lock is dropped) and,
 * if `thief` is set, takes the spare of idle ones. Registry lock held. */
static size_t tc_sweep_locked(tc_cache *thief, size_t visits, tc_cache **dead) {
    unsigned epoch = __atomic_add_fetch(&tc_epoch, 1, __ATOMIC_RELAXED);
    size_t stolen = 0;
    for (size_t i = 0; i < visits && i < tc_live_caches; i++) {
        tc_cache *victim = tc_sweep_next_locked();
        if (victim == NULL || victim == thief)
            continue;
        if (tc_owner_dead_locked(victim)) {
            tc_unlink_locked(victim);
            victim->next_cache = *dead;
            *dead = victim;
        } else if (thief != NULL &&
                   epoch - __atomic_load_n(&tc_ext(victim)->active_epoch, __ATOMIC_RELAXED) > 2) {
            stolen += __atomic_exchange_n(&tc_ext(victim)->spare_bytes, 0, __ATOMIC_RELAXED);
        }
    }
    return stolen;
}

static void tc_reclaim(tc_cache *tc);

/* Reclaims the caches a sweep found dead (registry lock not held). */
static void tc_reclaim_dead(tc_cache *dead) {
    while (dead != NULL) {
        tc_cache *next = dead->next_cache;
        tc_reclaim(dead);
        dead = next;
    }
}

/* The unclaimed budget is gone: now and then, look for idle threads' spare. */
static size_t tc_steal(tc_cache *tc) {
    /* LAB BEGIN: budget_steal */
    if (++tc_ext(tc)->failed_claims % TC_STEAL_BACKOFF != 1)
        return 0;
    if (pthread_mutex_trylock(&tc_registry_lock.mutex) != 0)
        return 0; /* someone else is sweeping or creating: do not wait for them */
    tc_cache *dead = NULL;
    size_t stolen = tc_sweep_locked(tc, TC_STEAL_VISITS, &dead);
    hc_lock_release(&tc_registry_lock);
    tc_reclaim_dead(dead);
    return stolen;
    /* LAB END: budget_steal */
}

/* Reserves `need` more bytes of capacity for tc; returns 1 on success. */
static int tc_reserve(tc_cache *tc, size_t need) {
    /* LAB BEGIN: budget_reserve */
    size_t charge = tc_charge(tc_ext(tc)->capacity_bytes + need) - tc_charge(tc_ext(tc)->capacity_bytes);
    __atomic_store_n(&tc_ext(tc)->active_epoch, __atomic_load_n(&tc_epoch, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    if (charge > 0) {
        size_t got = tc_take(&tc_ext(tc)->spare_bytes, charge);
        if (got < charge) {
            size_t want = charge - got > TC_SHARE_STEP ? charge - got : TC_SHARE_STEP;
            got += tc_take(&tc_unclaimed, want);
            if (got < charge)
                got += tc_steal(tc);
        }
        if (got < charge) {
            if (got > 0)
                tc_add_spare(tc, got); /* keep it for the next try */
            return 0;
        }
        if (got > charge)
            tc_add_spare(tc, got - charge);
    }
    __atomic_store_n(&tc_ext(tc)->capacity_bytes, tc_ext(tc)->capacity_bytes + need, __ATOMIC_RELAXED);
    return 1;
    /* LAB END: budget_reserve */
}

/* Lowers lists[cls]'s limit to `limit`, returning the objects above it and
 * turning the capacity freed into spare. */
static void tc_set_limit_lower(tc_cache *tc, unsigned cls, uint32_t limit) {
    hc_free_list *list = &tc->lists[cls];
    if (list->max_length <= limit)
        return;
    if (fl_length(list) > limit) {
        void *first, *last;
        uint32_t taken = fl_pop_range(list, fl_length(list) - limit, &first, &last);
        cc_return(cls, first, last, taken);
    }
    size_t old_capacity = tc_ext(tc)->capacity_bytes;
    size_t capacity = old_capacity - (size_t)(list->max_length - limit) * sc_size(cls);
    fl_set_limit(list, limit);
    __atomic_store_n(&tc_ext(tc)->capacity_bytes, capacity, __ATOMIC_RELAXED);
    tc->overages[cls] = 0;
    if (limit == 0)
        tc_class_clear(tc_ext(tc)->used_classes, cls);
    size_t freed = tc_charge(old_capacity) - tc_charge(capacity);
    if (freed > 0)
        tc_add_spare(tc, freed);
}

/* Raises lists[cls]'s limit to `limit` if the budget allows. */
static void tc_set_limit_higher(tc_cache *tc, unsigned cls, uint32_t limit) {
    hc_free_list *list = &tc->lists[cls];
    if (limit <= list->max_length || !tc_reserve(tc, (size_t)(limit - list->max_length) * sc_size(cls)))
        return;
    fl_set_limit(list, limit);
    tc->overages[cls] = 0;
    tc_class_set(tc_ext(tc)->used_classes, cls);
}

/* Slow start, as in stage 2, but each step is paid for from the budget. */
static void tc_grow_limit(tc_cache *tc, unsigned cls) {
    uint32_t batch = sc_batch(cls), cap = tc_list_cap(cls), limit = tc->lists[cls].max_length;
    if (limit < batch)
        limit++;
    else if (limit < cap)
        limit = limit + batch < cap ? limit + batch : cap;
    tc_set_limit_higher(tc, cls, limit);
}

/* The scavenge, as in stage 2, over the classes this thread uses. */
static void tc_scavenge(tc_cache *tc) {
    for (unsigned word = 0; word < 2; word++)
        for (uint64_t bits = tc_ext(tc)->used_classes[word] & ~tc->ran_dry[word]; bits != 0; bits &= bits - 1) {
            unsigned cls = word * 64 + (unsigned)__builtin_ctzll(bits);
            hc_free_list *list = &tc->lists[cls];
            if (fl_length(list) == 0)
                continue;
            uint32_t batch = sc_batch(cls), keep = fl_length(list) / 2;
            if (list->max_length > batch)
                tc_set_limit_lower(tc, cls, list->max_length - batch > batch ? list->max_length - batch : batch);
            if (fl_length(list) > keep) {
                void *first, *last;
                uint32_t taken = fl_pop_range(list, fl_length(list) - keep, &first, &last);
                cc_return(cls, first, last, taken);
            }
        }
    tc->ran_dry[0] = tc->ran_dry[1] = 0;
}

static void tc_note_slow_path(tc_cache *tc) {
    if (++tc->slow_calls >= TC_SCAVENGE_PERIOD) {
        tc->slow_calls = 0;
        tc_scavenge(tc);
    }
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
    pthread_once(&tc_init_once, tc_init);
    tc = pool_alloc(&tc_cache_pool); /* zeroed: lists empty, limits 0 */
    if (tc == NULL)
        return &tc_sentinel;
    /* Held until the thread exits: if it dies without our destructor
     * running (its first malloc came in the last destructor round), the
     * kernel marks the lock and a sweep reclaims the cache. */
    pthread_mutex_init(&tc_ext(tc)->owner_alive, &tc_owner_attr);
    pthread_mutex_lock(&tc_ext(tc)->owner_alive);
    tc_cache *dead = NULL;
    hc_lock_acquire(&tc_registry_lock);
    tc_sweep_locked(NULL, TC_REAP_VISITS, &dead); /* new threads reap dead ones */
    tc->next_cache = tc_registry;
    if (tc_registry != NULL)
        tc_ext(tc_registry)->prev_cache = tc;
    tc_registry = tc;
    tc_live_caches++;
    hc_lock_release(&tc_registry_lock);
    tc_reclaim_dead(dead);
    /* Publish before pthread_setspecific: for high key numbers glibc
     * allocates there, and that malloc must find this cache ready instead
     * of creating a second one. */
    tc_current = tc;
    if (tc_exit_key_ok)
        pthread_setspecific(tc_exit_key, tc);
    return tc;
}

/* Gives an unlinked cache's objects, charge and spare back, and its record
 * to the pool. Its owner is exiting (the caller) or dead. */
static void tc_reclaim(tc_cache *tc) {
    for (unsigned word = 0; word < 2; word++)
        for (uint64_t bits = tc_ext(tc)->used_classes[word]; bits != 0; bits &= bits - 1) {
            unsigned cls = word * 64 + (unsigned)__builtin_ctzll(bits);
            void *first, *last;
            uint32_t taken = fl_pop_range(&tc->lists[cls], fl_length(&tc->lists[cls]), &first, &last);
            if (taken > 0)
                cc_return(cls, first, last, taken);
        }
    size_t back = tc_charge(tc_ext(tc)->capacity_bytes) + __atomic_exchange_n(&tc_ext(tc)->spare_bytes, 0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&tc_unclaimed, back, __ATOMIC_RELAXED);
    pthread_mutex_destroy(&tc_ext(tc)->owner_alive);
    pool_free(&tc_cache_pool, tc);
}

/* The pthread key destructor: runs when a thread that has a cache exits. */
static void tc_thread_exit(void *arg) {
    /* LAB BEGIN: thread_exit */
    tc_cache *tc = arg;
    tc_thread_exited = 1;
    tc_current = &tc_sentinel;
    hc_lock_acquire(&tc_registry_lock);
    tc_unlink_locked(tc);
    hc_lock_release(&tc_registry_lock);
    pthread_mutex_unlock(&tc_ext(tc)->owner_alive); /* unlinked: no sweep will look at it */
    tc_reclaim(tc);
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
    tc_class_set(tc->ran_dry, cls);
    if (got > 1) {
        /* The limit may not have grown (budget): keep what fits, return the rest. */
        fl_push_range(list, fl_next(first), last, got - 1);
        if (fl_length(list) > list->max_length) {
            void *extra_first, *extra_last;
            uint32_t n = fl_pop_range(list, fl_length(list) - list->max_length, &extra_first, &extra_last);
            cc_return(cls, extra_first, extra_last, n);
        }
    }
    tc_note_slow_path(tc);
    return first;
}

void tc_overflow(tc_cache *tc, unsigned cls, void *obj) {
    HC_TRACE(HC_TRACE_TC_OVERFLOW, cls);
    if (tc == &tc_sentinel) {
        tc_free_without_cache(obj, cls);
        return;
    }
    hc_free_list *list = &tc->lists[cls];
    uint32_t batch = sc_batch(cls);
    /* Slow start below a batch; above it, a list that keeps overflowing
     * shrinks (stage 2's ListTooLong), and gives its budget back. */
    if (list->max_length < batch)
        tc_grow_limit(tc, cls);
    else if (list->max_length > batch && ++tc->overages[cls] > TC_MAX_OVERAGES)
        tc_set_limit_lower(tc, cls, list->max_length - batch > batch ? list->max_length - batch : batch);
    fl_push(list, obj);
    uint32_t length = fl_length(list);
    uint32_t excess = length > list->max_length ? length - list->max_length : 0;
    void *first, *last;
    uint32_t taken = fl_pop_range(list, excess > batch ? excess : batch, &first, &last);
    cc_return(cls, first, last, taken);
    tc_note_slow_path(tc);
}

void tc_free_without_cache(void *obj, unsigned cls) {
    fl_set_next(obj, NULL);
    cc_return(cls, obj, obj, 1);
}

void tc_flush_current(void) {
    tc_cache *tc = tc_current;
    if (tc == &tc_sentinel)
        return;
    /* Empty every list and give its capacity back, where other threads
     * can claim it. */
    for (unsigned word = 0; word < 2; word++)
        for (uint64_t bits = tc_ext(tc)->used_classes[word]; bits != 0; bits &= bits - 1)
            tc_set_limit_lower(tc, word * 64 + (unsigned)__builtin_ctzll(bits), 0);
}

/* ---- Stats and fork ----------------------------------------------------------- */

void tc_collect_stats(hc_stats *out) {
    size_t cached = 0;
    hc_lock_acquire(&tc_registry_lock);
    for (tc_cache *tc = tc_registry; tc != NULL; tc = tc->next_cache) {
        /* Other threads' lengths are read without their owners' help: a
         * snapshot that may be a batch out of date, never a torn value. */
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
            cached += (size_t)fl_length(&tc->lists[cls]) * sc_size(cls);
    }
    hc_lock_release(&tc_registry_lock);
    cc_collect_stats(out);
    out->thread_cache_bytes += cached;
    out->bytes_in_use = out->bytes_in_use > cached ? out->bytes_in_use - cached : 0;
}

void tc_budget_snapshot(tc_budget_stats *out) {
    pthread_once(&tc_init_once, tc_init);
    tc_cache *dead = NULL;
    hc_lock_acquire(&tc_registry_lock);
    tc_sweep_locked(NULL, tc_live_caches, &dead); /* "live" means a live owner */
    hc_lock_release(&tc_registry_lock);
    tc_reclaim_dead(dead);

    hc_lock_acquire(&tc_registry_lock);
    out->budget_bytes = hc_get_options()->max_total_thread_cache_bytes;
    out->floor_bytes = TC_FLOOR_BYTES;
    out->live_caches = tc_live_caches;
    out->capacity_bytes = 0;
    out->share_bytes = 0;
    for (tc_cache *tc = tc_registry; tc != NULL; tc = tc->next_cache) {
        size_t capacity = __atomic_load_n(&tc_ext(tc)->capacity_bytes, __ATOMIC_RELAXED);
        out->capacity_bytes += capacity;
        out->share_bytes += tc_charge(capacity) + __atomic_load_n(&tc_ext(tc)->spare_bytes, __ATOMIC_RELAXED);
    }
    out->unclaimed_bytes = __atomic_load_n(&tc_unclaimed, __ATOMIC_RELAXED);
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
