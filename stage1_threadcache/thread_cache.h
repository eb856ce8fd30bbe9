/* stage1_threadcache/thread_cache.h — layer 1: the per-thread cache.
 *
 * Each thread owns one tc_cache: an array of free lists, one per size class,
 * reached through a single initial-exec TLS pointer. Allocation pops from the
 * list of the request's class, free pushes onto it: no lock, no atomic, no
 * write to memory another thread writes. Everything else (an empty list, a
 * thread with no cache yet, a list over its limit) leaves the fast path for
 * tc_refill / tc_overflow, which each stage implements its own way.
 *
 * This header is shared unchanged by every stage: later stages change only
 * what happens behind the slow-path functions (their thread_cache.c). */
#ifndef HC_THREAD_CACHE_H_
#define HC_THREAD_CACHE_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/fatal.h"
#include "common/free_list.h"
#include "common/hcmalloc.h"
#include "common/size_class.h"
#include "common/trace.h"

/* What every layer reads: the lists, and the registry link stats follow.
 * Each stage's thread_cache.c allocates a larger record that starts with
 * this one and holds that stage's own fields (stage 1's chunk, stage 2's
 * list-policy figures, stage 4's budget), so the fast path never changes. */
typedef struct tc_cache {
    hc_free_list lists[HC_NUM_CLASSES]; /* lists[cls]: free objects of class cls */
    struct tc_cache *next_cache;        /* every live cache, for hc_get_stats */
} HC_CACHE_ALIGNED tc_cache; /* whole cache lines: neighbouring records in the pool
                              * belong to different threads, and must not share one */

/* The calling thread's words: one initial-exec TLS record.
 * `cache` is the thread's cache. Never NULL: a thread starts out pointing at
 * tc_sentinel, a cache whose every list is empty (so malloc misses) and full
 * (room 0, so free overflows). Both misses lead to the slow path,
 * which gives the thread a real cache; the fast path needs no NULL check.
 * `layer_word` is a hook: no layer here reads it. It is a later layer's, for
 * a fast path of its own (stage 3's block_hooks.h hands it to that layer):
 * in one record with the cache pointer, a fast path that reads both loads
 * one TLS offset, not two (docs/profiling.md, section 6). */
typedef struct tc_thread_words {
    tc_cache *cache;
    intptr_t layer_word;
} tc_thread_words;
extern HC_THREAD_LOCAL tc_thread_words tc_self;
extern tc_cache tc_sentinel;

/* Every layer names the thread's cache so; it is the record's first word,
 * so the fast path's code is what a lone TLS pointer gives. */
#define tc_current (tc_self.cache)

/* ---- Fast path ------------------------------------------------------------
 * A hit costs: one TLS load, one table load for the list's offset, one load
 * and one store of the list head, the link's load (malloc) or store (free),
 * the room counter (stage 3's malloc adds a store clearing free's tag in
 * the block's second word: free_list.h, FL_POP_CLEARS_TAG) (`objdump -d` of an opt build's
 * hc_malloc shows them). */

/* tc_list_offset[size]: where in a tc_cache the list for a request of
 * 0..HC_TABLE_MAX_SIZE bytes lies, in bytes. sc_table gives the class, but
 * then the fast path must shift the size, and multiply the class by
 * sizeof(hc_free_list) and add; one entry per size, holding the byte
 * offset, saves all three (8 KiB of table instead of 512 bytes, of which a
 * program touches the lines of the sizes it uses). Size 0 has an entry too,
 * lists[0], which no class uses: always empty and always full, so malloc(0)
 * and free_sized(p, 0) miss into the slow path, and the fast path's range
 * check is one compare of the size itself (no `size - 1`). Built by the
 * compiler from SC_CLASS_OF (thread_cache_test checks it against sc_index). */
#define TC_LIST_OFFSET(s) \
    (uint16_t)(offsetof(tc_cache, lists) + ((s) == 0 ? 0 : SC_CLASS_OF(s)) * sizeof(hc_free_list))
#define TC_LIST_OFFSET_8(i)                                                           \
    TC_LIST_OFFSET(i), TC_LIST_OFFSET(i + 1), TC_LIST_OFFSET(i + 2), TC_LIST_OFFSET(i + 3), \
    TC_LIST_OFFSET(i + 4), TC_LIST_OFFSET(i + 5), TC_LIST_OFFSET(i + 6), TC_LIST_OFFSET(i + 7)
