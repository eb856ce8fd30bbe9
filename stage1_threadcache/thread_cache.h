/* stage1_threadcache/thread_cache.h — layer 1: the per-thread cache.
 *
 * Each thread owns one tc_cache: an array of free lists, one per size class,
 * reached through a single initial-exec TLS pointer. Allocation pops from the
 * list of the request's class, free pushes onto it: no lock, no atomic, no
 * write to memory another thread writes. Everything else (an empty list, a
 * thread with no cache yet, a list over its limit) leaves the fast path for
 * tc_refill / tc_overflow, which each stage implements its own way.
 *
 * This header is shared unchanged by stages 1-3: stage 2 changes only what
 * happens behind the two slow-path functions (thread_cache.c). */
#ifndef HC_THREAD_CACHE_H_
#define HC_THREAD_CACHE_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/free_list.h"
#include "common/hcmalloc.h"
#include "common/size_class.h"
#include "common/trace.h"

typedef struct tc_cache {
    hc_free_list lists[HC_NUM_CLASSES]; /* lists[cls]: free objects of class cls */
    struct tc_cache *next_cache;        /* every live cache, for hc_get_stats */
    struct tc_cache *prev_cache;        /* stage 4: so an exiting thread can unlink */
    size_t carved_bytes;                /* stage 1: bytes carved for this thread so far */
    char *chunk_cursor;                 /* stage 1: unused part of the thread's chunk */
    char *chunk_end;
    size_t capacity_bytes;              /* stage 4: sum of max_length x size: what the lists may hold */
    size_t share_bytes;                 /* stage 4: this thread's part of the thread-cache budget */
} HC_CACHE_ALIGNED tc_cache; /* whole cache lines: neighbouring records in the pool
                              * belong to different threads, and must not share one */

/* The calling thread's cache. Never NULL: a thread starts out pointing at
 * tc_sentinel, a cache whose every list is empty (so malloc misses) and full
 * (max_length 0, so free overflows). Both misses lead to the slow path,
 * which gives the thread a real cache; the fast path needs no NULL check. */
extern HC_THREAD_LOCAL tc_cache *tc_current;
extern tc_cache tc_sentinel;

/* ---- Fast path ------------------------------------------------------------
 * A hit costs: one TLS load, one table load for the class, one load and one
 * store of the list head, the length update (see docs/stage1.md for the
 * instruction listing). */

HC_INLINE void *tc_try_alloc(tc_cache *tc, unsigned cls) {
    HC_TRACE_HIT(HC_TRACE_TC_ALLOC_HIT, cls, !fl_empty(&tc->lists[cls])); /* common/trace.h */
    /* LAB BEGIN: fast_path_pop */
    return fl_pop(&tc->lists[cls]);
    /* LAB END: fast_path_pop */
}

/* Returns 0 (and does nothing) when the list is at its limit. */
HC_INLINE int tc_try_free(tc_cache *tc, unsigned cls, void *obj) {
    HC_TRACE_HIT(HC_TRACE_TC_FREE_HIT, cls, tc->lists[cls].length < tc->lists[cls].max_length);
    /* LAB BEGIN: fast_path_push */
    hc_free_list *list = &tc->lists[cls];
    if (HC_UNLIKELY(list->length >= list->max_length))
        return 0;
    fl_push(list, obj);
    return 1;
    /* LAB END: fast_path_push */
}

/* ---- Slow path (thread_cache.c of each stage) ----------------------------- */

/* The calling thread's cache, created on first use (when tc_current is still
 * the sentinel); NULL if the OS refused memory for it. */
tc_cache *tc_get_or_create(void);

/* lists[cls] is empty: fills it and returns one object, or NULL (ENOMEM). */
void *tc_refill(tc_cache *tc, unsigned cls);

/* lists[cls] is at its limit: frees `obj` and trims the list. */
void tc_overflow(tc_cache *tc, unsigned cls, void *obj);

/* Frees `obj` of class `cls` for a thread that has no cache and cannot get
 * one (the OS refused the memory for it). */
void tc_free_without_cache(void *obj, unsigned cls);

/* Gives the calling thread's cached objects to the shared tiers, if any. */
void tc_flush_current(void);

/* Adds this layer's (and the layers below's) figures to *out. */
void tc_collect_stats(hc_stats *out);

#endif /* HC_THREAD_CACHE_H_ */
