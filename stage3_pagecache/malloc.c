/* stage3_pagecache/malloc.c — the public API of stage 3.
 *
 * What changed from stages 1-2 (diff this file against
 * stage1_threadcache/malloc.c):
 *   - large requests take whole spans from the page cache (very large ones
 *     are mapped directly, page_cache.h), not one private mapping each;
 *   - every block can be found from its address alone, through the page
 *     map: so hc_free, hc_usable_size, hc_realloc and hc_aligned_alloc work,
 *     and hc_free_sized uses the size only to skip the lookup;
 *   - a pointer that is not ours (foreign, stack, never mapped, in a span
 *     already given back), inside a large block, or anywhere in a small
 *     span but at the start of an object stops the program with
 *     "hcmalloc: free(): invalid pointer 0x...", like glibc; hc_free reads
 *     the class and the object-start test from the page map, not the span
 *     (page_map.h, pm_small_object_start);
 *   - a debug build (--config=debug, HC_DEBUG) also keeps one bit per small
 *     object handed out, and so catches a double free and a wrong size
 *     given to hc_free_sized the moment they happen (malloc_checks.h);
 *   - requests above the list table (over 4 KiB, up to the largest class)
 *     that hit the thread cache are served by a short path of their own,
 *     malloc_beyond_table, not by malloc_slow.
 * Small requests still go to the thread cache, unchanged: a hit never leaves
 * the inline fast paths below. Stage 4 compiles this file unchanged: what it
 * adds here goes through the hooks of layer_hooks.h.
 * May touch: the thread cache (tc_*), the page cache (pc_*) and page map
 * (lock-free lookups), the layer hooks (layer_hooks.h), common/. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/compiler.h"
#include "common/fatal.h"
#include "common/harden.h"
#include "common/harden_guard.h"
#include "common/hcmalloc.h"
#include "common/os.h"
#include "common/pool.h"
#include "common/track.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage3_pagecache/block_hooks.h"
#include "stage3_pagecache/layer_hooks.h"
#include "stage3_pagecache/malloc_checks.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/span.h"

/* The page map's class offset of the 16-byte class, whose blocks carry the
 * hardened build's canary (common/harden.h; the default build checks nothing). */
#define CANARY_CLASS_OFFSET (HARDEN_CANARY_CLASS * PM_CLASS_STRIDE)

/* ---- Out of memory: rescues (layer_hooks.h) ------------------------------------- */

/* Calls whose retry after hc_layer_reclaim_for_retry succeeded (hc_stats). */
static size_t oom_rescues;

static void note_rescue(const void *obj) {
    if (obj != NULL)
        __atomic_fetch_add(&oom_rescues, 1, __ATOMIC_RELAXED); /* slow path: out of memory */
}

/* ---- Large objects: whole spans from the page cache ----------------------------- */

/* Pages for a block of `size` bytes; 0 when no span could be that long. */
static size_t large_pages(size_t size) {
    if (size > (PC_MAX_PAGES << HC_PAGE_SHIFT))
        return 0;
    return (size + HC_PAGE_SIZE - 1) >> HC_PAGE_SHIFT;
}

/* A block of `size` bytes starting on a multiple of `align_pages` pages. */
static void *large_alloc(size_t size, size_t align_pages) {
    size_t pages = large_pages(size);
    if (pages == 0) {
        errno = ENOMEM;
        return NULL;
    }
    hc_span *span = align_pages > 1 ? pc_alloc_span_aligned(pages, align_pages)
                                    : pc_alloc_span(pages, 0);
    if (span == NULL && hc_layer_reclaim_for_retry()) {
        span = align_pages > 1 ? pc_alloc_span_aligned(pages, align_pages) : pc_alloc_span(pages, 0);
        note_rescue(span);
    }
    if (span == NULL)
        return NULL; /* errno = ENOMEM from the page cache */
    note_alloc(span_start(span), size, span->dirty_pages == 0); /* all zero: a checker is told */
    return span_start(span);
}

/* The large span whose block starts at `ptr`; anything else is invalid. */
static hc_span *large_span_of(void *ptr, const char *what) {
    hc_span *span = pc_span_of(ptr);
    if (span == NULL || span->state != SPAN_LARGE || span_start(span) != (char *)ptr)
        hc_fatal_pointer(what, ptr);
    return span;
}

