/* common/property.c — hc_get_property: the figures of hc_get_stats by name.
 *
 * The same in every stage: a figure is there when the stage's features say
 * its layer is (hc_features), so stage 1 answers bytes in use and thread
 * caches, and only stage 4 the budget and the heap limit.
 * May touch: the public API (hc_get_stats, hc_features). */
#include <stddef.h>
#include <string.h>

#include "common/compiler.h"
#include "common/hcmalloc.h"

typedef struct property {
    const char *name;
    size_t offset;     /* of the field in hc_stats */
    unsigned needs;    /* HC_FEATURE_* bits the stage must have; 0 = every stage */
} property;

#define FIELD(f) offsetof(hc_stats, f)
static const property properties[] = {
    {"generic.current_allocated_bytes", FIELD(bytes_in_use), 0},
    {"generic.heap_size", FIELD(os_mapped_bytes), 0},
    {"hcmalloc.current_total_thread_cache_bytes", FIELD(thread_cache_bytes), 0},
    {"hcmalloc.central_cache_free_bytes", FIELD(central_cache_bytes), HC_FEATURE_CENTRAL_CACHE},
    {"hcmalloc.pageheap_free_bytes", FIELD(page_cache_free_bytes), HC_FEATURE_PAGE_CACHE},
    {"hcmalloc.pageheap_unmapped_bytes", FIELD(released_bytes), HC_FEATURE_RELEASE_TO_OS},
    {"hcmalloc.metadata_bytes", FIELD(metadata_bytes), 0},
    {"hcmalloc.max_total_thread_cache_bytes", FIELD(thread_cache_budget_bytes),
     HC_FEATURE_THREAD_EXIT_RECLAIM},
    {"hcmalloc.heap_limit_bytes", FIELD(heap_limit_bytes), HC_FEATURE_RELEASE_TO_OS},
    {"hcmalloc.heap_limit_hits", FIELD(heap_limit_hits), HC_FEATURE_RELEASE_TO_OS},
};

HC_EXPORT int hc_get_property(const char *name, size_t *value) {
    if (name == NULL || value == NULL)
        return 0;
    for (size_t i = 0; i < sizeof properties / sizeof properties[0]; i++) {
        const property *p = &properties[i];
        if (strcmp(name, p->name) != 0)
            continue;
        if ((hc_features() & p->needs) != p->needs)
            return 0;
        hc_stats s;
        hc_get_stats(&s);
        memcpy(value, (const char *)&s + p->offset, sizeof *value);
        return 1;
    }
    return 0;
}
