/* stage3_pagecache/page_cache_check.c — layer 3: the page cache seen from
 * outside, read only: the stats and the census of its counters, the
 * consistency check that tests and debug checks run (pc_check), and the
 * walk of every span in address order that the heap map draws
 * (pc_visit_spans). Apart from page_cache.c, which changes the free
 * spans, so that a reader of the page cache reads its mechanism alone;
 * both share its state through page_cache_internal.h. Every function takes pc_lock.
 * May touch: nothing; reads the free lists, the treap and the page map. */
#include <stddef.h>
#include <stdint.h>

#include "common/lock.h"
#include "common/trace.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/page_cache_internal.h"
#include "stage3_pagecache/span_treap.h"

hc_span *pc_free_span_longest(void) {
    hc_span *t = treap_longest(pc_long_spans);
    if (t != NULL)
        return t;
    for (size_t word = PC_LIST_BIT_WORDS; word-- > 0;)
        if (pc_free_list_bits[word] != 0)
            return pc_free_lists[word * 64 + 63 - (size_t)__builtin_clzll(pc_free_list_bits[word])].next;
    return NULL;
}

void pc_collect_stats(hc_stats *out) {
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    out->page_cache_free_bytes += (pc_totals.free_pages - pc_totals.released_pages) << HC_PAGE_SHIFT;
    out->released_bytes += pc_totals.released_pages << HC_PAGE_SHIFT;
    out->bytes_in_use += (pc_totals.large_pages + pc_totals.direct_pages) << HC_PAGE_SHIFT;
    hc_lock_unlock(&pc_lock);
}

void pc_get_census(pc_census *out) {
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    *out = pc_totals;
    hc_span *longest = pc_free_span_longest();
    out->largest_free_pages = longest != NULL ? longest->page_count : 0;
    hc_lock_unlock(&pc_lock);
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
    if (s->dirty_pages > s->backed_pages) return "a span has more dirty pages than backed ones";
    tally->released += s->page_count - s->backed_pages;
    tally->spans++;
    tally->pages += s->page_count;
    return NULL;
}

/* What must hold for a span in the long-span tree besides the tree's own
 * order (treap_check): it is long, and a free span like any other. */
static const char *check_long_span(void *tally, const hc_span *s) {
    if (!pc_is_long(s->page_count)) return "a short span is in the long-span tree";
    return check_free_span(s, tally);
}

static const char *check_locked(void) {
    free_tally tally = {0, 0, 0};
    for (size_t n = 1; n <= PC_MAX_LIST_PAGES; n++) {
        if ((int)((pc_free_list_bits[n / 64] >> (n % 64)) & 1) == span_list_empty(&pc_free_lists[n]))
            return "a free list's bit says the opposite of its list";
        int seen_released = 0;
        for (hc_span *s = pc_free_lists[n].next; s != &pc_free_lists[n]; s = s->next) {
            if (s->page_count != n) return "a span is on the list of another length";
            if (seen_released && s->backed_pages > 0) return "a backed span follows a released one";
            seen_released |= s->backed_pages == 0;
            if (s->next->prev != s) return "a free list's links are broken";
            const char *broken = check_free_span(s, &tally);
            if (broken != NULL) return broken;
        }
    }
    const char *broken = treap_check(pc_long_spans, check_long_span, &tally);
    if (broken != NULL) return broken;
    if (tally.spans != pc_totals.free_spans) return "free span count does not match the lists";
    if (tally.pages != pc_totals.free_pages) return "free page count does not match the lists";
    if (tally.released != pc_totals.released_pages) return "released page count does not match the lists";
    if (pc_totals.free_pages + pc_totals.small_pages + pc_totals.large_pages != pc_totals.heap_pages)
        return "free + in-use pages != heap pages";
    return NULL;
}

const char *pc_check(void) {
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
    pc_lists_init_once();
    const char *broken = check_locked();
    hc_lock_unlock(&pc_lock);
    return broken;
}

/* ---- Walking the heap --------------------------------------------------------------- */

/* Visits the spans in address order by walking the page map's leaves: an
 * absent leaf skips its whole range; from a span's first page
 * the walk jumps to its end, so entries inside a free span (maybe stale)
 * are never read. An entry counts only if its record starts at that page. */
void pc_visit_spans(pc_span_visitor visit, void *arg) {
    HC_TRACE_LOCK_ACQUIRE_SPINNING(&pc_lock, 0);
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
    hc_lock_unlock(&pc_lock);
}
