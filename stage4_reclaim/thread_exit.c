/* stage4_reclaim/thread_exit.c — layer 4: a thread's cache goes back when
 * the thread exits. Stage 2's list policy asks this file for each new
 * cache's record and tells it when the cache is published
 * (stage2_centralcache/thread_cache_hooks.h); diff it against
 * stage2_centralcache/thread_cache_hooks.c, which hands out records that
 * live for good.
 *   - a pthread key destructor parks the exiting thread's cache whole
 *     (lists, limits, budget share; a list above stage 2's cap trimmed to
 *     it first) and the next new thread adopts it in one step, instead of
 *     refilling every class it uses from the central cache. A parked
 *     cache stays in the registry (its objects still count as thread-cache
 *     bytes) and on a stack of at most TC_MAX_PARKED; it is given back
 *     when the stack is full, when a budget steal sweep meets it (live
 *     threads need the budget more), or by hc_release_free_memory;
 *   - given back means: its objects to the central cache (stage 2's
 *     tc_flush: only the classes the thread used), its budget to the
 *     unclaimed pool, and its record to the pool;
 *   - after that destructor has run (other TLS destructors may still
 *     allocate), the thread gets no new record: it works uncached, every
 *     malloc and free going straight to the central cache, so nothing is
 *     cached and lost;
 *   - a cache created in the last destructor round, when no destructor will
 *     run again, is found by its robust owner lock once the thread is gone
 *     and reclaimed by another thread (the reaper): every new thread checks
 *     TC_REAP_VISITS caches, and so does every budget steal sweep.
 * May touch: this thread's record; the registry (under tc_registry_lock); a
 * dead thread's whole cache; the budget (budget.c); the record pool. */
#define _POSIX_C_SOURCE 200809L /* robust mutexes */
#include <errno.h>
#include <pthread.h>

#include "common/fatal.h"
#include "common/lock.h"
#include "common/os.h"
#include "common/pool.h"
#include "stage4_reclaim/reclaim.h"
#include "stage4_reclaim/reclaim_cache.h"

#define TC_REAP_VISITS 2u
/* Parked caches at most: a few, so a burst of exits that no birth follows
 * pins little (each is within the budget), and a pool of threads that
 * replaces its members one at a time always finds one. */
#define TC_MAX_PARKED 4u

static hc_pool tc_record_pool = HC_POOL_INITIALIZER(sizeof(tc_reclaim_cache));

/* Set once this thread's exit destructor has run. */
static HC_THREAD_LOCAL int tc_thread_exited;

static tc_cache *tc_sweep_cursor; /* where the next sweep starts (registry lock) */

/* Caches whose owners exited, newest first (registry lock; the count is
 * also read without it, to skip the lock when none is parked). */
static tc_cache *tc_parked;
static size_t tc_parked_count;

static pthread_key_t tc_exit_key;
static pthread_once_t tc_init_once = PTHREAD_ONCE_INIT;
static int tc_exit_key_ok;
static pthread_mutexattr_t tc_owner_attr;

static void tc_thread_exit(void *arg);

static void tc_init(void) {
    tc_exit_key_ok = pthread_key_create(&tc_exit_key, tc_thread_exit) == 0;
    if (!tc_exit_key_ok) /* say so once: exiting threads' caches now stay cached */
        hc_warn("pthread_key_create failed: caches of exiting threads will not be reclaimed");
    tc_budget_init();
    pthread_mutexattr_init(&tc_owner_attr);
    pthread_mutexattr_setrobust(&tc_owner_attr, PTHREAD_MUTEX_ROBUST);
}

void tc_reclaim_init_once(void) { pthread_once(&tc_init_once, tc_init); }

/* ---- Finding caches whose owner died ------------------------------------------- */

/* Whether tc's owner died without our destructor (it first allocated in the
 * last destructor round); makes the lock usable again. Registry lock held. */
static int tc_owner_dead_locked(tc_cache *tc) {
    if (pthread_mutex_trylock(&tc_ext(tc)->owner_alive) != EOWNERDEAD)
        return 0; /* EBUSY: alive (a 0 cannot happen: owners never unlock while linked) */
    pthread_mutex_consistent(&tc_ext(tc)->owner_alive);
    pthread_mutex_unlock(&tc_ext(tc)->owner_alive);
    return 1;
}