static void large_free(hc_span *span) {
    if (BLOCK_HOOKS_WATCH && span->layer_record != NULL) /* a watched block (block_hooks.h) */
        block_hook_on_free(span_start(span), span->layer_record);
    track_free(span_start(span), span_bytes(span));
    pc_free_span(span);
}

/* ---- Slow paths -------------------------------------------------------------- */

static HC_NOINLINE void *malloc_slow(size_t size) {
    if (size == 0) {
        void *zero = harden_zero_size_alloc(); /* hardened: an address that faults */
        if (zero != NULL || HC_HARDENED)
            return zero;
        size = 1; /* a unique, freeable pointer: the smallest class */
    }
    if (harden_guards(size)) { /* hardened: a mapping of its own (common/harden_guard.h) */
        void *guarded = harden_guarded_alloc(size);
        if (guarded != NULL)
            return guarded; /* else (no mapping left) an unguarded block */
    }
    if (size > HC_MAX_SMALL_SIZE)
        return large_alloc(size, 1);
    unsigned cls = sc_index(size);
    tc_cache *tc = tc_get_or_create();
    if (tc == NULL)
        return NULL; /* errno = ENOMEM */
    hc_layer_on_malloc_slow(); /* stage 4: the fork handlers (layer_hooks.h) */
    harden_init();             /* before the first link is written */
    void *obj = tc_try_alloc(tc, cls); /* the cache may be new: try it first */
    if (obj == NULL) {
        check_empty_list(&tc->lists[cls]);
        obj = tc_refill(tc, cls);
    }
    if (obj == NULL && hc_layer_reclaim_for_retry()) {
        /* Out of memory while the allocator caches some: once more, now
         * that the caches went back (layer_hooks.h). */
        obj = tc_refill(tc, cls);
        note_rescue(obj);
    }
    if (obj != NULL) {
        fl_clear_tag(obj); /* fl_pop's or a refill's (which skips fl_pop): either build */
        note_alloc(obj, size, 0);
    }
    return obj;
}

/* hc_free found free's tag on `ptr`: it is free already (a double free), and
 * the program stops here, before the block is on two lists. Where it is
 * only changes the message: this thread's list is walked (bounded by its
 * limit, so a damaged list cannot keep it here); any other cache or shared
 * list could be changing under a walk, so it is not. */
static HC_NOINLINE __attribute__((noreturn, cold)) void free_of_free(void *ptr, size_t class_offset) {
    const hc_free_list *list = &tc_current->lists[class_offset / PM_CLASS_STRIDE];
    uint32_t steps = list->max_length;
    for (void *obj = list->head; obj != NULL && steps-- > 0; obj = fl_next(obj))
        if (obj == ptr)
            hc_fatal_pointer_why("free(): double free detected of", ptr,
                                 "it is on this thread's free list");
    hc_fatal_pointer_why("free(): double free detected of", ptr,
                         "it is already free: another thread's cache or a shared list holds it");
}

/* A small block leaves through stage 1's tc_free_small_slow (thread_cache.h).
 * hc_free's tag has vouched for its blocks; hc_free_sized's fast path
 * checks nothing, so its misses get that function's compare of the list's
 * head, and a block it pushes twice further back is caught when its list
 * is cut (free_list.h). */

/* hc_free's miss on the start of a small object, with the page map's class
 * offset (divided here, so the fast path spends no instruction on the
 * class itself): class 0 (NULL), or a full list, whose block free's tag
 * has not vouched for yet. */
static HC_NOINLINE void free_large_or_invalid(void *ptr);

static HC_NOINLINE void free_unsized_miss(void *ptr, size_t class_offset) {
    if (class_offset == 0) {
        free_large_or_invalid(ptr);
        return;
    }
    unsigned cls = (unsigned)(class_offset / PM_CLASS_STRIDE);
    note_free_unsized(ptr, cls);
    if (!fl_tag_free(ptr))
        free_of_free(ptr, class_offset);
    tc_free_small_slow(ptr, cls);
}

/* The sized fast path's miss (a full list, or no cache yet), with the
 * size: the class is looked up here, so the fast path keeps no register
 * for it. */
static HC_NOINLINE void free_sized_miss(void *ptr, size_t size) {
    tc_free_small_slow(ptr, sc_index_small(size));
}

