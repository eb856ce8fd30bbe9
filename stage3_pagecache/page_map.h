/* stage3_pagecache/page_map.h — layer 3: page id -> span, for any address.
 *
 * hc_free(p) gets no size, so the allocator must find p's span from p alone.
 * The page map answers that for every page of the x86-64 user address space
 * (47 bits; with 8 KiB pages a page id has 47 - 13 = 34 bits) with a radix
 * tree of three fixed levels:
 *
 *     page id (34 bits) = | root 11 | mid 11 | leaf 12 |
 *
 *   root: 2^11 pointers to mid nodes, a static array (16 KiB of .bss)
 *   mid:  2^11 pointers to leaves (16 KiB), one per 64 GiB of address space
 *   leaf: 2^12 span pointers (32 KiB), one per 32 MiB of address space
 *
 * A lookup is three dependent loads, always: O(1), no hashing, no probing,
 * no lock. Mid nodes and leaves are mapped from the OS only when a region of
 * the heap first needs them (pm_ensure), so a 1 GiB heap costs about 33
 * leaves + 1 mid node = 1.03 MiB (1/1024 of the heap: one 8-byte pointer per
 * 8 KiB page), not the 2^34 * 8 = 128 GiB a flat array would.
 *
 * Concurrency: writers (pm_ensure, pm_set) are serialised by the caller, the
 * page cache's lock. Readers take no lock. That is safe because
 *   - a node is fully built (zeroed by mmap) before a release store publishes
 *     its pointer, and readers load pointers with acquire, so a reader that
 *     sees a node sees its contents;
 *   - nodes are never freed or moved, so a pointer a reader holds stays valid;
 *   - each entry is one aligned pointer, written and read atomically, so a
 *     reader sees the old span or the new one, never half of each;
 *   - a correct program reads only entries of pages it owns (it frees a
 *     pointer it got from hc_malloc), and those were written before the block
 *     was handed out, which happens-before the free.
 * On x86-64 an acquire load is a plain mov: the fast path pays nothing.
 * May touch: its own nodes, common/os.h and common/pool.h (for accounting). */
#ifndef HC_PAGE_MAP_H_
#define HC_PAGE_MAP_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/size_class.h"
#include "stage3_pagecache/span.h"

#define PM_ADDRESS_BITS 47
#define PM_PAGE_ID_BITS (PM_ADDRESS_BITS - HC_PAGE_SHIFT) /* 34 */
#define PM_LEAF_BITS    12
#define PM_MID_BITS     11
#define PM_ROOT_BITS    (PM_PAGE_ID_BITS - PM_MID_BITS - PM_LEAF_BITS) /* 11 */
#define PM_LEAF_ENTRIES ((size_t)1 << PM_LEAF_BITS)
#define PM_MID_ENTRIES  ((size_t)1 << PM_MID_BITS)
#define PM_ROOT_ENTRIES ((size_t)1 << PM_ROOT_BITS)
#define PM_PAGE_ID_LIMIT ((uintptr_t)1 << PM_PAGE_ID_BITS) /* one past the last page id */

typedef struct pm_leaf {
    hc_span *spans[PM_LEAF_ENTRIES];
} pm_leaf;

typedef struct pm_mid {
    pm_leaf *leaves[PM_MID_ENTRIES];
} pm_mid;

extern pm_mid *pm_root[PM_ROOT_ENTRIES];

/* The span registered for `page`, or NULL (never registered, or outside the
 * user address space). Entries inside a free span may be stale: a caller
 * that can be given any pointer checks that the span it gets covers the page
 * and is in use (see page_cache.h, pc_span_of). */
HC_INLINE hc_span *pm_lookup(uintptr_t page) {
    /* LAB BEGIN: page_map_lookup */
    if (HC_UNLIKELY(page >= PM_PAGE_ID_LIMIT))
        return NULL;
    pm_mid *mid = __atomic_load_n(&pm_root[page >> (PM_MID_BITS + PM_LEAF_BITS)], __ATOMIC_ACQUIRE);
    if (HC_UNLIKELY(mid == NULL))
        return NULL;
    pm_leaf *leaf = __atomic_load_n(&mid->leaves[(page >> PM_LEAF_BITS) & (PM_MID_ENTRIES - 1)],
                                    __ATOMIC_ACQUIRE);
    if (HC_UNLIKELY(leaf == NULL))
        return NULL;
    return __atomic_load_n(&leaf->spans[page & (PM_LEAF_ENTRIES - 1)], __ATOMIC_ACQUIRE);
    /* LAB END: page_map_lookup */
}

/* ---- Writers: the caller serialises them (the page cache's lock) ----------- */

/* Makes sure the nodes for pages [first, first + count) exist, mapping the
 * missing ones. Returns 0, or -1 with errno = ENOMEM (nodes already mapped
 * stay: they are valid, just empty). After it, pm_set on those pages cannot
 * fail. */
int pm_ensure(uintptr_t first, size_t count);

/* Registers `span` (or NULL) for one page / a run of pages; pm_ensure must
 * have covered them. */
void pm_set(uintptr_t page, hc_span *span);
void pm_set_range(uintptr_t first, size_t count, hc_span *span);

/* ---- Accounting ------------------------------------------------------------- */

typedef struct pm_usage {
    size_t mid_nodes;
    size_t leaf_nodes;
    size_t mapped_bytes; /* mid + leaf nodes (the root is static: PM_ROOT_ENTRIES * 8) */
} pm_usage;

void pm_get_usage(pm_usage *out);

#endif /* HC_PAGE_MAP_H_ */