static void tc_unlink_locked(tc_cache *tc) {
    if (tc_sweep_cursor == tc)
        tc_sweep_cursor = tc->next_cache;
    tc_registry_unlink_locked(tc);
}

/* The next cache a sweep visits, round robin. Registry lock held. */
static tc_cache *tc_sweep_next_locked(void) {
    tc_cache *tc = tc_sweep_cursor != NULL ? tc_sweep_cursor : tc_registry;
    if (tc != NULL)
        tc_sweep_cursor = tc->next_cache;
    return tc;
}

/* Takes tc off the parked stack. Registry lock held. */
static void tc_unpark_locked(tc_cache *tc) {
    tc_cache **link = &tc_parked;
    while (*link != tc)
        link = &tc_ext(*link)->next_parked;
    *link = tc_ext(tc)->next_parked;
    tc_ext(tc)->parked = 0;
    __atomic_store_n(&tc_parked_count, tc_parked_count - 1, __ATOMIC_RELAXED);
}

size_t tc_sweep_locked(tc_cache *thief, size_t visits, tc_cache **dead) {
    unsigned epoch = tc_budget_next_epoch();
    size_t stolen = 0;
    /* The length before the sweep: each dead cache it unlinks shortens the
     * registry, and a bound that shrank with it would stop short. */
    size_t caches = tc_live_caches;
    for (size_t i = 0; i < visits && i < caches; i++) {
        tc_cache *victim = tc_sweep_next_locked();
        if (victim == NULL || victim == thief)
            continue;
        if (tc_ext(victim)->parked) {
            /* Kept for a newborn, but a live thread is short of budget:
             * the share it holds is worth more there. */
            if (thief != NULL) {
                tc_unpark_locked(victim);
                tc_unlink_locked(victim);
                victim->next_cache = *dead;
                *dead = victim;
            }
        } else if (tc_owner_dead_locked(victim)) {
            tc_unlink_locked(victim);
            victim->next_cache = *dead;
            *dead = victim;
        } else if (thief != NULL) {
            stolen += tc_budget_take_idle_spare(victim, epoch);
        }
    }
    return stolen;
}

/* Gives an unlinked cache's objects, charge and spare back, and its record
 * to the pool. Its owner is exiting (the caller) or dead. */
static void tc_reclaim(tc_cache *tc) {
    tc_flush(tc);
    tc_budget_give_back(tc);
    pthread_mutex_destroy(&tc_ext(tc)->owner_alive);
    pool_free(&tc_record_pool, tc);
}

void tc_reclaim_dead(tc_cache *dead) {
    while (dead != NULL) {
        tc_cache *next = dead->next_cache;
        tc_reclaim(dead);
        dead = next;
    }
}

void tc_reclaim_parked(void) {
    tc_cache *dead = NULL;
    hc_lock_acquire(&tc_registry_lock);
    while (tc_parked != NULL) {
        tc_cache *tc = tc_parked;
        tc_unpark_locked(tc);
        tc_unlink_locked(tc);
        tc->next_cache = dead;
        dead = tc;
    }
    hc_lock_unlock(&tc_registry_lock);
    tc_reclaim_dead(dead);
}

size_t tc_parked_caches(void) { return __atomic_load_n(&tc_parked_count, __ATOMIC_RELAXED); }

/* ---- Parking and adoption ---------------------------------------------------- */

/* The exiting owner of the linked cache tc parks it, unless TC_MAX_PARKED
 * are parked already; returns 1 if it did. From here on tc is no thread's:
 * its owner lock is unlocked while the registry lock makes it parked, so a
 * sweep never sees it free and unparked. */
static int tc_park_on_exit(tc_cache *tc) {
    /* A parked cache is a newborn's quick start, not the dead thread's
     * phases: lists the budget let grow past stage 2's cap (budget.c) give
     * the rest back first, so parked caches pin no more than they did under
     * stage 2's bounds. (If the stack turns out full, all of it goes back.) */
    tc_trim(tc, TC_STAGE2_LIST_BOUNDS);
    /* As tc_thread_exit does before it gives a cache back: the thread is
     * leaving, and a later destructor's malloc must not use tc. */
    tc_thread_exited = 1;
    tc_current = &tc_sentinel;
    hc_lock_acquire(&tc_registry_lock);
    int park = tc_parked_count < TC_MAX_PARKED;
    if (park) {
        tc_ext(tc)->parked = 1;
        tc_ext(tc)->next_parked = tc_parked;
        tc_parked = tc;
        __atomic_store_n(&tc_parked_count, tc_parked_count + 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&tc_ext(tc)->owner_alive);
    }
    hc_lock_unlock(&tc_registry_lock);
    return park;
}

