/* stage1_threadcache/thread_cache.c — layer 1's slow path.
 *
 * Stage 1 has no shared tier: a thread refills an empty list by carving a
 * batch of objects out of a chunk of memory it mapped for itself, and a freed
 * object stays on the list of the thread that freed it. That is the whole
 * allocator, and its two limits are what stage 2 exists to fix:
 *   - memory never moves between threads (a thread that only frees what
 *     another allocated hoards it), and never goes back to the OS;
 *   - lists have no limit (max_length is "infinite").
 * May touch: this thread's tc_cache, common/ (os, pool, size classes). */
#include "stage1_threadcache/thread_cache.h"

#include <errno.h>

#include "common/lock.h"
#include "common/os.h"
#include "common/pool.h"
#include "common/track.h"

/* Each thread maps its memory in chunks of this size; a refill that does not
 * fit in what is left of the chunk maps a new one (the tail is wasted: less
 * than one object of the class being refilled). */
#define TC_CHUNK_BYTES ((size_t)1 << 20)

tc_cache tc_sentinel; /* all zero: every list empty, every limit 0; never written */
HC_THREAD_LOCAL tc_thread_words tc_self = {.cache = &tc_sentinel};

/* What stage 1 keeps per thread beside the lists: the chunk it carves
 * objects from. The record starts with the tc_cache the fast path reads
 * (thread_cache.h); only this file sees the rest. */
typedef struct tc_chunk_cache {
    tc_cache base;       /* first: a tc_chunk_cache * is a tc_cache * */
    size_t carved_bytes; /* bytes carved for this thread so far (read by stats) */
    char *chunk_cursor;  /* unused part of the thread's chunk */
    char *chunk_end;
} tc_chunk_cache;

HC_INLINE tc_chunk_cache *tc_chunks(tc_cache *tc) { return (tc_chunk_cache *)tc; }

static hc_pool tc_cache_pool = HC_POOL_INITIALIZER(sizeof(tc_chunk_cache));

/* Every cache ever created, so hc_get_stats can add them up. Stage 1 never
 * frees a cache (that is stage 4's thread-exit reclamation). */
static hc_lock tc_registry_lock = HC_LOCK_INITIALIZER;
static tc_cache *tc_registry;

tc_cache *tc_get_or_create(void) {
    /* LAB BEGIN: create_cache */
    tc_cache *tc = tc_current;
    if (HC_LIKELY(tc != &tc_sentinel))
        return tc;
    tc = pool_alloc(&tc_cache_pool); /* zeroed: every list empty */
    if (tc == NULL)
        return NULL;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
        fl_set_limit(&tc->lists[cls], UINT32_MAX); /* stage 1: no limit */
    hc_lock_acquire(&tc_registry_lock);
    tc->next_cache = tc_registry;
    tc_registry = tc;
    hc_lock_unlock(&tc_registry_lock);
    tc_current = tc;
    return tc;
    /* LAB END: create_cache */
}

/* Carves up to sc_batch(cls) objects from the thread's chunk, mapping a fresh
 * chunk when not even one fits. Objects are linked in address order so that
 * consecutive mallocs return neighbouring memory. */
void *tc_refill(tc_cache *tc, unsigned cls) {
    /* LAB BEGIN: refill */
    tc_chunk_cache *chunks = tc_chunks(tc);
    size_t size = sc_size(cls);
    if ((size_t)(chunks->chunk_end - chunks->chunk_cursor) < size) {
        size_t chunk = TC_CHUNK_BYTES > size ? TC_CHUNK_BYTES : size;
        char *fresh = os_map(chunk);
        if (fresh == NULL)
            return NULL; /* errno = ENOMEM from os_map */
        track_internal_end(fresh, chunk); /* no object is carved from it yet */
        chunks->chunk_cursor = fresh;
        chunks->chunk_end = fresh + chunk;
    }
    size_t fits = (size_t)(chunks->chunk_end - chunks->chunk_cursor) / size;
    uint32_t n = sc_batch(cls);
    if (fits < n)
        n = (uint32_t)fits;

    char *first = chunks->chunk_cursor;
    chunks->chunk_cursor += n * size;
    __atomic_store_n(&chunks->carved_bytes, chunks->carved_bytes + n * size, __ATOMIC_RELAXED); /* read by stats */
    /* Hand out the first object; link the other n-1 onto the list. */
    if (n > 1) {
        char *obj = first + size;
        for (uint32_t i = 1; i + 1 < n; i++, obj += size)
            fl_set_next(obj, obj + size);
        fl_push_range(&tc->lists[cls], first + size, obj, n - 1);
    }
    return first;
    /* LAB END: refill */
}

void tc_overflow(tc_cache *tc, unsigned cls, void *obj) {
    /* Unreachable while max_length is UINT32_MAX; kept so the list can never
     * drop an object if someone gives stage 1 a limit. */
    fl_push(&tc->lists[cls], obj);
}

void tc_free_without_cache(void *obj, unsigned cls) {
    /* Stage 1 has nowhere else to put it: the object is leaked. This happens
     * only when the OS refused the 64 KiB that holds a new thread's cache. */
    (void)obj;
    (void)cls;
}

void tc_flush_current(void) {
    /* No shared tier to give objects to: they stay with this thread. */
}

void tc_collect_stats(hc_stats *out) {
    size_t carved = 0, cached = 0;
    hc_lock_acquire(&tc_registry_lock);
    for (tc_cache *tc = tc_registry; tc != NULL; tc = tc->next_cache) {
        /* Other threads' counters are read without their owners' help: a
         * snapshot that may be a batch out of date, never a torn value. */
        carved += __atomic_load_n(&tc_chunks(tc)->carved_bytes, __ATOMIC_RELAXED);
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
            cached += (size_t)fl_length(&tc->lists[cls]) * sc_size(cls);
    }
    hc_lock_unlock(&tc_registry_lock);
    out->thread_cache_bytes += cached;
    out->bytes_in_use += carved - cached;
}
