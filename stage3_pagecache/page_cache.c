/* stage3_pagecache/page_cache.c — layer 3: free spans by length, split and merge.
 *
 * Everything here runs under pc_lock (see page_cache.h for the lock order).
 * A release policy (page_policy.h) is called, under the lock, at the start
 * of every page-cache call and at the end of each that changed the free
 * spans (a call that fails, or maps or unmaps a directly mapped block,
 * returns without the second call). Stage 3's does nothing; stage 4's
 * gives free pages back to the OS over time through the mechanism below
 * ("Giving pages back"), so every free span counts its backed pages here:
 *   - span->backed_pages bounds how many of a free span's pages may still be
 *     resident; the others were released (madvise MADV_DONTNEED: the range
 *     stays ours, the next touch faults in a zero page). pc_totals.released_pages
 *     sums page_count - backed_pages; in stage 3 it is always 0;
 *   - on each exact-length list spans with backed pages come first, fully
 *     released ones last, so a request reuses resident pages before it
 *     faults in released ones (long spans are in the tree by length and
 *     address: there a release changes no position);
 *   - merging adds up backed_pages: a span freed next to a released one
 *     merges at once, with no system call, and the merged span simply has
 *     some backed pages (which ones is not recorded: touching a released
 *     page is always safe). Splitting gives each piece min(its length, the
 *     whole's backed_pages), an upper bound. So backed_pages may overstate
 *     what is resident, never understate it; a release makes it exact (0).
 *   - span->dirty_pages bounds, by the same rules, how many may hold other
 *     than zeros (a new region's pages and released ones do not): a refill
 *     and calloc ask it (span.h).
 * May touch: span records (span_records.c's pools), the page map (its span
 * entries; the central cache writes the class entries), common/os.h for
 * new regions, direct mappings and releases, the policy hooks
 * (page_policy.h). */
#include "stage3_pagecache/page_cache.h"

#include <errno.h>
#include <string.h>

#include "common/lock.h"
#include "common/os.h"
#include "common/pool.h"
#include "common/trace.h"
#include "common/track.h"
#include "stage3_pagecache/page_cache_internal.h"
#include "stage3_pagecache/page_policy.h"
#include "stage3_pagecache/span_treap.h"

hc_lock pc_lock = HC_LOCK_INITIALIZER;

/* The free spans and their counts (page_cache_internal.h). */
hc_span pc_free_lists[PC_MAX_LIST_PAGES + 1];
static int free_lists_ready;
uint64_t pc_free_list_bits[PC_LIST_BIT_WORDS];
hc_span *pc_long_spans;
pc_census pc_totals;

static size_t release_calls;   /* madvise calls made, for stats */
static size_t huge_heap_bytes; /* the policy's: past this much heap, regions of huge pages */

void pc_lists_init_once(void) {
    if (HC_LIKELY(free_lists_ready))
        return;
    for (size_t i = 0; i <= PC_MAX_LIST_PAGES; i++)
        span_list_init(&pc_free_lists[i]);
    free_lists_ready = 1;
    pc_policy_init();
    huge_heap_bytes = pc_policy_huge_heap_bytes();
}

/* Span records (span_new, span_dead) come from a pool per place: span_records.c. */

/* ---- Free lists -------------------------------------------------------------- */

/* Puts a span that has no free neighbour on its list or in the tree,
 * registered at both ends; on a list at the head if it has backed pages, at
 * the tail if it has none. */
static void free_span_insert(hc_span *s) {
    s->state = SPAN_FREE;
    s->size_class = 0;
    pm_set(s->start_page, s);
    pm_set(span_end_page(s) - 1, s);
    if (pc_is_long(s->page_count)) {
        treap_insert(&pc_long_spans, s);
    } else {
        hc_span *head = &pc_free_lists[s->page_count];
        span_list_push(s->backed_pages > 0 ? head : head->prev, s); /* head->prev: after the last */
        pc_free_list_bits[s->page_count / 64] |= (uint64_t)1 << (s->page_count % 64);
    }
    pc_totals.free_pages += s->page_count;
    pc_totals.free_spans++;
    pc_totals.released_pages += s->page_count - s->backed_pages;
}