/* A parked cache for the calling new thread, unlinked (stage 2's
 * tc_get_or_create links it again, as it does a fresh record), or NULL.
 * Between the two, hc_get_stats misses its objects: a birth in flight. */
static tc_cache *tc_adopt(void) {
    if (__atomic_load_n(&tc_parked_count, __ATOMIC_RELAXED) == 0)
        return NULL; /* the common case of a program without churn: no lock */
    hc_lock_acquire(&tc_registry_lock);
    tc_cache *tc = tc_parked;
    if (tc != NULL) {
        tc_unpark_locked(tc);
        tc_unlink_locked(tc);
        tc_policy(tc)->prev_cache = NULL; /* it goes back at the head */
    }
    hc_lock_unlock(&tc_registry_lock);
    if (tc != NULL)
        pthread_mutex_lock(&tc_ext(tc)->owner_alive); /* now this thread's */
    return tc;
}

/* ---- The hooks of stage 2's list policy ------------------------------------ */

tc_cache *tc_layer_new_record(void) {
    /* A thread whose exit destructor already ran gets none: a later
     * destructor's allocations are never cached in a cache nobody will
     * reclaim. */
    if (tc_thread_exited)
        return NULL;
    tc_reclaim_init_once();
    tc_cache *tc = tc_adopt(); /* a dead thread's lists, limits and share, whole */
    if (tc != NULL)
        return tc;
    tc = pool_alloc(&tc_record_pool); /* zeroed: lists empty, limits 0 */
    if (tc == NULL)
        return NULL;
    /* Held until the thread exits: if it dies without our destructor
     * running (its first malloc came in the last destructor round), the
     * kernel marks the lock and a sweep reclaims the cache. */
    pthread_mutex_init(&tc_ext(tc)->owner_alive, &tc_owner_attr);
    pthread_mutex_lock(&tc_ext(tc)->owner_alive);
    return tc;
}

void tc_layer_cache_created(tc_cache *tc) {
    tc_ext(tc)->period_mapped_at = os_mapped_bytes(); /* its first scavenge period begins (budget.c) */
    tc_cache *dead = NULL;
    hc_lock_acquire(&tc_registry_lock);
    tc_sweep_locked(NULL, TC_REAP_VISITS, &dead); /* new threads reap dead ones */
    hc_lock_unlock(&tc_registry_lock);
    tc_reclaim_dead(dead);
    /* After tc_current is published: for high key numbers glibc allocates
     * in pthread_setspecific, and that malloc must find this cache ready
     * instead of creating a second one. */
    if (tc_exit_key_ok)
        pthread_setspecific(tc_exit_key, tc);
}

/* The pthread key destructor: runs when a thread that has a cache exits. */
static void tc_thread_exit(void *arg) {
    if (tc_park_on_exit(arg))
        return; /* the next new thread takes it over */
    /* Too many parked: give it back. */
    /* LAB BEGIN: thread_exit */
    tc_cache *tc = arg;
    tc_thread_exited = 1;
    tc_current = &tc_sentinel;
    hc_lock_acquire(&tc_registry_lock);
    tc_unlink_locked(tc);
    hc_lock_unlock(&tc_registry_lock);
    pthread_mutex_unlock(&tc_ext(tc)->owner_alive); /* unlinked: no sweep will look at it */
    tc_reclaim(tc);
    /* LAB END: thread_exit */
}

/* ---- Fork ----------------------------------------------------------------------- */

void tc_fork_lock(void) {
    hc_lock_acquire(&tc_registry_lock);
    hc_lock_acquire(&tc_record_pool.lock);
}

void tc_fork_unlock(void) {
    hc_lock_unlock(&tc_record_pool.lock);
    hc_lock_unlock(&tc_registry_lock);
}
