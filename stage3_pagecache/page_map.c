/* stage3_pagecache/page_map.c — layer 3: the radix tree's writers.
 *
 * The page cache calls the span-pointer writers with its lock held, so they
 * never race each other; the class writer is called by a span's owner for
 * that span's pages only. Readers (pm_lookup, pm_class_of, inline in
 * page_map.h) take no lock, which is why every store that a reader may see
 * is an atomic store (a store-release where the reader then reads through it).
 * May touch: the tree's nodes, common/os.h, common/pool.h (accounting). */
#include "stage3_pagecache/page_map.h"

#include <errno.h>

#include "common/os.h"
#include "common/pool.h"

pm_leaf *pm_root[PM_ROOT_ENTRIES];
pm_free_lookup_words pm_free_lookup;
_Static_assert(sizeof(pm_start_test) == PM_CLASS_STRIDE, "a class offset indexes the start tests too");

/* Read by pm_get_usage from any thread, written under the page cache lock. */
static size_t pm_leaf_nodes;

HC_INLINE size_t pm_root_index(uintptr_t page) { return page >> PM_LEAF_BITS; }
HC_INLINE size_t pm_leaf_index(uintptr_t page) { return page & (PM_LEAF_ENTRIES - 1); }

/* pm_free_lookup.class_root's entry for `leaf`, the leaf of root entry i: where its
 * class_offsets would start if they were indexed by whole page ids
 * (unsigned arithmetic: it may wrap; only base + page * 8 is read). 0 means
 * "no leaf", and is never the value: that would take a leaf mapped at
 * exactly i * 256 KiB, which is inside the very range the leaf describes. */
static uintptr_t pm_class_base(const pm_leaf *leaf, size_t i) {
    return (uintptr_t)leaf->class_offsets - ((uintptr_t)i << PM_LEAF_BITS) * sizeof(uint64_t);
}

/* Every class's start-test words, once, before the first leaf is published
 * (the caller holds the page cache's lock): a free reads them only on a page
 * whose class was set after that. */
static void pm_fill_start_tests(void) {
    static int filled;
    if (filled)
        return;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
        pm_free_lookup.start_tests[cls] = pm_start_test_of(sc_size(cls));
    filled = 1;
}

/* A zeroed leaf, counted as metadata. */
static pm_leaf *pm_new_leaf(void) {
    pm_leaf *leaf = os_map(sizeof(pm_leaf));
    if (leaf == NULL)
        return NULL;
    pool_account_metadata(sizeof(pm_leaf));
    __atomic_store_n(&pm_leaf_nodes, pm_leaf_nodes + 1, __ATOMIC_RELAXED);
    return leaf;
}

int pm_ensure(uintptr_t first, size_t count) {
    /* LAB BEGIN: page_map_insert */
    if (count == 0)
        return 0;
    if (first >= PM_PAGE_ID_LIMIT || count > PM_PAGE_ID_LIMIT - first) {
        errno = ENOMEM; /* not a user-space address: nothing we could map there */
        return -1;
    }
    uintptr_t last = first + count - 1;
    /* One step per leaf the range touches: a leaf covers PM_LEAF_ENTRIES pages. */
    for (size_t i = pm_root_index(first); i <= pm_root_index(last); i++) {
        if (pm_root[i] != NULL)
            continue;
        pm_fill_start_tests();
        pm_leaf *leaf = pm_new_leaf();
        if (leaf == NULL)
            return -1;
        /* Publish only a complete leaf (the store-release pairs with pm_leaf_of's load-acquire). */
        __atomic_store_n(&pm_free_lookup.class_root[i], pm_class_base(leaf, i), __ATOMIC_RELEASE);
        __atomic_store_n(&pm_root[i], leaf, __ATOMIC_RELEASE);
    }
    return 0;
    /* LAB END: page_map_insert */
}

void pm_set(uintptr_t page, hc_span *span) {
    pm_leaf *leaf = pm_root[pm_root_index(page)];
    /* Store-release: a reader that finds the span also finds the span's fields as
     * the page cache wrote them before registering it. */
    __atomic_store_n(&leaf->spans[pm_leaf_index(page)], span, __ATOMIC_RELEASE);
}

void pm_set_range(uintptr_t first, size_t count, hc_span *span) {
    uintptr_t page = first, end = first + count;
    while (page < end) {
        /* Find the leaf once per leaf, not once per page. */
        pm_leaf *leaf = pm_root[pm_root_index(page)];
        uintptr_t leaf_end = (page | (PM_LEAF_ENTRIES - 1)) + 1;
        if (leaf_end > end)
            leaf_end = end;
        for (; page < leaf_end; page++)
            __atomic_store_n(&leaf->spans[pm_leaf_index(page)], span, __ATOMIC_RELEASE);
    }
}

pm_start_test pm_start_test_of(size_t size) {
    unsigned shift = (unsigned)__builtin_ctzll(size);
    uint64_t odd = size >> shift, inverse = odd; /* right to 3 bits: odd * odd = 1 mod 8 */
    for (int i = 0; i < 5; i++)                  /* Newton's step doubles them: 6, 12, 24, 48, 96 */
        inverse *= 2 - odd * inverse;
    if (shift > HC_PAGE_SHIFT)
        shift = HC_PAGE_SHIFT; /* the mask is all ones then: only z = 0, before = 0, passes */
    pm_start_test t = {inverse, ~(uint64_t)(HC_PAGE_SIZE - 1) | (((uint64_t)1 << shift) - 1)};
    return t;
}

void pm_set_class_range(uintptr_t first, size_t count, unsigned cls) {
    size_t size = cls != 0 ? sc_size(cls) : 1;
    uintptr_t start = first << HC_PAGE_SHIFT;
    size_t objects = cls != 0 ? (count << HC_PAGE_SHIFT) / size : 0;
    uintptr_t page = first, end = first + count;
    while (page < end) {
        pm_leaf *leaf = __atomic_load_n(&pm_root[pm_root_index(page)], __ATOMIC_ACQUIRE);
        uintptr_t leaf_end = (page | (PM_LEAF_ENTRIES - 1)) + 1;
        if (leaf_end > end)
            leaf_end = end;
        /* Relaxed: the object hand-out that follows (under a bucket lock)
         * orders these stores before any free that reads them. The class
         * last when it is set, first when it is cleared: a page never says
         * "class cls" with another span's last start. */
        for (; page < leaf_end; page++) {
            size_t i = pm_leaf_index(page);
            if (cls == 0) {
                __atomic_store_n(&leaf->class_offsets[i], 0, __ATOMIC_RELAXED);
                continue;
            }
            /* No object in the span (a test's span too short for its
             * class): last start 0, which leaves before = -p, a multiple
             * of the size below 2^13 of them only for p within 2^23 of
             * 2^64, no user address. */
            uintptr_t last = 0;
            if (objects != 0) {
                size_t index = (((page + 1) << HC_PAGE_SHIFT) - 1 - start) / size;
                last = start + (index < objects ? index : objects - 1) * size;
            }
            __atomic_store_n(&leaf->last_starts[i], last, __ATOMIC_RELAXED);
            __atomic_store_n(&leaf->class_offsets[i], (uint64_t)cls * PM_CLASS_STRIDE, __ATOMIC_RELAXED);
        }
    }
}

void pm_get_usage(pm_usage *out) {
    out->leaf_nodes = __atomic_load_n(&pm_leaf_nodes, __ATOMIC_RELAXED);
    out->mapped_bytes = out->leaf_nodes * sizeof(pm_leaf);
}
