/* stage4_reclaim/page_cache.c — layer 3, now returning free pages to the OS.
 *
 * What changed from stage 3 (diff this file against
 * stage3_pagecache/page_cache.c):
 *   - pages of a free span may be given back to the OS with
 *     madvise(MADV_DONTNEED): the address range stays ours, and the next
 *     touch faults in a zero page. span->backed_pages bounds how many of a
 *     free span's pages may still be resident; the rest are released
 *     (totals.released_pages sums page_count - backed_pages);
 *   - on each free list spans with backed pages come first, fully released
 *     ones last, so a request reuses resident pages before it faults in
 *     released ones, and a list's head says whether it has anything to
 *     release;
 *   - release policy (HCMALLOC_RELEASE_RATE = R, 0 = never): every page
 *     freed into the page cache earns R credits; each time the credit
 *     reaches PC_RELEASE_CREDIT (1024), the free span with the most backed
 *     pages goes back to the OS -- but only while more than a reserve of
 *     32 MiB / R of free pages is still backed. R = 1 releases one span per
 *     8 MiB freed beyond a 32 MiB reserve, R = 1024 one per page freed
 *     beyond 32 KiB (in effect everything, at once). The reserve is what
 *     keeps a program that frees and reallocates big blocks in a loop from
 *     faulting every page back in each time (without it the bench's
 *     `large` workload ran 30-100x slower than stage 3's). The
 *     biggest first: the most memory per system call, and the span least
 *     likely to be asked for again soon (the size classes keep asking for
 *     short ones);
 *   - pc_release_all (hc_release_free_memory) releases every free span that
 *     has backed pages;
 *   - merging: backed_pages add up, so a span freed next to a released one
 *     merges at once, with no system call, and the merged span simply has
 *     some backed pages (which ones is not recorded: nothing needs to know,
 *     since touching a released page is always safe). Splitting: each piece
 *     gets min(its length, the whole's backed_pages), an upper bound, since
 *     the backed pages could all lie in any one piece. So backed_pages may
 *     overstate what is resident, never understate it; a release makes it
 *     exact again (0).
 * Everything here runs under pc_lock (see page_cache.h for the lock order),
 * madvise included: releasing is off every allocation path but this one.
 * May touch: span records (pool), the page map (as its only writer),
 * common/os.h for new regions, direct mappings and releases. */
#include "stage3_pagecache/page_cache.h"

#include <errno.h>
#include <string.h>

#include "common/lock.h"
#include "common/os.h"
#include "common/pool.h"
#include "common/trace.h"
#include "common/track.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/page_release.h"

/* Credits (pages freed x HCMALLOC_RELEASE_RATE) that pay for one release. */
#define PC_RELEASE_CREDIT 1024
/* Free pages kept backed at rate 1 (32 MiB); at rate R, this / R. */
#define PC_RELEASE_RESERVE_PAGES (((size_t)32 << 20) >> HC_PAGE_SHIFT)
/* Credit beyond this is dropped: a long run of frees with nothing backed
 * left to release must not turn into a burst of releases much later. */
#define PC_RELEASE_CREDIT_MAX (64 * PC_RELEASE_CREDIT)

static hc_lock pc_lock = HC_LOCK_INITIALIZER;
static hc_pool span_pool = HC_POOL_INITIALIZER(sizeof(hc_span));

/* free_lists[n]: free spans of exactly n pages (1..PC_MAX_LIST_PAGES);
 * free_lists[0]: all longer ones. Sentinel heads, set up on first use. */
static hc_span free_lists[PC_MAX_LIST_PAGES + 1];
static int free_lists_ready;

static pc_census totals; /* every field but largest_free_pages, kept current */

static size_t release_rate;    /* HCMALLOC_RELEASE_RATE, read on first use */
static size_t release_credit;  /* see the header comment */
static size_t release_calls;   /* madvise calls made, for stats */

static hc_span *list_for(size_t pages) {
    return &free_lists[pages <= PC_MAX_LIST_PAGES ? pages : 0];
}

