/* stage3_pagecache/page_map.c — layer 3: the radix tree's writers.
 *
 * Only the page cache calls these, with its lock held, so writers never race
 * each other; readers (pm_lookup, inline in page_map.h) take no lock, which
 * is why every store that a reader may see is a release store.
 * May touch: the tree's nodes, common/os.h, common/pool.h (accounting). */
#include "stage3_pagecache/page_map.h"

#include <errno.h>

#include "common/os.h"
#include "common/pool.h"

pm_mid *pm_root[PM_ROOT_ENTRIES];

/* Read by pm_get_usage from any thread, written under the page cache lock. */
static size_t pm_mid_nodes;
static size_t pm_leaf_nodes;

HC_INLINE size_t pm_root_index(uintptr_t page) { return page >> (PM_MID_BITS + PM_LEAF_BITS); }
HC_INLINE size_t pm_mid_index(uintptr_t page) { return (page >> PM_LEAF_BITS) & (PM_MID_ENTRIES - 1); }
HC_INLINE size_t pm_leaf_index(uintptr_t page) { return page & (PM_LEAF_ENTRIES - 1); }

/* A zeroed node of `bytes`, counted as metadata. */
static void *pm_new_node(size_t bytes, size_t *counter) {
    void *node = os_map(bytes);
    if (node == NULL)
        return NULL;
    pool_account_metadata(bytes);
    __atomic_store_n(counter, *counter + 1, __ATOMIC_RELAXED);
    return node;
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
    for (uintptr_t page = first & ~(uintptr_t)(PM_LEAF_ENTRIES - 1); page <= last;
         page += PM_LEAF_ENTRIES) {
        pm_mid *mid = pm_root[pm_root_index(page)];
        if (mid == NULL) {
            mid = pm_new_node(sizeof(pm_mid), &pm_mid_nodes);
            if (mid == NULL)
                return -1;
            /* Publish only a complete node (release pairs with pm_lookup's acquire). */
            __atomic_store_n(&pm_root[pm_root_index(page)], mid, __ATOMIC_RELEASE);
        }
        if (mid->leaves[pm_mid_index(page)] == NULL) {
            pm_leaf *leaf = pm_new_node(sizeof(pm_leaf), &pm_leaf_nodes);
            if (leaf == NULL)
                return -1;
            __atomic_store_n(&mid->leaves[pm_mid_index(page)], leaf, __ATOMIC_RELEASE);
        }
    }
    return 0;
    /* LAB END: page_map_insert */
}

void pm_set(uintptr_t page, hc_span *span) {
    pm_leaf *leaf = pm_root[pm_root_index(page)]->leaves[pm_mid_index(page)];
    /* Release: a reader that finds the span also finds the span's fields as
     * the page cache wrote them before registering it. */
    __atomic_store_n(&leaf->spans[pm_leaf_index(page)], span, __ATOMIC_RELEASE);
}

void pm_set_range(uintptr_t first, size_t count, hc_span *span) {
    uintptr_t page = first, end = first + count;
    while (page < end) {
        /* Walk the tree once per leaf, not once per page. */
        pm_leaf *leaf = pm_root[pm_root_index(page)]->leaves[pm_mid_index(page)];
        uintptr_t leaf_end = (page | (PM_LEAF_ENTRIES - 1)) + 1;
        if (leaf_end > end)
            leaf_end = end;
        for (; page < leaf_end; page++)
            __atomic_store_n(&leaf->spans[pm_leaf_index(page)], span, __ATOMIC_RELEASE);
    }
}

void pm_get_usage(pm_usage *out) {
    out->mid_nodes = __atomic_load_n(&pm_mid_nodes, __ATOMIC_RELAXED);
    out->leaf_nodes = __atomic_load_n(&pm_leaf_nodes, __ATOMIC_RELAXED);
    out->mapped_bytes = out->mid_nodes * sizeof(pm_mid) + out->leaf_nodes * sizeof(pm_leaf);
}