void free_span_remove(hc_span *s) {
    if (pc_is_long(s->page_count))
        treap_remove(&pc_long_spans, s);
    else {
        size_t n = s->page_count; /* read first: the removal clears the links only */
        span_list_remove(s);
        if (span_list_empty(&pc_free_lists[n]))
            pc_free_list_bits[n / 64] &= ~((uint64_t)1 << (n % 64));
    }
    pc_totals.free_pages -= s->page_count;
    pc_totals.free_spans--;
    pc_totals.released_pages -= s->page_count - s->backed_pages;
}

/* Gives the pages of `s` back to the OS. If the kernel refuses, they simply
 * stay backed. */
static void span_release_pages(hc_span *s) {
    HC_TRACE(HC_TRACE_PC_RELEASE, 0);
    release_calls++;
    if (os_release(span_start(s), span_bytes(s)) == 0)
        s->backed_pages = s->dirty_pages = 0;
}

/* Frees span `s` (not on any list), merging it with free neighbours on both
 * sides. Spans in use are never merged: only SPAN_FREE neighbours qualify.
 * The caller has set s->backed_pages. */
void free_span_merge_insert(hc_span *s) {
    /* LAB BEGIN: merge */
    hc_span *left = free_span_ending_at(s->start_page);
    if (left != NULL) {
        free_span_remove(left);
        s->start_page = left->start_page;
        s->page_count += left->page_count;
        s->backed_pages += left->backed_pages;
        s->dirty_pages += left->dirty_pages;
        span_dead(left);
    }
    hc_span *right = free_span_starting_at(span_end_page(s));
    if (right != NULL) {
        free_span_remove(right);
        s->page_count += right->page_count;
        s->backed_pages += right->backed_pages;
        s->dirty_pages += right->dirty_pages;
        span_dead(right);
    }
    HC_TRACE_N(HC_TRACE_PC_MERGE, 0, (left != NULL) + (right != NULL));
    free_span_insert(s);
    /* LAB END: merge */
}

/* The best free span for `pages` pages: the exact list, then the next longer
 * lists, then the shortest fit among the long spans (lowest address on a tie,
 * which keeps the heap compact). NULL if nothing is long enough. */
static hc_span *free_span_find(size_t pages) {
    if (!pc_is_long(pages))
        for (size_t word = pages / 64; word < PC_LIST_BIT_WORDS; word++) {
            uint64_t bits = pc_free_list_bits[word];
            if (word == pages / 64)
                bits &= ~(uint64_t)0 << (pages % 64); /* lists shorter than `pages` do not fit */
            if (bits != 0)
                return pc_free_lists[word * 64 + (size_t)__builtin_ctzll(bits)].next;
        }
    return treap_best_fit(pc_long_spans, pages);
}

/* Cuts [at, at + pages) out of free span `s` (already off its list). The
 * pieces before and after go back to the lists as free spans of their own
 * and into the page map: they cannot have free neighbours, since `s` had
 * none and the middle is about to be used. Returns `s`'s record, now
 * describing the middle, or NULL (s back on its list) if a record for a
 * piece could not be had. */
hc_span *free_span_carve(hc_span *s, uintptr_t at, size_t pages) {
    /* LAB BEGIN: split */
    size_t before = at - s->start_page;
    size_t after = span_end_page(s) - (at + pages);
    hc_span *head = NULL, *tail = NULL;
    if ((before && (head = span_new(s->start_page, before)) == NULL) ||
        (after && (tail = span_new(at + pages, after)) == NULL)) {
        if (head) span_dead(head);
        free_span_insert(s);
        return NULL;
    }
    /* Which pages are backed (or dirty) is not known: each piece may hold them all. */
    if (head) head->backed_pages = before < s->backed_pages ? before : s->backed_pages;
    if (tail) tail->backed_pages = after < s->backed_pages ? after : s->backed_pages;
    if (head) head->dirty_pages = before < s->dirty_pages ? before : s->dirty_pages;
    if (tail) tail->dirty_pages = after < s->dirty_pages ? after : s->dirty_pages;
    if (head) free_span_insert(head);
    if (tail) free_span_insert(tail);
    if (head || tail) HC_TRACE(HC_TRACE_PC_SPLIT, 0);
    s->start_page = at;
    s->page_count = pages;
    return s;
    /* LAB END: split */
}