/* What the sized fast path's table does not cover: NULL, size 0, small
 * sizes above HC_TABLE_MAX_SIZE, large blocks. */
static HC_NOINLINE void free_sized_beyond_table(void *ptr, size_t size) {
    if (ptr == NULL || harden_is_zero_size(ptr) || harden_guarded_free(ptr))
        return;
    if (size == 0)
        size = 1;
    if (size > HC_MAX_SMALL_SIZE) {
        hc_span *span = large_span_of(ptr, "free(): invalid pointer");
#if HC_DEBUG
        /* Fewer pages are right too: realloc may leave slack (hc_realloc). */
        if (large_pages(size) > span->page_count)
            hc_fatal_pointer("free_sized(): wrong size for the block at", ptr);
#endif
        large_free(span);
        return;
    }
    unsigned cls = sc_index(size);
    note_free_sized(ptr, size, cls);
    /* A hit on the thread's list, as malloc_beyond_table's: no call to
     * find the cache (the sentinel's lists are full, so a thread without
     * one takes the slow path). The block freed just before is still
     * caught: it is the list's head, and tc_free_small_slow's compare
     * stops it, as it did when every such free went there. */
    hc_free_list *list = &tc_current->lists[cls];
    if (HC_LIKELY(list->head != ptr && tc_list_try_free(list, ptr)))
        return;
    tc_free_small_slow(ptr, cls);
}

/* What hc_free's fast path does not take: NULL, a large block, or an
 * invalid pointer (not ours, inside a free span, or, on a small page, not
 * where an object starts). */
static HC_NOINLINE void free_large_or_invalid(void *ptr) {
    if (ptr == NULL || harden_is_zero_size(ptr) || harden_guarded_free(ptr))
        return;
    if (pm_class_of(ptr) != 0)
        hc_fatal_pointer("free(): invalid pointer", ptr); /* not the start of an object */
    large_free(large_span_of(ptr, "free(): invalid pointer"));
}

/* hc_malloc's requests above the table, HC_TABLE_MAX_SIZE+1 bytes and up:
 * the class is computed (a count of leading zeros and a shift), and a hit
 * on the thread's list is served here as the table's hit is in hc_malloc.
 * malloc_slow would find the same object after a call to find (or make)
 * the thread's cache and the layer hook: not needed for a hit, because
 * tc_current is never NULL and the sentinel's lists are empty, so a thread
 * without a cache misses into malloc_slow as before. Large requests, and
 * the hardened build's guarded sizes, go there too. */
static HC_NOINLINE void *malloc_beyond_table(size_t size) {
    if (HC_LIKELY(size <= HC_MAX_SMALL_SIZE && !harden_guards(size))) {
        void *obj = tc_try_alloc(tc_current, sc_index_beyond_table(size));
        if (HC_LIKELY(obj != NULL)) {
            hand_out_small(obj, size);
            return obj;
        }
    }
    return malloc_slow(size);
}

/* ---- Blocks a later layer watches (block_hooks.h; none in stage 3) ----------------- */

/* A watched block: a large span of its own, whatever its size, keeping the
 * layer's record. */
static HC_NOINLINE void *malloc_watched(size_t size) {
    void *p = large_alloc(size == 0 ? 1 : size, 1);
    if (p != NULL)
        pc_span_of(p)->layer_record = block_hook_on_alloc(p, size);
    return p;
}

/* block_hook_due sent the request here: watched, or the rest of hc_malloc. */
static HC_NOINLINE void *malloc_at_hook_point(size_t size) {
    if (block_hook_choose(size))
        return malloc_watched(size);
    if (size - 1 < HC_TABLE_MAX_SIZE) {
        void *obj = tc_list_try_alloc(tc_list_small(tc_current, size));
        if (obj != NULL) {
            hand_out_small(obj, size);
            return obj;
        }
    }
    return malloc_slow(size);
}

