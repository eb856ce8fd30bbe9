/* stage3_pagecache/page_map.h — layer 3: page id -> span and size class, for any address.
 *
 * hc_free(p) gets no size, so the allocator must find p's size class from p
 * alone. The page map answers that for every page of the x86-64 user
 * address space (47 bits; with 8 KiB pages a page id has 47 - 13 = 34 bits)
 * with a radix tree of two fixed levels:
 *
 *     page id (34 bits) = | root 19 | leaf 15 |
 *
 *   root: 2^19 pointers to leaves, a static array (4 MiB of .bss, and as
 *         much again for hc_free's copy, pm_free_lookup.class_root: virtual
 *         memory; only the 4 KiB pages of it that are used become resident,
 *         one for a heap within 128 GiB of address space)
 *   leaf: per page of 256 MiB of address space, a span pointer and the two
 *         words of hc_free's test (pm_leaf: 24 bytes a page, sizeof(pm_leaf)
 *         of mapping per leaf), of which only the pages written become
 *         resident: the span pointers of every page of the heap, the other
 *         words of the pages of small spans only
 *
 * A lookup is two dependent loads, always: O(1), no hashing, no probing, no
 * lock. Leaves are mapped from the OS only when a region of the heap first
 * needs them (pm_ensure); hc_stats.metadata_bytes counts them. (Three levels
 * of 11/11/12 bits, an earlier version of this map, mapped less but cost a
 * third dependent load on every free.)
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
 * words, so owners never race. Readers take
 * no lock. That is safe because
 *   - a leaf is fully built (zeroed by mmap) before a store-release publishes
 *     its pointer, and readers load it with acquire, so a reader that sees a
 *     leaf sees its contents;
 *   - leaves are never freed or moved, so a pointer a reader holds stays valid;
 *   - each entry is one aligned word, written and read whole,
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
/* 15, not 17: a leaf holds 24 bytes a page, and so maps 768 KiB. */
#define PM_LEAF_BITS    15
#define PM_ROOT_BITS    (PM_PAGE_ID_BITS - PM_LEAF_BITS) /* 19 */
#define PM_LEAF_ENTRIES ((size_t)1 << PM_LEAF_BITS)
#define PM_ROOT_ENTRIES ((size_t)1 << PM_ROOT_BITS)
#define PM_PAGE_ID_LIMIT ((uintptr_t)1 << PM_PAGE_ID_BITS) /* one past the last page id */

/* A page's class is stored times PM_CLASS_STRIDE: the byte offset of the
 * class's list in a thread cache (the lists are the first member of a
 * tc_cache, and sizeof(hc_free_list) is PM_CLASS_STRIDE: malloc.c checks
 * both). So hc_free goes from the page map to its list with one add. */
#define PM_CLASS_STRIDE 16

/* Per page, two words that hc_free reads, in arrays of the same stride so
 * that one index reaches both (pm_small_object_start):
 *   class_offsets  SPAN_SMALL pages: class * PM_CLASS_STRIDE; else 0. A
 *                  64-bit word, so hc_free adds it to the thread cache's
 *                  address straight from memory.
 *   last_starts    the last object start at or before the page's last byte
 *                  (an object that starts on an earlier page, when none
 *                  starts on this one).
 * With the class's two words in pm_free_lookup.start_tests they make the
 * exact object-start test: see pm_small_object_start. With the span
 * pointer, 24 bytes per 8 KiB page of small spans are resident. */
typedef struct pm_leaf {
    /* First: hc_free reads it, and at offset 0 its address needs no displacement. */
    uint64_t class_offsets[PM_LEAF_ENTRIES];
    uintptr_t last_starts[PM_LEAF_ENTRIES];
    hc_span *spans[PM_LEAF_ENTRIES];
} pm_leaf;

extern pm_leaf *pm_root[PM_ROOT_ENTRIES];

/* The per-class words of the object-start test for objects of `size`
 * bytes (pm_start_test_of): the inverse of the size's odd factor modulo
 * 2^64, and the mask of bits 13..63 and the low log2(alignment) bits. */
typedef struct pm_start_test {
    uint64_t inverse, start_mask;
} pm_start_test;
pm_start_test pm_start_test_of(size_t size); /* page_map.c checks it is PM_CLASS_STRIDE bytes */

