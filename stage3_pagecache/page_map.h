/* stage3_pagecache/page_map.h — layer 3: page id -> span and size class, for any address.
 *
 * hc_free(p) gets no size, so the allocator must find p's size class from p
 * alone. The page map answers that for every page of the x86-64 user
 * address space (47 bits; with 8 KiB pages a page id has 47 - 13 = 34 bits)
 * with a radix tree of two fixed levels:
 *
 *     page id (34 bits) = | root 17 | leaf 17 |
 *
 *   root: 2^17 pointers to leaves, a static array (1 MiB of .bss: virtual
 *         memory; only the 4 KiB pages of it that are used become resident,
 *         one for a heap within 512 GiB of address space), and beside it
 *         pm_class_root, hc_free's copy (another 1 MiB)
 *   leaf: per page of 1 GiB of address space, a span pointer (8 bytes) and
 *         a class offset (uint16_t, 2 bytes): 1.25 MiB of mapping per leaf,
 *         of which only the pages written become resident (one 4 KiB page of
 *         pointers per 4 MiB of heap, one of classes per 16 MiB)
 *
 * A lookup is two dependent loads, always: O(1), no hashing, no probing, no
 * lock. Leaves are mapped from the OS only when a region of the heap first
 * needs them (pm_ensure). Resident cost: 10 bytes per 8 KiB page of heap
 * (about 1/819 of the heap); mapped (what hc_stats.metadata_bytes counts): 1.25
 * MiB per GiB of address space the heap touches (tools/figures/docs_figures
 * prints these from sizeof). (Three levels of 11/11/12
 * bits, an earlier version of this map, mapped only 48 KiB per 32 MiB but
 * cost a third dependent load on every free.)
 *
 * The class array is what hc_free reads. It holds, for every page of a span
 * carved into objects (SPAN_SMALL), that span's size class, and 0 for every
 * other page (free, large, never ours). So free(p) learns p's class from the
 * page map alone, without reading the span record -- a cache line that the
 * central cache writes whenever objects move between spans and buckets, and
 * that would otherwise bounce between the freeing thread and the bucket's.
 * tcmalloc keeps its size class per page the same way.
 *
 * Concurrency: span-pointer writers (pm_ensure, pm_set, pm_set_range) are
 * serialised by the caller, the page cache's lock. The class of a span's
 * pages is written by the span's owner, the central bucket, after it gets
 * the span and before any object of it is handed out, and cleared before the
 * span goes back (pm_set_class_range); different spans own different
 * entries, and one entry is one memory location, so owners never race. Readers take
 * no lock. That is safe because
 *   - a leaf is fully built (zeroed by mmap) before a release store publishes
 *     its pointer, and readers load it with acquire, so a reader that sees a
 *     leaf sees its contents;
 *   - leaves are never freed or moved, so a pointer a reader holds stays valid;
 *   - each entry is one aligned pointer or uint16_t, written and read atomically,
 *     so a reader sees the old value or the new one, never half of each;
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
#define PM_LEAF_BITS    17
#define PM_ROOT_BITS    (PM_PAGE_ID_BITS - PM_LEAF_BITS) /* 17 */
#define PM_LEAF_ENTRIES ((size_t)1 << PM_LEAF_BITS)
#define PM_ROOT_ENTRIES ((size_t)1 << PM_ROOT_BITS)
#define PM_PAGE_ID_LIMIT ((uintptr_t)1 << PM_PAGE_ID_BITS) /* one past the last page id */

/* A page's class is stored times PM_CLASS_STRIDE: the byte offset of the
 * class's entry in pm_align_mask, and of its list in a thread cache (the
 * lists are the first member of a tc_cache, and sizeof(hc_free_list) is
 * PM_CLASS_STRIDE: malloc.c checks both). So hc_free goes from the page map
 * to both with no shift or multiply. */
#define PM_CLASS_STRIDE 16

typedef struct pm_leaf {
    /* First: hc_free reads it, and at offset 0 its address needs no displacement. */
    uint16_t class_offsets[PM_LEAF_ENTRIES]; /* SPAN_SMALL pages: class * PM_CLASS_STRIDE; else 0 */
    hc_span *spans[PM_LEAF_ENTRIES];
} pm_leaf;

extern pm_leaf *pm_root[PM_ROOT_ENTRIES];

/* hc_free's own root: for each leaf, the address its class_offsets would
 * have if they were indexed by the whole page id (the leaf's first page id
 * subtracted in advance), so that a page id indexes them without being
 * masked; 0 where there is no leaf. Written with pm_root's entry. */
extern uintptr_t pm_class_root[PM_ROOT_ENTRIES];