/* ---- Fast paths ----------------------------------------------------------------
 * hc_malloc and hc_free_sized take stage 1's fast path, rewritten here for
 * what this layer adds (the block hooks' check, the debug checks,
 * the unsized free's tag): requests of 1..4096 bytes (HC_TABLE_MAX_SIZE)
 * that hit the thread cache never leave them; larger small ones that hit
 * it leave for malloc_beyond_table, which pops the same way.
 * malloc: TLS load, compare, table load, pop. free_sized: the same, a NULL
 * check, the limit check, push.
 * hc_free, new here, pays for the page map instead of the size: two
 * dependent loads (root, then the page's words in its leaf), the exact
 * object-start test (a subtract, a multiply, a test: pm_small_object_start),
 * then the same push. It never reads the span record, whose cache line the
 * central cache writes. */

HC_EXPORT void *hc_malloc(size_t size) {
    if (HC_UNLIKELY(block_hook_due(&tc_self.layer_word, size)))
        return malloc_at_hook_point(size);
    if (HC_LIKELY(size <= HC_TABLE_MAX_SIZE)) { /* size 0: lists[0], a miss (thread_cache.h) */
        hc_free_list *list = tc_list_small(tc_current, size);
#if defined(__x86_64__)
        /* The list in rdx: then the block is popped into rax, the return
         * register, and needs no move there (one instruction a malloc). */
        __asm__("" : "+d"(list));
#endif
        void *obj = tc_list_try_alloc(list);
        if (HC_LIKELY(obj != NULL)) {
            hand_out_small(obj, size);
            return obj;
        }
        return malloc_slow(size);
    }
    return malloc_beyond_table(size);
}

HC_EXPORT void hc_free_sized(void *ptr, size_t size) {
    /* A watched block of any size is a large span: the size cannot tell. */
    if (BLOCK_HOOKS_WATCH && HC_UNLIKELY(pm_class_of(ptr) == 0)) {
        free_large_or_invalid(ptr);
        return;
    }
    /* `size - 1`, not lists[0] as malloc does: size 0 must reach
     * free_sized_beyond_table before anything reads or notes the block (the
     * hardened build's malloc(0) address has no class at all). */
    if (HC_LIKELY(size - 1 < HC_TABLE_MAX_SIZE && ptr != NULL)) {
        if (HC_UNLIKELY(size <= SC_CANARY_CLASS_MAX_REQUEST && !harden_canary_intact(ptr))) {
            harden_overflow_last(ptr); /* hardened: an 8-byte block's canary was overwritten */
            return;
        }
        note_free_sized(ptr, size, sc_index_small(size)); /* the class: debug checks only */
        if (HC_LIKELY(tc_list_try_free(tc_list_small(tc_current, size), ptr)))
            return;
        free_sized_miss(ptr, size);
        return;
    }
    free_sized_beyond_table(ptr, size);
}

/* A guarded size (the hardened build's, 4 KiB and up) must miss the table,
 * or a hit would hand out a block with no guard page. */
_Static_assert(!HC_HARDENED || HC_TABLE_MAX_SIZE < HARDEN_GUARD_MIN_SIZE,
               "guarded sizes are above the table");

/* hc_free reaches its list by the page map's class offset (page_map.h). */
_Static_assert(sizeof(hc_free_list) == PM_CLASS_STRIDE, "one list per PM_CLASS_STRIDE bytes");
_Static_assert(offsetof(tc_cache, lists) == 0, "a class offset is an offset in a tc_cache");

HC_EXPORT void hc_free(void *ptr) {
    /* LAB BEGIN: free_dispatch */
    /* Not the start of a small object (inside one, large, not ours): the
     * slow path, which stops an invalid pointer. */
    size_t class_offset;
    if (HC_LIKELY(pm_small_object_start(ptr, &class_offset))) {
        if (HC_UNLIKELY(class_offset == CANARY_CLASS_OFFSET && !harden_canary_intact(ptr))) {
            harden_overflow_last(ptr); /* hardened: an 8-byte block's canary was overwritten */
            return;
        }
        hc_free_list *list = (hc_free_list *)((char *)tc_current + class_offset);
        HC_TRACE_HIT(HC_TRACE_TC_FREE_HIT, (unsigned)(class_offset / PM_CLASS_STRIDE), !fl_full(list));
        /* The limit first: class 0 (NULL) finds lists[0], always full, and
         * leaves before its memory is read. Then free's tag
         * (common/harden.h): a block that still carries it is free
         * already. Four instructions here, one in malloc; the sized fast
         * path trusts its caller and carries no tag. */
        if (HC_LIKELY(!fl_full(list))) {
            note_free_unsized(ptr, (unsigned)(class_offset / PM_CLASS_STRIDE));
            if (HC_UNLIKELY(!fl_tag_free(ptr)))
                free_of_free(ptr, pm_class_of(ptr) * PM_CLASS_STRIDE);
            fl_push_freed(list, ptr);
            return;
        }
        /* The class read again, not kept: then the fast path adds it to
         * the cache's address straight from the page map. */
        free_unsized_miss(ptr, pm_class_of(ptr) * PM_CLASS_STRIDE);
        return;
    }
    free_large_or_invalid(ptr);
    /* LAB END: free_dispatch */
}