/* ---- Growing the heap -------------------------------------------------------- */

/* The first page of the lowest region the heap grew by: where the next one
 * is tried first (heap_map_region). Only a hint: once unmapped
 * (pc_unmap_free_spans) its addresses are simply free again. A page
 * number, like a span's start, not an address: the leak check's scan reads
 * this library's data too, and an address would keep the block that
 * starts there reachable. */
static uintptr_t lowest_region_page;

/* Makes the new mapping `region` of `pages` pages a free span of the heap,
 * merged with any free neighbour; 0, or -1 (errno = ENOMEM, the mapping
 * undone) when its record or page-map leaves could not be had. */
int heap_add_region(char *region, size_t pages) {
    track_internal_end(region, pages << HC_PAGE_SHIFT); /* no block in it is handed out yet */
    uintptr_t first = span_page_of(region);
    hc_span *s = span_new(first, pages);
    if (s != NULL) {
        s->backed_pages = pages; /* untouched, but not released: counted as backed */
        s->dirty_pages = 0;      /* and all zero */
    }
    if (s == NULL || pm_ensure(first, pages) != 0) {
        if (s) span_dead(s);
        os_unmap(region, pages << HC_PAGE_SHIFT);
        errno = ENOMEM;
        return -1;
    }
    HC_TRACE(HC_TRACE_PC_GROW, 0);
    pc_totals.heap_pages += pages;
    pc_totals.regions++;
    if (lowest_region_page == 0 || first < lowest_region_page)
        lowest_region_page = first;
    free_span_merge_insert(s); /* the kernel may have put it next to another region */
    return 0;
}

/* A request of `pages` pages that no free span holds: rather than a new
 * region beside free pages that cannot serve it (and stay resident: a
 * program of large blocks freed and asked for again in other sizes then
 * holds several times its live memory), map only what the longest free
 * span lacks, right after it or right before it, and let the two merge.
 * 0 when the span now holds the request; -1 when the addresses next to it
 * are taken (or a limit refuses), and the heap grows as usual. */
static int heap_extend(size_t pages) {
    hc_span *longest = pc_free_span_longest();
    /* Worth a mapping of its own only if the span is a fair part of the
     * request (a quarter): many small gaps would each cost a system call. */
    if (longest == NULL || longest->page_count >= pages || longest->page_count * 4 < pages)
        return -1;
    size_t lack = pages - longest->page_count, bytes = lack << HC_PAGE_SHIFT;
    if (!pc_policy_may_grow(lack, 0))
        return -1;
    int saved_errno = errno; /* a refusal here is no failure of the call */
    char *start = span_start(longest);
    char *region = os_map_at(start + span_bytes(longest), bytes);
    if (region == NULL && (uintptr_t)start > bytes)
        region = os_map_at(start - bytes, bytes);
    errno = saved_errno;
    if (region == NULL)
        return -1;
    return heap_add_region(region, lack);
}

/* Room left above a region mapped away from the others (heap_map_region). */
#define HEAP_ROOM_BYTES ((uintptr_t)1 << 30)

/* A new region of `bytes`, where it merges with the heap: right below its
 * lowest region when those addresses are free. A heap of disjoint regions
 * must fit each block whole into one of them, and grows far past what is
 * live. mmap alone never merges them: it puts the region below the last
 * mapping, but os_map_aligned trims a page off
 * one end, and a thread's stack or the metadata mapped since lies between.
 * So when the place below is taken, the region goes HEAP_ROOM_BYTES lower
 * still: Linux fills the highest gap that fits first, so later mappings
 * land in the room above it, and the heap grows down from there, merging.
 * Elsewhere its start is a multiple of `align`; below the lowest region,
 * heap_grow chose `bytes` to make it one. */
