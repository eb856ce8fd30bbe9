/* stage4_reclaim/budget.c — layer 4: a budget for all thread caches
 * together. Stage 2's list policy asks before a list's limit grows and says
 * when one drops (stage2_centralcache/thread_cache_hooks.h); this file
 * answers: diff it against stage2_centralcache/thread_cache_hooks.c, whose
 * answer is always yes.
 *
 * A list's limit (max_length) bounds what it can hold, so the sum over a
 * thread's lists of max_length x size -- its capacity -- bounds what the
 * thread can cache. The first TC_FLOOR_BYTES of every thread's capacity are
 * free: a new thread always gets a working cache, even when the budget is
 * all handed out. Capacity above the floor is charged to the budget
 * (HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES):
 *   - a list that wants to grow takes the bytes from its thread's spare;
 *   - when the spare is short, the thread claims TC_SHARE_STEP more from the
 *     unclaimed budget: one compare-and-swap on a counter, no lock;
 *   - when the unclaimed budget is empty too, the claim fails at once (one
 *     load) and the list does not grow. Only every TC_STEAL_BACKOFF-th
 *     refused claim of a thread sweeps TC_STEAL_VISITS caches (a trylock:
 *     never waiting) and takes the spare of those whose owners have not
 *     needed budget for two sweeps: idle threads' spare goes to busy ones,
 *     and a busy thread is never stolen from nor made to wait;
 *   - a limit that drops (overflow, scavenge, flush) turns its capacity
 *     back into spare, and a thread keeps at most TC_SPARE_KEEP spare: the
 *     rest goes back to the unclaimed counter (a fetch-add);
 *   - a list of small objects may grow as far as the budget, not only to
 *     stage 2's cap of 1 MiB (tc_layer_list_bounds, below);
 *   - a scavenge period also ends when the heap has grown by
 *     TC_PERIOD_GROWTH_BYTES, or when the thread's idle lists of bigger
 *     blocks hold over TC_IDLE_BIG_BYTES (tc_layer_period_ends, below), so
 *     what a thread has stopped using goes back while the heap grows.
 * Bytes leave one counter before they enter another, so at every moment
 *   sum(cached) <= sum(capacity) <= sum(charged + spare) + live x floor
 *   and sum(charged + spare) + unclaimed <= budget.
 * An exiting thread returns its charge and spare to the unclaimed budget.
 * May touch: this thread's budget fields; other caches' spare_bytes
 * (atomically) and, through a sweep, the registry (thread_exit.c). */
#include <errno.h>
#include <pthread.h>

#include "common/lock.h"
#include "common/os.h"
#include "common/size_class.h"
#include "stage3_pagecache/transfer_cache.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/reclaim.h"
#include "stage4_reclaim/reclaim_cache.h"

#define TC_FLOOR_BYTES    ((size_t)2 * HC_BATCH_BYTES)
#define TC_SHARE_STEP     ((size_t)16 << 10)
#define TC_SPARE_KEEP     ((size_t)32 << 10)
#define TC_STEAL_BACKOFF  64u
#define TC_STEAL_VISITS   16u

/* Budget no thread holds (atomic), and the sweep counter (atomic). */
static size_t tc_unclaimed;
static unsigned tc_epoch;

void tc_budget_init(void) {
    __atomic_store_n(&tc_unclaimed, hc_get_options()->max_total_thread_cache_bytes, __ATOMIC_RELAXED);
}

unsigned tc_budget_next_epoch(void) { return __atomic_add_fetch(&tc_epoch, 1, __ATOMIC_RELAXED); }

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

size_t tc_budget_take_idle_spare(tc_cache *victim, unsigned epoch) {
    if (epoch - __atomic_load_n(&tc_ext(victim)->active_epoch, __ATOMIC_RELAXED) <= 2)
        return 0; /* its owner needed budget lately: busy, never stolen from */
    return __atomic_exchange_n(&tc_ext(victim)->spare_bytes, 0, __ATOMIC_RELAXED);
}

/* The unclaimed budget is gone: now and then, look for idle threads' spare. */
static size_t tc_steal(tc_cache *tc) {
    /* LAB BEGIN: budget_steal */
    if (++tc_ext(tc)->failed_claims % TC_STEAL_BACKOFF != 1)
        return 0;
    if (!hc_lock_try(&tc_registry_lock))
        return 0; /* someone else is sweeping or creating: do not wait for them */
    tc_cache *dead = NULL;
    size_t stolen = tc_sweep_locked(tc, TC_STEAL_VISITS, &dead);
    hc_lock_unlock(&tc_registry_lock);
    tc_reclaim_dead(dead);
    return stolen;
    /* LAB END: budget_steal */
}

