/* stage2_centralcache/thread_cache.c — layer 1's slow path, now backed by
 * the central cache (layer 2).
 *
 * What changed from stage 1 (diff this file against
 * stage1_threadcache/thread_cache.c):
 *   - an empty list is refilled with a batch fetched from the central cache,
 *     not carved from a private chunk;
 *   - each list has a limit (max_length) that starts at 1 and grows each
 *     time the list runs dry (slow start): +1 per refill up to one batch,
 *     then +1 batch per refill up to the class's cap;
 *   - a free that finds its list at the limit gives a batch back, so memory
 *     flows from threads that free to threads that allocate; a list that
 *     keeps overflowing shrinks its limit by a batch (gperftools'
 *     ListTooLong), so a thread that only frees holds about one batch;
 *   - every TC_SCAVENGE_PERIOD slow-path visits, lists that did not run dry
 *     since the last scavenge give half their objects back (the scavenge);
 *   - hc_thread_flush() gives everything back (a thread with no cache has
 *     nothing, and must not write into the shared sentinel).
 * May touch: this thread's tc_cache; the central cache through cc_*. */
#include "stage1_threadcache/thread_cache.h"

#include <errno.h>

#include "common/lock.h"
#include "common/pool.h"
#include "common/trace.h"
#include "stage2_centralcache/central_cache.h"

/* A list never holds more than this many bytes of objects (nor fewer than
 * one batch, nor more than TC_MAX_LIST_LENGTH objects): a thread may keep
 * 1 MiB of 8-byte objects, but only four 256 KiB ones. */
#define TC_LIST_CAP_BYTES  ((size_t)1 << 20)
#define TC_MAX_LIST_LENGTH 8192u

/* Overflows at a limit above one batch before the limit drops by a batch. */
#define TC_MAX_OVERAGES 3
/* Slow-path visits (refills and overflows) between two scavenges. */
#define TC_SCAVENGE_PERIOD 256

tc_cache tc_sentinel; /* all zero: every list empty, every limit 0; never written */
HC_THREAD_LOCAL tc_cache *tc_current = &tc_sentinel;

static hc_pool tc_cache_pool = HC_POOL_INITIALIZER(sizeof(tc_cache));

/* Every cache ever created, so hc_get_stats can add them up. Caches of
 * exited threads stay here with their objects until stage 4. */
static hc_lock tc_registry_lock = HC_LOCK_INITIALIZER;
static tc_cache *tc_registry;

/* The most objects class `cls`'s list may grow to. */
static uint32_t tc_list_cap(unsigned cls) {
    size_t cap = TC_LIST_CAP_BYTES / sc_size(cls);
    if (cap > TC_MAX_LIST_LENGTH) cap = TC_MAX_LIST_LENGTH;
    if (cap < sc_batch(cls)) cap = sc_batch(cls);
    return (uint32_t)cap;
}

tc_cache *tc_get_or_create(void) {
    tc_cache *tc = tc_current;
    if (HC_LIKELY(tc != &tc_sentinel))
        return tc;
    tc = pool_alloc(&tc_cache_pool); /* zeroed: every list empty */
    if (tc == NULL)
        return NULL;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
        fl_set_limit(&tc->lists[cls], 1); /* slow start: a class used once costs one object */
    hc_lock_acquire(&tc_registry_lock);
    tc->next_cache = tc_registry;
    tc_registry = tc;
    hc_lock_release(&tc_registry_lock);
    tc_current = tc;
    return tc;
}

/* Slow start: the limit grows by one per refill until it reaches a batch,
 * then by a batch per refill until the cap. */
static void tc_grow_limit(hc_free_list *list, unsigned cls) {
    /* LAB BEGIN: slow_start */
    uint32_t batch = sc_batch(cls), cap = tc_list_cap(cls);
    if (list->max_length < batch)
        fl_set_limit(list, list->max_length + 1);
    else if (list->max_length < cap)
        fl_set_limit(list, list->max_length + batch < cap ? list->max_length + batch : cap);
    /* LAB END: slow_start */
}