static char *heap_map_region(size_t bytes, size_t align) {
    char *region = NULL;
    int saved_errno = errno; /* a taken address is no failure of the call */
    uintptr_t low = lowest_region_page << HC_PAGE_SHIFT;
    if (low > bytes)
        region = os_map_at((char *)(low - bytes), bytes);
    if (region == NULL && low > bytes + HEAP_ROOM_BYTES)
        region = os_map_at((char *)((low - HEAP_ROOM_BYTES - bytes) & ~(uintptr_t)(align - 1)), bytes);
    errno = saved_errno;
    return region != NULL ? region : os_map_aligned(bytes, align);
}

int heap_map_at(uintptr_t page, size_t pages) {
    int saved_errno = errno; /* a taken address is no failure of the caller's */
    int mapped = -1;
    if (pages <= PC_MAX_PAGES && pc_policy_may_grow(pages, 1)) {
        char *region = os_map_at((char *)(page << HC_PAGE_SHIFT), pages << HC_PAGE_SHIFT);
        mapped = region != NULL ? heap_add_region(region, pages) : -1;
    }
    errno = saved_errno;
    return mapped;
}

static int heap_grow(size_t pages) {
    size_t grow = pc_totals.heap_pages / 4;
    if (grow < PC_MIN_GROW_PAGES) grow = PC_MIN_GROW_PAGES;
    if (grow < pages) grow = pages;
    /* Huge pages (page_cache.h): a region that starts on a 2 MiB boundary has no part-page at its foot. */
    const size_t align = (pc_totals.heap_pages << HC_PAGE_SHIFT) >= huge_heap_bytes ? PC_HUGE_PAGE_BYTES : HC_PAGE_SIZE;
    const uintptr_t low = lowest_region_page << HC_PAGE_SHIFT;
    if (align > HC_PAGE_SIZE && low > (grow << HC_PAGE_SHIFT) + align)
        grow = (low - ((low - (grow << HC_PAGE_SHIFT)) & ~(uintptr_t)(align - 1))) >> HC_PAGE_SHIFT;
    if (grow > PC_MAX_PAGES) {
        errno = ENOMEM;
        return -1;
    }
    if (grow > pages && !pc_policy_may_grow(grow, 1))
        grow = pages; /* the headroom would pass a limit the request may fit under */
    if (grow == pages && !pc_policy_may_grow(grow, 0)) {
        errno = ENOMEM;
        return -1;
    }
    char *region = heap_map_region(grow << HC_PAGE_SHIFT, align);
    if (region == NULL && grow > pages) {
        /* Under an address-space limit (ulimit -v) the headroom may not fit
         * where the request itself still does. */
        grow = pages;
        region = heap_map_region(grow << HC_PAGE_SHIFT, align);
    }
    if (region == NULL)
        return -1;
    if (align > HC_PAGE_SIZE)
        os_advise_huge(region, grow << HC_PAGE_SHIFT);
    return heap_add_region(region, grow);
}

/* ---- Giving pages back to the OS: the mechanism -----------------------------------
 * Stage 3 never runs this section: its policy (page_policy.c) never asks.
 * It is here on purpose, beside the data: it walks and reorders the free
 * lists and the treap, which only the page cache touches. When and how
 * much is the policy's question: stage 4's (stage4_reclaim/page_release.c)
 * calls it (docs/design.md, "What stays in an earlier layer on purpose"). */

static size_t backed_free_pages(void) { return pc_totals.free_pages - pc_totals.released_pages; }

size_t pc_mapped_pages_locked(void) { return pc_totals.heap_pages + pc_totals.direct_pages; }

/* Releases free span `s`, which stays free (on a list, it moves to the
 * tail; in the tree its key is unchanged). Its neighbours are in use (no two
 * free spans touch), so nothing merges. Returns the pages that were counted
 * as backed and now are not (0 if the kernel refused). */