/* Reserves `need` more bytes of capacity for tc; returns 1 on success. */
static int tc_reserve(tc_cache *tc, size_t need) {
    /* LAB BEGIN: budget_reserve */
    size_t charge = tc_charge(tc_ext(tc)->capacity_bytes + need) - tc_charge(tc_ext(tc)->capacity_bytes);
    /* Marks this thread busy for the steal sweep (tc_budget_take_idle_spare). */
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

/* ---- The hooks of stage 2's list policy ------------------------------------ */

/* With a budget for all caches together, a list of small objects needs no
 * byte cap of its own below it: stage 2's 1 MiB bounded what a thread could
 * hoard when nothing else did. The limit still grows only as its thread's
 * refills ask (slow start) and only with budget claimed, so a thread that
 * frees a phase of one class and allocates it again keeps the phase: the
 * bench's `hold` frees 11 MiB of 128-byte blocks a round and takes them
 * back the next, and under a 1 MiB cap all but 8,192 of them went through
 * the central cache and the spans each round (walked off the list, grouped
 * by span, carved again). That round trip costs per object, so the larger
 * bound is for blocks of up to TC_BUDGET_LIST_MAX_BLOCK bytes, where it is
 * most of what an object costs; bigger blocks keep stage 2's 1 MiB, so that
 * what a program frees of them reaches the page cache and its release
 * policy. Never less than stage 2's cap (a budget set small still allows
 * that); TC_MAX_BUDGET_LIST_LENGTH holds a round of `hold` with room and
 * bounds the walk that flushes a list. */
#define TC_BUDGET_LIST_MAX_BLOCK ((size_t)1024)
#define TC_MAX_BUDGET_LIST_LENGTH ((uint32_t)1 << 17)

tc_list_bounds tc_layer_list_bounds(unsigned cls) {
    if (sc_size(cls) > TC_BUDGET_LIST_MAX_BLOCK)
        return TC_STAGE2_LIST_BOUNDS;
    size_t budget = hc_get_options()->max_total_thread_cache_bytes;
    return (tc_list_bounds){budget > TC_LIST_CAP_BYTES ? budget : TC_LIST_CAP_BYTES, TC_MAX_BUDGET_LIST_LENGTH};
}

int tc_layer_may_raise_limit(tc_cache *tc, unsigned cls, uint32_t from, uint32_t to) {
    return tc_reserve(tc, (size_t)(to - from) * sc_size(cls));
}

/* A list the bound above let grow past stage 2's cap comes back to it when
 * a scavenge period passes without its running dry (stage 2's
 * tc_note_slow_path). Stage 2's period is TC_SCAVENGE_PERIOD slow-path
 * visits, and a phase of big objects that follows one of small ones makes
 * few: the lab traces' `waves` frees 8 MiB of 1 KiB blocks onto one list,
 * then allocates 8 MiB of 3 KiB ones in fewer than 256 refills, mapping new
 * memory for all of them while the old phase waits on the list. So the
 * period also ends once the memory mapped from the OS has grown by
 * TC_PERIOD_GROWTH_BYTES since it began: a thread's idle phase is trimmed
 * after the heap has grown by at most that much, as the central cache's
 * idle classes are after CC_SWEEP_PAGES of new spans. Growth, not the
 * central cache's clock: spans carved again from free pages (blocks of 32
 * KiB and up, freed and allocated at random) move that clock while the
 * heap stays the same size, and a period ended by each of them cost the
 * lab trace `large` a third of its speed. */
#define TC_PERIOD_GROWTH_BYTES ((size_t)CC_SWEEP_PAGES << HC_PAGE_SHIFT)

/* And a period ends once the thread's idle lists of bigger blocks hold more
 * than TC_IDLE_BIG_BYTES, looked at every TC_IDLE_CHECK_VISITS visits. A
 * program that goes from size to size (a string grown a byte at a time
 * copies itself into every class up to its length: the bench's `strgrow`)
 * frees each class's blocks onto a list nobody allocates from again, up to
 * stage 2's 1 MiB a list, while the class in use carves new spans for want
 * of them: on the 256-visit period alone, the lists of the last few classes
 * held 2-4 MiB and the heap grew to twice what the program had in use.
 * Ended this early, a period sees a list idle soon after its class is left
 * (`ran_dry` is cleared at every period's end), and each period halves the
 * idle lists (stage 2's scavenge) until together they hold less than this.
 * Emptying them at once instead did worse: the periods then end rarely
 * again, and the next classes left keep the bit of the long period they
 * ran dry in. Only bigger blocks: a list of small ones that waits idle for
 * its phase to come back is what the budget lets it keep (above). */
#define TC_IDLE_CHECK_VISITS 32u
#define TC_IDLE_BIG_BYTES    ((size_t)256 << 10)

/* What the lists of blocks above TC_BUDGET_LIST_MAX_BLOCK that did not run
 * dry since the period began hold. */
static size_t tc_idle_big_bytes(tc_cache *tc) {
    const tc_policy_cache *p = tc_policy(tc);
    size_t idle = 0;
    for (unsigned word = 0; word < 2; word++)
        for (uint64_t bits = p->used_classes[word] & ~p->ran_dry[word]; bits != 0; bits &= bits - 1) {
            unsigned cls = word * 64 + (unsigned)__builtin_ctzll(bits);
            if (sc_size(cls) > TC_BUDGET_LIST_MAX_BLOCK)
                idle += (size_t)fl_length(&tc->lists[cls]) * sc_size(cls);
        }
    return idle;
}

int tc_layer_period_ends(tc_cache *tc, int visits_done) {
    tc_reclaim_cache *cache = tc_ext(tc);
    size_t mapped = os_mapped_bytes();
    if (mapped < cache->period_mapped_at)
        cache->period_mapped_at = mapped; /* growth is counted from the lowest point */
    int ends = visits_done || mapped - cache->period_mapped_at >= TC_PERIOD_GROWTH_BYTES;
    if (!ends && ++cache->visits_since_idle_check >= TC_IDLE_CHECK_VISITS) {
        cache->visits_since_idle_check = 0;
        ends = tc_idle_big_bytes(tc) > TC_IDLE_BIG_BYTES;
    }
    if (!ends)
        return 0;
    cache->period_mapped_at = mapped;
    cache->visits_since_idle_check = 0;
    return 1;
}

void tc_layer_limit_lowered(tc_cache *tc, unsigned cls, uint32_t from, uint32_t to) {
    size_t old_capacity = tc_ext(tc)->capacity_bytes;
    size_t capacity = old_capacity - (size_t)(from - to) * sc_size(cls);
    __atomic_store_n(&tc_ext(tc)->capacity_bytes, capacity, __ATOMIC_RELAXED);
    size_t freed = tc_charge(old_capacity) - tc_charge(capacity);
    if (freed > 0)
        tc_add_spare(tc, freed);
}

void tc_budget_give_back(tc_cache *tc) {
    size_t back = tc_charge(tc_ext(tc)->capacity_bytes) +
                  __atomic_exchange_n(&tc_ext(tc)->spare_bytes, 0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&tc_unclaimed, back, __ATOMIC_RELAXED);
}

/* ---- Stats ------------------------------------------------------------------ */

void tc_budget_snapshot(tc_budget_stats *out) {
    tc_reclaim_init_once();
    tc_cache *dead = NULL;
    hc_lock_acquire(&tc_registry_lock);
    tc_sweep_locked(NULL, tc_live_caches, &dead); /* "live" means a live owner */
    hc_lock_unlock(&tc_registry_lock);
    tc_reclaim_dead(dead);

    hc_lock_acquire(&tc_registry_lock);
    out->budget_bytes = hc_get_options()->max_total_thread_cache_bytes;
    out->floor_bytes = TC_FLOOR_BYTES;
    out->parked_caches = tc_parked_caches();
    out->live_caches = tc_live_caches - out->parked_caches; /* both under the registry lock */
    out->capacity_bytes = 0;
    out->share_bytes = 0;
    for (tc_cache *tc = tc_registry; tc != NULL; tc = tc->next_cache) {
        size_t capacity = __atomic_load_n(&tc_ext(tc)->capacity_bytes, __ATOMIC_RELAXED);
        out->capacity_bytes += capacity;
        out->share_bytes += tc_charge(capacity) + __atomic_load_n(&tc_ext(tc)->spare_bytes, __ATOMIC_RELAXED);
    }
    out->unclaimed_bytes = __atomic_load_n(&tc_unclaimed, __ATOMIC_RELAXED);
    hc_lock_unlock(&tc_registry_lock);
}
