/* stage3_pagecache/page_cache.c — layer 3: free spans by length, split and merge.
 *
 * Everything here runs under pc_lock (see page_cache.h for the lock order).
 * A release policy (page_policy.h) is called, under the lock, at the start
 * of every page-cache call and at the end of each that changed the free
 * spans (a call that fails, or maps or unmaps a directly mapped block,
 * returns without the second call). Stage 3's policy does nothing: its
 * free pages stay backed for good. Stage 4 links one that gives free pages
 * back to the OS over time (stage4_reclaim/page_release.c), through the
 * mechanism at the end of this file; so every free span counts its backed
 * pages here, in every stage:
 *   - span->backed_pages bounds how many of a free span's pages may still be
 *     resident; the others were released (madvise MADV_DONTNEED: the range
 *     stays ours, the next touch faults in a zero page). totals.released_pages
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
 * May touch: span records (pool), the page map (its span entries; the
 * central cache writes the class entries), common/os.h for new regions,
 * direct mappings and releases, the policy hooks (page_policy.h). */
#include "stage3_pagecache/page_cache.h"

#include <errno.h>
#include <string.h>

#include "common/lock.h"
#include "common/os.h"
#include "common/pool.h"
#include "common/trace.h"
#include "common/track.h"
#include "stage3_pagecache/page_policy.h"

static hc_lock pc_lock = HC_LOCK_INITIALIZER;
static hc_pool span_pool = HC_POOL_INITIALIZER(sizeof(hc_span));

/* free_lists[n]: free spans of exactly n pages (1..PC_MAX_LIST_PAGES);
 * free_lists[0] is unused. Sentinel heads, set up on first use. Longer spans
 * are in long_spans, a tree (below). */
static hc_span free_lists[PC_MAX_LIST_PAGES + 1];
static int free_lists_ready;
static hc_span *long_spans; /* root of the treap of long free spans */

static pc_census totals; /* every field but largest_free_pages, kept current */

static size_t release_calls; /* madvise calls made, for stats */

static int is_long(size_t pages) { return pages > PC_MAX_LIST_PAGES; }