/* (The hardened drop-in's checked sized frees: sized_free_checks.c.) */

/* ---- The rest of the API ----------------------------------------------------------- */

HC_EXPORT void *hc_calloc(size_t count, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = hc_malloc(bytes);
    if (p == NULL)
        return NULL;
    /* Spans are reused, so even large blocks may be dirty; a large span
     * whose pages all read as zero when it was handed out (never used since
     * the OS mapped them, or released since: span.h, dirty_pages) needs no
     * clearing, nor does a hardened guarded block, the one kind outside the
     * page map (asked, not the guarded table, whose lock each such calloc
     * took once more). Not clearing is not touching: the pages stay out of
     * the process's memory until the program writes them. */
    hc_span *span;
    if ((bytes <= HC_MAX_SMALL_SIZE && !harden_guards(bytes)) ||
        ((span = pc_span_of(p)) != NULL && (bytes <= HC_MAX_SMALL_SIZE || span->dirty_pages != 0)))
        memset(p, 0, bytes);
    return p;
}

/* Bytes usable at `ptr`: its class's object size (a hardened 16-byte
 * block's less its canary), or its span's length. */
static size_t block_size(hc_span *span) {
    if (span->state != SPAN_SMALL)
        return span_bytes(span);
    return span->size_class == HARDEN_CANARY_CLASS ? SC_CANARY_CLASS_MAX_REQUEST : span->object_size;
}

/* The span of a block the program passes back; invalid pointers stop. */
static hc_span *block_span(void *ptr, const char *what) {
    hc_span *span = pc_span_of(ptr);
    if (span != NULL && span->state == SPAN_SMALL) {
        if (span_object_index(span, ptr) < 0)
            hc_fatal_pointer(what, ptr);
        return span;
    }
    return large_span_of(ptr, what);
}

HC_EXPORT size_t hc_usable_size(const void *ptr) {
    if (ptr == NULL || harden_is_zero_size(ptr))
        return 0;
    size_t guarded = harden_guarded_size(ptr);
    if (guarded != 0)
        return guarded;
    void *p = (void *)(uintptr_t)ptr;
    hc_span *span = block_span(p, "malloc_usable_size(): invalid pointer");
    if (span->state == SPAN_SMALL && harden_block_is_free(p)) /* hardened: the size of a freed block */
        hc_fatal_pointer_why("malloc_usable_size(): invalid pointer", p, "it is free");
    size_t usable = block_size(span);
    track_resize(p, usable, usable); /* the program may use all of it now */
    return usable;
}

/* A large block resized where it is: the same number of pages, the free
 * pages right after it taken (growing), or its tail given back (shrinking,
 * which so needs no second block: it works even where memory for a copy
 * could not be had). Returns whether the block now holds `size` bytes. */
static int large_resize_in_place(hc_span *span, size_t size) {
    size_t pages = large_pages(size);
    if (pages == 0)
        return 0;
    if (pages == span->page_count)
        return 1;
    /* A direct mapping keeps the slack a growth gave it (large_alloc_for_
     * growth: half again): cut, its tail would be unmapped, and since a
     * mapping cannot grow in place, the next step of a buffer grown past
     * PC_DIRECT_MAP_BYTES by small steps would copy it whole, every other
     * realloc. Only a block that gives up more than a third of its
     * mapping is cut. */
    if (span->direct && pages < span->page_count && pages * 3 >= span->page_count * 2)
        return 1;
    if (pages > span->page_count)
        return pc_grow_span_in_place(span, pages) == 0;
    return pc_shrink_span_in_place(span, pages) == 0;
}