/* The leaf that holds `page`, or NULL (never mapped, or not a user page). */
HC_INLINE pm_leaf *pm_leaf_of(uintptr_t page) {
    uintptr_t root_index = page >> PM_LEAF_BITS;
    if (HC_UNLIKELY(root_index >= PM_ROOT_ENTRIES)) /* page >= PM_PAGE_ID_LIMIT */
        return NULL;
    return __atomic_load_n(&pm_root[root_index], __ATOMIC_ACQUIRE);
}

/* The span registered for `page`, or NULL (never registered, or outside the
 * user address space). Entries inside a free span may be stale: a caller
 * that can be given any pointer checks that the span it gets covers the page
 * and is in use (see page_cache.h, pc_span_of). */
HC_INLINE hc_span *pm_lookup(uintptr_t page) {
    /* LAB BEGIN: page_map_lookup */
    pm_leaf *leaf = pm_leaf_of(page);
    if (HC_UNLIKELY(leaf == NULL))
        return NULL;
    return __atomic_load_n(&leaf->spans[page & (PM_LEAF_ENTRIES - 1)], __ATOMIC_ACQUIRE);
    /* LAB END: page_map_lookup */
}

/* The size class of the object at `p` if p's page belongs to a span carved
 * into objects, else 0 (free, large, or not ours: NULL, stack, another
 * allocator's heap, never mapped). Two loads; the span is not read. */
HC_INLINE unsigned pm_class_of(const void *p) {
    uintptr_t page = (uintptr_t)p >> HC_PAGE_SHIFT;
    pm_leaf *leaf = pm_leaf_of(page);
    if (HC_UNLIKELY(leaf == NULL))
        return 0;
    return __atomic_load_n(&leaf->class_offsets[page & (PM_LEAF_ENTRIES - 1)], __ATOMIC_RELAXED) /
           PM_CLASS_STRIDE;
}

/* pm_align_mask[cls]: an object of class cls starts at a multiple of its
 * size from a page boundary, so its address is a multiple of the largest
 * power of two dividing the size (capped at a page): p & mask must be 0.
 * One table load and a test: hc_free's interior-pointer check, which needs
 * no span. Stored (the same value, relaxed) each time a span takes class
 * cls, so while other threads read the entry: read it with a relaxed atomic
 * load too (hc_free does), since to TSan a plain read of it is a race.
 * Every mask also has bits 47..63 set, which no user-space address has
 * (pm_small_object_start), and pm_align_mask[0] is all ones: a page that is
 * not a small span's fails the test too, so hc_free needs no test of the
 * class of its own. */
typedef struct pm_class_mask {
    uintptr_t align_mask;
    uintptr_t unused; /* pads the entry to PM_CLASS_STRIDE bytes */
} pm_class_mask;
extern pm_class_mask pm_align_mask[HC_NUM_CLASSES];

/* hc_free's question: may `p` be where an object of a small span starts?
 * Then 1, with the page's class times PM_CLASS_STRIDE in *class_offset;
 * else 0 (large, free, not ours, or not aligned for its class). Two loads
 * and one test after the leaf's: class 0 fails the alignment test (mask all
 * ones) for every p but NULL. NULL, on a page with a leaf, passes with
 * class 0; the caller turns class 0 away before it reads the object
 * (hc_free: lists[0] is always full). */
HC_INLINE int pm_small_object_start(const void *p, size_t *class_offset) {
    /* The page id of p's low 47 bits: two shifts, no mask, no compare. An
     * address above user space aliases some user page here, but every mask
     * of a small class has bits 47..63 set (pm_set_class_range), so the
     * alignment test below rejects it all the same. */
    uintptr_t page = ((uintptr_t)p << (64 - PM_ADDRESS_BITS)) >> (64 - PM_ADDRESS_BITS + HC_PAGE_SHIFT);
    uintptr_t classes = __atomic_load_n(&pm_class_root[page >> PM_LEAF_BITS], __ATOMIC_ACQUIRE);
    if (HC_UNLIKELY(classes == 0))
        return 0;
    size_t offset = __atomic_load_n((const uint16_t *)(classes + page * sizeof(uint16_t)), __ATOMIC_RELAXED);
    *class_offset = offset;
    const uintptr_t *mask = (const uintptr_t *)((const char *)pm_align_mask + offset);
    return ((uintptr_t)p & __atomic_load_n(mask, __ATOMIC_RELAXED)) == 0;
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

/* Sets the class of pages [first, first + count) to `cls` (0 clears it).
 * Called by the owner of a SPAN_SMALL span (its central bucket): after the
 * page cache handed the span out, and before the span goes back. */
void pm_set_class_range(uintptr_t first, size_t count, unsigned cls);

/* ---- Accounting ------------------------------------------------------------- */

typedef struct pm_usage {
    size_t leaf_nodes;
    size_t mapped_bytes; /* leaves (the root is static: PM_ROOT_ENTRIES * 8 of .bss) */
} pm_usage;

void pm_get_usage(pm_usage *out);

#endif /* HC_PAGE_MAP_H_ */
