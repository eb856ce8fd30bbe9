/* stage3_pagecache/page_cache.h — layer 3: free spans, split and merged.
 *
 * The page cache owns every page of the heap that is not in use. It keeps
 * free spans by length (one list per length 1..PC_MAX_LIST_PAGES, and a
 * balanced search tree ordered by (length, address) for everything longer,
 * so a best fit costs O(log n) however many long spans are free) and
 * answers a request for n pages with, in order of preference:
 *   1. a free span of exactly n pages;
 *   2. the shortest longer span, split: the front n pages go out (a large
 *      block's go at the heap's edge, so the free pages stay one span
 *      between blocks), the remainder becomes a free span of its own, on
 *      its list and in the page map (forgetting that is how a page cache
 *      silently stops merging);
 *   3. a new region mapped from the OS where it merges with the heap (right
 *      below its lowest region when that is free), then 2.
 * A freed span merges at once with the free spans just before and after it,
 * found through the page map, so no two free spans are ever neighbours and
 * a heap whose objects are all freed is back to one span per region.
 * Blocks of PC_DIRECT_MAP_BYTES or more skip the lists: they are mapped and
 * unmapped directly (stage 3 never returns page-cache memory to the OS, so a
 * one-off huge block would otherwise stay mapped for good), yet registered
 * in the page map like any span, so hc_free needs no size for them either.
 *
 * Page-map invariant: every page of an in-use span (SPAN_SMALL, SPAN_LARGE)
 * maps to it; the first and last page of a free span map to it (all that
 * merging needs); entries inside a free span may be stale.
 *
 * Locking: one lock for the whole page cache, taken only on span-sized work.
 * Lock order: a caller must NOT hold a central bucket lock when it calls in
 * here (the central cache drops its bucket lock first), so the two never
 * nest and cannot deadlock. Under the page cache lock we take only the
 * metadata pool's lock (span records), which takes no other lock.
 * Free pages go back to the OS only when the policy of the layer above says
 * so (page_policy.h); stage 3's never does.
 * May touch: span records, the page map (its span entries; the central cache
 * writes the class entries), common/os.h, pool.h, the policy (page_policy.h). */
#ifndef HC_PAGE_CACHE_H_
#define HC_PAGE_CACHE_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/hcmalloc.h"
#include "common/size_class.h"
#include "stage3_pagecache/page_map.h"
#include "stage3_pagecache/span.h"

/* Exact-length lists for 1..128 pages (up to 1 MiB); longer spans are in
 * the tree, searched for the best fit. Most requests (small-object spans are 1-32
 * pages) hit an exact list in O(1). */
#define PC_MAX_LIST_PAGES 128

/* The heap grows by at least this many pages (1 MiB) at a time, and by a
 * quarter of what it already has, so a growing heap maps O(log size) regions
 * instead of one per MiB (and merged spans can be long). Untouched pages cost
 * address space, not memory. */
#define PC_MIN_GROW_PAGES 128

/* Once the heap is as big as the policy says (pc_policy_huge_heap_bytes:
 * stage 3 never, stage 4 HCMALLOC_HUGE_HEAP_MB), a new region starts on a
 * huge page's boundary (PC_HUGE_PAGE_BYTES, x86-64's and 4 KiB-page
 * arm64's 2 MiB), reaches up to the region above it, and asks the OS for
 * huge pages (os_advise_huge): a first touch then costs one fault per 2 MiB
 * instead of 512, and the TLB holds 512 times the memory. The price: one
 * touched byte makes all 2 MiB of its huge page resident. */
#define PC_HUGE_PAGE_BYTES ((size_t)2 << 20)

/* Blocks this big or bigger are mapped directly (see above). */
#define PC_DIRECT_MAP_BYTES ((size_t)64 << 20)

/* Largest request in pages the page cache accepts: beyond that the address
 * space (47 bits) cannot hold it, and page counts could overflow. */
#define PC_MAX_PAGES ((size_t)1 << (PM_PAGE_ID_BITS - 1))

/* A span of exactly `pages` pages, handed out: SPAN_SMALL carved for class
 * `size_class` (its geometry set, every page registered), or SPAN_LARGE when
 * size_class is 0. NULL with errno = ENOMEM when the OS refuses memory. */
hc_span *pc_alloc_span(size_t pages, unsigned size_class);

/* pc_alloc_span for a caller that carves small spans one after another and
 * wants them together: each central-cache shard, so that one thread's
 * objects do not sit on the page next to another's (two threads whose
 * spans alternated page by page ran much slower than two processes, whose
 * pages are apart). `place` (below PC_PLACES; PC_NO_PLACE is
 * pc_alloc_span) names the caller. The page cache keeps, for each place,
 * where its last span ended: the span is cut there when a free span long
 * enough starts there; else from the best fit as usual, but
 * PC_PLACEMENT_GAP pages into it when it leaves that many free after the
 * span too, so that the next caller without a place of its own takes the
 * pages before it, not the ones that follow. And each place's spans have
 * their records from a pool of its own (span_records.c), so that two
 * places' records do not alternate line by line either. */
