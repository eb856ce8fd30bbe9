/* stage3_pagecache/span_treap.h — layer 3: the page cache's long free spans,
 * a treap ordered by (length, start page).
 *
 * A treap is a binary search tree by key that is also a heap by a random
 * priority, so its shape is that of a tree built in random order: expected
 * depth O(log n) whatever the order of the keys, with no rebalancing cases.
 * Best fit is the least key of at least (n, 0): one walk down (a list scan
 * was O(n): with 10,000 long free spans every large malloc cost 10,000
 * steps). The priority is a hash of the start page (unique among free
 * spans), so a node needs no field for it; the children are the span's list
 * links (span.h: left/right share a union with next/prev). A span's key must
 * not change while it is in a treap: the page cache takes a span out before
 * it merges or splits it.
 *
 * A data structure only: no lock (the page cache's lock covers every call),
 * no allocation, no page map. A tree is named by its root pointer, NULL when
 * empty. May touch: the left/right links of the spans in the tree. */
#ifndef HC_SPAN_TREAP_H_
#define HC_SPAN_TREAP_H_

#include <stddef.h>
#include <stdint.h>

#include "stage3_pagecache/span.h"

/* Puts `s` (in no tree, its key not in this one) into the tree at *root. */
void treap_insert(hc_span **root, hc_span *s);

/* Takes `s`, which is in the tree at *root, out of it; clears its links. */
void treap_remove(hc_span **root, hc_span *s);

/* The shortest span of at least `pages` pages, the lowest address on a tie;
 * NULL when none is that long. */
hc_span *treap_best_fit(hc_span *root, size_t pages);

/* The first span in key order that holds `pages` pages starting at a
 * multiple of `align` pages (a power of two), with that start in *at; NULL
 * when none does. Visits every span long enough that cannot hold them: the
 * caller's aligned requests above one page are rare. */
hc_span *treap_find_aligned(hc_span *root, size_t pages, size_t align, uintptr_t *at);

/* The longest span (the highest key), or NULL. */
hc_span *treap_longest(hc_span *root);

/* Checks the tree's own invariants, keys in (length, start) order and
 * priorities in heap order, and calls check_span(arg, span) on each span in
 * key order for the owner's (a non-NULL result stops the walk). NULL when
 * all hold, else what broke. */
const char *treap_check(const hc_span *root,
                        const char *(*check_span)(void *arg, const hc_span *s), void *arg);

/* Where free span `s` can hold `pages` pages from a multiple of `align`
 * pages: the first such page in *at; whether the run ends within `s`. */
HC_INLINE int span_holds_aligned(const hc_span *s, size_t pages, size_t align, uintptr_t *at) {
    uintptr_t aligned = (s->start_page + align - 1) & ~(uintptr_t)(align - 1);
    *at = aligned;
    return aligned + pages <= span_end_page(s);
}

#endif /* HC_SPAN_TREAP_H_ */