/* A large block of `size` bytes for a block of `old` bytes that grows and
 * must move: half as many pages again as it had, if that is more than it
 * asks for. Growing by small steps then moves a block O(log size) times, not
 * once per page: amortised O(1) work per byte. A block that more than
 * doubles (a vector's growth) gets no slack. */
static void *large_alloc_for_growth(size_t size, size_t old) {
    size_t pages = large_pages(size);
    size_t with_slack = old > HC_MAX_SMALL_SIZE ? large_pages(old) + large_pages(old) / 2 : 0;
    if (pages == 0 || with_slack <= pages || with_slack > PC_MAX_PAGES)
        return hc_malloc(size);
    hc_span *span = pc_alloc_span(with_slack, 0);
    if (span == NULL)
        return hc_malloc(size); /* the slack is a bet, not a need */
    note_alloc(span_start(span), size, span->dirty_pages == 0); /* all zero: a checker is told */
    return span_start(span);
}

/* A block mapped directly that must grow: the page cache has the kernel
 * grow or move its mapping (pc_grow_direct_span), half as many pages again
 * as it had when that is more than it asks for, as a copy would get. A
 * watched block is left to the copy, which gives the layer's record its new
 * address. NULL with the block untouched when that cannot be done. */
static void *large_grow_direct(hc_span *span, size_t size, size_t old) {
    size_t pages = large_pages(size), with_slack = large_pages(old) + large_pages(old) / 2;
    if (pages == 0 || (BLOCK_HOOKS_WATCH && span->layer_record != NULL))
        return NULL;
    void *was = span_start(span);
    track_free(was, old); /* before the move, which clears what a checker knew of the old range */
    int grown = with_slack > pages && pc_grow_direct_span(span, with_slack) == 0;
    if (!grown)
        grown = pc_grow_direct_span(span, pages) == 0; /* the slack is a bet, not a need */
    if (!grown) {
        track_alloc(was, old, 1);
        return NULL;
    }
    void *now = span_start(span);
    track_internal_end(now, span_bytes(span)); /* past the block's size: no one's, as direct_map says */
    track_alloc(now, size, 1);
    return now;
}

/* realloc(p, 0) frees p and returns NULL, as glibc does. A small block stays
 * where it is when the new size needs the same class (then hc_free_sized with
 * the new size still finds the right class: so no slack for small blocks); a
 * large one is resized in place when it can be (above), and a direct
 * mapping that grows is moved by the kernel (above). Otherwise: a new
 * block, a copy, and the old one freed; if the new block cannot be had, NULL
 * with ENOMEM and the old block untouched. */
/* realloc of a guarded block of `usable` bytes (common/harden_guard.h). */
static void *realloc_guarded(void *ptr, size_t usable, size_t size) {
    void *fresh = size == 0 ? NULL : hc_malloc(size);
    if (fresh == NULL && size != 0)
        return NULL;
    if (fresh != NULL)
        memcpy(fresh, ptr, usable < size ? usable : size);
    hc_free(ptr);
    return fresh;
}

static HC_NOINLINE void *realloc_slow(void *ptr, size_t size) {
    if (harden_is_zero_size(ptr)) /* hardened malloc(0): no bytes to copy */
        return size == 0 ? NULL : hc_malloc(size);
    size_t guarded = harden_guarded_size(ptr);
    if (guarded != 0 && size != 0 && size <= guarded)
        return ptr; /* it fits: realloc to malloc_usable_size keeps a block (glibc's tst-realloc) */
    if (guarded != 0) { /* hardened: a block that grows moves, so a stale pointer faults */
        void *moved = size != 0 ? harden_guarded_move(ptr, size) : NULL; /* its pages, if it can */
        return moved != NULL ? moved : realloc_guarded(ptr, guarded, size);
    }
    hc_span *span = block_span(ptr, "realloc(): invalid pointer");
    if (size == 0) {
        hc_free(ptr);
        return NULL;
    }
    size_t old = block_size(span);
    /* A watched block is a large span whatever its size (block_hooks.h): it
     * too is resized in place, so realloc to its usable size keeps it (as
     * glibc's tst-realloc asks). The layer's record keeps the size it was
     * watched at (stage 4's profiler's sample does, as tcmalloc's does).
     * layer_record is read only for a large span: in a small span's record
     * its word is free_objects, which other threads write under the bucket
     * lock (TSan saw that read where -O1 hoisted it). */
    if (span->state == SPAN_SMALL ? size <= HC_MAX_SMALL_SIZE && sc_index(size) == span->size_class
                                  : (size > HC_MAX_SMALL_SIZE || (BLOCK_HOOKS_WATCH && span->layer_record != NULL)) &&
                                        large_resize_in_place(span, size)) {
        track_resize(ptr, block_size(span), size);
        return ptr;
    }
    void *moved = span->direct && size > old ? large_grow_direct(span, size, old) : NULL;
    if (moved != NULL)
        return moved;
    void *fresh = size > old ? large_alloc_for_growth(size, old) : hc_malloc(size);
    if (fresh == NULL)
        return NULL;
    /* The copy reads the whole slot, past what a checker knows was asked for. */
    track_internal_begin(ptr, old);
    memcpy(fresh, ptr, old < size ? old : size);
    track_internal_end(ptr, old);
    hc_free(ptr);
    return fresh;
}

