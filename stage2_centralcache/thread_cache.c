/* stage2_centralcache/thread_cache.c — layer 1's slow path, now backed by
 * the central cache (layer 2): the list policy.
 *
 * What changed from stage 1 (diff this file against
 * stage1_threadcache/thread_cache.c):
 *   - an empty list is refilled with a batch fetched from the central cache,
 *     not carved from a private chunk;
 *   - each list has a limit (max_length) that starts at 0 and grows each
 *     time the list runs dry or overflows (slow start): +1 per refill up to
 *     one batch, then +1 batch per refill up to the class's cap; a class a
 *     thread never uses costs it nothing;
 *   - a free that finds its list at the limit gives a batch back, so memory
 *     flows from threads that free to threads that allocate; a list that
 *     keeps overflowing shrinks its limit by a batch (gperftools'
 *     ListTooLong), so a thread that only frees holds about one batch;
 *   - refills and give-backs move a trip (tc_trip): one batch here; from
 *     stage 3, whose transfer cache moves several batches under one hold
 *     of the lock (cc_trip_batches), several once a list's limit allows,
 *     and then a thread that only frees holds about one trip;
 *   - every TC_SCAVENGE_PERIOD slow-path visits, lists that did not run dry
 *     since the last scavenge give half their objects back (the scavenge),
 *     after coming back to this stage's cap if the layer above let them
 *     grow past it;
 *   - hc_thread_flush() gives everything back and lowers every limit to 0
 *     (a thread with no cache has nothing, and must not write into the
 *     shared sentinel);
 *   - a thread that cannot have a cache works uncached: its mallocs and
 *     frees go to the central cache one object at a time;
 *   - the layer above may refuse a limit's growth, hears of every drop, and
 *     provides the record (thread_cache_hooks.h): stage 4's budget and
 *     thread-exit reclamation live behind those hooks, so this policy
 *     exists once.
 * May touch: this thread's tc_cache; the registry (under its lock); the
 * central cache through cc_*; the hooks (thread_cache_hooks.h). */
#include "stage1_threadcache/thread_cache.h"

#include "common/lock.h"
#include "common/trace.h"
#include "stage2_centralcache/central_cache.h"
#include "stage2_centralcache/thread_cache_hooks.h"

/* Overflows at a limit above one batch before the limit drops by a batch. */
#define TC_MAX_OVERAGES 3
/* Slow-path visits (refills and overflows) between two scavenges. */
#define TC_SCAVENGE_PERIOD 256

tc_cache tc_sentinel; /* all zero: every list empty, every limit 0; never written */
HC_THREAD_LOCAL tc_thread_words tc_self = {.cache = &tc_sentinel};

hc_lock tc_registry_lock = HC_LOCK_INITIALIZER;
tc_cache *tc_registry;
size_t tc_live_caches;

/* The most objects class `cls`'s list may hold under `bounds`, but never
 * fewer than one batch. Under stage 2's (1 MiB, 8192 objects) a thread may
 * keep 1 MiB of 128-byte objects, but only 128 KiB of 16-byte ones (the
 * length binds first) and four 256 KiB ones. */
static uint32_t tc_cap_within(unsigned cls, tc_list_bounds bounds) {
    size_t cap = bounds.bytes / sc_size(cls);
    if (cap > bounds.length) cap = bounds.length;
    if (cap < sc_batch(cls)) cap = sc_batch(cls);
    return (uint32_t)cap;
}

/* The most objects class `cls`'s list may grow to: under the layer's bounds. */
static uint32_t tc_list_cap(unsigned cls) { return tc_cap_within(cls, tc_layer_list_bounds(cls)); }

/* The objects one trip to the central cache moves: cc_trip_batches(cls) whole
 * batches (one in this stage), never more than the list may hold. */
static uint32_t tc_trip(unsigned cls) {
    uint32_t trip = cc_trip_batches(cls) * sc_batch(cls), cap = tc_list_cap(cls);
    return trip < cap ? trip : cap;
}

/* ---- Creation ---------------------------------------------------------------- */

