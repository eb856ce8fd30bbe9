/* stage3_pagecache/page_cache.c — layer 3: free spans by length, split and merge.
 *
 * Everything here runs under pc_lock (see page_cache.h for the lock order).
 * May touch: span records (pool), the page map (as its only writer),
 * common/os.h for new regions and direct mappings. */
#include "stage3_pagecache/page_cache.h"

#include <errno.h>
#include <string.h>

#include "common/lock.h"
#include "common/os.h"
#include "common/pool.h"
#include "common/trace.h"
#include "common/track.h"

static hc_lock pc_lock = HC_LOCK_INITIALIZER;
static hc_pool span_pool = HC_POOL_INITIALIZER(sizeof(hc_span));

/* free_lists[n]: free spans of exactly n pages (1..PC_MAX_LIST_PAGES);
 * free_lists[0]: all longer ones. Sentinel heads, set up on first use. */
static hc_span free_lists[PC_MAX_LIST_PAGES + 1];
static int free_lists_ready;

static pc_census totals; /* every field but largest_free_pages, kept current */

static hc_span *list_for(size_t pages) {
    return &free_lists[pages <= PC_MAX_LIST_PAGES ? pages : 0];
}

static void lists_init_once(void) {
    if (HC_LIKELY(free_lists_ready))
        return;
    for (size_t i = 0; i <= PC_MAX_LIST_PAGES; i++)
        span_list_init(&free_lists[i]);
    free_lists_ready = 1;
}

/* ---- Span records ------------------------------------------------------------ */

static hc_span *span_new(uintptr_t start_page, size_t pages) {
    hc_span *s = pool_alloc(&span_pool); /* zeroed */
    if (s == NULL)
        return NULL;
    s->start_page = start_page;
    s->page_count = pages;
    return s;
}

/* A record whose pages now belong to another span. Stale page-map entries
 * may still point at it: SPAN_DEAD tells every reader to ignore it. */
static void span_dead(hc_span *s) {
    s->state = SPAN_DEAD;
    pool_free(&span_pool, s);
}

/* ---- Free lists -------------------------------------------------------------- */

/* Puts a span that has no free neighbour on its list, registered at both ends. */
static void free_span_insert(hc_span *s) {
    s->state = SPAN_FREE;
    s->size_class = 0;
    pm_set(s->start_page, s);
    pm_set(span_end_page(s) - 1, s);
    span_list_push(list_for(s->page_count), s);
    totals.free_pages += s->page_count;
    totals.free_spans++;
}

static void free_span_remove(hc_span *s) {
    span_list_remove(s);
    totals.free_pages -= s->page_count;
    totals.free_spans--;
}

/* The free span that ends right before `page`, or NULL. The entry may be
 * stale (dead or reused record): the state and bounds decide. */
static hc_span *free_span_ending_at(uintptr_t page) {
    if (page == 0)
        return NULL;
    hc_span *s = pm_lookup(page - 1);
    return s != NULL && s->state == SPAN_FREE && span_end_page(s) == page ? s : NULL;
}

static hc_span *free_span_starting_at(uintptr_t page) {
    hc_span *s = pm_lookup(page);
    return s != NULL && s->state == SPAN_FREE && s->start_page == page ? s : NULL;
}

/* Frees span `s` (not on any list), merging it with free neighbours on both
 * sides. Spans in use are never merged: only SPAN_FREE neighbours qualify. */