/* The common realloc, a string or buffer grown by a few bytes, stays in its
 * class. That case is answered here with hc_free's own exact test, the page
 * map's words (pm_small_object_start), without reading the span record, and
 * without the slow path's frame: a program that grows many blocks in turn
 * otherwise pays two dependent cache misses per call (the span pointer,
 * then the span). */
HC_EXPORT void *hc_realloc(void *ptr, size_t size) {
    /* realloc(NULL, n) is malloc(n), tested first: Lua's allocator makes
     * every object so (docs/benchmarks.md, section 9), and then it costs
     * one branch, not the page-map read and realloc_slow's call. */
    if (ptr == NULL)
        return hc_malloc(size);
    size_t class_offset;
    if (HC_LIKELY(pm_small_object_start(ptr, &class_offset) && size - 1 < HC_MAX_SMALL_SIZE &&
                  sc_index(size) * PM_CLASS_STRIDE == class_offset)) {
#if HC_DEBUG
        block_span(ptr, "realloc(): invalid pointer");
#endif
        if (class_offset == CANARY_CLASS_OFFSET && !harden_canary_intact(ptr))
            harden_overflow(ptr); /* hardened: the block stays, its canary checked */
        track_resize(ptr, sc_size((unsigned)(class_offset / PM_CLASS_STRIDE)), size);
        return ptr;
    }
    return realloc_slow(ptr, size);
}

/* Up to a page, alignment comes from the size classes (sc_aligned_index:
 * the first class from the size's up whose size is a multiple of the
 * alignment). Beyond that, a span whose first page is aligned. */
HC_EXPORT void *hc_aligned_alloc(size_t alignment, size_t size) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    size_t want = size < alignment ? alignment : size;
    if (alignment <= HC_MIN_ALIGN)
        return hc_malloc(want);
    unsigned cls = sc_aligned_index(alignment, want);
    if (cls != 0)
        return hc_malloc(sc_size(cls));
    /* A large span (even for a small size: its block is still freed with
     * hc_free, which asks the span, not the size). */
    size_t align_pages = alignment > HC_PAGE_SIZE ? alignment >> HC_PAGE_SHIFT : 1;
    if (align_pages > PC_MAX_PAGES) {
        errno = ENOMEM;
        return NULL;
    }
    return large_alloc(want, align_pages);
}

HC_EXPORT void hc_thread_flush(void) { tc_flush_current(); }

HC_EXPORT void hc_release_free_memory(void) { hc_layer_release_free_memory(); }

HC_EXPORT void hc_get_stats(hc_stats *out) {
    memset(out, 0, sizeof *out);
    tc_collect_stats(out); /* thread caches, then the central cache below them */
    pc_collect_stats(out); /* free spans, and large blocks in use */
    out->os_mapped_bytes = os_mapped_bytes();
    out->metadata_bytes = pool_mapped_bytes(); /* span records, page-map nodes, caches */
    harden_guarded_collect_stats(out); /* the hardened build's guarded blocks */
    out->oom_rescues = __atomic_load_n(&oom_rescues, __ATOMIC_RELAXED);
    hc_layer_collect_stats(out); /* stage 4: the budget, the heap limit */
}

HC_EXPORT const char *hc_stage_name(void) { return HC_STRINGIFY(HC_STAGE_NAME); }

HC_EXPORT unsigned hc_features(void) { return HC_STAGE_FEATURES; }