#define TC_LIST_OFFSET_64(i)                                                                  \
    TC_LIST_OFFSET_8(i), TC_LIST_OFFSET_8(i + 8), TC_LIST_OFFSET_8(i + 16), TC_LIST_OFFSET_8(i + 24), \
    TC_LIST_OFFSET_8(i + 32), TC_LIST_OFFSET_8(i + 40), TC_LIST_OFFSET_8(i + 48), TC_LIST_OFFSET_8(i + 56)
#define TC_LIST_OFFSET_256(i) \
    TC_LIST_OFFSET_64(i), TC_LIST_OFFSET_64(i + 64), \
    TC_LIST_OFFSET_64(i + 128), TC_LIST_OFFSET_64(i + 192)
#define TC_LIST_OFFSET_1K(i) \
    TC_LIST_OFFSET_256(i), TC_LIST_OFFSET_256(i + 256), \
    TC_LIST_OFFSET_256(i + 512), TC_LIST_OFFSET_256(i + 768)
/* Entries for 0..4096 (the hardened build's table stops at 4095: size_class.h). */
#if HC_TABLE_MAX_SIZE > 4096
#error "tc_list_offset needs an entry for every size the table covers"
#endif
static const uint16_t tc_list_offset[4096 + 1] HC_UNUSED = {
    TC_LIST_OFFSET_1K(0), TC_LIST_OFFSET_1K(1024), TC_LIST_OFFSET_1K(2048), TC_LIST_OFFSET_1K(3072),
    TC_LIST_OFFSET(4096),
};

/* The list that serves requests of `size` bytes, 0..HC_TABLE_MAX_SIZE
 * (lists[0] for 0: a miss). */
HC_INLINE hc_free_list *tc_list_small(tc_cache *tc, size_t size) {
    return (hc_free_list *)((char *)tc + tc_list_offset[size]);
}

HC_INLINE void *tc_list_try_alloc(hc_free_list *list) {
    /* common/trace.h; the class is the list's index in this thread's cache */
    HC_TRACE_HIT(HC_TRACE_TC_ALLOC_HIT, (unsigned)(list - tc_current->lists), !fl_empty(list));
    /* LAB BEGIN: fast_path_pop */
    return fl_pop(list);
    /* LAB END: fast_path_pop */
}

/* Returns 0 (and does nothing) when the list is at its limit. */
HC_INLINE int tc_list_try_free(hc_free_list *list, void *obj) {
    HC_TRACE_HIT(HC_TRACE_TC_FREE_HIT, (unsigned)(list - tc_current->lists), !fl_full(list));
    /* LAB BEGIN: fast_path_push */
    if (HC_UNLIKELY(fl_full(list)))
        return 0;
    fl_push(list, obj);
    return 1;
    /* LAB END: fast_path_push */
}

/* By class (slow paths, and hc_free, which finds the class in the page map). */
HC_INLINE void *tc_try_alloc(tc_cache *tc, unsigned cls) { return tc_list_try_alloc(&tc->lists[cls]); }
HC_INLINE int tc_try_free(tc_cache *tc, unsigned cls, void *obj) {
    return tc_list_try_free(&tc->lists[cls], obj);
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

/* ---- The small free's slow path, for every stage's malloc.c ----------------
 * A small block of class `cls`, already checked and noted by the caller,
 * that the fast path did not push: the thread has no cache yet, or the
 * list is at its limit. Written once here for the two malloc.c files, stage
 * 1's and stage 3's (stages 2 and 4 compile those by label). Not inline: each file that
 * calls it gets one copy, off the fast path. */
static HC_NOINLINE HC_UNUSED void tc_free_small_slow(void *obj, unsigned cls) {
    int saved_errno = errno; /* free never changes errno; creating a cache may */
    tc_cache *tc = tc_get_or_create();
    /* The fast path cannot afford this compare; here it is free. Pushed
     * again, the list's head would link to itself. */
    if (HC_UNLIKELY(tc != NULL && tc->lists[cls].head == obj))
        hc_fatal_pointer_why("free(): double free detected of", obj,
                             "it is the last block this thread freed");
    if (tc == NULL)
        tc_free_without_cache(obj, cls);
    else if (!tc_try_free(tc, cls, obj))
        tc_overflow(tc, cls, obj);
    errno = saved_errno;
}

#endif /* HC_THREAD_CACHE_H_ */