static size_t release_free_span(hc_span *s) {
    size_t backed = s->backed_pages;
    free_span_remove(s);
    span_release_pages(s);
    free_span_insert(s);
    return backed - s->backed_pages;
}

/* Releases backed spans of subtree `t`, longest first, until `want` pages. */
static size_t release_tree(hc_span *t, size_t want) {
    if (t == NULL)
        return 0;
    size_t released = release_tree(t->right, want);
    hc_span *shorter = t->left; /* read first: a release re-inserts t */
    if (released < want && t->backed_pages > 0)
        released += release_free_span(t);
    if (released < want)
        released += release_tree(shorter, want - released);
    return released;
}

/* The longest first: the most memory per system call, and the spans least
 * likely to be asked for soon. */
size_t pc_release_free_pages_locked(size_t want) {
    size_t released = release_tree(pc_long_spans, want);
    for (size_t n = PC_MAX_LIST_PAGES; n > 0 && released < want; n--) {
        /* Backed spans lead the list; each released one moves to the tail. */
        while (released < want && pc_free_lists[n].next->backed_pages > 0) {
            size_t got = release_free_span(pc_free_lists[n].next);
            if (got == 0)
                break; /* the kernel refused: it is back at the head */
            released += got;
        }
    }
    return released;
}

size_t pc_backed_free_pages_locked(void) { return backed_free_pages(); }

/* Gives free span `s` back to the OS whole (munmap) and forgets it: off its
 * list, out of the page map, out of the heap's pages. The span may cover
 * parts of several regions (merging ignores region bounds): munmap takes
 * any page range. Only a free span goes, so no live block's page-map entry
 * changes and a concurrent free's lock-free lookup never reaches it; its
 * entries are cleared before the unmap (as for a direct map), since the
 * kernel may hand the range to someone else at once. */
static void unmap_free_span(hc_span *s) {
    char *start = span_start(s);
    size_t pages = s->page_count;
    free_span_remove(s);
    pm_set_range(s->start_page, pages, NULL);
    pc_totals.heap_pages -= pages;
    pc_totals.unmapped_pages += pages;
    span_dead(s);
    os_unmap(start, pages << HC_PAGE_SHIFT);
}

size_t pc_unmap_free_spans_locked(void) {
    size_t unmapped = 0;
    while (pc_long_spans != NULL) {
        unmapped += pc_long_spans->page_count;
        unmap_free_span(pc_long_spans);
    }
    for (size_t n = 1; n <= PC_MAX_LIST_PAGES; n++)
        while (!span_list_empty(&pc_free_lists[n])) {
            unmapped += n;
            unmap_free_span(pc_free_lists[n].next);
        }
    return unmapped;
}

size_t pc_unmap_free_spans(void) {
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    size_t unmapped = pc_unmap_free_spans_locked();
    pc_policy_after_call();
    hc_lock_unlock(&pc_lock);
    return unmapped << HC_PAGE_SHIFT;
}

size_t pc_release_free_pages(size_t want) {
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    size_t released = pc_release_free_pages_locked(want);
    pc_policy_after_call();
    hc_lock_unlock(&pc_lock);
    return released << HC_PAGE_SHIFT;
}

size_t pc_release_calls(void) {
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    size_t calls = release_calls;
    hc_lock_unlock(&pc_lock);
    return calls;
}

void pc_lock_all(void) {
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_records_lock_all();
}

void pc_unlock_all(void) {
    pc_records_unlock_all();
    hc_lock_unlock(&pc_lock);
}

/* ---- Handing spans out ------------------------------------------------------- */

/* Marks `s` in use and registers every one of its pages, so that any pointer
 * into it finds it. */