/* Gives up to `n` objects of lists[cls] back to the central cache. */
static void tc_release(tc_cache *tc, unsigned cls, uint32_t n) {
    void *first, *last;
    uint32_t taken = fl_pop_range(&tc->lists[cls], n, &first, &last);
    if (taken > 0)
        cc_return(cls, first, last, taken);
}

/* The scavenge: a list's low-water mark since the last scavenge is what it
 * held all along and nobody asked for. The fast path keeps no mark (that
 * would cost a compare per malloc), but the slow path sees the one that
 * matters: a list that was refilled ran dry, so its mark was 0. Every other
 * list gives half its objects back and its limit drops by a batch, so an
 * idle list empties in a few scavenges and a busy one is left alone. */
static void tc_scavenge(tc_cache *tc) {
    /* LAB BEGIN: scavenge */
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        hc_free_list *list = &tc->lists[cls];
        uint32_t length = fl_length(list), batch = sc_batch(cls);
        if (tc_class_test(tc->ran_dry, cls) || length == 0)
            continue;
        tc_release(tc, cls, (length + 1) / 2);
        if (list->max_length > batch)
            fl_set_limit(list, list->max_length - batch > batch ? list->max_length - batch : batch);
    }
    tc->ran_dry[0] = tc->ran_dry[1] = 0;
    /* LAB END: scavenge */
}

/* Called on every refill and overflow: counts visits, scavenges each period. */
static void tc_note_slow_path(tc_cache *tc) {
    if (++tc->slow_calls >= TC_SCAVENGE_PERIOD) {
        tc->slow_calls = 0;
        tc_scavenge(tc);
    }
}

void *tc_refill(tc_cache *tc, unsigned cls) {
    HC_TRACE(HC_TRACE_TC_REFILL, cls);
    /* LAB BEGIN: refill_from_central */
    hc_free_list *list = &tc->lists[cls];
    uint32_t want = list->max_length < sc_batch(cls) ? list->max_length : sc_batch(cls);
    void *first, *last;
    uint32_t got = cc_fetch(cls, want, &first, &last);
    if (got == 0)
        return NULL; /* errno = ENOMEM from the OS layer */
    tc_grow_limit(list, cls);
    tc_class_set(tc->ran_dry, cls);
    if (got > 1)
        fl_push_range(list, fl_next(first), last, got - 1);
    tc_note_slow_path(tc);
    return first;
    /* LAB END: refill_from_central */
}

void tc_overflow(tc_cache *tc, unsigned cls, void *obj) {
    HC_TRACE(HC_TRACE_TC_OVERFLOW, cls);
    /* LAB BEGIN: overflow_to_central */
    hc_free_list *list = &tc->lists[cls];
    uint32_t batch = sc_batch(cls);
    fl_push(list, obj);
    /* Below a batch the limit is still in slow start. Above it, a list that
     * keeps overflowing belongs to a thread that frees more than it
     * allocates: a big limit only lets it hoard, so shrink it (ListTooLong). */
    if (list->max_length < batch) {
        fl_set_limit(list, list->max_length + 1);
    } else if (list->max_length > batch && ++tc->overages[cls] > TC_MAX_OVERAGES) {
        fl_set_limit(list, list->max_length - batch > batch ? list->max_length - batch : batch);
        tc->overages[cls] = 0;
    }
    uint32_t length = fl_length(list);
    uint32_t excess = length > list->max_length ? length - list->max_length : 0;
    tc_release(tc, cls, excess > batch ? excess : batch);
    tc_note_slow_path(tc);
    /* LAB END: overflow_to_central */
}

void tc_free_without_cache(void *obj, unsigned cls) {
    fl_set_next(obj, NULL);
    cc_return(cls, obj, obj, 1);
}

void tc_flush_current(void) {
    tc_cache *tc = tc_current;
    if (tc == &tc_sentinel)
        return; /* no cache: nothing to give back, and the sentinel is shared */
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
        tc_release(tc, cls, fl_length(&tc->lists[cls]));
}

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