tc_cache *tc_get_or_create(void) {
    tc_cache *tc = tc_current;
    if (HC_LIKELY(tc != &tc_sentinel))
        return tc;
    tc = tc_layer_new_record(); /* zeroed: every list empty, every limit 0 */
    if (tc == NULL)
        return &tc_sentinel; /* uncached: tc_refill and tc_overflow see to it */
    hc_lock_acquire(&tc_registry_lock);
    tc->next_cache = tc_registry;
    if (tc_registry != NULL)
        tc_policy(tc_registry)->prev_cache = tc;
    tc_registry = tc;
    tc_live_caches++;
    hc_lock_unlock(&tc_registry_lock);
    tc_current = tc;
    tc_layer_cache_created(tc); /* after publishing: the hook may malloc */
    return tc;
}

void tc_registry_unlink_locked(tc_cache *tc) {
    tc_cache *prev = tc_policy(tc)->prev_cache;
    if (prev != NULL)
        prev->next_cache = tc->next_cache;
    else
        tc_registry = tc->next_cache;
    if (tc->next_cache != NULL)
        tc_policy(tc->next_cache)->prev_cache = prev;
    tc_live_caches--;
}

/* ---- Limits ------------------------------------------------------------------ */

/* Raises lists[cls]'s limit to `limit`, unless the layer above refuses. */
static void tc_raise_limit(tc_cache *tc, unsigned cls, uint32_t limit) {
    hc_free_list *list = &tc->lists[cls];
    if (limit <= list->max_length || !tc_layer_may_raise_limit(tc, cls, list->max_length, limit))
        return;
    fl_set_limit(list, limit);
    tc_policy(tc)->overages[cls] = 0;
    tc_class_set(tc_policy(tc)->used_classes, cls);
}

/* Lowers lists[cls]'s limit to `limit`. The caller has already given back
 * the objects above it. */
static void tc_lower_limit(tc_cache *tc, unsigned cls, uint32_t limit) {
    hc_free_list *list = &tc->lists[cls];
    uint32_t from = list->max_length;
    if (limit >= from)
        return;
    fl_set_limit(list, limit);
    tc_policy(tc)->overages[cls] = 0;
    if (limit == 0)
        tc_class_clear(tc_policy(tc)->used_classes, cls);
    tc_layer_limit_lowered(tc, cls, from, limit);
}

/* A limit one step (a batch, or a trip) lower, but never below one step. */
static uint32_t tc_step_lower(uint32_t limit, uint32_t step) {
    return limit - step > step ? limit - step : step;
}

/* Slow start: the limit grows by one per refill until it reaches a batch,
 * then by a trip (a batch in this stage) per refill until the cap: by as
 * much as a refill brings, so the limit grows with the objects moved,
 * whatever a trip is. */
static void tc_grow_limit(tc_cache *tc, unsigned cls) {
    /* LAB BEGIN: slow_start */
    uint32_t batch = sc_batch(cls), trip = tc_trip(cls), cap = tc_list_cap(cls), limit = tc->lists[cls].max_length;
    if (limit < batch)
        tc_raise_limit(tc, cls, limit + 1);
    else if (limit < cap)
        tc_raise_limit(tc, cls, limit + trip < cap ? limit + trip : cap);
    /* LAB END: slow_start */
}

/* Gives up to `n` objects of lists[cls] back to the central cache, at
 * most cc_return_max(cls) per cc_return: a scavenge, a trim or a flush of
 * a long list hands them over piece by piece, each cut off the list just
 * before the central cache reads it. */
static void tc_give_back(tc_cache *tc, unsigned cls, uint32_t n) {
    const uint32_t piece = cc_return_max(cls);
    while (n > 0) {
        void *first, *last;
        uint32_t taken = fl_pop_range(&tc->lists[cls], n < piece ? n : piece, &first, &last);
        if (taken == 0)
            return; /* the list ran out first */
        cc_return(cls, first, last, taken);
        n -= taken;
    }
}

/* The scavenge: a list's low-water mark since the last scavenge is what it
 * held all along and nobody asked for. The fast path keeps no mark (that
 * would cost a compare per malloc), but the slow path sees the one that
 * matters: a list that was refilled ran dry, so its mark was 0. Every other
 * list gives half its objects back and its limit drops by a batch, so an
 * idle list empties in a few scavenges and a busy one is left alone. */