/* What hc_free reads besides a leaf, in one object so that one base
 * register reaches both arrays (a second global would cost a second
 * address computation on every free):
 *   class_root   for each leaf, the address its class_offsets would have if
 *                they were indexed by the whole page id (the leaf's first
 *                page id subtracted in advance), so that a page id indexes
 *                them without being masked; 0 where there is no leaf.
 *                Written with pm_root's entry.
 *   start_tests  each class's test words, indexed by the class offset
 *                itself; written once, before the first leaf is published,
 *                and read-only after. Class 0's are zero: every address of
 *                a page that is not a small span's passes with class 0,
 *                which the caller turns away.
 * Per class, not per page: the per-page copies that an earlier version kept
 * made every free of a cold page fetch four cache lines of the leaf, where
 * it now fetches two, at the same instruction count. */
typedef struct pm_free_lookup_words {
    uintptr_t class_root[PM_ROOT_ENTRIES];
    pm_start_test start_tests[HC_NUM_CLASSES];
} pm_free_lookup_words;
extern pm_free_lookup_words pm_free_lookup;

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
    return (unsigned)(__atomic_load_n(&leaf->class_offsets[page & (PM_LEAF_ENTRIES - 1)],
                                      __ATOMIC_RELAXED) /
                      PM_CLASS_STRIDE);
}

/* hc_free's question: is `p` where an object of a small span starts? Then
 * 1, with the page's class times PM_CLASS_STRIDE in *class_offset; else 0
 * (inside or between objects, past a span's last object, or above user
 * space). Pages that are not a small span's (free, large, not ours) have
 * both words 0, and class 0's test words are 0, so they pass with class 0;
 * the caller turns class 0 away before it reads the object (hc_free:
 * lists[0] is always full), and so does NULL, on a page with a leaf.
 *
 * The test, with d = d0 * 2^k the class size (d0 odd) and b the page's
 * last object start: p starts an object of this page iff before = b - p is
 * a multiple of d below a page. Multiplying by d0's inverse modulo 2^64 maps
 * the multiples of d0 onto [0, 2^64 / d0) in order, and every other value
 * above that (Granlund and Montgomery's divisibility test), so
 * z = before * inverse is before / d0 exactly when d0 divides before, and
 * huge otherwise. "Below a page, a multiple of d" is then "z < 2^13 and its
 * low k bits zero": one AND with the class's mask. A pointer past b makes
 * `before` wrap to nearly 2^64; one above user space (its page id is taken
 * from the low 47 bits, so it aliases a user page) at least 2^47 - 2^19;
 * either gives a z far above 2^13. Two loads of the same index, a
 * subtract, a multiply and a test by the class's words (a small table that
 * stays in cache) after the leaf's: no span is read, no divide. Plain
 * loads: a correct program frees only a block of a page whose words were
 * written before the block was handed out (pm_set_class_range), and plain
 * loads let the multiply and the test read memory directly. */
/* Word `array` of `page` in the leaf whose class root entry is `classes`. */
#define PM_WORD(classes, page, array) \
    (*(const uint64_t *)((classes) + offsetof(pm_leaf, array) + (page) * sizeof(uint64_t)))
/* Word `field` of the start test of the class whose offset is `offset`. */
#define PM_TEST_WORD(offset, field) \
    (*(const uint64_t *)((const char *)pm_free_lookup.start_tests + (offset) + offsetof(pm_start_test, field)))

HC_INLINE int pm_small_object_start(const void *p, size_t *class_offset) {
    /* The page id of p's low 47 bits: two shifts, no mask, no compare. */
    uintptr_t page = ((uintptr_t)p << (64 - PM_ADDRESS_BITS)) >> (64 - PM_ADDRESS_BITS + HC_PAGE_SHIFT);
    uintptr_t classes = __atomic_load_n(&pm_free_lookup.class_root[page >> PM_LEAF_BITS], __ATOMIC_ACQUIRE);
    if (HC_UNLIKELY(classes == 0))
        return 0;
    uint64_t offset = PM_WORD(classes, page, class_offsets);
    /* An empty asm that "changes" page: the load below then addresses its
     * word as classes + page * 8 + displacement, in the instruction itself,
     * not from a pointer computed once (one instruction more on every free). */
    __asm__("" : "+r"(page));
    uintptr_t before = PM_WORD(classes, page, last_starts) - (uintptr_t)p;
    /* The class's words, at pm_free_lookup + their offset + the class
     * offset: each load addresses its word from the class root's base
     * register (the empty asm again keeps the compiler from computing the
     * address once into a register of its own, one more instruction). */
    uint64_t z = before * PM_TEST_WORD(offset, inverse);
    __asm__("" : "+r"(offset));
    if (HC_UNLIKELY(z & PM_TEST_WORD(offset, start_mask)))
        return 0;
    *class_offset = offset;
    return 1;
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
