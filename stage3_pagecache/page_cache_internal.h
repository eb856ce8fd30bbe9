/* stage3_pagecache/page_cache_internal.h — layer 3: the page cache's state,
 * shared by the page cache itself (page_cache.c) and its read-only views
 * (page_cache_check.c: the census, the consistency check, the heap walk).
 * No other file includes it: everyone else goes through page_cache.h.
 * Everything here is guarded by pc_lock. */
#ifndef HC_PAGE_CACHE_INTERNAL_H_
#define HC_PAGE_CACHE_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "common/lock.h"
#include "stage3_pagecache/page_cache.h"

extern hc_lock pc_lock;

/* pc_free_lists[n]: free spans of exactly n pages (1..PC_MAX_LIST_PAGES);
 * pc_free_lists[0] is unused. Sentinel heads, set up on first use
 * (pc_lists_init_once). Longer spans are in the treap at pc_long_spans
 * (span_treap.h). */
extern hc_span pc_free_lists[PC_MAX_LIST_PAGES + 1];
/* Bit n (word n / 64): pc_free_lists[n] is not empty. A carve finds the
 * shortest list that fits with a count of trailing zeros, not a pass over
 * up to PC_MAX_LIST_PAGES heads (that pass was about half of pc_alloc_span's
 * instructions when a class carves one-page spans over and over, as the
 * bench's hold does). pc_check checks every bit against its list. */
#define PC_LIST_BIT_WORDS (PC_MAX_LIST_PAGES / 64 + 1)
extern uint64_t pc_free_list_bits[PC_LIST_BIT_WORDS];
extern hc_span *pc_long_spans; /* root of the treap of long free spans */

extern pc_census pc_totals; /* every field but largest_free_pages, kept current */

/* Sets up the lists' heads and the policy on the first call into the page cache. */
void pc_lists_init_once(void);

/* The longest free span, or NULL. */
hc_span *pc_free_span_longest(void);

HC_INLINE int pc_is_long(size_t pages) { return pages > PC_MAX_LIST_PAGES; }

/* The free span that ends right before `page`, or NULL. The entry may be
 * stale (dead or reused record): the state and bounds decide. */
HC_INLINE hc_span *free_span_ending_at(uintptr_t page) {
    if (page == 0)
        return NULL;
    hc_span *s = pm_lookup(page - 1);
    return s != NULL && s->state == SPAN_FREE && span_end_page(s) == page ? s : NULL;
}

/* The free span that starts at `page`, or NULL (stale entries as above). */
HC_INLINE hc_span *free_span_starting_at(uintptr_t page) {
    hc_span *s = pm_lookup(page);
    return s != NULL && s->state == SPAN_FREE && s->start_page == page ? s : NULL;
}

#endif /* HC_PAGE_CACHE_INTERNAL_H_ */