static void tc_scavenge(tc_cache *tc) {
    /* LAB BEGIN: scavenge */
    tc_policy_cache *p = tc_policy(tc);
    for (unsigned word = 0; word < 2; word++)
        for (uint64_t bits = p->used_classes[word] & ~p->ran_dry[word]; bits != 0; bits &= bits - 1) {
            unsigned cls = word * 64 + (unsigned)__builtin_ctzll(bits);
            hc_free_list *list = &tc->lists[cls];
            uint32_t length = fl_length(list), batch = sc_batch(cls);
            if (length == 0)
                continue;
            tc_give_back(tc, cls, (length + 1) / 2);
            if (list->max_length > batch)
                tc_lower_limit(tc, cls, tc_step_lower(list->max_length, batch));
        }
    p->ran_dry[0] = p->ran_dry[1] = 0;
    /* LAB END: scavenge */
}

/* Gives back what each list in the class masks holds above its cap under
 * `bounds`, and lowers its limit to that cap. */
static void tc_trim_classes(tc_cache *tc, tc_list_bounds bounds, const uint64_t classes[2]) {
    for (unsigned word = 0; word < 2; word++)
        for (uint64_t bits = classes[word]; bits != 0; bits &= bits - 1) {
            unsigned cls = word * 64 + (unsigned)__builtin_ctzll(bits);
            uint32_t cap = tc_cap_within(cls, bounds), length = fl_length(&tc->lists[cls]);
            if (length > cap)
                tc_give_back(tc, cls, length - cap);
            tc_lower_limit(tc, cls, cap); /* only ever lowers; cap >= a batch > 0 */
        }
}

/* Called on every refill and overflow: counts visits, scavenges each period
 * (TC_SCAVENGE_PERIOD visits, or sooner if the layer above ends it:
 * tc_layer_period_ends). The layer above may let a list grow past this
 * stage's cap (tc_layer_list_bounds) for a phase in progress; a list that
 * did not run dry for a whole period is in no phase, so before the
 * scavenge halves it, it comes back to this stage's cap, limit and all.
 * The scavenge alone would lower such a limit a batch at a time, and the
 * limit is what the layer above charges a thread for (stage 4's budget):
 * an idle list of 100,000 objects would keep its charge for thousands of
 * scavenges. Under this stage's own bounds no list is above the cap, and
 * this changes nothing. */
static void tc_note_slow_path(tc_cache *tc) {
    tc_policy_cache *p = tc_policy(tc);
    if (tc_layer_period_ends(tc, ++p->slow_calls >= TC_SCAVENGE_PERIOD)) {
        p->slow_calls = 0;
        const uint64_t idle[2] = {p->used_classes[0] & ~p->ran_dry[0], p->used_classes[1] & ~p->ran_dry[1]};
        tc_trim_classes(tc, TC_STAGE2_LIST_BOUNDS, idle);
        tc_scavenge(tc);
    }
}

/* ---- Refill, overflow, flush ----------------------------------------------- */

void *tc_refill(tc_cache *tc, unsigned cls) {
    HC_TRACE(HC_TRACE_TC_REFILL, cls);
    void *first, *last;
    if (tc == &tc_sentinel) { /* uncached: one object straight from the central cache */
        uint32_t got = cc_fetch(cls, 1, &first, &last);
        if (got > 1) /* a cache line's worth: the others go back */
            cc_return(cls, fl_next(first), last, got - 1);
        return got ? first : NULL;
    }
    /* LAB BEGIN: refill_from_central */
    hc_free_list *list = &tc->lists[cls];
    uint32_t trip = tc_trip(cls);
    uint32_t want = list->max_length < trip ? list->max_length : trip;
    if (want == 0)
        want = 1; /* a class's first malloc: its limit grows from 0 below */
    uint32_t got = cc_fetch(cls, want, &first, &last);
    if (got == 0)
        return NULL; /* errno = ENOMEM from the OS layer */
    tc_grow_limit(tc, cls);
    tc_class_set(tc_policy(tc)->ran_dry, cls);
    /* Never-used memory comes in whole cache lines (cc_fresh_count), up to
     * a line's worth more than a list in slow start asked for: the limit
     * grows to hold them all, the one returned included once it is freed
     * (as it does for a batch it asked for), and if the layer above
     * refuses, the surplus goes back (it may then share a line with another
     * thread's objects). */
    if (got > list->max_length)
        tc_raise_limit(tc, cls, got);
    if (got - 1 > list->max_length) {
        void *keep_last = first;
        for (uint32_t i = 0; i < list->max_length; i++)
            keep_last = fl_next(keep_last);
        cc_return(cls, fl_next(keep_last), last, got - 1 - list->max_length);
        fl_set_next(keep_last, NULL);
        last = keep_last;
        got = list->max_length + 1;
    }
    if (got > 1) /* got - 1 <= the limit: they fit in the empty list */
        fl_push_range(list, fl_next(first), last, got - 1);
    tc_note_slow_path(tc);
    return first;
    /* LAB END: refill_from_central */
}

