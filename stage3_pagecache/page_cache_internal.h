/* stage3_pagecache/page_cache_internal.h — layer 3: the page cache's state,
 * shared by the page cache itself (page_cache.c, with its span records in
 * span_records.c and its large blocks resized in page_cache_resize.c) and
 * its read-only views (page_cache_check.c: the census, the consistency
 * check, the heap walk). No other file includes it: everyone else goes
 * through page_cache.h.
 * Everything here is guarded by pc_lock. */
#ifndef HC_PAGE_CACHE_INTERNAL_H_
#define HC_PAGE_CACHE_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "common/lock.h"
#include "common/pool.h"
#include "stage3_pagecache/page_cache.h"

/* Taken spinning (hc_lock_acquire_spinning, common/lock.h): every
 * thread's large blocks and new spans go through it, a hold is a search, a
 * split or a merge and the page map's entries of one span, and a waiter
 * that slept at once would pay more in futex calls and task switches than
 * the hold it waits for (page_cache_lock_test). */
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

/* ---- Span records, a pool per place (span_records.c) ---------------------------- */

/* A place (page_cache.h, pc_alloc_span_placed): the page after its last
 * span, where its next one is cut, and the pool its spans' records come
 * from. pc_places[PC_NO_PLACE] is the pool of every other span's record. */
typedef struct pc_place {
    uintptr_t next_page;
    hc_pool records;
} pc_place;
extern pc_place pc_places[PC_PLACES + 1];
/* The place whose pool span_new draws from: PC_NO_PLACE but while
 * pc_alloc_span_placed cuts a place's span. */
extern unsigned pc_record_place;

/* A zeroed span record for [start_page, start_page + pages), or NULL. */
hc_span *span_new(uintptr_t start_page, size_t pages);
/* Retires a record whose pages now belong to another span (SPAN_DEAD). */
void span_dead(hc_span *s);
/* The record of just-cut span `s` (on no list, not yet handed out) in
 * pc_record_place's pool: `s` itself, or a copy from that pool (`s` dead). */
hc_span *span_record_in_place(hc_span *s);
/* For fork: every record pool's lock (pc_lock_all). */
void pc_records_lock_all(void);
void pc_records_unlock_all(void);

/* ---- page_cache.c's own steps, for page_cache_resize.c ------------------------ */

/* Takes free span `s` off its list or out of the tree, and out of the counts. */
void free_span_remove(hc_span *s);
/* Cuts [at, at + pages) out of free span `s` (already removed); the pieces
 * around it stay free. `s`'s record, now the middle, or NULL (s put back). */
hc_span *free_span_carve(hc_span *s, uintptr_t at, size_t pages);
/* Frees `s` (on no list, backed_pages set), merged with its free neighbours. */
void free_span_merge_insert(hc_span *s);
/* Maps `pages` pages at page `page` if nothing is mapped there and the
 * policy lets it (as headroom: a refusal is no failure of a request), as a
 * region of the heap that merges with the free span ending there: 0, or -1
 * with nothing changed and errno as it was. */
int heap_map_at(uintptr_t page, size_t pages);

/* Where in free span `s` a large block of `pages` pages starts
 * (page_cache_resize.c, which places and resizes large blocks). */
uintptr_t pc_large_block_start(const hc_span *s, size_t pages);

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