static void free_span_merge_insert(hc_span *s) {
    /* LAB BEGIN: merge */
    hc_span *left = free_span_ending_at(s->start_page);
    if (left != NULL) {
        free_span_remove(left);
        s->start_page = left->start_page;
        s->page_count += left->page_count;
        span_dead(left);
    }
    hc_span *right = free_span_starting_at(span_end_page(s));
    if (right != NULL) {
        free_span_remove(right);
        s->page_count += right->page_count;
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
    for (size_t n = pages; n <= PC_MAX_LIST_PAGES; n++)
        if (!span_list_empty(&free_lists[n]))
            return free_lists[n].next;
    hc_span *best = NULL;
    for (hc_span *s = free_lists[0].next; s != &free_lists[0]; s = s->next)
        if (s->page_count >= pages &&
            (best == NULL || s->page_count < best->page_count ||
             (s->page_count == best->page_count && s->start_page < best->start_page)))
            best = s;
    return best;
}

/* Cuts [at, at + pages) out of free span `s` (already off its list). The
 * pieces before and after go back to the lists as free spans of their own
 * and into the page map: they cannot have free neighbours, since `s` had
 * none and the middle is about to be used. Returns `s`'s record, now
 * describing the middle, or NULL (s back on its list) if a record for a
 * piece could not be had. */
static hc_span *free_span_carve(hc_span *s, uintptr_t at, size_t pages) {
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
    if (head) free_span_insert(head);
    if (tail) free_span_insert(tail);
    if (head || tail) HC_TRACE(HC_TRACE_PC_SPLIT, 0);
    s->start_page = at;
    s->page_count = pages;
    return s;
    /* LAB END: split */
}

/* ---- Growing the heap -------------------------------------------------------- */

/* Maps a region of at least `pages` pages, adds it to the lists, and returns 0,
 * or -1 with errno = ENOMEM. */
static int heap_grow(size_t pages) {
    size_t grow = totals.heap_pages / 4;
    if (grow < PC_MIN_GROW_PAGES) grow = PC_MIN_GROW_PAGES;
    if (grow < pages) grow = pages;
    if (grow > PC_MAX_PAGES) {
        errno = ENOMEM;
        return -1;
    }
    char *region = os_map_aligned(grow << HC_PAGE_SHIFT, HC_PAGE_SIZE);
    if (region == NULL)
        return -1;
    track_internal_end(region, grow << HC_PAGE_SHIFT); /* no block in it is handed out yet */
    uintptr_t first = span_page_of(region);
    hc_span *s = span_new(first, grow);
    if (s == NULL || pm_ensure(first, grow) != 0) {
        if (s) span_dead(s);
        os_unmap(region, grow << HC_PAGE_SHIFT);
        errno = ENOMEM;
        return -1;
    }
    HC_TRACE(HC_TRACE_PC_GROW, 0);
    totals.heap_pages += grow;
    totals.regions++;
    free_span_merge_insert(s); /* the kernel may have put it next to another region */
    return 0;
}

/* ---- Handing spans out ------------------------------------------------------- */

/* Marks `s` in use and registers every one of its pages, so that any pointer
 * into it finds it. */
static void span_hand_out(hc_span *s, unsigned size_class) {
    s->size_class = (uint8_t)size_class;
    s->free_objects = NULL;
    s->free_count = 0;
    s->objects_in_use = 0;
    s->in_bucket_list = 0;
    if (size_class != 0) {
        size_t size = sc_size(size_class);
        s->object_size = (uint32_t)size;
        s->object_count = (uint32_t)(span_bytes(s) / size);
        s->size_reciprocal = (uint32_t)((((uint64_t)1 << 32) + size - 1) / size);
#if HC_DEBUG
        memset(s->debug_live, 0, sizeof s->debug_live);
#endif
        s->state = SPAN_SMALL;
        totals.small_pages += s->page_count;
    } else {
        s->object_size = s->object_count = s->size_reciprocal = 0;
        s->state = SPAN_LARGE;
        if (s->direct) {
            totals.direct_pages += s->page_count;
            totals.direct_spans++;
        } else {
            totals.large_pages += s->page_count;
        }
    }
    pm_set_range(s->start_page, s->page_count, s);
}

/* A very large block straight from the OS, aligned to `alignment` bytes. */
static hc_span *direct_map(size_t pages, size_t alignment) {
    if (alignment < HC_PAGE_SIZE)
        alignment = HC_PAGE_SIZE;
    char *block = os_map_aligned(pages << HC_PAGE_SHIFT, alignment);
    if (block == NULL)
        return NULL;
    track_internal_end(block, pages << HC_PAGE_SHIFT); /* past the block's size: no one's */
    hc_lock_acquire(&pc_lock);
    hc_span *s = span_new(span_page_of(block), pages);
    if (s == NULL || pm_ensure(s->start_page, pages) != 0) {
        if (s) span_dead(s);
        hc_lock_release(&pc_lock);
        os_unmap(block, pages << HC_PAGE_SHIFT);
        errno = ENOMEM;
        return NULL;
    }
    s->direct = 1;
    span_hand_out(s, 0);
    hc_lock_release(&pc_lock);
    return s;
}

static int wants_direct_map(size_t pages, unsigned size_class) {
    return size_class == 0 && pages >= (PC_DIRECT_MAP_BYTES >> HC_PAGE_SHIFT);
}

hc_span *pc_alloc_span(size_t pages, unsigned size_class) {
    HC_TRACE(HC_TRACE_SPAN_CARVE, size_class);
    if (pages == 0 || pages > PC_MAX_PAGES) {
        errno = ENOMEM;
        return NULL;
    }
    if (wants_direct_map(pages, size_class))
        return direct_map(pages, HC_PAGE_SIZE);
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    hc_span *s = free_span_find(pages);
    if (s == NULL) {
        if (heap_grow(pages) != 0) {
            hc_lock_release(&pc_lock);
            return NULL;
        }
        s = free_span_find(pages); /* cannot fail: the new region is long enough */
    }
    free_span_remove(s);
    s = free_span_carve(s, s->start_page, pages);
    if (s != NULL)
        span_hand_out(s, size_class);
    hc_lock_release(&pc_lock);
    if (s == NULL)
        errno = ENOMEM;
    return s;
}

/* The first free span holding `pages` pages from a multiple of `align`
 * (lists from `pages` up, then the long ones). Linear in the free spans
 * looked at: aligned blocks above one page are rare. */
static hc_span *free_span_find_aligned(size_t pages, size_t align, uintptr_t *at) {
    for (size_t n = pages <= PC_MAX_LIST_PAGES ? pages : PC_MAX_LIST_PAGES + 1;
         n <= PC_MAX_LIST_PAGES + 1; n++) {
        hc_span *head = &free_lists[n <= PC_MAX_LIST_PAGES ? n : 0];
        for (hc_span *s = head->next; s != head; s = s->next) {
            uintptr_t aligned = (s->start_page + align - 1) & ~(uintptr_t)(align - 1);
            if (aligned + pages <= span_end_page(s)) {
                *at = aligned;
                return s;
            }
        }
    }
    return NULL;
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
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    uintptr_t at;
    hc_span *s = free_span_find_aligned(pages, align_pages, &at);
    if (s == NULL) {
        /* A region of pages + align - 1 pages holds an aligned run wherever it lands. */
        if (heap_grow(pages + align_pages - 1) != 0) {
            hc_lock_release(&pc_lock);
            return NULL;
        }
        s = free_span_find_aligned(pages, align_pages, &at);
    }
    free_span_remove(s);
    s = free_span_carve(s, at, pages);
    if (s != NULL)
        span_hand_out(s, 0);
    hc_lock_release(&pc_lock);
    if (s == NULL)
        errno = ENOMEM;
    return s;
}

/* ---- Taking spans back --------------------------------------------------------- */

void pc_free_span(hc_span *s) {
    HC_TRACE(HC_TRACE_SPAN_RETURN, s->size_class);
    hc_lock_acquire(&pc_lock);
    if (s->state == SPAN_SMALL) {
        totals.small_pages -= s->page_count;
    } else if (s->direct) {
        totals.direct_pages -= s->page_count;
        totals.direct_spans--;
    } else {
        totals.large_pages -= s->page_count;
    }

    if (s->direct) {
        /* Unregister first: once unmapped, the kernel may give the range to
         * someone else, and a free of their pointer must not find this span. */
        char *block = span_start(s);
        size_t bytes = span_bytes(s);
        pm_set_range(s->start_page, s->page_count, NULL);
        span_dead(s);
        hc_lock_release(&pc_lock);
        os_unmap(block, bytes);
        return;
    }
    /* Its interior entries still point at it; now SPAN_FREE, they make a
     * second free of the block an invalid pointer rather than a corruption. */
    free_span_merge_insert(s);
    hc_lock_release(&pc_lock);
}

/* ---- Accounting and checking ------------------------------------------------------ */

static size_t largest_free_locked(void) {
    size_t largest = 0;
    for (hc_span *s = free_lists[0].next; s != &free_lists[0]; s = s->next)
        if (s->page_count > largest) largest = s->page_count;
    for (size_t n = PC_MAX_LIST_PAGES; largest == 0 && n > 0; n--)
        if (!span_list_empty(&free_lists[n])) largest = n;
    return largest;
}

void pc_get_census(pc_census *out) {
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    *out = totals;
    out->largest_free_pages = largest_free_locked();
    hc_lock_release(&pc_lock);
}

static const char *check_locked(void) {
    size_t spans = 0, pages = 0;
    for (size_t n = 0; n <= PC_MAX_LIST_PAGES; n++) {
        for (hc_span *s = free_lists[n].next; s != &free_lists[n]; s = s->next) {
            if (s->state != SPAN_FREE) return "a span on a free list is not SPAN_FREE";
            if (n != 0 && s->page_count != n) return "a span is on the list of another length";
            if (n == 0 && s->page_count <= PC_MAX_LIST_PAGES) return "a short span is on the long list";
            if (s->next->prev != s) return "a free list's links are broken";
            if (pm_lookup(s->start_page) != s) return "a free span's first page does not map to it";
            if (pm_lookup(span_end_page(s) - 1) != s) return "a free span's last page does not map to it";
            if (free_span_ending_at(s->start_page) != NULL) return "a free span has a free left neighbour";
            if (free_span_starting_at(span_end_page(s)) != NULL) return "a free span has a free right neighbour";
            spans++;
            pages += s->page_count;
        }
    }
    if (spans != totals.free_spans) return "free span count does not match the lists";
    if (pages != totals.free_pages) return "free page count does not match the lists";
    if (totals.free_pages + totals.small_pages + totals.large_pages != totals.heap_pages)
        return "free + in-use pages != heap pages";
    return NULL;
}

const char *pc_check(void) {
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    const char *broken = check_locked();
    hc_lock_release(&pc_lock);
    return broken;
}

void pc_collect_stats(hc_stats *out) {
    hc_lock_acquire(&pc_lock);
    out->page_cache_free_bytes += totals.free_pages << HC_PAGE_SHIFT;
    out->bytes_in_use += (totals.large_pages + totals.direct_pages) << HC_PAGE_SHIFT;
    hc_lock_release(&pc_lock);
}

/* ---- Walking the heap --------------------------------------------------------------- */

/* Visits the spans in address order by walking the page map's nodes: an
 * absent mid node or leaf skips its whole range; from a span's first page
 * the walk jumps to its end, so entries inside a free span (maybe stale)
 * are never read. An entry counts only if its record starts at that page. */
void pc_visit_spans(pc_span_visitor visit, void *arg) {
    const uintptr_t mid_span = (uintptr_t)1 << (PM_MID_BITS + PM_LEAF_BITS); /* pages per mid node */
    hc_lock_acquire(&pc_lock);
    for (uintptr_t page = 0; page < PM_PAGE_ID_LIMIT;) {
        pm_mid *mid = pm_root[page >> (PM_MID_BITS + PM_LEAF_BITS)];
        if (mid == NULL) {
            page = (page | (mid_span - 1)) + 1;
            continue;
        }
        pm_leaf *leaf = mid->leaves[(page >> PM_LEAF_BITS) & (PM_MID_ENTRIES - 1)];
        if (leaf == NULL) {
            page = (page | (PM_LEAF_ENTRIES - 1)) + 1;
            continue;
        }
        hc_span *s = leaf->spans[page & (PM_LEAF_ENTRIES - 1)];
        if (s == NULL || s->state == SPAN_DEAD || s->start_page != page) {
            page++;
            continue;
        }
        pc_span_view view = {
            .start_page = s->start_page,
            .page_count = s->page_count,
            .backed_pages = s->state == SPAN_FREE ? s->page_count : 0 /* stage 3 never releases */,
            .state = s->state,
            .size_class = s->size_class,
            .direct = s->direct,
        };
        visit(arg, &view);
        page = span_end_page(s);
    }
    hc_lock_release(&pc_lock);
}