static void lists_init_once(void) {
    if (HC_LIKELY(free_lists_ready))
        return;
    for (size_t i = 0; i <= PC_MAX_LIST_PAGES; i++)
        span_list_init(&free_lists[i]);
    release_rate = hc_get_options()->release_rate; /* getenv: no malloc */
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

/* Puts a span that has no free neighbour on its list, registered at both
 * ends: at the head if it has backed pages, at the tail if it has none. */
static void free_span_insert(hc_span *s) {
    s->state = SPAN_FREE;
    s->size_class = 0;
    pm_set(s->start_page, s);
    pm_set(span_end_page(s) - 1, s);
    hc_span *head = list_for(s->page_count);
    span_list_push(s->backed_pages > 0 ? head : head->prev, s); /* head->prev: after the last */
    totals.free_pages += s->page_count;
    totals.free_spans++;
    totals.released_pages += s->page_count - s->backed_pages;
}

static void free_span_remove(hc_span *s) {
    span_list_remove(s);
    totals.free_pages -= s->page_count;
    totals.free_spans--;
    totals.released_pages -= s->page_count - s->backed_pages;
}

/* Gives the pages of `s` (not on any list) back to the OS. If the kernel
 * refuses, they simply stay backed. */
static void span_release_pages(hc_span *s) {
    HC_TRACE(HC_TRACE_PC_RELEASE, 0);
    release_calls++;
    if (os_release(span_start(s), span_bytes(s)) == 0)
        s->backed_pages = 0;
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
 * sides. Spans in use are never merged: only SPAN_FREE neighbours qualify.
 * The caller has set s->backed_pages. */
static void free_span_merge_insert(hc_span *s) {
    hc_span *left = free_span_ending_at(s->start_page);
    if (left != NULL) {
        free_span_remove(left);
        s->start_page = left->start_page;
        s->page_count += left->page_count;
        s->backed_pages += left->backed_pages;
        span_dead(left);
    }
    hc_span *right = free_span_starting_at(span_end_page(s));
    if (right != NULL) {
        free_span_remove(right);
        s->page_count += right->page_count;
        s->backed_pages += right->backed_pages;
        span_dead(right);
    }
    HC_TRACE_N(HC_TRACE_PC_MERGE, 0, (left != NULL) + (right != NULL));
    free_span_insert(s);
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
    size_t before = at - s->start_page;
    size_t after = span_end_page(s) - (at + pages);
    hc_span *head = NULL, *tail = NULL;
    if ((before && (head = span_new(s->start_page, before)) == NULL) ||
        (after && (tail = span_new(at + pages, after)) == NULL)) {
        if (head) span_dead(head);
        free_span_insert(s);
        return NULL;
    }
    /* Which pages are backed is not known: each piece may hold them all. */
    if (head) head->backed_pages = before < s->backed_pages ? before : s->backed_pages;
    if (tail) tail->backed_pages = after < s->backed_pages ? after : s->backed_pages;
    if (head) free_span_insert(head);
    if (tail) free_span_insert(tail);
    if (head || tail) HC_TRACE(HC_TRACE_PC_SPLIT, 0);
    s->start_page = at;
    s->page_count = pages;
    return s;
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
    if (s != NULL)
        s->backed_pages = grow; /* untouched, but not released: counted as backed */
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
    /* Released pages fault back in (zeroed) as the program touches them;
     * nothing here assumes they are zero, and calloc still clears them. */
    s->backed_pages = 0;
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

/* ---- Giving pages back to the OS -------------------------------------------------- */

/* The free span with the most backed pages, or NULL if none has any. Spans
 * with backed pages lead each list, so a short list's head answers for it;
 * the long list is searched. */
static hc_span *most_backed_span(void) {
    hc_span *best = NULL;
    for (size_t n = 0; n <= PC_MAX_LIST_PAGES; n++) {
        hc_span *head = &free_lists[n];
        for (hc_span *s = head->next; s != head && s->backed_pages > 0; s = s->next) {
            if (best == NULL || s->backed_pages > best->backed_pages)
                best = s;
            if (n != 0)
                break; /* same length: the head is as good as any */
        }
    }
    return best;
}

/* Releases free span `s`, which stays free (now at its list's tail). Its
 * neighbours are in use (no two free spans touch), so nothing merges.
 * Returns the pages that were counted as backed and now are not. */
static size_t release_free_span(hc_span *s) {
    size_t backed = s->backed_pages;
    free_span_remove(s);
    span_release_pages(s);
    free_span_insert(s);
    return backed - s->backed_pages;
}

/* The rate policy, after `pages` pages were freed into the lists. */
static void release_on_free(size_t pages) {
    if (release_rate == 0)
        return;
    release_credit += pages * release_rate;
    if (release_credit > PC_RELEASE_CREDIT_MAX)
        release_credit = PC_RELEASE_CREDIT_MAX;
    size_t reserve = PC_RELEASE_RESERVE_PAGES / release_rate;
    while (release_credit >= PC_RELEASE_CREDIT &&
           totals.free_pages - totals.released_pages > reserve) {
        hc_span *s = most_backed_span();
        if (s == NULL) {
            release_credit = 0; /* nothing left to release: start saving again */
            return;
        }
        release_credit -= PC_RELEASE_CREDIT;
        release_free_span(s);
    }
}

size_t pc_release_all(void) {
    size_t released = 0;
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    for (size_t n = 0; n <= PC_MAX_LIST_PAGES; n++) {
        /* Each released span moves to the tail: stop at the first head with
         * nothing backed (then the whole list is released), or after one
         * pass (a span the kernel refused went back to the head). */
        size_t spans_on_list = 0;
        for (hc_span *s = free_lists[n].next; s != &free_lists[n]; s = s->next)
            spans_on_list++;
        for (size_t i = 0; i < spans_on_list && free_lists[n].next->backed_pages > 0; i++)
            released += release_free_span(free_lists[n].next);
    }
    release_credit = 0;
    hc_lock_release(&pc_lock);
    return released << HC_PAGE_SHIFT;
}

size_t pc_release_calls(void) {
    hc_lock_acquire(&pc_lock);
    size_t calls = release_calls;
    hc_lock_release(&pc_lock);
    return calls;
}

void pc_fork_lock(void) {
    hc_lock_acquire(&pc_lock);
    hc_lock_acquire(&span_pool.lock);
}

void pc_fork_unlock(void) {
    hc_lock_release(&span_pool.lock);
    hc_lock_release(&pc_lock);
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
    size_t pages = s->page_count;
    s->backed_pages = pages; /* the program may have touched every page */
    free_span_merge_insert(s);
    release_on_free(pages);
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
    size_t spans = 0, pages = 0, released = 0;
    for (size_t n = 0; n <= PC_MAX_LIST_PAGES; n++) {
        int seen_released = 0;
        for (hc_span *s = free_lists[n].next; s != &free_lists[n]; s = s->next) {
            if (s->state != SPAN_FREE) return "a span on a free list is not SPAN_FREE";
            if (s->backed_pages > s->page_count) return "a span has more backed pages than pages";
            if (seen_released && s->backed_pages > 0) return "a backed span follows a released one";
            seen_released |= s->backed_pages == 0;
            released += s->page_count - s->backed_pages;
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
    if (released != totals.released_pages) return "released page count does not match the lists";
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
    out->page_cache_free_bytes += (totals.free_pages - totals.released_pages) << HC_PAGE_SHIFT;
    out->released_bytes += totals.released_pages << HC_PAGE_SHIFT;
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
            .backed_pages = s->state == SPAN_FREE ? s->backed_pages : 0,
            .state = s->state,
            .size_class = s->size_class,
            .direct = s->direct,
        };
        visit(arg, &view);
        page = span_end_page(s);
    }
    hc_lock_release(&pc_lock);
}