static void lists_init_once(void) {
    if (HC_LIKELY(free_lists_ready))
        return;
    for (size_t i = 0; i <= PC_MAX_LIST_PAGES; i++)
        span_list_init(&free_lists[i]);
    free_lists_ready = 1;
    pc_policy_init();
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

/* ---- Long free spans: a treap ordered by (length, start) -------------------------
 * Best fit is the least key of at least (n, 0): one walk down, O(log n)
 * expected for any number of long free spans (a list scan was O(n): with
 * 10,000 of them every large malloc cost 10,000 steps). A treap is a binary
 * search tree by key that is also a heap by a random priority, so its shape
 * is that of a tree built in random order: expected depth O(log n), whatever
 * the order of the keys. The priority is a hash of the start page (unique
 * among free spans), so the node needs no field for it; the children are the
 * list links (span.h). A span's key never changes while it is in the tree:
 * merging and splitting take it out first. */

static int key_less(const hc_span *a, const hc_span *b) {
    return a->page_count < b->page_count ||
           (a->page_count == b->page_count && a->start_page < b->start_page);
}

/* Fibonacci hashing: the product's high bits, which decide the comparison,
 * are well mixed even for neighbouring start pages. */
static uint64_t priority(const hc_span *s) {
    return (uint64_t)s->start_page * UINT64_C(0x9E3779B97F4A7C15);
}

static void tree_insert(hc_span *s) {
    /* Down to the first node s outranks, then split that subtree by s's key
     * into s's left (smaller keys) and right (larger) subtrees. */
    hc_span **link = &long_spans;
    while (*link != NULL && priority(*link) > priority(s))
        link = key_less(s, *link) ? &(*link)->left : &(*link)->right;
    hc_span *t = *link, **smaller = &s->left, **larger = &s->right;
    while (t != NULL) {
        if (key_less(t, s)) {
            *smaller = t;
            smaller = &t->right;
            t = t->right;
        } else {
            *larger = t;
            larger = &t->left;
            t = t->left;
        }
    }
    *smaller = *larger = NULL;
    *link = s;
}

static void tree_remove(hc_span *s) {
    hc_span **link = &long_spans;
    while (*link != s)
        link = key_less(s, *link) ? &(*link)->left : &(*link)->right;
    /* Zip the two subtrees (every key of a below every key of b) by priority. */
    hc_span *a = s->left, *b = s->right;
    while (a != NULL && b != NULL) {
        if (priority(a) > priority(b)) {
            *link = a;
            link = &a->right;
            a = a->right;
        } else {
            *link = b;
            link = &b->left;
            b = b->left;
        }
    }
    *link = a != NULL ? a : b;
    s->left = s->right = NULL;
}

/* The shortest long span of at least `pages` pages, lowest address first. */
static hc_span *tree_best_fit(size_t pages) {
    hc_span *best = NULL;
    for (hc_span *t = long_spans; t != NULL;) {
        if (t->page_count >= pages) {
            best = t;
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

/* ---- Free lists -------------------------------------------------------------- */

/* Puts a span that has no free neighbour on its list or in the tree,
 * registered at both ends; on a list at the head if it has backed pages, at
 * the tail if it has none. */
static void free_span_insert(hc_span *s) {
    s->state = SPAN_FREE;
    s->size_class = 0;
    pm_set(s->start_page, s);
    pm_set(span_end_page(s) - 1, s);
    if (is_long(s->page_count)) {
        tree_insert(s);
    } else {
        hc_span *head = &free_lists[s->page_count];
        span_list_push(s->backed_pages > 0 ? head : head->prev, s); /* head->prev: after the last */
    }
    totals.free_pages += s->page_count;
    totals.free_spans++;
    totals.released_pages += s->page_count - s->backed_pages;
}

static void free_span_remove(hc_span *s) {
    if (is_long(s->page_count))
        tree_remove(s);
    else
        span_list_remove(s);
    totals.free_pages -= s->page_count;
    totals.free_spans--;
    totals.released_pages -= s->page_count - s->backed_pages;
}

/* Gives the pages of `s` back to the OS. If the kernel refuses, they simply
 * stay backed. */
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
    /* LAB BEGIN: merge */
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
    /* LAB END: merge */
}

/* The best free span for `pages` pages: the exact list, then the next longer
 * lists, then the shortest fit among the long spans (lowest address on a tie,
 * which keeps the heap compact). NULL if nothing is long enough. */
static hc_span *free_span_find(size_t pages) {
    for (size_t n = pages; n <= PC_MAX_LIST_PAGES; n++)
        if (!span_list_empty(&free_lists[n]))
            return free_lists[n].next;
    return tree_best_fit(pages);
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
    /* Which pages are backed is not known: each piece may hold them all. */
    if (head) head->backed_pages = before < s->backed_pages ? before : s->backed_pages;
    if (tail) tail->backed_pages = after < s->backed_pages ? after : s->backed_pages;
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
    if (grow > pages && !pc_policy_may_grow(grow, 1))
        grow = pages; /* the headroom would pass a limit the request may fit under */
    if (grow == pages && !pc_policy_may_grow(grow, 0)) {
        errno = ENOMEM;
        return -1;
    }
    char *region = os_map_aligned(grow << HC_PAGE_SHIFT, HC_PAGE_SIZE);
    if (region == NULL && grow > pages) {
        /* Under an address-space limit (ulimit -v) the headroom may not fit
         * where the request itself still does. */
        grow = pages;
        region = os_map_aligned(grow << HC_PAGE_SHIFT, HC_PAGE_SIZE);
    }
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

/* ---- Giving pages back to the OS: the mechanism -----------------------------------
 * When and how much is the policy's question (page_policy.h); stage 3's
 * policy never asks. */

static size_t backed_free_pages(void) { return totals.free_pages - totals.released_pages; }

size_t pc_mapped_pages_locked(void) { return totals.heap_pages + totals.direct_pages; }

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
    size_t released = release_tree(long_spans, want);
    for (size_t n = PC_MAX_LIST_PAGES; n > 0 && released < want; n--) {
        /* Backed spans lead the list; each released one moves to the tail. */
        while (released < want && free_lists[n].next->backed_pages > 0) {
            size_t got = release_free_span(free_lists[n].next);
            if (got == 0)
                break; /* the kernel refused: it is back at the head */
            released += got;
        }
    }
    return released;
}

size_t pc_backed_free_pages_locked(void) { return backed_free_pages(); }

size_t pc_release_free_pages(size_t want) {
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    size_t released = pc_release_free_pages_locked(want);
    pc_policy_after_call();
    hc_lock_release(&pc_lock);
    return released << HC_PAGE_SHIFT;
}

size_t pc_release_calls(void) {
    hc_lock_acquire(&pc_lock);
    size_t calls = release_calls;
    hc_lock_release(&pc_lock);
    return calls;
}

void pc_lock_all(void) {
    hc_lock_acquire(&pc_lock);
    hc_lock_acquire(&span_pool.lock);
}

void pc_unlock_all(void) {
    hc_lock_release(&span_pool.lock);
    hc_lock_release(&pc_lock);
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
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    pc_policy_before_call(); /* a program of huge blocks alone has slow paths too */
    /* Asked and mapped under the lock, so that two threads cannot both
     * pass a limit that only one of them fits under. */
    char *block = pc_policy_may_grow(pages, 0) ? os_map_aligned(pages << HC_PAGE_SHIFT, alignment) : NULL;
    if (block == NULL) {
        hc_lock_release(&pc_lock);
        errno = ENOMEM;
        return NULL;
    }
    track_internal_end(block, pages << HC_PAGE_SHIFT); /* past the block's size: no one's */
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
    pc_policy_before_call();
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
    pc_policy_after_call();
    hc_lock_release(&pc_lock);
    if (s == NULL)
        errno = ENOMEM;
    return s;
}

/* Whether free span `s` holds `pages` pages from a multiple of `align`. */
static int holds_aligned(const hc_span *s, size_t pages, size_t align, uintptr_t *at) {
    uintptr_t aligned = (s->start_page + align - 1) & ~(uintptr_t)(align - 1);
    *at = aligned;
    return aligned + pages <= span_end_page(s);
}

/* The shortest span of the subtree `t` that holds them (in key order). */
static hc_span *tree_find_aligned(hc_span *t, size_t pages, size_t align, uintptr_t *at) {
    if (t == NULL)
        return NULL;
    if (t->page_count < pages)
        return tree_find_aligned(t->right, pages, align, at);
    hc_span *found = tree_find_aligned(t->left, pages, align, at);
    if (found != NULL)
        return found;
    if (holds_aligned(t, pages, align, at))
        return t;
    return tree_find_aligned(t->right, pages, align, at);
}

/* The first free span holding `pages` pages from a multiple of `align`
 * (lists from `pages` up, then the long ones). Linear in the free spans
 * looked at: aligned blocks above one page are rare. */
static hc_span *free_span_find_aligned(size_t pages, size_t align, uintptr_t *at) {
    for (size_t n = pages; n <= PC_MAX_LIST_PAGES; n++)
        for (hc_span *s = free_lists[n].next; s != &free_lists[n]; s = s->next)
            if (holds_aligned(s, pages, align, at))
                return s;
    return tree_find_aligned(long_spans, pages, align, at);
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
    pc_policy_before_call();
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
    pc_policy_after_call();
    hc_lock_release(&pc_lock);
    if (s == NULL)
        errno = ENOMEM;
    return s;
}

/* ---- Taking spans back --------------------------------------------------------- */

void pc_free_span(hc_span *s) {
    HC_TRACE(HC_TRACE_SPAN_RETURN, s->size_class);
    hc_lock_acquire(&pc_lock);
    pc_policy_before_call();
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
    s->backed_pages = s->page_count; /* the program may have touched every page */
    free_span_merge_insert(s);
    pc_policy_after_call();
    hc_lock_release(&pc_lock);
}

/* ---- Resizing a large block in place (realloc) ------------------------------------ */

int pc_grow_span_in_place(hc_span *s, size_t pages) {
    if (s->direct || pages > PC_MAX_PAGES)
        return -1;
    size_t extra = pages - s->page_count;
    int grown = 0;
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    pc_policy_before_call();
    hc_span *next = free_span_starting_at(span_end_page(s));
    if (next != NULL && next->page_count >= extra) {
        free_span_remove(next);
        /* The front of the free neighbour, cut off; the rest stays free. */
        hc_span *front = free_span_carve(next, next->start_page, extra);
        if (front != NULL) {
            span_dead(front); /* its pages join s: s's entries replace it below */
            s->page_count = pages;
            totals.large_pages += extra;
            pm_set_range(span_end_page(s) - extra, extra, s);
            grown = 1;
        }
    }
    pc_policy_after_call();
    hc_lock_release(&pc_lock);
    return grown ? 0 : -1;
}

int pc_shrink_span_in_place(hc_span *s, size_t pages) {
    size_t cut = s->page_count - pages;
    uintptr_t tail_page = s->start_page + pages;
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    pc_policy_before_call();
    if (s->direct) {
        /* Unregistered before unmapped, as in pc_free_span. */
        pm_set_range(tail_page, cut, NULL);
        s->page_count = pages;
        totals.direct_pages -= cut;
        hc_lock_release(&pc_lock);
        os_unmap((char *)(tail_page << HC_PAGE_SHIFT), cut << HC_PAGE_SHIFT);
        return 0;
    }
    hc_span *tail = span_new(tail_page, cut);
    if (tail == NULL) {
        hc_lock_release(&pc_lock);
        return -1;
    }
    s->page_count = pages;
    totals.large_pages -= cut;
    tail->backed_pages = cut; /* the program may have touched them */
    /* The tail's inner page-map entries still name s, which no longer covers
     * them: readers treat them as stale (page_cache.h). */
    free_span_merge_insert(tail);
    pc_policy_after_call();
    hc_lock_release(&pc_lock);
    return 0;
}

/* ---- Accounting and checking ------------------------------------------------------ */

static size_t largest_free_locked(void) {
    if (long_spans != NULL) {
        hc_span *s = long_spans;
        while (s->right != NULL) s = s->right;
        return s->page_count;
    }
    for (size_t n = PC_MAX_LIST_PAGES; n > 0; n--)
        if (!span_list_empty(&free_lists[n])) return n;
    return 0;
}

void pc_get_census(pc_census *out) {
    hc_lock_acquire(&pc_lock);
    lists_init_once();
    *out = totals;
    out->largest_free_pages = largest_free_locked();
    hc_lock_release(&pc_lock);
}

/* What the check counts while it walks the free spans. */
typedef struct free_tally {
    size_t spans, pages, released;
} free_tally;

/* What must hold for every free span, on a list or in the tree. */
static const char *check_free_span(const hc_span *s, free_tally *tally) {
    if (s->state != SPAN_FREE) return "a span on a free list is not SPAN_FREE";
    if (pm_lookup(s->start_page) != s) return "a free span's first page does not map to it";
    if (pm_lookup(span_end_page(s) - 1) != s) return "a free span's last page does not map to it";
    if (free_span_ending_at(s->start_page) != NULL) return "a free span has a free left neighbour";
    if (free_span_starting_at(span_end_page(s)) != NULL) return "a free span has a free right neighbour";
    if (s->backed_pages > s->page_count) return "a span has more backed pages than pages";
    tally->released += s->page_count - s->backed_pages;
    tally->spans++;
    tally->pages += s->page_count;
    return NULL;
}

/* The subtree `t`: keys strictly between those of lo and hi (NULL: no
 * bound), priorities at most its parent's, only long spans. */
static const char *check_tree(const hc_span *t, const hc_span *lo, const hc_span *hi,
                              free_tally *tally) {
    if (t == NULL) return NULL;
    if (!is_long(t->page_count)) return "a short span is in the long-span tree";
    if ((lo != NULL && !key_less(lo, t)) || (hi != NULL && !key_less(t, hi)))
        return "the long-span tree is out of (length, address) order";
    if ((t->left != NULL && priority(t->left) > priority(t)) ||
        (t->right != NULL && priority(t->right) > priority(t)))
        return "the long-span tree is not a heap by priority";
    const char *broken = check_free_span(t, tally);
    if (broken == NULL) broken = check_tree(t->left, lo, t, tally);
    if (broken == NULL) broken = check_tree(t->right, t, hi, tally);
    return broken;
}

static const char *check_locked(void) {
    free_tally tally = {0, 0, 0};
    for (size_t n = 1; n <= PC_MAX_LIST_PAGES; n++) {
        int seen_released = 0;
        for (hc_span *s = free_lists[n].next; s != &free_lists[n]; s = s->next) {
            if (s->page_count != n) return "a span is on the list of another length";
            if (seen_released && s->backed_pages > 0) return "a backed span follows a released one";
            seen_released |= s->backed_pages == 0;
            if (s->next->prev != s) return "a free list's links are broken";
            const char *broken = check_free_span(s, &tally);
            if (broken != NULL) return broken;
        }
    }
    const char *broken = check_tree(long_spans, NULL, NULL, &tally);
    if (broken != NULL) return broken;
    if (tally.spans != totals.free_spans) return "free span count does not match the lists";
    if (tally.pages != totals.free_pages) return "free page count does not match the lists";
    if (tally.released != totals.released_pages) return "released page count does not match the lists";
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

/* Visits the spans in address order by walking the page map's leaves: an
 * absent leaf skips its whole range; from a span's first page
 * the walk jumps to its end, so entries inside a free span (maybe stale)
 * are never read. An entry counts only if its record starts at that page. */
void pc_visit_spans(pc_span_visitor visit, void *arg) {
    hc_lock_acquire(&pc_lock);
    for (uintptr_t page = 0; page < PM_PAGE_ID_LIMIT;) {
        pm_leaf *leaf = pm_leaf_of(page);
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