static void span_hand_out(hc_span *s, unsigned size_class) {
    /* Released and never-used pages fault in zeroed as they are touched.
     * Kept for a large block: how many may not be zero (calloc asks it);
     * a small span whose pages may all be resident asks the OS for none. */
    size_t dirty = s->dirty_pages < s->page_count ? s->dirty_pages : s->page_count;
    s->backed_pages = 0;
    s->size_class = (uint8_t)size_class;
    s->free_objects = NULL;
    s->free_count = 0;
    s->objects_in_use = 0;
    s->slots_backed = 0;
    s->in_bucket_list = 0;
    if (size_class != 0) {
        size_t size = sc_size(size_class);
        s->object_size = (uint32_t)size;
        s->object_count = (uint16_t)(span_bytes(s) / size);
        /* Every page may be resident: none is worth asking the OS for. */
        if (dirty == s->page_count)
            s->slots_backed = s->object_count;
        s->size_reciprocal = (uint32_t)((((uint64_t)1 << 32) + size - 1) / size);
#if HC_DEBUG
        memset(s->debug_live, 0, sizeof s->debug_live);
#endif
        s->state = SPAN_SMALL;
        pc_totals.small_pages += s->page_count;
    } else {
        s->object_count = 0;
        s->dirty_pages = dirty;
        s->state = SPAN_LARGE;
        if (s->direct) {
            pc_totals.direct_pages += s->page_count;
            pc_totals.direct_spans++;
        } else {
            pc_totals.large_pages += s->page_count;
        }
    }
    pm_set_range(s->start_page, s->page_count, s);
}

/* A very large block straight from the OS, aligned to `alignment` bytes. */
static hc_span *direct_map(size_t pages, size_t alignment) {
    if (alignment < HC_PAGE_SIZE)
        alignment = HC_PAGE_SIZE;
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    pc_policy_before_call(); /* a program of huge blocks alone has slow paths too */
    /* Asked and mapped under the lock, so that two threads cannot both
     * pass a limit that only one of them fits under. */
    char *block = pc_policy_may_grow(pages, 0) ? os_map_aligned(pages << HC_PAGE_SHIFT, alignment) : NULL;
    if (block == NULL) {
        hc_lock_unlock(&pc_lock);
        errno = ENOMEM;
        return NULL;
    }
    track_internal_end(block, pages << HC_PAGE_SHIFT); /* past the block's size: no one's */
    hc_span *s = span_new(span_page_of(block), pages);
    if (s == NULL || pm_ensure(s->start_page, pages) != 0) {
        if (s) span_dead(s);
        hc_lock_unlock(&pc_lock);
        os_unmap(block, pages << HC_PAGE_SHIFT);
        errno = ENOMEM;
        return NULL;
    }
    s->direct = 1;
    s->dirty_pages = 0; /* a new mapping: zero pages */
    span_hand_out(s, 0);
    hc_lock_unlock(&pc_lock);
    return s;
}

static int wants_direct_map(size_t pages, unsigned size_class) {
    return size_class == 0 && pages >= (PC_DIRECT_MAP_BYTES >> HC_PAGE_SHIFT);
}

hc_span *pc_alloc_span(size_t pages, unsigned size_class) {
    return pc_alloc_span_placed(pages, size_class, PC_NO_PLACE);
}

hc_span *pc_alloc_span_placed(size_t pages, unsigned size_class, unsigned place) {
    HC_TRACE(HC_TRACE_SPAN_CARVE, size_class);
    if (pages == 0 || pages > PC_MAX_PAGES) {
        errno = ENOMEM;
        return NULL;
    }
    if (wants_direct_map(pages, size_class))
        return direct_map(pages, HC_PAGE_SIZE);
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    pc_policy_before_call();
    pc_place *own = place < PC_NO_PLACE ? &pc_places[place] : NULL;
    pc_record_place = own != NULL ? place : PC_NO_PLACE; /* span_new draws from its pool meanwhile */
    hc_span *s = own != NULL ? free_span_starting_at(own->next_page) : NULL;
    if (s == NULL || s->page_count < pages)
        s = free_span_find(pages);
    if (s == NULL) {
        if (heap_extend(pages) != 0 && heap_grow(pages) != 0) {
            pc_record_place = PC_NO_PLACE;
            hc_lock_unlock(&pc_lock);
            return NULL;
        }
        s = free_span_find(pages); /* cannot fail: the longest span, or the new region, is long enough */
    }
    free_span_remove(s);
    uintptr_t at = s->start_page;
    if (size_class == 0)
        at = pc_large_block_start(s, pages);
    else if (own != NULL && at != own->next_page && s->page_count >= pages + 2 * PC_PLACEMENT_GAP)
        at += PC_PLACEMENT_GAP; /* a place of its own for a caller that has none (page_cache.h) */
    s = free_span_carve(s, at, pages);
    if (s != NULL && own != NULL) {
        s = span_record_in_place(s);
        own->next_page = span_end_page(s);
    }
    if (s != NULL)
        span_hand_out(s, size_class);
    pc_record_place = PC_NO_PLACE;
    pc_policy_after_call();
    hc_lock_unlock(&pc_lock);
    if (s == NULL)
        errno = ENOMEM;
    return s;
}

