/* stage3_pagecache/page_cache_resize.c — layer 3: where a large block is
 * placed (pc_large_block_start), and a large block resized in place, for
 * realloc (page_cache.h: pc_grow_span_in_place, pc_shrink_span_in_place),
 * or, mapped directly, grown by the kernel (pc_grow_direct_span).
 * A block grows into the free span right after it, or, at the heap's edge,
 * into pages mapped right after it; it shrinks by giving its tail back,
 * which merges. Under pc_lock, with the policy's hooks, like every
 * page-cache call.
 * May touch: what page_cache.c shares through page_cache_internal.h, the
 * page map, common/os.h (a direct mapping's tail and moves), the policy hooks. */
#include "common/os.h"
#include "common/trace.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/page_cache_internal.h"
#include "stage3_pagecache/page_policy.h"

/* Where in free span `s` a large block of `pages` pages goes: at its end
 * when that end is the heap's edge (nothing mapped after it) and its start
 * touches a block, else at its start. Blocks then gather at the edges and
 * the free pages stay one span between them: with two large blocks live,
 * the one freed merges with all the free pages, where a block cut from the
 * front of what the other left lands in the middle and splits the heap in
 * two, neither of which may hold the next block. */
uintptr_t pc_large_block_start(const hc_span *s, size_t pages) {
    uintptr_t end = span_end_page(s);
    if (pages > (HC_MAX_SMALL_SIZE >> HC_PAGE_SHIFT) && s->page_count > pages && pm_lookup(end) == NULL &&
        s->start_page > 0 && pm_lookup(s->start_page - 1) != NULL)
        return end - pages;
    return s->start_page;
}

int pc_grow_span_in_place(hc_span *s, size_t pages) {
    if (s->direct || pages > PC_MAX_PAGES)
        return -1;
    size_t extra = pages - s->page_count;
    int grown = 0;
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    pc_policy_before_call();
    hc_span *next = free_span_starting_at(span_end_page(s));
    size_t free_after = next != NULL ? next->page_count : 0;
    uintptr_t after_free = span_end_page(s) + free_after;
    /* At the heap's edge (no span of ours after it), what is lacking is
     * mapped there and merges: a block that grows by realloc and was put at
     * the edge (large_block_start) keeps growing in place, as at the front. */
    if (free_after < extra && pm_lookup(after_free) == NULL && heap_map_at(after_free, extra - free_after) == 0)
        next = free_span_starting_at(span_end_page(s));
    if (next != NULL && next->page_count >= extra) {
        free_span_remove(next);
        /* The front of the free neighbour, cut off; the rest stays free. */
        hc_span *front = free_span_carve(next, next->start_page, extra);
        if (front != NULL) {
            span_dead(front); /* its pages join s: s's entries replace it below */
            s->page_count = pages;
            pc_totals.large_pages += extra;
            pm_set_range(span_end_page(s) - extra, extra, s);
            grown = 1;
        }
    }
    pc_policy_after_call();
    hc_lock_unlock(&pc_lock);
    return grown ? 0 : -1;
}

/* A direct mapping is its own mmap: nothing of the heap lies after it to
 * grow into, and copying it to a bigger one reads and writes every byte
 * and holds both at once. The kernel can do better (mremap): grow it where
 * it lies if the addresses after it are unused, else carry its pages over
 * to a new place in its page tables, without copying a byte. The new place
 * is mapped and its page-map nodes made first, so the move is the last
 * step that can fail; the old entries are cleared before it, since the
 * kernel may give the old range to another caller at once. */
int pc_grow_direct_span(hc_span *s, size_t pages) {
    if (!s->direct || pages <= s->page_count || pages > PC_MAX_PAGES)
        return -1;
    size_t old_pages = s->page_count, extra = pages - old_pages;
    char *old = span_start(s);
    size_t old_bytes = old_pages << HC_PAGE_SHIFT, bytes = pages << HC_PAGE_SHIFT;
    int grown = -1;
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_policy_before_call();
    if (!pc_policy_may_grow(extra, 0)) {
        hc_lock_unlock(&pc_lock);
        return -1;
    }
    if (pm_ensure(span_end_page(s), extra) == 0 && os_grow_in_place(old, old_bytes, bytes) == 0) {
        pm_set_range(span_end_page(s), extra, s);
        grown = 0;
    } else {
        char *place = os_map_aligned(bytes, HC_PAGE_SIZE);
        if (place != NULL && pm_ensure(span_page_of(place), pages) == 0) {
            pm_set_range(s->start_page, old_pages, NULL);
            if (os_move_mapping(old, old_bytes, place, bytes) == 0) {
                s->start_page = span_page_of(place);
                pm_set_range(s->start_page, pages, s);
                grown = 0;
            } else {
                pm_set_range(s->start_page, old_pages, s);
            }
        }
        if (grown != 0 && place != NULL)
            os_unmap(place, bytes);
    }
    if (grown == 0) {
        s->page_count = pages;
        pc_totals.direct_pages += extra;
    }
    hc_lock_unlock(&pc_lock);
    return grown;
}

int pc_shrink_span_in_place(hc_span *s, size_t pages) {
    size_t cut = s->page_count - pages;
    uintptr_t tail_page = s->start_page + pages;
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    pc_policy_before_call();
    if (s->direct) {
        /* Unregistered before unmapped, as in pc_free_span. */
        pm_set_range(tail_page, cut, NULL);
        s->page_count = pages;
        pc_totals.direct_pages -= cut;
        hc_lock_unlock(&pc_lock);
        os_unmap((char *)(tail_page << HC_PAGE_SHIFT), cut << HC_PAGE_SHIFT);
        return 0;
    }
    hc_span *tail = span_new(tail_page, cut);
    if (tail == NULL) {
        hc_lock_unlock(&pc_lock);
        return -1;
    }
    s->page_count = pages;
    pc_totals.large_pages -= cut;
    tail->backed_pages = tail->dirty_pages = cut; /* the program may have touched them */
    /* The tail's inner page-map entries still name s, which no longer covers
     * them: readers treat them as stale (page_cache.h). */
    free_span_merge_insert(tail);
    pc_policy_after_call();
    hc_lock_unlock(&pc_lock);
    return 0;
}
