/* tools/docs/figures/size_class_table.c — prints common/size_class.h's table as
 * Markdown, with the worst internal waste of each class, for docs/.
 * Not part of any allocator layer: it reads the size-class functions only.
 *
 * usage: bazel run //tools/docs/figures:size_class_table */
#include <stdio.h>

#include "common/size_class.h"

int main(void) {
    printf("| class | object size | requests | worst waste (of the request) | batch | span pages |\n");
    printf("|---:|---:|---:|---:|---:|---:|\n");
    size_t smallest = 1;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        size_t size = sc_size(cls);
        if (sc_index(size) != cls) { /* class 1: kept, but no request maps to it (size_class.h) */
            printf("| %u | %zu | none | - | %u | %zu |\n", cls, size, sc_batch(cls), sc_span_pages(cls));
            continue;
        }
        /* The worst request of a class is the smallest one it serves; waste
         * is measured against the request, as size_class_test bounds it. */
        double waste = 100.0 * (double)(size - smallest) / (double)smallest;
        printf("| %u | %zu | %zu..%zu | %zu B (%.2f%%) | %u | %zu |\n", cls, size,
               smallest, size, size - smallest, waste, sc_batch(cls), sc_span_pages(cls));
        smallest = size + 1;
    }
    return 0;
}