hc_span *pc_alloc_span_placed(size_t pages, unsigned size_class, unsigned place);
/* Places: as many as the central cache has shards, or more. */
#define PC_PLACES   8
#define PC_NO_PLACE PC_PLACES
/* 16 pages (128 KiB): room for a second caller's first spans before the
 * first caller's, and a free span that any small span fits in. */
#define PC_PLACEMENT_GAP 16
/* A SPAN_LARGE span of `pages` pages whose start is a multiple of
 * `align_pages` pages (a power of two). */
hc_span *pc_alloc_span_aligned(size_t pages, size_t align_pages);

/* Gives an in-use span back: it merges with its free neighbours, or, if it
 * was mapped directly, goes back to the OS. */
void pc_free_span(hc_span *span);

/* realloc of a large block without moving it. pc_grow_span_in_place makes
 * SPAN_LARGE span `s` `pages` pages long (more than now) by taking the front
 * of the free span right after it: 0, or -1 with nothing changed when those
 * pages are not free (or `s` is mapped directly). pc_shrink_span_in_place
 * makes it `pages` pages long (fewer than now, at least one): the tail goes
 * back to the page cache, merging, or to the OS for a direct mapping, so a
 * shrink never needs memory the copy would: 0, or -1 with nothing changed
 * if no span record could be had. The caller owns `s` (an in-use block). */
int pc_grow_span_in_place(hc_span *s, size_t pages);
int pc_shrink_span_in_place(hc_span *s, size_t pages);

/* realloc of a block mapped directly: makes `s` `pages` pages long (more
 * than now), where it lies or moved by the kernel with its contents
 * (mremap: no copy); span_start(s) is then the block's address. 0, or -1
 * with nothing changed (not direct, over a limit, no memory). */
int pc_grow_direct_span(hc_span *s, size_t pages);

/* The in-use span that covers address p, or NULL when p is in no span the
 * allocator has handed out (not ours, or inside a free span). Lock-free:
 * stale entries are filtered by checking the span really covers p. */
HC_INLINE hc_span *pc_span_of(const void *p) {
    uintptr_t page = span_page_of(p);
    hc_span *s = pm_lookup(page);
    if (HC_UNLIKELY(s == NULL || (s->state != SPAN_SMALL && s->state != SPAN_LARGE) ||
                    !span_covers(s, page)))
        return NULL;
    return s;
}

/* ---- Accounting and checking ----------------------------------------------- */

typedef struct pc_census {
    size_t heap_pages;         /* mapped for the lists (regions), excluding direct maps */
    size_t regions;            /* regions mapped so far */
    size_t free_pages;         /* in free spans */
    size_t free_spans;
    size_t largest_free_pages; /* longest free span */
    size_t small_pages;        /* in SPAN_SMALL spans */
    size_t large_pages;        /* in SPAN_LARGE spans from the heap */
    size_t direct_pages;       /* in directly mapped spans */
    size_t direct_spans;
    size_t released_pages;     /* of free_pages, given back to the OS (0 unless a policy releases) */
    size_t unmapped_pages;     /* free pages unmapped so far (pc_unmap_free_spans), no longer in heap_pages */
} pc_census;

/* A consistent snapshot of the counters (takes the lock). */
void pc_get_census(pc_census *out);

/* Walks every free list and checks the page cache's invariants: each free
 * span is SPAN_FREE, on the list for its length, registered at both ends, and
 * has no free neighbour (fully merged); the counters match the lists; free +
 * in-use pages = heap pages. Returns NULL when all hold, else what broke.
 * Expensive (every free span): for tests and debug checks. */
const char *pc_check(void);

/* Takes the page cache lock and then every span-record pool's lock, in
 * place order (the page cache takes a pool's under its own, never the
 * reverse), for a caller that must stop the whole page cache: stage 4's
 * fork handlers. */
void pc_lock_all(void);
void pc_unlock_all(void);

/* Adds the free spans to page_cache_free_bytes and the large blocks in use
 * to bytes_in_use (small spans are the central cache's to count). */
void pc_collect_stats(hc_stats *out);

/* ---- Walking the heap (for stage3_pagecache/heap_map.c) --------------------- */

/* One span as pc_visit_spans shows it: a copy taken under the page cache lock. */
typedef struct pc_span_view {
    uintptr_t start_page;
    size_t page_count;
    size_t backed_pages; /* SPAN_FREE: at most this many resident */
    unsigned state;      /* span_state */
    unsigned size_class; /* SPAN_SMALL: its class; else 0 */
    unsigned direct;     /* mapped straight from the OS */
} pc_span_view;

typedef void (*pc_span_visitor)(void *arg, const pc_span_view *span);

/* Calls visit(arg, span) for every span of the heap (regions and direct
 * maps), in address order, holding the page cache lock throughout: the
 * visitor sees one consistent moment, and must not call the allocator. It
 * walks the page map, whose first page of every span maps to that span. */
void pc_visit_spans(pc_span_visitor visit, void *arg);

#endif /* HC_PAGE_CACHE_H_ */