/* The first free span holding `pages` pages from a multiple of `align`
 * (lists from `pages` up, then the long ones). Linear in the free spans
 * looked at: aligned blocks above one page are rare. */
static hc_span *free_span_find_aligned(size_t pages, size_t align, uintptr_t *at) {
    for (size_t n = pages; n <= PC_MAX_LIST_PAGES; n++)
        for (hc_span *s = pc_free_lists[n].next; s != &pc_free_lists[n]; s = s->next)
            if (span_holds_aligned(s, pages, align, at))
                return s;
    return treap_find_aligned(pc_long_spans, pages, align, at);
}

hc_span *pc_alloc_span_aligned(size_t pages, size_t align_pages) {
    if (align_pages <= 1)
        return pc_alloc_span(pages, 0);
    HC_TRACE(HC_TRACE_SPAN_CARVE, 0);
    if (pages == 0 || pages > PC_MAX_PAGES || align_pages > PC_MAX_PAGES) {
        errno = ENOMEM;
        return NULL;
    }
    if (wants_direct_map(pages, 0))
        return direct_map(pages, align_pages << HC_PAGE_SHIFT);
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    pc_policy_before_call();
    uintptr_t at;
    hc_span *s = free_span_find_aligned(pages, align_pages, &at);
    if (s == NULL) {
        /* A region of pages + align - 1 pages holds an aligned run wherever it lands. */
        if (heap_grow(pages + align_pages - 1) != 0) {
            hc_lock_unlock(&pc_lock);
            return NULL;
        }
        s = free_span_find_aligned(pages, align_pages, &at);
    }
    free_span_remove(s);
    s = free_span_carve(s, at, pages);
    if (s != NULL)
        span_hand_out(s, 0);
    pc_policy_after_call();
    hc_lock_unlock(&pc_lock);
    if (s == NULL)
        errno = ENOMEM;
    return s;
}

/* ---- Taking spans back --------------------------------------------------------- */

void pc_free_span(hc_span *s) {
    HC_TRACE(HC_TRACE_SPAN_RETURN, s->size_class);
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_policy_before_call();
    if (s->state == SPAN_SMALL) {
        pc_totals.small_pages -= s->page_count;
    } else if (s->direct) {
        pc_totals.direct_pages -= s->page_count;
        pc_totals.direct_spans--;
    } else {
        pc_totals.large_pages -= s->page_count;
    }

    if (s->direct) {
        /* Unregister first: once unmapped, the kernel may give the range to
         * someone else, and a free of their pointer must not find this span. */
        char *block = span_start(s);
        size_t bytes = span_bytes(s);
        pm_set_range(s->start_page, s->page_count, NULL);
        span_dead(s);
        hc_lock_unlock(&pc_lock);
        os_unmap(block, bytes);
        return;
    }
    /* Its interior entries still point at it; now SPAN_FREE, they make a
     * second free of the block an invalid pointer rather than a corruption. */
    s->backed_pages = s->dirty_pages = s->page_count; /* the program may have touched every page */
    free_span_merge_insert(s);
    pc_policy_after_call();
    hc_lock_unlock(&pc_lock);
}

/* Resizing a large block in place (realloc): page_cache_resize.c. */

/* ---- Stats, the census, the check and the heap walk: page_cache_check.c ---------- */
