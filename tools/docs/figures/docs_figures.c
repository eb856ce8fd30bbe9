/* tools/docs/figures/docs_figures.c — prints, as `name value` lines, the figures
 * of the tree that docs/ and the headers' comments quote (sizes of the page
 * map, the size classes), computed from the headers themselves, so that
 * //docs:docs_check_test compares the prose with the tree, not with a copy.
 * Not part of any allocator layer: it reads declarations only.
 *
 * usage: bazel run //tools/docs/figures:docs_figures */
#include <stdio.h>

#include "common/size_class.h"
#include "stage3_pagecache/page_map.h"

int main(void) {
    pm_leaf leaf_type_only;
    size_t entry_bytes = sizeof(pm_leaf) / PM_LEAF_ENTRIES; /* the span pointer and hc_free's two words */
    unsigned smallest_served = 1;
    while (sc_index(sc_size(smallest_served)) != smallest_served)
        smallest_served++; /* class 1 is kept but serves no request (size_class.h) */
    printf("page_bytes %zu\n", (size_t)HC_PAGE_SIZE);
    printf("page_kib %zu\n", (size_t)HC_PAGE_SIZE / 1024);
    printf("max_small_kib %zu\n", (size_t)HC_MAX_SMALL_SIZE / 1024);
    printf("size_classes %u\n", HC_NUM_CLASSES - 1); /* class 0 is no class */
    printf("size_classes_served %u\n", HC_NUM_CLASSES - smallest_served);
    printf("smallest_class_bytes %zu\n", sc_size(smallest_served));
    printf("pm_class_entry_bytes %zu\n", sizeof(leaf_type_only.class_offsets[0]));
    printf("pm_bytes_per_page %zu\n", entry_bytes);
    printf("pm_leaf_bytes %zu\n", sizeof(pm_leaf));
    printf("pm_leaf_mib %g\n", (double)sizeof(pm_leaf) / (1024.0 * 1024.0));
    printf("pm_leaf_mib_covered %zu\n", (PM_LEAF_ENTRIES * HC_PAGE_SIZE) >> 20);
    printf("pm_heap_mib_per_class_page %zu\n",
           4096 / sizeof(leaf_type_only.class_offsets[0]) * HC_PAGE_SIZE >> 20);
    printf("pm_heap_mib_per_span_page %zu\n", 4096 / sizeof(leaf_type_only.spans[0]) * HC_PAGE_SIZE >> 20);
    printf("pm_resident_fraction %zu\n", HC_PAGE_SIZE / entry_bytes); /* about 1/N of the heap */
    printf("pm_root_mib %g\n", (double)sizeof(pm_root) / (1024.0 * 1024.0));
    printf("pm_roots_mib %g\n", (double)(sizeof(pm_root) + sizeof(pm_free_lookup.class_root)) / (1024.0 * 1024.0));
    return 0;
}