void tc_overflow(tc_cache *tc, unsigned cls, void *obj) {
    HC_TRACE(HC_TRACE_TC_OVERFLOW, cls);
    if (tc == &tc_sentinel) {
        tc_free_without_cache(obj, cls);
        return;
    }
    /* LAB BEGIN: overflow_to_central */
    hc_free_list *list = &tc->lists[cls];
    uint32_t batch = sc_batch(cls);
    fl_push(list, obj);
    /* Below a trip (one batch in this stage) the limit is still in slow
     * start. Above it, a list that keeps overflowing belongs to a thread
     * that frees more than it allocates: a big limit only lets it hoard, so
     * shrink it (ListTooLong). At a trip or above, a whole trip goes back. */
    uint32_t limit = list->max_length;
    uint32_t trip = tc_trip(cls);
    if (limit < trip) {
        tc_grow_limit(tc, cls);
        limit = list->max_length;
    } else if (limit > trip && ++tc_policy(tc)->overages[cls] > TC_MAX_OVERAGES) {
        limit = tc_step_lower(limit, trip); /* a trip lower: as fast as a trip goes back */
    }
    uint32_t length = fl_length(list);
    uint32_t excess = length > limit ? length - limit : 0;
    uint32_t at_least = limit >= trip ? trip : batch; /* what one overflow gives back */
    tc_give_back(tc, cls, excess > at_least ? excess : at_least);
    tc_lower_limit(tc, cls, limit); /* after the objects went: nothing is ever above a limit */
    tc_note_slow_path(tc);
    /* LAB END: overflow_to_central */
}

void tc_free_without_cache(void *obj, unsigned cls) {
    fl_set_next(obj, NULL);
    cc_return(cls, obj, obj, 1);
}

void tc_flush(tc_cache *tc) {
    tc_policy_cache *p = tc_policy(tc);
    for (unsigned word = 0; word < 2; word++)
        for (uint64_t bits = p->used_classes[word]; bits != 0; bits &= bits - 1) {
            unsigned cls = word * 64 + (unsigned)__builtin_ctzll(bits);
            tc_give_back(tc, cls, fl_length(&tc->lists[cls]));
            tc_lower_limit(tc, cls, 0);
        }
}

void tc_trim(tc_cache *tc, tc_list_bounds bounds) { tc_trim_classes(tc, bounds, tc_policy(tc)->used_classes); }

void tc_flush_current(void) {
    tc_cache *tc = tc_current;
    if (tc == &tc_sentinel)
        return; /* no cache: nothing to give back, and the sentinel is shared */
    tc_flush(tc);
}

/* ---- Stats ------------------------------------------------------------------- */

void tc_collect_stats(hc_stats *out) {
    size_t cached = 0;
    hc_lock_acquire(&tc_registry_lock);
    for (tc_cache *tc = tc_registry; tc != NULL; tc = tc->next_cache) {
        /* Other threads' lengths are read without their owners' help: a
         * snapshot that may be a batch out of date, never a torn value. */
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
            cached += (size_t)fl_length(&tc->lists[cls]) * sc_size(cls);
    }
    hc_lock_unlock(&tc_registry_lock);
    cc_collect_stats(out);
    out->thread_cache_bytes += cached;
    out->bytes_in_use = out->bytes_in_use > cached ? out->bytes_in_use - cached : 0;
}
